// SPDX-License-Identifier: Apache-2.0
// RSA encryption over core PublicKeyOps: PKCS#1 v1.5, OAEP (RFC 8017 7.1;
// default digest SHA-1 with MGF1 on the same digest, as OpenSSL) and raw.
// Parameter names and forms follow OpenSSL 3.0's rsa_enc.c.
#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>

#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/status.h"
#include "provider/errors.h"
#include "provider/internal/pkey_key.h"
#include "provider/pkey.h"

namespace accelcrypt::provider {
namespace {

using internal::PkeyKey;

enum class Op { kNone, kEncrypt, kDecrypt };

// kTlsPadding marks RSA_PKCS1_WITH_TLS_PADDING: the TLS 1.0-1.2 RSA key
// exchange (RFC 5246 7.4.7.1), done here over a raw decryption. Never
// handed to the core.
constexpr uint32_t kTlsPadding = 0x100;
constexpr size_t kPremasterLen = 48;

struct CipherCtx {
  explicit CipherCtx(ProvCtx* p) : prov(p) { Reset(); }
  ~CipherCtx() {
    PkeyKey::Unref(key);
    if (!params.label.empty()) {
      OPENSSL_cleanse(params.label.data(), params.label.size());
    }
  }
  void Reset() {
    params = PkeyParams();
    params.padding = ACCELCRYPT_PAD_PKCS1;
    params.md = 0;
    params.mgf1_md = 0;
    tls_client_version = 0;
    tls_negotiated_version = 0;
  }
  ProvCtx* prov;
  Op op = Op::kNone;
  PkeyKey* key = nullptr;
  PkeyParams params;
  unsigned int tls_client_version = 0;
  unsigned int tls_negotiated_version = 0;
};

absl::Status BadParam(const std::string& message) {
  return ProviderError(Reason::kBadParameter,
                       absl::StatusCode::kInvalidArgument, message);
}

struct PadMode {
  int openssl;
  const char* name;
  uint32_t ours;
};
constexpr PadMode kPadModes[] = {
    {RSA_PKCS1_PADDING, OSSL_PKEY_RSA_PAD_MODE_PKCSV15, ACCELCRYPT_PAD_PKCS1},
    {RSA_NO_PADDING, OSSL_PKEY_RSA_PAD_MODE_NONE, ACCELCRYPT_PAD_NONE},
    {RSA_PKCS1_OAEP_PADDING, OSSL_PKEY_RSA_PAD_MODE_OAEP, ACCELCRYPT_PAD_OAEP},
    // No string form in OpenSSL 3.0; libssl sets the integer.
    {RSA_PKCS1_WITH_TLS_PADDING, "", kTlsPadding},
};

// Md returns the OAEP digest in effect (SHA-1 unless set, as OpenSSL).
accelcrypt_alg OaepMd(const PkeyParams& p) {
  return p.md != 0 ? p.md : ACCELCRYPT_ALG_SHA1;
}

void* NewCtx(void* provctx) {
  return new (std::nothrow) CipherCtx(static_cast<ProvCtx*>(provctx));
}
void FreeCtx(void* vctx) { delete static_cast<CipherCtx*>(vctx); }

void* DupCtx(void* vctx) {
  auto* src = static_cast<CipherCtx*>(vctx);
  auto* dup = new (std::nothrow) CipherCtx(src->prov);
  if (dup == nullptr) return nullptr;
  dup->op = src->op;
  dup->params = src->params;
  dup->tls_client_version = src->tls_client_version;
  dup->tls_negotiated_version = src->tls_negotiated_version;
  if (src->key != nullptr) {
    src->key->Ref();
    dup->key = src->key;
  }
  return dup;
}

absl::Status ReadMd(const OSSL_PARAM params[], const char* name,
                    accelcrypt_alg* out) {
  const OSSL_PARAM* p = OSSL_PARAM_locate_const(params, name);
  if (p == nullptr) return absl::OkStatus();
  const char* s = nullptr;
  if (!OSSL_PARAM_get_utf8_string_ptr(p, &s)) {
    return BadParam(absl::StrFormat("%s: not a string", name));
  }
  ACCELCRYPT_ASSIGN_OR_RETURN(*out, internal::DigestByName(s));
  return absl::OkStatus();
}

absl::Status ApplyParams(CipherCtx& ctx, const OSSL_PARAM params[]) {
  if (params == nullptr) return absl::OkStatus();
  const OSSL_PARAM* p =
      OSSL_PARAM_locate_const(params, OSSL_ASYM_CIPHER_PARAM_PAD_MODE);
  if (p != nullptr) {
    const PadMode* mode = nullptr;
    std::string shown;
    if (p->data_type == OSSL_PARAM_UTF8_STRING) {
      const char* name = nullptr;
      if (!OSSL_PARAM_get_utf8_string_ptr(p, &name)) {
        return BadParam("pad-mode: not a string");
      }
      shown = name;
      for (const PadMode& m : kPadModes) {
        if (*m.name != 0 && strcmp(m.name, name) == 0) mode = &m;
      }
    } else {
      int value = 0;
      if (!OSSL_PARAM_get_int(p, &value))
        return BadParam("pad-mode: not an int");
      shown = std::to_string(value);
      for (const PadMode& m : kPadModes) {
        if (m.openssl == value) mode = &m;
      }
    }
    if (mode == nullptr) {
      // X9.31 and anything else: not offered by the core.
      return BadParam(absl::StrFormat(
          "RSA encryption: pad-mode %s is not supported (pkcs1, oaep, none)",
          shown));
    }
    ctx.params.padding = mode->ours;
  }
  ACCELCRYPT_RETURN_IF_ERROR(
      ReadMd(params, OSSL_ASYM_CIPHER_PARAM_OAEP_DIGEST, &ctx.params.md));
  ACCELCRYPT_RETURN_IF_ERROR(
      ReadMd(params, OSSL_ASYM_CIPHER_PARAM_MGF1_DIGEST, &ctx.params.mgf1_md));
  p = OSSL_PARAM_locate_const(params, OSSL_ASYM_CIPHER_PARAM_OAEP_LABEL);
  if (p != nullptr) {
    const void* data = nullptr;
    size_t len = 0;
    if (!OSSL_PARAM_get_octet_string_ptr(p, &data, &len)) {
      return BadParam("oaep-label: not an octet string");
    }
    if (!ctx.params.label.empty()) {
      OPENSSL_cleanse(ctx.params.label.data(), ctx.params.label.size());
    }
    const auto* bytes = static_cast<const uint8_t*>(data);
    ctx.params.label.assign(bytes, bytes + len);
  }
  p = OSSL_PARAM_locate_const(params,
                              OSSL_ASYM_CIPHER_PARAM_TLS_CLIENT_VERSION);
  if (p != nullptr && !OSSL_PARAM_get_uint(p, &ctx.tls_client_version)) {
    return BadParam("tls-client-version: not an unsigned integer");
  }
  p = OSSL_PARAM_locate_const(params,
                              OSSL_ASYM_CIPHER_PARAM_TLS_NEGOTIATED_VERSION);
  if (p != nullptr && !OSSL_PARAM_get_uint(p, &ctx.tls_negotiated_version)) {
    return BadParam("tls-negotiated-version: not an unsigned integer");
  }
  return absl::OkStatus();
}

int Init(void* vctx, void* keydata, const OSSL_PARAM params[], Op op) {
  auto* ctx = static_cast<CipherCtx*>(vctx);
  return Guard(ctx->prov, [&] {
    auto* key = static_cast<PkeyKey*>(keydata);
    if (key == nullptr || !key->rsa()) {
      return RaiseError(
          ctx->prov, ProviderError(Reason::kNoKeySet,
                                   absl::StatusCode::kFailedPrecondition,
                                   "RSA encryption init without an RSA key"));
    }
    if (key->pss()) {
      // As the default provider (ossl_rsa_check_key): RSA-PSS keys sign.
      return RaiseError(
          ctx->prov, ProviderError(Reason::kNotSupportedForKeyType,
                                   absl::StatusCode::kInvalidArgument,
                                   "an RSA-PSS key cannot encrypt or decrypt"));
    }
    if (op == Op::kDecrypt && !key->has_private()) {
      return RaiseError(ctx->prov,
                        ProviderError(Reason::kNoKeySet,
                                      absl::StatusCode::kFailedPrecondition,
                                      "RSA decryption needs a private key"));
    }
    ctx->op = Op::kNone;
    key->Ref();
    PkeyKey::Unref(ctx->key);
    ctx->key = key;
    ctx->Reset();
    absl::Status st = ApplyParams(*ctx, params);
    if (!st.ok()) return RaiseError(ctx->prov, st);
    ctx->op = op;
    return 1;
  });
}

int EncryptInit(void* vctx, void* key, const OSSL_PARAM params[]) {
  return Init(vctx, key, params, Op::kEncrypt);
}
int DecryptInit(void* vctx, void* key, const OSSL_PARAM params[]) {
  return Init(vctx, key, params, Op::kDecrypt);
}

// OpParams are the core parameters for one operation: OAEP gets its
// default digest filled in; other paddings take no digest.
PkeyParams OpParams(const CipherCtx& ctx) {
  PkeyParams p = ctx.params;
  if (p.padding == ACCELCRYPT_PAD_OAEP) {
    p.md = OaepMd(ctx.params);
    if (p.mgf1_md == 0) p.mgf1_md = p.md;
  } else {
    p.md = 0;
    p.mgf1_md = 0;
  }
  return p;
}

// Constant-time helpers: all-ones masks for true, zero for false.
uint32_t CtIsZero(uint32_t a) { return 0u - ((~a & (a - 1)) >> 31); }
uint32_t CtEq(uint32_t a, uint32_t b) { return CtIsZero(a ^ b); }

// TlsPremaster recovers the 48-byte pre-master secret from a raw RSA
// decryption `em` (k bytes) as RFC 5246 7.4.7.1 requires: the padding and
// the embedded version (client_version, or the negotiated version as the
// workaround for old clients) are checked in constant time, and a failure
// yields `random` instead, indistinguishable to the peer until Finished.
void TlsPremaster(absl::Span<const uint8_t> em, unsigned int client_version,
                  unsigned int alt_version, const uint8_t* random,
                  uint8_t* out) {
  const size_t k = em.size();
  const size_t m = k - kPremasterLen;
  uint32_t good = CtIsZero(em[0]) & CtEq(em[1], 2);
  for (size_t i = 2; i < m - 1; ++i) good &= ~CtIsZero(em[i]);
  good &= CtIsZero(em[m - 1]);
  uint32_t version_good = CtEq(em[m], (client_version >> 8) & 0xff) &
                          CtEq(em[m + 1], client_version & 0xff);
  if (alt_version > 0) {
    version_good |= CtEq(em[m], (alt_version >> 8) & 0xff) &
                    CtEq(em[m + 1], alt_version & 0xff);
  }
  good &= version_good;
  for (size_t i = 0; i < kPremasterLen; ++i) {
    out[i] = static_cast<uint8_t>((good & em[m + i]) | (~good & random[i]));
  }
}

int TlsDecrypt(CipherCtx* ctx, PublicKeyOps* ops, unsigned char* out,
               size_t* outlen, size_t outsize, const unsigned char* in,
               size_t inlen) {
  if (ctx->tls_client_version == 0) {
    return RaiseError(ctx->prov, BadParam("TLS padding: tls-client-version "
                                          "is not set"));
  }
  const size_t k = ops->SignatureSize();
  if (k < kPremasterLen + 11 || outsize < kPremasterLen) {
    return RaiseError(ctx->prov, absl::OutOfRangeError(absl::StrFormat(
                                     "TLS padding: output room %u, need %u",
                                     outsize, kPremasterLen)));
  }
  uint8_t random[kPremasterLen];
  if (RAND_bytes_ex(ctx->prov->libctx(), random, sizeof(random), 0) != 1) {
    return RaiseError(ctx->prov,
                      absl::UnavailableError("TLS padding: no random bytes"));
  }
  PkeyParams raw = ctx->params;
  raw.padding = ACCELCRYPT_PAD_NONE;
  raw.md = 0;
  raw.mgf1_md = 0;
  std::vector<uint8_t> em(k);
  absl::StatusOr<size_t> n =
      ops->Decrypt(raw, absl::MakeConstSpan(in, inlen), absl::MakeSpan(em));
  int ok = 1;
  if (!n.ok()) {
    ok = RaiseError(ctx->prov, n.status());
  } else if (*n != k) {
    ok = RaiseError(ctx->prov,
                    absl::InternalError("raw RSA decryption shorter than k"));
  } else {
    TlsPremaster(em, ctx->tls_client_version, ctx->tls_negotiated_version,
                 random, out);
    *outlen = kPremasterLen;
  }
  OPENSSL_cleanse(em.data(), em.size());
  OPENSSL_cleanse(random, sizeof(random));
  return ok;
}

int Run(void* vctx, unsigned char* out, size_t* outlen, size_t outsize,
        const unsigned char* in, size_t inlen, Op op) {
  auto* ctx = static_cast<CipherCtx*>(vctx);
  return Guard(ctx->prov, [&] {
    if (ctx->op != op || ctx->key == nullptr) {
      return RaiseError(
          ctx->prov,
          ProviderError(Reason::kOutOfOrder,
                        absl::StatusCode::kFailedPrecondition,
                        op == Op::kEncrypt ? "encrypt without encrypt_init"
                                           : "decrypt without decrypt_init"));
    }
    absl::StatusOr<PublicKeyOps*> ops = ctx->key->Ops();
    if (!ops.ok()) return RaiseError(ctx->prov, ops.status());
    if (out == nullptr) {
      *outlen = (*ops)->SignatureSize();
      return 1;
    }
    if (ctx->params.padding == kTlsPadding) {
      if (op != Op::kDecrypt) {
        return RaiseError(ctx->prov,
                          BadParam("TLS padding is for decryption only"));
      }
      return TlsDecrypt(ctx, *ops, out, outlen, outsize, in, inlen);
    }
    const PkeyParams params = OpParams(*ctx);
    absl::StatusOr<size_t> n =
        op == Op::kEncrypt
            ? (*ops)->Encrypt(params, absl::MakeConstSpan(in, inlen),
                              absl::MakeSpan(out, outsize))
            : (*ops)->Decrypt(params, absl::MakeConstSpan(in, inlen),
                              absl::MakeSpan(out, outsize));
    if (!n.ok()) {
      absl::Status st = n.status();
      if (op == Op::kDecrypt &&
          st.code() == absl::StatusCode::kInvalidArgument) {
        st = ProviderError(Reason::kBadDecrypt, st.code(), st.message());
      }
      return RaiseError(ctx->prov, st);
    }
    *outlen = *n;
    return 1;
  });
}

int Encrypt(void* vctx, unsigned char* out, size_t* outlen, size_t outsize,
            const unsigned char* in, size_t inlen) {
  return Run(vctx, out, outlen, outsize, in, inlen, Op::kEncrypt);
}
int Decrypt(void* vctx, unsigned char* out, size_t* outlen, size_t outsize,
            const unsigned char* in, size_t inlen) {
  return Run(vctx, out, outlen, outsize, in, inlen, Op::kDecrypt);
}

int GetCtxParams(void* vctx, OSSL_PARAM params[]) {
  auto* ctx = static_cast<CipherCtx*>(vctx);
  return Guard(ctx->prov, [&] {
    OSSL_PARAM* p = OSSL_PARAM_locate(params, OSSL_ASYM_CIPHER_PARAM_PAD_MODE);
    if (p != nullptr) {
      const PadMode* mode = nullptr;
      for (const PadMode& m : kPadModes) {
        if (m.ours == ctx->params.padding) mode = &m;
      }
      if (mode == nullptr) return 0;
      if (p->data_type == OSSL_PARAM_UTF8_STRING && *mode->name == 0) {
        return 0;
      }
      if (p->data_type == OSSL_PARAM_UTF8_STRING
              ? !OSSL_PARAM_set_utf8_string(p, mode->name)
              : !OSSL_PARAM_set_int(p, mode->openssl)) {
        return 0;
      }
    }
    const accelcrypt_alg md = OaepMd(ctx->params);
    p = OSSL_PARAM_locate(params, OSSL_ASYM_CIPHER_PARAM_OAEP_DIGEST);
    if (p != nullptr) {
      std::string name(internal::DigestName(md));
      if (!OSSL_PARAM_set_utf8_string(p, name.c_str())) return 0;
    }
    p = OSSL_PARAM_locate(params, OSSL_ASYM_CIPHER_PARAM_MGF1_DIGEST);
    if (p != nullptr) {
      std::string name(internal::DigestName(
          ctx->params.mgf1_md != 0 ? ctx->params.mgf1_md : md));
      if (!OSSL_PARAM_set_utf8_string(p, name.c_str())) return 0;
    }
    p = OSSL_PARAM_locate(params, OSSL_ASYM_CIPHER_PARAM_OAEP_LABEL);
    if (p != nullptr && !OSSL_PARAM_set_octet_ptr(p, ctx->params.label.data(),
                                                  ctx->params.label.size())) {
      return 0;
    }
    p = OSSL_PARAM_locate(params, OSSL_ASYM_CIPHER_PARAM_TLS_CLIENT_VERSION);
    if (p != nullptr && !OSSL_PARAM_set_uint(p, ctx->tls_client_version)) {
      return 0;
    }
    p = OSSL_PARAM_locate(params,
                          OSSL_ASYM_CIPHER_PARAM_TLS_NEGOTIATED_VERSION);
    if (p != nullptr && !OSSL_PARAM_set_uint(p, ctx->tls_negotiated_version)) {
      return 0;
    }
    return 1;
  });
}

int SetCtxParams(void* vctx, const OSSL_PARAM params[]) {
  auto* ctx = static_cast<CipherCtx*>(vctx);
  return Guard(ctx->prov, [&] {
    absl::Status st = ApplyParams(*ctx, params);
    return st.ok() ? 1 : RaiseError(ctx->prov, st);
  });
}

const OSSL_PARAM kGettable[] = {
    OSSL_PARAM_utf8_string(OSSL_ASYM_CIPHER_PARAM_PAD_MODE, nullptr, 0),
    OSSL_PARAM_utf8_string(OSSL_ASYM_CIPHER_PARAM_OAEP_DIGEST, nullptr, 0),
    OSSL_PARAM_utf8_string(OSSL_ASYM_CIPHER_PARAM_MGF1_DIGEST, nullptr, 0),
    OSSL_PARAM_octet_ptr(OSSL_ASYM_CIPHER_PARAM_OAEP_LABEL, nullptr, 0),
    OSSL_PARAM_uint(OSSL_ASYM_CIPHER_PARAM_TLS_CLIENT_VERSION, nullptr),
    OSSL_PARAM_uint(OSSL_ASYM_CIPHER_PARAM_TLS_NEGOTIATED_VERSION, nullptr),
    OSSL_PARAM_END};
const OSSL_PARAM kSettable[] = {
    OSSL_PARAM_utf8_string(OSSL_ASYM_CIPHER_PARAM_PAD_MODE, nullptr, 0),
    OSSL_PARAM_utf8_string(OSSL_ASYM_CIPHER_PARAM_OAEP_DIGEST, nullptr, 0),
    OSSL_PARAM_utf8_string(OSSL_ASYM_CIPHER_PARAM_OAEP_DIGEST_PROPS, nullptr,
                           0),
    OSSL_PARAM_utf8_string(OSSL_ASYM_CIPHER_PARAM_MGF1_DIGEST, nullptr, 0),
    OSSL_PARAM_utf8_string(OSSL_ASYM_CIPHER_PARAM_MGF1_DIGEST_PROPS, nullptr,
                           0),
    OSSL_PARAM_octet_string(OSSL_ASYM_CIPHER_PARAM_OAEP_LABEL, nullptr, 0),
    OSSL_PARAM_uint(OSSL_ASYM_CIPHER_PARAM_TLS_CLIENT_VERSION, nullptr),
    OSSL_PARAM_uint(OSSL_ASYM_CIPHER_PARAM_TLS_NEGOTIATED_VERSION, nullptr),
    OSSL_PARAM_END};

const OSSL_PARAM* Gettable(void*, void*) { return kGettable; }
const OSSL_PARAM* Settable(void*, void*) { return kSettable; }

using Fn = void (*)();

}  // namespace

const OSSL_DISPATCH kRsaAsymCipherFunctions[] = {
    {OSSL_FUNC_ASYM_CIPHER_NEWCTX, reinterpret_cast<Fn>(&NewCtx)},
    {OSSL_FUNC_ASYM_CIPHER_ENCRYPT_INIT, reinterpret_cast<Fn>(&EncryptInit)},
    {OSSL_FUNC_ASYM_CIPHER_ENCRYPT, reinterpret_cast<Fn>(&Encrypt)},
    {OSSL_FUNC_ASYM_CIPHER_DECRYPT_INIT, reinterpret_cast<Fn>(&DecryptInit)},
    {OSSL_FUNC_ASYM_CIPHER_DECRYPT, reinterpret_cast<Fn>(&Decrypt)},
    {OSSL_FUNC_ASYM_CIPHER_FREECTX, reinterpret_cast<Fn>(&FreeCtx)},
    {OSSL_FUNC_ASYM_CIPHER_DUPCTX, reinterpret_cast<Fn>(&DupCtx)},
    {OSSL_FUNC_ASYM_CIPHER_GET_CTX_PARAMS, reinterpret_cast<Fn>(&GetCtxParams)},
    {OSSL_FUNC_ASYM_CIPHER_GETTABLE_CTX_PARAMS,
     reinterpret_cast<Fn>(&Gettable)},
    {OSSL_FUNC_ASYM_CIPHER_SET_CTX_PARAMS, reinterpret_cast<Fn>(&SetCtxParams)},
    {OSSL_FUNC_ASYM_CIPHER_SETTABLE_CTX_PARAMS,
     reinterpret_cast<Fn>(&Settable)},
    {0, nullptr}};

}  // namespace accelcrypt::provider
