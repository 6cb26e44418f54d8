// SPDX-License-Identifier: Apache-2.0
// The attribute rule tables of PKCS#11 objects (v2.40 base spec section 4
// and the mechanisms spec's key tables) and the vocabulary they are written
// in. Internal to pkcs11/object: object_rules.cc applies them.
#ifndef ACCELCRYPT_PKCS11_OBJECT_INTERNAL_RULE_TABLES_H_
#define ACCELCRYPT_PKCS11_OBJECT_INTERNAL_RULE_TABLES_H_

#include <p11-kit-1/p11-kit/pkcs11.h>

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace accelcrypt::p11 {

// Per-attribute rules, from the footnotes of the v2.40 attribute tables
// (base spec section 4.2, table 10).
enum RuleFlag : uint32_t {
  kRequiredCreate = 1u << 0,     // footnote 1: must be given at C_CreateObject
  kForbiddenCreate = 1u << 1,    // footnote 2: must not be given at create
  kRequiredGenerate = 1u << 2,   // footnote 3: must be given at generation
  kForbiddenGenerate = 1u << 3,  // footnote 4: must not be given at generation
  kKeyMaterial = 1u << 4,        // footnote 7: hidden when sensitive
  kModifiable = 1u << 5,         // footnote 8: C_SetAttributeValue may change
  kSoOnlyTrue = 1u << 6,         // footnote 10: only the SO sets it true
  kOnlyToTrue = 1u << 7,         // footnote 11: read-only once true
  kOnlyToFalse = 1u << 8,        // footnote 12: read-only once false
  kTokenSet = 1u << 9,           // derived by the token, never by a caller
};

// How an absent attribute is filled in.
enum class Default {
  kNone,  // stays absent (optional)
  kFalse,
  kTrue,
  kEmpty,        // empty byte string
  kZero,         // CK_ULONG 0
  kUsage,        // true when the key type has this usage (KeyTypeHasUsage)
  kPrivateFlag,  // CKA_PRIVATE: true for private and secret keys
  kDerived,      // computed in Finish()
};

struct Rule {
  CK_ATTRIBUTE_TYPE type;
  uint32_t flags;
  Default fill;
};

// The attribute set of one kind of object.
class RuleSet {
 public:
  void Add(absl::Span<const Rule> rules) {
    // A later table refines an earlier one (CKA_VALUE of a certificate).
    for (const Rule& r : rules) {
      bool replaced = false;
      for (Rule& mine : rules_) {
        if (mine.type == r.type) {
          mine = r;
          replaced = true;
        }
      }
      if (!replaced) rules_.push_back(r);
    }
  }
  const Rule* Find(CK_ATTRIBUTE_TYPE type) const {
    for (const Rule& r : rules_) {
      if (r.type == type) return &r;
    }
    return nullptr;
  }
  const std::vector<Rule>& rules() const { return rules_; }

 private:
  std::vector<Rule> rules_;
};

// ObjectKind names what an object is once its class (and key type or
// certificate type) is known.
struct ObjectKind {
  CK_OBJECT_CLASS object_class = CKO_DATA;
  CK_KEY_TYPE key_type = CK_UNAVAILABLE_INFORMATION;  // keys only
};

inline bool IsKeyClass(CK_OBJECT_CLASS c) {
  return c == CKO_PUBLIC_KEY || c == CKO_PRIVATE_KEY || c == CKO_SECRET_KEY;
}

// RulesFor is the attribute set of one kind of object: the storage rules,
// then the class's, then the key type's (a later table refines an earlier
// one).
RuleSet RulesFor(const ObjectKind& kind);

// IsKnownType is true for every attribute type some supported object has:
// a template naming one that this object lacks is inconsistent rather
// than invalid (v2.40 4.1.3).
bool IsKnownType(CK_ATTRIBUTE_TYPE type);

// KeyTypeHasUsage: the token's default for a usage flag of this kind of key
// (object_rules.h says which).
bool KeyTypeHasUsage(const ObjectKind& kind, CK_ATTRIBUTE_TYPE usage);

}  // namespace accelcrypt::p11

#endif  // ACCELCRYPT_PKCS11_OBJECT_INTERNAL_RULE_TABLES_H_
