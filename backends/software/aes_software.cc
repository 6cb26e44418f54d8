// SPDX-License-Identifier: Apache-2.0
#include "backends/software/aes_software.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/params.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>

#include "absl/base/optimization.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "accelcrypt/backend.h"
#include "backends/software/gcm_long_iv.h"
#include "backends/software/lib_context.h"
#include "backends/software/openssl_error.h"

namespace accelcrypt::software {
namespace {

constexpr size_t kBlockSize = 16;
// The plugin ABI's GCM IV limit.
constexpr size_t kGcmMaxIvLen = 1024;
// OpenSSL keeps GCM IVs of up to 1024 bits (GCM_IV_MAX_SIZE); longer ones are
// mapped to an equivalent 16-byte IV (gcm_long_iv.h).
constexpr size_t kProviderMaxIvLen = 128;
// SP 800-38D section 5.2.1.2 allows tags down to 32 bits (4 bytes).
constexpr size_t kGcmMinTagLen = 4;
constexpr size_t kGcmMaxTagLen = 16;

// DecrementCounter subtracts one from a 128-bit big-endian counter, the
// inverse of the full-width increment OpenSSL's CTR mode applies.
void DecrementCounter(uint8_t counter[kBlockSize]) {
  for (int i = kBlockSize - 1; i >= 0; --i) {
    if (counter[i]-- != 0) break;
  }
}

// SameKey compares two keys of `len` bytes in constant time, 8 bytes at a
// time (AES keys are 16, 24 or 32 bytes). CRYPTO_memcmp does the same one
// byte at a time, which costs more than the rest of a GCM re-init.
bool SameKey(const uint8_t* a, const uint8_t* b, size_t len) {
  uint64_t diff = 0;
  size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    uint64_t x, y;
    std::memcpy(&x, a + i, 8);
    std::memcpy(&y, b + i, 8);
    diff |= x ^ y;
  }
  for (; i < len; ++i) diff |= a[i] ^ b[i];
  return diff == 0;
}

}  // namespace

absl::StatusOr<std::unique_ptr<AesSoftware>> AesSoftware::Create(
    const CipherDispatch& d) {
  void* prov_ctx = d.newctx(d.provctx);
  if (prov_ctx == nullptr) {
    return LibcryptoError(absl::StatusCode::kResourceExhausted, d.name,
                          "cannot allocate a cipher context");
  }
  std::unique_ptr<AesSoftware> ctx(new (std::nothrow) AesSoftware(d, prov_ctx));
  if (ctx == nullptr) {
    d.freectx(prov_ctx);
    return absl::ResourceExhaustedError(
        absl::StrFormat("software: %s: out of memory", d.name));
  }
  return ctx;
}

AesSoftware::~AesSoftware() {
  OPENSSL_cleanse(key_, sizeof(key_));
  d_.freectx(prov_ctx_);
}

absl::Status AesSoftware::Init(bool encrypt, absl::Span<const uint8_t> key,
                               absl::Span<const uint8_t> iv) {
  if (key.size() != d_.key_len) {
    return absl::InvalidArgumentError(
        absl::StrFormat("software: %s: key is %d bytes, need %d", d_.name,
                        key.size(), d_.key_len));
  }
  if (key.data() == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrFormat("software: %s: key is NULL", d_.name));
  }
  switch (d_.mode) {
    case ACCELCRYPT_MODE_ECB:
      if (!iv.empty()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "software: %s: ECB takes no IV, got %d bytes", d_.name, iv.size()));
      }
      break;
    case ACCELCRYPT_MODE_GCM:
      if (iv.empty() || iv.size() > kGcmMaxIvLen) {
        return absl::InvalidArgumentError(
            absl::StrFormat("software: %s: IV is %d bytes, need 1..%d", d_.name,
                            iv.size(), kGcmMaxIvLen));
      }
      break;
    default:
      if (iv.size() != kBlockSize) {
        return absl::InvalidArgumentError(
            absl::StrFormat("software: %s: IV is %d bytes, need %d", d_.name,
                            iv.size(), kBlockSize));
      }
      break;
  }
  if (!iv.empty() && iv.data() == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrFormat("software: %s: IV is NULL", d_.name));
  }

  uint8_t mapped_iv[kBlockSize];
  const bool long_iv =
      d_.mode == ACCELCRYPT_MODE_GCM && iv.size() > kProviderMaxIvLen;
  if (long_iv) {
    uint8_t h[kBlockSize];
    static constexpr uint8_t kZeroBlock[kBlockSize] = {};
    absl::Status s = EcbBlock(key.data(), /*encrypt=*/true, kZeroBlock, h);
    if (!s.ok()) return s;
    GcmEquivalentIv(h, iv.data(), iv.size(), mapped_iv);
    OPENSSL_cleanse(h, sizeof(h));
    iv = absl::MakeConstSpan(mapped_iv, kBlockSize);
  }
  absl::Status status = ProviderInit(encrypt, key, iv);
  // The mapped IV and the caller's IV together give H away; keep neither.
  if (long_iv) OPENSSL_cleanse(mapped_iv, sizeof(mapped_iv));
  if (!status.ok()) {
    initialized_ = raw_ready_ = false;
    return status;
  }
  // Every key of this context is d_.key_len bytes (checked above): the copy
  // overwrites all of the previous one, and the rest of key_ stays zero.
  std::memcpy(key_, key.data(), key.size());
  encrypt_ = encrypt;
  initialized_ = true;
  raw_ready_ = d_.mode != ACCELCRYPT_MODE_GCM;
  phase_ = Phase::kIdle;
  tag_set_ = false;
  return absl::OkStatus();
}

