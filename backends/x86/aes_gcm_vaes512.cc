// SPDX-License-Identifier: Apache-2.0
// AES-GCM bulk data with VAES and VPCLMULQDQ over ZMM registers: 16 blocks
// per iteration, CTR32 keystream and GHASH in the same loop body so the
// out-of-order core overlaps the AES rounds with the carry-less multiplies.
// GHASH is aggregated: 16 blocks are multiplied by H^16..H^1 (precomputed,
// internal/ghash_common.h) and reduced once.
#include <immintrin.h>

#include "backends/x86/internal/aes_leaf.h"
#include "backends/x86/internal/ghash_common.h"
#include "backends/x86/internal/target.h"

namespace accelcrypt::x86::internal {
namespace {

ACCELCRYPT_TARGET_VAES512 inline __m512i Reverse16x4() {
  return _mm512_broadcast_i32x4(GhashByteReverse());
}

ACCELCRYPT_TARGET_VAES512 inline __m512i Swap32x4() {
  return _mm512_broadcast_i32x4(
      _mm_set_epi8(12, 13, 14, 15, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0));
}

ACCELCRYPT_TARGET_VAES512 inline __m128i Fold(__m512i v) {
  __m256i y = _mm256_xor_si256(_mm512_castsi512_si256(v),
                               _mm512_extracti64x4_epi64(v, 1));
  return _mm_xor_si128(_mm256_castsi256_si128(y),
                       _mm256_extracti128_si256(y, 1));
}

ACCELCRYPT_TARGET_VAES512 inline __mmask8 BlockMask(size_t n) {
  return n >= 4 ? static_cast<__mmask8>(0xff)
                : static_cast<__mmask8>((1u << (2 * n)) - 1);
}

// Accumulates the three partial products of reflected blocks `d` times
// twisted powers `h` (schoolbook: lo, hi and the two middle terms).
struct Acc {
  __m512i lo, hi, mid;
};

ACCELCRYPT_TARGET_VAES512 inline void MulAdd(Acc* acc, __m512i d, __m512i h) {
  acc->lo = _mm512_xor_si512(acc->lo, _mm512_clmulepi64_epi128(d, h, 0x00));
  acc->hi = _mm512_xor_si512(acc->hi, _mm512_clmulepi64_epi128(d, h, 0x11));
  acc->mid = _mm512_ternarylogic_epi64(
      acc->mid, _mm512_clmulepi64_epi128(d, h, 0x01),
      _mm512_clmulepi64_epi128(d, h, 0x10), 0x96);
}

ACCELCRYPT_TARGET_VAES512 inline __m128i Finish(const Acc& acc) {
  __m128i lo = Fold(acc.lo), hi = Fold(acc.hi), mid = Fold(acc.mid);
  lo = _mm_xor_si128(lo, _mm_slli_si128(mid, 8));
  hi = _mm_xor_si128(hi, _mm_srli_si128(mid, 8));
  return GhashReduce(hi, lo);
}

ACCELCRYPT_TARGET_VAES512 inline Acc ZeroAcc() {
  return Acc{_mm512_setzero_si512(), _mm512_setzero_si512(),
             _mm512_setzero_si512()};
}

// Ghash16 folds 16 blocks (already reflected) into x.
ACCELCRYPT_TARGET_VAES512 inline __m128i Ghash16(const __m512i* hp,
                                                 const __m512i* d, __m128i x) {
  Acc acc = ZeroAcc();
  MulAdd(&acc, _mm512_xor_si512(d[0], _mm512_zextsi128_si512(x)), hp[0]);
  MulAdd(&acc, d[1], hp[1]);
  MulAdd(&acc, d[2], hp[2]);
  MulAdd(&acc, d[3], hp[3]);
  return Finish(acc);
}

// GhashTail folds n (1..15) reflected blocks in d[0..ceil(n/4)), zero past
// n, into x with H^n..H^1.
ACCELCRYPT_TARGET_VAES512 inline __m128i GhashTail(const GhashTable* t,
                                                   const __m512i* d, size_t n,
                                                   __m128i x) {
  Acc acc = ZeroAcc();
  const uint8_t* first = t->powers[16 - n];
  for (size_t j = 0; 4 * j < n; ++j) {
    __m512i h = _mm512_maskz_loadu_epi64(BlockMask(n - 4 * j), first + 64 * j);
    __m512i dj = d[j];
    if (j == 0) dj = _mm512_xor_si512(dj, _mm512_zextsi128_si512(x));
    MulAdd(&acc, dj, h);
  }
  return Finish(acc);
}

template <int R>
ACCELCRYPT_TARGET_VAES512 inline void EncryptN(const __m512i* rk, __m512i* b,
                                               int n) {
  for (int i = 0; i < n; ++i) b[i] = _mm512_xor_si512(b[i], rk[0]);
#pragma GCC unroll 14
  for (int r = 1; r < R; ++r) {
    for (int i = 0; i < n; ++i) b[i] = _mm512_aesenc_epi128(b[i], rk[r]);
  }
  for (int i = 0; i < n; ++i) b[i] = _mm512_aesenclast_epi128(b[i], rk[R]);
}

template <int R, bool kDecrypt>
ACCELCRYPT_TARGET_VAES512 void Gcm(const AesRoundKeys* k, const GhashTable* t,
                                   uint8_t ctr[16], uint8_t xi[16],
                                   const uint8_t* in, uint8_t* out,
                                   size_t num_blocks) {
  __m512i rk[R + 1];
  for (int i = 0; i <= R; ++i) {
    rk[i] = _mm512_broadcast_i32x4(
        _mm_load_si128(reinterpret_cast<const __m128i*>(k->enc[i])));
  }
  __m512i hp[4];
  for (int i = 0; i < 4; ++i) hp[i] = _mm512_load_si512(t->powers[4 * i]);
  const __m512i rev = Reverse16x4();
  const __m512i swap = Swap32x4();
  __m128i x = _mm_shuffle_epi8(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(xi)),
      GhashByteReverse());
  const __m128i ctr_in = _mm_loadu_si128(reinterpret_cast<const __m128i*>(ctr));
  // Counter blocks with their last 32 bits byte-swapped: VPADDD then wraps
  // modulo 2^32 exactly as SP 800-38D's inc32.
  __m512i c = _mm512_add_epi32(
      _mm512_shuffle_epi8(_mm512_broadcast_i32x4(ctr_in), swap),
      _mm512_set_epi32(3, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0));
  const __m512i four =
      _mm512_set_epi32(4, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0);
  size_t left = num_blocks;
  for (; left >= 16; left -= 16) {
    __m512i b[4], d[4];
    for (int i = 0; i < 4; ++i) {
      b[i] = _mm512_shuffle_epi8(c, swap);
      c = _mm512_add_epi32(c, four);
    }
    if (kDecrypt) {
      for (int i = 0; i < 4; ++i) {
        d[i] = _mm512_loadu_si512(in + 64 * i);
      }
      EncryptN<R>(rk, b, 4);
      for (int i = 0; i < 4; ++i) {
        _mm512_storeu_si512(out + 64 * i, _mm512_xor_si512(b[i], d[i]));
        d[i] = _mm512_shuffle_epi8(d[i], rev);
      }
    } else {
      EncryptN<R>(rk, b, 4);
      for (int i = 0; i < 4; ++i) {
        d[i] = _mm512_xor_si512(b[i], _mm512_loadu_si512(in + 64 * i));
        _mm512_storeu_si512(out + 64 * i, d[i]);
        d[i] = _mm512_shuffle_epi8(d[i], rev);
      }
    }
    x = Ghash16(hp, d, x);
    in += 256;
    out += 256;
  }
  if (left > 0) {
    __m512i b[4], d[4];
    const int regs = static_cast<int>((left + 3) / 4);
    for (int i = 0; i < regs; ++i) {
      b[i] = _mm512_shuffle_epi8(c, swap);
      c = _mm512_add_epi32(c, four);
    }
    EncryptN<R>(rk, b, regs);
    for (int i = 0; i < regs; ++i) {
      const __mmask8 m = BlockMask(left - 4 * i);
      __m512i p = _mm512_maskz_loadu_epi64(m, in + 64 * i);
      __m512i o = _mm512_maskz_xor_epi64(m, b[i], p);
      _mm512_mask_storeu_epi64(out + 64 * i, m, o);
      d[i] = _mm512_shuffle_epi8(kDecrypt ? p : o, rev);
    }
    x = GhashTail(t, d, left, x);
  }
  _mm_storeu_si128(reinterpret_cast<__m128i*>(xi),
                   _mm_shuffle_epi8(x, GhashByteReverse()));
  const uint32_t next =
      ((static_cast<uint32_t>(ctr[12]) << 24) |
       (static_cast<uint32_t>(ctr[13]) << 16) |
       (static_cast<uint32_t>(ctr[14]) << 8) | ctr[15]) +
      static_cast<uint32_t>(num_blocks);
  ctr[12] = static_cast<uint8_t>(next >> 24);
  ctr[13] = static_cast<uint8_t>(next >> 16);
  ctr[14] = static_cast<uint8_t>(next >> 8);
  ctr[15] = static_cast<uint8_t>(next);
}

}  // namespace

