// SPDX-License-Identifier: Apache-2.0
// accelcrypt.so through libcrypto's EVP API, loaded only by configuration
// (OPENSSL_CONF names the test config, which keeps OpenSSL's default
// provider active next to ours). Every result is compared with OpenSSL's
// default provider fetched explicitly with "provider=default". Links
// libcrypto only: no accelcrypt internals.
#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>
#include <openssl/rand.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace {

using Bytes = std::vector<uint8_t>;

constexpr const char* kAccel = "provider=accelcrypt";
constexpr const char* kDefault = "provider=default";

const std::vector<std::string>& CipherNames() {
  static const std::vector<std::string> names = {
      "AES-128-ECB", "AES-192-ECB", "AES-256-ECB", "AES-128-CBC",
      "AES-192-CBC", "AES-256-CBC", "AES-128-CFB", "AES-192-CFB",
      "AES-256-CFB", "AES-128-OFB", "AES-192-OFB", "AES-256-OFB",
      "AES-128-CTR", "AES-192-CTR", "AES-256-CTR"};
  return names;
}

struct CipherDeleter {
  void operator()(EVP_CIPHER* c) const { EVP_CIPHER_free(c); }
};
struct CtxDeleter {
  void operator()(EVP_CIPHER_CTX* c) const { EVP_CIPHER_CTX_free(c); }
};
struct MdDeleter {
  void operator()(EVP_MD* m) const { EVP_MD_free(m); }
};
using CipherPtr = std::unique_ptr<EVP_CIPHER, CipherDeleter>;
using CtxPtr = std::unique_ptr<EVP_CIPHER_CTX, CtxDeleter>;
using MdPtr = std::unique_ptr<EVP_MD, MdDeleter>;

CipherPtr Fetch(const std::string& name, const char* props) {
  return CipherPtr(EVP_CIPHER_fetch(nullptr, name.c_str(), props));
}

std::string ProviderOf(const EVP_CIPHER* c) {
  return OSSL_PROVIDER_get0_name(EVP_CIPHER_get0_provider(c));
}

Bytes Random(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  Bytes out(n);
  for (auto& b : out) b = static_cast<uint8_t>(gen());
  return out;
}

// LastReason returns the reason string of the newest queued error, and
// clears the queue.
std::string LastReason() {
  unsigned long e = ERR_peek_last_error();
  const char* r = e != 0 ? ERR_reason_error_string(e) : nullptr;
  std::string out = r != nullptr ? r : "";
  ERR_clear_error();
  return out;
}

// Crypt runs a whole encryption or decryption, feeding `in` in pieces of
// `chunk` bytes (0 = one piece). Returns false on any EVP failure.
// A chunk of kMixedChunks feeds the schedule 16, 5, 11, 32, 3, 48, ...:
// whole blocks, then partial ones, then whole blocks again.
constexpr size_t kMixedChunks = static_cast<size_t>(-1);

bool Crypt(const EVP_CIPHER* cipher, bool enc, const Bytes& key,
           const Bytes& iv, const Bytes& in, size_t chunk, Bytes* out,
           bool pad = true) {
  static constexpr size_t kSchedule[] = {16, 5, 11, 32, 3, 48};
  size_t step = 0;
  CtxPtr ctx(EVP_CIPHER_CTX_new());
  if (!EVP_CipherInit_ex2(ctx.get(), cipher, key.data(),
                          iv.empty() ? nullptr : iv.data(), enc ? 1 : 0,
                          nullptr)) {
    return false;
  }
  EVP_CIPHER_CTX_set_padding(ctx.get(), pad ? 1 : 0);
  out->assign(in.size() + 32, 0);
  size_t done = 0;
  int total = 0;
  if (chunk == 0) chunk = std::max<size_t>(in.size(), 1);
  while (done < in.size()) {
    const size_t want = chunk == kMixedChunks ? kSchedule[step++ % 6] : chunk;
    size_t n = std::min(want, in.size() - done);
    int outl = 0;
    if (!EVP_CipherUpdate(ctx.get(), out->data() + total, &outl,
                          in.data() + done, static_cast<int>(n))) {
      return false;
    }
    total += outl;
    done += n;
  }
  int outl = 0;
  if (!EVP_CipherFinal_ex(ctx.get(), out->data() + total, &outl)) return false;
  out->resize(total + outl);
  return true;
}

