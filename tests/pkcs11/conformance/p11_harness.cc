// SPDX-License-Identifier: Apache-2.0
#include "tests/pkcs11/conformance/p11_harness.h"

#include <dlfcn.h>
#include <p11-kit-1/p11-kit/pkcs11.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace accelcrypt::p11test {

namespace {

const std::map<CK_RV, const char*>& RvNames() {
  static const auto* names = new std::map<CK_RV, const char*>{
#define ACCELCRYPT_RV(x) {x, #x}
      ACCELCRYPT_RV(CKR_OK),
      ACCELCRYPT_RV(CKR_CANCEL),
      ACCELCRYPT_RV(CKR_HOST_MEMORY),
      ACCELCRYPT_RV(CKR_SLOT_ID_INVALID),
      ACCELCRYPT_RV(CKR_GENERAL_ERROR),
      ACCELCRYPT_RV(CKR_FUNCTION_FAILED),
      ACCELCRYPT_RV(CKR_ARGUMENTS_BAD),
      ACCELCRYPT_RV(CKR_NO_EVENT),
      ACCELCRYPT_RV(CKR_NEED_TO_CREATE_THREADS),
      ACCELCRYPT_RV(CKR_CANT_LOCK),
      ACCELCRYPT_RV(CKR_ATTRIBUTE_READ_ONLY),
      ACCELCRYPT_RV(CKR_ATTRIBUTE_SENSITIVE),
      ACCELCRYPT_RV(CKR_ATTRIBUTE_TYPE_INVALID),
      ACCELCRYPT_RV(CKR_ATTRIBUTE_VALUE_INVALID),
      ACCELCRYPT_RV(CKR_ACTION_PROHIBITED),
      ACCELCRYPT_RV(CKR_DATA_INVALID),
      ACCELCRYPT_RV(CKR_DATA_LEN_RANGE),
      ACCELCRYPT_RV(CKR_DEVICE_ERROR),
      ACCELCRYPT_RV(CKR_DEVICE_MEMORY),
      ACCELCRYPT_RV(CKR_DEVICE_REMOVED),
      ACCELCRYPT_RV(CKR_ENCRYPTED_DATA_INVALID),
      ACCELCRYPT_RV(CKR_ENCRYPTED_DATA_LEN_RANGE),
      ACCELCRYPT_RV(CKR_FUNCTION_CANCELED),
      ACCELCRYPT_RV(CKR_FUNCTION_NOT_PARALLEL),
      ACCELCRYPT_RV(CKR_FUNCTION_NOT_SUPPORTED),
      ACCELCRYPT_RV(CKR_KEY_HANDLE_INVALID),
      ACCELCRYPT_RV(CKR_KEY_SIZE_RANGE),
      ACCELCRYPT_RV(CKR_KEY_TYPE_INCONSISTENT),
      ACCELCRYPT_RV(CKR_KEY_NOT_NEEDED),
      ACCELCRYPT_RV(CKR_KEY_CHANGED),
      ACCELCRYPT_RV(CKR_KEY_NEEDED),
      ACCELCRYPT_RV(CKR_KEY_INDIGESTIBLE),
      ACCELCRYPT_RV(CKR_KEY_FUNCTION_NOT_PERMITTED),
      ACCELCRYPT_RV(CKR_KEY_NOT_WRAPPABLE),
      ACCELCRYPT_RV(CKR_KEY_UNEXTRACTABLE),
      ACCELCRYPT_RV(CKR_MECHANISM_INVALID),
      ACCELCRYPT_RV(CKR_MECHANISM_PARAM_INVALID),
      ACCELCRYPT_RV(CKR_OBJECT_HANDLE_INVALID),
      ACCELCRYPT_RV(CKR_OPERATION_ACTIVE),
      ACCELCRYPT_RV(CKR_OPERATION_NOT_INITIALIZED),
      ACCELCRYPT_RV(CKR_PIN_INCORRECT),
      ACCELCRYPT_RV(CKR_PIN_INVALID),
      ACCELCRYPT_RV(CKR_PIN_LEN_RANGE),
      ACCELCRYPT_RV(CKR_PIN_EXPIRED),
      ACCELCRYPT_RV(CKR_PIN_LOCKED),
      ACCELCRYPT_RV(CKR_SESSION_CLOSED),
      ACCELCRYPT_RV(CKR_SESSION_COUNT),
      ACCELCRYPT_RV(CKR_SESSION_HANDLE_INVALID),
      ACCELCRYPT_RV(CKR_SESSION_PARALLEL_NOT_SUPPORTED),
      ACCELCRYPT_RV(CKR_SESSION_READ_ONLY),
      ACCELCRYPT_RV(CKR_SESSION_EXISTS),
      ACCELCRYPT_RV(CKR_SESSION_READ_ONLY_EXISTS),
      ACCELCRYPT_RV(CKR_SESSION_READ_WRITE_SO_EXISTS),
      ACCELCRYPT_RV(CKR_SIGNATURE_INVALID),
      ACCELCRYPT_RV(CKR_SIGNATURE_LEN_RANGE),
      ACCELCRYPT_RV(CKR_TEMPLATE_INCOMPLETE),
      ACCELCRYPT_RV(CKR_TEMPLATE_INCONSISTENT),
      ACCELCRYPT_RV(CKR_TOKEN_NOT_PRESENT),
      ACCELCRYPT_RV(CKR_TOKEN_NOT_RECOGNIZED),
      ACCELCRYPT_RV(CKR_TOKEN_WRITE_PROTECTED),
      ACCELCRYPT_RV(CKR_UNWRAPPING_KEY_HANDLE_INVALID),
      ACCELCRYPT_RV(CKR_UNWRAPPING_KEY_SIZE_RANGE),
      ACCELCRYPT_RV(CKR_UNWRAPPING_KEY_TYPE_INCONSISTENT),
      ACCELCRYPT_RV(CKR_USER_ALREADY_LOGGED_IN),
      ACCELCRYPT_RV(CKR_USER_NOT_LOGGED_IN),
      ACCELCRYPT_RV(CKR_USER_PIN_NOT_INITIALIZED),
      ACCELCRYPT_RV(CKR_USER_TYPE_INVALID),
      ACCELCRYPT_RV(CKR_USER_ANOTHER_ALREADY_LOGGED_IN),
      ACCELCRYPT_RV(CKR_USER_TOO_MANY_TYPES),
      ACCELCRYPT_RV(CKR_WRAPPED_KEY_INVALID),
      ACCELCRYPT_RV(CKR_WRAPPED_KEY_LEN_RANGE),
      ACCELCRYPT_RV(CKR_WRAPPING_KEY_HANDLE_INVALID),
      ACCELCRYPT_RV(CKR_WRAPPING_KEY_SIZE_RANGE),
      ACCELCRYPT_RV(CKR_WRAPPING_KEY_TYPE_INCONSISTENT),
      ACCELCRYPT_RV(CKR_RANDOM_SEED_NOT_SUPPORTED),
      ACCELCRYPT_RV(CKR_RANDOM_NO_RNG),
      ACCELCRYPT_RV(CKR_DOMAIN_PARAMS_INVALID),
      ACCELCRYPT_RV(CKR_BUFFER_TOO_SMALL),
      ACCELCRYPT_RV(CKR_SAVED_STATE_INVALID),
      ACCELCRYPT_RV(CKR_INFORMATION_SENSITIVE),
      ACCELCRYPT_RV(CKR_STATE_UNSAVEABLE),
      ACCELCRYPT_RV(CKR_CRYPTOKI_NOT_INITIALIZED),
      ACCELCRYPT_RV(CKR_CRYPTOKI_ALREADY_INITIALIZED),
      ACCELCRYPT_RV(CKR_MUTEX_BAD),
      ACCELCRYPT_RV(CKR_MUTEX_NOT_LOCKED),
      ACCELCRYPT_RV(CKR_FUNCTION_REJECTED),
#undef ACCELCRYPT_RV
  };
  return *names;
}

std::map<std::string, std::unique_ptr<Module>>& LoadedModules() {
  static auto* modules = new std::map<std::string, std::unique_ptr<Module>>();
  return *modules;
}

absl::Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) return absl::InternalError("cannot write " + path);
  return absl::OkStatus();
}

}  // namespace

