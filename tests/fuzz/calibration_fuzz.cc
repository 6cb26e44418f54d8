// SPDX-License-Identifier: Apache-2.0
// The calibration load cache reader (core/calibration.cc, FromCache): every
// process that loads the provider with a calibration reads this file. The
// harness keeps one fixed calibration JSON beside the cache and, for most
// inputs, writes the cache's two header lines for that JSON (so the body,
// the fuzzer's bytes, is what gets parsed); the first input byte's low bit
// off feeds the bytes as the whole cache, headers included. Nothing may
// crash; a calibration that loads holds only positive, finite timings and
// answers Fastest() for every key and bucket it holds.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "core/calibration.h"
#include "tests/fuzz/temp_file.h"

namespace {

// The JSON the cache claims to stand for; any valid calibration will do.
constexpr char kJson[] =
    "{\"format\": 2, \"cpu\": \"fuzz cpu\", \"backends\": {\"software\": "
    "\"0.1.0\"}, \"algorithms\": {\"sha256\": {\"16\": {\"software\": 50.0}}}}"
    "\n";

// The load cache names its JSON by length and FNV-1a 64 (calibration.cc).
uint64_t Fnv1a64(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static accelcrypt::fuzz::TempFile json("accelcrypt-fuzz-calibration.json");
  static const bool json_written =
      json.Write(reinterpret_cast<const uint8_t*>(kJson), sizeof(kJson) - 1);
  if (!json_written || size == 0) return 0;
  static const std::string header = [] {
    const std::string text(kJson);
    char line[128];
    std::snprintf(line, sizeof(line),
                  "accelcrypt-calibration-cache 2\nsource %zu %016llx\n",
                  text.size(), static_cast<unsigned long long>(Fnv1a64(text)));
    return std::string(line);
  }();
  std::string cache;
  if ((data[0] & 1) != 0) cache = header;
  cache.append(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::string cache_path =
      accelcrypt::Calibration::CachePath(json.path());
  FILE* f = std::fopen(cache_path.c_str(), "wb");
  if (f == nullptr) return 0;
  const bool written =
      std::fwrite(cache.data(), 1, cache.size(), f) == cache.size();
  if (std::fclose(f) != 0 || !written) return 0;

  absl::StatusOr<accelcrypt::Calibration> cal =
      accelcrypt::Calibration::Load(json.path());
  // The JSON is valid: whatever the cache holds, Load gives a calibration
  // (the cache's, or the JSON's when the cache is refused).
  if (!cal.ok()) __builtin_trap();
  if (!cal->from_cache && cal->cpu != "fuzz cpu") __builtin_trap();
  for (const auto& [key, buckets] : cal->ns) {
    for (const auto& [bucket, cells] : buckets) {
      for (const auto& [backend, ns] : cells) {
        if (!(ns > 0) || !std::isfinite(ns)) __builtin_trap();
      }
      if (cal->Fastest(key, bucket).size() != cells.size()) __builtin_trap();
    }
  }
  std::remove(cache_path.c_str());
  return 0;
}
