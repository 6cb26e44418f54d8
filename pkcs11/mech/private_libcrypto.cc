// SPDX-License-Identifier: Apache-2.0
// The module's private libcrypto: CTR-DRBG (NIST SP 800-90A) and RSA/DSA
// key generation in an OSSL_LIB_CTX of its own.
//
// Key generation calls the default provider's key management functions
// directly (OSSL_PROVIDER_query_operation(OSSL_OP_KEYMGMT)), never
// EVP_PKEY_keygen: EVP consults the ENGINE table even for a private library
// context, so an application that loaded an ENGINE as default for all
// algorithms (libp11's pkcs11 engine with default_algorithms = ALL) would
// otherwise take our key generation over. (The backend's equivalent,
// backends/software/provider_direct.h, is not used here: front ends know no
// backend. This is the key-generation subset only.)
#include "pkcs11/mech/internal/private_libcrypto.h"

#include <openssl/bn.h>
#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/params.h>
#include <openssl/provider.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "accelcrypt/kit/openssl_errors.h"
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
  const std::string detail = kit::DrainOpenSslErrors();
  return CkError(CKR_FUNCTION_FAILED,
                 absl::StrFormat("libcrypto: %s%s%s", AsAbsl(what),
                                 detail.empty() ? "" : ": ", detail));
}

struct BnFree {
  void operator()(BIGNUM* bn) const { BN_clear_free(bn); }
};
using BnPtr = std::unique_ptr<BIGNUM, BnFree>;
// Keymgmt is one key type's key management functions from the default
// provider of a library context; the algorithm table is handed back on
// destruction.
class Keymgmt {
 public:
  Keymgmt(OSSL_PROVIDER* provider, const char* name) : provider_(provider) {
    int no_store = 0;
    algs_ = OSSL_PROVIDER_query_operation(provider, OSSL_OP_KEYMGMT, &no_store);
    provctx_ = OSSL_PROVIDER_get0_provider_ctx(provider);
    const OSSL_DISPATCH* table = nullptr;
    for (const OSSL_ALGORITHM* a = algs_; a != nullptr && a->algorithm_names;
         ++a) {
      for (absl::string_view alias : absl::StrSplit(a->algorithm_names, ':')) {
        if (absl::EqualsIgnoreCase(alias, name)) table = a->implementation;
      }
      if (table != nullptr) break;
    }
    for (const OSSL_DISPATCH* d = table; d != nullptr && d->function_id != 0;
         ++d) {
      switch (d->function_id) {
        case OSSL_FUNC_KEYMGMT_NEW:
          new_ = reinterpret_cast<OSSL_FUNC_keymgmt_new_fn*>(d->function);
          break;
        case OSSL_FUNC_KEYMGMT_FREE:
          free_ = reinterpret_cast<OSSL_FUNC_keymgmt_free_fn*>(d->function);
          break;
        case OSSL_FUNC_KEYMGMT_IMPORT:
          import_ = reinterpret_cast<OSSL_FUNC_keymgmt_import_fn*>(d->function);
          break;
        case OSSL_FUNC_KEYMGMT_HAS:
          has_ = reinterpret_cast<OSSL_FUNC_keymgmt_has_fn*>(d->function);
          break;
        case OSSL_FUNC_KEYMGMT_EXPORT:
          export_ = reinterpret_cast<OSSL_FUNC_keymgmt_export_fn*>(d->function);
          break;
        case OSSL_FUNC_KEYMGMT_GEN_INIT:
          gen_init_ =
              reinterpret_cast<OSSL_FUNC_keymgmt_gen_init_fn*>(d->function);
          break;
        case OSSL_FUNC_KEYMGMT_GEN_SET_PARAMS:
          gen_set_params_ =
              reinterpret_cast<OSSL_FUNC_keymgmt_gen_set_params_fn*>(
                  d->function);
          break;
        case OSSL_FUNC_KEYMGMT_GEN_SET_TEMPLATE:
          gen_set_template_ =
              reinterpret_cast<OSSL_FUNC_keymgmt_gen_set_template_fn*>(
                  d->function);
          break;
        case OSSL_FUNC_KEYMGMT_GEN:
          gen_ = reinterpret_cast<OSSL_FUNC_keymgmt_gen_fn*>(d->function);
          break;
        case OSSL_FUNC_KEYMGMT_GEN_CLEANUP:
          gen_cleanup_ =
              reinterpret_cast<OSSL_FUNC_keymgmt_gen_cleanup_fn*>(d->function);
          break;
        default:
          break;
      }
    }
  }
  ~Keymgmt() {
    if (algs_ != nullptr) {
      OSSL_PROVIDER_unquery_operation(provider_, OSSL_OP_KEYMGMT, algs_);
    }
  }
  Keymgmt(const Keymgmt&) = delete;
  Keymgmt& operator=(const Keymgmt&) = delete;