std::string CkrName(CK_RV rv) {
  auto it = RvNames().find(rv);
  if (it != RvNames().end()) return it->second;
  return absl::StrFormat("CKR_0x%08lx", static_cast<unsigned long>(rv));
}

::testing::AssertionResult CkrEq(const char* expected_expr,
                                 const char* actual_expr, CK_RV expected,
                                 CK_RV actual) {
  if (expected == actual) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << actual_expr << "\n  expected: " << CkrName(expected) << " ("
         << expected_expr << ")\n       got: " << CkrName(actual);
}

absl::StatusOr<const Module*> Module::Load(const std::string& path) {
  auto& loaded = LoadedModules();
  auto it = loaded.find(path);
  if (it != loaded.end()) return it->second.get();
  if (access(path.c_str(), R_OK) != 0) {
    return absl::NotFoundError(path + " does not exist");
  }
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrFormat("dlopen(%s): %s", path, dlerror()));
  }
  auto get_list = reinterpret_cast<CK_C_GetFunctionList>(
      dlsym(handle, "C_GetFunctionList"));
  if (get_list == nullptr) {
    return absl::FailedPreconditionError(path +
                                         " exports no C_GetFunctionList");
  }
  CK_FUNCTION_LIST* fn = nullptr;
  CK_RV rv = get_list(&fn);
  if (rv != CKR_OK || fn == nullptr) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s: C_GetFunctionList returned %s", path, CkrName(rv)));
  }
  std::unique_ptr<Module> module(new Module());
  module->path_ = path;
  module->handle_ = handle;
  module->fn_ = fn;
  const Module* result = module.get();
  loaded[path] = std::move(module);
  return result;
}

