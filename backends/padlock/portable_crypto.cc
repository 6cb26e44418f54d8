// SPDX-License-Identifier: Apache-2.0
#include "backends/padlock/portable_crypto.h"

#include <string.h>

namespace accelcrypt::padlock {
namespace {

// GF(2^8) multiply modulo x^8+x^4+x^3+x+1, fixed 8 iterations, no branches.
uint8_t GfMul(uint8_t a, uint8_t b) {
  uint8_t r = 0;
  for (int i = 0; i < 8; ++i) {
    r ^= static_cast<uint8_t>(-(b & 1)) & a;
    const uint8_t hi = static_cast<uint8_t>(-(a >> 7));
    a = static_cast<uint8_t>((a << 1) ^ (hi & 0x1b));
    b >>= 1;
  }
  return r;
}

// SubByte computes the S-box as the affine map of x^254 (FIPS-197 §5.1.1)
// instead of a table lookup, so key bytes never index memory.
uint8_t SubByte(uint8_t x) {
  uint8_t x2 = GfMul(x, x);
  uint8_t x3 = GfMul(x2, x);
  uint8_t x6 = GfMul(x3, x3);
  uint8_t x12 = GfMul(x6, x6);
  uint8_t x15 = GfMul(x12, x3);
  uint8_t x30 = GfMul(x15, x15);
  uint8_t x60 = GfMul(x30, x30);
  uint8_t x120 = GfMul(x60, x60);
  uint8_t x126 = GfMul(x120, x6);
  uint8_t x127 = GfMul(x126, x);
  uint8_t inv = GfMul(x127, x127);  // x^254
  uint8_t s = inv;
  for (int i = 1; i < 5; ++i) {
    s ^= static_cast<uint8_t>((inv << i) | (inv >> (8 - i)));
  }
  return s ^ 0x63;
}

void InvMixColumn(uint8_t* c) {
  const uint8_t a0 = c[0], a1 = c[1], a2 = c[2], a3 = c[3];
  c[0] = GfMul(a0, 14) ^ GfMul(a1, 11) ^ GfMul(a2, 13) ^ GfMul(a3, 9);
  c[1] = GfMul(a0, 9) ^ GfMul(a1, 14) ^ GfMul(a2, 11) ^ GfMul(a3, 13);
  c[2] = GfMul(a0, 13) ^ GfMul(a1, 9) ^ GfMul(a2, 14) ^ GfMul(a3, 11);
  c[3] = GfMul(a0, 11) ^ GfMul(a1, 13) ^ GfMul(a2, 9) ^ GfMul(a3, 14);
}

uint32_t Rotl(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }
uint32_t Rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

uint32_t LoadBe32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) |
         (uint32_t{p[2]} << 8) | p[3];
}

uint64_t LoadBe64(const uint8_t* p) {
  return (uint64_t{LoadBe32(p)} << 32) | LoadBe32(p + 4);
}

void StoreBe64(uint8_t* p, uint64_t v) {
  for (int i = 7; i >= 0; --i) {
    p[i] = static_cast<uint8_t>(v);
    v >>= 8;
  }
}

// Rev64 reverses the bit order of a 64-bit word.
uint64_t Rev64(uint64_t v) {
  v = ((v & 0x5555555555555555ull) << 1) | ((v >> 1) & 0x5555555555555555ull);
  v = ((v & 0x3333333333333333ull) << 2) | ((v >> 2) & 0x3333333333333333ull);
  v = ((v & 0x0f0f0f0f0f0f0f0full) << 4) | ((v >> 4) & 0x0f0f0f0f0f0f0f0full);
  return __builtin_bswap64(v);
}

