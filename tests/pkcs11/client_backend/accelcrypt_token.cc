// SPDX-License-Identifier: Apache-2.0
#include "tests/pkcs11/client_backend/accelcrypt_token.h"

#include <dlfcn.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/status.h"
#include "pkcs11/common/ck_error.h"
#include "tests/support/test_env.h"

#ifndef ACCELCRYPT_PKCS11_MODULE
#error "ACCELCRYPT_PKCS11_MODULE must name the built accelcrypt-pkcs11.so"
#endif

namespace accelcrypt::testing {
namespace {

using p11::CkRvName;

// Functions loads the module (kept loaded) and returns its function list.
absl::StatusOr<CK_FUNCTION_LIST*> Functions() {
  void* handle =
      dlopen(AccelcryptToken::Module().c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    return absl::UnavailableError(
        absl::StrFormat("dlopen %s: %s", AccelcryptToken::Module(), dlerror()));
  }
  auto get = reinterpret_cast<CK_RV (*)(CK_FUNCTION_LIST_PTR_PTR)>(
      dlsym(handle, "C_GetFunctionList"));
  CK_FUNCTION_LIST* fl = nullptr;
  if (get == nullptr || get(&fl) != CKR_OK || fl == nullptr) {
    return absl::UnavailableError("C_GetFunctionList failed");
  }
  return fl;
}

absl::Status Check(const char* call, CK_RV rv) {
  if (rv == CKR_OK) return absl::OkStatus();
  return absl::InternalError(absl::StrFormat("%s: %s", call, CkRvName(rv)));
}

// Padded is a blank-padded 32-byte label.
std::vector<CK_UTF8CHAR> Padded(const char* label) {
  std::vector<CK_UTF8CHAR> out(32, ' ');
  std::memcpy(out.data(), label, std::min<size_t>(32, std::strlen(label)));
  return out;
}

CK_UTF8CHAR_PTR Utf8(const char* s) {
  return reinterpret_cast<CK_UTF8CHAR_PTR>(const_cast<char*>(s));
}

// Initialised C_Initialize's the module with OS locking and finalises on
// destruction.
class Initialised {
 public:
  explicit Initialised(CK_FUNCTION_LIST* fl) : fl_(fl) {
    CK_C_INITIALIZE_ARGS args{};
    args.flags = CKF_OS_LOCKING_OK;
    rv_ = fl_->C_Initialize(&args);
  }
  ~Initialised() {
    if (rv_ == CKR_OK) fl_->C_Finalize(nullptr);
  }
  CK_RV rv() const { return rv_; }

