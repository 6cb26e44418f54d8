// SPDX-License-Identifier: Apache-2.0
// Unit tests of the PKCS#11 v2.40 object model (pkcs11/object/).
#include "pkcs11/object/object_rules.h"

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

namespace accelcrypt::p11 {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes U(CK_ULONG v) {
  Bytes b(sizeof(v));
  std::memcpy(b.data(), &v, sizeof(v));
  return b;
}
Bytes B(bool v) { return Bytes{static_cast<uint8_t>(v ? CK_TRUE : CK_FALSE)}; }
Bytes S(std::string_view s) { return Bytes(s.begin(), s.end()); }
// Filler bytes standing in for key material and DER blobs: the object
// model never interprets them. `top` is the first byte (a modulus' top
// byte sets its bit length).
Bytes Filler(size_t n, uint8_t seed, uint8_t top = 0xc1) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(seed + 7 * i);
  if (n > 0) b[0] = top;
  return b;
}

struct Attr {
  CK_ATTRIBUTE_TYPE type;
  Bytes value;
};

AttributeMap Map(std::initializer_list<Attr> attrs) {
  AttributeMap m;
  for (const Attr& a : attrs) m.Set(a.type, a.value);
  return m;
}

CK_RV Rv(const absl::Status& s) { return ToCkRv(s); }
template <typename T>
CK_RV Rv(const absl::StatusOr<T>& s) {
  return ToCkRv(s.status());
}

std::string Name(CK_RV rv) { return CkRvName(rv); }

#define EXPECT_RV(expr, rv) EXPECT_EQ(Name(Rv(expr)), Name(rv))

// Minimal valid C_CreateObject templates per class and key type.
AttributeMap DataTemplate() {
  return Map({{CKA_CLASS, U(CKO_DATA)}, {CKA_VALUE, S("payload")}});
}
AttributeMap CertTemplate() {
  return Map({{CKA_CLASS, U(CKO_CERTIFICATE)},
              {CKA_CERTIFICATE_TYPE, U(CKC_X_509)},
              {CKA_SUBJECT, Filler(40, 1)},
              {CKA_VALUE, Filler(300, 2)}});
}
AttributeMap RsaPublicTemplate() {
  return Map({{CKA_CLASS, U(CKO_PUBLIC_KEY)},
              {CKA_KEY_TYPE, U(CKK_RSA)},
              {CKA_MODULUS, Filler(256, 3)},
              {CKA_PUBLIC_EXPONENT, Filler(3, 4, 0x01)}});
}
AttributeMap RsaPrivateTemplate() {
  return Map({{CKA_CLASS, U(CKO_PRIVATE_KEY)},
              {CKA_KEY_TYPE, U(CKK_RSA)},
              {CKA_MODULUS, Filler(256, 3)},
              {CKA_PRIVATE_EXPONENT, Filler(256, 5)}});
}
AttributeMap RsaPrivateCrtTemplate() {
  AttributeMap m = RsaPrivateTemplate();
  m.Set(CKA_PUBLIC_EXPONENT, Filler(3, 4, 0x01));
  m.Set(CKA_PRIME_1, Filler(128, 6));
  m.Set(CKA_PRIME_2, Filler(128, 7));
  m.Set(CKA_EXPONENT_1, Filler(128, 8));
  m.Set(CKA_EXPONENT_2, Filler(128, 9));
  m.Set(CKA_COEFFICIENT, Filler(128, 10));
  return m;
}
AttributeMap DsaPublicTemplate() {
  return Map({{CKA_CLASS, U(CKO_PUBLIC_KEY)},
              {CKA_KEY_TYPE, U(CKK_DSA)},
              {CKA_PRIME, Filler(256, 11)},
              {CKA_SUBPRIME, Filler(32, 12)},
              {CKA_BASE, Filler(256, 13)},
              {CKA_VALUE, Filler(256, 14)}});
}
AttributeMap DsaPrivateTemplate() {
  return Map({{CKA_CLASS, U(CKO_PRIVATE_KEY)},
              {CKA_KEY_TYPE, U(CKK_DSA)},
              {CKA_PRIME, Filler(256, 11)},
              {CKA_SUBPRIME, Filler(32, 12)},
              {CKA_BASE, Filler(256, 13)},
              {CKA_VALUE, Filler(32, 15)}});
}
AttributeMap AesTemplate(size_t len = 32) {
  return Map({{CKA_CLASS, U(CKO_SECRET_KEY)},
              {CKA_KEY_TYPE, U(CKK_AES)},
              {CKA_VALUE, Filler(len, 16)}});
}
AttributeMap GenericSecretTemplate(size_t len = 20) {
  return Map({{CKA_CLASS, U(CKO_SECRET_KEY)},
              {CKA_KEY_TYPE, U(CKK_GENERIC_SECRET)},
              {CKA_VALUE, Filler(len, 17)}});
}

AttributeMap With(AttributeMap m, std::initializer_list<Attr> extra) {
  for (const Attr& a : extra) m.Set(a.type, a.value);
  return m;
}
AttributeMap Without(AttributeMap m, CK_ATTRIBUTE_TYPE type) {
  m.Erase(type);
  return m;
}

absl::StatusOr<AttributeMap> Create(const AttributeMap& tmpl) {
  return BuildObject(Origin::kCreate, tmpl, AttributeMap(),
                     CK_UNAVAILABLE_INFORMATION);
}

AttributeMap CreateOk(const AttributeMap& tmpl) {
  absl::StatusOr<AttributeMap> obj = Create(tmpl);
  EXPECT_TRUE(obj.ok()) << obj.status();
  return obj.ok() ? *obj : AttributeMap();
}

// ---------------------------------------------------------------------
// ParseTemplate

TEST(ParseTemplate, CopiesValuesAndNormalisesBooleans) {
  CK_OBJECT_CLASS cls = CKO_DATA;
  CK_BBOOL odd_true = 2;
  char label[] = "lbl";
  CK_ATTRIBUTE t[] = {{CKA_CLASS, &cls, sizeof(cls)},
                      {CKA_TOKEN, &odd_true, 1},
                      {CKA_LABEL, label, 3},
                      {CKA_ID, nullptr, 0}};
  absl::StatusOr<AttributeMap> m = ParseTemplate(t, 4);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->GetUlong(CKA_CLASS), CKO_DATA);
  EXPECT_EQ(m->GetBytes(CKA_TOKEN), Bytes{CK_TRUE});
  EXPECT_EQ(m->GetString(CKA_LABEL), "lbl");
  ASSERT_TRUE(m->Has(CKA_ID));
  EXPECT_TRUE(m->GetBytes(CKA_ID).empty());
}

TEST(ParseTemplate, EmptyTemplate) {
  absl::StatusOr<AttributeMap> m = ParseTemplate(nullptr, 0);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->size(), 0u);
}

struct ParseCase {
  const char* name;
  std::vector<CK_ATTRIBUTE> tmpl;
  CK_RV want;
};

TEST(ParseTemplate, RejectsMalformedEntries) {
  static CK_ULONG ul = 1;
  static uint8_t four[4] = {1, 2, 3, 4};
  static CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
  static char date_bad[8] = {'2', '0', '2', '6', '1', '1', 'x', '1'};
  static char date_good[8] = {'2', '0', '2', '6', '1', '1', '3', '0'};
  static CK_MECHANISM_TYPE mechs[2] = {CKM_AES_CBC, CKM_AES_GCM};
  static CK_ATTRIBUTE inner[1] = {{CKA_ENCRYPT, &yes, 1}};
  const std::vector<ParseCase> cases = {
      {"null value with length", {{CKA_LABEL, nullptr, 4}}, CKR_ARGUMENTS_BAD},
      {"bool of 4 bytes", {{CKA_TOKEN, four, 4}}, CKR_ATTRIBUTE_VALUE_INVALID},
      {"empty bool",
       {{CKA_SENSITIVE, nullptr, 0}},
       CKR_ATTRIBUTE_VALUE_INVALID},
      {"ulong of 4 bytes", {{CKA_CLASS, four, 4}}, CKR_ATTRIBUTE_VALUE_INVALID},
      {"value_len of 1 byte",
       {{CKA_VALUE_LEN, &ul, 1}},
       CKR_ATTRIBUTE_VALUE_INVALID},
      {"date of 4 bytes",
       {{CKA_START_DATE, four, 4}},
       CKR_ATTRIBUTE_VALUE_INVALID},
      {"date not digits",
       {{CKA_END_DATE, date_bad, 8}},
       CKR_ATTRIBUTE_VALUE_INVALID},
      {"allowed mechanisms ragged",
       {{CKA_ALLOWED_MECHANISMS, mechs, sizeof(mechs) - 1}},
       CKR_ATTRIBUTE_VALUE_INVALID},
      {"attribute array",
       {{CKA_WRAP_TEMPLATE, inner, sizeof(inner)}},
       CKR_ATTRIBUTE_TYPE_INVALID},
      {"twice, different",
       {{CKA_TOKEN, &yes, 1}, {CKA_TOKEN, &no, 1}},
       CKR_TEMPLATE_INCONSISTENT},
      {"twice, same", {{CKA_TOKEN, &yes, 1}, {CKA_TOKEN, &yes, 1}}, CKR_OK},
      {"good date", {{CKA_START_DATE, date_good, 8}}, CKR_OK},
      {"good mechanisms",
       {{CKA_ALLOWED_MECHANISMS, mechs, sizeof(mechs)}},
       CKR_OK},
  };
  for (const ParseCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_RV(ParseTemplate(c.tmpl.data(), c.tmpl.size()), c.want);
  }
  EXPECT_RV(ParseTemplate(nullptr, 1), CKR_ARGUMENTS_BAD);
  // A garbage length is refused before anything is read.
  CK_ATTRIBUTE garbage = {CKA_LABEL, four, CK_UNAVAILABLE_INFORMATION};
  EXPECT_RV(ParseTemplate(&garbage, 1), CKR_ATTRIBUTE_VALUE_INVALID);
}

// ---------------------------------------------------------------------
// BuildObject, kCreate

struct ClassCase {
  const char* name;
  AttributeMap (*tmpl)();
};

