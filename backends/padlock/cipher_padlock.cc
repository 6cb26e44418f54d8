// SPDX-License-Identifier: Apache-2.0
//
// AES modes on PadLock ACE/ACE2: ECB, CBC, CFB128, OFB (xcrypt), CTR (ACE2
// xcrypt-ctr split at the 16-bit counter wrap, or an ECB keystream without
// ACE2) and GCM (that CTR plus the portable constant-time GHASH).
#include <string.h>

#include <new>

#include "backends/padlock/padlock_asm.h"
#include "backends/padlock/padlock_internal.h"
#include "backends/padlock/portable_crypto.h"

namespace accelcrypt::padlock {
namespace {

using XcryptFn = uint8_t* (*)(const uint8_t*, uint8_t*, size_t, const void*,
                              const void*, uint8_t*);

// Bytes the unit may read past the input end (facts §2.8, OpenSSL's guards):
// ECB 128 (Nano stepping 2 fetches 8 blocks), CBC 64 (4 blocks), 32 for the
// rest; CFB and OFB chain like CBC and get its guard.
constexpr size_t kGuardEcb = 128;
constexpr size_t kGuardCbc = 64;
constexpr size_t kGuardCtr = 32;
constexpr size_t kPage = 4096;
// Misaligned data goes through a stack buffer in chunks (facts §2.9); the
// buffer has room for the largest over-read after a full chunk.
constexpr size_t kChunk = 512;
constexpr size_t kSlack = 128;

CipherCtx* Impl(accelcrypt_cipher_ctx* c) {
  return reinterpret_cast<CipherCtx*>(c);
}
const CipherCtx* Impl(const accelcrypt_cipher_ctx* c) {
  return reinterpret_cast<const CipherCtx*>(c);
}

// Call runs one xcrypt on aligned data and folds the chaining value back when
// the unit returned it elsewhere (facts §2.6, "copy or refresh iv").
inline void Call(XcryptFn fn, CipherCtx* c, const uint8_t* cword,
                 const uint8_t* in, uint8_t* out, size_t num_blocks) {
  uint8_t* ret = fn(in, out, num_blocks, c->ace.key, cword, c->ace.iv);
  if (ret != c->ace.iv) memcpy(c->ace.iv, ret, 16);
}

void Bounced(XcryptFn fn, CipherCtx* c, const uint8_t* cword, const uint8_t* in,
             uint8_t* out, size_t num_blocks) {
  alignas(16) uint8_t buf[kChunk + kSlack];
  size_t len = num_blocks * 16;
  // First chunk takes the remainder, so later chunks are full.
  size_t chunk = len % kChunk;
  if (chunk == 0) chunk = kChunk;
  while (len > 0) {
    memcpy(buf, in, chunk);
    Call(fn, c, cword, buf, buf, chunk / 16);
    memcpy(out, buf, chunk);
    in += chunk;
    out += chunk;
    len -= chunk;
    chunk = kChunk;
  }
  SecureZero(buf, sizeof(buf));
}

// RunXcrypt processes whole blocks with the fast path when both pointers are
// aligned, bouncing only an input tail that ends within `guard` bytes of a
// page end (the prefetch could touch an unmapped page), and bounces
// misaligned data in chunks.
void RunXcrypt(XcryptFn fn, size_t guard, CipherCtx* c, const uint8_t* cword,
               const uint8_t* in, uint8_t* out, size_t num_blocks) {
  if (num_blocks == 0) return;
  const size_t len = num_blocks * 16;
  if (((reinterpret_cast<uintptr_t>(in) | reinterpret_cast<uintptr_t>(out)) &
       15) != 0) {
    Bounced(fn, c, cword, in, out, num_blocks);
    return;
  }
  const uintptr_t end = reinterpret_cast<uintptr_t>(in) + len;
  const size_t to_page_end = (kPage - (end & (kPage - 1))) & (kPage - 1);
  size_t tail = 0;
  if (to_page_end < guard) tail = len < guard ? len : guard;
  const size_t head = len - tail;
  if (head > 0) Call(fn, c, cword, in, out, head / 16);
  if (tail > 0) Bounced(fn, c, cword, in + head, out + head, tail / 16);
}

// EncryptScratch runs the forward cipher over ace.scratch (one block). The
// control word may differ from the mode's (CFB decrypt), and the unit caches
// the control word: reload around the switch (facts §2.5).
void EncryptScratch(CipherCtx* c) {
  const bool other = memcmp(c->ace.cword, c->ace.cword_enc, 16) != 0;
  if (other) ForceKeyReload();
  XcryptEcb(c->ace.scratch, c->ace.scratch, 1, c->ace.key, c->ace.cword_enc,
            c->ace.iv);
  if (other) ForceKeyReload();
}

// CounterAdd adds `n` to the big-endian integer in the last `width` bytes of
// the counter block (16 for CTR, 4 for GCM's inc32).
void CounterAdd(uint8_t ctr[16], uint64_t n, int width) {
  for (int i = 15; i >= 16 - width && n != 0; --i) {
    n += ctr[i];
    ctr[i] = static_cast<uint8_t>(n);
    n >>= 8;
  }
}

void CounterDec(uint8_t ctr[16], int width) {
  for (int i = 15; i >= 16 - width; --i) {
    if (ctr[i]-- != 0) break;
  }
}

// CtrBlocks encrypts whole blocks in counter mode from ace.iv, leaving the
// next counter there.
void CtrBlocks(CipherCtx* c, const uint8_t* in, uint8_t* out, size_t num_blocks,
               int width) {
  if (c->backend->features.ace2) {
    // xcrypt-ctr increments bytes 14-15 only and wraps without carry (facts
    // §2.6): stop each call at the wrap and carry in software.
    while (num_blocks > 0) {
      const uint32_t low = (uint32_t{c->ace.iv[14]} << 8) | c->ace.iv[15];
      const size_t room = 65536 - low;
      const size_t n = num_blocks < room ? num_blocks : room;
      RunXcrypt(XcryptCtr, kGuardCtr, c, c->ace.cword, in, out, n);
      if (n == room) CounterAdd(c->ace.iv, uint64_t{1} << 16, width);
      in += n * 16;
      out += n * 16;
      num_blocks -= n;
    }
    return;
  }
  // No ACE2 (C3, C7): counter blocks through ECB, then XOR (32-bit OpenSSL
  // does the same, facts §2.6).
  alignas(16) uint8_t ks[kChunk + kSlack];
  while (num_blocks > 0) {
    const size_t n = num_blocks < kChunk / 16 ? num_blocks : kChunk / 16;
    for (size_t i = 0; i < n; ++i) {
      memcpy(ks + 16 * i, c->ace.iv, 16);
      CounterAdd(c->ace.iv, 1, width);
    }
    XcryptEcb(ks, ks, n, c->ace.key, c->ace.cword_enc, c->ace.iv);
    for (size_t i = 0; i < n * 16; ++i) out[i] = in[i] ^ ks[i];
    in += n * 16;
    out += n * 16;
    num_blocks -= n;
  }
  SecureZero(ks, sizeof(ks));
}

// CtrStream is counter mode over any length with `num` and `ecount`.
void CtrStream(CipherCtx* c, const uint8_t* in, uint8_t* out, size_t len,
               int width) {
  while (c->num != 0 && len > 0) {
    *out++ = *in++ ^ c->ecount[c->num];
    c->num = (c->num + 1) & 15;
    --len;
  }
  const size_t blocks = len / 16;
  CtrBlocks(c, in, out, blocks, width);
  in += blocks * 16;
  out += blocks * 16;
  len -= blocks * 16;
  if (len > 0) {
    memcpy(c->ace.scratch, c->ace.iv, 16);
    EncryptScratch(c);
    memcpy(c->ecount, c->ace.scratch, 16);
    CounterAdd(c->ace.iv, 1, width);
    for (size_t i = 0; i < len; ++i) out[i] = in[i] ^ c->ecount[i];
    c->num = static_cast<uint32_t>(len);
  }
}

// FeedbackStream is CFB128/OFB over any length. ace.iv holds the feedback
// register; within a block it holds the OpenSSL layout: bytes 0..num-1 are
// ciphertext (CFB) or keystream (OFB), the rest keystream.
void FeedbackStream(CipherCtx* c, const uint8_t* in, uint8_t* out, size_t len) {
  const bool cfb = c->mode == ACCELCRYPT_MODE_CFB128;
  auto one = [&](uint8_t x) {
    uint8_t* v = &c->ace.iv[c->num];
    const uint8_t y = x ^ *v;
    if (cfb) *v = c->encrypt ? y : x;
    c->num = (c->num + 1) & 15;
    return y;
  };
  while (c->num != 0 && len > 0) {
    *out++ = one(*in++);
    --len;
  }
  const size_t blocks = len / 16;
  if (blocks > 0) {
    RunXcrypt(cfb ? XcryptCfb : XcryptOfb, kGuardCbc, c, c->ace.cword, in, out,
              blocks);
    in += blocks * 16;
    out += blocks * 16;
    len -= blocks * 16;
  }
  if (len > 0) {
    memcpy(c->ace.scratch, c->ace.iv, 16);
    EncryptScratch(c);
    memcpy(c->ace.iv, c->ace.scratch, 16);
    while (len-- > 0) *out++ = one(*in++);
  }
}

void GhashBytes(CipherCtx* c, const uint8_t* p, size_t len) {
  while (len > 0) {
    const size_t take = 16 - c->gbuf_len < len ? 16 - c->gbuf_len : len;
    memcpy(c->gbuf + c->gbuf_len, p, take);
    c->gbuf_len += take;
    p += take;
    len -= take;
    if (c->gbuf_len == 16) {
      for (int i = 0; i < 16; ++i) c->ghash[i] ^= c->gbuf[i];
      GhashMul(c->ghash, c->h);
      c->gbuf_len = 0;
    }
  }
}

void GhashFlush(CipherCtx* c) {
  if (c->gbuf_len == 0) return;
  memset(c->gbuf + c->gbuf_len, 0, 16 - c->gbuf_len);
  for (int i = 0; i < 16; ++i) c->ghash[i] ^= c->gbuf[i];
  GhashMul(c->ghash, c->h);
  c->gbuf_len = 0;
}

void StoreBe64(uint8_t* p, uint64_t v) {
  for (int i = 7; i >= 0; --i, v >>= 8) p[i] = static_cast<uint8_t>(v);
}

bool Overlap(const uint8_t* in, const uint8_t* out, size_t len) {
  if (in == out || len == 0) return false;
  const uintptr_t a = reinterpret_cast<uintptr_t>(in);
  const uintptr_t b = reinterpret_cast<uintptr_t>(out);
  return a < b + len && b < a + len;
}

accelcrypt_status NewCtx(void* backend, accelcrypt_alg alg,
                         accelcrypt_cipher_ctx** out, accelcrypt_error* err) {
  if (out == nullptr) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_INVALID_ARGUMENT,
                               "padlock: cipher newctx: NULL output");
  }
  const auto* be = static_cast<const Backend*>(backend);
  bool declared = false;
  for (size_t i = 0; i < be->num_caps; ++i) declared |= be->caps[i].alg == alg;
  if (!declared || ACCELCRYPT_ALG_FAMILY(alg) != ACCELCRYPT_FAMILY_CIPHER) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_UNIMPLEMENTED,
                               "padlock: cipher 0x%08x not offered", alg);
  }
  auto* c = new (std::nothrow) CipherCtx();
  if (c == nullptr) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_RESOURCE_EXHAUSTED,
                               "padlock: out of memory");
  }
  c->backend = be;
  c->alg = alg;
  c->mode = ACCELCRYPT_CIPHER_MODE(alg);
  c->key_len = ACCELCRYPT_CIPHER_KEY_BYTES(alg);
  *out = reinterpret_cast<accelcrypt_cipher_ctx*>(c);
  return ACCELCRYPT_OK;
}