absl::Status AesSoftware::ProviderInit(bool encrypt,
                                       absl::Span<const uint8_t> key,
                                       absl::Span<const uint8_t> iv) {
  if (d_.mode == ACCELCRYPT_MODE_GCM && iv.size() != provider_iv_len_) {
    // The IV length goes in before the key and IV (OpenSSL sizes its GHASH
    // pre-counter block from it). The provider context keeps it across
    // inits, so it is sent only when it changes: each set_ctx_params call
    // costs a parameter lookup per settable GCM key, on every message.
    provider_iv_len_ = 0;
    size_t iv_len = iv.size();
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_size_t(OSSL_CIPHER_PARAM_AEAD_IVLEN, &iv_len),
        OSSL_PARAM_construct_end()};
    if (d_.set_ctx_params(prov_ctx_, params) <= 0) {
      return LibcryptoError(absl::StatusCode::kInternal, d_.name,
                            "setting the GCM IV length failed");
    }
  }
  OSSL_FUNC_cipher_encrypt_init_fn* init_fn =
      encrypt ? d_.encrypt_init : d_.decrypt_init;
  // GCM re-initialised with the key the provider context already holds
  // (a new message under the same key, as TLS and `openssl speed` do):
  // init without a key keeps the schedule and the GHASH key H, and only
  // takes the new IV and direction (GCM runs AES forwards both ways). That
  // saves the key expansion and CRYPTO_gcm128_init on every message. The
  // comparison is constant-time; key_ is what the context was last keyed
  // with, as long as that init succeeded (initialized_).
  const bool same_key = d_.mode == ACCELCRYPT_MODE_GCM && initialized_ &&
                        SameKey(key_, key.data(), key.size());
  // Lengths were checked by Init, so a failure here is libcrypto's own; the
  // context then needs a new Init (which sends the IV length again).
  if (init_fn(prov_ctx_, same_key ? nullptr : key.data(),
              same_key ? 0 : key.size(), iv.empty() ? nullptr : iv.data(),
              iv.size(), nullptr) <= 0) {
    provider_iv_len_ = 0;
    return LibcryptoError(absl::StatusCode::kInternal, d_.name,
                          "provider init failed");
  }
  if (d_.mode == ACCELCRYPT_MODE_GCM) provider_iv_len_ = iv.size();
  return absl::OkStatus();
}

absl::Status AesSoftware::UpdateSlow(const uint8_t* in, size_t in_len,
                                     uint8_t* out) {
  if (!initialized_) {
    return absl::FailedPreconditionError(
        absl::StrFormat("software: %s: update before init", d_.name));
  }
  if (in_len == 0) return absl::OkStatus();
  if (in == nullptr || out == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrFormat("software: %s: NULL buffer", d_.name));
  }
  if (d_.mode != ACCELCRYPT_MODE_GCM) {
    // Update's fast path takes every valid non-GCM call.
    return absl::InvalidArgumentError(absl::StrFormat(
        "software: %s: %d bytes is not a whole number of 16-byte blocks",
        d_.name, in_len));
  }
  if (phase_ == Phase::kFinal) {
    return absl::FailedPreconditionError(
        absl::StrFormat("software: %s: update after final", d_.name));
  }
  size_t out_len = 0;
  if (d_.update(prov_ctx_, out, &out_len, in_len, in, in_len) <= 0) {
    return LibcryptoError(absl::StatusCode::kInternal, d_.name,
                          "GCM update failed");
  }
  phase_ = Phase::kData;
  return absl::OkStatus();
}

