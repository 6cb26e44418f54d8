// SPDX-License-Identifier: Apache-2.0
// AES-GCM through EVP compared with OpenSSL's default provider: AAD, IV and
// tag lengths, reused and copied contexts, in place, parameters, tag
// mismatches, misuse, tags across messages.
// Fixture and helpers: provider_evp_fixture.h.
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <vector>

#include "gtest/gtest.h"
#include "tests/integration/provider/provider_evp_fixture.h"

namespace accelcrypt::provider_evp_test {
namespace {

// GCM with AAD, several IV lengths, all tag lengths the default accepts on
// decrypt, and the tag compared with the default provider's.
TEST_F(ProviderEvpTest, GcmMatchesDefault) {
  for (const char* name : {"AES-128-GCM", "AES-192-GCM", "AES-256-GCM"}) {
    CipherPtr acc = Fetch(name, kAccel);
    CipherPtr def = Fetch(name, kDefault);
    ASSERT_EQ(ProviderOf(acc.get()), "accelcrypt");
    const Bytes key = Random(EVP_CIPHER_get_key_length(def.get()), 10);
    for (size_t ivlen : {12, 1, 16, 60}) {
      for (size_t size : {0, 1, 15, 16, 17, 4097}) {
        const Bytes iv = Random(ivlen, 11), aad = Random(20, 12),
                    pt = Random(size, 13);
        Bytes ct[2], tag[2];
        const EVP_CIPHER* ciphers[2] = {acc.get(), def.get()};
        for (int i = 0; i < 2; ++i) {
          CtxPtr ctx(EVP_CIPHER_CTX_new());
          ASSERT_TRUE(EVP_EncryptInit_ex(ctx.get(), ciphers[i], nullptr,
                                         nullptr, nullptr));
          ASSERT_GT(EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_AEAD_SET_IVLEN,
                                        static_cast<int>(ivlen), nullptr),
                    0);
          ASSERT_TRUE(EVP_EncryptInit_ex(ctx.get(), nullptr, nullptr,
                                         key.data(), iv.data()));
          int outl = 0;
          ASSERT_TRUE(EVP_EncryptUpdate(ctx.get(), nullptr, &outl, aad.data(),
                                        static_cast<int>(aad.size())));
          ct[i].assign(size + 16, 0);
          ASSERT_TRUE(EVP_EncryptUpdate(ctx.get(), ct[i].data(), &outl,
                                        pt.data(), static_cast<int>(size)));
          int fin = 0;
          ASSERT_TRUE(
              EVP_EncryptFinal_ex(ctx.get(), ct[i].data() + outl, &fin));
          ct[i].resize(outl + fin);
          tag[i].assign(16, 0);
          ASSERT_GT(EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_AEAD_GET_TAG, 16,
                                        tag[i].data()),
                    0);
        }
        EXPECT_EQ(ct[0], ct[1]) << name << " ivlen " << ivlen;
        EXPECT_EQ(tag[0], tag[1]) << name << " ivlen " << ivlen;
        for (size_t taglen : {16, 12, 4}) {
          CtxPtr ctx(EVP_CIPHER_CTX_new());
          ASSERT_TRUE(EVP_DecryptInit_ex(ctx.get(), acc.get(), nullptr, nullptr,
                                         nullptr));
          ASSERT_GT(EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_AEAD_SET_IVLEN,
                                        static_cast<int>(ivlen), nullptr),
                    0);
          ASSERT_TRUE(EVP_DecryptInit_ex(ctx.get(), nullptr, nullptr,
                                         key.data(), iv.data()));
          int outl = 0;
          ASSERT_TRUE(EVP_DecryptUpdate(ctx.get(), nullptr, &outl, aad.data(),
                                        static_cast<int>(aad.size())));
          Bytes back(size + 16);
          ASSERT_TRUE(EVP_DecryptUpdate(ctx.get(), back.data(), &outl,
                                        ct[1].data(), static_cast<int>(size)));
          ASSERT_GT(
              EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_AEAD_SET_TAG,
                                  static_cast<int>(taglen), tag[1].data()),
              0);
          int fin = 0;
          ASSERT_TRUE(EVP_DecryptFinal_ex(ctx.get(), back.data() + outl, &fin))
              << name << " taglen " << taglen << " " << LastReason();
          back.resize(outl + fin);
          EXPECT_EQ(back, pt);
        }
      }
    }
  }
}

