// SPDX-License-Identifier: Apache-2.0
// The parallel AES modes (ECB, CTR, CBC decryption) with VAES over ZMM
// registers: four blocks per register, eight registers (32 blocks) in flight
// to cover VAESENC latency. Tails use AVX-512 opmask loads and stores.
#include <immintrin.h>

#include "backends/x86/internal/aes_leaf.h"
#include "backends/x86/internal/ghash_common.h"
#include "backends/x86/internal/target.h"

namespace accelcrypt::x86::internal {
namespace {

constexpr int kRegs = 8;  // ZMM registers in flight
constexpr size_t kBlocksPerReg = 4;

template <int R>
ACCELCRYPT_TARGET_VAES512 inline void LoadKeys(const uint8_t (*src)[16],
                                               __m512i* rk) {
#pragma GCC unroll 16
  for (int i = 0; i <= R; ++i) {
    rk[i] = _mm512_broadcast_i32x4(
        _mm_load_si128(reinterpret_cast<const __m128i*>(src[i])));
  }
}

template <int R, int N>
ACCELCRYPT_TARGET_VAES512 inline void EncryptN(const __m512i* rk, __m512i* b) {
#pragma GCC unroll 16
  for (int i = 0; i < N; ++i) b[i] = _mm512_xor_si512(b[i], rk[0]);
#pragma GCC unroll 14
  for (int r = 1; r < R; ++r) {
#pragma GCC unroll 16
    for (int i = 0; i < N; ++i) b[i] = _mm512_aesenc_epi128(b[i], rk[r]);
  }
#pragma GCC unroll 16
  for (int i = 0; i < N; ++i) b[i] = _mm512_aesenclast_epi128(b[i], rk[R]);
}

template <int R, int N>
ACCELCRYPT_TARGET_VAES512 inline void DecryptN(const __m512i* rk, __m512i* b) {
#pragma GCC unroll 16
  for (int i = 0; i < N; ++i) b[i] = _mm512_xor_si512(b[i], rk[0]);
#pragma GCC unroll 14
  for (int r = 1; r < R; ++r) {
#pragma GCC unroll 16
    for (int i = 0; i < N; ++i) b[i] = _mm512_aesdec_epi128(b[i], rk[r]);
  }
#pragma GCC unroll 16
  for (int i = 0; i < N; ++i) b[i] = _mm512_aesdeclast_epi128(b[i], rk[R]);
}

ACCELCRYPT_TARGET_VAES512 inline __m512i Load(const uint8_t* p) {
  return _mm512_loadu_si512(p);
}
ACCELCRYPT_TARGET_VAES512 inline void Store(uint8_t* p, __m512i v) {
  _mm512_storeu_si512(p, v);
}
// Opmask selecting the 64-bit lanes of the first `n` (1..3) blocks.
ACCELCRYPT_TARGET_VAES512 inline __mmask8 BlockMask(size_t n) {
  return static_cast<__mmask8>((1u << (2 * n)) - 1);
}
// A whole register goes unmasked: a masked store does not forward to a
// later load, and in-place callers (the next call reading what this one
// wrote) then wait for it to reach the cache.
ACCELCRYPT_TARGET_VAES512 inline __m512i LoadPartial(const uint8_t* p,
                                                     size_t n) {
  if (n == kBlocksPerReg) return _mm512_loadu_si512(p);
  return _mm512_maskz_loadu_epi64(BlockMask(n), p);
}
ACCELCRYPT_TARGET_VAES512 inline void StorePartial(uint8_t* p, __m512i v,
                                                   size_t n) {
  if (n == kBlocksPerReg) return _mm512_storeu_si512(p, v);
  _mm512_mask_storeu_epi64(p, BlockMask(n), v);
}

ACCELCRYPT_TARGET_VAES512 inline __m512i Reverse16() {
  return _mm512_broadcast_i32x4(
      _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
}

// Opmask for register i of a tail of `left` blocks (0 past the end).
ACCELCRYPT_TARGET_VAES512 inline __mmask8 TailMask(size_t left, int i) {
  const size_t first = kBlocksPerReg * static_cast<size_t>(i);
  return left > first ? BlockMask(left - first > 3 ? 4 : left - first)
                      : static_cast<__mmask8>(0);
}

template <int R, int N, bool kDecrypt>
ACCELCRYPT_TARGET_VAES512 inline void EcbTail(const __m512i* rk,
                                              const uint8_t* in, uint8_t* out,
                                              size_t left) {
  __m512i b[N];
#pragma GCC unroll 8
  for (int i = 0; i < N; ++i) {
    b[i] = _mm512_maskz_loadu_epi64(TailMask(left, i), in + 64 * i);
  }
  if (kDecrypt) {
    DecryptN<R, N>(rk, b);
  } else {
    EncryptN<R, N>(rk, b);
  }
#pragma GCC unroll 8
  for (int i = 0; i < N; ++i) {
    _mm512_mask_storeu_epi64(out + 64 * i, TailMask(left, i), b[i]);
  }
}

template <int R, int N>
ACCELCRYPT_TARGET_VAES512 inline void CtrTail(const __m512i* rk, __m512i c,
                                              __m512i rev, const uint8_t* in,
                                              uint8_t* out, size_t left) {
  const __m512i four = _mm512_set_epi64(0, 4, 0, 4, 0, 4, 0, 4);
  __m512i b[N];
#pragma GCC unroll 8
  for (int i = 0; i < N; ++i) {
    b[i] = _mm512_shuffle_epi8(c, rev);
    c = _mm512_add_epi64(c, four);
  }
  EncryptN<R, N>(rk, b);
#pragma GCC unroll 8
  for (int i = 0; i < N; ++i) {
    const __mmask8 m = TailMask(left, i);
    _mm512_mask_storeu_epi64(
        out + 64 * i, m,
        _mm512_xor_si512(b[i], _mm512_maskz_loadu_epi64(m, in + 64 * i)));
  }
}

template <int R, bool kDecrypt>
ACCELCRYPT_TARGET_VAES512 void Ecb(const AesRoundKeys* k, const uint8_t* in,
                                   uint8_t* out, size_t num_blocks) {
  __m512i rk[R + 1];
  LoadKeys<R>(kDecrypt ? k->dec : k->enc, rk);
  for (; num_blocks >= kRegs * kBlocksPerReg;
       num_blocks -= kRegs * kBlocksPerReg) {
    __m512i b[kRegs];
#pragma GCC unroll 16
    for (int i = 0; i < kRegs; ++i) b[i] = Load(in + 64 * i);
    if (kDecrypt) {
      DecryptN<R, kRegs>(rk, b);
    } else {
      EncryptN<R, kRegs>(rk, b);
    }
#pragma GCC unroll 16
    for (int i = 0; i < kRegs; ++i) Store(out + 64 * i, b[i]);
    in += 64 * kRegs;
    out += 64 * kRegs;
  }
  // 1..31 blocks: a fixed register count (2 or 8) keeps the rounds unrolled
  // with the blocks in registers; lanes past the end are masked.
  if (num_blocks > 0) {
    if (num_blocks <= 8) {
      EcbTail<R, 2, kDecrypt>(rk, in, out, num_blocks);
    } else {
      EcbTail<R, kRegs, kDecrypt>(rk, in, out, num_blocks);
    }
  }
}

template <int R>
ACCELCRYPT_TARGET_VAES512 void Ctr128(const AesRoundKeys* k, uint8_t ctr[16],
                                      const uint8_t* in, uint8_t* out,
                                      size_t num_blocks) {
  const size_t total_blocks = num_blocks;
  __m512i rk[R + 1];
  LoadKeys<R>(k->enc, rk);
  const __m512i rev = Reverse16();
  // Counters as little-endian 128-bit integers, one per lane; the caller
  // guarantees the low 64 bits do not wrap, so VPADDQ is enough.
  __m512i c = _mm512_add_epi64(
      _mm512_shuffle_epi8(_mm512_broadcast_i32x4(_mm_loadu_si128(
                              reinterpret_cast<const __m128i*>(ctr))),
                          rev),
      _mm512_set_epi64(0, 3, 0, 2, 0, 1, 0, 0));
  const __m512i four = _mm512_set_epi64(0, 4, 0, 4, 0, 4, 0, 4);
  for (; num_blocks >= kRegs * kBlocksPerReg;
       num_blocks -= kRegs * kBlocksPerReg) {
    __m512i b[kRegs];
#pragma GCC unroll 16
    for (int i = 0; i < kRegs; ++i) {
      b[i] = _mm512_shuffle_epi8(c, rev);
      c = _mm512_add_epi64(c, four);
    }
    EncryptN<R, kRegs>(rk, b);
#pragma GCC unroll 16
    for (int i = 0; i < kRegs; ++i) {
      Store(out + 64 * i, _mm512_xor_si512(b[i], Load(in + 64 * i)));
    }
    in += 64 * kRegs;
    out += 64 * kRegs;
  }
  if (num_blocks > 0) {
    if (num_blocks <= 8) {
      CtrTail<R, 2>(rk, c, rev, in, out, num_blocks);
    } else {
      CtrTail<R, kRegs>(rk, c, rev, in, out, num_blocks);
    }
  }
  AdvanceCounter128(ctr, total_blocks);
}

template <int R>
ACCELCRYPT_TARGET_VAES512 void CbcDecrypt(const AesRoundKeys* k, uint8_t iv[16],
                                          const uint8_t* in, uint8_t* out,
                                          size_t num_blocks) {
  __m512i rk[R + 1];
  LoadKeys<R>(k->dec, rk);
  // `last` keeps the previous ciphertext block in its top lane; VALIGNQ by
  // six qwords builds [c(i-1), c(i), c(i+1), c(i+2)] from two registers.
  __m512i last = _mm512_broadcast_i32x4(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(iv)));
  for (; num_blocks >= kRegs * kBlocksPerReg;
       num_blocks -= kRegs * kBlocksPerReg) {
    __m512i c[kRegs], b[kRegs];
#pragma GCC unroll 16
    for (int i = 0; i < kRegs; ++i) b[i] = c[i] = Load(in + 64 * i);
    DecryptN<R, kRegs>(rk, b);
    Store(out, _mm512_xor_si512(b[0], _mm512_alignr_epi64(c[0], last, 6)));
#pragma GCC unroll 16
    for (int i = 1; i < kRegs; ++i) {
      Store(out + 64 * i,
            _mm512_xor_si512(b[i], _mm512_alignr_epi64(c[i], c[i - 1], 6)));
    }
    last = c[kRegs - 1];
    in += 64 * kRegs;
    out += 64 * kRegs;
  }
  __m128i iv_out = _mm512_extracti32x4_epi32(last, 3);
  while (num_blocks > 0) {
    const size_t n = num_blocks < kBlocksPerReg ? num_blocks : kBlocksPerReg;
    __m512i c = LoadPartial(in, n);
    iv_out =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 16 * (n - 1)));
    __m512i b = c;
    DecryptN<R, 1>(rk, &b);
    StorePartial(out, _mm512_xor_si512(b, _mm512_alignr_epi64(c, last, 6)), n);
    last = c;
    in += 16 * n;
    out += 16 * n;
    num_blocks -= n;
  }
  _mm_storeu_si128(reinterpret_cast<__m128i*>(iv), iv_out);
}

}  // namespace

