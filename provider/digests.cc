// SPDX-License-Identifier: Apache-2.0
// Digest dispatch functions: SHA-1 and SHA-2 routed through the core. Reported
// parameters match OpenSSL 3.0's default provider (digestcommon.c, sha2_prov.c:
// the SHA family sets PROV_DIGEST_FLAG_ALGID_ABSENT).
#include "provider/digests.h"

#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/params.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "core/algorithms.h"
#include "core/backend.h"
#include "core/digest.h"
#include "core/router.h"
#include "core/status.h"
#include "provider/algorithm_table.h"
#include "provider/errors.h"

namespace accelcrypt::provider {
namespace {

// kSmallMessage bounds the bytes a digest context buffers before it makes a
// routed streaming digest. EVP_Digest runs newctx/init/update/final/freectx
// per message; a message that ends within this bound is hashed at final by
// Router::DigestOneShot, without a routed digest object (whose creation
// costs more than hashing a short message).
constexpr size_t kSmallMessage = 256;

struct DigestCtx {
  DigestCtx(ProvCtx* p, const AlgorithmInfo* i) : prov(p), info(i) {}
  ~DigestCtx() { Wipe(); }
  // Wipe clears what `buf` holds (message bytes or a direct hash state).
  void Wipe() {
    if (used > 0) OPENSSL_cleanse(buf, used);
    used = 0;
  }
  ProvCtx* prov;
  const AlgorithmInfo* info;
  // The route's direct digest (Router::Direct), chosen at init: when set,
  // `buf` holds its state and every update goes straight to it.
  Router::DirectDigest direct;
  uint64_t direct_bytes = 0;
  // The routed streaming digest; made (or re-initialised) only once the
  // message outgrows `buf`, and kept for reuse across inits.
  std::unique_ptr<Digest> digest;
  // ready: initialised and not yet finalised.
  bool ready = false;
  // streaming: `digest` holds the message so far (buf is unused).
  bool streaming = false;
  // used: bytes of `buf` in use: the buffered message, or the direct state.
  size_t used = 0;
  alignas(16) uint8_t buf[kSmallMessage];
};
static_assert(kSmallMessage >= Backend::kMaxDigestDirectState);
static_assert(alignof(DigestCtx) <= alignof(std::max_align_t));

// Contexts come from malloc directly: EVP_Digest makes and frees one per
// message, and operator new(nothrow) adds two calls on top of malloc.
DigestCtx* NewDigestCtx(ProvCtx* prov, const AlgorithmInfo* info) {
  void* mem = std::malloc(sizeof(DigestCtx));
  return mem == nullptr ? nullptr : new (mem) DigestCtx(prov, info);
}

void DeleteDigestCtx(DigestCtx* ctx) {
  ctx->~DigestCtx();
  std::free(ctx);
}

absl::Status NotReady(const DigestCtx& ctx) {
  return ProviderError(
      Reason::kOutOfOrder, absl::StatusCode::kFailedPrecondition,
      absl::StrFormat("%s: digest not initialised (init before update/final)",
                      ctx.info->name));
}

void DigestFreeCtx(void* vctx) {
  auto* ctx = static_cast<DigestCtx*>(vctx);
  if (ctx == nullptr) return;
  // A finished routed digest holds no message (its Final wiped it): keep
  // it for the next context. One freed mid-message is destroyed.
  if (ctx->digest != nullptr && !(ctx->ready && ctx->streaming)) {
    ctx->prov->ReturnDigest(*ctx->info, std::move(ctx->digest));
  }
  DeleteDigestCtx(ctx);
}

void* DigestDupCtx(void* vctx) {
  auto* src = static_cast<DigestCtx*>(vctx);
  DigestCtx* dup = nullptr;
  int ok = Guard(src->prov, [&] {
    std::unique_ptr<DigestCtx, void (*)(DigestCtx*)> copy(
        NewDigestCtx(src->prov, src->info), DeleteDigestCtx);
    if (copy == nullptr) {
      return RaiseError(src->prov, absl::ResourceExhaustedError(absl::StrFormat(
                                       "%s: out of memory", src->info->name)));
    }
    copy->ready = src->ready;
    copy->streaming = src->streaming;
    copy->direct = src->direct;
    copy->direct_bytes = src->direct_bytes;
    copy->used = src->used;
    if (src->used > 0) memcpy(copy->buf, src->buf, src->used);
    if (src->streaming && src->digest != nullptr) {
      absl::StatusOr<std::unique_ptr<Digest>> clone = src->digest->Clone();
      if (!clone.ok()) return RaiseError(src->prov, clone.status());
      copy->digest = *std::move(clone);
    }
    dup = copy.release();
    return 1;
  });
  return ok ? dup : nullptr;
}

int DigestInit(void* vctx, const OSSL_PARAM params[]) {
  auto* ctx = static_cast<DigestCtx*>(vctx);
  ctx->Wipe();
  ctx->streaming = false;
  ctx->ready = true;
  ctx->direct = ctx->prov->core().router().Direct(*ctx->info);
  if (ctx->direct.fn != nullptr) [[likely]] {
    ctx->direct_bytes = 0;
    ctx->used = ctx->direct.fn->state_size;
    ctx->direct.fn->init(ctx->buf);
  }
  // SHA digests take no settable parameters; unknown ones are ignored.
  (void)params;
  return 1;
}

// StartStreaming moves the buffered prefix into a routed streaming digest.
absl::Status StartStreaming(DigestCtx* ctx) {
  if (ctx->digest == nullptr) ctx->digest = ctx->prov->TakeDigest(*ctx->info);
  if (ctx->digest == nullptr) {
    ACCELCRYPT_ASSIGN_OR_RETURN(
        ctx->digest, ctx->prov->core().router().NewDigest(ctx->info->id));
  } else {
    ACCELCRYPT_RETURN_IF_ERROR(ctx->digest->Init());
  }
  if (ctx->used > 0) {
    ACCELCRYPT_RETURN_IF_ERROR(
        ctx->digest->Update(absl::MakeConstSpan(ctx->buf, ctx->used)));
  }
  ctx->Wipe();
  ctx->streaming = true;
  return absl::OkStatus();
}

absl::Status NullInput(const AlgorithmInfo& info) {
  return absl::InvalidArgumentError(
      absl::StrFormat("%s: NULL input with a length", info.name));
}

int DigestUpdate(void* vctx, const unsigned char* in, size_t inl) {
  auto* ctx = static_cast<DigestCtx*>(vctx);
  if (ctx->ready && (in != nullptr || inl == 0)) [[likely]] {
    if (ctx->direct.fn != nullptr) [[likely]] {
      ctx->direct.fn->update(ctx->buf, in, inl);
      ctx->direct_bytes += inl;
      if (ctx->direct_bytes >= kStatsFlushBytes) [[unlikely]] {
        // Live statistics for long streams; the op is counted at final.
        ctx->direct.counter->AddBytes(ctx->direct_bytes);
        ctx->direct_bytes = 0;
      }
      return 1;
    }
    if (!ctx->streaming && inl <= kSmallMessage - ctx->used) {
      if (inl > 0) memcpy(ctx->buf + ctx->used, in, inl);
      ctx->used += inl;
      return 1;
    }
  }
  return Guard(ctx->prov, [&] {
    if (!ctx->ready) return RaiseError(ctx->prov, NotReady(*ctx));
    if (in == nullptr && inl != 0) {
      return RaiseError(ctx->prov, NullInput(*ctx->info));
    }
    if (!ctx->streaming) {
      absl::Status status = StartStreaming(ctx);
      if (!status.ok()) {
        ctx->ready = false;
        return RaiseError(ctx->prov, status);
      }
    }
    if (inl == 0) return 1;
    absl::Status status = ctx->digest->Update(absl::MakeConstSpan(in, inl));
    return status.ok() ? 1 : RaiseError(ctx->prov, status);
  });
}

absl::Status ShortOutput(const AlgorithmInfo& info, size_t outsz) {
  return absl::OutOfRangeError(
      absl::StrFormat("%s: output buffer of %u bytes, need %u", info.name,
                      outsz, info.digest_len));
}

// DigestFinalRouted is DigestFinal off the direct path (and its errors).
[[gnu::noinline]] int DigestFinalRouted(DigestCtx* ctx, unsigned char* out,
                                        size_t* outl, size_t outsz) {
  return Guard(ctx->prov, [&] {
    if (!ctx->ready) return RaiseError(ctx->prov, NotReady(*ctx));
    if (outsz < ctx->info->digest_len) {
      return RaiseError(ctx->prov, ShortOutput(*ctx->info, outsz));
    }
    ctx->ready = false;
    absl::Status status =
        ctx->streaming
            ? ctx->digest->Final(absl::MakeSpan(out, ctx->info->digest_len))
            : ctx->prov->core().router().DigestOneShot(
                  *ctx->info, absl::MakeConstSpan(ctx->buf, ctx->used),
                  absl::MakeSpan(out, ctx->info->digest_len));
    ctx->Wipe();
    if (!status.ok()) return RaiseError(ctx->prov, status);
    *outl = ctx->info->digest_len;
    return 1;
  });
}

int DigestFinal(void* vctx, unsigned char* out, size_t* outl, size_t outsz) {
  auto* ctx = static_cast<DigestCtx*>(vctx);
  if (ctx->ready && ctx->direct.fn != nullptr && outsz >= ctx->info->digest_len)
      [[likely]] {
    ctx->ready = false;
    ctx->direct.fn->final(ctx->buf, out);
    ctx->direct.counter->Add(ctx->direct_bytes);
    ctx->Wipe();
    *outl = ctx->info->digest_len;
    return 1;
  }
  return DigestFinalRouted(ctx, out, outl, outsz);
}

const OSSL_PARAM kGettableParams[] = {
    OSSL_PARAM_size_t(OSSL_DIGEST_PARAM_BLOCK_SIZE, nullptr),
    OSSL_PARAM_size_t(OSSL_DIGEST_PARAM_SIZE, nullptr),
    OSSL_PARAM_int(OSSL_DIGEST_PARAM_XOF, nullptr),
    OSSL_PARAM_int(OSSL_DIGEST_PARAM_ALGID_ABSENT, nullptr), OSSL_PARAM_END};

const OSSL_PARAM* DigestGettableParams(void*) { return kGettableParams; }

template <size_t I>
struct DigestTable {
  static const AlgorithmInfo* Info() {
    static const AlgorithmInfo* const info = [] {
      auto all = AllAlgorithms();
      return I < all.size() && all[I].family == Family::kDigest ? &all[I]
                                                                : nullptr;
    }();
    return info;
  }

