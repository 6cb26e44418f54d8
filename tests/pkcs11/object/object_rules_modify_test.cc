// SPDX-License-Identifier: Apache-2.0
// The PKCS#11 v2.40 object model (pkcs11/object/), changing and copying
// objects: C_SetAttributeValue's one-way and read-only rules, C_CopyObject,
// and a stored object re-validated (Origin::kCopy).
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

TEST(BuildObjectCopyOrigin, KeepsATrustedCertificate) {
  // A store may hold what only the SO could make; re-validating keeps it.
  const AttributeMap cert =
      With(CreateOk(CertTemplate()), {{CKA_TRUSTED, B(true)}});
  absl::StatusOr<AttributeMap> again = BuildObject(
      Origin::kCopy, cert, AttributeMap(), CK_UNAVAILABLE_INFORMATION);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->GetBytes(CKA_TRUSTED), B(true));
}

}  // namespace
}  // namespace accelcrypt::p11::object_test
