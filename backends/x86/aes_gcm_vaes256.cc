// SPDX-License-Identifier: Apache-2.0
// AES-GCM bulk data with VAES and VPCLMULQDQ over YMM registers (VEX only: no
// AVX-512 instruction, no opmask), for CPUs such as AMD Zen 3 and Intel
// client parts. 16 blocks per iteration in 8 registers: the CTR32 rounds and
// the GHASH products of 16 ciphertext blocks share one loop body (inline
// assembly, see EncryptAndHash), and GHASH is aggregated: the 16 blocks are
// multiplied by H^16..H^1 (or, the first 16 of 32, by H^32..H^17;
// Karatsuba), the running hash x folded into the first, and reduced once
// per 32 blocks (16 when alone), during the next iteration's first rounds.
#include <immintrin.h>
#include <string.h>

#include "backends/x86/internal/aes_leaf.h"
#include "backends/x86/internal/ghash_common.h"
#include "backends/x86/internal/target.h"

namespace accelcrypt::x86::internal {
namespace {

constexpr int kRegs = 8;            // YMM registers of blocks in flight
constexpr int kBlocks = 2 * kRegs;  // 16 blocks per iteration
constexpr int kFirst = kGhashPowers - kBlocks;  // index of H^16

ACCELCRYPT_TARGET_VAES256 inline __m256i Bcast(__m128i v) {
  return _mm256_broadcastsi128_si256(v);
}

ACCELCRYPT_TARGET_VAES256 inline __m256i Swap32x2() {
  return Bcast(
      _mm_set_epi8(12, 13, 14, 15, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0));
}

ACCELCRYPT_TARGET_VAES256 inline __m128i Fold(__m256i v) {
  return _mm_xor_si128(_mm256_castsi256_si128(v),
                       _mm256_extracti128_si256(v, 1));
}

// Keys256 reads round key r broadcast to both lanes from the schedule at
// each use (VBROADCASTI128 is a plain load): 11..15 broadcast keys held in
// registers next to 8 block registers, 3 sums and the GHASH operands are
// more than 16 YMM registers, and the compiler then spills and reloads
// blocks and sums instead.
struct Keys256 {
  const uint8_t (*enc)[16];
  ACCELCRYPT_TARGET_VAES256 __m256i operator[](int r) const {
    return Bcast(_mm_load_si128(reinterpret_cast<const __m128i*>(enc[r])));
  }
};

// Unreduced Karatsuba sums of reflected blocks times twisted powers (as
// GhashAcc in ghash_common.h, two blocks per register): the middle term is
// recovered once, in FinishAcc.
struct Acc {
  __m256i lo, hi, mid;
};

ACCELCRYPT_TARGET_VAES256 inline Acc ZeroAcc() {
  return Acc{_mm256_setzero_si256(), _mm256_setzero_si256(),
             _mm256_setzero_si256()};
}

// MulAdd adds the products of d and h (hk: h's Karatsuba entries) to the
// sums, three VPCLMULQDQ per register. The empty asm pins the running sums:
// without it the compiler re-associates the XOR chains of a whole
// iteration into trees evaluated after the last product, and every product
// waits in a stack slot until then.
ACCELCRYPT_TARGET_VAES256 inline void MulAdd(Acc* acc, __m256i d, __m256i h,
                                             __m256i hk) {
  acc->lo = _mm256_xor_si256(acc->lo, _mm256_clmulepi64_epi128(d, h, 0x00));
  acc->hi = _mm256_xor_si256(acc->hi, _mm256_clmulepi64_epi128(d, h, 0x11));
  const __m256i dm = _mm256_xor_si256(d, _mm256_shuffle_epi32(d, 0x4e));
  acc->mid = _mm256_xor_si256(acc->mid, _mm256_clmulepi64_epi128(dm, hk, 0x00));
  __asm__("" : "+x"(acc->lo), "+x"(acc->hi), "+x"(acc->mid));
}

ACCELCRYPT_TARGET_VAES256 inline __m256i Power(const GhashTable* t, int i) {
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(t->powers[i]));
}

// Karatsuba entries of powers[i] and powers[i + 1] (i even, >= kFirst).
ACCELCRYPT_TARGET_VAES256 inline __m256i PowerK(const GhashTable* t, int i) {
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(
      t->karatsuba[i - (kGhashPowers - kGhashKaratsubaPowers)]));
}

// MulAddPower adds d times table entries i, i + 1.
ACCELCRYPT_TARGET_VAES256 inline void MulAddPower(Acc* acc, __m256i d,
                                                  const GhashTable* t, int i) {
  MulAdd(acc, d, Power(t, i), PowerK(t, i));
}

// FinishAcc recovers the middle terms (mid ^ lo ^ hi), splits them into
// both halves per lane (VPSLLDQ and VPSRLDQ shift within each 128-bit
// lane), folds the two lanes and reduces.
ACCELCRYPT_TARGET_VAES256 inline __m128i FinishAcc(const Acc& acc) {
  const __m256i mid =
      _mm256_xor_si256(acc.mid, _mm256_xor_si256(acc.lo, acc.hi));
  const __m256i lo = _mm256_xor_si256(acc.lo, _mm256_bslli_epi128(mid, 8));
  const __m256i hi = _mm256_xor_si256(acc.hi, _mm256_bsrli_epi128(mid, 8));
  return GhashReduce(Fold(hi), Fold(lo));
}