const ClassCase kClasses[] = {
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

TEST(BuildObjectCreate, EveryClassBuildsAndKeepsTheCallersValues) {
  for (const ClassCase& c : kClasses) {
    SCOPED_TRACE(c.name);
    const AttributeMap tmpl = c.tmpl();
    AttributeMap obj = CreateOk(tmpl);
    EXPECT_TRUE(Matches(obj, tmpl));
    EXPECT_EQ(obj.GetBytes(CKA_TOKEN), B(false));
    EXPECT_EQ(obj.GetBytes(CKA_MODIFIABLE), B(true));
    EXPECT_EQ(obj.GetBytes(CKA_COPYABLE), B(true));
    EXPECT_EQ(obj.GetBytes(CKA_DESTROYABLE), B(true));
    ASSERT_TRUE(obj.Has(CKA_LABEL));
    EXPECT_TRUE(obj.GetBytes(CKA_LABEL).empty());
  }
}

// Every footnote-1 attribute of each minimal template is required: taking
// any one away is CKR_TEMPLATE_INCOMPLETE.
TEST(BuildObjectCreate, EachRequiredAttributeMissingIsIncomplete) {
  for (const ClassCase& c : kClasses) {
    const AttributeMap tmpl = c.tmpl();
    for (const auto& [type, value] : tmpl.values()) {
      // Optional parts of the CRT template, a data object's value.
      if (std::string_view(c.name) == "rsa_private_crt" && type != CKA_CLASS &&
          type != CKA_KEY_TYPE && type != CKA_MODULUS &&
          type != CKA_PRIVATE_EXPONENT) {
        continue;
      }
      if (std::string_view(c.name) == "data" && type == CKA_VALUE) continue;
      SCOPED_TRACE(std::string(c.name) + " without 0x" + std::to_string(type));
      EXPECT_RV(Create(Without(tmpl, type)), CKR_TEMPLATE_INCOMPLETE);
    }
  }
}

TEST(BuildObjectCreate, CertificateWithUrlNeedsNoValue) {
  AttributeMap tmpl = With(Without(CertTemplate(), CKA_VALUE),
                           {{CKA_URL, S("http://x/c")},
                            {CKA_HASH_OF_SUBJECT_PUBLIC_KEY, Filler(20, 30)},
                            {CKA_HASH_OF_ISSUER_PUBLIC_KEY, Filler(20, 31)}});
  AttributeMap obj = CreateOk(tmpl);
  EXPECT_TRUE(obj.GetBytes(CKA_VALUE).empty());
  // By URL, both key hashes are required (v2.40 4.6.3).
  EXPECT_RV(Create(Without(tmpl, CKA_HASH_OF_ISSUER_PUBLIC_KEY)),
            CKR_TEMPLATE_INCOMPLETE);
  EXPECT_RV(Create(With(tmpl, {{CKA_HASH_OF_SUBJECT_PUBLIC_KEY, {}}})),
            CKR_TEMPLATE_INCOMPLETE);
  EXPECT_RV(Create(With(CertTemplate(), {{CKA_VALUE, {}}})),
            CKR_TEMPLATE_INCOMPLETE);
}

TEST(BuildObjectCreate, DataObjectDefaults) {
  AttributeMap obj = CreateOk(Map({{CKA_CLASS, U(CKO_DATA)}}));
  EXPECT_EQ(obj.GetBytes(CKA_PRIVATE), B(false));
  for (CK_ATTRIBUTE_TYPE t : {CKA_APPLICATION, CKA_OBJECT_ID, CKA_VALUE}) {
    ASSERT_TRUE(obj.Has(t)) << t;
    EXPECT_TRUE(obj.GetBytes(t).empty());
  }
  EXPECT_FALSE(obj.Has(CKA_KEY_TYPE));
  EXPECT_FALSE(obj.Has(CKA_SENSITIVE));
}

TEST(BuildObjectCreate, CertificateDefaults) {
  AttributeMap obj = CreateOk(CertTemplate());
  EXPECT_EQ(obj.GetBytes(CKA_PRIVATE), B(false));
  EXPECT_EQ(obj.GetBytes(CKA_TRUSTED), B(false));
  EXPECT_EQ(obj.GetUlong(CKA_CERTIFICATE_CATEGORY), 0u);
  EXPECT_EQ(obj.GetUlong(CKA_JAVA_MIDP_SECURITY_DOMAIN), 0u);
  for (CK_ATTRIBUTE_TYPE t : {CKA_ID, CKA_ISSUER, CKA_SERIAL_NUMBER}) {
    ASSERT_TRUE(obj.Has(t)) << t;
    EXPECT_TRUE(obj.GetBytes(t).empty());
  }
}

struct KeyDefaultsCase {
  const char* name;
  AttributeMap (*tmpl)();
  bool is_private;
  std::vector<CK_ATTRIBUTE_TYPE> usages_true;
  std::vector<CK_ATTRIBUTE_TYPE> usages_false;
};

TEST(BuildObjectCreate, KeyDefaultsFollowTheKeyType) {
  const std::vector<KeyDefaultsCase> cases = {
      {"rsa_public",
       RsaPublicTemplate,
       false,
       {CKA_ENCRYPT, CKA_VERIFY, CKA_VERIFY_RECOVER, CKA_WRAP},
       {CKA_DERIVE}},
      {"dsa_public",
       DsaPublicTemplate,
       false,
       {CKA_VERIFY},
       {CKA_ENCRYPT, CKA_VERIFY_RECOVER, CKA_WRAP, CKA_DERIVE}},
      {"rsa_private",
       RsaPrivateTemplate,
       true,
       {CKA_DECRYPT, CKA_SIGN, CKA_SIGN_RECOVER, CKA_UNWRAP},
       {CKA_DERIVE, CKA_ALWAYS_AUTHENTICATE, CKA_WRAP_WITH_TRUSTED}},
      {"dsa_private",
       DsaPrivateTemplate,
       true,
       {CKA_SIGN},
       {CKA_DECRYPT, CKA_SIGN_RECOVER, CKA_UNWRAP, CKA_DERIVE}},
      {"aes",
       [] { return AesTemplate(); },
       true,
       {CKA_ENCRYPT, CKA_DECRYPT, CKA_SIGN, CKA_VERIFY, CKA_WRAP, CKA_UNWRAP},
       {CKA_DERIVE, CKA_TRUSTED, CKA_WRAP_WITH_TRUSTED}},
      {"generic_secret",
       [] { return GenericSecretTemplate(); },
       true,
       {CKA_SIGN, CKA_VERIFY},
       {CKA_ENCRYPT, CKA_DECRYPT, CKA_WRAP, CKA_UNWRAP, CKA_DERIVE}},
  };
  for (const KeyDefaultsCase& c : cases) {
    SCOPED_TRACE(c.name);
    AttributeMap obj = CreateOk(c.tmpl());
    EXPECT_EQ(obj.GetBytes(CKA_PRIVATE), B(c.is_private));
    EXPECT_EQ(IsPrivateObject(obj), c.is_private);
    EXPECT_FALSE(IsTokenObject(obj));
    for (CK_ATTRIBUTE_TYPE t : c.usages_true) {
      EXPECT_EQ(obj.GetBytes(t), B(true)) << "0x" << std::hex << t;
    }
    for (CK_ATTRIBUTE_TYPE t : c.usages_false) {
      EXPECT_EQ(obj.GetBytes(t), B(false)) << "0x" << std::hex << t;
    }
    // Created, not generated (v2.40 4.7, 4.9, 4.10).
    EXPECT_EQ(obj.GetBytes(CKA_LOCAL), B(false));
    EXPECT_EQ(obj.GetUlong(CKA_KEY_GEN_MECHANISM), CK_UNAVAILABLE_INFORMATION);
    for (CK_ATTRIBUTE_TYPE t :
         {CKA_ID, CKA_START_DATE, CKA_END_DATE, CKA_ALLOWED_MECHANISMS}) {
      ASSERT_TRUE(obj.Has(t)) << t;
      EXPECT_TRUE(obj.GetBytes(t).empty());
    }
    const CK_OBJECT_CLASS cls = *obj.GetUlong(CKA_CLASS);
    if (cls == CKO_PUBLIC_KEY) {
      EXPECT_FALSE(obj.Has(CKA_SENSITIVE));
      EXPECT_FALSE(obj.Has(CKA_ALWAYS_SENSITIVE));
    } else {
      EXPECT_EQ(obj.GetBytes(CKA_SENSITIVE), B(true));
      EXPECT_EQ(obj.GetBytes(CKA_EXTRACTABLE), B(false));
      EXPECT_EQ(obj.GetBytes(CKA_ALWAYS_SENSITIVE), B(false));
      EXPECT_EQ(obj.GetBytes(CKA_NEVER_EXTRACTABLE), B(false));
    }
  }
}

TEST(BuildObjectCreate, DerivedLengths) {
  for (size_t len : {16u, 24u, 32u}) {
    AttributeMap obj = CreateOk(AesTemplate(len));
    EXPECT_EQ(obj.GetUlong(CKA_VALUE_LEN), len);
  }
  EXPECT_EQ(CreateOk(GenericSecretTemplate(1)).GetUlong(CKA_VALUE_LEN), 1u);
  EXPECT_EQ(CreateOk(GenericSecretTemplate(100)).GetUlong(CKA_VALUE_LEN), 100u);
  // Modulus bits count from the top set bit; leading zero bytes don't count.
  EXPECT_EQ(CreateOk(RsaPublicTemplate()).GetUlong(CKA_MODULUS_BITS), 2048u);
  AttributeMap short_top =
      With(RsaPublicTemplate(), {{CKA_MODULUS, Filler(256, 3, 0x01)}});
  EXPECT_EQ(CreateOk(short_top).GetUlong(CKA_MODULUS_BITS), 2041u);
  Bytes padded = Filler(257, 3, 0x00);
  padded[1] = 0x80;
  EXPECT_EQ(CreateOk(With(RsaPublicTemplate(), {{CKA_MODULUS, padded}}))
                .GetUlong(CKA_MODULUS_BITS),
            2048u);
  // A private key has no CKA_MODULUS_BITS (v2.40 mechanisms 2.1.3).
  EXPECT_FALSE(CreateOk(RsaPrivateTemplate()).Has(CKA_MODULUS_BITS));
  // Stated and true: accepted.
  EXPECT_TRUE(Create(With(AesTemplate(24), {{CKA_VALUE_LEN, U(24)}})).ok());
  EXPECT_TRUE(
      Create(With(RsaPublicTemplate(), {{CKA_MODULUS_BITS, U(2048)}})).ok());
}

TEST(BuildObjectCreate, CallerFlagsWinOverDefaults) {
  AttributeMap obj = CreateOk(With(AesTemplate(), {{CKA_TOKEN, B(true)},
                                                   {CKA_PRIVATE, B(false)},
                                                   {CKA_SENSITIVE, B(false)},
                                                   {CKA_EXTRACTABLE, B(true)},
                                                   {CKA_ENCRYPT, B(false)},
                                                   {CKA_LABEL, S("k")},
                                                   {CKA_DERIVE, Bytes{7}}}));
  EXPECT_TRUE(IsTokenObject(obj));
  EXPECT_FALSE(IsPrivateObject(obj));
  EXPECT_EQ(obj.GetBytes(CKA_SENSITIVE), B(false));
  EXPECT_EQ(obj.GetBytes(CKA_EXTRACTABLE), B(true));
  EXPECT_EQ(obj.GetBytes(CKA_ENCRYPT), B(false));
  EXPECT_EQ(obj.GetBytes(CKA_DECRYPT), B(true));
  EXPECT_EQ(obj.GetString(CKA_LABEL), "k");
  EXPECT_EQ(obj.GetBytes(CKA_DERIVE), B(true));  // stored as CK_TRUE
}

struct ErrorCase {
  const char* name;
  AttributeMap tmpl;
  CK_RV want;
};

TEST(BuildObjectCreate, RejectsBadTemplatesWithTheSpecsCode) {
  const CK_ATTRIBUTE_TYPE kVendor = CKA_VENDOR_DEFINED | 0x1234;
  const std::vector<ErrorCase> cases = {
      // Class and key type.
      {"no class", Without(AesTemplate(), CKA_CLASS), CKR_TEMPLATE_INCOMPLETE},
      {"no key type", Without(AesTemplate(), CKA_KEY_TYPE),
       CKR_TEMPLATE_INCOMPLETE},
      {"no certificate type", Without(CertTemplate(), CKA_CERTIFICATE_TYPE),
       CKR_TEMPLATE_INCOMPLETE},
      {"unknown class", With(DataTemplate(), {{CKA_CLASS, U(0x4242)}}),
       CKR_ATTRIBUTE_VALUE_INVALID},
      {"domain parameters class",
       With(DataTemplate(), {{CKA_CLASS, U(CKO_DOMAIN_PARAMETERS)}}),
       CKR_ATTRIBUTE_VALUE_INVALID},
      {"EC key type", With(RsaPublicTemplate(), {{CKA_KEY_TYPE, U(CKK_EC)}}),
       CKR_ATTRIBUTE_VALUE_INVALID},
      {"WTLS certificate",
       With(CertTemplate(), {{CKA_CERTIFICATE_TYPE, U(CKC_WTLS)}}),
       CKR_ATTRIBUTE_VALUE_INVALID},
      {"AES public key",
       With(RsaPublicTemplate(), {{CKA_KEY_TYPE, U(CKK_AES)}}),
       CKR_TEMPLATE_INCONSISTENT},
      {"RSA secret key", With(AesTemplate(), {{CKA_KEY_TYPE, U(CKK_RSA)}}),
       CKR_TEMPLATE_INCONSISTENT},
      {"generic secret private key",
       With(RsaPrivateTemplate(), {{CKA_KEY_TYPE, U(CKK_GENERIC_SECRET)}}),
       CKR_TEMPLATE_INCONSISTENT},
      // Attributes of another class or key type (v2.40 4.1.3).
      {"modulus on AES", With(AesTemplate(), {{CKA_MODULUS, Filler(8, 1)}}),
       CKR_TEMPLATE_INCONSISTENT},
      {"sensitive on public key",
       With(RsaPublicTemplate(), {{CKA_SENSITIVE, B(true)}}),
       CKR_TEMPLATE_INCONSISTENT},
      {"encrypt on data", With(DataTemplate(), {{CKA_ENCRYPT, B(true)}}),
       CKR_TEMPLATE_INCONSISTENT},
      {"modulus on DSA",
       With(DsaPublicTemplate(), {{CKA_MODULUS, Filler(8, 1)}}),
       CKR_TEMPLATE_INCONSISTENT},
      {"prime_1 on RSA public",
       With(RsaPublicTemplate(), {{CKA_PRIME_1, Filler(8, 1)}}),
       CKR_TEMPLATE_INCONSISTENT},
      {"modulus_bits on RSA private",
       With(RsaPrivateTemplate(), {{CKA_MODULUS_BITS, U(2048)}}),
       CKR_TEMPLATE_INCONSISTENT},
      {"value_len on DSA", With(DsaPrivateTemplate(), {{CKA_VALUE_LEN, U(32)}}),
       CKR_TEMPLATE_INCONSISTENT},
      // Unknown types.
      {"vendor attribute", With(DataTemplate(), {{kVendor, S("x")}}),
       CKR_ATTRIBUTE_TYPE_INVALID},
      {"EC params", With(RsaPublicTemplate(), {{CKA_EC_PARAMS, S("x")}}),
       CKR_ATTRIBUTE_TYPE_INVALID},
      // Lengths stated and wrong.
      {"value_len vs value", With(AesTemplate(16), {{CKA_VALUE_LEN, U(32)}}),
       CKR_TEMPLATE_INCONSISTENT},
      {"generic value_len vs value",
       With(GenericSecretTemplate(20), {{CKA_VALUE_LEN, U(21)}}),
       CKR_TEMPLATE_INCONSISTENT},
      {"modulus_bits vs modulus",
       With(RsaPublicTemplate(), {{CKA_MODULUS_BITS, U(1024)}}),
       CKR_TEMPLATE_INCONSISTENT},
      // Values.
      {"AES 17 bytes", AesTemplate(17), CKR_ATTRIBUTE_VALUE_INVALID},
      {"AES 8 bytes", AesTemplate(8), CKR_ATTRIBUTE_VALUE_INVALID},
      {"AES 64 bytes", AesTemplate(64), CKR_ATTRIBUTE_VALUE_INVALID},
      {"empty generic secret", GenericSecretTemplate(0),
       CKR_ATTRIBUTE_VALUE_INVALID},
      {"certificate category 4",
       With(CertTemplate(), {{CKA_CERTIFICATE_CATEGORY, U(4)}}),
       CKR_ATTRIBUTE_VALUE_INVALID},
      {"bool of 2 bytes", With(AesTemplate(), {{CKA_TOKEN, Bytes{1, 0}}}),
       CKR_ATTRIBUTE_VALUE_INVALID},
      {"class of 2 bytes", With(DataTemplate(), {{CKA_CLASS, Bytes{0, 0}}}),
       CKR_ATTRIBUTE_VALUE_INVALID},
      {"date of 3 bytes", With(AesTemplate(), {{CKA_START_DATE, S("202")}}),
       CKR_ATTRIBUTE_VALUE_INVALID},
      // Set by the token only (footnotes 2 and 10).
      {"local", With(AesTemplate(), {{CKA_LOCAL, B(false)}}),
       CKR_ATTRIBUTE_READ_ONLY},
      {"always_sensitive",
       With(RsaPrivateTemplate(), {{CKA_ALWAYS_SENSITIVE, B(false)}}),
       CKR_ATTRIBUTE_READ_ONLY},
      {"never_extractable",
       With(AesTemplate(), {{CKA_NEVER_EXTRACTABLE, B(true)}}),
       CKR_ATTRIBUTE_READ_ONLY},
      {"key_gen_mechanism",
       With(AesTemplate(), {{CKA_KEY_GEN_MECHANISM, U(CKM_AES_KEY_GEN)}}),
       CKR_ATTRIBUTE_READ_ONLY},
      {"trusted certificate", With(CertTemplate(), {{CKA_TRUSTED, B(true)}}),
       CKR_ATTRIBUTE_READ_ONLY},
      {"trusted public key",
       With(RsaPublicTemplate(), {{CKA_TRUSTED, B(true)}}),
       CKR_ATTRIBUTE_READ_ONLY},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_RV(Create(c.tmpl), c.want);
  }
  // CKA_TRUSTED false is just the default.
  EXPECT_TRUE(Create(With(CertTemplate(), {{CKA_TRUSTED, B(false)}})).ok());
}

TEST(BuildObjectCreate, OnlyTheSoMarksTrusted) {
  BuildOptions so;
  so.so_session = true;
  for (const AttributeMap& tmpl :
       {With(CertTemplate(), {{CKA_TRUSTED, B(true)}}),
        With(RsaPublicTemplate(), {{CKA_TRUSTED, B(true)}}),
        With(AesTemplate(), {{CKA_TRUSTED, B(true)}})}) {
    EXPECT_RV(Create(tmpl), CKR_ATTRIBUTE_READ_ONLY);
    absl::StatusOr<AttributeMap> obj = BuildObject(
        Origin::kCreate, tmpl, AttributeMap(), CK_UNAVAILABLE_INFORMATION, so);
    ASSERT_TRUE(obj.ok()) << obj.status();
    EXPECT_EQ(obj->GetBytes(CKA_TRUSTED), B(true));
  }
}

TEST(BuildObjectCreate, TokenComputedCheckValueMustMatchAGivenOne) {
  const AttributeMap computed = Map({{CKA_CHECK_VALUE, Filler(3, 40)}});
  absl::StatusOr<AttributeMap> obj = BuildObject(
      Origin::kCreate, AesTemplate(), computed, CK_UNAVAILABLE_INFORMATION);
  ASSERT_TRUE(obj.ok()) << obj.status();
  EXPECT_EQ(obj->GetBytes(CKA_CHECK_VALUE), Filler(3, 40));
  EXPECT_TRUE(
      BuildObject(Origin::kCreate,
                  With(AesTemplate(), {{CKA_CHECK_VALUE, Filler(3, 40)}}),
                  computed, CK_UNAVAILABLE_INFORMATION)
          .ok());
  EXPECT_RV(BuildObject(Origin::kCreate,
                        With(AesTemplate(), {{CKA_CHECK_VALUE, Filler(3, 41)}}),
                        computed, CK_UNAVAILABLE_INFORMATION),
            CKR_ATTRIBUTE_VALUE_INVALID);
  // Without a computed one, nothing is invented.
  EXPECT_FALSE(CreateOk(AesTemplate()).Has(CKA_CHECK_VALUE));
}

// ---------------------------------------------------------------------
// BuildObject, kGenerate

AttributeMap AesGenerated(size_t len = 32) {
  return Map({{CKA_CLASS, U(CKO_SECRET_KEY)},
              {CKA_KEY_TYPE, U(CKK_AES)},
              {CKA_VALUE, Filler(len, 50)},
              {CKA_VALUE_LEN, U(len)}});
}
AttributeMap RsaPublicGenerated() {
  return Map({{CKA_CLASS, U(CKO_PUBLIC_KEY)},
              {CKA_KEY_TYPE, U(CKK_RSA)},
              {CKA_MODULUS, Filler(256, 51)},
              {CKA_PUBLIC_EXPONENT, Filler(3, 4, 0x01)}});
}
AttributeMap RsaPrivateGenerated() {
  return With(RsaPublicGenerated(), {{CKA_CLASS, U(CKO_PRIVATE_KEY)},
                                     {CKA_PRIVATE_EXPONENT, Filler(256, 52)},
                                     {CKA_PRIME_1, Filler(128, 53)},
                                     {CKA_PRIME_2, Filler(128, 54)},
                                     {CKA_EXPONENT_1, Filler(128, 55)},
                                     {CKA_EXPONENT_2, Filler(128, 56)},
                                     {CKA_COEFFICIENT, Filler(128, 57)}});
}
AttributeMap DsaDomain() {
  return Map({{CKA_PRIME, Filler(256, 11)},
              {CKA_SUBPRIME, Filler(32, 12)},
              {CKA_BASE, Filler(256, 13)}});
}
AttributeMap DsaPublicGenerated() {
  return Map({{CKA_CLASS, U(CKO_PUBLIC_KEY)},
              {CKA_KEY_TYPE, U(CKK_DSA)},
              {CKA_VALUE, Filler(256, 60)}});
}
AttributeMap DsaPrivateGenerated() {
  return With(DsaDomain(), {{CKA_CLASS, U(CKO_PRIVATE_KEY)},
                            {CKA_KEY_TYPE, U(CKK_DSA)},
                            {CKA_VALUE, Filler(32, 61)}});
}

absl::StatusOr<AttributeMap> Generate(const AttributeMap& tmpl,
                                      const AttributeMap& generated,
                                      CK_MECHANISM_TYPE mech) {
  return BuildObject(Origin::kGenerate, tmpl, generated, mech);
}

TEST(BuildObjectGenerate, SecretKeyDerivedFlags) {
  // No class or key type in the template: the mechanism implies them.
  absl::StatusOr<AttributeMap> obj =
      Generate(Map({{CKA_VALUE_LEN, U(32)}}), AesGenerated(), CKM_AES_KEY_GEN);
  ASSERT_TRUE(obj.ok()) << obj.status();
  EXPECT_EQ(obj->GetUlong(CKA_CLASS), CKO_SECRET_KEY);
  EXPECT_EQ(obj->GetUlong(CKA_KEY_TYPE), CKK_AES);
  EXPECT_EQ(obj->GetBytes(CKA_VALUE), Filler(32, 50));
  EXPECT_EQ(obj->GetBytes(CKA_LOCAL), B(true));
  EXPECT_EQ(obj->GetUlong(CKA_KEY_GEN_MECHANISM), CKM_AES_KEY_GEN);
  EXPECT_EQ(obj->GetBytes(CKA_ALWAYS_SENSITIVE), B(true));
  EXPECT_EQ(obj->GetBytes(CKA_NEVER_EXTRACTABLE), B(true));

  obj = Generate(Map({{CKA_VALUE_LEN, U(16)},
                      {CKA_SENSITIVE, B(false)},
                      {CKA_EXTRACTABLE, B(true)}}),
                 AesGenerated(16), CKM_AES_KEY_GEN);
  ASSERT_TRUE(obj.ok()) << obj.status();
  EXPECT_EQ(obj->GetBytes(CKA_ALWAYS_SENSITIVE), B(false));
  EXPECT_EQ(obj->GetBytes(CKA_NEVER_EXTRACTABLE), B(false));
  EXPECT_EQ(obj->GetBytes(CKA_LOCAL), B(true));

  // Sensitive but extractable, and the reverse.
  obj = Generate(Map({{CKA_VALUE_LEN, U(16)}, {CKA_EXTRACTABLE, B(true)}}),
                 AesGenerated(16), CKM_AES_KEY_GEN);
  ASSERT_TRUE(obj.ok());
  EXPECT_EQ(obj->GetBytes(CKA_ALWAYS_SENSITIVE), B(true));
  EXPECT_EQ(obj->GetBytes(CKA_NEVER_EXTRACTABLE), B(false));
  obj = Generate(Map({{CKA_VALUE_LEN, U(16)}, {CKA_SENSITIVE, B(false)}}),
                 AesGenerated(16), CKM_AES_KEY_GEN);
  ASSERT_TRUE(obj.ok());
  EXPECT_EQ(obj->GetBytes(CKA_ALWAYS_SENSITIVE), B(false));
  EXPECT_EQ(obj->GetBytes(CKA_NEVER_EXTRACTABLE), B(true));
}

TEST(BuildObjectGenerate, GenericSecret) {
  AttributeMap generated = Map({{CKA_CLASS, U(CKO_SECRET_KEY)},
                                {CKA_KEY_TYPE, U(CKK_GENERIC_SECRET)},
                                {CKA_VALUE, Filler(48, 70)}});
  absl::StatusOr<AttributeMap> obj =
      Generate(Map({{CKA_VALUE_LEN, U(48)}, {CKA_CLASS, U(CKO_SECRET_KEY)}}),
               generated, CKM_GENERIC_SECRET_KEY_GEN);
  ASSERT_TRUE(obj.ok()) << obj.status();
  EXPECT_EQ(obj->GetUlong(CKA_VALUE_LEN), 48u);
  EXPECT_EQ(obj->GetUlong(CKA_KEY_GEN_MECHANISM), CKM_GENERIC_SECRET_KEY_GEN);
}

TEST(BuildObjectGenerate, RsaKeyPair) {
  absl::StatusOr<AttributeMap> pub =
      Generate(Map({{CKA_MODULUS_BITS, U(2048)},
                    {CKA_PUBLIC_EXPONENT, Filler(3, 4, 0x01)},
                    {CKA_TOKEN, B(true)}}),
               RsaPublicGenerated(), CKM_RSA_PKCS_KEY_PAIR_GEN);
  ASSERT_TRUE(pub.ok()) << pub.status();
  EXPECT_EQ(pub->GetUlong(CKA_MODULUS_BITS), 2048u);
  EXPECT_EQ(pub->GetBytes(CKA_LOCAL), B(true));
  EXPECT_EQ(pub->GetBytes(CKA_PRIVATE), B(false));
  EXPECT_FALSE(pub->Has(CKA_ALWAYS_SENSITIVE));
  absl::StatusOr<AttributeMap> priv =
      Generate(Map({{CKA_SIGN, B(true)}, {CKA_DECRYPT, B(false)}}),
               RsaPrivateGenerated(), CKM_RSA_PKCS_KEY_PAIR_GEN);
  ASSERT_TRUE(priv.ok()) << priv.status();
  EXPECT_EQ(priv->GetBytes(CKA_DECRYPT), B(false));
  EXPECT_EQ(priv->GetBytes(CKA_PRIVATE), B(true));
  EXPECT_EQ(priv->GetBytes(CKA_ALWAYS_SENSITIVE), B(true));
  EXPECT_EQ(priv->GetUlong(CKA_KEY_GEN_MECHANISM), CKM_RSA_PKCS_KEY_PAIR_GEN);
  EXPECT_EQ(priv->GetBytes(CKA_COEFFICIENT), Filler(128, 57));
}

TEST(BuildObjectGenerate, BigIntegersCompareByValue) {
  Bytes padded_e = Filler(3, 4, 0x01);
  padded_e.insert(padded_e.begin(), 0x00);
  absl::StatusOr<AttributeMap> pub = Generate(
      Map({{CKA_MODULUS_BITS, U(2048)}, {CKA_PUBLIC_EXPONENT, padded_e}}),
      RsaPublicGenerated(), CKM_RSA_PKCS_KEY_PAIR_GEN);
  ASSERT_TRUE(pub.ok()) << pub.status();
  EXPECT_EQ(pub->GetBytes(CKA_PUBLIC_EXPONENT), padded_e);
  // Not for byte strings: a label with a leading zero byte is another label.
  AttributeMap generated = With(AesGenerated(), {{CKA_CHECK_VALUE, S("abc")}});
  Bytes zero_abc = {0, 'a', 'b', 'c'};
  EXPECT_RV(Generate(Map({{CKA_VALUE_LEN, U(32)}, {CKA_CHECK_VALUE, zero_abc}}),
                     generated, CKM_AES_KEY_GEN),
            CKR_ATTRIBUTE_VALUE_INVALID);
}

TEST(BuildObjectGenerate, DsaKeyPair) {
  absl::StatusOr<AttributeMap> pub =
      Generate(DsaDomain(), DsaPublicGenerated(), CKM_DSA_KEY_PAIR_GEN);
  ASSERT_TRUE(pub.ok()) << pub.status();
  EXPECT_EQ(pub->GetBytes(CKA_VALUE), Filler(256, 60));
  EXPECT_EQ(pub->GetBytes(CKA_PRIME), Filler(256, 11));
  absl::StatusOr<AttributeMap> priv =
      Generate(Map({{CKA_LABEL, S("dsa")}}), DsaPrivateGenerated(),
               CKM_DSA_KEY_PAIR_GEN);
  ASSERT_TRUE(priv.ok()) << priv.status();
  EXPECT_EQ(priv->GetBytes(CKA_SUBPRIME), Filler(32, 12));
}

TEST(BuildObjectGenerate, RejectsBadTemplates) {
  struct Case {
    const char* name;
    AttributeMap tmpl;
    AttributeMap generated;
    CK_RV want;
  };
  const std::vector<Case> cases = {
      {"AES without value_len", Map({}), AesGenerated(),
       CKR_TEMPLATE_INCOMPLETE},
      {"AES with a value",
       Map({{CKA_VALUE_LEN, U(32)}, {CKA_VALUE, Filler(32, 1)}}),
       AesGenerated(), CKR_ATTRIBUTE_READ_ONLY},
      {"AES value_len vs generated value", Map({{CKA_VALUE_LEN, U(24)}}),
       Without(AesGenerated(32), CKA_VALUE_LEN), CKR_TEMPLATE_INCONSISTENT},
      {"AES with local", Map({{CKA_VALUE_LEN, U(32)}, {CKA_LOCAL, B(true)}}),
       AesGenerated(), CKR_ATTRIBUTE_READ_ONLY},
      {"public key class for AES",
       Map({{CKA_VALUE_LEN, U(32)}, {CKA_CLASS, U(CKO_PUBLIC_KEY)}}),
       AesGenerated(), CKR_TEMPLATE_INCONSISTENT},
      {"generic key type for AES",
       Map({{CKA_VALUE_LEN, U(32)}, {CKA_KEY_TYPE, U(CKK_GENERIC_SECRET)}}),
       AesGenerated(), CKR_TEMPLATE_INCONSISTENT},
      {"data object", Map({{CKA_CLASS, U(CKO_DATA)}}),
       Map({{CKA_VALUE, S("x")}}), CKR_TEMPLATE_INCONSISTENT},
      {"generation made no value", Map({{CKA_VALUE_LEN, U(32)}}),
       Without(AesGenerated(), CKA_VALUE), CKR_TEMPLATE_INCOMPLETE},
      {"RSA without modulus_bits", Map({}), RsaPublicGenerated(),
       CKR_TEMPLATE_INCOMPLETE},
      {"RSA with a modulus",
       Map({{CKA_MODULUS_BITS, U(2048)}, {CKA_MODULUS, Filler(256, 1)}}),
       RsaPublicGenerated(), CKR_ATTRIBUTE_READ_ONLY},
      {"RSA exponent differs",
       Map({{CKA_MODULUS_BITS, U(2048)}, {CKA_PUBLIC_EXPONENT, Filler(3, 9)}}),
       RsaPublicGenerated(), CKR_TEMPLATE_INCONSISTENT},
      {"RSA bits vs modulus", Map({{CKA_MODULUS_BITS, U(3072)}}),
       RsaPublicGenerated(), CKR_TEMPLATE_INCONSISTENT},
      {"RSA private with exponent",
       Map({{CKA_PRIVATE_EXPONENT, Filler(256, 1)}}), RsaPrivateGenerated(),
       CKR_ATTRIBUTE_READ_ONLY},
      {"RSA private with public exponent",
       Map({{CKA_PUBLIC_EXPONENT, Filler(3, 4, 0x01)}}), RsaPrivateGenerated(),
       CKR_ATTRIBUTE_READ_ONLY},
      {"DSA public without base", Without(DsaDomain(), CKA_BASE),
       DsaPublicGenerated(), CKR_TEMPLATE_INCOMPLETE},
      {"DSA public with value", With(DsaDomain(), {{CKA_VALUE, Filler(9, 1)}}),
       DsaPublicGenerated(), CKR_ATTRIBUTE_READ_ONLY},
      {"DSA private with prime", Map({{CKA_PRIME, Filler(256, 11)}}),
       DsaPrivateGenerated(), CKR_ATTRIBUTE_READ_ONLY},
      {"DSA private, mechanism omitted the domain", Map({}),
       Without(DsaPrivateGenerated(), CKA_PRIME), CKR_TEMPLATE_INCOMPLETE},
      {"mechanism made a foreign attribute", Map({{CKA_VALUE_LEN, U(32)}}),
       With(AesGenerated(), {{CKA_MODULUS, Filler(4, 1)}}),
       CKR_TEMPLATE_INCONSISTENT},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_RV(Generate(c.tmpl, c.generated, CKM_AES_KEY_GEN), c.want);
  }
}

TEST(CheckGenerateTemplate, ChecksTheCallersPartBeforeGeneration) {
  const AttributeMap aes =
      Map({{CKA_CLASS, U(CKO_SECRET_KEY)}, {CKA_KEY_TYPE, U(CKK_AES)}});
  const AttributeMap rsa_pub =
      Map({{CKA_CLASS, U(CKO_PUBLIC_KEY)}, {CKA_KEY_TYPE, U(CKK_RSA)}});
  const AttributeMap rsa_priv =
      Map({{CKA_CLASS, U(CKO_PRIVATE_KEY)}, {CKA_KEY_TYPE, U(CKK_RSA)}});
  const AttributeMap dsa_pub =
      Map({{CKA_CLASS, U(CKO_PUBLIC_KEY)}, {CKA_KEY_TYPE, U(CKK_DSA)}});
  EXPECT_RV(CheckGenerateTemplate(Map({{CKA_VALUE_LEN, U(32)}}), aes), CKR_OK);
  EXPECT_RV(CheckGenerateTemplate(Map({}), aes), CKR_TEMPLATE_INCOMPLETE);
  EXPECT_RV(CheckGenerateTemplate(
                Map({{CKA_VALUE_LEN, U(32)}, {CKA_VALUE, Filler(32, 1)}}), aes),
            CKR_ATTRIBUTE_READ_ONLY);
  EXPECT_RV(CheckGenerateTemplate(
                Map({{CKA_VALUE_LEN, U(32)}, {CKA_KEY_TYPE, U(CKK_DSA)}}), aes),
            CKR_TEMPLATE_INCONSISTENT);
  EXPECT_RV(CheckGenerateTemplate(Map({{CKA_MODULUS_BITS, U(2048)}}), rsa_pub),
            CKR_OK);
  EXPECT_RV(CheckGenerateTemplate(Map({{CKA_MODULUS_BITS, U(2048)},
                                       {CKA_PUBLIC_EXPONENT, Filler(3, 4)}}),
                                  rsa_pub),
            CKR_OK);
  EXPECT_RV(CheckGenerateTemplate(Map({}), rsa_pub), CKR_TEMPLATE_INCOMPLETE);
  EXPECT_RV(CheckGenerateTemplate(Map({{CKA_SIGN, B(true)}}), rsa_priv),
            CKR_OK);
  EXPECT_RV(CheckGenerateTemplate(Map({{CKA_ENCRYPT, B(true)}}), rsa_priv),
            CKR_TEMPLATE_INCONSISTENT);
  EXPECT_RV(CheckGenerateTemplate(DsaDomain(), dsa_pub), CKR_OK);
  EXPECT_RV(CheckGenerateTemplate(Without(DsaDomain(), CKA_PRIME), dsa_pub),
            CKR_TEMPLATE_INCOMPLETE);
}

// ---------------------------------------------------------------------
// kCopy: a complete object re-validated keeps its derived attributes.

TEST(BuildObjectCopyOrigin, RoundTripsAGeneratedObject) {
  absl::StatusOr<AttributeMap> obj =
      Generate(Map({{CKA_VALUE_LEN, U(32)}}), AesGenerated(), CKM_AES_KEY_GEN);
  ASSERT_TRUE(obj.ok());
  absl::StatusOr<AttributeMap> again = BuildObject(
      Origin::kCopy, *obj, AttributeMap(), CK_UNAVAILABLE_INFORMATION);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->Serialize(), obj->Serialize());
  // Still checked: a stated length that is wrong.
  EXPECT_RV(BuildObject(Origin::kCopy, With(*obj, {{CKA_VALUE_LEN, U(16)}}),
                        AttributeMap(), CK_UNAVAILABLE_INFORMATION),
            CKR_TEMPLATE_INCONSISTENT);
}