// QueuedReason reports whether any queued error carries `reason`, and
// clears the queue (libcrypto may add its own error after ours).
bool QueuedReason(const std::string& reason) {
  bool found = false;
  unsigned long e;
  while ((e = ERR_get_error()) != 0) {
    const char* r = ERR_reason_error_string(e);
    if (r != nullptr && reason == r) found = true;
  }
  return found;
}

class ProviderEvpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(getenv("OPENSSL_CONF"), nullptr)
        << "run through CTest: OPENSSL_CONF must name the test config";
    ASSERT_TRUE(OSSL_PROVIDER_available(nullptr, "accelcrypt"))
        << "accelcrypt not loaded from " << getenv("OPENSSL_CONF");
    ERR_clear_error();
  }
};

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

// libssl's TLS 1.2 GCM record path (RFC 5288): fixed IV, per-record AAD,
// in-place EVP_Cipher with explicit IV and tag. Records sealed by us open
// with the default provider and the other way round.
bool TlsGcmRecord(const EVP_CIPHER* cipher, bool enc, const Bytes& key,
                  const Bytes& fixed_iv, uint8_t seq, Bytes* record,
                  EVP_CIPHER_CTX* ctx) {
  if (ctx == nullptr) return false;
  if (EVP_CIPHER_CTX_get0_cipher(ctx) == nullptr) {
    if (!EVP_CipherInit_ex(ctx, cipher, nullptr, key.data(), nullptr,
                           enc ? 1 : 0) ||
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IV_FIXED,
                            static_cast<int>(fixed_iv.size()),
                            const_cast<uint8_t*>(fixed_iv.data())) <= 0) {
      return false;
    }
  }
  uint8_t aad[13] = {0, 0, 0, 0, 0, 0, 0, seq, 23, 3, 3, 0, 0};
  size_t len = record->size();
  aad[11] = static_cast<uint8_t>(len >> 8);
  aad[12] = static_cast<uint8_t>(len);
  if (enc) {
    // The AAD length is the plaintext length; the record grows by 24.
    size_t plain = len;
    aad[11] = static_cast<uint8_t>((plain + 8) >> 8);
    aad[12] = static_cast<uint8_t>(plain + 8);
    record->insert(record->begin(), 8, 0);
    record->resize(plain + 24);
  }
  if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_TLS1_AAD, 13, aad) != 16) {
    return false;
  }
  int n = EVP_Cipher(ctx, record->data(), record->data(),
                     static_cast<unsigned int>(record->size()));
  if (n < 0) return false;
  if (!enc) {
    record->erase(record->begin(), record->begin() + 8);
    record->resize(record->size() - 16);
  }
  return true;
}

TEST_F(ProviderEvpTest, TlsGcmRecordsInteroperateWithDefault) {
  CipherPtr acc = Fetch("AES-128-GCM", kAccel);
  CipherPtr def = Fetch("AES-128-GCM", kDefault);
  const Bytes key = Random(16, 90), fixed = Random(4, 91);
  for (int direction = 0; direction < 2; ++direction) {
    const EVP_CIPHER* sealer = direction == 0 ? acc.get() : def.get();
    const EVP_CIPHER* opener = direction == 0 ? def.get() : acc.get();
    CtxPtr seal(EVP_CIPHER_CTX_new()), open(EVP_CIPHER_CTX_new());
    for (uint8_t seq = 0; seq < 4; ++seq) {
      const Bytes msg = Random(100 + seq * 37, 92 + seq);
      Bytes record = msg;
      ASSERT_TRUE(
          TlsGcmRecord(sealer, true, key, fixed, seq, &record, seal.get()))
          << "direction " << direction << " " << LastReason();
      Bytes copy = record;
      ASSERT_TRUE(
          TlsGcmRecord(opener, false, key, fixed, seq, &record, open.get()))
          << "direction " << direction << " " << LastReason();
      EXPECT_EQ(record, msg);
      if (seq == 3) {
        // A flipped ciphertext bit fails to open and leaves no plaintext.
        CtxPtr bad(EVP_CIPHER_CTX_new());
        copy[20] ^= 1;
        EXPECT_FALSE(
            TlsGcmRecord(acc.get(), false, key, fixed, seq, &copy, bad.get()));
        ERR_clear_error();
      }
    }
  }
}

