// SPDX-License-Identifier: Apache-2.0
// Token objects seen by two processes at once (base spec v2.40 4.4: token
// objects are "visible by all applications connected to the token"; 5.7:
// an object handle refers to the object, C_DestroyObject destroys it): when
// another process destroys a token key or changes its attributes, this
// process, still initialised and holding a handle, must not keep using what
// it read before. A destroyed key is an invalid handle (5.8.1
// CKR_KEY_HANDLE_INVALID at C_EncryptInit, 5.7 CKR_OBJECT_HANDLE_INVALID
// for the object functions); a changed attribute reads back changed, and a
// usage turned off refuses the operation (CKR_KEY_FUNCTION_NOT_PERMITTED,
// 5.8.1/5.11.1). A PIN changed by another process (5.6.9 C_SetPIN) decides
// every later login here; a login made before it stays valid, as SoftHSMv2
// and smart cards behave (the login state belongs to this application,
// 5.6). The other process is p11_conformance_helper (conformance_helper.cc).
#include <p11-kit-1/p11-kit/pkcs11.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/pkcs11/conformance/child_process.h"
#include "tests/pkcs11/conformance/conformance_fixture.h"
#include "tests/pkcs11/conformance/p11_harness.h"

namespace accelcrypt::p11test {
namespace {

using Bytes = std::vector<uint8_t>;

class CoherenceTest : public P11Test {
 protected:
  // Elsewhere runs the helper in another process on this token: `mode`
  // (destroy, set-false, set-pin) with `object` and `arg`, logged in with
  // `pin`. Its exit status (0: done).
  int Elsewhere(const std::string& mode, const std::string& object,
                const std::string& arg,
                std::string_view pin = P11Test::kUserPin) {
    return RunHelper({ModulePath(kind()), mode, std::string(kLabel),
                      std::string(pin), object, arg});
  }

  // CreateTokenAes makes a private, sensitive token AES-128 key labelled
  // `label` that may encrypt and decrypt.
  CK_RV CreateTokenAes(CK_SESSION_HANDLE h, const std::string& label,
                       CK_OBJECT_HANDLE* key) {
    Template t;
    t.Ulong(CKA_CLASS, CKO_SECRET_KEY)
        .Ulong(CKA_KEY_TYPE, CKK_AES)
        .Bool(CKA_TOKEN, true)
        .Bool(CKA_PRIVATE, true)
        .Bool(CKA_SENSITIVE, true)
        .Bool(CKA_ENCRYPT, true)
        .Bool(CKA_DECRYPT, true)
        .Str(CKA_LABEL, label)
        .Bytes(CKA_VALUE, Bytes(16, 0x5a));
    return f()->C_CreateObject(h, t.data(), t.size(), key);
  }

  CK_RV EncryptBlock(CK_SESSION_HANDLE h, CK_OBJECT_HANDLE key, Bytes* out) {
    CK_MECHANISM ecb = {CKM_AES_ECB, nullptr, 0};
    CK_RV rv = f()->C_EncryptInit(h, &ecb, key);
    if (rv != CKR_OK) return rv;
    Bytes in(16, 0x11);
    out->assign(16, 0);
    CK_ULONG len = out->size();
    return f()->C_Encrypt(h, in.data(), in.size(), out->data(), &len);
  }