// ---------------------------------------------------------------------
// SetAttributes

struct SetCase {
  const char* name;
  AttributeMap (*object)();
  AttributeMap tmpl;
  CK_RV want;
};

AttributeMap AesObject() { return CreateOk(AesTemplate()); }
AttributeMap AesObjectOpen() {
  return CreateOk(With(
      AesTemplate(), {{CKA_SENSITIVE, B(false)}, {CKA_EXTRACTABLE, B(true)}}));
}
AttributeMap RsaPrivateObject() { return CreateOk(RsaPrivateCrtTemplate()); }
AttributeMap RsaPublicObject() { return CreateOk(RsaPublicTemplate()); }
AttributeMap DataObject() { return CreateOk(DataTemplate()); }
AttributeMap CertObject() { return CreateOk(CertTemplate()); }
AttributeMap CreateRsaPrivateNoCrt() { return CreateOk(RsaPrivateTemplate()); }
AttributeMap FrozenObject() {
  return CreateOk(With(AesTemplate(), {{CKA_MODIFIABLE, B(false)}}));
}
AttributeMap UncopyableObject() {
  return CreateOk(With(AesTemplate(), {{CKA_COPYABLE, B(false)}}));
}

TEST(SetAttributes, OneWayAndReadOnlyRules) {
  const std::vector<SetCase> cases = {
      // Footnote 8: modifiable.
      {"label", AesObject, Map({{CKA_LABEL, S("new")}}), CKR_OK},
      {"id", AesObject, Map({{CKA_ID, S("id")}}), CKR_OK},
      {"usage", AesObject, Map({{CKA_ENCRYPT, B(false)}}), CKR_OK},
      {"derive", AesObject, Map({{CKA_DERIVE, B(true)}}), CKR_OK},
      {"dates", AesObject,
       Map({{CKA_START_DATE, S("20260101")}, {CKA_END_DATE, S("20270101")}}),
       CKR_OK},
      {"subject", RsaPrivateObject, Map({{CKA_SUBJECT, S("cn")}}), CKR_OK},
      {"public usage", RsaPublicObject, Map({{CKA_WRAP, B(false)}}), CKR_OK},
      {"data value", DataObject, Map({{CKA_VALUE, S("other")}}), CKR_OK},
      {"data application", DataObject, Map({{CKA_APPLICATION, S("app")}}),
       CKR_OK},
      {"cert id", CertObject, Map({{CKA_ID, S("i")}}), CKR_OK},
      {"cert issuer", CertObject, Map({{CKA_ISSUER, S("i")}}), CKR_OK},
      {"cert serial", CertObject, Map({{CKA_SERIAL_NUMBER, S("1")}}), CKR_OK},
      // One-way flags.
      {"sensitive to true", AesObjectOpen, Map({{CKA_SENSITIVE, B(true)}}),
       CKR_OK},
      {"sensitive back to false", AesObject, Map({{CKA_SENSITIVE, B(false)}}),
       CKR_ATTRIBUTE_READ_ONLY},
      {"extractable to false", AesObjectOpen,
       Map({{CKA_EXTRACTABLE, B(false)}}), CKR_OK},
      {"extractable back to true", AesObject, Map({{CKA_EXTRACTABLE, B(true)}}),
       CKR_ATTRIBUTE_READ_ONLY},
      {"copyable to false", AesObject, Map({{CKA_COPYABLE, B(false)}}), CKR_OK},
      {"copyable back to true", UncopyableObject,
       Map({{CKA_COPYABLE, B(true)}}), CKR_ATTRIBUTE_READ_ONLY},
      {"wrap_with_trusted to true", AesObject,
       Map({{CKA_WRAP_WITH_TRUSTED, B(true)}}), CKR_OK},
      {"sensitive true again", AesObject, Map({{CKA_SENSITIVE, B(true)}}),
       CKR_OK},
      // Read-only.
      {"class", AesObject, Map({{CKA_CLASS, U(CKO_SECRET_KEY)}}),
       CKR_ATTRIBUTE_READ_ONLY},
      {"key type", AesObject, Map({{CKA_KEY_TYPE, U(CKK_AES)}}),
       CKR_ATTRIBUTE_READ_ONLY},
      {"key value", AesObjectOpen, Map({{CKA_VALUE, Filler(32, 1)}}),
       CKR_ATTRIBUTE_READ_ONLY},
      {"value_len", AesObject, Map({{CKA_VALUE_LEN, U(32)}}),
       CKR_ATTRIBUTE_READ_ONLY},
      {"local", AesObject, Map({{CKA_LOCAL, B(true)}}),
       CKR_ATTRIBUTE_READ_ONLY},
      {"always_sensitive", AesObject, Map({{CKA_ALWAYS_SENSITIVE, B(true)}}),
       CKR_ATTRIBUTE_READ_ONLY},
      {"token", AesObject, Map({{CKA_TOKEN, B(true)}}),
       CKR_ATTRIBUTE_READ_ONLY},
      {"private", AesObject, Map({{CKA_PRIVATE, B(false)}}),
       CKR_ATTRIBUTE_READ_ONLY},
      {"modifiable", AesObject, Map({{CKA_MODIFIABLE, B(false)}}),
       CKR_ATTRIBUTE_READ_ONLY},
      {"destroyable", AesObject, Map({{CKA_DESTROYABLE, B(false)}}),
       CKR_ATTRIBUTE_READ_ONLY},
      {"allowed mechanisms", AesObject, Map({{CKA_ALLOWED_MECHANISMS, {}}}),
       CKR_ATTRIBUTE_READ_ONLY},
      {"modulus", RsaPublicObject, Map({{CKA_MODULUS, Filler(256, 3)}}),
       CKR_ATTRIBUTE_READ_ONLY},
      {"private exponent", RsaPrivateObject,
       Map({{CKA_PRIVATE_EXPONENT, Filler(256, 5)}}), CKR_ATTRIBUTE_READ_ONLY},
      {"always_authenticate", RsaPrivateObject,
       Map({{CKA_ALWAYS_AUTHENTICATE, B(true)}}), CKR_ATTRIBUTE_READ_ONLY},
      {"cert subject", CertObject, Map({{CKA_SUBJECT, S("x")}}),
       CKR_ATTRIBUTE_READ_ONLY},
      {"cert value", CertObject, Map({{CKA_VALUE, S("x")}}),
       CKR_ATTRIBUTE_READ_ONLY},
      {"cert trusted", CertObject, Map({{CKA_TRUSTED, B(false)}}),
       CKR_ATTRIBUTE_READ_ONLY},
      // Not the object's, malformed, unmodifiable object.
      {"modulus on AES", AesObject, Map({{CKA_MODULUS, S("x")}}),
       CKR_TEMPLATE_INCONSISTENT},
      {"id on data", DataObject, Map({{CKA_ID, S("x")}}),
       CKR_TEMPLATE_INCONSISTENT},
      {"check value never set", AesObject, Map({{CKA_CHECK_VALUE, S("abc")}}),
       CKR_ATTRIBUTE_READ_ONLY},
      {"CRT part never set", CreateRsaPrivateNoCrt,
       Map({{CKA_PRIME_1, Filler(128, 6)}}), CKR_ATTRIBUTE_READ_ONLY},
      {"vendor", AesObject, Map({{CKA_VENDOR_DEFINED | 5, S("x")}}),
       CKR_ATTRIBUTE_TYPE_INVALID},
      {"bool of 2 bytes", AesObject, Map({{CKA_ENCRYPT, Bytes{1, 1}}}),
       CKR_ATTRIBUTE_VALUE_INVALID},
      {"bad date", AesObject, Map({{CKA_START_DATE, S("2026")}}),
       CKR_ATTRIBUTE_VALUE_INVALID},
      {"unmodifiable object", FrozenObject, Map({{CKA_LABEL, S("x")}}),
       CKR_ACTION_PROHIBITED},
  };
  for (const SetCase& c : cases) {
    SCOPED_TRACE(c.name);
    AttributeMap obj = c.object();
    const std::vector<uint8_t> before = obj.Serialize();
    const absl::Status s = SetAttributes(&obj, c.tmpl);
    EXPECT_RV(s, c.want);
    if (c.want == CKR_OK) {
      EXPECT_TRUE(Matches(obj, c.tmpl));
    } else {
      EXPECT_EQ(obj.Serialize(), before) << "changed on error";
    }
  }
}

