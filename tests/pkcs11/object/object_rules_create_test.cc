// SPDX-License-Identifier: Apache-2.0
// The PKCS#11 v2.40 object model (pkcs11/object/), creation: template
// parsing and C_CreateObject's rules (required attributes, defaults, derived
// lengths, the spec's error codes, the attribute set of each kind of object).
// Shared helpers: object_rules_fixture.h.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "pkcs11/common/attributes.h"
#include "pkcs11/common/ck_error.h"
#include "pkcs11/object/object_rules.h"
#include "tests/pkcs11/object/object_rules_fixture.h"

namespace accelcrypt::p11::object_test {
namespace {

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

}  // namespace
}  // namespace accelcrypt::p11::object_test
