// SPDX-License-Identifier: Apache-2.0
#include "backends/pkcs11/ck_status.h"

#include <cstdio>
#include <cstring>
#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace accelcrypt::pkcs11_client {
namespace {

struct RvName {
  CK_RV rv;
  const char* name;
};

// PKCS#11 v2.40 section 5.1 (return values) for the codes a client meets.
constexpr RvName kNames[] = {
    {CKR_OK, "CKR_OK"},
    {CKR_HOST_MEMORY, "CKR_HOST_MEMORY"},
    {CKR_SLOT_ID_INVALID, "CKR_SLOT_ID_INVALID"},
    {CKR_GENERAL_ERROR, "CKR_GENERAL_ERROR"},
    {CKR_FUNCTION_FAILED, "CKR_FUNCTION_FAILED"},
    {CKR_ARGUMENTS_BAD, "CKR_ARGUMENTS_BAD"},
    {CKR_ATTRIBUTE_VALUE_INVALID, "CKR_ATTRIBUTE_VALUE_INVALID"},
    {CKR_DATA_INVALID, "CKR_DATA_INVALID"},
    {CKR_DATA_LEN_RANGE, "CKR_DATA_LEN_RANGE"},
    {CKR_DEVICE_ERROR, "CKR_DEVICE_ERROR"},
    {CKR_DEVICE_MEMORY, "CKR_DEVICE_MEMORY"},
    {CKR_DEVICE_REMOVED, "CKR_DEVICE_REMOVED"},
    {CKR_ENCRYPTED_DATA_INVALID, "CKR_ENCRYPTED_DATA_INVALID"},
    {CKR_ENCRYPTED_DATA_LEN_RANGE, "CKR_ENCRYPTED_DATA_LEN_RANGE"},
    {CKR_FUNCTION_NOT_SUPPORTED, "CKR_FUNCTION_NOT_SUPPORTED"},
    {CKR_KEY_HANDLE_INVALID, "CKR_KEY_HANDLE_INVALID"},
    {CKR_KEY_SIZE_RANGE, "CKR_KEY_SIZE_RANGE"},
    {CKR_KEY_TYPE_INCONSISTENT, "CKR_KEY_TYPE_INCONSISTENT"},
    {CKR_MECHANISM_INVALID, "CKR_MECHANISM_INVALID"},
    {CKR_MECHANISM_PARAM_INVALID, "CKR_MECHANISM_PARAM_INVALID"},
    {CKR_OBJECT_HANDLE_INVALID, "CKR_OBJECT_HANDLE_INVALID"},
    {CKR_OPERATION_ACTIVE, "CKR_OPERATION_ACTIVE"},
    {CKR_PIN_INCORRECT, "CKR_PIN_INCORRECT"},
    {CKR_PIN_LOCKED, "CKR_PIN_LOCKED"},
    {CKR_SESSION_CLOSED, "CKR_SESSION_CLOSED"},
    {CKR_SESSION_COUNT, "CKR_SESSION_COUNT"},
    {CKR_SESSION_HANDLE_INVALID, "CKR_SESSION_HANDLE_INVALID"},
    {CKR_SIGNATURE_INVALID, "CKR_SIGNATURE_INVALID"},
    {CKR_SIGNATURE_LEN_RANGE, "CKR_SIGNATURE_LEN_RANGE"},
    {CKR_TEMPLATE_INCOMPLETE, "CKR_TEMPLATE_INCOMPLETE"},
    {CKR_TEMPLATE_INCONSISTENT, "CKR_TEMPLATE_INCONSISTENT"},
    {CKR_TOKEN_NOT_PRESENT, "CKR_TOKEN_NOT_PRESENT"},
    {CKR_TOKEN_NOT_RECOGNIZED, "CKR_TOKEN_NOT_RECOGNIZED"},
    {CKR_USER_NOT_LOGGED_IN, "CKR_USER_NOT_LOGGED_IN"},
    {CKR_USER_PIN_NOT_INITIALIZED, "CKR_USER_PIN_NOT_INITIALIZED"},
    {CKR_BUFFER_TOO_SMALL, "CKR_BUFFER_TOO_SMALL"},
    {CKR_CRYPTOKI_NOT_INITIALIZED, "CKR_CRYPTOKI_NOT_INITIALIZED"},
    {CKR_CRYPTOKI_ALREADY_INITIALIZED, "CKR_CRYPTOKI_ALREADY_INITIALIZED"},
};

}  // namespace

