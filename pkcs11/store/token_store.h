// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_PKCS11_STORE_TOKEN_STORE_H_
#define ACCELCRYPT_PKCS11_STORE_TOKEN_STORE_H_

#include <openssl/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pkcs11/common/attributes.h"

namespace accelcrypt::p11 {

// TokenStore is one token's persistent state in one SQLite database
// (<dir>/token.sqlite, WAL journal, busy timeout, every change in one
// transaction), shared safely by concurrent processes: each sees the
// others' committed changes (ChangeStamp tells when to reload), none can
// corrupt it, a process killed mid-write leaves the last committed state.
//
// Change stamps: every write transaction, while it holds SQLite's write
// lock and before it commits, sets the token's change counter to one more
// than the larger of its stored value (`meta` row change_counter) and a
// shared copy in <dir>/token.changes (8 bytes, memory-mapped by every
// process using the store), in both places. ChangeStamp reads the shared
// copy (one atomic load, no lock, no system call); LoadObjects returns the
// stamp of the snapshot it read. A reader that keeps the stamp of what it
// read and compares ChangeStamp with it misses no commit: the shared copy
// moves before the commit is visible, and a writer killed after moving it
// (before or after committing) costs one more re-read. Stores written by a
// version without the counter read as stamp 0 (and such a version's
// writes are not seen by this check: do not mix versions on one token
// while processes use it).
//
// PINs and encryption at rest: the token has a random 256-bit data key
// (the DEK). It is stored twice, wrapped (AES-256-GCM) under a key derived
// from the SO PIN and under one derived from the user PIN (PBKDF2-HMAC-
// SHA256 from a private OSSL_LIB_CTX, random salt per PIN, iteration count
// stored). A PIN is verified by unwrapping (the GCM tag decides; no PIN
// hash is stored). Every attribute value of a private object (CKA_PRIVATE
// true) is stored encrypted under the DEK (AES-256-GCM, fresh IV, the
// object id as AAD); public objects are stored in clear. C_SetPIN re-wraps
// the DEK only; C_InitPIN (SO logged in, so the DEK is known) wraps it
// under the new user PIN. A successful login writes nothing unless a
// failure counter must be reset; a failed login increments its counter
// (the only write). Errors carry exact CK_RVs (pkcs11/common/ck_error.h).
// Thread-safe (one connection, serialised internally; PIN derivation in
// Login runs outside the lock).
//
// On disk: <dir>/token.sqlite (mode 0600, its -wal/-shm files inherit the
// mode), <dir>/token.changes (mode 0600, the shared change counter), a
// `meta` table with the schema version (a store written by a newer
// schema is refused with CKR_TOKEN_NOT_RECOGNIZED, never modified). The
// DEK wraps use AAD naming the PIN's owner; a private object's ciphertext
// (12-byte random IV, 16-byte tag) uses AAD = object id (8 bytes LE) ||
// format version (4 bytes LE), so ciphertexts cannot be swapped between
// objects. The store also keeps a check value of the current DEK, so a DEK
// from before a re-initialisation (possibly by another process) is refused
// with CKR_USER_NOT_LOGGED_IN instead of writing undecryptable objects.
//
// Fork: a TokenStore must not be used across fork(). In a child every
// method fails with CKR_CRYPTOKI_NOT_INITIALIZED; the child destroys the
// inherited store (the destructor notices the new pid: it takes no lock and
// releases only this process's copy of SQLite's per-file state, so a store
// reopened in the child holds real file locks) and only then opens a new
// one on the same directory (opened while the inherited one still exists,
// the new connection would share the parent's lock bookkeeping and hold no
// real locks).
class TokenStore {
 public:
  enum class User { kSo, kUser };

  struct TokenInfo {
    bool initialized = false;  // C_InitToken done
    std::string label;         // as given (<= 32 bytes), unpadded
    std::string serial;        // 16 hex chars, made when the store is made
    bool user_pin_initialized = false;
    uint32_t so_failures = 0;  // consecutive wrong SO PINs
    uint32_t user_failures = 0;
    bool so_locked = false;  // failures reached max_pin_failures
    bool user_locked = false;
    bool so_pin_to_be_changed = false;    // never set by this store
    bool user_pin_to_be_changed = false;  // never set by this store
  };

  struct StoredObject {
    uint64_t id = 0;  // stable id in this store (never reused)
    bool is_private = false;
    // Decrypted attributes. For a private object loaded without the DEK:
    // empty, and `locked` is true.
    AttributeMap attributes;
    bool locked = false;
  };

  struct Options {
    uint32_t max_pin_failures = 10;  // then the PIN is locked (CKR_PIN_LOCKED)
    uint32_t pbkdf2_iterations = 100000;
    int busy_timeout_ms = 10000;
    // Library context for every libcrypto call (not owned; must outlive the
    // store). Null: the store makes its own private one with OpenSSL's
    // default provider. Never the process's default context.
    OSSL_LIB_CTX* libctx = nullptr;
  };

