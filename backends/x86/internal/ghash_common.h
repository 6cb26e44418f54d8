// SPDX-License-Identifier: Apache-2.0
// GHASH field arithmetic and counter helpers shared by the leaf files
// (header-only, `static inline`, compiled with the includer's target).
//
// Representation: a GCM block is byte-reversed into an XMM register, so bit
// 127 holds the coefficient of x^0 and bit 0 that of x^127 ("reflected").
// The carry-less product of two reflected values, read as a reflected 256-bit
// value, is x*a*b; the table therefore stores each power of H divided by x
// ("twisted"), and a product with a table entry is exactly a*H^k. Reduction
// modulo g = x^128 + x^7 + x^2 + x + 1 adds multiples of g's reflection in
// two 64-bit folds by the constant 0xc2 << 56 (bits 57, 62, 63), as in
// Gueron and Kounavis, "Intel Carry-Less Multiplication Instruction and its
// Usage for Computing the GCM Mode", rev. 2.02, algorithm 5 variant.
#ifndef ACCELCRYPT_BACKENDS_X86_INTERNAL_GHASH_COMMON_H_
#define ACCELCRYPT_BACKENDS_X86_INTERNAL_GHASH_COMMON_H_

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/x86/internal/aes_leaf.h"
#include "backends/x86/internal/target.h"

namespace accelcrypt::x86::internal {

ACCELCRYPT_TARGET_AESNI static inline __m128i GhashByteReverse() {
  return _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}

ACCELCRYPT_TARGET_AESNI static inline __m128i GhashPoly() {
  return _mm_set_epi64x(0, static_cast<long long>(0xc200000000000000ull));
}

// GhashReduce maps the 256-bit reflected product hi:lo to 128 bits.
ACCELCRYPT_TARGET_AESNI static inline __m128i GhashReduce(__m128i hi,
                                                          __m128i lo) {
  const __m128i poly = GhashPoly();
  __m128i u = _mm_xor_si128(_mm_clmulepi64_si128(lo, poly, 0x00),
                            _mm_shuffle_epi32(lo, 0x4e));
  return _mm_xor_si128(hi, _mm_xor_si128(_mm_clmulepi64_si128(u, poly, 0x00),
                                         _mm_shuffle_epi32(u, 0x4e)));
}

// GhashMul returns a*H for a reflected `a` and a twisted table entry `h`.
ACCELCRYPT_TARGET_AESNI static inline __m128i GhashMul(__m128i a, __m128i h) {
  __m128i lo = _mm_clmulepi64_si128(a, h, 0x00);
  __m128i hi = _mm_clmulepi64_si128(a, h, 0x11);
  __m128i mid = _mm_xor_si128(_mm_clmulepi64_si128(a, h, 0x01),
                              _mm_clmulepi64_si128(a, h, 0x10));
  lo = _mm_xor_si128(lo, _mm_slli_si128(mid, 8));
  hi = _mm_xor_si128(hi, _mm_srli_si128(mid, 8));
  return GhashReduce(hi, lo);
}

// GhashAcc holds unreduced Karatsuba sums of products of reflected blocks
// with twisted powers: lo = sum a.lo*h.lo, hi = sum a.hi*h.hi and
// mid = sum (a.lo^a.hi)*(h.lo^h.hi); GhashFinish recovers the middle term
// (mid ^ lo ^ hi) once for all the blocks and reduces once.
struct GhashAcc {
  __m128i lo, hi, mid;
};

ACCELCRYPT_TARGET_AESNI static inline GhashAcc GhashAccZero() {
  return GhashAcc{_mm_setzero_si128(), _mm_setzero_si128(),
                  _mm_setzero_si128()};
}

// GhashMulAdd adds a*h to `acc` with three PCLMULQDQ: `hk` holds
// h.lo ^ h.hi in its low 64 bits (the table's Karatsuba entry).
ACCELCRYPT_TARGET_AESNI static inline void GhashMulAdd(GhashAcc* acc, __m128i a,
                                                       __m128i h, __m128i hk) {
  acc->lo = _mm_xor_si128(acc->lo, _mm_clmulepi64_si128(a, h, 0x00));
  acc->hi = _mm_xor_si128(acc->hi, _mm_clmulepi64_si128(a, h, 0x11));
  const __m128i am = _mm_xor_si128(a, _mm_shuffle_epi32(a, 0x4e));
  acc->mid = _mm_xor_si128(acc->mid, _mm_clmulepi64_si128(am, hk, 0x00));
  // Pins the running sums: without it the compiler re-associates a loop
  // body's XOR chains into trees after the last product, parking every
  // product in a stack slot until then.
  __asm__("" : "+x"(acc->lo), "+x"(acc->hi), "+x"(acc->mid));
}

ACCELCRYPT_TARGET_AESNI static inline __m128i GhashFinish(const GhashAcc& acc) {
  const __m128i mid = _mm_xor_si128(acc.mid, _mm_xor_si128(acc.lo, acc.hi));
  return GhashReduce(_mm_xor_si128(acc.hi, _mm_srli_si128(mid, 8)),
                     _mm_xor_si128(acc.lo, _mm_slli_si128(mid, 8)));
}

// GhashXmmPower and GhashXmmKaratsuba load H^k (1 <= k <= 8) and its
// Karatsuba entry.
ACCELCRYPT_TARGET_AESNI static inline __m128i GhashXmmPower(const GhashTable* t,
                                                            int k) {
  return _mm_load_si128(
      reinterpret_cast<const __m128i*>(t->powers[kGhashPowers - k]));
}

ACCELCRYPT_TARGET_AESNI static inline __m128i GhashXmmKaratsuba(
    const GhashTable* t, int k) {
  return _mm_load_si128(reinterpret_cast<const __m128i*>(
      t->karatsuba[kGhashKaratsubaPowers - k]));
}

// GhashXmmBlocks folds n (1..8) blocks at `data` (GCM byte order) into the
// reflected x: (x ^ d0)*H^n ^ d1*H^(n-1) ^ ... ^ d(n-1)*H, one reduction.
ACCELCRYPT_TARGET_AESNI static inline __m128i GhashXmmBlocks(
    const GhashTable* t, __m128i x, const uint8_t* data, size_t n) {
  const __m128i rev = GhashByteReverse();
  GhashAcc acc = GhashAccZero();
  for (size_t i = 0; i < n; ++i) {
    __m128i d = _mm_shuffle_epi8(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + 16 * i)), rev);
    if (i == 0) d = _mm_xor_si128(d, x);
    const int k = static_cast<int>(n - i);
    GhashMulAdd(&acc, d, GhashXmmPower(t, k), GhashXmmKaratsuba(t, k));
  }
  return GhashFinish(acc);
}

