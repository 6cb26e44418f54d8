// SPDX-License-Identifier: Apache-2.0
// Cipher dispatch functions. Semantics follow OpenSSL 3.0's default provider
// (providers/implementations/ciphers/ciphercommon.c; GCM in
// internal/cipher_gcm.cc after ciphercommon_gcm.c) so that OpenSSL's own
// evp_test passes against this provider: which init arguments may be NULL,
// how a re-init treats the IV, which parameters are gettable and settable.
// The update path allocates nothing and takes no lock.
#include "provider/ciphers.h"

#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>

#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/algorithms.h"
#include "core/cipher_stream.h"
#include "core/status.h"
#include "provider/algorithm_table.h"
#include "provider/errors.h"
#include "provider/internal/cipher_ctx.h"
#include "provider/internal/cipher_gcm.h"
#include "provider/tls_cbc.h"

namespace accelcrypt::provider {
namespace {

using internal::BadParam;
using internal::CheckKeyLen;
using internal::CipherCtx;
using internal::EnsureStream;
using internal::GcmCipher;
using internal::GcmGetCtxParams;
using internal::GcmInit;
using internal::GcmSetParam;
using internal::NoKey;
using internal::RefreshFastPath;
using internal::SetOctets;
using internal::TlsNotSupported;

unsigned int EvpMode(CipherMode mode) {
  switch (mode) {
    case CipherMode::kEcb:
      return EVP_CIPH_ECB_MODE;
    case CipherMode::kCbc:
      return EVP_CIPH_CBC_MODE;
    case CipherMode::kCfb128:
      return EVP_CIPH_CFB_MODE;
    case CipherMode::kOfb:
      return EVP_CIPH_OFB_MODE;
    case CipherMode::kCtr:
      return EVP_CIPH_CTR_MODE;
    case CipherMode::kGcm:
      return EVP_CIPH_GCM_MODE;
    case CipherMode::kNone:
      break;
  }
  return 0;
}

// --- Parameters -----------------------------------------------------------

absl::Status SetNum(CipherCtx& ctx, unsigned int num) {
  // As the default provider: num must be below the reported block size, so
  // stream modes (block size 1) only accept 0.
  if (ctx.info->block_len > 0 && num >= ctx.info->block_len) {
    return BadParam(OSSL_CIPHER_PARAM_NUM, "must be below the block size");
  }
  ctx.num = num;
  if (IsStreamMode(ctx.info->mode) && ctx.stream_ready) {
    ACCELCRYPT_ASSIGN_OR_RETURN(accelcrypt_cipher_state state,
                                ctx.stream->cipher().GetState());
    state.num = num;
    ACCELCRYPT_RETURN_IF_ERROR(ctx.stream->cipher().SetState(state));
  }
  return absl::OkStatus();
}

absl::Status SetCtxParams(CipherCtx& ctx, const OSSL_PARAM params[]) {
  if (params == nullptr) return absl::OkStatus();
  for (const OSSL_PARAM* p = params; p->key != nullptr; ++p) {
    std::string_view key = p->key;
    if (key == OSSL_CIPHER_PARAM_KEYLEN) {
      size_t keylen = 0;
      if (!OSSL_PARAM_get_size_t(p, &keylen)) {
        return BadParam(key, "not an unsigned integer");
      }
      if (keylen != ctx.info->key_len) {
        return ProviderError(
            Reason::kInvalidKeyLength, absl::StatusCode::kInvalidArgument,
            absl::StrFormat("%s takes a %u-byte key, not %u", ctx.info->name,
                            ctx.info->key_len, keylen));
      }
    } else if (ctx.gcm()) {
      ACCELCRYPT_RETURN_IF_ERROR(GcmSetParam(ctx, p));
    } else {
      if (key == OSSL_CIPHER_PARAM_PADDING) {
        unsigned int pad = 0;
        if (!OSSL_PARAM_get_uint(p, &pad)) {
          return BadParam(key, "not an unsigned integer");
        }
        ctx.pad = pad != 0;
        if (ctx.stream != nullptr) ctx.stream->set_padding(ctx.pad);
      } else if (key == OSSL_CIPHER_PARAM_NUM) {
        unsigned int num = 0;
        if (!OSSL_PARAM_get_uint(p, &num)) {
          return BadParam(key, "not an unsigned integer");
        }
        ACCELCRYPT_RETURN_IF_ERROR(SetNum(ctx, num));
      } else if (key == OSSL_CIPHER_PARAM_TLS_VERSION) {
        unsigned int version = 0;
        if (!OSSL_PARAM_get_uint(p, &version)) {
          return BadParam(key, "not an unsigned integer");
        }
        // Only CBC records carry padding and a MAC for us to handle;
        // accepting the version elsewhere would let libssl believe we do.
        if (ctx.info->mode != CipherMode::kCbc ||
            (version != 0 && !TlsVersionSupported(version))) {
          return TlsNotSupported(ctx, p->key);
        }
        ctx.tls_version = version;
        ctx.block_aligned = false;
      } else if (key == OSSL_CIPHER_PARAM_TLS_MAC_SIZE) {
        size_t mac_size = 0;
        if (!OSSL_PARAM_get_size_t(p, &mac_size)) {
          return BadParam(key, "not an unsigned integer");
        }
        if (mac_size > kTlsMaxMacSize) {
          return BadParam(key, "larger than any TLS MAC");
        }
        ctx.tls_mac_size = mac_size;
      }
    }
    // Unknown keys are ignored, as every OpenSSL provider does.
  }
  RefreshFastPath(ctx);
  return absl::OkStatus();
}

absl::Status GetCtxParamsGeneric(CipherCtx& ctx, OSSL_PARAM params[]) {
  OSSL_PARAM* p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_TLS_MAC);
  if (p != nullptr &&
      !OSSL_PARAM_set_octet_ptr(p, ctx.tls_mac_size > 0 ? ctx.tls_mac : nullptr,
                                ctx.tls_mac_size)) {
    return BadParam(p->key, "cannot store");
  }
  p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_IVLEN);
  if (p != nullptr && !OSSL_PARAM_set_size_t(p, ctx.info->iv_len)) {
    return BadParam(p->key, "cannot store");
  }
  p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_KEYLEN);
  if (p != nullptr && !OSSL_PARAM_set_size_t(p, ctx.info->key_len)) {
    return BadParam(p->key, "cannot store");
  }
  p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_PADDING);
  if (p != nullptr && !OSSL_PARAM_set_uint(p, ctx.pad ? 1 : 0)) {
    return BadParam(p->key, "cannot store");
  }
  p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_IV);
  if (p != nullptr) {
    ACCELCRYPT_RETURN_IF_ERROR(SetOctets(p, ctx.iv, ctx.info->iv_len));
  }
  OSSL_PARAM* updated = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_UPDATED_IV);
  OSSL_PARAM* num = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_NUM);
  if (updated != nullptr || num != nullptr) {
    accelcrypt_cipher_state state{};
    state.num = ctx.num;
    std::memcpy(state.iv, ctx.iv, std::min(sizeof(state.iv), ctx.info->iv_len));
    if (ctx.stream_ready && ctx.info->mode != CipherMode::kEcb) {
      ACCELCRYPT_ASSIGN_OR_RETURN(state, ctx.stream->cipher().GetState());
      if (!IsStreamMode(ctx.info->mode)) state.num = ctx.num;
    }
    if (updated != nullptr) {
      ACCELCRYPT_RETURN_IF_ERROR(
          SetOctets(updated, state.iv, ctx.info->iv_len));
    }
    if (num != nullptr && !OSSL_PARAM_set_uint(num, state.num)) {
      return BadParam(num->key, "cannot store");
    }
    OPENSSL_cleanse(&state, sizeof(state));
  }
  return absl::OkStatus();
}

