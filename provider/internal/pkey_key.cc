// SPDX-License-Identifier: Apache-2.0
#include "provider/internal/pkey_key.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <string>

#include "absl/strings/str_format.h"
#include "accelcrypt/kit/openssl_errors.h"
#include "core/algorithms.h"
#include "core/router.h"
#include "core/status.h"

namespace accelcrypt::provider::internal {
namespace {

bool NonZero(const std::vector<uint8_t>& v) {
  for (uint8_t b : v) {
    if (b != 0) return true;
  }
  return false;
}

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct PkeyCtxFree {
  void operator()(EVP_PKEY_CTX* p) const { EVP_PKEY_CTX_free(p); }
};

}  // namespace

void PkeyKey::Unref(PkeyKey* key) {
  if (key == nullptr) return;
  if (key->refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete key;
}

bool PkeyKey::has_public() const {
  if (rsa()) return NonZero(material_.n) && NonZero(material_.e);
  return NonZero(material_.dsa_y);
}

bool PkeyKey::has_private() const {
  if (!material_.uri.empty()) return true;
  return rsa() ? NonZero(material_.d) : NonZero(material_.dsa_x);
}

bool PkeyKey::has_domain() const {
  if (rsa()) return true;
  return NonZero(material_.dsa_p) && NonZero(material_.dsa_q) &&
         NonZero(material_.dsa_g);
}

void PkeyKey::ResetOps() {
  absl::MutexLock lock(&mu_);
  ops_.reset();
  security_bits_.store(-1, std::memory_order_relaxed);
}

absl::StatusOr<PublicKeyOps*> PkeyKey::Ops() {
  absl::MutexLock lock(&mu_);
  if (ops_ == nullptr) {
    ACCELCRYPT_ASSIGN_OR_RETURN(
        ops_, prov_->core().router().NewPublicKeyOps(material_));
  }
  return ops_.get();
}

int PkeyKey::SecurityBits() {
  int cached = security_bits_.load(std::memory_order_relaxed);
  if (cached >= 0) return cached;
  int bits = 0;
  if (!rsa()) {
    // FIPS 186-4 / SP 800-57 Part 1 table 2, as DSA_security_bits.
    KeyMaterial probe;
    probe.type = KeyMaterial::Type::kRsa;
    probe.n = material_.dsa_q;
    bits = BN_security_bits(static_cast<int>(material_.bits()),
                            static_cast<int>(probe.bits()));
  } else {
    // OpenSSL 3.0 computes RSA strength with an internal formula
    // (SP 800-56B Appendix D); ask libcrypto in our private context so the
    // value is the one the default provider reports for the same key.
    OSSL_LIB_CTX* lib = prov_->private_libctx();
    ParamBuilder builder;
    if (lib != nullptr &&
        builder.Add(OSSL_PKEY_PARAM_RSA_N, material_.n).ok() &&
        builder.Add(OSSL_PKEY_PARAM_RSA_E, material_.e).ok()) {
      absl::StatusOr<OSSL_PARAM*> params = builder.Build();
      if (params.ok()) {
        std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree> ctx(
            EVP_PKEY_CTX_new_from_name(lib, "RSA", "provider=default"));
        EVP_PKEY* raw = nullptr;
        if (ctx != nullptr && EVP_PKEY_fromdata_init(ctx.get()) == 1 &&
            EVP_PKEY_fromdata(ctx.get(), &raw, EVP_PKEY_PUBLIC_KEY, *params) ==
                1) {
          std::unique_ptr<EVP_PKEY, PkeyFree> pkey(raw);
          bits = EVP_PKEY_get_security_bits(pkey.get());
        }
        ClearFreeParams(*params);
      }
    }
    if (bits <= 0) {
      ERR_clear_error();
      bits = BN_security_bits(static_cast<int>(material_.bits()), -1);
    }
  }
  security_bits_.store(bits, std::memory_order_relaxed);
  return bits;
}

absl::StatusOr<bool> ParamBytes(const OSSL_PARAM params[], const char* name,
                                std::vector<uint8_t>* out) {
  const OSSL_PARAM* p = OSSL_PARAM_locate_const(params, name);
  if (p == nullptr) return false;
  BIGNUM* bn = nullptr;
  if (!OSSL_PARAM_get_BN(p, &bn)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("key parameter %s is not an unsigned integer", name));
  }
  out->assign(BN_num_bytes(bn), 0);
  if (!out->empty()) BN_bn2bin(bn, out->data());
  BN_clear_free(bn);
  return true;
}

ParamBuilder::ParamBuilder() : bld_(OSSL_PARAM_BLD_new()) {}

ParamBuilder::~ParamBuilder() {
  OSSL_PARAM_BLD_free(bld_);
  for (BIGNUM* bn : bns_) BN_clear_free(bn);
}

absl::Status ParamBuilder::Add(const char* name,
                               const std::vector<uint8_t>& value) {
  if (value.empty()) return absl::OkStatus();
  if (bld_ == nullptr) return absl::ResourceExhaustedError("OSSL_PARAM_BLD");
  BIGNUM* bn = BN_bin2bn(value.data(), static_cast<int>(value.size()), nullptr);
  if (bn == nullptr) return absl::ResourceExhaustedError("BIGNUM");
  bns_.push_back(bn);
  if (!OSSL_PARAM_BLD_push_BN(bld_, name, bn)) {
    return LibcryptoError(absl::StatusCode::kInternal, name);
  }
  return absl::OkStatus();
}

absl::StatusOr<OSSL_PARAM*> ParamBuilder::Build() {
  if (bld_ == nullptr) return absl::ResourceExhaustedError("OSSL_PARAM_BLD");
  OSSL_PARAM* params = OSSL_PARAM_BLD_to_param(bld_);
  if (params == nullptr) {
    return LibcryptoError(absl::StatusCode::kResourceExhausted,
                          "building key parameters");
  }
  return params;
}

void ClearFreeParams(OSSL_PARAM* params) {
  if (params == nullptr) return;
  for (OSSL_PARAM* p = params; p->key != nullptr; ++p) {
    if (p->data != nullptr && p->data_size > 0) {
      OPENSSL_cleanse(p->data, p->data_size);
    }
  }
  OSSL_PARAM_free(params);
}

absl::Status SetParamBytes(OSSL_PARAM params[], const char* name,
                           const std::vector<uint8_t>& value) {
  OSSL_PARAM* p = OSSL_PARAM_locate(params, name);
  if (p == nullptr || value.empty()) return absl::OkStatus();
  BIGNUM* bn = BN_bin2bn(value.data(), static_cast<int>(value.size()), nullptr);
  if (bn == nullptr) return absl::ResourceExhaustedError("BIGNUM");
  const int ok = OSSL_PARAM_set_BN(p, bn);
  BN_clear_free(bn);
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "key parameter %s: buffer too small or wrong type", name));
  }
  return absl::OkStatus();
}

