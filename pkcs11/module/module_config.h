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

// The PKCS#11 client backend refuses a module that leads back into this
// one (backends/pkcs11/token.cc, RefuseLoop): the core tells its backends
// which object it runs in (accelcrypt_host::host_object).

}  // namespace accelcrypt::p11

#endif  // ACCELCRYPT_PKCS11_MODULE_MODULE_CONFIG_H_
