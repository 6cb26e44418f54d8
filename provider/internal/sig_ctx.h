// SPDX-License-Identifier: Apache-2.0
// The signature context and its parameters (provider/signature.cc serves
// the operations; provider/internal/sig_params.cc the parameters). The
// rules follow OpenSSL 3.0's rsa_sig.c / dsa_sig.c: names, string and
// integer forms of pad-mode and saltlen, RSA-PSS key restrictions, the
// AlgorithmIdentifier a signature reports.
#ifndef ACCELCRYPT_PROVIDER_INTERNAL_SIG_CTX_H_
#define ACCELCRYPT_PROVIDER_INTERNAL_SIG_CTX_H_

#include <openssl/core.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/digest.h"
#include "core/pkey.h"
#include "provider/internal/pkey_key.h"
#include "provider/provider_ctx.h"

namespace accelcrypt::provider::internal {

enum class SigOp { kNone, kSign, kVerify, kVerifyRecover };

struct SigCtx {
  SigCtx(ProvCtx* p, bool r) : prov(p), rsa(r) {}
  ~SigCtx() { PkeyKey::Unref(key); }
  ProvCtx* prov;
  bool rsa;
  SigOp op = SigOp::kNone;
  PkeyKey* key = nullptr;
  PkeyParams params;
  // Set from a restricted RSA-PSS key at init: its digests are the only
  // ones allowed and min_salt the smallest salt (rsa_sig.c min_saltlen).
  bool restricted = false;
  int min_salt = -1;
  // digest_sign/verify: the routed streaming digest of the message.
  std::unique_ptr<Digest> digest;
  bool digest_op = false;
};

// BadParam is the provider's "bad parameter" error with `message`.
absl::Status BadParam(const std::string& message);

// SetMd sets the signature digest (`out` = &params.md) or the MGF1 digest
// (`out` = &params.mgf1_md) in `next`; a restricted RSA-PSS key allows
// only its own (rsa_sig.c rsa_check_padding).
absl::Status SetMd(const SigCtx& ctx, const char* name, accelcrypt_alg* out,
                   PkeyParams& next);
// ApplyParams follows rsa_sig.c rsa_set_ctx_params: the changes are
// checked together and applied only when all are valid.
absl::Status ApplyParams(SigCtx& ctx, const OSSL_PARAM params[]);
// PssSaltFor resolves the salt a PSS signature with `params` gets on this
// key (rsa_sig.c rsa_pss_compute_saltlen) and checks a restricted key's
// minimum.
absl::StatusOr<int> PssSaltFor(const SigCtx& ctx, const PkeyParams& params);
// ApplyKey sets the defaults an RSA-PSS key imposes (rsa_sig.c
// rsa_signverify_init): PSS padding and, when restricted, its digests and
// minimum salt as the salt.
absl::Status ApplyKey(SigCtx& ctx, SigOp op);
// CheckSigParams validates the parameter combination before an operation.
absl::Status CheckSigParams(const SigCtx& ctx, size_t tbs_len, bool sign);

// The OSSL_FUNC_signature_{get,set}_ctx_params functions and their tables.
int GetCtxParams(void* vctx, OSSL_PARAM params[]);
int SetCtxParams(void* vctx, const OSSL_PARAM params[]);
const OSSL_PARAM* RsaGettable(void*, void*);
const OSSL_PARAM* RsaSettable(void*, void*);
const OSSL_PARAM* DsaGettable(void*, void*);
const OSSL_PARAM* DsaSettable(void*, void*);

}  // namespace accelcrypt::provider::internal

#endif  // ACCELCRYPT_PROVIDER_INTERNAL_SIG_CTX_H_
