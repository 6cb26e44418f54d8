// SPDX-License-Identifier: Apache-2.0
#include "tools/trace_stats.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/stats.h"
#include "tools/cli_common.h"

namespace accelcrypt::tools {
namespace {

// RunningUid is the effective uid of running process `pid` (the second
// number of the "Uid:" line of /proc/<pid>/status), or -1 when unknown. A
// live file records the user its process last counted as; a process that
// has changed user since (a worker that dropped privileges and has served
// only ciphers) is shown as the user it runs as now.
int64_t RunningUid(int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (!absl::StartsWith(line, "Uid:")) continue;
    std::istringstream fields(line.substr(4));
    int64_t real = -1, effective = -1;
    if (fields >> real >> effective && effective >= 0) return effective;
    return -1;
  }
  return -1;
}

absl::StatusOr<uint64_t> Counter(const nlohmann::json& cell, const char* name) {
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
        return absl::InvalidArgumentError(
            absl::StrCat(origin, ": ", backend, "/", alg, " is not an object"));
      }
      TraceCounts counts;
      for (auto [name, field] :
           {std::pair<const char*, uint64_t*>{"ops", &counts.ops},
            {"bytes", &counts.bytes},
            {"errors", &counts.errors},
            {"fallbacks", &counts.fallbacks}}) {
        auto value = Counter(cell, name);
        if (!value.ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat(origin, ": ", backend, "/", alg, ": ",
                           std::string(value.status().message())));
        }
        *field = *value;
      }
      parsed.push_back({{backend, alg}, counts});
    }
  }
  ProcessStats proc;
  proc.path = origin;
  for (const auto& [key, counts] : parsed) {
    for (TraceCounts* sum : {&cells[key], &proc.cells[key], &proc.total}) {
      sum->ops += counts.ops;
      sum->bytes += counts.bytes;
      sum->errors += counts.errors;
      sum->fallbacks += counts.fallbacks;
    }
  }
  auto integer = [&doc](const char* name) -> int64_t {
    auto it = doc.find(name);
    return it != doc.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
  };
  proc.pid = integer("pid");
  proc.ppid = integer("ppid");
  proc.uid = static_cast<uint64_t>(integer("uid"));
  proc.created_unix_ms = integer("created_unix_ms");
  if (auto name = doc.find("process"); name != doc.end() && name->is_string()) {
    proc.name = name->get<std::string>();
  }
  proc.state = "ended";
  if (auto state = doc.find("state");
      state != doc.end() && state->is_string() && *state == "live") {
    proc.state = StatsWriterAlive(proc.pid,
                                  static_cast<uint64_t>(integer("start_ticks")))
                     ? "live"
                     : "gone";
    if (proc.state == "live") {
      if (const int64_t uid = RunningUid(proc.pid); uid >= 0) {
        proc.uid = static_cast<uint64_t>(uid);
      }
    }
  }
  (proc.state == "live" ? live : proc.state == "gone" ? gone : ended)++;
  procs.push_back(std::move(proc));
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
  out["live"] = live;
  out["gone"] = gone;
  out["ended"] = ended;
  out["per_process"] = nlohmann::json::array();
  for (const ProcessStats& p : procs) {
    nlohmann::json algs = nlohmann::json::array();
    for (const auto& [key, c] : p.cells) {
      algs.push_back({{"backend", key.first},
                      {"algorithm", key.second},
                      {"ops", c.ops},
                      {"bytes", c.bytes},
                      {"errors", c.errors},
                      {"fallbacks", c.fallbacks}});
    }
    out["per_process"].push_back({{"pid", p.pid},
                                  {"ppid", p.ppid},
                                  {"uid", p.uid},
                                  {"process", p.name},
                                  {"state", p.state},
                                  {"file", p.path},
                                  {"created_unix_ms", p.created_unix_ms},
                                  {"ops", p.total.ops},
                                  {"bytes", p.total.bytes},
                                  {"cells", std::move(algs)}});
  }
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

void PrintCells(std::ostream& out, const TraceReport& report) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& [key, c] : report.cells) {
    if (c.ops == 0 && c.bytes == 0 && c.errors == 0 && c.fallbacks == 0) {
      continue;
    }
    rows.push_back({key.first, key.second, std::to_string(c.ops),
                    std::to_string(c.bytes), std::to_string(c.errors),
                    std::to_string(c.fallbacks)});
  }
  if (rows.empty()) {
    out << "  no operation went through accelcrypt\n";
    return;
  }
  PrintTable(out,
             {"backend", "algorithm", "ops", "bytes", "errors", "fallbacks"},
             rows);
}

absl::StatusOr<TraceReport> AggregateStatsDir(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat(dir, ": not a directory"));
  }
  TraceReport report;
  std::vector<std::filesystem::path> paths;
  std::vector<std::filesystem::path> dirs = {dir};
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    std::error_code type_ec;
    if (!name.empty() &&
        name.find_first_not_of("0123456789") == std::string::npos &&
        entry.is_directory(type_ec) && !entry.is_symlink(type_ec)) {
      dirs.push_back(entry.path());  // a shared root's per-user directory
    }
  }
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat(dir, ": cannot list: ", ec.message()));
  }
  for (const auto& d : dirs) {
    std::error_code list_ec;
    std::filesystem::directory_iterator it(d, list_ec);
    if (list_ec) {
      // Another user's 0700 directory, unless we are root: say so.
      report.bad_files.push_back(
          absl::StrCat(d.string(), ": cannot list: ", list_ec.message()));
      continue;
    }
    for (const auto& entry : it) {
      const std::string name = entry.path().filename().string();
      if (!absl::StartsWith(name, "accelcrypt-")) continue;
      if (absl::EndsWith(name, ".json")) {
        paths.push_back(entry.path());
      } else if (absl::EndsWith(name, ".stats")) {
        std::filesystem::path twin = entry.path();
        twin.replace_extension(".json");
        std::error_code twin_ec;
        if (!std::filesystem::exists(twin, twin_ec))
          paths.push_back(entry.path());
      }
    }
  }
  std::sort(paths.begin(), paths.end());
  for (const auto& path : paths) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in.good() && !in.eof()) {
      report.bad_files.push_back(path.string() + ": cannot read");
      continue;
    }
    std::string doc = text.str();
    if (path.extension() == ".stats") {
      auto json = LiveStatsToJson(doc);
      if (!json.ok()) {
        report.bad_files.push_back(
            absl::StrCat(path.string(), ": ", json.status().message()));
        continue;
      }
      doc = *std::move(json);
    }
    absl::Status added = report.AddJson(doc, path.string());
    if (!added.ok()) report.bad_files.push_back(std::string(added.message()));
  }
  return report;
}

}  // namespace accelcrypt::tools
