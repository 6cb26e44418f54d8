// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_PROVIDER_PROVIDER_CTX_H_
#define ACCELCRYPT_PROVIDER_PROVIDER_CTX_H_

#include <openssl/core.h>
#include <openssl/core_dispatch.h>
#include <openssl/types.h>

#include <memory>
#include <mutex>
#include <vector>

#include "core/algorithms.h"
#include "core/core.h"
#include "core/digest.h"

namespace accelcrypt::provider {

// CoreUpcalls are the libcrypto functions handed to OSSL_provider_init in
// its `in` dispatch table. Any of them may be null when the core did not
// offer it; callers check.
struct CoreUpcalls {
  OSSL_FUNC_core_get_params_fn* get_params = nullptr;
  OSSL_FUNC_core_get_libctx_fn* get_libctx = nullptr;
  OSSL_FUNC_core_new_error_fn* new_error = nullptr;
  OSSL_FUNC_core_set_error_debug_fn* set_error_debug = nullptr;
  OSSL_FUNC_core_vset_error_fn* vset_error = nullptr;
};

// ProvCtx is the provider context OpenSSL passes back as `provctx` to every
// algorithm function: the core handle, its upcalls, and the one accelcrypt
// Core this provider instance owns. Created in OSSL_provider_init, destroyed
// in teardown (which destroys the Core and so writes its stats). The
// algorithm arrays are built once at init from what the router says to offer
// (Router::Interposes) and
// never change afterwards, so reads need no lock.
class ProvCtx {
 public:
  ProvCtx(const OSSL_CORE_HANDLE* handle, const CoreUpcalls& upcalls)
      : handle_(handle), upcalls_(upcalls) {}
  ProvCtx(const ProvCtx&) = delete;
  ProvCtx& operator=(const ProvCtx&) = delete;
  ~ProvCtx();

  const OSSL_CORE_HANDLE* handle() const { return handle_; }
  const CoreUpcalls& upcalls() const { return upcalls_; }

  // core is valid once init has succeeded, for the provider's lifetime.
  Core& core() { return *core_; }
  void set_core(std::unique_ptr<Core> core) { core_ = std::move(core); }

  // libctx returns the library context the provider was loaded into (the
  // application's), for RAND_bytes_ex when GCM generates an IV. May be null
  // (the default context then).
  OSSL_LIB_CTX* libctx() const;

  std::vector<OSSL_ALGORITHM>& ciphers() { return ciphers_; }
  std::vector<OSSL_ALGORITHM>& digests() { return digests_; }
  std::vector<OSSL_ALGORITHM>& rands() { return rands_; }
  std::vector<OSSL_ALGORITHM>& keymgmts() { return keymgmts_; }
  std::vector<OSSL_ALGORITHM>& signatures() { return signatures_; }
  std::vector<OSSL_ALGORITHM>& asym_ciphers() { return asym_ciphers_; }
  std::vector<OSSL_ALGORITHM>& stores() { return stores_; }

  // private_libctx returns a library context of our own holding only
  // OpenSSL's default provider (made on first use, thread-safe; null when
  // it cannot be made). For key generation: never the application's
  // context, where accelcrypt is preferred and would be called back.
  OSSL_LIB_CTX* private_libctx();

  // TakeDigest returns a finished routed digest of `info` kept by
  // ReturnDigest, or null when none is kept; the caller Inits it before
  // use. ReturnDigest keeps `digest` (finished: its Final ran, which wipes
  // the message from it) for the next context of the same algorithm, up
  // to a few per algorithm, and destroys it beyond that. EVP_Digest runs
  // newctx..freectx per message; without the pool every message longer
  // than a digest context buffers built a routed digest (the router's
  // candidate order and four allocations: ~1,900 instructions a message,
  // callgrind). Thread-safe: one mutex, taken at newctx/freectx time,
  // never on update.
  std::unique_ptr<Digest> TakeDigest(const AlgorithmInfo& info);
  void ReturnDigest(const AlgorithmInfo& info, std::unique_ptr<Digest> digest);

 private:
  const OSSL_CORE_HANDLE* handle_;
  CoreUpcalls upcalls_;
  std::unique_ptr<Core> core_;
  // NULL-terminated OSSL_ALGORITHM arrays returned by query_operation.
  std::vector<OSSL_ALGORITHM> ciphers_;
  std::vector<OSSL_ALGORITHM> digests_;
  std::vector<OSSL_ALGORITHM> rands_;
  std::vector<OSSL_ALGORITHM> keymgmts_;
  std::vector<OSSL_ALGORITHM> signatures_;
  std::vector<OSSL_ALGORITHM> asym_ciphers_;
  std::vector<OSSL_ALGORITHM> stores_;
  std::once_flag private_libctx_once_;
  OSSL_LIB_CTX* private_libctx_ = nullptr;
  // The default provider loaded into private_libctx_: unloaded before the
  // context is freed (OpenSSL 3.0 keeps a loaded provider's reference
  // otherwise, a leak LeakSanitizer reports at exit).
  OSSL_PROVIDER* private_default_ = nullptr;
  // After core_: destroyed first, while the backends its digests use live.
  static constexpr size_t kDigestPoolDepth = 4;
  std::mutex digest_pool_mu_;
  std::vector<std::vector<std::unique_ptr<Digest>>> digest_pool_;
};

}  // namespace accelcrypt::provider

#endif  // ACCELCRYPT_PROVIDER_PROVIDER_CTX_H_