void* Module::Symbol(const char* name) const { return dlsym(handle_, name); }

absl::StatusOr<std::unique_ptr<TokenEnv>> TokenEnv::Create(
    ModuleKind kind, const TokenEnvOptions& options) {
  const char* tmp = getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr && *tmp ? tmp : "/tmp") +
                        "/accelcrypt-p11conf-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) {
    return absl::InternalError("mkdtemp failed for " + pattern);
  }
  std::unique_ptr<TokenEnv> env(new TokenEnv());
  env->kind_ = kind;
  env->dir_ = buf.data();
  env->token_dir_ = env->dir_ + "/tokens";
  std::error_code ec;
  std::filesystem::create_directories(env->token_dir_, ec);
  if (ec) return absl::InternalError("cannot create " + env->token_dir_);
  std::string text;
  if (kind == ModuleKind::kAccelcrypt) {
    env->conf_ = env->dir_ + "/accelcrypt-pkcs11.cnf";
    text = "[accelcrypt]\n";
    if (!options.backend_dir.empty()) {
      text += "backend_dir = " + options.backend_dir + "\n";
    }
    if (!options.backends.empty()) {
      text += "backends = " + options.backends + "\n";
    }
    text += absl::StrFormat(
        "\n[accelcrypt_pkcs11]\ntoken_dir = %s\nslots = %d\n"
        "pbkdf2_iterations = %d\n",
        env->token_dir_, options.slots, options.pbkdf2_iterations);
  } else {
    env->conf_ = env->dir_ + "/softhsm2.conf";
    text = absl::StrFormat(
        "directories.tokendir = %s\nobjectstore.backend = file\n"
        "log.level = ERROR\nslots.removable = false\n"
        "library.reset_on_fork = true\n",
        env->token_dir_);
  }
  absl::Status st = WriteFile(env->conf_, text);
  if (!st.ok()) return st;
  return env;
}