TEST(SetAttributes, IsAtomic) {
  AttributeMap obj = AesObject();
  const std::vector<uint8_t> before = obj.Serialize();
  // The label would be fine; the class is not: nothing changes.
  EXPECT_RV(SetAttributes(&obj, Map({{CKA_LABEL, S("changed")},
                                     {CKA_ENCRYPT, B(false)},
                                     {CKA_SENSITIVE, B(false)}})),
            CKR_ATTRIBUTE_READ_ONLY);
  EXPECT_EQ(obj.Serialize(), before);
  EXPECT_RV(SetAttributes(&obj, Map({{CKA_LABEL, S("changed")},
                                     {CKA_VENDOR_DEFINED, S("x")}})),
            CKR_ATTRIBUTE_TYPE_INVALID);
  EXPECT_EQ(obj.Serialize(), before);
  // All good: all applied, nothing else touched.
  ASSERT_TRUE(SetAttributes(&obj, Map({{CKA_LABEL, S("changed")},
                                       {CKA_ENCRYPT, B(false)}}))
                  .ok());
  EXPECT_EQ(obj.GetString(CKA_LABEL), "changed");
  EXPECT_EQ(obj.GetBytes(CKA_ENCRYPT), B(false));
  EXPECT_EQ(obj.GetBytes(CKA_DECRYPT), B(true));
  EXPECT_EQ(obj.GetBytes(CKA_VALUE), Filler(32, 16));
  // Setting sensitive does not rewrite history.
  AttributeMap open = AesObjectOpen();
  ASSERT_TRUE(SetAttributes(&open, Map({{CKA_SENSITIVE, B(true)}})).ok());
  EXPECT_EQ(open.GetBytes(CKA_ALWAYS_SENSITIVE), B(false));
}