// GhashFull folds 16 reflected blocks into x.
ACCELCRYPT_TARGET_VAES256 inline __m128i GhashFull(const GhashTable* t,
                                                   const __m256i* d,
                                                   __m128i x) {
  Acc acc = ZeroAcc();
#pragma GCC unroll 8
  for (int i = 0; i < kRegs; ++i) {
    const __m256i di =
        i == 0 ? _mm256_xor_si256(d[0], _mm256_zextsi128_si256(x)) : d[i];
    MulAddPower(&acc, di, t, kFirst + 2 * i);
  }
  return FinishAcc(acc);
}

// GhashShort folds n (1..16) blocks at `data` (GCM byte order) into x with
// H^n..H^1. An odd count is padded with a zero block in front, multiplied by
// H^(n+1): its product is zero, and the pairs stay aligned with the table.
ACCELCRYPT_TARGET_VAES256 inline __m128i GhashShort(const GhashTable* t,
                                                    const uint8_t* data,
                                                    size_t n, __m128i x) {
  const __m256i rev = Bcast(GhashByteReverse());
  alignas(32) uint8_t buf[16 * (kBlocks + 1)];
  const size_t pad = n & 1;
  const size_t m = n + pad;
  memset(buf, 0, 16);
  memcpy(buf + 16 * pad, data, 16 * n);
  Acc acc = ZeroAcc();
  const int first = kGhashPowers - static_cast<int>(m);
  for (size_t j = 0; 2 * j < m; ++j) {
    __m256i d = _mm256_shuffle_epi8(
        _mm256_load_si256(reinterpret_cast<const __m256i*>(buf + 32 * j)), rev);
    if (j == 0) {
      d = _mm256_xor_si256(
          d, pad ? _mm256_inserti128_si256(_mm256_setzero_si256(), x, 1)
                 : _mm256_zextsi128_si256(x));
    }
    MulAddPower(&acc, d, t, first + 2 * static_cast<int>(j));
  }
  explicit_bzero(buf, 16 * m);
  return FinishAcc(acc);
}

template <int R>
ACCELCRYPT_TARGET_VAES256 inline void EncryptN(const Keys256& rk, __m256i* b,
                                               int n) {
#pragma GCC unroll 8
  for (int i = 0; i < n; ++i) b[i] = _mm256_xor_si256(b[i], rk[0]);
#pragma GCC unroll 14
  for (int r = 1; r < R; ++r) {
#pragma GCC unroll 8
    for (int i = 0; i < n; ++i) b[i] = _mm256_aesenc_epi128(b[i], rk[r]);
  }
#pragma GCC unroll 8
  for (int i = 0; i < n; ++i) b[i] = _mm256_aesenclast_epi128(b[i], rk[R]);
}

// AccOf returns sums that FinishAcc maps to x (lo = 0, hi = mid = x: the
// recovered middle term is zero).
ACCELCRYPT_TARGET_VAES256 inline Acc AccOf(__m128i x) {
  const __m256i v = _mm256_zextsi128_si256(x);
  return Acc{_mm256_setzero_si256(), v, v};
}

// The main loop body, one iteration of 16 blocks, in inline assembly: the
// compiled intrinsics either parked GHASH sums on the stack or put the
// reduction at the iteration's tail (see below), and the order of the
// groups is what this loop is about. What binds is VPCLMULQDQ: on the CPUs
// this path is for it issues once per 2 cycles, YMM or XMM alike, and takes
// one of the two AES pipe slots, so per 16 blocks the 26 products (24 YMM
// Karatsuba, 2 XMM reduction) need 52 cycles and the 80 AES-128 rounds fit
// beside them only if the multiplier never waits. Hence:
// - the products are spread over all the rounds, 1 to 4 per round;
// - the sums of the previous iteration (`lo`, `hi`, `mid` on entry) are
//   finished and reduced in rounds 1..3 of this one, long after their last
//   product; reduced at the end of their own iteration, the chain (last
//   product, middle term, fold, two dependent reduction products, about 25
//   cycles) sat at every tail, held the reorder window and starved the next
//   iteration's rounds;
// - the register carrying the running hash x (the result of that
//   reduction) is hashed last;
// - the round key is broadcast from the schedule once per round (a load),
//   and the byte-reflection mask and the reduction constant are memory
//   operands: 8 block registers, 3 sums and 5 scratch registers fill the 16.
// Scratch: ymm10 round key, ymm11 the register being hashed (d), ymm12
// product, ymm13 and ymm14 the reduction (ymm14 then holds x; VEX.128
// writes clear its upper lane).
//
// The assembly keeps one instruction per line:
// clang-format off
// FINISH (the ALU part of FinishAcc on the operands): mid ^= lo ^ hi, split it
// into both halves per lane, fold the lanes: xmm13 = low 128 bits of the
// product sum, xmm14 = high.
#define ACCELCRYPT_GCM256_FINISH                \
  "vpxor %[lo], %[mid], %[mid]\n\t"             \
  "vpxor %[hi], %[mid], %[mid]\n\t"             \
  "vpslldq $8, %[mid], %%ymm12\n\t"             \
  "vpxor %%ymm12, %[lo], %[lo]\n\t"             \
  "vpsrldq $8, %[mid], %%ymm12\n\t"             \
  "vpxor %%ymm12, %[hi], %[hi]\n\t"             \
  "vextracti128 $1, %[lo], %%xmm12\n\t"         \
  "vpxor %%xmm12, %x[lo], %%xmm13\n\t"          \
  "vextracti128 $1, %[hi], %%xmm12\n\t"         \
  "vpxor %%xmm12, %x[hi], %%xmm14\n\t"
