// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_PKCS11_OBJECT_OBJECT_RULES_H_
#define ACCELCRYPT_PKCS11_OBJECT_OBJECT_RULES_H_

#include <p11-kit-1/p11-kit/pkcs11.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pkcs11/common/attributes.h"

namespace accelcrypt::p11 {

// The object model of PKCS#11 v2.40 (sections 4.x of the base spec) for
// the classes the module supports: CKO_DATA, CKO_SECRET_KEY (CKK_AES,
// CKK_GENERIC_SECRET), CKO_PUBLIC_KEY and CKO_PRIVATE_KEY (CKK_RSA,
// CKK_DSA), CKO_CERTIFICATE (CKC_X_509, stored as given). Pure functions
// over AttributeMap: no store, no crypto, no session state. Every error
// carries its exact CK_RV (pkcs11/common/ck_error.h).

// ParseTemplate copies a caller's template into a map, checking each
// entry: NULL pValue with a non-zero length -> CKR_ARGUMENTS_BAD; a
// CK_ULONG or CK_BBOOL attribute with the wrong length ->
// CKR_ATTRIBUTE_VALUE_INVALID; an attribute twice with different values ->
// CKR_TEMPLATE_INCONSISTENT. `tmpl` may be NULL only when `count` is 0.
absl::StatusOr<AttributeMap> ParseTemplate(const CK_ATTRIBUTE* tmpl,
                                           CK_ULONG count);

// What an object is being built for; decides defaults and which
// attributes the caller may set.
enum class Origin {
  kCreate,    // C_CreateObject: the caller supplies the values
  kGenerate,  // C_GenerateKey / C_GenerateKeyPair: values come from `generated`
  kCopy,      // C_CopyObject
};

// BuildObject validates `tmpl` for `origin` and returns the complete object:
// class and key type checked and required, defaults filled (CKA_TOKEN,
// CKA_PRIVATE (true for private and secret keys, false otherwise),
// CKA_MODIFIABLE, CKA_COPYABLE, CKA_DESTROYABLE, CKA_LABEL, CKA_ID,
// usage flags, CKA_SENSITIVE, CKA_EXTRACTABLE, ...), the derived ones set
// by the token (CKA_LOCAL true only for kGenerate; CKA_ALWAYS_SENSITIVE =
// sensitive and generated; CKA_NEVER_EXTRACTABLE = !extractable and
// generated; CKA_KEY_GEN_MECHANISM = `mechanism` for kGenerate else
// CK_UNAVAILABLE_INFORMATION; CKA_VALUE_LEN for secret keys;
// CKA_MODULUS_BITS for RSA public keys), and `generated` merged in (key
// values the mechanism produced; they override nothing the caller gave,
// a clash is CKR_TEMPLATE_INCONSISTENT). Errors: CKR_TEMPLATE_INCOMPLETE
// (missing class, key type, CKA_VALUE, modulus, ...),
// CKR_TEMPLATE_INCONSISTENT, CKR_ATTRIBUTE_TYPE_INVALID (not valid for the
// class), CKR_ATTRIBUTE_READ_ONLY (CKA_LOCAL, CKA_ALWAYS_SENSITIVE, ...
// given by the caller), CKR_ATTRIBUTE_VALUE_INVALID (bad class/key type/
// AES key length 16/24/32), CKR_KEY_SIZE_RANGE is not decided here.
absl::StatusOr<AttributeMap> BuildObject(Origin origin,
                                         const AttributeMap& tmpl,
                                         const AttributeMap& generated,
                                         CK_MECHANISM_TYPE mechanism);

// CopyObject (C_CopyObject): `source` with `tmpl` applied. Only CKA_TOKEN,
// CKA_PRIVATE, CKA_MODIFIABLE, CKA_DESTROYABLE, CKA_LABEL, CKA_ID and the
// one-way flags (CKA_SENSITIVE false->true, CKA_EXTRACTABLE true->false)
// may change; CKA_COPYABLE false -> CKR_ACTION_PROHIBITED.
absl::StatusOr<AttributeMap> CopyObject(const AttributeMap& source,
                                        const AttributeMap& tmpl);

// SetAttributes (C_SetAttributeValue): applies `tmpl` to `object` or
// changes nothing. CKA_MODIFIABLE false -> CKR_ACTION_PROHIBITED; a
// read-only attribute (class, key type, CKA_LOCAL, key values,
// CKA_ALWAYS_SENSITIVE, ...) -> CKR_ATTRIBUTE_READ_ONLY; CKA_SENSITIVE may
// only become true, CKA_EXTRACTABLE only false (else
// CKR_ATTRIBUTE_READ_ONLY); unknown for the class ->
// CKR_ATTRIBUTE_TYPE_INVALID. CKA_TOKEN/CKA_PRIVATE changes are refused
// here (CKR_ATTRIBUTE_READ_ONLY): moving between stores is not a set.
absl::Status SetAttributes(AttributeMap* object, const AttributeMap& tmpl);

// GetAttributes (C_GetAttributeValue): fills `tmpl` from `object` with the
// spec's per-attribute rules, processing every entry: a sensitive value
// (private key parts and CKA_VALUE of a secret key when CKA_SENSITIVE is
// true or CKA_EXTRACTABLE is false) -> ulValueLen =
// CK_UNAVAILABLE_INFORMATION and CKR_ATTRIBUTE_SENSITIVE; an attribute the
// object does not have -> CK_UNAVAILABLE_INFORMATION and
// CKR_ATTRIBUTE_TYPE_INVALID; pValue NULL -> the length only; a buffer too
// small -> CK_UNAVAILABLE_INFORMATION and CKR_BUFFER_TOO_SMALL. Returns
// CKR_OK or one of those three (any one, as the spec allows).
CK_RV GetAttributes(const AttributeMap& object, CK_ATTRIBUTE* tmpl,
                    CK_ULONG count);

// Matches is true when `object` has every attribute of `tmpl` with an
// equal value (C_FindObjectsInit semantics; an empty template matches
// everything). Sensitive values are compared in constant time.
bool Matches(const AttributeMap& object, const AttributeMap& tmpl);

// IsPrivateObject / IsTokenObject read CKA_PRIVATE / CKA_TOKEN.
bool IsPrivateObject(const AttributeMap& object);
bool IsTokenObject(const AttributeMap& object);

// CheckKeyUse is CKR_KEY_FUNCTION_NOT_PERMITTED unless `object` is a key
// whose usage attribute `usage` (CKA_ENCRYPT, CKA_DECRYPT, CKA_SIGN,
// CKA_VERIFY, CKA_SIGN_RECOVER, CKA_VERIFY_RECOVER, CKA_WRAP, ...) is
// true; CKR_KEY_HANDLE_INVALID-style CKR_KEY_TYPE_INCONSISTENT when it is
// not a key at all.
absl::Status CheckKeyUse(const AttributeMap& object, CK_ATTRIBUTE_TYPE usage);

}  // namespace accelcrypt::p11

#endif  // ACCELCRYPT_PKCS11_OBJECT_OBJECT_RULES_H_