TEST(SetAttributes, TrustedCertificateIsFrozen) {
  // Only a store can hold one (no caller may set CKA_TRUSTED true).
  AttributeMap cert = With(CertObject(), {{CKA_TRUSTED, B(true)}});
  EXPECT_RV(SetAttributes(&cert, Map({{CKA_ID, S("x")}})),
            CKR_ACTION_PROHIBITED);
}

// ---------------------------------------------------------------------
// CopyObject

TEST(CopyObject, Rules) {
  struct Case {
    const char* name;
    AttributeMap (*object)();
    AttributeMap tmpl;
    CK_RV want;
  };
  const std::vector<Case> cases = {
      {"plain copy", AesObject, Map({}), CKR_OK},
      {"to token", AesObject, Map({{CKA_TOKEN, B(true)}}), CKR_OK},
      {"public", AesObject, Map({{CKA_PRIVATE, B(false)}}), CKR_OK},
      {"unmodifiable", AesObject, Map({{CKA_MODIFIABLE, B(false)}}), CKR_OK},
      {"modifiable again", FrozenObject, Map({{CKA_MODIFIABLE, B(true)}}),
       CKR_OK},
      {"not destroyable", AesObject, Map({{CKA_DESTROYABLE, B(false)}}),
       CKR_OK},
      {"label and id", AesObject, Map({{CKA_LABEL, S("c")}, {CKA_ID, S("2")}}),
       CKR_OK},
      {"sensitive to true", AesObjectOpen, Map({{CKA_SENSITIVE, B(true)}}),
       CKR_OK},
      {"extractable to false", AesObjectOpen,
       Map({{CKA_EXTRACTABLE, B(false)}}), CKR_OK},
      {"copyable to false", AesObject, Map({{CKA_COPYABLE, B(false)}}), CKR_OK},
      {"same key type", AesObject, Map({{CKA_KEY_TYPE, U(CKK_AES)}}), CKR_OK},
      {"same usage", AesObject, Map({{CKA_ENCRYPT, B(true)}}), CKR_OK},
      // Footnote 8 attributes change in a copy too, even of an unmodifiable
      // object (v2.40 4.1.3; CKA_COPYABLE is what stops it).
      {"usage change", AesObject, Map({{CKA_ENCRYPT, B(false)}}), CKR_OK},
      {"usage change, unmodifiable", FrozenObject,
       Map({{CKA_SIGN, B(false)}, {CKA_DERIVE, B(true)}}), CKR_OK},
      {"label, unmodifiable", FrozenObject, Map({{CKA_LABEL, S("x")}}), CKR_OK},
      {"subject", RsaPrivateObject, Map({{CKA_SUBJECT, S("cn")}}), CKR_OK},
      {"data value", DataObject, Map({{CKA_VALUE, S("v2")}}), CKR_OK},
      {"cert subject", CertObject, Map({{CKA_SUBJECT, S("x")}}),
       CKR_ATTRIBUTE_READ_ONLY},
      {"trusted", CertObject, Map({{CKA_TRUSTED, B(true)}}),
       CKR_ATTRIBUTE_READ_ONLY},
      {"allowed mechanisms", AesObject,
       Map({{CKA_ALLOWED_MECHANISMS, U(CKM_AES_GCM)}}),
       CKR_ATTRIBUTE_READ_ONLY},
      {"sensitive to false", AesObject, Map({{CKA_SENSITIVE, B(false)}}),
       CKR_ATTRIBUTE_READ_ONLY},
      {"extractable to true", AesObject, Map({{CKA_EXTRACTABLE, B(true)}}),
       CKR_ATTRIBUTE_READ_ONLY},
      {"class change", AesObject, Map({{CKA_CLASS, U(CKO_DATA)}}),
       CKR_ATTRIBUTE_READ_ONLY},
      {"value change", AesObjectOpen, Map({{CKA_VALUE, Filler(32, 99)}}),
       CKR_ATTRIBUTE_READ_ONLY},
      {"local", AesObject, Map({{CKA_LOCAL, B(true)}}),
       CKR_ATTRIBUTE_READ_ONLY},
      {"foreign attribute", AesObject, Map({{CKA_MODULUS, S("x")}}),
       CKR_TEMPLATE_INCONSISTENT},
      {"vendor attribute", AesObject, Map({{CKA_VENDOR_DEFINED, S("x")}}),
       CKR_ATTRIBUTE_TYPE_INVALID},
      {"malformed", AesObject, Map({{CKA_TOKEN, Bytes{}}}),
       CKR_ATTRIBUTE_VALUE_INVALID},
      {"not copyable", UncopyableObject, Map({}), CKR_ACTION_PROHIBITED},
      {"not copyable, to token", UncopyableObject, Map({{CKA_TOKEN, B(true)}}),
       CKR_ACTION_PROHIBITED},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const AttributeMap source = c.object();
    const std::vector<uint8_t> before = source.Serialize();
    absl::StatusOr<AttributeMap> copy = CopyObject(source, c.tmpl);
    EXPECT_RV(copy, c.want);
    EXPECT_EQ(source.Serialize(), before);
    if (!copy.ok()) continue;
    EXPECT_TRUE(Matches(*copy, c.tmpl));
    // Everything not in the template is the source's.
    for (const auto& [type, value] : source.values()) {
      if (c.tmpl.Has(type)) continue;
      EXPECT_EQ(copy->GetBytes(type), source.GetBytes(type)) << type;
    }
    EXPECT_EQ(copy->size(), source.size());
  }
}