  static void* NewCtx(void* provctx) {
    const AlgorithmInfo* info = Info();
    if (info == nullptr) return nullptr;
    return NewDigestCtx(static_cast<ProvCtx*>(provctx), info);
  }

  // OneShot serves OSSL_FUNC_DIGEST_DIGEST with the route's direct digest,
  // else through the router's one-shot path (which a one-shot-only
  // accelerator serves without buffering).
  static int OneShot(void* provctx, const unsigned char* in, size_t inl,
                     unsigned char* out, size_t* outl, size_t outsz) {
    auto* prov = static_cast<ProvCtx*>(provctx);
    const AlgorithmInfo* info = Info();
    return Guard(prov, [&] {
      if (info == nullptr) {
        return RaiseError(prov, absl::InternalError("not a digest"));
      }
      if (outsz < info->digest_len) {
        return RaiseError(prov, ShortOutput(*info, outsz));
      }
      if (in == nullptr && inl != 0) return RaiseError(prov, NullInput(*info));
      Router& router = prov->core().router();
      if (Router::DirectDigest d = router.Direct(*info); d.fn != nullptr) {
        DirectDigestMessage(*d.fn, absl::MakeConstSpan(in, inl), inl, out);
        d.counter->Add(inl);
        *outl = info->digest_len;
        return 1;
      }
      absl::Status status =
          router.DigestOneShot(*info, absl::MakeConstSpan(in, inl),
                               absl::MakeSpan(out, info->digest_len));
      if (!status.ok()) return RaiseError(prov, status);
      *outl = info->digest_len;
      return 1;
    });
  }

