// SPDX-License-Identifier: Apache-2.0
// OSSL_provider_init and the provider-level dispatch functions of
// accelcrypt.so. Settings come from three places, later ones winning:
// Config::FromEnvironment() ($ACCELCRYPT_CONF and the ACCELCRYPT_*
// variables), the file named by `conf` in the provider's openssl.cnf
// section, and the section's own keys (every Config::KnownKeys() entry).
// Init never depends on hardware. The provider offers OpenSSL only the
// algorithms a backend that wins serves (hardware, a token; Router::
// Interposes): a machine without accelerators gets none of the software
// backend's, which OpenSSL's default provider serves directly, unless
// `interpose = all` is set.
#include <openssl/core.h>
#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/opensslv.h>
#include <openssl/params.h>
#include <openssl/provider.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/config.h"
#include "core/core.h"
#include "core/status.h"
#include "provider/algorithm_table.h"
#include "provider/ciphers.h"
#include "provider/digests.h"
#include "provider/errors.h"
#include "provider/pkey.h"
#include "provider/provider_ctx.h"
#include "provider/rand.h"
#include "provider/store.h"

#ifndef ACCELCRYPT_VERSION
#define ACCELCRYPT_VERSION "0.0.0"
#endif

namespace accelcrypt::provider {

OSSL_LIB_CTX* ProvCtx::libctx() const {
  if (upcalls_.get_libctx == nullptr) return nullptr;
  // The core's library context is an OSSL_LIB_CTX of the libcrypto that
  // loaded us, which is the one we link against.
  return reinterpret_cast<OSSL_LIB_CTX*>(upcalls_.get_libctx(handle_));
}

ProvCtx::~ProvCtx() {
  if (private_default_ != nullptr) OSSL_PROVIDER_unload(private_default_);
  if (private_libctx_ != nullptr) OSSL_LIB_CTX_free(private_libctx_);
}

std::unique_ptr<Digest> ProvCtx::TakeDigest(const AlgorithmInfo& info) {
  std::lock_guard<std::mutex> l(digest_pool_mu_);
  if (info.index >= digest_pool_.size() || digest_pool_[info.index].empty()) {
    return nullptr;
  }
  std::unique_ptr<Digest> d = std::move(digest_pool_[info.index].back());
  digest_pool_[info.index].pop_back();
  return d;
}

void ProvCtx::ReturnDigest(const AlgorithmInfo& info,
                           std::unique_ptr<Digest> digest) {
  if (digest == nullptr) return;
  std::lock_guard<std::mutex> l(digest_pool_mu_);
  if (digest_pool_.size() <= info.index) {
    digest_pool_.resize(AllAlgorithms().size());
  }
  std::vector<std::unique_ptr<Digest>>& kept = digest_pool_[info.index];
  // Beyond the depth, `digest` is destroyed when this returns, after the
  // lock is released.
  if (kept.size() < kDigestPoolDepth) kept.push_back(std::move(digest));
}

OSSL_LIB_CTX* ProvCtx::private_libctx() {
  std::call_once(private_libctx_once_, [this] {
    OSSL_LIB_CTX* lib = OSSL_LIB_CTX_new();
    // Only OpenSSL's default provider, and no config file: accelcrypt can
    // never be loaded (and so never be called back) in here.
    OSSL_PROVIDER* dflt =
        lib != nullptr ? OSSL_PROVIDER_load(lib, "default") : nullptr;
    if (lib != nullptr && dflt == nullptr) {
      OSSL_LIB_CTX_free(lib);
      lib = nullptr;
    }
    private_default_ = dflt;
    private_libctx_ = lib;
  });
  return private_libctx_;
}

void AppendPkeyAlgorithms(ProvCtx& ctx, std::vector<OSSL_ALGORITHM>* keymgmt,
                          std::vector<OSSL_ALGORITHM>* signature,
                          std::vector<OSSL_ALGORITHM>* asym_cipher) {
  // Names as OpenSSL 3.0's providers/implementations/include/prov/names.h
  // (PROV_NAMES_RSA, PROV_NAMES_DSA), which the identity table carries.
  // Offered only where a backend that wins (a token) serves them, or with
  // `interpose = all` (Router::Interposes); otherwise the default provider
  // serves RSA and DSA at its own speed.
  const Router& router = ctx.core().router();
  const bool rsa_sign = router.Interposes(ACCELCRYPT_ALG_RSA_SIGN).offered;
  const bool rsa_crypt = router.Interposes(ACCELCRYPT_ALG_RSA_CRYPT).offered;
  const bool dsa = router.Interposes(ACCELCRYPT_ALG_DSA_SIGN).offered;
  const AlgorithmInfo* rsa_info = FindAlgorithm(ACCELCRYPT_ALG_RSA_SIGN);
  const AlgorithmInfo* dsa_info = FindAlgorithm(ACCELCRYPT_ALG_DSA_SIGN);
  if (rsa_info != nullptr && (rsa_sign || rsa_crypt)) {
    const char* names = rsa_info->openssl_names.data();
    keymgmt->push_back(OSSL_ALGORITHM{names, kProperties, kRsaKeymgmtFunctions,
                                      "accelcrypt RSA keys"});
    if (rsa_sign) {
      // PROV_NAMES_RSA_PSS; the OID is id-RSASSA-PSS (RFC 4055 section 3.1).
      keymgmt->push_back(OSSL_ALGORITHM{
          "RSA-PSS:RSASSA-PSS:1.2.840.113549.1.1.10", kProperties,
          kRsaPssKeymgmtFunctions, "accelcrypt RSA-PSS keys"});
      signature->push_back(OSSL_ALGORITHM{names, kProperties,
                                          kRsaSignatureFunctions,
                                          "accelcrypt routed RSA signatures"});
    }
    if (rsa_crypt) {
      asym_cipher->push_back(
          OSSL_ALGORITHM{names, kProperties, kRsaAsymCipherFunctions,
                         "accelcrypt routed RSA encryption"});
    }
  }
  if (dsa_info != nullptr && dsa) {
    const char* names = dsa_info->openssl_names.data();
    keymgmt->push_back(OSSL_ALGORITHM{names, kProperties, kDsaKeymgmtFunctions,
                                      "accelcrypt DSA keys"});
    signature->push_back(OSSL_ALGORITHM{names, kProperties,
                                        kDsaSignatureFunctions,
                                        "accelcrypt routed DSA signatures"});
  }
}

namespace {

constexpr char kName[] = "accelcrypt";
constexpr char kVersion[] = ACCELCRYPT_VERSION;
constexpr char kBuildInfo[] =
    "accelcrypt " ACCELCRYPT_VERSION " built with " OPENSSL_FULL_VERSION_STR;
// The openssl.cnf key naming an accelcrypt config file.
constexpr char kConfKey[] = "conf";

CoreUpcalls ReadUpcalls(const OSSL_DISPATCH* in) {
  CoreUpcalls up;
  for (; in != nullptr && in->function_id != 0; ++in) {
    switch (in->function_id) {
      case OSSL_FUNC_CORE_GET_PARAMS:
        up.get_params = OSSL_FUNC_core_get_params(in);
        break;
      case OSSL_FUNC_CORE_GET_LIBCTX:
        up.get_libctx = OSSL_FUNC_core_get_libctx(in);
        break;
      case OSSL_FUNC_CORE_NEW_ERROR:
        up.new_error = OSSL_FUNC_core_new_error(in);
        break;
      case OSSL_FUNC_CORE_SET_ERROR_DEBUG:
        up.set_error_debug = OSSL_FUNC_core_set_error_debug(in);
        break;
      case OSSL_FUNC_CORE_VSET_ERROR:
        up.vset_error = OSSL_FUNC_core_vset_error(in);
        break;
      default:
        break;
    }
  }
  return up;
}

// BuildConfig merges the environment, the `conf` file and the openssl.cnf
// section keys.
absl::StatusOr<Config> BuildConfig(const ProvCtx& ctx) {
  ACCELCRYPT_ASSIGN_OR_RETURN(Config config, Config::FromEnvironment());
  if (ctx.upcalls().get_params == nullptr) return config;

  std::vector<std::string> keys = Config::KnownKeys();
  keys.emplace_back(kConfKey);
  std::vector<char*> values(keys.size(), nullptr);
  std::vector<OSSL_PARAM> params;
  params.reserve(keys.size() + 1);
  for (size_t i = 0; i < keys.size(); ++i) {
    params.push_back(
        OSSL_PARAM_construct_utf8_ptr(keys[i].c_str(), &values[i], 0));
  }
  params.push_back(OSSL_PARAM_construct_end());
  if (!ctx.upcalls().get_params(ctx.handle(), params.data())) {
    return absl::InternalError("cannot read the provider's config section");
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    if (values[i] == nullptr || keys[i] != kConfKey) continue;
    absl::StatusOr<Config> file = Config::LoadFile(values[i]);
    if (!file.ok()) {
      return absl::Status(
          file.status().code(),
          absl::StrCat("conf = ", values[i], ": ", file.status().message()));
    }
    config.Merge(*file);
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    if (values[i] == nullptr || keys[i] == kConfKey) continue;
    config.Set(keys[i], values[i], "openssl.cnf provider section");
  }
  return config;
}

absl::Status BuildAlgorithms(ProvCtx& ctx) {
  constexpr OSSL_ALGORITHM kEnd = {nullptr, nullptr, nullptr, nullptr};
  ACCELCRYPT_RETURN_IF_ERROR(AppendCipherAlgorithms(ctx, &ctx.ciphers()));
  ctx.ciphers().push_back(kEnd);
  ACCELCRYPT_RETURN_IF_ERROR(AppendDigestAlgorithms(ctx, &ctx.digests()));
  ctx.digests().push_back(kEnd);
  AppendRandAlgorithms(ctx, &ctx.rands());
  ctx.rands().push_back(kEnd);
  AppendPkeyAlgorithms(ctx, &ctx.keymgmts(), &ctx.signatures(),
                       &ctx.asym_ciphers());
  ctx.keymgmts().push_back(kEnd);
  ctx.signatures().push_back(kEnd);
  ctx.asym_ciphers().push_back(kEnd);
  AppendStoreAlgorithms(ctx, &ctx.stores());
  ctx.stores().push_back(kEnd);
  return absl::OkStatus();
}

void Teardown(void* provctx) {
  // Destroys the Core, which writes its stats when stats_dir is set.
  delete static_cast<ProvCtx*>(provctx);
}

const OSSL_PARAM kGettableParams[] = {
    OSSL_PARAM_DEFN(OSSL_PROV_PARAM_NAME, OSSL_PARAM_UTF8_PTR, nullptr, 0),
    OSSL_PARAM_DEFN(OSSL_PROV_PARAM_VERSION, OSSL_PARAM_UTF8_PTR, nullptr, 0),
    OSSL_PARAM_DEFN(OSSL_PROV_PARAM_BUILDINFO, OSSL_PARAM_UTF8_PTR, nullptr, 0),
    OSSL_PARAM_DEFN(OSSL_PROV_PARAM_STATUS, OSSL_PARAM_INTEGER, nullptr, 0),
    OSSL_PARAM_END};

const OSSL_PARAM* GettableParams(void*) { return kGettableParams; }

int GetParams(void* provctx, OSSL_PARAM params[]) {
  OSSL_PARAM* p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_NAME);
  if (p != nullptr && !OSSL_PARAM_set_utf8_ptr(p, kName)) return 0;
  p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_VERSION);
  if (p != nullptr && !OSSL_PARAM_set_utf8_ptr(p, kVersion)) return 0;
  p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_BUILDINFO);
  if (p != nullptr && !OSSL_PARAM_set_utf8_ptr(p, kBuildInfo)) return 0;
  p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_STATUS);
  if (p != nullptr && !OSSL_PARAM_set_int(p, provctx != nullptr ? 1 : 0)) {
    return 0;
  }
  return 1;
}

