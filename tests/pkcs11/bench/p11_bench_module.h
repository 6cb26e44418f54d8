// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_TESTS_PKCS11_BENCH_P11_BENCH_MODULE_H_
#define ACCELCRYPT_TESTS_PKCS11_BENCH_P11_BENCH_MODULE_H_

// p11_bench's side of a PKCS#11 module (p11_bench.cc runs the workload): the
// module dlopen'ed and C_Initialize'd (CKF_OS_LOCKING_OK), a fresh token in
// its own temp dir (C_InitToken, C_InitPIN, C_Login), an imported AES-128 key
// (a session object and a token object with the same value) and a generated
// RSA-2048 key pair (session objects).

#include <dlfcn.h>
#include <p11-kit-1/p11-kit/pkcs11.h>
#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "core/status.h"

namespace accelcrypt::p11bench {

inline constexpr char kSoPin[] = "87654321";
inline constexpr char kUserPin[] = "123456";
inline constexpr char kTokenLabel[] = "p11bench";

inline absl::Status CkFailure(const char* function, CK_RV rv) {
  return absl::InternalError(
      absl::StrFormat("%s returned CKR 0x%08lx", function, rv));
}

#define P11_CALL(module, fn, ...)                  \
  do {                                             \
    const CK_RV rv_ = (module)->fn(__VA_ARGS__);   \
    if (rv_ != CKR_OK) return CkFailure(#fn, rv_); \
  } while (0)

// Blank-padded PKCS#11 label of 32 bytes.
inline std::string PaddedLabel(const std::string& label) {
  std::string out = label;
  out.resize(32, ' ');
  return out;
}

inline std::string Trimmed(const CK_UTF8CHAR* data, size_t size) {
  std::string out(reinterpret_cast<const char*>(data), size);
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// TempDir is a directory removed with its contents on destruction.
class TempDir {
 public:
  static absl::StatusOr<TempDir> Create(const std::string& tag) {
    const char* base = getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") +
                          "/p11_bench-" + tag + ".XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      return absl::InternalError("mkdtemp " + pattern + ": " + strerror(errno));
    }
    return TempDir(pattern);
  }
  TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)) {
    other.path_.clear();
  }
  TempDir& operator=(TempDir&&) = delete;
  ~TempDir() {
    if (path_.empty()) return;
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// Settings for the accelcrypt module's generated configuration.
struct AccelcryptSetup {
  std::string backend_dir;  // [accelcrypt] backend_dir, when not empty
  std::string conf_file;    // use this file instead of a generated one
};

// Module is one loaded PKCS#11 module with a logged-in token holding the
// benchmark's keys. Not thread-safe itself; each thread opens its own
// session with OpenSession().
class Module {
 public:
  static absl::StatusOr<std::unique_ptr<Module>> Load(
      const std::string& name, const std::string& path,
      const AccelcryptSetup& setup) {
    ACCELCRYPT_ASSIGN_OR_RETURN(TempDir dir, TempDir::Create(name));
    auto module =
        std::unique_ptr<Module>(new Module(name, path, std::move(dir)));
    ACCELCRYPT_RETURN_IF_ERROR(module->Configure(setup));
    ACCELCRYPT_RETURN_IF_ERROR(module->Open());
    ACCELCRYPT_RETURN_IF_ERROR(module->InitToken());
    ACCELCRYPT_RETURN_IF_ERROR(module->MakeKeys());
    return module;
  }

  ~Module() {
    if (f_ != nullptr) {
      for (CK_SESSION_HANDLE s : sessions_) f_->C_CloseSession(s);
      f_->C_Finalize(nullptr);
    }
    // The handle stays open: a module's C++ statics may run at exit.
  }

  const std::string& name() const { return name_; }
  const std::string& path() const { return path_; }
  CK_FUNCTION_LIST* f() const { return f_; }
  CK_OBJECT_HANDLE aes_key() const { return aes_key_; }
  CK_OBJECT_HANDLE aes_token_key() const { return aes_token_key_; }
  CK_OBJECT_HANDLE rsa_private() const { return rsa_private_; }
  CK_OBJECT_HANDLE rsa_public() const { return rsa_public_; }
  const std::vector<uint8_t>& aes_key_value() const { return aes_value_; }

  // OpenSession opens a further read-only session on the logged-in token
  // (closed with the module).
  absl::StatusOr<CK_SESSION_HANDLE> OpenSession() {
    CK_SESSION_HANDLE s = CK_INVALID_HANDLE;
    P11_CALL(f_, C_OpenSession, slot_, CKF_SERIAL_SESSION, nullptr, nullptr,
             &s);
    sessions_.push_back(s);
    return s;
  }

  // HardwareFlag reports whether C_GetMechanismInfo flags `mech` CKF_HW.
  std::string HardwareFlag(CK_MECHANISM_TYPE mech) const {
    CK_MECHANISM_INFO info{};
    if (f_->C_GetMechanismInfo(slot_, mech, &info) != CKR_OK) return "absent";
    return (info.flags & CKF_HW) ? "hw" : "sw";
  }

 private:
  Module(std::string name, std::string path, TempDir dir)
      : name_(std::move(name)), path_(std::move(path)), dir_(std::move(dir)) {}

  // Configure points the module at a token store in the temp dir. The
  // environment is read by C_Initialize, which runs right after.
  absl::Status Configure(const AccelcryptSetup& setup) {
    const std::string conf = dir_.path() + "/module.conf";
    const std::string tokens = dir_.path() + "/tokens";
    std::filesystem::create_directories(tokens);
    std::ofstream out(conf);
    if (path_.find("softhsm") != std::string::npos) {
      out << "directories.tokendir = " << tokens << "\n"
          << "objectstore.backend = file\nlog.level = ERROR\n";
      setenv("SOFTHSM2_CONF", conf.c_str(), 1);
    } else if (!setup.conf_file.empty()) {
      setenv("ACCELCRYPT_PKCS11_CONF", setup.conf_file.c_str(), 1);
      setenv("ACCELCRYPT_PKCS11_TOKEN_DIR", tokens.c_str(), 1);
    } else {
      if (!setup.backend_dir.empty()) {
        out << "[accelcrypt]\nbackend_dir = " << setup.backend_dir << "\n\n";
      }
      // Low PBKDF2 cost: C_Login is not what is measured.
      out << "[accelcrypt_pkcs11]\ntoken_dir = " << tokens
          << "\nslots = 1\npbkdf2_iterations = 1000\n";
      setenv("ACCELCRYPT_PKCS11_CONF", conf.c_str(), 1);
    }
    out.close();
    if (!out) return absl::InternalError("cannot write " + conf);
    return absl::OkStatus();
  }

  absl::Status Open() {
    handle_ = dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) {
      return absl::NotFoundError(
          absl::StrFormat("%s: dlopen: %s", name_, dlerror()));
    }
    auto get = reinterpret_cast<CK_C_GetFunctionList>(
        dlsym(handle_, "C_GetFunctionList"));
    if (get == nullptr) {
      return absl::NotFoundError(path_ + " exports no C_GetFunctionList");
    }
    CK_FUNCTION_LIST* f = nullptr;
    if (CK_RV rv = get(&f); rv != CKR_OK || f == nullptr) {
      return CkFailure("C_GetFunctionList", rv);
    }
    CK_C_INITIALIZE_ARGS args{};
    args.flags = CKF_OS_LOCKING_OK;
    P11_CALL(f, C_Initialize, &args);
    f_ = f;
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<CK_SLOT_ID>> Slots() {
    CK_ULONG count = 0;
    P11_CALL(f_, C_GetSlotList, CK_TRUE, nullptr, &count);
    std::vector<CK_SLOT_ID> slots(count);
    P11_CALL(f_, C_GetSlotList, CK_TRUE, slots.data(), &count);
    slots.resize(count);
    return slots;
  }

  // InitToken initialises the first token, finds it again by label (SoftHSM
  // moves an initialised token to a new slot id), sets the user PIN and
  // logs the user in on a session kept open for the run.
  absl::Status InitToken() {
    ACCELCRYPT_ASSIGN_OR_RETURN(auto slots, Slots());
    if (slots.empty())
      return absl::NotFoundError(name_ + ": no slot with a token");
    const std::string label = PaddedLabel(kTokenLabel);
    P11_CALL(
        f_, C_InitToken, slots[0],
        reinterpret_cast<CK_UTF8CHAR_PTR>(const_cast<char*>(kSoPin)),
        strlen(kSoPin),
        reinterpret_cast<CK_UTF8CHAR_PTR>(const_cast<char*>(label.data())));
    ACCELCRYPT_ASSIGN_OR_RETURN(slots, Slots());
    bool found = false;
    for (CK_SLOT_ID id : slots) {
      CK_TOKEN_INFO info{};
      if (f_->C_GetTokenInfo(id, &info) == CKR_OK &&
          Trimmed(info.label, sizeof(info.label)) == kTokenLabel) {
        slot_ = id;
        found = true;
        break;
      }
    }
    if (!found)
      return absl::NotFoundError(name_ + ": initialised token not found");
    P11_CALL(f_, C_OpenSession, slot_, CKF_SERIAL_SESSION | CKF_RW_SESSION,
             nullptr, nullptr, &main_session_);
    sessions_.push_back(main_session_);
    P11_CALL(f_, C_Login, main_session_, CKU_SO,
             reinterpret_cast<CK_UTF8CHAR_PTR>(const_cast<char*>(kSoPin)),
             strlen(kSoPin));
    P11_CALL(f_, C_InitPIN, main_session_,
             reinterpret_cast<CK_UTF8CHAR_PTR>(const_cast<char*>(kUserPin)),
             strlen(kUserPin));
    P11_CALL(f_, C_Logout, main_session_);
    P11_CALL(f_, C_Login, main_session_, CKU_USER,
             reinterpret_cast<CK_UTF8CHAR_PTR>(const_cast<char*>(kUserPin)),
             strlen(kUserPin));
    return absl::OkStatus();
  }

  // MakeKeys imports a random AES-128 key (so libcrypto can check the
  // ciphertext) and generates an RSA-2048 key pair, all session objects.
  absl::Status MakeKeys() {
    CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
    aes_value_.resize(16);
    if (RAND_bytes(aes_value_.data(), aes_value_.size()) != 1) {
      return absl::InternalError("RAND_bytes failed");
    }
    CK_OBJECT_CLASS secret = CKO_SECRET_KEY;
    CK_KEY_TYPE aes = CKK_AES;
    CK_ATTRIBUTE aes_tmpl[] = {
        {CKA_CLASS, &secret, sizeof(secret)},
        {CKA_KEY_TYPE, &aes, sizeof(aes)},
        {CKA_TOKEN, &no, sizeof(no)},
        {CKA_ENCRYPT, &yes, sizeof(yes)},
        {CKA_DECRYPT, &yes, sizeof(yes)},
        {CKA_VALUE, aes_value_.data(), aes_value_.size()},
    };
    P11_CALL(f_, C_CreateObject, main_session_, aes_tmpl,
             sizeof(aes_tmpl) / sizeof(aes_tmpl[0]), &aes_key_);
    aes_tmpl[2].pValue = &yes;  // CKA_TOKEN
    CK_ATTRIBUTE aes_token_tmpl[8];
    std::copy(std::begin(aes_tmpl), std::end(aes_tmpl), aes_token_tmpl);
    aes_token_tmpl[6] = {CKA_PRIVATE, &yes, sizeof(yes)};
    aes_token_tmpl[7] = {CKA_SENSITIVE, &yes, sizeof(yes)};
    P11_CALL(f_, C_CreateObject, main_session_, aes_token_tmpl,
             sizeof(aes_token_tmpl) / sizeof(aes_token_tmpl[0]),
             &aes_token_key_);

    CK_ULONG bits = 2048;
    CK_BYTE exponent[] = {0x01, 0x00, 0x01};
    CK_ATTRIBUTE pub_tmpl[] = {
        {CKA_TOKEN, &no, sizeof(no)},
        {CKA_VERIFY, &yes, sizeof(yes)},
        {CKA_MODULUS_BITS, &bits, sizeof(bits)},
        {CKA_PUBLIC_EXPONENT, exponent, sizeof(exponent)},
    };
    CK_ATTRIBUTE priv_tmpl[] = {
        {CKA_TOKEN, &no, sizeof(no)},
        {CKA_PRIVATE, &yes, sizeof(yes)},
        {CKA_SENSITIVE, &yes, sizeof(yes)},
        {CKA_SIGN, &yes, sizeof(yes)},
    };
    CK_MECHANISM gen{CKM_RSA_PKCS_KEY_PAIR_GEN, nullptr, 0};
    P11_CALL(f_, C_GenerateKeyPair, main_session_, &gen, pub_tmpl,
             sizeof(pub_tmpl) / sizeof(pub_tmpl[0]), priv_tmpl,
             sizeof(priv_tmpl) / sizeof(priv_tmpl[0]), &rsa_public_,
             &rsa_private_);
    return absl::OkStatus();
  }

  std::string name_;
  std::string path_;
  TempDir dir_;
  void* handle_ = nullptr;
  CK_FUNCTION_LIST* f_ = nullptr;
  CK_SLOT_ID slot_ = 0;
  CK_SESSION_HANDLE main_session_ = CK_INVALID_HANDLE;
  std::vector<CK_SESSION_HANDLE> sessions_;
  std::vector<uint8_t> aes_value_;
  CK_OBJECT_HANDLE aes_key_ = CK_INVALID_HANDLE;
  CK_OBJECT_HANDLE aes_token_key_ = CK_INVALID_HANDLE;
  CK_OBJECT_HANDLE rsa_public_ = CK_INVALID_HANDLE;
  CK_OBJECT_HANDLE rsa_private_ = CK_INVALID_HANDLE;
};

}  // namespace accelcrypt::p11bench

#endif  // ACCELCRYPT_TESTS_PKCS11_BENCH_P11_BENCH_MODULE_H_
