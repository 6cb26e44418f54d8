// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_PKCS11_MODULE_MODULE_H_
#define ACCELCRYPT_PKCS11_MODULE_MODULE_H_

#include <p11-kit-1/p11-kit/pkcs11.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/core.h"
#include "pkcs11/common/attributes.h"
#include "pkcs11/mech/mechanisms.h"
#include "pkcs11/module/locking.h"
#include "pkcs11/module/module_config.h"
#include "pkcs11/store/token_store.h"

namespace accelcrypt::p11 {

// Who is logged in to a token. PKCS#11 v2.40 section 5.6: the login state
// belongs to the token as seen by this application; all its sessions on
// the token share it.
enum class LoginState { kNone, kUser, kSo };

// Token is one slot's token: its store (opened at first use), login state,
// the data key while logged in, the session counts and the ids of the
// store's objects that have handles.
struct Token {
  Token(CK_SLOT_ID slot_id, std::string store_dir, const AppLocking* app)
      : id(slot_id), dir(std::move(store_dir)), mu(app) {}

  const CK_SLOT_ID id;
  const std::string dir;
  Mutex mu;
  std::unique_ptr<TokenStore> store ABSL_GUARDED_BY(mu);
  // Set once the store's failure to open was printed on stderr.
  bool store_error_reported ABSL_GUARDED_BY(mu) = false;
  // Written under `mu`; read without it on the per-call path.
  std::atomic<LoginState> login{LoginState::kNone};
  SecretBytes dek ABSL_GUARDED_BY(mu);
  uint32_t ro_sessions ABSL_GUARDED_BY(mu) = 0;
  uint32_t rw_sessions ABSL_GUARDED_BY(mu) = 0;
  // Token objects in the handle table are the store's as of
  // `data_version` (TokenStore's change stamp of the snapshot read);
  // private ones only while `private_loaded`.
  bool objects_loaded ABSL_GUARDED_BY(mu) = false;
  bool private_loaded ABSL_GUARDED_BY(mu) = false;
  uint64_t data_version ABSL_GUARDED_BY(mu) = 0;
  // Set when a logout could not take the handle table's lock (the
  // application's mutex failed): the private objects of the ended login
  // (private session objects, private token objects' handles) are still
  // in the table, unseen only because nobody is logged in. C_Login purges
  // them (Module::ForgetTokenObjects clears the flag) before anyone logs
  // in again, or fails.
  bool private_purge_pending ABSL_GUARDED_BY(mu) = false;
  // `store` once opened, and `data_version` while `objects_loaded` (else
  // kNotSynced): read without `mu` by the freshness check of every keyed
  // C_*Init and object call (Module::TokenFresh). Written under `mu`; the
  // store is never replaced while sessions exist.
  static constexpr uint64_t kNotSynced = ~uint64_t{0};
  std::atomic<TokenStore*> open_store{nullptr};
  std::atomic<uint64_t> synced_version{kNotSynced};
  absl::flat_hash_map<uint64_t, CK_OBJECT_HANDLE> handles ABSL_GUARDED_BY(mu);
};

// Object is one handle's object. Session objects belong to `owner` and
// live only in memory; token objects mirror store object `store_id`.
struct Object {
  CK_OBJECT_HANDLE handle = 0;
  Token* token = nullptr;
  uint64_t store_id = 0;
  CK_SESSION_HANDLE owner = 0;
  bool is_token = false;
  bool is_private = false;
  // Guarded by Module::objects_mu_: replaced, never modified in place, so
  // a reader keeps a consistent snapshot after dropping the lock.
  std::shared_ptr<const AttributeMap> attrs;
  std::shared_ptr<PreparedKey> prepared;
  // With `prepared`: the usages (CKA_ENCRYPT ... CKA_VERIFY_RECOVER, as
  // bits, see crypto.cc) `attrs` allows, so a cache hit needs no attribute
  // lookup. Meaningless while `prepared` is null.
  uint32_t prepared_uses = 0;
};

// The operation slots of a session (one active operation of each kind).
enum OpSlot {
  kEncryptSlot,
  kDecryptSlot,
  kDigestSlot,
  kSignSlot,
  kVerifySlot,
  kVerifyRecoverSlot,
  kNumOpSlots
};

// ActiveOp is one operation slot of a session. `spare` is the last
// operation of the slot that completed successfully, kept so that the next
// C_*Init with the same mechanism reuses it (Operation::Restart) instead
// of allocating; it is never active (a call sees only `op`).
struct ActiveOp {
  std::unique_ptr<Operation> op;
  std::unique_ptr<Operation> spare;
  bool multipart = false;  // an update happened: single-part calls refused
  // A single-part call answered a size query (or CKR_BUFFER_TOO_SMALL):
  // the operation stays single-part; a multi-part call is refused
  // (CKR_OPERATION_ACTIVE) and, as a failed update or final, ends it.
  bool single_part = false;
  void Reset() {
    op.reset();
    multipart = false;
    single_part = false;
  }
  // End ends the active operation; `completed` (it produced its result
  // without error) keeps it as the spare.
  void End(bool completed) {
    if (completed) {
      spare = std::move(op);
    } else {
      op.reset();
    }
    multipart = false;
    single_part = false;
  }
};

struct Session {
  Session(CK_SESSION_HANDLE h, Token* t, CK_FLAGS f, const AppLocking* app)
      : handle(h),
        token(t),
        flags(f),
        rw((f & CKF_RW_SESSION) != 0),
        mu(app, Mutex::Kind::kExclusive) {}