accelcrypt_status Init(accelcrypt_cipher_ctx* ctx, int encrypt,
                       const uint8_t* key, size_t key_len, const uint8_t* iv,
                       size_t iv_len, accelcrypt_error* err) {
  CipherCtx* c = Impl(ctx);
  if (c == nullptr || key == nullptr) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_INVALID_ARGUMENT,
                               "padlock: cipher init: NULL context or key");
  }
  if (key_len != c->key_len) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_INVALID_ARGUMENT,
                               "padlock: AES-%zu-%s: key is %zu bytes",
                               c->key_len * 8, kit::ModeName(c->mode), key_len);
  }
  const bool gcm = c->mode == ACCELCRYPT_MODE_GCM;
  const size_t want_iv = c->mode == ACCELCRYPT_MODE_ECB ? 0 : 16;
  if (gcm ? (iv_len < 1 || iv_len > 1024) : iv_len != want_iv) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_INVALID_ARGUMENT,
                               "padlock: AES-%zu-%s: IV is %zu bytes",
                               c->key_len * 8, kit::ModeName(c->mode), iv_len);
  }
  if (iv_len > 0 && iv == nullptr) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_INVALID_ARGUMENT,
                               "padlock: AES-%zu-%s: NULL IV", c->key_len * 8,
                               kit::ModeName(c->mode));
  }
  const bool blockwise =
      c->mode == ACCELCRYPT_MODE_ECB || c->mode == ACCELCRYPT_MODE_CBC;
  const Backend* be = c->backend;
  const accelcrypt_alg alg = c->alg;
  const uint32_t mode = c->mode;
  SecureZero(c, sizeof(*c));
  new (c) CipherCtx();
  c->backend = be;
  c->alg = alg;
  c->mode = mode;
  c->key_len = key_len;
  c->encrypt = encrypt != 0;
  // Software schedule (KEYGEN = 1) for every key size: hardware expansion
  // exists for AES-128 only (facts §2.4). ECB/CBC decryption takes the
  // equivalent-inverse schedule; CFB/OFB/CTR always run the forward cipher.
  const bool dec_schedule = blockwise && !c->encrypt;
  const int rounds = ExpandAesKey(key, key_len, dec_schedule, c->ace.key);
  // Control word (facts §2.3): rounds, KEYGEN (bit 7), ENCDEC (bit 9),
  // KSIZE (bits 11:10). ENCDEC follows the direction for ECB/CBC/CFB.
  const uint32_t base = static_cast<uint32_t>(rounds) | 0x80u |
                        (static_cast<uint32_t>((key_len - 16) / 8) << 10);
  const bool encdec =
      !c->encrypt && (blockwise || c->mode == ACCELCRYPT_MODE_CFB128);
  const uint32_t word = base | (encdec ? 0x200u : 0u);
  memcpy(c->ace.cword, &word, 4);
  memcpy(c->ace.cword_enc, &base, 4);
  c->keyed = true;
  // New key and control word in memory: the unit must not use its cache.
  ForceKeyReload();
  if (!gcm) {
    if (iv_len > 0) memcpy(c->ace.iv, iv, 16);
    return ACCELCRYPT_OK;
  }
  // GCM: H = E(0^128); J0 from the IV (SP 800-38D §7.1).
  memset(c->ace.scratch, 0, 16);
  EncryptScratch(c);
  memcpy(c->h, c->ace.scratch, 16);
  uint8_t j0[16] = {};
  if (iv_len == 12) {
    memcpy(j0, iv, 12);
    j0[15] = 1;
  } else {
    GhashBytes(c, iv, iv_len);
    GhashFlush(c);
    uint8_t lens[16] = {};
    StoreBe64(lens + 8, static_cast<uint64_t>(iv_len) * 8);
    GhashBytes(c, lens, 16);
    memcpy(j0, c->ghash, 16);
    memset(c->ghash, 0, 16);
  }
  memcpy(c->ace.scratch, j0, 16);
  EncryptScratch(c);
  memcpy(c->ek_j0, c->ace.scratch, 16);
  CounterAdd(j0, 1, 4);
  memcpy(c->ace.iv, j0, 16);
  SecureZero(j0, sizeof(j0));
  SecureZero(c->ace.scratch, 16);
  return ACCELCRYPT_OK;
}