 private:
  CK_FUNCTION_LIST* fl_;
  CK_RV rv_;
};

absl::StatusOr<CK_SLOT_ID> FirstSlot(CK_FUNCTION_LIST* fl) {
  CK_ULONG count = 0;
  ACCELCRYPT_RETURN_IF_ERROR(
      Check("C_GetSlotList", fl->C_GetSlotList(CK_TRUE, nullptr, &count)));
  if (count == 0) return absl::InternalError("C_GetSlotList: no slot");
  std::vector<CK_SLOT_ID> slots(count);
  ACCELCRYPT_RETURN_IF_ERROR(
      Check("C_GetSlotList", fl->C_GetSlotList(CK_TRUE, slots.data(), &count)));
  return slots[0];
}

absl::Status InitToken(CK_FUNCTION_LIST* fl) {
  Initialised init(fl);
  ACCELCRYPT_RETURN_IF_ERROR(Check("C_Initialize", init.rv()));
  ACCELCRYPT_ASSIGN_OR_RETURN(CK_SLOT_ID slot, FirstSlot(fl));
  std::vector<CK_UTF8CHAR> label = Padded(AccelcryptToken::kLabel);
  ACCELCRYPT_RETURN_IF_ERROR(Check(
      "C_InitToken",
      fl->C_InitToken(slot, Utf8(AccelcryptToken::kSoPin),
                      std::strlen(AccelcryptToken::kSoPin), label.data())));
  CK_SESSION_HANDLE session = CK_INVALID_HANDLE;
  ACCELCRYPT_RETURN_IF_ERROR(
      Check("C_OpenSession",
            fl->C_OpenSession(slot, CKF_SERIAL_SESSION | CKF_RW_SESSION,
                              nullptr, nullptr, &session)));
  absl::Status st = Check(
      "C_Login(SO)", fl->C_Login(session, CKU_SO, Utf8(AccelcryptToken::kSoPin),
                                 std::strlen(AccelcryptToken::kSoPin)));
  if (st.ok()) {
    st = Check("C_InitPIN", fl->C_InitPIN(session, Utf8(AccelcryptToken::kPin),
                                          std::strlen(AccelcryptToken::kPin)));
    fl->C_Logout(session);
  }
  fl->C_CloseSession(session);
  return st;
}

// ImportInProcess creates the key pair; run in a child process.
absl::Status ImportInProcess(CK_FUNCTION_LIST* fl, const KeyMaterial& key,
                             const std::string& label,
                             const std::string& id_hex) {
  Initialised init(fl);
  ACCELCRYPT_RETURN_IF_ERROR(Check("C_Initialize", init.rv()));
  ACCELCRYPT_ASSIGN_OR_RETURN(CK_SLOT_ID slot, FirstSlot(fl));
  CK_SESSION_HANDLE session = CK_INVALID_HANDLE;
  ACCELCRYPT_RETURN_IF_ERROR(
      Check("C_OpenSession",
            fl->C_OpenSession(slot, CKF_SERIAL_SESSION | CKF_RW_SESSION,
                              nullptr, nullptr, &session)));
  ACCELCRYPT_RETURN_IF_ERROR(
      Check("C_Login(USER)",
            fl->C_Login(session, CKU_USER, Utf8(AccelcryptToken::kPin),
                        std::strlen(AccelcryptToken::kPin))));
  const bool rsa = key.type == KeyMaterial::Type::kRsa;
  std::vector<uint8_t> id = FromHex(id_hex);
  CK_OBJECT_CLASS priv_class = CKO_PRIVATE_KEY, pub_class = CKO_PUBLIC_KEY;
  CK_KEY_TYPE type = rsa ? CKK_RSA : CKK_DSA;
  CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
  auto attr = [](CK_ATTRIBUTE_TYPE t, const void* p, size_t n) {
    return CK_ATTRIBUTE{t, const_cast<void*>(p), static_cast<CK_ULONG>(n)};
  };
  auto bytes = [&](CK_ATTRIBUTE_TYPE t, const std::vector<uint8_t>& v) {
    return attr(t, v.data(), v.size());
  };
  std::vector<CK_ATTRIBUTE> common = {
      attr(CKA_KEY_TYPE, &type, sizeof(type)),
      attr(CKA_TOKEN, &yes, sizeof(yes)),
      attr(CKA_LABEL, label.data(), label.size()),
      attr(CKA_ID, id.data(), id.size()),
  };
  std::vector<CK_ATTRIBUTE> priv = common, pub = common;
  priv.push_back(attr(CKA_CLASS, &priv_class, sizeof(priv_class)));
  priv.push_back(attr(CKA_PRIVATE, &yes, sizeof(yes)));
  priv.push_back(attr(CKA_SENSITIVE, &yes, sizeof(yes)));
  priv.push_back(attr(CKA_EXTRACTABLE, &no, sizeof(no)));
  priv.push_back(attr(CKA_SIGN, &yes, sizeof(yes)));
  pub.push_back(attr(CKA_CLASS, &pub_class, sizeof(pub_class)));
  pub.push_back(attr(CKA_PRIVATE, &no, sizeof(no)));
  pub.push_back(attr(CKA_VERIFY, &yes, sizeof(yes)));
  if (rsa) {
    priv.push_back(attr(CKA_DECRYPT, &yes, sizeof(yes)));
    pub.push_back(attr(CKA_ENCRYPT, &yes, sizeof(yes)));
    for (auto* t : {&priv, &pub}) {
      t->push_back(bytes(CKA_MODULUS, key.n));
      t->push_back(bytes(CKA_PUBLIC_EXPONENT, key.e));
    }
    priv.push_back(bytes(CKA_PRIVATE_EXPONENT, key.d));
    priv.push_back(bytes(CKA_PRIME_1, key.p));
    priv.push_back(bytes(CKA_PRIME_2, key.q));
    priv.push_back(bytes(CKA_EXPONENT_1, key.dmp1));
    priv.push_back(bytes(CKA_EXPONENT_2, key.dmq1));
    priv.push_back(bytes(CKA_COEFFICIENT, key.iqmp));
  } else {
    for (auto* t : {&priv, &pub}) {
      t->push_back(bytes(CKA_PRIME, key.dsa_p));
      t->push_back(bytes(CKA_SUBPRIME, key.dsa_q));
      t->push_back(bytes(CKA_BASE, key.dsa_g));
    }
    priv.push_back(bytes(CKA_VALUE, key.dsa_x));
    pub.push_back(bytes(CKA_VALUE, key.dsa_y));
  }
  CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
  absl::Status st =
      Check("C_CreateObject(private key)",
            fl->C_CreateObject(session, priv.data(), priv.size(), &h));
  if (st.ok()) {
    st = Check("C_CreateObject(public key)",
               fl->C_CreateObject(session, pub.data(), pub.size(), &h));
  }
  fl->C_Logout(session);
  fl->C_CloseSession(session);
  return st;
}

}  // namespace

std::string AccelcryptToken::Module() { return ACCELCRYPT_PKCS11_MODULE; }

absl::StatusOr<std::unique_ptr<AccelcryptToken>> AccelcryptToken::Create() {
  if (access(Module().c_str(), R_OK) != 0) {
    return absl::UnavailableError(Module() + " is not built");
  }
  std::unique_ptr<AccelcryptToken> token(new AccelcryptToken());
  char tmpl[] = "/tmp/accelcrypt-p11cb-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return absl::InternalError("mkdtemp failed");
  token->dir_ = tmpl;
  const std::string tokens = token->dir_ + "/tokens";
  mkdir(tokens.c_str(), 0700);
  mkdir(token->StatsDir().c_str(), 0700);
  const std::string conf = token->dir_ + "/p11.conf";
  {
    std::ofstream out(conf);
    out << "[accelcrypt]\n"
        << "backend_dir = " << BackendDir()
        << "\n"
        // The module's own core is told to use a PKCS#11 client backend on
        // this very module first: the no-recursion rule must drop it.
        << "backends = pkcs11, x86, software\n"
        // Started at C_Initialize, where the refusal is logged (the default
        // defers it to the module core's first RSA/DSA operation).
        << "deferred_start = load\n"
        << "pkcs11.module = " << Module() << "\n"
        << "stats_dir = " << token->StatsDir() << "\n"
        << "\n[accelcrypt_pkcs11]\n"
        << "token_dir = " << tokens << "\n"
        << "slots = 1\n"
        << "pbkdf2_iterations = 1000\n";
    if (!out) return absl::InternalError("cannot write " + conf);
  }
  setenv("ACCELCRYPT_PKCS11_CONF", conf.c_str(), 1);
  unsetenv("ACCELCRYPT_PKCS11_TOKEN_DIR");
  unsetenv("ACCELCRYPT_STATS_DIR");
  ACCELCRYPT_ASSIGN_OR_RETURN(CK_FUNCTION_LIST * fl, Functions());
  ACCELCRYPT_RETURN_IF_ERROR(InitToken(fl));
  token->pin_file_ = token->dir_ + "/pin";
  std::ofstream(token->pin_file_) << kPin << "\n";
  chmod(token->pin_file_.c_str(), 0600);
  return token;
}

AccelcryptToken::~AccelcryptToken() {
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

std::map<std::string, std::string> AccelcryptToken::Overrides() const {
  return {{"backends", "pkcs11, software"},
          // Started at load, as `accelcrypt list` does: the suites look at
          // the backend before its first operation (pkcs11_client_late_test
          // covers the deferred start of the provider and the engine).
          {"deferred_start", "load"},
          // The suites check what the token serves, verification included:
          // the configured order, not policy auto's CPU-side verify.
          {"policy", "priority"},
          {"pkcs11.module", Module()},
          {"pkcs11.token_label", kLabel},
          {"pkcs11.pin_file", pin_file_},
          {"pkcs11.pin_state_dir", dir_ + "/state"}};
}

absl::Status AccelcryptToken::Import(const KeyMaterial& key,
                                     const std::string& label,
                                     const std::string& id_hex) const {
  ACCELCRYPT_ASSIGN_OR_RETURN(CK_FUNCTION_LIST * fl, Functions());
  int pipe_fd[2];
  if (pipe(pipe_fd) != 0) return absl::InternalError("pipe failed");
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    close(pipe_fd[0]);
    absl::Status st = ImportInProcess(fl, key, label, id_hex);
    std::string msg(st.message());
    if (!st.ok() && write(pipe_fd[1], msg.data(), msg.size()) < 0) _exit(3);
    _exit(st.ok() ? 0 : 2);
  }
  close(pipe_fd[1]);
  std::string msg;
  char buf[256];
  for (ssize_t n; (n = read(pipe_fd[0], buf, sizeof(buf))) > 0;) {
    msg.append(buf, static_cast<size_t>(n));
  }
  close(pipe_fd[0]);
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    return absl::InternalError(
        absl::StrFormat("Import '%s' in a child process failed: %s", label,
                        msg.empty() ? "no message" : msg));
  }
  return absl::OkStatus();
}

}  // namespace accelcrypt::testing
