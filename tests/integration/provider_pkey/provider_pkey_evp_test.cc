// SPDX-License-Identifier: Apache-2.0
// RSA/DSA through accelcrypt.so at the EVP level, with the provider loaded
// only by OPENSSL_CONF (default + accelcrypt, accelcrypt preferred): what the
// CLI cannot reach (size queries, short buffers, context duplication,
// threads, key movement through EVP_PKEY_todata/fromdata).
#include <openssl/core_names.h>
#include <openssl/dsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/provider.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace {

struct PkeyDeleter {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct CtxDeleter {
  void operator()(EVP_PKEY_CTX* p) const { EVP_PKEY_CTX_free(p); }
};
struct MdCtxDeleter {
  void operator()(EVP_MD_CTX* p) const { EVP_MD_CTX_free(p); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyDeleter>;
using Ctx = std::unique_ptr<EVP_PKEY_CTX, CtxDeleter>;
using MdCtx = std::unique_ptr<EVP_MD_CTX, MdCtxDeleter>;

std::string ProviderOf(const EVP_PKEY* pkey) {
  const OSSL_PROVIDER* prov = EVP_PKEY_get0_provider(pkey);
  return prov == nullptr ? "" : OSSL_PROVIDER_get0_name(prov);
}

// ErrorsMention is true when the thread's error queue holds `text`; drains it.
bool ErrorsMention(const std::string& text) {
  bool found = false;
  unsigned long e;
  const char* data = nullptr;
  int flags = 0;
  char buf[256];
  while ((e = ERR_get_error_all(nullptr, nullptr, nullptr, &data, &flags)) !=
         0) {
    ERR_error_string_n(e, buf, sizeof(buf));
    std::string all = std::string(buf) + " " +
                      ((flags & ERR_TXT_STRING) != 0 && data ? data : "");
    if (all.find(text) != std::string::npos) found = true;
  }
  return found;
}

class PkeyEvpTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!OSSL_PROVIDER_available(nullptr, "accelcrypt")) return;
    rsa_ = EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", size_t{2048});
    default_lib_ = OSSL_LIB_CTX_new();
    default_prov_ = OSSL_PROVIDER_load(default_lib_, "default");
  }
  static void TearDownTestSuite() {
    EVP_PKEY_free(rsa_);
    rsa_ = nullptr;
    // Unloaded first: OpenSSL 3.0 keeps a loaded provider's reference
    // past OSSL_LIB_CTX_free (a leak under LeakSanitizer).
    OSSL_PROVIDER_unload(default_prov_);
    default_prov_ = nullptr;
    OSSL_LIB_CTX_free(default_lib_);
  }
  void SetUp() override {
    if (!OSSL_PROVIDER_available(nullptr, "accelcrypt")) {
      GTEST_SKIP() << "accelcrypt provider not loaded (OPENSSL_CONF?)";
    }
    ASSERT_NE(rsa_, nullptr);
    ERR_clear_error();
  }

  // InDefault copies `pkey` into a library context with only the default
  // provider (export from accelcrypt, import into default).
  static Pkey InDefault(EVP_PKEY* pkey, int selection = EVP_PKEY_KEYPAIR) {
    OSSL_PARAM* params = nullptr;
    if (EVP_PKEY_todata(pkey, selection, &params) != 1) return nullptr;
    Ctx ctx(EVP_PKEY_CTX_new_from_name(default_lib_,
                                       EVP_PKEY_get0_type_name(pkey), nullptr));
    EVP_PKEY* out = nullptr;
    if (ctx == nullptr || EVP_PKEY_fromdata_init(ctx.get()) != 1 ||
        EVP_PKEY_fromdata(ctx.get(), &out, selection, params) != 1) {
      out = nullptr;
    }
    OSSL_PARAM_free(params);
    return Pkey(out);
  }

  static EVP_PKEY* rsa_;
  static OSSL_LIB_CTX* default_lib_;
  static OSSL_PROVIDER* default_prov_;
};
EVP_PKEY* PkeyEvpTest::rsa_ = nullptr;
OSSL_LIB_CTX* PkeyEvpTest::default_lib_ = nullptr;
OSSL_PROVIDER* PkeyEvpTest::default_prov_ = nullptr;