  static int GetParams(OSSL_PARAM params[]) {
    const AlgorithmInfo* info = Info();
    if (info == nullptr) return 0;
    OSSL_PARAM* p = OSSL_PARAM_locate(params, OSSL_DIGEST_PARAM_BLOCK_SIZE);
    if (p != nullptr && !OSSL_PARAM_set_size_t(p, info->block_len)) return 0;
    p = OSSL_PARAM_locate(params, OSSL_DIGEST_PARAM_SIZE);
    if (p != nullptr && !OSSL_PARAM_set_size_t(p, info->digest_len)) return 0;
    p = OSSL_PARAM_locate(params, OSSL_DIGEST_PARAM_XOF);
    if (p != nullptr && !OSSL_PARAM_set_int(p, 0)) return 0;
    p = OSSL_PARAM_locate(params, OSSL_DIGEST_PARAM_ALGID_ABSENT);
    if (p != nullptr && !OSSL_PARAM_set_int(p, 1)) return 0;
    return 1;
  }

  using Fn = void (*)();
  static inline const OSSL_DISPATCH kDispatch[] = {
      {OSSL_FUNC_DIGEST_NEWCTX, reinterpret_cast<Fn>(&NewCtx)},
      {OSSL_FUNC_DIGEST_INIT, reinterpret_cast<Fn>(&DigestInit)},
      {OSSL_FUNC_DIGEST_UPDATE, reinterpret_cast<Fn>(&DigestUpdate)},
      {OSSL_FUNC_DIGEST_FINAL, reinterpret_cast<Fn>(&DigestFinal)},
      {OSSL_FUNC_DIGEST_DIGEST, reinterpret_cast<Fn>(&OneShot)},
      {OSSL_FUNC_DIGEST_FREECTX, reinterpret_cast<Fn>(&DigestFreeCtx)},
      {OSSL_FUNC_DIGEST_DUPCTX, reinterpret_cast<Fn>(&DigestDupCtx)},
      {OSSL_FUNC_DIGEST_GET_PARAMS, reinterpret_cast<Fn>(&GetParams)},
      {OSSL_FUNC_DIGEST_GETTABLE_PARAMS,
       reinterpret_cast<Fn>(&DigestGettableParams)},
      {0, nullptr}};
};

}  // namespace

absl::Status AppendDigestAlgorithms(ProvCtx& ctx,
                                    std::vector<OSSL_ALGORITHM>* out) {
  static constexpr auto kTables = DispatchTables<DigestTable>();
  return AppendRoutedAlgorithms(ctx, Family::kDigest, kTables,
                                "accelcrypt routed digest", out);
}

}  // namespace accelcrypt::provider
