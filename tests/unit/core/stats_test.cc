// SPDX-License-Identifier: Apache-2.0
#include "core/stats.h"

#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/core.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/status_matchers.h"
#include "tests/support/test_env.h"

namespace accelcrypt {
namespace {

using ::accelcrypt::testing::BuildTreeConfig;
using ::testing::SizeIs;

const AlgorithmInfo& Alg(accelcrypt_alg id) { return *FindAlgorithm(id); }

std::string TempDir() {
  char dir[] = "/tmp/accelcrypt_stats_XXXXXX";
  return mkdtemp(dir) != nullptr ? dir : "";
}

std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    out.push_back(e.path().string());
  }
  return out;
}

TEST(StatsTest, JsonHasOnlyNonZeroCells) {
  Stats stats;
  size_t hw = stats.RegisterBackend("x86");
  size_t sw = stats.RegisterBackend("software");
  EXPECT_EQ(stats.RegisterBackend("x86"), hw);
  EXPECT_NE(hw, sw);
  stats.Cell(hw, Alg(ACCELCRYPT_ALG_AES_128_GCM)).Add(100);
  stats.Cell(hw, Alg(ACCELCRYPT_ALG_AES_128_GCM)).Add(28);
  stats.Cell(hw, Alg(ACCELCRYPT_ALG_AES_128_GCM)).errors += 1;
  stats.Cell(sw, Alg(ACCELCRYPT_ALG_SHA256)).fallbacks += 2;
  nlohmann::json j = nlohmann::json::parse(stats.ToJson());
  EXPECT_EQ(j["pid"].get<int64_t>(), static_cast<int64_t>(getpid()));
  EXPECT_TRUE(j["process"].is_string());
  const auto& gcm = j["backends"]["x86"]["AES-128-GCM"];
  EXPECT_EQ(gcm["ops"], 2);
  EXPECT_EQ(gcm["bytes"], 128);
  EXPECT_EQ(gcm["errors"], 1);
  EXPECT_EQ(gcm["fallbacks"], 0);
  EXPECT_EQ(j["backends"]["x86"].size(), 1u);
  EXPECT_EQ(j["backends"]["software"]["SHA2-256"]["fallbacks"], 2);
  EXPECT_EQ(j["backends"]["software"].size(), 1u);
}

TEST(StatsTest, ConcurrentIncrementsAreNotLost) {
  Stats stats;
  size_t slot = stats.RegisterBackend("software");
  Counter& cell = stats.Cell(slot, Alg(ACCELCRYPT_ALG_SHA1));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&cell] {
      for (int i = 0; i < 20000; ++i) cell.Add(3);
    });
  }
  for (auto& t : threads) t.join();
  nlohmann::json j = nlohmann::json::parse(stats.ToJson());
  EXPECT_EQ(j["backends"]["software"]["SHA1"]["ops"], 80000);
  EXPECT_EQ(j["backends"]["software"]["SHA1"]["bytes"], 240000);
}

TEST(StatsTest, WriteToDirWritesOneJsonFilePerCall) {
  std::string dir = TempDir();
  ASSERT_FALSE(dir.empty());
  Stats stats;
  stats.Cell(stats.RegisterBackend("software"), Alg(ACCELCRYPT_ALG_SHA384))
      .Add(5);
  ASSERT_OK(stats.WriteToDir(dir));
  ASSERT_OK(stats.WriteToDir(dir));
  auto files = FilesIn(dir);
  ASSERT_THAT(files, SizeIs(2));
  for (const std::string& f : files) {
    EXPECT_NE(f.find("accelcrypt-" + std::to_string(getpid()) + "-"),
              std::string::npos)
        << f;
    EXPECT_EQ(f.substr(f.size() - 5), ".json");
    std::ifstream in(f);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(nlohmann::json::parse(text.str()),
              nlohmann::json::parse(stats.ToJson()));
  }
  std::filesystem::remove_all(dir);
  EXPECT_FALSE(stats.WriteToDir("/nonexistent/accelcrypt/stats").ok());
}

TEST(StatsTest, CoreWritesRoutedOpsToStatsDirAtExit) {
  std::string dir = TempDir();
  ASSERT_FALSE(dir.empty());
  {
    ASSERT_OK_AND_ASSIGN(auto core,
                         Core::Create(BuildTreeConfig(
                             {{"stats_dir", dir}, {"backends", "software"}})));
    std::vector<uint8_t> msg(100, 7), out(32);
    ASSERT_OK(core->router().DigestOneShot(ACCELCRYPT_ALG_SHA256, msg,
                                           absl::MakeSpan(out)));
    ASSERT_OK(core->router().DigestOneShot(ACCELCRYPT_ALG_SHA256, msg,
                                           absl::MakeSpan(out)));
    EXPECT_THAT(FilesIn(dir), SizeIs(0)) << "written before exit";
  }
  auto files = FilesIn(dir);
  ASSERT_THAT(files, SizeIs(1));
  std::ifstream in(files[0]);
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str());
  EXPECT_EQ(j["backends"]["software"]["SHA2-256"]["ops"], 2);
  EXPECT_EQ(j["backends"]["software"]["SHA2-256"]["bytes"], 200);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace accelcrypt