// One context per provider seals, and one opens, a series of messages the
// way `openssl speed -evp` and TLS stacks reuse a context: the IV length
// changes between messages (12 -> 16 -> 12 -> 1 -> 60 -> 12 ...), the key is
// given again, left out (NULL: kept) or replaced, and a third context
// switches between sealing and opening. Ciphertexts, tags and the reported
// IV length must equal the default provider's after every message.
TEST_F(ProviderEvpTest, GcmReusedContextMatchesDefault) {
  CipherPtr acc = Fetch("AES-256-GCM", kAccel);
  CipherPtr def = Fetch("AES-256-GCM", kDefault);
  ASSERT_EQ(ProviderOf(acc.get()), "accelcrypt");
  const EVP_CIPHER* ciphers[2] = {acc.get(), def.get()};
  const Bytes keys[2] = {Random(32, 40), Random(32, 41)};
  struct Step {
    size_t ivlen;
    int key;  // index into `keys`, or -1: no key (the context keeps its own)
  };
  const Step steps[] = {{12, 0}, {16, 0},  {12, 0}, {1, -1}, {60, 0},
                        {12, 1}, {12, -1}, {16, 1}, {16, 1}, {12, 0}};
  CtxPtr enc[2], dec[2], both[2];
  for (int i = 0; i < 2; ++i) {
    enc[i].reset(EVP_CIPHER_CTX_new());
    dec[i].reset(EVP_CIPHER_CTX_new());
    both[i].reset(EVP_CIPHER_CTX_new());
    ASSERT_TRUE(EVP_EncryptInit_ex(enc[i].get(), ciphers[i], nullptr, nullptr,
                                   nullptr));
    ASSERT_TRUE(EVP_DecryptInit_ex(dec[i].get(), ciphers[i], nullptr, nullptr,
                                   nullptr));
    ASSERT_TRUE(EVP_EncryptInit_ex(both[i].get(), ciphers[i], nullptr, nullptr,
                                   nullptr));
  }
  for (size_t n = 0; n < std::size(steps); ++n) {
    const Step& step = steps[n];
    const Bytes iv = Random(step.ivlen, 100 + n), aad = Random(13, 200 + n),
                pt = Random(16 + 7 * n, 300 + n);
    const uint8_t* key = step.key < 0 ? nullptr : keys[step.key].data();
    Bytes ct[2], tag[2];
    for (int i = 0; i < 2; ++i) {
      EVP_CIPHER_CTX* ctx = enc[i].get();
      ASSERT_GT(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN,
                                    static_cast<int>(step.ivlen), nullptr),
                0);
      ASSERT_TRUE(EVP_CipherInit_ex(ctx, nullptr, nullptr, key, iv.data(), -1));
      EXPECT_EQ(EVP_CIPHER_CTX_get_iv_length(ctx),
                static_cast<int>(step.ivlen));
      int outl = 0, fin = 0;
      ASSERT_TRUE(EVP_EncryptUpdate(ctx, nullptr, &outl, aad.data(),
                                    static_cast<int>(aad.size())));
      ct[i].assign(pt.size() + 16, 0);
      ASSERT_TRUE(EVP_EncryptUpdate(ctx, ct[i].data(), &outl, pt.data(),
                                    static_cast<int>(pt.size())));
      ASSERT_TRUE(EVP_EncryptFinal_ex(ctx, ct[i].data() + outl, &fin));
      ct[i].resize(outl + fin);
      tag[i].assign(16, 0);
      ASSERT_GT(
          EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16, tag[i].data()),
          0);
    }
    EXPECT_EQ(ct[0], ct[1]) << "message " << n << ", IV " << step.ivlen;
    EXPECT_EQ(tag[0], tag[1]) << "message " << n << ", IV " << step.ivlen;
    // The decrypting contexts open every message; `both` opens it too,
    // right after sealing it again, with the same key and IV: one context
    // switching direction between messages.
    for (int i = 0; i < 2; ++i) {
      EVP_CIPHER_CTX* ctx = both[i].get();
      ASSERT_GT(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN,
                                    static_cast<int>(step.ivlen), nullptr),
                0);
      ASSERT_TRUE(EVP_CipherInit_ex(ctx, nullptr, nullptr, key, iv.data(), 1));
      Bytes again(pt.size() + 16), again_tag(16);
      int outl = 0, fin = 0;
      ASSERT_TRUE(EVP_EncryptUpdate(ctx, nullptr, &outl, aad.data(),
                                    static_cast<int>(aad.size())));
      ASSERT_TRUE(EVP_EncryptUpdate(ctx, again.data(), &outl, pt.data(),
                                    static_cast<int>(pt.size())));
      ASSERT_TRUE(EVP_EncryptFinal_ex(ctx, again.data() + outl, &fin));
      again.resize(outl + fin);
      ASSERT_GT(
          EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16, again_tag.data()),
          0);
      EXPECT_EQ(again, ct[1]) << "message " << n;
      EXPECT_EQ(again_tag, tag[1]) << "message " << n;
    }
    for (int i = 0; i < 4; ++i) {
      EVP_CIPHER_CTX* ctx = i < 2 ? dec[i].get() : both[i - 2].get();
      ASSERT_GT(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN,
                                    static_cast<int>(step.ivlen), nullptr),
                0);
      ASSERT_TRUE(EVP_CipherInit_ex(ctx, nullptr, nullptr, key, iv.data(), 0));
      int outl = 0, fin = 0;
      ASSERT_TRUE(EVP_DecryptUpdate(ctx, nullptr, &outl, aad.data(),
                                    static_cast<int>(aad.size())));
      Bytes back(ct[1].size() + 16);
      ASSERT_TRUE(EVP_DecryptUpdate(ctx, back.data(), &outl, ct[1].data(),
                                    static_cast<int>(ct[1].size())));
      ASSERT_GT(
          EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, 16, tag[1].data()),
          0);
      ASSERT_TRUE(EVP_DecryptFinal_ex(ctx, back.data() + outl, &fin))
          << "message " << n << ": " << LastReason();
      back.resize(outl + fin);
      EXPECT_EQ(back, pt) << "message " << n;
    }
  }
}

