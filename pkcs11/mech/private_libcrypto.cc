// SPDX-License-Identifier: Apache-2.0
// The module's private libcrypto: CTR-DRBG (NIST SP 800-90A) and RSA/DSA
// key generation in an OSSL_LIB_CTX of its own.
#include "pkcs11/mech/internal/private_libcrypto.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/provider.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/router.h"
#include "core/status.h"
#include "pkcs11/common/ck_error.h"

namespace accelcrypt::p11::internal {
namespace {

constexpr char kPersonalization[] = "accelcrypt PKCS#11 module CTR-DRBG v1";
constexpr size_t kReseedAdinLen = 48;
constexpr uint64_t kReseedBytes = uint64_t{1} << 20;
constexpr uint64_t kReseedRequests = 4096;
constexpr size_t kMaxSeedAdin = 4096;

// LibcryptoFailure returns CKR_FUNCTION_FAILED naming `what`, with the
// drained error-queue text (never key bytes); the queue is cleared.
absl::Status LibcryptoFailure(std::string_view what) {
  std::string detail;
  unsigned long e;
  while ((e = ERR_get_error()) != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!detail.empty()) detail += "; ";
    detail += buf;
  }
  return CkError(CKR_FUNCTION_FAILED,
                 absl::StrFormat("libcrypto: %s%s%s", AsAbsl(what),
                                 detail.empty() ? "" : ": ", detail));
}

struct BnFree {
  void operator()(BIGNUM* bn) const { BN_clear_free(bn); }
};
using BnPtr = std::unique_ptr<BIGNUM, BnFree>;
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;
struct PkeyCtxFree {
  void operator()(EVP_PKEY_CTX* c) const { EVP_PKEY_CTX_free(c); }
};
using PkeyCtxPtr = std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree>;

BnPtr ToBn(absl::Span<const uint8_t> v) {
  return BnPtr(BN_bin2bn(v.data(), static_cast<int>(v.size()), nullptr));
}

// SetBnParam copies a BIGNUM parameter of `pkey` into `out` (wiped
// buffers: private parts pass through here).
absl::Status SetBnParam(const EVP_PKEY* pkey, const char* name,
                        CK_ATTRIBUTE_TYPE type, AttributeMap* out) {
  BIGNUM* raw = nullptr;
  if (EVP_PKEY_get_bn_param(pkey, name, &raw) != 1 || raw == nullptr) {
    return LibcryptoFailure(absl::StrFormat("key part %s", name));
  }
  BnPtr bn(raw);
  SecretBytes bytes(static_cast<size_t>(BN_num_bytes(bn.get())));
  BN_bn2bin(bn.get(), bytes.data());
  out->Set(type, bytes.span());
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<PrivateLibcrypto>> PrivateLibcrypto::Create(
    Router* router) {
  std::unique_ptr<PrivateLibcrypto> lib(new PrivateLibcrypto());
  lib->router_ = router;
  lib->libctx_ = OSSL_LIB_CTX_new();
  if (lib->libctx_ == nullptr) return LibcryptoFailure("OSSL_LIB_CTX_new");
  lib->provider_ = OSSL_PROVIDER_load(lib->libctx_, "default");
  if (lib->provider_ == nullptr) {
    return LibcryptoFailure("loading the default provider");
  }
  EVP_RAND* rand = EVP_RAND_fetch(lib->libctx_, "CTR-DRBG", nullptr);
  if (rand == nullptr) return LibcryptoFailure("fetching CTR-DRBG");
  absl::MutexLock lock(&lib->mu_);
  lib->drbg_ = EVP_RAND_CTX_new(rand, nullptr);
  EVP_RAND_free(rand);
  if (lib->drbg_ == nullptr) return LibcryptoFailure("EVP_RAND_CTX_new");

  char cipher[] = "AES-256-CTR";
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_DRBG_PARAM_CIPHER, cipher, 0),
      OSSL_PARAM_construct_end()};
  std::vector<uint8_t> pers(kPersonalization,
                            kPersonalization + sizeof(kPersonalization));
  struct timespec now {};
  clock_gettime(CLOCK_MONOTONIC, &now);
  const pid_t pid = getpid();
  const void* self = lib.get();
  auto append = [&pers](const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    pers.insert(pers.end(), b, b + n);
  };
  append(&pid, sizeof(pid));
  append(&self, sizeof(self));
  append(&now, sizeof(now));
  if (EVP_RAND_instantiate(lib->drbg_, 256, 0, pers.data(), pers.size(),
                           params) != 1) {
    return LibcryptoFailure("instantiating CTR-DRBG");
  }
  size_t max_request = 0;
  OSSL_PARAM get[] = {
      OSSL_PARAM_construct_size_t(OSSL_RAND_PARAM_MAX_REQUEST, &max_request),
      OSSL_PARAM_construct_end()};
  if (EVP_RAND_CTX_get_params(lib->drbg_, get) == 1 && max_request > 0) {
    lib->max_request_ = max_request;
  }
  lib->pid_ = pid;
  ACCELCRYPT_RETURN_IF_ERROR(lib->ReseedLocked({}));
  return lib;
}

