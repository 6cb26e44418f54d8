// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_PROVIDER_DIGESTS_H_
#define ACCELCRYPT_PROVIDER_DIGESTS_H_

#include <openssl/core.h>

#include <vector>

#include "absl/status/status.h"
#include "provider/provider_ctx.h"

namespace accelcrypt::provider {

// AppendDigestAlgorithms appends one OSSL_ALGORITHM per digest row of the
// identity table that the router says to offer (Router::Interposes; SHA-1,
// SHA-224 ... SHA-512 with OpenSSL's aliases) to `out`. Does not terminate the
// array. kInternal if the identity table outgrew kMaxAlgorithms.
absl::Status AppendDigestAlgorithms(ProvCtx& ctx,
                                    std::vector<OSSL_ALGORITHM>* out);

}  // namespace accelcrypt::provider

#endif  // ACCELCRYPT_PROVIDER_DIGESTS_H_