accelcrypt_status Update(accelcrypt_cipher_ctx* ctx, const uint8_t* in,
                         size_t in_len, uint8_t* out, accelcrypt_error* err) {
  CipherCtx* c = Impl(ctx);
  if (c == nullptr || !c->keyed) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_FAILED_PRECONDITION,
                               "padlock: cipher update before init");
  }
  if (in_len == 0) return ACCELCRYPT_OK;
  if (in == nullptr || out == nullptr) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_INVALID_ARGUMENT,
                               "padlock: AES-%s update: NULL buffer",
                               kit::ModeName(c->mode));
  }
  if (Overlap(in, out, in_len)) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_INVALID_ARGUMENT,
                               "padlock: AES-%s update: buffers partly overlap",
                               kit::ModeName(c->mode));
  }
  // One reload per operation (facts §2.5): another context may have run on
  // this CPU since our last call.
  switch (c->mode) {
    case ACCELCRYPT_MODE_ECB:
    case ACCELCRYPT_MODE_CBC:
      if (in_len % 16 != 0) {
        return kit::WriteAbiErrorf(
            err, ACCELCRYPT_ERR_INVALID_ARGUMENT,
            "padlock: AES-%s update: %zu bytes is not whole "
            "blocks",
            kit::ModeName(c->mode), in_len);
      }
      ForceKeyReload();
      if (c->mode == ACCELCRYPT_MODE_ECB) {
        RunXcrypt(XcryptEcb, kGuardEcb, c, c->ace.cword, in, out, in_len / 16);
      } else {
        RunXcrypt(XcryptCbc, kGuardCbc, c, c->ace.cword, in, out, in_len / 16);
      }
      return ACCELCRYPT_OK;
    case ACCELCRYPT_MODE_CFB128:
    case ACCELCRYPT_MODE_OFB:
      ForceKeyReload();
      FeedbackStream(c, in, out, in_len);
      return ACCELCRYPT_OK;
    case ACCELCRYPT_MODE_CTR:
      ForceKeyReload();
      CtrStream(c, in, out, in_len, 16);
      return ACCELCRYPT_OK;
    case ACCELCRYPT_MODE_GCM: {
      if (c->finished) {
        return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_FAILED_PRECONDITION,
                                   "padlock: AES-GCM update after final");
      }
      // Messages are limited to 2^39 - 256 bits (SP 800-38D §5.2.1.1).
      if (c->ct_len + in_len > (uint64_t{1} << 36) - 32) {
        return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_INVALID_ARGUMENT,
                                   "padlock: AES-GCM message too long");
      }
      if (!c->data_started) {
        GhashFlush(c);
        c->data_started = true;
      }
      ForceKeyReload();
      if (!c->encrypt) GhashBytes(c, in, in_len);
      CtrStream(c, in, out, in_len, 4);
      if (c->encrypt) GhashBytes(c, out, in_len);
      c->ct_len += in_len;
      return ACCELCRYPT_OK;
    }
  }
  return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_INTERNAL,
                             "padlock: unknown mode");
}

