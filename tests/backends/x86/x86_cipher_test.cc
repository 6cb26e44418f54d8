// SPDX-License-Identifier: Apache-2.0
// AES properties of the x86 backend against libcrypto (the reference), under
// every feature mask: GCM lengths, IV and tag sizes, streaming splits,
// in-place and unaligned buffers, counter wraps (CTR at 2^32/2^64/2^128,
// GCM's inc32 at 2^32), state export/import, dupctx, and caller errors.
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backends/x86/cpu_features.h"
#include "backends/x86/internal/aes_leaf.h"
#include "tests/backends/x86/rsp_reader.h"
#include "tests/backends/x86/x86_abi.h"

namespace accelcrypt::x86::test {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes Random(size_t n, std::mt19937* rng) {
  Bytes b(n);
  for (auto& x : b) x = static_cast<uint8_t>((*rng)());
  return b;
}

const EVP_CIPHER* Evp(accelcrypt_alg alg) {
  const int bits = static_cast<int>(ACCELCRYPT_CIPHER_KEY_BYTES(alg) * 8);
  static const char* kModes[] = {"", "ECB", "CBC", "CFB", "OFB", "CTR", "GCM"};
  const std::string name =
      "AES-" + std::to_string(bits) + "-" + kModes[ACCELCRYPT_CIPHER_MODE(alg)];
  return EVP_CIPHER_fetch(nullptr, name.c_str(), "provider=default");
}

// Reference GCM encryption; returns ciphertext and fills `tag`.
Bytes OsslGcmEncrypt(accelcrypt_alg alg, const Bytes& key, const Bytes& iv,
                     const Bytes& aad, const Bytes& pt, Bytes* tag,
                     size_t tag_len) {
  EVP_CIPHER* c = const_cast<EVP_CIPHER*>(Evp(alg));
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  EXPECT_EQ(EVP_EncryptInit_ex(ctx, c, nullptr, nullptr, nullptr), 1);
  EXPECT_EQ(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN,
                                static_cast<int>(iv.size()), nullptr),
            1);
  EXPECT_EQ(EVP_EncryptInit_ex(ctx, nullptr, nullptr, key.data(), iv.data()),
            1);
  int n = 0;
  if (!aad.empty()) {
    EXPECT_EQ(EVP_EncryptUpdate(ctx, nullptr, &n, aad.data(),
                                static_cast<int>(aad.size())),
              1);
  }
  Bytes out(pt.size() + 16);
  int total = 0;
  if (!pt.empty()) {
    EXPECT_EQ(EVP_EncryptUpdate(ctx, out.data(), &n, pt.data(),
                                static_cast<int>(pt.size())),
              1);
    total = n;
  }
  EXPECT_EQ(EVP_EncryptFinal_ex(ctx, out.data() + total, &n), 1);
  total += n;
  out.resize(total);
  tag->resize(tag_len);
  EXPECT_EQ(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG,
                                static_cast<int>(tag_len), tag->data()),
            1);
  EVP_CIPHER_CTX_free(ctx);
  EVP_CIPHER_free(c);
  return out;
}

// Reference for the non-AEAD modes (no padding).
Bytes OsslCipher(accelcrypt_alg alg, bool enc, const Bytes& key,
                 const Bytes& iv, const Bytes& in) {
  EVP_CIPHER* c = const_cast<EVP_CIPHER*>(Evp(alg));
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  EXPECT_EQ(EVP_CipherInit_ex(ctx, c, nullptr, key.data(),
                              iv.empty() ? nullptr : iv.data(), enc ? 1 : 0),
            1);
  EVP_CIPHER_CTX_set_padding(ctx, 0);
  Bytes out(in.size() + 16);
  int n = 0, total = 0;
  if (!in.empty()) {
    EXPECT_EQ(EVP_CipherUpdate(ctx, out.data(), &n, in.data(),
                               static_cast<int>(in.size())),
              1);
    total = n;
  }
  EXPECT_EQ(EVP_CipherFinal_ex(ctx, out.data() + total, &n), 1);
  out.resize(total + n);
  EVP_CIPHER_CTX_free(ctx);
  EVP_CIPHER_free(c);
  return out;
}

std::string Hex(const Bytes& b) { return ToHex(b.data(), b.size()); }

class X86CipherTest : public ::testing::TestWithParam<MaskCase> {
 protected:
  void SetUp() override {
    inst_ = Instance::Create(GetParam().mask);
    ASSERT_NE(inst_, nullptr);
    const std::string d = inst_->Describe();
    if (d.find(std::string("aes-gcm=") + GetParam().gcm) == std::string::npos ||
        d.find(std::string("aes-ctr=") + GetParam().aes_parallel) ==
            std::string::npos) {
      GTEST_SKIP() << "this CPU cannot run this mask's paths: " << d;
    }
  }