PrivateLibcrypto::~PrivateLibcrypto() {
  {
    absl::MutexLock lock(&mu_);
    EVP_RAND_CTX_free(drbg_);
    drbg_ = nullptr;
  }
  if (provider_ != nullptr) OSSL_PROVIDER_unload(provider_);
  OSSL_LIB_CTX_free(libctx_);
}

absl::Status PrivateLibcrypto::ReseedLocked(absl::Span<const uint8_t> adin) {
  // Additional input: the router's entropy source, then the caller's.
  std::vector<uint8_t> input(kReseedAdinLen);
  absl::StatusOr<size_t> bits = router_->Entropy(absl::MakeSpan(input));
  if (!bits.ok()) input.clear();
  input.insert(input.end(), adin.begin(), adin.end());
  const int rc =
      EVP_RAND_reseed(drbg_, 0, nullptr, 0,
                      input.empty() ? nullptr : input.data(), input.size());
  OPENSSL_cleanse(input.data(), input.size());
  if (rc != 1) return LibcryptoFailure("reseeding CTR-DRBG");
  bytes_since_reseed_ = 0;
  requests_since_reseed_ = 0;
  ++reseeds_;
  return absl::OkStatus();
}

absl::Status PrivateLibcrypto::Random(absl::Span<uint8_t> out) {
  absl::MutexLock lock(&mu_);
  const pid_t pid = getpid();
  if (pid != pid_ || bytes_since_reseed_ >= kReseedBytes ||
      requests_since_reseed_ >= kReseedRequests) {
    pid_ = pid;
    ACCELCRYPT_RETURN_IF_ERROR(ReseedLocked({}));
  }
  ++requests_since_reseed_;
  size_t done = 0;
  while (done < out.size()) {
    const size_t n = std::min(max_request_, out.size() - done);
    if (EVP_RAND_generate(drbg_, out.data() + done, n, 256, 0, nullptr, 0) !=
        1) {
      OPENSSL_cleanse(out.data(), out.size());
      return LibcryptoFailure("CTR-DRBG generate");
    }
    done += n;
    bytes_since_reseed_ += n;
  }
  return absl::OkStatus();
}

absl::Status PrivateLibcrypto::Seed(absl::Span<const uint8_t> seed) {
  uint8_t digest[64];
  absl::Span<const uint8_t> adin = seed;
  if (seed.size() > kMaxSeedAdin) {
    ACCELCRYPT_RETURN_IF_ERROR(
        router_->DigestOneShot(ACCELCRYPT_ALG_SHA512, seed, digest));
    adin = digest;
  }
  absl::MutexLock lock(&mu_);
  absl::Status st = ReseedLocked(adin);
  OPENSSL_cleanse(digest, sizeof(digest));
  return st;
}

