// SPDX-License-Identifier: Apache-2.0
#include "backends/software/gcm_long_iv.h"

#include <openssl/crypto.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace accelcrypt::software {
namespace {

// An element of GF(2^128) in GCM's bit order: `hi` holds bytes 0..7 and
// `lo` bytes 8..15, big-endian, so x^0 is the top bit of `hi`.
struct Block {
  uint64_t hi;
  uint64_t lo;
};

Block Load(const uint8_t in[16]) {
  Block b{0, 0};
  for (int i = 0; i < 8; ++i) {
    b.hi = (b.hi << 8) | in[i];
    b.lo = (b.lo << 8) | in[8 + i];
  }
  return b;
}

void Store(Block b, uint8_t out[16]) {
  for (int i = 7; i >= 0; --i) {
    out[i] = static_cast<uint8_t>(b.hi);
    out[8 + i] = static_cast<uint8_t>(b.lo);
    b.hi >>= 8;
    b.lo >>= 8;
  }
}

// Multiply is SP 800-38D Algorithm 1, with masks instead of branches so the
// time does not depend on the (secret) operands.
Block Multiply(Block x, Block y) {
  Block z{0, 0};
  Block v = y;
  for (int i = 0; i < 128; ++i) {
    uint64_t word = i < 64 ? x.hi : x.lo;
    uint64_t bit = (word >> (63 - (i & 63))) & 1;
    uint64_t take = 0 - bit;
    z.hi ^= v.hi & take;
    z.lo ^= v.lo & take;
    uint64_t carry = 0 - (v.lo & 1);
    v.lo = (v.lo >> 1) | (v.hi << 63);
    v.hi = (v.hi >> 1) ^ (0xe100000000000000ull & carry);
  }
  return z;
}

// Inverse returns x^(2^128 - 2) = x^-1 for non-zero x: the product of
// x^(2^i) for i = 1..127.
Block Inverse(Block x) {
  Block result{0x8000000000000000ull, 0};  // the field's 1
  Block power = x;
  for (int i = 1; i < 128; ++i) {
    power = Multiply(power, power);
    result = Multiply(result, power);
  }
  return result;
}

}  // namespace

void GcmEquivalentIv(const uint8_t h[16], const uint8_t* iv, size_t iv_len,
                     uint8_t out[16]) {
  Block hb = Load(h);
  if ((hb.hi | hb.lo) == 0) {
    std::memset(out, 0, 16);
    return;
  }
  Block y{0, 0};
  Block j0;
  if (iv_len == 12) {
    // A 96-bit IV is used directly: J0 = IV || 0^31 || 1.
    uint8_t block[16] = {};
    std::memcpy(block, iv, 12);
    block[15] = 1;
    j0 = Load(block);
  } else {
    // J0 = GHASH_H(IV || zero padding || [8 * iv_len]_64).
    for (size_t off = 0; off < iv_len; off += 16) {
      uint8_t chunk[16] = {};
      size_t n = iv_len - off < 16 ? iv_len - off : 16;
      std::memcpy(chunk, iv + off, n);
      Block c = Load(chunk);
      y.hi ^= c.hi;
      y.lo ^= c.lo;
      y = Multiply(y, hb);
      OPENSSL_cleanse(chunk, sizeof(chunk));
    }
    y.lo ^= static_cast<uint64_t>(iv_len) * 8;
    j0 = Multiply(y, hb);
  }

  Block h_inv = Inverse(hb);
  Block t = Multiply(j0, h_inv);
  t.lo ^= 128;  // L = 0^64 || [128]_64, the length block of a 16-byte IV
  Store(Multiply(t, h_inv), out);

  OPENSSL_cleanse(&hb, sizeof(hb));
  OPENSSL_cleanse(&h_inv, sizeof(h_inv));
  OPENSSL_cleanse(&y, sizeof(y));
  OPENSSL_cleanse(&j0, sizeof(j0));
  OPENSSL_cleanse(&t, sizeof(t));
}

}  // namespace accelcrypt::software
