// SPDX-License-Identifier: Apache-2.0
#include "tests/pkcs11/conformance/conformance_fixture.h"

#include <p11-kit-1/p11-kit/pkcs11.h>

#include <algorithm>

namespace accelcrypt::p11test {

const char* ModuleName(ModuleKind kind) {
  return kind == ModuleKind::kAccelcrypt ? "accelcrypt" : "softhsm2";
}

std::string ModulePath(ModuleKind kind) {
  if (kind == ModuleKind::kSoftHsm2) return ACCELCRYPT_SOFTHSM2_MODULE;
#ifdef ACCELCRYPT_P11_MODULE
  return ACCELCRYPT_P11_MODULE;
#else
  return "";
#endif
}

std::string BackendDir() { return ACCELCRYPT_P11_BACKEND_DIR; }
std::string HelperPath() { return ACCELCRYPT_P11_HELPER; }

std::string ParamName(const ::testing::TestParamInfo<ModuleKind>& info) {
  return ModuleName(info.param);
}

TokenEnvOptions P11Test::EnvOptions() const {
  TokenEnvOptions options;
  options.backend_dir = BackendDir();
  // Only the backends that can serve here; never the PKCS#11 client backend
  // (it would reach for a token of its own).
  options.backends = "x86, software";
  return options;
}

void P11Test::SetUp() {
  std::string path = ModulePath(kind());
  if (path.empty()) {
    GTEST_SKIP() << "accelcrypt's PKCS#11 module is not part of this build "
                    "(no target accelcrypt_pkcs11 when CMake ran; re-run "
                    "cmake once pkcs11/module/ exists)";
  }
  auto module = Module::Load(path);
  if (!module.ok()) {
    GTEST_SKIP() << ModuleName(kind())
                 << " module not loadable: " << module.status().message();
  }
  module_ = *module;
  f_ = module_->fn();
  auto env = TokenEnv::Create(kind(), EnvOptions());
  ASSERT_TRUE(env.ok()) << env.status();
  env_ = std::move(*env);
  env_->Apply();
  if (!AutoInitialize()) return;
  ASSERT_CKR(CKR_OK, Initialize());
  if (!AutoToken()) return;
  ASSERT_CKR(CKR_OK, SetUpToken(AutoUserPin()));
}

void P11Test::TearDown() {
  if (initialized_) {
    EXPECT_CKR(CKR_OK, Finalize());
  }
}

CK_RV P11Test::Initialize(CK_C_INITIALIZE_ARGS* args) {
  CK_RV rv = f_->C_Initialize(args);
  if (rv == CKR_OK) initialized_ = true;
  return rv;
}

CK_RV P11Test::Finalize() {
  CK_RV rv = f_->C_Finalize(nullptr);
  if (rv == CKR_OK) initialized_ = false;
  mechs_read_ = false;
  return rv;
}

CK_RV P11Test::SetUpToken(bool user_pin) {
  CK_RV rv = InitToken(f_, kSoPin, kLabel, &slot_);
  if (rv != CKR_OK || !user_pin) return rv;
  return InitUserPin(f_, slot_, kSoPin, kUserPin);
}

CK_RV P11Test::OpenUserRw(CK_SESSION_HANDLE* h) {
  CK_RV rv = OpenRw(h);
  if (rv != CKR_OK) return rv;
  return LoginUser(*h);
}

bool P11Test::HasMechanism(CK_MECHANISM_TYPE mech) {
  if (!mechs_read_) {
    if (MechanismList(f_, slot_, &mechs_) != CKR_OK) mechs_.clear();
    mechs_read_ = true;
  }
  return std::find(mechs_.begin(), mechs_.end(), mech) != mechs_.end();
}

CK_RV P11Test::CreateSecretKey(CK_SESSION_HANDLE h, CK_KEY_TYPE type,
                               const std::vector<uint8_t>& value,
                               CK_OBJECT_HANDLE* key, Template extra) {
  Template t;
  t.Ulong(CKA_CLASS, CKO_SECRET_KEY)
      .Ulong(CKA_KEY_TYPE, type)
      .Bool(CKA_TOKEN, false)
      .Bytes(CKA_VALUE, value);
  const bool is_aes = type == CKK_AES;
  bool has[4] = {false, false, false, false};
  const CK_ATTRIBUTE_TYPE usage[4] = {CKA_ENCRYPT, CKA_DECRYPT, CKA_SIGN,
                                      CKA_VERIFY};
  for (CK_ULONG i = 0; i < extra.size(); ++i) {
    for (int u = 0; u < 4; ++u) {
      if (extra.data()[i].type == usage[u]) has[u] = true;
    }
  }
  for (int u = 0; u < 4; ++u) {
    if (has[u]) continue;
    bool on = is_aes ? u < 2 : u >= 2;
    t.Bool(usage[u], on);
  }
  for (CK_ULONG i = 0; i < extra.size(); ++i) {
    const CK_ATTRIBUTE& a = extra.data()[i];
    t.Raw(a.type, a.pValue, a.ulValueLen);
  }
  return f_->C_CreateObject(h, t.data(), t.size(), key);
}

}  // namespace accelcrypt::p11test
