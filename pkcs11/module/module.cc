// SPDX-License-Identifier: Apache-2.0
#include "pkcs11/module/module.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/registry.h"
#include "core/status.h"
#include "pkcs11/common/ck_error.h"

namespace accelcrypt::p11 {
namespace {

constexpr CK_ULONG kMinPinLen = 4;
constexpr CK_ULONG kMaxPinLen = 255;
constexpr CK_VERSION kVersion = {ACCELCRYPT_VERSION_MAJOR,
                                 ACCELCRYPT_VERSION_MINOR};

// Pad copies `text` into a fixed-width, blank-padded, unterminated
// PKCS#11 string field (v2.40 section 3.2: CK_UTF8CHAR arrays).
void Pad(std::string_view text, CK_UTF8CHAR* field, size_t width) {
  std::memset(field, ' ', width);
  std::memcpy(field, text.data(), std::min(text.size(), width));
}

absl::Status CheckPinArg(CK_UTF8CHAR_PTR pin, CK_ULONG len) {
  if (pin == nullptr) return CkError(CKR_ARGUMENTS_BAD, "PIN is NULL");
  return absl::OkStatus();
}

absl::Status CheckPinLen(CK_ULONG len) {
  if (len < kMinPinLen || len > kMaxPinLen) {
    return CkError(CKR_PIN_LEN_RANGE,
                   absl::StrFormat("PIN length %d not in %d..%d", len,
                                   kMinPinLen, kMaxPinLen));
  }
  return absl::OkStatus();
}

std::string_view PinView(CK_UTF8CHAR_PTR pin, CK_ULONG len) {
  return std::string_view(reinterpret_cast<const char*>(pin), len);
}

absl::Status NotBuilt(std::string_view what) {
  return CkError(CKR_FUNCTION_NOT_SUPPORTED,
                 absl::StrCat(AsAbsl(what), " is not built in this module"));
}

}  // namespace

Module::Module(ModuleConfig config, std::optional<AppLocking> app)
    : config_(std::move(config)),
      app_(app),
      sessions_mu_(locking()),
      objects_mu_(locking()) {}

Module::~Module() {
  // Runs from C_Finalize, which v2.40 section 5.4 forbids while any other
  // thread is in a Cryptoki call (and C_Finalize took the instance out of
  // reach first): no other thread can hold or take these locks, so none
  // is taken. Taking them would change nothing, and under application
  // locking a failing LockMutex could not be refused here anyway.
  // Objects and operations hold prepared keys made by the mechanisms;
  // the mechanisms use the core: tear down in that order.
  for (auto& [h, s] : sessions_) {
    for (ActiveOp& op : s->ops) op.Reset();
  }
  sessions_.clear();
  objects_.clear();
  for (auto& token : tokens_) {
    token->dek.Wipe();
    token->open_store.store(nullptr);
    token->store.reset();
  }
  mechanisms_.reset();
  core_.reset();
}

absl::StatusOr<std::unique_ptr<Module>> Module::Create(
    std::optional<AppLocking> app) {
  ACCELCRYPT_ASSIGN_OR_RETURN(ModuleConfig config, LoadModuleConfig());
  std::unique_ptr<Module> module(new Module(std::move(config), app));
  absl::StatusOr<std::unique_ptr<Core>> core =
      Core::Create(module->config_.core);
  if (!core.ok()) {
    return CkError(CKR_FUNCTION_FAILED,
                   absl::StrCat("core: ", core.status().message()));
  }
  module->core_ = *std::move(core);
  absl::StatusOr<std::unique_ptr<Mechanisms>> mechanisms =
      Mechanisms::Create(module->core_.get());
  if (!mechanisms.ok()) return mechanisms.status();
  module->mechanisms_ = *std::move(mechanisms);
  for (uint32_t i = 0; i < module->config_.slots; ++i) {
    module->tokens_.push_back(std::make_unique<Token>(
        i, absl::StrCat(module->config_.token_dir, "/slot", i),
        module->locking()));
  }
  return module;
}

void Module::FlushStats() {
  if (core_ != nullptr) core_->FlushStats();
}

Module::InheritedTokens Module::ReleaseStoresAfterFork() {
  // Runs in a forked child, single-threaded, on an instance that is
  // otherwise abandoned: its mutexes may be held by parent threads that do
  // not exist here, so none is taken. TokenStore's destructor notices the
  // new pid and releases only this process's copy of SQLite's per-file
  // state, so a store reopened in the child takes real file locks.
  InheritedTokens open;
  for (auto& token : tokens_) {
    if (token->open_store.load() != nullptr) {
      open.emplace_back(token->id, token->dir);
    }
    token->dek.Wipe();
    token->open_store.store(nullptr);
    token->store.reset();
  }
  return open;
}

void Module::CheckInherited(const InheritedTokens& inherited) {
  for (const auto& [slot, dir] : inherited) {
    // A copy: clang 14 cannot capture a structured binding in a lambda.
    const auto id = slot;
    auto it = std::find_if(tokens_.begin(), tokens_.end(),
                           [id](const auto& t) { return t->id == id; });
    std::string why;
    if (it == tokens_.end() || (*it)->dir != dir) {
      const char* conf = std::getenv("ACCELCRYPT_PKCS11_CONF");
      why = absl::StrFormat(
          "the parent process used the token in %s as slot %d, which this "
          "process's configuration does not name (token_dir %s; "
          "ACCELCRYPT_PKCS11_CONF %s%s)",
          dir, slot, config_.token_dir, conf != nullptr ? "is " : "is not set",
          conf != nullptr
              ? conf
              : ": a daemon that clears its workers' environment must pass "
                "it on, e.g. nginx `env ACCELCRYPT_PKCS11_CONF;`");
    } else if (absl::Status usable = TokenStore::Usable(dir); !usable.ok()) {
      why = absl::StrFormat(
          "the parent process used the token in slot %d, this one cannot: "
          "%s",
          slot, usable.message());
    }
    if (why.empty()) continue;
    ReportToOperator(absl::StrCat("accelcrypt-pkcs11: ", why));
    if (it != tokens_.end()) (*it)->unusable = why;
  }
}

void Module::Log(std::string_view message) const {
  if (config_.log_level < 0) return;
  std::fprintf(stderr, "accelcrypt-pkcs11: %.*s\n",
               static_cast<int>(message.size()), message.data());
}

void Module::LogFailure(const char* function,
                        const absl::Status& status) const {
  if (config_.log_level < 2) return;
  Log(absl::StrCat(function, ": ", status.message()));
}

absl::StatusOr<Token*> Module::FindToken(CK_SLOT_ID slot) {
  if (slot >= tokens_.size()) {
    return CkError(CKR_SLOT_ID_INVALID, absl::StrFormat("no slot %d", slot));
  }
  return tokens_[slot].get();
}

absl::StatusOr<std::shared_ptr<Session>> Module::FindSession(
    CK_SESSION_HANDLE h) {
  ReaderMutexLock l(&sessions_mu_);
  ACCELCRYPT_RETURN_IF_ERROR(l.status());
  auto it = sessions_.find(h);
  if (it == sessions_.end()) {
    return CkError(CKR_SESSION_HANDLE_INVALID,
                   absl::StrFormat("no session %d", h));
  }
  return it->second;
}

absl::Status Module::LockSession(CK_SESSION_HANDLE h, LockedSession* out) {
  std::shared_ptr<Session> hold;
  {
    ReaderMutexLock l(&sessions_mu_);
    ACCELCRYPT_RETURN_IF_ERROR(l.status());
    auto it = sessions_.find(h);
    if (it == sessions_.end()) {
      return CkError(CKR_SESSION_HANDLE_INVALID,
                     absl::StrFormat("no session %d", h));
    }
    Session* s = it->second.get();
    if (s->mu.TryLock()) {
      out->s_ = s;
      return absl::OkStatus();
    }
    // Contended (or application locking): never wait for a session while
    // holding the table's lock.
    hold = it->second;
  }
  if (!hold->mu.Lock()) return LockFailed();
  out->hold_ = std::move(hold);
  out->s_ = out->hold_.get();
  return absl::OkStatus();
}

absl::StatusOr<TokenStore*> Module::OpenStore(Token* token) {
  if (!token->unusable.empty()) {
    return CkError(CKR_DEVICE_ERROR, token->unusable);
  }
  if (token->store == nullptr) {
    TokenStore::Options options;
    options.max_pin_failures = config_.max_pin_failures;
    options.pbkdf2_iterations = config_.pbkdf2_iterations;
    absl::StatusOr<std::unique_ptr<TokenStore>> store =
        TokenStore::Open(token->dir, options);
    if (!store.ok()) {
      // An unusable token directory is a setup mistake the user must see
      // without turning logging on; once per token, not on every call.
      if (!token->store_error_reported) {
        token->store_error_reported = true;
        std::fprintf(stderr, "accelcrypt-pkcs11: slot %lu: %s\n",
                     static_cast<unsigned long>(token->id),
                     std::string(AsStd(store.status().message())).c_str());
      }
      return store.status();
    }
    token->store = *std::move(store);
    token->open_store.store(token->store.get(), std::memory_order_release);
  }
  return token->store.get();
}

absl::Status Module::GetInfo(CK_INFO_PTR info) {
  if (info == nullptr) return CkError(CKR_ARGUMENTS_BAD, "pInfo is NULL");
  *info = CK_INFO{};
  info->cryptokiVersion = {2, 40};
  Pad("accelcrypt", info->manufacturerID, sizeof(info->manufacturerID));
  info->flags = 0;
  Pad("accelcrypt PKCS#11 module", info->libraryDescription,
      sizeof(info->libraryDescription));
  info->libraryVersion = kVersion;
  return absl::OkStatus();
}

absl::Status Module::GetSlotList(CK_BBOOL token_present, CK_SLOT_ID_PTR list,
                                 CK_ULONG_PTR count) {
  if (count == nullptr) return CkError(CKR_ARGUMENTS_BAD, "pulCount is NULL");
  // Every slot always holds its token, so token_present changes nothing.
  CK_ULONG n = tokens_.size();
  if (list == nullptr) {
    *count = n;
    return absl::OkStatus();
  }
  if (*count < n) {
    *count = n;
    return CkError(CKR_BUFFER_TOO_SMALL, "slot list");
  }
  for (CK_ULONG i = 0; i < n; ++i) list[i] = tokens_[i]->id;
  *count = n;
  return absl::OkStatus();
}

absl::Status Module::GetSlotInfo(CK_SLOT_ID slot, CK_SLOT_INFO_PTR info) {
  ACCELCRYPT_ASSIGN_OR_RETURN(Token * token, FindToken(slot));
  if (info == nullptr) return CkError(CKR_ARGUMENTS_BAD, "pInfo is NULL");
  *info = CK_SLOT_INFO{};
  Pad(absl::StrCat("accelcrypt slot ", token->id), info->slotDescription,
      sizeof(info->slotDescription));
  Pad("accelcrypt", info->manufacturerID, sizeof(info->manufacturerID));
  info->flags = CKF_TOKEN_PRESENT;
  info->hardwareVersion = kVersion;
  info->firmwareVersion = kVersion;
  return absl::OkStatus();
}

absl::Status Module::GetTokenInfo(CK_SLOT_ID slot, CK_TOKEN_INFO_PTR info) {
  ACCELCRYPT_ASSIGN_OR_RETURN(Token * token, FindToken(slot));
  if (info == nullptr) return CkError(CKR_ARGUMENTS_BAD, "pInfo is NULL");
  MutexLock l(&token->mu);
  ACCELCRYPT_RETURN_IF_ERROR(l.status());
  TokenStore::TokenInfo ti;
  if (token->store != nullptr || !TokenStore::Absent(token->dir)) {
    ACCELCRYPT_ASSIGN_OR_RETURN(TokenStore * store, OpenStore(token));
    ACCELCRYPT_ASSIGN_OR_RETURN(ti, store->Info());
  }
  // Otherwise the token was never initialised: it reads as uninitialised
  // (blank label and serial, no flags but the fixed ones) and nothing is
  // created, so listing slots never writes (only C_InitToken creates the
  // store).
  *info = CK_TOKEN_INFO{};
  Pad(ti.label, info->label, sizeof(info->label));
  Pad("accelcrypt", info->manufacturerID, sizeof(info->manufacturerID));
  Pad("accelcrypt", info->model, sizeof(info->model));
  Pad(ti.serial, info->serialNumber, sizeof(info->serialNumber));
  CK_FLAGS flags = CKF_RNG | CKF_LOGIN_REQUIRED;
  if (ti.initialized) flags |= CKF_TOKEN_INITIALIZED;
  if (ti.user_pin_initialized) flags |= CKF_USER_PIN_INITIALIZED;
  const uint32_t max = config_.max_pin_failures;
  if (ti.user_locked) {
    flags |= CKF_USER_PIN_LOCKED;
  } else if (ti.user_failures > 0) {
    flags |= CKF_USER_PIN_COUNT_LOW;
    if (ti.user_failures + 1 == max) flags |= CKF_USER_PIN_FINAL_TRY;
  }
  if (ti.so_locked) {
    flags |= CKF_SO_PIN_LOCKED;
  } else if (ti.so_failures > 0) {
    flags |= CKF_SO_PIN_COUNT_LOW;
    if (ti.so_failures + 1 == max) flags |= CKF_SO_PIN_FINAL_TRY;
  }
  if (ti.user_pin_to_be_changed) flags |= CKF_USER_PIN_TO_BE_CHANGED;
  if (ti.so_pin_to_be_changed) flags |= CKF_SO_PIN_TO_BE_CHANGED;
  info->flags = flags;
  info->ulMaxSessionCount = CK_EFFECTIVELY_INFINITE;
  info->ulSessionCount = token->ro_sessions + token->rw_sessions;
  info->ulMaxRwSessionCount = CK_EFFECTIVELY_INFINITE;
  info->ulRwSessionCount = token->rw_sessions;
  info->ulMaxPinLen = kMaxPinLen;
  info->ulMinPinLen = kMinPinLen;
  info->ulTotalPublicMemory = CK_UNAVAILABLE_INFORMATION;
  info->ulFreePublicMemory = CK_UNAVAILABLE_INFORMATION;
  info->ulTotalPrivateMemory = CK_UNAVAILABLE_INFORMATION;
  info->ulFreePrivateMemory = CK_UNAVAILABLE_INFORMATION;
  info->hardwareVersion = kVersion;
  info->firmwareVersion = kVersion;
  // No clock on the token (CKF_CLOCK_ON_TOKEN unset): utcTime is blank.
  std::memset(info->utcTime, ' ', sizeof(info->utcTime));
  return absl::OkStatus();
}

absl::Status Module::GetMechanismList(CK_SLOT_ID slot,
                                      CK_MECHANISM_TYPE_PTR list,
                                      CK_ULONG_PTR count) {
  ACCELCRYPT_RETURN_IF_ERROR(FindToken(slot).status());
  if (count == nullptr) return CkError(CKR_ARGUMENTS_BAD, "pulCount is NULL");
  if (mechanisms_ == nullptr) return NotBuilt("the mechanisms library");
  std::vector<CK_MECHANISM_TYPE> types = mechanisms_->List();
  if (list == nullptr) {
    *count = types.size();
    return absl::OkStatus();
  }
  if (*count < types.size()) {
    *count = types.size();
    return CkError(CKR_BUFFER_TOO_SMALL, "mechanism list");
  }
  std::copy(types.begin(), types.end(), list);
  *count = types.size();
  return absl::OkStatus();
}

absl::Status Module::GetMechanismInfo(CK_SLOT_ID slot, CK_MECHANISM_TYPE type,
                                      CK_MECHANISM_INFO_PTR info) {
  ACCELCRYPT_RETURN_IF_ERROR(FindToken(slot).status());
  if (info == nullptr) return CkError(CKR_ARGUMENTS_BAD, "pInfo is NULL");
  if (mechanisms_ == nullptr) return NotBuilt("the mechanisms library");
  ACCELCRYPT_ASSIGN_OR_RETURN(*info, mechanisms_->Info(type));
  return absl::OkStatus();
}

absl::Status Module::InitToken(CK_SLOT_ID slot, CK_UTF8CHAR_PTR pin,
                               CK_ULONG len, CK_UTF8CHAR_PTR label) {
  ACCELCRYPT_ASSIGN_OR_RETURN(Token * token, FindToken(slot));
  ACCELCRYPT_RETURN_IF_ERROR(CheckPinArg(pin, len));
  if (label == nullptr) return CkError(CKR_ARGUMENTS_BAD, "pLabel is NULL");
  ACCELCRYPT_RETURN_IF_ERROR(CheckPinLen(len));
  // The label is 32 blank-padded bytes (v2.40 section 5.6): keep it
  // without the padding.
  std::string_view text(reinterpret_cast<const char*>(label), 32);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\0')) {
    text.remove_suffix(1);
  }
  MutexLock l(&token->mu);
  ACCELCRYPT_RETURN_IF_ERROR(l.status());
  if (token->ro_sessions + token->rw_sessions > 0) {
    return CkError(CKR_SESSION_EXISTS, "close the token's sessions first");
  }
  ACCELCRYPT_ASSIGN_OR_RETURN(TokenStore * store, OpenStore(token));
  // Every object of the old token goes: so do their handles, first, so
  // that a failing application mutex leaves the token as it was (the
  // handle table is re-read from the store at the next look-up).
  ACCELCRYPT_RETURN_IF_ERROR(ForgetTokenObjects(token, /*private_only=*/false));
  ACCELCRYPT_RETURN_IF_ERROR(store->InitToken(PinView(pin, len), text));
  DropLogin(token);
  return absl::OkStatus();
}

