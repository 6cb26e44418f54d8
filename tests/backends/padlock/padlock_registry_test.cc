// SPDX-License-Identifier: Apache-2.0
//
// The PadLock module loaded by the real core registry (version check, init,
// capability read, per-algorithm known-answer self-tests) with the trap
// emulator active, then the shared vector runner (core/vector_runner.h) over
// tests/vectors. CTest runs it once per emulator profile.
#include <stdlib.h>
#include <string.h>

#include <filesystem>
#include <string>

#include "core/config.h"
#include "core/registry.h"
#include "core/vector_runner.h"
#include "gtest/gtest.h"
#include "tests/backends/padlock/emulator/padlock_emu.h"

namespace {

TEST(PadlockRegistry, LoadsSelfTestsAndPassesVectors) {
  const std::string profile = accelcrypt_padlock_emu_profile();
  accelcrypt::Config config;
  config.Set("backend_dir", ACCELCRYPT_PADLOCK_MODULE_DIR);
  auto registry = accelcrypt::Registry::Create(config);
  ASSERT_TRUE(registry.ok()) << registry.status();
  for (const auto& e : (*registry)->events()) {
    if (e.backend != "padlock" &&
        std::filesystem::path(e.backend).filename() != "padlock.so") {
      continue;
    }
    EXPECT_TRUE(e.ok) << e.backend << " " << e.algorithm << ": " << e.message;
  }
  const accelcrypt::Backend* padlock = (*registry)->Find("padlock");
  ASSERT_NE(padlock, nullptr) << "padlock not registered under " << profile;
  EXPECT_TRUE(padlock->hardware());
  printf("%s: %s, %zu algorithms\n", profile.c_str(),
         padlock->Describe().c_str(), padlock->capabilities().size());

  auto suites = accelcrypt::DiscoverVectorSuites(ACCELCRYPT_TEST_VECTOR_DIR);
  ASSERT_TRUE(suites.ok()) << suites.status();
  // SHA Monte files cost ~10^5 traps each; CTest runs them in full on the
  // nano profile only (ACCELCRYPT_PADLOCK_FULL_MONTE=1). The other profiles
  // check Monte's first checkpoints in padlock_vectors_<profile>.
  const char* full = getenv("ACCELCRYPT_PADLOCK_FULL_MONTE");
  const bool monte = full != nullptr && strcmp(full, "1") == 0;
  size_t passed = 0, failed = 0, skipped = 0, files = 0, monte_skipped = 0;
  for (const auto& suite : *suites) {
    if (!monte && suite.relative.find("Monte") != std::string::npos) {
      ++monte_skipped;
      continue;
    }
    bool declared = false;
    for (accelcrypt_alg alg : suite.algs) {
      declared |= padlock->Capability(alg) != nullptr;
    }
    if (!declared) continue;
    ++files;
    auto result = accelcrypt::RunVectorSuite(*padlock, suite);
    ASSERT_TRUE(result.ok()) << suite.relative << ": " << result.status();
    passed += result->passed;
    failed += result->failed;
    skipped += result->skipped;
    for (const auto& f : result->failures) ADD_FAILURE() << f;
  }
  printf(
      "%s: %zu files, %zu passed, %zu failed, %zu skipped; %zu Monte "
      "files left out\n",
      profile.c_str(), files, passed, failed, skipped, monte_skipped);
  EXPECT_EQ(failed, 0u);
  EXPECT_GT(passed, 5000u);
}

}  // namespace