// TLS GCM's explicit IV (TLS1_GET_IV_GEN, EVP_CTRL_GCM_IV_GEN) is written
// into the caller's buffer and never past it: successive calls count up, and
// a buffer of 0 bytes is refused with nothing written (OpenSSL's getivgen
// takes 0 as "the whole IV"; the provider_params fuzzer found the overflow:
// regress-gcm-ivgen-zero-size).
TEST_F(ProviderEvpTest, TlsGcmIvGenWritesOnlyIntoTheCallersBuffer) {
  CipherPtr acc = Fetch("AES-128-GCM", kAccel);
  const Bytes key = Random(16, 93), fixed = Random(4, 94);
  CtxPtr ctx(EVP_CIPHER_CTX_new());
  ASSERT_TRUE(EVP_CipherInit_ex2(ctx.get(), acc.get(), key.data(), nullptr, 1,
                                 nullptr));
  Bytes fixed_copy = fixed;
  ASSERT_EQ(EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IV_FIXED, 4,
                                fixed_copy.data()),
            1)
      << LastReason();
  Bytes first(8), second(8);
  ASSERT_EQ(
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_IV_GEN, 8, first.data()), 1)
      << LastReason();
  ASSERT_EQ(
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_IV_GEN, 8, second.data()), 1)
      << LastReason();
  uint64_t a = 0, b = 0;
  for (int i = 0; i < 8; ++i) {
    a = (a << 8) | first[i];
    b = (b << 8) | second[i];
  }
  EXPECT_EQ(b, a + 1) << "the invocation counter did not count up";

  unsigned char guard[16];
  std::memset(guard, 0xA5, sizeof(guard));
  OSSL_PARAM get[] = {OSSL_PARAM_construct_octet_string(
                          OSSL_CIPHER_PARAM_AEAD_TLS1_GET_IV_GEN, guard, 0),
                      OSSL_PARAM_construct_end()};
  EXPECT_EQ(EVP_CIPHER_CTX_get_params(ctx.get(), get), 0);
  for (unsigned char c : guard) EXPECT_EQ(c, 0xA5) << "written past 0 bytes";
  ERR_clear_error();
}

// One TLS 1.2 CBC record through libssl's provider interface: version and
// MAC size as parameters, the record in place through update, the MAC
// fetched as a parameter. Returns the update's output length.
struct TlsCbcResult {
  bool ok = false;
  int outl = 0;
  Bytes record;
  Bytes mac;
};

TlsCbcResult TlsCbcRecord(const EVP_CIPHER* cipher, bool enc, const Bytes& key,
                          const Bytes& iv, Bytes record, size_t mac_size,
                          unsigned int version = 0x0303) {
  TlsCbcResult r;
  CtxPtr ctx(EVP_CIPHER_CTX_new());
  if (!EVP_CipherInit_ex2(ctx.get(), cipher, key.data(), iv.data(), enc ? 1 : 0,
                          nullptr)) {
    return r;
  }
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_uint(OSSL_CIPHER_PARAM_TLS_VERSION, &version),
      OSSL_PARAM_construct_size_t(OSSL_CIPHER_PARAM_TLS_MAC_SIZE, &mac_size),
      OSSL_PARAM_construct_end()};
  if (!EVP_CIPHER_CTX_set_params(ctx.get(), params)) return r;
  const size_t len = record.size();
  record.resize(len + 16);
  if (!EVP_CipherUpdate(ctx.get(), record.data(), &r.outl, record.data(),
                        static_cast<int>(len))) {
    return r;
  }
  if (!enc && mac_size > 0) {
    unsigned char* mac = nullptr;
    OSSL_PARAM get[] = {OSSL_PARAM_construct_octet_ptr(
                            OSSL_CIPHER_PARAM_TLS_MAC,
                            reinterpret_cast<void**>(&mac), mac_size),
                        OSSL_PARAM_construct_end()};
    if (!EVP_CIPHER_CTX_get_params(ctx.get(), get)) return r;
    if (mac_size > 0 && mac == nullptr) return r;
    r.mac.assign(mac, mac + mac_size);
  }
  r.record = record;
  r.ok = true;
  return r;
}