// Bmul64 returns the low 64 bits of the carry-less product of x and y using
// integer multiplies only (constant time: no table, no data-dependent
// branch). Each operand is split into four words holding every fourth bit;
// a product of two such words sums at most 15 terms at each kept bit
// position (16 only at the top kept position, whose carry leaves the word),
// so carries never reach the next kept position and masking keeps the
// parity.
uint64_t Bmul64(uint64_t x, uint64_t y) {
  constexpr uint64_t m0 = 0x1111111111111111ull, m1 = m0 << 1, m2 = m0 << 2,
                     m3 = m0 << 3;
  const uint64_t x0 = x & m0, x1 = x & m1, x2 = x & m2, x3 = x & m3;
  const uint64_t y0 = y & m0, y1 = y & m1, y2 = y & m2, y3 = y & m3;
  const uint64_t z0 = (x0 * y0) ^ (x1 * y3) ^ (x2 * y2) ^ (x3 * y1);
  const uint64_t z1 = (x0 * y1) ^ (x1 * y0) ^ (x2 * y3) ^ (x3 * y2);
  const uint64_t z2 = (x0 * y2) ^ (x1 * y1) ^ (x2 * y0) ^ (x3 * y3);
  const uint64_t z3 = (x0 * y3) ^ (x1 * y2) ^ (x2 * y1) ^ (x3 * y0);
  return (z0 & m0) | (z1 & m1) | (z2 & m2) | (z3 & m3);
}

// Clmul64 computes the full 128-bit carry-less product. The high half is
// the low half of the product of the bit-reversed operands, reversed and
// shifted by one (the product has degree at most 126).
void Clmul64(uint64_t x, uint64_t y, uint64_t* lo, uint64_t* hi) {
  *lo = Bmul64(x, y);
  *hi = Rev64(Bmul64(Rev64(x), Rev64(y))) >> 1;
}

