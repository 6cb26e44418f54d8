// SPDX-License-Identifier: Apache-2.0
#include "pkcs11/common/attributes.h"

#include <openssl/crypto.h>

#include <cstring>

namespace accelcrypt::p11 {

SecretBytes& SecretBytes::operator=(const SecretBytes& other) {
  if (this != &other) {
    Wipe();
    bytes_ = other.bytes_;
  }
  return *this;
}

SecretBytes::SecretBytes(SecretBytes&& other) noexcept
    : bytes_(std::move(other.bytes_)) {
  other.bytes_.clear();
}

SecretBytes& SecretBytes::operator=(SecretBytes&& other) noexcept {
  if (this != &other) {
    Wipe();
    bytes_ = std::move(other.bytes_);
    other.bytes_.clear();
  }
  return *this;
}

SecretBytes::~SecretBytes() { Wipe(); }

void SecretBytes::Wipe() {
  if (!bytes_.empty()) OPENSSL_cleanse(bytes_.data(), bytes_.size());
  bytes_.clear();
}

const SecretBytes* AttributeMap::Find(CK_ATTRIBUTE_TYPE type) const {
  auto it = values_.find(type);
  return it == values_.end() ? nullptr : &it->second;
}

std::optional<CK_ULONG> AttributeMap::GetUlong(CK_ATTRIBUTE_TYPE type) const {
  const SecretBytes* v = Find(type);
  if (v == nullptr || v->size() != sizeof(CK_ULONG)) return std::nullopt;
  CK_ULONG out;
  std::memcpy(&out, v->data(), sizeof(out));
  return out;
}

std::optional<bool> AttributeMap::GetBool(CK_ATTRIBUTE_TYPE type) const {
  const SecretBytes* v = Find(type);
  if (v == nullptr || v->size() != sizeof(CK_BBOOL)) return std::nullopt;
  return v->data()[0] != CK_FALSE;
}

bool AttributeMap::BoolOr(CK_ATTRIBUTE_TYPE type, bool fallback) const {
  return GetBool(type).value_or(fallback);
}

std::vector<uint8_t> AttributeMap::GetBytes(CK_ATTRIBUTE_TYPE type) const {
  const SecretBytes* v = Find(type);
  if (v == nullptr) return {};
  return std::vector<uint8_t>(v->data(), v->data() + v->size());
}

std::string AttributeMap::GetString(CK_ATTRIBUTE_TYPE type) const {
  const SecretBytes* v = Find(type);
  if (v == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(v->data()), v->size());
}

void AttributeMap::Set(CK_ATTRIBUTE_TYPE type,
                       absl::Span<const uint8_t> value) {
  values_[type] = SecretBytes(value);
}

void AttributeMap::SetUlong(CK_ATTRIBUTE_TYPE type, CK_ULONG value) {
  uint8_t buf[sizeof(CK_ULONG)];
  std::memcpy(buf, &value, sizeof(buf));
  Set(type, buf);
}

void AttributeMap::SetBool(CK_ATTRIBUTE_TYPE type, bool value) {
  const uint8_t b = value ? CK_TRUE : CK_FALSE;
  Set(type, absl::MakeConstSpan(&b, 1));
}

void AttributeMap::SetString(CK_ATTRIBUTE_TYPE type, std::string_view value) {
  Set(type, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(value.data()),
                                value.size()));
}

namespace {

constexpr uint8_t kSerialVersion = 1;

void PutU64(std::vector<uint8_t>* out, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out->push_back(static_cast<uint8_t>(v >> (8 * i)));
}

bool GetU64(absl::Span<const uint8_t>* in, uint64_t* v) {
  if (in->size() < 8) return false;
  *v = 0;
  for (int i = 0; i < 8; ++i) *v |= static_cast<uint64_t>((*in)[i]) << (8 * i);
  in->remove_prefix(8);
  return true;
}

}  // namespace

std::vector<uint8_t> AttributeMap::Serialize() const {
  std::vector<uint8_t> out;
  out.push_back(kSerialVersion);
  PutU64(&out, values_.size());
  for (const auto& [type, value] : values_) {
    PutU64(&out, type);
    if (IsUlongAttribute(type) && value.size() == sizeof(CK_ULONG)) {
      // Fixed 8-byte little-endian form, independent of CK_ULONG's width.
      CK_ULONG v;
      std::memcpy(&v, value.data(), sizeof(v));
      PutU64(&out, 8);
      PutU64(&out, static_cast<uint64_t>(v));
      continue;
    }
    if (type == CKA_ALLOWED_MECHANISMS &&
        value.size() % sizeof(CK_MECHANISM_TYPE) == 0) {
      // An array of CK_MECHANISM_TYPE: 8-byte little-endian entries, as
      // x86-64 builds have always stored it (their host form).
      const size_t n = value.size() / sizeof(CK_MECHANISM_TYPE);
      PutU64(&out, 8 * n);
      for (size_t i = 0; i < n; ++i) {
        CK_MECHANISM_TYPE m;
        std::memcpy(&m, value.data() + i * sizeof(m), sizeof(m));
        PutU64(&out, static_cast<uint64_t>(m));
      }
      continue;
    }
    PutU64(&out, value.size());
    out.insert(out.end(), value.data(), value.data() + value.size());
  }
  return out;
}

