// SPDX-License-Identifier: Apache-2.0
// AES-GCM bulk data with VAES and VPCLMULQDQ over YMM registers (VEX only: no
// AVX-512 instruction, no opmask), for CPUs such as AMD Zen 3 and Intel
// client parts. 16 blocks per iteration in 8 registers: the CTR32 rounds and
// the GHASH products of the previous 16 blocks share one loop body (one
// register of products per AES round), and GHASH is aggregated: the 16
// blocks are multiplied by H^16..H^1 and reduced once, so only x*H^16 and
// that reduction sit on the loop-carried chain.
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

// EncryptAndHash runs the rounds of 16 counter blocks in `b` and, one
// register per round, the GHASH products of the 16 blocks at `gsrc`.
template <int R>
ACCELCRYPT_TARGET_VAES256 inline __m128i EncryptAndHash(
    const Keys256& rk, __m256i* b, const GhashTable* t, const uint8_t* gsrc,
    __m256i rev, __m128i x) {
  Acc acc = ZeroAcc();
#pragma GCC unroll 8
  for (int i = 0; i < kRegs; ++i) b[i] = _mm256_xor_si256(b[i], rk[0]);
#pragma GCC unroll 14
  for (int r = 1; r < R; ++r) {
#pragma GCC unroll 8
    for (int i = 0; i < kRegs; ++i) b[i] = _mm256_aesenc_epi128(b[i], rk[r]);
    if (r <= kRegs) {
      // Rounds 1..7 take registers 1..7; round 8 takes register 0, whose
      // first block carries the running hash x (the previous iteration's
      // reduction, waited for the longest): (x ^ b0) * H^16.
      const int j = r % kRegs;
      __m256i d = _mm256_shuffle_epi8(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(gsrc + 32 * j)),
          rev);
      if (j == 0) d = _mm256_xor_si256(d, _mm256_zextsi128_si256(x));
      MulAddPower(&acc, d, t, kFirst + 2 * j);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < kRegs; ++i) b[i] = _mm256_aesenclast_epi128(b[i], rk[R]);
  return FinishAcc(acc);
}

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
  // Encryption hashes its own output one iteration behind (still in L1);
  // decryption hashes its input as it loads it.
  const uint8_t* pending = nullptr;
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
      // GHASH reads the ciphertext during the rounds, before any store;
      // each register's blocks are loaded again (L1) just before their own
      // output overwrites them when `in` equals `out` (the only overlap
      // allowed). Loading all up front would hold 8 more registers.
      x = EncryptAndHash<R>(rk, b, t, in, rev, x);
#pragma GCC unroll 8
      for (int i = 0; i < kRegs; ++i) {
        _mm256_storeu_si256(
            reinterpret_cast<__m256i*>(out + 32 * i),
            _mm256_xor_si256(
                b[i], _mm256_loadu_si256(
                          reinterpret_cast<const __m256i*>(in + 32 * i))));
      }
    } else {
      if (pending != nullptr) {
        x = EncryptAndHash<R>(rk, b, t, pending, rev, x);
      } else {
        EncryptN<R>(rk, b, kRegs);
      }
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
    x = GhashFull(t, d, x);
  }
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
