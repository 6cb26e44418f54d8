// SPDX-License-Identifier: Apache-2.0
#include "tests/backends/padlock/emulator/emu_crypto.h"

#include <string.h>

namespace padlock_emu {
namespace {

uint8_t g_sbox[256];
uint8_t g_inv_sbox[256];

uint8_t Mul(uint8_t a, uint8_t b) {
  uint8_t r = 0;
  while (b) {
    if (b & 1) r ^= a;
    a = static_cast<uint8_t>((a << 1) ^ ((a & 0x80) ? 0x1b : 0));
    b >>= 1;
  }
  return r;
}

void SubShift(uint8_t s[16]) {
  uint8_t t[16];
  for (int c = 0; c < 4; ++c) {
    for (int r = 0; r < 4; ++r) t[r + 4 * c] = g_sbox[s[r + 4 * ((c + r) & 3)]];
  }
  memcpy(s, t, 16);
}

void InvSubShift(uint8_t s[16]) {
  uint8_t t[16];
  for (int c = 0; c < 4; ++c) {
    for (int r = 0; r < 4; ++r) {
      t[r + 4 * c] = g_inv_sbox[s[r + 4 * ((c - r + 4) & 3)]];
    }
  }
  memcpy(s, t, 16);
}

void MixColumns(uint8_t s[16]) {
  for (int c = 0; c < 4; ++c) {
    uint8_t* p = s + 4 * c;
    const uint8_t a0 = p[0], a1 = p[1], a2 = p[2], a3 = p[3];
    p[0] = Mul(a0, 2) ^ Mul(a1, 3) ^ a2 ^ a3;
    p[1] = a0 ^ Mul(a1, 2) ^ Mul(a2, 3) ^ a3;
    p[2] = a0 ^ a1 ^ Mul(a2, 2) ^ Mul(a3, 3);
    p[3] = Mul(a0, 3) ^ a1 ^ a2 ^ Mul(a3, 2);
  }
}

void InvMixColumn(uint8_t* p) {
  const uint8_t a0 = p[0], a1 = p[1], a2 = p[2], a3 = p[3];
  p[0] = Mul(a0, 14) ^ Mul(a1, 11) ^ Mul(a2, 13) ^ Mul(a3, 9);
  p[1] = Mul(a0, 9) ^ Mul(a1, 14) ^ Mul(a2, 11) ^ Mul(a3, 13);
  p[2] = Mul(a0, 13) ^ Mul(a1, 9) ^ Mul(a2, 14) ^ Mul(a3, 11);
  p[3] = Mul(a0, 11) ^ Mul(a1, 13) ^ Mul(a2, 9) ^ Mul(a3, 14);
}

void Xor16(uint8_t* d, const uint8_t* s) {
  for (int i = 0; i < 16; ++i) d[i] ^= s[i];
}

uint32_t R32(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
uint32_t L32(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }
uint64_t R64(uint64_t x, int n) { return (x >> n) | (x << (64 - n)); }
uint32_t Be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) |
         (uint32_t{p[2]} << 8) | p[3];
}
uint64_t Be64(const uint8_t* p) {
  return (uint64_t{Be32(p)} << 32) | Be32(p + 4);
}

const uint32_t k256[64] = {
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

const uint64_t k512[80] = {
    0x428a2f98d728ae22ull, 0x7137449123ef65cdull, 0xb5c0fbcfec4d3b2full,
    0xe9b5dba58189dbbcull, 0x3956c25bf348b538ull, 0x59f111f1b605d019ull,
    0x923f82a4af194f9bull, 0xab1c5ed5da6d8118ull, 0xd807aa98a3030242ull,
    0x12835b0145706fbeull, 0x243185be4ee4b28cull, 0x550c7dc3d5ffb4e2ull,
    0x72be5d74f27b896full, 0x80deb1fe3b1696b1ull, 0x9bdc06a725c71235ull,
    0xc19bf174cf692694ull, 0xe49b69c19ef14ad2ull, 0xefbe4786384f25e3ull,
    0x0fc19dc68b8cd5b5ull, 0x240ca1cc77ac9c65ull, 0x2de92c6f592b0275ull,
    0x4a7484aa6ea6e483ull, 0x5cb0a9dcbd41fbd4ull, 0x76f988da831153b5ull,
    0x983e5152ee66dfabull, 0xa831c66d2db43210ull, 0xb00327c898fb213full,
    0xbf597fc7beef0ee4ull, 0xc6e00bf33da88fc2ull, 0xd5a79147930aa725ull,
    0x06ca6351e003826full, 0x142929670a0e6e70ull, 0x27b70a8546d22ffcull,
    0x2e1b21385c26c926ull, 0x4d2c6dfc5ac42aedull, 0x53380d139d95b3dfull,
    0x650a73548baf63deull, 0x766a0abb3c77b2a8ull, 0x81c2c92e47edaee6ull,
    0x92722c851482353bull, 0xa2bfe8a14cf10364ull, 0xa81a664bbc423001ull,
    0xc24b8b70d0f89791ull, 0xc76c51a30654be30ull, 0xd192e819d6ef5218ull,
    0xd69906245565a910ull, 0xf40e35855771202aull, 0x106aa07032bbd1b8ull,
    0x19a4c116b8d2d0c8ull, 0x1e376c085141ab53ull, 0x2748774cdf8eeb99ull,
    0x34b0bcb5e19b48a8ull, 0x391c0cb3c5c95a63ull, 0x4ed8aa4ae3418acbull,
    0x5b9cca4f7763e373ull, 0x682e6ff3d6b2b8a3ull, 0x748f82ee5defb2fcull,
    0x78a5636f43172f60ull, 0x84c87814a1f0ab72ull, 0x8cc702081a6439ecull,
    0x90befffa23631e28ull, 0xa4506cebde82bde9ull, 0xbef9a3f7b2c67915ull,
    0xc67178f2e372532bull, 0xca273eceea26619cull, 0xd186b8c721c0c207ull,
    0xeada7dd6cde0eb1eull, 0xf57d4f7fee6ed178ull, 0x06f067aa72176fbaull,
    0x0a637dc5a2c898a6ull, 0x113f9804bef90daeull, 0x1b710b35131c471bull,
    0x28db77f523047d84ull, 0x32caab7b40c72493ull, 0x3c9ebe0a15c9bebcull,
    0x431d67c49c100d4cull, 0x4cc5d4becb3e42b6ull, 0x597f299cfc657e2aull,
    0x5fcb6fab3ad6faecull, 0x6c44198c4a475817ull};

}  // namespace

void EmuCryptoInit() {
  for (int x = 0; x < 256; ++x) {
    uint8_t inv = 0;
    if (x != 0) {
      for (int y = 1; y < 256; ++y) {
        if (Mul(static_cast<uint8_t>(x), static_cast<uint8_t>(y)) == 1) {
          inv = static_cast<uint8_t>(y);
          break;
        }
      }
    }
    uint8_t s = inv;
    for (int i = 1; i < 5; ++i) {
      s ^= static_cast<uint8_t>((inv << i) | (inv >> (8 - i)));
    }
    s ^= 0x63;
    g_sbox[x] = s;
    g_inv_sbox[s] = static_cast<uint8_t>(x);
  }
}

int ExpandKey(const uint8_t* key, size_t key_len, uint8_t* rk) {
  const int nk = static_cast<int>(key_len / 4);
  const int nr = nk + 6;
  memcpy(rk, key, key_len);
  uint8_t rcon = 1;
  for (int i = nk; i < 4 * (nr + 1); ++i) {
    uint8_t t[4];
    memcpy(t, rk + 4 * (i - 1), 4);
    if (i % nk == 0) {
      const uint8_t t0 = t[0];
      t[0] = g_sbox[t[1]] ^ rcon;
      t[1] = g_sbox[t[2]];
      t[2] = g_sbox[t[3]];
      t[3] = g_sbox[t0];
      rcon = Mul(rcon, 2);
    } else if (nk > 6 && i % nk == 4) {
      for (auto& b : t) b = g_sbox[b];
    }
    for (int j = 0; j < 4; ++j) rk[4 * i + j] = rk[4 * (i - nk) + j] ^ t[j];
  }
  return nr;
}

void ToDecryptSchedule(const uint8_t* enc, int rounds, uint8_t* dec) {
  for (int r = 0; r <= rounds; ++r) {
    memcpy(dec + 16 * r, enc + 16 * (rounds - r), 16);
    if (r != 0 && r != rounds) {
      for (int c = 0; c < 4; ++c) InvMixColumn(dec + 16 * r + 4 * c);
    }
  }
}

void Encrypt(const uint8_t* rk, int rounds, const uint8_t in[16],
             uint8_t out[16]) {
  uint8_t s[16];
  memcpy(s, in, 16);
  Xor16(s, rk);
  for (int r = 1; r < rounds; ++r) {
    SubShift(s);
    MixColumns(s);
    Xor16(s, rk + 16 * r);
  }
  SubShift(s);
  Xor16(s, rk + 16 * rounds);
  memcpy(out, s, 16);
}

void Decrypt(const uint8_t* dk, int rounds, const uint8_t in[16],
             uint8_t out[16]) {
  uint8_t s[16];
  memcpy(s, in, 16);
  Xor16(s, dk);
  for (int r = 1; r < rounds; ++r) {
    InvSubShift(s);
    for (int c = 0; c < 4; ++c) InvMixColumn(s + 4 * c);
    Xor16(s, dk + 16 * r);
  }
  InvSubShift(s);
  Xor16(s, dk + 16 * rounds);
  memcpy(out, s, 16);
}

void Sha1Blocks(uint32_t h[5], const uint8_t* p, size_t n) {
  for (; n > 0; --n, p += 64) {
    uint32_t w[80];
    for (int i = 0; i < 16; ++i) w[i] = Be32(p + 4 * i);
    for (int i = 16; i < 80; ++i) {
      w[i] = L32(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
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
      const uint32_t t = L32(a, 5) + f + e + k + w[i];
      e = d;
      d = c;
      c = L32(b, 30);
      b = a;
      a = t;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
  }
}

void Sha256Blocks(uint32_t h[8], const uint8_t* p, size_t n) {
  for (; n > 0; --n, p += 64) {
    uint32_t w[64];
    for (int i = 0; i < 16; ++i) w[i] = Be32(p + 4 * i);
    for (int i = 16; i < 64; ++i) {
      w[i] = w[i - 16] +
             (R32(w[i - 15], 7) ^ R32(w[i - 15], 18) ^ (w[i - 15] >> 3)) +
             w[i - 7] +
             (R32(w[i - 2], 17) ^ R32(w[i - 2], 19) ^ (w[i - 2] >> 10));
    }
    uint32_t v[8];
    memcpy(v, h, 32);
    for (int i = 0; i < 64; ++i) {
      const uint32_t t1 = v[7] +
                          (R32(v[4], 6) ^ R32(v[4], 11) ^ R32(v[4], 25)) +
                          ((v[4] & v[5]) ^ (~v[4] & v[6])) + k256[i] + w[i];
      const uint32_t t2 = (R32(v[0], 2) ^ R32(v[0], 13) ^ R32(v[0], 22)) +
                          ((v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]));
      memmove(v + 1, v, 7 * sizeof(uint32_t));
      v[4] += t1;
      v[0] = t1 + t2;
    }
    for (int i = 0; i < 8; ++i) h[i] += v[i];
  }
}

void Sha512Blocks(uint64_t h[8], const uint8_t* p, size_t n) {
  for (; n > 0; --n, p += 128) {
    uint64_t w[80];
    for (int i = 0; i < 16; ++i) w[i] = Be64(p + 8 * i);
    for (int i = 16; i < 80; ++i) {
      w[i] = w[i - 16] +
             (R64(w[i - 15], 1) ^ R64(w[i - 15], 8) ^ (w[i - 15] >> 7)) +
             w[i - 7] +
             (R64(w[i - 2], 19) ^ R64(w[i - 2], 61) ^ (w[i - 2] >> 6));
    }
    uint64_t v[8];
    memcpy(v, h, 64);
    for (int i = 0; i < 80; ++i) {
      const uint64_t t1 = v[7] +
                          (R64(v[4], 14) ^ R64(v[4], 18) ^ R64(v[4], 41)) +
                          ((v[4] & v[5]) ^ (~v[4] & v[6])) + k512[i] + w[i];
      const uint64_t t2 = (R64(v[0], 28) ^ R64(v[0], 34) ^ R64(v[0], 39)) +
                          ((v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]));
      memmove(v + 1, v, 7 * sizeof(uint64_t));
      v[4] += t1;
      v[0] = t1 + t2;
    }
    for (int i = 0; i < 8; ++i) h[i] += v[i];
  }
}

}  // namespace padlock_emu