// GCM updates in place give the default provider's ciphertext; buffers
// that partly overlap are refused (the output would overwrite input not
// yet read) rather than producing garbage.
TEST_F(ProviderEvpTest, GcmInPlaceWorksAndPartialOverlapIsRefused) {
  CipherPtr acc = Fetch("AES-256-GCM", kAccel);
  CipherPtr def = Fetch("AES-256-GCM", kDefault);
  const Bytes key = Random(32, 60), iv = Random(12, 61), pt = Random(64, 62);
  Bytes ct[2];
  const EVP_CIPHER* ciphers[2] = {acc.get(), def.get()};
  for (int i = 0; i < 2; ++i) {
    CtxPtr ctx(EVP_CIPHER_CTX_new());
    ASSERT_TRUE(EVP_EncryptInit_ex2(ctx.get(), ciphers[i], key.data(),
                                    iv.data(), nullptr));
    ct[i] = pt;
    int outl = 0, fin = 0;
    ASSERT_TRUE(EVP_EncryptUpdate(ctx.get(), ct[i].data(), &outl, ct[i].data(),
                                  static_cast<int>(ct[i].size())));
    ASSERT_TRUE(EVP_EncryptFinal_ex(ctx.get(), nullptr, &fin));
  }
  EXPECT_EQ(ct[0], ct[1]);
  CtxPtr ctx(EVP_CIPHER_CTX_new());
  ASSERT_TRUE(EVP_EncryptInit_ex2(ctx.get(), acc.get(), key.data(), iv.data(),
                                  nullptr));
  Bytes buf(pt.size() + 8);
  std::copy(pt.begin(), pt.end(), buf.begin());
  int outl = 0;
  EXPECT_FALSE(EVP_EncryptUpdate(ctx.get(), buf.data() + 8, &outl, buf.data(),
                                 static_cast<int>(pt.size())));
  ERR_clear_error();
}