  // Open opens or creates the store in `dir` (created with mode 0700 when
  // missing, parents too). Errors: CKR_ARGUMENTS_BAD for bad options;
  // CKR_DEVICE_ERROR with the path and the system's or SQLite's message
  // (directory not creatable, not a database, not an accelcrypt store);
  // CKR_TOKEN_NOT_RECOGNIZED for a store of a newer schema version.
  static absl::StatusOr<std::unique_ptr<TokenStore>> Open(
      const std::string& dir, const Options& options);
  // Absent is true only when `dir` holds no store because the store file,
  // or a directory on its path, does not exist: nothing to open, and Open
  // would create it. Any other state (a file where the directory should be,
  // no permission) is false, for Open to report.
  static bool Absent(const std::string& dir);
  // Usable says whether this process can use the existing store in `dir`
  // now, without opening, creating or locking anything (store_access.cc):
  // read and write the database, its journal files and the change counter,
  // and add journal files to the directory. OK when it can; otherwise
  // CKR_DEVICE_ERROR saying which file or directory refuses what, with its
  // owner and mode and this process's uid (a token directory only root
  // may enter, seen from a daemon's worker that dropped to another user).
  // An absent store (Absent) is CKR_TOKEN_NOT_RECOGNIZED.
  static absl::Status Usable(const std::string& dir);
  static absl::StatusOr<std::unique_ptr<TokenStore>> Open(
      const std::string& dir) {
    return Open(dir, Options());
  }
  ~TokenStore();

  absl::StatusOr<TokenInfo> Info();

  // InitToken (C_InitToken): on an initialised token `so_pin` must unwrap
  // the DEK (CKR_PIN_INCORRECT, counted; CKR_PIN_LOCKED); then every object
  // is destroyed, the user PIN removed, a new DEK made and wrapped under
  // `so_pin`, `label` set. On a fresh store just the latter. A label over
  // 32 bytes: CKR_ARGUMENTS_BAD. Object ids are not reused afterwards.
  absl::Status InitToken(std::string_view so_pin, std::string_view label);

  // Login verifies `pin` for `user` and returns the DEK.
  // CKR_PIN_INCORRECT (counted), CKR_PIN_LOCKED,
  // CKR_USER_PIN_NOT_INITIALIZED (user PIN never set),
  // CKR_TOKEN_NOT_RECOGNIZED when not initialised. The DEK is 32 bytes.
  absl::StatusOr<SecretBytes> Login(User user, std::string_view pin);

  // InitPin (C_InitPIN): wraps `dek` (from an SO login) under `user_pin`,
  // resets the user failure counter and lock. CKR_USER_NOT_LOGGED_IN when
  // `dek` is not the token's current DEK.
  absl::Status InitPin(const SecretBytes& dek, std::string_view user_pin);

  // SetPin (C_SetPIN): verifies `old_pin` (counted like Login), re-wraps
  // the DEK under `new_pin`.
  absl::Status SetPin(User user, std::string_view old_pin,
                      std::string_view new_pin);

  // CreateObject stores a new token object and returns its id. `dek` is
  // required (non-null) when `is_private` (else CKR_USER_NOT_LOGGED_IN, as
  // for a DEK that is not the token's current one); ignored otherwise.
  // CKR_TOKEN_NOT_RECOGNIZED when the token is not initialised.
  absl::StatusOr<uint64_t> CreateObject(const AttributeMap& attributes,
                                        bool is_private,
                                        const SecretBytes* dek);
  // UpdateObject replaces an object's attributes (CKR_OBJECT_HANDLE_INVALID
  // when `id` is gone). With `expected`, only if the stored attributes
  // still equal it, checked in the writing transaction: otherwise
  // kAborted and nothing is written (another process changed the object
  // since the caller read it; read again and retry).
  absl::Status UpdateObject(uint64_t id, const AttributeMap& attributes,
                            bool is_private, const SecretBytes* dek,
                            const AttributeMap* expected = nullptr);
  // DestroyObject removes it (CKR_OBJECT_HANDLE_INVALID when gone).
  absl::Status DestroyObject(uint64_t id);
  // LoadObjects returns every object, private ones decrypted when `dek` is
  // given (else locked). A private object that fails to decrypt is an
  // error naming its id (CKR_DEVICE_ERROR), never silently dropped; a
  // stale `dek` is CKR_USER_NOT_LOGGED_IN. Ordered by id. `stamp` (may be
  // null) receives the change counter of the snapshot read; when the
  // shared counter is ahead of it, the objects are read again with writers
  // held off (waiting up to the busy timeout for a commit in progress), so
  // a writer that died after moving the shared counter does not leave
  // every later check re-reading.
  absl::StatusOr<std::vector<StoredObject>> LoadObjects(
      const SecretBytes* dek, uint64_t* stamp = nullptr);
  // LoadObject returns one object (CKR_OBJECT_HANDLE_INVALID when gone).
  absl::StatusOr<StoredObject> LoadObject(uint64_t id, const SecretBytes* dek);

  // ChangeStamp is the token's change counter as last published by any
  // process (see above): it differs from the stamp LoadObjects returned
  // whenever a change was committed (or a writer died) since. Lock-free;
  // safe to call from any thread, also concurrently with writes.
  uint64_t ChangeStamp() const;
  // LastWriteStamp is the change counter this store's last committed write
  // set (0 before any). With the caller serialising its own writes, a
  // value of (stamp of its last LoadObjects) + 1 means no other process
  // changed the token in between.
  uint64_t LastWriteStamp();

  const std::string& path() const;

 private:
  struct Impl;
  explicit TokenStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace accelcrypt::p11

#endif  // ACCELCRYPT_PKCS11_STORE_TOKEN_STORE_H_