  // ok says whether everything both generators need is there (RSA has no
  // gen_set_template; DSA checks it itself).
  bool ok() const {
    return new_ != nullptr && free_ != nullptr && import_ != nullptr &&
           has_ != nullptr && export_ != nullptr && gen_init_ != nullptr &&
           gen_set_params_ != nullptr && gen_ != nullptr &&
           gen_cleanup_ != nullptr;
  }

  OSSL_PROVIDER* provider_;
  const OSSL_ALGORITHM* algs_ = nullptr;
  void* provctx_ = nullptr;
  OSSL_FUNC_keymgmt_new_fn* new_ = nullptr;
  OSSL_FUNC_keymgmt_free_fn* free_ = nullptr;
  OSSL_FUNC_keymgmt_import_fn* import_ = nullptr;
  OSSL_FUNC_keymgmt_has_fn* has_ = nullptr;
  OSSL_FUNC_keymgmt_export_fn* export_ = nullptr;
  OSSL_FUNC_keymgmt_gen_init_fn* gen_init_ = nullptr;
  OSSL_FUNC_keymgmt_gen_set_params_fn* gen_set_params_ = nullptr;
  OSSL_FUNC_keymgmt_gen_set_template_fn* gen_set_template_ = nullptr;
  OSSL_FUNC_keymgmt_gen_fn* gen_ = nullptr;
  OSSL_FUNC_keymgmt_gen_cleanup_fn* gen_cleanup_ = nullptr;
};

// KeyData owns a key object of `km` (the provider wipes it on free).
struct KeyData {
  const Keymgmt& km;
  void* key = nullptr;
  ~KeyData() {
    if (key != nullptr) km.free_(key);
  }
};

// GenCtx owns a key generation context of `km`.
struct GenCtx {
  const Keymgmt& km;
  void* ctx = nullptr;
  ~GenCtx() {
    if (ctx != nullptr) km.gen_cleanup_(ctx);
  }
};

// Generation progress callback: never cancels.
int KeepGoing(const OSSL_PARAM* /*params*/, void* /*arg*/) { return 1; }

// A key part to copy out of an export: parameter name -> attribute.
struct Part {
  const char* name;
  CK_ATTRIBUTE_TYPE type;
};

struct ExportSink {
  absl::Span<const Part> parts;
  AttributeMap* out;
  const char* missing = nullptr;  // first part not found, if any
};

// CopyParts is the export callback: each wanted BIGNUM parameter goes into
// the sink's map through a wiped buffer (private parts pass through here).
int CopyParts(const OSSL_PARAM params[], void* arg) {
  auto* sink = static_cast<ExportSink*>(arg);
  for (const Part& part : sink->parts) {
    const OSSL_PARAM* p = OSSL_PARAM_locate_const(params, part.name);
    BIGNUM* raw = nullptr;
    if (p == nullptr || OSSL_PARAM_get_BN(p, &raw) != 1 || raw == nullptr) {
      sink->missing = part.name;
      return 0;
    }
    BnPtr bn(raw);
    SecretBytes bytes(static_cast<size_t>(BN_num_bytes(bn.get())));
    BN_bn2bin(bn.get(), bytes.data());
    sink->out->Set(part.type, bytes.span());
  }
  return 1;
}

// ExportParts copies `parts` of the key pair `key` into `out`.
absl::Status ExportParts(const Keymgmt& km, void* key,
                         absl::Span<const Part> parts, AttributeMap* out) {
  ExportSink sink{parts, out};
  if (km.export_(key, OSSL_KEYMGMT_SELECT_KEYPAIR, &CopyParts, &sink) != 1) {
    return LibcryptoFailure(absl::StrFormat(
        "key part %s", sink.missing != nullptr ? sink.missing : "export"));
  }
  return absl::OkStatus();
}

