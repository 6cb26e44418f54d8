// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_CORE_STATUS_H_
#define ACCELCRYPT_CORE_STATUS_H_

#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "accelcrypt/backend.h"

// ACCELCRYPT_RETURN_IF_ERROR(expr) returns the status of `expr` when not OK.
#define ACCELCRYPT_RETURN_IF_ERROR(expr)                             \
  do {                                                               \
    ::absl::Status accelcrypt_status_tmp_ = (expr);                  \
    if (!accelcrypt_status_tmp_.ok()) return accelcrypt_status_tmp_; \
  } while (false)

#define ACCELCRYPT_STATUS_CONCAT_INNER_(a, b) a##b
#define ACCELCRYPT_STATUS_CONCAT_(a, b) ACCELCRYPT_STATUS_CONCAT_INNER_(a, b)

// ACCELCRYPT_ASSIGN_OR_RETURN(lhs, expr) evaluates the StatusOr `expr`,
// returns its status when not OK, otherwise moves its value into `lhs` (which
// may be a declaration: `ACCELCRYPT_ASSIGN_OR_RETURN(auto x, F());`).
// `tmp` is a name and `lhs` may be a declaration: neither can take the
// parentheses bugprone-macro-parentheses asks for.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define ACCELCRYPT_ASSIGN_OR_RETURN(lhs, expr) \
  ACCELCRYPT_ASSIGN_OR_RETURN_IMPL_(           \
      ACCELCRYPT_STATUS_CONCAT_(accelcrypt_statusor_, __LINE__), lhs, expr)
#define ACCELCRYPT_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                      \
  if (!tmp.ok()) return std::move(tmp).status();          \
  lhs = std::move(tmp).value()
// NOLINTEND(bugprone-macro-parentheses)

namespace accelcrypt {

// AsAbsl converts to absl::string_view: Debian 12's Abseil is built with its
// own string_view type, not std::string_view.
inline absl::string_view AsAbsl(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}
inline std::string_view AsStd(absl::string_view s) {
  return std::string_view(s.data(), s.size());
}

// Detail attached to statuses that need more than the code at a boundary.
enum class StatusDetail {
  kNone,
  kAuthFailed,  // AEAD tag mismatch (kInvalidArgument code).
};

// AuthFailedError returns a kInvalidArgument status carrying kAuthFailed, so
// boundaries can report a tag mismatch distinctly (CKR_ENCRYPTED_DATA_INVALID,
// EVP_R_BAD_DECRYPT style) while the router still treats it as a caller
// error.
absl::Status AuthFailedError(std::string_view message);

// GetStatusDetail returns the detail attached to `status`, or kNone.
StatusDetail GetStatusDetail(const absl::Status& status);

// IsDeviceError is true for codes the router falls back on and counts toward
// the circuit breaker (kUnavailable, kResourceExhausted).
bool IsDeviceError(const absl::Status& status);

// IsCallerError is true for codes that are the caller's fault and must never
// be retried on another backend.
bool IsCallerError(const absl::Status& status);

// FromAbi converts a plugin-ABI status code and message into a Status. An
// unknown code becomes kInternal.
absl::Status FromAbi(accelcrypt_status code, std::string_view message);

// ToAbi converts a Status into a plugin-ABI code and, when `err` is not null,
// copies the message (truncated) into it. The detail is mapped first
// (kAuthFailed -> ACCELCRYPT_ERR_AUTH_FAILED), then the code.
accelcrypt_status ToAbi(const absl::Status& status, accelcrypt_error* err);

}  // namespace accelcrypt

#endif  // ACCELCRYPT_CORE_STATUS_H_
