// SPDX-License-Identifier: Apache-2.0
// AES with AES-NI over XMM registers: all modes, 8 blocks in flight where the
// mode is parallel (ECB, CBC decryption, CFB decryption, CTR). Chained modes
// (CBC encryption, CFB encryption, OFB) run one block at a time: each block
// needs the previous one. AES only through AESENC/AESDEC: no tables, so no
// key- or data-dependent memory access.
#include <immintrin.h>

#include "backends/x86/internal/aes_leaf.h"
#include "backends/x86/internal/ghash_common.h"
#include "backends/x86/internal/target.h"

namespace accelcrypt::x86::internal {
namespace {

constexpr int kLanes = 8;

ACCELCRYPT_TARGET_AESNI inline void LoadKeys(const uint8_t (*src)[16],
                                             int rounds, __m128i* rk) {
#pragma GCC unroll 16
  for (int i = 0; i <= rounds; ++i) {
    rk[i] = _mm_load_si128(reinterpret_cast<const __m128i*>(src[i]));
  }
}

ACCELCRYPT_TARGET_AESNI inline __m128i Encrypt1(const __m128i* rk, int rounds,
                                                __m128i b) {
  b = _mm_xor_si128(b, rk[0]);
#pragma GCC unroll 16
  for (int r = 1; r < rounds; ++r) b = _mm_aesenc_si128(b, rk[r]);
  return _mm_aesenclast_si128(b, rk[rounds]);
}

ACCELCRYPT_TARGET_AESNI inline void Encrypt8(const __m128i* rk, int rounds,
                                             __m128i* b) {
#pragma GCC unroll 16
  for (int i = 0; i < kLanes; ++i) b[i] = _mm_xor_si128(b[i], rk[0]);
#pragma GCC unroll 16
  for (int r = 1; r < rounds; ++r) {
#pragma GCC unroll 16
    for (int i = 0; i < kLanes; ++i) b[i] = _mm_aesenc_si128(b[i], rk[r]);
  }
#pragma GCC unroll 16
  for (int i = 0; i < kLanes; ++i) {
    b[i] = _mm_aesenclast_si128(b[i], rk[rounds]);
  }
}

ACCELCRYPT_TARGET_AESNI inline __m128i Load(const uint8_t* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

ACCELCRYPT_TARGET_AESNI inline void Store(uint8_t* p, __m128i v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v);
}

// Reverses the 16 bytes of a block: a big-endian 128-bit counter becomes a
// little-endian integer whose low 64 bits PADDQ can increment.
ACCELCRYPT_TARGET_AESNI inline __m128i Reverse16() {
  return _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}

// CBC encryption is one dependency chain through every block: the round
// count is a template argument so the rounds unroll with the keys in
// registers, and the whitening key is folded into the plaintext off the
// chain (the empty asm keeps the compiler from re-associating the XORs
// back onto it), leaving XOR + AESENC latency only.
template <int R>
ACCELCRYPT_TARGET_AESNI void CbcEncrypt(const AesRoundKeys* k, uint8_t iv[16],
                                        const uint8_t* in, uint8_t* out,
                                        size_t num_blocks) {
  __m128i rk[R + 1];
  LoadKeys(k->enc, R, rk);
  __m128i c = Load(iv);
  for (; num_blocks > 0; --num_blocks, in += 16, out += 16) {
    __m128i p = _mm_xor_si128(Load(in), rk[0]);
    __asm__("" : "+x"(p));
    __m128i b = _mm_xor_si128(p, c);
#pragma GCC unroll 14
    for (int r = 1; r < R; ++r) b = _mm_aesenc_si128(b, rk[r]);
    c = _mm_aesenclast_si128(b, rk[R]);
    Store(out, c);
  }
  Store(iv, c);
}

}  // namespace

ACCELCRYPT_TARGET_AESNI void AesEncryptBlockAesni(const AesRoundKeys* k,
                                                  const uint8_t in[16],
                                                  uint8_t out[16]) {
  __m128i rk[15];
  const int rounds = static_cast<int>(k->rounds);
  LoadKeys(k->enc, rounds, rk);
  Store(out, Encrypt1(rk, rounds, Load(in)));
}

namespace {

template <bool kDecrypt>
ACCELCRYPT_TARGET_AESNI inline __m128i EcbRound(__m128i b, __m128i key) {
  return kDecrypt ? _mm_aesdec_si128(b, key) : _mm_aesenc_si128(b, key);
}

template <bool kDecrypt>
ACCELCRYPT_TARGET_AESNI inline __m128i EcbLast(__m128i b, __m128i key) {
  return kDecrypt ? _mm_aesdeclast_si128(b, key) : _mm_aesenclast_si128(b, key);
}

// Ecb with the round count as a template argument (as CbcDecrypt below):
// the round keys load straight into registers and the rounds unroll, so a
// one-block call costs the rounds, not a schedule copy and a loop.
template <int R, bool kDecrypt>
ACCELCRYPT_TARGET_AESNI void Ecb(const AesRoundKeys* k, const uint8_t* in,
                                 uint8_t* out, size_t num_blocks) {
  __m128i rk[R + 1];
#pragma GCC unroll 15
  for (int i = 0; i <= R; ++i) {
    rk[i] = _mm_load_si128(
        reinterpret_cast<const __m128i*>(kDecrypt ? k->dec[i] : k->enc[i]));
  }
  for (; num_blocks >= kLanes; num_blocks -= kLanes) {
    __m128i b[kLanes];
#pragma GCC unroll 16
    for (int i = 0; i < kLanes; ++i) {
      b[i] = _mm_xor_si128(Load(in + 16 * i), rk[0]);
    }
#pragma GCC unroll 14
    for (int r = 1; r < R; ++r) {
#pragma GCC unroll 16
      for (int i = 0; i < kLanes; ++i) b[i] = EcbRound<kDecrypt>(b[i], rk[r]);
    }
#pragma GCC unroll 16
    for (int i = 0; i < kLanes; ++i)
      Store(out + 16 * i, EcbLast<kDecrypt>(b[i], rk[R]));
    in += 16 * kLanes;
    out += 16 * kLanes;
  }
  for (; num_blocks > 0; --num_blocks, in += 16, out += 16) {
    __m128i b = _mm_xor_si128(Load(in), rk[0]);
#pragma GCC unroll 14
    for (int r = 1; r < R; ++r) b = EcbRound<kDecrypt>(b, rk[r]);
    Store(out, EcbLast<kDecrypt>(b, rk[R]));
  }
}

template <bool kDecrypt>
void EcbRounds(const AesRoundKeys* k, const uint8_t* in, uint8_t* out,
               size_t num_blocks) {
  switch (k->rounds) {
    case 10:
      return Ecb<10, kDecrypt>(k, in, out, num_blocks);
    case 12:
      return Ecb<12, kDecrypt>(k, in, out, num_blocks);
    default:
      return Ecb<14, kDecrypt>(k, in, out, num_blocks);
  }
}

}  // namespace

void AesEcbEncryptAesni(const AesRoundKeys* k, const uint8_t* in, uint8_t* out,
                        size_t num_blocks) {
  EcbRounds<false>(k, in, out, num_blocks);
}

void AesEcbDecryptAesni(const AesRoundKeys* k, const uint8_t* in, uint8_t* out,
                        size_t num_blocks) {
  EcbRounds<true>(k, in, out, num_blocks);
}

void AesCbcEncryptAesni(const AesRoundKeys* k, uint8_t iv[16],
                        const uint8_t* in, uint8_t* out, size_t num_blocks) {
  switch (k->rounds) {
    case 10:
      return CbcEncrypt<10>(k, iv, in, out, num_blocks);
    case 12:
      return CbcEncrypt<12>(k, iv, in, out, num_blocks);
    default:
      return CbcEncrypt<14>(k, iv, in, out, num_blocks);
  }
}

namespace {

// CbcDecrypt with the round count as a template argument (as Ctr128): the
// round keys load straight into registers and the rounds unroll; a runtime
// count copied the schedule with memcpy and looped, most of the cost of a
// short call.
template <int R>
ACCELCRYPT_TARGET_AESNI void CbcDecrypt(const AesRoundKeys* k, uint8_t iv[16],
                                        const uint8_t* in, uint8_t* out,
                                        size_t num_blocks) {
  __m128i rk[R + 1];
#pragma GCC unroll 15
  for (int i = 0; i <= R; ++i) {
    rk[i] = _mm_load_si128(reinterpret_cast<const __m128i*>(k->dec[i]));
  }
  __m128i prev = Load(iv);
  for (; num_blocks >= kLanes; num_blocks -= kLanes) {
    __m128i b[kLanes];
#pragma GCC unroll 16
    for (int i = 0; i < kLanes; ++i)
      b[i] = _mm_xor_si128(Load(in + 16 * i), rk[0]);
#pragma GCC unroll 14
    for (int r = 1; r < R; ++r) {
#pragma GCC unroll 16
      for (int i = 0; i < kLanes; ++i) b[i] = _mm_aesdec_si128(b[i], rk[r]);
    }
    // The chaining blocks are folded into the last round key (AESDECLAST
    // ends with an XOR) and read again from the input rather than kept in
    // eight registers (16 XMM registers do not hold them, the blocks and
    // the keys). All loads come before the stores: `in` may equal `out`.
    b[0] = _mm_aesdeclast_si128(b[0], _mm_xor_si128(rk[R], prev));
#pragma GCC unroll 16
    for (int i = 1; i < kLanes; ++i) {
      b[i] = _mm_aesdeclast_si128(
          b[i], _mm_xor_si128(rk[R], Load(in + 16 * (i - 1))));
    }
    prev = Load(in + 16 * (kLanes - 1));
#pragma GCC unroll 16
    for (int i = 0; i < kLanes; ++i) Store(out + 16 * i, b[i]);
    in += 16 * kLanes;
    out += 16 * kLanes;
  }
  for (; num_blocks > 0; --num_blocks, in += 16, out += 16) {
    const __m128i c = Load(in);
    __m128i b = _mm_xor_si128(c, rk[0]);
#pragma GCC unroll 14
    for (int r = 1; r < R; ++r) b = _mm_aesdec_si128(b, rk[r]);
    Store(out, _mm_xor_si128(_mm_aesdeclast_si128(b, rk[R]), prev));
    prev = c;
  }
  Store(iv, prev);
}

}  // namespace

void AesCbcDecryptAesni(const AesRoundKeys* k, uint8_t iv[16],
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

ACCELCRYPT_TARGET_AESNI void AesCfbEncryptAesni(const AesRoundKeys* k,
                                                uint8_t iv[16],
                                                const uint8_t* in, uint8_t* out,
                                                size_t num_blocks) {
  __m128i rk[15];
  const int rounds = static_cast<int>(k->rounds);
  LoadKeys(k->enc, rounds, rk);
  __m128i r = Load(iv);
  for (; num_blocks > 0; --num_blocks, in += 16, out += 16) {
    r = _mm_xor_si128(Encrypt1(rk, rounds, r), Load(in));
    Store(out, r);
  }
  Store(iv, r);
}

ACCELCRYPT_TARGET_AESNI void AesCfbDecryptAesni(const AesRoundKeys* k,
                                                uint8_t iv[16],
                                                const uint8_t* in, uint8_t* out,
                                                size_t num_blocks) {
  __m128i rk[15];
  const int rounds = static_cast<int>(k->rounds);
  LoadKeys(k->enc, rounds, rk);
  __m128i prev = Load(iv);
  for (; num_blocks >= kLanes; num_blocks -= kLanes) {
    __m128i c[kLanes], b[kLanes];
#pragma GCC unroll 16
    for (int i = 0; i < kLanes; ++i) c[i] = Load(in + 16 * i);
    b[0] = prev;
#pragma GCC unroll 16
    for (int i = 1; i < kLanes; ++i) b[i] = c[i - 1];
    Encrypt8(rk, rounds, b);
#pragma GCC unroll 16
    for (int i = 0; i < kLanes; ++i) {
      Store(out + 16 * i, _mm_xor_si128(b[i], c[i]));
    }
    prev = c[kLanes - 1];
    in += 16 * kLanes;
    out += 16 * kLanes;
  }
  for (; num_blocks > 0; --num_blocks, in += 16, out += 16) {
    __m128i c = Load(in);
    Store(out, _mm_xor_si128(Encrypt1(rk, rounds, prev), c));
    prev = c;
  }
  Store(iv, prev);
}

ACCELCRYPT_TARGET_AESNI void AesOfbAesni(const AesRoundKeys* k, uint8_t iv[16],
                                         const uint8_t* in, uint8_t* out,
                                         size_t num_blocks) {
  __m128i rk[15];
  const int rounds = static_cast<int>(k->rounds);
  LoadKeys(k->enc, rounds, rk);
  __m128i r = Load(iv);
  for (; num_blocks > 0; --num_blocks, in += 16, out += 16) {
    r = Encrypt1(rk, rounds, r);
    Store(out, _mm_xor_si128(r, Load(in)));
  }
  Store(iv, r);
}

namespace {

// CtrRoundsAndXor runs rounds 1..R on 8 whitened counter blocks and XORs
// the key stream into 8 blocks of input.
template <int R>
ACCELCRYPT_TARGET_AESNI __attribute__((always_inline)) inline void
CtrRoundsAndXor(const __m128i* rk, __m128i* b, const uint8_t* in,
                uint8_t* out) {
#pragma GCC unroll 14
  for (int r = 1; r < R; ++r) {
#pragma GCC unroll 16
    for (int i = 0; i < kLanes; ++i) b[i] = _mm_aesenc_si128(b[i], rk[r]);
  }
#pragma GCC unroll 16
  for (int i = 0; i < kLanes; ++i) {
    b[i] = _mm_aesenclast_si128(b[i], rk[R]);
    Store(out + 16 * i, _mm_xor_si128(b[i], Load(in + 16 * i)));
  }
}

// CtrBlock encrypts counter block *c into the key stream of one block of
// input and steps the counter.
template <int R>
ACCELCRYPT_TARGET_AESNI __attribute__((always_inline)) inline void CtrBlock(
    const __m128i* rk, __m128i rev, __m128i* c, const uint8_t* in,
    uint8_t* out) {
  __m128i b = _mm_xor_si128(_mm_shuffle_epi8(*c, rev), rk[0]);
#pragma GCC unroll 14
  for (int r = 1; r < R; ++r) b = _mm_aesenc_si128(b, rk[r]);
  b = _mm_aesenclast_si128(b, rk[R]);
  *c = _mm_add_epi64(*c, _mm_set_epi64x(0, 1));
  Store(out, _mm_xor_si128(b, Load(in)));
}

// CtrRest runs what is left of a call the plain way (8-block groups, then
// single blocks) and writes the counter back. `any`: the call had blocks.
template <int R>
ACCELCRYPT_TARGET_AESNI __attribute__((always_inline)) inline void CtrRest(
    const __m128i* rk, __m128i rev, __m128i c, const uint8_t* in, uint8_t* out,
    size_t num_blocks, bool any, uint8_t ctr[16]) {
  const __m128i one = _mm_set_epi64x(0, 1);
  for (; num_blocks >= kLanes; num_blocks -= kLanes) {
    __m128i b[kLanes];
#pragma GCC unroll 16
    for (int i = 0; i < kLanes; ++i) {
      b[i] = _mm_xor_si128(_mm_shuffle_epi8(c, rev), rk[0]);
      c = _mm_add_epi64(c, one);
    }
    CtrRoundsAndXor<R>(rk, b, in, out);
    in += 16 * kLanes;
    out += 16 * kLanes;
  }
  for (; num_blocks > 0; --num_blocks, in += 16, out += 16) {
    CtrBlock<R>(rk, rev, &c, in, out);
  }
  // The low 64 bits wrap at most with the last block (the caller's
  // guarantee), to 0: then the carry goes into the high half. One 16-byte
  // store, so the next call's load is forwarded from it.
  if (_mm_cvtsi128_si64(c) == 0 && any) {
    c = _mm_add_epi64(c, _mm_set_epi64x(1, 0));
  }
  Store(ctr, _mm_shuffle_epi8(c, rev));
}

// CtrLong is Ctr128 for calls of 16 blocks or more: once the counter's last
// byte is a multiple of 8, the 8 blocks of an iteration differ from the
// first only in the low 3 bits of that byte, so block i is (first counter)
// ^ i, and with round key 0 folded in once per iteration each block costs
// one PXOR (no byte swap or add per block). The blocks before that point
// (up to 7) go one at a time. A function of its own: with this loop in
// Ctr128, GCC compiled it to 6.5 GB/s, and a call of a few blocks paid for
// its set-up.
template <int R>
[[gnu::noinline]] ACCELCRYPT_TARGET_AESNI void CtrLong(const AesRoundKeys* k,
                                                       uint8_t ctr[16],
                                                       const uint8_t* in,
                                                       uint8_t* out,
                                                       size_t num_blocks) {
  __m128i rk[R + 1];
#pragma GCC unroll 15
  for (int i = 0; i <= R; ++i) {
    rk[i] = _mm_load_si128(reinterpret_cast<const __m128i*>(k->enc[i]));
  }
  const __m128i rev = Reverse16();
  __m128i c = _mm_shuffle_epi8(Load(ctr), rev);
  for (size_t head = (8u - (ctr[15] & 7u)) & 7u; head > 0;
       --head, --num_blocks, in += 16, out += 16) {
    CtrBlock<R>(rk, rev, &c, in, out);
  }
  const __m128i eight = _mm_set_epi64x(0, kLanes);
  for (; num_blocks >= kLanes; num_blocks -= kLanes) {
    const __m128i first = _mm_xor_si128(_mm_shuffle_epi8(c, rev), rk[0]);
    c = _mm_add_epi64(c, eight);
    __m128i b[kLanes];
#pragma GCC unroll 16
    for (int i = 0; i < kLanes; ++i) {
      b[i] = _mm_xor_si128(first, _mm_set_epi32(i << 24, 0, 0, 0));
    }
    CtrRoundsAndXor<R>(rk, b, in, out);
    in += 16 * kLanes;
    out += 16 * kLanes;
  }
  CtrRest<R>(rk, rev, c, in, out, num_blocks, true, ctr);
}

// Ctr128 with the round count as a template argument: the round keys load
// straight into registers and the rounds unroll, which is most of the cost
// of a one-block call. Calls of 16 blocks or more go to CtrLong.
template <int R>
ACCELCRYPT_TARGET_AESNI void Ctr128(const AesRoundKeys* k, uint8_t ctr[16],
                                    const uint8_t* in, uint8_t* out,
                                    size_t num_blocks) {
  if (num_blocks >= 2 * kLanes) {
    return CtrLong<R>(k, ctr, in, out, num_blocks);
  }
  __m128i rk[R + 1];
#pragma GCC unroll 15
  for (int i = 0; i <= R; ++i) {
    rk[i] = _mm_load_si128(reinterpret_cast<const __m128i*>(k->enc[i]));
  }
  const __m128i rev = Reverse16();
  CtrRest<R>(rk, rev, _mm_shuffle_epi8(Load(ctr), rev), in, out, num_blocks,
             num_blocks != 0, ctr);
}

}  // namespace

void AesCtr128Aesni(const AesRoundKeys* k, uint8_t ctr[16], const uint8_t* in,
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

}  // namespace accelcrypt::x86::internal