// The two folds of GhashReduce: u = lo * c ^ swap(lo); x = hi ^ u * c ^
// swap(u).
#define ACCELCRYPT_GCM256_REDUCE1                        \
  "vpclmulqdq $0x00, %[poly], %%xmm13, %%xmm12\n\t"      \
  "vpshufd $0x4e, %%xmm13, %%xmm13\n\t"                  \
  "vpxor %%xmm12, %%xmm13, %%xmm13\n\t"
#define ACCELCRYPT_GCM256_REDUCE2                        \
  "vpclmulqdq $0x00, %[poly], %%xmm13, %%xmm12\n\t"      \
  "vpshufd $0x4e, %%xmm13, %%xmm13\n\t"                  \
  "vpxor %%xmm12, %%xmm14, %%xmm14\n\t"                  \
  "vpxor %%xmm13, %%xmm14, %%xmm14\n\t"
// One AES round of the 8 registers with round key `r` (OP: vaesenc or
// vaesenclast).
#define ACCELCRYPT_GCM256_ROUND(OP, r)            \
  "vbroadcasti128 " #r "*16(%[rk]), %%ymm10\n\t"  \
  OP " %%ymm10, %[b0], %[b0]\n\t"                 \
  OP " %%ymm10, %[b1], %[b1]\n\t"                 \
  OP " %%ymm10, %[b2], %[b2]\n\t"                 \
  OP " %%ymm10, %[b3], %[b3]\n\t"                 \
  OP " %%ymm10, %[b4], %[b4]\n\t"                 \
  OP " %%ymm10, %[b5], %[b5]\n\t"                 \
  OP " %%ymm10, %[b6], %[b6]\n\t"                 \
  OP " %%ymm10, %[b7], %[b7]\n\t"
#define ACCELCRYPT_GCM256_AES(r) ACCELCRYPT_GCM256_ROUND("vaesenc", r)
// Products of register j (blocks 2j, 2j+1 at g) with H^(16-2j), H^(15-2j):
// LO loads and reflects the blocks into ymm11, then lo, HI and MID (the
// Karatsuba middle: (d.lo ^ d.hi) * (h.lo ^ h.hi)). The *1 forms start the
// sums (the first product of an iteration overwrites the finished sum);
// LO0 also adds x into register 0's first block.
#define ACCELCRYPT_GCM256_LOAD(j)                     \
  "vmovdqu " #j "*32(%[g]), %%ymm11\n\t"              \
  "vpshufb %[rev], %%ymm11, %%ymm11\n\t"
#define ACCELCRYPT_GCM256_LO1(j)                      \
  ACCELCRYPT_GCM256_LOAD(j)                           \
  "vpclmulqdq $0x00, " #j "*32(%[pw]), %%ymm11, %[lo]\n\t"
#define ACCELCRYPT_GCM256_HI1(j) \
  "vpclmulqdq $0x11, " #j "*32(%[pw]), %%ymm11, %[hi]\n\t"
#define ACCELCRYPT_GCM256_MID1(j)                     \
  "vpshufd $0x4e, %%ymm11, %%ymm12\n\t"               \
  "vpxor %%ymm11, %%ymm12, %%ymm12\n\t"               \
  "vpclmulqdq $0x00, " #j "*32(%[kt]), %%ymm12, %[mid]\n\t"
#define ACCELCRYPT_GCM256_LO(j)                                 \
  ACCELCRYPT_GCM256_LOAD(j)                                     \
  "vpclmulqdq $0x00, " #j "*32(%[pw]), %%ymm11, %%ymm12\n\t"    \
  "vpxor %%ymm12, %[lo], %[lo]\n\t"
#define ACCELCRYPT_GCM256_LO0                                   \
  ACCELCRYPT_GCM256_LOAD(0)                                     \
  "vpxor %%ymm14, %%ymm11, %%ymm11\n\t"                         \
  "vpclmulqdq $0x00, (%[pw]), %%ymm11, %%ymm12\n\t"             \
  "vpxor %%ymm12, %[lo], %[lo]\n\t"
#define ACCELCRYPT_GCM256_HI(j)                                 \
  "vpclmulqdq $0x11, " #j "*32(%[pw]), %%ymm11, %%ymm12\n\t"    \
  "vpxor %%ymm12, %[hi], %[hi]\n\t"
#define ACCELCRYPT_GCM256_MID(j)                                \
  "vpshufd $0x4e, %%ymm11, %%ymm12\n\t"                         \
  "vpxor %%ymm11, %%ymm12, %%ymm12\n\t"                         \
  "vpclmulqdq $0x00, " #j "*32(%[kt]), %%ymm12, %%ymm12\n\t"    \
  "vpxor %%ymm12, %[mid], %[mid]\n\t"
// Output: keystream ^ input, stored (after every load of the hashed blocks:
// `g` may equal `in` and `in` may equal `out`).
#define ACCELCRYPT_GCM256_OUT(j)                      \
  "vpxor " #j "*32(%[in]), %[b" #j "], %[b" #j "]\n\t"  \
  "vmovdqu %[b" #j "], " #j "*32(%[out])\n\t"
#define ACCELCRYPT_GCM256_OUTS                                      \
  ACCELCRYPT_GCM256_OUT(0) ACCELCRYPT_GCM256_OUT(1)                 \
  ACCELCRYPT_GCM256_OUT(2) ACCELCRYPT_GCM256_OUT(3)                 \
  ACCELCRYPT_GCM256_OUT(4) ACCELCRYPT_GCM256_OUT(5)                 \
  ACCELCRYPT_GCM256_OUT(6) ACCELCRYPT_GCM256_OUT(7)