constexpr uint32_t kSha256K[64] = {
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

int ExpandAesKey(const uint8_t* key, size_t key_len, bool decrypt,
                 uint8_t* out) {
  const int nk = static_cast<int>(key_len / 4);
  const int rounds = nk + 6;
  const int total = 4 * (rounds + 1);
  uint8_t w[60][4];
  memcpy(w, key, key_len);
  uint8_t rcon = 1;
  for (int i = nk; i < total; ++i) {
    uint8_t t[4];
    memcpy(t, w[i - 1], 4);
    if (i % nk == 0) {
      const uint8_t t0 = t[0];
      t[0] = SubByte(t[1]) ^ rcon;
      t[1] = SubByte(t[2]);
      t[2] = SubByte(t[3]);
      t[3] = SubByte(t0);
      rcon = GfMul(rcon, 2);
    } else if (nk > 6 && i % nk == 4) {
      for (uint8_t& b : t) b = SubByte(b);
    }
    for (int j = 0; j < 4; ++j) w[i][j] = w[i - nk][j] ^ t[j];
  }
  if (!decrypt) {
    memcpy(out, w, size_t{16} * static_cast<size_t>(rounds + 1));
  } else {
    for (size_t r = 0; r <= static_cast<size_t>(rounds); ++r) {
      uint8_t* dst = out + 16 * r;
      memcpy(dst, w[4 * (static_cast<size_t>(rounds) - r)], 16);
      if (r != 0 && r != static_cast<size_t>(rounds)) {
        for (size_t c = 0; c < 4; ++c) InvMixColumn(dst + 4 * c);
      }
    }
  }
  SecureZero(w, sizeof(w));
  return rounds;
}

void GhashMul(uint8_t x[16], const uint8_t h[16]) {
  // GCM stores the coefficient of z^i in bit 7 - (i % 8) of byte i / 8
  // (SP 800-38D §6.3). Reversing the bits of each big-endian half gives the
  // "normal" layout (coefficient i in bit i), where a carry-less multiply
  // and the reduction modulo z^128 + z^7 + z^2 + z + 1 are plain shifts.
  const uint64_t a0 = Rev64(LoadBe64(x)), a1 = Rev64(LoadBe64(x + 8));
  const uint64_t b0 = Rev64(LoadBe64(h)), b1 = Rev64(LoadBe64(h + 8));
  // Karatsuba: three 64x64 carry-less products.
  uint64_t c0l, c0h, c1l, c1h, c2l, c2h;
  Clmul64(a0, b0, &c0l, &c0h);
  Clmul64(a1, b1, &c2l, &c2h);
  Clmul64(a0 ^ a1, b0 ^ b1, &c1l, &c1h);
  c1l ^= c0l ^ c2l;
  c1h ^= c0h ^ c2h;
  const uint64_t p0 = c0l, p1 = c0h ^ c1l, h0 = c2l ^ c1h, h1 = c2h;
  // Fold the high 128 bits H: z^128 = z^7 + z^2 + z + 1, so add
  // H * (1 + z + z^2 + z^7); its (at most 7) bits beyond z^127 fold once more.
  const uint64_t o = (h1 >> 63) ^ (h1 >> 62) ^ (h1 >> 57);
  const uint64_t r0 = p0 ^ h0 ^ (h0 << 1) ^ (h0 << 2) ^ (h0 << 7) ^ o ^
                      (o << 1) ^ (o << 2) ^ (o << 7);
  const uint64_t r1 = p1 ^ h1 ^ ((h1 << 1) | (h0 >> 63)) ^
                      ((h1 << 2) | (h0 >> 62)) ^ ((h1 << 7) | (h0 >> 57));
  StoreBe64(x, Rev64(r0));
  StoreBe64(x + 8, Rev64(r1));
}

void Sha1Compress(uint32_t state[5], const uint8_t* in, size_t num_blocks) {
  for (; num_blocks > 0; --num_blocks, in += 64) {
    uint32_t w[80];
    for (size_t i = 0; i < 16; ++i) w[i] = LoadBe32(in + 4 * i);
    for (int i = 16; i < 80; ++i) {
      w[i] = Rotl(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    }
    uint32_t a = state[0], b = state[1], c = state[2], d = state[3],
             e = state[4];
    for (int i = 0; i < 80; ++i) {
      uint32_t f, k;
      if (i < 20) {
        f = (b & c) | (~b & d);
        k = 0x5a827999;
      } else if (i < 40) {
        f = b ^ c ^ d;
        k = 0x6ed9eba1;
      } else if (i < 60) {
        f = (b & c) | (b & d) | (c & d);
        k = 0x8f1bbcdc;
      } else {
        f = b ^ c ^ d;
        k = 0xca62c1d6;
      }
      const uint32_t t = Rotl(a, 5) + f + e + k + w[i];
      e = d;
      d = c;
      c = Rotl(b, 30);
      b = a;
      a = t;
    }
    state[0] += a;
    state[1] += b;
    state[2] += c;
    state[3] += d;
    state[4] += e;
    SecureZero(w, sizeof(w));
  }
}

void Sha256Compress(uint32_t state[8], const uint8_t* in, size_t num_blocks) {
  for (; num_blocks > 0; --num_blocks, in += 64) {
    uint32_t w[64];
    for (size_t i = 0; i < 16; ++i) w[i] = LoadBe32(in + 4 * i);
    for (int i = 16; i < 64; ++i) {
      const uint32_t s0 =
          Rotr(w[i - 15], 7) ^ Rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const uint32_t s1 =
          Rotr(w[i - 2], 17) ^ Rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t v[8];
    memcpy(v, state, sizeof(v));
    for (int i = 0; i < 64; ++i) {
      const uint32_t s1 = Rotr(v[4], 6) ^ Rotr(v[4], 11) ^ Rotr(v[4], 25);
      const uint32_t ch = (v[4] & v[5]) ^ (~v[4] & v[6]);
      const uint32_t t1 = v[7] + s1 + ch + kSha256K[i] + w[i];
      const uint32_t s0 = Rotr(v[0], 2) ^ Rotr(v[0], 13) ^ Rotr(v[0], 22);
      const uint32_t maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
      const uint32_t t2 = s0 + maj;
      v[7] = v[6];
      v[6] = v[5];
      v[5] = v[4];
      v[4] = v[3] + t1;
      v[3] = v[2];
      v[2] = v[1];
      v[1] = v[0];
      v[0] = t1 + t2;
    }
    for (int i = 0; i < 8; ++i) state[i] += v[i];
    SecureZero(w, sizeof(w));
    SecureZero(v, sizeof(v));
  }
}

void SecureZero(void* p, size_t len) {
  memset(p, 0, len);
  // The barrier tells the compiler the zeroed memory is observed.
  asm volatile("" : : "r"(p) : "memory");
}

bool ConstantTimeEqual(const uint8_t* a, const uint8_t* b, size_t len) {
  uint8_t diff = 0;
  for (size_t i = 0; i < len; ++i) diff |= a[i] ^ b[i];
  return diff == 0;
}

}  // namespace accelcrypt::padlock
