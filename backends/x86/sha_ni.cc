// SPDX-License-Identifier: Apache-2.0
// SHA-1 and SHA-256 compression functions (FIPS 180-4 §6.1.2, §6.2.2) with
// the SHA extensions. The register layouts follow Intel's "Intel SHA
// Extensions" white paper (2013): SHA256RNDS2 works on ABEF/CDGH halves of
// the state, SHA1RNDS4 on ABCD with E carried by SHA1NEXTE.
#include <immintrin.h>

#include "backends/x86/internal/aes_leaf.h"
#include "backends/x86/internal/target.h"

namespace accelcrypt::x86::internal {
namespace {

alignas(16) constexpr uint32_t kSha256K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
    0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

}  // namespace

ACCELCRYPT_TARGET_SHANI void Sha256BlocksShani(uint32_t state[8],
                                               const uint8_t* data,
                                               size_t num_blocks) {
  // Big-endian message words within each 32-bit lane.
  const __m128i bswap32 =
      _mm_set_epi8(12, 13, 14, 15, 8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3);
  __m128i tmp = _mm_loadu_si128(reinterpret_cast<const __m128i*>(state));
  __m128i s1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(state + 4));
  tmp = _mm_shuffle_epi32(tmp, 0xb1);        // C D A B -> lanes b a d c
  s1 = _mm_shuffle_epi32(s1, 0x1b);          // lanes h g f e
  __m128i s0 = _mm_alignr_epi8(tmp, s1, 8);  // A B E F
  s1 = _mm_blend_epi16(s1, tmp, 0xf0);       // C D G H
  const __m128i* k = reinterpret_cast<const __m128i*>(kSha256K);
  for (; num_blocks > 0; --num_blocks, data += 64) {
    const __m128i save0 = s0, save1 = s1;
    __m128i m[4];
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) {
      __m128i& w = m[i & 3];
      if (i < 4) {
        w = _mm_shuffle_epi8(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + 16 * i)),
            bswap32);
      } else {
        // W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16], four at a time.
        __m128i t =
            _mm_add_epi32(_mm_sha256msg1_epu32(w, m[(i + 1) & 3]),
                          _mm_alignr_epi8(m[(i + 3) & 3], m[(i + 2) & 3], 4));
        w = _mm_sha256msg2_epu32(t, m[(i + 3) & 3]);
      }
      __m128i wk = _mm_add_epi32(w, _mm_load_si128(k + i));
      s1 = _mm_sha256rnds2_epu32(s1, s0, wk);
      s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(wk, 0x0e));
    }
    s0 = _mm_add_epi32(s0, save0);
    s1 = _mm_add_epi32(s1, save1);
  }
  tmp = _mm_shuffle_epi32(s0, 0x1b);    // F E B A
  s1 = _mm_shuffle_epi32(s1, 0xb1);     // D C H G
  s0 = _mm_blend_epi16(tmp, s1, 0xf0);  // D C B A
  s1 = _mm_alignr_epi8(s1, tmp, 8);     // H G F E
  _mm_storeu_si128(reinterpret_cast<__m128i*>(state), s0);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(state + 4), s1);
}

ACCELCRYPT_TARGET_SHANI void Sha1BlocksShani(uint32_t state[5],
                                             const uint8_t* data,
                                             size_t num_blocks) {
  const __m128i bswap128 =
      _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  __m128i abcd = _mm_shuffle_epi32(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(state)), 0x1b);
  __m128i e0 = _mm_set_epi32(static_cast<int>(state[4]), 0, 0, 0);
  for (; num_blocks > 0; --num_blocks, data += 64) {
    const __m128i abcd_save = abcd, e_save = e0;
    __m128i m[4];
    __m128i prev_abcd = abcd;
#pragma GCC unroll 20
    for (int i = 0; i < 20; ++i) {
      __m128i& w = m[i & 3];
      if (i < 4) {
        w = _mm_shuffle_epi8(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + 16 * i)),
            bswap128);
      } else {
        // W[t] = rotl1(W[t-3] ^ W[t-8] ^ W[t-14] ^ W[t-16]).
        w = _mm_sha1msg2_epu32(
            _mm_xor_si128(_mm_sha1msg1_epu32(w, m[(i + 1) & 3]),
                          m[(i + 2) & 3]),
            m[(i + 3) & 3]);
      }
      // E for this group: the first adds W to the saved E; later ones derive
      // E from the ABCD of four rounds earlier (SHA1NEXTE).
      __m128i e =
          i == 0 ? _mm_add_epi32(e0, w) : _mm_sha1nexte_epu32(prev_abcd, w);
      prev_abcd = abcd;
      switch (i / 5) {
        case 0:
          abcd = _mm_sha1rnds4_epu32(abcd, e, 0);
          break;
        case 1:
          abcd = _mm_sha1rnds4_epu32(abcd, e, 1);
          break;
        case 2:
          abcd = _mm_sha1rnds4_epu32(abcd, e, 2);
          break;
        default:
          abcd = _mm_sha1rnds4_epu32(abcd, e, 3);
          break;
      }
    }
    e0 = _mm_sha1nexte_epu32(prev_abcd, e_save);
    abcd = _mm_add_epi32(abcd, abcd_save);
  }
  _mm_storeu_si128(reinterpret_cast<__m128i*>(state),
                   _mm_shuffle_epi32(abcd, 0x1b));
  state[4] = static_cast<uint32_t>(_mm_extract_epi32(e0, 3));
}

}  // namespace accelcrypt::x86::internal
