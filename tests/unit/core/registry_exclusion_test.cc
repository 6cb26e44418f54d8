// SPDX-License-Identifier: Apache-2.0
// Registry::Create applies the configuration's `backends` / `disable` lists
// to a backend's descriptor before calling its init: an excluded backend
// never initialises (a PKCS#11 client backend would otherwise dlopen its
// module and call C_Initialize). Proven with the test-only failing.so, whose
// init fails on cue (fail_init = 1): if init ran, its failure would show in
// the load events.
#include <stdlib.h>

#include <map>
#include <string>

#include "core/registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_env.h"

namespace accelcrypt {
namespace {

using ::accelcrypt::testing::BuildTreeConfig;
using ::accelcrypt::testing::TestBackendDir;

constexpr char kInitFailure[] = "fail_init";

// MakeRegistry loads failing.so (whose init fails) and the software backend.
std::unique_ptr<Registry> MakeRegistry(
    const std::map<std::string, std::string>& overrides) {
  // A developer's shell must not change what failing.so does.
  unsetenv("ACCELCRYPT_FAILING_FAIL_INIT");
  unsetenv("ACCELCRYPT_FAILING_MODE");
  std::map<std::string, std::string> all = {
      {"backend_dir", TestBackendDir()},
      {"failing.fail_init", "1"},
      {"selftest", "0"},
  };
  for (const auto& [k, v] : overrides) all[k] = v;
  auto registry = Registry::Create(BuildTreeConfig(all));
  if (!registry.ok()) {
    ADD_FAILURE() << registry.status();
    return nullptr;
  }
  return *std::move(registry);
}

// InitRan is true when failing.so's init was called (its injected failure
// is in the events).
bool InitRan(const Registry& registry) {
  for (const LoadEvent& ev : registry.events()) {
    if (ev.message.find(kInitFailure) != std::string::npos) return true;
  }
  return false;
}

bool Excluded(const Registry& registry, const std::string& name) {
  for (const LoadEvent& ev : registry.events()) {
    if (ev.backend == name && !ev.ok &&
        ev.message == "not loaded: excluded by configuration") {
      return true;
    }
  }
  return false;
}

TEST(RegistryExclusionTest, ControlInitRunsWhenNotExcluded) {
  // Without exclusion the failing init is called and recorded: the checks
  // below can tell.
  auto registry = MakeRegistry({});
  ASSERT_NE(registry, nullptr);
  EXPECT_TRUE(InitRan(*registry));
  EXPECT_EQ(registry->Find("failing"), nullptr);
  EXPECT_NE(registry->Find("software"), nullptr);
}

TEST(RegistryExclusionTest, DisabledBackendIsNeverInitialised) {
  auto registry = MakeRegistry({{"disable", "failing"}});
  ASSERT_NE(registry, nullptr);
  EXPECT_FALSE(InitRan(*registry));
  EXPECT_TRUE(Excluded(*registry, "failing"));
  EXPECT_EQ(registry->Find("failing"), nullptr);
  EXPECT_NE(registry->Find("software"), nullptr);
}

TEST(RegistryExclusionTest, BackendOutsideTheListIsNeverInitialised) {
  auto registry = MakeRegistry({{"backends", "software"}});
  ASSERT_NE(registry, nullptr);
  EXPECT_FALSE(InitRan(*registry));
  EXPECT_TRUE(Excluded(*registry, "failing"));
  EXPECT_NE(registry->Find("software"), nullptr);
}

TEST(RegistryExclusionTest, DisabledBuiltinIsNotLoaded) {
  auto registry = MakeRegistry({{"disable", "software"}});
  ASSERT_NE(registry, nullptr);
  EXPECT_TRUE(Excluded(*registry, "software"));
  EXPECT_EQ(registry->Find("software"), nullptr);
}

// A global `disable` is the core's list of backends, not a setting of any
// backend: the x86 backend reads its own `x86.disable` (CPU features to
// turn off) and must not receive the global list through config_get and
// decline. Only the core's own keys are withheld; other global keys still
// reach backends (failing.so reads the global `fail_init` below).
TEST(RegistryExclusionTest, GlobalDisableIsNotPassedToBackends) {
  Config base = BuildTreeConfig({{"selftest", "0"}});
  auto plain = Registry::Create(base);
  ASSERT_TRUE(plain.ok()) << plain.status();
  if ((*plain)->Find("x86") == nullptr) {
    GTEST_SKIP() << "the x86 backend does not load on this machine";
  }
  Config with_disable =
      BuildTreeConfig({{"selftest", "0"}, {"disable", "pkcs11"}});
  auto registry = Registry::Create(with_disable);
  ASSERT_TRUE(registry.ok()) << registry.status();
  std::string events;
  for (const LoadEvent& ev : (*registry)->events()) {
    events += ev.backend + ": " + ev.message + "\n";
  }
  EXPECT_NE((*registry)->Find("x86"), nullptr) << events;
}

TEST(RegistryExclusionTest, OtherGlobalKeysStillReachBackends) {
  unsetenv("ACCELCRYPT_FAILING_FAIL_INIT");
  auto registry =
      Registry::Create(BuildTreeConfig({{"backend_dir", TestBackendDir()},
                                        {"fail_init", "1"},
                                        {"selftest", "0"}}));
  ASSERT_TRUE(registry.ok()) << registry.status();
  EXPECT_TRUE(InitRan(**registry));
}

}  // namespace
}  // namespace accelcrypt
