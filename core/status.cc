// SPDX-License-Identifier: Apache-2.0
#include "core/status.h"

#include "accelcrypt/kit/status.h"

namespace accelcrypt {

// The authentication-failure convention and the Status -> ABI mapping are
// the backend kit's (accelcrypt/kit/status.h), so that what a backend sends
// and what the core reads back cannot drift apart.
absl::Status AuthFailedError(std::string_view message) {
  return kit::AuthFailedError(message);
}

StatusDetail GetStatusDetail(const absl::Status& status) {
  return kit::IsAuthFailed(status) ? StatusDetail::kAuthFailed
                                   : StatusDetail::kNone;
}

bool IsDeviceError(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable ||
         status.code() == absl::StatusCode::kResourceExhausted;
}

bool IsCallerError(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      return true;
    default:
      return false;
  }
}

absl::Status FromAbi(accelcrypt_status code, std::string_view message) {
  switch (code) {
    case ACCELCRYPT_OK:
      return absl::OkStatus();
    case ACCELCRYPT_ERR_INVALID_ARGUMENT:
      return absl::InvalidArgumentError(AsAbsl(message));
    case ACCELCRYPT_ERR_FAILED_PRECONDITION:
      return absl::FailedPreconditionError(AsAbsl(message));
    case ACCELCRYPT_ERR_OUT_OF_RANGE:
      return absl::OutOfRangeError(AsAbsl(message));
    case ACCELCRYPT_ERR_AUTH_FAILED:
      return AuthFailedError(message);
    case ACCELCRYPT_ERR_UNIMPLEMENTED:
      return absl::UnimplementedError(AsAbsl(message));
    case ACCELCRYPT_ERR_UNAVAILABLE:
      return absl::UnavailableError(AsAbsl(message));
    case ACCELCRYPT_ERR_RESOURCE_EXHAUSTED:
      return absl::ResourceExhaustedError(AsAbsl(message));
    case ACCELCRYPT_ERR_INTERNAL:
      return absl::InternalError(AsAbsl(message));
    default:
      return absl::InternalError(
          std::string("unknown backend status code: ").append(message));
  }
}

accelcrypt_status ToAbi(const absl::Status& status, accelcrypt_error* err) {
  return kit::ToAbi(status, err);
}

}  // namespace accelcrypt
