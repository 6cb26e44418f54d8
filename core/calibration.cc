// SPDX-License-Identifier: Apache-2.0
#include "core/calibration.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "core/algorithms.h"
#include "nlohmann/json.hpp"

namespace accelcrypt {
namespace {

constexpr uint64_t kBuckets[] = {16, 64, 256, 1024, 8192, 16384};

absl::Status MakeDirs(const std::string& dir) {
  if (dir.empty()) return absl::OkStatus();
  std::string partial;
  for (size_t i = 0; i <= dir.size(); ++i) {
    if (i == dir.size() || (dir[i] == '/' && i > 0)) {
      partial = dir.substr(0, i);
      if (mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) {
        return absl::UnavailableError(absl::StrFormat(
            "cannot create %s: %s", partial, std::strerror(errno)));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Span<const uint64_t> Calibration::SizeBuckets() { return kBuckets; }

size_t Calibration::BucketIndex(uint64_t size) {
  for (size_t i = 0; i < std::size(kBuckets); ++i) {
    if (size <= kBuckets[i]) return i;
  }
  return std::size(kBuckets) - 1;
}

std::string Calibration::OpKey(std::string_view alg_key, std::string_view op) {
  std::string key(alg_key);
  if (!op.empty()) key.append("/").append(op);
  return key;
}

uint64_t Calibration::BucketFor(uint64_t size) {
  for (uint64_t b : kBuckets) {
    if (size <= b) return b;
  }
  return kBuckets[std::size(kBuckets) - 1];
}

absl::StatusOr<Calibration> Calibration::Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(
        absl::StrFormat("no calibration file at %s (run `accelcrypt "
                        "calibrate`)",
                        path));
  }
  // Read whole, then parse from memory (this runs at every provider load).
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  const int format = doc.is_object() ? doc.value("format", 0) : 0;
  if (doc.is_discarded() || !doc.is_object() || (format != 1 && format != 2) ||
      !doc.contains("cpu") || !doc["cpu"].is_string() ||
      !doc.contains("algorithms") || !doc["algorithms"].is_object()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("calibration file %s is malformed", path));
  }
  Calibration cal;
  cal.cpu = doc["cpu"].get<std::string>();
  if (doc.contains("backends") && doc["backends"].is_object()) {
    for (const auto& [name, version] : doc["backends"].items()) {
      if (version.is_string()) cal.backend_versions[name] = version;
    }
  }
  for (const auto& [entry, buckets] : doc["algorithms"].items()) {
    if (!buckets.is_object()) continue;
    // Entries without an operation (format 1, or written so by hand): a
    // cipher's stands for both directions, "rsa"/"dsa" for signing.
    std::vector<std::string> keys = {entry};
    if (entry.find('/') == std::string::npos) {
      const AlgorithmInfo* info = FindAlgorithmByName(entry);
      if (entry == "rsa" || entry == "dsa") {
        keys = {OpKey(entry, "sign")};
      } else if (info != nullptr && info->family == Family::kCipher) {
        keys = {OpKey(entry, "encrypt"), OpKey(entry, "decrypt")};
      }
    }
    for (const auto& [bucket, backends] : buckets.items()) {
      uint64_t b;
      if (!absl::SimpleAtoi(bucket, &b) || !backends.is_object()) {
        return absl::InvalidArgumentError(
            absl::StrFormat("calibration file %s: bad bucket '%s' for %s", path,
                            bucket, entry));
      }
      for (const auto& [backend, value] : backends.items()) {
        if (value.is_number() && value.get<double>() > 0) {
          for (const std::string& key : keys) {
            cal.ns[key][b][backend] = value.get<double>();
          }
        }
      }
    }
  }
  return cal;
}

std::string Calibration::ToJson() const {
  nlohmann::json algs = nlohmann::json::object();
  for (const auto& [alg, buckets] : ns) {
    nlohmann::json jb = nlohmann::json::object();
    for (const auto& [bucket, backends] : buckets) {
      nlohmann::json jv = nlohmann::json::object();
      for (const auto& [backend, value] : backends) jv[backend] = value;
      jb[std::to_string(bucket)] = std::move(jv);
    }
    algs[alg] = std::move(jb);
  }
  nlohmann::json doc = {{"format", 2},
                        {"cpu", cpu},
                        {"backends", backend_versions},
                        {"algorithms", std::move(algs)}};
  return doc.dump(1);
}

absl::Status Calibration::Save(const std::string& path) const {
  size_t slash = path.rfind('/');
  if (slash != std::string::npos) {
    absl::Status st = MakeDirs(path.substr(0, slash));
    if (!st.ok()) return st;
  }
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) {
      return absl::UnavailableError(absl::StrFormat(
          "cannot write %s: %s", tmp, std::strerror(errno)));
    }
    out << ToJson() << "\n";
    if (!out.flush()) {
      return absl::UnavailableError(absl::StrFormat("cannot write %s", tmp));
    }
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    int saved = errno;
    unlink(tmp.c_str());
    return absl::UnavailableError(absl::StrFormat(
        "cannot rename %s: %s", path, std::strerror(saved)));
  }
  return absl::OkStatus();
}

std::vector<std::string> Calibration::Fastest(const std::string& alg_key,
                                              uint64_t bucket) const {
  std::vector<std::string> out;
  auto a = ns.find(alg_key);
  if (a == ns.end()) return out;
  auto b = a->second.find(bucket);
  if (b == a->second.end()) return out;
  std::vector<std::pair<double, std::string>> ranked;
  for (const auto& [backend, value] : b->second) ranked.push_back({value, backend});
  std::sort(ranked.begin(), ranked.end());
  for (auto& [value, backend] : ranked) out.push_back(backend);
  return out;
}

std::string CpuSignature() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, vendor, family, model, stepping, name;
  auto value = [](const std::string& l) {
    size_t colon = l.find(':');
    if (colon == std::string::npos) return std::string();
    size_t start = l.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? std::string() : l.substr(start);
  };
  while (std::getline(in, line)) {
    if (line.empty()) break;  // first processor only
    if (line.rfind("vendor_id", 0) == 0) vendor = value(line);
    if (line.rfind("cpu family", 0) == 0) family = value(line);
    if (line.rfind("model name", 0) == 0) name = value(line);
    else if (line.rfind("model", 0) == 0) model = value(line);
    if (line.rfind("stepping", 0) == 0) stepping = value(line);
  }
  if (vendor.empty() && name.empty()) return "unknown-cpu";
  return absl::StrFormat("%s %s/%s/%s %s", vendor, family, model, stepping,
                         name);
}

std::vector<std::string> CalibrationSearchPath() {
  if (const char* env = std::getenv("ACCELCRYPT_CALIBRATION"); env && *env) {
    return {env};
  }
  std::vector<std::string> out = {DefaultCalibrationPath()};
  if (out[0] != kSystemCalibrationPath) out.push_back(kSystemCalibrationPath);
  return out;
}

std::string DefaultCalibrationPath() {
  if (const char* env = std::getenv("ACCELCRYPT_CALIBRATION"); env && *env) {
    return env;
  }
  if (geteuid() == 0) return kSystemCalibrationPath;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    return std::string(xdg) + "/accelcrypt/calibration.json";
  }
  if (const char* home = std::getenv("HOME"); home && *home) {
    return std::string(home) + "/.cache/accelcrypt/calibration.json";
  }
  return "accelcrypt-calibration.json";
}

}  // namespace accelcrypt
