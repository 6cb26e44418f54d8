// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_CORE_PKEY_H_
#define ACCELCRYPT_CORE_PKEY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "accelcrypt/backend.h"

namespace accelcrypt {

// KeyMaterial is an RSA or DSA key as OpenSSL holds it (big-endian
// integers), and/or a reference to a token object. Private parts and the
// URI (which may carry a PIN) are wiped on destruction. Copyable (copies
// wipe on their own destruction too).
struct KeyMaterial {
  enum class Type { kRsa, kDsa };
  Type type = Type::kRsa;
  // RSA
  std::vector<uint8_t> n, e, d, p, q, dmp1, dmq1, iqmp;
  // DSA
  std::vector<uint8_t> dsa_p, dsa_q, dsa_g, dsa_y, dsa_x;
  // RFC 7512 `pkcs11:` URI of a token object, empty when none.
  std::string uri;
  // public_out is handed to a backend's load_key with `uri` (see
  // accelcrypt_key_desc.public_out). Set only by Router::DescribeTokenKey
  // for the duration of one load; not owned; null otherwise.
  const accelcrypt_key_public_sink* public_out = nullptr;

  KeyMaterial() = default;
  KeyMaterial(const KeyMaterial&) = default;
  KeyMaterial& operator=(const KeyMaterial&) = default;
  KeyMaterial(KeyMaterial&&) = default;
  KeyMaterial& operator=(KeyMaterial&&) = default;
  ~KeyMaterial();

  // has_private is true with a private exponent (RSA d, DSA x) or a token
  // reference (whose private half stays on the token).
  bool has_private() const;
  // has_private_material is true only with the private integers themselves.
  bool has_private_material() const;
  // has_public is true when the public integers are present (RSA n and e;
  // DSA p, q, g and y).
  bool has_public() const;
  // bits is the modulus size (RSA n, DSA p) in bits.
  size_t bits() const;
  // Describe fills an ABI descriptor pointing into this object.
  accelcrypt_key_desc Describe(accelcrypt_alg alg) const;
};

// PkeyParams are the per-operation parameters (padding, digests, salt,
// label) in core form; see accelcrypt_pkey_params.
struct PkeyParams {
  uint32_t padding = ACCELCRYPT_PAD_PKCS1;
  accelcrypt_alg md = 0;
  accelcrypt_alg mgf1_md = 0;
  int32_t salt_len = ACCELCRYPT_PSS_SALT_DIGEST;
  std::vector<uint8_t> label;
};

// PublicKeyOps runs RSA or DSA operations with one key, routed: the router
// picks the backend per operation (policy, key size, calibration), the
// backend's prepared key (token import) is cached inside this object per
// backend, and a device error is retried on the next backend (these are
// one-shot operations). Thread-safe: several threads may use one key.
class PublicKeyOps {
 public:
  virtual ~PublicKeyOps() = default;
  // Sign writes the signature into `out` and returns its length;
  // kOutOfRange (nothing done) when `out` is too small; SignatureSize()
  // gives the size needed.
  virtual absl::StatusOr<size_t> Sign(const PkeyParams& params,
                                      absl::Span<const uint8_t> tbs,
                                      absl::Span<uint8_t> out) = 0;
  // Verify returns OK, or an AuthFailed-detail kInvalidArgument for a bad
  // signature.
  virtual absl::Status Verify(const PkeyParams& params,
                              absl::Span<const uint8_t> tbs,
                              absl::Span<const uint8_t> sig) = 0;
  virtual absl::StatusOr<size_t> Encrypt(const PkeyParams& params,
                                         absl::Span<const uint8_t> in,
                                         absl::Span<uint8_t> out) = 0;
  virtual absl::StatusOr<size_t> Decrypt(const PkeyParams& params,
                                         absl::Span<const uint8_t> in,
                                         absl::Span<uint8_t> out) = 0;
  // SignatureSize is the largest signature/ciphertext this key makes.
  virtual size_t SignatureSize() const = 0;
  virtual const KeyMaterial& key() const = 0;
  // last_backend names the backend that served the last operation.
  virtual std::string last_backend() const = 0;
};

}  // namespace accelcrypt

#endif  // ACCELCRYPT_CORE_PKEY_H_
