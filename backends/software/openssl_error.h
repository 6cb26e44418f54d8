// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_BACKENDS_SOFTWARE_OPENSSL_ERROR_H_
#define ACCELCRYPT_BACKENDS_SOFTWARE_OPENSSL_ERROR_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "accelcrypt/backend.h"

namespace accelcrypt::software {

// DrainOpenSslErrors pops every entry of this thread's libcrypto error queue
// and returns them as one line (most recent last), or "no libcrypto error
// recorded" when the queue was empty. The queue is empty afterwards.
std::string DrainOpenSslErrors();

// LibcryptoError returns a status with `code` whose message is
// "software: <alg>: <what>: <drained queue>". Clears the error queue.
absl::Status LibcryptoError(absl::StatusCode code, absl::string_view alg,
                            absl::string_view what);

// AuthFailedError returns the status for an AEAD tag mismatch: code
// kInvalidArgument (a caller error, never retried) carrying a detail that
// ToAbi maps to ACCELCRYPT_ERR_AUTH_FAILED. Clears the error queue.
absl::Status AuthFailedError(absl::string_view alg);

// ToAbi converts `status` to a plugin-ABI code and, when `err` is not null
// and the status is an error, writes the code and the (truncated) message
// into it. Writes nothing on success.
accelcrypt_status ToAbi(const absl::Status& status, accelcrypt_error* err);

// WriteAbiError fills `err` (may be null) with `code` and `message` and
// returns `code`. For the shims' catch blocks, where no Status exists.
accelcrypt_status WriteAbiError(accelcrypt_status code,
                                absl::string_view message,
                                accelcrypt_error* err);

}  // namespace accelcrypt::software

#endif  // ACCELCRYPT_BACKENDS_SOFTWARE_OPENSSL_ERROR_H_