TEST_F(PkeyEvpTest, KeygenIsOursAndReportsParams) {
  EXPECT_EQ(ProviderOf(rsa_), "accelcrypt");
  EXPECT_EQ(EVP_PKEY_get_bits(rsa_), 2048);
  EXPECT_EQ(EVP_PKEY_get_size(rsa_), 256);
  EXPECT_EQ(EVP_PKEY_get_security_bits(rsa_), 112);
  char md[32] = {0};
  EXPECT_GT(EVP_PKEY_get_default_digest_name(rsa_, md, sizeof(md)), 0);
  EXPECT_STREQ(md, "SHA256");
  Pkey copy = InDefault(rsa_);
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(ProviderOf(copy.get()), "default");
  EXPECT_EQ(EVP_PKEY_eq(rsa_, copy.get()), 1);
}

TEST_F(PkeyEvpTest, SignSizeQueryShortBufferThenSign) {
  Ctx ctx(EVP_PKEY_CTX_new_from_pkey(nullptr, rsa_, nullptr));
  ASSERT_EQ(EVP_PKEY_sign_init(ctx.get()), 1);
  ASSERT_EQ(EVP_PKEY_CTX_set_signature_md(ctx.get(), EVP_sha256()), 1);
  unsigned char tbs[32];
  RAND_bytes(tbs, sizeof(tbs));
  size_t len = 0;
  ASSERT_EQ(EVP_PKEY_sign(ctx.get(), nullptr, &len, tbs, sizeof(tbs)), 1);
  EXPECT_EQ(len, 256u);
  std::vector<unsigned char> sig(len);
  size_t short_len = 100;
  EXPECT_LE(EVP_PKEY_sign(ctx.get(), sig.data(), &short_len, tbs, sizeof(tbs)),
            0);
  EXPECT_TRUE(ErrorsMention("accelcrypt"));
  // The context is still usable after the caller's error.
  ASSERT_EQ(EVP_PKEY_sign(ctx.get(), sig.data(), &len, tbs, sizeof(tbs)), 1);
  Pkey verifier = InDefault(rsa_, EVP_PKEY_PUBLIC_KEY);
  ASSERT_NE(verifier, nullptr);
  Ctx vctx(EVP_PKEY_CTX_new_from_pkey(default_lib_, verifier.get(), nullptr));
  ASSERT_EQ(EVP_PKEY_verify_init(vctx.get()), 1);
  ASSERT_EQ(EVP_PKEY_CTX_set_signature_md(vctx.get(), EVP_sha256()), 1);
  EXPECT_EQ(EVP_PKEY_verify(vctx.get(), sig.data(), len, tbs, sizeof(tbs)), 1);
}

TEST_F(PkeyEvpTest, BadPaddingRefusedContextStaysUsable) {
  Ctx ctx(EVP_PKEY_CTX_new_from_pkey(nullptr, rsa_, nullptr));
  ASSERT_EQ(EVP_PKEY_sign_init(ctx.get()), 1);
  EXPECT_LE(EVP_PKEY_CTX_set_rsa_padding(ctx.get(), RSA_X931_PADDING), 0);
  EXPECT_TRUE(ErrorsMention("pad-mode"));
  EXPECT_LE(EVP_PKEY_CTX_set_rsa_padding(ctx.get(), RSA_PKCS1_OAEP_PADDING), 0);
  ERR_clear_error();
  unsigned char tbs[20] = {1, 2, 3};
  unsigned char sig[256];
  size_t len = sizeof(sig);
  EXPECT_EQ(EVP_PKEY_sign(ctx.get(), sig, &len, tbs, sizeof(tbs)), 1);
  // Unknown names are not settable: libcrypto refuses them before us.
  EXPECT_LE(EVP_PKEY_CTX_ctrl_str(ctx.get(), "no-such-param", "1"), 0);
}

