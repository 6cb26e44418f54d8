// SPDX-License-Identifier: Apache-2.0
#include "pkcs11/object/object_rules.h"

#include <openssl/crypto.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "core/status.h"
#include "pkcs11/common/ck_error.h"
#include "pkcs11/object/internal/rule_tables.h"

namespace accelcrypt::p11 {
namespace {

// The largest attribute value ParseTemplate copies; guards against a
// garbage ulValueLen (CK_UNAVAILABLE_INFORMATION echoed back, say).
constexpr CK_ULONG kMaxValueLen = CK_ULONG{16} << 20;

std::string TypeName(CK_ATTRIBUTE_TYPE type) {
  return absl::StrFormat("attribute 0x%x", static_cast<uint64_t>(type));
}

bool IsDateAttribute(CK_ATTRIBUTE_TYPE type) {
  return type == CKA_START_DATE || type == CKA_END_DATE;
}

bool IsAttributeArray(CK_ATTRIBUTE_TYPE type) {
  return (type & CKF_ARRAY_ATTRIBUTE) != 0 && type != CKA_ALLOWED_MECHANISMS;
}

// CheckValueFormat checks the encoding of one value by its type:
// CKR_ATTRIBUTE_VALUE_INVALID when it cannot be a value of that type.
absl::Status CheckValueFormat(CK_ATTRIBUTE_TYPE type,
                              absl::Span<const uint8_t> value) {
  if (IsBoolAttribute(type) && value.size() != sizeof(CK_BBOOL)) {
    return CkError(CKR_ATTRIBUTE_VALUE_INVALID,
                   absl::StrFormat("%s: a CK_BBOOL is 1 byte, not %d",
                                   TypeName(type), value.size()));
  }
  if (IsUlongAttribute(type) && value.size() != sizeof(CK_ULONG)) {
    return CkError(
        CKR_ATTRIBUTE_VALUE_INVALID,
        absl::StrFormat("%s: a CK_ULONG is %d bytes, not %d", TypeName(type),
                        sizeof(CK_ULONG), value.size()));
  }
  if (IsDateAttribute(type)) {
    // A CK_DATE is YYYYMMDD in ASCII digits; empty means no date.
    if (!value.empty() && value.size() != sizeof(CK_DATE)) {
      return CkError(
          CKR_ATTRIBUTE_VALUE_INVALID,
          absl::StrFormat("%s: a CK_DATE is %d bytes, not %d", TypeName(type),
                          sizeof(CK_DATE), value.size()));
    }
    for (uint8_t c : value) {
      if (c < '0' || c > '9') {
        return CkError(
            CKR_ATTRIBUTE_VALUE_INVALID,
            absl::StrFormat("%s: a CK_DATE holds digits only", TypeName(type)));
      }
    }
  }
  if (type == CKA_ALLOWED_MECHANISMS &&
      value.size() % sizeof(CK_MECHANISM_TYPE) != 0) {
    return CkError(CKR_ATTRIBUTE_VALUE_INVALID,
                   "CKA_ALLOWED_MECHANISMS is an array of CK_MECHANISM_TYPE");
  }
  return absl::OkStatus();
}

// ValuesEqual compares two values in constant time (for their length);
// CK_BBOOL values compare as booleans.
bool ValuesEqual(CK_ATTRIBUTE_TYPE type, absl::Span<const uint8_t> a,
                 absl::Span<const uint8_t> b) {
  if (IsBoolAttribute(type) && a.size() == 1 && b.size() == 1) {
    return (a[0] != CK_FALSE) == (b[0] != CK_FALSE);
  }
  if (a.size() != b.size()) return false;
  if (a.empty()) return true;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

// ReadUlong reads a required CK_ULONG attribute of `map` when present:
// nullopt when absent, CKR_ATTRIBUTE_VALUE_INVALID when malformed.
absl::StatusOr<std::optional<CK_ULONG>> ReadUlong(const AttributeMap& map,
                                                  CK_ATTRIBUTE_TYPE type) {
  const SecretBytes* v = map.Find(type);
  if (v == nullptr) return std::optional<CK_ULONG>();
  ACCELCRYPT_RETURN_IF_ERROR(CheckValueFormat(type, v->span()));
  return map.GetUlong(type);
}

// MergedUlong reads `type` from the caller's template and from what the
// token produced; both present and different is inconsistent.
absl::StatusOr<std::optional<CK_ULONG>> MergedUlong(
    const AttributeMap& tmpl, const AttributeMap& generated,
    CK_ATTRIBUTE_TYPE type, const char* name) {
  ACCELCRYPT_ASSIGN_OR_RETURN(std::optional<CK_ULONG> given,
                              ReadUlong(tmpl, type));
  ACCELCRYPT_ASSIGN_OR_RETURN(std::optional<CK_ULONG> made,
                              ReadUlong(generated, type));
  if (given && made && *given != *made) {
    return CkError(CKR_TEMPLATE_INCONSISTENT,
                   absl::StrFormat("%s 0x%x does not fit the mechanism (0x%x)",
                                   name, static_cast<uint64_t>(*given),
                                   static_cast<uint64_t>(*made)));
  }
  return given ? given : made;
}

// ResolveKind finds the class and key type from the template and what the
// token produced, and checks them against what this token supports.
absl::StatusOr<ObjectKind> ResolveKind(Origin origin, const AttributeMap& tmpl,
                                       const AttributeMap& generated) {
  ObjectKind kind;
  ACCELCRYPT_ASSIGN_OR_RETURN(
      std::optional<CK_ULONG> cls,
      MergedUlong(tmpl, generated, CKA_CLASS, "CKA_CLASS"));
  if (!cls) return CkError(CKR_TEMPLATE_INCOMPLETE, "CKA_CLASS missing");
  switch (*cls) {
    case CKO_DATA:
    case CKO_CERTIFICATE:
    case CKO_PUBLIC_KEY:
    case CKO_PRIVATE_KEY:
    case CKO_SECRET_KEY:
      break;
    default:
      return CkError(CKR_ATTRIBUTE_VALUE_INVALID,
                     absl::StrFormat("object class 0x%x is not supported",
                                     static_cast<uint64_t>(*cls)));
  }
  kind.object_class = *cls;
  if (origin == Origin::kGenerate && !IsKeyClass(kind.object_class)) {
    return CkError(CKR_TEMPLATE_INCONSISTENT, "only keys are generated");
  }
  if (kind.object_class == CKO_CERTIFICATE) {
    ACCELCRYPT_ASSIGN_OR_RETURN(std::optional<CK_ULONG> cert_type,
                                ReadUlong(tmpl, CKA_CERTIFICATE_TYPE));
    if (!cert_type) {
      return CkError(CKR_TEMPLATE_INCOMPLETE, "CKA_CERTIFICATE_TYPE missing");
    }
    if (*cert_type != CKC_X_509) {
      return CkError(CKR_ATTRIBUTE_VALUE_INVALID,
                     "only X.509 certificates are supported");
    }
  }
  if (!IsKeyClass(kind.object_class)) return kind;

  ACCELCRYPT_ASSIGN_OR_RETURN(
      std::optional<CK_ULONG> key_type,
      MergedUlong(tmpl, generated, CKA_KEY_TYPE, "CKA_KEY_TYPE"));
  if (!key_type)
    return CkError(CKR_TEMPLATE_INCOMPLETE, "CKA_KEY_TYPE missing");
  const bool secret = kind.object_class == CKO_SECRET_KEY;
  switch (*key_type) {
    case CKK_AES:
    case CKK_GENERIC_SECRET:
      if (!secret) {
        return CkError(CKR_TEMPLATE_INCONSISTENT,
                       "a symmetric key type on a public or private key");
      }
      break;
    case CKK_RSA:
    case CKK_DSA:
      if (secret) {
        return CkError(CKR_TEMPLATE_INCONSISTENT,
                       "an asymmetric key type on a secret key");
      }
      break;
    default:
      return CkError(CKR_ATTRIBUTE_VALUE_INVALID,
                     absl::StrFormat("key type 0x%x is not supported",
                                     static_cast<uint64_t>(*key_type)));
  }
  kind.key_type = *key_type;
  return kind;
}

// IsBigInteger is true for the Big integer typed attributes of the keys
// this token supports (v2.40 mechanisms 2.1.2, 2.2.2).
bool IsBigInteger(CK_ATTRIBUTE_TYPE type) {
  switch (type) {
    case CKA_MODULUS:
    case CKA_PUBLIC_EXPONENT:
    case CKA_PRIVATE_EXPONENT:
    case CKA_PRIME_1:
    case CKA_PRIME_2:
    case CKA_EXPONENT_1:
    case CKA_EXPONENT_2:
    case CKA_COEFFICIENT:
    case CKA_PRIME:
    case CKA_SUBPRIME:
    case CKA_BASE:
      return true;
    default:
      return false;
  }
}

absl::Span<const uint8_t> StripLeadingZeros(absl::Span<const uint8_t> be) {
  while (!be.empty() && be[0] == 0) be.remove_prefix(1);
  return be;
}

// BitLength of a big-endian unsigned integer.
CK_ULONG BitLength(absl::Span<const uint8_t> be) {
  size_t i = 0;
  while (i < be.size() && be[i] == 0) ++i;
  if (i == be.size()) return 0;
  CK_ULONG bits = static_cast<CK_ULONG>(be.size() - i - 1) * 8;
  for (uint8_t top = be[i]; top != 0; top >>= 1) ++bits;
  return bits;
}

ObjectKind KindOf(const AttributeMap& object) {
  ObjectKind kind;
  kind.object_class =
      object.GetUlong(CKA_CLASS).value_or(CK_UNAVAILABLE_INFORMATION);
  kind.key_type =
      object.GetUlong(CKA_KEY_TYPE).value_or(CK_UNAVAILABLE_INFORMATION);
  return kind;
}

// Build is BuildObject, CheckGenerateTemplate when `precheck`.
absl::StatusOr<AttributeMap> Build(Origin origin, const AttributeMap& tmpl,
                                   const AttributeMap& generated,
                                   CK_MECHANISM_TYPE mechanism, bool precheck,
                                   const BuildOptions& options) {
  ACCELCRYPT_ASSIGN_OR_RETURN(ObjectKind kind,
                              ResolveKind(origin, tmpl, generated));
  const RuleSet rules = RulesFor(kind);
  AttributeMap out;

  // The caller's attributes.
  for (const auto& [type, value] : tmpl.values()) {
    const Rule* rule = rules.Find(type);
    if (rule == nullptr) {
      if (IsKnownType(type)) {
        return CkError(CKR_TEMPLATE_INCONSISTENT,
                       absl::StrFormat("%s does not belong to this object",
                                       TypeName(type)));
      }
      return CkError(CKR_ATTRIBUTE_TYPE_INVALID,
                     absl::StrFormat("%s is not supported", TypeName(type)));
    }
    ACCELCRYPT_RETURN_IF_ERROR(CheckValueFormat(type, value.span()));
    if (origin != Origin::kCopy) {
      if ((rule->flags & kTokenSet) != 0) {
        return CkError(
            CKR_ATTRIBUTE_READ_ONLY,
            absl::StrFormat("%s is set by the token", TypeName(type)));
      }
      // CKA_VALUE_LEN / CKA_MODULUS_BITS at creation are footnote 2 but
      // harmless when they state the truth: checked against the value in
      // the derivation below.
      const bool derived_length =
          type == CKA_VALUE_LEN || type == CKA_MODULUS_BITS;
      if (origin == Origin::kCreate && (rule->flags & kForbiddenCreate) != 0 &&
          !derived_length) {
        return CkError(CKR_ATTRIBUTE_READ_ONLY,
                       absl::StrFormat("%s may not be given to C_CreateObject",
                                       TypeName(type)));
      }
      if (origin == Origin::kGenerate &&
          (rule->flags & kForbiddenGenerate) != 0) {
        return CkError(CKR_ATTRIBUTE_READ_ONLY,
                       absl::StrFormat("%s is made by the key generation",
                                       TypeName(type)));
      }
    }
    if (origin != Origin::kCopy && !options.so_session &&
        (rule->flags & kSoOnlyTrue) != 0 && value.size() == 1 &&
        value.data()[0] != CK_FALSE) {
      return CkError(
          CKR_ATTRIBUTE_READ_ONLY,
          absl::StrFormat("%s can only be set true by the SO", TypeName(type)));
    }
    if (IsBoolAttribute(type)) {
      out.SetBool(type, value.data()[0] != CK_FALSE);
    } else {
      out.Set(type, value.span());
    }
  }

  // What the token produced.
  for (const auto& [type, value] : generated.values()) {
    const Rule* rule = rules.Find(type);
    if (rule == nullptr) {
      return CkError(CKR_TEMPLATE_INCONSISTENT,
                     absl::StrFormat("the mechanism made %s, which this "
                                     "object does not have",
                                     TypeName(type)));
    }
    ACCELCRYPT_RETURN_IF_ERROR(CheckValueFormat(type, value.span()));
    const SecretBytes* given = out.Find(type);
    if (given != nullptr) {
      if (ValuesEqual(type, given->span(), value.span())) continue;
      // A caller's 00 01 00 01 is the exponent libcrypto writes as
      // 01 00 01: big integers compare by value (the caller's bytes stay).
      if (IsBigInteger(type) &&
          ValuesEqual(type, StripLeadingZeros(given->span()),
                      StripLeadingZeros(value.span()))) {
        continue;
      }
      if (type == CKA_CHECK_VALUE) {
        // v2.40 4.10: a given check value that does not match the key.
        return CkError(CKR_ATTRIBUTE_VALUE_INVALID,
                       "CKA_CHECK_VALUE does not match the key");
      }
      return CkError(CKR_TEMPLATE_INCONSISTENT,
                     absl::StrFormat("%s differs from what the token made",
                                     TypeName(type)));
    }
    if (IsBoolAttribute(type)) {
      out.SetBool(type, value.data()[0] != CK_FALSE);
    } else {
      out.Set(type, value.span());
    }
  }

  // Required attributes. At generation the key values come from
  // `generated`; a precheck runs before there is any.
  for (const Rule& rule : rules.rules()) {
    // CKA_CLASS / CKA_KEY_TYPE may be implied by the mechanism: resolved
    // above and written below.
    if (rule.type == CKA_CLASS || rule.type == CKA_KEY_TYPE) continue;
    bool missing = false;
    if (origin == Origin::kGenerate) {
      // Footnote 3 attributes come from the caller (an echo by the
      // mechanism does not count); the footnote 1 ones (key values, an RSA
      // public exponent) the generation supplies.
      missing =
          ((rule.flags & kRequiredGenerate) != 0 && !tmpl.Has(rule.type)) ||
          (!precheck && (rule.flags & kRequiredCreate) != 0 &&
           !out.Has(rule.type));
    } else {
      missing = (rule.flags & kRequiredCreate) != 0 && !out.Has(rule.type);
    }
    if (missing) {
      return CkError(CKR_TEMPLATE_INCOMPLETE,
                     absl::StrFormat("%s missing", TypeName(rule.type)));
    }
  }
  out.SetUlong(CKA_CLASS, kind.object_class);
  if (IsKeyClass(kind.object_class)) out.SetUlong(CKA_KEY_TYPE, kind.key_type);

  // Class-specific checks and derived values.
  if (kind.object_class == CKO_CERTIFICATE) {
    // X.509 (v2.40 4.6.3): CKA_VALUE must be non-empty unless CKA_URL is.
    if (out.GetBytes(CKA_VALUE).empty() && out.GetBytes(CKA_URL).empty()) {
      return CkError(CKR_TEMPLATE_INCOMPLETE,
                     "an X.509 certificate needs CKA_VALUE or CKA_URL");
    }
    if (!out.Has(CKA_VALUE)) out.Set(CKA_VALUE, {});
    // Footnote 4 of the X.509 table: the key hashes can only be empty when
    // CKA_URL is.
    if (!out.GetBytes(CKA_URL).empty() &&
        (out.GetBytes(CKA_HASH_OF_SUBJECT_PUBLIC_KEY).empty() ||
         out.GetBytes(CKA_HASH_OF_ISSUER_PUBLIC_KEY).empty())) {
      return CkError(CKR_TEMPLATE_INCOMPLETE,
                     "a certificate by URL needs both public key hashes");
    }
    for (CK_ATTRIBUTE_TYPE t :
         {CKA_CERTIFICATE_CATEGORY, CKA_JAVA_MIDP_SECURITY_DOMAIN}) {
      // Both are 0 (unspecified) to 3.
      const std::optional<CK_ULONG> v = out.GetUlong(t);
      if (v && *v > 3) {
        return CkError(CKR_ATTRIBUTE_VALUE_INVALID,
                       absl::StrFormat("%s: %d is out of range", TypeName(t),
                                       static_cast<uint64_t>(*v)));
      }
    }
  }
  if (kind.object_class == CKO_SECRET_KEY && out.Has(CKA_VALUE)) {
    const size_t len = out.Find(CKA_VALUE)->size();
    if (kind.key_type == CKK_AES && len != 16 && len != 24 && len != 32) {
      return CkError(
          CKR_ATTRIBUTE_VALUE_INVALID,
          absl::StrFormat("an AES key is 16, 24 or 32 bytes, not %d", len));
    }
    if (kind.key_type == CKK_GENERIC_SECRET && len == 0) {
      return CkError(CKR_ATTRIBUTE_VALUE_INVALID,
                     "a generic secret key is not empty");
    }
    const std::optional<CK_ULONG> stated = out.GetUlong(CKA_VALUE_LEN);
    if (stated && *stated != len) {
      return CkError(CKR_TEMPLATE_INCONSISTENT,
                     absl::StrFormat("CKA_VALUE_LEN %d but the value is %d "
                                     "bytes",
                                     static_cast<uint64_t>(*stated), len));
    }
    out.SetUlong(CKA_VALUE_LEN, len);
  }
  if (kind.object_class == CKO_PUBLIC_KEY && kind.key_type == CKK_RSA &&
      out.Has(CKA_MODULUS)) {
    const CK_ULONG bits = BitLength(out.Find(CKA_MODULUS)->span());
    const std::optional<CK_ULONG> stated = out.GetUlong(CKA_MODULUS_BITS);
    if (stated && *stated != bits) {
      return CkError(CKR_TEMPLATE_INCONSISTENT,
                     absl::StrFormat("CKA_MODULUS_BITS %d but the modulus has "
                                     "%d bits",
                                     static_cast<uint64_t>(*stated),
                                     static_cast<uint64_t>(bits)));
    }
    out.SetUlong(CKA_MODULUS_BITS, bits);
  }

  // Defaults.
  const bool generated_key = origin == Origin::kGenerate;
  for (const Rule& rule : rules.rules()) {
    if (out.Has(rule.type)) continue;
    switch (rule.fill) {
      case Default::kNone:
        break;
      case Default::kFalse:
        out.SetBool(rule.type, false);
        break;
      case Default::kTrue:
        out.SetBool(rule.type, true);
        break;
      case Default::kEmpty:
        out.Set(rule.type, {});
        break;
      case Default::kZero:
        out.SetUlong(rule.type, 0);
        break;
      case Default::kUsage:
        out.SetBool(rule.type, KeyTypeHasUsage(kind, rule.type));
        break;
      case Default::kPrivateFlag:
        out.SetBool(rule.type, kind.object_class == CKO_PRIVATE_KEY ||
                                   kind.object_class == CKO_SECRET_KEY);
        break;
      case Default::kDerived:
        break;
    }
  }
  // Token-derived key attributes (v2.40 4.7, 4.9, 4.10); a kCopy keeps
  // the ones it has.
  if (IsKeyClass(kind.object_class)) {
    if (!out.Has(CKA_LOCAL)) out.SetBool(CKA_LOCAL, generated_key);
    if (!out.Has(CKA_KEY_GEN_MECHANISM)) {
      out.SetUlong(CKA_KEY_GEN_MECHANISM,
                   generated_key ? mechanism : CK_UNAVAILABLE_INFORMATION);
    }
    if (kind.object_class != CKO_PUBLIC_KEY) {
      if (!out.Has(CKA_ALWAYS_SENSITIVE)) {
        out.SetBool(CKA_ALWAYS_SENSITIVE,
                    generated_key && out.BoolOr(CKA_SENSITIVE, true));
      }
      if (!out.Has(CKA_NEVER_EXTRACTABLE)) {
        out.SetBool(CKA_NEVER_EXTRACTABLE,
                    generated_key && !out.BoolOr(CKA_EXTRACTABLE, false));
      }
    }
  }
  return out;
}

// Store writes one checked value, CK_BBOOLs as CK_TRUE/CK_FALSE.
void Store(AttributeMap* map, CK_ATTRIBUTE_TYPE type,
           absl::Span<const uint8_t> value) {
  if (IsBoolAttribute(type)) {
    map->SetBool(type, value[0] != CK_FALSE);
  } else {
    map->Set(type, value);
  }
}

enum class Change { kSet, kCopy };

// CheckChange decides whether `type` may become `value` on `object`
// (whose attribute set is `rules`) in a C_SetAttributeValue or a
// C_CopyObject. The create scenarios' codes apply (v2.40 4.1.2, 4.1.3):
// an attribute of another kind of object is inconsistent, one of none
// invalid. Modifiable (footnote 8) attributes may change in both; a copy
// may also change CKA_TOKEN, CKA_PRIVATE, CKA_MODIFIABLE (4.1.3) and
// CKA_DESTROYABLE, and may restate any value unchanged. One-way flags
// (footnotes 11, 12) only tighten.
absl::Status CheckChange(const AttributeMap& object, const RuleSet& rules,
                         CK_ATTRIBUTE_TYPE type,
                         absl::Span<const uint8_t> value, Change how) {
  const Rule* rule = rules.Find(type);
  if (rule == nullptr) {
    if (IsKnownType(type)) {
      return CkError(
          CKR_TEMPLATE_INCONSISTENT,
          absl::StrFormat("%s does not belong to this object", TypeName(type)));
    }
    return CkError(CKR_ATTRIBUTE_TYPE_INVALID,
                   absl::StrFormat("%s is not supported", TypeName(type)));
  }
  ACCELCRYPT_RETURN_IF_ERROR(CheckValueFormat(type, value));
  const SecretBytes* current = object.Find(type);
  if (how == Change::kCopy) {
    if (current != nullptr && ValuesEqual(type, current->span(), value)) {
      return absl::OkStatus();
    }
    if (type == CKA_TOKEN || type == CKA_PRIVATE || type == CKA_MODIFIABLE ||
        type == CKA_DESTROYABLE) {
      return absl::OkStatus();
    }
  }
  const bool one_way = (rule->flags & (kOnlyToTrue | kOnlyToFalse)) != 0;
  if ((rule->flags & kModifiable) == 0 && !one_way) {
    return CkError(CKR_ATTRIBUTE_READ_ONLY,
                   absl::StrFormat("%s is read-only", TypeName(type)));
  }
  if (one_way) {
    const bool wanted = value[0] != CK_FALSE;
    if ((rule->flags & kOnlyToTrue) != 0 && object.BoolOr(type, false) &&
        !wanted) {
      return CkError(
          CKR_ATTRIBUTE_READ_ONLY,
          absl::StrFormat("%s cannot go back to false", TypeName(type)));
    }
    if ((rule->flags & kOnlyToFalse) != 0 && !object.BoolOr(type, true) &&
        wanted) {
      return CkError(
          CKR_ATTRIBUTE_READ_ONLY,
          absl::StrFormat("%s cannot go back to true", TypeName(type)));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<AttributeMap> ParseTemplate(const CK_ATTRIBUTE* tmpl,
                                           CK_ULONG count) {
  if (tmpl == nullptr && count != 0) {
    return CkError(CKR_ARGUMENTS_BAD, "NULL template with a count");
  }
  AttributeMap out;
  for (CK_ULONG i = 0; i < count; ++i) {
    const CK_ATTRIBUTE& a = tmpl[i];
    if (a.pValue == nullptr && a.ulValueLen != 0) {
      return CkError(
          CKR_ARGUMENTS_BAD,
          absl::StrFormat("%s: NULL pValue with length %d", TypeName(a.type),
                          static_cast<uint64_t>(a.ulValueLen)));
    }
    if (IsAttributeArray(a.type)) {
      return CkError(CKR_ATTRIBUTE_TYPE_INVALID,
                     absl::StrFormat("%s: attribute arrays are not supported",
                                     TypeName(a.type)));
    }
    if (a.ulValueLen > kMaxValueLen) {
      return CkError(CKR_ATTRIBUTE_VALUE_INVALID,
                     absl::StrFormat("%s: a value of %d bytes is too large",
                                     TypeName(a.type),
                                     static_cast<uint64_t>(a.ulValueLen)));
    }
    const absl::Span<const uint8_t> value(
        static_cast<const uint8_t*>(a.pValue),
        a.pValue == nullptr ? 0 : a.ulValueLen);
    ACCELCRYPT_RETURN_IF_ERROR(CheckValueFormat(a.type, value));
    if (const SecretBytes* seen = out.Find(a.type)) {
      if (!ValuesEqual(a.type, seen->span(), value)) {
        return CkError(CKR_TEMPLATE_INCONSISTENT,
                       absl::StrFormat("%s given twice with different values",
                                       TypeName(a.type)));
      }
      continue;
    }
    if (IsBoolAttribute(a.type)) {
      out.SetBool(a.type, value[0] != CK_FALSE);
    } else {
      out.Set(a.type, value);
    }
  }
  return out;
}

absl::StatusOr<AttributeMap> BuildObject(Origin origin,
                                         const AttributeMap& tmpl,
                                         const AttributeMap& generated,
                                         CK_MECHANISM_TYPE mechanism) {
  return Build(origin, tmpl, generated, mechanism, /*precheck=*/false,
               BuildOptions());
}

absl::StatusOr<AttributeMap> BuildObject(Origin origin,
                                         const AttributeMap& tmpl,
                                         const AttributeMap& generated,
                                         CK_MECHANISM_TYPE mechanism,
                                         const BuildOptions& options) {
  return Build(origin, tmpl, generated, mechanism, /*precheck=*/false, options);
}

absl::Status CheckGenerateTemplate(const AttributeMap& tmpl,
                                   const AttributeMap& implied) {
  return Build(Origin::kGenerate, tmpl, implied, CK_UNAVAILABLE_INFORMATION,
               /*precheck=*/true, BuildOptions())
      .status();
}

absl::StatusOr<AttributeMap> CopyObject(const AttributeMap& source,
                                        const AttributeMap& tmpl) {
  if (!source.BoolOr(CKA_COPYABLE, true)) {
    return CkError(CKR_ACTION_PROHIBITED, "the object is not copyable");
  }
  const RuleSet rules = RulesFor(KindOf(source));
  AttributeMap out = source;
  for (const auto& [type, value] : tmpl.values()) {
    ACCELCRYPT_RETURN_IF_ERROR(
        CheckChange(source, rules, type, value.span(), Change::kCopy));
    Store(&out, type, value.span());
  }
  return out;
}

absl::Status SetAttributes(AttributeMap* object, const AttributeMap& tmpl) {
  if (!object->BoolOr(CKA_MODIFIABLE, true)) {
    return CkError(CKR_ACTION_PROHIBITED, "the object is not modifiable");
  }
  const ObjectKind kind = KindOf(*object);
  if (kind.object_class == CKO_CERTIFICATE &&
      object->BoolOr(CKA_TRUSTED, false)) {
    // v2.40 4.6.1: trusted certificates cannot be modified.
    return CkError(CKR_ACTION_PROHIBITED,
                   "a trusted certificate is not modifiable");
  }
  const RuleSet rules = RulesFor(kind);
  // Applied to a copy that replaces the object only when every entry
  // passed: all or nothing (even on bad_alloc).
  AttributeMap updated = *object;
  for (const auto& [type, value] : tmpl.values()) {
    ACCELCRYPT_RETURN_IF_ERROR(
        CheckChange(*object, rules, type, value.span(), Change::kSet));
    Store(&updated, type, value.span());
  }
  *object = std::move(updated);
  return absl::OkStatus();
}

CK_RV GetAttributes(const AttributeMap& object, CK_ATTRIBUTE* tmpl,
                    CK_ULONG count) {
  if (tmpl == nullptr && count != 0) return CKR_ARGUMENTS_BAD;
  bool sensitive = false, invalid = false, too_small = false;
  for (CK_ULONG i = 0; i < count; ++i) {
    CK_ATTRIBUTE& a = tmpl[i];
    const SecretBytes* value = object.Find(a.type);
    if (value == nullptr) {
      a.ulValueLen = CK_UNAVAILABLE_INFORMATION;
      invalid = true;
    } else if (!IsRevealable(object, a.type)) {
      a.ulValueLen = CK_UNAVAILABLE_INFORMATION;
      sensitive = true;
    } else if (a.pValue == nullptr) {
      a.ulValueLen = value->size();
    } else if (a.ulValueLen >= value->size()) {
      if (!value->empty()) std::memcpy(a.pValue, value->data(), value->size());
      a.ulValueLen = value->size();
    } else {
      a.ulValueLen = CK_UNAVAILABLE_INFORMATION;
      too_small = true;
    }
  }
  if (sensitive) return CKR_ATTRIBUTE_SENSITIVE;
  if (invalid) return CKR_ATTRIBUTE_TYPE_INVALID;
  if (too_small) return CKR_BUFFER_TOO_SMALL;
  return CKR_OK;
}

bool Matches(const AttributeMap& object, const AttributeMap& tmpl) {
  for (const auto& [type, value] : tmpl.values()) {
    const SecretBytes* have = object.Find(type);
    if (have == nullptr || !ValuesEqual(type, have->span(), value.span())) {
      return false;
    }
  }
  return true;
}

bool IsPrivateObject(const AttributeMap& object) {
  return object.BoolOr(CKA_PRIVATE, true);
}

bool IsTokenObject(const AttributeMap& object) {
  return object.BoolOr(CKA_TOKEN, false);
}

std::vector<CK_ATTRIBUTE_TYPE> KeyMaterialTypes(CK_OBJECT_CLASS object_class,
                                                CK_KEY_TYPE key_type) {
  ObjectKind kind;
  kind.object_class = object_class;
  kind.key_type = key_type;
  if (!IsKeyClass(object_class)) return {};
  if (object_class == CKO_SECRET_KEY && key_type != CKK_AES &&
      key_type != CKK_GENERIC_SECRET) {
    return {};
  }
  if (object_class != CKO_SECRET_KEY && key_type != CKK_RSA &&
      key_type != CKK_DSA) {
    return {};
  }
  std::vector<CK_ATTRIBUTE_TYPE> out;
  const RuleSet rules = RulesFor(kind);
  for (const Rule& r : rules.rules()) {
    if ((r.flags & kKeyMaterial) != 0) out.push_back(r.type);
  }
  return out;
}

bool IsKeyMaterial(const AttributeMap& object, CK_ATTRIBUTE_TYPE type) {
  const ObjectKind kind = KindOf(object);
  for (CK_ATTRIBUTE_TYPE t :
       KeyMaterialTypes(kind.object_class, kind.key_type)) {
    if (t == type) return true;
  }
  return false;
}

absl::Status CheckMechanismAllowed(const AttributeMap& key,
                                   CK_MECHANISM_TYPE mechanism) {
  const SecretBytes* list = key.Find(CKA_ALLOWED_MECHANISMS);
  if (list == nullptr || list->empty()) return absl::OkStatus();
  const size_t n = list->size() / sizeof(CK_MECHANISM_TYPE);
  for (size_t i = 0; i < n; ++i) {
    CK_MECHANISM_TYPE allowed;
    std::memcpy(&allowed, list->data() + i * sizeof(allowed), sizeof(allowed));
    if (allowed == mechanism) return absl::OkStatus();
  }
  return CkError(CKR_MECHANISM_INVALID,
                 absl::StrFormat("mechanism 0x%x is not in the key's "
                                 "CKA_ALLOWED_MECHANISMS",
                                 static_cast<uint64_t>(mechanism)));
}

bool IsRevealable(const AttributeMap& object, CK_ATTRIBUTE_TYPE type) {
  if (!IsKeyMaterial(object, type)) return true;
  return !object.BoolOr(CKA_SENSITIVE, true) &&
         object.BoolOr(CKA_EXTRACTABLE, false);
}

absl::Status CheckKeyUse(const AttributeMap& object, CK_ATTRIBUTE_TYPE usage) {
  const std::optional<CK_ULONG> cls = object.GetUlong(CKA_CLASS);
  if (!cls || !IsKeyClass(*cls)) {
    return CkError(CKR_KEY_TYPE_INCONSISTENT, "the object is not a key");
  }
  if (!object.BoolOr(usage, false)) {
    return CkError(
        CKR_KEY_FUNCTION_NOT_PERMITTED,
        absl::StrFormat("the key does not allow %s", TypeName(usage)));
  }
  return absl::OkStatus();
}

}  // namespace accelcrypt::p11
