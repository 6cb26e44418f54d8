// SPDX-License-Identifier: Apache-2.0
// GHASH (SP 800-38D §6.4) with PCLMULQDQ over XMM registers: the table of
// powers of H (built lazily: only as far as a message reads it), and an
// 8-block aggregated update with Karatsuba products, reduced once per 8
// blocks. Carry-less multiplication only: no tables indexed by secret data.
#include <immintrin.h>

#include "backends/x86/internal/aes_leaf.h"
#include "backends/x86/internal/ghash_common.h"
#include "backends/x86/internal/target.h"

namespace accelcrypt::x86::internal {
namespace {

ACCELCRYPT_TARGET_AESNI inline __m128i LoadReflected(const uint8_t* p) {
  return _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)),
                          GhashByteReverse());
}

// StorePower writes the twisted H^k and, for k <= 16, its Karatsuba entry.
ACCELCRYPT_TARGET_AESNI inline void StorePower(GhashTable* t, int k,
                                               __m128i p) {
  _mm_store_si128(reinterpret_cast<__m128i*>(t->powers[kGhashPowers - k]), p);
  if (k <= kGhashKaratsubaPowers) {
    _mm_store_si128(
        reinterpret_cast<__m128i*>(t->karatsuba[kGhashKaratsubaPowers - k]),
        _mm_xor_si128(p, _mm_shuffle_epi32(p, 0x4e)));
  }
}

}  // namespace

ACCELCRYPT_TARGET_AESNI void GhashInitPclmul(const uint8_t h[16],
                                             GhashTable* out, int count) {
  StorePower(out, 1, GhashTwist(LoadReflected(h)));
  if (count > 1) GhashExtendPclmul(out, 1, count);
}

ACCELCRYPT_TARGET_AESNI void GhashExtendPclmul(GhashTable* t, int have,
                                               int want) {
  // Twisted entries multiply directly: (H^k / x) * H = H^(k+1) / x, and
  // GhashMul(a, H / x) is a * H.
  const __m128i h1 = GhashXmmPower(t, 1);
  __m128i p = _mm_load_si128(
      reinterpret_cast<const __m128i*>(t->powers[kGhashPowers - have]));
  for (int k = have + 1; k <= want; ++k) {
    p = GhashMul(p, h1);
    StorePower(t, k, p);
  }
}

ACCELCRYPT_TARGET_AESNI void GhashPclmul(const GhashTable* t, uint8_t xi[16],
                                         const uint8_t* data,
                                         size_t num_blocks) {
  __m128i x = LoadReflected(xi);
  // (X ^ b0)*H^8 ^ b1*H^7 ^ ... ^ b7*H: eight products, one reduction.
  __m128i h[kGhashXmmPowers], hk[kGhashXmmPowers];
  if (num_blocks >= kGhashXmmPowers) {
#pragma GCC unroll 8
    for (int i = 0; i < kGhashXmmPowers; ++i) {
      h[i] = GhashXmmPower(t, kGhashXmmPowers - i);
      hk[i] = GhashXmmKaratsuba(t, kGhashXmmPowers - i);
    }
  }
  for (; num_blocks >= kGhashXmmPowers;
       num_blocks -= kGhashXmmPowers, data += 16 * kGhashXmmPowers) {
    GhashAcc acc = GhashAccZero();
#pragma GCC unroll 8
    for (int i = 0; i < kGhashXmmPowers; ++i) {
      __m128i d = LoadReflected(data + 16 * i);
      if (i == 0) d = _mm_xor_si128(d, x);
      GhashMulAdd(&acc, d, h[i], hk[i]);
    }
    x = GhashFinish(acc);
  }
  if (num_blocks > 0) x = GhashXmmBlocks(t, x, data, num_blocks);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(xi),
                   _mm_shuffle_epi8(x, GhashByteReverse()));
}

}  // namespace accelcrypt::x86::internal