  const CK_SESSION_HANDLE handle;
  Token* const token;
  const CK_FLAGS flags;
  const bool rw;
  Mutex mu;
  std::array<ActiveOp, kNumOpSlots> ops ABSL_GUARDED_BY(mu);
  bool find_active ABSL_GUARDED_BY(mu) = false;
  std::vector<CK_OBJECT_HANDLE> found ABSL_GUARDED_BY(mu);
  size_t found_pos ABSL_GUARDED_BY(mu) = 0;
};

// LockedSession is a session whose `mu` is held for the scope (made by
// Module::LockSession). The session stays alive while it is held: every
// path that removes a session from the table locks its `mu` afterwards
// (Module::RemoveSessions) while still holding a reference.
class LockedSession {
 public:
  LockedSession() = default;
  LockedSession(const LockedSession&) = delete;
  LockedSession& operator=(const LockedSession&) = delete;
  ~LockedSession() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    if (s_ != nullptr) s_->mu.Unlock();
  }
  Session* operator->() const { return s_; }
  Session& operator*() const { return *s_; }

 private:
  friend class Module;
  Session* s_ = nullptr;
  std::shared_ptr<Session> hold_;  // only when the lock was contended
};

// Module is one initialisation of the PKCS#11 module (C_Initialize ..
// C_Finalize): the core, the mechanisms, the tokens, the session and object
// handle tables. Every method is one C_* function with the raw arguments,
// returns its answer as a status carrying the exact CK_RV, and is
// thread-safe (PKCS#11 v2.40 section 5.4's multi-threaded access). Lock
// order: Token::mu, then sessions_mu_, then objects_mu_ (RemoveSessions
// holds both; nothing takes sessions_mu_ under objects_mu_), and
// Session::mu is never held while taking Token::mu or sessions_mu_
// (LockSession takes sessions_mu_ then Session::mu; objects_mu_ may be
// taken under Session::mu, never the reverse).
//
// Under application locking a lock can fail (the application's LockMutex
// returned an error; locking.h): the call then answers CKR_GENERAL_ERROR
// with nothing changed, except where the operation cannot be refused:
// C_Logout and closing a token's last session always end the login (the
// purge of its private objects may be deferred, see
// Token::private_purge_pending), and a closed session whose lock fails
// releases its operations with its last reference.
class Module {
 public:
  // Create reads the configuration, builds the core (whose PKCS#11 client
  // backend declines a module that leads back here) and the mechanisms.
  // `app` null: OS locking; else the application's mutexes.
  static absl::StatusOr<std::unique_ptr<Module>> Create(
      std::optional<AppLocking> app);
  ~Module();

  // Log writes `message` to stderr when logging is configured (log_level
  // or ACCELCRYPT_LOG_LEVEL set).
  void Log(std::string_view message) const;
  // LogFailure reports a failed C_* call on stderr at log level 2 and up
  // (the status message never holds PINs or key bytes).
  void LogFailure(const char* function, const absl::Status& status) const;

  // FlushStats writes the core's stats now (process exit).
  void FlushStats();
  // ReleaseStoresAfterFork, in a forked child, closes the inherited token
  // stores without taking any lock; the rest of the instance is abandoned
  // (never used or destroyed in the child).
  void ReleaseStoresAfterFork() ABSL_NO_THREAD_SAFETY_ANALYSIS;

