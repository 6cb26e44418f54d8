// SPDX-License-Identifier: Apache-2.0
// A seed source over the core's entropy backends. OpenSSL 3.0 builds its DRBG
// chain in crypto/rand/rand_lib.c: it fetches "SEED-SRC" (with the global
// default properties) as the root, and the CTR-DRBG above it fetches
// AES-256-CTR the same way. Publishing our source under that name, only
// when a backend really has a noise source, makes the accelerator the root
// of every DRBG without replacing OpenSSL's DRBG code; its fork detection
// (a reseed when the pid changes) keeps working unchanged. Without a noise
// source nothing is published and OpenSSL's own SEED-SRC is used.
#include "provider/rand.h"

#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <algorithm>
#include <atomic>
#include <new>

#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "core/status.h"
#include "provider/algorithm_table.h"
#include "provider/errors.h"

namespace accelcrypt::provider {
namespace {

// Strength we report to the DRBG above us: enough for CTR-DRBG with
// AES-256 (which refuses a weaker parent).
constexpr unsigned int kStrength = 256;
// Largest generate request, as OpenSSL's SEED-SRC reports it.
constexpr size_t kMaxRequest = 128;
// How often get_seed grows its request when the backend vouches for less
// than 8 bits per byte.
constexpr int kMaxSeedAttempts = 4;

struct SeedCtx {
  explicit SeedCtx(ProvCtx* p) : prov(p) {}
  ProvCtx* prov;
  std::atomic<int> state{EVP_RAND_STATE_UNINITIALISED};
};

absl::Status NotReady() {
  return ProviderError(Reason::kOutOfOrder,
                       absl::StatusCode::kFailedPrecondition,
                       "accelcrypt seed source not instantiated");
}

// FillEntropy fills `out` from the router and returns the min-entropy
// (bits) the serving backend vouches for.
absl::StatusOr<size_t> FillEntropy(ProvCtx& prov, absl::Span<uint8_t> out) {
  absl::StatusOr<size_t> bits = prov.core().router().Entropy(out);
  if (!bits.ok()) {
    return ProviderError(Reason::kEntropyUnavailable, bits.status().code(),
                         bits.status().message());
  }
  return bits;
}

void* SeedNewCtx(void* provctx, void* parent, const OSSL_DISPATCH*) {
  auto* prov = static_cast<ProvCtx*>(provctx);
  if (parent != nullptr) {
    RaiseError(prov, ProviderError(Reason::kInvalidArgument,
                                   absl::StatusCode::kInvalidArgument,
                                   "a seed source takes no parent"));
    return nullptr;
  }
  return new (std::nothrow) SeedCtx(prov);
}

void SeedFreeCtx(void* vctx) { delete static_cast<SeedCtx*>(vctx); }

int SeedInstantiate(void* vctx, unsigned int, int, const unsigned char*, size_t,
                    const OSSL_PARAM[]) {
  static_cast<SeedCtx*>(vctx)->state = EVP_RAND_STATE_READY;
  return 1;
}

int SeedUninstantiate(void* vctx) {
  static_cast<SeedCtx*>(vctx)->state = EVP_RAND_STATE_UNINITIALISED;
  return 1;
}

int SeedGenerate(void* vctx, unsigned char* out, size_t outlen,
                 unsigned int strength, int, const unsigned char*, size_t) {
  auto* ctx = static_cast<SeedCtx*>(vctx);
  return Guard(ctx->prov, [&] {
    if (ctx->state != EVP_RAND_STATE_READY) {
      return RaiseError(ctx->prov, NotReady());
    }
    absl::StatusOr<size_t> bits =
        FillEntropy(*ctx->prov, absl::MakeSpan(out, outlen));
    if (!bits.ok()) {
      OPENSSL_cleanse(out, outlen);
      return RaiseError(ctx->prov, bits.status());
    }
    if (*bits < std::min<size_t>(strength, 8 * outlen)) {
      OPENSSL_cleanse(out, outlen);
      return RaiseError(
          ctx->prov,
          ProviderError(Reason::kEntropyUnavailable,
                        absl::StatusCode::kUnavailable,
                        absl::StrFormat("entropy source vouched for %u bits, "
                                        "%u requested",
                                        *bits, strength)));
    }
    return 1;
  });
}

int SeedReseed(void* vctx, int, const unsigned char*, size_t,
               const unsigned char*, size_t) {
  auto* ctx = static_cast<SeedCtx*>(vctx);
  if (ctx->state != EVP_RAND_STATE_READY) {
    return RaiseError(ctx->prov, NotReady());
  }
  return 1;
}

// SeedGetSeed returns between min_len and max_len bytes carrying at least
// `entropy` bits by the backend's own estimate, in secure memory the caller
// releases with SeedClearSeed.
size_t SeedGetSeed(void* vctx, unsigned char** pout, int entropy,
                   size_t min_len, size_t max_len, int, const unsigned char*,
                   size_t) {
  auto* ctx = static_cast<SeedCtx*>(vctx);
  size_t result = 0;
  Guard(ctx->prov, [&] {
    if (ctx->state != EVP_RAND_STATE_READY) {
      return RaiseError(ctx->prov, NotReady());
    }
    const size_t wanted_bits = entropy > 0 ? static_cast<size_t>(entropy) : 0;
    size_t len = std::max((wanted_bits + 7) / 8, min_len);
    absl::Status last = absl::OkStatus();
    for (int attempt = 0; attempt < kMaxSeedAttempts; ++attempt) {
      if (len == 0 || len > max_len) break;
      auto* buf = static_cast<unsigned char*>(OPENSSL_secure_malloc(len));
      if (buf == nullptr) {
        return RaiseError(ctx->prov,
                          absl::ResourceExhaustedError("out of secure memory"));
      }
      absl::StatusOr<size_t> bits =
          FillEntropy(*ctx->prov, absl::MakeSpan(buf, len));
      if (bits.ok() && *bits >= wanted_bits) {
        *pout = buf;
        result = len;
        return 1;
      }
      OPENSSL_secure_clear_free(buf, len);
      if (!bits.ok()) return RaiseError(ctx->prov, bits.status());
      if (*bits == 0) break;
      // Ask for proportionally more bytes from a lower-quality source.
      len = (len * wanted_bits + *bits - 1) / *bits;
    }
    return RaiseError(
        ctx->prov,
        ProviderError(Reason::kEntropyUnavailable,
                      absl::StatusCode::kUnavailable,
                      absl::StrFormat("cannot gather %u bits of entropy in "
                                      "%u..%u bytes",
                                      wanted_bits, min_len, max_len)));
  });
  return result;
}

void SeedClearSeed(void*, unsigned char* out, size_t outlen) {
  OPENSSL_secure_clear_free(out, outlen);
}

int SeedEnableLocking(void*) { return 1; }
// The router's entropy path is thread-safe: nothing to lock.
int SeedLock(void*) { return 1; }
void SeedUnlock(void*) {}
int SeedVerifyZeroization(void*) { return 1; }

int SeedGetCtxParams(void* vctx, OSSL_PARAM params[]) {
  auto* ctx = static_cast<SeedCtx*>(vctx);
  OSSL_PARAM* p = OSSL_PARAM_locate(params, OSSL_RAND_PARAM_STATE);
  if (p != nullptr && !OSSL_PARAM_set_int(p, ctx->state)) return 0;
  p = OSSL_PARAM_locate(params, OSSL_RAND_PARAM_STRENGTH);
  if (p != nullptr && !OSSL_PARAM_set_uint(p, kStrength)) return 0;
  p = OSSL_PARAM_locate(params, OSSL_RAND_PARAM_MAX_REQUEST);
  if (p != nullptr && !OSSL_PARAM_set_size_t(p, kMaxRequest)) return 0;
  return 1;
}

const OSSL_PARAM kGettableCtxParams[] = {
    OSSL_PARAM_int(OSSL_RAND_PARAM_STATE, nullptr),
    OSSL_PARAM_uint(OSSL_RAND_PARAM_STRENGTH, nullptr),
    OSSL_PARAM_size_t(OSSL_RAND_PARAM_MAX_REQUEST, nullptr), OSSL_PARAM_END};

const OSSL_PARAM* SeedGettableCtxParams(void*, void*) {
  return kGettableCtxParams;
}

using Fn = void (*)();
const OSSL_DISPATCH kSeedDispatch[] = {
    {OSSL_FUNC_RAND_NEWCTX, reinterpret_cast<Fn>(&SeedNewCtx)},
    {OSSL_FUNC_RAND_FREECTX, reinterpret_cast<Fn>(&SeedFreeCtx)},
    {OSSL_FUNC_RAND_INSTANTIATE, reinterpret_cast<Fn>(&SeedInstantiate)},
    {OSSL_FUNC_RAND_UNINSTANTIATE, reinterpret_cast<Fn>(&SeedUninstantiate)},
    {OSSL_FUNC_RAND_GENERATE, reinterpret_cast<Fn>(&SeedGenerate)},
    {OSSL_FUNC_RAND_RESEED, reinterpret_cast<Fn>(&SeedReseed)},
    {OSSL_FUNC_RAND_ENABLE_LOCKING, reinterpret_cast<Fn>(&SeedEnableLocking)},
    {OSSL_FUNC_RAND_LOCK, reinterpret_cast<Fn>(&SeedLock)},
    {OSSL_FUNC_RAND_UNLOCK, reinterpret_cast<Fn>(&SeedUnlock)},
    {OSSL_FUNC_RAND_GETTABLE_CTX_PARAMS,
     reinterpret_cast<Fn>(&SeedGettableCtxParams)},
    {OSSL_FUNC_RAND_GET_CTX_PARAMS, reinterpret_cast<Fn>(&SeedGetCtxParams)},
    {OSSL_FUNC_RAND_VERIFY_ZEROIZATION,
     reinterpret_cast<Fn>(&SeedVerifyZeroization)},
    {OSSL_FUNC_RAND_GET_SEED, reinterpret_cast<Fn>(&SeedGetSeed)},
    {OSSL_FUNC_RAND_CLEAR_SEED, reinterpret_cast<Fn>(&SeedClearSeed)},
    {0, nullptr}};

}  // namespace

void AppendRandAlgorithms(ProvCtx& ctx, std::vector<OSSL_ALGORITHM>* out) {
  // Published only when a noise source that wins (hardware) is routed
  // first; the software backend's getrandom entropy is then the fallback
  // behind it, never a reason on its own to replace OpenSSL's seed source
  // (Router::Interposes, also under `interpose = all`).
  if (!ctx.core().router().Interposes(ACCELCRYPT_ALG_RNG_ENTROPY).offered) {
    return;
  }
  out->push_back(OSSL_ALGORITHM{"SEED-SRC:ACCELCRYPT-SEED-SRC", kProperties,
                                kSeedDispatch,
                                "accelcrypt hardware entropy seed source"});
}

}  // namespace accelcrypt::provider
