// SPDX-License-Identifier: Apache-2.0
// The PKCS#11 module through dlopen + C_GetFunctionList, one end-to-end run
// per mechanism family (AES-CBC, SHA-256, RSA signatures, checked with
// libcrypto) and many threads sharing the module, racing logins.
// Fixture: module_fixture.h.
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rand.h>
#include <p11-kit-1/p11-kit/pkcs11.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/pkcs11/module/module_fixture.h"

namespace accelcrypt::p11_module_test {
namespace {

TEST_F(ModuleTest, AesCbcRoundTripAndOperationRules) {
  ASSERT_EQ(f_->C_Initialize(nullptr), CKR_OK);
  InitToken();
  CK_SESSION_HANDLE s = Open(true);
  ASSERT_EQ(LoginUser(s), CKR_OK);
  CK_MECHANISM gen = {CKM_AES_KEY_GEN, nullptr, 0};
  CK_ULONG len = 32;
  CK_BBOOL yes = CK_TRUE;
  CK_ATTRIBUTE t[] = {{CKA_VALUE_LEN, &len, sizeof(len)},
                      {CKA_ENCRYPT, &yes, sizeof(yes)},
                      {CKA_DECRYPT, &yes, sizeof(yes)}};
  CK_OBJECT_HANDLE key;
  ASSERT_EQ(f_->C_GenerateKey(s, &gen, t, 3, &key), CKR_OK);
  unsigned char iv[16];
  ASSERT_EQ(f_->C_GenerateRandom(s, iv, sizeof(iv)), CKR_OK);
  CK_MECHANISM cbc = {CKM_AES_CBC, iv, sizeof(iv)};
  std::vector<unsigned char> plain(64);
  ASSERT_EQ(f_->C_GenerateRandom(s, plain.data(), plain.size()), CKR_OK);

  ASSERT_EQ(f_->C_EncryptInit(s, &cbc, key), CKR_OK);
  EXPECT_EQ(f_->C_EncryptInit(s, &cbc, key), CKR_OPERATION_ACTIVE);
  CK_ULONG out_len = 0;
  // Size query, then a short buffer: the operation stays active.
  ASSERT_EQ(f_->C_Encrypt(s, plain.data(), plain.size(), nullptr, &out_len),
            CKR_OK);
  EXPECT_EQ(out_len, plain.size());
  std::vector<unsigned char> cipher(out_len);
  CK_ULONG short_len = 8;
  EXPECT_EQ(
      f_->C_Encrypt(s, plain.data(), plain.size(), cipher.data(), &short_len),
      CKR_BUFFER_TOO_SMALL);
  EXPECT_EQ(short_len, plain.size());
  ASSERT_EQ(
      f_->C_Encrypt(s, plain.data(), plain.size(), cipher.data(), &out_len),
      CKR_OK);
  // C_Encrypt ended it.
  EXPECT_EQ(f_->C_EncryptUpdate(s, plain.data(), 16, cipher.data(), &out_len),
            CKR_OPERATION_NOT_INITIALIZED);

  // Multi-part decryption gives the plaintext back.
  ASSERT_EQ(f_->C_DecryptInit(s, &cbc, key), CKR_OK);
  std::vector<unsigned char> back(plain.size());
  CK_ULONG n1 = back.size();
  ASSERT_EQ(f_->C_DecryptUpdate(s, cipher.data(), 40, back.data(), &n1),
            CKR_OK);
  CK_ULONG n2 = back.size() - n1;
  ASSERT_EQ(
      f_->C_DecryptUpdate(s, cipher.data() + 40, 24, back.data() + n1, &n2),
      CKR_OK);
  CK_ULONG n3 = back.size() - n1 - n2;
  ASSERT_EQ(f_->C_DecryptFinal(s, back.data() + n1 + n2, &n3), CKR_OK);
  EXPECT_EQ(n1 + n2 + n3, plain.size());
  EXPECT_EQ(back, plain);

  // A single-part call after an update is refused and ends the operation.
  ASSERT_EQ(f_->C_EncryptInit(s, &cbc, key), CKR_OK);
  CK_ULONG m = cipher.size();
  ASSERT_EQ(f_->C_EncryptUpdate(s, plain.data(), 16, cipher.data(), &m),
            CKR_OK);
  m = cipher.size();
  EXPECT_EQ(f_->C_Encrypt(s, plain.data(), 16, cipher.data(), &m),
            CKR_OPERATION_ACTIVE);
  EXPECT_EQ(f_->C_EncryptFinal(s, cipher.data(), &m),
            CKR_OPERATION_NOT_INITIALIZED);

  // Usage attributes are checked, and a change is seen at the next init
  // (the cached prepared key does not outlive the attributes).
  CK_BBOOL no = CK_FALSE;
  CK_ATTRIBUTE off = {CKA_ENCRYPT, &no, sizeof(no)};
  ASSERT_EQ(f_->C_SetAttributeValue(s, key, &off, 1), CKR_OK);
  EXPECT_EQ(f_->C_EncryptInit(s, &cbc, key), CKR_KEY_FUNCTION_NOT_PERMITTED);
  ASSERT_EQ(f_->C_DecryptInit(s, &cbc, key), CKR_OK);
  ASSERT_EQ(f_->C_DestroyObject(s, key), CKR_OK);
  EXPECT_EQ(f_->C_EncryptInit(s, &cbc, key), CKR_KEY_HANDLE_INVALID);
}

TEST_F(ModuleTest, Sha256DigestMatchesLibcrypto) {
  ASSERT_EQ(f_->C_Initialize(nullptr), CKR_OK);
  InitToken();
  CK_SESSION_HANDLE s = Open(false);
  std::vector<unsigned char> data(1000);
  ASSERT_EQ(RAND_bytes(data.data(), data.size()), 1);
  unsigned char want[32];
  unsigned int want_len = 0;
  ASSERT_EQ(EVP_Digest(data.data(), data.size(), want, &want_len, EVP_sha256(),
                       nullptr),
            1);
  CK_MECHANISM sha = {CKM_SHA256, nullptr, 0};
  // Single part.
  ASSERT_EQ(f_->C_DigestInit(s, &sha), CKR_OK);
  unsigned char got[32];
  CK_ULONG got_len = sizeof(got);
  ASSERT_EQ(f_->C_Digest(s, data.data(), data.size(), got, &got_len), CKR_OK);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(got), got_len),
            std::string(reinterpret_cast<char*>(want), want_len));
  // Multi-part with the state saved and restored half way.
  ASSERT_EQ(f_->C_DigestInit(s, &sha), CKR_OK);
  ASSERT_EQ(f_->C_DigestUpdate(s, data.data(), 300), CKR_OK);
  CK_ULONG state_len = 0;
  ASSERT_EQ(f_->C_GetOperationState(s, nullptr, &state_len), CKR_OK);
  std::vector<unsigned char> state(state_len);
  ASSERT_EQ(f_->C_GetOperationState(s, state.data(), &state_len), CKR_OK);
  ASSERT_EQ(f_->C_DigestUpdate(s, data.data(), 10), CKR_OK);  // thrown away
  ASSERT_EQ(f_->C_SetOperationState(s, state.data(), state_len, 0, 0), CKR_OK);
  ASSERT_EQ(f_->C_DigestUpdate(s, data.data() + 300, 700), CKR_OK);
  got_len = 0;
  ASSERT_EQ(f_->C_DigestFinal(s, nullptr, &got_len), CKR_OK);
  EXPECT_EQ(got_len, 32u);
  ASSERT_EQ(f_->C_DigestFinal(s, got, &got_len), CKR_OK);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(got), got_len),
            std::string(reinterpret_cast<char*>(want), want_len));
  // After a C_Digest size query the operation waits for C_Digest: a
  // C_DigestFinal or C_DigestUpdate is CKR_OPERATION_ACTIVE (the code
  // google/pkcs11test's DigestFinalIntersperse expects) and ends it.
  ASSERT_EQ(f_->C_DigestInit(s, &sha), CKR_OK);
  got_len = 0;
  ASSERT_EQ(f_->C_Digest(s, data.data(), data.size(), nullptr, &got_len),
            CKR_OK);
  got_len = sizeof(got);
  EXPECT_EQ(f_->C_DigestFinal(s, got, &got_len), CKR_OPERATION_ACTIVE);
  EXPECT_EQ(f_->C_Digest(s, data.data(), data.size(), got, &got_len),
            CKR_OPERATION_NOT_INITIALIZED);
  ASSERT_EQ(f_->C_DigestInit(s, &sha), CKR_OK);
  got_len = 0;
  ASSERT_EQ(f_->C_Digest(s, data.data(), data.size(), nullptr, &got_len),
            CKR_OK);
  EXPECT_EQ(f_->C_DigestUpdate(s, data.data(), 1), CKR_OPERATION_ACTIVE);
  EXPECT_EQ(f_->C_DigestInit(s, &sha), CKR_OK);
}