accelcrypt_status Aad(accelcrypt_cipher_ctx* ctx, const uint8_t* aad,
                      size_t aad_len, accelcrypt_error* err) {
  CipherCtx* c = Impl(ctx);
  if (c == nullptr || !c->keyed) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_FAILED_PRECONDITION,
                               "padlock: aad before init");
  }
  if (c->mode != ACCELCRYPT_MODE_GCM) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_INVALID_ARGUMENT,
                               "padlock: AES-%s has no AAD",
                               kit::ModeName(c->mode));
  }
  if (c->data_started || c->finished) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_FAILED_PRECONDITION,
                               "padlock: AES-GCM AAD after data");
  }
  if (aad_len > 0 && aad == nullptr) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_INVALID_ARGUMENT,
                               "padlock: AES-GCM: NULL AAD");
  }
  GhashBytes(c, aad, aad_len);
  c->aad_len += aad_len;
  return ACCELCRYPT_OK;
}

accelcrypt_status Final(accelcrypt_cipher_ctx* ctx, accelcrypt_error* err) {
  CipherCtx* c = Impl(ctx);
  if (c == nullptr || !c->keyed) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_FAILED_PRECONDITION,
                               "padlock: final before init");
  }
  if (c->mode != ACCELCRYPT_MODE_GCM) return ACCELCRYPT_OK;
  if (c->finished) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_FAILED_PRECONDITION,
                               "padlock: AES-GCM final called twice");
  }
  if (!c->encrypt && c->expected_tag_len == 0) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_FAILED_PRECONDITION,
                               "padlock: AES-GCM decrypt final without a tag");
  }
  GhashFlush(c);
  uint8_t lens[16];
  StoreBe64(lens, c->aad_len * 8);
  StoreBe64(lens + 8, c->ct_len * 8);
  GhashBytes(c, lens, 16);
  uint8_t computed[16];
  for (int i = 0; i < 16; ++i) computed[i] = c->ghash[i] ^ c->ek_j0[i];
  c->finished = true;
  if (c->encrypt) {
    memcpy(c->tag, computed, 16);
    return ACCELCRYPT_OK;
  }
  const bool ok = ConstantTimeEqual(computed, c->tag, c->expected_tag_len);
  SecureZero(computed, sizeof(computed));
  if (!ok) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_AUTH_FAILED,
                               "padlock: AES-GCM tag mismatch");
  }
  return ACCELCRYPT_OK;
}

