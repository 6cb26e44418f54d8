// SPDX-License-Identifier: Apache-2.0
// Shared helpers of the mechanism operations: unsupported-call answers,
// buffer-size errors, the hardware flag and the digest mechanism tables.
#include <string>

#include "absl/strings/str_format.h"
#include "core/core.h"
#include "core/status.h"
#include "pkcs11/common/ck_error.h"
#include "pkcs11/mech/internal/mech_internal.h"

namespace accelcrypt::p11::internal {

absl::Status NotSupported(std::string_view what) {
  return CkError(CKR_FUNCTION_NOT_SUPPORTED, what);
}

absl::Status TooSmall(size_t have, size_t need) {
  return CkError(
      CKR_BUFFER_TOO_SMALL,
      absl::StrFormat("output buffer of %d bytes, need %d", have, need));
}

absl::StatusOr<size_t> OperationBase::OneShot(absl::Span<const uint8_t>,
                                              absl::Span<uint8_t>) {
  return NotSupported("single-part call for this operation");
}
absl::StatusOr<size_t> OperationBase::Update(absl::Span<const uint8_t>,
                                             absl::Span<uint8_t>) {
  return NotSupported("multi-part call for this operation");
}
absl::StatusOr<size_t> OperationBase::Final(absl::Span<uint8_t>) {
  return NotSupported("multi-part call for this operation");
}
absl::Status OperationBase::Verify(absl::Span<const uint8_t>,
                                   absl::Span<const uint8_t>) {
  return NotSupported("verify for this operation");
}
absl::Status OperationBase::VerifyFinal(absl::Span<const uint8_t>) {
  return NotSupported("verify for this operation");
}
absl::Status OperationBase::DigestKey(const AttributeMap&) {
  return NotSupported("C_DigestKey for this operation");
}
absl::StatusOr<std::vector<uint8_t>> OperationBase::GetState() const {
  return CkError(CKR_STATE_UNSAVEABLE,
                 "only digest operations can save their state");
}

bool IsHardwareBackend(Core& core, std::string_view name) {
  if (name.empty()) return false;
  const Backend* backend = core.registry().Find(name);
  return backend != nullptr && backend->hardware();
}

absl::Status CheckOffered(Core& core, accelcrypt_alg alg, uint32_t padding,
                          size_t bits) {
  const Router& router = core.router();
  if (!router.OfferedKeys(alg, padding).offered) {
    return CkError(CKR_MECHANISM_INVALID,
                   "no backend offers this RSA/DSA operation");
  }
  if (bits == 0 || router.TakesKey(alg, padding, bits)) {
    return absl::OkStatus();
  }
  return CkError(CKR_KEY_SIZE_RANGE,
                 absl::StrFormat("no backend offers this operation for "
                                 "%d-bit keys",
                                 bits));
}

accelcrypt_alg DigestAlg(CK_MECHANISM_TYPE digest_mechanism) {
  switch (digest_mechanism) {
    case CKM_SHA_1:
      return ACCELCRYPT_ALG_SHA1;
    case CKM_SHA224:
      return ACCELCRYPT_ALG_SHA224;
    case CKM_SHA256:
      return ACCELCRYPT_ALG_SHA256;
    case CKM_SHA384:
      return ACCELCRYPT_ALG_SHA384;
    case CKM_SHA512:
      return ACCELCRYPT_ALG_SHA512;
    default:
      return 0;
  }
}

accelcrypt_alg MgfDigestAlg(CK_RSA_PKCS_MGF_TYPE mgf) {
  switch (mgf) {
    case CKG_MGF1_SHA1:
      return ACCELCRYPT_ALG_SHA1;
    case CKG_MGF1_SHA224:
      return ACCELCRYPT_ALG_SHA224;
    case CKG_MGF1_SHA256:
      return ACCELCRYPT_ALG_SHA256;
    case CKG_MGF1_SHA384:
      return ACCELCRYPT_ALG_SHA384;
    case CKG_MGF1_SHA512:
      return ACCELCRYPT_ALG_SHA512;
    default:
      return 0;
  }
}

size_t DigestLen(accelcrypt_alg alg) {
  const AlgorithmInfo* info = FindAlgorithm(alg);
  return info == nullptr ? 0 : info->digest_len;
}

}  // namespace accelcrypt::p11::internal