TEST_F(ModuleTest, RsaSignatureVerifiesWithLibcrypto) {
  ASSERT_EQ(f_->C_Initialize(nullptr), CKR_OK);
  InitToken();
  CK_SESSION_HANDLE s = Open(true);
  ASSERT_EQ(LoginUser(s), CKR_OK);
  CK_MECHANISM gen = {CKM_RSA_PKCS_KEY_PAIR_GEN, nullptr, 0};
  CK_ULONG bits = 2048;
  CK_BBOOL yes = CK_TRUE;
  CK_ATTRIBUTE pub_t[] = {{CKA_MODULUS_BITS, &bits, sizeof(bits)},
                          {CKA_VERIFY, &yes, sizeof(yes)}};
  CK_ATTRIBUTE priv_t[] = {{CKA_SIGN, &yes, sizeof(yes)},
                           {CKA_TOKEN, &yes, sizeof(yes)}};
  CK_OBJECT_HANDLE pub, priv;
  ASSERT_EQ(f_->C_GenerateKeyPair(s, &gen, pub_t, 2, priv_t, 2, &pub, &priv),
            CKR_OK);
  const std::string msg = "message signed by the PKCS#11 module";
  CK_MECHANISM sign = {CKM_SHA256_RSA_PKCS, nullptr, 0};
  ASSERT_EQ(f_->C_SignInit(s, &sign, priv), CKR_OK);
  ASSERT_EQ(f_->C_SignUpdate(s, (CK_BYTE_PTR)msg.data(), 10), CKR_OK);
  ASSERT_EQ(f_->C_SignUpdate(s, (CK_BYTE_PTR)msg.data() + 10, msg.size() - 10),
            CKR_OK);
  std::vector<unsigned char> sig(256);
  CK_ULONG sig_len = sig.size();
  ASSERT_EQ(f_->C_SignFinal(s, sig.data(), &sig_len), CKR_OK);
  ASSERT_EQ(sig_len, 256u);
  // The module verifies it, and rejects a changed message.
  ASSERT_EQ(f_->C_VerifyInit(s, &sign, pub), CKR_OK);
  EXPECT_EQ(
      f_->C_Verify(s, (CK_BYTE_PTR)msg.data(), msg.size(), sig.data(), sig_len),
      CKR_OK);
  ASSERT_EQ(f_->C_VerifyInit(s, &sign, pub), CKR_OK);
  EXPECT_EQ(f_->C_Verify(s, (CK_BYTE_PTR)msg.data(), msg.size() - 1, sig.data(),
                         sig_len),
            CKR_SIGNATURE_INVALID);
  // A private key cannot verify, a public one cannot sign.
  EXPECT_EQ(f_->C_SignInit(s, &sign, pub), CKR_KEY_FUNCTION_NOT_PERMITTED);

  // libcrypto verifies it with the public key read back.
  std::vector<unsigned char> n(512), e(16);
  CK_ATTRIBUTE get[] = {{CKA_MODULUS, n.data(), n.size()},
                        {CKA_PUBLIC_EXPONENT, e.data(), e.size()}};
  ASSERT_EQ(f_->C_GetAttributeValue(s, pub, get, 2), CKR_OK);
  BIGNUM* bn_n = BN_bin2bn(n.data(), get[0].ulValueLen, nullptr);
  BIGNUM* bn_e = BN_bin2bn(e.data(), get[1].ulValueLen, nullptr);
  OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
  OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn_n);
  OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bn_e);
  OSSL_PARAM* params = OSSL_PARAM_BLD_to_param(bld);
  EVP_PKEY_CTX* kctx = EVP_PKEY_CTX_new_from_name(nullptr, "RSA", nullptr);
  EVP_PKEY* pkey = nullptr;
  ASSERT_EQ(EVP_PKEY_fromdata_init(kctx), 1);
  ASSERT_EQ(EVP_PKEY_fromdata(kctx, &pkey, EVP_PKEY_PUBLIC_KEY, params), 1);
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  ASSERT_EQ(EVP_DigestVerifyInit(md, nullptr, EVP_sha256(), nullptr, pkey), 1);
  EXPECT_EQ(EVP_DigestVerify(md, sig.data(), sig_len,
                             reinterpret_cast<const unsigned char*>(msg.data()),
                             msg.size()),
            1);
  EVP_MD_CTX_free(md);
  EVP_PKEY_free(pkey);
  EVP_PKEY_CTX_free(kctx);
  OSSL_PARAM_free(params);
  OSSL_PARAM_BLD_free(bld);
  BN_free(bn_n);
  BN_free(bn_e);
}

