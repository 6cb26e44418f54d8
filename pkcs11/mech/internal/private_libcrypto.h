// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_PKCS11_MECH_INTERNAL_PRIVATE_LIBCRYPTO_H_
#define ACCELCRYPT_PKCS11_MECH_INTERNAL_PRIVATE_LIBCRYPTO_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "pkcs11/common/attributes.h"

typedef struct ossl_lib_ctx_st OSSL_LIB_CTX;
typedef struct ossl_provider_st OSSL_PROVIDER;
typedef struct evp_rand_ctx_st EVP_RAND_CTX;

namespace accelcrypt {
class Router;
}

namespace accelcrypt::p11::internal {

// PrivateLibcrypto is what the module takes from libcrypto where the core
// has nothing: the DRBG and RSA/DSA key generation. It owns a private
// OSSL_LIB_CTX with only the default provider loaded into it; the
// process's default library context is never touched.
//
// The DRBG is EVP_RAND "CTR-DRBG" (AES-256-CTR, derivation function on,
// security strength 256) with no parent, fed by:
//  1. entropy input: the default provider's seed source in the private
//     context, i.e. the operating system (getrandom), at instantiation and
//     at every reseed;
//  2. personalization string at instantiation: a fixed label, the process
//     id, this object's address and CLOCK_MONOTONIC (uniqueness, not
//     secrecy);
//  3. additional input at every reseed: 48 bytes from Router::Entropy (the
//     first RNG_ENTROPY backend that works: a hardware noise source such as
//     RDSEED or PadLock xstore when one is registered, else the software
//     backend's getrandom); when no entropy backend answers, the reseed
//     happens with OS entropy alone;
//  4. additional input from C_SeedRandom (SHA-512 of it when longer than
//     4 KiB), as a reseed.
// Reseeds happen right after instantiation, every 1 MiB of output or 4096
// requests, after fork() (pid change) and on SeedRandom. Thread-safe.
class PrivateLibcrypto {
 public:
  // Create makes the library context, loads the default provider into it
  // and instantiates the DRBG. `router` (not owned) outlives this.
  static absl::StatusOr<std::unique_ptr<PrivateLibcrypto>> Create(
      Router* router);
  ~PrivateLibcrypto();
  PrivateLibcrypto(const PrivateLibcrypto&) = delete;
  PrivateLibcrypto& operator=(const PrivateLibcrypto&) = delete;

  // Random fills `out` from the DRBG.
  absl::Status Random(absl::Span<uint8_t> out);
  // Seed mixes `seed` into the DRBG (a reseed with it as additional input).
  absl::Status Seed(absl::Span<const uint8_t> seed);
  // reseed_count is how many reseeds happened (for tests).
  uint64_t reseed_count() const;

  // GenerateRsa makes an RSA key of `bits` with public exponent `e`
  // (big-endian). Returns (public, private) attributes: CKA_CLASS,
  // CKA_KEY_TYPE, CKA_MODULUS, CKA_PUBLIC_EXPONENT (+ CKA_MODULUS_BITS on
  // the public key; CKA_PRIVATE_EXPONENT, CKA_PRIME_1/2, CKA_EXPONENT_1/2,
  // CKA_COEFFICIENT on the private key). CKR_ATTRIBUTE_VALUE_INVALID when
  // libcrypto refuses the exponent.
  absl::StatusOr<std::pair<AttributeMap, AttributeMap>> GenerateRsa(
      size_t bits, absl::Span<const uint8_t> e);
  // GenerateDsa makes a DSA key in the domain (p, q, g). Returns public
  // (CKA_PRIME/SUBPRIME/BASE/VALUE=y) and private (same with VALUE=x)
  // attributes. CKR_ATTRIBUTE_VALUE_INVALID for unusable parameters.
  absl::StatusOr<std::pair<AttributeMap, AttributeMap>> GenerateDsa(
      absl::Span<const uint8_t> p, absl::Span<const uint8_t> q,
      absl::Span<const uint8_t> g);

  OSSL_LIB_CTX* libctx() const { return libctx_; }

 private:
  PrivateLibcrypto() = default;
  absl::Status ReseedLocked(absl::Span<const uint8_t> adin)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Router* router_ = nullptr;
  OSSL_LIB_CTX* libctx_ = nullptr;
  OSSL_PROVIDER* provider_ = nullptr;
  mutable absl::Mutex mu_;
  EVP_RAND_CTX* drbg_ ABSL_GUARDED_BY(mu_) = nullptr;
  size_t max_request_ ABSL_GUARDED_BY(mu_) = 4096;
  pid_t pid_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t bytes_since_reseed_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t requests_since_reseed_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t reseeds_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace accelcrypt::p11::internal

#endif  // ACCELCRYPT_PKCS11_MECH_INTERNAL_PRIVATE_LIBCRYPTO_H_
