// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_PKCS11_MODULE_LOCKING_H_
#define ACCELCRYPT_PKCS11_MODULE_LOCKING_H_

#include <p11-kit-1/p11-kit/pkcs11.h>

#include <mutex>
#include <shared_mutex>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"

namespace accelcrypt::p11 {

// AppLocking holds the four mutex callbacks an application passed in
// CK_C_INITIALIZE_ARGS without CKF_OS_LOCKING_OK (PKCS#11 v2.40 section
// 5.4, case 3: the library must use them). All four are set or none.
struct AppLocking {
  CK_CREATEMUTEX create = nullptr;
  CK_DESTROYMUTEX destroy = nullptr;
  CK_LOCKMUTEX lock = nullptr;
  CK_UNLOCKMUTEX unlock = nullptr;
};

// Mutex is a reader/writer lock under OS locking, or one mutex made by the
// application's CreateMutex (exclusive only: ReaderLock is Lock) when the
// application supplied its own. The OS form is std::shared_mutex rather
// than absl::Mutex because it sits on the per-call path: Debian's Abseil
// is built with deadlock detection on, which costs about half of a
// C_DigestUpdate, and its mode is process-wide (the application's to set).
// A Mutex made with Kind::kExclusive (a session's lock, never shared) is a
// std::mutex under OS locking: an uncontended lock/unlock is one atomic
// each way, cheaper than a pthread rwlock's writer path.
// Lock/ReaderLock report failure of the application's LockMutex (or of its
// CreateMutex at construction) instead of proceeding unlocked.
class ABSL_LOCKABLE Mutex {
 public:
  enum class Kind { kReaderWriter, kExclusive };
  // `app` null selects OS locking; otherwise it must outlive the mutex.
  explicit Mutex(const AppLocking* app, Kind kind = Kind::kReaderWriter);
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;
  ~Mutex();

  bool Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    if (app_ != nullptr) return AppLock();
    if (exclusive_) {
      plain_.lock();
    } else {
      os_.lock();
    }
    return true;
  }
  void Unlock() ABSL_UNLOCK_FUNCTION() {
    if (app_ != nullptr) {
      AppUnlock();
    } else if (exclusive_) {
      plain_.unlock();
    } else {
      os_.unlock();
    }
  }
  // TryLock takes the lock if it is free, without waiting; always false
  // under application locking (its mutexes have no try operation).
  bool TryLock() ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) {
    if (app_ != nullptr) return false;
    return exclusive_ ? plain_.try_lock() : os_.try_lock();
  }
  bool ReaderLock() ABSL_SHARED_LOCK_FUNCTION() {
    if (app_ != nullptr || exclusive_) return Lock();
    os_.lock_shared();
    return true;
  }
  void ReaderUnlock() ABSL_UNLOCK_FUNCTION() {
    if (app_ != nullptr || exclusive_) {
      Unlock();
      return;
    }
    os_.unlock_shared();
  }
  // AssertHeld checks nothing at run time: it tells clang's thread-safety
  // analysis that the caller holds this mutex, taken elsewhere and handed
  // over (Module::LockSession's LockedSession).
  void AssertHeld() const ABSL_ASSERT_EXCLUSIVE_LOCK() {}

 private:
  bool AppLock();
  void AppUnlock();

  const AppLocking* app_;
  const bool exclusive_;
  void* app_mutex_ = nullptr;
  std::shared_mutex os_;
  std::mutex plain_;
};

// LockFailed is the status of a scoped lock whose application mutex failed
// (CKR_GENERAL_ERROR).
absl::Status LockFailed();

// MutexLock / ReaderMutexLock hold a Mutex for a scope. status() is OK
// when the lock is held, else CKR_GENERAL_ERROR (the application's mutex
// failed): the caller must return it without touching guarded state.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu)
      : mu_(mu), held_(mu->Lock()) {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;
  ~MutexLock() ABSL_UNLOCK_FUNCTION() {
    if (held_) mu_->Unlock();
  }
  absl::Status status() const {
    return held_ ? absl::OkStatus() : LockFailed();
  }

 private:
  Mutex* mu_;
  bool held_;
};

class ABSL_SCOPED_LOCKABLE ReaderMutexLock {
 public:
  explicit ReaderMutexLock(Mutex* mu) ABSL_SHARED_LOCK_FUNCTION(mu)
      : mu_(mu), held_(mu->ReaderLock()) {}
  ReaderMutexLock(const ReaderMutexLock&) = delete;
  ReaderMutexLock& operator=(const ReaderMutexLock&) = delete;
  ~ReaderMutexLock() ABSL_UNLOCK_FUNCTION() {
    if (held_) mu_->ReaderUnlock();
  }
  absl::Status status() const {
    return held_ ? absl::OkStatus() : LockFailed();
  }

 private:
  Mutex* mu_;
  bool held_;
};

}  // namespace accelcrypt::p11

#endif  // ACCELCRYPT_PKCS11_MODULE_LOCKING_H_
