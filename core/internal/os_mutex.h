// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_CORE_INTERNAL_OS_MUTEX_H_
#define ACCELCRYPT_CORE_INTERNAL_OS_MUTEX_H_

#include <mutex>

#include "absl/base/thread_annotations.h"

namespace accelcrypt::internal {

// OsMutex is a std::mutex with Clang's thread-safety annotations, for the
// core's locks that threads really contend (a deferred backend's start).
// Not absl::Mutex: ThreadSanitizer sees a pthread mutex's ordering through
// its interceptors, but not absl::Mutex's where Abseil itself is not
// built with TSan (the system library CI's TSan stage links), and reports
// every access it guards as a race.
class ABSL_LOCKABLE OsMutex {
 public:
  OsMutex() = default;
  OsMutex(const OsMutex&) = delete;
  OsMutex& operator=(const OsMutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  bool TryLock() ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) {
    return mu_.try_lock();
  }

 private:
  std::mutex mu_;
};

// OsMutexLock holds an OsMutex for its scope.
class ABSL_SCOPED_LOCKABLE OsMutexLock {
 public:
  explicit OsMutexLock(OsMutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_->Lock();
  }
  ~OsMutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  OsMutexLock(const OsMutexLock&) = delete;
  OsMutexLock& operator=(const OsMutexLock&) = delete;

 private:
  OsMutex* const mu_;
};

}  // namespace accelcrypt::internal

#endif  // ACCELCRYPT_CORE_INTERNAL_OS_MUTEX_H_