absl::Status FromPkeyBn(const EVP_PKEY* pkey, const char* name,
                        std::vector<uint8_t>* out) {
  BIGNUM* bn = nullptr;
  if (!EVP_PKEY_get_bn_param(pkey, name, &bn)) {
    return LibcryptoError(absl::StatusCode::kInternal,
                          absl::StrFormat("generated key lacks %s", name));
  }
  out->assign(BN_num_bytes(bn), 0);
  if (!out->empty()) BN_bn2bin(bn, out->data());
  BN_clear_free(bn);
  return absl::OkStatus();
}

absl::Status LibcryptoError(absl::StatusCode code, std::string_view what) {
  const std::string detail = kit::DrainOpenSslErrors();
  return absl::Status(
      code,
      absl::StrFormat("%s%s%s", what, detail.empty() ? "" : ": ", detail));
}

absl::StatusOr<accelcrypt_alg> DigestByName(std::string_view name) {
  const AlgorithmInfo* info = FindAlgorithmByName(name);
  if (info == nullptr || info->family != Family::kDigest) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "digest %s is not supported by accelcrypt public-key operations",
        name));
  }
  return info->id;
}

std::string_view DigestName(accelcrypt_alg md) {
  const AlgorithmInfo* info = FindAlgorithm(md);
  return info == nullptr ? std::string_view() : info->name;
}

size_t DigestLen(accelcrypt_alg md) {
  const AlgorithmInfo* info = FindAlgorithm(md);
  return info == nullptr ? 0 : info->digest_len;
}

}  // namespace accelcrypt::provider::internal