TEST_F(PkeyEvpTest, DigestSignFinalTwiceAndPssDup) {
  for (int pad : {RSA_PKCS1_PADDING, RSA_PKCS1_PSS_PADDING}) {
    MdCtx md(EVP_MD_CTX_new());
    EVP_PKEY_CTX* pctx = nullptr;
    ASSERT_EQ(EVP_DigestSignInit_ex(md.get(), &pctx, "SHA256", nullptr, nullptr,
                                    rsa_, nullptr),
              1);
    ASSERT_EQ(EVP_PKEY_CTX_set_rsa_padding(pctx, pad), 1);
    const std::string part1(1000, 'a'), part2 = "tail";
    ASSERT_EQ(EVP_DigestSignUpdate(md.get(), part1.data(), part1.size()), 1);
    ASSERT_EQ(EVP_DigestSignUpdate(md.get(), part2.data(), part2.size()), 1);
    size_t len = 0;
    ASSERT_EQ(EVP_DigestSignFinal(md.get(), nullptr, &len), 1);
    std::vector<unsigned char> sig1(len), sig2(len);
    // libcrypto 3.0 duplicates the context for each final: both work.
    ASSERT_EQ(EVP_DigestSignFinal(md.get(), sig1.data(), &len), 1);
    size_t len2 = sig2.size();
    ASSERT_EQ(EVP_DigestSignFinal(md.get(), sig2.data(), &len2), 1);
    if (pad == RSA_PKCS1_PADDING) {
      EXPECT_EQ(sig1, sig2);
    }
    Pkey pub = InDefault(rsa_, EVP_PKEY_PUBLIC_KEY);
    MdCtx vmd(EVP_MD_CTX_new());
    EVP_PKEY_CTX* vctx = nullptr;
    ASSERT_EQ(EVP_DigestVerifyInit_ex(vmd.get(), &vctx, "SHA256", default_lib_,
                                      nullptr, pub.get(), nullptr),
              1);
    ASSERT_EQ(EVP_PKEY_CTX_set_rsa_padding(vctx, pad), 1);
    const std::string whole = part1 + part2;
    EXPECT_EQ(
        EVP_DigestVerify(vmd.get(), sig2.data(), len2,
                         reinterpret_cast<const unsigned char*>(whole.data()),
                         whole.size()),
        1);
  }
}

TEST_F(PkeyEvpTest, DecryptSizeQueryAndShortBuffer) {
  Pkey pub = InDefault(rsa_, EVP_PKEY_PUBLIC_KEY);
  Ctx ectx(EVP_PKEY_CTX_new_from_pkey(default_lib_, pub.get(), nullptr));
  ASSERT_EQ(EVP_PKEY_encrypt_init(ectx.get()), 1);
  ASSERT_EQ(EVP_PKEY_CTX_set_rsa_padding(ectx.get(), RSA_PKCS1_OAEP_PADDING),
            1);
  const unsigned char pt[] = "sixteen byte msg";
  unsigned char ct[256];
  size_t ct_len = sizeof(ct);
  ASSERT_EQ(EVP_PKEY_encrypt(ectx.get(), ct, &ct_len, pt, sizeof(pt)), 1);

  Ctx dctx(EVP_PKEY_CTX_new_from_pkey(nullptr, rsa_, nullptr));
  ASSERT_EQ(EVP_PKEY_decrypt_init(dctx.get()), 1);
  ASSERT_EQ(EVP_PKEY_CTX_set_rsa_padding(dctx.get(), RSA_PKCS1_OAEP_PADDING),
            1);
  size_t out_len = 0;
  ASSERT_EQ(EVP_PKEY_decrypt(dctx.get(), nullptr, &out_len, ct, ct_len), 1);
  EXPECT_EQ(out_len, 256u);
  unsigned char small[4];
  size_t small_len = sizeof(small);
  EXPECT_LE(EVP_PKEY_decrypt(dctx.get(), small, &small_len, ct, ct_len), 0);
  EXPECT_TRUE(ErrorsMention("accelcrypt"));
  std::vector<unsigned char> out(out_len);
  ASSERT_EQ(EVP_PKEY_decrypt(dctx.get(), out.data(), &out_len, ct, ct_len), 1);
  ASSERT_EQ(out_len, sizeof(pt));
  EXPECT_EQ(0, memcmp(out.data(), pt, sizeof(pt)));
}