  // GcmSeal runs the backend with the data split at the given points.
  Bytes GcmSeal(accelcrypt_alg alg, const Bytes& key, const Bytes& iv,
                const Bytes& aad, const Bytes& pt, Bytes* tag, size_t tag_len,
                size_t aad_split = 0, size_t pt_split = 0) {
    Cipher c(*inst_, alg);
    EXPECT_TRUE(c.ok());
    EXPECT_EQ(c.Init(true, key, iv), ACCELCRYPT_OK) << c.last_error();
    aad_split = std::min(aad_split, aad.size());
    pt_split = std::min(pt_split, pt.size());
    EXPECT_EQ(c.Aad(aad.data(), aad_split), ACCELCRYPT_OK);
    EXPECT_EQ(c.Aad(aad.data() + aad_split, aad.size() - aad_split),
              ACCELCRYPT_OK);
    Bytes out(pt.size());
    EXPECT_EQ(c.Update(pt.data(), pt_split, out.data()), ACCELCRYPT_OK);
    EXPECT_EQ(c.Update(pt.data() + pt_split, pt.size() - pt_split,
                       out.data() + pt_split),
              ACCELCRYPT_OK);
    EXPECT_EQ(c.Final(), ACCELCRYPT_OK) << c.last_error();
    tag->resize(tag_len);
    EXPECT_EQ(c.GetTag(tag->data(), tag_len), ACCELCRYPT_OK) << c.last_error();
    return out;
  }

  accelcrypt_status GcmOpen(accelcrypt_alg alg, const Bytes& key,
                            const Bytes& iv, const Bytes& aad, const Bytes& ct,
                            const Bytes& tag, Bytes* pt) {
    Cipher c(*inst_, alg);
    EXPECT_EQ(c.Init(false, key, iv), ACCELCRYPT_OK);
    EXPECT_EQ(c.SetTag(tag.data(), tag.size()), ACCELCRYPT_OK);
    EXPECT_EQ(c.Aad(aad.data(), aad.size()), ACCELCRYPT_OK);
    pt->resize(ct.size());
    EXPECT_EQ(c.Update(ct.data(), ct.size(), pt->data()), ACCELCRYPT_OK);
    return c.Final();
  }

  std::unique_ptr<Instance> inst_;
};

TEST_P(X86CipherTest, GcmLengthsMatchOpenSsl) {
  std::mt19937 rng(1);
  std::vector<std::pair<size_t, size_t>> cases;  // (aad, pt)
  for (size_t n = 0; n <= 600; ++n) cases.push_back({(n * 7) % 61, n});
  for (size_t n = 0; n <= 600; ++n) cases.push_back({n, 37});
  for (size_t d : {0, 1, 15, 16, 17, 255, 256, 257}) {
    cases.push_back({13, 16384 + d});
    cases.push_back({16384 + d, 64});
    if (d <= 257 && d > 0) cases.push_back({0, 16384 - d});
  }
  for (accelcrypt_alg alg :
       {ACCELCRYPT_ALG_AES_128_GCM, ACCELCRYPT_ALG_AES_192_GCM,
        ACCELCRYPT_ALG_AES_256_GCM}) {
    for (size_t i = 0; i < cases.size(); ++i) {
      // All three key sizes for a sample; AES-128 for every case.
      if (alg != ACCELCRYPT_ALG_AES_128_GCM && i % 17 != 0) continue;
      const auto [aad_len, pt_len] = cases[i];
      const Bytes key = Random(ACCELCRYPT_CIPHER_KEY_BYTES(alg), &rng);
      const Bytes iv = Random(12, &rng);
      const Bytes aad = Random(aad_len, &rng);
      const Bytes pt = Random(pt_len, &rng);
      Bytes want_tag, tag;
      const Bytes want = OsslGcmEncrypt(alg, key, iv, aad, pt, &want_tag, 16);
      const Bytes got = GcmSeal(alg, key, iv, aad, pt, &tag, 16);
      ASSERT_EQ(Hex(got), Hex(want))
          << AlgName(alg) << " aad=" << aad_len << " pt=" << pt_len;
      ASSERT_EQ(Hex(tag), Hex(want_tag))
          << AlgName(alg) << " aad=" << aad_len << " pt=" << pt_len;
      Bytes back;
      ASSERT_EQ(GcmOpen(alg, key, iv, aad, got, tag, &back), ACCELCRYPT_OK);
      ASSERT_EQ(back, pt);
    }
  }
}