absl::Status Module::InitPIN(CK_SESSION_HANDLE h, CK_UTF8CHAR_PTR pin,
                             CK_ULONG len) {
  ACCELCRYPT_ASSIGN_OR_RETURN(std::shared_ptr<Session> s, FindSession(h));
  ACCELCRYPT_RETURN_IF_ERROR(CheckPinArg(pin, len));
  Token* token = s->token;
  MutexLock l(&token->mu);
  ACCELCRYPT_RETURN_IF_ERROR(l.status());
  // Only in the "R/W SO Functions" state (v2.40 section 5.6, C_InitPIN).
  if (token->login.load() != LoginState::kSo || !s->rw) {
    return CkError(CKR_USER_NOT_LOGGED_IN, "C_InitPIN needs an SO session");
  }
  ACCELCRYPT_RETURN_IF_ERROR(CheckPinLen(len));
  ACCELCRYPT_ASSIGN_OR_RETURN(TokenStore * store, OpenStore(token));
  return store->InitPin(token->dek, PinView(pin, len));
}

absl::Status Module::SetPIN(CK_SESSION_HANDLE h, CK_UTF8CHAR_PTR old_pin,
                            CK_ULONG old_len, CK_UTF8CHAR_PTR new_pin,
                            CK_ULONG new_len) {
  ACCELCRYPT_ASSIGN_OR_RETURN(std::shared_ptr<Session> s, FindSession(h));
  ACCELCRYPT_RETURN_IF_ERROR(CheckPinArg(old_pin, old_len));
  ACCELCRYPT_RETURN_IF_ERROR(CheckPinArg(new_pin, new_len));
  if (!s->rw) {
    return CkError(CKR_SESSION_READ_ONLY, "C_SetPIN needs a R/W session");
  }
  ACCELCRYPT_RETURN_IF_ERROR(CheckPinLen(new_len));
  Token* token = s->token;
  MutexLock l(&token->mu);
  ACCELCRYPT_RETURN_IF_ERROR(l.status());
  // The SO's PIN when the SO is logged in, else the user's (v2.40 section
  // 5.6, C_SetPIN).
  TokenStore::User user = token->login.load() == LoginState::kSo
                              ? TokenStore::User::kSo
                              : TokenStore::User::kUser;
  ACCELCRYPT_ASSIGN_OR_RETURN(TokenStore * store, OpenStore(token));
  return store->SetPin(user, PinView(old_pin, old_len),
                       PinView(new_pin, new_len));
}

