// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_TESTS_P11MODULE_CONFORMANCE_CONFORMANCE_FIXTURE_H_
#define ACCELCRYPT_TESTS_P11MODULE_CONFORMANCE_CONFORMANCE_FIXTURE_H_

// The fixture of the PKCS#11 spec-conformance suites: every test runs once
// per module (accelcrypt's accelcrypt-pkcs11.so and SoftHSMv2), reached only
// through dlopen + C_GetFunctionList (p11_harness.h). Each test gets a fresh
// temporary token store, the module's environment set before C_Initialize,
// C_Initialize in SetUp, C_Finalize in TearDown, and (unless the suite asks
// otherwise) an initialised token with an initialised user PIN.
//
// The tests check the specification (PKCS#11 v2.40 base and current
// mechanisms), never a module's quirks. Where SoftHSMv2 provably deviates,
// the test skips for SoftHSMv2 only, through the deviation table
// (deviations.cc) and SKIP_IF_DEVIATES; a mechanism a module does not list in
// C_GetMechanismList skips through REQUIRE_MECHANISM.

#include <p11-kit-1/p11-kit/pkcs11.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "tests/pkcs11/conformance/p11_harness.h"

namespace accelcrypt::p11test {

// ModuleName is "accelcrypt" or "softhsm2" (test-name suffix).
const char* ModuleName(ModuleKind kind);
// ModulePath is the module file; empty for accelcrypt when the build has no
// accelcrypt_pkcs11 target.
std::string ModulePath(ModuleKind kind);
// BackendDir is the build tree's accelcrypt backend directory.
std::string BackendDir();
// HelperPath is the p11_conformance_helper binary (persistence tests).
std::string HelperPath();

// A documented deviation of a module from the specification.
struct Deviation {
  ModuleKind module;
  const char* id;    // the check, e.g. "login.so_with_ro_session"
  const char* what;  // what the module does instead, with the spec section
};
// FindDeviation returns the table entry for (module, id), or nullptr.
const Deviation* FindDeviation(ModuleKind module, std::string_view id);
// DeviationPrefix is "SoftHSMv2 2.6.1" / "accelcrypt".
const char* DeviationPrefix(ModuleKind module);

#define SKIP_IF_DEVIATES(id)                                         \
  do {                                                               \
    if (const ::accelcrypt::p11test::Deviation* dev_ =               \
            ::accelcrypt::p11test::FindDeviation(kind(), id)) {      \
      GTEST_SKIP() << ::accelcrypt::p11test::DeviationPrefix(kind()) \
                   << " deviates: " << dev_->what;                   \
    }                                                                \
  } while (0)

#define REQUIRE_MECHANISM(mech)                                         \
  do {                                                                  \
    if (!HasMechanism(mech)) {                                          \
      GTEST_SKIP() << ::accelcrypt::p11test::ModuleName(kind())         \
                   << " does not list " #mech " in C_GetMechanismList"; \
    }                                                                   \
  } while (0)

class P11Test : public ::testing::TestWithParam<ModuleKind> {
 public:
  static constexpr std::string_view kSoPin = "so-pin-0000";
  static constexpr std::string_view kUserPin = "user-pin-1111";
  static constexpr std::string_view kLabel = "conformance";

 protected:
  // Suites override these to get an uninitialised library or token.
  virtual bool AutoInitialize() const { return true; }
  virtual bool AutoToken() const { return true; }
  virtual bool AutoUserPin() const { return true; }
  virtual TokenEnvOptions EnvOptions() const;

  void SetUp() override;
  void TearDown() override;

  ModuleKind kind() const { return GetParam(); }
  bool is_softhsm() const { return kind() == ModuleKind::kSoftHsm2; }
  CK_FUNCTION_LIST* f() const { return f_; }
  CK_SLOT_ID slot() const { return slot_; }
  TokenEnv& env() { return *env_; }

  // Initialize/Finalize call C_Initialize(args)/C_Finalize(NULL) and track
  // the state so TearDown finalizes exactly once.
  CK_RV Initialize(CK_C_INITIALIZE_ARGS* args = nullptr);
  CK_RV Finalize();
  // SetUpToken initialises the token (label kLabel, SO PIN kSoPin) and,
  // when `user_pin`, the user PIN kUserPin.
  CK_RV SetUpToken(bool user_pin);
  // Session helpers (serial sessions on slot()).
  CK_RV OpenRw(CK_SESSION_HANDLE* h) { return OpenSession(f_, slot_, true, h); }
  CK_RV OpenRo(CK_SESSION_HANDLE* h) {
    return OpenSession(f_, slot_, false, h);
  }
  CK_RV LoginUser(CK_SESSION_HANDLE h) {
    return Login(f_, h, CKU_USER, kUserPin);
  }
  // OpenUserRw opens a R/W session and logs the user in.
  CK_RV OpenUserRw(CK_SESSION_HANDLE* h);
  bool HasMechanism(CK_MECHANISM_TYPE mech);
  // CreateAesKey makes a session AES key object with `value` usable for
  // encrypt/decrypt (plus `extra` attributes appended).
  CK_RV CreateSecretKey(CK_SESSION_HANDLE h, CK_KEY_TYPE type,
                        const std::vector<uint8_t>& value,
                        CK_OBJECT_HANDLE* key, Template extra = Template());

 private:
  const Module* module_ = nullptr;
  CK_FUNCTION_LIST* f_ = nullptr;
  std::unique_ptr<TokenEnv> env_;
  CK_SLOT_ID slot_ = 0;
  bool initialized_ = false;
  std::vector<CK_MECHANISM_TYPE> mechs_;
  bool mechs_read_ = false;
};

// ParamName names instances "accelcrypt" / "softhsm2".
std::string ParamName(const ::testing::TestParamInfo<ModuleKind>& info);

#define ACCELCRYPT_P11_INSTANTIATE(suite)                               \
  INSTANTIATE_TEST_SUITE_P(                                             \
      Modules, suite,                                                   \
      ::testing::Values(::accelcrypt::p11test::ModuleKind::kAccelcrypt, \
                        ::accelcrypt::p11test::ModuleKind::kSoftHsm2),  \
      ::accelcrypt::p11test::ParamName)

}  // namespace accelcrypt::p11test

#endif  // ACCELCRYPT_TESTS_P11MODULE_CONFORMANCE_CONFORMANCE_FIXTURE_H_
