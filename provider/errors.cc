// SPDX-License-Identifier: Apache-2.0
#include "provider/errors.h"

#include <openssl/err.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <optional>
#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "core/status.h"
#include "provider/provider_ctx.h"

namespace accelcrypt::provider {
namespace {

constexpr absl::string_view kReasonPayload =
    "type.accelcrypt/accelcrypt.provider.Reason";

// Reason texts: short, lower case, as OpenSSL's own reason strings are.
const OSSL_ITEM kReasonStrings[] = {
    {static_cast<unsigned int>(Reason::kInvalidArgument),
     (void*)"invalid argument"},
    {static_cast<unsigned int>(Reason::kOutOfOrder),
     (void*)"operation called out of order"},
    {static_cast<unsigned int>(Reason::kOutputBufferTooSmall),
     (void*)"output buffer too small"},
    {static_cast<unsigned int>(Reason::kNotSupported), (void*)"not supported"},
    {static_cast<unsigned int>(Reason::kDeviceUnavailable),
     (void*)"accelerator device unavailable"},
    {static_cast<unsigned int>(Reason::kResourceExhausted),
     (void*)"accelerator resources exhausted"},
    {static_cast<unsigned int>(Reason::kInternal), (void*)"internal error"},
    {static_cast<unsigned int>(Reason::kTagMismatch),
     (void*)"authentication tag mismatch"},
    {static_cast<unsigned int>(Reason::kInvalidKeyLength),
     (void*)"invalid key length"},
    {static_cast<unsigned int>(Reason::kInvalidIvLength),
     (void*)"invalid iv length"},
    {static_cast<unsigned int>(Reason::kInvalidTag), (void*)"invalid tag"},
    {static_cast<unsigned int>(Reason::kNoKeySet), (void*)"no key set"},
    {static_cast<unsigned int>(Reason::kBadParameter), (void*)"bad parameter"},
    {static_cast<unsigned int>(Reason::kInitFailed),
     (void*)"provider initialisation failed"},
    {static_cast<unsigned int>(Reason::kEntropyUnavailable),
     (void*)"entropy source unavailable"},
    {static_cast<unsigned int>(Reason::kBadDecrypt), (void*)"bad decrypt"},
    {static_cast<unsigned int>(Reason::kOperationFinished),
     (void*)"operation already finished"},
    {static_cast<unsigned int>(Reason::kBadSignature), (void*)"bad signature"},
    {static_cast<unsigned int>(Reason::kInvalidSaltLength),
     (void*)"invalid salt length"},
    {static_cast<unsigned int>(Reason::kPssSaltlenTooSmall),
     (void*)"pss saltlen too small"},
    {static_cast<unsigned int>(Reason::kDigestNotAllowed),
     (void*)"digest not allowed"},
    {static_cast<unsigned int>(Reason::kIllegalPaddingMode),
     (void*)"illegal or unsupported padding mode"},
    {static_cast<unsigned int>(Reason::kInvalidPaddingMode),
     (void*)"invalid padding mode"},
    {static_cast<unsigned int>(Reason::kNotSupportedForKeyType),
     (void*)"operation not supported for this keytype"},
    {0, nullptr},
};

std::optional<Reason> ExplicitReason(const absl::Status& status) {
  absl::optional<absl::Cord> payload = status.GetPayload(kReasonPayload);
  if (!payload.has_value()) return std::nullopt;
  int value = 0;
  if (!absl::SimpleAtoi(std::string(*payload), &value)) return std::nullopt;
  return static_cast<Reason>(value);
}

void CoreSetError(const ProvCtx& ctx, uint32_t reason, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  ctx.upcalls().vset_error(ctx.handle(), reason, fmt, args);
  va_end(args);
}

}  // namespace

const OSSL_ITEM* ReasonStrings() { return kReasonStrings; }

absl::Status ProviderError(Reason reason, absl::StatusCode code,
                           absl::string_view message) {
  absl::Status status(code, message);
  status.SetPayload(kReasonPayload,
                    absl::Cord(std::to_string(static_cast<int>(reason))));
  return status;
}

Reason ReasonFor(const absl::Status& status) {
  if (std::optional<Reason> reason = ExplicitReason(status)) return *reason;
  if (GetStatusDetail(status) == StatusDetail::kAuthFailed) {
    return Reason::kTagMismatch;
  }
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
      return Reason::kInvalidArgument;
    case absl::StatusCode::kFailedPrecondition:
      return Reason::kOutOfOrder;
    case absl::StatusCode::kOutOfRange:
      return Reason::kOutputBufferTooSmall;
    case absl::StatusCode::kUnimplemented:
    case absl::StatusCode::kNotFound:
      return Reason::kNotSupported;
    case absl::StatusCode::kUnavailable:
      return Reason::kDeviceUnavailable;
    case absl::StatusCode::kResourceExhausted:
      return Reason::kResourceExhausted;
    default:
      return Reason::kInternal;
  }
}

