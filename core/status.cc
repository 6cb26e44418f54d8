// SPDX-License-Identifier: Apache-2.0
#include "core/status.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/cord.h"

namespace accelcrypt {
namespace {

constexpr char kDetailUrl[] = "accelcrypt.detail";
constexpr char kAuthFailed[] = "auth_failed";

}  // namespace

absl::Status AuthFailedError(std::string_view message) {
  absl::Status status = absl::InvalidArgumentError(AsAbsl(message));
  status.SetPayload(kDetailUrl, absl::Cord(kAuthFailed));
  return status;
}

StatusDetail GetStatusDetail(const absl::Status& status) {
  auto payload = status.GetPayload(kDetailUrl);
  if (payload.has_value() && *payload == kAuthFailed) {
    return StatusDetail::kAuthFailed;
  }
  return StatusDetail::kNone;
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
  accelcrypt_status code;
  if (GetStatusDetail(status) == StatusDetail::kAuthFailed) {
    code = ACCELCRYPT_ERR_AUTH_FAILED;
  } else {
    switch (status.code()) {
      case absl::StatusCode::kOk:
        return ACCELCRYPT_OK;
      case absl::StatusCode::kInvalidArgument:
        code = ACCELCRYPT_ERR_INVALID_ARGUMENT;
        break;
      case absl::StatusCode::kFailedPrecondition:
        code = ACCELCRYPT_ERR_FAILED_PRECONDITION;
        break;
      case absl::StatusCode::kOutOfRange:
        code = ACCELCRYPT_ERR_OUT_OF_RANGE;
        break;
      case absl::StatusCode::kUnimplemented:
        code = ACCELCRYPT_ERR_UNIMPLEMENTED;
        break;
      case absl::StatusCode::kUnavailable:
        code = ACCELCRYPT_ERR_UNAVAILABLE;
        break;
      case absl::StatusCode::kResourceExhausted:
        code = ACCELCRYPT_ERR_RESOURCE_EXHAUSTED;
        break;
      default:
        code = ACCELCRYPT_ERR_INTERNAL;
        break;
    }
  }
  if (err != nullptr) {
    err->code = code;
    size_t n = std::min(status.message().size(),
                        sizeof(err->message) - 1);
    std::memcpy(err->message, status.message().data(), n);
    err->message[n] = '\0';
  }
  return code;
}

}  // namespace accelcrypt
