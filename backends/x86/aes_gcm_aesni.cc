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

// Rounds8 runs the AES rounds of the 8 counter blocks in `b` and, with
// kHash, one iteration's GHASH: the 8 blocks at `src` (GCM byte order) with
// H^8..H^1 in `h`/`hk`, the running value *x folded into the first. Without
// kHash (encryption's first iteration: no output to hash yet) only AES.
template <int R, bool kHash>
ACCELCRYPT_TARGET_AESNI inline void Rounds8(const __m128i* rk, __m128i* b,
                                            const __m128i* h,
                                            const __m128i* hk,
                                            const uint8_t* src, __m128i* x) {
  const __m128i rev = GhashByteReverse();
  GhashAcc acc = GhashAccZero();
#pragma GCC unroll 8
  for (int i = 0; i < kLanes; ++i) b[i] = _mm_xor_si128(b[i], rk[0]);
#pragma GCC unroll 14
  for (int r = 1; r < R; ++r) {
#pragma GCC unroll 8
    for (int i = 0; i < kLanes; ++i) b[i] = _mm_aesenc_si128(b[i], rk[r]);
    if (kHash && r <= kLanes) {
      // Rounds 1..7 take blocks 1..7; round 8 takes block 0, which waits
      // for the previous iteration's reduction (x) the longest.
      const int j = r % kLanes;
      __m128i d = _mm_shuffle_epi8(Load(src + 16 * j), rev);
      if (j == 0) d = _mm_xor_si128(d, *x);
      GhashMulAdd(&acc, d, h[j], hk[j]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < kLanes; ++i) b[i] = _mm_aesenclast_si128(b[i], rk[R]);
  if (kHash) *x = GhashFinish(acc);
}

template <int R>
ACCELCRYPT_TARGET_AESNI inline __m128i Encrypt1(const __m128i* rk, __m128i b) {
  b = _mm_xor_si128(b, rk[0]);
#pragma GCC unroll 14
  for (int r = 1; r < R; ++r) b = _mm_aesenc_si128(b, rk[r]);
  return _mm_aesenclast_si128(b, rk[R]);
}

template <int R, bool kDecrypt>
ACCELCRYPT_TARGET_AESNI void Gcm(const AesRoundKeys* k, const GhashTable* t,
                                 uint8_t ctr[16], uint8_t xi[16],
                                 const uint8_t* in, uint8_t* out,
                                 size_t num_blocks) {
  __m128i rk[R + 1];
#pragma GCC unroll 15
  for (int i = 0; i <= R; ++i) {
    rk[i] = _mm_load_si128(reinterpret_cast<const __m128i*>(k->enc[i]));
  }
  const __m128i rev = GhashByteReverse();
  const __m128i swap = Swap32Last();
  __m128i x = _mm_shuffle_epi8(Load(xi), rev);
  // The counter with its last 32 bits little-endian in the top lane.
  __m128i c = _mm_shuffle_epi8(Load(ctr), swap);
  const __m128i one = _mm_set_epi32(1, 0, 0, 0);
  size_t left = num_blocks;
  if (left >= kLanes) {
    __m128i h[kLanes], hk[kLanes];
#pragma GCC unroll 8
    for (int i = 0; i < kLanes; ++i) {
      h[i] = GhashXmmPower(t, kLanes - i);
      hk[i] = GhashXmmKaratsuba(t, kLanes - i);
    }
    const uint8_t* pending = nullptr;
    for (; left >= kLanes; left -= kLanes) {
      __m128i b[kLanes];
#pragma GCC unroll 8
      for (int i = 0; i < kLanes; ++i) {
        b[i] = _mm_shuffle_epi8(c, swap);
        c = _mm_add_epi32(c, one);
      }
      if (kDecrypt) {
        // All loads before any store: `in` may equal `out`. GHASH reads
        // the same lines from L1 during the rounds.
        __m128i d[kLanes];
#pragma GCC unroll 8
        for (int i = 0; i < kLanes; ++i) d[i] = Load(in + 16 * i);
        Rounds8<R, true>(rk, b, h, hk, in, &x);
#pragma GCC unroll 8
        for (int i = 0; i < kLanes; ++i) {
          Store(out + 16 * i, _mm_xor_si128(b[i], d[i]));
        }
      } else {
        if (pending != nullptr) {
          Rounds8<R, true>(rk, b, h, hk, pending, &x);
        } else {
          Rounds8<R, false>(rk, b, h, hk, nullptr, &x);
        }
#pragma GCC unroll 8
        for (int i = 0; i < kLanes; ++i) {
          Store(out + 16 * i, _mm_xor_si128(b[i], Load(in + 16 * i)));
        }
        pending = out;
      }
      in += 16 * kLanes;
      out += 16 * kLanes;
    }
    if (pending != nullptr) x = GhashXmmBlocks(t, x, pending, kLanes);
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