// --- Init -------------------------------------------------------------------

absl::Status InitGeneric(CipherCtx& ctx, const unsigned char* key,
                         size_t keylen, const unsigned char* iv, size_t ivlen) {
  const CipherMode mode = ctx.info->mode;
  uint8_t cur_iv[16] = {};
  if (iv != nullptr && mode != CipherMode::kEcb) {
    if (ivlen != ctx.info->iv_len) {
      return ProviderError(
          Reason::kInvalidIvLength, absl::StatusCode::kInvalidArgument,
          absl::StrFormat("%s takes a %u-byte IV, not %u", ctx.info->name,
                          ctx.info->iv_len, ivlen));
    }
    std::memcpy(ctx.iv, iv, ivlen);
    ctx.iv_set = true;
  }
  if (key != nullptr) ACCELCRYPT_RETURN_IF_ERROR(CheckKeyLen(ctx, keylen));

  if (iv == nullptr && mode == CipherMode::kCtr && ctx.stream_ready) {
    // OpenSSL keeps a CTR counter running across a re-init without IV (it
    // restores the original IV only for CBC, CFB and OFB).
    ACCELCRYPT_ASSIGN_OR_RETURN(accelcrypt_cipher_state state,
                                ctx.stream->cipher().GetState());
    std::memcpy(cur_iv, state.iv, sizeof(cur_iv));
    OPENSSL_cleanse(&state, sizeof(state));
  } else {
    std::memcpy(cur_iv, ctx.iv, std::min(sizeof(cur_iv), ctx.info->iv_len));
  }
  if (key != nullptr) {
    std::memcpy(ctx.key, key, keylen);
    ctx.key_set = true;
  }
  ctx.num = 0;
  absl::Status status = absl::OkStatus();
  if (ctx.key_set) {
    ctx.stream_ready = false;
    status = EnsureStream(ctx);
    if (status.ok()) {
      ctx.stream->set_padding(ctx.pad);
      status = ctx.stream->Init(ctx.enc,
                                absl::MakeConstSpan(ctx.key, ctx.info->key_len),
                                absl::MakeConstSpan(cur_iv, ctx.info->iv_len));
      ctx.stream_ready = status.ok();
      ctx.block_aligned = ctx.stream_ready && ctx.tls_version == 0;
    }
  }
  OPENSSL_cleanse(cur_iv, sizeof(cur_iv));
  RefreshFastPath(ctx);
  return status;
}