absl::Status Module::OpenSession(CK_SLOT_ID slot, CK_FLAGS flags,
                                 CK_SESSION_HANDLE_PTR out) {
  ACCELCRYPT_ASSIGN_OR_RETURN(Token * token, FindToken(slot));
  if (out == nullptr) return CkError(CKR_ARGUMENTS_BAD, "phSession is NULL");
  // v2.40 section 5.6: CKF_SERIAL_SESSION must be set, for legacy reasons.
  if ((flags & CKF_SERIAL_SESSION) == 0) {
    return CkError(CKR_SESSION_PARALLEL_NOT_SUPPORTED,
                   "CKF_SERIAL_SESSION not set");
  }
  const bool rw = (flags & CKF_RW_SESSION) != 0;
  MutexLock l(&token->mu);
  ACCELCRYPT_RETURN_IF_ERROR(l.status());
  // A forked child that cannot use the token its parent used (said once at
  // its C_Initialize): the session opens, and every call that needs the
  // store fails with the reason. Failing here would be right by v2.40, but
  // libp11 0.4.12 (Debian 12's, under nginx and Apache) waits forever for
  // a session after any C_OpenSession error (pkcs11_get_session), and
  // ignores a failed C_Initialize after fork: the worker hung in
  // EVP_DigestSignFinal instead of failing its handshake.
  if (!token->unusable.empty()) return AddSession(token, flags, out);
  // A token never initialised has no store, and opening a session must
  // not make one (nor its directory): only C_InitToken creates it. v2.40
  // has no code of its own for an uninitialised token; C_OpenSession's
  // CKR_TOKEN_NOT_RECOGNIZED is the one SoftHSMv2 gives too.
  if (token->store == nullptr && TokenStore::Absent(token->dir)) {
    return CkError(CKR_TOKEN_NOT_RECOGNIZED,
                   absl::StrFormat("token in slot %d is not initialised (no "
                                   "store in %s; C_InitToken makes one)",
                                   token->id, token->dir));
  }
  ACCELCRYPT_ASSIGN_OR_RETURN(TokenStore * store, OpenStore(token));
  ACCELCRYPT_ASSIGN_OR_RETURN(TokenStore::TokenInfo ti, store->Info());
  if (!ti.initialized) {
    return CkError(CKR_TOKEN_NOT_RECOGNIZED, "token not initialised");
  }
  if (!rw && token->login.load() == LoginState::kSo) {
    return CkError(CKR_SESSION_READ_WRITE_SO_EXISTS,
                   "the SO is logged in: R/W sessions only");
  }
  return AddSession(token, flags, out);
}