TEST_F(ProviderEvpTest, TlsCbcRecordsMatchDefault) {
  CipherPtr acc = Fetch("AES-256-CBC", kAccel);
  CipherPtr def = Fetch("AES-256-CBC", kDefault);
  const Bytes key = Random(32, 100), iv = Random(16, 101);
  for (size_t mac_size : {size_t{20}, size_t{32}, size_t{48}, size_t{0}}) {
    for (size_t payload : {0, 1, 15, 16, 100, 1000}) {
      // explicit IV | payload | MAC, as libssl lays out a record to seal.
      Bytes plain = Random(16 + payload + mac_size, 102 + payload);
      const Bytes true_mac(plain.end() - mac_size, plain.end());
      TlsCbcResult seal_acc =
          TlsCbcRecord(acc.get(), true, key, iv, plain, mac_size);
      TlsCbcResult seal_def =
          TlsCbcRecord(def.get(), true, key, iv, plain, mac_size);
      ASSERT_TRUE(seal_acc.ok) << LastReason();
      ASSERT_TRUE(seal_def.ok);
      ASSERT_EQ(seal_acc.outl, seal_def.outl);
      EXPECT_EQ(seal_acc.record, seal_def.record)
          << "mac " << mac_size << " payload " << payload;
      Bytes sealed(seal_def.record.begin(),
                   seal_def.record.begin() + seal_def.outl);
      TlsCbcResult open_acc =
          TlsCbcRecord(acc.get(), false, key, iv, sealed, mac_size);
      TlsCbcResult open_def =
          TlsCbcRecord(def.get(), false, key, iv, sealed, mac_size);
      ASSERT_TRUE(open_acc.ok) << LastReason();
      ASSERT_TRUE(open_def.ok) << "default provider: " << LastReason();
      EXPECT_EQ(open_acc.outl, static_cast<int>(payload));
      EXPECT_EQ(open_acc.outl, open_def.outl);
      EXPECT_EQ(open_acc.mac, true_mac);
      EXPECT_EQ(
          0, memcmp(open_acc.record.data() + 16, plain.data() + 16, payload));
      // Corrupt the padding: with a MAC, opening "succeeds" with a random
      // MAC (libssl's MAC check then fails in constant time); without one
      // (encrypt-then-MAC) the bad padding is reported.
      Bytes bad = sealed;
      bad[bad.size() - 17] ^= 0x01;  // flips a byte of the last plaintext block
      TlsCbcResult bad_acc =
          TlsCbcRecord(acc.get(), false, key, iv, bad, mac_size);
      TlsCbcResult bad_def =
          TlsCbcRecord(def.get(), false, key, iv, bad, mac_size);
      EXPECT_EQ(bad_acc.ok, bad_def.ok) << "mac " << mac_size;
      if (bad_acc.ok && mac_size > 0) {
        EXPECT_EQ(bad_acc.outl, bad_def.outl);
        EXPECT_NE(bad_acc.mac, true_mac);
      }
      ERR_clear_error();
    }
  }
}

