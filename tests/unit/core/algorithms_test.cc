// SPDX-License-Identifier: Apache-2.0
// The identity table, cross-checked against OpenSSL's own algorithm
// objects: every name the provider will publish must be one OpenSSL knows
// for the same algorithm, with the same sizes.
#include "core/algorithms.h"

#include <openssl/evp.h>

#include <set>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accelcrypt {
namespace {

std::vector<std::string> Names(const AlgorithmInfo& a) {
  std::vector<std::string> out;
  for (absl::string_view n : absl::StrSplit(
           absl::string_view(a.openssl_names.data(), a.openssl_names.size()),
           ':', absl::SkipEmpty())) {
    out.emplace_back(n);
  }
  return out;
}

TEST(AlgorithmsTest, IndicesAreDenseAndIdsUnique) {
  auto all = AllAlgorithms();
  size_t ciphers = 0, digests = 0, rngs = 0;
  for (const AlgorithmInfo& a : all) {
    ciphers += a.family == Family::kCipher;
    digests += a.family == Family::kDigest;
    rngs += a.family == Family::kRng;
  }
  EXPECT_EQ(ciphers, 18u);
  EXPECT_EQ(digests, 5u);
  EXPECT_EQ(rngs, 2u);
  std::set<accelcrypt_alg> ids;
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].index, i) << all[i].name;
    EXPECT_TRUE(ids.insert(all[i].id).second) << all[i].name;
    EXPECT_EQ(FindAlgorithm(all[i].id), &all[i]);
  }
  EXPECT_EQ(FindAlgorithm(0), nullptr);
  EXPECT_EQ(FindAlgorithm(ACCELCRYPT_CIPHER_ALG(ACCELCRYPT_MODE_CBC, 17)),
            nullptr);
}

TEST(AlgorithmsTest, EveryNameResolvesToItsRowCaseInsensitively) {
  std::set<std::string> seen;
  for (const AlgorithmInfo& a : AllAlgorithms()) {
    std::vector<std::string> names = Names(a);
    names.emplace_back(a.name);
    names.emplace_back(a.key);
    for (const std::string& n : names) {
      EXPECT_EQ(FindAlgorithmByName(n), &a) << n;
      EXPECT_EQ(FindAlgorithmByName(absl::AsciiStrToLower(n)), &a) << n;
      EXPECT_EQ(FindAlgorithmByName(absl::AsciiStrToUpper(n)), &a) << n;
    }
    // No alias is claimed by two rows.
    for (const std::string& n : Names(a)) {
      EXPECT_TRUE(seen.insert(absl::AsciiStrToLower(n)).second) << n;
    }
  }
  EXPECT_EQ(FindAlgorithmByName("AES-128-XTS"), nullptr);
  EXPECT_EQ(FindAlgorithmByName(""), nullptr);
}

TEST(AlgorithmsTest, CipherRowsMatchOpenSsl) {
  size_t n = 0;
  for (const AlgorithmInfo& a : AllAlgorithms()) {
    if (a.family != Family::kCipher) continue;
    ++n;
    EXPECT_EQ(ACCELCRYPT_ALG_FAMILY(a.id), ACCELCRYPT_FAMILY_CIPHER);
    EXPECT_EQ(ACCELCRYPT_CIPHER_KEY_BYTES(a.id), a.key_len) << a.name;
    EXPECT_NE(a.ckm, 0u) << a.name;
    EXPECT_EQ(IsStreamMode(a.mode), a.mode == CipherMode::kCfb128 ||
                                        a.mode == CipherMode::kOfb ||
                                        a.mode == CipherMode::kCtr);
    for (const std::string& name : Names(a)) {
      EVP_CIPHER* c = EVP_CIPHER_fetch(nullptr, name.c_str(), nullptr);
      ASSERT_NE(c, nullptr) << "OpenSSL does not know " << name;
      EXPECT_EQ(static_cast<size_t>(EVP_CIPHER_get_key_length(c)), a.key_len)
          << name;
      EXPECT_EQ(static_cast<size_t>(EVP_CIPHER_get_iv_length(c)), a.iv_len)
          << name;
      EXPECT_EQ(static_cast<size_t>(EVP_CIPHER_get_block_size(c)), a.block_len)
          << name;
      EXPECT_TRUE(EVP_CIPHER_is_a(c, std::string(a.name).c_str())) << name;
      EVP_CIPHER_free(c);
    }
  }
  EXPECT_EQ(n, 18u);
}

TEST(AlgorithmsTest, DigestRowsMatchOpenSsl) {
  size_t n = 0;
  for (const AlgorithmInfo& a : AllAlgorithms()) {
    if (a.family != Family::kDigest) continue;
    ++n;
    EXPECT_EQ(ACCELCRYPT_ALG_FAMILY(a.id), ACCELCRYPT_FAMILY_DIGEST);
    EXPECT_NE(a.ckm, 0u) << a.name;
    for (const std::string& name : Names(a)) {
      EVP_MD* md = EVP_MD_fetch(nullptr, name.c_str(), nullptr);
      ASSERT_NE(md, nullptr) << "OpenSSL does not know " << name;
      EXPECT_EQ(static_cast<size_t>(EVP_MD_get_size(md)), a.digest_len) << name;
      EXPECT_EQ(static_cast<size_t>(EVP_MD_get_block_size(md)), a.block_len)
          << name;
      EXPECT_TRUE(EVP_MD_is_a(md, std::string(a.name).c_str())) << name;
      EVP_MD_free(md);
    }
  }
  EXPECT_EQ(n, 5u);
}

TEST(AlgorithmsTest, RngRowsAreInTheRngFamily) {
  for (accelcrypt_alg id :
       {ACCELCRYPT_ALG_RNG_RANDOM, ACCELCRYPT_ALG_RNG_ENTROPY}) {
    const AlgorithmInfo* a = FindAlgorithm(id);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->family, Family::kRng);
    EXPECT_EQ(ACCELCRYPT_ALG_FAMILY(id), ACCELCRYPT_FAMILY_RNG);
  }
}

}  // namespace
}  // namespace accelcrypt
