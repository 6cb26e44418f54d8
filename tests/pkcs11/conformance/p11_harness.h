// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_TESTS_P11MODULE_CONFORMANCE_P11_HARNESS_H_
#define ACCELCRYPT_TESTS_P11MODULE_CONFORMANCE_P11_HARNESS_H_

// A small harness that reaches a PKCS#11 module ONLY the way an application
// does: dlopen + C_GetFunctionList, then the function list. Nothing here
// links against, or includes, the module under test. Reusable by any test
// of a PKCS#11 module (conformance, clients, benchmarks).
//
// Pieces:
//   CkrName / CkrEq / EXPECT_CKR / ASSERT_CKR   CK_RV values printed by name
//   Module                 a loaded module (dlopen'ed once per process and
//                          path, never dlclose'd: a module's C++ statics and
//                          libcrypto's atexit handlers must stay valid)
//   TokenEnv               a temporary token store for one module kind and
//                          the environment that points the module at it
//                          (set it before C_Initialize)
//   Template               a CK_ATTRIBUTE array that owns its values
//   InitToken, FindSlotByLabel, InitUserPin, OpenSession, Login
//                          the token set-up steps, returning CK_RV
//   GetAttribute, GetUlong, GetBool, FindObjects
//                          attribute and search helpers
//
// Thread-compatibility: none of this is thread-safe; tests call it from one
// thread. TokenEnv::Apply changes the process environment (setenv).

#include <p11-kit-1/p11-kit/pkcs11.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"

namespace accelcrypt::p11test {

// CkrName is "CKR_PIN_INCORRECT" for a known CK_RV, else "CKR_0x...".
std::string CkrName(CK_RV rv);

// CkrEq is a gtest predicate-formatter comparing two CK_RVs by name.
::testing::AssertionResult CkrEq(const char* expected_expr,
                                 const char* actual_expr, CK_RV expected,
                                 CK_RV actual);

// EXPECT_CKR(CKR_OK, f->C_Login(...)) prints both values by name.
#define EXPECT_CKR(expected, actual) \
  EXPECT_PRED_FORMAT2(::accelcrypt::p11test::CkrEq, expected, actual)
#define ASSERT_CKR(expected, actual) \
  ASSERT_PRED_FORMAT2(::accelcrypt::p11test::CkrEq, expected, actual)

// Which module a TokenEnv writes a configuration for.
enum class ModuleKind { kAccelcrypt, kSoftHsm2 };

// Module is a PKCS#11 module loaded with dlopen(RTLD_NOW | RTLD_LOCAL).
class Module {
 public:
  // Load returns the module at `path`, loading it on first use (later calls
  // with the same path return the same object; it lives until exit).
  // kNotFound when the file does not exist, kFailedPrecondition when it
  // cannot be loaded or has no working C_GetFunctionList.
  static absl::StatusOr<const Module*> Load(const std::string& path);

  const std::string& path() const { return path_; }
  // fn is the module's function list (owned by the module).
  CK_FUNCTION_LIST* fn() const { return fn_; }
  // Symbol looks up an exported symbol (nullptr when absent).
  void* Symbol(const char* name) const;

 private:
  Module() = default;
  std::string path_;
  void* handle_ = nullptr;
  CK_FUNCTION_LIST* fn_ = nullptr;
};

// Options of a TokenEnv.
struct TokenEnvOptions {
  // accelcrypt only: the core's backend_dir (where backend .so files are)
  // and, when not empty, its `backends` list (e.g. "software" or
  // "x86, software").
  std::string backend_dir;
  std::string backends;
  int slots = 1;
  int pbkdf2_iterations = 1000;
};

// TokenEnv is a fresh temporary directory holding a module configuration
// and an empty token directory. The directory is removed on destruction.
//   accelcrypt: <dir>/accelcrypt-pkcs11.cnf with [accelcrypt] (backend_dir,
//     backends, log off) and [accelcrypt_pkcs11] (token_dir = <dir>/tokens,
//     slots, pbkdf2_iterations); env ACCELCRYPT_PKCS11_CONF names it.
//   SoftHSMv2: <dir>/softhsm2.conf (directories.tokendir = <dir>/tokens,
//     objectstore.backend = file, slots.removable = false,
//     library.reset_on_fork = true, log.level = ERROR); env SOFTHSM2_CONF.
class TokenEnv {
 public:
  static absl::StatusOr<std::unique_ptr<TokenEnv>> Create(
      ModuleKind kind, const TokenEnvOptions& options = {});
  ~TokenEnv();
  TokenEnv(const TokenEnv&) = delete;
  TokenEnv& operator=(const TokenEnv&) = delete;

