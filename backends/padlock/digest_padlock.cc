// SPDX-License-Identifier: Apache-2.0
//
// SHA-1/224/256 on PHE and SHA-384/512 on PHE2 (facts §3). Nano and Zhaoxin:
// block mode for whole blocks, padding in software (this also avoids
// Zhaoxin's empty-message quirk, §3.5). C7 has no block mode: messages up to
// kC7Buffer bytes are buffered and hashed by one finalizing call; beyond
// that the buffered whole blocks are compressed in software and PHE finishes
// with "bytes already done" (Linux's resume form). Finalizing calls are
// bounded by kOneShotLimit so the bit length fits 32 bits (Alpine's limit);
// longer messages are finished in software.
#include <string.h>

#include <new>

#include "backends/padlock/padlock_asm.h"
#include "backends/padlock/padlock_internal.h"
#include "backends/padlock/portable_crypto.h"

namespace accelcrypt::padlock {
namespace {

constexpr uint64_t kOneShotLimit = 0x1FFFFFFEu;

constexpr uint32_t kSha1Iv[5] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476,
                                 0xc3d2e1f0};
constexpr uint32_t kSha224Iv[8] = {0xc1059ed8, 0x367cd507, 0x3070dd17,
                                   0xf70e5939, 0xffc00b31, 0x68581511,
                                   0x64f98fa7, 0xbefa4fa4};
constexpr uint32_t kSha256Iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372,
                                   0xa54ff53a, 0x510e527f, 0x9b05688c,
                                   0x1f83d9ab, 0x5be0cd19};
constexpr uint64_t kSha384Iv[8] = {
    0xcbbb9d5dc1059ed8ull, 0x629a292a367cd507ull, 0x9159015a3070dd17ull,
    0x152fecd8f70e5939ull, 0x67332667ffc00b31ull, 0x8eb44a8768581511ull,
    0xdb0c2e0d64f98fa7ull, 0x47b5481dbefa4fa4ull};
constexpr uint64_t kSha512Iv[8] = {
    0x6a09e667f3bcc908ull, 0xbb67ae8584caa73bull, 0x3c6ef372fe94f82bull,
    0xa54ff53a5f1d36f1ull, 0x510e527fade682d1ull, 0x9b05688c2b3e6c1full,
    0x1f83d9abfb41bd6bull, 0x5be0cd19137e2179ull};

DigestCtx* Impl(accelcrypt_digest_ctx* c) {
  return reinterpret_cast<DigestCtx*>(c);
}
const DigestCtx* Impl(const accelcrypt_digest_ctx* c) {
  return reinterpret_cast<const DigestCtx*>(c);
}

const char* AlgName(accelcrypt_alg alg) {
  switch (alg) {
    case ACCELCRYPT_ALG_SHA1:
      return "SHA-1";
    case ACCELCRYPT_ALG_SHA224:
      return "SHA-224";
    case ACCELCRYPT_ALG_SHA256:
      return "SHA-256";
    case ACCELCRYPT_ALG_SHA384:
      return "SHA-384";
    case ACCELCRYPT_ALG_SHA512:
      return "SHA-512";
  }
  return "?";
}

void Reset(DigestCtx* d) {
  memset(d->state, 0, sizeof(d->state));
  switch (d->alg) {
    case ACCELCRYPT_ALG_SHA1:
      memcpy(d->state, kSha1Iv, sizeof(kSha1Iv));
      break;
    case ACCELCRYPT_ALG_SHA224:
      memcpy(d->state, kSha224Iv, sizeof(kSha224Iv));
      break;
    case ACCELCRYPT_ALG_SHA256:
      memcpy(d->state, kSha256Iv, sizeof(kSha256Iv));
      break;
    case ACCELCRYPT_ALG_SHA384:
      memcpy(d->state, kSha384Iv, sizeof(kSha384Iv));
      break;
    case ACCELCRYPT_ALG_SHA512:
      memcpy(d->state, kSha512Iv, sizeof(kSha512Iv));
      break;
  }
  d->buf_len = 0;
  d->total = 0;
  d->absorbed = 0;
  d->finished = false;
}

