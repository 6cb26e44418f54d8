// SPDX-License-Identifier: Apache-2.0
// AES-GCM bulk data with VAES and VPCLMULQDQ over ZMM registers: 32 blocks
// per iteration, CTR32 keystream and GHASH in the same loop body so the
// out-of-order core overlaps the AES rounds with the carry-less multiplies.
// GHASH is aggregated: 32 blocks are multiplied by H^32..H^1 (precomputed,
// internal/ghash_common.h; Karatsuba in the main loop), the running hash x
// folded into the first, and reduced once, after the next iteration's first
// round.
#include <immintrin.h>

#include <initializer_list>

#include "backends/x86/internal/aes_leaf.h"
#include "backends/x86/internal/ghash_common.h"
#include "backends/x86/internal/target.h"

namespace accelcrypt::x86::internal {
namespace {

constexpr int kRegs = kGhashPowers / 4;  // 8 ZMM registers, 32 blocks

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

// The three partial products of reflected blocks times twisted powers
// (schoolbook: lo, hi and the two middle terms), summed unreduced.
struct Acc {
  __m512i lo, hi, mid;
};

ACCELCRYPT_TARGET_VAES512 inline Acc ZeroAcc() {
  return Acc{_mm512_setzero_si512(), _mm512_setzero_si512(),
             _mm512_setzero_si512()};
}

// MulAdd accumulates d*h as schoolbook products (lo, hi, and the two middle
// terms), for the hash after the main loop and the tails (the main loop
// uses Karatsuba, see HashStep).
ACCELCRYPT_TARGET_VAES512 inline void MulAdd(Acc* acc, __m512i d, __m512i h) {
  acc->lo = _mm512_xor_si512(acc->lo, _mm512_clmulepi64_epi128(d, h, 0x00));
  acc->hi = _mm512_xor_si512(acc->hi, _mm512_clmulepi64_epi128(d, h, 0x11));
  acc->mid =
      _mm512_ternarylogic_epi64(acc->mid, _mm512_clmulepi64_epi128(d, h, 0x01),
                                _mm512_clmulepi64_epi128(d, h, 0x10), 0x96);
}

// Finish folds the middle terms into lo and hi and reduces.
ACCELCRYPT_TARGET_VAES512 inline __m128i Finish(__m128i lo, __m128i hi,
                                                __m128i mid) {
  lo = _mm_xor_si128(lo, _mm_slli_si128(mid, 8));
  hi = _mm_xor_si128(hi, _mm_srli_si128(mid, 8));
  return GhashReduce(hi, lo);
}

// FinishWithX adds x*H^32 to the sums and reduces.
ACCELCRYPT_TARGET_VAES512 inline __m128i FinishWithX(const GhashTable* t,
                                                     const Acc& acc,
                                                     __m128i x) {
  const __m128i h =
      _mm_load_si128(reinterpret_cast<const __m128i*>(t->powers[0]));
  const __m128i lo =
      _mm_xor_si128(Fold(acc.lo), _mm_clmulepi64_si128(x, h, 0x00));
  const __m128i hi =
      _mm_xor_si128(Fold(acc.hi), _mm_clmulepi64_si128(x, h, 0x11));
  const __m128i mid =
      _mm_ternarylogic_epi64(Fold(acc.mid), _mm_clmulepi64_si128(x, h, 0x01),
                             _mm_clmulepi64_si128(x, h, 0x10), 0x96);
  return Finish(lo, hi, mid);
}

// GhashFull folds 32 reflected blocks into x. The data products do not
// depend on x; x*H^32 joins them just before the single reduction.
ACCELCRYPT_TARGET_VAES512 inline __m128i GhashFull(const GhashTable* t,
                                                   const __m512i* d,
                                                   __m128i x) {
  Acc acc = ZeroAcc();
#pragma GCC unroll 8
  for (int i = 0; i < kRegs; ++i) {
    MulAdd(&acc, d[i], _mm512_load_si512(t->powers[4 * i]));
  }
  return FinishWithX(t, acc, x);
}

// GhashTail folds n (1..31) reflected blocks in d[0..ceil(n/4)), zero past
// n, into x with H^n..H^1.
ACCELCRYPT_TARGET_VAES512 inline __m128i GhashTail(const GhashTable* t,
                                                   const __m512i* d, size_t n,
                                                   __m128i x) {
  Acc acc = ZeroAcc();
  const uint8_t* first = t->powers[kGhashPowers - n];
  for (size_t j = 0; 4 * j < n; ++j) {
    const __mmask8 m = BlockMask(n - 4 * j);
    __m512i h = _mm512_maskz_loadu_epi64(m, first + 64 * j);
    __m512i dj = d[j];
    if (j == 0) dj = _mm512_xor_si512(dj, _mm512_zextsi128_si512(x));
    MulAdd(&acc, dj, h);
  }
  return Finish(Fold(acc.lo), Fold(acc.hi), Fold(acc.mid));
}

template <int R>
ACCELCRYPT_TARGET_VAES512 inline void EncryptN(const __m512i* rk, __m512i* b,
                                               int n) {
#pragma GCC unroll 8
  for (int i = 0; i < n; ++i) b[i] = _mm512_xor_si512(b[i], rk[0]);
#pragma GCC unroll 14
  for (int r = 1; r < R; ++r) {
#pragma GCC unroll 8
    for (int i = 0; i < n; ++i) b[i] = _mm512_aesenc_epi128(b[i], rk[r]);
  }
#pragma GCC unroll 8
  for (int i = 0; i < n; ++i) b[i] = _mm512_aesenclast_epi128(b[i], rk[R]);
}

// The main loop's sums are Karatsuba's: `mid` sums (d.lo ^ d.hi) *
// (h.lo ^ h.hi), and the middle term is mid ^ lo ^ hi, recovered once per
// loop in FinishAcc. Three VPCLMULQDQ per register, not four: the
// multiplier binds this loop (a ZMM product occupies it about twice as
// long as a YMM one), the extra shuffle and XOR do not.
ACCELCRYPT_TARGET_VAES512 inline __m128i FinishAcc(const Acc& acc) {
  const __m128i lo = Fold(acc.lo), hi = Fold(acc.hi);
  return Finish(lo, hi, _mm_ternarylogic_epi64(Fold(acc.mid), lo, hi, 0x96));
}

// AccOf returns sums that FinishAcc maps to x (lo = 0, hi = mid = x: the
// recovered middle term is zero).
ACCELCRYPT_TARGET_VAES512 inline Acc AccOf(__m128i x) {
  const __m512i v = _mm512_zextsi128_si512(x);
  return Acc{_mm512_setzero_si512(), v, v};
}

// HashStep issues step S (0..23) of the products of the 32 blocks at
// `gsrc`: three per register (lo, hi, Karatsuba middle with `hk`, the
// Karatsuba entries of the register's powers), registers
// 1..7 first and register 0 last, since its first block carries the
// running hash x: (x ^ b0) * H^32 costs nothing beside the products
// (multiplying x separately took four more XMM VPCLMULQDQ a loop).
template <int S>
[[gnu::always_inline]] ACCELCRYPT_TARGET_VAES512 inline void HashStep(
    Acc* acc, Acc* held, __m512i* d, const GhashTable* t, const __m512i* hk,
    const uint8_t* gsrc, __m512i rev, __m128i x) {
  constexpr int j = (S / 3 + 1) % kRegs;
  // The products of registers taken in pairs join the sums with one
  // three-way XOR (VPTERNLOGQ): the first of a pair waits in `held`.
  constexpr bool kFirstOfPair = (S / 3) % 2 == 0;
  __m512i p;
  if constexpr (S % 3 == 0) {
    *d = _mm512_shuffle_epi8(_mm512_loadu_si512(gsrc + 64 * j), rev);
    if constexpr (j == 0) *d = _mm512_xor_si512(*d, _mm512_zextsi128_si512(x));
    p = _mm512_clmulepi64_epi128(*d, _mm512_load_si512(t->powers[4 * j]), 0x00);
    if constexpr (kFirstOfPair) {
      held->lo = p;
    } else {
      acc->lo = _mm512_ternarylogic_epi64(acc->lo, held->lo, p, 0x96);
    }
  } else if constexpr (S % 3 == 1) {
    p = _mm512_clmulepi64_epi128(*d, _mm512_load_si512(t->powers[4 * j]), 0x11);
    if constexpr (kFirstOfPair) {
      held->hi = p;
    } else {
      acc->hi = _mm512_ternarylogic_epi64(acc->hi, held->hi, p, 0x96);
    }
  } else {
    const __m512i dm =
        _mm512_xor_si512(*d, _mm512_shuffle_epi32(*d, _MM_PERM_BADC));
    p = _mm512_clmulepi64_epi128(dm, hk[j], 0x00);
    if constexpr (kFirstOfPair) {
      held->mid = p;
    } else {
      acc->mid = _mm512_ternarylogic_epi64(acc->mid, held->mid, p, 0x96);
    }
  }
}

template <int S, int E>
[[gnu::always_inline]] ACCELCRYPT_TARGET_VAES512 inline void HashSteps(
    Acc* acc, Acc* held, __m512i* d, const GhashTable* t, const __m512i* hk,
    const uint8_t* gsrc, __m512i rev, __m128i x) {
  if constexpr (S < E) {
    HashStep<S>(acc, held, d, t, hk, gsrc, rev, x);
    HashSteps<S + 1, E>(acc, held, d, t, hk, gsrc, rev, x);
  }
}

// Rounds runs AES rounds r..R of the 8 registers, each followed by its
// share of the 24 product steps, spread over rounds 2..R-1 (VPCLMULQDQ and
// VAESENC share the pipes; grouped in the first rounds, they left the
// multiplier idle through the rest of the iteration).
template <int R, int r>
[[gnu::always_inline]] ACCELCRYPT_TARGET_VAES512 inline void Rounds(
    const __m512i* rk, __m512i* b, Acc* acc, Acc* held, __m512i* d,
    const GhashTable* t, const __m512i* hk, const uint8_t* gsrc, __m512i rev,
    __m128i x) {
  if constexpr (r <= R) {
#pragma GCC unroll 8
    for (int i = 0; i < kRegs; ++i) {
      b[i] = r < R ? _mm512_aesenc_epi128(b[i], rk[r])
                   : _mm512_aesenclast_epi128(b[i], rk[r]);
    }
    if constexpr (r >= 2 && r < R) {
      HashSteps<3 * kRegs*(r - 2) / (R - 2), 3 * kRegs*(r - 1) / (R - 2)>(
          acc, held, d, t, hk, gsrc, rev, x);
    }
    Rounds<R, r + 1>(rk, b, acc, held, d, t, hk, gsrc, rev, x);
  }
}

// EncryptAndHash runs the AES rounds for 32 counter blocks in `b` and, in
// the same instruction stream, the GHASH products of the 32 blocks at
// `gsrc`. `acc` holds the previous iteration's unreduced sums on entry,
// reduced here after round 1 (long after their last product: reduced at
// the end of their own iteration, that chain sat at every iteration's tail
// and held the reorder window), and this iteration's on return.
template <int R>
[[gnu::always_inline]] ACCELCRYPT_TARGET_VAES512 inline void EncryptAndHash(
    const __m512i* rk, __m512i* b, const GhashTable* t, const __m512i* hk,
    const uint8_t* gsrc, __m512i rev, Acc* acc) {
#pragma GCC unroll 8
  for (int i = 0; i < kRegs; ++i) b[i] = _mm512_xor_si512(b[i], rk[0]);
#pragma GCC unroll 8
  for (int i = 0; i < kRegs; ++i) b[i] = _mm512_aesenc_epi128(b[i], rk[1]);
  const __m128i x = FinishAcc(*acc);
  *acc = ZeroAcc();
  __m512i d = _mm512_setzero_si512();
  Acc held;
  Rounds<R, 2>(rk, b, acc, &held, &d, t, hk, gsrc, rev, x);
}

// Opmask for register i of a tail of `left` blocks (0 past the end).
ACCELCRYPT_TARGET_VAES512 inline __mmask8 TailMask(size_t left, int i) {
  const size_t first = 4 * static_cast<size_t>(i);
  return left > first ? BlockMask(left - first) : static_cast<__mmask8>(0);
}

template <int R, int N, bool kDecrypt>
ACCELCRYPT_TARGET_VAES512 inline __m128i GcmTail(
    const __m512i* rk, const GhashTable* t, __m512i c, __m512i swap,
    __m512i rev, const uint8_t* in, uint8_t* out, size_t left, __m128i x) {
  const __m512i four =
      _mm512_set_epi32(4, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0);
  __m512i b[N], d[N];
#pragma GCC unroll 8
  for (int i = 0; i < N; ++i) {
    b[i] = _mm512_shuffle_epi8(c, swap);
    c = _mm512_add_epi32(c, four);
  }
  EncryptN<R>(rk, b, N);
#pragma GCC unroll 8
  for (int i = 0; i < N; ++i) {
    const __mmask8 m = TailMask(left, i);
    const __m512i p = _mm512_maskz_loadu_epi64(m, in + 64 * i);
    const __m512i o = _mm512_maskz_xor_epi64(m, b[i], p);
    _mm512_mask_storeu_epi64(out + 64 * i, m, o);
    d[i] = _mm512_shuffle_epi8(kDecrypt ? p : o, rev);
  }
  return GhashTail(t, d, left, x);
}

template <int R, bool kDecrypt>
ACCELCRYPT_TARGET_VAES512 void Gcm(const AesRoundKeys* k, const GhashTable* t,
                                   uint8_t ctr[16], uint8_t xi[16],
                                   const uint8_t* in, uint8_t* out,
                                   size_t num_blocks) {
  __m512i rk[R + 1];
#pragma GCC unroll 16
  for (int i = 0; i <= R; ++i) {
    rk[i] = _mm512_broadcast_i32x4(
        _mm_load_si128(reinterpret_cast<const __m128i*>(k->enc[i])));
  }
  const __m512i rev = Reverse16x4();
  const __m512i swap = Swap32x4();
  __m128i x =
      _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(xi)),
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
  // Encryption hashes its own output, so it runs two steps behind: each
  // iteration hashes the 32 ciphertext blocks of the iteration before the
  // previous one (still in L1) while encrypting the next 32. One step
  // behind, the loads waited for the previous iteration's stores: a ZMM
  // load does not take its data from the store buffer on every CPU, and the
  // stores reach L1 only after the iteration retires. Decryption hashes its
  // input directly.
  const uint8_t* pending = nullptr;  // hashed this iteration
  const uint8_t* written = nullptr;  // hashed next iteration
  Acc acc = AccOf(x);                // unreduced, see EncryptAndHash
  // The Karatsuba entries (h.lo ^ h.hi) of H^32..H^1, four per register,
  // for the main loop (the table keeps them for H^16..H^1 only).
  __m512i hk[kRegs];
  if (left >= 4 * kRegs) {
#pragma GCC unroll 8
    for (int i = 0; i < kRegs; ++i) {
      const __m512i h = _mm512_load_si512(t->powers[4 * i]);
      hk[i] = _mm512_xor_si512(h, _mm512_shuffle_epi32(h, _MM_PERM_BADC));
    }
  }
  // The last byte of the first counter block of the next iteration.
  unsigned low = ctr[15];
  for (; left >= 4 * kRegs; left -= 4 * kRegs) {
    __m512i b[kRegs];
    if (low <= 256 - 4 * kRegs) {
      // No carry out of the last byte within these 32 blocks (7 of 8
      // iterations): one byte swap, then adds on that byte of the
      // big-endian blocks (the top byte of their last dword).
      b[0] = _mm512_shuffle_epi8(c, swap);
#pragma GCC unroll 8
      for (int i = 1; i < kRegs; ++i) {
        const int k = (4 * i) << 24;
        b[i] = _mm512_add_epi32(b[0], _mm512_set_epi32(k, 0, 0, 0, k, 0, 0, 0,
                                                       k, 0, 0, 0, k, 0, 0, 0));
      }
      c = _mm512_add_epi32(c, _mm512_set_epi32(32, 0, 0, 0, 32, 0, 0, 0, 32, 0,
                                               0, 0, 32, 0, 0, 0));
    } else {
#pragma GCC unroll 8
      for (int i = 0; i < kRegs; ++i) {
        b[i] = _mm512_shuffle_epi8(c, swap);
        c = _mm512_add_epi32(c, four);
      }
    }
    low = (low + 4 * kRegs) & 0xff;
    if (kDecrypt) {
      // GHASH reads the ciphertext during the rounds, before the stores;
      // each register's input is loaded again (L1) just before its own
      // output overwrites it when `in` equals `out` (loading all eight
      // first, as encryption does, cost 7% here).
      EncryptAndHash<R>(rk, b, t, hk, in, rev, &acc);
#pragma GCC unroll 8
      for (int i = 0; i < kRegs; ++i) {
        _mm512_storeu_si512(
            out + 64 * i,
            _mm512_xor_si512(b[i], _mm512_loadu_si512(in + 64 * i)));
      }
    } else {
      if (pending != nullptr) {
        EncryptAndHash<R>(rk, b, t, hk, pending, rev, &acc);
      } else {
        EncryptN<R>(rk, b, kRegs);
      }
      // Every input load comes before the first store: a load issued after
      // a store that shares its address bits 0-11 (output 16 bytes past a
      // 4 KiB multiple from the input) waits for that store's data.
#pragma GCC unroll 8
      for (int i = 0; i < kRegs; ++i) {
        b[i] = _mm512_xor_si512(b[i], _mm512_loadu_si512(in + 64 * i));
      }
#pragma GCC unroll 8
      for (int i = 0; i < kRegs; ++i) _mm512_storeu_si512(out + 64 * i, b[i]);
      pending = written;
      written = out;
    }
    in += 64 * kRegs;
    out += 64 * kRegs;
  }
  x = FinishAcc(acc);
  for (const uint8_t* p : {pending, written}) {
    if (p == nullptr) continue;
    __m512i d[kRegs];
#pragma GCC unroll 8
    for (int i = 0; i < kRegs; ++i) {
      d[i] = _mm512_shuffle_epi8(_mm512_loadu_si512(p + 64 * i), rev);
    }
    x = GhashFull(t, d, x);
  }
  if (left > 0) {
    // 1..31 blocks: a fixed register count (2 or 8) keeps the rounds
    // unrolled with the blocks in registers; lanes past `left` are masked.
    if (left <= 8) {
      x = GcmTail<R, 2, kDecrypt>(rk, t, c, swap, rev, in, out, left, x);
    } else {
      x = GcmTail<R, kRegs, kDecrypt>(rk, t, c, swap, rev, in, out, left, x);
    }
  }
  _mm_storeu_si128(reinterpret_cast<__m128i*>(xi),
                   _mm_shuffle_epi8(x, GhashByteReverse()));
  AdvanceCounter32(ctr, num_blocks);
}

}  // namespace