// IV length requests outside 1..128 are refused and change nothing; a new
// length after the IV was given spends that IV (the next update fails until
// a re-init). Each step must give the default provider's result.
TEST_F(ProviderEvpTest, GcmIvLengthRequestsMatchDefault) {
  CipherPtr acc = Fetch("AES-128-GCM", kAccel);
  CipherPtr def = Fetch("AES-128-GCM", kDefault);
  const EVP_CIPHER* ciphers[2] = {acc.get(), def.get()};
  const Bytes key = Random(16, 70), iv = Random(12, 71);
  std::vector<int> results[2];
  for (int i = 0; i < 2; ++i) {
    std::vector<int>& r = results[i];
    CtxPtr ctx(EVP_CIPHER_CTX_new());
    ASSERT_TRUE(
        EVP_EncryptInit_ex(ctx.get(), ciphers[i], nullptr, nullptr, nullptr));
    for (int len : {0, 129, 128, 12}) {
      r.push_back(EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_AEAD_SET_IVLEN, len,
                                      nullptr) > 0);
      r.push_back(EVP_CIPHER_CTX_get_iv_length(ctx.get()));
      ERR_clear_error();
    }
    r.push_back(
        EVP_EncryptInit_ex(ctx.get(), nullptr, nullptr, key.data(), iv.data()));
    Bytes buf(32);
    int outl = 0;
    r.push_back(
        EVP_EncryptUpdate(ctx.get(), buf.data(), &outl, buf.data(), 16));
    // Same length again: the IV stays usable.
    r.push_back(EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_AEAD_SET_IVLEN, 12,
                                    nullptr) > 0);
    r.push_back(
        EVP_EncryptUpdate(ctx.get(), buf.data(), &outl, buf.data(), 16));
    // A new length: the IV given is spent.
    r.push_back(EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_AEAD_SET_IVLEN, 16,
                                    nullptr) > 0);
    r.push_back(EVP_CIPHER_CTX_get_iv_length(ctx.get()));
    r.push_back(
        EVP_EncryptUpdate(ctx.get(), buf.data(), &outl, buf.data(), 16));
    ERR_clear_error();
  }
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(results[1], (std::vector<int>{0, 12, 0, 12, 1, 128, 1, 12, 1, 1, 1,
                                          1, 1, 16, 0}));
}

