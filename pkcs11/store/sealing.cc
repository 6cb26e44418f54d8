// SPDX-License-Identifier: Apache-2.0
// The token store's sealing crypto (internal/sealing.h): libcrypto calls in
// a private library context for PIN key derivation (PBKDF2-HMAC-SHA256),
// AES-256-GCM sealing at rest and the data key's check value.
#include "pkcs11/store/internal/sealing.h"

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/provider.h>
#include <openssl/rand.h>

#include <climits>
#include <cstring>
#include <string>

#include "absl/strings/str_format.h"
#include "accelcrypt/kit/openssl_errors.h"
#include "core/status.h"
#include "pkcs11/common/ck_error.h"

namespace accelcrypt::p11::internal {
namespace {

constexpr size_t kTagLen = 16;
constexpr char kDekCheckLabel[] = "accelcrypt-p11 dek check v1";

// DrainLibcryptoErrors empties the thread's libcrypto error queue and
// returns its first entry's text.
std::string DrainLibcryptoErrors() {
  std::string text = kit::DrainOpenSslErrors(/*first_only=*/true);
  return text.empty() ? "no libcrypto detail" : text;
}

absl::Status CryptoError(std::string_view what) {
  return CkError(CKR_DEVICE_ERROR,
                 absl::StrFormat("token store: %s failed (%s)", AsAbsl(what),
                                 DrainLibcryptoErrors()));
}

}  // namespace

absl::StatusOr<std::unique_ptr<StoreCrypto>> StoreCrypto::Create(
    OSSL_LIB_CTX* shared) {
  std::unique_ptr<StoreCrypto> c(new StoreCrypto());
  if (shared != nullptr) {
    c->libctx_ = shared;
  } else {
    // A fresh context reads no configuration: only OpenSSL's default
    // provider, never accelcrypt's own provider (no recursion).
    c->owned_libctx_ = OSSL_LIB_CTX_new();
    if (c->owned_libctx_ == nullptr) return CryptoError("OSSL_LIB_CTX_new");
    c->provider_ = OSSL_PROVIDER_load(c->owned_libctx_, "default");
    if (c->provider_ == nullptr) {
      return CryptoError("loading OpenSSL's default provider");
    }
    c->libctx_ = c->owned_libctx_;
  }
  c->gcm_ = EVP_CIPHER_fetch(c->libctx_, "AES-256-GCM", nullptr);
  if (c->gcm_ == nullptr) return CryptoError("fetching AES-256-GCM");
  c->kdf_ = EVP_KDF_fetch(c->libctx_, "PBKDF2", nullptr);
  if (c->kdf_ == nullptr) return CryptoError("fetching PBKDF2");
  c->sha256_ = EVP_MD_fetch(c->libctx_, "SHA256", nullptr);
  if (c->sha256_ == nullptr) return CryptoError("fetching SHA-256");
  return c;
}

StoreCrypto::~StoreCrypto() {
  EVP_CIPHER_free(gcm_);
  EVP_KDF_free(kdf_);
  EVP_MD_free(sha256_);
  if (provider_ != nullptr) OSSL_PROVIDER_unload(provider_);
  OSSL_LIB_CTX_free(owned_libctx_);
}

absl::Status StoreCrypto::Random(absl::Span<uint8_t> out) const {
  if (RAND_bytes_ex(libctx_, out.data(), out.size(), 256) != 1) {
    return CryptoError("RAND_bytes_ex");
  }
  return absl::OkStatus();
}

absl::StatusOr<SecretBytes> StoreCrypto::DeriveKey(
    std::string_view pin, absl::Span<const uint8_t> salt,
    uint64_t iterations) const {
  SecretBytes key(kDekLen);
  EVP_KDF_CTX* kctx = EVP_KDF_CTX_new(kdf_);
  if (kctx == nullptr) return CryptoError("EVP_KDF_CTX_new");
  int pkcs5 = 1;  // PKCS#5 semantics: no SP 800-132 lower-bound checks
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_octet_string(
          OSSL_KDF_PARAM_PASSWORD, const_cast<char*>(pin.data()), pin.size()),
      OSSL_PARAM_construct_octet_string(
          OSSL_KDF_PARAM_SALT, const_cast<uint8_t*>(salt.data()), salt.size()),
      OSSL_PARAM_construct_uint64(OSSL_KDF_PARAM_ITER, &iterations),
      OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0),
      OSSL_PARAM_construct_int(OSSL_KDF_PARAM_PKCS5, &pkcs5),
      OSSL_PARAM_construct_end()};
  int ok = EVP_KDF_derive(kctx, key.data(), key.size(), params);
  EVP_KDF_CTX_free(kctx);
  if (ok != 1) return CryptoError("PBKDF2-HMAC-SHA256");
  return key;
}

