// SPDX-License-Identifier: Apache-2.0
// The token store's sealing crypto: a private libcrypto library context and
// what the store does with it (random bytes, PBKDF2 key derivation from a
// PIN, AES-256-GCM sealing and opening of data keys and private objects,
// the check value of the current data key). The formats built on it (which
// AAD, which records) are the store's (token_pins.cc, token_objects.cc).
#ifndef ACCELCRYPT_PKCS11_STORE_INTERNAL_SEALING_H_
#define ACCELCRYPT_PKCS11_STORE_INTERNAL_SEALING_H_

#include <openssl/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "pkcs11/common/attributes.h"

namespace accelcrypt::p11::internal {

// The data key and every key derived from a PIN are AES-256 keys.
inline constexpr size_t kDekLen = 32;
inline constexpr size_t kSaltLen = 16;
// GCM IV length; GcmOpen refuses any other.
inline constexpr size_t kIvLen = 12;

// StoreCrypto holds the library context and the algorithms fetched from it
// once. Errors are CKR_DEVICE_ERROR naming the step and libcrypto's first
// queued error (the queue is drained). Thread-safe after Create (const
// methods only).
class StoreCrypto {
 public:
  // Create uses `shared` (not owned; must outlive the object) or, when it
  // is null, a fresh private context with OpenSSL's default provider only.
  static absl::StatusOr<std::unique_ptr<StoreCrypto>> Create(
      OSSL_LIB_CTX* shared);
  ~StoreCrypto();
  StoreCrypto(const StoreCrypto&) = delete;
  StoreCrypto& operator=(const StoreCrypto&) = delete;

  // Random fills `out` from the context's DRBG (256-bit strength).
  absl::Status Random(absl::Span<uint8_t> out) const;

  // DeriveKey is PBKDF2-HMAC-SHA256 of `pin` (kDekLen bytes).
  absl::StatusOr<SecretBytes> DeriveKey(std::string_view pin,
                                        absl::Span<const uint8_t> salt,
                                        uint64_t iterations) const;

  // GcmSeal returns ciphertext || 16-byte tag. CKR_DEVICE_MEMORY when the
  // input is too large for libcrypto's int lengths.
  absl::StatusOr<std::vector<uint8_t>> GcmSeal(
      absl::Span<const uint8_t> key, absl::Span<const uint8_t> iv,
      absl::Span<const uint8_t> aad, absl::Span<const uint8_t> plaintext) const;

  // GcmOpen returns the plaintext; a tag mismatch (wrong key, tampered
  // data) is an AuthFailedError (core/status.h).
  absl::StatusOr<SecretBytes> GcmOpen(absl::Span<const uint8_t> key,
                                      absl::Span<const uint8_t> iv,
                                      absl::Span<const uint8_t> aad,
                                      absl::Span<const uint8_t> sealed) const;

  // DekCheck is SHA-256(label || dek): identifies the current DEK without
  // revealing it (the DEK is 256 random bits).
  absl::StatusOr<std::vector<uint8_t>> DekCheck(const SecretBytes& dek) const;

 private:
  StoreCrypto() = default;
  OSSL_LIB_CTX* libctx_ = nullptr;
  OSSL_LIB_CTX* owned_libctx_ = nullptr;
  OSSL_PROVIDER* provider_ = nullptr;
  EVP_CIPHER* gcm_ = nullptr;
  EVP_KDF* kdf_ = nullptr;
  EVP_MD* sha256_ = nullptr;
};

}  // namespace accelcrypt::p11::internal

#endif  // ACCELCRYPT_PKCS11_STORE_INTERNAL_SEALING_H_