// A GCM context copied mid-message finishes like the original, and a copy
// taken after a message seals the next one under the same key (re-init
// with that key, a new IV length and IV): all as the default provider.
TEST_F(ProviderEvpTest, GcmCopiedContextsMatchDefault) {
  CipherPtr acc = Fetch("AES-256-GCM", kAccel);
  CipherPtr def = Fetch("AES-256-GCM", kDefault);
  const EVP_CIPHER* ciphers[2] = {acc.get(), def.get()};
  const Bytes key = Random(32, 80), iv = Random(12, 81), iv2 = Random(16, 82),
              aad = Random(13, 83), pt = Random(48, 84);
  // Per provider: original's and copy's ciphertext + tag of message 1,
  // then the copy-after-final's ciphertext + tag of message 2.
  Bytes out[2][3];
  for (int i = 0; i < 2; ++i) {
    CtxPtr ctx(EVP_CIPHER_CTX_new());
    ASSERT_TRUE(EVP_EncryptInit_ex2(ctx.get(), ciphers[i], key.data(),
                                    iv.data(), nullptr));
    int outl = 0;
    ASSERT_TRUE(EVP_EncryptUpdate(ctx.get(), nullptr, &outl, aad.data(),
                                  static_cast<int>(aad.size())));
    Bytes head(16);
    ASSERT_TRUE(
        EVP_EncryptUpdate(ctx.get(), head.data(), &outl, pt.data(), 16));
    CtxPtr copy(EVP_CIPHER_CTX_new());
    ASSERT_TRUE(EVP_CIPHER_CTX_copy(copy.get(), ctx.get()));
    EVP_CIPHER_CTX* both[2] = {ctx.get(), copy.get()};
    for (int j = 0; j < 2; ++j) {
      Bytes rest(32), tag(16);
      int fin = 0;
      ASSERT_TRUE(
          EVP_EncryptUpdate(both[j], rest.data(), &outl, pt.data() + 16, 32));
      ASSERT_TRUE(EVP_EncryptFinal_ex(both[j], nullptr, &fin));
      ASSERT_GT(
          EVP_CIPHER_CTX_ctrl(both[j], EVP_CTRL_AEAD_GET_TAG, 16, tag.data()),
          0);
      out[i][j] = head;
      out[i][j].insert(out[i][j].end(), rest.begin(), rest.end());
      out[i][j].insert(out[i][j].end(), tag.begin(), tag.end());
    }
    CtxPtr after(EVP_CIPHER_CTX_new());
    ASSERT_TRUE(EVP_CIPHER_CTX_copy(after.get(), ctx.get()));
    ASSERT_GT(
        EVP_CIPHER_CTX_ctrl(after.get(), EVP_CTRL_AEAD_SET_IVLEN, 16, nullptr),
        0);
    ASSERT_TRUE(EVP_EncryptInit_ex(after.get(), nullptr, nullptr, key.data(),
                                   iv2.data()));
    Bytes ct(pt.size()), tag(16);
    int fin = 0;
    ASSERT_TRUE(EVP_EncryptUpdate(after.get(), ct.data(), &outl, pt.data(),
                                  static_cast<int>(pt.size())));
    ASSERT_TRUE(EVP_EncryptFinal_ex(after.get(), nullptr, &fin));
    ASSERT_GT(
        EVP_CIPHER_CTX_ctrl(after.get(), EVP_CTRL_AEAD_GET_TAG, 16, tag.data()),
        0);
    out[i][2] = ct;
    out[i][2].insert(out[i][2].end(), tag.begin(), tag.end());
  }
  EXPECT_EQ(out[0][0], out[1][0]);
  EXPECT_EQ(out[0][1], out[1][1]);
  EXPECT_EQ(out[1][0], out[1][1]);
  EXPECT_EQ(out[0][2], out[1][2]);
}

