// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_TESTS_P11MODULE_CLIENT_BACKEND_ACCELCRYPT_TOKEN_H_
#define ACCELCRYPT_TESTS_P11MODULE_CLIENT_BACKEND_ACCELCRYPT_TOKEN_H_

#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/pkey.h"
#include "tests/backends/pkcs11/token_fixture.h"

namespace accelcrypt::testing {

// AccelcryptToken is the TokenFixture (tests/backends/pkcs11/token_fixture.h)
// of accelcrypt's own PKCS#11 module, the counterpart of SoftHsm
// (tests/backends/pkcs11/softhsm_fixture.h): one token in a temporary
// directory, initialised for one test binary and removed on destruction.
//
// Create writes <dir>/p11.conf and points $ACCELCRYPT_PKCS11_CONF at it
// (inherited by child processes such as pkcs11-tool):
//   [accelcrypt]         the module's own core: backend_dir = the build
//                        tree's backends, backends = pkcs11, x86, software,
//                        pkcs11.module = this module (the no-recursion rule
//                        must drop it), stats_dir = <dir>/module-stats
//   [accelcrypt_pkcs11]  token_dir = <dir>/tokens, slots = 1,
//                        pbkdf2_iterations = 1000
// then initialises the token through dlopen + C_GetFunctionList:
// C_InitToken (SO PIN, label kLabel), C_InitPIN (kPin), C_Finalize. The
// module stays loaded (never dlclose'd) for the life of the process.
class AccelcryptToken : public TokenFixture {
 public:
  static constexpr char kLabel[] = "accelcrypt-test";
  static constexpr char kPin[] = "4711-test";
  static constexpr char kSoPin[] = "0000-so-test";

  // Module is the built accelcrypt-pkcs11.so (ACCELCRYPT_PKCS11_MODULE).
  static std::string Module();

  // Create initialises the token; an error says which call failed and its
  // CKR_* name.
  static absl::StatusOr<std::unique_ptr<AccelcryptToken>> Create();
  ~AccelcryptToken() override;
  AccelcryptToken(const AccelcryptToken&) = delete;
  AccelcryptToken& operator=(const AccelcryptToken&) = delete;

  std::string module() const override { return Module(); }
  std::string label() const override { return kLabel; }
  std::string pin() const override { return kPin; }
  // The module takes any OAEP hash/MGF1 and a label (CKZ_DATA_SPECIFIED).
  bool oaep_sha2_and_label() const override { return true; }

  // Overrides is the client-side configuration that loads the PKCS#11
  // client backend on this token (PIN from a file) ahead of software; the
  // same keys as SoftHsm::Overrides.
  std::map<std::string, std::string> Overrides() const override;
  const std::string& dir() const override { return dir_; }
  const std::string& pin_file() const { return pin_file_; }
  // StatsDir is where the module's own core writes its JSON counters when
  // its instance ends (C_Finalize by the last client) or at process exit.
  std::string StatsDir() const { return dir_ + "/module-stats"; }

  // Import puts `key` (with its private part) on the token as a token key
  // pair sharing CKA_LABEL `label` and CKA_ID `id_hex` (private object:
  // CKA_PRIVATE, CKA_SENSITIVE, not extractable), as an administrator
  // would. It runs in a forked child process that initialises the module,
  // logs in, creates both objects and finalises (as softhsm2-util --import
  // does for SoftHsm), so the test process's own login state is untouched.
  absl::Status Import(const KeyMaterial& key, const std::string& label,
                      const std::string& id_hex) const override;

 private:
  AccelcryptToken() = default;
  std::string dir_, pin_file_;
};

}  // namespace accelcrypt::testing

#endif  // ACCELCRYPT_TESTS_P11MODULE_CLIENT_BACKEND_ACCELCRYPT_TOKEN_H_
