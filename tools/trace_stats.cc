// SPDX-License-Identifier: Apache-2.0
#include "tools/trace_stats.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace accelcrypt::tools {
namespace {

absl::StatusOr<uint64_t> Counter(const nlohmann::json& cell,
                                 const char* name) {
  auto it = cell.find(name);
  if (it == cell.end()) return uint64_t{0};  // zero counters may be omitted
  if (!it->is_number_unsigned() && !it->is_number_integer()) {
    return absl::InvalidArgumentError(
        absl::StrCat("counter '", name, "' is not a number"));
  }
  if (it->is_number_integer() && it->get<int64_t>() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("counter '", name, "' is negative"));
  }
  return it->get<uint64_t>();
}

}  // namespace

absl::Status TraceReport::AddJson(const std::string& text,
                                  const std::string& origin) {
  nlohmann::json doc = nlohmann::json::parse(text, nullptr,
                                             /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": not a JSON object"));
  }
  auto backends = doc.find("backends");
  if (backends == doc.end() || !backends->is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": no \"backends\" object"));
  }
  // Parse everything first so a bad file adds nothing.
  std::vector<std::pair<std::pair<std::string, std::string>, TraceCounts>>
      parsed;
  for (const auto& [backend, algs] : backends->items()) {
    if (!algs.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(origin, ": backend \"", backend, "\" is not an object"));
    }
    for (const auto& [alg, cell] : algs.items()) {
      if (!cell.is_object()) {
        return absl::InvalidArgumentError(absl::StrCat(
            origin, ": ", backend, "/", alg, " is not an object"));
      }
      TraceCounts counts;
      for (auto [name, field] :
           {std::pair<const char*, uint64_t*>{"ops", &counts.ops},
            {"bytes", &counts.bytes},
            {"errors", &counts.errors},
            {"fallbacks", &counts.fallbacks}}) {
        auto value = Counter(cell, name);
        if (!value.ok()) {
          return absl::InvalidArgumentError(absl::StrCat(
              origin, ": ", backend, "/", alg, ": ", std::string(value.status().message())));
        }
        *field = *value;
      }
      parsed.push_back({{backend, alg}, counts});
    }
  }
  for (const auto& [key, counts] : parsed) {
    TraceCounts& sum = cells[key];
    sum.ops += counts.ops;
    sum.bytes += counts.bytes;
    sum.errors += counts.errors;
    sum.fallbacks += counts.fallbacks;
  }
  std::string process;
  if (auto pid = doc.find("pid"); pid != doc.end() && pid->is_number()) {
    process = std::to_string(pid->get<long long>());
  } else {
    process = "?";
  }
  if (auto name = doc.find("process"); name != doc.end() && name->is_string()) {
    process += " " + name->get<std::string>();
  }
  processes.push_back(process);
  ++files;
  return absl::OkStatus();
}

nlohmann::json TraceReport::ToJson() const {
  nlohmann::json out;
  out["files"] = files;
  out["processes"] = processes;
  out["bad_files"] = bad_files;
  out["cells"] = nlohmann::json::array();
  for (const auto& [key, c] : cells) {
    out["cells"].push_back({{"backend", key.first},
                            {"algorithm", key.second},
                            {"ops", c.ops},
                            {"bytes", c.bytes},
                            {"errors", c.errors},
                            {"fallbacks", c.fallbacks}});
  }
  return out;
}

absl::StatusOr<TraceReport> AggregateStatsDir(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat(dir, ": not a directory"));
  }
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (absl::StartsWith(name, "accelcrypt-") && absl::EndsWith(name, ".json")) {
      paths.push_back(entry.path());
    }
  }
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat(dir, ": cannot list: ", ec.message()));
  }
  std::sort(paths.begin(), paths.end());
  TraceReport report;
  for (const auto& path : paths) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in.good() && !in.eof()) {
      report.bad_files.push_back(path.string() + ": cannot read");
      continue;
    }
    absl::Status added = report.AddJson(text.str(), path.string());
    if (!added.ok()) report.bad_files.push_back(std::string(added.message()));
  }
  return report;
}

}  // namespace accelcrypt::tools
