// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_PKCS11_COMMON_CK_ERROR_H_
#define ACCELCRYPT_PKCS11_COMMON_CK_ERROR_H_

#include <p11-kit-1/p11-kit/pkcs11.h>

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace accelcrypt::p11 {

// CkError returns a status that carries the exact CK_RV `rv` (as a payload)
// with a message for logs. Every layer of the module that knows the precise
// PKCS#11 answer (CKR_PIN_LOCKED, CKR_KEY_HANDLE_INVALID, ...) says it this
// way; the status code is chosen to match (kInvalidArgument for argument
// and data errors, kPermissionDenied for PIN and login errors, kNotFound
// for invalid handles, kFailedPrecondition for state errors, kUnimplemented
// for unsupported functions and mechanisms, kInternal otherwise).
// `rv` must not be CKR_OK.
absl::Status CkError(CK_RV rv, std::string_view message);

// ToCkRv is the module's one status-to-CK_RV mapping: the payload of
// CkError when present; otherwise by code (kInvalidArgument ->
// CKR_ARGUMENTS_BAD, an auth-failed core status (core/status.h) ->
// CKR_ENCRYPTED_DATA_INVALID, kOutOfRange -> CKR_BUFFER_TOO_SMALL,
// kUnimplemented -> CKR_FUNCTION_NOT_SUPPORTED, kNotFound ->
// CKR_OBJECT_HANDLE_INVALID, kPermissionDenied -> CKR_USER_NOT_LOGGED_IN,
// kFailedPrecondition -> CKR_OPERATION_ACTIVE... see ck_error.cc for the
// table; device errors -> CKR_DEVICE_ERROR, kResourceExhausted (memory) ->
// CKR_HOST_MEMORY, everything else -> CKR_GENERAL_ERROR). OK -> CKR_OK.
CK_RV ToCkRv(const absl::Status& status);

// CkRvName returns "CKR_PIN_INCORRECT" style names, or "CKR_0x..." for
// values it does not know.
std::string CkRvName(CK_RV rv);

}  // namespace accelcrypt::p11

#endif  // ACCELCRYPT_PKCS11_COMMON_CK_ERROR_H_
