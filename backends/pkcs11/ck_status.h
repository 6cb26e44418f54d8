// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_BACKENDS_PKCS11_CK_STATUS_H_
#define ACCELCRYPT_BACKENDS_PKCS11_CK_STATUS_H_

#include <p11-kit-1/p11-kit/pkcs11.h>

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "accelcrypt/backend.h"
#include "accelcrypt/kit/status.h"

namespace accelcrypt::pkcs11_client {

// FromCkRv is the only CK_RV-to-status mapping of the PKCS#11 client
// backend: token and device failures become kUnavailable or
// kResourceExhausted (the router falls back), CKR_SIGNATURE_INVALID and
// CKR_SIGNATURE_LEN_RANGE the auth-failed status, argument and data errors
// kInvalidArgument, an unsupported mechanism kUnimplemented. The message
// names `what` (the C_* call and algorithm) and the CKR_* name.
// CKR_BUFFER_TOO_SMALL is a device fault too: this backend checks the
// caller's buffer itself and always hands the token one of the largest
// size the call can produce (the modulus, 2q for DSA, or the size the
// token reported for an attribute).
absl::Status FromCkRv(CK_RV rv, std::string_view what);

// TokenQuirks are the known ways a token model reports a caller's error
// as a device fault, from the quirk table (ck_status.cc), keyed by
// CK_TOKEN_INFO's manufacturerID and model (unpadded).
struct TokenQuirks {
  // C_Decrypt with CKM_RSA_PKCS or CKM_RSA_PKCS_OAEP answers a ciphertext
  // whose padding does not check with CKR_GENERAL_ERROR (v2.40 5.9.2 says
  // CKR_ENCRYPTED_DATA_INVALID). With it, that answer is the caller's bad
  // ciphertext: no fallback, which would make the token's padding check an
  // oracle for timing (a fallback takes far longer) or turn the failure
  // into a result (a backend with implicit rejection).
  bool decrypt_failure_is_general_error = false;
  // Names of the quirks set, comma-separated ("" for none), for Describe.
  std::string names;
};
TokenQuirks QuirksFor(std::string_view manufacturer, std::string_view model);

// AuthFailed is the kit's authentication failure (accelcrypt/kit/status.h)
// for a signature that does not verify.
absl::Status AuthFailed(std::string_view what);

// CkRvName returns "CKR_PIN_INCORRECT" style names, or the hex value.
std::string CkRvName(CK_RV rv);

// The kit's ToAbi and WriteAbiError, under this backend's namespace.
using kit::ToAbi;
using kit::WriteAbiError;

}  // namespace accelcrypt::pkcs11_client

#endif  // ACCELCRYPT_BACKENDS_PKCS11_CK_STATUS_H_
