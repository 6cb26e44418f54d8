// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_PKCS11_MODULE_MODULE_CONFIG_H_
#define ACCELCRYPT_PKCS11_MODULE_MODULE_CONFIG_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "core/config.h"

namespace accelcrypt::p11 {

// ModuleConfig is the PKCS#11 module's configuration: the file named by
// $ACCELCRYPT_PKCS11_CONF (openssl.cnf syntax). Section [accelcrypt] holds
// the core's keys (core/config.h); section [accelcrypt_pkcs11] the module's:
//   token_dir          slot N's store is <token_dir>/slot<N> (default
//                      $XDG_DATA_HOME/accelcrypt/tokens, else
//                      $HOME/.local/share/accelcrypt/tokens; env
//                      ACCELCRYPT_PKCS11_TOKEN_DIR wins)
//   slots              number of slots, one token each (1..64, default 1)
//   pbkdf2_iterations  PIN key derivation cost (default 100000)
//   max_pin_failures   wrong PINs before CKR_PIN_LOCKED (default 10)
// The provider's $ACCELCRYPT_CONF is never read; the environment overrides
// ACCELCRYPT_BACKEND_DIR, ACCELCRYPT_STATS_DIR and ACCELCRYPT_LOG_LEVEL
// apply to the core keys.
struct ModuleConfig {
  Config core;
  std::string token_dir;
  uint32_t slots = 1;
  uint32_t pbkdf2_iterations = 100000;
  uint32_t max_pin_failures = 10;
  int log_level = -1;  // -1: logging off
};

// LoadModuleConfig reads the environment and the file. A missing or
// malformed file, or a bad value, is CKR_FUNCTION_FAILED with a message.
absl::StatusOr<ModuleConfig> LoadModuleConfig();

// PreventRecursion keeps the core from loading a PKCS#11 client backend
// that would call back into this module: when `pkcs11.module` names
// `self_path` (compared after realpath) or a p11-kit proxy/client module
// (which may forward to every registered module, this one included),
// `pkcs11` is added to the core's `disable` list and `pkcs11.module` is
// cleared (so the backend declines even where the core initialises a
// backend before applying `disable`). Returns the reason
// (for the log), or an empty string when nothing was changed.
std::string PreventRecursion(const std::string& self_path, Config* config);

// SelfPath is the resolved path of the shared object holding this code
// (dladdr on a local symbol), or "" when unknown.
std::string SelfPath();

}  // namespace accelcrypt::p11

#endif  // ACCELCRYPT_PKCS11_MODULE_MODULE_CONFIG_H_
