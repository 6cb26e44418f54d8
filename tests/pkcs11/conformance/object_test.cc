// SPDX-License-Identifier: Apache-2.0
// PKCS#11 v2.40 object management conformance: C_CreateObject,
// C_CopyObject, C_DestroyObject, C_GetAttributeValue, C_SetAttributeValue,
// C_FindObjects* (base spec 5.7), the object rules of chapter 4 (4.1
// creating/modifying/copying, 4.4 storage objects, 4.7-4.10 keys) and key
// generation's derived attributes (5.14.1, 4.7 CKA_LOCAL,
// CKA_KEY_GEN_MECHANISM, 4.10 CKA_ALWAYS_SENSITIVE, CKA_NEVER_EXTRACTABLE).
#include <p11-kit-1/p11-kit/pkcs11.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/pkcs11/conformance/conformance_fixture.h"
#include "tests/pkcs11/conformance/p11_harness.h"

namespace accelcrypt::p11test {
namespace {

std::vector<uint8_t> Bytes(std::string_view s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}

class ObjectTest : public P11Test {
 protected:
  void SetUp() override {
    P11Test::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_CKR(CKR_OK, OpenUserRw(&h_));
  }

  CK_RV CreateData(const std::string& label, bool token, bool priv,
                   CK_OBJECT_HANDLE* obj, CK_SESSION_HANDLE h = 0) {
    Template t;
    t.Ulong(CKA_CLASS, CKO_DATA)
        .Bool(CKA_TOKEN, token)
        .Bool(CKA_PRIVATE, priv)
        .Str(CKA_LABEL, label)
        .Str(CKA_APPLICATION, "conformance")
        .Bytes(CKA_VALUE, Bytes(label + "-value"));
    return f()->C_CreateObject(h ? h : h_, t.data(), t.size(), obj);
  }

  std::vector<CK_OBJECT_HANDLE> FindByLabel(const std::string& label,
                                            CK_SESSION_HANDLE h = 0) {
    Template t;
    t.Str(CKA_LABEL, label);
    std::vector<CK_OBJECT_HANDLE> found;
    EXPECT_CKR(CKR_OK, FindObjects(f(), h ? h : h_, t, &found));
    return found;
  }

