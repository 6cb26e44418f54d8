// SPDX-License-Identifier: Apache-2.0
#include "core/vector_file.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "core/vector_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_env.h"

namespace accelcrypt {
namespace {

using ::accelcrypt::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

// TempFile writes `content` to a fresh file for one test.
class TempFile {
 public:
  explicit TempFile(const std::string& content) {
    char name[] = "/tmp/accelcrypt_vector_XXXXXX";
    int fd = mkstemp(name);
    EXPECT_GE(fd, 0);
    close(fd);
    path_ = name;
    std::ofstream(path_, std::ios::binary) << content;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(VectorFileTest, ParsesCrlfSectionsCommentsAndBareLines) {
  TempFile file(
      "# header comment\r\n"
      "\r\n"
      "[Keylen = 128]\r\n"
      "[IVlen = 96]\r\n"
      "\r\n"
      "Count = 0\r\n"
      "Key = 00ff\r\n"
      "CT = \r\n"
      "FAIL\r\n"
      "\r\n"
      "Count = 1\r\n"
      "Key = A0b1\r\n"
      "CT = 10\r\n"
      "\r\n"
      "[ENCRYPT]\r\n"
      "\r\n"
      "COUNT = 0\r\n"
      "KEY = 01\r\n");
  ASSERT_OK_AND_ASSIGN(VectorFile parsed, ParseVectorFile(file.path()));
  ASSERT_THAT(parsed.records, SizeIs(3));

  const VectorRecord& r0 = parsed.records[0];
  EXPECT_EQ(r0.line, 6);
  EXPECT_TRUE(r0.Has("FAIL"));
  EXPECT_TRUE(r0.Has("count"));  // case-insensitive
  EXPECT_EQ(r0.Get("COUNT"), "0");
  EXPECT_EQ(r0.SectionValue("keylen"), "128");
  EXPECT_EQ(r0.SectionValue("IVlen"), "96");
  EXPECT_FALSE(r0.InSection("ENCRYPT"));
  ASSERT_OK_AND_ASSIGN(auto key, r0.Bytes("Key"));
  EXPECT_THAT(key, ElementsAre(0x00, 0xff));
  ASSERT_OK_AND_ASSIGN(auto ct, r0.Bytes("CT"));
  EXPECT_THAT(ct, IsEmpty());

  const VectorRecord& r1 = parsed.records[1];
  EXPECT_FALSE(r1.Has("FAIL"));
  ASSERT_OK_AND_ASSIGN(auto key1, r1.Bytes("key"));
  EXPECT_THAT(key1, ElementsAre(0xa0, 0xb1));

  // A bracket line after data starts a new section: the GCM headers are gone.
  const VectorRecord& r2 = parsed.records[2];
  EXPECT_TRUE(r2.InSection("ENCRYPT"));
  EXPECT_FALSE(r2.SectionValue("Keylen").has_value());
}

TEST(VectorFileTest, LfLineEndingsWork) {
  TempFile file("[L = 20]\n\nLen = 8\nMsg = 36\nMD = 01\n");
  ASSERT_OK_AND_ASSIGN(VectorFile parsed, ParseVectorFile(file.path()));
  ASSERT_THAT(parsed.records, SizeIs(1));
  EXPECT_EQ(parsed.records[0].Get("Msg"), "36");
  EXPECT_EQ(parsed.records[0].SectionValue("L"), "20");
}

TEST(VectorFileTest, SectionParameterBlockJoinsTheSection) {
  // SHA Monte layout: a Seed block, then COUNT/MD records.
  TempFile file(
      "[L = 20]\n\nSeed = 0102\n\nCOUNT = 0\nMD = 03\n\nCOUNT = 1\nMD = 04\n");
  ASSERT_OK_AND_ASSIGN(VectorFile parsed, ParseVectorFile(file.path()));
  ASSERT_THAT(parsed.records, SizeIs(2));
  for (const VectorRecord& r : parsed.records) {
    EXPECT_EQ(r.SectionValue("Seed"), "0102");
    EXPECT_FALSE(r.Has("Seed"));
  }
}

TEST(VectorFileTest, BadHexIsInvalidArgument) {
  TempFile file("A = 0g\nB = 123\n");
  ASSERT_OK_AND_ASSIGN(VectorFile parsed, ParseVectorFile(file.path()));
  ASSERT_THAT(parsed.records, SizeIs(1));
  EXPECT_THAT(parsed.records[0].Bytes("A"),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(parsed.records[0].Bytes("B"),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(parsed.records[0].Bytes("C"),
              StatusIs(absl::StatusCode::kNotFound));
}

TEST(VectorFileTest, MalformedFilesNameTheLine) {
  TempFile unterminated("# x\n[ENCRYPT\n");
  EXPECT_THAT(ParseVectorFile(unterminated.path()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(":2:")));
  TempFile no_name("COUNT = 0\n = 12\n");
  EXPECT_THAT(ParseVectorFile(no_name.path()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(":2:")));
  TempFile repeated("COUNT = 0\nKEY = 00\nKEY = 01\n");
  EXPECT_THAT(ParseVectorFile(repeated.path()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(":3:")));
}

TEST(VectorFileTest, MissingFileIsNotFound) {
  EXPECT_THAT(ParseVectorFile("/nonexistent/accelcrypt/x.rsp"),
              StatusIs(absl::StatusCode::kNotFound));
}

TEST(VectorFileTest, TreeFilesParseWithTheDocumentedCounts) {
  // Counts from tests/vectors/README.md.
  struct Expect {
    const char* file;
    size_t records;
    size_t fails;
  } expects[] = {
      {"aes-gcm/gcmDecrypt128.rsp", 315, 170},
      {"aes-gcm/gcmDecrypt192.rsp", 315, 151},
      {"aes-gcm/gcmDecrypt256.rsp", 315, 149},
      {"aes-gcm/gcmEncryptExtIV256.rsp", 315, 0},
      {"aes/CBCVarKey256.rsp", 512, 0},
      {"aes/CTR_SP800-38A.rsp", 6, 0},
      {"sha/SHA512ShortMsg.rsp", 129, 0},
      {"sha/SHA1Monte.rsp", 100, 0},
  };
  for (const Expect& e : expects) {
    SCOPED_TRACE(e.file);
    ASSERT_OK_AND_ASSIGN(
        VectorFile parsed,
        ParseVectorFile(::accelcrypt::testing::VectorDir() + "/" + e.file));
    EXPECT_EQ(parsed.records.size(), e.records);
    size_t fails = 0;
    for (const VectorRecord& r : parsed.records) fails += r.Has("FAIL");
    EXPECT_EQ(fails, e.fails);
  }
}

TEST(VectorDiscoveryTest, FindsEveryKnownTreeFile) {
  ASSERT_OK_AND_ASSIGN(
      auto suites, DiscoverVectorSuites(::accelcrypt::testing::VectorDir()));
  // 60 AES KAT/MMT + 1 CTR + 6 GCM + 13 SHA.
  EXPECT_THAT(suites, SizeIs(80));
  size_t ctr = 0, gcm = 0, sha = 0;
  for (const VectorSuite& s : suites) {
    ASSERT_FALSE(s.algs.empty()) << s.relative;
    if (s.relative == "aes/CTR_SP800-38A.rsp") {
      ++ctr;
      EXPECT_THAT(s.algs, ElementsAre(ACCELCRYPT_ALG_AES_128_CTR,
                                      ACCELCRYPT_ALG_AES_192_CTR,
                                      ACCELCRYPT_ALG_AES_256_CTR));
    }
    if (s.relative == "aes-gcm/gcmDecrypt192.rsp") {
      ++gcm;
      EXPECT_THAT(s.algs, ElementsAre(ACCELCRYPT_ALG_AES_192_GCM));
    }
    if (s.relative == "sha/SHA224Monte.rsp") {
      ++sha;
      EXPECT_THAT(s.algs, ElementsAre(ACCELCRYPT_ALG_SHA224));
    }
    if (s.relative == "aes/CFB128MMT192.rsp") {
      EXPECT_THAT(s.algs, ElementsAre(ACCELCRYPT_ALG_AES_192_CFB128));
    }
  }
  EXPECT_EQ(ctr, 1u);
  EXPECT_EQ(gcm, 1u);
  EXPECT_EQ(sha, 1u);
}

TEST(VectorDiscoveryTest, EmptyOrMissingDirectoryIsNotFound) {
  EXPECT_THAT(DiscoverVectorSuites("/nonexistent/accelcrypt"),
              StatusIs(absl::StatusCode::kNotFound));
  char dir[] = "/tmp/accelcrypt_vectors_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  EXPECT_THAT(DiscoverVectorSuites(dir), StatusIs(absl::StatusCode::kNotFound));
  rmdir(dir);
}

TEST(VectorRecordAlgorithmTest, CtrPicksTheAlgorithmByKeyLength) {
  ASSERT_OK_AND_ASSIGN(
      auto suites, DiscoverVectorSuites(::accelcrypt::testing::VectorDir()));
  const VectorSuite* ctr = nullptr;
  for (const auto& s : suites) {
    if (s.relative == "aes/CTR_SP800-38A.rsp") ctr = &s;
  }
  ASSERT_NE(ctr, nullptr);
  ASSERT_OK_AND_ASSIGN(VectorFile parsed, ParseVectorFile(ctr->path));
  std::vector<accelcrypt_alg> algs;
  for (const auto& r : parsed.records) {
    ASSERT_OK_AND_ASSIGN(accelcrypt_alg alg, VectorRecordAlgorithm(*ctr, r));
    algs.push_back(alg);
  }
  EXPECT_THAT(
      algs,
      ElementsAre(ACCELCRYPT_ALG_AES_128_CTR, ACCELCRYPT_ALG_AES_192_CTR,
                  ACCELCRYPT_ALG_AES_256_CTR, ACCELCRYPT_ALG_AES_128_CTR,
                  ACCELCRYPT_ALG_AES_192_CTR, ACCELCRYPT_ALG_AES_256_CTR));
}

}  // namespace
}  // namespace accelcrypt
