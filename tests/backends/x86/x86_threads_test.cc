// SPDX-License-Identifier: Apache-2.0
// The x86 module in other people's processes: one backend instance used
// from many threads at once (contexts per thread, the RNG shared), and used
// again in a forked child.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "backends/x86/cpu_features.h"
#include "tests/backends/x86/x86_abi.h"

namespace accelcrypt::x86::test {
namespace {

using Bytes = std::vector<uint8_t>;

// Seals `pt` with AES-256-GCM and returns ciphertext || tag.
Bytes Seal(const Instance& inst, const Bytes& key, const Bytes& iv,
           const Bytes& pt) {
  Cipher c(inst, ACCELCRYPT_ALG_AES_256_GCM);
  Bytes out(pt.size() + 16);
  if (!c.ok() || c.Init(true, key, iv) != ACCELCRYPT_OK ||
      c.Update(pt.data(), pt.size(), out.data()) != ACCELCRYPT_OK ||
      c.Final() != ACCELCRYPT_OK ||
      c.GetTag(out.data() + pt.size(), 16) != ACCELCRYPT_OK) {
    return {};
  }
  return out;
}

TEST(X86ThreadsTest, ManyThreadsShareOneInstance) {
  const CpuFeatures& f = DetectCpuFeatures();
  if (!f.aesni || !f.pclmulqdq || !f.rdseed) {
    GTEST_SKIP() << "needs AES-NI, PCLMULQDQ and RDSEED";
  }
  auto inst = Instance::Create("");
  ASSERT_NE(inst, nullptr);
  constexpr int kThreads = 8;
  std::vector<Bytes> keys(kThreads), want(kThreads);
  const Bytes iv(12, 0x42);
  Bytes pt(5000);
  for (size_t i = 0; i < pt.size(); ++i) pt[i] = static_cast<uint8_t>(i * 7);
  for (int t = 0; t < kThreads; ++t) {
    keys[t] = Bytes(32, static_cast<uint8_t>(t + 1));
    want[t] = Seal(*inst, keys[t], iv, pt);
    ASSERT_FALSE(want[t].empty());
  }
  std::atomic<int> mismatches{0}, rng_failures{0};
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 50; ++round) {
        if (Seal(*inst, keys[t], iv, pt) != want[t]) ++mismatches;
        uint8_t buf[48];
        size_t bits = 0;
        accelcrypt_error e = {};
        if (inst->rng()->entropy(inst->handle(), buf, sizeof(buf), &bits, &e) !=
            ACCELCRYPT_OK) {
          ++rng_failures;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(rng_failures.load(), 0);
}

TEST(X86ThreadsTest, ForkedChildUsesTheBackend) {
  const CpuFeatures& f = DetectCpuFeatures();
  if (!f.aesni || !f.pclmulqdq || !f.rdseed) {
    GTEST_SKIP() << "needs AES-NI, PCLMULQDQ and RDSEED";
  }
  auto inst = Instance::Create("");
  ASSERT_NE(inst, nullptr);
  const Bytes key(32, 9), iv(12, 3), pt(1000, 5);
  const Bytes want = Seal(*inst, key, iv, pt);
  ASSERT_FALSE(want.empty());
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    uint8_t buf[32];
    size_t bits = 0;
    const bool ok = Seal(*inst, key, iv, pt) == want &&
                    inst->rng()->entropy(inst->handle(), buf, sizeof(buf),
                                         &bits, nullptr) == ACCELCRYPT_OK &&
                    bits == 128;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace accelcrypt::x86::test