int CipherInit(void* vctx, const unsigned char* key, size_t keylen,
               const unsigned char* iv, size_t ivlen, const OSSL_PARAM params[],
               bool enc) {
  auto* ctx = static_cast<CipherCtx*>(vctx);
  return Guard(ctx->prov, [&] {
    ctx->enc = enc;
    absl::Status status = ctx->gcm()
                              ? GcmInit(*ctx, key, keylen, iv, ivlen)
                              : InitGeneric(*ctx, key, keylen, iv, ivlen);
    // Parameters apply after key and IV, as in OpenSSL.
    if (status.ok() && params != nullptr) status = SetCtxParams(*ctx, params);
    if (status.ok()) return 1;
    // A failed init leaves no half-initialised operation behind: the
    // context refuses data until an init succeeds.
    ctx->stream_ready = false;
    ctx->block_aligned = false;
    ctx->fast_update = false;
    if (ctx->gcm()) ctx->iv_state = internal::IvState::kFinished;
    return RaiseError(ctx->prov, status);
  });
}

int EncryptInit(void* vctx, const unsigned char* key, size_t keylen,
                const unsigned char* iv, size_t ivlen,
                const OSSL_PARAM params[]) {
  return CipherInit(vctx, key, keylen, iv, ivlen, params, true);
}

int DecryptInit(void* vctx, const unsigned char* key, size_t keylen,
                const unsigned char* iv, size_t ivlen,
                const OSSL_PARAM params[]) {
  return CipherInit(vctx, key, keylen, iv, ivlen, params, false);
}

// --- CBC in the TLS record layer ---------------------------------------------