void AesEcbEncryptVaes512(const AesRoundKeys* k, const uint8_t* in,
                          uint8_t* out, size_t num_blocks) {
  switch (k->rounds) {
    case 10:
      return Ecb<10, false>(k, in, out, num_blocks);
    case 12:
      return Ecb<12, false>(k, in, out, num_blocks);
    default:
      return Ecb<14, false>(k, in, out, num_blocks);
  }
}

void AesEcbDecryptVaes512(const AesRoundKeys* k, const uint8_t* in,
                          uint8_t* out, size_t num_blocks) {
  switch (k->rounds) {
    case 10:
      return Ecb<10, true>(k, in, out, num_blocks);
    case 12:
      return Ecb<12, true>(k, in, out, num_blocks);
    default:
      return Ecb<14, true>(k, in, out, num_blocks);
  }
}

void AesCtr128Vaes512(const AesRoundKeys* k, uint8_t ctr[16], const uint8_t* in,
                      uint8_t* out, size_t num_blocks) {
  switch (k->rounds) {
    case 10:
      return Ctr128<10>(k, ctr, in, out, num_blocks);
    case 12:
      return Ctr128<12>(k, ctr, in, out, num_blocks);
    default:
      return Ctr128<14>(k, ctr, in, out, num_blocks);
  }
}

void AesCbcDecryptVaes512(const AesRoundKeys* k, uint8_t iv[16],
                          const uint8_t* in, uint8_t* out, size_t num_blocks) {
  switch (k->rounds) {
    case 10:
      return CbcDecrypt<10>(k, iv, in, out, num_blocks);
    case 12:
      return CbcDecrypt<12>(k, iv, in, out, num_blocks);
    default:
      return CbcDecrypt<14>(k, iv, in, out, num_blocks);
  }
}

}  // namespace accelcrypt::x86::internal