uint64_t PrivateLibcrypto::reseed_count() const {
  absl::MutexLock lock(&mu_);
  return reseeds_;
}

absl::StatusOr<std::pair<AttributeMap, AttributeMap>>
PrivateLibcrypto::GenerateRsa(size_t bits, absl::Span<const uint8_t> e) {
  PkeyCtxPtr ctx(EVP_PKEY_CTX_new_from_name(libctx_, "RSA", nullptr));
  if (ctx == nullptr || EVP_PKEY_keygen_init(ctx.get()) != 1 ||
      EVP_PKEY_CTX_set_rsa_keygen_bits(ctx.get(), static_cast<int>(bits)) !=
          1) {
    return LibcryptoFailure("RSA key generation setup");
  }
  BnPtr exponent = ToBn(e);
  if (exponent == nullptr ||
      EVP_PKEY_CTX_set1_rsa_keygen_pubexp(ctx.get(), exponent.get()) != 1) {
    ERR_clear_error();
    return CkError(CKR_ATTRIBUTE_VALUE_INVALID, "RSA public exponent");
  }
  EVP_PKEY* raw = nullptr;
  if (EVP_PKEY_generate(ctx.get(), &raw) != 1 || raw == nullptr) {
    ERR_clear_error();
    return CkError(CKR_ATTRIBUTE_VALUE_INVALID,
                   "libcrypto refused the RSA key parameters");
  }
  PkeyPtr pkey(raw);
  AttributeMap pub, priv;
  pub.SetUlong(CKA_CLASS, CKO_PUBLIC_KEY);
  priv.SetUlong(CKA_CLASS, CKO_PRIVATE_KEY);
  for (AttributeMap* m : {&pub, &priv}) {
    m->SetUlong(CKA_KEY_TYPE, CKK_RSA);
    ACCELCRYPT_RETURN_IF_ERROR(
        SetBnParam(pkey.get(), OSSL_PKEY_PARAM_RSA_N, CKA_MODULUS, m));
    ACCELCRYPT_RETURN_IF_ERROR(
        SetBnParam(pkey.get(), OSSL_PKEY_PARAM_RSA_E, CKA_PUBLIC_EXPONENT, m));
  }
  pub.SetUlong(CKA_MODULUS_BITS, bits);
  const struct {
    const char* name;
    CK_ATTRIBUTE_TYPE type;
  } kPrivate[] = {
      {OSSL_PKEY_PARAM_RSA_D, CKA_PRIVATE_EXPONENT},
      {OSSL_PKEY_PARAM_RSA_FACTOR1, CKA_PRIME_1},
      {OSSL_PKEY_PARAM_RSA_FACTOR2, CKA_PRIME_2},
      {OSSL_PKEY_PARAM_RSA_EXPONENT1, CKA_EXPONENT_1},
      {OSSL_PKEY_PARAM_RSA_EXPONENT2, CKA_EXPONENT_2},
      {OSSL_PKEY_PARAM_RSA_COEFFICIENT1, CKA_COEFFICIENT},
  };
  for (const auto& part : kPrivate) {
    ACCELCRYPT_RETURN_IF_ERROR(
        SetBnParam(pkey.get(), part.name, part.type, &priv));
  }
  return std::make_pair(std::move(pub), std::move(priv));
}

