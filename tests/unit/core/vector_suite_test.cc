// SPDX-License-Identifier: Apache-2.0
// Every (backend, algorithm) pair the build tree's registry declares runs
// every vector file for that algorithm. A backend module dropped into the
// build's backend directory joins these suites with no edit here.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "core/vector_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_env.h"

namespace accelcrypt {
namespace {

using ::accelcrypt::testing::BackendAlg;
using ::accelcrypt::testing::BackendAlgName;
using ::accelcrypt::testing::SharedBackendAlgs;
using ::accelcrypt::testing::SharedRegistry;
using ::accelcrypt::testing::VectorDir;

const std::vector<VectorSuite>& AllSuites() {
  static const std::vector<VectorSuite>* suites = [] {
    auto found = DiscoverVectorSuites(VectorDir());
    return new std::vector<VectorSuite>(
        found.ok() ? *std::move(found) : std::vector<VectorSuite>());
  }();
  return *suites;
}

// RunAllVectors runs every vector file that covers the parameter's algorithm
// on its backend and requires at least one vector to run and none to fail.
void RunAllVectors(const BackendAlg& p) {
  ASSERT_FALSE(AllSuites().empty())
      << "no vector files found under " << VectorDir();
  size_t files = 0, passed = 0, skipped = 0;
  for (const VectorSuite& suite : AllSuites()) {
    bool covers = false;
    for (accelcrypt_alg alg : suite.algs) covers |= alg == p.alg->id;
    if (!covers) continue;
    ++files;
    SCOPED_TRACE(suite.relative);
    ASSERT_OK_AND_ASSIGN(VectorResult result,
                         RunVectorSuite(*p.backend, suite, p.alg->id));
    EXPECT_EQ(result.failed, 0u)
        << p << ": " << result.failed << " of " << result.passed + result.failed
        << " vectors failed in " << suite.relative << ":\n  "
        << absl::StrJoin(result.failures, "\n  ");
    passed += result.passed;
    skipped += result.skipped;
  }
  // A declared algorithm without vectors, or whose vectors were all skipped,
  // would otherwise pass without testing anything.
  EXPECT_GT(files, 0u) << p << ": no vector file covers " << p.alg->name;
  EXPECT_GT(passed, 0u) << p << ": no vector ran (" << skipped
                        << " skipped as outside the backend's limits)";
  ::testing::Test::RecordProperty("vectors_passed", static_cast<int>(passed));
  ::testing::Test::RecordProperty("vectors_skipped", static_cast<int>(skipped));
}

class CipherVectorTest : public ::testing::TestWithParam<BackendAlg> {};

TEST_P(CipherVectorTest, AllVectorFilesPass) { RunAllVectors(GetParam()); }

INSTANTIATE_TEST_SUITE_P(
    Registry, CipherVectorTest,
    ::testing::ValuesIn(SharedBackendAlgs(Family::kCipher)), BackendAlgName);

class DigestVectorTest : public ::testing::TestWithParam<BackendAlg> {};

TEST_P(DigestVectorTest, AllVectorFilesPass) { RunAllVectors(GetParam()); }

INSTANTIATE_TEST_SUITE_P(
    Registry, DigestVectorTest,
    ::testing::ValuesIn(SharedBackendAlgs(Family::kDigest)), BackendAlgName);

// The software backend is built in: if it ever stops declaring the whole
// cipher and digest set, the parameterised suites above would shrink
// silently.
TEST(VectorCoverageTest, SoftwareDeclaresEveryCipherAndDigest) {
  const Backend* software = SharedRegistry().Find("software");
  ASSERT_NE(software, nullptr) << "software backend not registered";
  for (const AlgorithmInfo& alg : AllAlgorithms()) {
    if (alg.family != Family::kCipher && alg.family != Family::kDigest) {
      continue;
    }
    EXPECT_NE(software->Capability(alg.id), nullptr)
        << "software does not declare " << alg.name;
  }
}

// Self-test failures at load drop an algorithm from a backend, which would
// also silently drop it from these suites: report them here.
TEST(VectorCoverageTest, NoSelfTestFailedAtLoad) {
  for (const LoadEvent& event : SharedRegistry().events()) {
    if (event.algorithm.empty()) continue;  // backend-level: declined etc.
    EXPECT_TRUE(event.ok) << event.backend << "/" << event.algorithm << ": "
                          << event.message;
  }
}

// A vector file whose records name no algorithm the backend declares must
// be reported as skipped, not passed.
TEST(VectorRunnerTest, UndeclaredAlgorithmIsSkippedNotPassed) {
  const Backend* software = SharedRegistry().Find("software");
  ASSERT_NE(software, nullptr);
  VectorSuite suite;
  for (const VectorSuite& s : AllSuites()) {
    if (s.relative == "aes/CBCMMT128.rsp") suite = s;
  }
  ASSERT_FALSE(suite.path.empty());
  ASSERT_OK_AND_ASSIGN(VectorResult all, RunVectorSuite(*software, suite));
  EXPECT_EQ(all.passed, 20u);
  EXPECT_EQ(all.failed, 0u);
  // Filtering on another algorithm counts nothing at all.
  ASSERT_OK_AND_ASSIGN(
      VectorResult none,
      RunVectorSuite(*software, suite, ACCELCRYPT_ALG_AES_256_GCM));
  EXPECT_EQ(none.passed + none.failed + none.skipped, 0u);
}

// CorruptCopy copies tests/vectors/<relative> into a fresh directory with the
// same relative path, replacing the first line that starts with `prefix` by
// `replacement` (or, if `replacement` is empty, flipping that line's last hex
// digit), so the runner can be shown to catch a wrong answer.
std::string CorruptCopy(const std::string& relative, const std::string& prefix,
                        const std::string& replacement = "") {
  char dir[] = "/tmp/accelcrypt_corrupt_XXXXXX";
  if (mkdtemp(dir) == nullptr) return "";
  std::ifstream in(VectorDir() + "/" + relative, std::ios::binary);
  std::stringstream content;
  content << in.rdbuf();
  std::string text = content.str();
  size_t pos = text.find("\n" + prefix);
  if (pos == std::string::npos) return "";
  size_t start = pos + 1;
  size_t end = text.find('\r', start);
  if (replacement.empty()) {
    char& c = text[end - 1];
    c = c == '0' ? '1' : '0';
  } else {
    text.replace(start, end - start, replacement);
  }
  std::filesystem::path out = std::filesystem::path(dir) / relative;
  std::filesystem::create_directories(out.parent_path());
  std::ofstream(out, std::ios::binary) << text;
  return dir;
}

absl::StatusOr<VectorResult> RunCorrupted(const std::string& relative,
                                          const std::string& prefix,
                                          const std::string& replacement = "") {
  const Backend* software = SharedRegistry().Find("software");
  if (software == nullptr) return absl::NotFoundError("no software backend");
  std::string dir = CorruptCopy(relative, prefix, replacement);
  if (dir.empty()) return absl::InternalError("cannot make corrupt copy");
  auto suites = DiscoverVectorSuites(dir);
  absl::StatusOr<VectorResult> result =
      absl::InternalError("expected one suite");
  if (!suites.ok()) {
    result = suites.status();
  } else if (suites->size() == 1) {
    result = RunVectorSuite(*software, suites->front());
  }
  std::filesystem::remove_all(dir);
  return result;
}

TEST(VectorRunnerTest, CatchesAWrongCiphertext) {
  ASSERT_OK_AND_ASSIGN(VectorResult r,
                       RunCorrupted("aes/CBCMMT128.rsp", "CIPHERTEXT = "));
  EXPECT_EQ(r.failed, 1u);
  EXPECT_EQ(r.passed, 19u);
  ASSERT_EQ(r.failures.size(), 1u);
  EXPECT_THAT(r.failures[0], ::testing::HasSubstr("aes/CBCMMT128.rsp:10:"));
}

TEST(VectorRunnerTest, CatchesAWrongCtrPlaintext) {
  ASSERT_OK_AND_ASSIGN(VectorResult r,
                       RunCorrupted("aes/CTR_SP800-38A.rsp", "PLAINTEXT = "));
  EXPECT_EQ(r.failed, 1u);
  EXPECT_EQ(r.passed, 5u);
}

TEST(VectorRunnerTest, GcmFailVectorThatWouldBeAcceptedIsCaught) {
  // Turning the first FAIL into an expected plaintext must fail: the tag is
  // wrong, so decryption has to be rejected.
  ASSERT_OK_AND_ASSIGN(VectorResult r, RunCorrupted("aes-gcm/gcmDecrypt128.rsp",
                                                    "FAIL", "PT = "));
  EXPECT_EQ(r.failed, 1u);
  EXPECT_EQ(r.passed, 314u);
}

TEST(VectorRunnerTest, GcmWrongTagIsCaught) {
  ASSERT_OK_AND_ASSIGN(
      VectorResult r, RunCorrupted("aes-gcm/gcmEncryptExtIV192.rsp", "Tag = "));
  EXPECT_EQ(r.failed, 1u);
  EXPECT_EQ(r.passed, 314u);
}

TEST(VectorRunnerTest, ShaEmptyMessageAndWrongDigestAreHandled) {
  // The first ShortMsg record is Len = 0, Msg = 00: it must hash the empty
  // message, so corrupting its MD fails exactly one record.
  ASSERT_OK_AND_ASSIGN(VectorResult r,
                       RunCorrupted("sha/SHA256ShortMsg.rsp", "MD = "));
  EXPECT_EQ(r.failed, 1u);
  EXPECT_EQ(r.passed, 64u);
}

TEST(VectorRunnerTest, MonteCheckpointMismatchIsCaught) {
  ASSERT_OK_AND_ASSIGN(VectorResult r,
                       RunCorrupted("sha/SHA1Monte.rsp", "MD = "));
  // Checkpoint 0 is wrong, and checkpoint 1, which SHAVS seeds with
  // checkpoint 0's MD, fails too; the chain then recovers.
  EXPECT_EQ(r.failed, 2u);
  EXPECT_EQ(r.passed, 98u);
}

TEST(VectorRunnerTest, MonteSeedMismatchFailsTheChain) {
  ASSERT_OK_AND_ASSIGN(VectorResult r,
                       RunCorrupted("sha/SHA1Monte.rsp", "Seed = "));
  EXPECT_EQ(r.failed, 1u);
  EXPECT_EQ(r.passed, 99u);
}

// A backend whose device fails must show up as failed vectors (with the
// device error), never as passed or skipped ones.
TEST(VectorRunnerTest, DeviceErrorsCountAsFailures) {
  unsetenv("ACCELCRYPT_FAILING_MODE");
  ASSERT_OK_AND_ASSIGN(
      auto registry,
      Registry::Create(::accelcrypt::testing::BuildTreeConfig(
          {{"backend_dir", ::accelcrypt::testing::TestBackendDir()},
           {"backends", "failing"},
           {"selftest", "0"},
           {"failing.mode", "always"}})));
  const Backend* failing = registry->Find("failing");
  ASSERT_NE(failing, nullptr) << "failing.so not built";
  for (const char* file : {"aes/CBCMMT128.rsp", "aes-gcm/gcmDecrypt128.rsp",
                           "sha/SHA1ShortMsg.rsp", "sha/SHA1Monte.rsp"}) {
    SCOPED_TRACE(file);
    const VectorSuite* suite = nullptr;
    for (const VectorSuite& s : AllSuites()) {
      if (s.relative == file) suite = &s;
    }
    ASSERT_NE(suite, nullptr);
    ASSERT_OK_AND_ASSIGN(VectorResult r, RunVectorSuite(*failing, *suite));
    EXPECT_EQ(r.passed, 0u);
    EXPECT_EQ(r.skipped, 0u);
    EXPECT_GT(r.failed, 0u);
    ASSERT_FALSE(r.failures.empty());
    EXPECT_THAT(r.failures[0], ::testing::HasSubstr("UNAVAILABLE"));
    EXPECT_LE(r.failures.size(), 10u);
  }
}

}  // namespace
}  // namespace accelcrypt
