// SPDX-License-Identifier: Apache-2.0
// The attribute rule tables (internal/rule_tables.h).
#include "pkcs11/object/internal/rule_tables.h"

namespace accelcrypt::p11 {
namespace {

// Common object and storage attributes (v2.40 4.2, 4.4). CKA_CLASS is
// checked on its own. CKA_TOKEN and CKA_PRIVATE change only by copying;
// CKA_MODIFIABLE, CKA_DESTROYABLE likewise; CKA_COPYABLE can't be set to
// true once false.
constexpr Rule kStorageRules[] = {
    {CKA_CLASS, kRequiredCreate, Default::kNone},
    {CKA_TOKEN, 0, Default::kFalse},
    {CKA_PRIVATE, 0, Default::kPrivateFlag},
    {CKA_MODIFIABLE, 0, Default::kTrue},
    {CKA_LABEL, kModifiable, Default::kEmpty},
    {CKA_COPYABLE, kOnlyToFalse, Default::kTrue},
    {CKA_DESTROYABLE, 0, Default::kTrue},
};

// Data objects (v2.40 4.5).
constexpr Rule kDataRules[] = {
    {CKA_APPLICATION, kModifiable, Default::kEmpty},
    {CKA_OBJECT_ID, kModifiable, Default::kEmpty},
    {CKA_VALUE, kModifiable, Default::kEmpty},
};

// Certificates (v2.40 4.6.2) and X.509 public key certificates (4.6.3):
// only CKA_ID, CKA_ISSUER and CKA_SERIAL_NUMBER (and CKA_LABEL) may be
// modified. CKA_VALUE is required unless CKA_URL is given (Finish()).
constexpr Rule kX509Rules[] = {
    {CKA_CERTIFICATE_TYPE, kRequiredCreate, Default::kNone},
    {CKA_TRUSTED, kSoOnlyTrue, Default::kFalse},
    {CKA_CERTIFICATE_CATEGORY, 0, Default::kZero},
    {CKA_CHECK_VALUE, 0, Default::kNone},
    {CKA_START_DATE, 0, Default::kEmpty},
    {CKA_END_DATE, 0, Default::kEmpty},
    {CKA_PUBLIC_KEY_INFO, 0, Default::kEmpty},
    {CKA_SUBJECT, kRequiredCreate, Default::kNone},
    {CKA_ID, kModifiable, Default::kEmpty},
    {CKA_ISSUER, kModifiable, Default::kEmpty},
    {CKA_SERIAL_NUMBER, kModifiable, Default::kEmpty},
    {CKA_VALUE, 0, Default::kNone},
    {CKA_URL, 0, Default::kEmpty},
    {CKA_HASH_OF_SUBJECT_PUBLIC_KEY, 0, Default::kEmpty},
    {CKA_HASH_OF_ISSUER_PUBLIC_KEY, 0, Default::kEmpty},
    {CKA_JAVA_MIDP_SECURITY_DOMAIN, 0, Default::kZero},
    {CKA_NAME_HASH_ALGORITHM, 0, Default::kNone},
};

// Common key attributes (v2.40 4.7).
constexpr Rule kKeyRules[] = {
    {CKA_KEY_TYPE, kRequiredCreate, Default::kNone},
    {CKA_ID, kModifiable, Default::kEmpty},
    {CKA_START_DATE, kModifiable, Default::kEmpty},
    {CKA_END_DATE, kModifiable, Default::kEmpty},
    {CKA_DERIVE, kModifiable, Default::kFalse},
    {CKA_LOCAL, kTokenSet, Default::kDerived},
    {CKA_KEY_GEN_MECHANISM, kTokenSet, Default::kDerived},
    {CKA_ALLOWED_MECHANISMS, 0, Default::kEmpty},
};

// Public keys (v2.40 4.8).
constexpr Rule kPublicKeyRules[] = {
    {CKA_SUBJECT, kModifiable, Default::kEmpty},
    {CKA_ENCRYPT, kModifiable, Default::kUsage},
    {CKA_VERIFY, kModifiable, Default::kUsage},
    {CKA_VERIFY_RECOVER, kModifiable, Default::kUsage},
    {CKA_WRAP, kModifiable, Default::kUsage},
    {CKA_TRUSTED, kSoOnlyTrue, Default::kFalse},
    {CKA_PUBLIC_KEY_INFO, 0, Default::kEmpty},
};

// Private keys (v2.40 4.9).
constexpr Rule kPrivateKeyRules[] = {
    {CKA_SUBJECT, kModifiable, Default::kEmpty},
    {CKA_SENSITIVE, kModifiable | kOnlyToTrue, Default::kTrue},
    {CKA_DECRYPT, kModifiable, Default::kUsage},
    {CKA_SIGN, kModifiable, Default::kUsage},
    {CKA_SIGN_RECOVER, kModifiable, Default::kUsage},
    {CKA_UNWRAP, kModifiable, Default::kUsage},
    {CKA_EXTRACTABLE, kModifiable | kOnlyToFalse, Default::kFalse},
    {CKA_ALWAYS_SENSITIVE, kTokenSet, Default::kDerived},
    {CKA_NEVER_EXTRACTABLE, kTokenSet, Default::kDerived},
    {CKA_WRAP_WITH_TRUSTED, kOnlyToTrue, Default::kFalse},
    {CKA_ALWAYS_AUTHENTICATE, 0, Default::kFalse},
    {CKA_PUBLIC_KEY_INFO, 0, Default::kEmpty},
};

// Secret keys (v2.40 4.10). CKA_CHECK_VALUE is only ever given (or
// computed by the caller of BuildObject), never derived here.
constexpr Rule kSecretKeyRules[] = {
    {CKA_SENSITIVE, kModifiable | kOnlyToTrue, Default::kTrue},
    {CKA_ENCRYPT, kModifiable, Default::kUsage},
    {CKA_DECRYPT, kModifiable, Default::kUsage},
    {CKA_SIGN, kModifiable, Default::kUsage},
    {CKA_VERIFY, kModifiable, Default::kUsage},
    {CKA_WRAP, kModifiable, Default::kUsage},
    {CKA_UNWRAP, kModifiable, Default::kUsage},
    {CKA_EXTRACTABLE, kModifiable | kOnlyToFalse, Default::kFalse},
    {CKA_ALWAYS_SENSITIVE, kTokenSet, Default::kDerived},
    {CKA_NEVER_EXTRACTABLE, kTokenSet, Default::kDerived},
    {CKA_CHECK_VALUE, 0, Default::kNone},
    {CKA_WRAP_WITH_TRUSTED, kOnlyToTrue, Default::kFalse},
    {CKA_TRUSTED, kSoOnlyTrue, Default::kFalse},
};

// RSA keys (v2.40 mechanisms spec 2.1.2, 2.1.3).
constexpr Rule kRsaPublicRules[] = {
    {CKA_MODULUS, kRequiredCreate | kForbiddenGenerate, Default::kNone},
    {CKA_MODULUS_BITS, kForbiddenCreate | kRequiredGenerate, Default::kDerived},
    {CKA_PUBLIC_EXPONENT, kRequiredCreate, Default::kNone},
};
constexpr Rule kRsaPrivateRules[] = {
    {CKA_MODULUS, kRequiredCreate | kForbiddenGenerate, Default::kNone},
    {CKA_PUBLIC_EXPONENT, kForbiddenGenerate, Default::kNone},
    {CKA_PRIVATE_EXPONENT, kRequiredCreate | kForbiddenGenerate | kKeyMaterial,
     Default::kNone},
    {CKA_PRIME_1, kForbiddenGenerate | kKeyMaterial, Default::kNone},
    {CKA_PRIME_2, kForbiddenGenerate | kKeyMaterial, Default::kNone},
    {CKA_EXPONENT_1, kForbiddenGenerate | kKeyMaterial, Default::kNone},
    {CKA_EXPONENT_2, kForbiddenGenerate | kKeyMaterial, Default::kNone},
    {CKA_COEFFICIENT, kForbiddenGenerate | kKeyMaterial, Default::kNone},
};

// DSA keys (v2.40 mechanisms spec 2.2.2, 2.2.3): the public key template
// of a generation carries the domain parameters.
constexpr Rule kDsaPublicRules[] = {
    {CKA_PRIME, kRequiredCreate | kRequiredGenerate, Default::kNone},
    {CKA_SUBPRIME, kRequiredCreate | kRequiredGenerate, Default::kNone},
    {CKA_BASE, kRequiredCreate | kRequiredGenerate, Default::kNone},
    {CKA_VALUE, kRequiredCreate | kForbiddenGenerate, Default::kNone},
};
constexpr Rule kDsaPrivateRules[] = {
    {CKA_PRIME, kRequiredCreate | kForbiddenGenerate, Default::kNone},
    {CKA_SUBPRIME, kRequiredCreate | kForbiddenGenerate, Default::kNone},
    {CKA_BASE, kRequiredCreate | kForbiddenGenerate, Default::kNone},
    {CKA_VALUE, kRequiredCreate | kForbiddenGenerate | kKeyMaterial,
     Default::kNone},
};

// AES (mechanisms spec 2.8.2) and generic secret keys (2.19.2).
constexpr Rule kSecretValueRules[] = {
    {CKA_VALUE, kRequiredCreate | kForbiddenGenerate | kKeyMaterial,
     Default::kNone},
    {CKA_VALUE_LEN, kForbiddenCreate | kRequiredGenerate, Default::kDerived},
};

}  // namespace

RuleSet RulesFor(const ObjectKind& kind) {
  RuleSet set;
  set.Add(kStorageRules);
  switch (kind.object_class) {
    case CKO_DATA:
      set.Add(kDataRules);
      break;
    case CKO_CERTIFICATE:
      set.Add(kX509Rules);
      break;
    case CKO_PUBLIC_KEY:
      set.Add(kKeyRules);
      set.Add(kPublicKeyRules);
      set.Add(kind.key_type == CKK_RSA
                  ? absl::Span<const Rule>(kRsaPublicRules)
                  : absl::Span<const Rule>(kDsaPublicRules));
      break;
    case CKO_PRIVATE_KEY:
      set.Add(kKeyRules);
      set.Add(kPrivateKeyRules);
      set.Add(kind.key_type == CKK_RSA
                  ? absl::Span<const Rule>(kRsaPrivateRules)
                  : absl::Span<const Rule>(kDsaPrivateRules));
      break;
    case CKO_SECRET_KEY:
      set.Add(kKeyRules);
      set.Add(kSecretKeyRules);
      set.Add(kSecretValueRules);
      break;
    default:
      break;
  }
  return set;
}

bool IsKnownType(CK_ATTRIBUTE_TYPE type) {
  for (absl::Span<const Rule> table :
       {absl::Span<const Rule>(kStorageRules),
        absl::Span<const Rule>(kDataRules), absl::Span<const Rule>(kX509Rules),
        absl::Span<const Rule>(kKeyRules),
        absl::Span<const Rule>(kPublicKeyRules),
        absl::Span<const Rule>(kPrivateKeyRules),
        absl::Span<const Rule>(kSecretKeyRules),
        absl::Span<const Rule>(kRsaPublicRules),
        absl::Span<const Rule>(kRsaPrivateRules),
        absl::Span<const Rule>(kDsaPublicRules),
        absl::Span<const Rule>(kDsaPrivateRules),
        absl::Span<const Rule>(kSecretValueRules)}) {
    for (const Rule& r : table) {
      if (r.type == type) return true;
    }
  }
  return false;
}

bool KeyTypeHasUsage(const ObjectKind& kind, CK_ATTRIBUTE_TYPE usage) {
  switch (kind.key_type) {
    case CKK_RSA:
      if (kind.object_class == CKO_PUBLIC_KEY) {
        return usage == CKA_ENCRYPT || usage == CKA_VERIFY ||
               usage == CKA_VERIFY_RECOVER || usage == CKA_WRAP;
      }
      return usage == CKA_DECRYPT || usage == CKA_SIGN ||
             usage == CKA_SIGN_RECOVER || usage == CKA_UNWRAP;
    case CKK_DSA:
      return usage ==
             (kind.object_class == CKO_PUBLIC_KEY ? CKA_VERIFY : CKA_SIGN);
    case CKK_AES:
      return usage == CKA_ENCRYPT || usage == CKA_DECRYPT ||
             usage == CKA_SIGN || usage == CKA_VERIFY || usage == CKA_WRAP ||
             usage == CKA_UNWRAP;
    case CKK_GENERIC_SECRET:
      return usage == CKA_SIGN || usage == CKA_VERIFY;
    default:
      return false;
  }
}

}  // namespace accelcrypt::p11