// GhashTwist divides a reflected value by x: a left shift by one bit, and
// when x^0's coefficient falls out, x^-1 = x^127 + x^6 + x + 1 is added back
// (reflected: bits 0, 121, 126, 127). Branch-free.
ACCELCRYPT_TARGET_AESNI static inline __m128i GhashTwist(__m128i a) {
  __m128i carry = _mm_srli_epi64(a, 63);
  __m128i shifted =
      _mm_or_si128(_mm_slli_epi64(a, 1), _mm_slli_si128(carry, 8));
  __m128i top = _mm_shuffle_epi32(carry, 0xee);  // bit 127 in both qwords
  __m128i mask = _mm_sub_epi64(_mm_setzero_si128(), top);
  const __m128i xinv =
      _mm_set_epi64x(static_cast<long long>(0xc200000000000000ull), 1);
  return _mm_xor_si128(shifted, _mm_and_si128(mask, xinv));
}

// AdvanceCounter128 adds n to a big-endian 128-bit counter with a single
// 16-byte store, so the next call's 16-byte load is store-forwarded.
ACCELCRYPT_TARGET_AESNI static inline void AdvanceCounter128(uint8_t ctr[16],
                                                             size_t n) {
  const __m128i rev = GhashByteReverse();
  const __m128i le = _mm_shuffle_epi8(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(ctr)), rev);
  const uint64_t lo = static_cast<uint64_t>(_mm_cvtsi128_si64(le));
  uint64_t hi = static_cast<uint64_t>(_mm_extract_epi64(le, 1));
  const uint64_t next = lo + n;
  hi += next < lo;
  _mm_storeu_si128(
      reinterpret_cast<__m128i*>(ctr),
      _mm_shuffle_epi8(_mm_set_epi64x(static_cast<long long>(hi),
                                      static_cast<long long>(next)),
                       rev));
}

// AdvanceCounter32 adds n to the last 32 bits (big-endian, modulo 2^32) of
// a GCM counter block with a single 16-byte store.
ACCELCRYPT_TARGET_AESNI static inline void AdvanceCounter32(uint8_t ctr[16],
                                                            size_t n) {
  const __m128i swap =
      _mm_set_epi8(12, 13, 14, 15, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  const __m128i c = _mm_shuffle_epi8(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(ctr)), swap);
  _mm_storeu_si128(
      reinterpret_cast<__m128i*>(ctr),
      _mm_shuffle_epi8(
          _mm_add_epi32(c, _mm_set_epi32(static_cast<int>(n), 0, 0, 0)), swap));
}

}  // namespace accelcrypt::x86::internal

#endif  // ACCELCRYPT_BACKENDS_X86_INTERNAL_GHASH_COMMON_H_