bool Setup(DigestCtx* d, const Backend* be, accelcrypt_alg alg) {
  d->backend = be;
  d->alg = alg;
  switch (alg) {
    case ACCELCRYPT_ALG_SHA1:
      d->kind = ShaKind::kSha1;
      d->out_len = 20;
      break;
    case ACCELCRYPT_ALG_SHA224:
      d->kind = ShaKind::kSha256;
      d->out_len = 28;
      break;
    case ACCELCRYPT_ALG_SHA256:
      d->kind = ShaKind::kSha256;
      d->out_len = 32;
      break;
    case ACCELCRYPT_ALG_SHA384:
      d->kind = ShaKind::kSha512;
      d->out_len = 48;
      break;
    case ACCELCRYPT_ALG_SHA512:
      d->kind = ShaKind::kSha512;
      d->out_len = 64;
      break;
    default:
      return false;
  }
  d->block_len = d->kind == ShaKind::kSha512 ? 128 : 64;
  d->oneshot_design = !be->features.phe_block_mode;
  Reset(d);
  return true;
}

void HwBlocks(DigestCtx* d, const uint8_t* in, size_t n) {
  switch (d->kind) {
    case ShaKind::kSha1:
      XshaBlocks1(d->state, in, n);
      break;
    case ShaKind::kSha256:
      XshaBlocks256(d->state, in, n);
      break;
    case ShaKind::kSha512:
      XshaBlocks512(d->state, in, n);
      break;
  }
}

void SwBlocks(DigestCtx* d, const uint8_t* in, size_t n) {
  if (d->kind == ShaKind::kSha1) {
    Sha1Compress(reinterpret_cast<uint32_t*>(d->state), in, n);
  } else {
    Sha256Compress(reinterpret_cast<uint32_t*>(d->state), in, n);
  }
}

void UpdateBlockMode(DigestCtx* d, const uint8_t* p, size_t len) {
  const size_t bl = d->block_len;
  if (d->buf_len > 0) {
    const size_t take = bl - d->buf_len < len ? bl - d->buf_len : len;
    memcpy(d->buf + d->buf_len, p, take);
    d->buf_len += take;
    p += take;
    len -= take;
    if (d->buf_len < bl) return;
    HwBlocks(d, d->buf, 1);
    d->buf_len = 0;
  }
  const size_t n = len / bl;
  if (n > 0) HwBlocks(d, p, n);
  memcpy(d->buf, p + n * bl, len - n * bl);
  d->buf_len = len - n * bl;
}

void UpdateC7(DigestCtx* d, const uint8_t* p, size_t len) {
  if (d->buf_len + len <= kC7Buffer) {
    memcpy(d->buf + d->buf_len, p, len);
    d->buf_len += len;
    return;
  }
  // Too long for one hardware call: compress whole blocks in software.
  const size_t whole = d->buf_len / 64;
  SwBlocks(d, d->buf, whole);
  d->absorbed += whole * 64;
  memmove(d->buf, d->buf + whole * 64, d->buf_len - whole * 64);
  d->buf_len -= whole * 64;
  if (d->buf_len > 0) {
    const size_t take = 64 - d->buf_len;  // len > take here
    memcpy(d->buf + d->buf_len, p, take);
    SwBlocks(d, d->buf, 1);
    d->absorbed += 64;
    p += take;
    len -= take;
    d->buf_len = 0;
  }
  const size_t n = len / 64;
  SwBlocks(d, p, n);
  d->absorbed += n * 64;
  memcpy(d->buf, p + n * 64, len - n * 64);
  d->buf_len = len - n * 64;
}

