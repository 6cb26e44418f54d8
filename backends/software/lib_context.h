// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_BACKENDS_SOFTWARE_LIB_CONTEXT_H_
#define ACCELCRYPT_BACKENDS_SOFTWARE_LIB_CONTEXT_H_

#include <openssl/core.h>
#include <openssl/core_dispatch.h>
#include <openssl/types.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "accelcrypt/backend.h"
#include "backends/software/provider_direct.h"

namespace accelcrypt::software {

// CipherDispatch is one AES mode of OpenSSL's default provider, looked up
// once at init: the provider's own dispatch functions, called directly so a
// cipher update costs one provider call and no EVP layer.
struct CipherDispatch {
  accelcrypt_alg alg = 0;
  const char* name = nullptr;  // "AES-128-CBC", for messages
  uint32_t mode = 0;           // ACCELCRYPT_MODE_*
  size_t key_len = 0;
  void* provctx = nullptr;  // the default provider's context
  // The ECB entry of the same key size: CFB/OFB use it to restore a position
  // inside a block (AesSoftware::SetState), GCM to map IVs longer than
  // OpenSSL takes. Null for other modes.
  const CipherDispatch* ecb = nullptr;
  OSSL_FUNC_cipher_newctx_fn* newctx = nullptr;
  OSSL_FUNC_cipher_encrypt_init_fn* encrypt_init = nullptr;
  OSSL_FUNC_cipher_decrypt_init_fn* decrypt_init = nullptr;
  OSSL_FUNC_cipher_update_fn* update = nullptr;
  OSSL_FUNC_cipher_final_fn* final = nullptr;
  OSSL_FUNC_cipher_cipher_fn* cipher = nullptr;
  OSSL_FUNC_cipher_freectx_fn* freectx = nullptr;
  OSSL_FUNC_cipher_dupctx_fn* dupctx = nullptr;
  OSSL_FUNC_cipher_get_ctx_params_fn* get_ctx_params = nullptr;
  OSSL_FUNC_cipher_set_ctx_params_fn* set_ctx_params = nullptr;
};

// DigestDispatch is one SHA digest of the default provider.
struct DigestDispatch {
  accelcrypt_alg alg = 0;
  const char* name = nullptr;  // "SHA-256", for messages
  size_t digest_len = 0;
  void* provctx = nullptr;
  OSSL_FUNC_digest_newctx_fn* newctx = nullptr;
  OSSL_FUNC_digest_init_fn* init = nullptr;
  OSSL_FUNC_digest_update_fn* update = nullptr;
  OSSL_FUNC_digest_final_fn* final = nullptr;
  OSSL_FUNC_digest_freectx_fn* freectx = nullptr;
  OSSL_FUNC_digest_dupctx_fn* dupctx = nullptr;
};

// LibContext is the software backend's instance: a private OSSL_LIB_CTX with
// only OpenSSL's "default" provider loaded (never the application's config,
// so never accelcrypt itself: no recursion), the dispatch tables of every
// algorithm it serves, and the capability list. Immutable after Create, so
// thread-safe.
class LibContext {
 public:
  // Create builds the library context and looks every algorithm up.
  // kUnavailable when the default provider cannot be loaded. An algorithm the
  // provider does not offer here is simply not declared.
  static absl::StatusOr<std::unique_ptr<LibContext>> Create();
  ~LibContext();
  LibContext(const LibContext&) = delete;
  LibContext& operator=(const LibContext&) = delete;

  // Cipher/Digest return the dispatch for `alg`, or nullptr when it is not
  // declared.
  const CipherDispatch* Cipher(accelcrypt_alg alg) const;
  const DigestDispatch* Digest(accelcrypt_alg alg) const;

  absl::Span<const accelcrypt_capability> capabilities() const { return caps_; }

  // RandomBytes fills `out` from the private context's DRBG. kUnavailable
  // when the DRBG fails (seed source error).
  absl::Status RandomBytes(absl::Span<uint8_t> out) const;

  // libctx is the private library context.
  OSSL_LIB_CTX* libctx() const { return libctx_; }

  // Rsa/Dsa return the default provider's RSA/DSA functions (called
  // directly, never through EVP: provider_direct.h), or nullptr when the
  // provider lacks them.
  const PkeyDispatch* Rsa() const { return pkeys_.rsa(); }
  const PkeyDispatch* Dsa() const { return pkeys_.dsa(); }

  // Describe is a one-line description for `accelcrypt list`.
  const std::string& description() const { return description_; }

 private:
  LibContext() = default;
  absl::Status LookUp();

  OSSL_LIB_CTX* libctx_ = nullptr;
  OSSL_PROVIDER* provider_ = nullptr;
  const OSSL_ALGORITHM* cipher_algs_ = nullptr;
  const OSSL_ALGORITHM* digest_algs_ = nullptr;
  // Indexed by (mode - 1) * 3 + (key_len / 8 - 2); alg == 0 when absent.
  std::array<CipherDispatch, 18> ciphers_{};
  // Indexed by the digest id's low byte - 1.
  std::array<DigestDispatch, 5> digests_{};
  ProviderPkeys pkeys_;
  bool rng_ok_ = false;
  std::vector<accelcrypt_capability> caps_;
  std::string description_;
};

}  // namespace accelcrypt::software

#endif  // ACCELCRYPT_BACKENDS_SOFTWARE_LIB_CONTEXT_H_
