// SPDX-License-Identifier: Apache-2.0
// The PKCS#11 v2.40 object model (pkcs11/object/), key generation: the
// attributes a generation derives, rejected templates, the caller's part
// checked before generation.
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
// BuildObject, kGenerate

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

}  // namespace
}  // namespace accelcrypt::p11::object_test
