// SPDX-License-Identifier: Apache-2.0
#include "provider/internal/cipher_ctx.h"

#include <openssl/params.h>

#include <memory>
#include <utility>

#include "absl/strings/str_format.h"
#include "core/status.h"
#include "provider/errors.h"

namespace accelcrypt::provider::internal {

absl::Status BadParam(std::string_view name, std::string_view what) {
  return ProviderError(Reason::kBadParameter,
                       absl::StatusCode::kInvalidArgument,
                       absl::StrFormat("parameter \"%s\": %s", name, what));
}

absl::Status NoKey(const CipherCtx& ctx) {
  return ProviderError(
      Reason::kNoKeySet, absl::StatusCode::kFailedPrecondition,
      absl::StrFormat("%s: no key set (call init with a key first)",
                      ctx.info->name));
}

absl::Status TlsNotSupported(const CipherCtx& ctx, const char* param) {
  return ProviderError(
      Reason::kNotSupported, absl::StatusCode::kUnimplemented,
      absl::StrFormat("%s: TLS record-layer parameter \"%s\" is not "
                      "supported by accelcrypt",
                      ctx.info->name, param));
}

absl::Status EnsureStream(CipherCtx& ctx) {
  if (ctx.stream != nullptr) return absl::OkStatus();
  ACCELCRYPT_ASSIGN_OR_RETURN(
      std::unique_ptr<Cipher> cipher,
      ctx.prov->core().router().NewCipher(ctx.info->id));
  ctx.stream = std::make_unique<CipherStream>(std::move(cipher));
  ctx.cipher = &ctx.stream->cipher();
  ctx.stream->set_padding(ctx.pad);
  return absl::OkStatus();
}

absl::Status SetOctets(OSSL_PARAM* p, const void* data, size_t len) {
  // OpenSSL's ciphers answer both pointer and string requests.
  if (OSSL_PARAM_set_octet_ptr(p, data, len) ||
      OSSL_PARAM_set_octet_string(p, data, len)) {
    return absl::OkStatus();
  }
  return BadParam(p->key, "cannot store the value (buffer too small?)");
}

absl::Status CheckKeyLen(const CipherCtx& ctx, size_t keylen) {
  if (keylen != ctx.info->key_len) {
    return ProviderError(
        Reason::kInvalidKeyLength, absl::StatusCode::kInvalidArgument,
        absl::StrFormat("%s takes a %u-byte key, not %u", ctx.info->name,
                        ctx.info->key_len, keylen));
  }
  return absl::OkStatus();
}

void RefreshFastPath(CipherCtx& ctx) {
  ctx.direct = {};
  ctx.direct_checked = false;
  ctx.fast_update =
      !ctx.is_gcm && ctx.stream_ready && ctx.tls_version == 0 &&
      ctx.cipher != nullptr && !ctx.stream->finished() &&
      (ctx.is_stream_mode || (ctx.block_aligned && (ctx.enc || !ctx.pad)));
}

}  // namespace accelcrypt::provider::internal