#define ACCELCRYPT_GCM256_ROUND0                      \
  "vbroadcasti128 (%[rk]), %%ymm10\n\t"               \
  "vpxor %%ymm10, %[b0], %[b0]\n\t"                   \
  "vpxor %%ymm10, %[b1], %[b1]\n\t"                   \
  "vpxor %%ymm10, %[b2], %[b2]\n\t"                   \
  "vpxor %%ymm10, %[b3], %[b3]\n\t"                   \
  "vpxor %%ymm10, %[b4], %[b4]\n\t"                   \
  "vpxor %%ymm10, %[b5], %[b5]\n\t"                   \
  "vpxor %%ymm10, %[b6], %[b6]\n\t"                   \
  "vpxor %%ymm10, %[b7], %[b7]\n\t"

// The memory operands: GhashByteReverse() in both lanes and GhashPoly().
alignas(32) constexpr uint8_t kReflect[32] = {
    15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0,
    15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0};
alignas(16) constexpr uint64_t kPoly[2] = {0xc200000000000000ull, 0};

// EncryptAndHash runs one iteration: the R rounds of the 16 counter blocks
// in `b`, XORed with `in` into `out`, and the GHASH products of the 16
// blocks at `g` (the ciphertext: `in` when decrypting, the previous
// iteration's output when encrypting), leaving their sums unreduced in
// `acc` after reducing the sums it was given (see above).
template <int R>
[[gnu::always_inline]] ACCELCRYPT_TARGET_VAES256 inline void EncryptAndHash(
    const AesRoundKeys* k, __m256i* b, const uint8_t* pw, const uint8_t* kt,
    const uint8_t* g, const uint8_t* in, uint8_t* out, Acc* acc) {
#define ACCELCRYPT_GCM256_OPERANDS                                           \
  : [b0] "+x"(b[0]), [b1] "+x"(b[1]), [b2] "+x"(b[2]), [b3] "+x"(b[3]),      \
    [b4] "+x"(b[4]), [b5] "+x"(b[5]), [b6] "+x"(b[6]), [b7] "+x"(b[7]),      \
    [lo] "+x"(acc->lo), [hi] "+x"(acc->hi), [mid] "+x"(acc->mid)             \
  : [rk] "r"(k->enc), [g] "r"(g), [in] "r"(in), [out] "r"(out),              \
    [pw] "r"(pw), [kt] "r"(kt),                                              \
    [rev] "m"(*reinterpret_cast<const __m256i*>(kReflect)),                  \
    [poly] "m"(*reinterpret_cast<const __m128i*>(kPoly))                     \
  : "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "memory"
  // Per round: the finish and reduction of the previous sums in rounds
  // 1..3, then registers 1..7 and 0 (x), three products each, 1 to 4
  // VPCLMULQDQ a round. (Other orders tried in a register-only copy of the
  // loop, such as ending the products a round earlier, measured the same
  // within noise in the real loop.)
  if constexpr (R == 10) {
    __asm__(ACCELCRYPT_GCM256_ROUND0
            ACCELCRYPT_GCM256_AES(1) ACCELCRYPT_GCM256_FINISH
            ACCELCRYPT_GCM256_LO1(1) ACCELCRYPT_GCM256_HI1(1)
            ACCELCRYPT_GCM256_AES(2) ACCELCRYPT_GCM256_REDUCE1
            ACCELCRYPT_GCM256_MID1(1) ACCELCRYPT_GCM256_LO(2)
            ACCELCRYPT_GCM256_HI(2)
            ACCELCRYPT_GCM256_AES(3) ACCELCRYPT_GCM256_REDUCE2
            ACCELCRYPT_GCM256_MID(2) ACCELCRYPT_GCM256_LO(3)
            ACCELCRYPT_GCM256_AES(4) ACCELCRYPT_GCM256_HI(3)
            ACCELCRYPT_GCM256_MID(3) ACCELCRYPT_GCM256_LO(4)
            ACCELCRYPT_GCM256_AES(5) ACCELCRYPT_GCM256_HI(4)
            ACCELCRYPT_GCM256_MID(4) ACCELCRYPT_GCM256_LO(5)
            ACCELCRYPT_GCM256_AES(6) ACCELCRYPT_GCM256_HI(5)
            ACCELCRYPT_GCM256_MID(5) ACCELCRYPT_GCM256_LO(6)
            ACCELCRYPT_GCM256_AES(7) ACCELCRYPT_GCM256_HI(6)
            ACCELCRYPT_GCM256_MID(6) ACCELCRYPT_GCM256_LO(7)
            ACCELCRYPT_GCM256_AES(8) ACCELCRYPT_GCM256_HI(7)
            ACCELCRYPT_GCM256_MID(7)
            ACCELCRYPT_GCM256_AES(9) ACCELCRYPT_GCM256_LO0
            ACCELCRYPT_GCM256_HI(0)
            ACCELCRYPT_GCM256_ROUND("vaesenclast", 10) ACCELCRYPT_GCM256_MID(0)
            ACCELCRYPT_GCM256_OUTS ACCELCRYPT_GCM256_OPERANDS);
  } else if constexpr (R == 12) {
    __asm__(ACCELCRYPT_GCM256_ROUND0
            ACCELCRYPT_GCM256_AES(1) ACCELCRYPT_GCM256_FINISH
            ACCELCRYPT_GCM256_LO1(1) ACCELCRYPT_GCM256_HI1(1)
            ACCELCRYPT_GCM256_AES(2) ACCELCRYPT_GCM256_REDUCE1
            ACCELCRYPT_GCM256_MID1(1) ACCELCRYPT_GCM256_LO(2)
            ACCELCRYPT_GCM256_AES(3) ACCELCRYPT_GCM256_REDUCE2
            ACCELCRYPT_GCM256_HI(2) ACCELCRYPT_GCM256_MID(2)
            ACCELCRYPT_GCM256_AES(4) ACCELCRYPT_GCM256_LO(3)
            ACCELCRYPT_GCM256_HI(3) ACCELCRYPT_GCM256_MID(3)
            ACCELCRYPT_GCM256_AES(5) ACCELCRYPT_GCM256_LO(4)
            ACCELCRYPT_GCM256_HI(4)
            ACCELCRYPT_GCM256_AES(6) ACCELCRYPT_GCM256_MID(4)
            ACCELCRYPT_GCM256_LO(5)
            ACCELCRYPT_GCM256_AES(7) ACCELCRYPT_GCM256_HI(5)
            ACCELCRYPT_GCM256_MID(5)
            ACCELCRYPT_GCM256_AES(8) ACCELCRYPT_GCM256_LO(6)
            ACCELCRYPT_GCM256_HI(6)
            ACCELCRYPT_GCM256_AES(9) ACCELCRYPT_GCM256_MID(6)
            ACCELCRYPT_GCM256_LO(7)
            ACCELCRYPT_GCM256_AES(10) ACCELCRYPT_GCM256_HI(7)
            ACCELCRYPT_GCM256_MID(7)
            ACCELCRYPT_GCM256_AES(11) ACCELCRYPT_GCM256_LO0
            ACCELCRYPT_GCM256_HI(0)
            ACCELCRYPT_GCM256_ROUND("vaesenclast", 12) ACCELCRYPT_GCM256_MID(0)
            ACCELCRYPT_GCM256_OUTS ACCELCRYPT_GCM256_OPERANDS);
  } else {
    static_assert(R == 14);
    __asm__(ACCELCRYPT_GCM256_ROUND0
            ACCELCRYPT_GCM256_AES(1) ACCELCRYPT_GCM256_FINISH
            ACCELCRYPT_GCM256_LO1(1) ACCELCRYPT_GCM256_HI1(1)
            ACCELCRYPT_GCM256_AES(2) ACCELCRYPT_GCM256_REDUCE1
            ACCELCRYPT_GCM256_MID1(1) ACCELCRYPT_GCM256_LO(2)
            ACCELCRYPT_GCM256_AES(3) ACCELCRYPT_GCM256_REDUCE2
            ACCELCRYPT_GCM256_HI(2) ACCELCRYPT_GCM256_MID(2)
            ACCELCRYPT_GCM256_AES(4) ACCELCRYPT_GCM256_LO(3)
            ACCELCRYPT_GCM256_HI(3)
            ACCELCRYPT_GCM256_AES(5) ACCELCRYPT_GCM256_MID(3)
            ACCELCRYPT_GCM256_LO(4)
            ACCELCRYPT_GCM256_AES(6) ACCELCRYPT_GCM256_HI(4)
            ACCELCRYPT_GCM256_MID(4)
            ACCELCRYPT_GCM256_AES(7) ACCELCRYPT_GCM256_LO(5)
            ACCELCRYPT_GCM256_HI(5)
            ACCELCRYPT_GCM256_AES(8) ACCELCRYPT_GCM256_MID(5)
            ACCELCRYPT_GCM256_LO(6)
            ACCELCRYPT_GCM256_AES(9) ACCELCRYPT_GCM256_HI(6)
            ACCELCRYPT_GCM256_MID(6)
            ACCELCRYPT_GCM256_AES(10) ACCELCRYPT_GCM256_LO(7)
            ACCELCRYPT_GCM256_HI(7)
            ACCELCRYPT_GCM256_AES(11) ACCELCRYPT_GCM256_MID(7)
            ACCELCRYPT_GCM256_AES(12) ACCELCRYPT_GCM256_LO0
            ACCELCRYPT_GCM256_AES(13) ACCELCRYPT_GCM256_HI(0)
            ACCELCRYPT_GCM256_ROUND("vaesenclast", 14) ACCELCRYPT_GCM256_MID(0)
            ACCELCRYPT_GCM256_OUTS ACCELCRYPT_GCM256_OPERANDS);
  }
#undef ACCELCRYPT_GCM256_OPERANDS
}