absl::Status Module::AddSession(Token* token, CK_FLAGS flags,
                                CK_SESSION_HANDLE_PTR out) {
  const bool rw = (flags & CKF_RW_SESSION) != 0;
  CK_SESSION_HANDLE handle = next_session_.fetch_add(1);
  auto session = std::make_shared<Session>(
      handle, token, flags & (CKF_SERIAL_SESSION | CKF_RW_SESSION), locking());
  {
    MutexLock sl(&sessions_mu_);
    ACCELCRYPT_RETURN_IF_ERROR(sl.status());
    sessions_.emplace(handle, std::move(session));
  }
  (rw ? token->rw_sessions : token->ro_sessions)++;
  *out = handle;
  return absl::OkStatus();
}

absl::Status Module::RemoveSessions(
    Token* token, const std::vector<std::shared_ptr<Session>>& sessions) {
  {
    // Both tables at once, so that a failing application mutex changes
    // neither: a session gone from its table with its objects still in
    // theirs would leave those objects visible to the token's other
    // sessions.
    MutexLock sl(&sessions_mu_);
    ACCELCRYPT_RETURN_IF_ERROR(sl.status());
    MutexLock ol(&objects_mu_);
    ACCELCRYPT_RETURN_IF_ERROR(ol.status());
    for (const auto& s : sessions) {
      if (sessions_.erase(s->handle) == 0) continue;
      (s->rw ? token->rw_sessions : token->ro_sessions)--;
    }
    // A session's objects are destroyed with it (v2.40 section 5.6).
    absl::erase_if(objects_, [&](const auto& entry) {
      const Object& o = *entry.second;
      if (o.is_token) return false;
      for (const auto& s : sessions) {
        if (o.owner == s->handle) return true;
      }
      return false;
    });
  }
  for (const auto& s : sessions) {
    // Waits for a call still running in the session. The lock can fail
    // only under application locking, where LockSession never hands out
    // a session without a reference (TryLock is false): the operations
    // are then released with the session's last reference, by whichever
    // call drops it, and are not touched here.
    MutexLock l(&s->mu);
    if (!l.status().ok()) continue;
    for (ActiveOp& op : s->ops) {
      op.Reset();
      op.spare.reset();
    }
    s->find_active = false;
    s->found.clear();
  }
  // Closing the last session logs the user out (v2.40 section 5.6).
  if (token->ro_sessions + token->rw_sessions == 0) DropLogin(token);
  return absl::OkStatus();
}

