// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_PROVIDER_ERRORS_H_
#define ACCELCRYPT_PROVIDER_ERRORS_H_

#include <openssl/core.h>

#include <exception>
#include <new>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace accelcrypt::provider {

class ProvCtx;

// Reason is the provider's error reason code, published to OpenSSL through
// get_reason_strings (so `openssl` prints "accelcrypt::tag mismatch"). The
// values are stable: they appear in packed OpenSSL error codes.
enum class Reason : int {
  kInvalidArgument = 1,
  kOutOfOrder = 2,
  kOutputBufferTooSmall = 3,
  kNotSupported = 4,
  kDeviceUnavailable = 5,
  kResourceExhausted = 6,
  kInternal = 7,
  kTagMismatch = 8,
  kInvalidKeyLength = 9,
  kInvalidIvLength = 10,
  kInvalidTag = 11,
  kNoKeySet = 12,
  kBadParameter = 13,
  kInitFailed = 14,
  kEntropyUnavailable = 15,
  kBadDecrypt = 16,
  kOperationFinished = 17,
  kBadSignature = 18,
  // As OpenSSL's default provider names them (PROV_R_*), so callers that
  // match on the reason (evp_test's `Reason =`) see the same text.
  kInvalidSaltLength = 19,
  kPssSaltlenTooSmall = 20,
  kDigestNotAllowed = 21,
  kIllegalPaddingMode = 22,
  kInvalidPaddingMode = 23,
  kNotSupportedForKeyType = 24,
};

// ReasonStrings returns the OSSL_ITEM array (terminated by {0, NULL}) for
// the provider's get_reason_strings. Static; lives forever.
const OSSL_ITEM* ReasonStrings();

// ReportInitFailure is called once the init error is raised: it prints one
// line on stderr (once per process) and registers the reason strings under
// the provider's library number so `openssl` can name the reason.
void ReportInitFailure(const absl::Status& status);

// ProviderError returns a status with `code` and `message` that carries
// `reason`, for errors the provider itself detects (parameter checks) and
// that deserve a more precise reason than the code's default. Allocates:
// error paths only.
absl::Status ProviderError(Reason reason, absl::StatusCode code,
                           absl::string_view message);

// ReasonFor maps a status to a reason: an explicit ProviderError reason
// first, then the status detail (kAuthFailed -> kTagMismatch), then the
// code.
Reason ReasonFor(const absl::Status& status);

// RaiseError is the one place where a Status becomes an OpenSSL error: it
// pushes an error with the reason from ReasonFor and the status message as
// data onto the calling thread's error queue, through the core's error
// upcalls (OSSL_FUNC_CORE_NEW_ERROR, _SET_ERROR_DEBUG, _VSET_ERROR) when
// the core offered them, else through ERR_raise_data. `ctx` may be null.
// Returns 0, so dispatch functions can `return RaiseError(ctx, status);`.
// An OK status is treated as kInternal (a bug: failing without a reason).
int RaiseError(const ProvCtx* ctx, const absl::Status& status,
               const char* file = __builtin_FILE(), int line = __builtin_LINE(),
               const char* func = __builtin_FUNCTION());

// Guard runs a dispatch function body and turns an escaping C++ exception
// into an OpenSSL error (returning 0): nothing may unwind through
// libcrypto's C frames. Costs nothing on the non-throwing path.
template <typename F>
int Guard(const ProvCtx* ctx, F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return RaiseError(ctx, absl::ResourceExhaustedError("out of memory"));
  } catch (const std::exception& e) {
    return RaiseError(ctx, absl::InternalError(e.what()));
  } catch (...) {
    return RaiseError(ctx, absl::InternalError("unknown exception"));
  }
}

}  // namespace accelcrypt::provider

#endif  // ACCELCRYPT_PROVIDER_ERRORS_H_