TEST(CopyObject, KeepsDerivedAttributes) {
  absl::StatusOr<AttributeMap> obj =
      Generate(Map({{CKA_VALUE_LEN, U(32)}}), AesGenerated(), CKM_AES_KEY_GEN);
  ASSERT_TRUE(obj.ok());
  absl::StatusOr<AttributeMap> copy =
      CopyObject(*obj, Map({{CKA_TOKEN, B(true)}}));
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ(copy->GetBytes(CKA_LOCAL), B(true));
  EXPECT_EQ(copy->GetBytes(CKA_ALWAYS_SENSITIVE), B(true));
  EXPECT_EQ(copy->GetUlong(CKA_KEY_GEN_MECHANISM), CKM_AES_KEY_GEN);
  EXPECT_TRUE(IsTokenObject(*copy));
}

// ---------------------------------------------------------------------
// GetAttributes

TEST(GetAttributes, LengthQueryThenValue) {
  const AttributeMap obj =
      CreateOk(With(DataTemplate(), {{CKA_LABEL, S("hello")}}));
  CK_ATTRIBUTE t[] = {{CKA_LABEL, nullptr, 0}, {CKA_VALUE, nullptr, 99}};
  EXPECT_EQ(Name(GetAttributes(obj, t, 2)), Name(CKR_OK));
  EXPECT_EQ(t[0].ulValueLen, 5u);
  EXPECT_EQ(t[1].ulValueLen, 7u);
  char label[5], value[16];
  t[0].pValue = label;
  t[1].pValue = value;
  t[1].ulValueLen = sizeof(value);  // larger is fine
  EXPECT_EQ(Name(GetAttributes(obj, t, 2)), Name(CKR_OK));
  EXPECT_EQ(std::string(label, t[0].ulValueLen), "hello");
  EXPECT_EQ(std::string(value, t[1].ulValueLen), "payload");
}

