// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_TESTS_PKCS11_OBJECT_OBJECT_RULES_FIXTURE_H_
#define ACCELCRYPT_TESTS_PKCS11_OBJECT_OBJECT_RULES_FIXTURE_H_

// Helpers shared by the unit tests of the PKCS#11 v2.40 object model
// (pkcs11/object/), object_rules_{create,generate,modify,read}_test.cc:
// attribute encoders, minimal C_CreateObject templates per class and key
// type, the values a key generation produces.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "pkcs11/common/attributes.h"
#include "pkcs11/common/ck_error.h"
#include "pkcs11/object/object_rules.h"

namespace accelcrypt::p11::object_test {

using Bytes = std::vector<uint8_t>;

inline Bytes U(CK_ULONG v) {
  Bytes b(sizeof(v));
  std::memcpy(b.data(), &v, sizeof(v));
  return b;
}
inline Bytes B(bool v) {
  return Bytes{static_cast<uint8_t>(v ? CK_TRUE : CK_FALSE)};
}
inline Bytes S(std::string_view s) { return Bytes(s.begin(), s.end()); }
// Filler bytes standing in for key material and DER blobs: the object
// model never interprets them. `top` is the first byte (a modulus' top
// byte sets its bit length).
inline Bytes Filler(size_t n, uint8_t seed, uint8_t top = 0xc1) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(seed + 7 * i);
  if (n > 0) b[0] = top;
  return b;
}

struct Attr {
  CK_ATTRIBUTE_TYPE type;
  Bytes value;
};

inline AttributeMap Map(std::initializer_list<Attr> attrs) {
  AttributeMap m;
  for (const Attr& a : attrs) m.Set(a.type, a.value);
  return m;
}

inline CK_RV Rv(const absl::Status& s) { return ToCkRv(s); }
template <typename T>
inline CK_RV Rv(const absl::StatusOr<T>& s) {
  return ToCkRv(s.status());
}

inline std::string Name(CK_RV rv) { return CkRvName(rv); }

#define EXPECT_RV(expr, rv) EXPECT_EQ(Name(Rv(expr)), Name(rv))

// Minimal valid C_CreateObject templates per class and key type.
inline AttributeMap DataTemplate() {
  return Map({{CKA_CLASS, U(CKO_DATA)}, {CKA_VALUE, S("payload")}});
}
inline AttributeMap CertTemplate() {
  return Map({{CKA_CLASS, U(CKO_CERTIFICATE)},
              {CKA_CERTIFICATE_TYPE, U(CKC_X_509)},
              {CKA_SUBJECT, Filler(40, 1)},
              {CKA_VALUE, Filler(300, 2)}});
}
inline AttributeMap RsaPublicTemplate() {
  return Map({{CKA_CLASS, U(CKO_PUBLIC_KEY)},
              {CKA_KEY_TYPE, U(CKK_RSA)},
              {CKA_MODULUS, Filler(256, 3)},
              {CKA_PUBLIC_EXPONENT, Filler(3, 4, 0x01)}});
}
inline AttributeMap RsaPrivateTemplate() {
  return Map({{CKA_CLASS, U(CKO_PRIVATE_KEY)},
              {CKA_KEY_TYPE, U(CKK_RSA)},
              {CKA_MODULUS, Filler(256, 3)},
              {CKA_PRIVATE_EXPONENT, Filler(256, 5)}});
}
inline AttributeMap RsaPrivateCrtTemplate() {
  AttributeMap m = RsaPrivateTemplate();
  m.Set(CKA_PUBLIC_EXPONENT, Filler(3, 4, 0x01));
  m.Set(CKA_PRIME_1, Filler(128, 6));
  m.Set(CKA_PRIME_2, Filler(128, 7));
  m.Set(CKA_EXPONENT_1, Filler(128, 8));
  m.Set(CKA_EXPONENT_2, Filler(128, 9));
  m.Set(CKA_COEFFICIENT, Filler(128, 10));
  return m;
}
inline AttributeMap DsaPublicTemplate() {
  return Map({{CKA_CLASS, U(CKO_PUBLIC_KEY)},
              {CKA_KEY_TYPE, U(CKK_DSA)},
              {CKA_PRIME, Filler(256, 11)},
              {CKA_SUBPRIME, Filler(32, 12)},
              {CKA_BASE, Filler(256, 13)},
              {CKA_VALUE, Filler(256, 14)}});
}
inline AttributeMap DsaPrivateTemplate() {
  return Map({{CKA_CLASS, U(CKO_PRIVATE_KEY)},
              {CKA_KEY_TYPE, U(CKK_DSA)},
              {CKA_PRIME, Filler(256, 11)},
              {CKA_SUBPRIME, Filler(32, 12)},
              {CKA_BASE, Filler(256, 13)},
              {CKA_VALUE, Filler(32, 15)}});
}
inline AttributeMap AesTemplate(size_t len = 32) {
  return Map({{CKA_CLASS, U(CKO_SECRET_KEY)},
              {CKA_KEY_TYPE, U(CKK_AES)},
              {CKA_VALUE, Filler(len, 16)}});
}
inline AttributeMap GenericSecretTemplate(size_t len = 20) {
  return Map({{CKA_CLASS, U(CKO_SECRET_KEY)},
              {CKA_KEY_TYPE, U(CKK_GENERIC_SECRET)},
              {CKA_VALUE, Filler(len, 17)}});
}