// A get_ctx_params array holding several keys at once, a key twice and a
// key GCM does not know is answered as the default provider answers it:
// same result, same values, the same entries marked as modified.
TEST_F(ProviderEvpTest, GcmGetParamsArrayMatchesDefault) {
  CipherPtr acc = Fetch("AES-128-GCM", kAccel);
  CipherPtr def = Fetch("AES-128-GCM", kDefault);
  const EVP_CIPHER* ciphers[2] = {acc.get(), def.get()};
  const Bytes key = Random(16, 50), iv = Random(16, 51), pt = Random(20, 52);
  for (bool after_final : {false, true}) {
    struct Answer {
      int rc;
      size_t keylen, ivlen, taglen, dup;
      uint8_t iv[16], updated[16], tag[16];
      bool modified[8];
    } got[2] = {};
    for (int i = 0; i < 2; ++i) {
      CtxPtr ctx(EVP_CIPHER_CTX_new());
      ASSERT_TRUE(
          EVP_EncryptInit_ex(ctx.get(), ciphers[i], nullptr, nullptr, nullptr));
      ASSERT_GT(
          EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_AEAD_SET_IVLEN, 16, nullptr),
          0);
      ASSERT_TRUE(EVP_EncryptInit_ex(ctx.get(), nullptr, nullptr, key.data(),
                                     iv.data()));
      if (after_final) {
        Bytes ct(pt.size() + 16);
        int outl = 0, fin = 0;
        ASSERT_TRUE(EVP_EncryptUpdate(ctx.get(), ct.data(), &outl, pt.data(),
                                      static_cast<int>(pt.size())));
        ASSERT_TRUE(EVP_EncryptFinal_ex(ctx.get(), ct.data() + outl, &fin));
      }
      Answer& a = got[i];
      size_t unknown = 77;
      OSSL_PARAM params[] = {
          OSSL_PARAM_construct_size_t(OSSL_CIPHER_PARAM_IVLEN, &a.ivlen),
          OSSL_PARAM_construct_size_t("no-such-key", &unknown),
          OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_IV, a.iv,
                                            sizeof(a.iv)),
          OSSL_PARAM_construct_size_t(OSSL_CIPHER_PARAM_KEYLEN, &a.keylen),
          OSSL_PARAM_construct_size_t(OSSL_CIPHER_PARAM_IVLEN, &a.dup),
          OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_UPDATED_IV,
                                            a.updated, sizeof(a.updated)),
          OSSL_PARAM_construct_size_t(OSSL_CIPHER_PARAM_AEAD_TAGLEN, &a.taglen),
          OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, a.tag,
                                            sizeof(a.tag)),
          OSSL_PARAM_construct_end()};
      a.rc = EVP_CIPHER_CTX_get_params(ctx.get(), params);
      for (size_t j = 0; j < 8; ++j) {
        a.modified[j] = OSSL_PARAM_modified(&params[j]) != 0;
      }
      EXPECT_EQ(unknown, 77u);
      ERR_clear_error();
    }
    EXPECT_EQ(got[0].rc, got[1].rc) << "after final " << after_final;
    EXPECT_EQ(after_final, got[0].rc == 1);
    for (size_t j = 0; j < 8; ++j) {
      EXPECT_EQ(got[0].modified[j], got[1].modified[j])
          << "entry " << j << ", after final " << after_final;
    }
    EXPECT_EQ(got[0].ivlen, got[1].ivlen);
    EXPECT_EQ(got[0].keylen, got[1].keylen);
    EXPECT_EQ(got[0].dup, got[1].dup);
    EXPECT_EQ(got[0].taglen, got[1].taglen);
    EXPECT_EQ(0, std::memcmp(got[0].iv, got[1].iv, sizeof(got[0].iv)));
    EXPECT_EQ(0, std::memcmp(got[0].updated, got[1].updated, 16));
    EXPECT_EQ(0, std::memcmp(got[0].tag, got[1].tag, sizeof(got[0].tag)));
  }
}

TEST_F(ProviderEvpTest, GcmTagMismatchFailsWithOurReason) {
  CipherPtr acc = Fetch("AES-128-GCM", kAccel);
  const Bytes key = Random(16, 20), iv = Random(12, 21), pt = Random(33, 22);
  CtxPtr ctx(EVP_CIPHER_CTX_new());
  ASSERT_TRUE(EVP_EncryptInit_ex2(ctx.get(), acc.get(), key.data(), iv.data(),
                                  nullptr));
  Bytes ct(pt.size());
  int outl = 0, fin = 0;
  ASSERT_TRUE(EVP_EncryptUpdate(ctx.get(), ct.data(), &outl, pt.data(),
                                static_cast<int>(pt.size())));
  ASSERT_TRUE(EVP_EncryptFinal_ex(ctx.get(), nullptr, &fin));
  Bytes tag(16);
  ASSERT_GT(
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_AEAD_GET_TAG, 16, tag.data()), 0);
  tag[3] ^= 0x40;

  CtxPtr dec(EVP_CIPHER_CTX_new());
  ASSERT_TRUE(EVP_DecryptInit_ex2(dec.get(), acc.get(), key.data(), iv.data(),
                                  nullptr));
  Bytes back(pt.size());
  ASSERT_TRUE(EVP_DecryptUpdate(dec.get(), back.data(), &outl, ct.data(),
                                static_cast<int>(ct.size())));
  ASSERT_GT(
      EVP_CIPHER_CTX_ctrl(dec.get(), EVP_CTRL_AEAD_SET_TAG, 16, tag.data()), 0);
  EXPECT_FALSE(EVP_DecryptFinal_ex(dec.get(), nullptr, &fin));
  EXPECT_EQ(LastReason(), "authentication tag mismatch");
  // The spent context refuses more data instead of decrypting unverified.
  EXPECT_FALSE(EVP_DecryptUpdate(dec.get(), back.data(), &outl, ct.data(),
                                 static_cast<int>(ct.size())));
  EXPECT_EQ(LastReason(), "operation already finished");
}