  // KeyHandleInvalid is the code C_*Init gives for a key handle that no
  // longer names an object (5.8.1), or the module's documented deviation.
  CK_RV KeyHandleInvalid() const {
    return FindDeviation(kind(), "encryptinit.key_handle_invalid") != nullptr
               ? CKR_OBJECT_HANDLE_INVALID
               : CKR_KEY_HANDLE_INVALID;
  }
};

// Process B destroys the token key process A is using: A's next
// C_EncryptInit and every object function on the handle fail.
TEST_P(CoherenceTest, KeyDestroyedByAnotherProcessIsInvalidHere) {
  CK_SESSION_HANDLE h;
  ASSERT_CKR(CKR_OK, OpenUserRw(&h));
  CK_OBJECT_HANDLE key;
  ASSERT_CKR(CKR_OK, CreateTokenAes(h, "shared-key", &key));
  Bytes ct;
  // Used once here first, so whatever the module keeps for it is warm.
  ASSERT_CKR(CKR_OK, EncryptBlock(h, key, &ct));
  ASSERT_EQ(0, Elsewhere("destroy", "shared-key", "1"));

  CK_MECHANISM ecb = {CKM_AES_ECB, nullptr, 0};
  EXPECT_CKR(KeyHandleInvalid(), f()->C_EncryptInit(h, &ecb, key));
  Bytes label;
  EXPECT_CKR(CKR_OBJECT_HANDLE_INVALID,
             GetAttribute(f(), h, key, CKA_LABEL, &label));
  CK_BBOOL no = CK_FALSE;
  CK_ATTRIBUTE a = {CKA_ENCRYPT, &no, sizeof(no)};
  EXPECT_CKR(CKR_OBJECT_HANDLE_INVALID,
             f()->C_SetAttributeValue(h, key, &a, 1));
  Template copy;
  copy.Bool(CKA_TOKEN, false);
  CK_OBJECT_HANDLE copied;
  EXPECT_CKR(CKR_OBJECT_HANDLE_INVALID,
             f()->C_CopyObject(h, key, copy.data(), copy.size(), &copied));
  EXPECT_CKR(CKR_OBJECT_HANDLE_INVALID, f()->C_DestroyObject(h, key));
  Template by_label;
  by_label.Str(CKA_LABEL, "shared-key");
  std::vector<CK_OBJECT_HANDLE> found;
  ASSERT_CKR(CKR_OK, FindObjects(f(), h, by_label, &found));
  EXPECT_TRUE(found.empty());
}

// Process B sets CKA_ENCRYPT to false on the key process A encrypts with:
// A reads the new value and may no longer encrypt; decryption, still
// allowed, keeps working with the same handle.
TEST_P(CoherenceTest, EncryptTurnedOffByAnotherProcessIsRefusedHere) {
  CK_SESSION_HANDLE h;
  ASSERT_CKR(CKR_OK, OpenUserRw(&h));
  CK_OBJECT_HANDLE key;
  ASSERT_CKR(CKR_OK, CreateTokenAes(h, "revoked-key", &key));
  Bytes ct;
  ASSERT_CKR(CKR_OK, EncryptBlock(h, key, &ct));
  bool encrypt = false;
  ASSERT_CKR(CKR_OK, GetBool(f(), h, key, CKA_ENCRYPT, &encrypt));
  ASSERT_TRUE(encrypt);
  ASSERT_EQ(0,
            Elsewhere("set-false", "revoked-key", std::to_string(CKA_ENCRYPT)));

  encrypt = true;
  ASSERT_CKR(CKR_OK, GetBool(f(), h, key, CKA_ENCRYPT, &encrypt));
  EXPECT_FALSE(encrypt) << "C_GetAttributeValue returned the stale value";
  CK_MECHANISM ecb = {CKM_AES_ECB, nullptr, 0};
  EXPECT_CKR(CKR_KEY_FUNCTION_NOT_PERMITTED, f()->C_EncryptInit(h, &ecb, key));
  ASSERT_CKR(CKR_OK, f()->C_DecryptInit(h, &ecb, key));
  Bytes pt(16);
  CK_ULONG len = pt.size();
  ASSERT_CKR(CKR_OK, f()->C_Decrypt(h, ct.data(), ct.size(), pt.data(), &len));
  EXPECT_EQ(Bytes(16, 0x11), pt);
}

// Process B sets CKA_SIGN to false on the RSA private key process A signs
// with: A reads the new value and C_SignInit is refused.
TEST_P(CoherenceTest, SignTurnedOffByAnotherProcessIsRefusedHere) {
  REQUIRE_MECHANISM(CKM_RSA_PKCS_KEY_PAIR_GEN);
  REQUIRE_MECHANISM(CKM_SHA256_RSA_PKCS);
  CK_SESSION_HANDLE h;
  ASSERT_CKR(CKR_OK, OpenUserRw(&h));
  CK_ULONG bits = 2048;
  const Bytes exponent = {0x01, 0x00, 0x01};
  Template pub;
  pub.Bool(CKA_TOKEN, true)
      .Bool(CKA_VERIFY, true)
      .Str(CKA_LABEL, "sign-key-pub")
      .Ulong(CKA_MODULUS_BITS, bits)
      .Bytes(CKA_PUBLIC_EXPONENT, exponent);
  Template priv;
  priv.Bool(CKA_TOKEN, true)
      .Bool(CKA_PRIVATE, true)
      .Bool(CKA_SENSITIVE, true)
      .Bool(CKA_SIGN, true)
      .Str(CKA_LABEL, "sign-key");
  CK_MECHANISM gen = {CKM_RSA_PKCS_KEY_PAIR_GEN, nullptr, 0};
  CK_OBJECT_HANDLE pub_key, priv_key;
  ASSERT_CKR(CKR_OK, f()->C_GenerateKeyPair(h, &gen, pub.data(), pub.size(),
                                            priv.data(), priv.size(), &pub_key,
                                            &priv_key));
  CK_MECHANISM sha_rsa = {CKM_SHA256_RSA_PKCS, nullptr, 0};
  Bytes msg = {'m', 's', 'g'}, sig(256);
  CK_ULONG len = sig.size();
  ASSERT_CKR(CKR_OK, f()->C_SignInit(h, &sha_rsa, priv_key));
  ASSERT_CKR(CKR_OK, f()->C_Sign(h, msg.data(), msg.size(), sig.data(), &len));
  ASSERT_EQ(0, Elsewhere("set-false", "sign-key", std::to_string(CKA_SIGN)));

  bool sign = true;
  ASSERT_CKR(CKR_OK, GetBool(f(), h, priv_key, CKA_SIGN, &sign));
  EXPECT_FALSE(sign) << "C_GetAttributeValue returned the stale value";
  EXPECT_CKR(CKR_KEY_FUNCTION_NOT_PERMITTED,
             f()->C_SignInit(h, &sha_rsa, priv_key));
  // The public key was not touched: verification still works.
  ASSERT_CKR(CKR_OK, f()->C_VerifyInit(h, &sha_rsa, pub_key));
  EXPECT_CKR(CKR_OK, f()->C_Verify(h, msg.data(), msg.size(), sig.data(), len));
}

// Process B changes the user PIN while process A is logged in. A's login
// stays valid (its private objects stay usable, new ones stay readable to
// whoever logs in with the new PIN); once A logs out, only the new PIN
// logs in.
TEST_P(CoherenceTest, PinChangedByAnotherProcessDecidesTheNextLogin) {
  CK_SESSION_HANDLE h;
  ASSERT_CKR(CKR_OK, OpenUserRw(&h));
  CK_OBJECT_HANDLE key;
  ASSERT_CKR(CKR_OK, CreateTokenAes(h, "pin-key", &key));
  Bytes ct;
  ASSERT_CKR(CKR_OK, EncryptBlock(h, key, &ct));
  const std::string kNewPin = "new-user-pin-2222";
  ASSERT_EQ(0, Elsewhere("set-pin", kNewPin, "0"));

  CK_SESSION_INFO info;
  ASSERT_CKR(CKR_OK, f()->C_GetSessionInfo(h, &info));
  EXPECT_EQ(CKS_RW_USER_FUNCTIONS, info.state);
  Bytes ct2;
  EXPECT_CKR(CKR_OK, EncryptBlock(h, key, &ct2));
  EXPECT_EQ(ct, ct2);
  // A private object made under the login from before the change.
  Template data;
  data.Ulong(CKA_CLASS, CKO_DATA)
      .Bool(CKA_TOKEN, true)
      .Bool(CKA_PRIVATE, true)
      .Str(CKA_LABEL, "after-change-0")
      .Str(CKA_APPLICATION, "p11-conformance")
      .Bytes(CKA_VALUE,
             Bytes{'a', 'f', 't', 'e', 'r', '-', 'c', 'h', 'a', 'n', 'g',
                   'e', '-', '0', '/', 'p', 'a', 'y', 'l', 'o', 'a', 'd'});
  CK_OBJECT_HANDLE obj;
  ASSERT_CKR(CKR_OK, f()->C_CreateObject(h, data.data(), data.size(), &obj));

  ASSERT_CKR(CKR_OK, f()->C_Logout(h));
  SKIP_IF_DEVIATES("setpin.elsewhere_not_seen");
  EXPECT_CKR(CKR_PIN_INCORRECT, Login(f(), h, CKU_USER, kUserPin));
  ASSERT_CKR(CKR_OK, Login(f(), h, CKU_USER, kNewPin));
  Bytes ct3;
  CK_OBJECT_HANDLE again;
  Template by_label;
  by_label.Str(CKA_LABEL, "pin-key");
  std::vector<CK_OBJECT_HANDLE> found;
  ASSERT_CKR(CKR_OK, FindObjects(f(), h, by_label, &found));
  ASSERT_EQ(1u, found.size());
  again = found[0];
  EXPECT_CKR(CKR_OK, EncryptBlock(h, again, &ct3));
  EXPECT_EQ(ct, ct3);
  // Another process logging in with the new PIN reads what A made.
  EXPECT_EQ(0, RunHelper({ModulePath(kind()), "check", std::string(kLabel),
                          kNewPin, "after-change", "1"}));
}

ACCELCRYPT_P11_INSTANTIATE(CoherenceTest);

}  // namespace
}  // namespace accelcrypt::p11test