// EncryptAndContinue runs an iteration that adds its 16 blocks' products
// to the open sums of an EncryptAndHash iteration with H^32..H^17 (`pw`,
// `kt`: H^16..H^1 here): GHASH is then reduced once per 32 blocks, and
// this iteration has no finish, no reduction and no x (all in the other).
template <int R>
[[gnu::always_inline]] ACCELCRYPT_TARGET_VAES256 inline void EncryptAndContinue(
    const AesRoundKeys* k, __m256i* b, const uint8_t* pw, const uint8_t* kt,
    const uint8_t* g, const uint8_t* in, uint8_t* out, Acc* acc) {
#define ACCELCRYPT_GCM256_OPERANDS                                           \
  : [b0] "+x"(b[0]), [b1] "+x"(b[1]), [b2] "+x"(b[2]), [b3] "+x"(b[3]),      \
    [b4] "+x"(b[4]), [b5] "+x"(b[5]), [b6] "+x"(b[6]), [b7] "+x"(b[7]),      \
    [lo] "+x"(acc->lo), [hi] "+x"(acc->hi), [mid] "+x"(acc->mid)             \
  : [rk] "r"(k->enc), [g] "r"(g), [in] "r"(in), [out] "r"(out),              \
    [pw] "r"(pw), [kt] "r"(kt),                                              \
    [rev] "m"(*reinterpret_cast<const __m256i*>(kReflect))                   \
  : "xmm10", "xmm11", "xmm12", "memory"
  if constexpr (R == 10) {
    __asm__(ACCELCRYPT_GCM256_ROUND0
            ACCELCRYPT_GCM256_AES(1) ACCELCRYPT_GCM256_LO(1)
                ACCELCRYPT_GCM256_HI(1)
            ACCELCRYPT_GCM256_AES(2) ACCELCRYPT_GCM256_MID(1)
                ACCELCRYPT_GCM256_LO(2) ACCELCRYPT_GCM256_HI(2)
            ACCELCRYPT_GCM256_AES(3) ACCELCRYPT_GCM256_MID(2)
                ACCELCRYPT_GCM256_LO(3)
            ACCELCRYPT_GCM256_AES(4) ACCELCRYPT_GCM256_HI(3)
                ACCELCRYPT_GCM256_MID(3) ACCELCRYPT_GCM256_LO(4)
            ACCELCRYPT_GCM256_AES(5) ACCELCRYPT_GCM256_HI(4)
                ACCELCRYPT_GCM256_MID(4) ACCELCRYPT_GCM256_LO(5)
            ACCELCRYPT_GCM256_AES(6) ACCELCRYPT_GCM256_HI(5)
                ACCELCRYPT_GCM256_MID(5) ACCELCRYPT_GCM256_LO(6)
            ACCELCRYPT_GCM256_AES(7) ACCELCRYPT_GCM256_HI(6)
                ACCELCRYPT_GCM256_MID(6) ACCELCRYPT_GCM256_LO(7)
            ACCELCRYPT_GCM256_AES(8) ACCELCRYPT_GCM256_HI(7)
                ACCELCRYPT_GCM256_MID(7)
            ACCELCRYPT_GCM256_AES(9) ACCELCRYPT_GCM256_LO(0)
                ACCELCRYPT_GCM256_HI(0)
            ACCELCRYPT_GCM256_ROUND("vaesenclast", 10) ACCELCRYPT_GCM256_MID(0)
            ACCELCRYPT_GCM256_OUTS ACCELCRYPT_GCM256_OPERANDS);
  } else if constexpr (R == 12) {
    __asm__(ACCELCRYPT_GCM256_ROUND0
            ACCELCRYPT_GCM256_AES(1) ACCELCRYPT_GCM256_LO(1)
                ACCELCRYPT_GCM256_HI(1)
            ACCELCRYPT_GCM256_AES(2) ACCELCRYPT_GCM256_MID(1)
                ACCELCRYPT_GCM256_LO(2)
            ACCELCRYPT_GCM256_AES(3) ACCELCRYPT_GCM256_HI(2)
                ACCELCRYPT_GCM256_MID(2)
            ACCELCRYPT_GCM256_AES(4) ACCELCRYPT_GCM256_LO(3)
                ACCELCRYPT_GCM256_HI(3) ACCELCRYPT_GCM256_MID(3)
            ACCELCRYPT_GCM256_AES(5) ACCELCRYPT_GCM256_LO(4)
                ACCELCRYPT_GCM256_HI(4)
            ACCELCRYPT_GCM256_AES(6) ACCELCRYPT_GCM256_MID(4)
                ACCELCRYPT_GCM256_LO(5)
            ACCELCRYPT_GCM256_AES(7) ACCELCRYPT_GCM256_HI(5)
                ACCELCRYPT_GCM256_MID(5)
            ACCELCRYPT_GCM256_AES(8) ACCELCRYPT_GCM256_LO(6)
                ACCELCRYPT_GCM256_HI(6)
            ACCELCRYPT_GCM256_AES(9) ACCELCRYPT_GCM256_MID(6)
                ACCELCRYPT_GCM256_LO(7)
            ACCELCRYPT_GCM256_AES(10) ACCELCRYPT_GCM256_HI(7)
                ACCELCRYPT_GCM256_MID(7)
            ACCELCRYPT_GCM256_AES(11) ACCELCRYPT_GCM256_LO(0)
                ACCELCRYPT_GCM256_HI(0)
            ACCELCRYPT_GCM256_ROUND("vaesenclast", 12) ACCELCRYPT_GCM256_MID(0)
            ACCELCRYPT_GCM256_OUTS ACCELCRYPT_GCM256_OPERANDS);
  } else {
    static_assert(R == 14);
    __asm__(ACCELCRYPT_GCM256_ROUND0
            ACCELCRYPT_GCM256_AES(1) ACCELCRYPT_GCM256_LO(1)
                ACCELCRYPT_GCM256_HI(1)
            ACCELCRYPT_GCM256_AES(2) ACCELCRYPT_GCM256_MID(1)
                ACCELCRYPT_GCM256_LO(2)
            ACCELCRYPT_GCM256_AES(3) ACCELCRYPT_GCM256_HI(2)
                ACCELCRYPT_GCM256_MID(2)
            ACCELCRYPT_GCM256_AES(4) ACCELCRYPT_GCM256_LO(3)
                ACCELCRYPT_GCM256_HI(3)
            ACCELCRYPT_GCM256_AES(5) ACCELCRYPT_GCM256_MID(3)
                ACCELCRYPT_GCM256_LO(4)
            ACCELCRYPT_GCM256_AES(6) ACCELCRYPT_GCM256_HI(4)
                ACCELCRYPT_GCM256_MID(4)
            ACCELCRYPT_GCM256_AES(7) ACCELCRYPT_GCM256_LO(5)
                ACCELCRYPT_GCM256_HI(5)
            ACCELCRYPT_GCM256_AES(8) ACCELCRYPT_GCM256_MID(5)
                ACCELCRYPT_GCM256_LO(6)
            ACCELCRYPT_GCM256_AES(9) ACCELCRYPT_GCM256_HI(6)
                ACCELCRYPT_GCM256_MID(6)
            ACCELCRYPT_GCM256_AES(10) ACCELCRYPT_GCM256_LO(7)
                ACCELCRYPT_GCM256_HI(7)
            ACCELCRYPT_GCM256_AES(11) ACCELCRYPT_GCM256_MID(7)
                ACCELCRYPT_GCM256_LO(0)
            ACCELCRYPT_GCM256_AES(12) ACCELCRYPT_GCM256_HI(0)
                ACCELCRYPT_GCM256_MID(0)
            ACCELCRYPT_GCM256_AES(13)
            ACCELCRYPT_GCM256_ROUND("vaesenclast", 14)
            ACCELCRYPT_GCM256_OUTS ACCELCRYPT_GCM256_OPERANDS);
  }
#undef ACCELCRYPT_GCM256_OPERANDS
}

