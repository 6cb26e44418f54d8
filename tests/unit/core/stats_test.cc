// SPDX-License-Identifier: Apache-2.0
#include "core/stats.h"

#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
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
using ::accelcrypt::testing::IsOkAndHolds;
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

// A name that is not UTF-8 (a backend's, or the process's comm, which any
// program name sets) must not throw out of the JSON writer: at exit that
// was std::terminate inside the application (found by fuzz_stats).
TEST(StatsTest, NamesThatAreNotUtf8BecomeReplacementCharacters) {
  Stats stats;
  size_t slot = stats.RegisterBackend("bad\xe9name");
  stats.Cell(slot, Alg(ACCELCRYPT_ALG_SHA256)).Add(1);
  std::string json;
  ASSERT_NO_THROW(json = stats.ToJson());
  nlohmann::json j = nlohmann::json::parse(json);
  EXPECT_EQ(j["backends"]["bad\xef\xbf\xbdname"]["SHA2-256"]["ops"], 1);
}

TEST(StatsTest, ConcurrentIncrementsAreNotLost) {
  Stats stats;
  size_t slot = stats.RegisterBackend("software");
  Counter& cell = stats.Cell(slot, Alg(ACCELCRYPT_ALG_SHA1));
  std::vector<std::thread> threads;
  threads.reserve(4);
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

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> FilesEndingIn(const std::string& dir,
                                       const std::string& ext) {
  std::vector<std::string> out;
  for (const std::string& f : FilesIn(dir)) {
    if (f.size() > ext.size() && f.substr(f.size() - ext.size()) == ext) {
      out.push_back(f);
    }
  }
  return out;
}

nlohmann::json LiveDoc(const std::string& path) {
  auto json = LiveStatsToJson(ReadFile(path));
  EXPECT_TRUE(json.ok()) << path << ": " << json.status();
  return json.ok() ? nlohmann::json::parse(*json) : nlohmann::json();
}

TEST(StatsTest, CoreCountsLiveInAFileAndReplacesItWithJsonAtExit) {
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
    EXPECT_THAT(FilesEndingIn(dir, ".json"), SizeIs(0)) << "JSON before exit";
    auto live = FilesEndingIn(dir, ".stats");
    ASSERT_THAT(live, SizeIs(1));
    EXPECT_EQ(live[0], core->stats().live_path());
    struct stat st = {};
    ASSERT_EQ(stat(live[0].c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    nlohmann::json j = LiveDoc(live[0]);
    EXPECT_EQ(j["state"], "live");
    EXPECT_EQ(j["pid"].get<int64_t>(), getpid());
    EXPECT_EQ(j["backends"]["software"]["SHA2-256"]["ops"], 2);
    EXPECT_EQ(j["backends"]["software"]["SHA2-256"]["bytes"], 200);
    EXPECT_TRUE(StatsWriterAlive(j["pid"], j["start_ticks"]));
  }
  EXPECT_THAT(FilesEndingIn(dir, ".stats"), SizeIs(0));
  auto files = FilesEndingIn(dir, ".json");
  ASSERT_THAT(files, SizeIs(1));
  nlohmann::json j = nlohmann::json::parse(ReadFile(files[0]));
  EXPECT_EQ(j["state"], "ended");
  EXPECT_EQ(j["backends"]["software"]["SHA2-256"]["ops"], 2);
  EXPECT_EQ(j["backends"]["software"]["SHA2-256"]["bytes"], 200);
  std::filesystem::remove_all(dir);
}

// A child after fork counts only its own work, in its own file, and what it
// counted survives _exit and SIGKILL; the parent's file is untouched.
TEST(StatsTest, ForkedChildCountsOnlyItsOwnWorkAndSurvivesAbruptExit) {
  std::string dir = TempDir();
  ASSERT_FALSE(dir.empty());
  ASSERT_OK_AND_ASSIGN(auto core,
                       Core::Create(BuildTreeConfig(
                           {{"stats_dir", dir}, {"backends", "software"}})));
  std::vector<uint8_t> msg(10, 1), out(64);
  ASSERT_OK(core->router().DigestOneShot(ACCELCRYPT_ALG_SHA512, msg,
                                         absl::MakeSpan(out)));
  const std::string parent_file = core->stats().live_path();
  for (int how : {0, 1}) {  // 0: _exit, 1: SIGKILL
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      std::vector<uint8_t> m(1000, 2), o(64);
      for (int i = 0; i < 3; ++i) {
        if (!core->router()
                 .DigestOneShot(ACCELCRYPT_ALG_SHA512, m, absl::MakeSpan(o))
                 .ok()) {
          _exit(3);
        }
      }
      if (how == 1) raise(SIGKILL);
      _exit(core->stats().live_path() != parent_file ? 0 : 4);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    if (how == 0) {
      ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    } else {
      ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    }
    std::string prefix = dir + "/accelcrypt-" + std::to_string(pid) + "-";
    std::string child_file;
    for (const std::string& f : FilesEndingIn(dir, ".stats")) {
      if (f.rfind(prefix, 0) == 0) child_file = f;
    }
    ASSERT_FALSE(child_file.empty()) << "no live file of child " << pid;
    nlohmann::json c = LiveDoc(child_file);
    EXPECT_EQ(c["pid"].get<int64_t>(), pid);
    EXPECT_EQ(c["ppid"].get<int64_t>(), getpid());
    EXPECT_EQ(c["backends"]["software"]["SHA2-512"]["ops"], 3) << c.dump();
    EXPECT_EQ(c["backends"]["software"]["SHA2-512"]["bytes"], 3000);
    EXPECT_FALSE(StatsWriterAlive(c["pid"], c["start_ticks"]));
  }
  nlohmann::json p = LiveDoc(parent_file);
  EXPECT_EQ(p["pid"].get<int64_t>(), getpid());
  EXPECT_EQ(p["backends"]["software"]["SHA2-512"]["ops"], 1) << p.dump();
  EXPECT_EQ(p["backends"]["software"]["SHA2-512"]["bytes"], 10);
  core.reset();
  std::filesystem::remove_all(dir);
}

// A process that loads the core and counts nothing through it makes no
// stats file, touches no page of the table and writes nothing at its end;
// its first counted operation makes the live file (issue 29: the file's
// mapping is off the load path).
TEST(StatsTest, NoFileBeforeTheFirstCountedOperation) {
  std::string dir = TempDir();
  ASSERT_FALSE(dir.empty());
  {
    ASSERT_OK_AND_ASSIGN(auto core,
                         Core::Create(BuildTreeConfig(
                             {{"stats_dir", dir}, {"backends", "software"}})));
    EXPECT_FALSE(core->stats().armed());
    EXPECT_FALSE(core->stats().live());
    EXPECT_THAT(FilesIn(dir), SizeIs(0)) << "a stats file at load";
  }
  EXPECT_THAT(FilesIn(dir), SizeIs(0)) << "a stats file for no operation";
  {
    ASSERT_OK_AND_ASSIGN(auto core,
                         Core::Create(BuildTreeConfig(
                             {{"stats_dir", dir}, {"backends", "software"}})));
    std::vector<uint8_t> msg(10, 1), out(32);
    ASSERT_OK(core->router().DigestOneShot(ACCELCRYPT_ALG_SHA256, msg,
                                           absl::MakeSpan(out)));
    EXPECT_TRUE(core->stats().armed());
    EXPECT_THAT(FilesEndingIn(dir, ".stats"), SizeIs(1));
    EXPECT_EQ(LiveDoc(core->stats().live_path())["backends"]["software"]
                                                ["SHA2-256"]["ops"],
              1);
  }
  EXPECT_THAT(FilesEndingIn(dir, ".json"), SizeIs(1));
  std::filesystem::remove_all(dir);
}

// A child forked before its parent counted anything makes its file at the
// fork (it may enter a sandbox next, where it can make none), and counts
// there; the parent still has none.
TEST(StatsTest, ChildOfACoreThatCountedNothingMakesItsFileAtFork) {
  std::string dir = TempDir();
  ASSERT_FALSE(dir.empty());
  ASSERT_OK_AND_ASSIGN(auto core,
                       Core::Create(BuildTreeConfig(
                           {{"stats_dir", dir}, {"backends", "software"}})));
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (!core->stats().live()) _exit(2);
    std::vector<uint8_t> m(100, 2), o(32);
    if (!core->router()
             .DigestOneShot(ACCELCRYPT_ALG_SHA256, m, absl::MakeSpan(o))
             .ok()) {
      _exit(3);
    }
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: no live file at the fork";
  EXPECT_FALSE(core->stats().armed());
  auto live = FilesEndingIn(dir, ".stats");
  ASSERT_THAT(live, SizeIs(1));
  nlohmann::json c = LiveDoc(live[0]);
  EXPECT_EQ(c["pid"].get<int64_t>(), pid);
  EXPECT_EQ(c["ppid"].get<int64_t>(), getpid());
  EXPECT_EQ(c["backends"]["software"]["SHA2-256"]["ops"], 1) << c.dump();
  core.reset();
  std::filesystem::remove_all(dir);
}

TEST(StatsTest, ChildOfANonLiveCoreStartsFromZero) {
  ASSERT_OK_AND_ASSIGN(auto core,
                       Core::Create(BuildTreeConfig(
                           {{"stats_dir", "none"}, {"backends", "software"}})));
  EXPECT_FALSE(core->stats().live());
  std::vector<uint8_t> msg(10, 1), out(32);
  ASSERT_OK(core->router().DigestOneShot(ACCELCRYPT_ALG_SHA256, msg,
                                         absl::MakeSpan(out)));
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    nlohmann::json j = nlohmann::json::parse(core->stats().ToJson());
    _exit(j["backends"]["software"].empty() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "the child repeated the parent's counts";
  nlohmann::json j = nlohmann::json::parse(core->stats().ToJson());
  EXPECT_EQ(j["backends"]["software"]["SHA2-256"]["ops"], 1);
}

TEST(StatsTest, ResolveStatsDir) {
  std::string root = TempDir();
  ASSERT_FALSE(root.empty());
  EXPECT_THAT(ResolveStatsDir(std::nullopt, root + "/missing"),
              IsOkAndHolds(std::string()));
  EXPECT_THAT(ResolveStatsDir(std::string("none"), root),
              IsOkAndHolds(std::string()));
  EXPECT_THAT(ResolveStatsDir(std::string("off"), root),
              IsOkAndHolds(std::string()));
  EXPECT_THAT(ResolveStatsDir(std::nullopt, ""), IsOkAndHolds(std::string()));
  // A plain directory is used as is, configured or default.
  EXPECT_THAT(ResolveStatsDir(root, ""), IsOkAndHolds(root));
  EXPECT_THAT(ResolveStatsDir(std::nullopt, root), IsOkAndHolds(root));
  // A configured directory that is missing or a file is an error naming it.
  auto missing = ResolveStatsDir(root + "/missing", "");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()),
              ::testing::HasSubstr(root + "/missing"));
  std::ofstream(root + "/file") << "x";
  EXPECT_FALSE(ResolveStatsDir(root + "/file", "").ok());
  // A shared root (1733): the per-user subdirectory, made 0700.
  std::string shared = root + "/shared";
  ASSERT_EQ(mkdir(shared.c_str(), 0700), 0);
  ASSERT_EQ(chmod(shared.c_str(), 01733), 0);
  std::string mine = shared + "/" + std::to_string(geteuid());
  EXPECT_THAT(ResolveStatsDir(std::nullopt, shared), IsOkAndHolds(mine));
  EXPECT_THAT(ResolveStatsDir(shared, ""), IsOkAndHolds(mine));
  struct stat st = {};
  ASSERT_EQ(lstat(mine.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  // Someone else's making (here: a group-readable one, or a symlink) is
  // refused.
  ASSERT_EQ(chmod(mine.c_str(), 0750), 0);
  EXPECT_FALSE(ResolveStatsDir(shared, "").ok());
  ASSERT_EQ(rmdir(mine.c_str()), 0);
  ASSERT_EQ(symlink(root.c_str(), mine.c_str()), 0);
  auto linked = ResolveStatsDir(shared, "");
  ASSERT_FALSE(linked.ok());
  EXPECT_THAT(std::string(linked.status().message()),
              ::testing::HasSubstr("not a private directory"));
  std::filesystem::remove_all(root);
}

TEST(StatsTest, LiveStatsToJsonRejectsWhatIsNotAStatsFile) {
  EXPECT_FALSE(LiveStatsToJson("").ok());
  EXPECT_FALSE(LiveStatsToJson(std::string(4096, 'x')).ok());
  std::string dir = TempDir();
  ASSERT_FALSE(dir.empty());
  Stats stats;
  stats.Cell(stats.RegisterBackend("x86"), Alg(ACCELCRYPT_ALG_AES_128_GCM))
      .Add(64);
  ASSERT_OK(stats.StartLive(dir));
  std::string bytes = ReadFile(stats.live_path());
  ASSERT_OK_AND_ASSIGN(std::string json, LiveStatsToJson(bytes));
  EXPECT_EQ(
      nlohmann::json::parse(json)["backends"]["x86"]["AES-128-GCM"]["bytes"],
      64);
  // Truncated inside the cells, a wrong version, a backend count beyond the
  // table: refused, not read out of bounds.
  EXPECT_FALSE(LiveStatsToJson(bytes.substr(0, bytes.size() / 2)).ok());
  std::string bad = bytes;
  bad[offsetof(StatsFileHeader, version)] ^= 0x7f;
  EXPECT_FALSE(LiveStatsToJson(bad).ok());
  bad = bytes;
  uint32_t many = 1000;
  std::memcpy(&bad[offsetof(StatsFileHeader, num_backends)], &many,
              sizeof(many));
  EXPECT_FALSE(LiveStatsToJson(bad).ok());
  // A cells offset near 2^64: offset + table size wraps below the file size
  // (the stats fuzzer's finding); refused, not read 256 bytes before the
  // buffer. Another user can write such a file where root's `accelcrypt
  // stats` reads it.
  bad = bytes;
  const uint64_t wrap = ~uint64_t{0} - 255;  // -256: 8-aligned
  std::memcpy(&bad[offsetof(StatsFileHeader, cells_offset)], &wrap,
              sizeof(wrap));
  absl::StatusOr<std::string> wrapped = LiveStatsToJson(bad);
  ASSERT_FALSE(wrapped.ok());
  EXPECT_THAT(std::string(wrapped.status().message()),
              ::testing::HasSubstr("truncated or inconsistent"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace accelcrypt