absl::StatusOr<std::vector<uint8_t>> StoreCrypto::GcmSeal(
    absl::Span<const uint8_t> key, absl::Span<const uint8_t> iv,
    absl::Span<const uint8_t> aad, absl::Span<const uint8_t> plaintext) const {
  if (plaintext.size() > INT_MAX - kTagLen || aad.size() > INT_MAX) {
    return CkError(CKR_DEVICE_MEMORY, "token store: object too large");
  }
  std::vector<uint8_t> out(plaintext.size() + kTagLen);
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  if (ctx == nullptr) return CryptoError("EVP_CIPHER_CTX_new");
  int len = 0;
  bool ok =
      EVP_EncryptInit_ex2(ctx, gcm_, key.data(), iv.data(), nullptr) == 1 &&
      EVP_EncryptUpdate(ctx, nullptr, &len, aad.data(),
                        static_cast<int>(aad.size())) == 1 &&
      EVP_EncryptUpdate(ctx, out.data(), &len, plaintext.data(),
                        static_cast<int>(plaintext.size())) == 1 &&
      EVP_EncryptFinal_ex(ctx, out.data() + len, &len) == 1 &&
      EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, kTagLen,
                          out.data() + plaintext.size()) == 1;
  EVP_CIPHER_CTX_free(ctx);
  if (!ok) return CryptoError("AES-256-GCM encryption");
  return out;
}

absl::StatusOr<SecretBytes> StoreCrypto::GcmOpen(
    absl::Span<const uint8_t> key, absl::Span<const uint8_t> iv,
    absl::Span<const uint8_t> aad, absl::Span<const uint8_t> sealed) const {
  if (iv.size() != kIvLen || sealed.size() < kTagLen ||
      sealed.size() > INT_MAX || aad.size() > INT_MAX) {
    return AuthFailedError("malformed ciphertext");
  }
  size_t ct_len = sealed.size() - kTagLen;
  SecretBytes out(ct_len);
  uint8_t tag[kTagLen];
  std::memcpy(tag, sealed.data() + ct_len, kTagLen);
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  if (ctx == nullptr) return CryptoError("EVP_CIPHER_CTX_new");
  int len = 0;
  bool ok =
      EVP_DecryptInit_ex2(ctx, gcm_, key.data(), iv.data(), nullptr) == 1 &&
      EVP_DecryptUpdate(ctx, nullptr, &len, aad.data(),
                        static_cast<int>(aad.size())) == 1 &&
      EVP_DecryptUpdate(ctx, out.data(), &len, sealed.data(),
                        static_cast<int>(ct_len)) == 1 &&
      EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, kTagLen, tag) == 1;
  if (!ok) {
    EVP_CIPHER_CTX_free(ctx);
    return CryptoError("AES-256-GCM decryption");
  }
  uint8_t final_block[16];
  int final_ok = EVP_DecryptFinal_ex(ctx, final_block, &len);
  EVP_CIPHER_CTX_free(ctx);
  if (final_ok != 1) {
    ERR_clear_error();
    return AuthFailedError("AES-256-GCM tag mismatch");
  }
  return out;
}

absl::StatusOr<std::vector<uint8_t>> StoreCrypto::DekCheck(
    const SecretBytes& dek) const {
  std::vector<uint8_t> out(32);
  unsigned int len = 0;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  if (ctx == nullptr) return CryptoError("EVP_MD_CTX_new");
  bool ok =
      EVP_DigestInit_ex2(ctx, sha256_, nullptr) == 1 &&
      EVP_DigestUpdate(ctx, kDekCheckLabel, sizeof(kDekCheckLabel)) == 1 &&
      EVP_DigestUpdate(ctx, dek.data(), dek.size()) == 1 &&
      EVP_DigestFinal_ex(ctx, out.data(), &len) == 1;
  EVP_MD_CTX_free(ctx);
  if (!ok) return CryptoError("SHA-256");
  return out;
}

}  // namespace accelcrypt::p11::internal