  // Slots and tokens (module.cc).
  absl::Status GetInfo(CK_INFO_PTR info);
  absl::Status GetSlotList(CK_BBOOL token_present, CK_SLOT_ID_PTR list,
                           CK_ULONG_PTR count);
  absl::Status GetSlotInfo(CK_SLOT_ID slot, CK_SLOT_INFO_PTR info);
  absl::Status GetTokenInfo(CK_SLOT_ID slot, CK_TOKEN_INFO_PTR info);
  absl::Status GetMechanismList(CK_SLOT_ID slot, CK_MECHANISM_TYPE_PTR list,
                                CK_ULONG_PTR count);
  absl::Status GetMechanismInfo(CK_SLOT_ID slot, CK_MECHANISM_TYPE type,
                                CK_MECHANISM_INFO_PTR info);
  absl::Status InitToken(CK_SLOT_ID slot, CK_UTF8CHAR_PTR pin, CK_ULONG len,
                         CK_UTF8CHAR_PTR label);
  absl::Status InitPIN(CK_SESSION_HANDLE h, CK_UTF8CHAR_PTR pin, CK_ULONG len);
  absl::Status SetPIN(CK_SESSION_HANDLE h, CK_UTF8CHAR_PTR old_pin,
                      CK_ULONG old_len, CK_UTF8CHAR_PTR new_pin,
                      CK_ULONG new_len);

  // Sessions and login (module.cc).
  absl::Status OpenSession(CK_SLOT_ID slot, CK_FLAGS flags,
                           CK_SESSION_HANDLE_PTR out);
  absl::Status CloseSession(CK_SESSION_HANDLE h);
  absl::Status CloseAllSessions(CK_SLOT_ID slot);
  absl::Status GetSessionInfo(CK_SESSION_HANDLE h, CK_SESSION_INFO_PTR info);
  absl::Status Login(CK_SESSION_HANDLE h, CK_USER_TYPE user,
                     CK_UTF8CHAR_PTR pin, CK_ULONG len);
  absl::Status Logout(CK_SESSION_HANDLE h);

  // Objects (objects.cc).
  absl::Status CreateObject(CK_SESSION_HANDLE h, CK_ATTRIBUTE_PTR tmpl,
                            CK_ULONG count, CK_OBJECT_HANDLE_PTR out);
  absl::Status CopyObject(CK_SESSION_HANDLE h, CK_OBJECT_HANDLE object,
                          CK_ATTRIBUTE_PTR tmpl, CK_ULONG count,
                          CK_OBJECT_HANDLE_PTR out);
  absl::Status DestroyObject(CK_SESSION_HANDLE h, CK_OBJECT_HANDLE object);
  absl::Status GetObjectSize(CK_SESSION_HANDLE h, CK_OBJECT_HANDLE object,
                             CK_ULONG_PTR size);
  absl::Status GetAttributeValue(CK_SESSION_HANDLE h, CK_OBJECT_HANDLE object,
                                 CK_ATTRIBUTE_PTR tmpl, CK_ULONG count);
  absl::Status SetAttributeValue(CK_SESSION_HANDLE h, CK_OBJECT_HANDLE object,
                                 CK_ATTRIBUTE_PTR tmpl, CK_ULONG count);
  absl::Status FindObjectsInit(CK_SESSION_HANDLE h, CK_ATTRIBUTE_PTR tmpl,
                               CK_ULONG count);
  absl::Status FindObjects(CK_SESSION_HANDLE h, CK_OBJECT_HANDLE_PTR out,
                           CK_ULONG max, CK_ULONG_PTR count);
  absl::Status FindObjectsFinal(CK_SESSION_HANDLE h);

