// SPDX-License-Identifier: Apache-2.0
// AES-GCM bulk data with AES-NI and PCLMULQDQ over XMM registers, for CPUs
// without VAES (and for the VAES-256 path's short messages). CTR32 and GHASH
// share one loop (inline assembly, see EncryptAndHash): 8 counter blocks are
// in flight, and their rounds carry the Karatsuba products (three
// PCLMULQDQ) of 8 earlier blocks with their powers of H (H^8..H^1, read
// from the table in that order). The 8 products are summed unreduced and
// reduced once, so only the product of the running hash with H^8 and that
// reduction sit on the loop-carried chain. Encryption hashes its own output
// one iteration behind (still in L1); decryption hashes the ciphertext it
// has just loaded.
#include <immintrin.h>

#include "backends/x86/internal/aes_leaf.h"
#include "backends/x86/internal/ghash_common.h"
#include "backends/x86/internal/target.h"

namespace accelcrypt::x86::internal {
namespace {

constexpr int kLanes = kGhashXmmPowers;  // 8 blocks per iteration

ACCELCRYPT_TARGET_AESNI inline __m128i Load(const uint8_t* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

ACCELCRYPT_TARGET_AESNI inline void Store(uint8_t* p, __m128i v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v);
}

// Swaps bytes 12..15 only: GCM's 32-bit big-endian counter becomes a
// little-endian lane PADDD can increment modulo 2^32 (inc32).
ACCELCRYPT_TARGET_AESNI inline __m128i Swap32Last() {
  return _mm_set_epi8(12, 13, 14, 15, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
}

// Keys128 reads round key r from the schedule at each use (a memory
// operand of AESENC): 11..15 keys in registers next to 8 blocks, 3 sums,
// the GHASH operands and the copies the two-operand forms need are more
// than 16 XMM registers, and the compiler then spills blocks and sums.
struct Keys128 {
  const uint8_t (*enc)[16];
  ACCELCRYPT_TARGET_AESNI __m128i operator[](int r) const {
    return _mm_load_si128(reinterpret_cast<const __m128i*>(enc[r]));
  }
};

// GhashAccOf returns sums that GhashFinish maps to x (lo = 0, hi = mid =
// x: the recovered middle term is zero and the reduction of x:0 is x).
ACCELCRYPT_TARGET_AESNI inline GhashAcc GhashAccOf(__m128i x) {
  return GhashAcc{_mm_setzero_si128(), x, x};
}

// Encrypt8 runs the AES rounds of the 8 counter blocks in `b` (encryption's
// first iteration: no output to hash yet).
template <int R>
ACCELCRYPT_TARGET_AESNI inline void Encrypt8(const Keys128& rk, __m128i* b) {
#pragma GCC unroll 8
  for (int i = 0; i < kLanes; ++i) b[i] = _mm_xor_si128(b[i], rk[0]);
#pragma GCC unroll 14
  for (int r = 1; r < R; ++r) {
#pragma GCC unroll 8
    for (int i = 0; i < kLanes; ++i) b[i] = _mm_aesenc_si128(b[i], rk[r]);
  }
#pragma GCC unroll 8
  for (int i = 0; i < kLanes; ++i) b[i] = _mm_aesenclast_si128(b[i], rk[R]);
}

// The main loop body, one iteration of 8 blocks, in inline assembly (SSE
// encoding: every AES-NI + PCLMULQDQ CPU runs it). Compiled from
// intrinsics, the loop was 284 instructions per 8 blocks, 57 of them
// register copies for the two-operand forms, and the compiler spilled
// counter blocks to the stack; here it is 262 (225 in the assembly, the
// rest the counter blocks and the loop), AES-128 GCM 4-7% and AES-256 GCM
// 9% faster on Zen 4 (docs/performance.md, 2026-12-05, AES-NI GCM in
// assembly). The schedule:
// - the 24 Karatsuba products (3 per block) and the 2 of the reduction
//   are spread 1 to 4 per round over all rounds, block 0 (which carries
//   the running hash x) last;
// - the previous iteration's sums (`lo`, `hi`, `mid` on entry) are
//   finished and reduced in rounds 1..3 of this one, long after their last
//   product (see the VAES-256 loop, aes_gcm_vaes256.cc, same schedule);
// - per block one register copy: the data block d feeds the low product
//   through a copy, the middle one through PSHUFD (three-operand), and the
//   high product last, in place;
// - the round key is loaded once per round into a register; the table
//   entries, the byte-reflection mask and the reduction constant are
//   memory operands (all 16-byte aligned, as SSE requires).
// Measured on Zen 4 and not taken: the round keys as memory operands of
// AESENC (no key register; 11-14% slower), the products placed before
// each round's AESENC instead of after (AES-256 4% slower), the same
// assembly in VEX form (three operands, 20 instructions fewer: AES-128
// +1.5%, AES-256 -2%; it would also need a second path for CPUs without
// AVX).
// Scratch: xmm11 round key, xmm12 the block being hashed (d), xmm13
// product and temporary, xmm14 the low half then x, xmm15 the high half
// of the finished previous sums.
//
// The assembly keeps one instruction per line:
// clang-format off
// FINISH: mid ^= lo ^ hi, then xmm14 = lo ^ mid << 64 and xmm15 = hi ^ mid
// >> 64 (the 256-bit sum); lo, hi and mid are free after it.
#define ACCELCRYPT_GCMX_FINISH                \
  "pxor %[lo], %[mid]\n\t"                    \
  "pxor %[hi], %[mid]\n\t"                    \
  "movdqa %[mid], %%xmm14\n\t"                \
  "movdqa %[mid], %%xmm15\n\t"                \
  "pslldq $8, %%xmm14\n\t"                    \
  "psrldq $8, %%xmm15\n\t"                    \
  "pxor %[lo], %%xmm14\n\t"                   \
  "pxor %[hi], %%xmm15\n\t"
// The two folds of GhashReduce: u = lo * c ^ swap(lo); x = hi ^ u * c ^
// swap(u), x in xmm14.
#define ACCELCRYPT_GCMX_REDUCE1                    \
  "pshufd $0x4e, %%xmm14, %%xmm13\n\t"             \
  "pclmulqdq $0x00, %[poly], %%xmm14\n\t"          \
  "pxor %%xmm13, %%xmm14\n\t"
#define ACCELCRYPT_GCMX_REDUCE2                    \
  "pshufd $0x4e, %%xmm14, %%xmm13\n\t"             \
  "pclmulqdq $0x00, %[poly], %%xmm14\n\t"          \
  "pxor %%xmm13, %%xmm14\n\t"                      \
  "pxor %%xmm15, %%xmm14\n\t"
#define ACCELCRYPT_GCMX_ROUND(OP, r)         \
  "movdqa " #r "*16(%[rk]), %%xmm11\n\t"     \
  OP " %%xmm11, %[b0]\n\t"                   \
  OP " %%xmm11, %[b1]\n\t"                   \
  OP " %%xmm11, %[b2]\n\t"                   \
  OP " %%xmm11, %[b3]\n\t"                   \
  OP " %%xmm11, %[b4]\n\t"                   \
  OP " %%xmm11, %[b5]\n\t"                   \
  OP " %%xmm11, %[b6]\n\t"                   \
  OP " %%xmm11, %[b7]\n\t"
#define ACCELCRYPT_GCMX_AES(r) ACCELCRYPT_GCMX_ROUND("aesenc", r)
// Products of block j (at g) with H^(8-j): LO loads and reflects it into
// xmm12 and adds d.lo * h.lo to lo; MID adds (d.lo ^ d.hi) * (h.lo ^ h.hi)
// to mid; HI, the last use of d, adds d.hi * h.hi to hi. The *1 forms start
// the sums (the first products of an iteration); LO0 adds x into block 0.
#define ACCELCRYPT_GCMX_LOAD(j)                   \
  "movdqu " #j "*16(%[g]), %%xmm12\n\t"           \
  "pshufb %[rev], %%xmm12\n\t"
#define ACCELCRYPT_GCMX_LO1(j)                    \
  ACCELCRYPT_GCMX_LOAD(j)                         \
  "movdqa %%xmm12, %[lo]\n\t"                     \
  "pclmulqdq $0x00, " #j "*16(%[pw]), %[lo]\n\t"
#define ACCELCRYPT_GCMX_MID1(j)                   \
  "pshufd $0x4e, %%xmm12, %[mid]\n\t"             \
  "pxor %%xmm12, %[mid]\n\t"                      \
  "pclmulqdq $0x00, " #j "*16(%[kt]), %[mid]\n\t"
#define ACCELCRYPT_GCMX_HI1(j)                    \
  "movdqa %%xmm12, %[hi]\n\t"                     \
  "pclmulqdq $0x11, " #j "*16(%[pw]), %[hi]\n\t"
#define ACCELCRYPT_GCMX_LOP(j)                    \
  "movdqa %%xmm12, %%xmm13\n\t"                   \
  "pclmulqdq $0x00, " #j "*16(%[pw]), %%xmm13\n\t" \
  "pxor %%xmm13, %[lo]\n\t"
#define ACCELCRYPT_GCMX_LO(j) ACCELCRYPT_GCMX_LOAD(j) ACCELCRYPT_GCMX_LOP(j)
#define ACCELCRYPT_GCMX_LO0                       \
  ACCELCRYPT_GCMX_LOAD(0)                         \
  "pxor %%xmm14, %%xmm12\n\t"                     \
  ACCELCRYPT_GCMX_LOP(0)
#define ACCELCRYPT_GCMX_MID(j)                    \
  "pshufd $0x4e, %%xmm12, %%xmm13\n\t"            \
  "pxor %%xmm12, %%xmm13\n\t"                     \
  "pclmulqdq $0x00, " #j "*16(%[kt]), %%xmm13\n\t" \
  "pxor %%xmm13, %[mid]\n\t"
#define ACCELCRYPT_GCMX_HI(j)                     \
  "pclmulqdq $0x11, " #j "*16(%[pw]), %%xmm12\n\t" \
  "pxor %%xmm12, %[hi]\n\t"
// Output: keystream ^ input, stored (after every load of the hashed blocks:
// `g` may equal `in` and `in` may equal `out`).
#define ACCELCRYPT_GCMX_OUT(j)                    \
  "movdqu " #j "*16(%[in]), %%xmm13\n\t"          \
  "pxor %%xmm13, %[b" #j "]\n\t"                  \
  "movdqu %[b" #j "], " #j "*16(%[out])\n\t"
#define ACCELCRYPT_GCMX_OUTS                                  \
  ACCELCRYPT_GCMX_OUT(0) ACCELCRYPT_GCMX_OUT(1)               \
  ACCELCRYPT_GCMX_OUT(2) ACCELCRYPT_GCMX_OUT(3)               \
  ACCELCRYPT_GCMX_OUT(4) ACCELCRYPT_GCMX_OUT(5)               \
  ACCELCRYPT_GCMX_OUT(6) ACCELCRYPT_GCMX_OUT(7)
#define ACCELCRYPT_GCMX_ROUND0 ACCELCRYPT_GCMX_ROUND("pxor", 0)

// The memory operands: GhashByteReverse() and GhashPoly().
alignas(16) constexpr uint8_t kReflect[16] = {15, 14, 13, 12, 11, 10, 9, 8,
                                              7,  6,  5,  4,  3,  2,  1, 0};
alignas(16) constexpr uint64_t kPoly[2] = {0xc200000000000000ull, 0};

// EncryptAndHash runs one iteration: the R rounds of the 8 counter blocks
// in `b`, XORed with `in` into `out`, and the GHASH products of the 8
// blocks at `g` (the ciphertext: `in` when decrypting, the previous
// iteration's output when encrypting) with H^8..H^1 (`pw`, `kt`), leaving
// their sums unreduced in `acc` after reducing the sums it was given into
// the running hash that joins block 0.
template <int R>
[[gnu::always_inline]] ACCELCRYPT_TARGET_AESNI inline void EncryptAndHash(
    const AesRoundKeys* k, __m128i* b, const uint8_t* pw, const uint8_t* kt,
    const uint8_t* g, const uint8_t* in, uint8_t* out, GhashAcc* acc) {
#define ACCELCRYPT_GCMX_OPERANDS                                             \
  : [b0] "+x"(b[0]), [b1] "+x"(b[1]), [b2] "+x"(b[2]), [b3] "+x"(b[3]),      \
    [b4] "+x"(b[4]), [b5] "+x"(b[5]), [b6] "+x"(b[6]), [b7] "+x"(b[7]),      \
    [lo] "+x"(acc->lo), [hi] "+x"(acc->hi), [mid] "+x"(acc->mid)             \
  : [rk] "r"(k->enc), [g] "r"(g), [in] "r"(in), [out] "r"(out),              \
    [pw] "r"(pw), [kt] "r"(kt),                                              \
    [rev] "m"(*reinterpret_cast<const __m128i*>(kReflect)),                  \
    [poly] "m"(*reinterpret_cast<const __m128i*>(kPoly))                     \
  : "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "memory"
  // Per round: the finish and reduction of the previous sums in rounds
  // 1..3, then blocks 1..7 and 0 (x), three products each, 1 to 4
  // PCLMULQDQ a round.
  if constexpr (R == 10) {
    __asm__(ACCELCRYPT_GCMX_ROUND0
            ACCELCRYPT_GCMX_AES(1) ACCELCRYPT_GCMX_FINISH
            ACCELCRYPT_GCMX_LO1(1) ACCELCRYPT_GCMX_MID1(1)
            ACCELCRYPT_GCMX_AES(2) ACCELCRYPT_GCMX_REDUCE1
            ACCELCRYPT_GCMX_HI1(1) ACCELCRYPT_GCMX_LO(2)
            ACCELCRYPT_GCMX_MID(2)
            ACCELCRYPT_GCMX_AES(3) ACCELCRYPT_GCMX_REDUCE2
            ACCELCRYPT_GCMX_HI(2) ACCELCRYPT_GCMX_LO(3)
            ACCELCRYPT_GCMX_AES(4) ACCELCRYPT_GCMX_MID(3)
            ACCELCRYPT_GCMX_HI(3) ACCELCRYPT_GCMX_LO(4)
            ACCELCRYPT_GCMX_AES(5) ACCELCRYPT_GCMX_MID(4)
            ACCELCRYPT_GCMX_HI(4) ACCELCRYPT_GCMX_LO(5)
            ACCELCRYPT_GCMX_AES(6) ACCELCRYPT_GCMX_MID(5)
            ACCELCRYPT_GCMX_HI(5) ACCELCRYPT_GCMX_LO(6)
            ACCELCRYPT_GCMX_AES(7) ACCELCRYPT_GCMX_MID(6)
            ACCELCRYPT_GCMX_HI(6) ACCELCRYPT_GCMX_LO(7)
            ACCELCRYPT_GCMX_AES(8) ACCELCRYPT_GCMX_MID(7)
            ACCELCRYPT_GCMX_HI(7)
            ACCELCRYPT_GCMX_AES(9) ACCELCRYPT_GCMX_LO0
            ACCELCRYPT_GCMX_MID(0)
            ACCELCRYPT_GCMX_ROUND("aesenclast", 10) ACCELCRYPT_GCMX_HI(0)
            ACCELCRYPT_GCMX_OUTS ACCELCRYPT_GCMX_OPERANDS);
  } else if constexpr (R == 12) {
    __asm__(ACCELCRYPT_GCMX_ROUND0
            ACCELCRYPT_GCMX_AES(1) ACCELCRYPT_GCMX_FINISH
            ACCELCRYPT_GCMX_LO1(1) ACCELCRYPT_GCMX_MID1(1)
            ACCELCRYPT_GCMX_AES(2) ACCELCRYPT_GCMX_REDUCE1
            ACCELCRYPT_GCMX_HI1(1) ACCELCRYPT_GCMX_LO(2)
            ACCELCRYPT_GCMX_AES(3) ACCELCRYPT_GCMX_REDUCE2
            ACCELCRYPT_GCMX_MID(2) ACCELCRYPT_GCMX_HI(2)
            ACCELCRYPT_GCMX_AES(4) ACCELCRYPT_GCMX_LO(3)
            ACCELCRYPT_GCMX_MID(3) ACCELCRYPT_GCMX_HI(3)
            ACCELCRYPT_GCMX_AES(5) ACCELCRYPT_GCMX_LO(4)
            ACCELCRYPT_GCMX_MID(4)
            ACCELCRYPT_GCMX_AES(6) ACCELCRYPT_GCMX_HI(4)
            ACCELCRYPT_GCMX_LO(5)
            ACCELCRYPT_GCMX_AES(7) ACCELCRYPT_GCMX_MID(5)
            ACCELCRYPT_GCMX_HI(5)
            ACCELCRYPT_GCMX_AES(8) ACCELCRYPT_GCMX_LO(6)
            ACCELCRYPT_GCMX_MID(6)
            ACCELCRYPT_GCMX_AES(9) ACCELCRYPT_GCMX_HI(6)
            ACCELCRYPT_GCMX_LO(7)
            ACCELCRYPT_GCMX_AES(10) ACCELCRYPT_GCMX_MID(7)
            ACCELCRYPT_GCMX_HI(7)
            ACCELCRYPT_GCMX_AES(11) ACCELCRYPT_GCMX_LO0
            ACCELCRYPT_GCMX_MID(0)
            ACCELCRYPT_GCMX_ROUND("aesenclast", 12) ACCELCRYPT_GCMX_HI(0)
            ACCELCRYPT_GCMX_OUTS ACCELCRYPT_GCMX_OPERANDS);
  } else {
    static_assert(R == 14);
    __asm__(ACCELCRYPT_GCMX_ROUND0
            ACCELCRYPT_GCMX_AES(1) ACCELCRYPT_GCMX_FINISH
            ACCELCRYPT_GCMX_LO1(1) ACCELCRYPT_GCMX_MID1(1)
            ACCELCRYPT_GCMX_AES(2) ACCELCRYPT_GCMX_REDUCE1
            ACCELCRYPT_GCMX_HI1(1) ACCELCRYPT_GCMX_LO(2)
            ACCELCRYPT_GCMX_AES(3) ACCELCRYPT_GCMX_REDUCE2
            ACCELCRYPT_GCMX_MID(2) ACCELCRYPT_GCMX_HI(2)
            ACCELCRYPT_GCMX_AES(4) ACCELCRYPT_GCMX_LO(3)
            ACCELCRYPT_GCMX_MID(3)
            ACCELCRYPT_GCMX_AES(5) ACCELCRYPT_GCMX_HI(3)
            ACCELCRYPT_GCMX_LO(4)
            ACCELCRYPT_GCMX_AES(6) ACCELCRYPT_GCMX_MID(4)
            ACCELCRYPT_GCMX_HI(4)
            ACCELCRYPT_GCMX_AES(7) ACCELCRYPT_GCMX_LO(5)
            ACCELCRYPT_GCMX_MID(5)
            ACCELCRYPT_GCMX_AES(8) ACCELCRYPT_GCMX_HI(5)
            ACCELCRYPT_GCMX_LO(6)
            ACCELCRYPT_GCMX_AES(9) ACCELCRYPT_GCMX_MID(6)
            ACCELCRYPT_GCMX_HI(6)
            ACCELCRYPT_GCMX_AES(10) ACCELCRYPT_GCMX_LO(7)
            ACCELCRYPT_GCMX_MID(7)
            ACCELCRYPT_GCMX_AES(11) ACCELCRYPT_GCMX_HI(7)
            ACCELCRYPT_GCMX_AES(12) ACCELCRYPT_GCMX_LO0
            ACCELCRYPT_GCMX_AES(13) ACCELCRYPT_GCMX_MID(0)
            ACCELCRYPT_GCMX_ROUND("aesenclast", 14) ACCELCRYPT_GCMX_HI(0)
            ACCELCRYPT_GCMX_OUTS ACCELCRYPT_GCMX_OPERANDS);
  }
#undef ACCELCRYPT_GCMX_OPERANDS
}

// clang-format on

template <int R>
ACCELCRYPT_TARGET_AESNI inline __m128i Encrypt1(const Keys128& rk, __m128i b) {
  b = _mm_xor_si128(b, rk[0]);
#pragma GCC unroll 14
  for (int r = 1; r < R; ++r) b = _mm_aesenc_si128(b, rk[r]);
  return _mm_aesenclast_si128(b, rk[R]);
}

// NextCounters fills b with the next 8 counter blocks from c (the counter
// with its last 32 bits little-endian in the top lane), advancing c and
// `low` (the last byte of the first block).
ACCELCRYPT_TARGET_AESNI inline void NextCounters(__m128i* b, __m128i* c,
                                                 unsigned* low) {
  const __m128i swap = Swap32Last();
  if (*low <= 256 - kLanes) {
    // No carry out of the last byte within these 8 blocks (31 of 32
    // iterations): one byte swap, then +1 on the last byte of the
    // big-endian block (the top byte of its last little-endian dword).
    const __m128i one_be = _mm_set_epi32(1 << 24, 0, 0, 0);
    b[0] = _mm_shuffle_epi8(*c, swap);
#pragma GCC unroll 8
    for (int i = 1; i < kLanes; ++i) b[i] = _mm_add_epi32(b[i - 1], one_be);
    *c = _mm_add_epi32(*c, _mm_set_epi32(kLanes, 0, 0, 0));
  } else {
    const __m128i one = _mm_set_epi32(1, 0, 0, 0);
#pragma GCC unroll 8
    for (int i = 0; i < kLanes; ++i) {
      b[i] = _mm_shuffle_epi8(*c, swap);
      *c = _mm_add_epi32(*c, one);
    }
  }
  *low = (*low + kLanes) & 0xff;
}

// StoreXor8 writes in ^ b for 8 blocks.
ACCELCRYPT_TARGET_AESNI inline void StoreXor8(const __m128i* b,
                                              const uint8_t* in, uint8_t* out) {
#pragma GCC unroll 8
  for (int i = 0; i < kLanes; ++i) {
    Store(out + 16 * i, _mm_xor_si128(b[i], Load(in + 16 * i)));
  }
}

template <int R, bool kDecrypt>
ACCELCRYPT_TARGET_AESNI void Gcm(const AesRoundKeys* k, const GhashTable* t,
                                 uint8_t ctr[16], uint8_t xi[16],
                                 const uint8_t* in, uint8_t* out,
                                 size_t num_blocks) {
  const Keys128 rk{k->enc};
  const __m128i rev = GhashByteReverse();
  const __m128i swap = Swap32Last();
  __m128i x = _mm_shuffle_epi8(Load(xi), rev);
  // The counter with its last 32 bits little-endian in the top lane.
  __m128i c = _mm_shuffle_epi8(Load(ctr), swap);
  const __m128i one = _mm_set_epi32(1, 0, 0, 0);
  size_t left = num_blocks;
  if (left >= kLanes) {
    unsigned low = ctr[15];  // last byte of the next iteration's first block
    __m128i b[kLanes];
    GhashAcc acc = GhashAccOf(x);  // unreduced, see EncryptAndHash
    const uint8_t* pw = t->powers[kGhashPowers - kLanes];  // H^8..H^1
    const uint8_t* kt = t->karatsuba[kGhashKaratsubaPowers - kLanes];
    if (kDecrypt) {
      for (; left >= kLanes; left -= kLanes) {
        NextCounters(b, &c, &low);
        // GHASH reads the ciphertext during the rounds, before any store
        // (`in` may equal `out`, the only overlap allowed); the output
        // step loads each block again (L1).
        EncryptAndHash<R>(k, b, pw, kt, in, in, out, &acc);
        in += 16 * kLanes;
        out += 16 * kLanes;
      }
      x = GhashFinish(acc);
    } else {
      // The first 8 blocks have no output before them to hash; the loop
      // then always hashes the previous 8 (one loop body, not two).
      NextCounters(b, &c, &low);
      Encrypt8<R>(rk, b);
      StoreXor8(b, in, out);
      const uint8_t* pending = out;
      in += 16 * kLanes;
      out += 16 * kLanes;
      for (left -= kLanes; left >= kLanes; left -= kLanes) {
        NextCounters(b, &c, &low);
        EncryptAndHash<R>(k, b, pw, kt, pending, in, out, &acc);
        pending = out;
        in += 16 * kLanes;
        out += 16 * kLanes;
      }
      x = GhashXmmBlocks(t, GhashFinish(acc), pending, kLanes);
    }
  }
  if (left > 0) {
    // 1..7 blocks: independent single-block chains (the CPU overlaps
    // them), then one aggregated GHASH of the ciphertext.
    if (kDecrypt) x = GhashXmmBlocks(t, x, in, left);
    for (size_t i = 0; i < left; ++i) {
      const __m128i ks = Encrypt1<R>(rk, _mm_shuffle_epi8(c, swap));
      c = _mm_add_epi32(c, one);
      Store(out + 16 * i, _mm_xor_si128(ks, Load(in + 16 * i)));
    }
    if (!kDecrypt) x = GhashXmmBlocks(t, x, out, left);
  }
  Store(xi, _mm_shuffle_epi8(x, rev));
  Store(ctr, _mm_shuffle_epi8(c, swap));
}

}  // namespace

void AesGcmEncryptAesni(const AesRoundKeys* k, const GhashTable* t,
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

void AesGcmDecryptAesni(const AesRoundKeys* k, const GhashTable* t,
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

}  // namespace accelcrypt::x86::internal
