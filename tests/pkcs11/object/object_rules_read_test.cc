// SPDX-License-Identifier: Apache-2.0
// The PKCS#11 v2.40 object model (pkcs11/object/), reading objects:
// C_GetAttributeValue, key material, C_FindObjects matching, key-use and
// mechanism checks, object flags.
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
}  // namespace accelcrypt::p11::object_test
