// SPDX-License-Identifier: Apache-2.0
#include "pkcs11/module/locking.h"

#include "pkcs11/common/ck_error.h"

namespace accelcrypt::p11 {

Mutex::Mutex(const AppLocking* app, Kind kind)
    : app_(app), exclusive_(kind == Kind::kExclusive) {
  if (app_ != nullptr && app_->create(&app_mutex_) != CKR_OK) {
    app_mutex_ = nullptr;
  }
}

Mutex::~Mutex() {
  if (app_ != nullptr && app_mutex_ != nullptr) app_->destroy(app_mutex_);
}

bool Mutex::AppLock() {
  return app_mutex_ != nullptr && app_->lock(app_mutex_) == CKR_OK;
}

void Mutex::AppUnlock() { app_->unlock(app_mutex_); }

absl::Status LockFailed() {
  return CkError(CKR_GENERAL_ERROR, "the application's mutex failed");
}

}  // namespace accelcrypt::p11
