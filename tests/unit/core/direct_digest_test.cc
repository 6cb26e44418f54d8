// SPDX-License-Identifier: Apache-2.0
// Direct digests (accelcrypt_digest_direct, the digest table's get_direct):
// which backends offer them, when the router hands one out, and that the
// self-test and the vector runner catch a broken one. The known answers
// themselves run in vector_suite_test, whose runner hashes every SHA vector
// through each backend's direct digest too.
#include <stdlib.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "core/backend.h"
#include "core/core.h"
#include "core/vector_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/status_matchers.h"
#include "tests/support/test_env.h"

namespace accelcrypt {
namespace {

using ::accelcrypt::testing::BuildTreeConfig;
using ::accelcrypt::testing::SharedRegistry;
using ::accelcrypt::testing::TestBackendDir;
using ::accelcrypt::testing::VectorDir;
using ::testing::HasSubstr;

std::vector<const AlgorithmInfo*> Digests() {
  std::vector<const AlgorithmInfo*> out;
  for (const AlgorithmInfo& a : AllAlgorithms()) {
    if (a.family == Family::kDigest) out.push_back(&a);
  }
  return out;
}

// FailingCore: failing.so (offering direct digests as `direct` says) ahead
// of software.
absl::StatusOr<std::unique_ptr<Core>> FailingCore(
    const std::string& direct,
    const std::map<std::string, std::string>& extra = {}) {
  for (const char* var :
       {"ACCELCRYPT_FAILING_MODE", "ACCELCRYPT_FAILING_AFTER",
        "ACCELCRYPT_FAILING_EVERY", "ACCELCRYPT_FAILING_RATE",
        "ACCELCRYPT_FAILING_SEED", "ACCELCRYPT_FAILING_FAIL_INIT",
        "ACCELCRYPT_FAILING_DIRECT"}) {
    unsetenv(var);
  }
  std::map<std::string, std::string> all = {
      {"backend_dir", TestBackendDir()},
      {"backends", "failing,software"},
      {"failing.direct", direct},
  };
  for (const auto& [k, v] : extra) all[k] = v;
  return Core::Create(BuildTreeConfig(all));
}

std::vector<uint8_t> HashDirect(const accelcrypt_digest_direct& d,
                                const AlgorithmInfo& info,
                                const std::vector<uint8_t>& msg) {
  std::vector<uint8_t> out(info.digest_len);
  DirectDigestMessage(d, msg, msg.size() / 3, out.data());
  return out;
}

TEST(DirectDigestTest, SoftwareOffersOneForEveryDigest) {
  const Backend* software = SharedRegistry().Find("software");
  ASSERT_NE(software, nullptr);
  for (const AlgorithmInfo* info : Digests()) {
    const accelcrypt_digest_direct* d = software->DigestDirect(info->id);
    ASSERT_NE(d, nullptr) << info->name;
    EXPECT_GT(d->state_size, 0u) << info->name;
    EXPECT_LE(d->state_size, Backend::kMaxDigestDirectState) << info->name;
  }
  // Not a digest: nothing.
  EXPECT_EQ(software->DigestDirect(ACCELCRYPT_ALG_AES_128_CBC), nullptr);
}

// The x86 backend hashes with SHA-NI over a plain state: a direct digest
// for each digest it declares (so vector_suite_test runs them through it).
TEST(DirectDigestTest, X86OffersOneForEachDigestItDeclares) {
  const Backend* x86 = SharedRegistry().Find("x86");
  if (x86 == nullptr) GTEST_SKIP() << "x86 backend not registered here";
  size_t declared = 0;
  for (const AlgorithmInfo* info : Digests()) {
    if (x86->Capability(info->id) == nullptr) {
      EXPECT_EQ(x86->DigestDirect(info->id), nullptr) << info->name;
      continue;
    }
    ++declared;
    const accelcrypt_digest_direct* d = x86->DigestDirect(info->id);
    ASSERT_NE(d, nullptr) << info->name;
    EXPECT_LE(d->state_size, Backend::kMaxDigestDirectState) << info->name;
  }
  if (declared == 0) GTEST_SKIP() << "x86 declares no digest (no SHA-NI)";
}

TEST(DirectDigestTest, RouterHandsOutTheFirstBackendsAndCountsThere) {
  ASSERT_OK_AND_ASSIGN(auto core,
                       FailingCore("correct", {{"selftest", "load"}}));
  const AlgorithmInfo& info = *FindAlgorithm(ACCELCRYPT_ALG_SHA256);
  Router::DirectDigest direct = core->router().Direct(info);
  ASSERT_NE(direct.fn, nullptr);
  ASSERT_NE(direct.counter, nullptr);
  std::vector<uint8_t> msg(1000, 0x61);
  std::vector<uint8_t> want(info.digest_len);
  ASSERT_OK(core->registry()
                .Find("software")
                ->DigestOneShot(info.id, msg, absl::MakeSpan(want)));
  EXPECT_EQ(HashDirect(*direct.fn, info, msg), want);
  // The cell is failing's, the route's first backend.
  direct.counter->Add(msg.size());
  nlohmann::json j = nlohmann::json::parse(core->stats().ToJson());
  EXPECT_EQ(j["backends"]["failing"]["SHA2-256"]["ops"], 1);
  EXPECT_EQ(j["backends"]["failing"]["SHA2-256"]["bytes"], 1000);
}

TEST(DirectDigestTest, NoneWhenTheFirstBackendOffersNone) {
  // failing.so first without direct digests: the router does not skip
  // ahead to software's (routing stays with the configured order).
  ASSERT_OK_AND_ASSIGN(auto core, FailingCore("none", {{"selftest", "load"}}));
  for (const AlgorithmInfo* info : Digests()) {
    EXPECT_EQ(core->router().Direct(*info).fn, nullptr) << info->name;
  }
  ASSERT_OK_AND_ASSIGN(auto software_first,
                       FailingCore("none", {{"backends", "software,failing"},
                                            {"selftest", "load"}}));
  for (const AlgorithmInfo* info : Digests()) {
    EXPECT_NE(software_first->router().Direct(*info).fn, nullptr) << info->name;
  }
}

TEST(DirectDigestTest, OpenBreakerTakesItAway) {
  // Every failing.so call fails: the one-shot falls back to software and,
  // after breaker_threshold device errors, failing is out of rotation.
  ASSERT_OK_AND_ASSIGN(auto core,
                       FailingCore("correct", {{"failing.mode", "always"},
                                               {"selftest", "0"},
                                               {"breaker_threshold", "3"}}));
  const AlgorithmInfo& info = *FindAlgorithm(ACCELCRYPT_ALG_SHA256);
  ASSERT_NE(core->router().Direct(info).fn, nullptr);
  std::vector<uint8_t> msg(64, 1), out(info.digest_len);
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK(core->router().DigestOneShot(info, msg, absl::MakeSpan(out)));
  }
  EXPECT_EQ(core->router().Direct(info).fn, nullptr)
      << "a backend out of rotation must not serve direct digests";
}

// selftest = first-use (the default): no direct digest is handed out
// before the pair's known-answer test ran; the first routed use runs it,
// and a wrong direct digest is then refused for good, so the answer the
// caller gets is software's, never the broken one.
TEST(DirectDigestTest, FirstUseSelfTestRefusesAWrongOneBeforeItServes) {
  ASSERT_OK_AND_ASSIGN(auto core, FailingCore("wrong"));
  const AlgorithmInfo& info = *FindAlgorithm(ACCELCRYPT_ALG_SHA256);
  EXPECT_EQ(core->router().Direct(info).fn, nullptr)
      << "handed out before its self-test ran";
  EXPECT_EQ(core->router().SelfTestStateOf(0, info),
            Router::SelfTestState::kPending);
  std::vector<uint8_t> msg(3, 0x61), got(info.digest_len),
      want(info.digest_len);
  ASSERT_OK(core->router().DigestOneShot(info, msg, absl::MakeSpan(got)));
  ASSERT_OK(core->registry()
                .Find("software")
                ->DigestOneShot(info.id, msg, absl::MakeSpan(want)));
  EXPECT_EQ(got, want);
  ASSERT_EQ(core->router().backend_at(0)->name(), "failing");
  EXPECT_EQ(core->router().SelfTestStateOf(0, info),
            Router::SelfTestState::kFailed);
  std::vector<LoadEvent> events = core->router().SelfTestEvents();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].backend, "failing");
  EXPECT_EQ(events[0].algorithm, info.name);
  EXPECT_THAT(events[0].message, HasSubstr("first use"));
  EXPECT_THAT(core->router().Candidates(info.id),
              ::testing::ElementsAre("software"));
  // The failing pair is never asked again; software's direct digest is
  // not handed out either (the route's first backend decides), so the
  // routed path keeps serving the right answer.
  EXPECT_EQ(core->router().Direct(info).fn, nullptr);
  ASSERT_OK(core->router().DigestOneShot(info, msg, absl::MakeSpan(got)));
  EXPECT_EQ(got, want);
  nlohmann::json j = nlohmann::json::parse(core->stats().ToJson());
  EXPECT_FALSE(j["backends"]["failing"].contains("SHA2-256") &&
               j["backends"]["failing"]["SHA2-256"]["ops"] != 0)
      << j.dump();
  // Other digests are still pending: only what was used was tested.
  EXPECT_EQ(
      core->router().SelfTestStateOf(0, *FindAlgorithm(ACCELCRYPT_ALG_SHA512)),
      Router::SelfTestState::kPending);
}