// CbcTlsRecord seals or opens one TLS record in place, as OpenSSL's
// ossl_cipher_generic_block_update does when a TLS version is set.
absl::Status CbcTlsRecord(CipherCtx& ctx, unsigned char* out, size_t* outl,
                          size_t outsize, const unsigned char* in, size_t inl) {
  if (in == nullptr || in != out || outsize < inl || !ctx.pad) {
    return ProviderError(
        Reason::kInvalidArgument, absl::StatusCode::kInvalidArgument,
        absl::StrFormat("%s TLS record: processed in place, with padding on",
                        ctx.info->name));
  }
  Cipher& cipher = ctx.stream->cipher();
  if (ctx.enc) {
    ACCELCRYPT_ASSIGN_OR_RETURN(size_t padded, TlsCbcPad(out, inl, outsize));
    ACCELCRYPT_RETURN_IF_ERROR(cipher.Update(absl::MakeConstSpan(out, padded),
                                             absl::MakeSpan(out, padded)));
    *outl = padded;
    return absl::OkStatus();
  }
  if (inl % 16 != 0) {
    return ProviderError(Reason::kInvalidArgument,
                         absl::StatusCode::kInvalidArgument,
                         absl::StrFormat("%s TLS record of %u bytes is not "
                                         "whole blocks",
                                         ctx.info->name, inl));
  }
  ACCELCRYPT_RETURN_IF_ERROR(
      cipher.Update(absl::MakeConstSpan(in, inl), absl::MakeSpan(out, inl)));
  size_t offset = 0;
  size_t len = 0;
  ACCELCRYPT_RETURN_IF_ERROR(TlsCbcOpen(ctx.tls_version, out, inl,
                                        ctx.tls_mac_size, ctx.prov->libctx(),
                                        &offset, &len, ctx.tls_mac));
  // libssl skips the explicit IV itself; the length is the payload's.
  *outl = len;
  return absl::OkStatus();
}

// --- Dispatch functions -----------------------------------------------------

void CipherFreeCtx(void* vctx) { delete static_cast<CipherCtx*>(vctx); }

void* CipherDupCtx(void* vctx) {
  auto* src = static_cast<CipherCtx*>(vctx);
  CipherCtx* dup = nullptr;
  int ok = Guard(src->prov, [&] {
    // A tag not fetched yet lives in the cipher: fetch it so the copy has
    // it whatever it copies of the cipher.
    if (src->tag_pending) {
      absl::Status status = src->cipher->GetTag(absl::MakeSpan(src->tag));
      if (!status.ok()) return RaiseError(src->prov, status);
      src->tag_pending = false;
    }
    auto copy = std::make_unique<CipherCtx>(src->prov, src->info);
    copy->stream_ready = src->stream_ready;
    copy->block_aligned = src->block_aligned;
    copy->fast_update = src->fast_update;
    copy->enc = src->enc;
    copy->pad = src->pad;
    copy->key_set = src->key_set;
    copy->iv_set = src->iv_set;
    copy->num = src->num;
    std::memcpy(copy->key, src->key, sizeof(copy->key));
    std::memcpy(copy->iv, src->iv, sizeof(copy->iv));
    copy->ivlen = src->ivlen;
    copy->iv_state = src->iv_state;
    copy->taglen = src->taglen;
    copy->tag_pending = src->tag_pending;
    copy->tls_aad_len = src->tls_aad_len;
    std::memcpy(copy->tls_aad, src->tls_aad, sizeof(copy->tls_aad));
    copy->iv_gen = src->iv_gen;
    copy->tls_enc_records = src->tls_enc_records;
    copy->tls_version = src->tls_version;
    copy->tls_mac_size = src->tls_mac_size;
    std::memcpy(copy->tls_mac, src->tls_mac, sizeof(copy->tls_mac));
    std::memcpy(copy->tag, src->tag, sizeof(copy->tag));
    if (src->stream != nullptr) {
      if (src->stream_ready) {
        absl::StatusOr<std::unique_ptr<CipherStream>> clone =
            src->stream->Clone();
        if (!clone.ok()) return RaiseError(src->prov, clone.status());
        copy->stream = *std::move(clone);
        copy->cipher = &copy->stream->cipher();
      } else {
        absl::Status status = EnsureStream(*copy);
        if (!status.ok()) return RaiseError(src->prov, status);
      }
    }
    dup = copy.release();
    return 1;
  });
  return ok ? dup : nullptr;
}

