// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_CORE_CONFIG_KEYS_H_
#define ACCELCRYPT_CORE_CONFIG_KEYS_H_

#include <string_view>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace accelcrypt {

class Config;

// ConfigKey describes one fixed setting of the core. This one table drives
// the parser's checks (Config::Validate), the keys the provider reads from
// its openssl.cnf section, and the key table of docs/configuration.md (a
// test compares them).
enum class KeyType {
  kString,  // any text (paths)
  kList,    // comma/space separated names
  kInt,     // a whole number within [min, max]
  kBool,    // 0 or 1
  kEnum,    // one of `choices` ('|' separated)
};

struct ConfigKey {
  const char* name;
  KeyType type;
  long long min = 0;
  long long max = 0;
  const char* choices = "";
  // An older or alternative spelling read as this key, or "".
  const char* alias = "";
};

absl::Span<const ConfigKey> ConfigKeys();
// FindConfigKey matches a name or an alias (lower case), else nullptr.
const ConfigKey* FindConfigKey(std::string_view name);

// IsSizedPkeyRouteName is true for the `<alg>` of a per-key-size route,
// `route.rsa-<bits>` / `route.dsa-<bits>` (e.g. "rsa-2048").
bool IsSizedPkeyRouteName(std::string_view alg);

// CheckValue checks one value against its key's type and range; the error
// names the key and the value (the caller adds where it was written).
absl::Status CheckValue(const ConfigKey& key, std::string_view value);

}  // namespace accelcrypt

#endif  // ACCELCRYPT_CORE_CONFIG_KEYS_H_