TEST_F(PkeyEvpTest, FourThreadsShareOneKey) {
  Pkey pub = InDefault(rsa_, EVP_PKEY_PUBLIC_KEY);
  std::atomic<int> good{0};
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 5; ++i) {
        unsigned char tbs[32];
        RAND_bytes(tbs, sizeof(tbs));
        Ctx ctx(EVP_PKEY_CTX_new_from_pkey(nullptr, rsa_, nullptr));
        unsigned char sig[256];
        size_t len = sizeof(sig);
        if (EVP_PKEY_sign_init(ctx.get()) != 1 ||
            EVP_PKEY_CTX_set_signature_md(ctx.get(), EVP_sha256()) != 1 ||
            EVP_PKEY_sign(ctx.get(), sig, &len, tbs, sizeof(tbs)) != 1) {
          continue;
        }
        Ctx v(EVP_PKEY_CTX_new_from_pkey(default_lib_, pub.get(), nullptr));
        if (EVP_PKEY_verify_init(v.get()) == 1 &&
            EVP_PKEY_CTX_set_signature_md(v.get(), EVP_sha256()) == 1 &&
            EVP_PKEY_verify(v.get(), sig, len, tbs, sizeof(tbs)) == 1) {
          ++good;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(good.load(), 20);
}

TEST_F(PkeyEvpTest, DsaKeyFromDefaultSignsHere) {
  // DSA-2048 domain parameters and key made by the default provider, used
  // through accelcrypt (import), verified back in default.
  Ctx pctx(EVP_PKEY_CTX_new_from_name(default_lib_, "DSA", nullptr));
  ASSERT_EQ(EVP_PKEY_paramgen_init(pctx.get()), 1);
  ASSERT_EQ(EVP_PKEY_CTX_set_dsa_paramgen_bits(pctx.get(), 2048), 1);
  EVP_PKEY* params = nullptr;
  ASSERT_EQ(EVP_PKEY_generate(pctx.get(), &params), 1);
  Pkey p(params);
  Ctx kctx(EVP_PKEY_CTX_new_from_pkey(default_lib_, p.get(), nullptr));
  ASSERT_EQ(EVP_PKEY_keygen_init(kctx.get()), 1);
  EVP_PKEY* key = nullptr;
  ASSERT_EQ(EVP_PKEY_generate(kctx.get(), &key), 1);
  Pkey dkey(key);
  // Sign in the application's context: accelcrypt is preferred there.
  MdCtx md(EVP_MD_CTX_new());
  EVP_PKEY_CTX* sctx = nullptr;
  ASSERT_EQ(EVP_DigestSignInit_ex(md.get(), &sctx, "SHA256", nullptr, nullptr,
                                  dkey.get(), nullptr),
            1);
  EXPECT_STREQ(OSSL_PROVIDER_get0_name(EVP_PKEY_CTX_get0_provider(sctx)),
               "accelcrypt");
  const unsigned char msg[] = "dsa message";
  size_t len = 0;
  ASSERT_EQ(EVP_DigestSign(md.get(), nullptr, &len, msg, sizeof(msg)), 1);
  std::vector<unsigned char> sig(len);
  ASSERT_EQ(EVP_DigestSign(md.get(), sig.data(), &len, msg, sizeof(msg)), 1);
  MdCtx vmd(EVP_MD_CTX_new());
  ASSERT_EQ(EVP_DigestVerifyInit_ex(vmd.get(), nullptr, "SHA256", default_lib_,
                                    nullptr, dkey.get(), nullptr),
            1);
  EXPECT_EQ(EVP_DigestVerify(vmd.get(), sig.data(), len, msg, sizeof(msg)), 1);
  sig[len / 2] ^= 1;
  MdCtx bmd(EVP_MD_CTX_new());
  ASSERT_EQ(EVP_DigestVerifyInit_ex(bmd.get(), nullptr, "SHA256", nullptr,
                                    nullptr, dkey.get(), nullptr),
            1);
  EXPECT_NE(EVP_DigestVerify(bmd.get(), sig.data(), len, msg, sizeof(msg)), 1);
  ERR_clear_error();
}

}  // namespace