BnPtr ToBn(absl::Span<const uint8_t> v) {
  return BnPtr(BN_bin2bn(v.data(), static_cast<int>(v.size()), nullptr));
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
  Keymgmt km(provider_, "RSA");
  if (!km.ok()) return LibcryptoFailure("RSA key management");
  GenCtx gen{km,
             km.gen_init_(km.provctx_, OSSL_KEYMGMT_SELECT_KEYPAIR, nullptr)};
  size_t bits_param = bits;
  OSSL_PARAM bits_params[] = {
      OSSL_PARAM_construct_size_t(OSSL_PKEY_PARAM_RSA_BITS, &bits_param),
      OSSL_PARAM_construct_end()};
  if (gen.ctx == nullptr || km.gen_set_params_(gen.ctx, bits_params) != 1) {
    return LibcryptoFailure("RSA key generation setup");
  }
  BnPtr exponent = ToBn(e);
  OSSL_PARAM_BLD* bld = exponent != nullptr ? OSSL_PARAM_BLD_new() : nullptr;
  OSSL_PARAM* e_params = nullptr;
  if (bld != nullptr &&
      OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, exponent.get()) == 1) {
    e_params = OSSL_PARAM_BLD_to_param(bld);
  }
  OSSL_PARAM_BLD_free(bld);
  const bool e_ok =
      e_params != nullptr && km.gen_set_params_(gen.ctx, e_params) == 1;
  OSSL_PARAM_free(e_params);
  if (!e_ok) {
    ERR_clear_error();
    return CkError(CKR_ATTRIBUTE_VALUE_INVALID, "RSA public exponent");
  }
  KeyData key{km, km.gen_(gen.ctx, &KeepGoing, nullptr)};
  if (key.key == nullptr) {
    ERR_clear_error();
    return CkError(CKR_ATTRIBUTE_VALUE_INVALID,
                   "libcrypto refused the RSA key parameters");
  }
  AttributeMap pub, priv;
  pub.SetUlong(CKA_CLASS, CKO_PUBLIC_KEY);
  priv.SetUlong(CKA_CLASS, CKO_PRIVATE_KEY);
  constexpr Part kPublic[] = {
      {OSSL_PKEY_PARAM_RSA_N, CKA_MODULUS},
      {OSSL_PKEY_PARAM_RSA_E, CKA_PUBLIC_EXPONENT},
  };
  for (AttributeMap* m : {&pub, &priv}) {
    m->SetUlong(CKA_KEY_TYPE, CKK_RSA);
    ACCELCRYPT_RETURN_IF_ERROR(ExportParts(km, key.key, kPublic, m));
  }
  pub.SetUlong(CKA_MODULUS_BITS, bits);
  constexpr Part kPrivate[] = {
      {OSSL_PKEY_PARAM_RSA_D, CKA_PRIVATE_EXPONENT},
      {OSSL_PKEY_PARAM_RSA_FACTOR1, CKA_PRIME_1},
      {OSSL_PKEY_PARAM_RSA_FACTOR2, CKA_PRIME_2},
      {OSSL_PKEY_PARAM_RSA_EXPONENT1, CKA_EXPONENT_1},
      {OSSL_PKEY_PARAM_RSA_EXPONENT2, CKA_EXPONENT_2},
      {OSSL_PKEY_PARAM_RSA_COEFFICIENT1, CKA_COEFFICIENT},
  };
  ACCELCRYPT_RETURN_IF_ERROR(ExportParts(km, key.key, kPrivate, &priv));
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
  Keymgmt km(provider_, "DSA");
  if (!km.ok() || km.gen_set_template_ == nullptr) {
    OSSL_PARAM_free(params);
    return LibcryptoFailure("DSA key management");
  }
  // The domain goes in as a key object holding only the parameters, used as
  // the generation template (what EVP_PKEY_keygen does with a domain key).
  KeyData domain{km, km.new_(km.provctx_)};
  const bool built =
      domain.key != nullptr &&
      km.import_(domain.key, OSSL_KEYMGMT_SELECT_ALL_PARAMETERS, params) == 1 &&
      km.has_(domain.key, OSSL_KEYMGMT_SELECT_DOMAIN_PARAMETERS) == 1;
  OSSL_PARAM_free(params);
  if (!built) {
    ERR_clear_error();
    return CkError(CKR_ATTRIBUTE_VALUE_INVALID, "DSA domain parameters");
  }
  GenCtx gen{km,
             km.gen_init_(km.provctx_, OSSL_KEYMGMT_SELECT_KEYPAIR, nullptr)};
  KeyData key{km, nullptr};
  if (gen.ctx != nullptr && km.gen_set_template_(gen.ctx, domain.key) == 1) {
    key.key = km.gen_(gen.ctx, &KeepGoing, nullptr);
  }
  if (key.key == nullptr) {
    ERR_clear_error();
    return CkError(CKR_ATTRIBUTE_VALUE_INVALID,
                   "libcrypto refused the DSA domain parameters");
  }
  AttributeMap pub, priv;
  pub.SetUlong(CKA_CLASS, CKO_PUBLIC_KEY);
  priv.SetUlong(CKA_CLASS, CKO_PRIVATE_KEY);
  for (AttributeMap* m : {&pub, &priv}) {
    m->SetUlong(CKA_KEY_TYPE, CKK_DSA);
    m->Set(CKA_PRIME, p);
    m->Set(CKA_SUBPRIME, q);
    m->Set(CKA_BASE, g);
  }
  constexpr Part kPublic[] = {{OSSL_PKEY_PARAM_PUB_KEY, CKA_VALUE}};
  constexpr Part kPrivate[] = {{OSSL_PKEY_PARAM_PRIV_KEY, CKA_VALUE}};
  ACCELCRYPT_RETURN_IF_ERROR(ExportParts(km, key.key, kPublic, &pub));
  ACCELCRYPT_RETURN_IF_ERROR(ExportParts(km, key.key, kPrivate, &priv));
  return std::make_pair(std::move(pub), std::move(priv));
}

}  // namespace accelcrypt::p11::internal
