// SPDX-License-Identifier: Apache-2.0
// Deferred backends (core/router.h, "Deferred backends"): a backend whose
// load hints defer its start (failing.so built with `defer=cipher,digest`,
// in its own directory) is not initialised at load, starts at the first
// cipher operation, counts a failed start in its INIT stats column and is
// tried again only after the back-off, and, once its device appears, joins
// the routes while other threads keep routing (the router's slot table and
// route table publication: run under ThreadSanitizer by CI's TSan stage).
// Helpers: router_fixture.h.

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/core.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_env.h"
#include "tests/unit/core/router_fixture.h"

namespace accelcrypt::router_test {
namespace {

class DeferredTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("ACCELCRYPT_FAILING_FAIL_INIT");
    unsetenv("ACCELCRYPT_FAILING_FAIL_INIT_UNLESS");
    dir_ = std::filesystem::temp_directory_path() /
           ("accelcrypt-deferred-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    device_ = (dir_ / "device").string();
    deferred_dir_ =
        (std::filesystem::path(TestBackendDir()) / ".." / "deferred-test")
            .lexically_normal()
            .string();
    if (!std::filesystem::exists(deferred_dir_ + "/failing.so")) {
      GTEST_SKIP() << "no " << deferred_dir_ << "/failing.so in this build";
    }
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  // A core with the deferred failing.so (a "device" present only once the
  // file `device_` exists) ahead of software.
  absl::StatusOr<std::unique_ptr<Core>> MakeDeferredCore(
      const std::string& retry_s) {
    return Core::Create(BuildTreeConfig({
        {"backend_dir", deferred_dir_},
        {"backends", "failing, software"},
        {"selftest", "0"},
        {"failing.fail_init_unless", device_},
        {"backend_retry_s", retry_s},
        {"stats_dir", "none"},
    }));
  }
  void PlugIn() { std::ofstream(device_) << "present\n"; }
  static std::string ServedBy(Router& router) {
    auto cipher = router.NewCipher(ACCELCRYPT_ALG_AES_128_CBC);
    if (!cipher.ok()) return "error";
    return std::string((*cipher)->backend());
  }
  static uint64_t InitErrors(Core& core) {
    return core.stats()
        .InitCell(core.stats().RegisterBackend("failing"))
        .errors.load();
  }

  std::filesystem::path dir_;
  std::string device_, deferred_dir_;
};

TEST_F(DeferredTest, StartsAtTheFirstOperationOfItsFamilies) {
  PlugIn();
  ASSERT_OK_AND_ASSIGN(auto core, MakeDeferredCore("30"));
  Router& router = core->router();
  EXPECT_EQ(core->registry().Find("failing"), nullptr);
  EXPECT_TRUE(router.Deferred(Family::kCipher));
  EXPECT_TRUE(router.Deferred(Family::kDigest));
  EXPECT_FALSE(router.Deferred(Family::kRsa));
  EXPECT_THAT(router.Candidates(ACCELCRYPT_ALG_AES_128_CBC),
              ElementsAre("software"));
  // An RSA/DSA call (a token key lookup) does not start it.
  EXPECT_FALSE(router.DescribeTokenKey("pkcs11:object=none").ok());
  EXPECT_TRUE(router.Deferred(Family::kCipher));
  // The first cipher operation starts it, and it serves that operation.
  EXPECT_EQ(ServedBy(router), "failing");
  EXPECT_FALSE(router.Deferred(Family::kCipher));
  EXPECT_THAT(router.Candidates(ACCELCRYPT_ALG_AES_128_CBC),
              ElementsAre("failing", "software"));
  EXPECT_EQ(InitErrors(*core), 0u);
}

TEST_F(DeferredTest, AFailedStartIsCountedOnceUntilTheBackOffEnds) {
  ASSERT_OK_AND_ASSIGN(auto core, MakeDeferredCore("3600"));
  Router& router = core->router();
  for (int i = 0; i < 50; ++i) EXPECT_EQ(ServedBy(router), "software");
  EXPECT_EQ(InitErrors(*core), 1u);  // one attempt in 50 operations
  PlugIn();
  for (int i = 0; i < 10; ++i) EXPECT_EQ(ServedBy(router), "software");
  EXPECT_EQ(InitErrors(*core), 1u);  // still within the back-off
  EXPECT_EQ(router.StartDeferred(), 1u);
  EXPECT_EQ(ServedBy(router), "failing");
}

TEST_F(DeferredTest, NoRetryWhenTheBackOffIsZero) {
  ASSERT_OK_AND_ASSIGN(auto core, MakeDeferredCore("0"));
  Router& router = core->router();
  EXPECT_EQ(ServedBy(router), "software");
  EXPECT_FALSE(router.Deferred(Family::kCipher));  // given up
  PlugIn();
  EXPECT_EQ(router.StartDeferred(), 0u);
  EXPECT_EQ(ServedBy(router), "software");
}

// The provider offers OpenSSL what a deferred backend would serve while it
// may still start (interpose = wins): its first routed operation starts
// it, and without the offer that operation would never come. Given up for
// good (backend_retry_s = 0 after a failed start), only the pass-through
// software backend is left, and the default provider serves instead.
TEST_F(DeferredTest, ThePendingBackendKeepsItsFamiliesOffered) {
  ASSERT_OK_AND_ASSIGN(auto core, MakeDeferredCore("0"));
  Router& router = core->router();
  const Router::Interposition pending =
      router.Interposes(ACCELCRYPT_ALG_AES_128_CBC);
  EXPECT_TRUE(pending.offered) << pending.why;
  EXPECT_EQ(pending.backend, "failing");
  EXPECT_THAT(pending.why, HasSubstr("starts at its first operation"));
  EXPECT_TRUE(router.Interposes(ACCELCRYPT_ALG_SHA256).offered);
  // Not a family it defers: software alone serves RSA.
  EXPECT_FALSE(router.Interposes(ACCELCRYPT_ALG_RSA_SIGN).offered);
  EXPECT_EQ(ServedBy(router), "software");  // the start failed: given up
  const Router::Interposition given_up =
      router.Interposes(ACCELCRYPT_ALG_AES_128_CBC);
  EXPECT_FALSE(given_up.offered) << given_up.why;
  EXPECT_THAT(given_up.why, HasSubstr("pass-through"));
}

// Threads route ciphers and digests while the backend joins: every result
// stays right, nothing crashes (and, under TSan, nothing races), and
// afterwards the new backend serves. ("ManyThreads": CI's TSan stage runs
// it.)
TEST_F(DeferredTest, JoinsTheRoutesWhileManyThreadsRoute) {
  ASSERT_OK_AND_ASSIGN(auto core, MakeDeferredCore("3600"));
  Router& router = core->router();
  Rng rng(30);
  Op op;
  op.alg = FindAlgorithm(ACCELCRYPT_ALG_AES_128_CBC);
  op.encrypt = true;
  op.key = rng.Bytes(16);
  op.iv = rng.Bytes(16);
  op.data = rng.Bytes(64);
  op.parts = {64};
  ASSERT_OK_AND_ASSIGN(const Bytes want, Reference(*core, op, nullptr));
  const Bytes msg = rng.Bytes(100);
  Bytes want_digest(32);
  ASSERT_OK(router.DigestOneShot(ACCELCRYPT_ALG_SHA256, msg,
                                 absl::MakeSpan(want_digest)));
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0};
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      while (!stop.load()) {
        auto cipher = router.NewCipher(op.alg->id);
        if (!cipher.ok()) {
          ++wrong;
          continue;
        }
        auto got = RunCipher(**cipher, op, nullptr);
        if (!got.ok() || *got != want) ++wrong;
        auto digest = router.NewDigest(ACCELCRYPT_ALG_SHA256);
        Bytes out(32);
        if (!digest.ok() || !(*digest)->Init().ok() ||
            !(*digest)->Update(msg).ok() ||
            !(*digest)->Final(absl::MakeSpan(out)).ok() || out != want_digest) {
          ++wrong;
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  PlugIn();
  EXPECT_EQ(router.StartDeferred(), 1u);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(ServedBy(router), "failing");
  EXPECT_EQ(router.num_backends(), 2u);  // software, then failing
}

}  // namespace
}  // namespace accelcrypt::router_test