inline AttributeMap With(AttributeMap m, std::initializer_list<Attr> extra) {
  for (const Attr& a : extra) m.Set(a.type, a.value);
  return m;
}
inline AttributeMap Without(AttributeMap m, CK_ATTRIBUTE_TYPE type) {
  m.Erase(type);
  return m;
}

inline absl::StatusOr<AttributeMap> Create(const AttributeMap& tmpl) {
  return BuildObject(Origin::kCreate, tmpl, AttributeMap(),
                     CK_UNAVAILABLE_INFORMATION);
}

inline AttributeMap CreateOk(const AttributeMap& tmpl) {
  absl::StatusOr<AttributeMap> obj = Create(tmpl);
  EXPECT_TRUE(obj.ok()) << obj.status();
  return obj.ok() ? *obj : AttributeMap();
}

struct ClassCase {
  const char* name;
  AttributeMap (*tmpl)();
};

inline const ClassCase kClasses[] = {
    {"data", DataTemplate},
    {"x509", CertTemplate},
    {"rsa_public", RsaPublicTemplate},
    {"rsa_private", RsaPrivateTemplate},
    {"rsa_private_crt", RsaPrivateCrtTemplate},
    {"dsa_public", DsaPublicTemplate},
    {"dsa_private", DsaPrivateTemplate},
    {"aes", [] { return AesTemplate(); }},
    {"generic_secret", [] { return GenericSecretTemplate(); }},
};

// The values a key generation produces, per mechanism.
inline AttributeMap AesGenerated(size_t len = 32) {
  return Map({{CKA_CLASS, U(CKO_SECRET_KEY)},
              {CKA_KEY_TYPE, U(CKK_AES)},
              {CKA_VALUE, Filler(len, 50)},
              {CKA_VALUE_LEN, U(len)}});
}
inline AttributeMap RsaPublicGenerated() {
  return Map({{CKA_CLASS, U(CKO_PUBLIC_KEY)},
              {CKA_KEY_TYPE, U(CKK_RSA)},
              {CKA_MODULUS, Filler(256, 51)},
              {CKA_PUBLIC_EXPONENT, Filler(3, 4, 0x01)}});
}
inline AttributeMap RsaPrivateGenerated() {
  return With(RsaPublicGenerated(), {{CKA_CLASS, U(CKO_PRIVATE_KEY)},
                                     {CKA_PRIVATE_EXPONENT, Filler(256, 52)},
                                     {CKA_PRIME_1, Filler(128, 53)},
                                     {CKA_PRIME_2, Filler(128, 54)},
                                     {CKA_EXPONENT_1, Filler(128, 55)},
                                     {CKA_EXPONENT_2, Filler(128, 56)},
                                     {CKA_COEFFICIENT, Filler(128, 57)}});
}
inline AttributeMap DsaDomain() {
  return Map({{CKA_PRIME, Filler(256, 11)},
              {CKA_SUBPRIME, Filler(32, 12)},
              {CKA_BASE, Filler(256, 13)}});
}
inline AttributeMap DsaPublicGenerated() {
  return Map({{CKA_CLASS, U(CKO_PUBLIC_KEY)},
              {CKA_KEY_TYPE, U(CKK_DSA)},
              {CKA_VALUE, Filler(256, 60)}});
}
inline AttributeMap DsaPrivateGenerated() {
  return With(DsaDomain(), {{CKA_CLASS, U(CKO_PRIVATE_KEY)},
                            {CKA_KEY_TYPE, U(CKK_DSA)},
                            {CKA_VALUE, Filler(32, 61)}});
}

inline absl::StatusOr<AttributeMap> Generate(const AttributeMap& tmpl,
                                             const AttributeMap& generated,
                                             CK_MECHANISM_TYPE mech) {
  return BuildObject(Origin::kGenerate, tmpl, generated, mech);
}

}  // namespace accelcrypt::p11::object_test

#endif  // ACCELCRYPT_TESTS_PKCS11_OBJECT_OBJECT_RULES_FIXTURE_H_