accelcrypt_status GetTag(accelcrypt_cipher_ctx* ctx, uint8_t* tag,
                         size_t tag_len, accelcrypt_error* err) {
  CipherCtx* c = Impl(ctx);
  if (c == nullptr || c->mode != ACCELCRYPT_MODE_GCM || !c->encrypt ||
      !c->finished) {
    return kit::WriteAbiErrorf(
        err, ACCELCRYPT_ERR_FAILED_PRECONDITION,
        "padlock: get_tag needs a finished AES-GCM encryption");
  }
  if (tag == nullptr || tag_len < 4 || tag_len > 16) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_INVALID_ARGUMENT,
                               "padlock: AES-GCM tag length %zu (4..16)",
                               tag_len);
  }
  memcpy(tag, c->tag, tag_len);
  return ACCELCRYPT_OK;
}

accelcrypt_status SetTag(accelcrypt_cipher_ctx* ctx, const uint8_t* tag,
                         size_t tag_len, accelcrypt_error* err) {
  CipherCtx* c = Impl(ctx);
  if (c == nullptr || c->mode != ACCELCRYPT_MODE_GCM || c->encrypt ||
      c->finished || !c->keyed) {
    return kit::WriteAbiErrorf(
        err, ACCELCRYPT_ERR_FAILED_PRECONDITION,
        "padlock: set_tag needs an AES-GCM decryption before "
        "final");
  }
  if (tag == nullptr || tag_len < 4 || tag_len > 16) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_INVALID_ARGUMENT,
                               "padlock: AES-GCM tag length %zu (4..16)",
                               tag_len);
  }
  memcpy(c->tag, tag, tag_len);
  c->expected_tag_len = tag_len;
  return ACCELCRYPT_OK;
}