TEST(GetAttributes, EmptyValueAndUlong) {
  const AttributeMap obj = CreateOk(AesTemplate(24));
  CK_ULONG len = 0;
  CK_BYTE id_buf[1];
  CK_ATTRIBUTE t[] = {{CKA_VALUE_LEN, &len, sizeof(len)},
                      {CKA_ID, id_buf, sizeof(id_buf)}};
  EXPECT_EQ(Name(GetAttributes(obj, t, 2)), Name(CKR_OK));
  EXPECT_EQ(len, 24u);
  EXPECT_EQ(t[1].ulValueLen, 0u);
}

TEST(GetAttributes, EveryEntryIsProcessed) {
  const AttributeMap obj =
      CreateOk(With(RsaPrivateCrtTemplate(), {{CKA_LABEL, S("rsa")}}));
  uint8_t small[4];
  uint8_t big[512];
  char label[8];
  CK_ATTRIBUTE t[] = {
      {CKA_PRIVATE_EXPONENT, big, sizeof(big)},  // sensitive
      {CKA_LABEL, label, sizeof(label)},         // fine
      {CKA_VALUE_LEN, big, sizeof(big)},         // not an RSA attribute
      {CKA_MODULUS, small, sizeof(small)},       // too small
      {CKA_PUBLIC_EXPONENT, nullptr, 0},         // length only
      {CKA_PRIME_1, nullptr, 0},                 // sensitive, even for length
  };
  const CK_RV rv = GetAttributes(obj, t, 6);
  EXPECT_THAT(
      rv, ::testing::AnyOf(CKR_ATTRIBUTE_SENSITIVE, CKR_ATTRIBUTE_TYPE_INVALID,
                           CKR_BUFFER_TOO_SMALL));
  EXPECT_EQ(t[0].ulValueLen, CK_UNAVAILABLE_INFORMATION);
  EXPECT_EQ(t[1].ulValueLen, 3u);
  EXPECT_EQ(std::string(label, 3), "rsa");
  EXPECT_EQ(t[2].ulValueLen, CK_UNAVAILABLE_INFORMATION);
  EXPECT_EQ(t[3].ulValueLen, CK_UNAVAILABLE_INFORMATION);
  EXPECT_EQ(t[4].ulValueLen, 3u);
  EXPECT_EQ(t[5].ulValueLen, CK_UNAVAILABLE_INFORMATION);

  // Each error alone gives its own code.
  CK_ATTRIBUTE only_invalid[] = {{CKA_VALUE_LEN, big, sizeof(big)},
                                 {CKA_LABEL, label, sizeof(label)}};
  EXPECT_EQ(Name(GetAttributes(obj, only_invalid, 2)),
            Name(CKR_ATTRIBUTE_TYPE_INVALID));
  EXPECT_EQ(only_invalid[1].ulValueLen, 3u);
  CK_ATTRIBUTE only_small[] = {{CKA_MODULUS, small, sizeof(small)},
                               {CKA_LABEL, label, sizeof(label)}};
  EXPECT_EQ(Name(GetAttributes(obj, only_small, 2)),
            Name(CKR_BUFFER_TOO_SMALL));
  EXPECT_EQ(only_small[0].ulValueLen, CK_UNAVAILABLE_INFORMATION);
  EXPECT_EQ(only_small[1].ulValueLen, 3u);
  CK_ATTRIBUTE only_sensitive[] = {{CKA_COEFFICIENT, big, sizeof(big)}};
  EXPECT_EQ(Name(GetAttributes(obj, only_sensitive, 1)),
            Name(CKR_ATTRIBUTE_SENSITIVE));
  EXPECT_EQ(Name(GetAttributes(obj, nullptr, 1)), Name(CKR_ARGUMENTS_BAD));
  EXPECT_EQ(Name(GetAttributes(obj, nullptr, 0)), Name(CKR_OK));
}