// PadInto appends the padding for a message of `total` bytes to the
// `buf_len` bytes in buf; returns the padded length (1 or 2 blocks).
size_t PadInto(DigestCtx* d) {
  const size_t bl = d->block_len;
  const size_t len_field = d->kind == ShaKind::kSha512 ? 16 : 8;
  size_t n = d->buf_len;
  d->buf[n++] = 0x80;
  const size_t padded = n + len_field <= bl ? bl : 2 * bl;
  memset(d->buf + n, 0, padded - n);
  uint64_t bits = d->total * 8;
  for (size_t i = 0; i < 8; ++i, bits >>= 8) {
    d->buf[padded - 1 - i] = static_cast<uint8_t>(bits);
  }
  if (len_field == 16) {
    d->buf[padded - 9] |= static_cast<uint8_t>((d->total >> 61) & 7);
  }
  return padded;
}

void Output(const DigestCtx* d, uint8_t* out) {
  // PHE keeps host-order words; the digest is each word big-endian (§3.4).
  if (d->kind == ShaKind::kSha512) {
    const auto* w = reinterpret_cast<const uint64_t*>(d->state);
    for (size_t i = 0; i < d->out_len; ++i) {
      out[i] = static_cast<uint8_t>(w[i / 8] >> (56 - 8 * (i % 8)));
    }
  } else {
    const auto* w = reinterpret_cast<const uint32_t*>(d->state);
    for (size_t i = 0; i < d->out_len; ++i) {
      out[i] = static_cast<uint8_t>(w[i / 4] >> (24 - 8 * (i % 4)));
    }
  }
}

void FinishInto(DigestCtx* d) {
  if (!d->oneshot_design) {
    const size_t padded = PadInto(d);
    HwBlocks(d, d->buf, padded / d->block_len);
    return;
  }
  if (d->total <= kOneShotLimit) {
    if (d->kind == ShaKind::kSha1) {
      XshaFinal1(d->state, d->buf, d->absorbed, d->total);
    } else {
      XshaFinal256(d->state, d->buf, d->absorbed, d->total);
    }
    return;
  }
  // Beyond the finalizing limit: software. Whole blocks first, then padding.
  const size_t whole = d->buf_len / 64;
  SwBlocks(d, d->buf, whole);
  memmove(d->buf, d->buf + whole * 64, d->buf_len - whole * 64);
  d->buf_len -= whole * 64;
  const size_t padded = PadInto(d);
  SwBlocks(d, d->buf, padded / 64);
}

accelcrypt_status NewCtx(void* backend, accelcrypt_alg alg,
                         accelcrypt_digest_ctx** out, accelcrypt_error* err) {
  if (out == nullptr) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_INVALID_ARGUMENT,
                               "padlock: digest newctx: NULL output");
  }
  const auto* be = static_cast<const Backend*>(backend);
  bool declared = false;
  for (size_t i = 0; i < be->num_caps; ++i) declared |= be->caps[i].alg == alg;
  auto* d = declared ? new (std::nothrow) DigestCtx() : nullptr;
  if (!declared) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_UNIMPLEMENTED,
                               "padlock: digest 0x%08x not offered", alg);
  }
  if (d == nullptr) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_RESOURCE_EXHAUSTED,
                               "padlock: out of memory");
  }
  Setup(d, be, alg);
  *out = reinterpret_cast<accelcrypt_digest_ctx*>(d);
  return ACCELCRYPT_OK;
}

accelcrypt_status Init(accelcrypt_digest_ctx* ctx, accelcrypt_error* err) {
  DigestCtx* d = Impl(ctx);
  if (d == nullptr) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_INVALID_ARGUMENT,
                               "padlock: digest init: NULL context");
  }
  Reset(d);
  return ACCELCRYPT_OK;
}