absl::StatusOr<std::pair<AttributeMap, AttributeMap>>
PrivateLibcrypto::GenerateDsa(absl::Span<const uint8_t> p,
                              absl::Span<const uint8_t> q,
                              absl::Span<const uint8_t> g) {
  BnPtr bp = ToBn(p), bq = ToBn(q), bg = ToBn(g);
  {
    // FIPS 186-4 A.2.2 (partial validation of g): 1 < g < p and
    // g^q = 1 mod p, so keys land in the order-q subgroup; p odd and q
    // dividing p - 1. (Primality of p and q is the caller's domain.)
    BN_CTX* ctx = BN_CTX_new_ex(libctx_);
    BnPtr check(BN_new()), p_minus_1(BN_new());
    bool ok = ctx != nullptr && bp != nullptr && bq != nullptr &&
              bg != nullptr && check != nullptr && p_minus_1 != nullptr &&
              BN_is_odd(bp.get()) && !BN_is_zero(bq.get()) &&
              BN_cmp(bg.get(), BN_value_one()) > 0 &&
              BN_cmp(bg.get(), bp.get()) < 0 &&
              BN_sub(p_minus_1.get(), bp.get(), BN_value_one()) == 1 &&
              BN_mod(check.get(), p_minus_1.get(), bq.get(), ctx) == 1 &&
              BN_is_zero(check.get()) &&
              BN_mod_exp(check.get(), bg.get(), bq.get(), bp.get(), ctx) == 1 &&
              BN_is_one(check.get());
    BN_CTX_free(ctx);
    if (!ok) {
      ERR_clear_error();
      return CkError(CKR_ATTRIBUTE_VALUE_INVALID,
                     "DSA domain parameters are inconsistent");
    }
  }
  OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
  OSSL_PARAM* params = nullptr;
  if (bp == nullptr || bq == nullptr || bg == nullptr || bld == nullptr ||
      OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_FFC_P, bp.get()) != 1 ||
      OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_FFC_Q, bq.get()) != 1 ||
      OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_FFC_G, bg.get()) != 1 ||
      (params = OSSL_PARAM_BLD_to_param(bld)) == nullptr) {
    OSSL_PARAM_BLD_free(bld);
    return LibcryptoFailure("DSA domain parameters");
  }
  OSSL_PARAM_BLD_free(bld);
  PkeyCtxPtr from(EVP_PKEY_CTX_new_from_name(libctx_, "DSA", nullptr));
  EVP_PKEY* domain_raw = nullptr;
  const bool built = from != nullptr &&
                     EVP_PKEY_fromdata_init(from.get()) == 1 &&
                     EVP_PKEY_fromdata(from.get(), &domain_raw,
                                       EVP_PKEY_KEY_PARAMETERS, params) == 1;
  OSSL_PARAM_free(params);
  if (!built || domain_raw == nullptr) {
    ERR_clear_error();
    return CkError(CKR_ATTRIBUTE_VALUE_INVALID, "DSA domain parameters");
  }
  PkeyPtr domain(domain_raw);
  PkeyCtxPtr ctx(EVP_PKEY_CTX_new_from_pkey(libctx_, domain.get(), nullptr));
  EVP_PKEY* raw = nullptr;
  if (ctx == nullptr || EVP_PKEY_keygen_init(ctx.get()) != 1 ||
      EVP_PKEY_generate(ctx.get(), &raw) != 1 || raw == nullptr) {
    ERR_clear_error();
    return CkError(CKR_ATTRIBUTE_VALUE_INVALID,
                   "libcrypto refused the DSA domain parameters");
  }
  PkeyPtr pkey(raw);
  AttributeMap pub, priv;
  pub.SetUlong(CKA_CLASS, CKO_PUBLIC_KEY);
  priv.SetUlong(CKA_CLASS, CKO_PRIVATE_KEY);
  for (AttributeMap* m : {&pub, &priv}) {
    m->SetUlong(CKA_KEY_TYPE, CKK_DSA);
    m->Set(CKA_PRIME, p);
    m->Set(CKA_SUBPRIME, q);
    m->Set(CKA_BASE, g);
  }
  ACCELCRYPT_RETURN_IF_ERROR(
      SetBnParam(pkey.get(), OSSL_PKEY_PARAM_PUB_KEY, CKA_VALUE, &pub));
  ACCELCRYPT_RETURN_IF_ERROR(
      SetBnParam(pkey.get(), OSSL_PKEY_PARAM_PRIV_KEY, CKA_VALUE, &priv));
  return std::make_pair(std::move(pub), std::move(priv));
}

}  // namespace accelcrypt::p11::internal