// CipherUpdateSlow handles everything but the fast path: GCM, empty input,
// missing key, after final, partial blocks, padding hold-back, TLS records.
[[gnu::noinline]] int CipherUpdateSlow(CipherCtx* ctx, unsigned char* out,
                                       size_t* outl, size_t outsize,
                                       const unsigned char* in, size_t inl) {
  return Guard(ctx->prov, [&] {
    if (inl == 0 && (ctx->is_gcm || ctx->is_stream_mode)) {
      // Nothing to do; OpenSSL does not even require a key here.
      *outl = 0;
      return 1;
    }
    if (ctx->gcm()) {
      absl::Status status = GcmCipher(*ctx, out, outl, outsize, in, inl);
      return status.ok() ? 1 : RaiseError(ctx->prov, status);
    }
    if (!ctx->stream_ready) return RaiseError(ctx->prov, NoKey(*ctx));
    if (ctx->stream->finished()) {
      return RaiseError(
          ctx->prov, ProviderError(Reason::kOperationFinished,
                                   absl::StatusCode::kFailedPrecondition,
                                   absl::StrFormat("%s: update after final; "
                                                   "re-initialise the context",
                                                   ctx->info->name)));
    }
    if (ctx->tls_version != 0) {
      absl::Status status = CbcTlsRecord(*ctx, out, outl, outsize, in, inl);
      return status.ok() ? 1 : RaiseError(ctx->prov, status);
    }
    // From here on the stream may buffer: no fast path until re-init.
    ctx->block_aligned = false;
    RefreshFastPath(*ctx);
    absl::StatusOr<size_t> n = ctx->stream->Update(
        absl::MakeConstSpan(in, inl), absl::MakeSpan(out, outsize));
    if (!n.ok()) return RaiseError(ctx->prov, n.status());
    *outl = *n;
    return 1;
  });
}

// CipherUpdateRouted serves CipherUpdate's calls until the backend's raw
// transform is known: stream modes, and whole ECB/CBC blocks while nothing
// is buffered and no block must be held back for unpadding, go to the
// routed cipher (CipherStream would only forward them); after the first
// success the cipher's raw transform is taken for the next calls.
// Partly overlapping buffers, which EVP forbids, take the checked path.
[[gnu::noinline]] int CipherUpdateRouted(CipherCtx* ctx, unsigned char* out,
                                         size_t* outl, size_t outsize,
                                         const unsigned char* in, size_t inl,
                                         bool disjoint_or_same) {
  if (!(ctx->fast_update && inl > 0 && outsize >= inl && disjoint_or_same &&
        (inl & ctx->block_mask) == 0)) {
    return CipherUpdateSlow(ctx, out, outl, outsize, in, inl);
  }
  return Guard(ctx->prov, [&] {
    absl::Status status = ctx->cipher->Update(absl::MakeConstSpan(in, inl),
                                              absl::MakeSpan(out, inl));
    if (!status.ok()) [[unlikely]] {
      return RaiseError(ctx->prov, status);
    }
    if (!ctx->direct_checked) {
      ctx->direct = ctx->cipher->Direct();
      ctx->direct_checked = true;
    }
    *outl = inl;
    return 1;
  });
}

// CipherUpdate's fast path hands the call straight to the backend's raw
// transform (Cipher::Direct; for the software backend, the default
// provider's own cipher function) with nothing in between but the checks
// its contract needs and the byte count: a tail call, so that the
// provider costs a few instructions over calling the transform directly.
// `direct` is set only while the fast-path conditions that do not depend
// on the call hold (see CipherCtx). No allocation, no lock.
int CipherUpdate(void* vctx, unsigned char* out, size_t* outl, size_t outsize,
                 const unsigned char* in, size_t inl) {
  auto* ctx = static_cast<CipherCtx*>(vctx);
  const bool disjoint_or_same = !PartiallyOverlaps(in, out, inl);
  const DirectUpdate& direct = ctx->direct;
  if (direct.fn != nullptr && inl != 0 && (inl & ctx->block_mask) == 0 &&
      outsize >= inl && disjoint_or_same) [[likely]] {
    // The transform fails only for input its contract excludes, which the
    // checks above rule out; it sets *outl itself.
    CountDirect(direct, inl);
    return direct.fn(direct.ctx, out, outl, inl, in, inl);
  }
  return CipherUpdateRouted(ctx, out, outl, outsize, in, inl, disjoint_or_same);
}