accelcrypt_status Update(accelcrypt_digest_ctx* ctx, const uint8_t* data,
                         size_t len, accelcrypt_error* err) {
  DigestCtx* d = Impl(ctx);
  if (d == nullptr || d->finished) {
    return kit::WriteAbiErrorf(
        err, ACCELCRYPT_ERR_FAILED_PRECONDITION,
        "padlock: digest update after final (init first)");
  }
  if (len == 0) return ACCELCRYPT_OK;
  if (data == nullptr) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_INVALID_ARGUMENT,
                               "padlock: %s update: NULL data",
                               AlgName(d->alg));
  }
  if (d->oneshot_design) {
    UpdateC7(d, data, len);
  } else {
    UpdateBlockMode(d, data, len);
  }
  d->total += len;
  return ACCELCRYPT_OK;
}

accelcrypt_status Final(accelcrypt_digest_ctx* ctx, uint8_t* out,
                        size_t out_len, accelcrypt_error* err) {
  DigestCtx* d = Impl(ctx);
  if (d == nullptr || d->finished) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_FAILED_PRECONDITION,
                               "padlock: digest final twice (init first)");
  }
  if (out == nullptr || out_len < d->out_len) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_OUT_OF_RANGE,
                               "padlock: %s final: output needs %zu bytes",
                               AlgName(d->alg), d->out_len);
  }
  FinishInto(d);
  Output(d, out);
  d->finished = true;
  SecureZero(d->buf, sizeof(d->buf));
  return ACCELCRYPT_OK;
}

accelcrypt_status Oneshot(void* backend, accelcrypt_alg alg,
                          const uint8_t* data, size_t len, uint8_t* out,
                          size_t out_len, accelcrypt_error* err) {
  accelcrypt_digest_ctx* ctx = nullptr;
  accelcrypt_status st = NewCtx(backend, alg, &ctx, err);
  if (st != ACCELCRYPT_OK) return st;
  DigestCtx* d = Impl(ctx);
  if (out == nullptr || out_len < d->out_len) {
    st = kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_OUT_OF_RANGE,
                             "padlock: %s: output needs %zu bytes",
                             AlgName(alg), d->out_len);
  } else if (len > 0 && data == nullptr) {
    st = kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_INVALID_ARGUMENT,
                             "padlock: %s: NULL data", AlgName(alg));
  } else if (d->oneshot_design && len <= kOneShotLimit) {
    // C7's native design: the whole message in one finalizing call.
    if (d->kind == ShaKind::kSha1) {
      XshaFinal1(d->state, data, 0, len);
    } else {
      XshaFinal256(d->state, data, 0, len);
    }
    Output(d, out);
  } else {
    st = Update(ctx, data, len, err);
    if (st == ACCELCRYPT_OK) st = Final(ctx, out, out_len, err);
  }
  SecureZero(d, sizeof(*d));
  delete d;
  return st;
}

accelcrypt_status DupCtx(const accelcrypt_digest_ctx* ctx,
                         accelcrypt_digest_ctx** out, accelcrypt_error* err) {
  const DigestCtx* d = Impl(ctx);
  if (d == nullptr || out == nullptr) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_INVALID_ARGUMENT,
                               "padlock: digest dupctx: NULL argument");
  }
  auto* n = new (std::nothrow) DigestCtx(*d);
  if (n == nullptr) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_RESOURCE_EXHAUSTED,
                               "padlock: out of memory");
  }
  *out = reinterpret_cast<accelcrypt_digest_ctx*>(n);
  return ACCELCRYPT_OK;
}

void FreeCtx(accelcrypt_digest_ctx* ctx) {
  DigestCtx* d = Impl(ctx);
  if (d == nullptr) return;
  SecureZero(d, sizeof(*d));
  delete d;
}

}  // namespace

const accelcrypt_digest_table kDigestTable = {
    sizeof(accelcrypt_digest_table),
    NewCtx,
    Init,
    Update,
    Final,
    Oneshot,
    DupCtx,
    FreeCtx,
};

}  // namespace accelcrypt::padlock
