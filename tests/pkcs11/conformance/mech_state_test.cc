// SPDX-License-Identifier: Apache-2.0
// Symmetric mechanisms, operation-state rules and bad parameters: base spec
// v2.40 5.2 (variable-length output, the two-call convention), 5.6.5/5.6.6
// (operation state), 5.8-5.12 (errors that end an operation, single-part
// after update, an active operation, NULL arguments; every failed call and
// a multi-part call after a size query: mech_end_test.cc); the AES, "AES
// with Counter" and "GCM and CCM" parameter checks.
// Fixture and helpers: mech_fixture.h.
#include <openssl/evp.h>
#include <p11-kit-1/p11-kit/pkcs11.h>

#include "gtest/gtest.h"
#include "tests/pkcs11/conformance/conformance_fixture.h"
#include "tests/pkcs11/conformance/mech_fixture.h"
#include "tests/pkcs11/conformance/p11_harness.h"

namespace accelcrypt::p11test::mech {
namespace {

// 5.2: NULL output returns the size (CKR_OK); a too-small buffer returns
// CKR_BUFFER_TOO_SMALL with the size, and the operation continues (5.8.2,
// 5.10.2, 5.11.2: "always terminates ... unless it returns
// CKR_BUFFER_TOO_SMALL or is a successful call ... to determine the length").
TEST_P(MechTest, TwoCallConventionKeepsOperation) {
  Bytes msg(100, 0x42), expect(32);
  unsigned int elen = 0;
  EVP_Digest(msg.data(), msg.size(), expect.data(), &elen, EVP_sha256(),
             nullptr);
  CK_MECHANISM sha = {CKM_SHA256, nullptr, 0};
  ASSERT_CKR(CKR_OK, f()->C_DigestInit(h_, &sha));
  CK_ULONG len = 0;
  ASSERT_CKR(CKR_OK, f()->C_Digest(h_, msg.data(), msg.size(), nullptr, &len));
  EXPECT_EQ(32u, len);
  Bytes out(32);
  len = 31;
  EXPECT_CKR(CKR_BUFFER_TOO_SMALL,
             f()->C_Digest(h_, msg.data(), msg.size(), out.data(), &len));
  EXPECT_EQ(32u, len);
  ASSERT_CKR(CKR_OK,
             f()->C_Digest(h_, msg.data(), msg.size(), out.data(), &len));
  EXPECT_EQ(expect, out);
  // The operation is over now.
  EXPECT_CKR(CKR_OPERATION_NOT_INITIALIZED,
             f()->C_Digest(h_, msg.data(), msg.size(), out.data(), &len));

  // Same for C_DigestFinal.
  ASSERT_CKR(CKR_OK, f()->C_DigestInit(h_, &sha));
  ASSERT_CKR(CKR_OK, f()->C_DigestUpdate(h_, msg.data(), msg.size()));
  len = 0;
  ASSERT_CKR(CKR_OK, f()->C_DigestFinal(h_, nullptr, &len));
  EXPECT_EQ(32u, len);
  len = 1;
  EXPECT_CKR(CKR_BUFFER_TOO_SMALL, f()->C_DigestFinal(h_, out.data(), &len));
  EXPECT_EQ(32u, len);
  ASSERT_CKR(CKR_OK, f()->C_DigestFinal(h_, out.data(), &len));
  EXPECT_EQ(expect, out);

  // And C_Encrypt.
  CK_OBJECT_HANDLE k;
  ASSERT_CKR(CKR_OK, AesKey(Bytes(16, 9), &k));
  CK_MECHANISM ecb = {CKM_AES_ECB, nullptr, 0};
  Bytes block(32, 1), ct(32);
  ASSERT_CKR(CKR_OK, f()->C_EncryptInit(h_, &ecb, k));
  len = 0;
  ASSERT_CKR(CKR_OK,
             f()->C_Encrypt(h_, block.data(), block.size(), nullptr, &len));
  EXPECT_GE(len, 32u);
  len = 16;
  EXPECT_CKR(CKR_BUFFER_TOO_SMALL,
             f()->C_Encrypt(h_, block.data(), block.size(), ct.data(), &len));
  EXPECT_EQ(32u, len);
  ASSERT_CKR(CKR_OK,
             f()->C_Encrypt(h_, block.data(), block.size(), ct.data(), &len));
  EXPECT_EQ(32u, len);
  EXPECT_EQ(Bytes(ct.begin(), ct.begin() + 16),
            Bytes(ct.begin() + 16, ct.end()));
}

// 5.8.2 / 5.9.2 / 5.12.2: a call that fails (other than
// CKR_BUFFER_TOO_SMALL) terminates the operation:
// CKR_OPERATION_NOT_INITIALIZED afterwards.
TEST_P(MechTest, ErrorTerminatesOperation) {
  CK_OBJECT_HANDLE k;
  ASSERT_CKR(CKR_OK, AesKey(Bytes(16, 9), &k));
  CK_MECHANISM ecb = {CKM_AES_ECB, nullptr, 0};
  Bytes odd(15, 1), block(16, 1), out(64);
  CK_ULONG len = out.size();
  ASSERT_CKR(CKR_OK, f()->C_EncryptInit(h_, &ecb, k));
  // "AES": ECB input must be a multiple of the block size.
  EXPECT_CKR(CKR_DATA_LEN_RANGE,
             f()->C_Encrypt(h_, odd.data(), odd.size(), out.data(), &len));
  len = out.size();
  EXPECT_CKR(CKR_OPERATION_NOT_INITIALIZED,
             f()->C_Encrypt(h_, block.data(), block.size(), out.data(), &len));
  ASSERT_CKR(CKR_OK, f()->C_DecryptInit(h_, &ecb, k));
  len = out.size();
  EXPECT_CKR(CKR_ENCRYPTED_DATA_LEN_RANGE,
             f()->C_Decrypt(h_, odd.data(), odd.size(), out.data(), &len));
  len = out.size();
  EXPECT_CKR(CKR_OPERATION_NOT_INITIALIZED,
             f()->C_Decrypt(h_, block.data(), block.size(), out.data(), &len));
  // A failed verification ends the verify operation.
  CK_OBJECT_HANDLE mk;
  ASSERT_CKR(CKR_OK,
             CreateSecretKey(h_, CKK_GENERIC_SECRET, Bytes(32, 3), &mk));
  CK_MECHANISM hmac = {CKM_SHA256_HMAC, nullptr, 0};
  Bytes mac(32, 0);
  ASSERT_CKR(CKR_OK, f()->C_VerifyInit(h_, &hmac, mk));
  EXPECT_CKR(
      CKR_SIGNATURE_INVALID,
      f()->C_Verify(h_, block.data(), block.size(), mac.data(), mac.size()));
  EXPECT_CKR(
      CKR_OPERATION_NOT_INITIALIZED,
      f()->C_Verify(h_, block.data(), block.size(), mac.data(), mac.size()));
  // Operations never started.
  len = out.size();
  EXPECT_CKR(
      CKR_OPERATION_NOT_INITIALIZED,
      f()->C_EncryptUpdate(h_, block.data(), block.size(), out.data(), &len));
  EXPECT_CKR(CKR_OPERATION_NOT_INITIALIZED,
             f()->C_DigestUpdate(h_, block.data(), block.size()));
  len = out.size();
  EXPECT_CKR(CKR_OPERATION_NOT_INITIALIZED,
             f()->C_SignFinal(h_, out.data(), &len));
}

// 5.10.2: "C_Digest cannot be used to terminate a multi-part operation,
// and must be called after C_DigestInit without intervening C_DigestUpdate
// calls"; 5.8.2 likewise for C_Encrypt after C_EncryptUpdate. The spec
// names no code: any error, never a result. A failed C_Digest / C_Encrypt
// "always terminates the active ... operation" (5.10.2, 5.8.2): the
// C_*Final that follows is CKR_OPERATION_NOT_INITIALIZED.
TEST_P(MechTest, SinglePartAfterUpdateRefused) {
  SKIP_IF_DEVIATES("singlepart.after_update");
  Bytes msg(32, 5), out(64);
  CK_MECHANISM sha = {CKM_SHA256, nullptr, 0};
  ASSERT_CKR(CKR_OK, f()->C_DigestInit(h_, &sha));
  ASSERT_CKR(CKR_OK, f()->C_DigestUpdate(h_, msg.data(), msg.size()));
  CK_ULONG len = out.size();
  CK_RV rv = f()->C_Digest(h_, msg.data(), msg.size(), out.data(), &len);
  EXPECT_NE(CKR_OK, rv);
  EXPECT_NE(CKR_BUFFER_TOO_SMALL, rv);
  len = out.size();
  EXPECT_CKR(CKR_OPERATION_NOT_INITIALIZED,
             f()->C_DigestFinal(h_, out.data(), &len));

  CK_OBJECT_HANDLE k;
  ASSERT_CKR(CKR_OK, AesKey(Bytes(16, 9), &k));
  CK_MECHANISM ecb = {CKM_AES_ECB, nullptr, 0};
  CK_SESSION_HANDLE h2;
  ASSERT_CKR(CKR_OK, OpenRo(&h2));
  ASSERT_CKR(CKR_OK, f()->C_EncryptInit(h2, &ecb, k));
  len = out.size();
  ASSERT_CKR(CKR_OK,
             f()->C_EncryptUpdate(h2, msg.data(), 16, out.data(), &len));
  len = out.size();
  rv = f()->C_Encrypt(h2, msg.data(), 16, out.data(), &len);
  EXPECT_NE(CKR_OK, rv);
  EXPECT_NE(CKR_BUFFER_TOO_SMALL, rv);
  len = out.size();
  EXPECT_CKR(CKR_OPERATION_NOT_INITIALIZED,
             f()->C_EncryptFinal(h2, out.data(), &len));
}

// "AES" (AES-CBC: "It has a parameter, a 16-byte initialization vector"):
// a wrong IV is CKR_MECHANISM_PARAM_INVALID (5.1.6); after a refused init
// no operation is active.
TEST_P(MechTest, BadCbcIvIsMechanismParamInvalid) {
  SKIP_IF_DEVIATES("cbc.bad_iv_code");
  CK_OBJECT_HANDLE k;
  ASSERT_CKR(CKR_OK, AesKey(Bytes(16, 9), &k));
  Bytes iv8(8, 0), iv16(16, 0);
  CK_MECHANISM cbc = {CKM_AES_CBC, iv8.data(), iv8.size()};
  EXPECT_CKR(CKR_MECHANISM_PARAM_INVALID, f()->C_EncryptInit(h_, &cbc, k));
  EXPECT_CKR(CKR_MECHANISM_PARAM_INVALID, f()->C_DecryptInit(h_, &cbc, k));
  CK_MECHANISM nul = {CKM_AES_CBC, nullptr, 0};
  EXPECT_CKR(CKR_MECHANISM_PARAM_INVALID, f()->C_EncryptInit(h_, &nul, k));
  CK_MECHANISM good = {CKM_AES_CBC, iv16.data(), iv16.size()};
  EXPECT_CKR(CKR_OK, f()->C_EncryptInit(h_, &good, k));
}

// "AES with Counter", CK_AES_CTR_PARAMS: "0 < ulCounterBits <= 128. For any
// values outside this range the mechanism shall return
// CKR_MECHANISM_PARAM_INVALID."
TEST_P(MechTest, BadCtrCounterBits) {
  REQUIRE_MECHANISM(CKM_AES_CTR);
  CK_OBJECT_HANDLE k;
  ASSERT_CKR(CKR_OK, AesKey(Bytes(16, 9), &k));
  CK_AES_CTR_PARAMS ctr;
  std::memset(&ctr, 0, sizeof(ctr));
  CK_MECHANISM m = {CKM_AES_CTR, &ctr, sizeof(ctr)};
  ctr.ulCounterBits = 0;
  EXPECT_CKR(CKR_MECHANISM_PARAM_INVALID, f()->C_EncryptInit(h_, &m, k));
  ctr.ulCounterBits = 129;
  EXPECT_CKR(CKR_MECHANISM_PARAM_INVALID, f()->C_EncryptInit(h_, &m, k));
  ctr.ulCounterBits = 32;
  EXPECT_CKR(CKR_OK, f()->C_EncryptInit(h_, &m, k));
}

// "GCM and CCM", CK_GCM_PARAMS: ulTagBits is at most 128; more is
// CKR_MECHANISM_PARAM_INVALID (5.1.6).
TEST_P(MechTest, BadGcmTagBits) {
  REQUIRE_MECHANISM(CKM_AES_GCM);
  SKIP_IF_DEVIATES("gcm.bad_tag_bits_code");
  CK_OBJECT_HANDLE k;
  ASSERT_CKR(CKR_OK, AesKey(Bytes(16, 9), &k));
  Bytes iv(12, 0);
  CK_GCM_PARAMS p;
  std::memset(&p, 0, sizeof(p));
  p.pIv = iv.data();
  p.ulIvLen = 12;
  p.ulIvBits = 96;
  p.ulTagBits = 136;
  CK_MECHANISM m = {CKM_AES_GCM, &p, sizeof(p)};
  EXPECT_CKR(CKR_MECHANISM_PARAM_INVALID, f()->C_EncryptInit(h_, &m, k));
  p.ulTagBits = 128;
  EXPECT_CKR(CKR_OK, f()->C_EncryptInit(h_, &m, k));
}

// 5.8.1 / 5.10.1: an Init while the same kind of operation is active is
// CKR_OPERATION_ACTIVE.
TEST_P(MechTest, OperationActive) {
  CK_MECHANISM sha = {CKM_SHA256, nullptr, 0};
  ASSERT_CKR(CKR_OK, f()->C_DigestInit(h_, &sha));
  EXPECT_CKR(CKR_OPERATION_ACTIVE, f()->C_DigestInit(h_, &sha));
  // (A session need not run a digest and an encryption at once: the
  // encryption uses its own session.)
  CK_SESSION_HANDLE h2;
  ASSERT_CKR(CKR_OK, OpenRo(&h2));
  CK_OBJECT_HANDLE k;
  ASSERT_CKR(CKR_OK, AesKey(Bytes(16, 9), &k));
  CK_MECHANISM ecb = {CKM_AES_ECB, nullptr, 0};
  ASSERT_CKR(CKR_OK, f()->C_EncryptInit(h2, &ecb, k));
  EXPECT_CKR(CKR_OPERATION_ACTIVE, f()->C_EncryptInit(h2, &ecb, k));
}

// 5.1 (universal): NULL pointers with non-zero lengths / NULL length
// pointers are CKR_ARGUMENTS_BAD. Each check runs in its own session so
// none depends on whether the refused call ended the operation.
TEST_P(MechTest, NullArguments) {
  CK_MECHANISM sha = {CKM_SHA256, nullptr, 0};
  Bytes out(64), block(16, 1);
  CK_SESSION_HANDLE a, b, c;
  ASSERT_CKR(CKR_OK, OpenRo(&a));
  ASSERT_CKR(CKR_OK, OpenRo(&b));
  ASSERT_CKR(CKR_OK, OpenRo(&c));
  ASSERT_CKR(CKR_OK, f()->C_DigestInit(a, &sha));
  EXPECT_CKR(CKR_ARGUMENTS_BAD,
             f()->C_Digest(a, block.data(), block.size(), out.data(), nullptr));
  ASSERT_CKR(CKR_OK, f()->C_DigestInit(b, &sha));
  EXPECT_CKR(CKR_ARGUMENTS_BAD, f()->C_DigestUpdate(b, nullptr, 5));
  CK_OBJECT_HANDLE k;
  ASSERT_CKR(CKR_OK, AesKey(Bytes(16, 9), &k));
  CK_MECHANISM ecb = {CKM_AES_ECB, nullptr, 0};
  ASSERT_CKR(CKR_OK, f()->C_EncryptInit(c, &ecb, k));
  EXPECT_CKR(CKR_ARGUMENTS_BAD, f()->C_Encrypt(c, block.data(), block.size(),
                                               out.data(), nullptr));
}

// 5.6.5 C_GetOperationState / 5.6.6 C_SetOperationState for a digest: the
// saved state continues in another session and gives the same digest.
TEST_P(MechTest, DigestOperationState) {
  Bytes part1(77, 0x31), part2(50, 0x32), all = part1, expect(32);
  all.insert(all.end(), part2.begin(), part2.end());
  unsigned int elen = 0;
  EVP_Digest(all.data(), all.size(), expect.data(), &elen, EVP_sha256(),
             nullptr);
  CK_MECHANISM sha = {CKM_SHA256, nullptr, 0};
  ASSERT_CKR(CKR_OK, f()->C_DigestInit(h_, &sha));
  ASSERT_CKR(CKR_OK, f()->C_DigestUpdate(h_, part1.data(), part1.size()));
  CK_ULONG slen = 0;
  CK_RV rv = f()->C_GetOperationState(h_, nullptr, &slen);
  if (rv == CKR_FUNCTION_NOT_SUPPORTED) {
    SKIP_IF_DEVIATES("opstate.not_supported");
  }
  ASSERT_CKR(CKR_OK, rv);
  ASSERT_GT(slen, 0u);
  Bytes state(slen);
  CK_ULONG small = slen - 1;
  EXPECT_CKR(CKR_BUFFER_TOO_SMALL,
             f()->C_GetOperationState(h_, state.data(), &small));
  ASSERT_CKR(CKR_OK, f()->C_GetOperationState(h_, state.data(), &slen));
  state.resize(slen);
  CK_SESSION_HANDLE h2;
  ASSERT_CKR(CKR_OK, OpenRo(&h2));
  ASSERT_CKR(CKR_OK,
             f()->C_SetOperationState(h2, state.data(), state.size(),
                                      CK_INVALID_HANDLE, CK_INVALID_HANDLE));
  ASSERT_CKR(CKR_OK, f()->C_DigestUpdate(h2, part2.data(), part2.size()));
  Bytes out(32);
  CK_ULONG len = out.size();
  ASSERT_CKR(CKR_OK, f()->C_DigestFinal(h2, out.data(), &len));
  EXPECT_EQ(expect, out);
  // The original session's operation is untouched.
  ASSERT_CKR(CKR_OK, f()->C_DigestUpdate(h_, part2.data(), part2.size()));
  len = out.size();
  ASSERT_CKR(CKR_OK, f()->C_DigestFinal(h_, out.data(), &len));
  EXPECT_EQ(expect, out);
  // 5.6.6: garbage is CKR_SAVED_STATE_INVALID.
  Bytes junk(state.size(), 0x99);
  EXPECT_CKR(CKR_SAVED_STATE_INVALID,
             f()->C_SetOperationState(h2, junk.data(), junk.size(),
                                      CK_INVALID_HANDLE, CK_INVALID_HANDLE));
}

}  // namespace
}  // namespace accelcrypt::p11test::mech
