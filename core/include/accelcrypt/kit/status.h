// SPDX-License-Identifier: Apache-2.0
// accelcrypt/kit/status.h: the backend kit for backends written with
// absl::Status. One mapping from absl::Status to the ABI's codes, and one
// convention for an authentication failure (an AEAD tag or a signature
// that does not verify): kInvalidArgument carrying the payload
// kDetailPayloadUrl = kAuthFailedDetail, which ToAbi sends as
// ACCELCRYPT_ERR_AUTH_FAILED and the core's FromAbi reads back the same
// way. Header-only; compiled into each backend and into the core.
#ifndef ACCELCRYPT_KIT_STATUS_H_
#define ACCELCRYPT_KIT_STATUS_H_

#include <new>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/string_view.h"
#include "accelcrypt/backend.h"
#include "accelcrypt/kit/abi_error.h"

namespace accelcrypt::kit {

inline constexpr char kDetailPayloadUrl[] = "accelcrypt.detail";
inline constexpr char kAuthFailedDetail[] = "auth_failed";

// AuthFailedError is the status of a failed authentication check.
inline absl::Status AuthFailedError(std::string_view message) {
  absl::Status status = absl::InvalidArgumentError(
      absl::string_view(message.data(), message.size()));
  status.SetPayload(kDetailPayloadUrl, absl::Cord(kAuthFailedDetail));
  return status;
}

// IsAuthFailed is true for a status made by AuthFailedError.
inline bool IsAuthFailed(const absl::Status& status) {
  auto payload = status.GetPayload(kDetailPayloadUrl);
  return payload.has_value() && *payload == kAuthFailedDetail;
}

// AbiCode is the ABI code of `status` (ACCELCRYPT_OK for OK).
inline accelcrypt_status AbiCode(const absl::Status& status) {
  if (IsAuthFailed(status)) return ACCELCRYPT_ERR_AUTH_FAILED;
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return ACCELCRYPT_OK;
    case absl::StatusCode::kInvalidArgument:
      return ACCELCRYPT_ERR_INVALID_ARGUMENT;
    case absl::StatusCode::kFailedPrecondition:
      return ACCELCRYPT_ERR_FAILED_PRECONDITION;
    case absl::StatusCode::kOutOfRange:
      return ACCELCRYPT_ERR_OUT_OF_RANGE;
    case absl::StatusCode::kUnimplemented:
      return ACCELCRYPT_ERR_UNIMPLEMENTED;
    case absl::StatusCode::kUnavailable:
      return ACCELCRYPT_ERR_UNAVAILABLE;
    case absl::StatusCode::kResourceExhausted:
      return ACCELCRYPT_ERR_RESOURCE_EXHAUSTED;
    default:
      return ACCELCRYPT_ERR_INTERNAL;
  }
}

// ToAbi writes `status` into `err` (may be null) and returns its code.
inline accelcrypt_status ToAbi(const absl::Status& status,
                               accelcrypt_error* err) {
  if (status.ok()) return ACCELCRYPT_OK;
  return WriteAbiError(
      AbiCode(status),
      std::string_view(status.message().data(), status.message().size()), err);
}

// Guard runs `f` (returning absl::Status) and turns its result, or any
// exception, into an ABI code: the one shape of every ABI entry point of a
// backend written with absl::Status.
template <typename F>
accelcrypt_status Guard(const char* backend, accelcrypt_error* err,
                        F&& f) noexcept {
  return GuardAbi(backend, err, [&]() { return ToAbi(f(), err); });
}

}  // namespace accelcrypt::kit

#endif  // ACCELCRYPT_KIT_STATUS_H_
