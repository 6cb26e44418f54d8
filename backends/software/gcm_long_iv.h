// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_BACKENDS_SOFTWARE_GCM_LONG_IV_H_
#define ACCELCRYPT_BACKENDS_SOFTWARE_GCM_LONG_IV_H_

#include <cstddef>
#include <cstdint>

namespace accelcrypt::software {

// GcmEquivalentIv maps a GCM IV of any length to a 16-byte IV that yields
// the same pre-counter block J0 under hash subkey `h` (= AES_K(0^128)), and
// so the same ciphertext and tag. OpenSSL keeps at most 128-byte IVs; the
// plugin ABI allows up to 1024 bytes, so longer IVs go through this mapping
// and the provider still does all the bulk work.
//
// NIST SP 800-38D section 7.1: J0 = IV || 0^31 || 1 for a 96-bit IV, else
// J0 = GHASH_H(IV || 0^(s+64) || [len(IV)]_64). A 16-byte IV' gives
// J0 = ((IV' * H) ^ L) * H with L = 0^64 || [128]_64, hence
// IV' = ((J0 * H^-1) ^ L) * H^-1. When H is zero every IV gives J0 = 0 and
// IV' = 0 serves. Constant time in `h` and the IV bytes (not in iv_len).
void GcmEquivalentIv(const uint8_t h[16], const uint8_t* iv, size_t iv_len,
                     uint8_t out[16]);

}  // namespace accelcrypt::software

#endif  // ACCELCRYPT_BACKENDS_SOFTWARE_GCM_LONG_IV_H_
