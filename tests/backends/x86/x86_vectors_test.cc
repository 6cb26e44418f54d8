// SPDX-License-Identifier: Apache-2.0
// NIST CAVP vectors through the x86 backend's ABI, once per feature mask:
// every AES mode and key size, AES-GCM (including 8- and 1024-bit IVs and
// truncated tags, and the FAIL cases), SHA-1/224/256 short, long and Monte.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "backends/x86/cpu_features.h"
#include "tests/backends/x86/rsp_reader.h"
#include "tests/backends/x86/x86_abi.h"

namespace accelcrypt::x86::test {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> Files(const std::string& sub,
                               const std::string& prefix = "") {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(
           std::string(ACCELCRYPT_TEST_VECTOR_DIR) + "/" + sub)) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() == ".rsp" && name.rfind(prefix, 0) == 0) {
      out.push_back(e.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

class X86VectorsTest : public ::testing::TestWithParam<MaskCase> {
 protected:
  void SetUp() override {
    inst_ = Instance::Create(GetParam().mask);
    ASSERT_NE(inst_, nullptr);
    const std::string d = inst_->Describe();
    if (d.find(std::string("aes-ecb=") + GetParam().aes_parallel) ==
        std::string::npos) {
      GTEST_SKIP() << "this CPU cannot run the " << GetParam().aes_parallel
                   << " path: " << d;
    }
  }
  std::unique_ptr<Instance> inst_;
};

uint32_t ModeFromFile(const std::string& path) {
  const std::string name = fs::path(path).filename().string();
  if (name.rfind("ECB", 0) == 0) return ACCELCRYPT_MODE_ECB;
  if (name.rfind("CBC", 0) == 0) return ACCELCRYPT_MODE_CBC;
  if (name.rfind("CFB128", 0) == 0) return ACCELCRYPT_MODE_CFB128;
  if (name.rfind("OFB", 0) == 0) return ACCELCRYPT_MODE_OFB;
  if (name.rfind("CTR", 0) == 0) return ACCELCRYPT_MODE_CTR;
  return 0;
}

TEST_P(X86VectorsTest, Aes) {
  std::map<std::string, int> passed;
  int total = 0;
  for (const std::string& file : Files("aes")) {
    const uint32_t mode = ModeFromFile(file);
    ASSERT_NE(mode, 0u) << file;
    for (const RspRecord& r : ReadRsp(file)) {
      if (!r.Has("KEY")) continue;
      const bool enc = r.section.count("ENCRYPT") > 0;
      const std::vector<uint8_t> key = r.Bytes("KEY");
      const std::vector<uint8_t> iv = r.Bytes("IV");
      const std::vector<uint8_t> pt = r.Bytes("PLAINTEXT");
      const std::vector<uint8_t> ct = r.Bytes("CIPHERTEXT");
      const std::vector<uint8_t>& in = enc ? pt : ct;
      const std::vector<uint8_t>& want = enc ? ct : pt;
      const accelcrypt_alg alg = ACCELCRYPT_CIPHER_ALG(mode, key.size());
      Cipher c(*inst_, alg);
      ASSERT_TRUE(c.ok()) << AlgName(alg) << ": " << c.last_error();
      ASSERT_EQ(c.Init(enc, key, iv), ACCELCRYPT_OK) << c.last_error();
      std::vector<uint8_t> out(in.size());
      ASSERT_EQ(c.Update(in.data(), in.size(), out.data()), ACCELCRYPT_OK);
      ASSERT_EQ(c.Final(), ACCELCRYPT_OK);
      EXPECT_EQ(ToHex(out.data(), out.size()), ToHex(want.data(), want.size()))
          << file << ":" << r.line << " " << (enc ? "encrypt" : "decrypt");
      ++passed[AlgName(alg)];
      ++total;
    }
  }
  EXPECT_GT(total, 5000);
  for (const auto& [alg, n] : passed) {
    std::cout << "[x86 " << GetParam().name << "] " << alg << ": " << n
              << " vectors\n";
  }
  RecordProperty("aes_vectors", total);
}

TEST_P(X86VectorsTest, Gcm) {
  int total = 0, fails = 0;
  for (const std::string& file : Files("aes-gcm")) {
    const bool enc_file = file.find("Encrypt") != std::string::npos;
    for (const RspRecord& r : ReadRsp(file)) {
      if (!r.Has("KEY")) continue;
      const std::vector<uint8_t> key = r.Bytes("KEY");
      const std::vector<uint8_t> iv = r.Bytes("IV");
      const std::vector<uint8_t> aad = r.Bytes("AAD");
      const std::vector<uint8_t> ct = r.Bytes("CT");
      const std::vector<uint8_t> tag = r.Bytes("TAG");
      const accelcrypt_alg alg =
          ACCELCRYPT_CIPHER_ALG(ACCELCRYPT_MODE_GCM, key.size());
      Cipher c(*inst_, alg);
      ASSERT_TRUE(c.ok()) << c.last_error();
      const std::string where = file + ":" + std::to_string(r.line);
      if (enc_file) {
        const std::vector<uint8_t> pt = r.Bytes("PT");
        ASSERT_EQ(c.Init(true, key, iv), ACCELCRYPT_OK) << c.last_error();
        ASSERT_EQ(c.Aad(aad.data(), aad.size()), ACCELCRYPT_OK);
        std::vector<uint8_t> out(pt.size());
        ASSERT_EQ(c.Update(pt.data(), pt.size(), out.data()), ACCELCRYPT_OK);
        ASSERT_EQ(c.Final(), ACCELCRYPT_OK) << c.last_error();
        std::vector<uint8_t> got_tag(tag.size());
        ASSERT_EQ(c.GetTag(got_tag.data(), got_tag.size()), ACCELCRYPT_OK)
            << where << " " << c.last_error();
        EXPECT_EQ(ToHex(out.data(), out.size()), ToHex(ct.data(), ct.size()))
            << where;
        EXPECT_EQ(ToHex(got_tag.data(), got_tag.size()),
                  ToHex(tag.data(), tag.size()))
            << where;
      } else {
        ASSERT_EQ(c.Init(false, key, iv), ACCELCRYPT_OK) << c.last_error();
        ASSERT_EQ(c.SetTag(tag.data(), tag.size()), ACCELCRYPT_OK)
            << where << " " << c.last_error();
        ASSERT_EQ(c.Aad(aad.data(), aad.size()), ACCELCRYPT_OK);
        std::vector<uint8_t> out(ct.size());
        ASSERT_EQ(c.Update(ct.data(), ct.size(), out.data()), ACCELCRYPT_OK);
        const accelcrypt_status s = c.Final();
        if (r.Has("FAIL")) {
          EXPECT_EQ(s, ACCELCRYPT_ERR_AUTH_FAILED) << where;
          ++fails;
        } else {
          const std::vector<uint8_t> pt = r.Bytes("PT");
          EXPECT_EQ(s, ACCELCRYPT_OK) << where << " " << c.last_error();
          EXPECT_EQ(ToHex(out.data(), out.size()), ToHex(pt.data(), pt.size()))
              << where;
        }
      }
      ++total;
    }
  }
  EXPECT_EQ(total, 6 * 315);
  EXPECT_EQ(fails, 170 + 151 + 149);
  std::cout << "[x86 " << GetParam().name << "] AES-GCM: " << total
            << " vectors (" << fails << " expected tag failures)\n";
  RecordProperty("gcm_vectors", total);
}

struct ShaFile {
  const char* prefix;
  accelcrypt_alg alg;
  size_t size;
};

TEST_P(X86VectorsTest, Sha) {
  if (!DetectCpuFeatures().shani) GTEST_SKIP() << "this CPU has no SHA-NI";
  const accelcrypt_digest_table* t = inst_->digests();
  ASSERT_NE(t, nullptr);
  const ShaFile kFiles[] = {{"SHA1", ACCELCRYPT_ALG_SHA1, 20},
                            {"SHA224", ACCELCRYPT_ALG_SHA224, 28},
                            {"SHA256", ACCELCRYPT_ALG_SHA256, 32}};
  int total = 0;
  for (const ShaFile& sf : kFiles) {
    int count = 0;
    for (const std::string kind : {"ShortMsg", "LongMsg", "Monte"}) {
      const std::string file = std::string(ACCELCRYPT_TEST_VECTOR_DIR) +
                               "/sha/" + sf.prefix + kind + ".rsp";
      ASSERT_TRUE(fs::exists(file)) << file;
      std::vector<uint8_t> seed;
      for (const RspRecord& r : ReadRsp(file)) {
        // The file's Seed starts the chain; each checkpoint then seeds
        // the next (below).
        if (auto it = r.section.find("SEED");
            seed.empty() && it != r.section.end()) {
          seed = FromHex(it->second);
        }
        if (!r.Has("MD")) continue;
        const std::vector<uint8_t> want = r.Bytes("MD");
        std::vector<uint8_t> got(sf.size);
        accelcrypt_error e = {};
        if (kind == std::string("Monte")) {
          // SHAVS §6.4: MD_i = SHA(MD_{i-3} || MD_{i-2} || MD_{i-1}).
          std::vector<uint8_t> md0 = seed, md1 = seed, md2 = seed;
          for (int i = 3; i < 1003; ++i) {
            std::vector<uint8_t> m = md0;
            m.insert(m.end(), md1.begin(), md1.end());
            m.insert(m.end(), md2.begin(), md2.end());
            ASSERT_EQ(t->oneshot(inst_->handle(), sf.alg, m.data(), m.size(),
                                 got.data(), got.size(), &e),
                      ACCELCRYPT_OK)
                << e.message;
            md0 = md1;
            md1 = md2;
            md2 = got;
          }
          seed = got;
        } else {
          const size_t len = std::stoul(r.Get("LEN")) / 8;
          std::vector<uint8_t> msg = r.Bytes("MSG");
          msg.resize(len);
          // Streamed in uneven pieces to cross block boundaries.
          accelcrypt_digest_ctx* ctx = nullptr;
          ASSERT_EQ(t->newctx(inst_->handle(), sf.alg, &ctx, &e), ACCELCRYPT_OK)
              << e.message;
          size_t off = 0, step = 1;
          while (off < len) {
            const size_t n = std::min(step, len - off);
            ASSERT_EQ(t->update(ctx, msg.data() + off, n, &e), ACCELCRYPT_OK);
            off += n;
            step = step * 3 + 1;
          }
          ASSERT_EQ(t->final(ctx, got.data(), got.size(), &e), ACCELCRYPT_OK);
          t->freectx(ctx);
        }
        EXPECT_EQ(ToHex(got.data(), got.size()),
                  ToHex(want.data(), want.size()))
            << file << ":" << r.line;
        ++count;
      }
    }
    std::cout << "[x86 " << GetParam().name << "] " << sf.prefix << ": "
              << count << " vectors\n";
    total += count;
  }
  EXPECT_EQ(total, 65 + 64 + 100 + 65 + 64 + 100 + 65 + 64 + 100);
  RecordProperty("sha_vectors", total);
}

INSTANTIATE_TEST_SUITE_P(Masks, X86VectorsTest, ::testing::ValuesIn(AllMasks()),
                         [](const ::testing::TestParamInfo<MaskCase>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace accelcrypt::x86::test