void AesGcmEncryptVaes512(const AesRoundKeys* k, const GhashTable* t,
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

void AesGcmDecryptVaes512(const AesRoundKeys* k, const GhashTable* t,
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

ACCELCRYPT_TARGET_VAES512 void GhashVaes512(const GhashTable* t, uint8_t xi[16],
                                            const uint8_t* data,
                                            size_t num_blocks) {
  const __m512i rev = Reverse16x4();
  __m128i x =
      _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(xi)),
                       GhashByteReverse());
  for (; num_blocks >= 4 * kRegs; num_blocks -= 4 * kRegs, data += 64 * kRegs) {
    __m512i d[kRegs];
#pragma GCC unroll 8
    for (int i = 0; i < kRegs; ++i) {
      d[i] = _mm512_shuffle_epi8(_mm512_loadu_si512(data + 64 * i), rev);
    }
    x = GhashFull(t, d, x);
  }
  if (num_blocks > 0) {
    __m512i d[kRegs];
    for (size_t i = 0; 4 * i < num_blocks; ++i) {
      d[i] =
          _mm512_shuffle_epi8(_mm512_maskz_loadu_epi64(
                                  BlockMask(num_blocks - 4 * i), data + 64 * i),
                              rev);
    }
    x = GhashTail(t, d, num_blocks, x);
  }
  _mm_storeu_si128(reinterpret_cast<__m128i*>(xi),
                   _mm_shuffle_epi8(x, GhashByteReverse()));
}

}  // namespace accelcrypt::x86::internal
