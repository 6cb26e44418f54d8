// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_BACKENDS_PKCS11_CK_STATUS_H_
#define ACCELCRYPT_BACKENDS_PKCS11_CK_STATUS_H_

#include <p11-kit-1/p11-kit/pkcs11.h>

#include <string_view>

#include "absl/status/status.h"
#include "accelcrypt/backend.h"

namespace accelcrypt::pkcs11_client {

// FromCkRv is the only CK_RV-to-status mapping of the PKCS#11 client
// backend: token and device failures become kUnavailable or
// kResourceExhausted (the router falls back), CKR_SIGNATURE_INVALID and
// CKR_SIGNATURE_LEN_RANGE the auth-failed status, argument and data errors
// kInvalidArgument, an unsupported mechanism kUnimplemented. The message
// names `what` (the C_* call and algorithm) and the CKR_* name.
absl::Status FromCkRv(CK_RV rv, std::string_view what);

// AuthFailed returns kInvalidArgument carrying the detail ToAbi maps to
// ACCELCRYPT_ERR_AUTH_FAILED.
absl::Status AuthFailed(std::string_view what);

// CkRvName returns "CKR_PIN_INCORRECT" style names, or the hex value.
std::string CkRvName(CK_RV rv);

// ToAbi converts a status into an ABI code and writes the message into
// `err` (may be null).
accelcrypt_status ToAbi(const absl::Status& status, accelcrypt_error* err);

// WriteAbiError fills `err` with `code` and `message`; returns `code`.
accelcrypt_status WriteAbiError(accelcrypt_status code, std::string_view message,
                                accelcrypt_error* err);

}  // namespace accelcrypt::pkcs11_client

#endif  // ACCELCRYPT_BACKENDS_PKCS11_CK_STATUS_H_