// clang-format on

// GcmTail encrypts `left` (1..15) blocks with N registers (2N >= left)
// through a stack buffer, and folds the ciphertext into x.
template <int R, int N, bool kDecrypt>
ACCELCRYPT_TARGET_VAES256 inline __m128i GcmTail(
    const Keys256& rk, const GhashTable* t, __m256i c, __m256i swap,
    const uint8_t* in, uint8_t* out, size_t left, __m128i x) {
  const __m256i two = _mm256_set_epi32(2, 0, 0, 0, 2, 0, 0, 0);
  alignas(32) uint8_t buf[32 * N];
  memcpy(buf, in, 16 * left);
  __m256i b[N];
#pragma GCC unroll 8
  for (int i = 0; i < N; ++i) {
    b[i] = _mm256_shuffle_epi8(c, swap);
    c = _mm256_add_epi32(c, two);
  }
  EncryptN<R>(rk, b, N);
  if (kDecrypt) x = GhashShort(t, buf, left, x);
#pragma GCC unroll 8
  for (int i = 0; i < N; ++i) {
    __m256i* p = reinterpret_cast<__m256i*>(buf + 32 * i);
    _mm256_store_si256(p, _mm256_xor_si256(b[i], _mm256_load_si256(p)));
  }
  memcpy(out, buf, 16 * left);
  if (!kDecrypt) x = GhashShort(t, buf, left, x);
  explicit_bzero(buf, sizeof(buf));
  return x;
}