const OSSL_ALGORITHM* QueryOperation(void* provctx, int operation_id,
                                     int* no_cache) {
  auto* ctx = static_cast<ProvCtx*>(provctx);
  *no_cache = 0;
  std::vector<OSSL_ALGORITHM>* algs = nullptr;
  switch (operation_id) {
    case OSSL_OP_CIPHER:
      algs = &ctx->ciphers();
      break;
    case OSSL_OP_DIGEST:
      algs = &ctx->digests();
      break;
    case OSSL_OP_RAND:
      algs = &ctx->rands();
      break;
    case OSSL_OP_KEYMGMT:
      algs = &ctx->keymgmts();
      break;
    case OSSL_OP_SIGNATURE:
      algs = &ctx->signatures();
      break;
    case OSSL_OP_ASYM_CIPHER:
      algs = &ctx->asym_ciphers();
      break;
    case OSSL_OP_STORE:
      algs = &ctx->stores();
      break;
    default:
      return nullptr;
  }
  // Each array ends with a terminator; an array with only that is empty.
  return algs->size() > 1 ? algs->data() : nullptr;
}

const OSSL_ITEM* GetReasonStrings(void*) { return ReasonStrings(); }

using Fn = void (*)();
const OSSL_DISPATCH kProviderDispatch[] = {
    {OSSL_FUNC_PROVIDER_TEARDOWN, reinterpret_cast<Fn>(&Teardown)},
    {OSSL_FUNC_PROVIDER_GETTABLE_PARAMS, reinterpret_cast<Fn>(&GettableParams)},
    {OSSL_FUNC_PROVIDER_GET_PARAMS, reinterpret_cast<Fn>(&GetParams)},
    {OSSL_FUNC_PROVIDER_QUERY_OPERATION, reinterpret_cast<Fn>(&QueryOperation)},
    {OSSL_FUNC_PROVIDER_GET_REASON_STRINGS,
     reinterpret_cast<Fn>(&GetReasonStrings)},
    {0, nullptr}};

