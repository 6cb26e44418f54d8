// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_PKCS11_MODULE_GUARD_H_
#define ACCELCRYPT_PKCS11_MODULE_GUARD_H_

#include <p11-kit-1/p11-kit/pkcs11.h>

#include <exception>
#include <new>

#include "absl/status/status.h"
#include "pkcs11/common/ck_error.h"

namespace accelcrypt::p11 {

// Guard runs one C_* body: `body` returns an absl::Status, converted with
// ToCkRv (the module's only status-to-CK_RV mapping). No exception leaves
// the module: std::bad_alloc is CKR_HOST_MEMORY, anything else
// CKR_GENERAL_ERROR (STYLE.md section 3).
template <typename Body>
CK_RV Guard(Body&& body) noexcept {
  try {
    return ToCkRv(body());
  } catch (const std::bad_alloc&) {
    return CKR_HOST_MEMORY;
  } catch (...) {
    return CKR_GENERAL_ERROR;
  }
}

}  // namespace accelcrypt::p11

#endif  // ACCELCRYPT_PKCS11_MODULE_GUARD_H_