accelcrypt_status GetState(const accelcrypt_cipher_ctx* ctx,
                           accelcrypt_cipher_state* out,
                           accelcrypt_error* err) {
  const CipherCtx* c = Impl(ctx);
  if (c == nullptr || out == nullptr || !c->keyed ||
      c->mode == ACCELCRYPT_MODE_GCM) {
    return kit::WriteAbiErrorf(
        err, ACCELCRYPT_ERR_FAILED_PRECONDITION,
        "padlock: get_state needs an initialised non-AEAD "
        "context");
  }
  memcpy(out->iv, c->ace.iv, 16);
  out->num = c->num;
  return ACCELCRYPT_OK;
}

accelcrypt_status SetState(accelcrypt_cipher_ctx* ctx,
                           const accelcrypt_cipher_state* state,
                           accelcrypt_error* err) {
  CipherCtx* c = Impl(ctx);
  if (c == nullptr || state == nullptr || !c->keyed ||
      c->mode == ACCELCRYPT_MODE_GCM) {
    return kit::WriteAbiErrorf(
        err, ACCELCRYPT_ERR_FAILED_PRECONDITION,
        "padlock: set_state needs an initialised non-AEAD "
        "context");
  }
  const bool blockwise =
      c->mode == ACCELCRYPT_MODE_ECB || c->mode == ACCELCRYPT_MODE_CBC;
  if (state->num > 15 || (blockwise && state->num != 0)) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_INVALID_ARGUMENT,
                               "padlock: set_state: position %u out of range",
                               state->num);
  }
  memcpy(c->ace.iv, state->iv, 16);
  c->num = state->num;
  if (c->mode == ACCELCRYPT_MODE_CTR && c->num != 0) {
    // The state carries the next counter; rebuild this block's keystream.
    memcpy(c->ace.scratch, c->ace.iv, 16);
    CounterDec(c->ace.scratch, 16);
    ForceKeyReload();
    EncryptScratch(c);
    memcpy(c->ecount, c->ace.scratch, 16);
    SecureZero(c->ace.scratch, 16);
  }
  return ACCELCRYPT_OK;
}

accelcrypt_status DupCtx(const accelcrypt_cipher_ctx* ctx,
                         accelcrypt_cipher_ctx** out, accelcrypt_error* err) {
  const CipherCtx* c = Impl(ctx);
  if (c == nullptr || out == nullptr) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_INVALID_ARGUMENT,
                               "padlock: dupctx: NULL argument");
  }
  auto* d = new (std::nothrow) CipherCtx(*c);
  if (d == nullptr) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_RESOURCE_EXHAUSTED,
                               "padlock: out of memory");
  }
  *out = reinterpret_cast<accelcrypt_cipher_ctx*>(d);
  return ACCELCRYPT_OK;
}

void FreeCtx(accelcrypt_cipher_ctx* ctx) {
  CipherCtx* c = Impl(ctx);
  if (c == nullptr) return;
  SecureZero(c, sizeof(*c));
  delete c;
}

}  // namespace

const accelcrypt_cipher_table kCipherTable = {
    sizeof(accelcrypt_cipher_table),
    NewCtx,
    Init,
    Update,
    Aad,
    Final,
    GetTag,
    SetTag,
    GetState,
    SetState,
    DupCtx,
    FreeCtx,
};

}  // namespace accelcrypt::padlock