// Many threads, each with its own session, share one key and the handle
// table: encryption, digests, and session objects made, found and
// destroyed concurrently; every call must succeed.
TEST_F(ModuleTest, ManyThreadsShareTheModule) {
  ASSERT_EQ(f_->C_Initialize(nullptr), CKR_OK);
  InitToken();
  CK_SESSION_HANDLE s = Open(true);
  ASSERT_EQ(LoginUser(s), CKR_OK);
  CK_MECHANISM gen = {CKM_AES_KEY_GEN, nullptr, 0};
  CK_ULONG len = 16;
  CK_ATTRIBUTE t[] = {{CKA_VALUE_LEN, &len, sizeof(len)}};
  CK_OBJECT_HANDLE key;
  ASSERT_EQ(f_->C_GenerateKey(s, &gen, t, 1, &key), CKR_OK);
  constexpr int kThreads = 8;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      CK_SESSION_HANDLE mine;
      if (f_->C_OpenSession(0, CKF_SERIAL_SESSION, nullptr, nullptr, &mine) !=
          CKR_OK) {
        ++failures;
        return;
      }
      unsigned char iv[16] = {};
      CK_MECHANISM cbc = {CKM_AES_CBC, iv, sizeof(iv)};
      CK_MECHANISM sha = {CKM_SHA256, nullptr, 0};
      unsigned char in[64] = {}, out[64];
      const std::string label = "thread-" + std::to_string(i);
      for (int round = 0; round < 50; ++round) {
        CK_ULONG n = sizeof(out);
        if (f_->C_EncryptInit(mine, &cbc, key) != CKR_OK ||
            f_->C_Encrypt(mine, in, sizeof(in), out, &n) != CKR_OK) {
          ++failures;
        }
        n = 32;
        if (f_->C_DigestInit(mine, &sha) != CKR_OK ||
            f_->C_Digest(mine, in, sizeof(in), out, &n) != CKR_OK) {
          ++failures;
        }
        CK_OBJECT_HANDLE obj = CreateData(mine, label, false, false);
        std::vector<CK_OBJECT_HANDLE> found = FindByLabel(mine, label);
        if (found.size() != 1 || found[0] != obj ||
            f_->C_DestroyObject(mine, obj) != CKR_OK) {
          ++failures;
        }
      }
      if (f_->C_CloseSession(mine) != CKR_OK) ++failures;
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  CK_TOKEN_INFO ti;
  ASSERT_EQ(f_->C_GetTokenInfo(0, &ti), CKR_OK);
  EXPECT_EQ(ti.ulSessionCount, 1u);
}