TEST_F(ProviderEvpTest, GcmMisuseGivesClearErrors) {
  CipherPtr acc = Fetch("AES-256-GCM", kAccel);
  const Bytes key = Random(32, 30), iv = Random(12, 31);
  CtxPtr ctx(EVP_CIPHER_CTX_new());
  ASSERT_TRUE(EVP_EncryptInit_ex2(ctx.get(), acc.get(), key.data(), iv.data(),
                                  nullptr));
  Bytes tag(16);
  // No tag before final.
  EXPECT_LE(
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_AEAD_GET_TAG, 16, tag.data()), 0);
  EXPECT_EQ(LastReason(), "invalid tag");
  // Setting a tag is for decryption only.
  EXPECT_LE(
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_AEAD_SET_TAG, 16, tag.data()), 0);
  EXPECT_EQ(LastReason(), "invalid tag");
  // A TLS record AAD must be 13 bytes.
  uint8_t tls_aad[12] = {0};
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TLS1_AAD,
                                        tls_aad, sizeof(tls_aad)),
      OSSL_PARAM_construct_end()};
  EXPECT_FALSE(EVP_CIPHER_CTX_set_params(ctx.get(), params));
  EXPECT_EQ(LastReason(), "invalid argument");
  // TLS record parameters on a mode TLS never pads are refused, not
  // silently ignored.
  CipherPtr ctr = Fetch("AES-128-CTR", kAccel);
  CtxPtr ctr_ctx(EVP_CIPHER_CTX_new());
  const Bytes ctr_iv = Random(16, 32);
  ASSERT_TRUE(EVP_EncryptInit_ex2(ctr_ctx.get(), ctr.get(), key.data(),
                                  ctr_iv.data(), nullptr));
  unsigned int version = 0x0303;
  OSSL_PARAM tls[] = {
      OSSL_PARAM_construct_uint(OSSL_CIPHER_PARAM_TLS_VERSION, &version),
      OSSL_PARAM_construct_end()};
  EXPECT_FALSE(EVP_CIPHER_CTX_set_params(ctr_ctx.get(), tls));
  EXPECT_EQ(LastReason(), "not supported");
  // Decrypt final without a tag.
  CtxPtr dec(EVP_CIPHER_CTX_new());
  ASSERT_TRUE(EVP_DecryptInit_ex2(dec.get(), acc.get(), key.data(), iv.data(),
                                  nullptr));
  int fin = 0;
  EXPECT_FALSE(EVP_DecryptFinal_ex(dec.get(), nullptr, &fin));
  EXPECT_EQ(LastReason(), "invalid tag");
}

