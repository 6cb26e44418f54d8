// SPDX-License-Identifier: Apache-2.0
// Router rules with a backend that fails on cue (failing.so ahead of
// software): caller errors are never retried nor counted toward the breaker,
// the breaker opens and probes, route overrides and exclusive routes, a
// failed init, re-entrant calls, random bytes, and the answers front ends
// get from the routes.
// Helpers: router_fixture.h.

#include <chrono>
#include <string>
#include <thread>

#include "core/core.h"
#include "core/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_env.h"
#include "tests/unit/core/router_fixture.h"

namespace accelcrypt::router_test {
namespace {

// Caller errors come back as they are and are never retried: the failing
// backend (mode=none here) sees exactly the calls the test made, and
// software sees none.
TEST(RouterTest, CallerErrorsAreNotRetried) {
  ASSERT_OK_AND_ASSIGN(auto core, FailingCore({}));
  Router& router = core->router();
  Rng rng(8);

  // Bad tag: newctx, init, aad, update, final reach failing.so (set_tag is
  // not counted by it), and the AuthFailed detail survives routing.
  {
    Op op;
    op.alg = FindAlgorithm(ACCELCRYPT_ALG_AES_128_GCM);
    op.encrypt = true;
    op.key = rng.Bytes(16);
    op.iv = rng.Bytes(12);
    op.aad = rng.Bytes(10);
    op.data = rng.Bytes(40);
    op.parts = {40};
    Bytes tag;
    ASSERT_OK_AND_ASSIGN(Bytes ct, Reference(*core, op, &tag));
    tag[3] ^= 0x10;
    Op dec = op;
    dec.encrypt = false;
    dec.data = ct;
    const Counts before = FailingCounts(*core);
    ASSERT_OK_AND_ASSIGN(auto cipher, router.NewCipher(op.alg->id));
    auto result = RunCipher(*cipher, dec, &tag);
    EXPECT_THAT(result, StatusIs(absl::StatusCode::kInvalidArgument));
    EXPECT_EQ(GetStatusDetail(result.status()), StatusDetail::kAuthFailed);
    EXPECT_EQ(FailingCounts(*core).calls - before.calls, 5u);
    EXPECT_EQ(StatsOf(*core, "software", "AES-128-GCM").ops, 0u);
    EXPECT_EQ(StatsOf(*core, "failing", "AES-128-GCM").fallbacks, 0u);
  }
  // A partial block in raw CBC: newctx, init, update.
  {
    const Counts before = FailingCounts(*core);
    ASSERT_OK_AND_ASSIGN(auto cipher,
                         router.NewCipher(ACCELCRYPT_ALG_AES_128_CBC));
    ASSERT_OK(cipher->Init(true, rng.Bytes(16), rng.Bytes(16)));
    Bytes in = rng.Bytes(15), out(15);
    EXPECT_THAT(cipher->Update(in, absl::MakeSpan(out)),
                StatusIs(absl::StatusCode::kInvalidArgument));
    EXPECT_EQ(FailingCounts(*core).calls - before.calls, 3u);
    EXPECT_EQ(StatsOf(*core, "software", "AES-128-CBC").ops, 0u);
  }
  // A wrong key size never reaches a backend's init at all.
  {
    const Counts before = FailingCounts(*core);
    ASSERT_OK_AND_ASSIGN(auto cipher,
                         router.NewCipher(ACCELCRYPT_ALG_AES_256_CTR));
    EXPECT_THAT(cipher->Init(true, rng.Bytes(31), rng.Bytes(16)),
                StatusIs(absl::StatusCode::kInvalidArgument));
    EXPECT_EQ(FailingCounts(*core).calls - before.calls, 1u);  // newctx
    EXPECT_EQ(StatsOf(*core, "software", "AES-256-CTR").ops, 0u);
  }
  // A short digest buffer.
  {
    const Counts before = FailingCounts(*core);
    Bytes msg = rng.Bytes(10), out(31);
    EXPECT_THAT(
        router.DigestOneShot(ACCELCRYPT_ALG_SHA256, msg, absl::MakeSpan(out)),
        StatusIs(absl::StatusCode::kOutOfRange));
    EXPECT_LE(FailingCounts(*core).calls - before.calls, 1u);
    EXPECT_EQ(StatsOf(*core, "software", "SHA2-256").ops, 0u);
  }
  EXPECT_EQ(FailingCounts(*core).failures, 0u);
}

// After breaker_threshold consecutive device errors the failing backend is
// out of rotation (it sees no more calls); after breaker_cooldown_ms one
// operation probes it again.
TEST(RouterTest, BreakerOpensAndProbesAfterCooldown) {
  ASSERT_OK_AND_ASSIGN(auto core,
                       FailingCore({{"failing.mode", "always"},
                                    {"breaker_threshold", "3"},
                                    {"breaker_cooldown_ms", "150"}}));
  Router& router = core->router();
  Rng rng(10);
  Bytes msg = rng.Bytes(100), want(32), got(32);
  ASSERT_OK(
      core->registry()
          .Find("software")
          ->DigestOneShot(ACCELCRYPT_ALG_SHA256, msg, absl::MakeSpan(want)));
  auto hash = [&] {
    std::fill(got.begin(), got.end(), 0);
    absl::Status st =
        router.DigestOneShot(ACCELCRYPT_ALG_SHA256, msg, absl::MakeSpan(got));
    EXPECT_OK(st);
    EXPECT_EQ(ToHex(got), ToHex(want));
  };
  for (int i = 0; i < 3; ++i) hash();
  EXPECT_EQ(FailingCounts(*core).calls, 3u);
  for (int i = 0; i < 20; ++i) hash();
  EXPECT_EQ(FailingCounts(*core).calls, 3u) << "breaker did not open";
  // Ciphers skip it as well while it is open.
  ASSERT_OK_AND_ASSIGN(auto cipher,
                       router.NewCipher(ACCELCRYPT_ALG_AES_128_CTR));
  EXPECT_EQ(cipher->backend(), "software");
  EXPECT_EQ(FailingCounts(*core).calls, 3u);

  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  hash();  // the probe: reaches failing.so, fails, falls back
  EXPECT_EQ(FailingCounts(*core).calls, 4u) << "no probe after the cooldown";
  hash();  // the failed probe re-opened the breaker
  EXPECT_EQ(FailingCounts(*core).calls, 4u);
  EXPECT_GE(StatsOf(*core, "failing", "SHA2-256").errors, 4u);
  EXPECT_EQ(StatsOf(*core, "software", "SHA2-256").ops, 25u);
}

TEST(RouterTest, RouteOverrideIsHonoured) {
  ASSERT_OK_AND_ASSIGN(auto core,
                       FailingCore({{"route.sha256", "software, failing"},
                                    {"route.aes-128-cbc", "only:software"}}));
  Router& router = core->router();
  EXPECT_THAT(router.Candidates(ACCELCRYPT_ALG_SHA256),
              ElementsAre("software", "failing"));
  EXPECT_THAT(router.Candidates(ACCELCRYPT_ALG_AES_128_CBC),
              ElementsAre("software"));
  EXPECT_THAT(router.Candidates(ACCELCRYPT_ALG_SHA1),
              ElementsAre("failing", "software"));
  Bytes msg(50, 1), out(32);
  Counts before = FailingCounts(*core);
  ASSERT_OK(
      router.DigestOneShot(ACCELCRYPT_ALG_SHA256, msg, absl::MakeSpan(out)));
  EXPECT_EQ(FailingCounts(*core).calls, before.calls);
  ASSERT_OK(
      router.DigestOneShot(ACCELCRYPT_ALG_SHA1, msg, absl::MakeSpan(out)));
  EXPECT_EQ(FailingCounts(*core).calls, before.calls + 1);
  ASSERT_OK_AND_ASSIGN(auto cbc, router.NewCipher(ACCELCRYPT_ALG_AES_128_CBC));
  EXPECT_EQ(cbc->backend(), "software");
}

TEST(RouterTest, ExclusiveRouteDoesNotFallBack) {
  ASSERT_OK_AND_ASSIGN(auto core,
                       FailingCore({{"failing.mode", "always"},
                                    {"route.sha1", "only:failing"}}));
  Bytes msg(50, 1), out(20);
  EXPECT_THAT(core->router().DigestOneShot(ACCELCRYPT_ALG_SHA1, msg,
                                           absl::MakeSpan(out)),
              StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_EQ(StatsOf(*core, "software", "SHA1").ops, 0u);
}

TEST(RouterTest, FailInitLeavesTheBackendOutAndRecordsWhy) {
  ASSERT_OK_AND_ASSIGN(auto core, FailingCore({{"failing.fail_init", "1"}}));
  EXPECT_EQ(core->registry().Find("failing"), nullptr);
  bool recorded = false;
  for (const LoadEvent& e : core->registry().events()) {
    if (e.backend.find("failing") != std::string::npos && !e.ok) {
      recorded = true;
      EXPECT_THAT(e.message, HasSubstr("fail_init"));
    }
  }
  EXPECT_TRUE(recorded) << "no load event for the declined failing backend";
  EXPECT_THAT(core->router().Candidates(ACCELCRYPT_ALG_SHA256),
              ElementsAre("software"));
  Bytes msg(3, 7), out(32);
  EXPECT_OK(core->router().DigestOneShot(ACCELCRYPT_ALG_SHA256, msg,
                                         absl::MakeSpan(out)));
}

TEST(RouterTest, CallerErrorsDoNotCountTowardTheBreaker) {
  ASSERT_OK_AND_ASSIGN(auto core, FailingCore({{"breaker_threshold", "2"}}));
  Rng rng(12);
  for (int i = 0; i < 5; ++i) {
    ASSERT_OK_AND_ASSIGN(auto cipher,
                         core->router().NewCipher(ACCELCRYPT_ALG_AES_192_ECB));
    ASSERT_OK(cipher->Init(true, rng.Bytes(24), {}));
    Bytes in = rng.Bytes(17), out(17);
    EXPECT_THAT(cipher->Update(in, absl::MakeSpan(out)),
                StatusIs(absl::StatusCode::kInvalidArgument));
  }
  ASSERT_OK_AND_ASSIGN(auto cipher,
                       core->router().NewCipher(ACCELCRYPT_ALG_AES_192_ECB));
  EXPECT_EQ(cipher->backend(), "failing");
}

// A call made from inside a backend (a token built on OpenSSL calling back
// into accelcrypt) is never routed back into that backend.
TEST(RouterTest, ReentrantCallsSkipTheBackendTheThreadIsIn) {
  ASSERT_OK_AND_ASSIGN(auto core, FailingCore({}));
  const Backend* failing = core->registry().Find("failing");
  ASSERT_NE(failing, nullptr);
  Bytes msg(40, 9), out(32);
  const Counts before = FailingCounts(*core);
  {
    BackendGuard inside(failing);
    EXPECT_TRUE(BackendGuard::Inside(failing));
    ASSERT_OK(core->router().DigestOneShot(ACCELCRYPT_ALG_SHA256, msg,
                                           absl::MakeSpan(out)));
    ASSERT_OK_AND_ASSIGN(auto cipher,
                         core->router().NewCipher(ACCELCRYPT_ALG_AES_128_CBC));
    EXPECT_EQ(cipher->backend(), "software");
    {
      BackendGuard nested(core->registry().Find("software"));
      EXPECT_FALSE(BackendGuard::Inside(failing));
    }
    EXPECT_TRUE(BackendGuard::Inside(failing));
  }
  EXPECT_FALSE(BackendGuard::Inside(failing));
  EXPECT_EQ(FailingCounts(*core).calls, before.calls);
  // Outside the guard the failing backend is first again.
  ASSERT_OK(core->router().DigestOneShot(ACCELCRYPT_ALG_SHA256, msg,
                                         absl::MakeSpan(out)));
  EXPECT_EQ(FailingCounts(*core).calls, before.calls + 1);
}

TEST(RouterTest, RandomBytesFallBackAndDiffer) {
  ASSERT_OK_AND_ASSIGN(auto core, FailingCore({{"failing.mode", "always"},
                                               {"breaker_threshold", "1000"}}));
  ASSERT_TRUE(core->router().Supports(ACCELCRYPT_ALG_RNG_RANDOM));
  Bytes a(64), b(64);
  ASSERT_OK(core->router().RandomBytes(absl::MakeSpan(a)));
  ASSERT_OK(core->router().RandomBytes(absl::MakeSpan(b)));
  EXPECT_NE(a, b);
  EXPECT_NE(a, Bytes(64, 0));
  EXPECT_EQ(FailingCounts(*core).failures, 2u);
  EXPECT_EQ(StatsOf(*core, "failing", "RANDOM").fallbacks, 2u);
}

// The questions front ends ask instead of reading capability flags: which
// RSA/DSA paddings and key sizes the routed backends taking key material
// offer, and whether a hardware backend is routed first.
TEST(RouterTest, FrontEndQueriesAnswerFromTheRoutes) {
  ASSERT_OK_AND_ASSIGN(auto core, FailingCore({}));
  const Router& router = core->router();
  // software: RSA signatures PKCS#1/PSS/raw, RSA encryption PKCS#1/OAEP/raw,
  // 1024..16384 bits; DSA 1024..3072.
  Router::KeyOffer rsa = router.OfferedKeys(ACCELCRYPT_ALG_RSA_SIGN);
  EXPECT_TRUE(rsa.offered);
  EXPECT_EQ(rsa.min_bits, 1024u);
  EXPECT_EQ(rsa.max_bits, 16384u);
  EXPECT_TRUE(
      router.OfferedKeys(ACCELCRYPT_ALG_RSA_SIGN, ACCELCRYPT_PAD_PSS).offered);
  // OAEP is an encryption padding: no backend offers it for signatures.
  EXPECT_FALSE(
      router.OfferedKeys(ACCELCRYPT_ALG_RSA_SIGN, ACCELCRYPT_PAD_OAEP).offered);
  EXPECT_TRUE(
      router.TakesKey(ACCELCRYPT_ALG_RSA_CRYPT, ACCELCRYPT_PAD_OAEP, 2048));
  EXPECT_FALSE(
      router.TakesKey(ACCELCRYPT_ALG_RSA_SIGN, ACCELCRYPT_PAD_PKCS1, 512));
  EXPECT_TRUE(
      router.TakesKey(ACCELCRYPT_ALG_DSA_SIGN, Router::kAnyPadding, 2048));
  EXPECT_FALSE(
      router.TakesKey(ACCELCRYPT_ALG_DSA_SIGN, Router::kAnyPadding, 4096));
  // A digest takes no key material.
  EXPECT_FALSE(router.OfferedKeys(ACCELCRYPT_ALG_SHA256).offered);
  // failing.so claims hardware and is routed first for AES and SHA.
  EXPECT_TRUE(router.FirstIsHardware(ACCELCRYPT_ALG_SHA256));
  EXPECT_FALSE(router.FirstIsHardware(ACCELCRYPT_ALG_RSA_SIGN));
  ASSERT_OK_AND_ASSIGN(auto soft, FailingCore({{"backends", "software"}}));
  EXPECT_FALSE(soft->router().FirstIsHardware(ACCELCRYPT_ALG_SHA256));
  // A backend excluded by configuration is not asked.
  ASSERT_OK_AND_ASSIGN(auto no_rsa, FailingCore({{"disable", "software"}}));
  EXPECT_FALSE(no_rsa->router().OfferedKeys(ACCELCRYPT_ALG_RSA_SIGN).offered);
  EXPECT_FALSE(no_rsa->router().TakesKey(ACCELCRYPT_ALG_RSA_SIGN,
                                         ACCELCRYPT_PAD_PKCS1, 2048));
}

}  // namespace
}  // namespace accelcrypt::router_test