// Login and logout race object and crypto calls on other sessions of the
// token: no deadlock, and every answer is one the state allows.
TEST_F(ModuleTest, LoginRacesObjectAndCryptoCalls) {
  ASSERT_EQ(f_->C_Initialize(nullptr), CKR_OK);
  InitToken();
  CK_SESSION_HANDLE anchor = Open(true);
  std::atomic<bool> stop{false};
  std::atomic<int> unexpected{0};
  std::vector<std::thread> workers;
  workers.reserve(4);
  for (int i = 0; i < 4; ++i) {
    workers.emplace_back([&, i] {
      CK_SESSION_HANDLE mine;
      if (f_->C_OpenSession(0, CKF_SERIAL_SESSION | CKF_RW_SESSION, nullptr,
                            nullptr, &mine) != CKR_OK) {
        ++unexpected;
        return;
      }
      CK_OBJECT_CLASS cls = CKO_DATA;
      CK_BBOOL yes = CK_TRUE;
      const std::string label = "race-" + std::to_string(i);
      CK_ATTRIBUTE t[] = {
          {CKA_CLASS, &cls, sizeof(cls)},
          {CKA_PRIVATE, &yes, sizeof(yes)},
          {CKA_LABEL, const_cast<char*>(label.data()), label.size()}};
      CK_MECHANISM sha = {CKM_SHA256, nullptr, 0};
      unsigned char out[32];
      while (!stop.load()) {
        CK_OBJECT_HANDLE h;
        CK_RV rv = f_->C_CreateObject(mine, t, 3, &h);
        if (rv == CKR_OK) {
          rv = f_->C_DestroyObject(mine, h);
          if (rv != CKR_OK && rv != CKR_OBJECT_HANDLE_INVALID &&
              rv != CKR_USER_NOT_LOGGED_IN) {
            ++unexpected;
          }
        } else if (rv != CKR_USER_NOT_LOGGED_IN) {
          ++unexpected;
        }
        CK_ATTRIBUTE find = t[2];
        if (f_->C_FindObjectsInit(mine, &find, 1) != CKR_OK) ++unexpected;
        CK_OBJECT_HANDLE found[4];
        CK_ULONG n = 0;
        if (f_->C_FindObjects(mine, found, 4, &n) != CKR_OK ||
            f_->C_FindObjectsFinal(mine) != CKR_OK) {
          ++unexpected;
        }
        CK_ULONG len = sizeof(out);
        if (f_->C_DigestInit(mine, &sha) != CKR_OK ||
            f_->C_Digest(mine, out, sizeof(out), out, &len) != CKR_OK) {
          ++unexpected;
        }
      }
    });
  }
  for (int round = 0; round < 30; ++round) {
    if (LoginUser(anchor) != CKR_OK) ++unexpected;
    std::this_thread::yield();
    if (f_->C_Logout(anchor) != CKR_OK) ++unexpected;
  }
  stop.store(true);
  for (std::thread& th : workers) th.join();
  EXPECT_EQ(unexpected.load(), 0);
}

}  // namespace
}  // namespace accelcrypt::p11_module_test