// GCM seals many messages on one context (a new IV each): the tag of each
// is the default provider's whenever it is asked for after final, from the
// context or from a copy made after final, also after a re-init that fed
// nothing yet; once the next message has started, the old tag is refused,
// never given stale.
TEST_F(ProviderEvpTest, GcmTagAfterFinalAcrossMessages) {
  CipherPtr acc = Fetch("AES-128-GCM", kAccel);
  CipherPtr def = Fetch("AES-128-GCM", kDefault);
  const Bytes key = Random(16, 40);
  CtxPtr ctx(EVP_CIPHER_CTX_new());
  ASSERT_TRUE(
      EVP_EncryptInit_ex2(ctx.get(), acc.get(), key.data(), nullptr, nullptr));
  for (uint32_t m = 0; m < 6; ++m) {
    const Bytes iv = Random(12, 50 + m), aad = Random(13, 60 + m),
                pt = Random(m * 37, 70 + m);
    // The default provider's tag for this message.
    CtxPtr ref(EVP_CIPHER_CTX_new());
    Bytes want_ct(pt.size() + 16), want_tag(16), ct(pt.size() + 16), tag(16);
    int n = 0;
    ASSERT_TRUE(EVP_EncryptInit_ex2(ref.get(), def.get(), key.data(), iv.data(),
                                    nullptr));
    ASSERT_TRUE(EVP_EncryptUpdate(ref.get(), nullptr, &n, aad.data(),
                                  static_cast<int>(aad.size())));
    ASSERT_TRUE(EVP_EncryptUpdate(ref.get(), want_ct.data(), &n, pt.data(),
                                  static_cast<int>(pt.size())));
    ASSERT_TRUE(EVP_EncryptFinal_ex(ref.get(), want_ct.data() + n, &n));
    ASSERT_GT(EVP_CIPHER_CTX_ctrl(ref.get(), EVP_CTRL_AEAD_GET_TAG, 16,
                                  want_tag.data()),
              0);
    ASSERT_TRUE(
        EVP_CipherInit_ex(ctx.get(), nullptr, nullptr, nullptr, iv.data(), 1));
    ASSERT_TRUE(EVP_EncryptUpdate(ctx.get(), nullptr, &n, aad.data(),
                                  static_cast<int>(aad.size())));
    ASSERT_TRUE(EVP_EncryptUpdate(ctx.get(), ct.data(), &n, pt.data(),
                                  static_cast<int>(pt.size())));
    ASSERT_TRUE(EVP_EncryptFinal_ex(ctx.get(), ct.data() + n, &n));
    switch (m % 3) {
      case 0: {  // asked twice
        for (int i = 0; i < 2; ++i) {
          ASSERT_GT(EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_AEAD_GET_TAG, 16,
                                        tag.data()),
                    0);
          EXPECT_EQ(tag, want_tag) << "message " << m;
        }
        break;
      }
      case 1: {  // from a copy made after final
        CtxPtr copy(EVP_CIPHER_CTX_new());
        ASSERT_TRUE(EVP_CIPHER_CTX_copy(copy.get(), ctx.get()));
        ASSERT_GT(EVP_CIPHER_CTX_ctrl(copy.get(), EVP_CTRL_AEAD_GET_TAG, 16,
                                      tag.data()),
                  0);
        EXPECT_EQ(tag, want_tag) << "message " << m << " (copy)";
        break;
      }
      case 2: {  // after a re-init that fed nothing, then after the start
        const Bytes next_iv = Random(12, 90 + m);
        ASSERT_TRUE(EVP_CipherInit_ex(ctx.get(), nullptr, nullptr, nullptr,
                                      next_iv.data(), 1));
        ASSERT_GT(EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_AEAD_GET_TAG, 16,
                                      tag.data()),
                  0);
        EXPECT_EQ(tag, want_tag) << "message " << m << " (after re-init)";
        // An AAD-only message whose tag is never asked for: refused once
        // the message after it has started.
        ASSERT_TRUE(EVP_EncryptUpdate(ctx.get(), nullptr, &n, aad.data(),
                                      static_cast<int>(aad.size())));
        ASSERT_TRUE(EVP_EncryptFinal_ex(ctx.get(), ct.data(), &n));
        const Bytes third_iv = Random(12, 110 + m);
        ASSERT_TRUE(EVP_CipherInit_ex(ctx.get(), nullptr, nullptr, nullptr,
                                      third_iv.data(), 1));
        ASSERT_TRUE(EVP_EncryptUpdate(ctx.get(), nullptr, &n, aad.data(),
                                      static_cast<int>(aad.size())));
        EXPECT_LE(EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_AEAD_GET_TAG, 16,
                                      tag.data()),
                  0)
            << "the unread tag of a finished message is gone once the next "
               "one started";
        EXPECT_EQ(LastReason(), "invalid tag");
        ASSERT_TRUE(EVP_EncryptFinal_ex(ctx.get(), ct.data(), &n));
        break;
      }
    }
    ct.resize(pt.size());
    want_ct.resize(pt.size());
    EXPECT_EQ(ct, want_ct) << "message " << m;
  }
}

}  // namespace
}  // namespace accelcrypt::provider_evp_test
