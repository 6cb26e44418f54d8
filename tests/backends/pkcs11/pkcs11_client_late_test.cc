// SPDX-License-Identifier: Apache-2.0
// The PKCS#11 client backend started late (issue 30): its start is
// deferred to the first RSA/DSA operation (never while OpenSSL loads the
// provider or an ENGINE), a start that fails counts an error in the
// backend's INIT statistics column and says so once, the operation is
// served by the CPU, and the start is retried at an operation at most every
// `backend_retry_s` seconds: a token plugged in later (here: its module
// file appearing) is used without a restart.
// Fixture and helpers: pkcs11_client_fixture.h.

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "core/core.h"
#include "core/pkey.h"
#include "gtest/gtest.h"
#include "tests/backends/pkcs11/pkcs11_client_fixture.h"
#include "tests/backends/pkcs11/softhsm_fixture.h"
#include "tests/backends/pkcs11/token_fixture.h"
#include "tests/support/test_env.h"

namespace accelcrypt::testing {
namespace {

class Pkcs11LateTest : public Pkcs11ClientTest {
 protected:
  void SetUp() override {
    Pkcs11ClientTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    // A token module path that does not exist yet: the module file
    // "appears" when the test links it to the fixture's module.
    dir_ = std::filesystem::temp_directory_path() /
           ("accelcrypt-late-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    late_module_ = (dir_ / "late-token-module.so").string();
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

  // LateCore is a core whose client backend is configured on the module
  // path that does not exist yet, started at first use (as the provider
  // and the engine do), retried every `retry_s` seconds.
  std::unique_ptr<Core> LateCore(const std::string& retry_s) {
    auto overrides = g_hsm->Overrides();
    overrides["deferred_start"] = "first-use";
    overrides["pkcs11.module"] = late_module_;
    overrides["backend_retry_s"] = retry_s;
    auto core = MakeCore(overrides);
    EXPECT_TRUE(core.ok()) << core.status();
    return core.ok() ? *std::move(core) : nullptr;
  }
  void PlugIn() {
    ASSERT_EQ(symlink(g_hsm->module().c_str(), late_module_.c_str()), 0);
  }
  // SignedBy signs once through `core`'s router and names the backend.
  static std::string SignedBy(Core& core, const KeyMaterial& key) {
    auto ops = core.router().NewPublicKeyOps(key);
    if (!ops.ok()) return "error: " + std::string(ops.status().message());
    std::vector<uint8_t> digest = Digest("late token"), sig(256);
    auto len = (*ops)->Sign(Pkcs1(), digest, absl::MakeSpan(sig));
    if (!len.ok()) return "error: " + std::string(len.status().message());
    return (*ops)->last_backend();
  }
  static uint64_t InitErrors(Core& core) {
    return core.stats()
        .InitCell(core.stats().RegisterBackend("pkcs11"))
        .errors.load();
  }

  std::filesystem::path dir_;
  std::string late_module_;
};

TEST_F(Pkcs11LateTest, NotStartedAtLoadButAtTheFirstRsaOperation) {
  core_.reset();
  auto overrides = g_hsm->Overrides();
  overrides["deferred_start"] = "first-use";
  auto core = MakeCore(overrides);
  ASSERT_TRUE(core.ok()) << core.status();
  // Loaded: the token module is not initialised, nothing is routed to it.
  EXPECT_EQ((*core)->registry().Find("pkcs11"), nullptr);
  EXPECT_TRUE((*core)->router().Deferred(Family::kRsa));
  EXPECT_TRUE((*core)->router().Deferred(Family::kDsa));
  EXPECT_FALSE((*core)->router().Deferred(Family::kCipher));
  // A cipher or digest does not start it.
  ASSERT_TRUE((*core)->router().NewDigest(ACCELCRYPT_ALG_SHA256).ok());
  EXPECT_TRUE((*core)->router().Deferred(Family::kRsa));
  // The first RSA operation starts it and is served by it.
  EXPECT_EQ(SignedBy(**core, RsaKey(2048)), "pkcs11");
  EXPECT_FALSE((*core)->router().Deferred(Family::kRsa));
  EXPECT_EQ(InitErrors(**core), 0u);
  auto candidates = (*core)->router().Candidates(ACCELCRYPT_ALG_RSA_SIGN);
  ASSERT_FALSE(candidates.empty());
  EXPECT_EQ(candidates.front(), "pkcs11");  // `backends = pkcs11, software`
}

TEST_F(Pkcs11LateTest,
       AFailedStartIsCountedSaidOnceAndRetriedOnlyAfterTheBackOff) {
  core_.reset();
  std::unique_ptr<Core> core = LateCore("3600");
  ASSERT_NE(core, nullptr);
  const KeyMaterial key = RsaKey(2048);
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 20; ++i) EXPECT_EQ(SignedBy(*core, key), "software");
  // One start attempt (at the first operation) in 20 operations.
  EXPECT_EQ(InitErrors(*core), 1u);
  PlugIn();
  // Within the back-off the token is not tried again.
  for (int i = 0; i < 5; ++i) EXPECT_EQ(SignedBy(*core, key), "software");
  EXPECT_EQ(InitErrors(*core), 1u);
  const std::string err = ::testing::internal::GetCapturedStderr();
  size_t lines = 0;
  for (size_t at = 0; (at = err.find("accelcrypt: backend pkcs11 not started:",
                                     at)) != std::string::npos;
       ++at) {
    ++lines;
  }
  EXPECT_EQ(lines, 1u) << err;
  EXPECT_NE(err.find("cannot load module"), std::string::npos) << err;
  // What `accelcrypt list` would do: start now, whatever the back-off.
  EXPECT_EQ(core->router().StartDeferred(), 1u);
  EXPECT_EQ(SignedBy(*core, key), "pkcs11");
}

// The token "plugged in" after the start failed is used by a later
// operation once the back-off (1 s here) has passed, without a restart.
TEST_F(Pkcs11LateTest, ALateTokenIsUsedAfterTheBackOff) {
  core_.reset();
  std::unique_ptr<Core> core = LateCore("1");
  ASSERT_NE(core, nullptr);
  const KeyMaterial key = RsaKey(2048);
  EXPECT_EQ(SignedBy(*core, key), "software");
  EXPECT_EQ(InitErrors(*core), 1u);
  PlugIn();
  // Operations keep coming, as a server's would; within a minute (the
  // back-off is one second) one of them starts the token.
  std::string by;
  const auto give_up =
      std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while ((by = SignedBy(*core, key)) != "pkcs11" &&
         std::chrono::steady_clock::now() < give_up) {
    EXPECT_EQ(by, "software");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(by, "pkcs11");
  // No further failed attempt: the one before the token came.
  EXPECT_EQ(InitErrors(*core), 1u);
  // Served by the token from here on.
  EXPECT_EQ(SignedBy(*core, key), "pkcs11");
}

}  // namespace
}  // namespace accelcrypt::testing