int RaiseError(const ProvCtx* ctx, const absl::Status& status, const char* file,
               int line, const char* func) {
  const Reason reason = status.ok() ? Reason::kInternal : ReasonFor(status);
  const std::string message = status.ok()
                                  ? std::string("failed without a status")
                                  : std::string(status.message());
  const uint32_t code = static_cast<uint32_t>(reason);
  if (ctx != nullptr && ctx->upcalls().new_error != nullptr &&
      ctx->upcalls().set_error_debug != nullptr &&
      ctx->upcalls().vset_error != nullptr) {
    ctx->upcalls().new_error(ctx->handle());
    ctx->upcalls().set_error_debug(ctx->handle(), file, line, func);
    CoreSetError(*ctx, code, "%s", message.c_str());
    return 0;
  }
  // No upcalls (never the case with libcrypto 3.0): report under the
  // provider library with the same reason number.
  ERR_new();
  ERR_set_debug(file, line, func);
  ERR_set_error(ERR_LIB_PROV, static_cast<int>(code), "%s", message.c_str());
  return 0;
}

void ReportInitFailure(const absl::Status& status) {
  // One line on stderr, whatever the log level: with `soft_load = 1` OpenSSL
  // drops the provider and its error queue silently, and the administrator
  // would never learn why accelcrypt is absent.
  static std::atomic<bool> reported{false};
  if (!reported.exchange(true)) {
    std::fprintf(stderr, "accelcrypt: provider not loaded: %s\n",
                 std::string(status.message()).c_str());
  }
  // OpenSSL loads a provider's reason strings only after its init succeeds;
  // register them under the library number the core gave this provider (the
  // one of the error just raised) so `openssl` prints the reason instead of
  // "reason(14)". The copies live for the process, owned by libcrypto's
  // table: this object may be unloaded after a failed init.
  const unsigned long err = ERR_peek_last_error();
  const int lib = ERR_GET_LIB(err);
  static std::atomic<int> registered_lib{0};
  if (err == 0 || lib < ERR_LIB_USER || registered_lib.exchange(lib) == lib) {
    return;
  }
  size_t n = 0;
  while (kReasonStrings[n].id != 0) ++n;
  auto* table = static_cast<ERR_STRING_DATA*>(
      OPENSSL_zalloc((n + 2) * sizeof(ERR_STRING_DATA)));
  if (table == nullptr) return;
  table[0].error = ERR_PACK(lib, 0, 0);
  table[0].string = OPENSSL_strdup("accelcrypt");
  for (size_t i = 0; i < n; ++i) {
    table[i + 1].error = ERR_PACK(lib, 0, kReasonStrings[i].id);
    table[i + 1].string =
        OPENSSL_strdup(static_cast<const char*>(kReasonStrings[i].ptr));
  }
  ERR_load_strings(lib, table);
}

}  // namespace accelcrypt::provider