TEST(GetAttributes, KeyValueOnlyWhenNotSensitiveAndExtractable) {
  struct Case {
    const char* name;
    bool sensitive, extractable, readable;
  };
  const Case cases[] = {
      {"sensitive", true, true, false},
      {"unextractable", false, false, false},
      {"both", true, false, false},
      {"open", false, true, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    for (AttributeMap (*tmpl)() :
         {+[] { return AesTemplate(); },
          +[] { return GenericSecretTemplate(); }, DsaPrivateTemplate}) {
      const AttributeMap obj =
          CreateOk(With(tmpl(), {{CKA_SENSITIVE, B(c.sensitive)},
                                 {CKA_EXTRACTABLE, B(c.extractable)}}));
      uint8_t buf[64];
      CK_ATTRIBUTE t[] = {{CKA_VALUE, buf, sizeof(buf)}};
      const CK_RV rv = GetAttributes(obj, t, 1);
      EXPECT_EQ(IsRevealable(obj, CKA_VALUE), c.readable);
      if (c.readable) {
        EXPECT_EQ(Name(rv), Name(CKR_OK));
        EXPECT_EQ(Bytes(buf, buf + t[0].ulValueLen), obj.GetBytes(CKA_VALUE));
      } else {
        EXPECT_EQ(Name(rv), Name(CKR_ATTRIBUTE_SENSITIVE));
        EXPECT_EQ(t[0].ulValueLen, CK_UNAVAILABLE_INFORMATION);
      }
    }
  }
  // Public values are never sensitive.
  const AttributeMap pub = CreateOk(DsaPublicTemplate());
  EXPECT_TRUE(IsRevealable(pub, CKA_VALUE));
  const AttributeMap data = CreateOk(DataTemplate());
  EXPECT_TRUE(IsRevealable(data, CKA_VALUE));
}

// The attribute set of each kind of object after a minimal
// C_CreateObject: the v2.40 tables (common, storage, class, key type),
// defaults filled, optional parts absent.
TEST(BuildObjectCreate, AttributeSetsFollowTheSpecTables) {
  const std::vector<CK_ATTRIBUTE_TYPE> storage = {
      CKA_CLASS, CKA_TOKEN,    CKA_PRIVATE,    CKA_MODIFIABLE,
      CKA_LABEL, CKA_COPYABLE, CKA_DESTROYABLE};
  const std::vector<CK_ATTRIBUTE_TYPE> key = {
      CKA_KEY_TYPE, CKA_ID,    CKA_START_DATE,        CKA_END_DATE,
      CKA_DERIVE,   CKA_LOCAL, CKA_KEY_GEN_MECHANISM, CKA_ALLOWED_MECHANISMS};
  const std::vector<CK_ATTRIBUTE_TYPE> pub = {
      CKA_SUBJECT, CKA_ENCRYPT, CKA_VERIFY,         CKA_VERIFY_RECOVER,
      CKA_WRAP,    CKA_TRUSTED, CKA_PUBLIC_KEY_INFO};
  const std::vector<CK_ATTRIBUTE_TYPE> priv = {CKA_SUBJECT,
                                               CKA_SENSITIVE,
                                               CKA_DECRYPT,
                                               CKA_SIGN,
                                               CKA_SIGN_RECOVER,
                                               CKA_UNWRAP,
                                               CKA_EXTRACTABLE,
                                               CKA_ALWAYS_SENSITIVE,
                                               CKA_NEVER_EXTRACTABLE,
                                               CKA_WRAP_WITH_TRUSTED,
                                               CKA_ALWAYS_AUTHENTICATE,
                                               CKA_PUBLIC_KEY_INFO};
  const std::vector<CK_ATTRIBUTE_TYPE> secret = {CKA_SENSITIVE,
                                                 CKA_ENCRYPT,
                                                 CKA_DECRYPT,
                                                 CKA_SIGN,
                                                 CKA_VERIFY,
                                                 CKA_WRAP,
                                                 CKA_UNWRAP,
                                                 CKA_EXTRACTABLE,
                                                 CKA_ALWAYS_SENSITIVE,
                                                 CKA_NEVER_EXTRACTABLE,
                                                 CKA_WRAP_WITH_TRUSTED,
                                                 CKA_TRUSTED,
                                                 CKA_VALUE,
                                                 CKA_VALUE_LEN};
  auto join = [](std::initializer_list<std::vector<CK_ATTRIBUTE_TYPE>> parts) {
    std::vector<CK_ATTRIBUTE_TYPE> all;
    for (const auto& p : parts) all.insert(all.end(), p.begin(), p.end());
    return all;
  };
  auto types = [](const AttributeMap& m) {
    std::vector<CK_ATTRIBUTE_TYPE> out;
    for (const auto& [type, value] : m.values()) out.push_back(type);
    return out;
  };
  using ::testing::UnorderedElementsAreArray;
  EXPECT_THAT(types(CreateOk(DataTemplate())),
              UnorderedElementsAreArray(join(
                  {storage, {CKA_APPLICATION, CKA_OBJECT_ID, CKA_VALUE}})));
  EXPECT_THAT(
      types(CreateOk(CertTemplate())),
      UnorderedElementsAreArray(
          join({storage,
                {CKA_CERTIFICATE_TYPE, CKA_TRUSTED, CKA_CERTIFICATE_CATEGORY,
                 CKA_START_DATE, CKA_END_DATE, CKA_PUBLIC_KEY_INFO, CKA_SUBJECT,
                 CKA_ID, CKA_ISSUER, CKA_SERIAL_NUMBER, CKA_VALUE, CKA_URL,
                 CKA_HASH_OF_SUBJECT_PUBLIC_KEY, CKA_HASH_OF_ISSUER_PUBLIC_KEY,
                 CKA_JAVA_MIDP_SECURITY_DOMAIN}})));
  EXPECT_THAT(types(CreateOk(RsaPublicTemplate())),
              UnorderedElementsAreArray(join(
                  {storage,
                   key,
                   pub,
                   {CKA_MODULUS, CKA_MODULUS_BITS, CKA_PUBLIC_EXPONENT}})));
  EXPECT_THAT(types(CreateOk(RsaPrivateTemplate())),
              UnorderedElementsAreArray(join(
                  {storage, key, priv, {CKA_MODULUS, CKA_PRIVATE_EXPONENT}})));
  EXPECT_THAT(
      types(CreateOk(RsaPrivateCrtTemplate())),
      UnorderedElementsAreArray(join(
          {storage,
           key,
           priv,
           {CKA_MODULUS, CKA_PUBLIC_EXPONENT, CKA_PRIVATE_EXPONENT, CKA_PRIME_1,
            CKA_PRIME_2, CKA_EXPONENT_1, CKA_EXPONENT_2, CKA_COEFFICIENT}})));
  EXPECT_THAT(types(CreateOk(DsaPublicTemplate())),
              UnorderedElementsAreArray(
                  join({storage,
                        key,
                        pub,
                        {CKA_PRIME, CKA_SUBPRIME, CKA_BASE, CKA_VALUE}})));
  EXPECT_THAT(types(CreateOk(DsaPrivateTemplate())),
              UnorderedElementsAreArray(
                  join({storage,
                        key,
                        priv,
                        {CKA_PRIME, CKA_SUBPRIME, CKA_BASE, CKA_VALUE}})));
  EXPECT_THAT(types(CreateOk(AesTemplate())),
              UnorderedElementsAreArray(join({storage, key, secret})));
  EXPECT_THAT(types(CreateOk(GenericSecretTemplate())),
              UnorderedElementsAreArray(join({storage, key, secret})));
}

// Every attribute of every object reads back, except key material.
TEST(GetAttributes, WholeObjectsReadBack) {
  for (const ClassCase& c : kClasses) {
    SCOPED_TRACE(c.name);
    const AttributeMap obj = CreateOk(c.tmpl());
    std::vector<CK_ATTRIBUTE> t;
    for (const auto& [type, value] : obj.values()) {
      t.push_back({type, nullptr, 0});
    }
    const CK_RV rv = GetAttributes(obj, t.data(), t.size());
    bool any_sensitive = false;
    std::vector<std::vector<uint8_t>> buffers;
    for (CK_ATTRIBUTE& a : t) {
      if (IsKeyMaterial(obj, a.type)) {
        any_sensitive = true;
        EXPECT_EQ(a.ulValueLen, CK_UNAVAILABLE_INFORMATION);
        continue;
      }
      ASSERT_EQ(a.ulValueLen, obj.Find(a.type)->size()) << a.type;
      buffers.emplace_back(a.ulValueLen);
      a.pValue = buffers.back().data();
    }
    EXPECT_EQ(Name(rv), Name(any_sensitive ? CKR_ATTRIBUTE_SENSITIVE : CKR_OK));
    EXPECT_EQ(Name(GetAttributes(obj, t.data(), t.size())),
              Name(any_sensitive ? CKR_ATTRIBUTE_SENSITIVE : CKR_OK));
    for (const CK_ATTRIBUTE& a : t) {
      if (IsKeyMaterial(obj, a.type)) continue;
      const uint8_t* p = static_cast<const uint8_t*>(a.pValue);
      EXPECT_EQ(Bytes(p, p + a.ulValueLen), obj.GetBytes(a.type)) << a.type;
    }
  }
}

TEST(KeyMaterial, ListsFootnote7Attributes) {
  using ::testing::UnorderedElementsAre;
  EXPECT_THAT(
      KeyMaterialTypes(CKO_PRIVATE_KEY, CKK_RSA),
      UnorderedElementsAre(CKA_PRIVATE_EXPONENT, CKA_PRIME_1, CKA_PRIME_2,
                           CKA_EXPONENT_1, CKA_EXPONENT_2, CKA_COEFFICIENT));
  EXPECT_THAT(KeyMaterialTypes(CKO_PRIVATE_KEY, CKK_DSA),
              UnorderedElementsAre(CKA_VALUE));
  EXPECT_THAT(KeyMaterialTypes(CKO_SECRET_KEY, CKK_AES),
              UnorderedElementsAre(CKA_VALUE));
  EXPECT_THAT(KeyMaterialTypes(CKO_SECRET_KEY, CKK_GENERIC_SECRET),
              UnorderedElementsAre(CKA_VALUE));
  EXPECT_TRUE(KeyMaterialTypes(CKO_PUBLIC_KEY, CKK_RSA).empty());
  EXPECT_TRUE(KeyMaterialTypes(CKO_PUBLIC_KEY, CKK_DSA).empty());
  EXPECT_TRUE(KeyMaterialTypes(CKO_DATA, CK_UNAVAILABLE_INFORMATION).empty());
  EXPECT_TRUE(KeyMaterialTypes(CKO_SECRET_KEY, CKK_RSA).empty());
  const AttributeMap rsa = CreateOk(RsaPrivateTemplate());
  EXPECT_TRUE(IsKeyMaterial(rsa, CKA_PRIVATE_EXPONENT));
  EXPECT_FALSE(IsKeyMaterial(rsa, CKA_MODULUS));
  EXPECT_FALSE(IsRevealable(rsa, CKA_PRIVATE_EXPONENT));
  EXPECT_TRUE(IsRevealable(rsa, CKA_MODULUS));
}

// ---------------------------------------------------------------------
// Matches, CheckKeyUse

TEST(Matches, FindSemantics) {
  const AttributeMap obj =
      CreateOk(With(AesTemplate(), {{CKA_LABEL, S("k")}, {CKA_ID, S("7")}}));
  EXPECT_TRUE(Matches(obj, AttributeMap()));
  EXPECT_TRUE(Matches(obj, Map({{CKA_CLASS, U(CKO_SECRET_KEY)}})));
  EXPECT_TRUE(Matches(obj, Map({{CKA_LABEL, S("k")}, {CKA_ID, S("7")}})));
  EXPECT_FALSE(Matches(obj, Map({{CKA_LABEL, S("k")}, {CKA_ID, S("8")}})));
  EXPECT_FALSE(Matches(obj, Map({{CKA_LABEL, S("")}})));
  EXPECT_FALSE(Matches(obj, Map({{CKA_LABEL, S("kk")}})));
  EXPECT_FALSE(Matches(obj, Map({{CKA_MODULUS, S("x")}})));
  EXPECT_FALSE(Matches(obj, Map({{CKA_CLASS, U(CKO_DATA)}})));
  // Booleans compare as booleans, even from a map that skipped parsing.
  EXPECT_TRUE(Matches(obj, Map({{CKA_ENCRYPT, Bytes{0x02}}})));
  EXPECT_FALSE(Matches(obj, Map({{CKA_TOKEN, Bytes{0x02}}})));
  // Key values match by value (constant-time compare).
  EXPECT_TRUE(Matches(obj, Map({{CKA_VALUE, Filler(32, 16)}})));
  Bytes off_by_one = Filler(32, 16);
  off_by_one[31] ^= 1;
  EXPECT_FALSE(Matches(obj, Map({{CKA_VALUE, off_by_one}})));
  EXPECT_FALSE(Matches(obj, Map({{CKA_VALUE, Filler(16, 16)}})));
}

TEST(CheckKeyUse, UsageFlags) {
  const AttributeMap aes =
      CreateOk(With(AesTemplate(), {{CKA_SIGN, B(false)}}));
  EXPECT_RV(CheckKeyUse(aes, CKA_ENCRYPT), CKR_OK);
  EXPECT_RV(CheckKeyUse(aes, CKA_SIGN), CKR_KEY_FUNCTION_NOT_PERMITTED);
  EXPECT_RV(CheckKeyUse(aes, CKA_DERIVE), CKR_KEY_FUNCTION_NOT_PERMITTED);
  const AttributeMap dsa = CreateOk(DsaPublicTemplate());
  EXPECT_RV(CheckKeyUse(dsa, CKA_VERIFY), CKR_OK);
  EXPECT_RV(CheckKeyUse(dsa, CKA_ENCRYPT), CKR_KEY_FUNCTION_NOT_PERMITTED);
  EXPECT_RV(CheckKeyUse(dsa, CKA_SIGN), CKR_KEY_FUNCTION_NOT_PERMITTED);
  EXPECT_RV(CheckKeyUse(CreateOk(DataTemplate()), CKA_ENCRYPT),
            CKR_KEY_TYPE_INCONSISTENT);
  EXPECT_RV(CheckKeyUse(CreateOk(CertTemplate()), CKA_VERIFY),
            CKR_KEY_TYPE_INCONSISTENT);
}

TEST(CheckMechanismAllowed, EmptyListAllowsAll) {
  const AttributeMap aes = CreateOk(AesTemplate());
  EXPECT_RV(CheckMechanismAllowed(aes, CKM_AES_GCM), CKR_OK);
  EXPECT_RV(CheckMechanismAllowed(AttributeMap(), CKM_AES_GCM), CKR_OK);
  Bytes list(2 * sizeof(CK_MECHANISM_TYPE));
  const CK_MECHANISM_TYPE mechs[2] = {CKM_AES_CBC_PAD, CKM_AES_GCM};
  std::memcpy(list.data(), mechs, list.size());
  const AttributeMap limited =
      CreateOk(With(AesTemplate(), {{CKA_ALLOWED_MECHANISMS, list}}));
  EXPECT_RV(CheckMechanismAllowed(limited, CKM_AES_GCM), CKR_OK);
  EXPECT_RV(CheckMechanismAllowed(limited, CKM_AES_CBC_PAD), CKR_OK);
  EXPECT_RV(CheckMechanismAllowed(limited, CKM_AES_CBC), CKR_MECHANISM_INVALID);
}

TEST(BuildObjectCopyOrigin, KeepsATrustedCertificate) {
  // A store may hold what only the SO could make; re-validating keeps it.
  const AttributeMap cert =
      With(CreateOk(CertTemplate()), {{CKA_TRUSTED, B(true)}});
  absl::StatusOr<AttributeMap> again = BuildObject(
      Origin::kCopy, cert, AttributeMap(), CK_UNAVAILABLE_INFORMATION);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->GetBytes(CKA_TRUSTED), B(true));
}

TEST(ObjectFlags, PrivateAndTokenDefaults) {
  EXPECT_TRUE(IsPrivateObject(AttributeMap()));  // unknown counts as private
  EXPECT_FALSE(IsTokenObject(AttributeMap()));
  EXPECT_FALSE(IsPrivateObject(CreateOk(DataTemplate())));
  EXPECT_TRUE(IsPrivateObject(
      CreateOk(With(DataTemplate(), {{CKA_PRIVATE, B(true)}}))));
  EXPECT_TRUE(
      IsTokenObject(CreateOk(With(DataTemplate(), {{CKA_TOKEN, B(true)}}))));
}

}  // namespace
}  // namespace accelcrypt::p11