TEST(DirectDigestTest, SelfTestDropsAWrongOne) {
  ASSERT_OK_AND_ASSIGN(auto core, FailingCore("wrong", {{"selftest", "load"}}));
  std::vector<std::string> failed;
  for (const LoadEvent& e : core->registry().events()) {
    if (e.backend == "failing" && !e.algorithm.empty() && !e.ok) {
      EXPECT_THAT(e.message, HasSubstr("direct")) << e.algorithm;
      failed.push_back(e.algorithm);
    }
  }
  EXPECT_EQ(failed.size(), Digests().size()) << absl::StrJoin(failed, ", ");
  // The digests left failing.so; software serves them, directly.
  const AlgorithmInfo& info = *FindAlgorithm(ACCELCRYPT_ALG_SHA512);
  EXPECT_THAT(core->router().Candidates(info.id),
              ::testing::ElementsAre("software"));
  ASSERT_NE(core->router().Direct(info).fn, nullptr);
  std::vector<uint8_t> msg(3, 0x61), want(info.digest_len);
  ASSERT_OK(core->registry()
                .Find("software")
                ->DigestOneShot(info.id, msg, absl::MakeSpan(want)));
  EXPECT_EQ(HashDirect(*core->router().Direct(info).fn, info, msg), want);
}

TEST(DirectDigestTest, VectorRunnerCatchesAWrongOne) {
  ASSERT_OK_AND_ASSIGN(auto core, FailingCore("wrong", {{"selftest", "0"}}));
  const Backend* failing = core->registry().Find("failing");
  ASSERT_NE(failing, nullptr);
  ASSERT_OK_AND_ASSIGN(std::vector<VectorSuite> suites,
                       DiscoverVectorSuites(VectorDir()));
  size_t files = 0;
  for (const VectorSuite& suite : suites) {
    if (suite.relative != "sha/SHA256ShortMsg.rsp") continue;
    ++files;
    ASSERT_OK_AND_ASSIGN(
        VectorResult r, RunVectorSuite(*failing, suite, ACCELCRYPT_ALG_SHA256));
    EXPECT_EQ(r.passed, 0u);
    EXPECT_GT(r.failed, 0u);
    ASSERT_FALSE(r.failures.empty());
    EXPECT_THAT(r.failures[0], HasSubstr("direct"));
  }
  EXPECT_EQ(files, 1u) << "sha/SHA256ShortMsg.rsp not found";
}

TEST(DirectDigestTest, BadDirectSettingFailsTheBackend) {
  ASSERT_OK_AND_ASSIGN(auto core, FailingCore("sometimes"));
  EXPECT_EQ(core->registry().Find("failing"), nullptr);
  bool reported = false;
  for (const LoadEvent& e : core->registry().events()) {
    if (e.message.find("bad direct 'sometimes'") != std::string::npos) {
      reported = true;
    }
  }
  EXPECT_TRUE(reported);
}

}  // namespace
}  // namespace accelcrypt
