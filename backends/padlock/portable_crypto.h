// SPDX-License-Identifier: Apache-2.0
//
// Portable pieces of the PadLock backend that the hardware does not do: AES
// key expansion straight into PadLock byte order (facts §2.4), GHASH for GCM
// (NIST SP 800-38D §6.4) and SHA-1/SHA-256 compression for the C7 path,
// which has no PHE block mode (facts §3.5). Everything here is
// constant-time: no table is indexed by secret data, no branch depends on it.
#ifndef ACCELCRYPT_BACKENDS_PADLOCK_PORTABLE_CRYPTO_H_
#define ACCELCRYPT_BACKENDS_PADLOCK_PORTABLE_CRYPTO_H_

#include <stddef.h>
#include <stdint.h>

namespace accelcrypt::padlock {

// ExpandAesKey writes the 4*(rounds+1) round-key words of `key` (16, 24 or
// 32 bytes) into `out` (at least 240 bytes) in PadLock order: each word's
// memory bytes are FIPS-197's w[i]. With `decrypt`, writes the equivalent
// inverse cipher schedule instead (FIPS-197 §5.3.5): round keys reversed,
// InvMixColumns applied to rounds 1..Nr-1. Returns the round count.
int ExpandAesKey(const uint8_t* key, size_t key_len, bool decrypt,
                 uint8_t* out);

// GhashMul sets x = x * h in GF(2^128) with GCM's bit order.
void GhashMul(uint8_t x[16], const uint8_t h[16]);

// Sha1Compress/Sha256Compress absorb `num_blocks` 64-byte blocks into
// `state` (5 or 8 host-order words, the PHE state layout).
void Sha1Compress(uint32_t state[5], const uint8_t* in, size_t num_blocks);
void Sha256Compress(uint32_t state[8], const uint8_t* in, size_t num_blocks);

// SecureZero wipes memory in a way the compiler keeps.
void SecureZero(void* p, size_t len);

// ConstantTimeEqual compares without an early exit; true when equal.
bool ConstantTimeEqual(const uint8_t* a, const uint8_t* b, size_t len);

}  // namespace accelcrypt::padlock

#endif  // ACCELCRYPT_BACKENDS_PADLOCK_PORTABLE_CRYPTO_H_