TEST_P(X86CipherTest, GcmIvAndTagLengthsMatchOpenSsl) {
  std::mt19937 rng(2);
  for (size_t iv_len = 1; iv_len <= 128; ++iv_len) {
    const size_t tag_len = 4 + iv_len % 13;
    const Bytes key = Random(16, &rng);
    const Bytes iv = Random(iv_len, &rng);
    const Bytes aad = Random(iv_len % 40, &rng);
    const Bytes pt = Random(3 * iv_len + 5, &rng);
    Bytes want_tag, tag;
    const Bytes want = OsslGcmEncrypt(ACCELCRYPT_ALG_AES_128_GCM, key, iv, aad,
                                      pt, &want_tag, tag_len);
    const Bytes got =
        GcmSeal(ACCELCRYPT_ALG_AES_128_GCM, key, iv, aad, pt, &tag, tag_len);
    ASSERT_EQ(Hex(got), Hex(want)) << "iv_len=" << iv_len;
    ASSERT_EQ(Hex(tag), Hex(want_tag)) << "iv_len=" << iv_len;
    Bytes back;
    ASSERT_EQ(
        GcmOpen(ACCELCRYPT_ALG_AES_128_GCM, key, iv, aad, got, tag, &back),
        ACCELCRYPT_OK);
    Bytes bad = tag;
    bad[bad.size() - 1] ^= 1;
    ASSERT_EQ(
        GcmOpen(ACCELCRYPT_ALG_AES_128_GCM, key, iv, aad, got, bad, &back),
        ACCELCRYPT_ERR_AUTH_FAILED);
  }
  // The largest IV the ABI allows (1024 bytes) is beyond libcrypto's GCM
  // limit (128 bytes): compare with the AES-NI/PCLMUL path instead (the NIST
  // 1024-bit-IV vectors cover that path) and check the round trip.
  auto reference = Instance::Create("vaes");
  ASSERT_NE(reference, nullptr);
  const Bytes key = Random(32, &rng), iv = Random(1024, &rng);
  const Bytes pt = Random(100, &rng);
  Bytes tag, ref_tag;
  const Bytes got =
      GcmSeal(ACCELCRYPT_ALG_AES_256_GCM, key, iv, {}, pt, &tag, 16);
  Cipher r(*reference, ACCELCRYPT_ALG_AES_256_GCM);
  ASSERT_EQ(r.Init(true, key, iv), ACCELCRYPT_OK);
  Bytes ref(pt.size());
  ASSERT_EQ(r.Update(pt.data(), pt.size(), ref.data()), ACCELCRYPT_OK);
  ASSERT_EQ(r.Final(), ACCELCRYPT_OK);
  ref_tag.resize(16);
  ASSERT_EQ(r.GetTag(ref_tag.data(), 16), ACCELCRYPT_OK);
  EXPECT_EQ(Hex(got), Hex(ref));
  EXPECT_EQ(Hex(tag), Hex(ref_tag));
  Bytes back;
  EXPECT_EQ(GcmOpen(ACCELCRYPT_ALG_AES_256_GCM, key, iv, {}, got, tag, &back),
            ACCELCRYPT_OK);
  EXPECT_EQ(back, pt);
}

TEST_P(X86CipherTest, GcmEverySplitMatchesOneShot) {
  std::mt19937 rng(3);
  const Bytes key = Random(16, &rng), iv = Random(12, &rng);
  const Bytes aad = Random(45, &rng), pt = Random(300, &rng);
  Bytes want_tag;
  const Bytes want = OsslGcmEncrypt(ACCELCRYPT_ALG_AES_128_GCM, key, iv, aad,
                                    pt, &want_tag, 16);
  for (size_t split = 0; split <= pt.size(); ++split) {
    Bytes tag;
    ASSERT_EQ(Hex(GcmSeal(ACCELCRYPT_ALG_AES_128_GCM, key, iv, aad, pt, &tag,
                          16, split % (aad.size() + 1), split)),
              Hex(want))
        << "split " << split;
    ASSERT_EQ(Hex(tag), Hex(want_tag)) << "split " << split;
  }
  // Many small pieces of varying size, decrypting in place.
  for (int round = 0; round < 20; ++round) {
    Cipher c(*inst_, ACCELCRYPT_ALG_AES_128_GCM);
    ASSERT_EQ(c.Init(false, key, iv), ACCELCRYPT_OK);
    ASSERT_EQ(c.SetTag(want_tag.data(), 16), ACCELCRYPT_OK);
    size_t off = 0;
    while (off < aad.size()) {
      const size_t n = std::min<size_t>(rng() % 20, aad.size() - off);
      ASSERT_EQ(c.Aad(aad.data() + off, n), ACCELCRYPT_OK);
      off += n;
    }
    Bytes buf = want;
    off = 0;
    while (off < buf.size()) {
      const size_t n = std::min<size_t>(rng() % 70, buf.size() - off);
      ASSERT_EQ(c.Update(buf.data() + off, n, buf.data() + off), ACCELCRYPT_OK);
      off += n;
    }
    ASSERT_EQ(c.Final(), ACCELCRYPT_OK);
    ASSERT_EQ(buf, pt);
  }
}

