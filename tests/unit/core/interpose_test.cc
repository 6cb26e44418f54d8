// SPDX-License-Identifier: Apache-2.0
// Router::Interposes: the provider offers OpenSSL an algorithm only where a
// backend that wins (not ACCELCRYPT_CAP_PASS_THROUGH) is routed first, or
// with `interpose = all`. The router keeps routing every algorithm.

#include <string>

#include "core/core.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_env.h"
#include "tests/unit/core/router_fixture.h"

namespace accelcrypt::router_test {
namespace {

using ::accelcrypt::testing::MakeCore;
using ::testing::HasSubstr;

TEST(InterposeTest, TheSoftwareBackendAloneIsNeverOfferedUnlessAll) {
  ASSERT_OK_AND_ASSIGN(auto core,
                       MakeCore({{"backends", "software"}, {"selftest", "0"}}));
  const Router& router = core->router();
  EXPECT_FALSE(router.interpose_all());
  for (const AlgorithmInfo& alg : AllAlgorithms()) {
    const Router::Interposition d = router.Interposes(alg.id);
    EXPECT_FALSE(d.offered) << alg.name << ": " << d.why;
    EXPECT_FALSE(d.wins) << alg.name;
    // The router still serves it (the PKCS#11 module, the fallback).
    if (alg.id != ACCELCRYPT_ALG_RNG_RANDOM && router.Supports(alg.id)) {
      EXPECT_THAT(d.why, HasSubstr("only pass-through backends serve it "
                                   "(software: no faster than OpenSSL's"))
          << alg.name;
    }
  }
  EXPECT_TRUE(router.Supports(ACCELCRYPT_ALG_SHA384));

  ASSERT_OK_AND_ASSIGN(auto all, MakeCore({{"backends", "software"},
                                           {"selftest", "0"},
                                           {"interpose", "all"}}));
  EXPECT_TRUE(all->router().interpose_all());
  for (accelcrypt_alg alg :
       {ACCELCRYPT_ALG_SHA384, ACCELCRYPT_ALG_SHA256,
        ACCELCRYPT_ALG_AES_128_GCM, ACCELCRYPT_ALG_RSA_SIGN,
        ACCELCRYPT_ALG_DSA_SIGN}) {
    const Router::Interposition d = all->router().Interposes(alg);
    EXPECT_TRUE(d.offered) << FindAlgorithm(alg)->name;
    EXPECT_FALSE(d.wins);
    EXPECT_THAT(d.why, HasSubstr("interpose = all"));
  }
  // A seed source only from a noise source that wins; no DRBG ever.
  EXPECT_FALSE(all->router().Interposes(ACCELCRYPT_ALG_RNG_ENTROPY).offered);
  EXPECT_FALSE(all->router().Interposes(ACCELCRYPT_ALG_RNG_RANDOM).offered);
}

TEST(InterposeTest, ABackendThatWinsRoutedFirstIsOffered) {
  // failing.so wraps the software backend but declares itself a device.
  ASSERT_OK_AND_ASSIGN(auto core, FailingCore({}));
  const Router& router = core->router();
  for (accelcrypt_alg alg :
       {ACCELCRYPT_ALG_AES_128_GCM, ACCELCRYPT_ALG_SHA384}) {
    const Router::Interposition d = router.Interposes(alg);
    EXPECT_TRUE(d.offered) << FindAlgorithm(alg)->name;
    EXPECT_TRUE(d.wins);
    EXPECT_EQ(d.backend, "failing");
    EXPECT_THAT(d.why, HasSubstr("failing (hardware"));
  }
  // Routed behind the software backend, it does not make SHA-256 a win.
  ASSERT_OK_AND_ASSIGN(auto behind,
                       FailingCore({{"route.sha256", "software, failing"}}));
  const Router::Interposition d =
      behind->router().Interposes(ACCELCRYPT_ALG_SHA256);
  EXPECT_FALSE(d.offered) << d.why;
  EXPECT_THAT(d.why, HasSubstr("software (pass-through) is routed first "
                               "(configured); failing only behind it"));
  // failing.so wraps no RSA: only the software backend serves it. (RSA
  // with a token backend: tests/backends/pkcs11/pkey_routing_test.cc.)
  EXPECT_FALSE(router.Interposes(ACCELCRYPT_ALG_RSA_SIGN).offered);
}

TEST(InterposeTest, X86ServesAesFirstAndLeavesSha512) {
  ASSERT_OK_AND_ASSIGN(
      auto core, MakeCore({{"backends", "x86, software"}, {"selftest", "0"}}));
  const Router& router = core->router();
  if (core->registry().Find("x86") == nullptr ||
      !router.FirstIsHardware(ACCELCRYPT_ALG_AES_128_GCM)) {
    GTEST_SKIP() << "no x86 backend with AES here";
  }
  const Router::Interposition gcm =
      router.Interposes(ACCELCRYPT_ALG_AES_128_GCM);
  EXPECT_TRUE(gcm.offered);
  EXPECT_EQ(gcm.backend, "x86");
  EXPECT_EQ(gcm.why, "x86 (hardware)");
  const Router::Interposition sha512 = router.Interposes(ACCELCRYPT_ALG_SHA512);
  EXPECT_FALSE(sha512.offered);
  EXPECT_THAT(sha512.why, HasSubstr("(software: "));
  EXPECT_FALSE(router.Interposes(ACCELCRYPT_ALG_RSA_SIGN).offered);
  // SHA-NI: libcrypto's own code runs the same instructions (measured no
  // faster through the provider), so x86 declares it pass-through.
  if (core->registry().Find("x86")->Capability(ACCELCRYPT_ALG_SHA256) !=
      nullptr) {
    const Router::Interposition sha256 =
        router.Interposes(ACCELCRYPT_ALG_SHA256);
    EXPECT_FALSE(sha256.offered);
    EXPECT_THAT(sha256.why, HasSubstr("(x86, software: "));
    EXPECT_TRUE(router.Supports(ACCELCRYPT_ALG_SHA256));
    EXPECT_EQ(router.Candidates(ACCELCRYPT_ALG_SHA256)[0], "x86");
  }
}

TEST(InterposeTest, AnUnknownSettingIsRefused) {
  auto core = MakeCore({{"backends", "software"}, {"interpose", "some"}});
  ASSERT_FALSE(core.ok());
  EXPECT_THAT(std::string(core.status().message()), HasSubstr("interpose"));
}

}  // namespace
}  // namespace accelcrypt::router_test