std::optional<AttributeMap> AttributeMap::Parse(
    absl::Span<const uint8_t> bytes) {
  if (bytes.empty() || bytes[0] != kSerialVersion) return std::nullopt;
  bytes.remove_prefix(1);
  uint64_t count = 0;
  if (!GetU64(&bytes, &count)) return std::nullopt;
  AttributeMap map;
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t type = 0, len = 0;
    if (!GetU64(&bytes, &type) || !GetU64(&bytes, &len)) return std::nullopt;
    if (len > bytes.size()) return std::nullopt;
    const auto t = static_cast<CK_ATTRIBUTE_TYPE>(type);
    if (t != type || map.Has(t)) return std::nullopt;
    if (IsUlongAttribute(t) && len == 8) {
      absl::Span<const uint8_t> v = bytes.subspan(0, 8);
      uint64_t value = 0;
      GetU64(&v, &value);
      map.SetUlong(t, static_cast<CK_ULONG>(value));
    } else if (t == CKA_ALLOWED_MECHANISMS) {
      // 8-byte little-endian entries back to this host's CK_MECHANISM_TYPE
      // array; a length that is no whole number of entries, or an entry
      // this host's CK_ULONG cannot hold, is malformed.
      if (len % 8 != 0) return std::nullopt;
      std::vector<uint8_t> host;
      host.reserve(len / 8 * sizeof(CK_MECHANISM_TYPE));
      absl::Span<const uint8_t> v = bytes.subspan(0, len);
      for (uint64_t n = 0; n < len / 8; ++n) {
        uint64_t value = 0;
        GetU64(&v, &value);
        const auto m = static_cast<CK_MECHANISM_TYPE>(value);
        if (m != value) return std::nullopt;
        uint8_t entry[sizeof(CK_MECHANISM_TYPE)];
        std::memcpy(entry, &m, sizeof(m));
        host.insert(host.end(), entry, entry + sizeof(entry));
      }
      map.Set(t, host);
    } else {
      map.Set(t, bytes.subspan(0, len));
    }
    bytes.remove_prefix(len);
  }
  if (!bytes.empty()) return std::nullopt;
  return map;
}

bool IsUlongAttribute(CK_ATTRIBUTE_TYPE type) {
  switch (type) {
    case CKA_CLASS:
    case CKA_KEY_TYPE:
    case CKA_CERTIFICATE_TYPE:
    case CKA_CERTIFICATE_CATEGORY:
    case CKA_JAVA_MIDP_SECURITY_DOMAIN:
    case CKA_VALUE_LEN:
    case CKA_MODULUS_BITS:
    case CKA_PRIME_BITS:
    case CKA_SUB_PRIME_BITS:
    case CKA_VALUE_BITS:
    case CKA_KEY_GEN_MECHANISM:
    case CKA_NAME_HASH_ALGORITHM:
    case CKA_MECHANISM_TYPE:
      return true;
    default:
      return false;
  }
}

bool IsBoolAttribute(CK_ATTRIBUTE_TYPE type) {
  switch (type) {
    case CKA_TOKEN:
    case CKA_PRIVATE:
    case CKA_MODIFIABLE:
    case CKA_COPYABLE:
    case CKA_DESTROYABLE:
    case CKA_TRUSTED:
    case CKA_SENSITIVE:
    case CKA_ENCRYPT:
    case CKA_DECRYPT:
    case CKA_WRAP:
    case CKA_UNWRAP:
    case CKA_SIGN:
    case CKA_SIGN_RECOVER:
    case CKA_VERIFY:
    case CKA_VERIFY_RECOVER:
    case CKA_DERIVE:
    case CKA_EXTRACTABLE:
    case CKA_LOCAL:
    case CKA_NEVER_EXTRACTABLE:
    case CKA_ALWAYS_SENSITIVE:
    case CKA_WRAP_WITH_TRUSTED:
    case CKA_ALWAYS_AUTHENTICATE:
      return true;
    default:
      return false;
  }
}

}  // namespace accelcrypt::p11
