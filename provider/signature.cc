// SPDX-License-Identifier: Apache-2.0
// RSA and DSA signatures over core PublicKeyOps. Parameters follow OpenSSL
// 3.0's rsa_sig.c / dsa_sig.c (names, string and integer forms of pad-mode
// and saltlen); the digest of digest_sign/verify is computed by the core
// router (our own digest backends), never fetched from another provider.
#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/objects.h>
#include <openssl/params.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "core/digest.h"
#include "core/router.h"
#include "core/status.h"
#include "provider/errors.h"
#include "provider/internal/pkey_key.h"
#include "provider/internal/sig_ctx.h"
#include "provider/pkey.h"

namespace accelcrypt::provider {
namespace {

using internal::PkeyKey;

using internal::ApplyKey;
using internal::BadParam;
using internal::CheckSigParams;
using internal::DsaGettable;
using internal::DsaSettable;
using internal::GetCtxParams;
using internal::PssSaltFor;
using internal::RsaGettable;
using internal::RsaSettable;
using internal::SetCtxParams;
using internal::SetMd;
using internal::SigCtx;
using Op = internal::SigOp;

void* NewCtx(void* provctx, bool rsa) {
  return new (std::nothrow) SigCtx(static_cast<ProvCtx*>(provctx), rsa);
}
void* RsaNewCtx(void* provctx, const char*) { return NewCtx(provctx, true); }
void* DsaNewCtx(void* provctx, const char*) { return NewCtx(provctx, false); }

void FreeCtx(void* vctx) { delete static_cast<SigCtx*>(vctx); }

void* DupCtx(void* vctx) {
  auto* src = static_cast<SigCtx*>(vctx);
  SigCtx* dup = nullptr;
  Guard(src->prov, [&] {
    auto copy = std::make_unique<SigCtx>(src->prov, src->rsa);
    copy->op = src->op;
    copy->params = src->params;
    copy->restricted = src->restricted;
    copy->min_salt = src->min_salt;
    copy->digest_op = src->digest_op;
    if (src->digest != nullptr) {
      absl::StatusOr<std::unique_ptr<Digest>> clone = src->digest->Clone();
      if (!clone.ok()) return RaiseError(src->prov, clone.status());
      copy->digest = *std::move(clone);
    }
    if (src->key != nullptr) {
      src->key->Ref();
      copy->key = src->key;
    }
    dup = copy.release();
    return 1;
  });
  return dup;
}

int Init(SigCtx* ctx, void* keydata, const OSSL_PARAM params[], Op op) {
  return Guard(ctx->prov, [&] {
    auto* key = static_cast<PkeyKey*>(keydata);
    if (key == nullptr && ctx->key == nullptr) {
      return RaiseError(ctx->prov,
                        ProviderError(Reason::kNoKeySet,
                                      absl::StatusCode::kFailedPrecondition,
                                      "signature init without a key"));
    }
    if (key != nullptr && key->rsa() != ctx->rsa) {
      return RaiseError(ctx->prov, BadParam("key type does not match"));
    }
    ctx->op = Op::kNone;
    ctx->digest.reset();
    ctx->digest_op = false;
    if (key != nullptr) {
      key->Ref();
      PkeyKey::Unref(ctx->key);
      ctx->key = key;
      ctx->params = PkeyParams();
      ctx->params.md = 0;
      // OpenSSL 3.0's default: the largest salt when signing, recovered
      // from the signature when verifying.
      ctx->params.salt_len = ACCELCRYPT_PSS_SALT_AUTO;
    }
    ctx->op = op;
    absl::Status st = ApplyKey(*ctx, op);
    if (st.ok()) st = ApplyParams(*ctx, params);
    ctx->op = Op::kNone;
    if (!st.ok()) return RaiseError(ctx->prov, st);
    if (op == Op::kSign && !ctx->key->has_private()) {
      return RaiseError(ctx->prov,
                        ProviderError(Reason::kNoKeySet,
                                      absl::StatusCode::kFailedPrecondition,
                                      "signing needs a private key"));
    }
    ctx->op = op;
    return 1;
  });
}

int SignInit(void* vctx, void* key, const OSSL_PARAM params[]) {
  return Init(static_cast<SigCtx*>(vctx), key, params, Op::kSign);
}
int VerifyInit(void* vctx, void* key, const OSSL_PARAM params[]) {
  return Init(static_cast<SigCtx*>(vctx), key, params, Op::kVerify);
}

int DoSign(SigCtx* ctx, unsigned char* sig, size_t* siglen, size_t sigsize,
           const unsigned char* tbs, size_t tbslen) {
  absl::StatusOr<PublicKeyOps*> ops = ctx->key->Ops();
  if (!ops.ok()) return RaiseError(ctx->prov, ops.status());
  if (sig == nullptr) {
    *siglen = (*ops)->SignatureSize();
    return 1;
  }
  // OpenSSL's "auto" salt means the largest salt when signing; the core
  // ABI keeps ACCELCRYPT_PSS_SALT_AUTO for verification only, so a backend
  // (a token) that cannot recover a salt still takes the signature.
  PkeyParams params = ctx->params;
  if (params.padding == ACCELCRYPT_PAD_PSS && ctx->rsa) {
    absl::StatusOr<int> salt = PssSaltFor(*ctx, params);
    if (!salt.ok()) return RaiseError(ctx->prov, salt.status());
    params.salt_len = *salt;
  }
  absl::StatusOr<size_t> n = (*ops)->Sign(
      params, absl::MakeConstSpan(tbs, tbslen), absl::MakeSpan(sig, sigsize));
  if (!n.ok()) return RaiseError(ctx->prov, n.status());
  *siglen = *n;
  return 1;
}

int Sign(void* vctx, unsigned char* sig, size_t* siglen, size_t sigsize,
         const unsigned char* tbs, size_t tbslen) {
  auto* ctx = static_cast<SigCtx*>(vctx);
  return Guard(ctx->prov, [&] {
    if (ctx->op != Op::kSign) {
      return RaiseError(ctx->prov,
                        CheckSigParams(SigCtx(ctx->prov, ctx->rsa), 0, true));
    }
    absl::Status st = CheckSigParams(*ctx, tbslen, true);
    if (!st.ok()) return RaiseError(ctx->prov, st);
    return DoSign(ctx, sig, siglen, sigsize, tbs, tbslen);
  });
}

int DoVerify(SigCtx* ctx, const unsigned char* sig, size_t siglen,
             const unsigned char* tbs, size_t tbslen) {
  absl::StatusOr<PublicKeyOps*> ops = ctx->key->Ops();
  if (!ops.ok()) return RaiseError(ctx->prov, ops.status());
  absl::Status st =
      (*ops)->Verify(ctx->params, absl::MakeConstSpan(tbs, tbslen),
                     absl::MakeConstSpan(sig, siglen));
  if (st.ok()) return 1;
  if (GetStatusDetail(st) == StatusDetail::kAuthFailed) {
    st = ProviderError(Reason::kBadSignature, st.code(), st.message());
  }
  return RaiseError(ctx->prov, st);
}

int Verify(void* vctx, const unsigned char* sig, size_t siglen,
           const unsigned char* tbs, size_t tbslen) {
  auto* ctx = static_cast<SigCtx*>(vctx);
  return Guard(ctx->prov, [&] {
    absl::Status st =
        ctx->op == Op::kVerify
            ? CheckSigParams(*ctx, tbslen, false)
            : CheckSigParams(SigCtx(ctx->prov, ctx->rsa), 0, false);
    if (!st.ok()) return RaiseError(ctx->prov, st);
    return DoVerify(ctx, sig, siglen, tbs, tbslen);
  });
}

int VerifyRecoverInit(void* vctx, void* key, const OSSL_PARAM params[]) {
  return Init(static_cast<SigCtx*>(vctx), key, params, Op::kVerifyRecover);
}

// DigestInfoPrefix is the DER DigestInfo (RFC 8017 section 9.2, parameters
// NULL) of an `md` digest up to the digest bytes, which end it.
absl::StatusOr<std::string> DigestInfoPrefix(accelcrypt_alg md) {
  const AlgorithmInfo* info = FindAlgorithm(md);
  const size_t h_len = internal::DigestLen(md);
  if (info == nullptr || h_len == 0) return BadParam("unknown digest");
  std::string_view names = info->openssl_names;
  std::string oid(names.substr(names.rfind(':') + 1));
  X509_SIG* sig = X509_SIG_new();
  if (sig == nullptr) return absl::ResourceExhaustedError("X509_SIG");
  X509_ALGOR* algor = nullptr;
  ASN1_OCTET_STRING* digest = nullptr;
  X509_SIG_getm(sig, &algor, &digest);
  const std::string zeros(h_len, '\0');
  unsigned char* der = nullptr;
  int len = 0;
  if (X509_ALGOR_set0(algor, OBJ_txt2obj(oid.c_str(), 1), V_ASN1_NULL,
                      nullptr) == 1 &&
      ASN1_OCTET_STRING_set(
          digest, reinterpret_cast<const unsigned char*>(zeros.data()),
          static_cast<int>(h_len)) == 1) {
    len = i2d_X509_SIG(sig, &der);
  }
  X509_SIG_free(sig);
  if (len <= static_cast<int>(h_len)) {
    OPENSSL_free(der);
    return absl::InternalError("DigestInfo encoding");
  }
  std::string out(reinterpret_cast<char*>(der), len - h_len);
  OPENSSL_free(der);
  return out;
}

absl::Status NotRecovered(const std::string& why) {
  return ProviderError(Reason::kBadSignature,
                       absl::StatusCode::kInvalidArgument,
                       "RSA verify-recover: " + why);
}

// Recover applies the public key to `sig` (RSAVP1, RFC 8017 section 5.2.2)
// and undoes the padding: none gives the whole representative, PKCS#1 v1.5
// the encoded message T (EMSA-PKCS1-v1_5, section 9.2), and with a digest
// set T must be that digest's DigestInfo, of which the digest is returned
// (as RSA_verify recovering the digest in rsa_sig.c).
absl::StatusOr<std::vector<uint8_t>> Recover(SigCtx* ctx,
                                             absl::Span<const uint8_t> sig) {
  ACCELCRYPT_ASSIGN_OR_RETURN(PublicKeyOps * ops, ctx->key->Ops());
  const size_t k = ops->SignatureSize();
  if (sig.size() > k) return NotRecovered("signature longer than the modulus");
  std::vector<uint8_t> in(k, 0);
  std::copy(sig.begin(), sig.end(), in.end() - sig.size());
  std::vector<uint8_t> em(k);
  PkeyParams raw;
  raw.padding = ACCELCRYPT_PAD_NONE;
  ACCELCRYPT_ASSIGN_OR_RETURN(size_t n,
                              ops->Encrypt(raw, in, absl::MakeSpan(em)));
  em.resize(n);
  if (ctx->params.padding == ACCELCRYPT_PAD_NONE) return em;
  // EM = 0x00 || 0x01 || PS (at least 8 bytes 0xff) || 0x00 || T.
  size_t i = 2;
  if (n < 11 || em[0] != 0x00 || em[1] != 0x01) {
    return NotRecovered("not a PKCS#1 v1.5 signature block");
  }
  while (i < n && em[i] == 0xff) ++i;
  if (i - 2 < 8 || i >= n || em[i] != 0x00) {
    return NotRecovered("bad PKCS#1 v1.5 padding");
  }
  ++i;
  std::vector<uint8_t> t(em.begin() + i, em.end());
  if (ctx->params.md == 0) return t;
  ACCELCRYPT_ASSIGN_OR_RETURN(std::string prefix,
                              DigestInfoPrefix(ctx->params.md));
  const size_t h_len = internal::DigestLen(ctx->params.md);
  if (t.size() != prefix.size() + h_len ||
      memcmp(t.data(), prefix.data(), prefix.size()) != 0) {
    return NotRecovered(absl::StrFormat("the signature holds no %s DigestInfo",
                                        internal::DigestName(ctx->params.md)));
  }
  return std::vector<uint8_t>(t.end() - h_len, t.end());
}

int VerifyRecover(void* vctx, unsigned char* rout, size_t* routlen,
                  size_t routsize, const unsigned char* sig, size_t siglen) {
  auto* ctx = static_cast<SigCtx*>(vctx);
  return Guard(ctx->prov, [&] {
    if (ctx->op != Op::kVerifyRecover || ctx->key == nullptr) {
      return RaiseError(
          ctx->prov,
          ProviderError(Reason::kOutOfOrder,
                        absl::StatusCode::kFailedPrecondition,
                        "verify_recover without verify_recover_init"));
    }
    if (!ctx->key->has_public()) {
      return RaiseError(ctx->prov,
                        ProviderError(Reason::kNoKeySet,
                                      absl::StatusCode::kFailedPrecondition,
                                      "verify-recover needs a public key"));
    }
    absl::StatusOr<PublicKeyOps*> ops = ctx->key->Ops();
    if (!ops.ok()) return RaiseError(ctx->prov, ops.status());
    if (rout == nullptr) {
      *routlen = (*ops)->SignatureSize();
      return 1;
    }
    absl::StatusOr<std::vector<uint8_t>> out =
        Recover(ctx, absl::MakeConstSpan(sig, siglen));
    if (!out.ok()) return RaiseError(ctx->prov, out.status());
    if (out->size() > routsize) {
      OPENSSL_cleanse(out->data(), out->size());
      return RaiseError(ctx->prov,
                        ProviderError(Reason::kOutputBufferTooSmall,
                                      absl::StatusCode::kOutOfRange,
                                      "verify-recover output buffer"));
    }
    memcpy(rout, out->data(), out->size());
    *routlen = out->size();
    OPENSSL_cleanse(out->data(), out->size());
    return 1;
  });
}

int DigestInit(void* vctx, const char* mdname, void* key,
               const OSSL_PARAM params[], Op op) {
  auto* ctx = static_cast<SigCtx*>(vctx);
  if (!Init(ctx, key, params, op)) return 0;
  return Guard(ctx->prov, [&] {
    ctx->op = Op::kNone;
    absl::Status st = absl::OkStatus();
    // No name: the key's default digest (keymgmt default-digest): a
    // restricted RSA-PSS key's own, else SHA-256.
    std::string name = (mdname != nullptr && *mdname != 0) ? mdname : "SHA256";
    if ((mdname == nullptr || *mdname == 0) && ctx->restricted) {
      name = internal::DigestName(ctx->key->pss_restrictions()->md);
    }
    st = SetMd(*ctx, name.c_str(), &ctx->params.md, ctx->params);
    if (!st.ok()) return RaiseError(ctx->prov, st);
    absl::StatusOr<std::unique_ptr<Digest>> digest =
        ctx->prov->core().router().NewDigest(ctx->params.md);
    if (!digest.ok()) return RaiseError(ctx->prov, digest.status());
    ctx->digest = *std::move(digest);
    ctx->digest_op = true;
    ctx->op = op;
    return 1;
  });
}

int DigestSignInit(void* vctx, const char* mdname, void* key,
                   const OSSL_PARAM params[]) {
  return DigestInit(vctx, mdname, key, params, Op::kSign);
}
int DigestVerifyInit(void* vctx, const char* mdname, void* key,
                     const OSSL_PARAM params[]) {
  return DigestInit(vctx, mdname, key, params, Op::kVerify);
}

int DigestUpdate(void* vctx, const unsigned char* data, size_t datalen) {
  auto* ctx = static_cast<SigCtx*>(vctx);
  return Guard(ctx->prov, [&] {
    if (!ctx->digest_op || ctx->digest == nullptr) {
      return RaiseError(ctx->prov,
                        ProviderError(Reason::kOutOfOrder,
                                      absl::StatusCode::kFailedPrecondition,
                                      "digest update without digest init"));
    }
    absl::Status st = ctx->digest->Update(absl::MakeConstSpan(data, datalen));
    return st.ok() ? 1 : RaiseError(ctx->prov, st);
  });
}

// FinishDigest writes the message digest into `out` (64 bytes) and spends
// the streaming digest.
absl::StatusOr<size_t> FinishDigest(SigCtx* ctx, uint8_t* out) {
  if (!ctx->digest_op || ctx->digest == nullptr) {
    return ProviderError(Reason::kOutOfOrder,
                         absl::StatusCode::kFailedPrecondition,
                         "digest final without digest init");
  }
  const size_t len = internal::DigestLen(ctx->params.md);
  ACCELCRYPT_RETURN_IF_ERROR(ctx->digest->Final(absl::MakeSpan(out, len)));
  ctx->digest.reset();
  return len;
}

int DigestSignFinal(void* vctx, unsigned char* sig, size_t* siglen,
                    size_t sigsize) {
  auto* ctx = static_cast<SigCtx*>(vctx);
  return Guard(ctx->prov, [&] {
    absl::Status st =
        CheckSigParams(*ctx, internal::DigestLen(ctx->params.md), true);
    if (!st.ok()) return RaiseError(ctx->prov, st);
    if (sig == nullptr) return DoSign(ctx, nullptr, siglen, 0, nullptr, 0);
    uint8_t md[64];
    absl::StatusOr<size_t> len = FinishDigest(ctx, md);
    if (!len.ok()) return RaiseError(ctx->prov, len.status());
    const int ok = DoSign(ctx, sig, siglen, sigsize, md, *len);
    OPENSSL_cleanse(md, sizeof(md));
    return ok;
  });
}

int DigestVerifyFinal(void* vctx, const unsigned char* sig, size_t siglen) {
  auto* ctx = static_cast<SigCtx*>(vctx);
  return Guard(ctx->prov, [&] {
    absl::Status st =
        CheckSigParams(*ctx, internal::DigestLen(ctx->params.md), false);
    if (!st.ok()) return RaiseError(ctx->prov, st);
    uint8_t md[64];
    absl::StatusOr<size_t> len = FinishDigest(ctx, md);
    if (!len.ok()) return RaiseError(ctx->prov, len.status());
    return DoVerify(ctx, sig, siglen, md, *len);
  });
}

using Fn = void (*)();

#define ACCELCRYPT_SIGNATURE_COMMON                                         \
  {OSSL_FUNC_SIGNATURE_SIGN_INIT, reinterpret_cast<Fn>(&SignInit)},         \
      {OSSL_FUNC_SIGNATURE_SIGN, reinterpret_cast<Fn>(&Sign)},              \
      {OSSL_FUNC_SIGNATURE_VERIFY_INIT, reinterpret_cast<Fn>(&VerifyInit)}, \
      {OSSL_FUNC_SIGNATURE_VERIFY, reinterpret_cast<Fn>(&Verify)},          \
      {OSSL_FUNC_SIGNATURE_DIGEST_SIGN_INIT,                                \
       reinterpret_cast<Fn>(&DigestSignInit)},                              \
      {OSSL_FUNC_SIGNATURE_DIGEST_SIGN_UPDATE,                              \
       reinterpret_cast<Fn>(&DigestUpdate)},                                \
      {OSSL_FUNC_SIGNATURE_DIGEST_SIGN_FINAL,                               \
       reinterpret_cast<Fn>(&DigestSignFinal)},                             \
      {OSSL_FUNC_SIGNATURE_DIGEST_VERIFY_INIT,                              \
       reinterpret_cast<Fn>(&DigestVerifyInit)},                            \
      {OSSL_FUNC_SIGNATURE_DIGEST_VERIFY_UPDATE,                            \
       reinterpret_cast<Fn>(&DigestUpdate)},                                \
      {OSSL_FUNC_SIGNATURE_DIGEST_VERIFY_FINAL,                             \
       reinterpret_cast<Fn>(&DigestVerifyFinal)},                           \
      {OSSL_FUNC_SIGNATURE_FREECTX, reinterpret_cast<Fn>(&FreeCtx)},        \
      {OSSL_FUNC_SIGNATURE_DUPCTX, reinterpret_cast<Fn>(&DupCtx)},          \
      {OSSL_FUNC_SIGNATURE_GET_CTX_PARAMS,                                  \
       reinterpret_cast<Fn>(&GetCtxParams)},                                \
  {                                                                         \
    OSSL_FUNC_SIGNATURE_SET_CTX_PARAMS, reinterpret_cast<Fn>(&SetCtxParams) \
  }

}  // namespace

const OSSL_DISPATCH kRsaSignatureFunctions[] = {
    {OSSL_FUNC_SIGNATURE_NEWCTX, reinterpret_cast<Fn>(&RsaNewCtx)},
    ACCELCRYPT_SIGNATURE_COMMON,
    {OSSL_FUNC_SIGNATURE_VERIFY_RECOVER_INIT,
     reinterpret_cast<Fn>(&VerifyRecoverInit)},
    {OSSL_FUNC_SIGNATURE_VERIFY_RECOVER, reinterpret_cast<Fn>(&VerifyRecover)},
    {OSSL_FUNC_SIGNATURE_GETTABLE_CTX_PARAMS,
     reinterpret_cast<Fn>(&RsaGettable)},
    {OSSL_FUNC_SIGNATURE_SETTABLE_CTX_PARAMS,
     reinterpret_cast<Fn>(&RsaSettable)},
    {0, nullptr}};

const OSSL_DISPATCH kDsaSignatureFunctions[] = {
    {OSSL_FUNC_SIGNATURE_NEWCTX, reinterpret_cast<Fn>(&DsaNewCtx)},
    ACCELCRYPT_SIGNATURE_COMMON,
    {OSSL_FUNC_SIGNATURE_GETTABLE_CTX_PARAMS,
     reinterpret_cast<Fn>(&DsaGettable)},
    {OSSL_FUNC_SIGNATURE_SETTABLE_CTX_PARAMS,
     reinterpret_cast<Fn>(&DsaSettable)},
    {0, nullptr}};

}  // namespace accelcrypt::provider
