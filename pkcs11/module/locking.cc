// SPDX-License-Identifier: Apache-2.0
#include "pkcs11/module/locking.h"

#include "pkcs11/common/ck_error.h"

namespace accelcrypt::p11 {

Mutex::Mutex(const AppLocking* app) : app_(app) {
  if (app_ != nullptr && app_->create(&app_mutex_) != CKR_OK) {
    app_mutex_ = nullptr;
  }
}

Mutex::~Mutex() {
  if (app_ != nullptr && app_mutex_ != nullptr) app_->destroy(app_mutex_);
}

bool Mutex::Lock() {
  if (app_ == nullptr) {
    os_.lock();
    return true;
  }
  return app_mutex_ != nullptr && app_->lock(app_mutex_) == CKR_OK;
}

void Mutex::Unlock() {
  if (app_ == nullptr) {
    os_.unlock();
    return;
  }
  app_->unlock(app_mutex_);
}

bool Mutex::ReaderLock() {
  if (app_ == nullptr) {
    os_.lock_shared();
    return true;
  }
  return Lock();
}

void Mutex::ReaderUnlock() {
  if (app_ == nullptr) {
    os_.unlock_shared();
    return;
  }
  Unlock();
}

absl::Status MutexLock::status() const {
  if (held_) return absl::OkStatus();
  return CkError(CKR_GENERAL_ERROR, "the application's mutex failed");
}

absl::Status ReaderMutexLock::status() const {
  if (held_) return absl::OkStatus();
  return CkError(CKR_GENERAL_ERROR, "the application's mutex failed");
}

}  // namespace accelcrypt::p11