int CipherFinal(void* vctx, unsigned char* out, size_t* outl, size_t outsize) {
  auto* ctx = static_cast<CipherCtx*>(vctx);
  return Guard(ctx->prov, [&] {
    if (ctx->gcm()) {
      absl::Status status = GcmCipher(*ctx, out, outl, outsize, nullptr, 0);
      *outl = 0;
      return status.ok() ? 1 : RaiseError(ctx->prov, status);
    }
    if (!ctx->stream_ready) return RaiseError(ctx->prov, NoKey(*ctx));
    if (ctx->tls_version != 0) {
      return RaiseError(ctx->prov,
                        ProviderError(Reason::kOutOfOrder,
                                      absl::StatusCode::kFailedPrecondition,
                                      "TLS records are never finalised"));
    }
    absl::StatusOr<size_t> n = ctx->stream->Final(absl::MakeSpan(out, outsize));
    RefreshFastPath(*ctx);
    if (!n.ok()) return RaiseError(ctx->prov, n.status());
    *outl = *n;
    return 1;
  });
}

// CipherOneShot serves EVP_Cipher(): the raw mode without padding or
// buffering (the caller gives whole blocks for ECB/CBC).
int CipherOneShot(void* vctx, unsigned char* out, size_t* outl, size_t outsize,
                  const unsigned char* in, size_t inl) {
  auto* ctx = static_cast<CipherCtx*>(vctx);
  return Guard(ctx->prov, [&] {
    if (ctx->gcm()) {
      if (outsize < inl) {
        return RaiseError(ctx->prov,
                          absl::OutOfRangeError("output buffer too small"));
      }
      absl::Status status = GcmCipher(*ctx, out, outl, outsize, in, inl);
      if (!status.ok()) return RaiseError(ctx->prov, status);
      *outl = inl;
      return 1;
    }
    if (!ctx->stream_ready) return RaiseError(ctx->prov, NoKey(*ctx));
    if (outsize < inl) {
      return RaiseError(ctx->prov,
                        absl::OutOfRangeError("output buffer too small"));
    }
    absl::Status status = ctx->stream->cipher().Update(
        absl::MakeConstSpan(in, inl), absl::MakeSpan(out, outsize));
    if (!status.ok()) return RaiseError(ctx->prov, status);
    *outl = inl;
    return 1;
  });
}

int CipherGetCtxParams(void* vctx, OSSL_PARAM params[]) {
  auto* ctx = static_cast<CipherCtx*>(vctx);
  if (params == nullptr) return 1;
  // EVP asks a GCM context for one length at a time on every init.
  if (ctx->gcm() && internal::GcmGetOneSize(*ctx, params)) return 1;
  return Guard(ctx->prov, [&] {
    if (ctx->gcm()) {
      absl::StatusOr<bool> ok = GcmGetCtxParams(*ctx, params);
      if (!ok.ok()) return RaiseError(ctx->prov, ok.status());
      return *ok ? 1 : 0;
    }
    absl::Status status = GetCtxParamsGeneric(*ctx, params);
    return status.ok() ? 1 : RaiseError(ctx->prov, status);
  });
}

int CipherSetCtxParams(void* vctx, const OSSL_PARAM params[]) {
  auto* ctx = static_cast<CipherCtx*>(vctx);
  // EVP_CTRL_AEAD_SET_IVLEN, once per GCM message (RefreshFastPath is moot:
  // GCM never takes the update fast path).
  if (params != nullptr && ctx->gcm() &&
      internal::GcmSetOneIvLen(*ctx, params)) {
    return 1;
  }
  return Guard(ctx->prov, [&] {
    absl::Status status = SetCtxParams(*ctx, params);
    return status.ok() ? 1 : RaiseError(ctx->prov, status);
  });
}