// Every padding length, every corrupted byte of the last two blocks, TLS
// 1.0 (no explicit IV) and 1.2: opening agrees with the default provider on
// success and length, and returns the true MAC exactly when the record is
// intact.
TEST_F(ProviderEvpTest, TlsCbcEveryPaddingAndCorruptionMatchesDefault) {
  CipherPtr acc = Fetch("AES-128-CBC", kAccel);
  CipherPtr def = Fetch("AES-128-CBC", kDefault);
  const Bytes key = Random(16, 110), iv = Random(16, 111);
  for (unsigned int version : {0x0301u, 0x0303u}) {
    const size_t explicit_iv = version == 0x0301u ? 0 : 16;
    for (size_t mac_size : {size_t{20}, size_t{0}}) {
      for (size_t payload = 0; payload < 40; ++payload) {
        Bytes plain = Random(explicit_iv + payload + mac_size, 112 + payload);
        const Bytes true_mac(plain.end() - mac_size, plain.end());
        TlsCbcResult seal =
            TlsCbcRecord(def.get(), true, key, iv, plain, mac_size, version);
        ASSERT_TRUE(seal.ok);
        const Bytes sealed(seal.record.begin(),
                           seal.record.begin() + seal.outl);
        for (size_t flip = 0; flip <= std::min<size_t>(32, sealed.size());
             ++flip) {
          Bytes rec = sealed;
          // flip 0 leaves the record intact; otherwise corrupt one byte
          // counted from the end (CBC: it garbles the last plaintext
          // block's matching byte and the block after it).
          if (flip > 0) rec[rec.size() - flip] ^= 0x5a;
          TlsCbcResult a =
              TlsCbcRecord(acc.get(), false, key, iv, rec, mac_size, version);
          TlsCbcResult d =
              TlsCbcRecord(def.get(), false, key, iv, rec, mac_size, version);
          ASSERT_EQ(a.ok, d.ok) << "version " << version << " mac " << mac_size
                                << " payload " << payload << " flip " << flip;
          if (!a.ok) continue;
          EXPECT_EQ(a.outl, d.outl)
              << "payload " << payload << " flip " << flip;
          if (flip == 0) {
            EXPECT_EQ(a.outl, static_cast<int>(payload));
            EXPECT_EQ(a.mac, true_mac);
          }
        }
        ERR_clear_error();
      }
    }
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

TEST_F(ProviderEvpTest, DigestsMatchDefault) {
  for (const char* name : {"SHA1", "SHA224", "SHA256", "SHA384", "SHA512",
                           "SHA2-256", "SHA-512"}) {
    MdPtr acc(EVP_MD_fetch(nullptr, name, kAccel));
    MdPtr def(EVP_MD_fetch(nullptr, name, kDefault));
    ASSERT_NE(acc, nullptr) << name;
    EXPECT_EQ(EVP_MD_get_size(acc.get()), EVP_MD_get_size(def.get()));
    EXPECT_EQ(EVP_MD_get_block_size(acc.get()),
              EVP_MD_get_block_size(def.get()));
    for (size_t size : {0, 1, 55, 56, 64, 111, 112, 128, 4097}) {
      const Bytes msg = Random(size, 60);
      uint8_t a[64], b[64];
      unsigned int al = 0, bl = 0;
      ASSERT_TRUE(EVP_Digest(msg.data(), size, a, &al, acc.get(), nullptr));
      ASSERT_TRUE(EVP_Digest(msg.data(), size, b, &bl, def.get(), nullptr));
      ASSERT_EQ(al, bl);
      EXPECT_EQ(0, memcmp(a, b, al)) << name << " size " << size;
      // Split updates and a copied context finishing separately.
      EVP_MD_CTX* ctx = EVP_MD_CTX_new();
      ASSERT_TRUE(EVP_DigestInit_ex2(ctx, acc.get(), nullptr));
      ASSERT_TRUE(EVP_DigestUpdate(ctx, msg.data(), size / 2));
      EVP_MD_CTX* copy = EVP_MD_CTX_new();
      ASSERT_TRUE(EVP_MD_CTX_copy_ex(copy, ctx));
      ASSERT_TRUE(
          EVP_DigestUpdate(ctx, msg.data() + size / 2, size - size / 2));
      ASSERT_TRUE(
          EVP_DigestUpdate(copy, msg.data() + size / 2, size - size / 2));
      uint8_t c[64], d[64];
      ASSERT_TRUE(EVP_DigestFinal_ex(ctx, c, &al));
      ASSERT_TRUE(EVP_DigestFinal_ex(copy, d, &al));
      EXPECT_EQ(0, memcmp(a, c, al));
      EXPECT_EQ(0, memcmp(a, d, al));
      EVP_MD_CTX_free(copy);
      EVP_MD_CTX_free(ctx);
    }
  }
}

// Out-of-order and malformed digest calls fail with an error on the queue
// and leave the context usable after a new init: update and final after
// final, NULL input with a length.
TEST_F(ProviderEvpTest, DigestMisuseIsRefusedAndRecoverable) {
  for (const char* name : {"SHA1", "SHA256", "SHA384"}) {
    MdPtr acc(EVP_MD_fetch(nullptr, name, kAccel));
    MdPtr def(EVP_MD_fetch(nullptr, name, kDefault));
    ASSERT_NE(acc, nullptr) << name;
    const Bytes msg = Random(300, 77);
    uint8_t want[64], got[64];
    unsigned int wl = 0, gl = 0;
    ASSERT_TRUE(
        EVP_Digest(msg.data(), msg.size(), want, &wl, def.get(), nullptr));
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    ASSERT_TRUE(EVP_DigestInit_ex2(ctx, acc.get(), nullptr));
    ERR_clear_error();
    EXPECT_FALSE(EVP_DigestUpdate(ctx, nullptr, 5)) << name;
    EXPECT_NE(ERR_peek_last_error(), 0u) << name << ": no error queued";
    ERR_clear_error();
    // The refused update hashed nothing: the message still comes out right.
    ASSERT_TRUE(EVP_DigestUpdate(ctx, msg.data(), msg.size()));
    ASSERT_TRUE(EVP_DigestFinal_ex(ctx, got, &gl));
    ASSERT_EQ(gl, wl);
    EXPECT_EQ(0, memcmp(got, want, wl)) << name;
    // EVP itself refuses update and final after final (3.0 tracks the
    // finalised state), and our provider would too.
    EXPECT_FALSE(EVP_DigestUpdate(ctx, msg.data(), 1)) << name;
    EXPECT_FALSE(EVP_DigestFinal_ex(ctx, got, &gl)) << name;
    ERR_clear_error();
    ASSERT_TRUE(EVP_DigestInit_ex2(ctx, acc.get(), nullptr));
    ASSERT_TRUE(EVP_DigestUpdate(ctx, msg.data(), msg.size()));
    ASSERT_TRUE(EVP_DigestFinal_ex(ctx, got, &gl));
    EXPECT_EQ(0, memcmp(got, want, wl)) << name << " after re-init";
    EVP_MD_CTX_free(ctx);
  }
}

// The digest dispatch functions EVP does not reach with bad arguments,
// called as OpenSSL's provider interface defines them: the one-shot
// OSSL_FUNC_DIGEST_DIGEST and final with a short output buffer.
TEST_F(ProviderEvpTest, DigestDispatchOneShotAndShortOutput) {
  MdPtr md(EVP_MD_fetch(nullptr, "SHA2-256", kAccel));
  ASSERT_NE(md, nullptr);
  const OSSL_PROVIDER* prov = EVP_MD_get0_provider(md.get());
  void* provctx = OSSL_PROVIDER_get0_provider_ctx(prov);
  int no_cache = 0;
  const OSSL_ALGORITHM* algs =
      OSSL_PROVIDER_query_operation(prov, OSSL_OP_DIGEST, &no_cache);
  ASSERT_NE(algs, nullptr);
  const OSSL_DISPATCH* fns = nullptr;
  for (const OSSL_ALGORITHM* a = algs; a->algorithm_names != nullptr; ++a) {
    if (std::string(a->algorithm_names).find("SHA2-256") == 0) {
      fns = a->implementation;
    }
  }
  ASSERT_NE(fns, nullptr) << "no SHA2-256 in accelcrypt's digest table";
  OSSL_FUNC_digest_digest_fn* oneshot = nullptr;
  OSSL_FUNC_digest_newctx_fn* newctx = nullptr;
  OSSL_FUNC_digest_init_fn* init = nullptr;
  OSSL_FUNC_digest_update_fn* update = nullptr;
  OSSL_FUNC_digest_final_fn* final = nullptr;
  OSSL_FUNC_digest_freectx_fn* freectx = nullptr;
  for (const OSSL_DISPATCH* f = fns; f->function_id != 0; ++f) {
    switch (f->function_id) {
      case OSSL_FUNC_DIGEST_DIGEST:
        oneshot = OSSL_FUNC_digest_digest(f);
        break;
      case OSSL_FUNC_DIGEST_NEWCTX:
        newctx = OSSL_FUNC_digest_newctx(f);
        break;
      case OSSL_FUNC_DIGEST_INIT:
        init = OSSL_FUNC_digest_init(f);
        break;
      case OSSL_FUNC_DIGEST_UPDATE:
        update = OSSL_FUNC_digest_update(f);
        break;
      case OSSL_FUNC_DIGEST_FINAL:
        final = OSSL_FUNC_digest_final(f);
        break;
      case OSSL_FUNC_DIGEST_FREECTX:
        freectx = OSSL_FUNC_digest_freectx(f);
        break;
    }
  }
  ASSERT_TRUE(oneshot && newctx && init && update && final && freectx);
  MdPtr def(EVP_MD_fetch(nullptr, "SHA2-256", kDefault));
  const Bytes msg = Random(100, 55);
  uint8_t want[32];
  ASSERT_TRUE(
      EVP_Digest(msg.data(), msg.size(), want, nullptr, def.get(), nullptr));
  uint8_t out[64] = {0};
  size_t outl = 0;
  ASSERT_EQ(oneshot(provctx, msg.data(), msg.size(), out, &outl, sizeof(out)),
            1);
  EXPECT_EQ(outl, 32u);
  EXPECT_EQ(0, memcmp(out, want, 32));
  ERR_clear_error();
  EXPECT_EQ(oneshot(provctx, msg.data(), msg.size(), out, &outl, 31), 0);
  EXPECT_NE(ERR_peek_last_error(), 0u);
  EXPECT_EQ(oneshot(provctx, nullptr, 5, out, &outl, sizeof(out)), 0);
  ERR_clear_error();
  // final with 31 bytes of room: refused, the hash kept; with room: done.
  void* ctx = newctx(provctx);
  ASSERT_NE(ctx, nullptr);
  ASSERT_EQ(init(ctx, nullptr), 1);
  ASSERT_EQ(update(ctx, msg.data(), msg.size()), 1);
  EXPECT_EQ(final(ctx, out, &outl, 31), 0);
  EXPECT_NE(ERR_peek_last_error(), 0u);
  ERR_clear_error();
  memset(out, 0, sizeof(out));
  ASSERT_EQ(final(ctx, out, &outl, sizeof(out)), 1);
  EXPECT_EQ(0, memcmp(out, want, 32));
  // A second final without init is out of order.
  EXPECT_EQ(final(ctx, out, &outl, sizeof(out)), 0);
  ERR_clear_error();
  freectx(ctx);
}

// Streaming digests are kept for reuse across contexts (ProvCtx's pool):
// messages of every length, contexts freed mid-message, finished, or left
// initialised, and contexts alive at once, always give the default
// provider's digest; nothing of one message reaches the next.
TEST_F(ProviderEvpTest, ReusedStreamingDigestsMatchDefault) {
  for (const char* name : {"SHA1", "SHA256", "SHA512"}) {
    MdPtr acc(EVP_MD_fetch(nullptr, name, kAccel));
    MdPtr def(EVP_MD_fetch(nullptr, name, kDefault));
    ASSERT_NE(acc, nullptr) << name;
    for (uint32_t i = 0; i < 60; ++i) {
      const size_t size = (i * 977) % 3000;
      const Bytes msg = Random(size, 100 + i);
      uint8_t want[64], got[64];
      unsigned int wl = 0, gl = 0;
      ASSERT_TRUE(EVP_Digest(msg.data(), size, want, &wl, def.get(), nullptr));
      // A context freed in the middle of a long message (never pooled),
      // one that finished (pooled) and one left initialised.
      EVP_MD_CTX* abandoned = EVP_MD_CTX_new();
      ASSERT_TRUE(EVP_DigestInit_ex2(abandoned, acc.get(), nullptr));
      const Bytes other = Random(700, 900 + i);
      ASSERT_TRUE(EVP_DigestUpdate(abandoned, other.data(), other.size()));
      EVP_MD_CTX* alive = EVP_MD_CTX_new();
      ASSERT_TRUE(EVP_DigestInit_ex2(alive, acc.get(), nullptr));
      ASSERT_TRUE(EVP_DigestUpdate(alive, other.data(), other.size()));
      EVP_MD_CTX_free(abandoned);
      ASSERT_TRUE(EVP_Digest(msg.data(), size, got, &gl, acc.get(), nullptr));
      ASSERT_EQ(gl, wl);
      EXPECT_EQ(0, memcmp(got, want, wl)) << name << " size " << size;
      // The context alive meanwhile still hashes its own message.
      uint8_t a[64], b[64];
      ASSERT_TRUE(EVP_DigestFinal_ex(alive, a, &gl));
      ASSERT_TRUE(
          EVP_Digest(other.data(), other.size(), b, &wl, def.get(), nullptr));
      EXPECT_EQ(0, memcmp(a, b, wl)) << name << " alive context";
      EVP_MD_CTX_free(alive);
    }
  }
}

// A second library context loading its own accelcrypt instance (its own
// Core), used and torn down while the default context's instance lives on.
TEST_F(ProviderEvpTest, SecondLibraryContextLoadsAndUnloads) {
  const char* module = getenv("ACCELCRYPT_PROVIDER_MODULE");
  ASSERT_NE(module, nullptr) << "ACCELCRYPT_PROVIDER_MODULE not set";
  const Bytes key = Random(16, 120), iv = Random(16, 121),
              pt = Random(100, 122);
  Bytes want;
  ASSERT_TRUE(
      Crypt(Fetch("AES-128-CBC", kDefault).get(), true, key, iv, pt, 0, &want));
  for (int round = 0; round < 3; ++round) {
    OSSL_LIB_CTX* lib = OSSL_LIB_CTX_new();
    ASSERT_NE(lib, nullptr);
    OSSL_PROVIDER* prov = OSSL_PROVIDER_load(lib, module);
    ASSERT_NE(prov, nullptr) << LastReason();
    EVP_CIPHER* c = EVP_CIPHER_fetch(lib, "AES-128-CBC", nullptr);
    ASSERT_NE(c, nullptr);
    Bytes got;
    EXPECT_TRUE(Crypt(c, true, key, iv, pt, 7, &got));
    EXPECT_EQ(got, want);
    EVP_CIPHER_free(c);
    EXPECT_TRUE(OSSL_PROVIDER_unload(prov));
    OSSL_LIB_CTX_free(lib);
  }
  // The default context's instance is unaffected.
  Bytes again;
  ASSERT_TRUE(
      Crypt(Fetch("AES-128-CBC", kAccel).get(), true, key, iv, pt, 0, &again));
  EXPECT_EQ(again, want);
}

// Mixed AES/GCM/SHA through the provider from 8 threads; every result is
// checked against the default provider computed up front.
TEST_F(ProviderEvpTest, EightThreadsMixedOps) {
  CipherPtr cbc = Fetch("AES-128-CBC", kAccel),
            gcm = Fetch("AES-256-GCM", kAccel);
  MdPtr sha(EVP_MD_fetch(nullptr, "SHA256", kAccel));
  CipherPtr cbc_def = Fetch("AES-128-CBC", kDefault);
  const Bytes key16 = Random(16, 70), key32 = Random(32, 71),
              iv = Random(16, 72), msg = Random(1000, 73);
  Bytes want_cbc;
  ASSERT_TRUE(Crypt(cbc_def.get(), true, key16, iv, msg, 0, &want_cbc));
  uint8_t want_sha[32];
  unsigned int l = 0;
  MdPtr sha_def(EVP_MD_fetch(nullptr, "SHA256", kDefault));
  ASSERT_TRUE(
      EVP_Digest(msg.data(), msg.size(), want_sha, &l, sha_def.get(), nullptr));
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  threads.reserve(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 150; ++i) {
        Bytes out;
        if (!Crypt(cbc.get(), true, key16, iv, msg, 1 + (i + t) % 40, &out) ||
            out != want_cbc) {
          ++failures;
        }
        uint8_t md[32];
        unsigned int ml = 0;
        if (!EVP_Digest(msg.data(), msg.size(), md, &ml, sha.get(), nullptr) ||
            memcmp(md, want_sha, 32) != 0) {
          ++failures;
        }
        Bytes ct, back;
        Bytes giv(iv.begin(), iv.begin() + 12);
        if (!Crypt(gcm.get(), true, key32, giv, msg, 0, &ct)) ++failures;
        (void)back;
        uint8_t r[16];
        if (RAND_bytes(r, sizeof(r)) != 1) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

// Across fork(): the child computes through the provider and checks against
// the default provider, and its DRBG output differs from the parent's (the
// DRBG, whose AES-256-CTR is ours, reseeds in the child).
TEST_F(ProviderEvpTest, ForkChildWorksAndDrbgDiffers) {
  CipherPtr cbc = Fetch("AES-256-CBC", kAccel);
  CipherPtr cbc_def = Fetch("AES-256-CBC", kDefault);
  ASSERT_EQ(ProviderOf(cbc.get()), "accelcrypt");
  const Bytes key = Random(32, 80), iv = Random(16, 81), msg = Random(777, 82);
  Bytes want;
  ASSERT_TRUE(Crypt(cbc_def.get(), true, key, iv, msg, 0, &want));
  uint8_t warm[32];
  ASSERT_EQ(RAND_bytes(warm, sizeof(warm)), 1);  // instantiate the DRBGs

  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(pipefd[0]);
    uint8_t child[32];
    int ok = RAND_bytes(child, sizeof(child)) == 1;
    Bytes out;
    ok = ok && Crypt(cbc.get(), true, key, iv, msg, 13, &out) && out == want;
    // One thread in the child too.
    std::thread th([&] {
      Bytes o;
      ok = ok && Crypt(cbc.get(), true, key, iv, msg, 0, &o) && o == want;
    });
    th.join();
    ssize_t w = write(pipefd[1], child, sizeof(child));
    (void)w;
    close(pipefd[1]);
    _exit(ok ? 0 : 3);
  }
  close(pipefd[1]);
  uint8_t parent[32], child[32];
  ASSERT_EQ(RAND_bytes(parent, sizeof(parent)), 1);
  ASSERT_EQ(read(pipefd[0], child, sizeof(child)),
            static_cast<ssize_t>(sizeof(child)));
  close(pipefd[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "child computed wrong results";
  EXPECT_NE(0, memcmp(parent, child, sizeof(child)))
      << "parent and child DRBG produced the same bytes";
  Bytes out;
  ASSERT_TRUE(Crypt(cbc.get(), true, key, iv, msg, 0, &out));
  EXPECT_EQ(out, want);
}

}  // namespace
