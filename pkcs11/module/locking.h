// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_PKCS11_MODULE_LOCKING_H_
#define ACCELCRYPT_PKCS11_MODULE_LOCKING_H_

#include <p11-kit-1/p11-kit/pkcs11.h>

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
// Lock/ReaderLock report failure of the application's LockMutex (or of its
// CreateMutex at construction) instead of proceeding unlocked.
class ABSL_LOCKABLE Mutex {
 public:
  // `app` null selects OS locking; otherwise it must outlive the mutex.
  explicit Mutex(const AppLocking* app);
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;
  ~Mutex();

  bool Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION();
  void Unlock() ABSL_UNLOCK_FUNCTION();
  bool ReaderLock() ABSL_SHARED_LOCK_FUNCTION();
  void ReaderUnlock() ABSL_UNLOCK_FUNCTION();

 private:
  const AppLocking* app_;
  void* app_mutex_ = nullptr;
  std::shared_mutex os_;
};

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
  absl::Status status() const;

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
  absl::Status status() const;

 private:
  Mutex* mu_;
  bool held_;
};

}  // namespace accelcrypt::p11

#endif  // ACCELCRYPT_PKCS11_MODULE_LOCKING_H_