  // Apply sets the environment variables (Vars) in this process, so the
  // next C_Initialize of the module (and any child process) uses this store.
  void Apply() const;
  // Vars is the (name, value) list Apply sets.
  std::vector<std::pair<std::string, std::string>> Vars() const;
  const std::string& dir() const { return dir_; }
  const std::string& token_dir() const { return token_dir_; }
  ModuleKind kind() const { return kind_; }

 private:
  TokenEnv() = default;
  ModuleKind kind_ = ModuleKind::kSoftHsm2;
  std::string dir_;
  std::string token_dir_;
  std::string conf_;
};

// Template is a CK_ATTRIBUTE array owning copies of its values (pointers
// stay valid while the Template lives; adding may not move older values).
class Template {
 public:
  Template& Bool(CK_ATTRIBUTE_TYPE type, bool value);
  Template& Ulong(CK_ATTRIBUTE_TYPE type, CK_ULONG value);
  Template& Bytes(CK_ATTRIBUTE_TYPE type, const std::vector<uint8_t>& value);
  Template& Str(CK_ATTRIBUTE_TYPE type, std::string_view value);
  // Raw adds an attribute with exactly these bytes and this length (for
  // wrong-length tests).
  Template& Raw(CK_ATTRIBUTE_TYPE type, const void* data, CK_ULONG len);

  CK_ATTRIBUTE* data() { return attrs_.data(); }
  CK_ULONG size() const { return attrs_.size(); }

 private:
  std::deque<std::vector<uint8_t>> values_;
  std::vector<CK_ATTRIBUTE> attrs_;
};

// PaddedLabel is `label` blank-padded to the 32 bytes of a token label.
std::vector<uint8_t> PaddedLabel(std::string_view label);
// Trimmed is a blank-padded CK_UTF8CHAR field without trailing blanks.
std::string Trimmed(const unsigned char* field, size_t len);

// InitToken initialises the first slot whose token lacks
// CKF_TOKEN_INITIALIZED with `so_pin` and `label`, then re-reads the slot
// list and stores the slot of the token labelled `label` in *slot (SoftHSMv2
// moves an initialised token to a new slot id). CKR_TOKEN_NOT_PRESENT when
// no uninitialised token exists; otherwise the first failing call's CK_RV.
CK_RV InitToken(CK_FUNCTION_LIST* f, std::string_view so_pin,
                std::string_view label, CK_SLOT_ID* slot);
// FindSlotByLabel finds the slot whose token is labelled `label`
// (CKR_TOKEN_NOT_PRESENT when none).
CK_RV FindSlotByLabel(CK_FUNCTION_LIST* f, std::string_view label,
                      CK_SLOT_ID* slot);
// InitUserPin opens a R/W session, logs the SO in, calls C_InitPIN and
// closes the session.
CK_RV InitUserPin(CK_FUNCTION_LIST* f, CK_SLOT_ID slot, std::string_view so_pin,
                  std::string_view user_pin);
// OpenSession opens a serial session, R/W when `rw`.
CK_RV OpenSession(CK_FUNCTION_LIST* f, CK_SLOT_ID slot, bool rw,
                  CK_SESSION_HANDLE* session);
// Login calls C_Login with `pin`.
CK_RV Login(CK_FUNCTION_LIST* f, CK_SESSION_HANDLE session, CK_USER_TYPE user,
            std::string_view pin);

// GetAttribute reads one attribute with the two-call convention. Returns
// the CK_RV of the failing call (e.g. CKR_ATTRIBUTE_SENSITIVE).
CK_RV GetAttribute(CK_FUNCTION_LIST* f, CK_SESSION_HANDLE session,
                   CK_OBJECT_HANDLE object, CK_ATTRIBUTE_TYPE type,
                   std::vector<uint8_t>* value);
CK_RV GetUlong(CK_FUNCTION_LIST* f, CK_SESSION_HANDLE session,
               CK_OBJECT_HANDLE object, CK_ATTRIBUTE_TYPE type,
               CK_ULONG* value);
CK_RV GetBool(CK_FUNCTION_LIST* f, CK_SESSION_HANDLE session,
              CK_OBJECT_HANDLE object, CK_ATTRIBUTE_TYPE type, bool* value);
// FindObjects runs C_FindObjectsInit/C_FindObjects (batches of 16)/
// C_FindObjectsFinal over `tmpl`.
CK_RV FindObjects(CK_FUNCTION_LIST* f, CK_SESSION_HANDLE session,
                  Template& tmpl, std::vector<CK_OBJECT_HANDLE>* found);
// MechanismList is C_GetMechanismList with the two-call convention.
CK_RV MechanismList(CK_FUNCTION_LIST* f, CK_SLOT_ID slot,
                    std::vector<CK_MECHANISM_TYPE>* mechs);

}  // namespace accelcrypt::p11test

#endif  // ACCELCRYPT_TESTS_P11MODULE_CONFORMANCE_P11_HARNESS_H_
