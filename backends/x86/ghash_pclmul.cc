// SPDX-License-Identifier: Apache-2.0
// GHASH (SP 800-38D §6.4) with PCLMULQDQ over XMM registers: the table of
// powers of H, and a 4-block aggregated update reduced once per 4 blocks.
// Carry-less multiplication only: no tables indexed by secret data.
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

ACCELCRYPT_TARGET_AESNI inline __m128i Entry(const GhashTable* t, int i) {
  return _mm_load_si128(reinterpret_cast<const __m128i*>(t->powers[i]));
}

}  // namespace

ACCELCRYPT_TARGET_AESNI void GhashInitPclmul(const uint8_t h[16],
                                             GhashTable* out, int count) {
  const __m128i h1 = LoadReflected(h);
  const __m128i k1 = GhashTwist(h1);
  __m128i p = h1;
  for (int k = 1; k <= count; ++k) {
    if (k > 1) p = GhashMul(p, k1);
    _mm_store_si128(reinterpret_cast<__m128i*>(out->powers[kGhashPowers - k]),
                    GhashTwist(p));
  }
}

ACCELCRYPT_TARGET_AESNI void GhashPclmul(const GhashTable* t, uint8_t xi[16],
                                         const uint8_t* data,
                                         size_t num_blocks) {
  __m128i x = LoadReflected(xi);
  // (X ^ b0)*H^4 ^ b1*H^3 ^ b2*H^2 ^ b3*H: four products, one reduction.
  const __m128i h4 = Entry(t, kGhashPowers - 4),
                h3 = Entry(t, kGhashPowers - 3),
                h2 = Entry(t, kGhashPowers - 2),
                h1 = Entry(t, kGhashPowers - 1);
  for (; num_blocks >= 4; num_blocks -= 4, data += 64) {
    const __m128i b0 = _mm_xor_si128(LoadReflected(data), x);
    const __m128i b1 = LoadReflected(data + 16);
    const __m128i b2 = LoadReflected(data + 32);
    const __m128i b3 = LoadReflected(data + 48);
    __m128i lo =
        _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(b0, h4, 0x00),
                                    _mm_clmulepi64_si128(b1, h3, 0x00)),
                      _mm_xor_si128(_mm_clmulepi64_si128(b2, h2, 0x00),
                                    _mm_clmulepi64_si128(b3, h1, 0x00)));
    __m128i hi =
        _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(b0, h4, 0x11),
                                    _mm_clmulepi64_si128(b1, h3, 0x11)),
                      _mm_xor_si128(_mm_clmulepi64_si128(b2, h2, 0x11),
                                    _mm_clmulepi64_si128(b3, h1, 0x11)));
    __m128i mid = _mm_xor_si128(
        _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(b0, h4, 0x01),
                                    _mm_clmulepi64_si128(b0, h4, 0x10)),
                      _mm_xor_si128(_mm_clmulepi64_si128(b1, h3, 0x01),
                                    _mm_clmulepi64_si128(b1, h3, 0x10))),
        _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(b2, h2, 0x01),
                                    _mm_clmulepi64_si128(b2, h2, 0x10)),
                      _mm_xor_si128(_mm_clmulepi64_si128(b3, h1, 0x01),
                                    _mm_clmulepi64_si128(b3, h1, 0x10))));
    lo = _mm_xor_si128(lo, _mm_slli_si128(mid, 8));
    hi = _mm_xor_si128(hi, _mm_srli_si128(mid, 8));
    x = GhashReduce(hi, lo);
  }
  for (; num_blocks > 0; --num_blocks, data += 16) {
    x = GhashMul(_mm_xor_si128(x, LoadReflected(data)), h1);
  }
  _mm_storeu_si128(reinterpret_cast<__m128i*>(xi),
                   _mm_shuffle_epi8(x, GhashByteReverse()));
}

}  // namespace accelcrypt::x86::internal