  // Cryptography (crypto.cc).
  absl::Status OpInit(OpSlot slot, CK_SESSION_HANDLE h,
                      CK_MECHANISM_PTR mechanism, CK_OBJECT_HANDLE key);
  // OneShot: C_Encrypt, C_Decrypt, C_Digest, C_Sign, C_VerifyRecover.
  absl::Status OneShot(OpSlot slot, CK_SESSION_HANDLE h, CK_BYTE_PTR in,
                       CK_ULONG in_len, CK_BYTE_PTR out, CK_ULONG_PTR out_len);
  // UpdateWithOutput: C_EncryptUpdate, C_DecryptUpdate.
  absl::Status UpdateWithOutput(OpSlot slot, CK_SESSION_HANDLE h,
                                CK_BYTE_PTR in, CK_ULONG in_len,
                                CK_BYTE_PTR out, CK_ULONG_PTR out_len);
  // Update: C_DigestUpdate, C_SignUpdate, C_VerifyUpdate.
  absl::Status Update(OpSlot slot, CK_SESSION_HANDLE h, CK_BYTE_PTR in,
                      CK_ULONG in_len);
  // Final: C_EncryptFinal, C_DecryptFinal, C_DigestFinal, C_SignFinal.
  absl::Status Final(OpSlot slot, CK_SESSION_HANDLE h, CK_BYTE_PTR out,
                     CK_ULONG_PTR out_len);
  absl::Status Verify(CK_SESSION_HANDLE h, CK_BYTE_PTR data, CK_ULONG data_len,
                      CK_BYTE_PTR sig, CK_ULONG sig_len);
  absl::Status VerifyFinal(CK_SESSION_HANDLE h, CK_BYTE_PTR sig,
                           CK_ULONG sig_len);
  absl::Status DigestKey(CK_SESSION_HANDLE h, CK_OBJECT_HANDLE key);
  absl::Status GetOperationState(CK_SESSION_HANDLE h, CK_BYTE_PTR out,
                                 CK_ULONG_PTR out_len);
  absl::Status SetOperationState(CK_SESSION_HANDLE h, CK_BYTE_PTR state,
                                 CK_ULONG len, CK_OBJECT_HANDLE enc_key,
                                 CK_OBJECT_HANDLE auth_key);
  absl::Status GenerateKey(CK_SESSION_HANDLE h, CK_MECHANISM_PTR mechanism,
                           CK_ATTRIBUTE_PTR tmpl, CK_ULONG count,
                           CK_OBJECT_HANDLE_PTR out);
  absl::Status GenerateKeyPair(CK_SESSION_HANDLE h, CK_MECHANISM_PTR mechanism,
                               CK_ATTRIBUTE_PTR pub_tmpl, CK_ULONG pub_count,
                               CK_ATTRIBUTE_PTR priv_tmpl, CK_ULONG priv_count,
                               CK_OBJECT_HANDLE_PTR pub,
                               CK_OBJECT_HANDLE_PTR priv);
  absl::Status GenerateRandom(CK_SESSION_HANDLE h, CK_BYTE_PTR out,
                              CK_ULONG len);
  absl::Status SeedRandom(CK_SESSION_HANDLE h, CK_BYTE_PTR seed, CK_ULONG len);

 private:
  Module(ModuleConfig config, std::optional<AppLocking> app);

  const AppLocking* locking() const { return app_ ? &*app_ : nullptr; }

  absl::StatusOr<Token*> FindToken(CK_SLOT_ID slot);
  absl::StatusOr<std::shared_ptr<Session>> FindSession(CK_SESSION_HANDLE h);
  // LockSession finds session `h` and locks its `mu` into `out` (the
  // per-call path: when the session lock is free it is taken under the
  // table's reader lock, so no reference is counted). Lock order:
  // sessions_mu_ then Session::mu; the caller must not take Token::mu
  // while `out` is held. Not analysed for thread safety: the session lock
  // it takes is released by `out`'s destructor, a hand-over the analysis
  // cannot follow (callers state the lock with s->mu.AssertHeld()).
  absl::Status LockSession(CK_SESSION_HANDLE h,
                           LockedSession* out) ABSL_NO_THREAD_SAFETY_ANALYSIS;
  // OpenStore opens the token's store on first use (creating it). Its
  // failure is printed on stderr once per token.
  absl::StatusOr<TokenStore*> OpenStore(Token* token)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(token->mu);
  // DropLogin ends the token's login: the data key is wiped and every
  // private object (token and session) leaves the handle table; the
  // token's sessions drop their finished operations (ActiveOp::spare).
  // Takes sessions_mu_ and each session's mu. Cannot fail: the login ends
  // even when the application's mutex fails; the private objects are then
  // left for C_Login to purge (Token::private_purge_pending).
  void DropLogin(Token* token) ABSL_EXCLUSIVE_LOCKS_REQUIRED(token->mu);
  // DropSpares discards the finished operations kept for reuse
  // (ActiveOp::spare) in every session of `token`: they may hold a key's
  // expanded schedule. Takes sessions_mu_ and each Session::mu: call it
  // with no session lock held.
  void DropSpares(Token* token);
  // RemoveSessions closes the listed sessions of `token` (their session
  // objects go with them) and logs out when none remain. Fails (with
  // nothing changed) only when the application's mutex fails on the
  // session or object table.
  absl::Status RemoveSessions(
      Token* token, const std::vector<std::shared_ptr<Session>>& sessions)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(token->mu);