absl::Status AesSoftware::Direct(accelcrypt_cipher_direct_fn* fn,
                                 void** direct_ctx) const {
  if (!raw_ready_) {
    return absl::UnimplementedError(absl::StrFormat(
        "software: %s: no direct transform (GCM, or not initialised)",
        d_.name));
  }
  // OSSL_FUNC_cipher_cipher_fn and _update_fn have exactly the direct
  // transform's shape; they fail only for what the direct contract excludes
  // (partial ECB/CBC blocks, a short output), never with a device error.
  // Stream modes take the provider's update, which for them is the same
  // transform without the cipher function's provider-running check (7
  // instructions a call less, callgrind); ECB/CBC take the raw cipher
  // function, which skips update's padding and block buffering.
  static_assert(
      std::is_same_v<OSSL_FUNC_cipher_cipher_fn*, accelcrypt_cipher_direct_fn>);
  static_assert(
      std::is_same_v<OSSL_FUNC_cipher_update_fn*, accelcrypt_cipher_direct_fn>);
  *fn = block_mask_ == 0 ? d_.update : d_.cipher;
  *direct_ctx = prov_ctx_;
  return absl::OkStatus();
}

absl::Status AesSoftware::CipherFailed() const {
  return LibcryptoError(absl::StatusCode::kInternal, d_.name,
                        "cipher update failed");
}

absl::Status AesSoftware::Aad(const uint8_t* aad, size_t aad_len) {
  if (!initialized_) {
    return absl::FailedPreconditionError(
        absl::StrFormat("software: %s: AAD before init", d_.name));
  }
  if (d_.mode != ACCELCRYPT_MODE_GCM) {
    return absl::FailedPreconditionError(
        absl::StrFormat("software: %s: AAD is only for GCM", d_.name));
  }
  if (phase_ == Phase::kData || phase_ == Phase::kFinal) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "software: %s: AAD must come before any data", d_.name));
  }
  if (aad_len == 0) return absl::OkStatus();
  if (aad == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrFormat("software: %s: NULL AAD buffer", d_.name));
  }
  size_t out_len = 0;
  // A NULL output tells the provider the input is AAD.
  if (d_.update(prov_ctx_, nullptr, &out_len, aad_len, aad, aad_len) <= 0) {
    return LibcryptoError(absl::StatusCode::kInternal, d_.name,
                          "GCM AAD failed");
  }
  phase_ = Phase::kAad;
  return absl::OkStatus();
}

absl::Status AesSoftware::Final() {
  if (!initialized_) {
    return absl::FailedPreconditionError(
        absl::StrFormat("software: %s: final before init", d_.name));
  }
  if (d_.mode != ACCELCRYPT_MODE_GCM) return absl::OkStatus();
  if (phase_ == Phase::kFinal) {
    return absl::FailedPreconditionError(
        absl::StrFormat("software: %s: final called twice", d_.name));
  }
  if (!encrypt_ && !tag_set_) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "software: %s: set_tag must come before final when decrypting",
        d_.name));
  }
  uint8_t sink[kBlockSize];
  size_t out_len = 0;
  int ok = d_.final(prov_ctx_, sink, &out_len, sizeof(sink));
  // The provider retires the IV either way: the operation is over.
  phase_ = Phase::kFinal;
  if (ok <= 0) {
    if (!encrypt_) return AuthFailedError(d_.name);
    return LibcryptoError(absl::StatusCode::kInternal, d_.name,
                          "GCM final failed");
  }
  return absl::OkStatus();
}

absl::Status AesSoftware::GetTag(uint8_t* tag, size_t tag_len) {
  if (d_.mode != ACCELCRYPT_MODE_GCM) {
    return absl::FailedPreconditionError(
        absl::StrFormat("software: %s: no tag outside GCM", d_.name));
  }
  if (!initialized_ || !encrypt_ || phase_ != Phase::kFinal) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "software: %s: the tag is ready only after an encrypting final",
        d_.name));
  }
  if (tag_len < kGcmMinTagLen || tag_len > kGcmMaxTagLen || tag == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrFormat("software: %s: tag length %d, need %d..%d", d_.name,
                        tag_len, kGcmMinTagLen, kGcmMaxTagLen));
  }
  // Built in place rather than with OSSL_PARAM_construct_octet_string and
  // _end (two libcrypto calls per message for the same five fields each).
  OSSL_PARAM params[] = {{OSSL_CIPHER_PARAM_AEAD_TAG, OSSL_PARAM_OCTET_STRING,
                          tag, tag_len, OSSL_PARAM_UNMODIFIED},
                         OSSL_PARAM_END};
  if (d_.get_ctx_params(prov_ctx_, params) <= 0) {
    return LibcryptoError(absl::StatusCode::kInternal, d_.name,
                          "reading the GCM tag failed");
  }
  return absl::OkStatus();
}

