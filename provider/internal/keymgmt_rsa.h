// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_PROVIDER_INTERNAL_KEYMGMT_RSA_H_
#define ACCELCRYPT_PROVIDER_INTERNAL_KEYMGMT_RSA_H_

#include <openssl/core.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "provider/internal/keymgmt_common.h"
#include "provider/internal/pkey_key.h"
#include "provider/provider_ctx.h"

namespace accelcrypt::provider::internal {

// RsaKeyFormat is the RSA key layout (n, e, d, p, q, dP, dQ, qInv) shared by
// the RSA and RSA-PSS keymgmt. Static.
const KeyFormat& RsaKeyFormat();

// RsaGenParams reads the RSA keygen parameters (bits, primes, e) present in
// `params` into `bits` and `e`; kInvalidArgument for a malformed value or a
// multi-prime request.
absl::Status RsaGenParams(const OSSL_PARAM params[], size_t* bits,
                          std::vector<uint8_t>* e);

// GenerateRsaKey makes a two-prime RSA key of `bits` bits and public
// exponent `e` with libcrypto in the provider's private library context.
// The caller owns the returned reference (PkeyKey::Unref).
absl::StatusOr<PkeyKey*> GenerateRsaKey(ProvCtx* prov, size_t bits,
                                        const std::vector<uint8_t>& e);

}  // namespace accelcrypt::provider::internal

#endif  // ACCELCRYPT_PROVIDER_INTERNAL_KEYMGMT_RSA_H_
