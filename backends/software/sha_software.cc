// SPDX-License-Identifier: Apache-2.0
// The one-shot path calls libcrypto's SHA functions, which OpenSSL 3.0 marks
// deprecated for applications (see ShaSoftware::OneShot for why).
#define OPENSSL_SUPPRESS_DEPRECATED
#include "backends/software/sha_software.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

#include "absl/base/optimization.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "backends/software/lib_context.h"
#include "backends/software/openssl_error.h"

namespace accelcrypt::software {
namespace {

// LowLevelDirect is the accelcrypt_digest_direct table over one of
// libcrypto's low-level SHA function families: the state is the family's
// context structure. The functions return 1 for any input the table's
// contract allows.
template <typename Ctx, int (*Init)(Ctx*),
          int (*Update)(Ctx*, const void*, size_t),
          int (*Final)(unsigned char*, Ctx*)>
struct LowLevelDirect {
  static void DoInit(void* state) { Init(static_cast<Ctx*>(state)); }
  static void DoUpdate(void* state, const uint8_t* data, size_t len) {
    Update(static_cast<Ctx*>(state), data, len);
  }
  static void DoFinal(void* state, uint8_t* out) {
    Final(out, static_cast<Ctx*>(state));
  }
  static constexpr accelcrypt_digest_direct kTable = {
      sizeof(accelcrypt_digest_direct), sizeof(Ctx), DoInit, DoUpdate, DoFinal};
};

}  // namespace

const accelcrypt_digest_direct* ShaSoftware::Direct(accelcrypt_alg alg) {
  switch (alg) {
    case ACCELCRYPT_ALG_SHA1:
      return &LowLevelDirect<SHA_CTX, SHA1_Init, SHA1_Update,
                             SHA1_Final>::kTable;
    case ACCELCRYPT_ALG_SHA224:
      return &LowLevelDirect<SHA256_CTX, SHA224_Init, SHA224_Update,
                             SHA224_Final>::kTable;
    case ACCELCRYPT_ALG_SHA256:
      return &LowLevelDirect<SHA256_CTX, SHA256_Init, SHA256_Update,
                             SHA256_Final>::kTable;
    case ACCELCRYPT_ALG_SHA384:
      return &LowLevelDirect<SHA512_CTX, SHA384_Init, SHA384_Update,
                             SHA384_Final>::kTable;
    case ACCELCRYPT_ALG_SHA512:
      return &LowLevelDirect<SHA512_CTX, SHA512_Init, SHA512_Update,
                             SHA512_Final>::kTable;
    default:
      return nullptr;
  }
}

absl::StatusOr<std::unique_ptr<ShaSoftware>> ShaSoftware::Create(
    const DigestDispatch& d) {
  void* prov_ctx = d.newctx(d.provctx);
  if (prov_ctx == nullptr) {
    return LibcryptoError(absl::StatusCode::kResourceExhausted, d.name,
                          "cannot allocate a digest context");
  }
  std::unique_ptr<ShaSoftware> ctx(new (std::nothrow) ShaSoftware(d, prov_ctx));
  if (ctx == nullptr) {
    d.freectx(prov_ctx);
    return absl::ResourceExhaustedError(
        absl::StrFormat("software: %s: out of memory", d.name));
  }
  absl::Status status = ctx->Init();
  if (!status.ok()) return status;
  return ctx;
}

ShaSoftware::~ShaSoftware() { d_.freectx(prov_ctx_); }

absl::Status ShaSoftware::Init() {
  if (d_.init(prov_ctx_, nullptr) <= 0) {
    ready_ = false;
    return LibcryptoError(absl::StatusCode::kInternal, d_.name,
                          "digest init failed");
  }
  ready_ = true;
  return absl::OkStatus();
}

absl::Status ShaSoftware::UpdateSlow(const uint8_t* data, size_t len) {
  if (!ready_) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "software: %s: update needs init (after final)", d_.name));
  }
  if (len == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrFormat("software: %s: NULL data", d_.name));
}

absl::Status ShaSoftware::UpdateFailed() const {
  return LibcryptoError(absl::StatusCode::kInternal, d_.name,
                        "digest update failed");
}