std::string CkRvName(CK_RV rv) {
  for (const RvName& n : kNames) {
    if (n.rv == rv) return n.name;
  }
  return absl::StrFormat("CKR 0x%08x", rv);
}

absl::Status AuthFailed(std::string_view what) {
  return kit::AuthFailedError(absl::StrFormat(
      "pkcs11: %s: signature does not verify", std::string(what)));
}

absl::Status FromCkRv(CK_RV rv, std::string_view what) {
  if (rv == CKR_OK) return absl::OkStatus();
  std::string msg =
      absl::StrFormat("pkcs11: %s: %s", std::string(what), CkRvName(rv));
  switch (rv) {
    case CKR_SIGNATURE_INVALID:
    case CKR_SIGNATURE_LEN_RANGE:
      return AuthFailed(what);
    case CKR_ARGUMENTS_BAD:
    case CKR_DATA_INVALID:
    case CKR_DATA_LEN_RANGE:
    case CKR_ENCRYPTED_DATA_INVALID:
    case CKR_ENCRYPTED_DATA_LEN_RANGE:
    case CKR_MECHANISM_PARAM_INVALID:
    case CKR_ATTRIBUTE_VALUE_INVALID:
    case CKR_TEMPLATE_INCONSISTENT:
    case CKR_TEMPLATE_INCOMPLETE:
    case CKR_KEY_TYPE_INCONSISTENT:
      return absl::InvalidArgumentError(msg);
    case CKR_MECHANISM_INVALID:
    case CKR_FUNCTION_NOT_SUPPORTED:
    case CKR_KEY_SIZE_RANGE:
      return absl::UnimplementedError(msg);
    case CKR_HOST_MEMORY:
    case CKR_DEVICE_MEMORY:
    case CKR_SESSION_COUNT:
      return absl::ResourceExhaustedError(msg);
    case CKR_BUFFER_TOO_SMALL:
      // The buffer given was of the full result size: the token is wrong.
      return absl::UnavailableError(absl::StrCat(
          msg, " for a buffer of the full result size (a token fault)"));
    default:
      // Device and token failures (CKR_DEVICE_*, CKR_TOKEN_*, CKR_SESSION_*,
      // CKR_GENERAL_ERROR, CKR_FUNCTION_FAILED, stale handles, login state):
      // the token cannot serve now; another backend can.
      return absl::UnavailableError(msg);
  }
}

namespace {

struct QuirkEntry {
  const char* manufacturer;
  const char* model;
  bool decrypt_failure_is_general_error;
  // Where the behaviour was seen.
  const char* source;
};

// Token models that misreport caller errors. An entry is added only for
// behaviour observed on the model (tests/backends/pkcs11 shows it for
// SoftHSMv2).
constexpr QuirkEntry kQuirks[] = {
    {"SoftHSM project", "SoftHSM v2", true,
     "SoftHSMv2 2.6.1: AsymDecrypt returns CKR_GENERAL_ERROR when the "
     "PKCS#1 v1.5 or OAEP unpadding fails"},
};

}  // namespace

TokenQuirks QuirksFor(std::string_view manufacturer, std::string_view model) {
  TokenQuirks q;
  for (const QuirkEntry& e : kQuirks) {
    if (manufacturer != e.manufacturer || model != e.model) continue;
    if (e.decrypt_failure_is_general_error) {
      q.decrypt_failure_is_general_error = true;
      q.names = "decrypt_failure_is_general_error";
    }
  }
  return q;
}

}  // namespace accelcrypt::pkcs11_client