absl::Status Module::CloseSession(CK_SESSION_HANDLE h) {
  ACCELCRYPT_ASSIGN_OR_RETURN(std::shared_ptr<Session> s, FindSession(h));
  Token* token = s->token;
  MutexLock l(&token->mu);
  ACCELCRYPT_RETURN_IF_ERROR(l.status());
  {
    // Another thread may have closed it meanwhile.
    ReaderMutexLock sl(&sessions_mu_);
    ACCELCRYPT_RETURN_IF_ERROR(sl.status());
    if (!sessions_.contains(h)) {
      return CkError(CKR_SESSION_HANDLE_INVALID, "session already closed");
    }
  }
  return RemoveSessions(token, {s});
}

absl::Status Module::CloseAllSessions(CK_SLOT_ID slot) {
  ACCELCRYPT_ASSIGN_OR_RETURN(Token * token, FindToken(slot));
  MutexLock l(&token->mu);
  ACCELCRYPT_RETURN_IF_ERROR(l.status());
  std::vector<std::shared_ptr<Session>> mine;
  {
    ReaderMutexLock sl(&sessions_mu_);
    ACCELCRYPT_RETURN_IF_ERROR(sl.status());
    for (const auto& [h, s] : sessions_) {
      if (s->token == token) mine.push_back(s);
    }
  }
  return RemoveSessions(token, mine);
}