absl::Status AesSoftware::SetTag(const uint8_t* tag, size_t tag_len) {
  if (d_.mode != ACCELCRYPT_MODE_GCM) {
    return absl::FailedPreconditionError(
        absl::StrFormat("software: %s: no tag outside GCM", d_.name));
  }
  if (!initialized_ || encrypt_ || phase_ == Phase::kFinal) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "software: %s: set_tag is for a decrypting context before final",
        d_.name));
  }
  if (tag_len < kGcmMinTagLen || tag_len > kGcmMaxTagLen || tag == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrFormat("software: %s: tag length %d, need %d..%d", d_.name,
                        tag_len, kGcmMinTagLen, kGcmMaxTagLen));
  }
  // Built in place, as in GetTag.
  OSSL_PARAM params[] = {
      {OSSL_CIPHER_PARAM_AEAD_TAG, OSSL_PARAM_OCTET_STRING,
       const_cast<uint8_t*>(tag), tag_len, OSSL_PARAM_UNMODIFIED},
      OSSL_PARAM_END};
  if (d_.set_ctx_params(prov_ctx_, params) <= 0) {
    return LibcryptoError(absl::StatusCode::kInternal, d_.name,
                          "setting the GCM tag failed");
  }
  tag_set_ = true;
  return absl::OkStatus();
}

absl::Status AesSoftware::GetState(accelcrypt_cipher_state* out) const {
  if (d_.mode == ACCELCRYPT_MODE_GCM) {
    return absl::UnimplementedError(
        absl::StrFormat("software: %s: GCM state is not portable", d_.name));
  }
  if (!initialized_) {
    return absl::FailedPreconditionError(
        absl::StrFormat("software: %s: get_state before init", d_.name));
  }
  accelcrypt_cipher_state state{};
  if (d_.mode != ACCELCRYPT_MODE_ECB) {
    unsigned int num = 0;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_UPDATED_IV,
                                          state.iv, sizeof(state.iv)),
        OSSL_PARAM_construct_uint(OSSL_CIPHER_PARAM_NUM, &num),
        OSSL_PARAM_construct_end()};
    if (d_.get_ctx_params(prov_ctx_, params) <= 0) {
      return LibcryptoError(absl::StatusCode::kInternal, d_.name,
                            "reading the running IV failed");
    }
    if (num >= kBlockSize) {
      return absl::InternalError(absl::StrFormat(
          "software: %s: provider reports block position %d", d_.name, num));
    }
    state.num = d_.mode == ACCELCRYPT_MODE_CBC ? 0 : num;
  }
  *out = state;
  return absl::OkStatus();
}

absl::Status AesSoftware::Restart(const uint8_t iv[kBlockSize]) {
  OSSL_FUNC_cipher_encrypt_init_fn* init_fn =
      encrypt_ ? d_.encrypt_init : d_.decrypt_init;
  // No key: the provider keeps the schedule and only resets IV and position.
  if (init_fn(prov_ctx_, nullptr, 0, iv, kBlockSize, nullptr) <= 0) {
    return LibcryptoError(absl::StatusCode::kInternal, d_.name,
                          "restarting with a new IV failed");
  }
  return absl::OkStatus();
}

absl::Status AesSoftware::Advance(const uint8_t* in, size_t num) {
  static constexpr uint8_t kZeros[kBlockSize] = {};
  uint8_t sink[kBlockSize];
  size_t out_len = 0;
  int ok = d_.cipher(prov_ctx_, sink, &out_len, sizeof(sink),
                     in != nullptr ? in : kZeros, num);
  OPENSSL_cleanse(sink, sizeof(sink));
  if (ok <= 0) {
    return LibcryptoError(absl::StatusCode::kInternal, d_.name,
                          "advancing to the block position failed");
  }
  return absl::OkStatus();
}

absl::Status AesSoftware::EcbBlock(const uint8_t* key, bool encrypt,
                                   const uint8_t in[kBlockSize],
                                   uint8_t out[kBlockSize]) const {
  const CipherDispatch& ecb = *d_.ecb;
  void* ctx = ecb.newctx(ecb.provctx);
  if (ctx == nullptr) {
    return LibcryptoError(absl::StatusCode::kResourceExhausted, d_.name,
                          "cannot allocate an ECB context");
  }
  OSSL_FUNC_cipher_encrypt_init_fn* init_fn =
      encrypt ? ecb.encrypt_init : ecb.decrypt_init;
  size_t out_len = 0;
  bool ok = init_fn(ctx, key, d_.key_len, nullptr, 0, nullptr) > 0 &&
            ecb.cipher(ctx, out, &out_len, kBlockSize, in, kBlockSize) > 0;
  ecb.freectx(ctx);  // wipes the key schedule
  if (!ok) {
    return LibcryptoError(absl::StatusCode::kInternal, d_.name,
                          "one-block ECB operation failed");
  }
  return absl::OkStatus();
}

