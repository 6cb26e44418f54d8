// SPDX-License-Identifier: Apache-2.0
// The AES block and stream modes (ECB/CBC/CFB/OFB/CTR) through EVP: chosen
// by default properties, every size and split, in place, separate key and IV
// inits, bad parameters, num/updated-iv and duplicated contexts, all compared
// with OpenSSL's default provider.
// Fixture and helpers: provider_evp_fixture.h.
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/integration/provider/provider_evp_fixture.h"

namespace accelcrypt::provider_evp_test {
namespace {

TEST_F(ProviderEvpTest, PreferredByDefaultProperties) {
  CipherPtr c = Fetch("AES-128-CBC", nullptr);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(ProviderOf(c.get()), "accelcrypt");
  MdPtr md(EVP_MD_fetch(nullptr, "SHA256", nullptr));
  ASSERT_NE(md, nullptr);
  EXPECT_STREQ(OSSL_PROVIDER_get0_name(EVP_MD_get0_provider(md.get())),
               "accelcrypt");
}

TEST_F(ProviderEvpTest, CiphersMatchDefaultEverySizeAndSplit) {
  for (const std::string& name : CipherNames()) {
    CipherPtr acc = Fetch(name, kAccel);
    CipherPtr def = Fetch(name, kDefault);
    ASSERT_NE(acc, nullptr) << name;
    ASSERT_NE(def, nullptr) << name;
    ASSERT_EQ(EVP_CIPHER_get_block_size(acc.get()),
              EVP_CIPHER_get_block_size(def.get()))
        << name;
    ASSERT_EQ(EVP_CIPHER_get_iv_length(acc.get()),
              EVP_CIPHER_get_iv_length(def.get()))
        << name;
    ASSERT_EQ(EVP_CIPHER_get_mode(acc.get()), EVP_CIPHER_get_mode(def.get()))
        << name;
    const Bytes key = Random(EVP_CIPHER_get_key_length(def.get()), 1);
    const Bytes iv = Random(EVP_CIPHER_get_iv_length(def.get()), 2);
    for (size_t size : {0, 1, 15, 16, 17, 4097}) {
      const Bytes pt = Random(size, static_cast<uint32_t>(size));
      for (size_t chunk : {size_t{0}, size_t{1}, size_t{7}, size_t{16},
                           size_t{33}, kMixedChunks}) {
        Bytes ct_acc, ct_def, back;
        ASSERT_TRUE(Crypt(acc.get(), true, key, iv, pt, chunk, &ct_acc))
            << name << " size " << size << " chunk " << chunk << " "
            << LastReason();
        ASSERT_TRUE(Crypt(def.get(), true, key, iv, pt, chunk, &ct_def));
        EXPECT_EQ(ct_acc, ct_def) << name << " size " << size;
        ASSERT_TRUE(Crypt(acc.get(), false, key, iv, ct_def, chunk, &back))
            << name << " " << LastReason();
        EXPECT_EQ(back, pt) << name << " size " << size;
        if (size % 16 == 0) {
          // Without padding too (decrypt takes the fast path then).
          ASSERT_TRUE(
              Crypt(acc.get(), true, key, iv, pt, chunk, &ct_acc, false));
          ASSERT_TRUE(
              Crypt(def.get(), true, key, iv, pt, chunk, &ct_def, false));
          EXPECT_EQ(ct_acc, ct_def) << name << " nopad size " << size;
          ASSERT_TRUE(
              Crypt(acc.get(), false, key, iv, ct_def, chunk, &back, false));
          EXPECT_EQ(back, pt) << name << " nopad size " << size;
        }
      }
    }
  }
}

TEST_F(ProviderEvpTest, InPlaceMatchesDefault) {
  for (const std::string& name : CipherNames()) {
    CipherPtr acc = Fetch(name, kAccel);
    CipherPtr def = Fetch(name, kDefault);
    const Bytes key = Random(EVP_CIPHER_get_key_length(def.get()), 3);
    const Bytes iv = Random(EVP_CIPHER_get_iv_length(def.get()), 4);
    Bytes buf = Random(64, 5);
    Bytes expected;
    ASSERT_TRUE(Crypt(def.get(), true, key, iv, buf, 0, &expected, false));
    CtxPtr ctx(EVP_CIPHER_CTX_new());
    ASSERT_TRUE(EVP_EncryptInit_ex2(ctx.get(), acc.get(), key.data(),
                                    iv.empty() ? nullptr : iv.data(), nullptr));
    EVP_CIPHER_CTX_set_padding(ctx.get(), 0);
    int outl = 0;
    ASSERT_TRUE(EVP_EncryptUpdate(ctx.get(), buf.data(), &outl, buf.data(),
                                  static_cast<int>(buf.size())));
    EXPECT_EQ(outl, 64);
    EXPECT_EQ(buf, expected) << name;
  }
}

// The key and IV arrive in separate init calls, in both orders, and a
// re-init with only a new IV keeps the key (OpenSSL does all three).
TEST_F(ProviderEvpTest, KeyAndIvInSeparateInits) {
  CipherPtr acc = Fetch("AES-256-CBC", kAccel);
  CipherPtr def = Fetch("AES-256-CBC", kDefault);
  const Bytes key = Random(32, 6), iv1 = Random(16, 7), iv2 = Random(16, 8);
  const Bytes pt = Random(48, 9);
  Bytes want1, want2;
  ASSERT_TRUE(Crypt(def.get(), true, key, iv1, pt, 0, &want1));
  ASSERT_TRUE(Crypt(def.get(), true, key, iv2, pt, 0, &want2));
  auto run = [&](EVP_CIPHER_CTX* ctx, Bytes* out) {
    out->assign(pt.size() + 16, 0);
    int a = 0, b = 0;
    ASSERT_TRUE(EVP_EncryptUpdate(ctx, out->data(), &a, pt.data(),
                                  static_cast<int>(pt.size())));
    ASSERT_TRUE(EVP_EncryptFinal_ex(ctx, out->data() + a, &b));
    out->resize(a + b);
  };
  for (bool key_first : {true, false}) {
    CtxPtr ctx(EVP_CIPHER_CTX_new());
    ASSERT_TRUE(
        EVP_EncryptInit_ex(ctx.get(), acc.get(), nullptr, nullptr, nullptr));
    if (key_first) {
      ASSERT_TRUE(
          EVP_EncryptInit_ex(ctx.get(), nullptr, nullptr, key.data(), nullptr));
      ASSERT_TRUE(
          EVP_EncryptInit_ex(ctx.get(), nullptr, nullptr, nullptr, iv1.data()));
    } else {
      ASSERT_TRUE(
          EVP_EncryptInit_ex(ctx.get(), nullptr, nullptr, nullptr, iv1.data()));
      ASSERT_TRUE(
          EVP_EncryptInit_ex(ctx.get(), nullptr, nullptr, key.data(), nullptr));
    }
    Bytes got;
    run(ctx.get(), &got);
    EXPECT_EQ(got, want1) << "key_first=" << key_first;
    ASSERT_TRUE(
        EVP_EncryptInit_ex(ctx.get(), nullptr, nullptr, nullptr, iv2.data()));
    run(ctx.get(), &got);
    EXPECT_EQ(got, want2) << "re-init with a new IV";
  }
}

TEST_F(ProviderEvpTest, BadParamsAreRefusedClearly) {
  CipherPtr acc = Fetch("AES-128-CBC", kAccel);
  const Bytes key = Random(16, 40), iv = Random(16, 41);
  CtxPtr ctx(EVP_CIPHER_CTX_new());
  ASSERT_TRUE(EVP_EncryptInit_ex2(ctx.get(), acc.get(), key.data(), iv.data(),
                                  nullptr));
  // Wrong key length through the keylen parameter.
  EXPECT_FALSE(EVP_CIPHER_CTX_set_key_length(ctx.get(), 17));
  EXPECT_EQ(LastReason(), "invalid key length");
  size_t bad = 24;
  OSSL_PARAM keylen[] = {
      OSSL_PARAM_construct_size_t(OSSL_CIPHER_PARAM_KEYLEN, &bad),
      OSSL_PARAM_construct_end()};
  CtxPtr ctx2(EVP_CIPHER_CTX_new());
  EXPECT_FALSE(EVP_EncryptInit_ex2(ctx2.get(), acc.get(), key.data(), iv.data(),
                                   keylen));
  EXPECT_TRUE(QueuedReason("invalid key length"));
  {
    // The failed init left nothing usable behind; a good init recovers.
    Bytes buf(32);
    int n = 0;
    EXPECT_FALSE(EVP_EncryptUpdate(ctx2.get(), buf.data(), &n, buf.data(), 16));
    EXPECT_EQ(LastReason(), "no key set");
    ASSERT_TRUE(EVP_EncryptInit_ex2(ctx2.get(), acc.get(), key.data(),
                                    iv.data(), nullptr));
    EXPECT_TRUE(EVP_EncryptUpdate(ctx2.get(), buf.data(), &n, buf.data(), 16));
    EXPECT_EQ(n, 16);
  }
  // num beyond the block size.
  unsigned int num = 99;
  OSSL_PARAM numparam[] = {
      OSSL_PARAM_construct_uint(OSSL_CIPHER_PARAM_NUM, &num),
      OSSL_PARAM_construct_end()};
  EXPECT_FALSE(EVP_CIPHER_CTX_set_params(ctx.get(), numparam));
  EXPECT_EQ(LastReason(), "bad parameter");
  // NULL and unknown parameters are accepted and change nothing, as with
  // every OpenSSL provider; the context still encrypts correctly.
  EXPECT_TRUE(EVP_CIPHER_CTX_set_params(ctx.get(), nullptr));
  int x = 1;
  OSSL_PARAM unknown[] = {OSSL_PARAM_construct_int("no-such-param", &x),
                          OSSL_PARAM_construct_end()};
  EXPECT_TRUE(EVP_CIPHER_CTX_set_params(ctx.get(), unknown));
  const Bytes pt = Random(40, 42);
  Bytes out(pt.size() + 16);
  int outl = 0, fin = 0;
  ASSERT_TRUE(EVP_EncryptUpdate(ctx.get(), out.data(), &outl, pt.data(),
                                static_cast<int>(pt.size())));
  ASSERT_TRUE(EVP_EncryptFinal_ex(ctx.get(), out.data() + outl, &fin));
  out.resize(outl + fin);
  Bytes want;
  ASSERT_TRUE(
      Crypt(Fetch("AES-128-CBC", kDefault).get(), true, key, iv, pt, 0, &want));
  EXPECT_EQ(out, want);
  // Update after final: refused until re-initialised.
  EXPECT_FALSE(EVP_EncryptUpdate(ctx.get(), out.data(), &outl, pt.data(),
                                 static_cast<int>(pt.size())));
  EXPECT_EQ(LastReason(), "operation already finished");
  ASSERT_TRUE(
      EVP_EncryptInit_ex2(ctx.get(), nullptr, nullptr, iv.data(), nullptr));
  EXPECT_TRUE(EVP_EncryptUpdate(ctx.get(), out.data(), &outl, pt.data(),
                                static_cast<int>(pt.size())));
  // Update without a key.
  CtxPtr nokey(EVP_CIPHER_CTX_new());
  ASSERT_TRUE(
      EVP_EncryptInit_ex(nokey.get(), acc.get(), nullptr, nullptr, nullptr));
  EXPECT_FALSE(EVP_EncryptUpdate(nokey.get(), out.data(), &outl, pt.data(),
                                 static_cast<int>(pt.size())));
  EXPECT_EQ(LastReason(), "no key set");
}

// Parameters evp_test reads: num and updated-iv after a partial block,
// identical to the default provider's, and a duplicated context that
// continues identically.
TEST_F(ProviderEvpTest, NumUpdatedIvAndDupMatchDefault) {
  for (const char* name :
       {"AES-128-CFB", "AES-192-OFB", "AES-256-CTR", "AES-128-CBC"}) {
    CipherPtr ciphers[2] = {Fetch(name, kAccel), Fetch(name, kDefault)};
    const Bytes key = Random(EVP_CIPHER_get_key_length(ciphers[1].get()), 50);
    const Bytes iv = Random(16, 51), pt = Random(37, 52);
    unsigned int nums[2] = {0, 0};
    Bytes ivs[2], tails[2];
    for (int i = 0; i < 2; ++i) {
      CtxPtr ctx(EVP_CIPHER_CTX_new());
      ASSERT_TRUE(EVP_EncryptInit_ex2(ctx.get(), ciphers[i].get(), key.data(),
                                      iv.data(), nullptr));
      EVP_CIPHER_CTX_set_padding(ctx.get(), 0);
      Bytes out(64);
      int outl = 0;
      ASSERT_TRUE(
          EVP_EncryptUpdate(ctx.get(), out.data(), &outl, pt.data(), 21));
      nums[i] = static_cast<unsigned int>(EVP_CIPHER_CTX_get_num(ctx.get()));
      ivs[i].assign(16, 0);
      ASSERT_TRUE(EVP_CIPHER_CTX_get_updated_iv(ctx.get(), ivs[i].data(), 16));
      CtxPtr dup(EVP_CIPHER_CTX_new());
      ASSERT_TRUE(EVP_CIPHER_CTX_copy(dup.get(), ctx.get()));
      tails[i].assign(32, 0);
      int taill = 0;
      ASSERT_TRUE(EVP_EncryptUpdate(dup.get(), tails[i].data(), &taill,
                                    pt.data() + 21, 11));
      tails[i].resize(taill);
    }
    EXPECT_EQ(nums[0], nums[1]) << name;
    EXPECT_EQ(ivs[0], ivs[1]) << name;
    EXPECT_EQ(tails[0], tails[1]) << name;
  }
}

}  // namespace
}  // namespace accelcrypt::provider_evp_test
