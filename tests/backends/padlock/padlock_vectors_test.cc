// SPDX-License-Identifier: Apache-2.0
//
// Runs every AES, AES-GCM and SHA vector file against the PadLock backend
// module (build/lib/accelcrypt/backends/padlock.so, loaded with dlopen and
// driven through its ABI entry point) with the trap emulator active. CTest
// runs this once per emulator profile (ACCELCRYPT_PADLOCK_PROFILE). The
// emulator's own AES and SHA are checked against the same files first.
#include <dlfcn.h>
#include <stdlib.h>

#include <string>

#include "accelcrypt/backend.h"
#include "gtest/gtest.h"
#include "tests/backends/padlock/emulator/padlock_emu.h"
#include "tests/backends/padlock/rsp_runner.h"

namespace {

std::string VectorDir() { return ACCELCRYPT_TEST_VECTOR_DIR; }

size_t MonteLimit() {
  const char* v = getenv("ACCELCRYPT_PADLOCK_MONTE_LIMIT");
  return v != nullptr ? strtoul(v, nullptr, 10) : 10;
}

TEST(PadlockEmulator, OwnAesAndShaMatchNistVectors) {
  padlock_test::RunCounts rc =
      padlock_test::EmuSelfCheck(VectorDir(), accelcrypt_padlock_emu_aes_block,
                                 accelcrypt_padlock_emu_sha);
  for (const auto& f : rc.failures) ADD_FAILURE() << f;
  EXPECT_EQ(rc.failed, 0u);
  EXPECT_GT(rc.passed, 1000u);
  printf("emulator self-check: %zu passed\n", rc.passed);
}

class PadlockVectors : public ::testing::Test {
 protected:
  void SetUp() override {
    handle_ = dlopen(ACCELCRYPT_PADLOCK_MODULE, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    auto entry = reinterpret_cast<accelcrypt_backend_entry_fn>(
        dlsym(handle_, ACCELCRYPT_BACKEND_ENTRY_SYMBOL));
    ASSERT_NE(entry, nullptr);
    desc_ = entry(ACCELCRYPT_ABI_VERSION);
    ASSERT_NE(desc_, nullptr);
    accelcrypt_error err{};
    ASSERT_EQ(desc_->init(nullptr, &be_, &err), ACCELCRYPT_OK) << err.message;
  }
  void TearDown() override {
    if (be_ != nullptr) desc_->teardown(be_);
    if (handle_ != nullptr) dlclose(handle_);
  }
  void* handle_ = nullptr;
  const accelcrypt_backend_desc* desc_ = nullptr;
  void* be_ = nullptr;
};

TEST_F(PadlockVectors, AllFiles) {
  const std::string profile = accelcrypt_padlock_emu_profile();
  char what[256];
  desc_->describe(be_, what, sizeof(what));
  printf("profile %s: %s\n", profile.c_str(), what);
  padlock_test::RunCounts total, aes, gcm, sha;
  for (const std::string& path : padlock_test::ListRspFiles(VectorDir())) {
    padlock_test::RunCounts rc =
        padlock_test::RunRspFile(desc_, be_, path, MonteLimit());
    if (path.find("/aes-gcm/") != std::string::npos)
      gcm.Add(rc);
    else if (path.find("/aes/") != std::string::npos)
      aes.Add(rc);
    else
      sha.Add(rc);
    total.Add(rc);
  }
  for (const auto& f : total.failures) ADD_FAILURE() << f;
  printf(
      "profile %s: AES %zu passed %zu failed %zu skipped; GCM %zu/%zu/%zu; "
      "SHA %zu/%zu/%zu\n",
      profile.c_str(), aes.passed, aes.failed, aes.skipped, gcm.passed,
      gcm.failed, gcm.skipped, sha.passed, sha.failed, sha.skipped);
  padlock_emu_stats stats{};
  accelcrypt_padlock_emu_get_stats(&stats);
  printf(
      "emulator: %llu xcrypt, %llu xsha, %llu xstore traps, %llu key "
      "loads, %llu reload notes\n",
      static_cast<unsigned long long>(stats.xcrypt_traps),
      static_cast<unsigned long long>(stats.xsha_traps),
      static_cast<unsigned long long>(stats.xstore_traps),
      static_cast<unsigned long long>(stats.key_loads),
      static_cast<unsigned long long>(stats.reload_notes));
  EXPECT_GT(stats.xcrypt_traps, 0u);
  EXPECT_EQ(total.failed, 0u);
  // Every profile has ACE: all AES and GCM records must have run.
  EXPECT_GT(aes.passed, 5000u);
  EXPECT_EQ(aes.skipped, 0u);
  EXPECT_GT(gcm.passed, 1000u);
  if (profile == "c3") {
    EXPECT_EQ(sha.passed, 0u);  // no PHE on C3
  } else if (profile == "zhaoxin") {
    EXPECT_EQ(sha.skipped, 0u);  // PHE2: SHA-384/512 too
  } else {
    EXPECT_GT(sha.passed, 380u);  // 387 short+long, plus Monte
    EXPECT_GT(sha.skipped, 0u);   // SHA-384/512 need PHE2
  }
}

}  // namespace