absl::Status ShaSoftware::Final(uint8_t* out, size_t out_len) {
  if (!ready_) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "software: %s: final needs init (after final)", d_.name));
  }
  if (out_len < d_.digest_len) {
    return absl::OutOfRangeError(
        absl::StrFormat("software: %s: output is %d bytes, need %d", d_.name,
                        out_len, d_.digest_len));
  }
  if (out == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrFormat("software: %s: NULL output", d_.name));
  }
  size_t written = 0;
  int ok = d_.final(prov_ctx_, out, &written, out_len);
  ready_ = false;
  if (ok <= 0 || written != d_.digest_len) {
    return LibcryptoError(absl::StatusCode::kInternal, d_.name,
                          "digest final failed");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ShaSoftware>> ShaSoftware::Clone() const {
  void* prov_ctx = d_.dupctx(prov_ctx_);
  if (prov_ctx == nullptr) {
    return LibcryptoError(absl::StatusCode::kResourceExhausted, d_.name,
                          "cannot duplicate the digest context");
  }
  std::unique_ptr<ShaSoftware> copy(new (std::nothrow)
                                        ShaSoftware(d_, prov_ctx));
  if (copy == nullptr) {
    d_.freectx(prov_ctx);
    return absl::ResourceExhaustedError(
        absl::StrFormat("software: %s: out of memory", d_.name));
  }
  copy->ready_ = ready_;
  return copy;
}

absl::Status ShaSoftware::OneShot(const DigestDispatch& d, const uint8_t* data,
                                  size_t len, uint8_t* out, size_t out_len) {
  if (out_len < d.digest_len) {
    return absl::OutOfRangeError(
        absl::StrFormat("software: %s: output is %d bytes, need %d", d.name,
                        out_len, d.digest_len));
  }
  if (out == nullptr || (data == nullptr && len != 0)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("software: %s: NULL buffer", d.name));
  }
  // libcrypto's low-level SHA functions on a stack context: no allocation,
  // no provider dispatch. They are the code the default provider's
  // SHA-1/SHA-2 implementations run (its sha2_prov.c calls
  // SHA256_Init/Update/Final), and no ENGINE can take them over. Not the
  // one-shot SHA256() & co.: in OpenSSL 3.0 those go through EVP_Q_digest
  // in the default library context, which may route back into accelcrypt.
  // The per-message context allocation of the provider's newctx/freectx
  // was a third of the non-hashing cost of a 16-byte EVP_Digest through
  // accelcrypt (callgrind).
  const accelcrypt_digest_direct* direct = Direct(d.alg);
  if (direct == nullptr) return OneShotDispatch(d, data, len, out, out_len);
  // A stack state, wiped afterwards (it holds the message's last block).
  alignas(16) uint8_t state[sizeof(SHA512_CTX)];
  static_assert(sizeof(SHA512_CTX) >= sizeof(SHA256_CTX) &&
                sizeof(SHA512_CTX) >= sizeof(SHA_CTX));
  direct->init(state);
  direct->update(state, data, len);
  direct->final(state, out);
  OPENSSL_cleanse(state, direct->state_size);
  return absl::OkStatus();
}

absl::Status ShaSoftware::OneShotDispatch(const DigestDispatch& d,
                                          const uint8_t* data, size_t len,
                                          uint8_t* out, size_t out_len) {
  // Straight on a provider context: one allocation, no wrapper object.
  void* ctx = d.newctx(d.provctx);
  if (ctx == nullptr) {
    return LibcryptoError(absl::StatusCode::kResourceExhausted, d.name,
                          "cannot allocate a digest context");
  }
  size_t written = 0;
  bool ok = d.init(ctx, nullptr) > 0 &&
            (len == 0 || d.update(ctx, data, len) > 0) &&
            d.final(ctx, out, &written, out_len) > 0 && written == d.digest_len;
  d.freectx(ctx);
  if (!ok) {
    return LibcryptoError(absl::StatusCode::kInternal, d.name,
                          "one-shot digest failed");
  }
  return absl::OkStatus();
}

}  // namespace accelcrypt::software