absl::Status Module::GetSessionInfo(CK_SESSION_HANDLE h,
                                    CK_SESSION_INFO_PTR info) {
  ACCELCRYPT_ASSIGN_OR_RETURN(std::shared_ptr<Session> s, FindSession(h));
  if (info == nullptr) return CkError(CKR_ARGUMENTS_BAD, "pInfo is NULL");
  *info = CK_SESSION_INFO{};
  info->slotID = s->token->id;
  switch (s->token->login.load()) {
    case LoginState::kNone:
      info->state = s->rw ? CKS_RW_PUBLIC_SESSION : CKS_RO_PUBLIC_SESSION;
      break;
    case LoginState::kUser:
      info->state = s->rw ? CKS_RW_USER_FUNCTIONS : CKS_RO_USER_FUNCTIONS;
      break;
    case LoginState::kSo:
      info->state = CKS_RW_SO_FUNCTIONS;
      break;
  }
  info->flags = s->flags;
  info->ulDeviceError = 0;
  return absl::OkStatus();
}

absl::Status Module::Login(CK_SESSION_HANDLE h, CK_USER_TYPE user,
                           CK_UTF8CHAR_PTR pin, CK_ULONG len) {
  ACCELCRYPT_ASSIGN_OR_RETURN(std::shared_ptr<Session> s, FindSession(h));
  if (user == CKU_CONTEXT_SPECIFIC) {
    // No key of this token has CKA_ALWAYS_AUTHENTICATE, so no operation
    // ever waits for a context-specific login (v2.40 section 5.6).
    return CkError(CKR_OPERATION_NOT_INITIALIZED,
                   "no operation needs a context-specific login");
  }
  if (user != CKU_SO && user != CKU_USER) {
    return CkError(CKR_USER_TYPE_INVALID, "user type");
  }
  ACCELCRYPT_RETURN_IF_ERROR(CheckPinArg(pin, len));
  Token* token = s->token;
  MutexLock l(&token->mu);
  ACCELCRYPT_RETURN_IF_ERROR(l.status());
  const LoginState want = user == CKU_SO ? LoginState::kSo : LoginState::kUser;
  const LoginState now = token->login.load();
  if (now == want) {
    return CkError(CKR_USER_ALREADY_LOGGED_IN, "already logged in");
  }
  if (now != LoginState::kNone) {
    return CkError(CKR_USER_ANOTHER_ALREADY_LOGGED_IN,
                   "the other user is logged in");
  }
  if (want == LoginState::kSo && token->ro_sessions > 0) {
    return CkError(CKR_SESSION_READ_ONLY_EXISTS,
                   "the SO cannot log in while R/O sessions exist");
  }
  // A logout whose purge failed left the private objects of that login in
  // the handle table: they go before anyone is logged in again.
  if (token->private_purge_pending) {
    ACCELCRYPT_RETURN_IF_ERROR(
        ForgetTokenObjects(token, /*private_only=*/true));
  }
  ACCELCRYPT_ASSIGN_OR_RETURN(TokenStore * store, OpenStore(token));
  ACCELCRYPT_ASSIGN_OR_RETURN(
      SecretBytes dek,
      store->Login(want == LoginState::kSo ? TokenStore::User::kSo
                                           : TokenStore::User::kUser,
                   PinView(pin, len)));
  token->dek = std::move(dek);
  token->login.store(want);
  // Private token objects join the handle table at the next look-up.
  token->private_loaded = false;
  return absl::OkStatus();
}