  // Objects (objects.cc).
  // SyncTokenObjects brings the token objects in the handle table up to
  // the store's state (another process may have changed it; a login or
  // logout changes which private objects are visible).
  absl::Status SyncTokenObjects(Token* token)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(token->mu);
  // ForgetTokenObjects drops the handles of the token's objects (only the
  // private ones if `private_only`, as at a logout) and destroys its
  // session objects of the same kind; the table is re-read from the store
  // at the next look-up. Clears Token::private_purge_pending. Fails, with
  // nothing changed, when the application's mutex fails.
  absl::Status ForgetTokenObjects(Token* token, bool private_only)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(token->mu);
  struct ObjectRef {
    std::shared_ptr<Object> object;
    std::shared_ptr<const AttributeMap> attrs;
  };
  // TokenFresh is true when the token objects in the handle table are the
  // store's current ones: no process (this one included) committed a
  // change since they were read (TokenStore::ChangeStamp: one atomic load
  // from the shared counter; no lock, no system call). True when no store
  // is open (then the token has no object handles).
  bool TokenFresh(Token* token);
  // NoteOwnWrite, after this process committed a change of a token object
  // (under `mu`) and applied it to the handle table itself, keeps the
  // table counted as current when that commit was the only change since
  // the table was read; otherwise the next freshness check re-reads.
  void NoteOwnWrite(Token* token, TokenStore* store)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(token->mu);
  // LookupObject finds a handle visible to `session` (same token; private
  // ones only while the user is logged in), re-reading the store on a
  // miss and, for a token object, when the store changed since the table
  // was read (TokenFresh): an object another process destroyed is not
  // found, one it changed has its new attributes. Not found:
  // CkError(`invalid_rv`).
  absl::StatusOr<ObjectRef> LookupObject(const Session& session,
                                         CK_OBJECT_HANDLE handle,
                                         CK_RV invalid_rv);
  // AddObject stores a new object made for `session` (token objects in the
  // store with the data key) and gives it a handle. Checks R/W session and
  // login for token/private objects first.
  absl::StatusOr<CK_OBJECT_HANDLE> AddObject(const Session& session,
                                             AttributeMap attrs);
  absl::Status CheckWritable(const Session& session, bool is_token,
                             bool is_private);
  // DestroyHandle removes an object (from its store too, for token
  // objects) and its handle; when the application's mutex fails, neither.
  absl::Status DestroyHandle(const ObjectRef& ref);
  // InsertObject gives `object` a handle in the table; EraseObject removes
  // one. Both fail (changing nothing) only when the application's mutex
  // fails.
  absl::StatusOr<CK_OBJECT_HANDLE> InsertObject(std::shared_ptr<Object> object);
  absl::Status EraseObject(CK_OBJECT_HANDLE handle);

  // PreparedKeyFor resolves a key handle for an operation that needs
  // `usage` (CKA_ENCRYPT, ...), with the prepared key cached per handle.
  // CachedKey is PreparedKeyFor's fast path (handle table reader lock
  // only; may be called with the session's lock held): `*out` is the
  // cached prepared key of a visible object that allows `usage`, or stays
  // null on any miss (a token key also when the store changed since the
  // handle table was read, see TokenFresh); an error only for a visible
  // cached session key without `usage` (the same error PreparedKeyFor
  // gives).
  absl::Status CachedKey(const Session& session, CK_OBJECT_HANDLE handle,
                         CK_ATTRIBUTE_TYPE usage,
                         std::shared_ptr<PreparedKey>* out);
  absl::StatusOr<std::shared_ptr<PreparedKey>> PreparedKeyFor(
      const Session& session, CK_OBJECT_HANDLE handle, CK_ATTRIBUTE_TYPE usage);

  ModuleConfig config_;
  std::optional<AppLocking> app_;
  std::unique_ptr<Core> core_;
  std::unique_ptr<Mechanisms> mechanisms_;
  std::vector<std::unique_ptr<Token>> tokens_;

  Mutex sessions_mu_;
  absl::flat_hash_map<CK_SESSION_HANDLE, std::shared_ptr<Session>> sessions_
      ABSL_GUARDED_BY(sessions_mu_);
  std::atomic<CK_SESSION_HANDLE> next_session_{1};

  Mutex objects_mu_;
  absl::flat_hash_map<CK_OBJECT_HANDLE, std::shared_ptr<Object>> objects_
      ABSL_GUARDED_BY(objects_mu_);
  std::atomic<CK_OBJECT_HANDLE> next_object_{1};
};

}  // namespace accelcrypt::p11

#endif  // ACCELCRYPT_PKCS11_MODULE_MODULE_H_