template <int R, bool kDecrypt>
ACCELCRYPT_TARGET_VAES256 void Gcm(const AesRoundKeys* k, const GhashTable* t,
                                   uint8_t ctr[16], uint8_t xi[16],
                                   const uint8_t* in, uint8_t* out,
                                   size_t num_blocks) {
  const Keys256 rk{k->enc};
  const __m256i rev = Bcast(GhashByteReverse());
  const __m256i swap = Swap32x2();
  __m128i x =
      _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(xi)),
                       GhashByteReverse());
  const __m128i ctr_in = _mm_loadu_si128(reinterpret_cast<const __m128i*>(ctr));
  // Counter blocks with their last 32 bits byte-swapped, so VPADDD wraps
  // modulo 2^32 as SP 800-38D's inc32 does.
  __m256i c = _mm256_add_epi32(_mm256_shuffle_epi8(Bcast(ctr_in), swap),
                               _mm256_set_epi32(1, 0, 0, 0, 0, 0, 0, 0));
  const __m256i two = _mm256_set_epi32(2, 0, 0, 0, 2, 0, 0, 0);
  const __m256i sixteen = _mm256_set_epi32(16, 0, 0, 0, 16, 0, 0, 0);
  // +2 on the last byte of a big-endian counter block (the top byte of the
  // last little-endian dword): valid while that byte does not carry.
  const __m256i two_be = _mm256_set_epi32(2 << 24, 0, 0, 0, 2 << 24, 0, 0, 0);
  // The last byte of the first counter block of the next iteration.
  unsigned low = ctr[15];
  size_t left = num_blocks;
  // The unreduced GHASH sums, reduced one iteration later (or below).
  const uint8_t* pending = nullptr;
  Acc acc = AccOf(x);
  // GHASH is reduced once per pair of 16-block chunks: the first of a pair
  // is multiplied by H^32..H^17 (with their Karatsuba entries, made here:
  // the table keeps them for H^16..H^1), the second by H^16..H^1 with no
  // finish or reduction; a last unpaired chunk is reduced alone.
  const size_t chunks = left / kBlocks;  // chunks hashed by the loop or below
  const uint8_t* const kt16 =
      t->karatsuba[kFirst - (kGhashPowers - kGhashKaratsubaPowers)];
  alignas(32) uint8_t kt32[kBlocks][16];
  if (chunks >= 2) {
#pragma GCC unroll 16
    for (int i = 0; i < kBlocks; ++i) {
      const __m128i h =
          _mm_load_si128(reinterpret_cast<const __m128i*>(t->powers[i]));
      _mm_store_si128(reinterpret_cast<__m128i*>(kt32[i]),
                      _mm_xor_si128(h, _mm_shuffle_epi32(h, 0x4e)));
    }
  }
  size_t hashed = 0;
  // hash_chunk runs an iteration that hashes the 16 blocks at g.
  auto hash_chunk = [&](__m256i* b,
                        const uint8_t* g) ACCELCRYPT_TARGET_VAES256 {
    if (hashed % 2 == 1) {
      EncryptAndContinue<R>(k, b, t->powers[kFirst], kt16, g, in, out, &acc);
    } else if (hashed + 1 < chunks) {
      EncryptAndHash<R>(k, b, t->powers[0], kt32[0], g, in, out, &acc);
    } else {
      EncryptAndHash<R>(k, b, t->powers[kFirst], kt16, g, in, out, &acc);
    }
    ++hashed;
  };
  for (; left >= kBlocks; left -= kBlocks) {
    __m256i b[kRegs];
    if (low <= 256 - kBlocks) {
      // No carry out of the last byte within these 16 blocks (15 of 16
      // iterations): one byte swap, then adds in big-endian form.
      b[0] = _mm256_shuffle_epi8(c, swap);
#pragma GCC unroll 8
      for (int i = 1; i < kRegs; ++i) b[i] = _mm256_add_epi32(b[i - 1], two_be);
      c = _mm256_add_epi32(c, sixteen);
    } else {
#pragma GCC unroll 8
      for (int i = 0; i < kRegs; ++i) {
        b[i] = _mm256_shuffle_epi8(c, swap);
        c = _mm256_add_epi32(c, two);
      }
    }
    low = (low + kBlocks) & 0xff;
    if (kDecrypt) {
      // GHASH reads the ciphertext as the rounds run, before the stores
      // (`in` may equal `out`).
      hash_chunk(b, in);
    } else if (pending != nullptr) {
      // Encryption hashes its own output one iteration behind (in L1).
      hash_chunk(b, pending);
      pending = out;
    } else {
      EncryptN<R>(rk, b, kRegs);
#pragma GCC unroll 8
      for (int i = 0; i < kRegs; ++i) {
        _mm256_storeu_si256(
            reinterpret_cast<__m256i*>(out + 32 * i),
            _mm256_xor_si256(
                b[i], _mm256_loadu_si256(
                          reinterpret_cast<const __m256i*>(in + 32 * i))));
      }
      pending = out;
    }
    in += 16 * kBlocks;
    out += 16 * kBlocks;
  }
  if (pending != nullptr) {
    __m256i d[kRegs];
#pragma GCC unroll 8
    for (int i = 0; i < kRegs; ++i) {
      d[i] = _mm256_shuffle_epi8(
          _mm256_loadu_si256(
              reinterpret_cast<const __m256i*>(pending + 32 * i)),
          rev);
    }
    if (hashed % 2 == 1) {
      // The second of a pair: into the open sums, by H^16..H^1.
#pragma GCC unroll 8
      for (int i = 0; i < kRegs; ++i) {
        MulAddPower(&acc, d[i], t, kFirst + 2 * i);
      }
      x = FinishAcc(acc);
    } else {
      x = GhashFull(t, d, FinishAcc(acc));
    }
  } else {
    x = FinishAcc(acc);
  }
  if (chunks >= 2) explicit_bzero(kt32, sizeof(kt32));
  if (left > 0) {
    if (left <= 2) {
      x = GcmTail<R, 1, kDecrypt>(rk, t, c, swap, in, out, left, x);
    } else if (left <= 8) {
      x = GcmTail<R, 4, kDecrypt>(rk, t, c, swap, in, out, left, x);
    } else {
      x = GcmTail<R, kRegs, kDecrypt>(rk, t, c, swap, in, out, left, x);
    }
  }
  _mm_storeu_si128(reinterpret_cast<__m128i*>(xi),
                   _mm_shuffle_epi8(x, GhashByteReverse()));
  AdvanceCounter32(ctr, num_blocks);
}

}  // namespace

