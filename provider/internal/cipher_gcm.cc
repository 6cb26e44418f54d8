// SPDX-License-Identifier: Apache-2.0
#include "provider/internal/cipher_gcm.h"

#include <openssl/core_names.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include <cstring>
#include <string_view>

#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "core/status.h"
#include "provider/errors.h"

namespace accelcrypt::provider::internal {
namespace {

// --- GCM in the TLS 1.2 record layer (RFC 5288) ----------------------------
// libssl drives it with three parameters and EVP_Cipher on whole records,
// as OpenSSL's default provider implements it (ciphercommon_gcm.c): the
// fixed IV part once per key, the 13-byte AAD per record (the length in it
// is corrected for explicit IV and tag), then one in-place call that reads
// or writes the explicit IV and the tag around the payload.

absl::Status TlsError(const CipherCtx& ctx, const char* what) {
  return ProviderError(
      Reason::kInvalidArgument, absl::StatusCode::kInvalidArgument,
      absl::StrFormat("%s TLS record: %s", ctx.info->name, what));
}

absl::Status GcmTlsSetAad(CipherCtx& ctx, const uint8_t* aad, size_t len) {
  if (len != kTlsAadLen || aad == nullptr) {
    return TlsError(ctx, "the AAD must be 13 bytes");
  }
  std::memcpy(ctx.tls_aad, aad, len);
  size_t record_len = (size_t{aad[len - 2]} << 8) | aad[len - 1];
  if (record_len < kTlsExplicitIvLen) return TlsError(ctx, "record too short");
  record_len -= kTlsExplicitIvLen;
  if (!ctx.enc) {
    if (record_len < kGcmTagLen) return TlsError(ctx, "record too short");
    record_len -= kGcmTagLen;
  }
  ctx.tls_aad[len - 2] = static_cast<uint8_t>(record_len >> 8);
  ctx.tls_aad[len - 1] = static_cast<uint8_t>(record_len & 0xff);
  ctx.tls_aad_len = len;
  return absl::OkStatus();
}

absl::Status GcmTlsSetFixedIv(CipherCtx& ctx, const uint8_t* iv, size_t len) {
  if (len == static_cast<size_t>(-1)) {
    // OpenSSL's special case: restore the whole IV.
    std::memcpy(ctx.iv, iv, ctx.ivlen);
  } else {
    if (len < kTlsFixedIvLen || ctx.ivlen < len + kTlsExplicitIvLen) {
      return TlsError(ctx, "bad fixed IV length");
    }
    std::memcpy(ctx.iv, iv, len);
    if (ctx.enc && RAND_bytes_ex(ctx.prov->libctx(), ctx.iv + len,
                                 ctx.ivlen - len, 0) <= 0) {
      return ProviderError(Reason::kEntropyUnavailable,
                           absl::StatusCode::kUnavailable,
                           "cannot generate the GCM invocation field");
    }
  }
  ctx.iv_gen = true;
  ctx.iv_state = IvState::kBuffered;
  return absl::OkStatus();
}

// GCM drives the routed cipher (ctx.cipher) directly, never through
// ctx.stream: CipherStream's buffering and padding are for ECB/CBC, and for
// the other modes it only forwards each call, at a cost on every message.
// The IV state here plays the part of the stream's init/finished flags.

// GcmUpdate runs data through the cipher, refusing partly overlapping
// buffers as CipherStream does (the routed cipher takes in-place only).
absl::Status GcmUpdate(CipherCtx& ctx, const uint8_t* in, uint8_t* out,
                       size_t len) {
  if (PartiallyOverlaps(in, out, len)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: input and output partially overlap", ctx.info->name));
  }
  return ctx.cipher->Update(absl::MakeConstSpan(in, len),
                            absl::MakeSpan(out, len));
}

absl::Status GcmStartWithIv(CipherCtx& ctx) {
  ctx.stream_ready = false;
  ACCELCRYPT_RETURN_IF_ERROR(
      ctx.cipher->Init(ctx.enc, absl::MakeConstSpan(ctx.key, ctx.info->key_len),
                       absl::MakeConstSpan(ctx.iv, ctx.ivlen)));
  ctx.stream_ready = true;
  ctx.iv_state = IvState::kCopied;
  return absl::OkStatus();
}

// GcmTlsNextIv starts the cipher with the current IV, copies its last
// `len` bytes (the explicit part) to `out`, and advances the 64-bit
// invocation counter (OpenSSL's getivgen).
absl::Status GcmTlsNextIv(CipherCtx& ctx, uint8_t* out, size_t len) {
  if (!ctx.iv_gen || !ctx.key_set) {
    return TlsError(ctx, "no fixed IV or key set");
  }
  // `len` is the caller's buffer (the parameter's data_size): never write
  // past it. OpenSSL's getivgen takes 0 as "the whole IV" (the legacy
  // EVP_CTRL_GCM_IV_GEN convention) and writes ivlen bytes into a
  // zero-size buffer; a zero-size buffer is refused here (found by the
  // provider_params fuzzer: regress-gcm-ivgen-zero-size).
  if (len == 0) {
    return TlsError(ctx,
                    "no room for the explicit IV (a buffer of 0 bytes; pass "
                    "the number of bytes wanted, 8 for TLS)");
  }
  ACCELCRYPT_RETURN_IF_ERROR(GcmStartWithIv(ctx));
  if (len > ctx.ivlen) len = ctx.ivlen;
  std::memcpy(out, ctx.iv + ctx.ivlen - len, len);
  for (size_t i = ctx.ivlen; i > ctx.ivlen - 8; --i) {
    if (++ctx.iv[i - 1] != 0) break;
  }
  return absl::OkStatus();
}

// GcmTlsSetInvocation takes the explicit IV from a received record
// (OpenSSL's setivinv).
absl::Status GcmTlsSetInvocation(CipherCtx& ctx, const uint8_t* in,
                                 size_t len) {
  if (!ctx.iv_gen || !ctx.key_set || ctx.enc || len > ctx.ivlen) {
    return TlsError(ctx, "cannot set the invocation field");
  }
  std::memcpy(ctx.iv + ctx.ivlen - len, in, len);
  return GcmStartWithIv(ctx);
}

// GcmTlsRecord seals or opens one record in place: explicit IV, payload,
// tag. On a failed open the plaintext is wiped.
absl::Status GcmTlsRecord(CipherCtx& ctx, unsigned char* out, size_t* outl,
                          const unsigned char* in, size_t len) {
  *outl = 0;
  absl::Status status = [&]() -> absl::Status {
    if (!ctx.key_set) return NoKey(ctx);
    if (out != in || len < kTlsExplicitIvLen + kGcmTagLen) {
      return TlsError(ctx,
                      "records are processed in place and hold an "
                      "explicit IV and a tag");
    }
    if (ctx.enc && ++ctx.tls_enc_records == 0) {
      return TlsError(ctx, "too many records under one key");
    }
    if (ctx.enc) {
      ACCELCRYPT_RETURN_IF_ERROR(GcmTlsNextIv(ctx, out, kTlsExplicitIvLen));
    } else {
      ACCELCRYPT_RETURN_IF_ERROR(
          GcmTlsSetInvocation(ctx, out, kTlsExplicitIvLen));
    }
    const size_t payload = len - kTlsExplicitIvLen - kGcmTagLen;
    unsigned char* body = out + kTlsExplicitIvLen;
    Cipher& cipher = *ctx.cipher;
    ACCELCRYPT_RETURN_IF_ERROR(
        cipher.Aad(absl::MakeConstSpan(ctx.tls_aad, ctx.tls_aad_len)));
    if (!ctx.enc) {
      ACCELCRYPT_RETURN_IF_ERROR(
          cipher.SetTag(absl::MakeConstSpan(body + payload, kGcmTagLen)));
    }
    if (payload > 0) {
      ACCELCRYPT_RETURN_IF_ERROR(GcmUpdate(ctx, body, body, payload));
    }
    absl::Status fin = cipher.Final();
    if (!fin.ok()) {
      if (!ctx.enc) OPENSSL_cleanse(body, payload);
      return fin;
    }
    if (ctx.enc) {
      ACCELCRYPT_RETURN_IF_ERROR(
          cipher.GetTag(absl::MakeSpan(body + payload, kGcmTagLen)));
      *outl = len;
    } else {
      *outl = payload;
    }
    return absl::OkStatus();
  }();
  ctx.iv_state = IvState::kFinished;
  ctx.tls_aad_len = kTagUnset;
  return status;
}

// GcmActivate hands the buffered IV (or a generated one, when encrypting
// without an IV, as OpenSSL does) and the key to the cipher.
absl::Status GcmActivate(CipherCtx& ctx) {
  if (!ctx.key_set) return NoKey(ctx);
  if (ctx.iv_state == IvState::kFinished) {
    return ProviderError(
        Reason::kOperationFinished, absl::StatusCode::kFailedPrecondition,
        absl::StrFormat("%s: the IV is spent (operation finished or IV length "
                        "changed); re-initialise with a new IV",
                        ctx.info->name));
  }
  if (ctx.iv_state == IvState::kUninitialised) {
    if (!ctx.enc || ctx.ivlen < kGcmMinGeneratedIvLen) {
      return ProviderError(Reason::kOutOfOrder,
                           absl::StatusCode::kFailedPrecondition,
                           absl::StrFormat("%s: no IV set", ctx.info->name));
    }
    if (RAND_bytes_ex(ctx.prov->libctx(), ctx.iv, ctx.ivlen, 0) <= 0) {
      return ProviderError(Reason::kEntropyUnavailable,
                           absl::StatusCode::kUnavailable,
                           "cannot generate a GCM IV: RAND_bytes_ex failed");
    }
    ctx.iv_state = IvState::kBuffered;
  }
  if (ctx.iv_state == IvState::kBuffered) {
    // The last message's tag goes with its state: never asked for, it is
    // not available any more (a request says so, nothing stale is given).
    if (ctx.tag_pending) {
      ctx.tag_pending = false;
      ctx.taglen = kTagUnset;
    }
    ctx.stream_ready = false;
    ACCELCRYPT_RETURN_IF_ERROR(ctx.cipher->Init(
        ctx.enc, absl::MakeConstSpan(ctx.key, ctx.info->key_len),
        absl::MakeConstSpan(ctx.iv, ctx.ivlen)));
    ctx.stream_ready = true;
    ctx.iv_state = IvState::kCopied;
  }
  return absl::OkStatus();
}

// GCM's gettable context parameters, indexed for GcmGetCtxParams.
enum GcmGettable {
  kGetIvLen,
  kGetKeyLen,
  kGetTagLen,
  kGetIv,
  kGetUpdatedIv,
  kGetTlsAadPad,
  kGetTag,
  kGetTlsIvGen,
  kGetNone
};

// FindGcmGettable maps a parameter name to its slot (kGetNone for
// names GCM does not answer). The first byte picks the candidates, so most
// names cost one or two short comparisons.
GcmGettable FindGcmGettable(const char* key) {
  switch (key[0]) {
    case 'i':
      if (std::strcmp(key, OSSL_CIPHER_PARAM_IVLEN) == 0) return kGetIvLen;
      if (std::strcmp(key, OSSL_CIPHER_PARAM_IV) == 0) return kGetIv;
      break;
    case 'k':
      if (std::strcmp(key, OSSL_CIPHER_PARAM_KEYLEN) == 0) return kGetKeyLen;
      break;
    case 't':
      if (std::strcmp(key, OSSL_CIPHER_PARAM_AEAD_TAG) == 0) return kGetTag;
      if (std::strcmp(key, OSSL_CIPHER_PARAM_AEAD_TAGLEN) == 0) {
        return kGetTagLen;
      }
      if (std::strcmp(key, OSSL_CIPHER_PARAM_AEAD_TLS1_AAD_PAD) == 0) {
        return kGetTlsAadPad;
      }
      if (std::strcmp(key, OSSL_CIPHER_PARAM_AEAD_TLS1_GET_IV_GEN) == 0) {
        return kGetTlsIvGen;
      }
      break;
    case 'u':
      if (std::strcmp(key, OSSL_CIPHER_PARAM_UPDATED_IV) == 0) {
        return kGetUpdatedIv;
      }
      break;
    default:
      break;
  }
  return kGetNone;
}

}  // namespace

absl::Status GcmCipher(CipherCtx& ctx, unsigned char* out, size_t* outl,
                       size_t outsize, const unsigned char* in, size_t inl) {
  if (ctx.tls_aad_len != kTagUnset) {
    return GcmTlsRecord(ctx, out, outl, in, inl);
  }
  *outl = 0;
  ACCELCRYPT_RETURN_IF_ERROR(GcmActivate(ctx));
  Cipher& cipher = *ctx.cipher;
  if (in != nullptr) {
    if (out == nullptr) {
      ACCELCRYPT_RETURN_IF_ERROR(cipher.Aad(absl::MakeConstSpan(in, inl)));
    } else {
      if (outsize < inl) {
        return absl::OutOfRangeError(absl::StrFormat(
            "%s: output buffer of %u bytes for %u bytes of input",
            ctx.info->name, outsize, inl));
      }
      ACCELCRYPT_RETURN_IF_ERROR(GcmUpdate(ctx, in, out, inl));
    }
    *outl = inl;
    return absl::OkStatus();
  }
  if (!ctx.enc) {
    if (ctx.taglen == kTagUnset) {
      return ProviderError(
          Reason::kInvalidTag, absl::StatusCode::kFailedPrecondition,
          absl::StrFormat("%s: set the expected tag before decrypt final",
                          ctx.info->name));
    }
    ACCELCRYPT_RETURN_IF_ERROR(
        cipher.SetTag(absl::MakeConstSpan(ctx.tag, ctx.taglen)));
  }
  // Whatever the outcome, this IV must not be used again.
  ctx.iv_state = IvState::kFinished;
  ACCELCRYPT_RETURN_IF_ERROR(cipher.Final());
  if (ctx.enc) {
    // Fetched when asked for (GcmGetCtxParams).
    ctx.tag_pending = true;
    ctx.taglen = kGcmTagLen;
  }
  return absl::OkStatus();
}

absl::Status GcmInit(CipherCtx& ctx, const unsigned char* key, size_t keylen,
                     const unsigned char* iv, size_t ivlen) {
  if (iv != nullptr) {
    if (ivlen == 0 || ivlen > kMaxGcmIvLen) {
      return ProviderError(
          Reason::kInvalidIvLength, absl::StatusCode::kInvalidArgument,
          absl::StrFormat("%s: IV length %u outside 1..%u", ctx.info->name,
                          ivlen, kMaxGcmIvLen));
    }
  }
  // Checked inline: CheckKeyLen and EnsureStream are out-of-line Status
  // calls, and this runs once per message.
  if (key != nullptr && keylen != ctx.info->key_len) {
    return CheckKeyLen(ctx, keylen);
  }
  if (iv != nullptr) {
    ctx.ivlen = ivlen;
    std::memcpy(ctx.iv, iv, ivlen);
    ctx.iv_state = IvState::kBuffered;
  }
  if (key != nullptr) {
    std::memcpy(ctx.key, key, keylen);
    ctx.key_set = true;
    if (ctx.stream == nullptr) ACCELCRYPT_RETURN_IF_ERROR(EnsureStream(ctx));
    // The key reaches the cipher with the IV at the first update.
    if (ctx.iv_state == IvState::kCopied) ctx.iv_state = IvState::kBuffered;
  }
  return absl::OkStatus();
}

absl::Status GcmSetParam(CipherCtx& ctx, const OSSL_PARAM* p) {
  std::string_view key = p->key;
  if (key == OSSL_CIPHER_PARAM_AEAD_TAG) {
    void* dst = ctx.tag;
    size_t len = 0;
    if (!OSSL_PARAM_get_octet_string(p, &dst, sizeof(ctx.tag), &len)) {
      return BadParam(key, "not an octet string of at most 16 bytes");
    }
    if (len == 0 || ctx.enc) {
      return ProviderError(
          Reason::kInvalidTag, absl::StatusCode::kInvalidArgument,
          absl::StrFormat("%s: a tag can only be set for decryption "
                          "(1..16 bytes)",
                          ctx.info->name));
    }
    ctx.taglen = len;
    ctx.tag_pending = false;
  } else if (key == OSSL_CIPHER_PARAM_AEAD_IVLEN) {
    size_t len = 0;
    if (!OSSL_PARAM_get_size_t(p, &len)) {
      return BadParam(key, "not an unsigned integer");
    }
    if (len == 0 || len > kMaxGcmIvLen) {
      return ProviderError(Reason::kInvalidIvLength,
                           absl::StatusCode::kInvalidArgument,
                           absl::StrFormat("%s: IV length %u outside 1..%u",
                                           ctx.info->name, len, kMaxGcmIvLen));
    }
    if (len != ctx.ivlen) {
      // An IV already given no longer matches: it is spent.
      if (ctx.iv_state != IvState::kUninitialised) {
        ctx.iv_state = IvState::kFinished;
      }
      ctx.ivlen = len;
    }
  } else if (key == OSSL_CIPHER_PARAM_AEAD_TLS1_AAD) {
    if (p->data_type != OSSL_PARAM_OCTET_STRING) {
      return BadParam(key, "not an octet string");
    }
    ACCELCRYPT_RETURN_IF_ERROR(
        GcmTlsSetAad(ctx, static_cast<const uint8_t*>(p->data), p->data_size));
  } else if (key == OSSL_CIPHER_PARAM_AEAD_TLS1_IV_FIXED) {
    if (p->data_type != OSSL_PARAM_OCTET_STRING) {
      return BadParam(key, "not an octet string");
    }
    ACCELCRYPT_RETURN_IF_ERROR(GcmTlsSetFixedIv(
        ctx, static_cast<const uint8_t*>(p->data), p->data_size));
  } else if (key == OSSL_CIPHER_PARAM_AEAD_TLS1_SET_IV_INV) {
    if (p->data == nullptr || p->data_type != OSSL_PARAM_OCTET_STRING) {
      return BadParam(key, "not an octet string");
    }
    ACCELCRYPT_RETURN_IF_ERROR(GcmTlsSetInvocation(
        ctx, static_cast<const uint8_t*>(p->data), p->data_size));
  }
  // Other keys are not GCM's: ignored here.
  return absl::OkStatus();
}

// Both fast paths take only a param that is exactly a size_t, so storing
// or reading it directly is what OSSL_PARAM_set/get_size_t would do (the
// return size is the width written); everything else takes the general
// path.
bool IsNativeSize(const OSSL_PARAM& p) {
  return p.data_type == OSSL_PARAM_UNSIGNED_INTEGER &&
         p.data_size == sizeof(size_t) && p.data != nullptr;
}

// NameIs reports whether `key` is `name`: compares byte by byte up to the
// first difference (`name`'s NUL included), so it never reads past the end
// of `key`. Unrolled, it is a handful of compares where a strcmp call costs
// about as much as the rest of the one-key fast path.
template <size_t N>
bool NameIs(const char* key, const char (&name)[N]) {
#pragma GCC unroll 16
  for (size_t i = 0; i < N; ++i) {
    if (key[i] != name[i]) return false;
  }
  return true;
}

bool GcmGetOneSize(const CipherCtx& ctx, OSSL_PARAM params[]) {
  OSSL_PARAM& p = params[0];
  if (p.key == nullptr || params[1].key != nullptr || !IsNativeSize(p)) {
    return false;
  }
  size_t value = 0;
  if (NameIs(p.key, OSSL_CIPHER_PARAM_KEYLEN)) {
    value = ctx.info->key_len;
  } else if (NameIs(p.key, OSSL_CIPHER_PARAM_IVLEN)) {
    value = ctx.ivlen;
  } else {
    return false;
  }
  std::memcpy(p.data, &value, sizeof(value));
  p.return_size = sizeof(value);
  return true;
}

bool GcmSetOneIvLen(CipherCtx& ctx, const OSSL_PARAM params[]) {
  const OSSL_PARAM& p = params[0];
  if (p.key == nullptr || params[1].key != nullptr || !IsNativeSize(p) ||
      std::strcmp(p.key, OSSL_CIPHER_PARAM_AEAD_IVLEN) != 0) {
    return false;
  }
  size_t len = 0;
  std::memcpy(&len, p.data, sizeof(len));
  if (len == 0 || len > kMaxGcmIvLen) return false;
  if (len != ctx.ivlen) {
    // As GcmSetParam: an IV already given no longer matches, it is spent.
    if (ctx.iv_state != IvState::kUninitialised) {
      ctx.iv_state = IvState::kFinished;
    }
    ctx.ivlen = len;
  }
  return true;
}

absl::StatusOr<bool> GcmGetCtxParams(CipherCtx& ctx, OSSL_PARAM params[]) {
  // EVP asks for one or two keys at a time, on every init: one walk over
  // the caller's array instead of an OSSL_PARAM_locate (a strcmp per entry)
  // for each gettable key. The first occurrence of a key counts, as with
  // OSSL_PARAM_locate, and keys are answered in OpenSSL's order, so errors
  // and the IV generator's side effect come out as the default provider's.
  OSSL_PARAM* found[kGetNone] = {};
  for (OSSL_PARAM* p = params; p->key != nullptr; ++p) {
    const GcmGettable slot = FindGcmGettable(p->key);
    if (slot != kGetNone && found[slot] == nullptr) found[slot] = p;
  }
  OSSL_PARAM* p = found[kGetIvLen];
  if (p != nullptr && !OSSL_PARAM_set_size_t(p, ctx.ivlen)) {
    return BadParam(p->key, "cannot store");
  }
  p = found[kGetKeyLen];
  if (p != nullptr && !OSSL_PARAM_set_size_t(p, ctx.info->key_len)) {
    return BadParam(p->key, "cannot store");
  }
  p = found[kGetTagLen];
  if (p != nullptr &&
      !OSSL_PARAM_set_size_t(
          p, ctx.taglen != kTagUnset ? ctx.taglen : kGcmTagLen)) {
    return BadParam(p->key, "cannot store");
  }
  for (GcmGettable slot : {kGetIv, kGetUpdatedIv}) {
    p = found[slot];
    if (p == nullptr) continue;
    if (ctx.iv_state == IvState::kUninitialised) return false;
    if (ctx.ivlen > p->data_size) {
      return ProviderError(
          Reason::kInvalidIvLength, absl::StatusCode::kOutOfRange,
          absl::StrFormat("%s: IV is %u bytes, buffer %u", ctx.info->name,
                          ctx.ivlen, p->data_size));
    }
    ACCELCRYPT_RETURN_IF_ERROR(SetOctets(p, ctx.iv, ctx.ivlen));
  }
  p = found[kGetTlsAadPad];
  if (p != nullptr && !OSSL_PARAM_set_size_t(
                          p, ctx.tls_aad_len != kTagUnset ? kGcmTagLen : 0)) {
    return BadParam(p->key, "cannot store");
  }
  p = found[kGetTag];
  if (p != nullptr) {
    const size_t len = p->data_size;
    if (len == 0 || len > kGcmTagLen || !ctx.enc || ctx.taglen == kTagUnset) {
      return ProviderError(
          Reason::kInvalidTag, absl::StatusCode::kFailedPrecondition,
          absl::StrFormat("%s: the tag is available after encryption final "
                          "until the next message starts, 1..16 bytes",
                          ctx.info->name));
    }
    if (ctx.tag_pending) {
      ACCELCRYPT_RETURN_IF_ERROR(ctx.cipher->GetTag(absl::MakeSpan(ctx.tag)));
      ctx.tag_pending = false;
    }
    if (!OSSL_PARAM_set_octet_string(p, ctx.tag, len)) {
      return BadParam(p->key, "cannot store");
    }
  }
  p = found[kGetTlsIvGen];
  if (p != nullptr) {
    if (p->data == nullptr || p->data_type != OSSL_PARAM_OCTET_STRING) {
      return BadParam(p->key, "not an octet string");
    }
    ACCELCRYPT_RETURN_IF_ERROR(
        GcmTlsNextIv(ctx, static_cast<uint8_t*>(p->data), p->data_size));
  }
  return true;
}

}  // namespace accelcrypt::provider::internal
