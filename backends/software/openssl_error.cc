// SPDX-License-Identifier: Apache-2.0
#include "backends/software/openssl_error.h"

#include <openssl/err.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "accelcrypt/kit/openssl_errors.h"
#include "accelcrypt/kit/status.h"

namespace accelcrypt::software {

std::string DrainOpenSslErrors() {
  std::string out = kit::DrainOpenSslErrors();
  return out.empty() ? "no libcrypto error recorded" : out;
}

absl::Status LibcryptoError(absl::StatusCode code, absl::string_view alg,
                            absl::string_view what) {
  return absl::Status(code, absl::StrFormat("software: %s: %s: %s", alg, what,
                                            DrainOpenSslErrors()));
}

absl::Status AuthFailedError(absl::string_view alg) {
  // libcrypto's GCM final reports a mismatch by its return value; whatever it
  // queued is not the caller's business beyond "tag mismatch".
  ERR_clear_error();
  return kit::AuthFailedError(
      absl::StrFormat("software: %s: authentication tag mismatch", alg));
}

}  // namespace accelcrypt::software
