// SPDX-License-Identifier: Apache-2.0
// The parallel AES modes (ECB, CTR, CBC decryption) with VAES over YMM
// registers (no AVX-512 needed): two blocks per register, eight registers
// (16 blocks) in flight. A last odd block goes through 128-bit AESENC.
#include <immintrin.h>

#include "backends/x86/internal/aes_leaf.h"
#include "backends/x86/internal/ghash_common.h"
#include "backends/x86/internal/target.h"

namespace accelcrypt::x86::internal {
namespace {

constexpr int kRegs = 8;
constexpr size_t kBlocksPerReg = 2;

template <int R>
ACCELCRYPT_TARGET_VAES256 inline void LoadKeys(const uint8_t (*src)[16],
                                               __m256i* rk) {
#pragma GCC unroll 16
  for (int i = 0; i <= R; ++i) {
    rk[i] = _mm256_broadcastsi128_si256(
        _mm_load_si128(reinterpret_cast<const __m128i*>(src[i])));
  }
}

template <int R, int N>
ACCELCRYPT_TARGET_VAES256 inline void EncryptN(const __m256i* rk, __m256i* b) {
#pragma GCC unroll 16
  for (int i = 0; i < N; ++i) b[i] = _mm256_xor_si256(b[i], rk[0]);
#pragma GCC unroll 14
  for (int r = 1; r < R; ++r) {
#pragma GCC unroll 16
    for (int i = 0; i < N; ++i) b[i] = _mm256_aesenc_epi128(b[i], rk[r]);
  }
#pragma GCC unroll 16
  for (int i = 0; i < N; ++i) b[i] = _mm256_aesenclast_epi128(b[i], rk[R]);
}

template <int R, int N>
ACCELCRYPT_TARGET_VAES256 inline void DecryptN(const __m256i* rk, __m256i* b) {
#pragma GCC unroll 16
  for (int i = 0; i < N; ++i) b[i] = _mm256_xor_si256(b[i], rk[0]);
#pragma GCC unroll 14
  for (int r = 1; r < R; ++r) {
#pragma GCC unroll 16
    for (int i = 0; i < N; ++i) b[i] = _mm256_aesdec_epi128(b[i], rk[r]);
  }
#pragma GCC unroll 16
  for (int i = 0; i < N; ++i) b[i] = _mm256_aesdeclast_epi128(b[i], rk[R]);
}

// One block through the low lane of the broadcast keys.
template <int R>
ACCELCRYPT_TARGET_VAES256 inline __m128i Encrypt1(const __m256i* rk,
                                                  __m128i b) {
  b = _mm_xor_si128(b, _mm256_castsi256_si128(rk[0]));
#pragma GCC unroll 16
  for (int r = 1; r < R; ++r) {
    b = _mm_aesenc_si128(b, _mm256_castsi256_si128(rk[r]));
  }
  return _mm_aesenclast_si128(b, _mm256_castsi256_si128(rk[R]));
}

template <int R>
ACCELCRYPT_TARGET_VAES256 inline __m128i Decrypt1(const __m256i* rk,
                                                  __m128i b) {
  b = _mm_xor_si128(b, _mm256_castsi256_si128(rk[0]));
#pragma GCC unroll 16
  for (int r = 1; r < R; ++r) {
    b = _mm_aesdec_si128(b, _mm256_castsi256_si128(rk[r]));
  }
  return _mm_aesdeclast_si128(b, _mm256_castsi256_si128(rk[R]));
}

ACCELCRYPT_TARGET_VAES256 inline __m256i Load(const uint8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}
ACCELCRYPT_TARGET_VAES256 inline void Store(uint8_t* p, __m256i v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
}
ACCELCRYPT_TARGET_VAES256 inline __m128i Load1(const uint8_t* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}
ACCELCRYPT_TARGET_VAES256 inline void Store1(uint8_t* p, __m128i v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v);
}

ACCELCRYPT_TARGET_VAES256 inline __m256i Reverse16() {
  return _mm256_broadcastsi128_si256(
      _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
}

template <int R, bool kDecrypt>
ACCELCRYPT_TARGET_VAES256 void Ecb(const AesRoundKeys* k, const uint8_t* in,
                                   uint8_t* out, size_t num_blocks) {
  __m256i rk[R + 1];
  LoadKeys<R>(kDecrypt ? k->dec : k->enc, rk);
  for (; num_blocks >= kRegs * kBlocksPerReg;
       num_blocks -= kRegs * kBlocksPerReg) {
    __m256i b[kRegs];
#pragma GCC unroll 16
    for (int i = 0; i < kRegs; ++i) b[i] = Load(in + 32 * i);
    if (kDecrypt) {
      DecryptN<R, kRegs>(rk, b);
    } else {
      EncryptN<R, kRegs>(rk, b);
    }
#pragma GCC unroll 16
    for (int i = 0; i < kRegs; ++i) Store(out + 32 * i, b[i]);
    in += 32 * kRegs;
    out += 32 * kRegs;
  }
  for (; num_blocks >= kBlocksPerReg; num_blocks -= kBlocksPerReg) {
    __m256i b = Load(in);
    if (kDecrypt) {
      DecryptN<R, 1>(rk, &b);
    } else {
      EncryptN<R, 1>(rk, &b);
    }
    Store(out, b);
    in += 32;
    out += 32;
  }
  if (num_blocks > 0) {
    Store1(out,
           kDecrypt ? Decrypt1<R>(rk, Load1(in)) : Encrypt1<R>(rk, Load1(in)));
  }
}

template <int R>
ACCELCRYPT_TARGET_VAES256 void Ctr128(const AesRoundKeys* k, uint8_t ctr[16],
                                      const uint8_t* in, uint8_t* out,
                                      size_t num_blocks) {
  const size_t total_blocks = num_blocks;
  __m256i rk[R + 1];
  LoadKeys<R>(k->enc, rk);
  const __m256i rev = Reverse16();
  // Little-endian counters, one per lane; the caller guarantees the low 64
  // bits do not wrap.
  __m256i c = _mm256_add_epi64(
      _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(Load1(ctr)), rev),
      _mm256_set_epi64x(0, 1, 0, 0));
  const __m256i one = _mm256_set_epi64x(0, 1, 0, 1);
  const __m256i two = _mm256_set_epi64x(0, 2, 0, 2);
  // Once the counter's last byte is a multiple of 16, the 16 blocks of an
  // iteration differ from the first only in the low 4 bits of that byte:
  // counter i is (first counter) ^ i, and with round key 0 folded in once,
  // each block costs one VPXOR (no byte swap, no add, no round-0 XOR per
  // register). The blocks before that point (up to 15) go two at a time.
  unsigned head = (16u - (ctr[15] & 15u)) & 15u;
  if (num_blocks < head + kRegs * kBlocksPerReg) head = 0;
  for (; head >= kBlocksPerReg; head -= kBlocksPerReg) {
    __m256i b = _mm256_shuffle_epi8(c, rev);
    c = _mm256_add_epi64(c, two);
    EncryptN<R, 1>(rk, &b);
    Store(out, _mm256_xor_si256(b, Load(in)));
    in += 32;
    out += 32;
    num_blocks -= kBlocksPerReg;
  }
  if (head == 1) {
    const __m128i b =
        Encrypt1<R>(rk, _mm256_castsi256_si128(_mm256_shuffle_epi8(c, rev)));
    Store1(out, _mm_xor_si128(b, Load1(in)));
    c = _mm256_add_epi64(c, one);
    in += 16;
    out += 16;
    num_blocks -= 1;
  }
  if (((ctr[15] + (total_blocks - num_blocks)) & 15u) == 0 &&
      num_blocks >= kRegs * kBlocksPerReg) {
    // The counter's low half lives in a general register: kept in a vector
    // register GCC spilled it, and its store and reload each iteration made
    // the speed depend on where the stack fell (86-91% of the ceiling).
    uint64_t low = 0;
#pragma GCC unroll 8
    for (int i = 8; i < 16; ++i) low = (low << 8) | ctr[i];
    low += total_blocks - num_blocks;
    const __m128i high = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(ctr));
    // Round key 0, with lane 1's counter n + 1 = n ^ 1 folded in.
    const __m256i rk0 =
        _mm256_xor_si256(rk[0], _mm256_set_epi32(1 << 24, 0, 0, 0, 0, 0, 0, 0));
    const size_t iterations = num_blocks / (kRegs * kBlocksPerReg);
    for (size_t n = 0; n < iterations; ++n) {
      // Register i takes counters n ^ 2i and n ^ (2i + 1) (n is a multiple
      // of 16).
      const __m256i first = _mm256_xor_si256(
          _mm256_broadcastsi128_si256(_mm_insert_epi64(
              high, static_cast<long long>(__builtin_bswap64(low)), 1)),
          rk0);
      low += kRegs * kBlocksPerReg;
      __m256i b[kRegs];
#pragma GCC unroll 16
      for (int i = 0; i < kRegs; ++i) {
        b[i] = _mm256_xor_si256(
            first,
            _mm256_set_epi32((2 * i) << 24, 0, 0, 0, (2 * i) << 24, 0, 0, 0));
      }
#pragma GCC unroll 14
      for (int r = 1; r < R; ++r) {
#pragma GCC unroll 16
        for (int i = 0; i < kRegs; ++i)
          b[i] = _mm256_aesenc_epi128(b[i], rk[r]);
      }
      // The input is folded into the last round key (AESENCLAST ends with
      // an XOR): the XOR leaves the blocks' dependency chains. All loads
      // come before the stores: a load issued after a store that shares its
      // address bits 0-11 (output 16 bytes past a 4 KiB multiple from the
      // input) waits for that store's data.
#pragma GCC unroll 16
      for (int i = 0; i < kRegs; ++i) {
        b[i] = _mm256_aesenclast_epi128(
            b[i], _mm256_xor_si256(rk[R], Load(in + 32 * i)));
      }
#pragma GCC unroll 16
      for (int i = 0; i < kRegs; ++i) Store(out + 32 * i, b[i]);
      in += 32 * kRegs;
      out += 32 * kRegs;
    }
    const size_t advanced = iterations * kRegs * kBlocksPerReg;
    num_blocks -= advanced;
    const auto step = static_cast<long long>(advanced);
    c = _mm256_add_epi64(c, _mm256_set_epi64x(0, step, 0, step));
  }
  for (; num_blocks >= kRegs * kBlocksPerReg;
       num_blocks -= kRegs * kBlocksPerReg) {
    __m256i b[kRegs];
#pragma GCC unroll 16
    for (int i = 0; i < kRegs; ++i) {
      b[i] = _mm256_shuffle_epi8(c, rev);
      c = _mm256_add_epi64(c, two);
    }
    EncryptN<R, kRegs>(rk, b);
#pragma GCC unroll 16
    for (int i = 0; i < kRegs; ++i) {
      Store(out + 32 * i, _mm256_xor_si256(b[i], Load(in + 32 * i)));
    }
    in += 32 * kRegs;
    out += 32 * kRegs;
  }
  for (; num_blocks >= kBlocksPerReg; num_blocks -= kBlocksPerReg) {
    __m256i b = _mm256_shuffle_epi8(c, rev);
    c = _mm256_add_epi64(c, two);
    EncryptN<R, 1>(rk, &b);
    Store(out, _mm256_xor_si256(b, Load(in)));
    in += 32;
    out += 32;
  }
  if (num_blocks > 0) {
    __m128i b =
        Encrypt1<R>(rk, _mm256_castsi256_si128(_mm256_shuffle_epi8(c, rev)));
    Store1(out, _mm_xor_si128(b, Load1(in)));
  }
  AdvanceCounter128(ctr, total_blocks);
}