const OSSL_PARAM kGettableParams[] = {
    OSSL_PARAM_uint(OSSL_CIPHER_PARAM_MODE, nullptr),
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_KEYLEN, nullptr),
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_IVLEN, nullptr),
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_BLOCK_SIZE, nullptr),
    OSSL_PARAM_int(OSSL_CIPHER_PARAM_AEAD, nullptr),
    OSSL_PARAM_int(OSSL_CIPHER_PARAM_CUSTOM_IV, nullptr),
    OSSL_PARAM_int(OSSL_CIPHER_PARAM_CTS, nullptr),
    OSSL_PARAM_int(OSSL_CIPHER_PARAM_TLS1_MULTIBLOCK, nullptr),
    OSSL_PARAM_int(OSSL_CIPHER_PARAM_HAS_RAND_KEY, nullptr),
    OSSL_PARAM_END};

const OSSL_PARAM kGenericGettableCtxParams[] = {
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_KEYLEN, nullptr),
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_IVLEN, nullptr),
    OSSL_PARAM_uint(OSSL_CIPHER_PARAM_PADDING, nullptr),
    OSSL_PARAM_uint(OSSL_CIPHER_PARAM_NUM, nullptr),
    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_IV, nullptr, 0),
    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_UPDATED_IV, nullptr, 0),
    {OSSL_CIPHER_PARAM_TLS_MAC, OSSL_PARAM_OCTET_PTR, nullptr, 0,
     OSSL_PARAM_UNMODIFIED},
    OSSL_PARAM_END};

const OSSL_PARAM kGenericSettableCtxParams[] = {
    OSSL_PARAM_uint(OSSL_CIPHER_PARAM_PADDING, nullptr),
    OSSL_PARAM_uint(OSSL_CIPHER_PARAM_NUM, nullptr),
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_KEYLEN, nullptr),
    OSSL_PARAM_uint(OSSL_CIPHER_PARAM_TLS_VERSION, nullptr),
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_TLS_MAC_SIZE, nullptr),
    OSSL_PARAM_END};

const OSSL_PARAM kGcmGettableCtxParams[] = {
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_KEYLEN, nullptr),
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_IVLEN, nullptr),
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_AEAD_TAGLEN, nullptr),
    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_IV, nullptr, 0),
    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_UPDATED_IV, nullptr, 0),
    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, nullptr, 0),
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_AEAD_TLS1_AAD_PAD, nullptr),
    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TLS1_GET_IV_GEN, nullptr, 0),
    OSSL_PARAM_END};

const OSSL_PARAM kGcmSettableCtxParams[] = {
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_AEAD_IVLEN, nullptr),
    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, nullptr, 0),
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_KEYLEN, nullptr),
    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TLS1_AAD, nullptr, 0),
    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TLS1_IV_FIXED, nullptr, 0),
    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TLS1_SET_IV_INV, nullptr, 0),
    OSSL_PARAM_END};

const OSSL_PARAM* CipherGettableParams(void*) { return kGettableParams; }

// Per-algorithm functions: OpenSSL passes no algorithm to these.
template <size_t I>
struct CipherTable {
  static const AlgorithmInfo* Info() {
    auto all = AllAlgorithms();
    if (I >= all.size() || all[I].family != Family::kCipher) return nullptr;
    return &all[I];
  }

  static void* NewCtx(void* provctx) {
    const AlgorithmInfo* info = Info();
    if (info == nullptr) return nullptr;
    return new (std::nothrow) CipherCtx(static_cast<ProvCtx*>(provctx), info);
  }

