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
// argument so the i % NK tests fold into constants.
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

}  // namespace

ACCELCRYPT_TARGET_AESNI void AesExpandKeyAesni(const uint8_t* key,
                                               size_t key_len,
                                               AesRoundKeys* out,
                                               bool with_dec) {
  const size_t nk = key_len / 4;
  const size_t rounds = nk + 6;
  const size_t total = 4 * (rounds + 1);
  uint32_t w[60];
  if (nk == 4) {
    ExpandWords<4>(key, w);
  } else if (nk == 6) {
    ExpandWords<6>(key, w);
  } else {
    ExpandWords<8>(key, w);
  }
  memcpy(out->enc, w, total * 4);
  out->rounds = static_cast<uint32_t>(rounds);
  if (!with_dec) {
    explicit_bzero(w, total * 4);
    return;
  }
  memcpy(out->dec[0], out->enc[rounds], 16);
  for (size_t r = 1; r < rounds; ++r) {
    __m128i rk =
        _mm_load_si128(reinterpret_cast<const __m128i*>(out->enc[rounds - r]));
    _mm_store_si128(reinterpret_cast<__m128i*>(out->dec[r]),
                    _mm_aesimc_si128(rk));
  }
  memcpy(out->dec[rounds], out->enc[0], 16);
  // Wipe the stack copy of the schedule.
  explicit_bzero(w, total * 4);
}

}  // namespace accelcrypt::x86::internal