absl::Status Module::Logout(CK_SESSION_HANDLE h) {
  ACCELCRYPT_ASSIGN_OR_RETURN(std::shared_ptr<Session> s, FindSession(h));
  Token* token = s->token;
  MutexLock l(&token->mu);
  ACCELCRYPT_RETURN_IF_ERROR(l.status());
  if (token->login.load() == LoginState::kNone) {
    return CkError(CKR_USER_NOT_LOGGED_IN, "nobody is logged in");
  }
  DropLogin(token);
  return absl::OkStatus();
}

void Module::DropSpares(Token* token) {
  std::vector<std::shared_ptr<Session>> mine;
  {
    ReaderMutexLock sl(&sessions_mu_);
    if (sl.status().ok()) {
      for (const auto& [h, s] : sessions_) {
        if (s->token == token) mine.push_back(s);
      }
    }
  }
  for (const auto& s : mine) {
    MutexLock l(&s->mu);
    if (!l.status().ok()) continue;
    for (ActiveOp& op : s->ops) op.spare.reset();
  }
}

void Module::DropLogin(Token* token) {
  const bool was_user = token->login.load() == LoginState::kUser;
  token->login.store(LoginState::kNone);
  token->dek.Wipe();
  token->dek = SecretBytes();
  if (!was_user) return;
  // Finished operations kept for reuse (ActiveOp::spare) may hold a
  // private key's schedule: drop them with the login.
  DropSpares(token);
  // v2.40 section 5.6, C_Logout: handles to private objects become invalid
  // and private session objects are destroyed. If the application's mutex
  // fails, they stay in the table for now, unseen (Visible() shows a
  // private object only while the user is logged in), and the next
  // C_Login purges them first.
  if (!ForgetTokenObjects(token, /*private_only=*/true).ok()) {
    token->private_purge_pending = true;
  }
}

}  // namespace accelcrypt::p11
