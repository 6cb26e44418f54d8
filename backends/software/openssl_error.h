// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_BACKENDS_SOFTWARE_OPENSSL_ERROR_H_
#define ACCELCRYPT_BACKENDS_SOFTWARE_OPENSSL_ERROR_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace accelcrypt::software {

// DrainOpenSslErrors pops every entry of this thread's libcrypto error queue
// and returns them as one line (most recent last), or "no libcrypto error
// recorded" when the queue was empty. The queue is empty afterwards.
std::string DrainOpenSslErrors();

// LibcryptoError returns a status with `code` whose message is
// "software: <alg>: <what>: <drained queue>". Clears the error queue.
absl::Status LibcryptoError(absl::StatusCode code, absl::string_view alg,
                            absl::string_view what);

// AuthFailedError returns the status for an AEAD tag mismatch, the kit's
// (accelcrypt/kit/status.h: kInvalidArgument, a caller error never
// retried, that the kit's ToAbi sends as ACCELCRYPT_ERR_AUTH_FAILED).
// Clears the error queue.
absl::Status AuthFailedError(absl::string_view alg);

}  // namespace accelcrypt::software

#endif  // ACCELCRYPT_BACKENDS_SOFTWARE_OPENSSL_ERROR_H_
