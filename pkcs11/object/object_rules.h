// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_PKCS11_OBJECT_OBJECT_RULES_H_
#define ACCELCRYPT_PKCS11_OBJECT_OBJECT_RULES_H_

#include <p11-kit-1/p11-kit/pkcs11.h>

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pkcs11/common/attributes.h"

namespace accelcrypt::p11 {

// The object model of PKCS#11 v2.40 (sections 4.x of the base spec) for
// the classes the module supports: CKO_DATA, CKO_SECRET_KEY (CKK_AES,
// CKK_GENERIC_SECRET), CKO_PUBLIC_KEY and CKO_PRIVATE_KEY (CKK_RSA,
// CKK_DSA), CKO_CERTIFICATE (CKC_X_509, stored as given). Pure functions
// over AttributeMap: no store, no crypto, no session state. Every error
// carries its exact CK_RV (pkcs11/common/ck_error.h). All functions are
// thread-safe (no shared state).
//
// The token's choices where the spec leaves them to the token (footnote 9
// of the attribute tables) are:
//   CKA_PRIVATE      true for private and secret keys, false for data
//                    objects, certificates and public keys.
//   CKA_SENSITIVE    true (private and secret keys).
//   CKA_EXTRACTABLE  false (private and secret keys). A key's value can
//                    only be read when the caller set CKA_SENSITIVE false
//                    and CKA_EXTRACTABLE true.
//   usage flags      true for the usages the key type has in PKCS#11
//                    (RSA public: CKA_ENCRYPT, CKA_VERIFY,
//                    CKA_VERIFY_RECOVER, CKA_WRAP; RSA private: CKA_DECRYPT,
//                    CKA_SIGN, CKA_SIGN_RECOVER, CKA_UNWRAP; DSA public:
//                    CKA_VERIFY; DSA private: CKA_SIGN; AES: CKA_ENCRYPT,
//                    CKA_DECRYPT, CKA_SIGN, CKA_VERIFY, CKA_WRAP,
//                    CKA_UNWRAP; generic secret: CKA_SIGN, CKA_VERIFY), false
//                    for the others. CKA_DERIVE defaults to false (spec).
// Spec defaults: CKA_TOKEN false, CKA_MODIFIABLE / CKA_COPYABLE /
// CKA_DESTROYABLE true, CKA_LABEL, CKA_ID, CKA_SUBJECT, CKA_START_DATE,
// CKA_END_DATE, CKA_ALLOWED_MECHANISMS (no restriction), ... empty,
// CKA_TRUSTED, CKA_WRAP_WITH_TRUSTED, CKA_ALWAYS_AUTHENTICATE false,
// CKA_CERTIFICATE_CATEGORY and CKA_JAVA_MIDP_SECURITY_DOMAIN 0. Optional
// key parts (RSA CRT values, CKA_CHECK_VALUE) are absent unless given.
// CK_BBOOL values are stored as CK_TRUE / CK_FALSE whatever non-zero byte
// the caller used.
//
// Attributes of a template are judged per the spec's object creation
// rules (v2.40 section 4.1.3): an attribute type this token knows for some
// class/key type but not for this one (CKA_MODULUS on an AES key) is
// CKR_TEMPLATE_INCONSISTENT; a type it knows for no object
// (vendor-defined, CKA_EC_PARAMS, attribute arrays such as
// CKA_WRAP_TEMPLATE) is CKR_ATTRIBUTE_TYPE_INVALID.

// ParseTemplate copies a caller's template into a map, checking each
// entry: NULL pValue with a non-zero length -> CKR_ARGUMENTS_BAD; a
// CK_ULONG or CK_BBOOL attribute with the wrong length, a CK_DATE that is
// neither empty nor 8 digits, CKA_ALLOWED_MECHANISMS not a whole number of
// CK_MECHANISM_TYPEs -> CKR_ATTRIBUTE_VALUE_INVALID; an array-of-attributes
// type (CKA_WRAP_TEMPLATE, CKA_UNWRAP_TEMPLATE, CKA_DERIVE_TEMPLATE) ->
// CKR_ATTRIBUTE_TYPE_INVALID (not supported); a value over 16 MiB ->
// CKR_ATTRIBUTE_VALUE_INVALID; an attribute twice with
// different values -> CKR_TEMPLATE_INCONSISTENT (twice with the same value
// is accepted). `tmpl` may be NULL only when `count` is 0 (else
// CKR_ARGUMENTS_BAD). CK_BBOOL values are stored as CK_TRUE/CK_FALSE.
// Suitable for every template: create, generate, copy, set, find.
absl::StatusOr<AttributeMap> ParseTemplate(const CK_ATTRIBUTE* tmpl,
                                           CK_ULONG count);

// What an object is being built for; decides defaults and which
// attributes the caller may set.
enum class Origin {
  kCreate,    // C_CreateObject: the caller supplies the values
  kGenerate,  // C_GenerateKey / C_GenerateKeyPair: values come from `generated`
  kCopy,      // a complete object re-validated (a copy's source, an object
              // read back from a store): CKA_LOCAL, CKA_ALWAYS_SENSITIVE,
              // CKA_NEVER_EXTRACTABLE, CKA_KEY_GEN_MECHANISM,
              // CKA_VALUE_LEN, CKA_MODULUS_BITS are kept as given (checked
              // for type and length only) and computed as for kCreate when
              // absent. C_CopyObject itself is CopyObject below.
};

// BuildObject validates `tmpl` for `origin` and returns the complete object:
// class and key type checked and required, defaults filled (CKA_TOKEN,
// CKA_PRIVATE (true for private and secret keys, false otherwise),
// CKA_MODIFIABLE, CKA_COPYABLE, CKA_DESTROYABLE, CKA_LABEL, CKA_ID,
// usage flags, CKA_SENSITIVE, CKA_EXTRACTABLE, ...: see above), the derived
// ones set by the token (CKA_LOCAL true only for kGenerate;
// CKA_ALWAYS_SENSITIVE = sensitive and generated; CKA_NEVER_EXTRACTABLE =
// !extractable and generated; CKA_KEY_GEN_MECHANISM = `mechanism` for
// kGenerate else CK_UNAVAILABLE_INFORMATION; CKA_VALUE_LEN for secret keys
// (the value's length); CKA_MODULUS_BITS for RSA public keys (the
// modulus' bit length)), and `generated` merged in (values the token
// produced: for kGenerate the mechanism's CKA_CLASS, CKA_KEY_TYPE and key
// values (a DSA private key's CKA_PRIME/SUBPRIME/BASE too; an RSA private
// key's CKA_MODULUS and CKA_PUBLIC_EXPONENT too); for any origin a
// token-computed CKA_CHECK_VALUE may be given. They override nothing the
// caller gave: an equal value is fine, a different CKA_CHECK_VALUE is
// CKR_ATTRIBUTE_VALUE_INVALID, any other clash CKR_TEMPLATE_INCONSISTENT).
// For kGenerate the class and key type may come from `generated` alone
// (the mechanism implies them; footnote 5 of the key tables).
// Errors:
//   CKR_TEMPLATE_INCOMPLETE   missing class, key type, certificate type,
//                             CKA_VALUE (a certificate: unless CKA_URL
//                             and both key hashes are given), modulus,
//                             public exponent, DSA domain parameters,
//                             CKA_SUBJECT of a certificate, CKA_VALUE_LEN
//                             (kGenerate of a secret key),
//                             CKA_MODULUS_BITS (kGenerate of an RSA public
//                             key), ...
//   CKR_TEMPLATE_INCONSISTENT class/key type mismatch (CKK_AES on a public
//                             key, a key class for a kGenerate of a data
//                             object), an attribute of another class or
//                             key type, CKA_VALUE_LEN not the value's
//                             length, CKA_MODULUS_BITS not the modulus'
//                             bit length, a clash with `generated`
//   CKR_ATTRIBUTE_TYPE_INVALID a type the token knows for no object
//   CKR_ATTRIBUTE_READ_ONLY   CKA_LOCAL, CKA_ALWAYS_SENSITIVE,
//                             CKA_NEVER_EXTRACTABLE, CKA_KEY_GEN_MECHANISM
//                             given by the caller (kCreate, kGenerate);
//                             key values given at kGenerate (footnote 4:
//                             CKA_VALUE, CKA_MODULUS, CKA_PRIVATE_EXPONENT,
//                             ...); CKA_VALUE_LEN at kCreate and
//                             CKA_MODULUS_BITS at kCreate are footnote 2 but
//                             accepted when equal to the derived value
//                             (callers send them), else
//                             CKR_TEMPLATE_INCONSISTENT; CKA_TRUSTED true
//                             (footnote 10: only in an SO session, see
//                             BuildOptions)
//   CKR_ATTRIBUTE_VALUE_INVALID bad class, key type or certificate type
//                             value (one the token does not support), AES
//                             key length not 16/24/32, empty generic
//                             secret, CKA_CERTIFICATE_CATEGORY > 3, wrong
//                             length of a CK_BBOOL/CK_ULONG/CK_DATE value
// CKR_KEY_SIZE_RANGE is not decided here (the mechanism's call).
absl::StatusOr<AttributeMap> BuildObject(Origin origin,
                                         const AttributeMap& tmpl,
                                         const AttributeMap& generated,
                                         CK_MECHANISM_TYPE mechanism);

// BuildOptions carries what BuildObject needs to know of the session.
struct BuildOptions {
  // The SO is logged in: CKA_TRUSTED may be given true (footnote 10).
  bool so_session = false;
};
absl::StatusOr<AttributeMap> BuildObject(Origin origin,
                                         const AttributeMap& tmpl,
                                         const AttributeMap& generated,
                                         CK_MECHANISM_TYPE mechanism,
                                         const BuildOptions& options);

// CheckGenerateTemplate runs BuildObject(kGenerate, ...)'s checks of the
// caller's template `tmpl` before the (possibly slow) generation: the
// values generation would supply (CKA_VALUE, the modulus, ...) are not
// required yet. `implied` holds what the mechanism implies (CKA_CLASS,
// CKA_KEY_TYPE; a clash with `tmpl` is CKR_TEMPLATE_INCONSISTENT). OK
// means BuildObject will accept `tmpl` with a correct `generated`.
absl::Status CheckGenerateTemplate(const AttributeMap& tmpl,
                                   const AttributeMap& implied);

// CopyObject (C_CopyObject): `source` with `tmpl` applied (v2.40 4.1.3).
// May change: CKA_TOKEN, CKA_PRIVATE, CKA_MODIFIABLE, CKA_DESTROYABLE, and
// every attribute C_SetAttributeValue may change (CKA_LABEL, CKA_ID, usage
// flags, ... see SetAttributes), whatever the source's CKA_MODIFIABLE
// (CKA_COPYABLE is the spec's way to stop that), with the one-way flags
// only tightened (CKA_SENSITIVE false->true, CKA_EXTRACTABLE true->false,
// CKA_COPYABLE true->false, CKA_WRAP_WITH_TRUSTED false->true). Restating
// any attribute of the object with its current value is accepted; any
// other change is CKR_ATTRIBUTE_READ_ONLY. CKA_COPYABLE false ->
// CKR_ACTION_PROHIBITED. An attribute of another kind of object ->
// CKR_TEMPLATE_INCONSISTENT, of none -> CKR_ATTRIBUTE_TYPE_INVALID (as at
// creation); a malformed value -> CKR_ATTRIBUTE_VALUE_INVALID. Derived
// attributes (CKA_LOCAL, CKA_ALWAYS_SENSITIVE, CKA_NEVER_EXTRACTABLE, ...)
// are kept from `source`.
absl::StatusOr<AttributeMap> CopyObject(const AttributeMap& source,
                                        const AttributeMap& tmpl);

// SetAttributes (C_SetAttributeValue): applies `tmpl` to `object` or
// changes nothing. CKA_MODIFIABLE false -> CKR_ACTION_PROHIBITED (a
// trusted certificate too: v2.40 4.6.1); a read-only attribute (class, key
// type, CKA_LOCAL, key values, CKA_ALWAYS_SENSITIVE, CKA_VALUE_LEN,
// CKA_CHECK_VALUE, CKA_ALLOWED_MECHANISMS, CKA_MODIFIABLE, CKA_COPYABLE
// true, CKA_DESTROYABLE, a certificate's CKA_SUBJECT/CKA_VALUE, ...) ->
// CKR_ATTRIBUTE_READ_ONLY, even when the value is unchanged; CKA_SENSITIVE
// and CKA_WRAP_WITH_TRUSTED may only become true, CKA_EXTRACTABLE and
// CKA_COPYABLE only false (else CKR_ATTRIBUTE_READ_ONLY); an attribute of
// another kind of object -> CKR_TEMPLATE_INCONSISTENT, of none ->
// CKR_ATTRIBUTE_TYPE_INVALID (the creation scenarios apply: v2.40 4.1.2);
// a malformed value -> CKR_ATTRIBUTE_VALUE_INVALID. CKA_TOKEN/CKA_PRIVATE
// changes are refused here (CKR_ATTRIBUTE_READ_ONLY): moving between
// stores is not a set. Modifiable (footnote 8): CKA_LABEL; data objects'
// CKA_APPLICATION, CKA_OBJECT_ID, CKA_VALUE; certificates' CKA_ID,
// CKA_ISSUER, CKA_SERIAL_NUMBER; keys' CKA_ID, CKA_START_DATE,
// CKA_END_DATE, CKA_DERIVE, CKA_SUBJECT and usage flags.
absl::Status SetAttributes(AttributeMap* object, const AttributeMap& tmpl);

// GetAttributes (C_GetAttributeValue): fills `tmpl` from `object` with the
// spec's per-attribute rules, processing every entry: a sensitive value
// (private key parts and CKA_VALUE of a secret key when CKA_SENSITIVE is
// true or CKA_EXTRACTABLE is false) -> ulValueLen =
// CK_UNAVAILABLE_INFORMATION and CKR_ATTRIBUTE_SENSITIVE; an attribute the
// object does not have -> CK_UNAVAILABLE_INFORMATION and
// CKR_ATTRIBUTE_TYPE_INVALID; pValue NULL -> the length only; a buffer too
// small -> CK_UNAVAILABLE_INFORMATION and CKR_BUFFER_TOO_SMALL. Returns
// CKR_OK or one of those three (any one, as the spec allows: this one
// returns CKR_ATTRIBUTE_SENSITIVE, else CKR_ATTRIBUTE_TYPE_INVALID, else
// CKR_BUFFER_TOO_SMALL). `tmpl` NULL with `count` > 0 -> CKR_ARGUMENTS_BAD.
CK_RV GetAttributes(const AttributeMap& object, CK_ATTRIBUTE* tmpl,
                    CK_ULONG count);

// Matches is true when `object` has every attribute of `tmpl` with an
// equal value (C_FindObjectsInit semantics; an empty template matches
// everything; CK_BBOOL values compare as booleans). Values are compared in
// constant time (CRYPTO_memcmp), so a search on a key value leaks no more
// than whether it matched.
bool Matches(const AttributeMap& object, const AttributeMap& tmpl);

// IsPrivateObject / IsTokenObject read CKA_PRIVATE / CKA_TOKEN (an object
// without CKA_PRIVATE counts as private, without CKA_TOKEN as a session
// object).
bool IsPrivateObject(const AttributeMap& object);
bool IsTokenObject(const AttributeMap& object);

// IsKeyMaterial is true when `type` is secret key material of `object`
// (footnote 7: an RSA private key's CKA_PRIVATE_EXPONENT, CKA_PRIME_1,
// CKA_PRIME_2, CKA_EXPONENT_1, CKA_EXPONENT_2, CKA_COEFFICIENT; a DSA
// private key's CKA_VALUE; a secret key's CKA_VALUE), whatever the
// object's CKA_SENSITIVE / CKA_EXTRACTABLE.
bool IsKeyMaterial(const AttributeMap& object, CK_ATTRIBUTE_TYPE type);

// KeyMaterialTypes lists the IsKeyMaterial types for a class and key type
// (empty for data objects, certificates and public keys).
std::vector<CK_ATTRIBUTE_TYPE> KeyMaterialTypes(CK_OBJECT_CLASS object_class,
                                                CK_KEY_TYPE key_type);

// IsRevealable is false when GetAttributes would answer
// CKR_ATTRIBUTE_SENSITIVE for `type`: key material of an object whose
// CKA_SENSITIVE is true or CKA_EXTRACTABLE false (a missing flag counts as
// the protective value).
bool IsRevealable(const AttributeMap& object, CK_ATTRIBUTE_TYPE type);

// CheckKeyUse is CKR_KEY_FUNCTION_NOT_PERMITTED unless `object` is a key
// whose usage attribute `usage` (CKA_ENCRYPT, CKA_DECRYPT, CKA_SIGN,
// CKA_VERIFY, CKA_SIGN_RECOVER, CKA_VERIFY_RECOVER, CKA_WRAP, CKA_UNWRAP,
// CKA_DERIVE) is true (absent counts as false);
// CKR_KEY_TYPE_INCONSISTENT when it is not a key at all.
absl::Status CheckKeyUse(const AttributeMap& object, CK_ATTRIBUTE_TYPE usage);

// CheckMechanismAllowed is CKR_MECHANISM_INVALID when `key` has a
// non-empty CKA_ALLOWED_MECHANISMS (v2.40 4.7) that does not list
// `mechanism`; OK otherwise (an empty or absent list allows everything).
absl::Status CheckMechanismAllowed(const AttributeMap& key,
                                   CK_MECHANISM_TYPE mechanism);

}  // namespace accelcrypt::p11

#endif  // ACCELCRYPT_PKCS11_OBJECT_OBJECT_RULES_H_
