// SPDX-License-Identifier: Apache-2.0
// RDSEED entropy source: SP 800-90B health tests catch stuck and
// low-entropy sources injected through the raw-word hook, the source stays
// out of service, and the ABI reports the conservative entropy estimate.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "backends/x86/cpu_features.h"
#include "backends/x86/internal/aes_leaf.h"
#include "backends/x86/rng.h"
#include "tests/backends/x86/x86_abi.h"

namespace accelcrypt::x86::test {
namespace {

// A scripted raw source: distinct words (a 64-bit LCG), then, after
// `good_words`, the fault chosen.
struct Script {
  enum Fault { kNone, kStuck, kAlternate, kNoData } fault = kNone;
  uint64_t good_words = 0;
  uint64_t calls = 0;
  uint64_t state = 0x9e3779b97f4a7c15ull;
};

bool ScriptSource(void* arg, uint64_t* out) {
  Script* s = static_cast<Script*>(arg);
  const uint64_t n = s->calls++;
  if (n < s->good_words || s->fault == Script::kNone) {
    s->state = s->state * 6364136223846793005ull + 1442695040888963407ull;
    *out = s->state;
    return true;
  }
  switch (s->fault) {
    case Script::kStuck:
      *out = 0x4242424242424242ull;
      return true;
    case Script::kAlternate:
      *out = (n & 1) ? 0x1111111111111111ull : 0x2222222222222222ull;
      return true;
    default:
      return false;
  }
}

TEST(X86RngTest, HealthyScriptedSourcePasses) {
  Script s;
  auto src = EntropySourceX86::CreateForTest(&ScriptSource, &s);
  ASSERT_TRUE(src.ok()) << src.status();
  std::vector<uint8_t> buf(100);
  size_t bits = 0;
  ASSERT_TRUE((*src)->Fill(buf.data(), buf.size(), &bits).ok());
  EXPECT_EQ(bits, 400u);            // 0.5 bit per bit
  EXPECT_EQ(s.calls, 1024u + 13u);  // start-up samples, then ceil(100/8)
}

TEST(X86RngTest, StuckAtStartupIsRefused) {
  Script s;
  s.fault = Script::kStuck;
  s.good_words = 10;
  auto src = EntropySourceX86::CreateForTest(&ScriptSource, &s);
  ASSERT_TRUE(src.ok()) << src.status();
  EXPECT_EQ(s.calls, 0u);  // start-up runs at the first request, not here
  std::vector<uint8_t> buf(16, 0xaa);
  size_t bits = 0;
  absl::Status st = (*src)->Fill(buf.data(), buf.size(), &bits);
  EXPECT_EQ(st.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(st.message()), testing::HasSubstr("start-up"));
  EXPECT_EQ(s.calls, 12u);  // the second identical word trips the RCT
  EXPECT_EQ(buf, std::vector<uint8_t>(16, 0));
  // Out of service for good: a recovered source is not used again.
  s.fault = Script::kNone;
  EXPECT_EQ((*src)->Fill(buf.data(), 8, &bits).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(s.calls, 12u);
}

TEST(X86RngTest, StuckLaterGoesOutOfServiceForGood) {
  Script s;
  s.fault = Script::kStuck;
  s.good_words = 1024 + 50;
  auto src = EntropySourceX86::CreateForTest(&ScriptSource, &s);
  ASSERT_TRUE(src.ok()) << src.status();
  std::vector<uint8_t> buf(64, 0xaa);
  size_t bits = 0;
  absl::Status st = absl::OkStatus();
  int fills = 0;
  while (st.ok() && fills < 100) {
    st = (*src)->Fill(buf.data(), buf.size(), &bits);
    ++fills;
  }
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(fills, 7);  // 6 fills of 8 words, the 7th hits the stuck words
  EXPECT_EQ(buf, std::vector<uint8_t>(64, 0));  // output wiped on failure
  // Even if the source recovers, the entropy source stays out of service.
  s.fault = Script::kNone;
  EXPECT_EQ((*src)->Fill(buf.data(), 8, &bits).code(),
            absl::StatusCode::kUnavailable);
}

TEST(X86RngTest, AlternatingSourceTripsAdaptiveProportion) {
  Script s;
  s.fault = Script::kAlternate;
  s.good_words = 2000;  // a window starts at 2048 after the start-up 1024
  auto src = EntropySourceX86::CreateForTest(&ScriptSource, &s);
  ASSERT_TRUE(src.ok());
  std::vector<uint8_t> buf(8);
  size_t bits = 0;
  absl::Status st = absl::OkStatus();
  int words = 0;
  while (st.ok() && words < 4000) {
    st = (*src)->Fill(buf.data(), 8, &bits);
    ++words;
  }
  ASSERT_FALSE(st.ok()) << "APT never fired";
  // The repetition count test cannot see A,B,A,B; the adaptive proportion
  // test fires at the first recurrence of a window's first sample.
  EXPECT_LT(s.calls, 2048u + 4u);
}

TEST(X86RngTest, NoDataIsUnavailableButNotPermanent) {
  Script s;
  s.fault = Script::kNoData;
  s.good_words = 1024 + 2;
  auto src = EntropySourceX86::CreateForTest(&ScriptSource, &s);
  ASSERT_TRUE(src.ok());
  std::vector<uint8_t> buf(32);
  size_t bits = 0;
  EXPECT_EQ((*src)->Fill(buf.data(), buf.size(), &bits).code(),
            absl::StatusCode::kUnavailable);
  s.fault = Script::kNone;
  EXPECT_TRUE((*src)->Fill(buf.data(), buf.size(), &bits).ok());
}

TEST(X86RngTest, HealthTestCutoffs) {
  HealthTests t;
  EXPECT_TRUE(t.Feed(1));
  EXPECT_TRUE(t.Feed(2));
  EXPECT_FALSE(t.Feed(2));  // RCT: two identical in a row
  HealthTests u;
  EXPECT_TRUE(u.Feed(7));
  for (uint64_t i = 0; i < 100; ++i) EXPECT_TRUE(u.Feed(100 + i));
  EXPECT_FALSE(u.Feed(7));  // APT: the window's first value recurs
}

TEST(X86RngTest, RdrandAndRdseedLeavesReturnWords) {
  const CpuFeatures& f = DetectCpuFeatures();
  if (!f.rdrand || !f.rdseed) GTEST_SKIP() << "no RDRAND/RDSEED";
  uint64_t a = 0, b = 0, c = 0, d = 0;
  ASSERT_TRUE(internal::Rdrand64(&a, 10));
  ASSERT_TRUE(internal::Rdrand64(&b, 10));
  EXPECT_NE(a, b);
  ASSERT_TRUE(internal::Rdseed64(&c, EntropySourceX86::kRdseedTries));
  ASSERT_TRUE(internal::Rdseed64(&d, EntropySourceX86::kRdseedTries));
  EXPECT_NE(c, d);
}

TEST(X86RngTest, AbiEntropyFromRdseed) {
  if (!DetectCpuFeatures().rdseed) GTEST_SKIP() << "no RDSEED";
  auto inst = Instance::Create("");
  ASSERT_NE(inst, nullptr);
  ASSERT_TRUE(inst->Claims(ACCELCRYPT_ALG_RNG_ENTROPY));
  const accelcrypt_rng_table* t = inst->rng();
  ASSERT_NE(t, nullptr);
  std::vector<uint8_t> a(37), b(37);
  size_t bits = 0;
  accelcrypt_error e = {};
  ASSERT_EQ(t->entropy(inst->handle(), a.data(), a.size(), &bits, &e),
            ACCELCRYPT_OK)
      << e.message;
  EXPECT_EQ(bits, 37u * 4);
  ASSERT_EQ(t->entropy(inst->handle(), b.data(), b.size(), &bits, &e),
            ACCELCRYPT_OK);
  EXPECT_NE(a, b);
  EXPECT_EQ(t->entropy(inst->handle(), nullptr, 4, &bits, &e),
            ACCELCRYPT_ERR_INVALID_ARGUMENT);
}

// The per-boot start-up record: a passed start-up test is remembered for
// the boot it ran in, and only a trusted record of that boot skips it.
class StartupRecordTest : public testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/accelcrypt-rdseed-record-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/rdseed-startup";
  }
  void TearDown() override {
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }
  StartupRecord Record(const std::string& boot) const {
    return StartupRecord({path_}, path_, boot);
  }
  // Calls of the raw source for one 16-byte request from a new source.
  uint64_t CallsForOneRequest(const StartupRecord& record,
                              Script::Fault fault = Script::kNone) {
    Script s;
    s.fault = fault;
    s.good_words = 10;
    auto src = EntropySourceX86::CreateForTest(&ScriptSource, &s, record);
    EXPECT_TRUE(src.ok());
    std::vector<uint8_t> buf(16);
    size_t bits = 0;
    last_status_ = (*src)->Fill(buf.data(), buf.size(), &bits);
    return s.calls;
  }
  std::string Contents() const {
    std::ifstream in(path_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::string dir_, path_;
  absl::Status last_status_;
};

TEST_F(StartupRecordTest, PassedStartupServesLaterSourcesOfThatBoot) {
  EXPECT_EQ(CallsForOneRequest(Record("boot-a")), 1024u + 2u);
  ASSERT_TRUE(last_status_.ok()) << last_status_;
  EXPECT_THAT(Contents(), testing::HasSubstr("boot-a"));
  EXPECT_TRUE(Record("boot-a").Passed());
  // A second process of the same boot: no start-up samples, and the
  // continuous tests still see every word.
  EXPECT_EQ(CallsForOneRequest(Record("boot-a")), 2u);
  EXPECT_TRUE(last_status_.ok());
}

TEST_F(StartupRecordTest, AnotherBootTestsAgain) {
  EXPECT_EQ(CallsForOneRequest(Record("boot-a")), 1024u + 2u);
  EXPECT_FALSE(Record("boot-b").Passed());
  EXPECT_EQ(CallsForOneRequest(Record("boot-b")), 1024u + 2u);
  EXPECT_THAT(Contents(), testing::HasSubstr("boot-b"));
}

TEST_F(StartupRecordTest, WritableByOthersOrForeignTextIsNotBelieved) {
  EXPECT_EQ(CallsForOneRequest(Record("boot-a")), 1024u + 2u);
  ASSERT_EQ(chmod(path_.c_str(), 0666), 0);
  EXPECT_FALSE(Record("boot-a").Passed());
  EXPECT_EQ(CallsForOneRequest(Record("boot-a")), 1024u + 2u);
  std::ofstream(path_) << "boot-a\n";
  ASSERT_EQ(chmod(path_.c_str(), 0644), 0);
  EXPECT_FALSE(Record("boot-a").Passed());
}

TEST_F(StartupRecordTest, FailedStartupIsNotRemembered) {
  CallsForOneRequest(Record("boot-a"), Script::kStuck);
  EXPECT_EQ(last_status_.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(access(path_.c_str(), F_OK), 0);
  EXPECT_FALSE(Record("boot-a").Passed());
}

TEST_F(StartupRecordTest, NoBootIdMeansEveryProcessTests) {
  EXPECT_EQ(CallsForOneRequest(Record("")), 1024u + 2u);
  EXPECT_NE(access(path_.c_str(), F_OK), 0);
  EXPECT_EQ(CallsForOneRequest(StartupRecord::None()), 1024u + 2u);
}

TEST(X86RngTest, EveryProcessModeKeepsNoRecord) {
  setenv("ACCELCRYPT_RDSEED_STARTUP", "every-process", 1);
  StartupRecord r = StartupRecord::ForThisUser();
  unsetenv("ACCELCRYPT_RDSEED_STARTUP");
  EXPECT_FALSE(r.Passed());
}

}  // namespace
}  // namespace accelcrypt::x86::test
