// SPDX-License-Identifier: Apache-2.0
#include "core/config_keys.h"

#include <algorithm>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/status.h"

namespace accelcrypt {
namespace {

constexpr long long kMaxBits = 65536;

// The fixed keys. Backend-scoped keys (<backend>.<key>) and route.<alg> are
// checked by their readers (a backend, the router).
constexpr ConfigKey kKeys[] = {
    {"backend_dir", KeyType::kString},
    {"backends", KeyType::kList},
    {"disable", KeyType::kList},
    {"policy", KeyType::kEnum, 0, 0, "auto|priority|fastest"},
    {"calibration_file", KeyType::kString},
    {"interpose", KeyType::kEnum, 0, 0, "wins|all"},
    {"route_margin_pct", KeyType::kInt, 0, 100},
    {"breaker_threshold", KeyType::kInt, 1, 1000000},
    {"breaker_cooldown_ms", KeyType::kInt, 0, 86400000},
    {"replay_max", KeyType::kInt, 0, 1LL << 30, "", "digest_replay_max"},
    {"selftest", KeyType::kEnum, 0, 0, "first-use|load|1|0"},
    {"deferred_start", KeyType::kEnum, 0, 0, "first-use|load"},
    {"backend_retry_s", KeyType::kInt, 0, 86400},
    {"stats_dir", KeyType::kString},
    {"log_level", KeyType::kInt, 0, 3},
    {"offload_min_bits", KeyType::kInt, 0, kMaxBits},
    {"rsa_offload_min_bits", KeyType::kInt, 0, kMaxBits},
    {"dsa_offload_min_bits", KeyType::kInt, 0, kMaxBits},
};

}  // namespace

absl::Span<const ConfigKey> ConfigKeys() { return kKeys; }

const ConfigKey* FindConfigKey(std::string_view name) {
  std::string lower = absl::AsciiStrToLower(AsAbsl(name));
  for (const ConfigKey& k : kKeys) {
    if (lower == k.name || (*k.alias != '\0' && lower == k.alias)) return &k;
  }
  return nullptr;
}

bool IsSizedPkeyRouteName(std::string_view alg) {
  absl::string_view bits = AsAbsl(alg);
  if (!absl::ConsumePrefix(&bits, "rsa-") &&
      !absl::ConsumePrefix(&bits, "dsa-")) {
    return false;
  }
  return !bits.empty() &&
         std::all_of(bits.begin(), bits.end(), absl::ascii_isdigit);
}

absl::Status CheckValue(const ConfigKey& key, std::string_view value) {
  const absl::string_view v = absl::StripAsciiWhitespace(AsAbsl(value));
  switch (key.type) {
    case KeyType::kString:
      return absl::OkStatus();
    case KeyType::kList:
      for (absl::string_view part :
           absl::StrSplit(v, absl::ByAnyChar(", \t"), absl::SkipEmpty())) {
        for (char c : part) {
          if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' &&
              c != '-') {
            return absl::InvalidArgumentError(absl::StrFormat(
                "%s = '%s': '%s' is not a backend name", key.name, v, part));
          }
        }
      }
      return absl::OkStatus();
    case KeyType::kBool:
      if (v == "0" || v == "1") return absl::OkStatus();
      return absl::InvalidArgumentError(
          absl::StrFormat("%s = '%s': want 0 or 1", key.name, v));
    case KeyType::kInt: {
      long long n = 0;
      if (!absl::SimpleAtoi(v, &n)) {
        return absl::InvalidArgumentError(
            absl::StrFormat("%s = '%s' is not a number (want %d..%d)", key.name,
                            v, key.min, key.max));
      }
      if (n < key.min || n > key.max) {
        return absl::InvalidArgumentError(
            absl::StrFormat("%s = %d is out of range (want %d..%d)", key.name,
                            n, key.min, key.max));
      }
      return absl::OkStatus();
    }
    case KeyType::kEnum:
      for (absl::string_view choice : absl::StrSplit(key.choices, '|')) {
        if (v == choice) return absl::OkStatus();
      }
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s = '%s' is not supported (want one of: %s)", key.name, v,
          absl::StrReplaceAll(key.choices, {{"|", ", "}})));
  }
  return absl::OkStatus();
}

}  // namespace accelcrypt
