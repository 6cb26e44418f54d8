// SPDX-License-Identifier: Apache-2.0
// The signature parameters (provider/internal/sig_ctx.h): pad-mode,
// digests, MGF1, PSS salt, RSA-PSS key restrictions, the reported
// AlgorithmIdentifier, and the get/set ctx params tables.
#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/objects.h>
#include <openssl/params.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "core/algorithms.h"
#include "core/status.h"
#include "provider/errors.h"
#include "provider/internal/sig_ctx.h"
#include "provider/pkey.h"

namespace accelcrypt::provider::internal {

absl::Status BadParam(const std::string& message) {
  return ProviderError(Reason::kBadParameter,
                       absl::StatusCode::kInvalidArgument, message);
}

namespace {

// Pad modes as OpenSSL numbers them (RSA_*_PADDING) and names them.
struct PadMode {
  int openssl;
  const char* name;
  uint32_t ours;
};
constexpr PadMode kPadModes[] = {
    {RSA_PKCS1_PADDING, OSSL_PKEY_RSA_PAD_MODE_PKCSV15, ACCELCRYPT_PAD_PKCS1},
    {RSA_NO_PADDING, OSSL_PKEY_RSA_PAD_MODE_NONE, ACCELCRYPT_PAD_NONE},
    {RSA_PKCS1_PSS_PADDING, OSSL_PKEY_RSA_PAD_MODE_PSS, ACCELCRYPT_PAD_PSS},
};

const PadMode* PadByOurs(uint32_t ours) {
  for (const PadMode& m : kPadModes) {
    if (m.ours == ours) return &m;
  }
  return nullptr;
}

absl::Status NotAllowed(const std::string& message) {
  return ProviderError(Reason::kDigestNotAllowed,
                       absl::StatusCode::kInvalidArgument, message);
}
absl::Status IllegalPadding(const std::string& message) {
  return ProviderError(Reason::kIllegalPaddingMode,
                       absl::StatusCode::kInvalidArgument, message);
}
absl::Status SaltTooSmall(int min, int salt) {
  return ProviderError(
      Reason::kPssSaltlenTooSmall, absl::StatusCode::kInvalidArgument,
      absl::StrFormat("the RSA-PSS key requires a salt of at least %d bytes, "
                      "this one would be %d",
                      min, salt));
}

}  // namespace

// SetMd sets the signature digest (`out` = &params.md) or the MGF1 digest
// (`out` = &params.mgf1_md) in `next`; a restricted RSA-PSS key allows
// only its own (rsa_sig.c rsa_check_padding).
absl::Status SetMd(const SigCtx& ctx, const char* name, accelcrypt_alg* out,
                   PkeyParams& next) {
  ACCELCRYPT_ASSIGN_OR_RETURN(accelcrypt_alg md, internal::DigestByName(name));
  const bool mgf1 = out == &next.mgf1_md;
  if (!mgf1 && ctx.digest != nullptr && md != ctx.params.md) {
    return BadParam("the digest cannot change during digest_sign/verify");
  }
  if (ctx.restricted) {
    const internal::PssRestrictions& r = *ctx.key->pss_restrictions();
    const accelcrypt_alg allowed = mgf1 ? r.mgf1_md : r.md;
    if (md != allowed) {
      return NotAllowed(
          absl::StrFormat("the RSA-PSS key is restricted to %s %s, not %s",
                          mgf1 ? "MGF1 digest" : "digest",
                          internal::DigestName(allowed), name));
    }
  }
  *out = md;
  return absl::OkStatus();
}

// ApplyParams follows rsa_sig.c rsa_set_ctx_params: the changes are
// checked together and applied only when all are valid.
absl::Status ApplyParams(SigCtx& ctx, const OSSL_PARAM params[]) {
  if (params == nullptr) return absl::OkStatus();
  PkeyParams next = ctx.params;
  const OSSL_PARAM* p =
      OSSL_PARAM_locate_const(params, OSSL_SIGNATURE_PARAM_DIGEST);
  if (p != nullptr) {
    const char* name = nullptr;
    if (!OSSL_PARAM_get_utf8_string_ptr(p, &name)) {
      return BadParam("digest: not a string");
    }
    ACCELCRYPT_RETURN_IF_ERROR(SetMd(ctx, name, &next.md, next));
  }
  if (!ctx.rsa) {
    ctx.params = next;
    return absl::OkStatus();
  }
  const bool pss_key = ctx.key != nullptr && ctx.key->pss();
  p = OSSL_PARAM_locate_const(params, OSSL_SIGNATURE_PARAM_PAD_MODE);
  if (p != nullptr) {
    const PadMode* mode = nullptr;
    std::string shown;
    if (p->data_type == OSSL_PARAM_UTF8_STRING) {
      const char* name = nullptr;
      if (!OSSL_PARAM_get_utf8_string_ptr(p, &name)) {
        return BadParam("pad-mode: not a string");
      }
      for (const PadMode& m : kPadModes) {
        if (strcmp(m.name, name) == 0) mode = &m;
      }
      shown = name;
    } else {
      int value = 0;
      if (!OSSL_PARAM_get_int(p, &value))
        return BadParam("pad-mode: not an int");
      for (const PadMode& m : kPadModes) {
        if (m.openssl == value) mode = &m;
      }
      shown = std::to_string(value);
    }
    if (mode == nullptr) {
      return IllegalPadding(absl::StrFormat(
          "RSA signature: pad-mode %s is not supported (pkcs1, pss, none)",
          shown));
    }
    if (mode->ours == ACCELCRYPT_PAD_PSS && ctx.op == SigOp::kVerifyRecover) {
      return IllegalPadding(
          "PSS padding only allowed for sign and verify operations");
    }
    if (mode->ours != ACCELCRYPT_PAD_PSS && pss_key) {
      return IllegalPadding(absl::StrFormat(
          "pad-mode %s is not allowed with an RSA-PSS key", mode->name));
    }
    next.padding = mode->ours;
  }
  p = OSSL_PARAM_locate_const(params, OSSL_SIGNATURE_PARAM_PSS_SALTLEN);
  if (p != nullptr) {
    if (next.padding != ACCELCRYPT_PAD_PSS) {
      return ProviderError(Reason::kNotSupported,
                           absl::StatusCode::kInvalidArgument,
                           "PSS saltlen can only be specified if PSS padding "
                           "has been specified first");
    }
    int salt = 0;
    if (p->data_type == OSSL_PARAM_UTF8_STRING) {
      const char* s = nullptr;
      if (!OSSL_PARAM_get_utf8_string_ptr(p, &s)) {
        return BadParam("saltlen: not a string");
      }
      if (strcmp(s, OSSL_PKEY_RSA_PSS_SALT_LEN_DIGEST) == 0) {
        salt = ACCELCRYPT_PSS_SALT_DIGEST;
      } else if (strcmp(s, OSSL_PKEY_RSA_PSS_SALT_LEN_MAX) == 0) {
        salt = ACCELCRYPT_PSS_SALT_MAX;
      } else if (strcmp(s, OSSL_PKEY_RSA_PSS_SALT_LEN_AUTO) == 0) {
        salt = ACCELCRYPT_PSS_SALT_AUTO;
      } else if (!absl::SimpleAtoi(s, &salt) || salt < 0) {
        return ProviderError(
            Reason::kInvalidSaltLength, absl::StatusCode::kInvalidArgument,
            absl::StrFormat(
                "saltlen %s: expected digest, max, auto or a byte count", s));
      }
    } else if (!OSSL_PARAM_get_int(p, &salt)) {
      return BadParam("saltlen: not an int");
    }
    if (salt < ACCELCRYPT_PSS_SALT_MAX) {
      return ProviderError(Reason::kInvalidSaltLength,
                           absl::StatusCode::kInvalidArgument,
                           absl::StrFormat("saltlen %d is invalid", salt));
    }
    if (ctx.restricted) {
      const int h_len = static_cast<int>(internal::DigestLen(ctx.params.md));
      if (salt == ACCELCRYPT_PSS_SALT_AUTO && ctx.op == SigOp::kVerify) {
        return ProviderError(Reason::kInvalidSaltLength,
                             absl::StatusCode::kInvalidArgument,
                             "Cannot use autodetected salt length with a "
                             "restricted RSA-PSS key");
      }
      if (salt == ACCELCRYPT_PSS_SALT_DIGEST && ctx.min_salt > h_len) {
        return SaltTooSmall(ctx.min_salt, h_len);
      }
      if (salt >= 0 && salt < ctx.min_salt) {
        return SaltTooSmall(ctx.min_salt, salt);
      }
    }
    next.salt_len = salt;
  }
  p = OSSL_PARAM_locate_const(params, OSSL_SIGNATURE_PARAM_MGF1_DIGEST);
  if (p != nullptr) {
    const char* name = nullptr;
    if (!OSSL_PARAM_get_utf8_string_ptr(p, &name)) {
      return BadParam("mgf1-digest: not a string");
    }
    if (next.padding != ACCELCRYPT_PAD_PSS) {
      return BadParam("mgf1-digest needs pad-mode pss");
    }
    ACCELCRYPT_RETURN_IF_ERROR(SetMd(ctx, name, &next.mgf1_md, next));
  }
  // As OpenSSL's default provider (rsa_sig.c, RSA_DEFAULT_DIGEST_NAME): PSS
  // with no digest set uses SHA-1, kept in the context like a set digest;
  // the MGF1 digest follows it unless set (mgf1_md 0 = same as md).
  if (next.padding == ACCELCRYPT_PAD_PSS && next.md == 0) {
    next.md = ACCELCRYPT_ALG_SHA1;
  }
  // Raw RSA signs the input itself: no digest (rsa_check_padding).
  if (next.padding == ACCELCRYPT_PAD_NONE && next.md != 0) {
    return ProviderError(Reason::kInvalidPaddingMode,
                         absl::StatusCode::kInvalidArgument,
                         "RSA pad-mode none takes no digest");
  }
  ctx.params = next;
  return absl::OkStatus();
}

// PssSaltFor resolves the salt a PSS signature with `params` gets on this
// key (rsa_sig.c rsa_pss_compute_saltlen) and checks a restricted key's
// minimum.
absl::StatusOr<int> PssSaltFor(const SigCtx& ctx, const PkeyParams& params) {
  const int h_len = static_cast<int>(internal::DigestLen(params.md));
  const size_t bits = ctx.key->material().bits();
  int salt = params.salt_len;
  if (salt == ACCELCRYPT_PSS_SALT_DIGEST) {
    salt = h_len;
  } else if (salt == ACCELCRYPT_PSS_SALT_MAX ||
             salt == ACCELCRYPT_PSS_SALT_AUTO) {
    salt = static_cast<int>((bits + 7) / 8) - h_len - 2;
    if ((bits & 7) == 1) --salt;
  }
  if (salt < 0) {
    return ProviderError(Reason::kInvalidSaltLength,
                         absl::StatusCode::kInvalidArgument,
                         "PSS salt does not fit this key and digest");
  }
  if (ctx.restricted && salt < ctx.min_salt) {
    return SaltTooSmall(ctx.min_salt, salt);
  }
  return salt;
}

// ApplyKey sets the defaults an RSA-PSS key imposes (rsa_sig.c
// rsa_signverify_init): PSS padding and, when restricted, its digests and
// minimum salt as the salt.
absl::Status ApplyKey(SigCtx& ctx, SigOp op) {
  ctx.restricted = false;
  ctx.min_salt = -1;
  if (!ctx.rsa || !ctx.key->pss()) return absl::OkStatus();
  if (op == SigOp::kVerifyRecover) {
    return ProviderError(Reason::kNotSupportedForKeyType,
                         absl::StatusCode::kInvalidArgument,
                         "an RSA-PSS key cannot verify-recover");
  }
  ctx.params.padding = ACCELCRYPT_PAD_PSS;
  const std::optional<internal::PssRestrictions>& r =
      ctx.key->pss_restrictions();
  if (!r.has_value()) return absl::OkStatus();
  if (r->md == 0 || r->mgf1_md == 0) {
    return ProviderError(
        Reason::kNotSupported, absl::StatusCode::kUnimplemented,
        absl::StrFormat("the RSA-PSS key is restricted to digest %s with "
                        "MGF1 %s; accelcrypt does not offer %s",
                        r->md_name, r->mgf1_name,
                        r->md == 0 ? r->md_name : r->mgf1_name));
  }
  ctx.params.md = r->md;
  ctx.params.mgf1_md = r->mgf1_md;
  ctx.params.salt_len = r->min_salt_len;
  const size_t bits = ctx.key->material().bits();
  int max_salt = static_cast<int>((bits + 7) / 8) -
                 static_cast<int>(internal::DigestLen(r->md));
  if ((bits & 7) == 1) --max_salt;
  if (r->min_salt_len < 0 || r->min_salt_len > max_salt) {
    return ProviderError(
        Reason::kInvalidSaltLength, absl::StatusCode::kInvalidArgument,
        absl::StrFormat("the RSA-PSS key's minimum salt %d does not fit a "
                        "%u-bit key with %s",
                        r->min_salt_len, bits, internal::DigestName(r->md)));
  }
  ctx.restricted = true;
  ctx.min_salt = r->min_salt_len;
  return absl::OkStatus();
}

// Check validates the parameter combination before an operation.
absl::Status CheckSigParams(const SigCtx& ctx, size_t tbs_len, bool sign) {
  if (ctx.key == nullptr || ctx.op == SigOp::kNone) {
    return ProviderError(Reason::kOutOfOrder,
                         absl::StatusCode::kFailedPrecondition,
                         "signature: no init (sign_init/verify_init)");
  }
  if (sign && !ctx.key->has_private()) {
    return ProviderError(Reason::kNoKeySet,
                         absl::StatusCode::kFailedPrecondition,
                         "signing needs a private key");
  }
  if (!sign && !ctx.key->has_public() && ctx.key->material().uri.empty()) {
    return ProviderError(Reason::kNoKeySet,
                         absl::StatusCode::kFailedPrecondition,
                         "verification needs a public key");
  }
  // As OpenSSL: with a digest set, the input must be a digest of that size.
  if (ctx.params.md != 0 &&
      (!ctx.rsa || ctx.params.padding != ACCELCRYPT_PAD_NONE) &&
      tbs_len != internal::DigestLen(ctx.params.md)) {
    return BadParam(
        absl::StrFormat("input of %u bytes is not a %s digest (%u bytes)",
                        tbs_len, internal::DigestName(ctx.params.md),
                        internal::DigestLen(ctx.params.md)));
  }
  if (ctx.rsa && ctx.params.padding == ACCELCRYPT_PAD_NONE &&
      ctx.params.md != 0) {
    return BadParam("RSA pad-mode none signs raw input: unset the digest");
  }
  return absl::OkStatus();
}

namespace {

// DigestAlgor returns an AlgorithmIdentifier for a digest (parameters
// absent, as OpenSSL writes SHA-2 identifiers). Caller frees.
X509_ALGOR* DigestAlgor(accelcrypt_alg md) {
  const AlgorithmInfo* info = FindAlgorithm(md);
  if (info == nullptr) return nullptr;
  std::string_view names = info->openssl_names;
  std::string oid(names.substr(names.rfind(':') + 1));
  X509_ALGOR* algor = X509_ALGOR_new();
  if (algor == nullptr) return nullptr;
  X509_ALGOR_set0(algor, OBJ_txt2obj(oid.c_str(), 1), V_ASN1_UNDEF, nullptr);
  return algor;
}

// DerOf encodes an X509_ALGOR and frees it.
absl::StatusOr<std::string> DerOf(X509_ALGOR* algor) {
  if (algor == nullptr) return absl::ResourceExhaustedError("X509_ALGOR");
  unsigned char* der = nullptr;
  const int len = i2d_X509_ALGOR(algor, &der);
  X509_ALGOR_free(algor);
  if (len <= 0) return absl::InternalError("AlgorithmIdentifier encoding");
  std::string out(reinterpret_cast<char*>(der), len);
  OPENSSL_free(der);
  return out;
}

// PssAlgorithmId encodes id-RSASSA-PSS with RSASSA-PSS-params (RFC 8017
// A.2.3; RFC 4055 section 3.1 defaults SHA-1, MGF1-SHA-1, salt 20 are
// omitted). The salt is resolved as signing resolves it.
absl::StatusOr<std::string> PssAlgorithmId(const SigCtx& ctx) {
  const accelcrypt_alg md = ctx.params.md;
  const accelcrypt_alg mgf1 = ctx.params.mgf1_md != 0 ? ctx.params.mgf1_md : md;
  const int h_len = static_cast<int>(internal::DigestLen(md));
  const int em_len = static_cast<int>((ctx.key->material().bits() - 1 + 7) / 8);
  int salt = ctx.params.salt_len;
  if (salt == ACCELCRYPT_PSS_SALT_DIGEST) salt = h_len;
  if (salt == ACCELCRYPT_PSS_SALT_MAX || salt == ACCELCRYPT_PSS_SALT_AUTO) {
    salt = em_len - h_len - 2;
  }
  if (salt < 0) return BadParam("PSS salt does not fit this key");
  RSA_PSS_PARAMS* pss = RSA_PSS_PARAMS_new();
  if (pss == nullptr) return absl::ResourceExhaustedError("RSA_PSS_PARAMS");
  bool ok = true;
  if (md != ACCELCRYPT_ALG_SHA1) {
    pss->hashAlgorithm = DigestAlgor(md);
    ok = ok && pss->hashAlgorithm != nullptr;
  }
  if (ok && mgf1 != ACCELCRYPT_ALG_SHA1) {
    absl::StatusOr<std::string> inner = DerOf(DigestAlgor(mgf1));
    ASN1_STRING* seq = ASN1_STRING_new();
    pss->maskGenAlgorithm = X509_ALGOR_new();
    ok = inner.ok() && seq != nullptr && pss->maskGenAlgorithm != nullptr &&
         ASN1_STRING_set(seq, inner->data(), static_cast<int>(inner->size()));
    if (ok) {
      X509_ALGOR_set0(pss->maskGenAlgorithm, OBJ_nid2obj(NID_mgf1),
                      V_ASN1_SEQUENCE, seq);
    } else {
      ASN1_STRING_free(seq);
    }
  }
  if (ok && salt != 20) {
    pss->saltLength = ASN1_INTEGER_new();
    ok = pss->saltLength != nullptr && ASN1_INTEGER_set(pss->saltLength, salt);
  }
  unsigned char* der = nullptr;
  const int len = ok ? i2d_RSA_PSS_PARAMS(pss, &der) : 0;
  RSA_PSS_PARAMS_free(pss);
  if (len <= 0) return absl::InternalError("RSASSA-PSS-params encoding");
  ASN1_STRING* params = ASN1_STRING_new();
  const bool set = params != nullptr && ASN1_STRING_set(params, der, len);
  OPENSSL_free(der);
  X509_ALGOR* algor = set ? X509_ALGOR_new() : nullptr;
  if (algor == nullptr) {
    ASN1_STRING_free(params);
    return absl::ResourceExhaustedError("X509_ALGOR");
  }
  X509_ALGOR_set0(algor, OBJ_nid2obj(NID_rsassaPss), V_ASN1_SEQUENCE, params);
  return DerOf(algor);
}

// AlgorithmId DER-encodes the signature AlgorithmIdentifier: PKCS#1 v1.5
// (RFC 8017 A.2.4: parameters NULL), PSS (above) and DSA (RFC 3279 2.2.2:
// absent). Needs a digest; raw signatures have no identifier.
absl::StatusOr<std::string> AlgorithmId(const SigCtx& ctx) {
  if (ctx.params.md == 0 || ctx.key == nullptr ||
      (ctx.rsa && ctx.params.padding == ACCELCRYPT_PAD_NONE)) {
    return absl::UnimplementedError(
        "signature AlgorithmIdentifier needs a digest and a padding");
  }
  if (ctx.rsa && ctx.params.padding == ACCELCRYPT_PAD_PSS) {
    return PssAlgorithmId(ctx);
  }
  const AlgorithmInfo* info = FindAlgorithm(ctx.params.md);
  std::string_view names = info->openssl_names;
  std::string oid(names.substr(names.rfind(':') + 1));
  int sig_nid = 0;
  if (!OBJ_find_sigid_by_algs(&sig_nid, OBJ_txt2nid(oid.c_str()),
                              ctx.rsa ? NID_rsaEncryption : NID_dsa)) {
    return absl::UnimplementedError("no signature OID for this digest");
  }
  X509_ALGOR* algor = X509_ALGOR_new();
  if (algor == nullptr) return absl::ResourceExhaustedError("X509_ALGOR");
  X509_ALGOR_set0(algor, OBJ_nid2obj(sig_nid),
                  ctx.rsa ? V_ASN1_NULL : V_ASN1_UNDEF, nullptr);
  return DerOf(algor);
}

}  // namespace

int GetCtxParams(void* vctx, OSSL_PARAM params[]) {
  auto* ctx = static_cast<SigCtx*>(vctx);
  return Guard(ctx->prov, [&] {
    OSSL_PARAM* p =
        OSSL_PARAM_locate(params, OSSL_SIGNATURE_PARAM_ALGORITHM_ID);
    if (p != nullptr) {
      // Asked for and not available (PSS): say so rather than answer an
      // empty identifier that libcrypto would fail to decode.
      absl::StatusOr<std::string> der = AlgorithmId(*ctx);
      if (!der.ok()) return RaiseError(ctx->prov, der.status());
      if (!OSSL_PARAM_set_octet_string(p, der->data(), der->size())) return 0;
    }
    p = OSSL_PARAM_locate(params, OSSL_SIGNATURE_PARAM_DIGEST);
    if (p != nullptr && ctx->params.md != 0) {
      std::string name(internal::DigestName(ctx->params.md));
      if (!OSSL_PARAM_set_utf8_string(p, name.c_str())) return 0;
    }
    if (!ctx->rsa) return 1;
    p = OSSL_PARAM_locate(params, OSSL_SIGNATURE_PARAM_PAD_MODE);
    if (p != nullptr) {
      const PadMode* mode = PadByOurs(ctx->params.padding);
      if (mode == nullptr) return 0;
      if (p->data_type == OSSL_PARAM_UTF8_STRING
              ? !OSSL_PARAM_set_utf8_string(p, mode->name)
              : !OSSL_PARAM_set_int(p, mode->openssl)) {
        return 0;
      }
    }
    p = OSSL_PARAM_locate(params, OSSL_SIGNATURE_PARAM_MGF1_DIGEST);
    if (p != nullptr) {
      accelcrypt_alg mgf1 =
          ctx->params.mgf1_md != 0 ? ctx->params.mgf1_md : ctx->params.md;
      if (mgf1 != 0) {
        std::string name(internal::DigestName(mgf1));
        if (!OSSL_PARAM_set_utf8_string(p, name.c_str())) return 0;
      }
    }
    p = OSSL_PARAM_locate(params, OSSL_SIGNATURE_PARAM_PSS_SALTLEN);
    if (p != nullptr) {
      const int salt = ctx->params.salt_len;
      if (p->data_type == OSSL_PARAM_INTEGER) {
        if (!OSSL_PARAM_set_int(p, salt)) return 0;
      } else {
        std::string value =
            salt == ACCELCRYPT_PSS_SALT_DIGEST
                ? OSSL_PKEY_RSA_PSS_SALT_LEN_DIGEST
            : salt == ACCELCRYPT_PSS_SALT_MAX  ? OSSL_PKEY_RSA_PSS_SALT_LEN_MAX
            : salt == ACCELCRYPT_PSS_SALT_AUTO ? OSSL_PKEY_RSA_PSS_SALT_LEN_AUTO
                                               : std::to_string(salt);
        if (!OSSL_PARAM_set_utf8_string(p, value.c_str())) return 0;
      }
    }
    return 1;
  });
}

int SetCtxParams(void* vctx, const OSSL_PARAM params[]) {
  auto* ctx = static_cast<SigCtx*>(vctx);
  return Guard(ctx->prov, [&] {
    absl::Status st = ApplyParams(*ctx, params);
    return st.ok() ? 1 : RaiseError(ctx->prov, st);
  });
}

const OSSL_PARAM kRsaGettable[] = {
    OSSL_PARAM_octet_string(OSSL_SIGNATURE_PARAM_ALGORITHM_ID, nullptr, 0),
    OSSL_PARAM_utf8_string(OSSL_SIGNATURE_PARAM_PAD_MODE, nullptr, 0),
    OSSL_PARAM_utf8_string(OSSL_SIGNATURE_PARAM_DIGEST, nullptr, 0),
    OSSL_PARAM_utf8_string(OSSL_SIGNATURE_PARAM_MGF1_DIGEST, nullptr, 0),
    OSSL_PARAM_utf8_string(OSSL_SIGNATURE_PARAM_PSS_SALTLEN, nullptr, 0),
    OSSL_PARAM_END};
const OSSL_PARAM kRsaSettable[] = {
    OSSL_PARAM_utf8_string(OSSL_SIGNATURE_PARAM_PAD_MODE, nullptr, 0),
    OSSL_PARAM_utf8_string(OSSL_SIGNATURE_PARAM_DIGEST, nullptr, 0),
    OSSL_PARAM_utf8_string(OSSL_SIGNATURE_PARAM_PROPERTIES, nullptr, 0),
    OSSL_PARAM_utf8_string(OSSL_SIGNATURE_PARAM_MGF1_DIGEST, nullptr, 0),
    OSSL_PARAM_utf8_string(OSSL_SIGNATURE_PARAM_MGF1_PROPERTIES, nullptr, 0),
    OSSL_PARAM_utf8_string(OSSL_SIGNATURE_PARAM_PSS_SALTLEN, nullptr, 0),
    OSSL_PARAM_END};
const OSSL_PARAM kDsaGettable[] = {
    OSSL_PARAM_octet_string(OSSL_SIGNATURE_PARAM_ALGORITHM_ID, nullptr, 0),
    OSSL_PARAM_utf8_string(OSSL_SIGNATURE_PARAM_DIGEST, nullptr, 0),
    OSSL_PARAM_END};
const OSSL_PARAM kDsaSettable[] = {
    OSSL_PARAM_utf8_string(OSSL_SIGNATURE_PARAM_DIGEST, nullptr, 0),
    OSSL_PARAM_utf8_string(OSSL_SIGNATURE_PARAM_PROPERTIES, nullptr, 0),
    OSSL_PARAM_END};

const OSSL_PARAM* RsaGettable(void*, void*) { return kRsaGettable; }
const OSSL_PARAM* RsaSettable(void*, void*) { return kRsaSettable; }
const OSSL_PARAM* DsaGettable(void*, void*) { return kDsaGettable; }
const OSSL_PARAM* DsaSettable(void*, void*) { return kDsaSettable; }

}  // namespace accelcrypt::provider::internal
