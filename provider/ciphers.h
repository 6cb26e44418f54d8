// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_PROVIDER_CIPHERS_H_
#define ACCELCRYPT_PROVIDER_CIPHERS_H_

#include <openssl/core.h>

#include <vector>

#include "absl/status/status.h"
#include "provider/provider_ctx.h"

namespace accelcrypt::provider {

// AppendCipherAlgorithms appends one OSSL_ALGORITHM per cipher row of the
// identity table that the router says to offer (Router::Interposes; names from
// AlgorithmInfo::openssl_names, property "provider=accelcrypt") to `out`.
// Does not terminate the array. kInternal if the identity table outgrew
// kMaxAlgorithms.
absl::Status AppendCipherAlgorithms(ProvCtx& ctx,
                                    std::vector<OSSL_ALGORITHM>* out);

}  // namespace accelcrypt::provider

#endif  // ACCELCRYPT_PROVIDER_CIPHERS_H_