template <int R>
ACCELCRYPT_TARGET_VAES256 void CbcDecrypt(const AesRoundKeys* k, uint8_t iv[16],
                                          const uint8_t* in, uint8_t* out,
                                          size_t num_blocks) {
  __m256i rk[R + 1];
  LoadKeys<R>(k->dec, rk);
  __m128i prev = Load1(iv);
  // The first 32 bytes of each iteration are loaded during the iteration
  // before, ahead of its stores: when the output sits 16 bytes past a 4 KiB
  // multiple from the input, those loads share address bits 0-11 with the
  // iteration's last store, and issued after it they waited for its data
  // (87% of the ceiling instead of 91%).
  __m256i next = _mm256_setzero_si256(), next_bcast = next;
  if (num_blocks >= kRegs * kBlocksPerReg) {
    next = Load(in);
    next_bcast = _mm256_broadcastsi128_si256(Load1(in));
  }
  for (; num_blocks >= kRegs * kBlocksPerReg;
       num_blocks -= kRegs * kBlocksPerReg) {
    __m256i b[kRegs], p[kRegs];
    // p[i] = [c(2i-1), c(2i)]: one unaligned load of the ciphertext 16
    // bytes back (a cross-lane permute per register, as the loop had,
    // shares the shuffle pipe with VAES on some CPUs and cost 10%), except
    // p[0], whose first block is the chaining value: a blend (any ALU
    // pipe) of it and the broadcast first block. All loads come before the
    // stores (`in` may equal `out`).
    b[0] = next;
    p[0] = _mm256_blend_epi32(_mm256_castsi128_si256(prev), next_bcast, 0xf0);
#pragma GCC unroll 16
    for (int i = 1; i < kRegs; ++i) {
      b[i] = Load(in + 32 * i);
      p[i] = Load(in + 32 * i - 16);
    }
    const __m128i last = Load1(in + 32 * kRegs - 16);
    DecryptN<R, kRegs>(rk, b);
    if (num_blocks >= 2 * kRegs * kBlocksPerReg) {
      next = Load(in + 32 * kRegs);
      next_bcast = _mm256_broadcastsi128_si256(Load1(in + 32 * kRegs));
    }
#pragma GCC unroll 16
    for (int i = 0; i < kRegs; ++i) {
      Store(out + 32 * i, _mm256_xor_si256(b[i], p[i]));
    }
    prev = last;
    in += 32 * kRegs;
    out += 32 * kRegs;
  }
  for (; num_blocks > 0; --num_blocks, in += 16, out += 16) {
    __m128i c = Load1(in);
    Store1(out, _mm_xor_si128(Decrypt1<R>(rk, c), prev));
    prev = c;
  }
  Store1(iv, prev);
}

}  // namespace

void AesEcbEncryptVaes256(const AesRoundKeys* k, const uint8_t* in,
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

void AesEcbDecryptVaes256(const AesRoundKeys* k, const uint8_t* in,
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

void AesCtr128Vaes256(const AesRoundKeys* k, uint8_t ctr[16], const uint8_t* in,
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

void AesCbcDecryptVaes256(const AesRoundKeys* k, uint8_t iv[16],
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
