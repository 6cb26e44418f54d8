// SPDX-License-Identifier: Apache-2.0
#include "core/calibration.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <system_error>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "accelcrypt/kit/files.h"
#include "core/algorithms.h"
#include "nlohmann/json.hpp"

namespace accelcrypt {
namespace {

constexpr uint64_t kBuckets[] = {16, 64, 256, 1024, 8192, 16384};

// LoadedKeys are the operation keys an "algorithms" entry of the file is
// loaded under. Entries without an operation (format 1, or written so by
// hand): a cipher's stands for both directions, "rsa"/"dsa" for signing.
std::vector<std::string> LoadedKeys(const std::string& entry) {
  if (entry.find('/') != std::string::npos) return {entry};
  if (entry == "rsa" || entry == "dsa") {
    return {Calibration::OpKey(entry, "sign")};
  }
  const AlgorithmInfo* info = FindAlgorithmByName(entry);
  if (info != nullptr && info->family == Family::kCipher) {
    return {Calibration::OpKey(entry, "encrypt"),
            Calibration::OpKey(entry, "decrypt")};
  }
  return {entry};
}

// ParseJson is Load's parse of the JSON text of the file `path` (named in
// errors).
absl::StatusOr<Calibration> ParseJson(const std::string& text,
                                      const std::string& path) {
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
  if (doc.contains("declared") && doc["declared"].is_array()) {
    for (const auto& key : doc["declared"]) {
      if (key.is_string()) cal.declared.insert(key.get<std::string>());
    }
  }
  if (doc.contains("through_provider") && doc["through_provider"].is_object()) {
    for (const auto& [entry, buckets] : doc["through_provider"].items()) {
      if (!buckets.is_object()) continue;
      for (const auto& [bucket, routes] : buckets.items()) {
        uint64_t b;
        if (!absl::SimpleAtoi(bucket, &b) || !routes.is_object()) continue;
        for (const auto& [route, value] : routes.items()) {
          if (value.is_number() && value.get<double>() > 0) {
            cal.through_provider[entry][b][route] = value.get<double>();
          }
        }
      }
    }
  }
  for (const auto& [entry, buckets] : doc["algorithms"].items()) {
    if (!buckets.is_object()) continue;
    const std::vector<std::string> keys = LoadedKeys(entry);
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

// The load cache (calibration.h, "Load cache"): its first line, then
// "source <length> <fnv1a-64 hex>" of the JSON text it was made from.
// Version 2 added the "declared" lines (a version-1 cache is not taken:
// the JSON is parsed).
constexpr absl::string_view kCacheMagic = "accelcrypt-calibration-cache 2";

// Fnv1a64 identifies the JSON text a cache was made from (not a security
// check: both files have the same owner and directory).
uint64_t Fnv1a64(absl::string_view text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

// FromCache parses a load cache made from a JSON text of `length` bytes
// and hash `hash`; nullopt when it is not one (another source, another
// format, damaged): the caller then parses the JSON.
std::optional<Calibration> FromCache(absl::string_view cache, size_t length,
                                     uint64_t hash) {
  // Every process that loads the provider runs this over about 500 lines:
  // one pass, no per-line containers, and the lines of one key and bucket
  // (ToCache writes them in map order) go into the maps found for the line
  // before, so a map lookup and a key string are paid per key, not per line.
  size_t pos = 0;
  auto next_line = [&](absl::string_view* line) {
    while (pos < cache.size()) {
      size_t end = cache.find('\n', pos);
      if (end == absl::string_view::npos) end = cache.size();
      *line = cache.substr(pos, end - pos);
      pos = end + 1;
      if (!line->empty()) return true;
    }
    return false;
  };
  absl::string_view line;
  if (!next_line(&line) || line != kCacheMagic || !next_line(&line) ||
      line != absl::StrFormat("source %d %016x", length, hash)) {
    return std::nullopt;
  }
  Calibration cal;
  bool have_cpu = false;
  absl::string_view last_key;
  std::map<uint64_t, Calibration::Cells>* by_bucket = nullptr;
  uint64_t last_bucket = 0;
  Calibration::Cells* cells = nullptr;
  while (next_line(&line)) {
    absl::string_view f[5];
    size_t n = 0;
    for (size_t start = 0;;) {
      const size_t tab = line.find('\t', start);
      if (n == 5) return std::nullopt;  // too many fields
      f[n++] = line.substr(start, tab == absl::string_view::npos
                                      ? absl::string_view::npos
                                      : tab - start);
      if (tab == absl::string_view::npos) break;
      start = tab + 1;
    }
    if (f[0] == "ns" && n == 5) {
      uint64_t bucket = 0;
      double value = 0;
      const char* b_end = f[2].data() + f[2].size();
      const char* v_end = f[4].data() + f[4].size();
      auto b = std::from_chars(f[2].data(), b_end, bucket);
      auto v = std::from_chars(f[4].data(), v_end, value);
      if (f[2].empty() || b.ec != std::errc() || b.ptr != b_end ||
          f[4].empty() || v.ec != std::errc() || v.ptr != v_end ||
          !(value > 0) || !std::isfinite(value)) {
        return std::nullopt;
      }
      if (by_bucket == nullptr || f[1] != last_key) {
        by_bucket = &cal.ns[std::string(f[1])];
        last_key = f[1];
        cells = nullptr;
      }
      if (cells == nullptr || bucket != last_bucket) {
        cells = &(*by_bucket)[bucket];
        last_bucket = bucket;
      }
      cells->insert_or_assign(std::string(f[3]), value);
    } else if (f[0] == "cpu" && n == 2) {
      cal.cpu = std::string(f[1]);
      have_cpu = true;
    } else if (f[0] == "backend" && n == 3) {
      cal.backend_versions[std::string(f[1])] = std::string(f[2]);
    } else if (f[0] == "declared" && n == 2) {
      cal.declared.insert(std::string(f[1]));
    } else {
      return std::nullopt;
    }
  }
  if (!have_cpu) return std::nullopt;
  return cal;
}

// ToCache is FromCache's input for `cal` (as ParseJson loaded it from a
// JSON text of `length` bytes and hash `hash`); empty when a name holds a
// tab or a line break (no cache then: the JSON is parsed).
std::string ToCache(const Calibration& cal, size_t length, uint64_t hash) {
  auto plain = [](absl::string_view v) {
    return v.find_first_of("\t\n") == absl::string_view::npos;
  };
  bool ok = plain(cal.cpu);
  for (const auto& [name, version] : cal.backend_versions) {
    ok = ok && plain(name) && plain(version);
  }
  for (const std::string& key : cal.declared) ok = ok && plain(key);
  for (const auto& [key, buckets] : cal.ns) {
    ok = ok && plain(key);
    for (const auto& [bucket, backends] : buckets) {
      for (const auto& [backend, value] : backends) ok = ok && plain(backend);
    }
  }
  if (!ok) return std::string();
  std::string out = absl::StrFormat("%s\nsource %d %016x\ncpu\t%s\n",
                                    kCacheMagic, length, hash, cal.cpu);
  for (const auto& [name, version] : cal.backend_versions) {
    absl::StrAppendFormat(&out, "backend\t%s\t%s\n", name, version);
  }
  for (const std::string& key : cal.declared) {
    absl::StrAppendFormat(&out, "declared\t%s\n", key);
  }
  for (const auto& [key, buckets] : cal.ns) {
    for (const auto& [bucket, backends] : buckets) {
      for (const auto& [backend, value] : backends) {
        // %.17g: the double read back is the one written.
        absl::StrAppendFormat(&out, "ns\t%s\t%d\t%s\t%.17g\n", key, bucket,
                              backend, value);
      }
    }
  }
  return out;
}

// WriteAtomically writes `text` to `path` through a temporary file and a
// rename (readable by every user: the calibration serves daemons too).
absl::Status WriteAtomically(const std::string& path, const std::string& text) {
  if (!kit::WriteFileAtomically(path, text, {.mode = 0644})) {
    return absl::UnavailableError(
        absl::StrFormat("cannot write %s: %s", path, std::strerror(errno)));
  }
  return absl::OkStatus();
}

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

std::string Calibration::CachePath(const std::string& path) {
  return path + ".cache";
}

absl::StatusOr<Calibration> Calibration::Load(const std::string& path) {
  // This runs at every provider load: the JSON is read whole (one read for
  // the usual 20 KB), and parsed only when its load cache does not match.
  std::string text;
  if (!kit::ReadFile(path, &text)) {
    if (errno == ENOENT || errno == ENOTDIR || errno == EACCES) {
      return absl::NotFoundError(
          absl::StrFormat("no calibration file at %s (run `accelcrypt "
                          "calibrate`)",
                          path));
    }
    return absl::InvalidArgumentError(
        absl::StrFormat("calibration file %s is malformed (cannot read it: %s)",
                        path, std::strerror(errno)));
  }
  const uint64_t hash = Fnv1a64(text);
  std::string cache;
  if (kit::ReadFile(CachePath(path), &cache)) {
    std::optional<Calibration> cached = FromCache(cache, text.size(), hash);
    if (cached.has_value()) {
      cached->from_cache = true;
      return *std::move(cached);
    }
  }
  return ParseJson(text, path);
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
  if (!declared.empty()) {
    doc["declared"] = nlohmann::json::array();
    for (const std::string& key : declared) doc["declared"].push_back(key);
  }
  if (!through_provider.empty()) {
    nlohmann::json tp = nlohmann::json::object();
    for (const auto& [key, buckets] : through_provider) {
      nlohmann::json jb = nlohmann::json::object();
      for (const auto& [bucket, routes] : buckets) {
        nlohmann::json jv = nlohmann::json::object();
        for (const auto& [route, value] : routes) jv[route] = value;
        jb[std::to_string(bucket)] = std::move(jv);
      }
      tp[key] = std::move(jb);
    }
    doc["through_provider"] = std::move(tp);
  }
  return doc.dump(1);
}

absl::Status Calibration::Save(const std::string& path) const {
  size_t slash = path.rfind('/');
  if (slash != std::string::npos) {
    absl::Status st = MakeDirs(path.substr(0, slash));
    if (!st.ok()) return st;
  }
  const std::string text = ToJson() + "\n";
  absl::Status st = WriteAtomically(path, text);
  if (!st.ok()) return st;
  // The load cache is an optimisation: when it cannot be written, Load
  // parses the JSON (an older cache no longer matches it). It holds what
  // parsing the text just written gives (format-1 entries expanded, values
  // <= 0 dropped), so both ways load the same data.
  absl::StatusOr<Calibration> loaded = ParseJson(text, path);
  const std::string cache =
      loaded.ok() ? ToCache(*loaded, text.size(), Fnv1a64(text)) : "";
  if (cache.empty()) {
    unlink(CachePath(path).c_str());
  } else {
    (void)WriteAtomically(CachePath(path), cache);
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
  for (const auto& [backend, value] : b->second)
    ranked.push_back({value, backend});
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
    if (line.rfind("model name", 0) == 0)
      name = value(line);
    else if (line.rfind("model", 0) == 0)
      model = value(line);
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
