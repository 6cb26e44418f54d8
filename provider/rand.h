// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_PROVIDER_RAND_H_
#define ACCELCRYPT_PROVIDER_RAND_H_

#include <openssl/core.h>

#include <vector>

#include "provider/provider_ctx.h"

namespace accelcrypt::provider {

// AppendRandAlgorithms publishes the seed source "SEED-SRC" (alias
// "ACCELCRYPT-SEED-SRC") when the backend routed first for
// ACCELCRYPT_ALG_RNG_ENTROPY is a hardware noise source (Router::Interposes;
// not the software backend's getrandom), and nothing otherwise: OpenSSL then
// keeps seeding its DRBGs from the default provider's SEED-SRC. With
// `default_properties = ?provider=accelcrypt`, libcrypto's primary DRBG
// (the default provider's CTR-DRBG, whose AES-256-CTR is then ours) takes
// its seed from the accelerator's noise source. Does not terminate `out`.
void AppendRandAlgorithms(ProvCtx& ctx, std::vector<OSSL_ALGORITHM>* out);

}  // namespace accelcrypt::provider

#endif  // ACCELCRYPT_PROVIDER_RAND_H_
