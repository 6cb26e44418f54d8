// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_PKCS11_MECH_INTERNAL_MECH_INTERNAL_H_
#define ACCELCRYPT_PKCS11_MECH_INTERNAL_MECH_INTERNAL_H_

#include <p11-kit-1/p11-kit/pkcs11.h>

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/algorithms.h"
#include "core/pkey.h"
#include "pkcs11/common/attributes.h"
#include "pkcs11/mech/mechanisms.h"

namespace accelcrypt {
class Core;
}

namespace accelcrypt::p11::internal {

// SecretKey is a prepared AES or generic-secret/HMAC key: its value, wiped
// with the object.
class SecretKey final : public PreparedKey {
 public:
  SecretKey(CK_KEY_TYPE type, absl::Span<const uint8_t> value)
      : type_(type), value_(value) {}
  CK_KEY_TYPE key_type() const override { return type_; }
  CK_OBJECT_CLASS object_class() const override { return CKO_SECRET_KEY; }
  absl::Span<const uint8_t> value() const { return value_.span(); }

 private:
  CK_KEY_TYPE type_;
  SecretBytes value_;
};

// AsymmetricKey is a prepared RSA or DSA key: the core's routed
// PublicKeyOps (which caches each backend's prepared key).
class AsymmetricKey final : public PreparedKey {
 public:
  AsymmetricKey(CK_KEY_TYPE type, CK_OBJECT_CLASS cls,
                std::shared_ptr<PublicKeyOps> ops)
      : type_(type), class_(cls), ops_(std::move(ops)) {}
  CK_KEY_TYPE key_type() const override { return type_; }
  CK_OBJECT_CLASS object_class() const override { return class_; }
  PublicKeyOps& ops() const { return *ops_; }
  const KeyMaterial& material() const { return ops_->key(); }
  bool is_private() const { return class_ == CKO_PRIVATE_KEY; }
  // modulus_len is the RSA modulus (or DSA p) length in bytes.
  size_t modulus_len() const { return (material().bits() + 7) / 8; }

 private:
  CK_KEY_TYPE type_;
  CK_OBJECT_CLASS class_;
  std::shared_ptr<PublicKeyOps> ops_;
};

// OperationBase answers every Operation call an operation kind does not
// use with CKR_FUNCTION_NOT_SUPPORTED (the module never makes such calls;
// this keeps a misuse from doing anything).
class OperationBase : public Operation {
 public:
  absl::StatusOr<size_t> OneShot(absl::Span<const uint8_t> in,
                                 absl::Span<uint8_t> out) override;
  absl::StatusOr<size_t> Update(absl::Span<const uint8_t> in,
                                absl::Span<uint8_t> out) override;
  absl::StatusOr<size_t> Final(absl::Span<uint8_t> out) override;
  absl::Status Verify(absl::Span<const uint8_t> data,
                      absl::Span<const uint8_t> signature) override;
  absl::Status VerifyFinal(absl::Span<const uint8_t> signature) override;
  absl::Status DigestKey(const AttributeMap& key) override;
  absl::StatusOr<std::vector<uint8_t>> GetState() const override;
};

// NotSupported is CkError(CKR_FUNCTION_NOT_SUPPORTED, what).
absl::Status NotSupported(std::string_view what);
// TooSmall is CkError(CKR_BUFFER_TOO_SMALL) naming the sizes.
absl::Status TooSmall(size_t have, size_t need);

// IsHardwareBackend is true when the registry's backend `name` is hardware.
bool IsHardwareBackend(Core& core, std::string_view name);

// CheckOffered returns OK when a routed backend takes key material for
// `alg` (RSA_SIGN, RSA_CRYPT, DSA_SIGN) with `padding` (ACCELCRYPT_PAD_*,
// or Router::kAnyPadding) and, with `bits` != 0, keys of that size: the
// router answers (Router::OfferedKeys, TakesKey). Otherwise
// CKR_MECHANISM_INVALID (nobody offers the padding) or CKR_KEY_SIZE_RANGE
// (nobody offers it for this size).
absl::Status CheckOffered(Core& core, accelcrypt_alg alg, uint32_t padding,
                          size_t bits);

// DigestAlgForMechanism maps CKM_SHA_1..CKM_SHA512 (and the HMAC, RSA and
// DSA variants' hashes, given as the plain digest mechanism) to the core
// digest; 0 when unknown.
accelcrypt_alg DigestAlg(CK_MECHANISM_TYPE digest_mechanism);
// MgfDigestAlg maps CKG_MGF1_SHA* to the core digest; 0 when unknown.
accelcrypt_alg MgfDigestAlg(CK_RSA_PKCS_MGF_TYPE mgf);
// DigestLen is the output size of a core digest (0 when unknown).
size_t DigestLen(accelcrypt_alg alg);

// The operation factories. Each validates the mechanism parameters
// (CKR_MECHANISM_PARAM_INVALID) and the key (CKR_KEY_TYPE_INCONSISTENT,
// CKR_KEY_SIZE_RANGE) before it creates anything.
absl::StatusOr<std::unique_ptr<Operation>> NewAesOperation(
    Core& core, OpKind kind, const CK_MECHANISM& mechanism,
    const SecretKey& key);
absl::StatusOr<std::unique_ptr<Operation>> NewDigestOperation(
    Core& core, CK_MECHANISM_TYPE mechanism);
absl::StatusOr<std::unique_ptr<Operation>> RestoreDigestOperation(
    Core& core, absl::Span<const uint8_t> state);
absl::StatusOr<std::unique_ptr<Operation>> NewHmacOperation(
    Core& core, OpKind kind, CK_MECHANISM_TYPE mechanism, const SecretKey& key);
absl::StatusOr<std::unique_ptr<Operation>> NewRsaOperation(
    Core& core, OpKind kind, const CK_MECHANISM& mechanism,
    std::shared_ptr<AsymmetricKey> key);
absl::StatusOr<std::unique_ptr<Operation>> NewDsaOperation(
    Core& core, OpKind kind, const CK_MECHANISM& mechanism,
    std::shared_ptr<AsymmetricKey> key);

// kMaxHmacKeyLen bounds HMAC and generic secret keys (bytes).
inline constexpr size_t kMaxHmacKeyLen = 4096;
// kMaxStateData is the most digest input GetState keeps (64 KiB).
inline constexpr size_t kMaxStateData = 64 * 1024;

}  // namespace accelcrypt::p11::internal

#endif  // ACCELCRYPT_PKCS11_MECH_INTERNAL_MECH_INTERNAL_H_