  static int GetParams(OSSL_PARAM params[]) {
    const AlgorithmInfo* info = Info();
    if (info == nullptr) return 0;
    const bool aead = info->mode == CipherMode::kGcm;
    struct {
      const char* key;
      size_t value;
    } const sizes[] = {{OSSL_CIPHER_PARAM_KEYLEN, info->key_len},
                       {OSSL_CIPHER_PARAM_IVLEN, info->iv_len},
                       {OSSL_CIPHER_PARAM_BLOCK_SIZE, info->block_len}};
    for (const auto& s : sizes) {
      OSSL_PARAM* p = OSSL_PARAM_locate(params, s.key);
      if (p != nullptr && !OSSL_PARAM_set_size_t(p, s.value)) {
        return RaiseError(nullptr, BadParam(s.key, "cannot store"));
      }
    }
    struct {
      const char* key;
      int value;
    } const flags[] = {{OSSL_CIPHER_PARAM_AEAD, aead ? 1 : 0},
                       {OSSL_CIPHER_PARAM_CUSTOM_IV, aead ? 1 : 0},
                       {OSSL_CIPHER_PARAM_CTS, 0},
                       {OSSL_CIPHER_PARAM_TLS1_MULTIBLOCK, 0},
                       {OSSL_CIPHER_PARAM_HAS_RAND_KEY, 0}};
    for (const auto& f : flags) {
      OSSL_PARAM* p = OSSL_PARAM_locate(params, f.key);
      if (p != nullptr && !OSSL_PARAM_set_int(p, f.value)) {
        return RaiseError(nullptr, BadParam(f.key, "cannot store"));
      }
    }
    OSSL_PARAM* p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_MODE);
    if (p != nullptr && !OSSL_PARAM_set_uint(p, EvpMode(info->mode))) {
      return RaiseError(nullptr, BadParam(p->key, "cannot store"));
    }
    return 1;
  }

  static const OSSL_PARAM* GettableCtxParams(void*, void*) {
    const AlgorithmInfo* info = Info();
    return info != nullptr && info->mode == CipherMode::kGcm
               ? kGcmGettableCtxParams
               : kGenericGettableCtxParams;
  }

  static const OSSL_PARAM* SettableCtxParams(void*, void*) {
    const AlgorithmInfo* info = Info();
    return info != nullptr && info->mode == CipherMode::kGcm
               ? kGcmSettableCtxParams
               : kGenericSettableCtxParams;
  }

  using Fn = void (*)();
  static inline const OSSL_DISPATCH kDispatch[] = {
      {OSSL_FUNC_CIPHER_NEWCTX, reinterpret_cast<Fn>(&NewCtx)},
      {OSSL_FUNC_CIPHER_FREECTX, reinterpret_cast<Fn>(&CipherFreeCtx)},
      {OSSL_FUNC_CIPHER_DUPCTX, reinterpret_cast<Fn>(&CipherDupCtx)},
      {OSSL_FUNC_CIPHER_ENCRYPT_INIT, reinterpret_cast<Fn>(&EncryptInit)},
      {OSSL_FUNC_CIPHER_DECRYPT_INIT, reinterpret_cast<Fn>(&DecryptInit)},
      {OSSL_FUNC_CIPHER_UPDATE, reinterpret_cast<Fn>(&CipherUpdate)},
      {OSSL_FUNC_CIPHER_FINAL, reinterpret_cast<Fn>(&CipherFinal)},
      {OSSL_FUNC_CIPHER_CIPHER, reinterpret_cast<Fn>(&CipherOneShot)},
      {OSSL_FUNC_CIPHER_GET_PARAMS, reinterpret_cast<Fn>(&GetParams)},
      {OSSL_FUNC_CIPHER_GET_CTX_PARAMS,
       reinterpret_cast<Fn>(&CipherGetCtxParams)},
      {OSSL_FUNC_CIPHER_SET_CTX_PARAMS,
       reinterpret_cast<Fn>(&CipherSetCtxParams)},
      {OSSL_FUNC_CIPHER_GETTABLE_PARAMS,
       reinterpret_cast<Fn>(&CipherGettableParams)},
      {OSSL_FUNC_CIPHER_GETTABLE_CTX_PARAMS,
       reinterpret_cast<Fn>(&GettableCtxParams)},
      {OSSL_FUNC_CIPHER_SETTABLE_CTX_PARAMS,
       reinterpret_cast<Fn>(&SettableCtxParams)},
      {0, nullptr}};
};

}  // namespace

absl::Status AppendCipherAlgorithms(ProvCtx& ctx,
                                    std::vector<OSSL_ALGORITHM>* out) {
  static constexpr auto kTables = DispatchTables<CipherTable>();
  return AppendRoutedAlgorithms(ctx, Family::kCipher, kTables,
                                "accelcrypt routed cipher", out);
}

}  // namespace accelcrypt::provider