void AesGcmEncryptVaes256(const AesRoundKeys* k, const GhashTable* t,
                          uint8_t ctr[16], uint8_t xi[16], const uint8_t* in,
                          uint8_t* out, size_t num_blocks) {
  switch (k->rounds) {
    case 10:
      return Gcm<10, false>(k, t, ctr, xi, in, out, num_blocks);
    case 12:
      return Gcm<12, false>(k, t, ctr, xi, in, out, num_blocks);
    default:
      return Gcm<14, false>(k, t, ctr, xi, in, out, num_blocks);
  }
}

void AesGcmDecryptVaes256(const AesRoundKeys* k, const GhashTable* t,
                          uint8_t ctr[16], uint8_t xi[16], const uint8_t* in,
                          uint8_t* out, size_t num_blocks) {
  switch (k->rounds) {
    case 10:
      return Gcm<10, true>(k, t, ctr, xi, in, out, num_blocks);
    case 12:
      return Gcm<12, true>(k, t, ctr, xi, in, out, num_blocks);
    default:
      return Gcm<14, true>(k, t, ctr, xi, in, out, num_blocks);
  }
}

ACCELCRYPT_TARGET_VAES256 void GhashVaes256(const GhashTable* t, uint8_t xi[16],
                                            const uint8_t* data,
                                            size_t num_blocks) {
  const __m256i rev = Bcast(GhashByteReverse());
  __m128i x =
      _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(xi)),
                       GhashByteReverse());
  for (; num_blocks >= kBlocks; num_blocks -= kBlocks, data += 16 * kBlocks) {
    __m256i d[kRegs];
#pragma GCC unroll 8
    for (int i = 0; i < kRegs; ++i) {
      d[i] = _mm256_shuffle_epi8(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + 32 * i)),
          rev);
    }
    x = GhashFull(t, d, x);
  }
  if (num_blocks > 0) x = GhashShort(t, data, num_blocks, x);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(xi),
                   _mm_shuffle_epi8(x, GhashByteReverse()));
}

}  // namespace accelcrypt::x86::internal
