// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_PROVIDER_PKEY_H_
#define ACCELCRYPT_PROVIDER_PKEY_H_

#include <openssl/core.h>

#include <vector>

#include "provider/provider_ctx.h"

namespace accelcrypt::provider {

// Dispatch tables of the RSA and DSA public-key algorithms. Keys are
// internal::PkeyKey objects holding core KeyMaterial; operations run through
// Router::NewPublicKeyOps.
extern const OSSL_DISPATCH kRsaKeymgmtFunctions[];
// RSA-PSS keys (id-RSASSA-PSS, with or without RSASSA-PSS-params
// restrictions); their operations are the RSA signature's.
extern const OSSL_DISPATCH kRsaPssKeymgmtFunctions[];
extern const OSSL_DISPATCH kDsaKeymgmtFunctions[];
extern const OSSL_DISPATCH kRsaSignatureFunctions[];
extern const OSSL_DISPATCH kDsaSignatureFunctions[];
extern const OSSL_DISPATCH kRsaAsymCipherFunctions[];

// AppendPkeyAlgorithms appends the RSA/DSA keymgmt, signature and asym
// cipher algorithms the router says to offer (Router::Interposes of
// ACCELCRYPT_ALG_RSA_SIGN, _RSA_CRYPT, _DSA_SIGN: a backend that wins, such
// as a token, serves them, or `interpose = all`) to the three arrays. Does
// not terminate them.
void AppendPkeyAlgorithms(ProvCtx& ctx, std::vector<OSSL_ALGORITHM>* keymgmt,
                          std::vector<OSSL_ALGORITHM>* signature,
                          std::vector<OSSL_ALGORITHM>* asym_cipher);

}  // namespace accelcrypt::provider

#endif  // ACCELCRYPT_PROVIDER_PKEY_H_