TEST_P(X86CipherTest, GcmInPlaceUnalignedAndErrors) {
  std::mt19937 rng(4);
  const Bytes key = Random(24, &rng), iv = Random(12, &rng);
  const Bytes aad = Random(20, &rng), pt = Random(1000, &rng);
  Bytes want_tag;
  const Bytes want = OsslGcmEncrypt(ACCELCRYPT_ALG_AES_192_GCM, key, iv, aad,
                                    pt, &want_tag, 16);
  for (size_t offset = 1; offset < 4; ++offset) {
    Bytes storage(pt.size() + 8);
    uint8_t* buf = storage.data() + offset;
    memcpy(buf, pt.data(), pt.size());
    Cipher c(*inst_, ACCELCRYPT_ALG_AES_192_GCM);
    ASSERT_EQ(c.Init(true, key, iv), ACCELCRYPT_OK);
    ASSERT_EQ(c.Aad(aad.data(), aad.size()), ACCELCRYPT_OK);
    ASSERT_EQ(c.Update(buf, pt.size(), buf), ACCELCRYPT_OK);
    ASSERT_EQ(c.Final(), ACCELCRYPT_OK);
    EXPECT_EQ(ToHex(buf, pt.size()), Hex(want));
  }
  Cipher c(*inst_, ACCELCRYPT_ALG_AES_192_GCM);
  Bytes out(pt.size()), tag(16);
  EXPECT_EQ(c.Update(pt.data(), 16, out.data()),
            ACCELCRYPT_ERR_FAILED_PRECONDITION);
  EXPECT_EQ(c.Init(true, Bytes(16), iv), ACCELCRYPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(c.Init(true, key, Bytes()), ACCELCRYPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(c.Init(true, key, Bytes(1025)), ACCELCRYPT_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(c.Init(true, key, iv), ACCELCRYPT_OK);
  EXPECT_EQ(c.GetTag(tag.data(), 16), ACCELCRYPT_ERR_FAILED_PRECONDITION);
  ASSERT_EQ(c.Update(pt.data(), 5, out.data()), ACCELCRYPT_OK);
  EXPECT_EQ(c.Aad(aad.data(), aad.size()), ACCELCRYPT_ERR_FAILED_PRECONDITION);
  EXPECT_EQ(c.SetTag(tag.data(), 16), ACCELCRYPT_ERR_FAILED_PRECONDITION);
  ASSERT_EQ(c.Final(), ACCELCRYPT_OK);
  EXPECT_EQ(c.GetTag(tag.data(), 3), ACCELCRYPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(c.GetTag(tag.data(), 17), ACCELCRYPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(c.Update(pt.data(), 5, out.data()),
            ACCELCRYPT_ERR_FAILED_PRECONDITION);
  EXPECT_EQ(c.Final(), ACCELCRYPT_ERR_FAILED_PRECONDITION);
  accelcrypt_cipher_state st;
  EXPECT_EQ(c.GetState(&st), ACCELCRYPT_ERR_UNIMPLEMENTED);

  // A failed final leaves the context as it was: the right tag then passes.
  Cipher d(*inst_, ACCELCRYPT_ALG_AES_192_GCM);
  ASSERT_EQ(d.Init(false, key, iv), ACCELCRYPT_OK);
  EXPECT_EQ(d.Final(), ACCELCRYPT_ERR_FAILED_PRECONDITION);  // no tag yet
  Bytes bad = want_tag;
  bad[0] ^= 0x80;
  ASSERT_EQ(d.SetTag(bad.data(), 16), ACCELCRYPT_OK);
  ASSERT_EQ(d.Aad(aad.data(), aad.size()), ACCELCRYPT_OK);
  ASSERT_EQ(d.Update(want.data(), want.size(), out.data()), ACCELCRYPT_OK);
  EXPECT_EQ(d.Final(), ACCELCRYPT_ERR_AUTH_FAILED);
  EXPECT_EQ(d.Final(), ACCELCRYPT_ERR_AUTH_FAILED);
  ASSERT_EQ(d.SetTag(want_tag.data(), 12), ACCELCRYPT_OK);
  EXPECT_EQ(d.Final(), ACCELCRYPT_OK) << d.last_error();
  EXPECT_EQ(out, pt);
}

TEST_P(X86CipherTest, GcmReinitKeepsKeyWithNewIv) {
  std::mt19937 rng(10);
  const Bytes key = Random(16, &rng);
  Cipher c(*inst_, ACCELCRYPT_ALG_AES_128_GCM);
  EXPECT_EQ(c.Init(true, {}, Random(12, &rng)),
            ACCELCRYPT_ERR_INVALID_ARGUMENT);  // no key yet
  ASSERT_EQ(c.Init(true, key, Random(12, &rng)), ACCELCRYPT_OK);
  for (int msg = 0; msg < 5; ++msg) {
    const Bytes iv = Random(msg == 3 ? 7 : 12, &rng);
    const Bytes aad = Random(16, &rng), pt = Random(1000 + msg, &rng);
    ASSERT_EQ(c.Init(true, msg == 0 ? key : Bytes(), iv), ACCELCRYPT_OK);
    ASSERT_EQ(c.Aad(aad.data(), aad.size()), ACCELCRYPT_OK);
    Bytes out(pt.size()), tag(16), want_tag;
    ASSERT_EQ(c.Update(pt.data(), pt.size(), out.data()), ACCELCRYPT_OK);
    ASSERT_EQ(c.Final(), ACCELCRYPT_OK);
    ASSERT_EQ(c.GetTag(tag.data(), 16), ACCELCRYPT_OK);
    EXPECT_EQ(Hex(out), Hex(OsslGcmEncrypt(ACCELCRYPT_ALG_AES_128_GCM, key, iv,
                                           aad, pt, &want_tag, 16)));
    EXPECT_EQ(Hex(tag), Hex(want_tag)) << "message " << msg;
  }
  // Keeping the key cannot flip the direction.
  EXPECT_EQ(c.Init(false, {}, Random(12, &rng)),
            ACCELCRYPT_ERR_INVALID_ARGUMENT);
}

TEST_P(X86CipherTest, GcmDupMidStream) {
  std::mt19937 rng(5);
  const Bytes key = Random(16, &rng), iv = Random(12, &rng);
  const Bytes pt = Random(777, &rng);
  Bytes want_tag;
  const Bytes want = OsslGcmEncrypt(ACCELCRYPT_ALG_AES_128_GCM, key, iv, {}, pt,
                                    &want_tag, 16);
  Cipher c(*inst_, ACCELCRYPT_ALG_AES_128_GCM);
  ASSERT_EQ(c.Init(true, key, iv), ACCELCRYPT_OK);
  Bytes out(pt.size());
  ASSERT_EQ(c.Update(pt.data(), 333, out.data()), ACCELCRYPT_OK);
  auto d = c.Dup();
  ASSERT_NE(d, nullptr);
  ASSERT_EQ(d->Update(pt.data() + 333, pt.size() - 333, out.data() + 333),
            ACCELCRYPT_OK);
  ASSERT_EQ(d->Final(), ACCELCRYPT_OK);
  Bytes tag(16);
  ASSERT_EQ(d->GetTag(tag.data(), 16), ACCELCRYPT_OK);
  EXPECT_EQ(Hex(out), Hex(want));
  EXPECT_EQ(Hex(tag), Hex(want_tag));
}

TEST_P(X86CipherTest, CtrCounterWraps) {
  std::mt19937 rng(6);
  struct Start {
    const char* what;
    Bytes iv;
  };
  Bytes wrap32(16, 0x5a), wrap64(16, 0x11), wrap128(16, 0xff);
  memset(wrap32.data() + 12, 0xff, 4);
  wrap32[15] = 0xf0;
  memset(wrap64.data() + 8, 0xff, 8);
  wrap64[15] = 0x80;
  wrap128[15] = 0xc0;
  for (const Start& s : {Start{"2^32", wrap32}, Start{"2^64", wrap64},
                         Start{"2^128", wrap128}}) {
    for (accelcrypt_alg alg :
         {ACCELCRYPT_ALG_AES_128_CTR, ACCELCRYPT_ALG_AES_256_CTR}) {
      const Bytes key = Random(ACCELCRYPT_CIPHER_KEY_BYTES(alg), &rng);
      const Bytes pt = Random(16384 + 7, &rng);
      const Bytes want = OsslCipher(alg, true, key, s.iv, pt);
      Cipher c(*inst_, alg);
      ASSERT_EQ(c.Init(true, key, s.iv), ACCELCRYPT_OK);
      Bytes out(pt.size());
      // Uneven pieces: the wrap lands inside a bulk call and inside a
      // partial block.
      size_t off = 0, step = 5;
      while (off < pt.size()) {
        const size_t n = std::min(step, pt.size() - off);
        ASSERT_EQ(c.Update(pt.data() + off, n, out.data() + off),
                  ACCELCRYPT_OK);
        off += n;
        step = step * 2 + 3;
      }
      EXPECT_EQ(Hex(out), Hex(want)) << s.what << " " << AlgName(alg);
      // The exported counter is the next block's, as OpenSSL keeps it.
      accelcrypt_cipher_state st;
      ASSERT_EQ(c.GetState(&st), ACCELCRYPT_OK);
      EXPECT_EQ(st.num, pt.size() % 16);
    }
  }
}

// CTR from every phase of the counter's last byte (the VAES-256 path takes
// a shortcut once it is a multiple of 16, the AES-NI path once it is a
// multiple of 8): one bulk call of 16..40 blocks, starting 0..31 blocks
// before such a point, against OpenSSL.
TEST_P(X86CipherTest, CtrEveryCounterPhaseMatchesOpenSsl) {
  std::mt19937 rng(9);
  for (accelcrypt_alg alg :
       {ACCELCRYPT_ALG_AES_128_CTR, ACCELCRYPT_ALG_AES_256_CTR}) {
    const Bytes key = Random(ACCELCRYPT_CIPHER_KEY_BYTES(alg), &rng);
    for (int phase = 0; phase < 32; ++phase) {
      Bytes iv = Random(16, &rng);
      iv[15] = static_cast<uint8_t>(0xe0 + phase);  // 0xff carries at phase 31
      const size_t blocks = 16 + rng() % 25;
      const Bytes pt = Random(16 * blocks, &rng);
      Cipher c(*inst_, alg);
      ASSERT_EQ(c.Init(true, key, iv), ACCELCRYPT_OK);
      Bytes out(pt.size());
      ASSERT_EQ(c.Update(pt.data(), pt.size(), out.data()), ACCELCRYPT_OK);
      EXPECT_EQ(Hex(out), Hex(OsslCipher(alg, true, key, iv, pt)))
          << AlgName(alg) << " phase " << phase << " blocks " << blocks;
    }
  }
}

// Non-AEAD modes: random lengths and splits, in place, unaligned, against
// OpenSSL; state moved to a fresh context mid-stream; dupctx.
TEST_P(X86CipherTest, StreamingModesMatchOpenSsl) {
  std::mt19937 rng(7);
  for (uint32_t mode :
       {ACCELCRYPT_MODE_ECB, ACCELCRYPT_MODE_CBC, ACCELCRYPT_MODE_CFB128,
        ACCELCRYPT_MODE_OFB, ACCELCRYPT_MODE_CTR}) {
    const bool blockwise =
        mode == ACCELCRYPT_MODE_ECB || mode == ACCELCRYPT_MODE_CBC;
    for (uint32_t key_bytes : {16u, 24u, 32u}) {
      const accelcrypt_alg alg = ACCELCRYPT_CIPHER_ALG(mode, key_bytes);
      for (bool enc : {true, false}) {
        for (int round = 0; round < 6; ++round) {
          const Bytes key = Random(key_bytes, &rng);
          const Bytes iv =
              mode == ACCELCRYPT_MODE_ECB ? Bytes() : Random(16, &rng);
          size_t len = round == 0 ? 16384 : rng() % 2100;
          if (blockwise) len -= len % 16;
          const Bytes in = Random(len, &rng);
          const Bytes want = OsslCipher(alg, enc, key, iv, in);
          Cipher c(*inst_, alg);
          ASSERT_EQ(c.Init(enc, key, iv), ACCELCRYPT_OK);
          Bytes storage(len + 4);
          uint8_t* buf = storage.data() + (round % 4);
          if (len > 0)
            memcpy(buf, in.data(), len);  // in.data() is null when empty
          size_t off = 0;
          std::unique_ptr<Cipher> cur;
          Cipher* active = &c;
          while (off < len) {
            size_t n = std::min<size_t>(1 + rng() % 700, len - off);
            if (blockwise) n = std::max<size_t>(16, n - n % 16);
            n = std::min(n, len - off);
            ASSERT_EQ(active->Update(buf + off, n, buf + off), ACCELCRYPT_OK)
                << active->last_error();
            off += n;
            if (rng() % 3 == 0) {
              // Move the stream: export the state, import into a new
              // context with the same key and direction.
              accelcrypt_cipher_state st;
              ASSERT_EQ(active->GetState(&st), ACCELCRYPT_OK);
              auto next = std::make_unique<Cipher>(*inst_, alg);
              ASSERT_EQ(next->Init(enc, key, iv), ACCELCRYPT_OK);
              ASSERT_EQ(next->SetState(st), ACCELCRYPT_OK)
                  << next->last_error();
              cur = std::move(next);
              active = cur.get();
            } else if (rng() % 3 == 0) {
              auto dup = active->Dup();
              ASSERT_NE(dup, nullptr);
              cur = std::move(dup);
              active = cur.get();
            }
          }
          EXPECT_EQ(ToHex(buf, len), Hex(want))
              << AlgName(alg) << (enc ? " enc" : " dec") << " len " << len;
        }
      }
    }
  }
}

TEST_P(X86CipherTest, CallerErrorsLeaveStateUnchanged) {
  std::mt19937 rng(8);
  const Bytes key = Random(16, &rng), iv = Random(16, &rng);
  const Bytes in = Random(64, &rng);
  const Bytes want = OsslCipher(ACCELCRYPT_ALG_AES_128_CBC, true, key, iv, in);
  Cipher c(*inst_, ACCELCRYPT_ALG_AES_128_CBC);
  Bytes out(64);
  EXPECT_EQ(c.Update(in.data(), 16, out.data()),
            ACCELCRYPT_ERR_FAILED_PRECONDITION);
  EXPECT_EQ(c.Init(true, Bytes(15), iv), ACCELCRYPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(c.Init(true, key, Bytes(12)), ACCELCRYPT_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(c.Init(true, key, iv), ACCELCRYPT_OK);
  ASSERT_EQ(c.Update(in.data(), 16, out.data()), ACCELCRYPT_OK);
  EXPECT_EQ(c.Update(in.data() + 16, 15, out.data() + 16),
            ACCELCRYPT_ERR_INVALID_ARGUMENT);
  accelcrypt_cipher_state bad = {};
  bad.num = 3;
  EXPECT_EQ(c.SetState(bad), ACCELCRYPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(c.Aad(in.data(), 4), ACCELCRYPT_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(c.Update(in.data() + 16, 48, out.data() + 16), ACCELCRYPT_OK);
  EXPECT_EQ(Hex(out), Hex(want));
  Cipher ofb(*inst_, ACCELCRYPT_ALG_AES_128_OFB);
  ASSERT_EQ(ofb.Init(true, key, iv), ACCELCRYPT_OK);
  bad.num = 16;
  EXPECT_EQ(ofb.SetState(bad), ACCELCRYPT_ERR_INVALID_ARGUMENT);
}

INSTANTIATE_TEST_SUITE_P(Masks, X86CipherTest, ::testing::ValuesIn(AllMasks()),
                         [](const ::testing::TestParamInfo<MaskCase>& info) {
                           return std::string(info.param.name);
                         });

// RefGhash is SP 800-38D's GHASH, bit by bit (Algorithm 1): Y = (Y ^ X_i)*H
// over `n` blocks, from `xi`. Independent of every leaf.
Bytes RefGhash(const Bytes& h, Bytes xi, const uint8_t* data, size_t n) {
  for (size_t b = 0; b < n; ++b) {
    uint8_t x[16], z[16] = {}, v[16];
    for (int i = 0; i < 16; ++i) x[i] = xi[i] ^ data[16 * b + i];
    memcpy(v, h.data(), 16);
    for (int i = 0; i < 128; ++i) {
      if ((x[i / 8] >> (7 - i % 8)) & 1) {
        for (int j = 0; j < 16; ++j) z[j] ^= v[j];
      }
      const bool lsb = v[15] & 1;
      for (int j = 15; j > 0; --j) {
        v[j] = static_cast<uint8_t>((v[j] >> 1) | (v[j - 1] << 7));
      }
      v[0] >>= 1;
      if (lsb) v[0] ^= 0xe1;
    }
    xi.assign(z, z + 16);
  }
  return xi;
}

// The powers of H are built lazily (H alone at key setup, extended to what
// a message reads): any sequence of extensions gives the table a single
// full build gives, and the PCLMUL GHASH (8-block Karatsuba aggregation
// and its 1..7-block tails) matches the bitwise reference at every length.
TEST(X86GcmLeafTest, LazyPowersAndGhashMatchReference) {
  const CpuFeatures& f = DetectCpuFeatures();
  if (!f.aesni || !f.pclmulqdq) GTEST_SKIP() << "no AES-NI/PCLMULQDQ";
  std::mt19937 rng(11);
  const Bytes h = Random(16, &rng);
  internal::GhashTable full, lazy;
  memset(&full, 0, sizeof(full));
  memset(&lazy, 0, sizeof(lazy));
  internal::GhashInitPclmul(h.data(), &full, internal::kGhashPowers);
  internal::GhashInitPclmul(h.data(), &lazy, 1);
  internal::GhashExtendPclmul(&lazy, 1, 2);
  internal::GhashExtendPclmul(&lazy, 2, 9);
  internal::GhashExtendPclmul(&lazy, 9, internal::kGhashPowers);
  EXPECT_EQ(memcmp(&full, &lazy, sizeof(full)), 0);
  // Each entry against an independent H^k: the bitwise product, stored as
  // the first entry of a table built from H^k itself (no GhashMul).
  Bytes hk = h;  // H^k in GCM byte order
  for (int k = 1; k <= internal::kGhashPowers; ++k) {
    if (k > 1) hk = RefGhash(h, Bytes(16, 0), hk.data(), 1);
    internal::GhashTable one;
    memset(&one, 0, sizeof(one));
    internal::GhashInitPclmul(hk.data(), &one, 1);
    EXPECT_EQ(memcmp(full.powers[internal::kGhashPowers - k],
                     one.powers[internal::kGhashPowers - 1], 16),
              0)
        << "H^" << k;
    if (k <= internal::kGhashKaratsubaPowers) {
      EXPECT_EQ(memcmp(full.karatsuba[internal::kGhashKaratsubaPowers - k],
                       one.karatsuba[internal::kGhashKaratsubaPowers - 1], 16),
                0)
          << "Karatsuba entry of H^" << k;
    }
  }
  const Bytes data = Random(16 * 41, &rng);
  for (size_t n = 0; n <= 41; ++n) {
    const Bytes x0 = Random(16, &rng);
    Bytes got = x0;
    internal::GhashPclmul(&full, got.data(), data.data(), n);
    EXPECT_EQ(Hex(got), Hex(RefGhash(h, x0, data.data(), n))) << n;
  }
}

// GCM's inc32 wraps modulo 2^32 without carrying into the IV part. No 96-bit
// IV reaches the wrap, so the leaves are driven directly with a counter just
// below it; keystream reference from libcrypto's ECB, GHASH reference the
// bitwise RefGhash.
TEST(X86GcmLeafTest, Ctr32WrapsWithoutCarry) {
  const CpuFeatures& f = DetectCpuFeatures();
  if (!f.aesni || !f.pclmulqdq) GTEST_SKIP() << "no AES-NI/PCLMULQDQ";
  std::mt19937 rng(9);
  const Bytes key = Random(16, &rng);
  internal::AesRoundKeys keys;
  internal::AesExpandKeyAesni(key.data(), key.size(), &keys);
  Bytes h(16, 0);
  internal::AesEncryptBlockAesni(&keys, h.data(), h.data());
  internal::GhashTable table;
  internal::GhashInitPclmul(h.data(), &table, internal::kGhashPowers);

  const size_t blocks = 300;
  Bytes ctr0 = Random(16, &rng);
  ctr0[12] = ctr0[13] = ctr0[14] = 0xff;
  ctr0[15] = 0x37;
  // Reference keystream: ECB over inc32 counter blocks.
  Bytes ctrs(16 * blocks);
  for (size_t i = 0; i < blocks; ++i) {
    memcpy(&ctrs[16 * i], ctr0.data(), 12);
    const uint32_t c = 0xffffff37u + static_cast<uint32_t>(i);
    ctrs[16 * i + 12] = static_cast<uint8_t>(c >> 24);
    ctrs[16 * i + 13] = static_cast<uint8_t>(c >> 16);
    ctrs[16 * i + 14] = static_cast<uint8_t>(c >> 8);
    ctrs[16 * i + 15] = static_cast<uint8_t>(c);
  }
  const Bytes ks = OsslCipher(ACCELCRYPT_ALG_AES_128_ECB, true, key, {}, ctrs);
  const Bytes pt = Random(16 * blocks, &rng);
  Bytes want(pt.size());
  for (size_t i = 0; i < pt.size(); ++i) want[i] = pt[i] ^ ks[i];
  const Bytes want_xi = RefGhash(h, Bytes(16, 0), want.data(), blocks);

  // The XMM stitched leaf at every block count around its 8-block
  // iteration and 1..7-block tails, encrypting and decrypting in place.
  std::vector<size_t> counts = {blocks};
  for (size_t n = 1; n <= 41; ++n) counts.push_back(n);
  for (size_t n : counts) {
    const Bytes ref_xi = RefGhash(h, Bytes(16, 0), want.data(), n);
    Bytes ctr = ctr0, out(16 * n), xi(16, 0);
    internal::AesGcmEncryptAesni(&keys, &table, ctr.data(), xi.data(),
                                 pt.data(), out.data(), n);
    EXPECT_EQ(Hex(out), Hex(Bytes(want.begin(), want.begin() + 16 * n))) << n;
    EXPECT_EQ(Hex(xi), Hex(ref_xi)) << n;
    EXPECT_EQ(ctr[15], static_cast<uint8_t>(0x37 + n)) << n;
    EXPECT_EQ(memcmp(ctr.data(), ctr0.data(), 12), 0) << n;
    Bytes ctr2 = ctr0, xi2(16, 0);
    internal::AesGcmDecryptAesni(&keys, &table, ctr2.data(), xi2.data(),
                                 out.data(), out.data(), n);
    EXPECT_EQ(Hex(out), Hex(Bytes(pt.begin(), pt.begin() + 16 * n))) << n;
    EXPECT_EQ(Hex(xi2), Hex(ref_xi)) << n;
    EXPECT_EQ(Hex(ctr2), Hex(ctr)) << n;
  }
  if (f.vaes && f.vpclmulqdq) {
    // The YMM leaf at every block count around its 16-block iteration and
    // 1..15-block tails, wrapping the 32-bit counter on the way.
    for (size_t n : {size_t{1}, size_t{2}, size_t{3}, size_t{15}, size_t{16},
                     size_t{17}, size_t{31}, size_t{32}, size_t{33}, blocks}) {
      const Bytes ref_xi = RefGhash(h, Bytes(16, 0), want.data(), n);
      Bytes ctr = ctr0, out(16 * n), xi(16, 0);
      internal::AesGcmEncryptVaes256(&keys, &table, ctr.data(), xi.data(),
                                     pt.data(), out.data(), n);
      EXPECT_EQ(Hex(out), Hex(Bytes(want.begin(), want.begin() + 16 * n))) << n;
      EXPECT_EQ(Hex(xi), Hex(ref_xi)) << n;
      EXPECT_EQ(ctr[15], static_cast<uint8_t>(0x37 + n)) << n;
      Bytes ctr2 = ctr0, xi2(16, 0);
      internal::AesGcmDecryptVaes256(&keys, &table, ctr2.data(), xi2.data(),
                                     out.data(), out.data(), n);  // in place
      EXPECT_EQ(Hex(out), Hex(Bytes(pt.begin(), pt.begin() + 16 * n))) << n;
      EXPECT_EQ(Hex(xi2), Hex(ref_xi)) << n;
    }
    for (size_t n = 0; n <= 40; ++n) {
      Bytes a(16, 0), b(16, 0);
      internal::GhashPclmul(&table, a.data(), want.data(), n);
      internal::GhashVaes256(&table, b.data(), want.data(), n);
      EXPECT_EQ(Hex(a), Hex(b)) << n << " blocks";
    }
  }
  if (f.vaes && f.vpclmulqdq && f.avx512) {
    Bytes ctr = ctr0, out(pt.size()), xi(16, 0);
    internal::AesGcmEncryptVaes512(&keys, &table, ctr.data(), xi.data(),
                                   pt.data(), out.data(), blocks);
    EXPECT_EQ(Hex(out), Hex(want));
    EXPECT_EQ(Hex(xi), Hex(want_xi));
    EXPECT_EQ(memcmp(ctr.data(), ctr0.data(), 12), 0);
    Bytes ctr2 = ctr0, back(pt.size()), xi2(16, 0);
    internal::AesGcmDecryptVaes512(&keys, &table, ctr2.data(), xi2.data(),
                                   out.data(), back.data(), blocks);
    EXPECT_EQ(back, pt);
    EXPECT_EQ(Hex(xi2), Hex(want_xi));
    for (size_t n = 0; n <= 40; ++n) {
      Bytes a(16, 0), b(16, 0);
      internal::GhashPclmul(&table, a.data(), want.data(), n);
      internal::GhashVaes512(&table, b.data(), want.data(), n);
      EXPECT_EQ(Hex(a), Hex(b)) << n << " blocks";
    }
  } else {
    GTEST_SKIP() << "no VAES-512 GCM path on this CPU";
  }
}

}  // namespace
}  // namespace accelcrypt::x86::test
