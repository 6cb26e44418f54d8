// SPDX-License-Identifier: Apache-2.0
// AES key expansion (FIPS 197 §5.2) with AESKEYGENASSIST as the S-box, and
// the equivalent-inverse-cipher schedule with AESIMC (FIPS 197 §5.3.5).
// Constant time: no table lookups indexed by key bytes.
#include <immintrin.h>
#include <string.h>

#include "backends/x86/internal/aes_leaf.h"
#include "backends/x86/internal/target.h"

namespace accelcrypt::x86::internal {
namespace {

// SubWord of a little-endian-loaded key word: AESKEYGENASSIST puts
// SubWord(X1) (X1 = bits 63:32 of the source) into bits 31:0 of the result.
ACCELCRYPT_TARGET_AESNI inline uint32_t SubWord(uint32_t w) {
  __m128i v = _mm_set_epi32(0, 0, static_cast<int>(w), 0);
  return static_cast<uint32_t>(
      _mm_cvtsi128_si32(_mm_aeskeygenassist_si128(v, 0)));
}

// ExpandWords fills w[0..4*(NK+7)) for an NK-word key; NK is a template
// argument so the i % NK tests fold into constants. (AES-192 only.)
template <size_t NK>
ACCELCRYPT_TARGET_AESNI inline void ExpandWords(const uint8_t* key,
                                                uint32_t* w) {
  constexpr size_t kTotal = 4 * (NK + 7);
  memcpy(w, key, 4 * NK);
  uint32_t rcon = 1;
  for (size_t i = NK; i < kTotal; ++i) {
    uint32_t t = w[i - 1];
    if (i % NK == 0) {
      // RotWord on bytes [a0 a1 a2 a3] is a right rotation of the LE word.
      t = SubWord((t >> 8) | (t << 24)) ^ rcon;
      rcon = (rcon << 1) ^ (((rcon >> 7) & 1) * 0x11b);
    } else if (NK > 6 && i % NK == 4) {
      t = SubWord(t);
    }
    w[i] = w[i - NK] ^ t;
  }
}

// PrefixXor returns w0, w0^w1, w0^w1^w2, w0^w1^w2^w3 of the four words of
// a round key: each word of the next round key is the previous word of it
// XORed with the word NK places back (FIPS 197 §5.2).
ACCELCRYPT_TARGET_AESNI inline __m128i PrefixXor(__m128i k) {
  k = _mm_xor_si128(k, _mm_slli_si128(k, 4));
  return _mm_xor_si128(k, _mm_slli_si128(k, 8));
}

// Next128 is one AES-128 round key from the previous one. AESKEYGENASSIST
// yields RotWord(SubWord(w3)) ^ rcon in its top word (immediate `kRcon`);
// broadcast, it is the term every word receives.
template <int kRcon>
ACCELCRYPT_TARGET_AESNI inline __m128i Next128(__m128i k) {
  const __m128i t =
      _mm_shuffle_epi32(_mm_aeskeygenassist_si128(k, kRcon), 0xff);
  return _mm_xor_si128(PrefixXor(k), t);
}

ACCELCRYPT_TARGET_AESNI inline void Store(uint8_t* p, __m128i v) {
  _mm_store_si128(reinterpret_cast<__m128i*>(p), v);
}

ACCELCRYPT_TARGET_AESNI void Expand128(const uint8_t* key, AesRoundKeys* out) {
  __m128i k = _mm_loadu_si128(reinterpret_cast<const __m128i*>(key));
  Store(out->enc[0], k);
  Store(out->enc[1], k = Next128<0x01>(k));
  Store(out->enc[2], k = Next128<0x02>(k));
  Store(out->enc[3], k = Next128<0x04>(k));
  Store(out->enc[4], k = Next128<0x08>(k));
  Store(out->enc[5], k = Next128<0x10>(k));
  Store(out->enc[6], k = Next128<0x20>(k));
  Store(out->enc[7], k = Next128<0x40>(k));
  Store(out->enc[8], k = Next128<0x80>(k));
  Store(out->enc[9], k = Next128<0x1b>(k));
  Store(out->enc[10], Next128<0x36>(k));
}

// AES-256 alternates: even round keys take RotWord(SubWord(w7)) ^ rcon of
// the odd key before them, odd ones SubWord(w3) (no rotation, no rcon:
// AESKEYGENASSIST's word 2) of the even key before them.
template <int kRcon>
ACCELCRYPT_TARGET_AESNI inline __m128i Next256Even(__m128i prev2,
                                                   __m128i prev1) {
  const __m128i t =
      _mm_shuffle_epi32(_mm_aeskeygenassist_si128(prev1, kRcon), 0xff);
  return _mm_xor_si128(PrefixXor(prev2), t);
}

ACCELCRYPT_TARGET_AESNI inline __m128i Next256Odd(__m128i prev2,
                                                  __m128i prev1) {
  const __m128i t =
      _mm_shuffle_epi32(_mm_aeskeygenassist_si128(prev1, 0), 0xaa);
  return _mm_xor_si128(PrefixXor(prev2), t);
}

ACCELCRYPT_TARGET_AESNI void Expand256(const uint8_t* key, AesRoundKeys* out) {
  __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(key));
  __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(key + 16));
  Store(out->enc[0], a);
  Store(out->enc[1], b);
  Store(out->enc[2], a = Next256Even<0x01>(a, b));
  Store(out->enc[3], b = Next256Odd(b, a));
  Store(out->enc[4], a = Next256Even<0x02>(a, b));
  Store(out->enc[5], b = Next256Odd(b, a));
  Store(out->enc[6], a = Next256Even<0x04>(a, b));
  Store(out->enc[7], b = Next256Odd(b, a));
  Store(out->enc[8], a = Next256Even<0x08>(a, b));
  Store(out->enc[9], b = Next256Odd(b, a));
  Store(out->enc[10], a = Next256Even<0x10>(a, b));
  Store(out->enc[11], b = Next256Odd(b, a));
  Store(out->enc[12], a = Next256Even<0x20>(a, b));
  Store(out->enc[13], b = Next256Odd(b, a));
  Store(out->enc[14], Next256Even<0x40>(a, b));
}

}  // namespace

ACCELCRYPT_TARGET_AESNI void AesExpandKeyAesni(const uint8_t* key,
                                               size_t key_len,
                                               AesRoundKeys* out,
                                               bool with_dec) {
  const size_t nk = key_len / 4;
  const size_t rounds = nk + 6;
  out->rounds = static_cast<uint32_t>(rounds);
  // AES-128 and AES-256 in registers, straight into the schedule (no stack
  // copy to wipe); AES-192's 6-word stride does not fit 4-word registers,
  // so it runs word by word.
  if (nk == 4) {
    Expand128(key, out);
  } else if (nk == 8) {
    Expand256(key, out);
  } else {
    const size_t total = 4 * (rounds + 1);
    uint32_t w[60];
    ExpandWords<6>(key, w);
    memcpy(out->enc, w, total * 4);
    explicit_bzero(w, total * 4);
  }
  if (!with_dec) return;
  memcpy(out->dec[0], out->enc[rounds], 16);
  for (size_t r = 1; r < rounds; ++r) {
    __m128i rk =
        _mm_load_si128(reinterpret_cast<const __m128i*>(out->enc[rounds - r]));
    _mm_store_si128(reinterpret_cast<__m128i*>(out->dec[r]),
                    _mm_aesimc_si128(rk));
  }
  memcpy(out->dec[rounds], out->enc[0], 16);
}

}  // namespace accelcrypt::x86::internal