absl::Status AesSoftware::SetState(const accelcrypt_cipher_state& state) {
  if (d_.mode == ACCELCRYPT_MODE_GCM) {
    return absl::UnimplementedError(
        absl::StrFormat("software: %s: GCM state is not portable", d_.name));
  }
  if (!initialized_) {
    return absl::FailedPreconditionError(
        absl::StrFormat("software: %s: set_state before init", d_.name));
  }
  bool block_mode =
      d_.mode == ACCELCRYPT_MODE_ECB || d_.mode == ACCELCRYPT_MODE_CBC;
  if (state.num >= kBlockSize || (block_mode && state.num != 0)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "software: %s: block position %d out of range", d_.name, state.num));
  }
  if (d_.mode == ACCELCRYPT_MODE_ECB) return absl::OkStatus();

  // OpenSSL 3.0.x refuses to set a non-zero OSSL_CIPHER_PARAM_NUM for
  // stream modes (its bound is the 1-byte "block size"), and CTR keeps the
  // current keystream block where no parameter reaches it. So the position is
  // rebuilt by running the mode: start one block earlier and push `num`
  // bytes through, which leaves exactly the state OpenSSL itself would hold.
  //   CTR: start at counter - 1; the keystream block becomes E(counter - 1)
  //        and the counter is incremented to `iv`.
  //   OFB: start at X = AES^-1(iv); the register becomes E(X) = iv.
  //   CFB: start at X = AES^-1(iv); output byte i lands in register byte i.
  //        Encrypting zeros outputs E(X)[i] = iv[i]; decrypting feeds the
  //        ciphertext iv[i] straight in. Either way the register ends as iv.
  uint8_t start[kBlockSize];
  std::memcpy(start, state.iv, kBlockSize);
  const uint8_t* advance_in = nullptr;
  if (state.num != 0) {
    if (d_.mode == ACCELCRYPT_MODE_CTR) {
      DecrementCounter(start);
    } else if (d_.ecb == nullptr) {
      return absl::UnimplementedError(absl::StrFormat(
          "software: %s: no ECB to restore a mid-block position", d_.name));
    } else {
      absl::Status s = EcbBlock(key_, /*encrypt=*/false, state.iv, start);
      if (!s.ok()) return s;
      if (d_.mode == ACCELCRYPT_MODE_CFB128 && !encrypt_) {
        advance_in = state.iv;
      }
    }
  }
  // Keep a copy so a failure below leaves the context as it was.
  void* backup = d_.dupctx(prov_ctx_);
  if (backup == nullptr) {
    OPENSSL_cleanse(start, sizeof(start));
    return LibcryptoError(absl::StatusCode::kResourceExhausted, d_.name,
                          "cannot allocate a backup context");
  }
  absl::Status status = Restart(start);
  OPENSSL_cleanse(start, sizeof(start));
  if (status.ok() && state.num != 0) status = Advance(advance_in, state.num);
  if (!status.ok()) {
    d_.freectx(prov_ctx_);
    prov_ctx_ = backup;
    return status;
  }
  d_.freectx(backup);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<AesSoftware>> AesSoftware::Clone() const {
  void* prov_ctx = d_.dupctx(prov_ctx_);
  if (prov_ctx == nullptr) {
    return LibcryptoError(absl::StatusCode::kResourceExhausted, d_.name,
                          "cannot duplicate the cipher context");
  }
  std::unique_ptr<AesSoftware> copy(new (std::nothrow)
                                        AesSoftware(d_, prov_ctx));
  if (copy == nullptr) {
    d_.freectx(prov_ctx);
    return absl::ResourceExhaustedError(
        absl::StrFormat("software: %s: out of memory", d_.name));
  }
  std::memcpy(copy->key_, key_, sizeof(key_));
  copy->initialized_ = initialized_;
  copy->raw_ready_ = raw_ready_;
  copy->encrypt_ = encrypt_;
  copy->phase_ = phase_;
  copy->tag_set_ = tag_set_;
  // dupctx copied the provider context's IV length too.
  copy->provider_iv_len_ = provider_iv_len_;
  return copy;
}

}  // namespace accelcrypt::software
