// SPDX-License-Identifier: Apache-2.0
#include "backends/software/lib_context.h"

#include <openssl/core_dispatch.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/provider.h>
#include <openssl/rand.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "accelcrypt/backend.h"
#include "backends/software/openssl_error.h"
#include "backends/software/provider_direct.h"

namespace accelcrypt::software {
namespace {

// PrivateRandom fills `out` from `libctx`'s own public DRBG. Not
// RAND_bytes_ex: that first consults the process-wide RAND_METHOD, which an
// application's ENGINE (set as default for ALL) may have replaced.
bool PrivateRandom(OSSL_LIB_CTX* libctx, uint8_t* out, size_t len) {
  EVP_RAND_CTX* drbg = RAND_get0_public(libctx);
  return drbg != nullptr &&
         EVP_RAND_generate(drbg, out, len, 0, 0, nullptr, 0) == 1;
}

struct CipherName {
  uint32_t mode;
  const char* mode_name;  // our name's suffix and OpenSSL's
};

constexpr CipherName kModes[] = {
    {ACCELCRYPT_MODE_ECB, "ECB"},    {ACCELCRYPT_MODE_CBC, "CBC"},
    {ACCELCRYPT_MODE_CFB128, "CFB"}, {ACCELCRYPT_MODE_OFB, "OFB"},
    {ACCELCRYPT_MODE_CTR, "CTR"},    {ACCELCRYPT_MODE_GCM, "GCM"},
};

// Our display names, indexed like LibContext::ciphers_. CFB128 is OpenSSL's
// "AES-*-CFB" (full-block feedback).
constexpr const char* kCipherNames[18] = {
    "AES-128-ECB",    "AES-192-ECB", "AES-256-ECB",    "AES-128-CBC",
    "AES-192-CBC",    "AES-256-CBC", "AES-128-CFB128", "AES-192-CFB128",
    "AES-256-CFB128", "AES-128-OFB", "AES-192-OFB",    "AES-256-OFB",
    "AES-128-CTR",    "AES-192-CTR", "AES-256-CTR",    "AES-128-GCM",
    "AES-192-GCM",    "AES-256-GCM",
};

struct DigestName {
  accelcrypt_alg alg;
  const char* name;       // ours
  const char* ossl_name;  // one of the provider's names
  size_t digest_len;
};

constexpr DigestName kDigests[] = {
    {ACCELCRYPT_ALG_SHA1, "SHA-1", "SHA1", 20},
    {ACCELCRYPT_ALG_SHA224, "SHA-224", "SHA2-224", 28},
    {ACCELCRYPT_ALG_SHA256, "SHA-256", "SHA2-256", 32},
    {ACCELCRYPT_ALG_SHA384, "SHA-384", "SHA2-384", 48},
    {ACCELCRYPT_ALG_SHA512, "SHA-512", "SHA2-512", 64},
};

size_t CipherIndex(uint32_t mode, size_t key_len) {
  return (static_cast<size_t>(mode) - 1) * 3 + (key_len / 8 - 2);
}

}  // namespace

absl::StatusOr<std::unique_ptr<LibContext>> LibContext::Create() {
  std::unique_ptr<LibContext> ctx(new (std::nothrow) LibContext());
  if (ctx == nullptr) {
    return absl::ResourceExhaustedError("software: out of memory");
  }
  // A fresh library context reads no configuration file: only what we load
  // explicitly is there.
  ctx->libctx_ = OSSL_LIB_CTX_new();
  if (ctx->libctx_ == nullptr) {
    return LibcryptoError(absl::StatusCode::kUnavailable, "init",
                          "OSSL_LIB_CTX_new failed");
  }
  ctx->provider_ = OSSL_PROVIDER_load(ctx->libctx_, "default");
  if (ctx->provider_ == nullptr) {
    return LibcryptoError(absl::StatusCode::kUnavailable, "init",
                          "cannot load OpenSSL's default provider");
  }
  absl::Status status = ctx->LookUp();
  if (!status.ok()) return status;
  return ctx;
}

absl::Status LibContext::LookUp() {
  int no_store = 0;
  cipher_algs_ =
      OSSL_PROVIDER_query_operation(provider_, OSSL_OP_CIPHER, &no_store);
  digest_algs_ =
      OSSL_PROVIDER_query_operation(provider_, OSSL_OP_DIGEST, &no_store);
  void* provctx = OSSL_PROVIDER_get0_provider_ctx(provider_);
  if (cipher_algs_ == nullptr && digest_algs_ == nullptr) {
    return LibcryptoError(absl::StatusCode::kUnavailable, "init",
                          "the default provider lists no ciphers or digests");
  }

  for (const CipherName& m : kModes) {
    for (size_t key_len : {16, 24, 32}) {
      std::string ossl_name =
          absl::StrFormat("AES-%d-%s", key_len * 8, m.mode_name);
      const OSSL_DISPATCH* table = FindImplementation(cipher_algs_, ossl_name);
      if (table == nullptr) continue;
      CipherDispatch d;
      Bind(table, OSSL_FUNC_CIPHER_NEWCTX, &d.newctx);
      Bind(table, OSSL_FUNC_CIPHER_ENCRYPT_INIT, &d.encrypt_init);
      Bind(table, OSSL_FUNC_CIPHER_DECRYPT_INIT, &d.decrypt_init);
      Bind(table, OSSL_FUNC_CIPHER_UPDATE, &d.update);
      Bind(table, OSSL_FUNC_CIPHER_FINAL, &d.final);
      Bind(table, OSSL_FUNC_CIPHER_CIPHER, &d.cipher);
      Bind(table, OSSL_FUNC_CIPHER_FREECTX, &d.freectx);
      Bind(table, OSSL_FUNC_CIPHER_DUPCTX, &d.dupctx);
      Bind(table, OSSL_FUNC_CIPHER_GET_CTX_PARAMS, &d.get_ctx_params);
      Bind(table, OSSL_FUNC_CIPHER_SET_CTX_PARAMS, &d.set_ctx_params);
      bool gcm = m.mode == ACCELCRYPT_MODE_GCM;
      // What our contexts call: raw `cipher` for the block and stream modes,
      // update/final for GCM.
      if (d.newctx == nullptr || d.encrypt_init == nullptr ||
          d.decrypt_init == nullptr || d.freectx == nullptr ||
          d.dupctx == nullptr || d.get_ctx_params == nullptr ||
          d.set_ctx_params == nullptr ||
          (gcm ? (d.update == nullptr || d.final == nullptr)
               : d.cipher == nullptr)) {
        continue;
      }
      d.mode = m.mode;
      d.key_len = key_len;
      d.alg = ACCELCRYPT_CIPHER_ALG(m.mode, key_len);
      size_t index = CipherIndex(m.mode, key_len);
      d.name = kCipherNames[index];
      d.provctx = provctx;
      // libcrypto's code on this CPU: no device errors mid-stream.
      uint32_t flags = ACCELCRYPT_CAP_STREAMING | ACCELCRYPT_CAP_CPU;
      if (!gcm) flags |= ACCELCRYPT_CAP_PORTABLE_STATE;
      if (m.mode == ACCELCRYPT_MODE_CFB128 || m.mode == ACCELCRYPT_MODE_OFB ||
          gcm) {
        // kModes lists ECB first, so its entry is already filled (or absent).
        const CipherDispatch& ecb =
            ciphers_[CipherIndex(ACCELCRYPT_MODE_ECB, key_len)];
        if (ecb.alg != 0) {
          d.ecb = &ecb;
        } else if (gcm) {
          // GCM IVs longer than OpenSSL's 128 bytes need AES_K(0) from ECB.
          continue;
        } else {
          flags &= ~ACCELCRYPT_CAP_PORTABLE_STATE;
        }
      }
      ciphers_[index] = d;
      caps_.push_back(accelcrypt_capability{d.alg, flags, 1, 0, 0});
    }
  }

  for (const DigestName& n : kDigests) {
    const OSSL_DISPATCH* table = FindImplementation(digest_algs_, n.ossl_name);
    if (table == nullptr) continue;
    DigestDispatch d;
    Bind(table, OSSL_FUNC_DIGEST_NEWCTX, &d.newctx);
    Bind(table, OSSL_FUNC_DIGEST_INIT, &d.init);
    Bind(table, OSSL_FUNC_DIGEST_UPDATE, &d.update);
    Bind(table, OSSL_FUNC_DIGEST_FINAL, &d.final);
    Bind(table, OSSL_FUNC_DIGEST_FREECTX, &d.freectx);
    Bind(table, OSSL_FUNC_DIGEST_DUPCTX, &d.dupctx);
    if (d.newctx == nullptr || d.init == nullptr || d.update == nullptr ||
        d.final == nullptr || d.freectx == nullptr || d.dupctx == nullptr) {
      continue;
    }
    d.alg = n.alg;
    d.name = n.name;
    d.digest_len = n.digest_len;
    d.provctx = provctx;
    digests_[(n.alg & 0xffu) - 1] = d;
    caps_.push_back(accelcrypt_capability{
        n.alg, ACCELCRYPT_CAP_STREAMING | ACCELCRYPT_CAP_CPU, 1, 0, 0});
  }

  // RSA and DSA call the provider's key management, signature and
  // asymmetric cipher functions directly (provider_direct.h: no EVP, so no
  // ENGINE can take them over); the registration self-test proves them
  // before they are offered. Sizes: RSA as OpenSSL's default provider takes
  // them (FIPS 186 needs 1024 and up); DSA 1024..3072 (FIPS 186-4 4.2 L
  // values).
  pkeys_.LookUp(provider_);
  if (pkeys_.rsa() != nullptr) {
    caps_.push_back(accelcrypt_capability{
        ACCELCRYPT_ALG_RSA_SIGN,
        ACCELCRYPT_CAP_RSA_PKCS1 | ACCELCRYPT_CAP_RSA_PSS |
            ACCELCRYPT_CAP_RSA_RAW | ACCELCRYPT_CAP_KEY_IMPORT,
        1, 1024, 0, 16384, 0});
    if (pkeys_.rsa()->has_cipher()) {
      caps_.push_back(accelcrypt_capability{
          ACCELCRYPT_ALG_RSA_CRYPT,
          ACCELCRYPT_CAP_RSA_PKCS1 | ACCELCRYPT_CAP_RSA_OAEP |
              ACCELCRYPT_CAP_RSA_RAW | ACCELCRYPT_CAP_KEY_IMPORT,
          1, 1024, 0, 16384, 0});
    }
  }
  if (pkeys_.dsa() != nullptr) {
    caps_.push_back(accelcrypt_capability{ACCELCRYPT_ALG_DSA_SIGN,
                                          ACCELCRYPT_CAP_KEY_IMPORT, 1, 1024, 0,
                                          3072, 0});
  }

  // The DRBG is declared when the provider offers CTR-DRBG; it is only
  // instantiated (seeded from the kernel) at its first use, which a
  // known-answer test precedes, so loading costs no DRBG set-up. A DRBG
  // that cannot seed then fails that use as a device error (fallback).
  // No ENTROPY capability from it: this backend has no noise source.
  const OSSL_ALGORITHM* rand_algs =
      OSSL_PROVIDER_query_operation(provider_, OSSL_OP_RAND, &no_store);
  rng_ok_ = rand_algs != nullptr &&
            FindImplementation(rand_algs, "CTR-DRBG") != nullptr;
  if (rand_algs != nullptr) {
    OSSL_PROVIDER_unquery_operation(provider_, OSSL_OP_RAND, rand_algs);
  }
  if (rng_ok_) {
    caps_.push_back(
        accelcrypt_capability{ACCELCRYPT_ALG_RNG_RANDOM, 0, 1, 0, 0});
  }
  // The kernel's entropy (getrandom) as the last-resort seed source.
  caps_.push_back(
      accelcrypt_capability{ACCELCRYPT_ALG_RNG_ENTROPY, 0, 1, 0, 0});
  // Every entry is OpenSSL's default provider's own code (or the kernel's
  // getrandom, which OpenSSL's seed source reads too): offering it to
  // OpenSSL through accelcrypt would only add the crossing. The provider
  // leaves such algorithms to the default provider (Router::Interposes).
  for (accelcrypt_capability& cap : caps_) {
    cap.flags |= ACCELCRYPT_CAP_PASS_THROUGH;
  }
  ERR_clear_error();

  description_ = absl::StrFormat(
      "%s, default provider in a private library context (direct provider "
      "dispatch), %d algorithms",
      OpenSSL_version(OPENSSL_VERSION), caps_.size());
  return absl::OkStatus();
}

LibContext::~LibContext() {
  pkeys_.Clear();  // the tables go back before the provider is unloaded
  if (provider_ != nullptr) {
    if (cipher_algs_ != nullptr) {
      OSSL_PROVIDER_unquery_operation(provider_, OSSL_OP_CIPHER, cipher_algs_);
    }
    if (digest_algs_ != nullptr) {
      OSSL_PROVIDER_unquery_operation(provider_, OSSL_OP_DIGEST, digest_algs_);
    }
    OSSL_PROVIDER_unload(provider_);
  }
  OSSL_LIB_CTX_free(libctx_);
}

const CipherDispatch* LibContext::Cipher(accelcrypt_alg alg) const {
  if (ACCELCRYPT_ALG_FAMILY(alg) != ACCELCRYPT_FAMILY_CIPHER) return nullptr;
  uint32_t mode = ACCELCRYPT_CIPHER_MODE(alg);
  uint32_t key_len = ACCELCRYPT_CIPHER_KEY_BYTES(alg);
  if (mode < ACCELCRYPT_MODE_ECB || mode > ACCELCRYPT_MODE_GCM ||
      (key_len != 16 && key_len != 24 && key_len != 32) ||
      (alg & 0x00ff0000u) != 0) {
    return nullptr;
  }
  const CipherDispatch& d = ciphers_[CipherIndex(mode, key_len)];
  return d.alg == alg ? &d : nullptr;
}

const DigestDispatch* LibContext::Digest(accelcrypt_alg alg) const {
  if (ACCELCRYPT_ALG_FAMILY(alg) != ACCELCRYPT_FAMILY_DIGEST) return nullptr;
  uint32_t index = alg & 0xffffffu;
  if (index < 1 || index > digests_.size()) return nullptr;
  const DigestDispatch& d = digests_[index - 1];
  return d.alg == alg ? &d : nullptr;
}

absl::Status LibContext::RandomBytes(absl::Span<uint8_t> out) const {
  if (!rng_ok_) {
    return absl::UnimplementedError("software: RNG: not available");
  }
  if (out.empty()) return absl::OkStatus();
  if (!PrivateRandom(libctx_, out.data(), out.size())) {
    return LibcryptoError(absl::StatusCode::kUnavailable, "RNG",
                          "DRBG generate failed");
  }
  return absl::OkStatus();
}

}  // namespace accelcrypt::software
