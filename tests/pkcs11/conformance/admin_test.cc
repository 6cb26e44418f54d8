// SPDX-License-Identifier: Apache-2.0
// Token administration and a few more function rules of the PKCS#11 v2.40
// base spec: C_InitToken on an initialised token (5.5.7), PIN length
// ranges (5.5.8, 5.5.9), context-specific login (5.6.7), C_DigestKey
// (5.10.4), C_SeedRandom (5.15.1), CBC_PAD padding errors (5.9.2), key
// usage and read-only sessions for generated and copied objects (5.7.2,
// 5.11.1, 5.14.1).
#include <openssl/evp.h>
#include <p11-kit-1/p11-kit/pkcs11.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/pkcs11/conformance/conformance_fixture.h"
#include "tests/pkcs11/conformance/p11_harness.h"

namespace accelcrypt::p11test {
namespace {

using Bytes = std::vector<uint8_t>;

CK_UTF8CHAR* Pin(std::string_view s) {
  return reinterpret_cast<CK_UTF8CHAR*>(const_cast<char*>(s.data()));
}

class AdminTest : public P11Test {};

// 5.5.7 C_InitToken: CKR_SESSION_EXISTS while a session is open;
// CKR_PIN_INCORRECT with a wrong SO PIN on an initialised token; with the
// right one the token is re-initialised: its objects are destroyed and the
// user PIN must be set again.
TEST_P(AdminTest, ReinitializeToken) {
  CK_SESSION_HANDLE h;
  ASSERT_CKR(CKR_OK, OpenUserRw(&h));
  Template t;
  t.Ulong(CKA_CLASS, CKO_DATA)
      .Bool(CKA_TOKEN, true)
      .Bool(CKA_PRIVATE, false)
      .Str(CKA_LABEL, "doomed")
      .Bytes(CKA_VALUE, Bytes(4, 1));
  CK_OBJECT_HANDLE obj;
  ASSERT_CKR(CKR_OK, f()->C_CreateObject(h, t.data(), t.size(), &obj));
  std::vector<uint8_t> label = PaddedLabel("relabelled");
  EXPECT_CKR(CKR_SESSION_EXISTS, f()->C_InitToken(slot(), Pin(kSoPin),
                                                  kSoPin.size(), label.data()));
  ASSERT_CKR(CKR_OK, f()->C_CloseAllSessions(slot()));
  EXPECT_CKR(CKR_PIN_INCORRECT,
             f()->C_InitToken(slot(), Pin("not-the-so-pin"), 14, label.data()));
  ASSERT_CKR(CKR_OK, f()->C_InitToken(slot(), Pin(kSoPin), kSoPin.size(),
                                      label.data()));
  CK_SLOT_ID slot2;
  ASSERT_CKR(CKR_OK, FindSlotByLabel(f(), "relabelled", &slot2));
  CK_TOKEN_INFO info;
  ASSERT_CKR(CKR_OK, f()->C_GetTokenInfo(slot2, &info));
  EXPECT_TRUE(info.flags & CKF_TOKEN_INITIALIZED);
  EXPECT_FALSE(info.flags & CKF_USER_PIN_INITIALIZED);
  ASSERT_CKR(CKR_OK, OpenSession(f(), slot2, true, &h));
  EXPECT_CKR(CKR_USER_PIN_NOT_INITIALIZED, LoginUser(h));
  Template by_label;
  by_label.Str(CKA_LABEL, "doomed");
  std::vector<CK_OBJECT_HANDLE> found;
  ASSERT_CKR(CKR_OK, FindObjects(f(), h, by_label, &found));
  EXPECT_TRUE(found.empty());
}

// 5.5.8 C_InitPIN / 5.5.9 C_SetPIN: a PIN outside [ulMinPinLen,
// ulMaxPinLen] is CKR_PIN_LEN_RANGE.
TEST_P(AdminTest, PinLengthRange) {
  CK_TOKEN_INFO info;
  ASSERT_CKR(CKR_OK, f()->C_GetTokenInfo(slot(), &info));
  ASSERT_LE(info.ulMaxPinLen, 4096u);
  const std::string too_long(info.ulMaxPinLen + 1, 'x');
  CK_SESSION_HANDLE h;
  ASSERT_CKR(CKR_OK, OpenRw(&h));
  ASSERT_CKR(CKR_OK, Login(f(), h, CKU_SO, kSoPin));
  EXPECT_CKR(CKR_PIN_LEN_RANGE,
             f()->C_InitPIN(h, Pin(too_long), too_long.size()));
  ASSERT_CKR(CKR_OK, f()->C_Logout(h));
  ASSERT_CKR(CKR_OK, LoginUser(h));
  EXPECT_CKR(CKR_PIN_LEN_RANGE, f()->C_SetPIN(h, Pin(kUserPin), kUserPin.size(),
                                              Pin(too_long), too_long.size()));
  if (info.ulMinPinLen > 1) {
    const std::string too_short(info.ulMinPinLen - 1, 'y');
    EXPECT_CKR(CKR_PIN_LEN_RANGE,
               f()->C_SetPIN(h, Pin(kUserPin), kUserPin.size(), Pin(too_short),
                             too_short.size()));
  }
  // The PIN did not change.
  ASSERT_CKR(CKR_OK, f()->C_Logout(h));
  EXPECT_CKR(CKR_OK, LoginUser(h));
}

// 5.6.7: CKU_CONTEXT_SPECIFIC without an active operation is
// CKR_OPERATION_NOT_INITIALIZED.
TEST_P(AdminTest, ContextSpecificLoginWithoutOperation) {
  CK_SESSION_HANDLE h;
  ASSERT_CKR(CKR_OK, OpenUserRw(&h));
  EXPECT_CKR(CKR_OPERATION_NOT_INITIALIZED,
             Login(f(), h, CKU_CONTEXT_SPECIFIC, kUserPin));
}

// 5.10.4 C_DigestKey: the digest continues with the key's value.
TEST_P(AdminTest, DigestKey) {
  CK_SESSION_HANDLE h;
  ASSERT_CKR(CKR_OK, OpenUserRw(&h));
  Bytes key_value(32);
  for (size_t i = 0; i < key_value.size(); ++i) key_value[i] = 0xa0 + i;
  Template extra;
  extra.Bool(CKA_SENSITIVE, false).Bool(CKA_EXTRACTABLE, true);
  CK_OBJECT_HANDLE key;
  ASSERT_CKR(CKR_OK,
             CreateSecretKey(h, CKK_GENERIC_SECRET, key_value, &key, extra));
  Bytes prefix(10, 0x01), all = prefix, expect(32);
  all.insert(all.end(), key_value.begin(), key_value.end());
  unsigned int elen = 0;
  EVP_Digest(all.data(), all.size(), expect.data(), &elen, EVP_sha256(),
             nullptr);
  CK_MECHANISM sha = {CKM_SHA256, nullptr, 0};
  ASSERT_CKR(CKR_OK, f()->C_DigestInit(h, &sha));
  ASSERT_CKR(CKR_OK, f()->C_DigestUpdate(h, prefix.data(), prefix.size()));
  ASSERT_CKR(CKR_OK, f()->C_DigestKey(h, key));
  Bytes out(32);
  CK_ULONG len = out.size();
  ASSERT_CKR(CKR_OK, f()->C_DigestFinal(h, out.data(), &len));
  EXPECT_EQ(expect, out);
  // An invalid key handle.
  ASSERT_CKR(CKR_OK, f()->C_DigestInit(h, &sha));
  EXPECT_CKR(CKR_KEY_HANDLE_INVALID, f()->C_DigestKey(h, 0x7fff4242));
}

// 5.15.1 C_SeedRandom: CKR_OK or CKR_RANDOM_SEED_NOT_SUPPORTED; random
// output keeps flowing.
TEST_P(AdminTest, SeedRandom) {
  CK_SESSION_HANDLE h;
  ASSERT_CKR(CKR_OK, OpenRo(&h));
  Bytes seed(32, 0x5e);
  CK_RV rv = f()->C_SeedRandom(h, seed.data(), seed.size());
  EXPECT_TRUE(rv == CKR_OK || rv == CKR_RANDOM_SEED_NOT_SUPPORTED)
      << CkrName(rv);
  Bytes a(32, 0), b(32, 0);
  ASSERT_CKR(CKR_OK, f()->C_GenerateRandom(h, a.data(), a.size()));
  ASSERT_CKR(CKR_OK, f()->C_GenerateRandom(h, b.data(), b.size()));
  EXPECT_NE(a, b);
}

// 5.9.2 and "AES" CBC_PAD: a final block whose padding is not valid
// PKCS#7 is CKR_ENCRYPTED_DATA_INVALID, single- and multi-part.
TEST_P(AdminTest, CbcPadBadPadding) {
  CK_SESSION_HANDLE h;
  ASSERT_CKR(CKR_OK, OpenUserRw(&h));
  CK_OBJECT_HANDLE key;
  ASSERT_CKR(CKR_OK, CreateSecretKey(h, CKK_AES, Bytes(16, 0x2b), &key));
  Bytes iv(16, 0x0f), zeros(16, 0x00), ct(16);
  // CBC (no padding) of a zero block: under CBC_PAD its last byte 0x00 is
  // not a valid pad length.
  CK_MECHANISM cbc = {CKM_AES_CBC, iv.data(), iv.size()};
  CK_ULONG len = ct.size();
  ASSERT_CKR(CKR_OK, f()->C_EncryptInit(h, &cbc, key));
  ASSERT_CKR(CKR_OK, f()->C_Encrypt(h, zeros.data(), 16, ct.data(), &len));
  CK_MECHANISM pad = {CKM_AES_CBC_PAD, iv.data(), iv.size()};
  Bytes out(32);
  len = out.size();
  // The exact code is skipped only for a module in the deviation table;
  // every module must fail.
  const bool exact =
      FindDeviation(kind(), "cbcpad.bad_padding_code") == nullptr;
  ASSERT_CKR(CKR_OK, f()->C_DecryptInit(h, &pad, key));
  CK_RV rv = f()->C_Decrypt(h, ct.data(), ct.size(), out.data(), &len);
  EXPECT_NE(CKR_OK, rv);
  if (exact) {
    EXPECT_CKR(CKR_ENCRYPTED_DATA_INVALID, rv);
  }
  ASSERT_CKR(CKR_OK, f()->C_DecryptInit(h, &pad, key));
  len = out.size();
  ASSERT_CKR(CKR_OK,
             f()->C_DecryptUpdate(h, ct.data(), ct.size(), out.data(), &len));
  EXPECT_EQ(0u, len);  // the last block is held back until the final call
  len = out.size();
  rv = f()->C_DecryptFinal(h, out.data(), &len);
  EXPECT_NE(CKR_OK, rv);
  if (exact) {
    EXPECT_CKR(CKR_ENCRYPTED_DATA_INVALID, rv);
  }
}

// 5.11.1: a key without CKA_SIGN cannot start a MAC
// (CKR_KEY_FUNCTION_NOT_PERMITTED); 5.14.1 / 5.7.2: token objects cannot be
// generated or copied in a R/O session (CKR_SESSION_READ_ONLY).
TEST_P(AdminTest, KeyUsageAndReadOnlySessions) {
  CK_SESSION_HANDLE rw, ro;
  ASSERT_CKR(CKR_OK, OpenUserRw(&rw));
  ASSERT_CKR(CKR_OK, OpenRo(&ro));
  Template no_sign;
  no_sign.Bool(CKA_SIGN, false);
  CK_OBJECT_HANDLE mac_key;
  ASSERT_CKR(CKR_OK, CreateSecretKey(rw, CKK_GENERIC_SECRET, Bytes(32, 7),
                                     &mac_key, no_sign));
  CK_MECHANISM hmac = {CKM_SHA256_HMAC, nullptr, 0};
  EXPECT_CKR(CKR_KEY_FUNCTION_NOT_PERMITTED,
             f()->C_SignInit(rw, &hmac, mac_key));
  EXPECT_CKR(CKR_OK, f()->C_VerifyInit(rw, &hmac, mac_key));

  CK_MECHANISM gen = {CKM_AES_KEY_GEN, nullptr, 0};
  Template tok;
  tok.Ulong(CKA_VALUE_LEN, 16).Bool(CKA_TOKEN, true);
  CK_OBJECT_HANDLE key;
  EXPECT_CKR(CKR_SESSION_READ_ONLY,
             f()->C_GenerateKey(ro, &gen, tok.data(), tok.size(), &key));
  Template ses;
  ses.Ulong(CKA_VALUE_LEN, 16).Bool(CKA_TOKEN, false);
  ASSERT_CKR(CKR_OK,
             f()->C_GenerateKey(ro, &gen, ses.data(), ses.size(), &key));
  Template to_token;
  to_token.Bool(CKA_TOKEN, true);
  CK_OBJECT_HANDLE copy;
  EXPECT_CKR(CKR_SESSION_READ_ONLY, f()->C_CopyObject(ro, key, to_token.data(),
                                                      to_token.size(), &copy));
  EXPECT_CKR(CKR_OK, f()->C_CopyObject(rw, key, to_token.data(),
                                       to_token.size(), &copy));
  bool token = false;
  ASSERT_CKR(CKR_OK, GetBool(f(), rw, copy, CKA_TOKEN, &token));
  EXPECT_TRUE(token);
}

ACCELCRYPT_P11_INSTANTIATE(AdminTest);

}  // namespace
}  // namespace accelcrypt::p11test
