// SPDX-License-Identifier: Apache-2.0
// TokenStore's state (TokenStore::Impl) and the records its parts share:
// token_store.cc (opening, schema, change stamps, token info),
// token_pins.cc (PIN records wrapping the data key, verification,
// C_InitToken/C_InitPIN/C_SetPIN) and token_objects.cc (objects sealed at
// rest). Only these files include it.
#ifndef ACCELCRYPT_PKCS11_STORE_INTERNAL_STORE_IMPL_H_
#define ACCELCRYPT_PKCS11_STORE_INTERNAL_STORE_IMPL_H_

#include <sqlite3.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/status.h"
#include "pkcs11/common/attributes.h"
#include "pkcs11/store/internal/sealing.h"
#include "pkcs11/store/internal/sqlite_db.h"
#include "pkcs11/store/token_store.h"

namespace accelcrypt::p11 {
namespace internal {

// A stored iteration count above this is treated as corruption rather than
// spending minutes in PBKDF2.
inline constexpr uint64_t kMaxIterations = 100000000;

// PinRecord is one row of `pins`: the DEK wrapped under a key derived
// from one user's PIN.
struct PinRecord {
  bool present = false;
  std::vector<uint8_t> salt;
  uint64_t iterations = 0;
  std::vector<uint8_t> iv;
  std::vector<uint8_t> wrapped;

  bool operator==(const PinRecord& o) const {
    return present == o.present && salt == o.salt &&
           iterations == o.iterations && iv == o.iv && wrapped == o.wrapped;
  }
  bool operator!=(const PinRecord& o) const { return !(*this == o); }
};

// AuthState is one user's login state in one snapshot.
struct AuthState {
  bool initialized = false;
  uint32_t failures = 0;
  bool locked = false;
  PinRecord pin;
};

// Verified is the outcome of a verified PIN: the DEK it unwrapped and the
// record it was checked against.
struct Verified {
  SecretBytes dek;
  PinRecord pin;
};

}  // namespace internal

struct TokenStore::Impl {
  using PinRecord = internal::PinRecord;
  using AuthState = internal::AuthState;
  using Verified = internal::Verified;
  using Stmt = internal::Stmt;

  std::string dir;
  std::string path;
  Options options;
  pid_t pid = 0;
  std::unique_ptr<internal::StoreCrypto> crypto;

  absl::Mutex mu;
  sqlite3* db ABSL_GUARDED_BY(mu) = nullptr;
  // The shared change counter (<dir>/token.changes, mapped MAP_SHARED);
  // set by Open, unmapped by the destructor.
  uint64_t* shared_stamp = nullptr;
  uint64_t last_write_stamp ABSL_GUARDED_BY(mu) = 0;
  // True while a thread uses the connection; read by the destructor in a
  // forked child, which must not take `mu` (it may have been copied held).
  std::atomic<bool> db_active{false};

  // Locked holds `mu` and marks the connection active.
  class ABSL_SCOPED_LOCKABLE Locked {
   public:
    explicit Locked(Impl* impl) ABSL_EXCLUSIVE_LOCK_FUNCTION(impl->mu)
        : impl_(impl) {
      impl_->mu.Lock();
      impl_->db_active.store(true);
    }
    ~Locked() ABSL_UNLOCK_FUNCTION() {
      impl_->db_active.store(false);
      impl_->mu.Unlock();
    }

   private:
    Impl* impl_;
  };

  // Txn is one transaction, rolled back unless committed (by its
  // destructor, still under `mu`: declare it after the Locked). It is begun
  // and committed by Begin, BeginHoldingWriters and Commit below, which
  // need `mu` (the analysis checks that against the caller's lock); a
  // write transaction moves the change stamp when it commits.
  class Txn {
   private:
    friend struct Impl;
    bool write_ = false;
    internal::SqliteTransaction txn_;
  };
  absl::Status Begin(Txn& txn, bool write) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    txn.write_ = write;
    return txn.txn_.Begin(db, path,
                          write ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED");
  }
  // BeginHoldingWriters starts a read transaction that keeps other
  // connections from writing until it ends (BEGIN IMMEDIATE); the caller
  // writes nothing in it.
  absl::Status BeginHoldingWriters(Txn& txn) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    txn.write_ = false;
    return txn.txn_.Begin(db, path, "BEGIN IMMEDIATE");
  }
  absl::Status Commit(Txn& txn) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    uint64_t stamp = 0;
    if (txn.write_) {
      // Published before the commit becomes visible (TokenStore's
      // "Change stamps"): a reader never sees the change with an old stamp.
      ACCELCRYPT_ASSIGN_OR_RETURN(stamp, BumpStamp());
    }
    ACCELCRYPT_RETURN_IF_ERROR(txn.txn_.Commit());
    if (txn.write_) last_write_stamp = stamp;
    return absl::OkStatus();
  }

  sqlite3* db_for_child() ABSL_NO_THREAD_SAFETY_ANALYSIS { return db; }

  absl::Status CheckPid() const;

  absl::Status Error(int rc, std::string_view what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return internal::SqliteError(db, rc, path, what);
  }
  absl::Status Exec(const char* sql) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return internal::SqliteExec(db, path, sql);
  }
  absl::StatusOr<Stmt> Prepare(const char* sql)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return internal::SqlitePrepare(db, path, sql);
  }

  absl::Status EnsureSchema() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // StoredStamp reads the change counter of the current transaction's
  // snapshot (0 when never written).
  absl::StatusOr<uint64_t> StoredStamp() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // BumpStamp, inside a write transaction, sets the change counter to one
  // more than the larger of the stored and the shared value, in both, and
  // returns it.
  absl::StatusOr<uint64_t> BumpStamp() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // MapSharedStamp creates (mode 0600) and maps <dir>/token.changes.
  absl::Status MapSharedStamp();
  absl::Status CheckSchemaVersion() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  absl::StatusOr<AuthState> ReadAuthState(User user)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // CheckDek verifies `dek` is the current DEK of an initialised token.
  absl::Status CheckDek(const SecretBytes* dek)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  absl::Status RequireInitialized() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  absl::StatusOr<PinRecord> Wrap(std::string_view pin, const SecretBytes& dek,
                                 User user) const;
  absl::StatusOr<Verified> Verify(User user, std::string_view pin)
      ABSL_LOCKS_EXCLUDED(mu);
  absl::Status WritePin(User user, const PinRecord& rec)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  // Seal encodes an object's stored form: (iv or empty, data).
  absl::StatusOr<std::pair<std::vector<uint8_t>, std::vector<uint8_t>>> Seal(
      uint64_t id, const AttributeMap& attributes, bool is_private,
      const SecretBytes* dek) const;
  absl::StatusOr<StoredObject> Unseal(Stmt& row, const SecretBytes* dek) const;
  absl::Status WriteObject(uint64_t id, const AttributeMap& attributes,
                           bool is_private, const SecretBytes* dek)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
};

}  // namespace accelcrypt::p11

#endif  // ACCELCRYPT_PKCS11_STORE_INTERNAL_STORE_IMPL_H_
