// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_PROVIDER_INTERNAL_CIPHER_GCM_H_
#define ACCELCRYPT_PROVIDER_INTERNAL_CIPHER_GCM_H_

#include <openssl/core.h>

#include <cstddef>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "provider/internal/cipher_ctx.h"

namespace accelcrypt::provider::internal {

// AES-GCM with OpenSSL 3.0 default-provider semantics
// (ciphercommon_gcm.c): the IV is buffered until the first update, a
// decrypting context needs the tag before final, a spent IV refuses more
// data, and libssl's TLS 1.2 record mode (RFC 5288) is served in place.

// GcmInit takes key and/or IV (either may be NULL).
absl::Status GcmInit(CipherCtx& ctx, const unsigned char* key, size_t keylen,
                     const unsigned char* iv, size_t ivlen);

// GcmSetParam applies `p` when it is a GCM parameter (tag, IV length, TLS
// AAD / fixed IV / invocation field); other keys are left alone.
absl::Status GcmSetParam(CipherCtx& ctx, const OSSL_PARAM* p);

// GcmGetCtxParams answers GCM's gettable parameters. Returns false (no
// error raised) where OpenSSL's GCM also fails silently: asking for the IV
// before one exists.
absl::StatusOr<bool> GcmGetCtxParams(CipherCtx& ctx, OSSL_PARAM params[]);

// GcmGetOneSize answers a request for exactly one native size_t, the key
// or IV length (what EVP asks on every init), and returns true; returns
// false, touching nothing, for any other request (GcmGetCtxParams answers
// those). No Status, no walk over GCM's other keys.
bool GcmGetOneSize(const CipherCtx& ctx, OSSL_PARAM params[]);

// GcmSetOneIvLen applies a request holding exactly one native size_t IV
// length within 1..kMaxGcmIvLen (EVP_CTRL_AEAD_SET_IVLEN, once per
// message) as GcmSetParam would, and returns true; returns false, touching
// nothing, for anything else (including values GcmSetParam refuses).
bool GcmSetOneIvLen(CipherCtx& ctx, const OSSL_PARAM params[]);

// GcmCipher is OpenSSL's gcm_cipher_internal: in == NULL finishes, out ==
// NULL feeds AAD, otherwise data; a TLS record when a TLS AAD was set.
absl::Status GcmCipher(CipherCtx& ctx, unsigned char* out, size_t* outl,
                       size_t outsize, const unsigned char* in, size_t inl);

}  // namespace accelcrypt::provider::internal

#endif  // ACCELCRYPT_PROVIDER_INTERNAL_CIPHER_GCM_H_