TokenEnv::~TokenEnv() {
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

std::vector<std::pair<std::string, std::string>> TokenEnv::Vars() const {
  if (kind_ == ModuleKind::kAccelcrypt) {
    return {{"ACCELCRYPT_PKCS11_CONF", conf_}};
  }
  return {{"SOFTHSM2_CONF", conf_}};
}

void TokenEnv::Apply() const {
  for (const auto& [name, value] : Vars()) {
    setenv(name.c_str(), value.c_str(), 1);
  }
  if (kind_ == ModuleKind::kAccelcrypt) {
    // The config file names the token dir; an inherited override would win.
    unsetenv("ACCELCRYPT_PKCS11_TOKEN_DIR");
  }
}

Template& Template::Raw(CK_ATTRIBUTE_TYPE type, const void* data,
                        CK_ULONG len) {
  values_.emplace_back(static_cast<const uint8_t*>(data),
                       static_cast<const uint8_t*>(data) + len);
  CK_ATTRIBUTE attr;
  attr.type = type;
  attr.pValue = values_.back().empty() ? nullptr : values_.back().data();
  attr.ulValueLen = len;
  attrs_.push_back(attr);
  return *this;
}

Template& Template::Bool(CK_ATTRIBUTE_TYPE type, bool value) {
  CK_BBOOL b = value ? CK_TRUE : CK_FALSE;
  return Raw(type, &b, sizeof(b));
}

Template& Template::Ulong(CK_ATTRIBUTE_TYPE type, CK_ULONG value) {
  return Raw(type, &value, sizeof(value));
}

Template& Template::Bytes(CK_ATTRIBUTE_TYPE type,
                          const std::vector<uint8_t>& value) {
  return Raw(type, value.data(), value.size());
}

Template& Template::Str(CK_ATTRIBUTE_TYPE type, std::string_view value) {
  return Raw(type, value.data(), value.size());
}

std::vector<uint8_t> PaddedLabel(std::string_view label) {
  std::vector<uint8_t> out(32, ' ');
  std::memcpy(out.data(), label.data(), std::min<size_t>(label.size(), 32));
  return out;
}

std::string Trimmed(const unsigned char* field, size_t len) {
  std::string s(reinterpret_cast<const char*>(field), len);
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

namespace {

CK_RV SlotList(CK_FUNCTION_LIST* f, std::vector<CK_SLOT_ID>* slots) {
  CK_ULONG count = 0;
  CK_RV rv = f->C_GetSlotList(CK_TRUE, nullptr, &count);
  if (rv != CKR_OK) return rv;
  slots->assign(count, 0);
  rv = f->C_GetSlotList(CK_TRUE, slots->data(), &count);
  if (rv != CKR_OK) return rv;
  slots->resize(count);
  return CKR_OK;
}

}  // namespace

CK_RV FindSlotByLabel(CK_FUNCTION_LIST* f, std::string_view label,
                      CK_SLOT_ID* slot) {
  std::vector<CK_SLOT_ID> slots;
  CK_RV rv = SlotList(f, &slots);
  if (rv != CKR_OK) return rv;
  for (CK_SLOT_ID id : slots) {
    CK_TOKEN_INFO info;
    if (f->C_GetTokenInfo(id, &info) != CKR_OK) continue;
    if ((info.flags & CKF_TOKEN_INITIALIZED) &&
        Trimmed(info.label, sizeof(info.label)) == label) {
      *slot = id;
      return CKR_OK;
    }
  }
  return CKR_TOKEN_NOT_PRESENT;
}

CK_RV InitToken(CK_FUNCTION_LIST* f, std::string_view so_pin,
                std::string_view label, CK_SLOT_ID* slot) {
  std::vector<CK_SLOT_ID> slots;
  CK_RV rv = SlotList(f, &slots);
  if (rv != CKR_OK) return rv;
  for (CK_SLOT_ID id : slots) {
    CK_TOKEN_INFO info;
    rv = f->C_GetTokenInfo(id, &info);
    if (rv != CKR_OK) return rv;
    if (info.flags & CKF_TOKEN_INITIALIZED) continue;
    std::vector<uint8_t> padded = PaddedLabel(label);
    rv = f->C_InitToken(
        id, reinterpret_cast<CK_UTF8CHAR*>(const_cast<char*>(so_pin.data())),
        so_pin.size(), padded.data());
    if (rv != CKR_OK) return rv;
    return FindSlotByLabel(f, label, slot);
  }
  return CKR_TOKEN_NOT_PRESENT;
}

CK_RV OpenSession(CK_FUNCTION_LIST* f, CK_SLOT_ID slot, bool rw,
                  CK_SESSION_HANDLE* session) {
  CK_FLAGS flags = CKF_SERIAL_SESSION | (rw ? CKF_RW_SESSION : 0);
  return f->C_OpenSession(slot, flags, nullptr, nullptr, session);
}

CK_RV Login(CK_FUNCTION_LIST* f, CK_SESSION_HANDLE session, CK_USER_TYPE user,
            std::string_view pin) {
  return f->C_Login(
      session, user,
      reinterpret_cast<CK_UTF8CHAR*>(const_cast<char*>(pin.data())),
      pin.size());
}

CK_RV InitUserPin(CK_FUNCTION_LIST* f, CK_SLOT_ID slot, std::string_view so_pin,
                  std::string_view user_pin) {
  CK_SESSION_HANDLE h;
  CK_RV rv = OpenSession(f, slot, true, &h);
  if (rv != CKR_OK) return rv;
  rv = Login(f, h, CKU_SO, so_pin);
  if (rv == CKR_OK) {
    rv = f->C_InitPIN(
        h, reinterpret_cast<CK_UTF8CHAR*>(const_cast<char*>(user_pin.data())),
        user_pin.size());
    CK_RV out = f->C_Logout(h);
    if (rv == CKR_OK) rv = out;
  }
  CK_RV closed = f->C_CloseSession(h);
  return rv != CKR_OK ? rv : closed;
}

CK_RV GetAttribute(CK_FUNCTION_LIST* f, CK_SESSION_HANDLE session,
                   CK_OBJECT_HANDLE object, CK_ATTRIBUTE_TYPE type,
                   std::vector<uint8_t>* value) {
  CK_ATTRIBUTE attr = {type, nullptr, 0};
  CK_RV rv = f->C_GetAttributeValue(session, object, &attr, 1);
  if (rv != CKR_OK) return rv;
  value->assign(attr.ulValueLen, 0);
  attr.pValue = value->data();
  rv = f->C_GetAttributeValue(session, object, &attr, 1);
  if (rv != CKR_OK) return rv;
  value->resize(attr.ulValueLen);
  return CKR_OK;
}

CK_RV GetUlong(CK_FUNCTION_LIST* f, CK_SESSION_HANDLE session,
               CK_OBJECT_HANDLE object, CK_ATTRIBUTE_TYPE type,
               CK_ULONG* value) {
  CK_ATTRIBUTE attr = {type, value, sizeof(*value)};
  CK_RV rv = f->C_GetAttributeValue(session, object, &attr, 1);
  if (rv == CKR_OK && attr.ulValueLen != sizeof(CK_ULONG)) {
    return CKR_GENERAL_ERROR;
  }
  return rv;
}

CK_RV GetBool(CK_FUNCTION_LIST* f, CK_SESSION_HANDLE session,
              CK_OBJECT_HANDLE object, CK_ATTRIBUTE_TYPE type, bool* value) {
  CK_BBOOL b = CK_FALSE;
  CK_ATTRIBUTE attr = {type, &b, sizeof(b)};
  CK_RV rv = f->C_GetAttributeValue(session, object, &attr, 1);
  if (rv == CKR_OK && attr.ulValueLen != sizeof(CK_BBOOL)) {
    return CKR_GENERAL_ERROR;
  }
  *value = b == CK_TRUE;
  return rv;
}

CK_RV FindObjects(CK_FUNCTION_LIST* f, CK_SESSION_HANDLE session,
                  Template& tmpl, std::vector<CK_OBJECT_HANDLE>* found) {
  found->clear();
  CK_RV rv = f->C_FindObjectsInit(session, tmpl.data(), tmpl.size());
  if (rv != CKR_OK) return rv;
  for (;;) {
    CK_OBJECT_HANDLE batch[16];
    CK_ULONG n = 0;
    rv = f->C_FindObjects(session, batch, 16, &n);
    if (rv != CKR_OK) break;
    found->insert(found->end(), batch, batch + n);
    if (n == 0) break;
  }
  CK_RV fin = f->C_FindObjectsFinal(session);
  return rv != CKR_OK ? rv : fin;
}

CK_RV MechanismList(CK_FUNCTION_LIST* f, CK_SLOT_ID slot,
                    std::vector<CK_MECHANISM_TYPE>* mechs) {
  CK_ULONG count = 0;
  CK_RV rv = f->C_GetMechanismList(slot, nullptr, &count);
  if (rv != CKR_OK) return rv;
  mechs->assign(count, 0);
  rv = f->C_GetMechanismList(slot, mechs->data(), &count);
  if (rv == CKR_OK) mechs->resize(count);
  return rv;
}

}  // namespace accelcrypt::p11test
