// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_PKCS11_COMMON_ATTRIBUTES_H_
#define ACCELCRYPT_PKCS11_COMMON_ATTRIBUTES_H_

#include <p11-kit-1/p11-kit/pkcs11.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/types/span.h"

namespace accelcrypt::p11 {

// SecretBytes is a byte buffer wiped (OPENSSL_cleanse) when destroyed or
// reassigned. Keys, PIN-derived keys and decrypted attribute values live in
// it.
class SecretBytes {
 public:
  SecretBytes() = default;
  explicit SecretBytes(absl::Span<const uint8_t> bytes)
      : bytes_(bytes.begin(), bytes.end()) {}
  explicit SecretBytes(size_t n) : bytes_(n) {}
  SecretBytes(const SecretBytes&) = default;
  SecretBytes& operator=(const SecretBytes& other);
  SecretBytes(SecretBytes&& other) noexcept;
  SecretBytes& operator=(SecretBytes&& other) noexcept;
  ~SecretBytes();

  uint8_t* data() { return bytes_.data(); }
  const uint8_t* data() const { return bytes_.data(); }
  size_t size() const { return bytes_.size(); }
  bool empty() const { return bytes_.empty(); }
  absl::Span<const uint8_t> span() const { return bytes_; }
  absl::Span<uint8_t> mutable_span() { return absl::MakeSpan(bytes_); }
  void Wipe();

 private:
  std::vector<uint8_t> bytes_;
};

// AttributeMap holds an object's attributes: type -> value bytes, in the
// in-memory form the PKCS#11 ABI uses on this platform (CK_ULONG values as
// sizeof(CK_ULONG) host-order bytes, CK_BBOOL as one byte, big integers
// big-endian, strings unterminated). Values are wiped on destruction and
// on overwrite (they may be key material). Ordered by type, so
// serialisation is deterministic. Copyable.
class AttributeMap {
 public:
  using Map = std::map<CK_ATTRIBUTE_TYPE, SecretBytes>;

  bool Has(CK_ATTRIBUTE_TYPE type) const { return values_.count(type) != 0; }
  // Find returns the value or nullptr.
  const SecretBytes* Find(CK_ATTRIBUTE_TYPE type) const;
  // GetUlong / GetBool return the value when present and of the right
  // length (sizeof(CK_ULONG) / 1), else nullopt.
  std::optional<CK_ULONG> GetUlong(CK_ATTRIBUTE_TYPE type) const;
  std::optional<bool> GetBool(CK_ATTRIBUTE_TYPE type) const;
  // BoolOr returns GetBool(type) or `fallback`.
  bool BoolOr(CK_ATTRIBUTE_TYPE type, bool fallback) const;
  // GetBytes returns a copy of the value (empty when absent).
  std::vector<uint8_t> GetBytes(CK_ATTRIBUTE_TYPE type) const;
  std::string GetString(CK_ATTRIBUTE_TYPE type) const;

  void Set(CK_ATTRIBUTE_TYPE type, absl::Span<const uint8_t> value);
  void SetUlong(CK_ATTRIBUTE_TYPE type, CK_ULONG value);
  void SetBool(CK_ATTRIBUTE_TYPE type, bool value);
  void SetString(CK_ATTRIBUTE_TYPE type, std::string_view value);
  void Erase(CK_ATTRIBUTE_TYPE type) { values_.erase(type); }
  void Clear() { values_.clear(); }

  size_t size() const { return values_.size(); }
  const Map& values() const { return values_; }

  // Serialize writes a self-describing byte string (version, count, then
  // type/length/value records with fixed-width little-endian integers, so a
  // store written by a 32-bit build reads on a 64-bit one); Parse reads it
  // back (nullopt on any malformed input). CK_ULONG-typed values are
  // re-encoded to the reader's width and byte order by type (see
  // IsUlongAttribute), CKA_ALLOWED_MECHANISMS entry by entry (8 bytes LE
  // each), so a store moves between hosts of either endianness.
  std::vector<uint8_t> Serialize() const;
  static std::optional<AttributeMap> Parse(absl::Span<const uint8_t> bytes);

 private:
  Map values_;
};

// IsUlongAttribute is true for attribute types whose value is a CK_ULONG
// (CKA_CLASS, CKA_KEY_TYPE, CKA_VALUE_LEN, CKA_MODULUS_BITS, ...).
bool IsUlongAttribute(CK_ATTRIBUTE_TYPE type);
// IsBoolAttribute is true for CK_BBOOL-typed attributes (CKA_TOKEN,
// CKA_PRIVATE, CKA_SENSITIVE, CKA_ENCRYPT, ...).
bool IsBoolAttribute(CK_ATTRIBUTE_TYPE type);

}  // namespace accelcrypt::p11

#endif  // ACCELCRYPT_PKCS11_COMMON_ATTRIBUTES_H_
