// SPDX-License-Identifier: Apache-2.0
// AES-GCM bulk data with AES-NI and PCLMULQDQ over XMM registers, for CPUs
// without VAES (and for the VAES-256 path's short messages). CTR32 and GHASH
// share one loop: 8 counter blocks are in flight, and one AES round of them
// carries the Karatsuba product (three PCLMULQDQ) of one of 8 earlier blocks
// with its power of H (H^8..H^1, read from the table in that order). The 8
// products are summed unreduced and reduced once, so only the product of
// the running hash with H^8 and that reduction sit on the loop-carried
// chain. Encryption hashes its own output one iteration behind (still in
// L1); decryption hashes the ciphertext it has just loaded.
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

// Rounds8 runs the AES rounds of the 8 counter blocks in `b` and, with
// kHash, one iteration's GHASH: the 8 blocks at `src` (GCM byte order) with
// H^8..H^1 from `t`. `acc` holds the previous iteration's unreduced sums on
// entry, reduced here after round 1 into the running value that joins the
// first block (reduced at the end of their own iteration, that chain sat
// at every iteration's tail and held the reorder window), and this
// iteration's on return. Without kHash (encryption's first iteration: no
// output to hash yet) only AES.
template <int R, bool kHash>
ACCELCRYPT_TARGET_AESNI inline void Rounds8(const Keys128& rk, __m128i* b,
                                            const GhashTable* t,
                                            const uint8_t* src, GhashAcc* acc) {
  const __m128i rev = GhashByteReverse();
  __m128i x = _mm_setzero_si128();
#pragma GCC unroll 8
  for (int i = 0; i < kLanes; ++i) b[i] = _mm_xor_si128(b[i], rk[0]);
#pragma GCC unroll 14
  for (int r = 1; r < R; ++r) {
#pragma GCC unroll 8
    for (int i = 0; i < kLanes; ++i) b[i] = _mm_aesenc_si128(b[i], rk[r]);
    if (kHash && r == 1) {
      x = GhashFinish(*acc);
      *acc = GhashAccZero();
    }
    if (kHash && r <= kLanes) {
      // Rounds 1..7 take blocks 1..7; round 8 takes block 0, which waits
      // for the previous iteration's reduction (x) the longest.
      const int j = r % kLanes;
      __m128i d = _mm_shuffle_epi8(Load(src + 16 * j), rev);
      if (j == 0) d = _mm_xor_si128(d, x);
      GhashMulAdd(acc, d, GhashXmmPower(t, kLanes - j),
                  GhashXmmKaratsuba(t, kLanes - j));
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < kLanes; ++i) b[i] = _mm_aesenclast_si128(b[i], rk[R]);
}

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
    GhashAcc acc = GhashAccOf(x);  // unreduced, see Rounds8
    if (kDecrypt) {
      for (; left >= kLanes; left -= kLanes) {
        NextCounters(b, &c, &low);
        // GHASH reads the ciphertext during the rounds, before any store;
        // each block is then loaded again (L1) just before its own output
        // overwrites it when `in` equals `out` (the only overlap allowed).
        // Loading all 8 up front would hold 8 more registers through the
        // rounds.
        Rounds8<R, true>(rk, b, t, in, &acc);
        StoreXor8(b, in, out);
        in += 16 * kLanes;
        out += 16 * kLanes;
      }
      x = GhashFinish(acc);
    } else {
      // The first 8 blocks have no output before them to hash; the loop
      // then always hashes the previous 8 (one loop body, not two).
      NextCounters(b, &c, &low);
      Rounds8<R, false>(rk, b, t, nullptr, &acc);
      StoreXor8(b, in, out);
      const uint8_t* pending = out;
      in += 16 * kLanes;
      out += 16 * kLanes;
      for (left -= kLanes; left >= kLanes; left -= kLanes) {
        NextCounters(b, &c, &low);
        Rounds8<R, true>(rk, b, t, pending, &acc);
        StoreXor8(b, in, out);
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
