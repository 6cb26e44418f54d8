// SPDX-License-Identifier: Apache-2.0
// The legacy RSA and DSA calls of an OpenSSL 3.0-3.5 application (RSA_sign,
// RSA_private_decrypt, DSA_do_sign...) on keys made while the accelcrypt
// engine is the default for RSA and DSA, set only through the openssl.cnf
// engine section named by OPENSSL_CONF (engine_test.sh writes it). Every
// result is checked by OpenSSL's own implementation (RSA_PKCS1_OpenSSL(),
// DSA_OpenSSL()) on a copy of the key; engine_test.sh then checks in the
// statistics that the engine's core served the operations.
#include <openssl/bn.h>
#include <openssl/conf.h>
#include <openssl/crypto.h>
#include <openssl/dsa.h>
#include <openssl/engine.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/sha.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace {

std::string Errors() {
  std::string out;
  unsigned long e;
  char buf[256];
  while ((e = ERR_get_error()) != 0) {
    ERR_error_string_n(e, buf, sizeof(buf));
    out += buf;
    out += "\n";
  }
  return out;
}

// Ops is the number of signing rounds each test makes; engine_test.sh
// checks the statistics against it.
int Rounds() {
  const char* n = std::getenv("ENGINE_TEST_ROUNDS");
  return n != nullptr ? std::atoi(n) : 8;
}

class EngineLegacyTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(OPENSSL_init_crypto(OPENSSL_INIT_LOAD_CONFIG, nullptr), 1)
        << Errors();
  }
};

RSA* NewRsa(int bits) {
  RSA* rsa = RSA_new();
  BIGNUM* e = BN_new();
  if (rsa == nullptr || e == nullptr || BN_set_word(e, RSA_F4) != 1 ||
      RSA_generate_key_ex(rsa, bits, e, nullptr) != 1) {
    RSA_free(rsa);
    rsa = nullptr;
  }
  BN_free(e);
  return rsa;
}

// Plain returns a copy of `rsa` that runs OpenSSL's own RSA code.
RSA* Plain(const RSA* rsa) {
  RSA* copy = RSAPrivateKey_dup(rsa);
  if (copy != nullptr) RSA_set_method(copy, RSA_PKCS1_OpenSSL());
  return copy;
}

TEST_F(EngineLegacyTest, EngineIsTheDefaultForRsaAndDsa) {
  ENGINE* rsa_engine = ENGINE_get_default_RSA();
  ASSERT_NE(rsa_engine, nullptr) << "openssl.cnf did not set an RSA engine";
  EXPECT_STREQ(ENGINE_get_id(rsa_engine), "accelcrypt");
  ENGINE_finish(rsa_engine);
  ENGINE* dsa_engine = ENGINE_get_default_DSA();
  ASSERT_NE(dsa_engine, nullptr);
  EXPECT_STREQ(ENGINE_get_id(dsa_engine), "accelcrypt");
  ENGINE_finish(dsa_engine);
  RSA* rsa = RSA_new();
  ASSERT_NE(rsa, nullptr);
  EXPECT_STREQ(RSA_meth_get0_name(RSA_get_method(rsa)),
               "accelcrypt routed RSA");
  RSA_free(rsa);
}

TEST_F(EngineLegacyTest, RsaSignMatchesOpenSsl) {
  for (int bits : {2048, 3072}) {
    RSA* rsa = NewRsa(bits);
    ASSERT_NE(rsa, nullptr) << Errors();
    RSA* plain = Plain(rsa);
    ASSERT_NE(plain, nullptr);
    std::vector<uint8_t> sig(RSA_size(rsa)), ref(RSA_size(rsa));
    for (int i = 0; i < Rounds(); ++i) {
      uint8_t digest[SHA256_DIGEST_LENGTH];
      ASSERT_EQ(RAND_bytes(digest, sizeof(digest)), 1);
      unsigned int len = 0, ref_len = 0;
      ASSERT_EQ(
          RSA_sign(NID_sha256, digest, sizeof(digest), sig.data(), &len, rsa),
          1)
          << Errors();
      // PKCS#1 v1.5 signatures are deterministic (RFC 8017 section 8.2).
      ASSERT_EQ(RSA_sign(NID_sha256, digest, sizeof(digest), ref.data(),
                         &ref_len, plain),
                1);
      ASSERT_EQ(len, ref_len);
      EXPECT_EQ(sig, ref) << bits << "-bit signature differs from OpenSSL's";
      EXPECT_EQ(RSA_verify(NID_sha256, digest, sizeof(digest), sig.data(), len,
                           plain),
                1)
          << Errors();
      // The engine's own verify (routed RSAVP1 + padding check).
      EXPECT_EQ(
          RSA_verify(NID_sha256, digest, sizeof(digest), sig.data(), len, rsa),
          1)
          << Errors();
      sig[len / 2] ^= 0x01;
      EXPECT_NE(
          RSA_verify(NID_sha256, digest, sizeof(digest), sig.data(), len, rsa),
          1);
      ERR_clear_error();
    }
    RSA_free(plain);
    RSA_free(rsa);
  }
}

