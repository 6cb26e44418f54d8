// SPDX-License-Identifier: Apache-2.0
#include "backends/software/openssl_error.h"

#include <openssl/err.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "accelcrypt/backend.h"

namespace accelcrypt::software {
namespace {

// The payload marks a tag mismatch; its presence is what matters.
constexpr absl::string_view kAuthFailedPayload =
    "type.accelcrypt.dev/software.AuthFailed";

accelcrypt_status CodeToAbi(absl::StatusCode code) {
  switch (code) {
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

}  // namespace

std::string DrainOpenSslErrors() {
  std::string out;
  const char* data = nullptr;
  int flags = 0;
  unsigned long e;
  while ((e = ERR_get_error_all(nullptr, nullptr, nullptr, &data, &flags)) !=
         0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
    if ((flags & ERR_TXT_STRING) != 0 && data != nullptr && *data != '\0') {
      out += " (";
      out += data;
      out += ")";
    }
  }
  if (out.empty()) return "no libcrypto error recorded";
  return out;
}

absl::Status LibcryptoError(absl::StatusCode code, absl::string_view alg,
                            absl::string_view what) {
  return absl::Status(code, absl::StrFormat("software: %s: %s: %s", alg, what,
                                            DrainOpenSslErrors()));
}

absl::Status AuthFailedError(absl::string_view alg) {
  // libcrypto's GCM final reports a mismatch by its return value; whatever it
  // queued is not the caller's business beyond "tag mismatch".
  ERR_clear_error();
  absl::Status status = absl::InvalidArgumentError(
      absl::StrFormat("software: %s: authentication tag mismatch", alg));
  status.SetPayload(kAuthFailedPayload, absl::Cord("1"));
  return status;
}

accelcrypt_status ToAbi(const absl::Status& status, accelcrypt_error* err) {
  if (status.ok()) return ACCELCRYPT_OK;
  accelcrypt_status code = status.GetPayload(kAuthFailedPayload).has_value()
                               ? ACCELCRYPT_ERR_AUTH_FAILED
                               : CodeToAbi(status.code());
  return WriteAbiError(code, status.message(), err);
}

accelcrypt_status WriteAbiError(accelcrypt_status code,
                                absl::string_view message,
                                accelcrypt_error* err) {
  if (err != nullptr) {
    err->code = code;
    size_t n = std::min(message.size(), sizeof(err->message) - 1);
    std::memcpy(err->message, message.data(), n);
    err->message[n] = '\0';
  }
  return code;
}

}  // namespace accelcrypt::software
