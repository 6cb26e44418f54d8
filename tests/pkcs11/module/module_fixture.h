// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_TESTS_PKCS11_MODULE_MODULE_FIXTURE_H_
#define ACCELCRYPT_TESTS_PKCS11_MODULE_MODULE_FIXTURE_H_

// The fixture shared by the p11_module_test parts
// (module_{init,session,mech}_test.cc): the PKCS#11 module through its only
// door, dlopen + C_GetFunctionList, with its own token directory and
// configuration file per test.

#include <dlfcn.h>
#include <p11-kit-1/p11-kit/pkcs11.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace accelcrypt::p11_module_test {

namespace fs = std::filesystem;

inline constexpr char kSoPin[] = "so-secret-1";
inline constexpr char kUserPin[] = "user-1234";

inline CK_UTF8CHAR_PTR Pin(const char* pin) {
  return reinterpret_cast<CK_UTF8CHAR_PTR>(const_cast<char*>(pin));
}

inline CK_FUNCTION_LIST* LoadModule() {
  static CK_FUNCTION_LIST* list = [] {
    void* dl = dlopen(ACCELCRYPT_P11_MODULE_PATH, RTLD_NOW | RTLD_LOCAL);
    if (dl == nullptr) return static_cast<CK_FUNCTION_LIST*>(nullptr);
    auto get =
        reinterpret_cast<CK_C_GetFunctionList>(dlsym(dl, "C_GetFunctionList"));
    CK_FUNCTION_LIST* l = nullptr;
    if (get == nullptr || get(&l) != CKR_OK) return l;
    return l;
  }();
  return list;
}

// Each test gets its own token directory and configuration file.
class ModuleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    f_ = LoadModule();
    ASSERT_NE(f_, nullptr) << dlerror();
    char tmpl[] = "/tmp/p11module-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    WriteConfig("");
  }
  void TearDown() override {
    f_->C_Finalize(nullptr);
    unsetenv("ACCELCRYPT_PKCS11_CONF");
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // WriteConfig writes the module's configuration with `core_extra` added
  // to the [accelcrypt] section and points ACCELCRYPT_PKCS11_CONF at it.
  void WriteConfig(const std::string& core_extra,
                   const std::string& module_extra = "") {
    conf_ = dir_ + "/module.cnf";
    std::ofstream out(conf_);
    out << "[accelcrypt]\nbackend_dir = " << ACCELCRYPT_P11_BACKEND_DIR << "\n"
        << core_extra << "\n[accelcrypt_pkcs11]\ntoken_dir = " << dir_
        << "/tokens\nslots = 2\npbkdf2_iterations = 1000\n"
        << "max_pin_failures = 3\n"
        << module_extra;
    out.close();
    setenv("ACCELCRYPT_PKCS11_CONF", conf_.c_str(), 1);
  }

  // InitToken initialises slot 0 with kSoPin and sets the user PIN.
  void InitToken() {
    CK_UTF8CHAR label[32];
    std::memset(label, ' ', sizeof(label));
    // PKCS#11 labels are blank-padded, not NUL-terminated.
    // NOLINTNEXTLINE(bugprone-not-null-terminated-result)
    std::memcpy(label, "module test", 11);
    ASSERT_EQ(f_->C_InitToken(0, Pin(kSoPin), strlen(kSoPin), label), CKR_OK);
    CK_SESSION_HANDLE s = Open(true);
    ASSERT_EQ(f_->C_Login(s, CKU_SO, Pin(kSoPin), strlen(kSoPin)), CKR_OK);
    ASSERT_EQ(f_->C_InitPIN(s, Pin(kUserPin), strlen(kUserPin)), CKR_OK);
    ASSERT_EQ(f_->C_CloseSession(s), CKR_OK);
  }

  CK_SESSION_HANDLE Open(bool rw, CK_SLOT_ID slot = 0) {
    CK_SESSION_HANDLE s = CK_INVALID_HANDLE;
    CK_FLAGS flags = CKF_SERIAL_SESSION | (rw ? CKF_RW_SESSION : 0);
    EXPECT_EQ(f_->C_OpenSession(slot, flags, nullptr, nullptr, &s), CKR_OK);
    return s;
  }

  CK_RV LoginUser(CK_SESSION_HANDLE s) {
    return f_->C_Login(s, CKU_USER, Pin(kUserPin), strlen(kUserPin));
  }

  // TryCreateData makes a data object with `label` and returns
  // C_CreateObject's answer; CreateData expects `want` of it.
  CK_RV TryCreateData(CK_SESSION_HANDLE s, const std::string& label, bool token,
                      bool is_private, CK_OBJECT_HANDLE* h) {
    CK_OBJECT_CLASS cls = CKO_DATA;
    CK_BBOOL tok = token ? CK_TRUE : CK_FALSE;
    CK_BBOOL priv = is_private ? CK_TRUE : CK_FALSE;
    CK_ATTRIBUTE t[] = {
        {CKA_CLASS, &cls, sizeof(cls)},
        {CKA_TOKEN, &tok, sizeof(tok)},
        {CKA_PRIVATE, &priv, sizeof(priv)},
        {CKA_LABEL, const_cast<char*>(label.data()), label.size()},
        {CKA_VALUE, const_cast<char*>("payload"), 7},
    };
    return f_->C_CreateObject(s, t, 5, h);
  }
  CK_OBJECT_HANDLE CreateData(CK_SESSION_HANDLE s, const std::string& label,
                              bool token, bool is_private,
                              CK_RV want = CKR_OK) {
    CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
    EXPECT_EQ(TryCreateData(s, label, token, is_private, &h), want) << label;
    return h;
  }

  std::vector<CK_OBJECT_HANDLE> FindByLabel(CK_SESSION_HANDLE s,
                                            const std::string& label) {
    CK_ATTRIBUTE t[] = {
        {CKA_LABEL, const_cast<char*>(label.data()), label.size()}};
    EXPECT_EQ(f_->C_FindObjectsInit(s, t, 1), CKR_OK);
    std::vector<CK_OBJECT_HANDLE> found(16);
    CK_ULONG n = 0;
    EXPECT_EQ(f_->C_FindObjects(s, found.data(), found.size(), &n), CKR_OK);
    EXPECT_EQ(f_->C_FindObjectsFinal(s), CKR_OK);
    found.resize(n);
    return found;
  }

  std::string Label(CK_SESSION_HANDLE s, CK_OBJECT_HANDLE h) {
    char buf[64];
    CK_ATTRIBUTE t = {CKA_LABEL, buf, sizeof(buf)};
    if (f_->C_GetAttributeValue(s, h, &t, 1) != CKR_OK) return "<error>";
    return std::string(buf, t.ulValueLen);
  }

  // InChild runs `body` in a forked child and returns its exit status
  // (the child's line of failure, 0 on success, -1 on a crash/timeout).
  template <typename Body>
  int InChild(Body body, int timeout_s = 30) {
    fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
      alarm(timeout_s);
      _exit(body());
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  CK_FUNCTION_LIST* f_ = nullptr;
  std::string dir_;
  std::string conf_;
};

// A child's check: exits with the failing line.
#define CHILD_CHECK(cond)                   \
  do {                                      \
    if (!(cond)) return __LINE__ % 250 + 1; \
  } while (false)

}  // namespace accelcrypt::p11_module_test

#endif  // ACCELCRYPT_TESTS_PKCS11_MODULE_MODULE_FIXTURE_H_
