// SPDX-License-Identifier: Apache-2.0
#include "backends/software/sha_software.h"

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