void AesGcmEncryptVaes512(const AesRoundKeys* k, const GhashTable* t,
                          uint8_t ctr[16], uint8_t xi[16], const uint8_t* in,
                          uint8_t* out, size_t num_blocks) {
  switch (k->rounds) {
    case 10: return Gcm<10, false>(k, t, ctr, xi, in, out, num_blocks);
    case 12: return Gcm<12, false>(k, t, ctr, xi, in, out, num_blocks);
    default: return Gcm<14, false>(k, t, ctr, xi, in, out, num_blocks);
  }
}

void AesGcmDecryptVaes512(const AesRoundKeys* k, const GhashTable* t,
                          uint8_t ctr[16], uint8_t xi[16], const uint8_t* in,
                          uint8_t* out, size_t num_blocks) {
  switch (k->rounds) {
    case 10: return Gcm<10, true>(k, t, ctr, xi, in, out, num_blocks);
    case 12: return Gcm<12, true>(k, t, ctr, xi, in, out, num_blocks);
    default: return Gcm<14, true>(k, t, ctr, xi, in, out, num_blocks);
  }
}

ACCELCRYPT_TARGET_VAES512 void GhashVaes512(const GhashTable* t,
                                            uint8_t xi[16],
                                            const uint8_t* data,
                                            size_t num_blocks) {
  __m512i hp[4];
  for (int i = 0; i < 4; ++i) hp[i] = _mm512_load_si512(t->powers[4 * i]);
  const __m512i rev = Reverse16x4();
  __m128i x = _mm_shuffle_epi8(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(xi)),
      GhashByteReverse());
  for (; num_blocks >= 16; num_blocks -= 16, data += 256) {
    __m512i d[4];
    for (int i = 0; i < 4; ++i) {
      d[i] = _mm512_shuffle_epi8(_mm512_loadu_si512(data + 64 * i), rev);
    }
    x = Ghash16(hp, d, x);
  }
  if (num_blocks > 0) {
    __m512i d[4];
    for (size_t i = 0; 4 * i < num_blocks; ++i) {
      d[i] = _mm512_shuffle_epi8(
          _mm512_maskz_loadu_epi64(BlockMask(num_blocks - 4 * i),
                                   data + 64 * i),
          rev);
    }
    x = GhashTail(t, d, num_blocks, x);
  }
  _mm_storeu_si128(reinterpret_cast<__m128i*>(xi),
                   _mm_shuffle_epi8(x, GhashByteReverse()));
}

}  // namespace accelcrypt::x86::internal