// Fail raises the init error and reports it (stderr, reason strings).
int Fail(ProvCtx* ctx, const absl::Status& status) {
  RaiseError(ctx, status);
  ReportInitFailure(status);
  return 0;
}

int Init(const OSSL_CORE_HANDLE* handle, const OSSL_DISPATCH* in,
         const OSSL_DISPATCH** out, void** provctx) {
  auto ctx = std::make_unique<ProvCtx>(handle, ReadUpcalls(in));
  absl::StatusOr<Config> config = BuildConfig(*ctx);
  if (!config.ok()) {
    return Fail(ctx.get(),
                ProviderError(Reason::kInitFailed, config.status().code(),
                              absl::StrCat("accelcrypt configuration: ",
                                           config.status().message())));
  }
  // The provider is initialised while OpenSSL loads its configuration or
  // under its provider locks: a token backend started here would run its
  // module's C_Initialize there, and a module that uses OpenSSL comes back
  // into it. Deferred backends start at their first operation.
  config->Set("deferred_start", "first-use", "the accelcrypt provider");
  absl::StatusOr<std::unique_ptr<Core>> core = Core::Create(*std::move(config));
  if (!core.ok()) {
    return Fail(ctx.get(),
                ProviderError(Reason::kInitFailed, core.status().code(),
                              absl::StrCat("accelcrypt core: ",
                                           core.status().message())));
  }
  ctx->set_core(*std::move(core));
  absl::Status status = BuildAlgorithms(*ctx);
  if (!status.ok()) {
    return Fail(ctx.get(), ProviderError(Reason::kInitFailed, status.code(),
                                         status.message()));
  }
  *out = kProviderDispatch;
  *provctx = ctx.release();
  return 1;
}

}  // namespace
}  // namespace accelcrypt::provider

extern "C" __attribute__((visibility("default"))) int OSSL_provider_init(
    const OSSL_CORE_HANDLE* handle, const OSSL_DISPATCH* in,
    const OSSL_DISPATCH** out, void** provctx) {
  using accelcrypt::provider::Guard;
  // Errors before the context exists go through ERR_raise_data (ctx null);
  // Init raises through the upcalls itself once it has them.
  return Guard(nullptr, [&] {
    return accelcrypt::provider::Init(handle, in, out, provctx);
  });
}