TEST_F(EngineLegacyTest, RsaEncryptDecryptAgainstOpenSsl) {
  RSA* rsa = NewRsa(2048);
  ASSERT_NE(rsa, nullptr) << Errors();
  RSA* plain = Plain(rsa);
  ASSERT_NE(plain, nullptr);
  const uint8_t msg[] = "accelcrypt engine: a message of some 40 bytes";
  std::vector<uint8_t> ct(RSA_size(rsa)), pt(RSA_size(rsa));
  for (int padding : {RSA_PKCS1_PADDING, RSA_PKCS1_OAEP_PADDING}) {
    // OpenSSL encrypts, the engine decrypts.
    int n = RSA_public_encrypt(sizeof(msg), msg, ct.data(), plain, padding);
    ASSERT_EQ(n, RSA_size(rsa)) << Errors();
    int m = RSA_private_decrypt(n, ct.data(), pt.data(), rsa, padding);
    ASSERT_EQ(m, static_cast<int>(sizeof(msg))) << padding << Errors();
    EXPECT_EQ(std::memcmp(pt.data(), msg, sizeof(msg)), 0);
    // The engine encrypts, OpenSSL decrypts.
    n = RSA_public_encrypt(sizeof(msg), msg, ct.data(), rsa, padding);
    ASSERT_EQ(n, RSA_size(rsa)) << Errors();
    m = RSA_private_decrypt(n, ct.data(), pt.data(), plain, padding);
    ASSERT_EQ(m, static_cast<int>(sizeof(msg))) << padding << Errors();
    EXPECT_EQ(std::memcmp(pt.data(), msg, sizeof(msg)), 0);
    // A damaged ciphertext is refused, not decrypted to garbage.
    ct[10] ^= 0x40;
    EXPECT_LT(RSA_private_decrypt(n, ct.data(), pt.data(), rsa, padding), 0);
    ERR_clear_error();
  }
  // Raw RSA (RSADP/RSASP1) both ways.
  std::vector<uint8_t> block(RSA_size(rsa), 0x5a);
  block[0] = 0x00;
  int n = RSA_private_encrypt(block.size(), block.data(), ct.data(), rsa,
                              RSA_NO_PADDING);
  ASSERT_EQ(n, RSA_size(rsa)) << Errors();
  int m = RSA_public_decrypt(n, ct.data(), pt.data(), plain, RSA_NO_PADDING);
  ASSERT_EQ(m, RSA_size(rsa));
  EXPECT_EQ(std::memcmp(pt.data(), block.data(), block.size()), 0);
  RSA_free(plain);
  RSA_free(rsa);
}

TEST_F(EngineLegacyTest, RsaSignFromThreads) {
  RSA* rsa = NewRsa(2048);
  ASSERT_NE(rsa, nullptr) << Errors();
  RSA* plain = Plain(rsa);
  std::vector<std::thread> threads;
  threads.reserve(4);
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::vector<uint8_t> sig(RSA_size(rsa));
      for (int i = 0; i < Rounds(); ++i) {
        uint8_t digest[SHA256_DIGEST_LENGTH];
        std::memset(digest, t * 16 + i, sizeof(digest));
        unsigned int len = 0;
        if (RSA_sign(NID_sha256, digest, sizeof(digest), sig.data(), &len,
                     rsa) != 1 ||
            RSA_verify(NID_sha256, digest, sizeof(digest), sig.data(), len,
                       plain) != 1) {
          ++failures[t];
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
  RSA_free(plain);
  RSA_free(rsa);
}

TEST_F(EngineLegacyTest, DsaSignVerifiedByOpenSsl) {
  DSA* dsa = DSA_new();
  ASSERT_NE(dsa, nullptr);
  EXPECT_STREQ(DSA_meth_get0_name(DSA_get_method(dsa)),
               "accelcrypt routed DSA");
  ASSERT_EQ(DSA_generate_parameters_ex(dsa, 2048, nullptr, 0, nullptr, nullptr,
                                       nullptr),
            1)
      << Errors();
  ASSERT_EQ(DSA_generate_key(dsa), 1) << Errors();
  DSA* plain = DSAparams_dup(dsa);
  ASSERT_NE(plain, nullptr);
  {
    const BIGNUM *y, *x;
    DSA_get0_key(dsa, &y, &x);
    ASSERT_EQ(DSA_set0_key(plain, BN_dup(y), BN_dup(x)), 1);
  }
  DSA_set_method(plain, DSA_OpenSSL());
  for (int i = 0; i < Rounds(); ++i) {
    uint8_t digest[SHA256_DIGEST_LENGTH];
    ASSERT_EQ(RAND_bytes(digest, sizeof(digest)), 1);
    DSA_SIG* sig = DSA_do_sign(digest, sizeof(digest), dsa);
    ASSERT_NE(sig, nullptr) << Errors();
    EXPECT_EQ(DSA_do_verify(digest, sizeof(digest), sig, plain), 1);
    EXPECT_EQ(DSA_do_verify(digest, sizeof(digest), sig, dsa), 1) << Errors();
    digest[0] ^= 1;
    EXPECT_EQ(DSA_do_verify(digest, sizeof(digest), sig, dsa), 0);
    EXPECT_EQ(DSA_do_verify(digest, sizeof(digest), sig, plain), 0);
    DSA_SIG_free(sig);
    ERR_clear_error();
  }
  DSA_free(plain);
  DSA_free(dsa);
}

}  // namespace