  CK_SESSION_HANDLE h_ = 0;
};

// 5.7.1 C_CreateObject, 5.7.5/5.7.6 get/set, 5.7.7-5.7.9 find, 5.7.2 copy,
// 5.7.3 destroy.
TEST_P(ObjectTest, CreateGetSetFindCopyDestroy) {
  CK_OBJECT_HANDLE obj;
  ASSERT_CKR(CKR_OK, CreateData("obj-a", false, false, &obj));
  std::vector<uint8_t> v;
  ASSERT_CKR(CKR_OK, GetAttribute(f(), h_, obj, CKA_VALUE, &v));
  EXPECT_EQ(Bytes("obj-a-value"), v);
  CK_ULONG cls = 0;
  ASSERT_CKR(CKR_OK, GetUlong(f(), h_, obj, CKA_CLASS, &cls));
  EXPECT_EQ(CKO_DATA, cls);
  bool token = true;
  ASSERT_CKR(CKR_OK, GetBool(f(), h_, obj, CKA_TOKEN, &token));
  EXPECT_FALSE(token);

  Template label_b;
  label_b.Str(CKA_LABEL, "obj-b");
  ASSERT_CKR(CKR_OK,
             f()->C_SetAttributeValue(h_, obj, label_b.data(), label_b.size()));
  ASSERT_CKR(CKR_OK, GetAttribute(f(), h_, obj, CKA_LABEL, &v));
  EXPECT_EQ(Bytes("obj-b"), v);
  EXPECT_EQ(std::vector<CK_OBJECT_HANDLE>{obj}, FindByLabel("obj-b"));
  EXPECT_TRUE(FindByLabel("obj-a").empty());

  Template copy_t;
  copy_t.Str(CKA_LABEL, "obj-c");
  CK_OBJECT_HANDLE copy;
  ASSERT_CKR(CKR_OK,
             f()->C_CopyObject(h_, obj, copy_t.data(), copy_t.size(), &copy));
  EXPECT_NE(obj, copy);
  ASSERT_CKR(CKR_OK, GetAttribute(f(), h_, copy, CKA_VALUE, &v));
  EXPECT_EQ(Bytes("obj-a-value"), v);
  EXPECT_EQ(std::vector<CK_OBJECT_HANDLE>{copy}, FindByLabel("obj-c"));

  // Find by class and application finds both.
  Template by_app;
  by_app.Ulong(CKA_CLASS, CKO_DATA).Str(CKA_APPLICATION, "conformance");
  std::vector<CK_OBJECT_HANDLE> found;
  ASSERT_CKR(CKR_OK, FindObjects(f(), h_, by_app, &found));
  std::sort(found.begin(), found.end());
  std::vector<CK_OBJECT_HANDLE> both = {obj, copy};
  std::sort(both.begin(), both.end());
  EXPECT_EQ(both, found);

  ASSERT_CKR(CKR_OK, f()->C_DestroyObject(h_, copy));
  EXPECT_CKR(CKR_OBJECT_HANDLE_INVALID,
             GetAttribute(f(), h_, copy, CKA_LABEL, &v));
  EXPECT_CKR(CKR_OBJECT_HANDLE_INVALID, f()->C_DestroyObject(h_, copy));
  EXPECT_TRUE(FindByLabel("obj-c").empty());
}

// 5.7.7-5.7.9: a second C_FindObjectsInit while a search is active is
// CKR_OPERATION_ACTIVE; C_FindObjects without Init is
// CKR_OPERATION_NOT_INITIALIZED.
TEST_P(ObjectTest, FindStateRules) {
  CK_OBJECT_HANDLE objs[1];
  CK_ULONG n = 0;
  EXPECT_CKR(CKR_OPERATION_NOT_INITIALIZED,
             f()->C_FindObjects(h_, objs, 1, &n));
  EXPECT_CKR(CKR_OPERATION_NOT_INITIALIZED, f()->C_FindObjectsFinal(h_));
  ASSERT_CKR(CKR_OK, f()->C_FindObjectsInit(h_, nullptr, 0));
  EXPECT_CKR(CKR_OPERATION_ACTIVE, f()->C_FindObjectsInit(h_, nullptr, 0));
  EXPECT_CKR(CKR_ARGUMENTS_BAD, f()->C_FindObjects(h_, nullptr, 1, &n));
  EXPECT_CKR(CKR_ARGUMENTS_BAD, f()->C_FindObjects(h_, objs, 1, nullptr));
  EXPECT_CKR(CKR_OK, f()->C_FindObjectsFinal(h_));
}

// 5.7.5 C_GetAttributeValue: per-attribute results. An invalid attribute
// type gives CKR_ATTRIBUTE_TYPE_INVALID with ulValueLen =
// CK_UNAVAILABLE_INFORMATION, a too-small buffer CKR_BUFFER_TOO_SMALL with
// the same marker, a NULL pValue the length; the other attributes of the
// template are still processed.
TEST_P(ObjectTest, GetAttributeValueRules) {
  CK_OBJECT_HANDLE obj;
  ASSERT_CKR(CKR_OK, CreateData("attrs", false, false, &obj));
  CK_ULONG cls = 0;
  CK_ATTRIBUTE t[3] = {{CKA_LABEL, nullptr, 0},
                       {CKA_MODULUS, nullptr, 0},
                       {CKA_CLASS, &cls, sizeof(cls)}};
  EXPECT_CKR(CKR_ATTRIBUTE_TYPE_INVALID,
             f()->C_GetAttributeValue(h_, obj, t, 3));
  EXPECT_EQ(5u, t[0].ulValueLen);
  EXPECT_EQ(CK_UNAVAILABLE_INFORMATION, t[1].ulValueLen);
  EXPECT_EQ(CKO_DATA, cls);

  CK_BYTE small[2];
  CK_ATTRIBUTE s[2] = {{CKA_VALUE, small, sizeof(small)},
                       {CKA_CLASS, &cls, sizeof(cls)}};
  cls = 0;
  EXPECT_CKR(CKR_BUFFER_TOO_SMALL, f()->C_GetAttributeValue(h_, obj, s, 2));
  EXPECT_EQ(CK_UNAVAILABLE_INFORMATION, s[0].ulValueLen);
  EXPECT_EQ(CKO_DATA, cls);

  EXPECT_CKR(CKR_ARGUMENTS_BAD, f()->C_GetAttributeValue(h_, obj, nullptr, 1));
  // 5.1.6: an unknown object handle.
  EXPECT_CKR(CKR_OBJECT_HANDLE_INVALID,
             f()->C_GetAttributeValue(h_, 0x7fff4242, t, 1));
}

// 4.10 secret key objects, 5.7.5: CKA_VALUE of a sensitive or unextractable
// key is CKR_ATTRIBUTE_SENSITIVE with ulValueLen =
// CK_UNAVAILABLE_INFORMATION; its other attributes stay readable.
TEST_P(ObjectTest, SensitiveAndUnextractableValues) {
  const std::vector<uint8_t> kKey(16, 0x5a);
  for (int which = 0; which < 2; ++which) {
    Template extra;
    if (which == 0) {
      extra.Bool(CKA_SENSITIVE, true).Bool(CKA_EXTRACTABLE, true);
    } else {
      extra.Bool(CKA_SENSITIVE, false).Bool(CKA_EXTRACTABLE, false);
    }
    CK_OBJECT_HANDLE key;
    ASSERT_CKR(CKR_OK, CreateSecretKey(h_, CKK_AES, kKey, &key, extra));
    CK_BYTE buf[32];
    CK_ULONG kt = 0;
    CK_ATTRIBUTE t[2] = {{CKA_VALUE, buf, sizeof(buf)},
                         {CKA_KEY_TYPE, &kt, sizeof(kt)}};
    EXPECT_CKR(CKR_ATTRIBUTE_SENSITIVE, f()->C_GetAttributeValue(h_, key, t, 2))
        << (which == 0 ? "sensitive" : "unextractable");
    EXPECT_EQ(CK_UNAVAILABLE_INFORMATION, t[0].ulValueLen);
    EXPECT_EQ(CKK_AES, kt);
  }
  // A non-sensitive extractable key reveals its value.
  Template open;
  open.Bool(CKA_SENSITIVE, false).Bool(CKA_EXTRACTABLE, true);
  CK_OBJECT_HANDLE key;
  ASSERT_CKR(CKR_OK, CreateSecretKey(h_, CKK_AES, kKey, &key, open));
  std::vector<uint8_t> v;
  ASSERT_CKR(CKR_OK, GetAttribute(f(), h_, key, CKA_VALUE, &v));
  EXPECT_EQ(kKey, v);
}

// 4.10 table footnotes: CKA_SENSITIVE can only be changed to CK_TRUE,
// CKA_EXTRACTABLE only to CK_FALSE (CKR_ATTRIBUTE_READ_ONLY otherwise, 4.1.2);
// CKA_CLASS is never modifiable. 4.10: CKA_ALWAYS_SENSITIVE stays false for
// a key that was not sensitive from the start.
TEST_P(ObjectTest, OneWayKeyAttributes) {
  Template t0;
  t0.Bool(CKA_SENSITIVE, false).Bool(CKA_EXTRACTABLE, true);
  CK_OBJECT_HANDLE key;
  ASSERT_CKR(CKR_OK, CreateSecretKey(h_, CKK_AES, std::vector<uint8_t>(16, 1),
                                     &key, t0));
  Template to_true;
  to_true.Bool(CKA_SENSITIVE, true);
  ASSERT_CKR(CKR_OK,
             f()->C_SetAttributeValue(h_, key, to_true.data(), to_true.size()));
  Template back;
  back.Bool(CKA_SENSITIVE, false);
  EXPECT_CKR(CKR_ATTRIBUTE_READ_ONLY,
             f()->C_SetAttributeValue(h_, key, back.data(), back.size()));
  bool b = true;
  ASSERT_CKR(CKR_OK, GetBool(f(), h_, key, CKA_SENSITIVE, &b));
  EXPECT_TRUE(b);
  ASSERT_CKR(CKR_OK, GetBool(f(), h_, key, CKA_ALWAYS_SENSITIVE, &b));
  EXPECT_FALSE(b);

  Template unext;
  unext.Bool(CKA_EXTRACTABLE, false);
  ASSERT_CKR(CKR_OK,
             f()->C_SetAttributeValue(h_, key, unext.data(), unext.size()));
  Template ext;
  ext.Bool(CKA_EXTRACTABLE, true);
  EXPECT_CKR(CKR_ATTRIBUTE_READ_ONLY,
             f()->C_SetAttributeValue(h_, key, ext.data(), ext.size()));
  ASSERT_CKR(CKR_OK, GetBool(f(), h_, key, CKA_NEVER_EXTRACTABLE, &b));
  EXPECT_FALSE(b);

  Template cls;
  cls.Ulong(CKA_CLASS, CKO_DATA);
  EXPECT_CKR(CKR_ATTRIBUTE_READ_ONLY,
             f()->C_SetAttributeValue(h_, key, cls.data(), cls.size()));
}

// 5.7.2 C_CopyObject: the copy template obeys the same modification rules
// (CKA_SENSITIVE cannot go back to CK_FALSE).
TEST_P(ObjectTest, CopyCannotUnsensitise) {
  Template t0;
  t0.Bool(CKA_SENSITIVE, true);
  CK_OBJECT_HANDLE key;
  ASSERT_CKR(CKR_OK, CreateSecretKey(h_, CKK_AES, std::vector<uint8_t>(16, 2),
                                     &key, t0));
  Template c;
  c.Bool(CKA_SENSITIVE, false);
  CK_OBJECT_HANDLE copy;
  EXPECT_CKR(CKR_ATTRIBUTE_READ_ONLY,
             f()->C_CopyObject(h_, key, c.data(), c.size(), &copy));
}

// 4.1.1 / 5.7.1: a template missing a required attribute is
// CKR_TEMPLATE_INCOMPLETE.
TEST_P(ObjectTest, TemplateIncomplete) {
  CK_OBJECT_HANDLE obj;
  Template no_value;
  no_value.Ulong(CKA_CLASS, CKO_SECRET_KEY)
      .Ulong(CKA_KEY_TYPE, CKK_AES)
      .Bool(CKA_TOKEN, false);
  EXPECT_CKR(CKR_TEMPLATE_INCOMPLETE,
             f()->C_CreateObject(h_, no_value.data(), no_value.size(), &obj));
  Template no_class;
  no_class.Ulong(CKA_KEY_TYPE, CKK_AES)
      .Bool(CKA_TOKEN, false)
      .Bytes(CKA_VALUE, std::vector<uint8_t>(16, 3));
  EXPECT_CKR(CKR_TEMPLATE_INCOMPLETE,
             f()->C_CreateObject(h_, no_class.data(), no_class.size(), &obj));
  // 5.14.1: C_GenerateKey(CKM_AES_KEY_GEN) needs CKA_VALUE_LEN.
  CK_MECHANISM gen = {CKM_AES_KEY_GEN, nullptr, 0};
  Template no_len;
  no_len.Bool(CKA_TOKEN, false);
  EXPECT_CKR(CKR_TEMPLATE_INCOMPLETE,
             f()->C_GenerateKey(h_, &gen, no_len.data(), no_len.size(), &obj));
}

// 4.1.1: values inconsistent with what the creating function contributes
// are CKR_TEMPLATE_INCONSISTENT (an AES key generator asked for an RSA key
// type).
TEST_P(ObjectTest, TemplateInconsistent) {
  CK_MECHANISM gen = {CKM_AES_KEY_GEN, nullptr, 0};
  Template t;
  t.Ulong(CKA_KEY_TYPE, CKK_RSA)
      .Ulong(CKA_VALUE_LEN, 16)
      .Bool(CKA_TOKEN, false);
  CK_OBJECT_HANDLE obj;
  EXPECT_CKR(CKR_TEMPLATE_INCONSISTENT,
             f()->C_GenerateKey(h_, &gen, t.data(), t.size(), &obj));
}

// 4.1.1: "If the supplied template specifies a value for an invalid
// attribute, then the attempt should fail with the error code
// CKR_ATTRIBUTE_TYPE_INVALID. An attribute is valid if it is either one of
// the attributes described in the Cryptoki specification or an additional
// vendor-specific attribute supported by the library and token." So an
// unknown vendor attribute is CKR_ATTRIBUTE_TYPE_INVALID, while a
// spec-defined attribute the class does not have (CKA_MODULUS on a data
// object) is a valid attribute whose value cannot be satisfied:
// CKR_TEMPLATE_INCONSISTENT by the same section's definition, and
// CKR_ATTRIBUTE_TYPE_INVALID is the common reading; either is accepted,
// creation must fail.
TEST_P(ObjectTest, AttributeTypeInvalid) {
  CK_OBJECT_HANDLE obj;
  Template t;
  t.Ulong(CKA_CLASS, CKO_DATA)
      .Bool(CKA_TOKEN, false)
      .Bytes(CKA_MODULUS, std::vector<uint8_t>(8, 1));
  CK_RV rv = f()->C_CreateObject(h_, t.data(), t.size(), &obj);
  EXPECT_TRUE(rv == CKR_ATTRIBUTE_TYPE_INVALID ||
              rv == CKR_TEMPLATE_INCONSISTENT)
      << CkrName(rv);
  Template u;
  u.Ulong(CKA_CLASS, CKO_DATA)
      .Bool(CKA_TOKEN, false)
      .Bytes(CKA_VENDOR_DEFINED | 0x0acce1, std::vector<uint8_t>(4, 1));
  EXPECT_CKR(CKR_ATTRIBUTE_TYPE_INVALID,
             f()->C_CreateObject(h_, u.data(), u.size(), &obj));
}

// 4.1.1: "If the supplied template specifies an invalid value for a valid
// attribute, then the attempt should fail with the error code
// CKR_ATTRIBUTE_VALUE_INVALID" — here values of the wrong length for their
// type (3.x: CK_BBOOL is one byte, CK_OBJECT_CLASS a CK_ULONG).
TEST_P(ObjectTest, WrongTemplateLengths) {
  SKIP_IF_DEVIATES("create.wrong_lengths");
  CK_OBJECT_HANDLE obj;
  CK_ULONG data = CKO_DATA;
  Template short_class;
  short_class.Raw(CKA_CLASS, &data, 1).Bool(CKA_TOKEN, false);
  EXPECT_CKR(
      CKR_ATTRIBUTE_VALUE_INVALID,
      f()->C_CreateObject(h_, short_class.data(), short_class.size(), &obj));
  CK_ULONG four = 0;
  Template long_bool;
  long_bool.Ulong(CKA_CLASS, CKO_DATA).Raw(CKA_TOKEN, &four, 4);
  EXPECT_CKR(CKR_ATTRIBUTE_VALUE_INVALID,
             f()->C_CreateObject(h_, long_bool.data(), long_bool.size(), &obj));
}

// 5.7.1: NULL template with a non-zero count, NULL phObject.
TEST_P(ObjectTest, CreateNullArguments) {
  CK_OBJECT_HANDLE obj;
  EXPECT_CKR(CKR_ARGUMENTS_BAD, f()->C_CreateObject(h_, nullptr, 2, &obj));
  Template t;
  t.Ulong(CKA_CLASS, CKO_DATA).Bool(CKA_TOKEN, false);
  EXPECT_CKR(CKR_ARGUMENTS_BAD,
             f()->C_CreateObject(h_, t.data(), t.size(), nullptr));
}

// 5.7.1: "Only session objects can be created during a read-only session"
// (CKR_SESSION_READ_ONLY); "Only public objects can be created unless the
// normal user is logged in" (CKR_USER_NOT_LOGGED_IN). 5.7.3 likewise for
// destroying a token object.
TEST_P(ObjectTest, SessionAndLoginRulesForCreation) {
  CK_SESSION_HANDLE ro;
  ASSERT_CKR(CKR_OK, OpenRo(&ro));
  CK_OBJECT_HANDLE obj;
  EXPECT_CKR(CKR_SESSION_READ_ONLY,
             CreateData("ro-token", true, false, &obj, ro));
  EXPECT_CKR(CKR_OK, CreateData("ro-session", false, false, &obj, ro));
  CK_OBJECT_HANDLE tok;
  ASSERT_CKR(CKR_OK, CreateData("rw-token", true, false, &tok));
  EXPECT_CKR(CKR_SESSION_READ_ONLY, f()->C_DestroyObject(ro, tok));
  Template lbl;
  lbl.Str(CKA_LABEL, "renamed");
  EXPECT_CKR(CKR_SESSION_READ_ONLY,
             f()->C_SetAttributeValue(ro, tok, lbl.data(), lbl.size()));
  ASSERT_CKR(CKR_OK, f()->C_Logout(h_));
  EXPECT_CKR(CKR_USER_NOT_LOGGED_IN, CreateData("priv", false, true, &obj));
  EXPECT_CKR(CKR_OK, CreateData("pub", false, false, &obj));
}

// 4.4 CKA_PRIVATE: private objects are invisible until the user logs in;
// 5.6.2 session objects die with their session.
TEST_P(ObjectTest, PrivateObjectsHiddenBeforeLogin) {
  CK_OBJECT_HANDLE priv_tok, pub_tok, priv_ses;
  ASSERT_CKR(CKR_OK, CreateData("hidden-tok", true, true, &priv_tok));
  ASSERT_CKR(CKR_OK, CreateData("shown-tok", true, false, &pub_tok));
  ASSERT_CKR(CKR_OK, CreateData("hidden-ses", false, true, &priv_ses));
  ASSERT_CKR(CKR_OK, f()->C_Logout(h_));
  EXPECT_TRUE(FindByLabel("hidden-tok").empty());
  EXPECT_TRUE(FindByLabel("hidden-ses").empty());
  EXPECT_EQ(std::vector<CK_OBJECT_HANDLE>{pub_tok}, FindByLabel("shown-tok"));
  Template all;
  all.Ulong(CKA_CLASS, CKO_DATA);
  std::vector<CK_OBJECT_HANDLE> found;
  ASSERT_CKR(CKR_OK, FindObjects(f(), h_, all, &found));
  EXPECT_EQ(std::vector<CK_OBJECT_HANDLE>{pub_tok}, found);
  std::vector<uint8_t> v;
  EXPECT_NE(CKR_OK, GetAttribute(f(), h_, priv_tok, CKA_VALUE, &v));
  ASSERT_CKR(CKR_OK, LoginUser(h_));
  EXPECT_EQ(1u, FindByLabel("hidden-tok").size());
  // Closing the session destroys its session objects, not token objects.
  CK_SESSION_HANDLE other;
  ASSERT_CKR(CKR_OK, OpenRw(&other));
  ASSERT_CKR(CKR_OK, f()->C_CloseSession(h_));
  EXPECT_TRUE(FindByLabel("hidden-ses", other).empty());
  // The login state belongs to the application, not the closed session.
  h_ = other;
  EXPECT_EQ(1u, FindByLabel("hidden-tok").size());
}

// 5.6.8 C_Logout: "any of the application's handles to private objects
// become invalid (even if a user is later logged back into the token, those
// handles remain invalid). In addition, all private session objects from
// sessions belonging to the application are destroyed."
TEST_P(ObjectTest, LogoutInvalidatesPrivateHandles) {
  CK_OBJECT_HANDLE priv_tok, priv_ses, pub_ses;
  ASSERT_CKR(CKR_OK, CreateData("p-tok", true, true, &priv_tok));
  ASSERT_CKR(CKR_OK, CreateData("p-ses", false, true, &priv_ses));
  ASSERT_CKR(CKR_OK, CreateData("pub-ses", false, false, &pub_ses));
  ASSERT_CKR(CKR_OK, f()->C_Logout(h_));
  ASSERT_CKR(CKR_OK, LoginUser(h_));
  std::vector<uint8_t> v;
  EXPECT_CKR(CKR_OBJECT_HANDLE_INVALID,
             GetAttribute(f(), h_, priv_tok, CKA_LABEL, &v));
  EXPECT_CKR(CKR_OBJECT_HANDLE_INVALID,
             GetAttribute(f(), h_, priv_ses, CKA_LABEL, &v));
  EXPECT_TRUE(FindByLabel("p-ses").empty());
  // The token object itself survives, under a new handle; public session
  // objects are untouched.
  EXPECT_EQ(1u, FindByLabel("p-tok").size());
  EXPECT_CKR(CKR_OK, GetAttribute(f(), h_, pub_ses, CKA_LABEL, &v));
}

// Object handles belong to the application: a session object made in one
// session is usable from another session of the same application (4.4:
// session objects are visible to the application that created them).
TEST_P(ObjectTest, HandlesSharedAcrossSessions) {
  CK_OBJECT_HANDLE obj;
  ASSERT_CKR(CKR_OK, CreateData("shared", false, false, &obj));
  CK_SESSION_HANDLE other;
  ASSERT_CKR(CKR_OK, OpenRo(&other));
  std::vector<uint8_t> v;
  ASSERT_CKR(CKR_OK, GetAttribute(f(), other, obj, CKA_VALUE, &v));
  EXPECT_EQ(Bytes("shared-value"), v);
  EXPECT_EQ(std::vector<CK_OBJECT_HANDLE>{obj}, FindByLabel("shared", other));
}

// 5.8.1: a key handle that is not a valid key is CKR_KEY_HANDLE_INVALID,
// while object functions report CKR_OBJECT_HANDLE_INVALID (5.1 return
// values); a key without CKA_ENCRYPT is CKR_KEY_FUNCTION_NOT_PERMITTED.
TEST_P(ObjectTest, KeyVersusObjectHandleErrors) {
  SKIP_IF_DEVIATES("encryptinit.key_handle_invalid");
  CK_MECHANISM ecb = {CKM_AES_ECB, nullptr, 0};
  EXPECT_CKR(CKR_KEY_HANDLE_INVALID, f()->C_EncryptInit(h_, &ecb, 0x7fff4242));
  EXPECT_CKR(CKR_OBJECT_HANDLE_INVALID, f()->C_DestroyObject(h_, 0x7fff4242));
  CK_OBJECT_HANDLE key;
  ASSERT_CKR(CKR_OK,
             CreateSecretKey(h_, CKK_AES, std::vector<uint8_t>(16, 4), &key));
  ASSERT_CKR(CKR_OK, f()->C_DestroyObject(h_, key));
  EXPECT_CKR(CKR_KEY_HANDLE_INVALID, f()->C_EncryptInit(h_, &ecb, key));
  Template no_enc;
  no_enc.Bool(CKA_ENCRYPT, false);
  ASSERT_CKR(CKR_OK, CreateSecretKey(h_, CKK_AES, std::vector<uint8_t>(16, 4),
                                     &key, no_enc));
  EXPECT_CKR(CKR_KEY_FUNCTION_NOT_PERMITTED, f()->C_EncryptInit(h_, &ecb, key));
  EXPECT_CKR(CKR_OK, f()->C_DecryptInit(h_, &ecb, key));
}

// 5.14.1 C_GenerateKey and the derived attributes: 4.7 CKA_LOCAL true and
// CKA_KEY_GEN_MECHANISM = the mechanism for generated keys; 4.10
// CKA_ALWAYS_SENSITIVE / CKA_NEVER_EXTRACTABLE from the initial values.
// For C_CreateObject keys CKA_LOCAL is false and CKA_KEY_GEN_MECHANISM is
// CK_UNAVAILABLE_INFORMATION.
TEST_P(ObjectTest, GeneratedKeyDerivedAttributes) {
  CK_MECHANISM gen = {CKM_AES_KEY_GEN, nullptr, 0};
  Template t;
  t.Ulong(CKA_VALUE_LEN, 32)
      .Bool(CKA_TOKEN, false)
      .Bool(CKA_SENSITIVE, true)
      .Bool(CKA_EXTRACTABLE, false)
      .Bool(CKA_ENCRYPT, true)
      .Bool(CKA_DECRYPT, true);
  CK_OBJECT_HANDLE key;
  ASSERT_CKR(CKR_OK, f()->C_GenerateKey(h_, &gen, t.data(), t.size(), &key));
  bool b = false;
  ASSERT_CKR(CKR_OK, GetBool(f(), h_, key, CKA_LOCAL, &b));
  EXPECT_TRUE(b);
  ASSERT_CKR(CKR_OK, GetBool(f(), h_, key, CKA_ALWAYS_SENSITIVE, &b));
  EXPECT_TRUE(b);
  ASSERT_CKR(CKR_OK, GetBool(f(), h_, key, CKA_NEVER_EXTRACTABLE, &b));
  EXPECT_TRUE(b);
  CK_ULONG u = 0;
  ASSERT_CKR(CKR_OK, GetUlong(f(), h_, key, CKA_KEY_GEN_MECHANISM, &u));
  EXPECT_EQ(CKM_AES_KEY_GEN, u);
  ASSERT_CKR(CKR_OK, GetUlong(f(), h_, key, CKA_VALUE_LEN, &u));
  EXPECT_EQ(32u, u);
  ASSERT_CKR(CKR_OK, GetUlong(f(), h_, key, CKA_KEY_TYPE, &u));
  EXPECT_EQ(CKK_AES, u);
  ASSERT_CKR(CKR_OK, GetUlong(f(), h_, key, CKA_CLASS, &u));
  EXPECT_EQ(CKO_SECRET_KEY, u);

  // An imported key.
  Template imp;
  imp.Bool(CKA_SENSITIVE, true).Bool(CKA_EXTRACTABLE, false);
  CK_OBJECT_HANDLE created;
  ASSERT_CKR(CKR_OK, CreateSecretKey(h_, CKK_AES, std::vector<uint8_t>(16, 6),
                                     &created, imp));
  ASSERT_CKR(CKR_OK, GetBool(f(), h_, created, CKA_LOCAL, &b));
  EXPECT_FALSE(b);
  ASSERT_CKR(CKR_OK, GetUlong(f(), h_, created, CKA_KEY_GEN_MECHANISM, &u));
  EXPECT_EQ(CK_UNAVAILABLE_INFORMATION, u);
}

// Current mechanisms "AES" (AES secret key objects): CKA_VALUE is 16, 24
// or 32 bytes; C_GenerateKey with another CKA_VALUE_LEN is
// CKR_KEY_SIZE_RANGE or CKR_ATTRIBUTE_VALUE_INVALID (4.1.1).
TEST_P(ObjectTest, AesKeyLengthChecked) {
  CK_MECHANISM gen = {CKM_AES_KEY_GEN, nullptr, 0};
  Template t;
  t.Ulong(CKA_VALUE_LEN, 17).Bool(CKA_TOKEN, false);
  CK_OBJECT_HANDLE key;
  CK_RV rv = f()->C_GenerateKey(h_, &gen, t.data(), t.size(), &key);
  EXPECT_TRUE(rv == CKR_KEY_SIZE_RANGE || rv == CKR_ATTRIBUTE_VALUE_INVALID)
      << CkrName(rv);
}

ACCELCRYPT_P11_INSTANTIATE(ObjectTest);

}  // namespace
}  // namespace accelcrypt::p11test
