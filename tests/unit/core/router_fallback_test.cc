// SPDX-License-Identifier: Apache-2.0
// Router behaviour with a backend that fails on cue (failing.so ahead of
// software): device errors are hidden, with the software backend's output,
// at random, mid-stream (portable state moves, GCM replays within
// replay_max), with a replay copy kept only for device backends, and from
// several threads at once.
// Helpers: router_fixture.h.

#include <map>
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

TEST(RouterTest, FailingBackendLoadsFirst) {
  ASSERT_OK_AND_ASSIGN(auto core, FailingCore({}));
  ASSERT_NE(core->registry().Find("failing"), nullptr)
      << "failing.so not found in " << TestBackendDir();
  EXPECT_THAT(core->router().Candidates(ACCELCRYPT_ALG_AES_128_CBC),
              ElementsAre("failing", "software"));
  EXPECT_THAT(core->router().Candidates(ACCELCRYPT_ALG_SHA256),
              ElementsAre("failing", "software"));
}

// 10,000 mixed operations while failing.so fails 20% of its calls at
// random: every operation must succeed (the failures are device errors the
// router hides: portable cipher state moves, GCM and streaming digests are
// replayed since every message here fits `replay_max`) and produce the
// software backend's output.
TEST(RouterTest, RandomDeviceErrorsAreInvisible) {
  ASSERT_OK_AND_ASSIGN(
      auto core, FailingCore({{"failing.mode", "random"},
                              {"failing.rate", "20"},
                              {"failing.seed", "7"},
                              // The breaker would take failing.so out of
                              // rotation; keep it in to exercise fallback.
                              {"breaker_threshold", "1000000"}}));
  Router& router = core->router();
  Rng rng(99);
  const auto ciphers = Algs(Family::kCipher);
  const auto digests = Algs(Family::kDigest);
  ASSERT_EQ(ciphers.size(), 18u);
  ASSERT_EQ(digests.size(), 5u);
  size_t visible = 0, by_kind[4] = {};
  // Visible failures by the call that failed ("cipher final", ...).
  std::map<std::string, int> visible_by_call;
  auto classify = [&](const absl::Status& st) {
    std::string m(st.message());
    size_t a = m.find("failing: "), b = m.find(": device error");
    visible_by_call[a != std::string::npos && b != std::string::npos && b > a
                        ? m.substr(a + 9, b - a - 9)
                        : std::string(absl::StatusCodeToString(st.code()))]++;
  };
  Bytes prev_random;
  for (int i = 0; i < 10000; ++i) {
    const size_t kind = i % 10 < 6 ? 0 : i % 10 < 8 ? 1 : i % 10 < 9 ? 2 : 3;
    ++by_kind[kind];
    if (kind == 0) {
      Op op = RandomOp(rng, ciphers[i % ciphers.size()], 200);
      // The software backend encrypts; a decrypt op then takes its output.
      Op enc = op;
      enc.encrypt = true;
      Bytes ref_tag, tag;
      ASSERT_OK_AND_ASSIGN(Bytes ct, Reference(*core, enc, &ref_tag));
      Bytes want = ct;
      if (!op.encrypt) {
        want = op.data;
        op.data = ct;
      }
      tag = ref_tag;
      auto cipher = router.NewCipher(op.alg->id);
      absl::StatusOr<Bytes> got =
          cipher.ok() ? RunCipher(**cipher, op, &tag) : cipher.status();
      if (!got.ok()) {
        classify(got.status());
        if (++visible > 10) continue;
        ADD_FAILURE() << "op " << i << " " << op.alg->name << ": "
                      << got.status();
        continue;
      }
      EXPECT_EQ(ToHex(*got), ToHex(want)) << "op " << i << " " << op.alg->name;
      if (op.encrypt) {
        EXPECT_EQ(ToHex(tag), ToHex(ref_tag)) << "op " << i;
      }
    } else if (kind == 1) {
      const AlgorithmInfo* alg = digests[i % digests.size()];
      Bytes msg = rng.Bytes(rng.Range(0, 500));
      Bytes want(alg->digest_len), got(alg->digest_len);
      ASSERT_OK(core->registry()
                    .Find("software")
                    ->DigestOneShot(alg->id, msg, absl::MakeSpan(want)));
      absl::Status st = router.DigestOneShot(alg->id, msg, absl::MakeSpan(got));
      if (!st.ok()) {
        classify(st);
        if (++visible > 10) continue;
        ADD_FAILURE() << "op " << i << " one-shot " << alg->name << ": " << st;
        continue;
      }
      EXPECT_EQ(ToHex(got), ToHex(want)) << "op " << i;
    } else if (kind == 2) {
      // Streaming digests within the router's replay buffer (replay_max,
      // 1024 bytes by default).
      const AlgorithmInfo* alg = digests[i % digests.size()];
      Bytes msg = rng.Bytes(rng.Range(0, 1000));
      Bytes want(alg->digest_len), got(alg->digest_len);
      ASSERT_OK(core->registry()
                    .Find("software")
                    ->DigestOneShot(alg->id, msg, absl::MakeSpan(want)));
      absl::Status st;
      auto d = router.NewDigest(alg->id);
      if (!d.ok()) st = d.status();
      size_t off = 0;
      while (st.ok() && off < msg.size()) {
        size_t n = rng.Range(1, msg.size() - off);
        st = (*d)->Update(absl::MakeConstSpan(msg).subspan(off, n));
        off += n;
      }
      if (st.ok()) st = (*d)->Final(absl::MakeSpan(got));
      if (!st.ok()) {
        classify(st);
        if (++visible > 10) continue;
        ADD_FAILURE() << "op " << i << " streaming " << alg->name << ": " << st;
        continue;
      }
      EXPECT_EQ(ToHex(got), ToHex(want)) << "op " << i;
    } else {
      Bytes out(32);
      absl::Status st = router.RandomBytes(absl::MakeSpan(out));
      if (!st.ok()) {
        classify(st);
        if (++visible > 10) continue;
        ADD_FAILURE() << "op " << i << " random: " << st;
        continue;
      }
      EXPECT_NE(ToHex(out), ToHex(prev_random)) << "op " << i;
      prev_random = out;
    }
  }
  std::string summary;
  for (const auto& [call, n] : visible_by_call) {
    summary += "\n  " + call + ": " + std::to_string(n);
  }
  EXPECT_EQ(visible, 0u) << "caller-visible failures by failed call:"
                         << summary;
  const Counts counts = FailingCounts(*core);
  // The failures must really have happened, in quantity, for this to prove
  // anything.
  EXPECT_GT(counts.failures, 1000u) << "calls=" << counts.calls;
  EXPECT_GT(TotalFallbacks(*core, "failing"), 1000u);
  RecordProperty("failing_calls", static_cast<int>(counts.calls));
  RecordProperty("failing_failures", static_cast<int>(counts.failures));
  EXPECT_GT(by_kind[0], 0u);
  EXPECT_GT(by_kind[3], 0u);
}

// mode=midstream fails the second and later updates of each context: a
// stream whose state is portable continues on software, with the right
// output, and reports software as its backend from then on.
TEST(RouterTest, MidstreamFailureContinuesOnSoftware) {
  ASSERT_OK_AND_ASSIGN(auto core,
                       FailingCore({{"failing.mode", "midstream"},
                                    {"breaker_threshold", "1000000"}}));
  Rng rng(5);
  for (const AlgorithmInfo* alg : Algs(Family::kCipher)) {
    if (IsGcm(*alg)) continue;
    for (bool encrypt : {true, false}) {
      SCOPED_TRACE(::testing::Message()
                   << alg->name << (encrypt ? " encrypt" : " decrypt"));
      Op op;
      op.alg = alg;
      op.encrypt = encrypt;
      op.key = rng.Bytes(alg->key_len);
      op.iv = rng.Bytes(alg->iv_len);
      op.data = rng.Bytes(16 * 10);
      op.parts = IsBlock(*alg) ? std::vector<size_t>{32, 16, 48, 64}
                               : std::vector<size_t>{7, 30, 50, 73};
      Bytes tag;
      ASSERT_OK_AND_ASSIGN(Bytes want, Reference(*core, op, &tag));
      ASSERT_OK_AND_ASSIGN(auto cipher, core->router().NewCipher(alg->id));
      EXPECT_EQ(cipher->backend(), "failing");
      ASSERT_OK_AND_ASSIGN(Bytes got, RunCipher(*cipher, op, &tag));
      EXPECT_EQ(ToHex(got), ToHex(want));
      EXPECT_EQ(cipher->backend(), "software");
    }
    EXPECT_GE(StatsOf(*core, "failing", std::string(alg->name)).fallbacks, 2u)
        << alg->name;
  }
  EXPECT_GE(FailingCounts(*core).failures, 30u);
}

// GCM's GHASH state is not portable: the router replays AAD and data into
// the next backend while they fit `replay_max`; past that, a device error
// after data went in is returned as such, never hidden behind wrong output.
TEST(RouterTest, MidstreamGcmReplaysWithinReplayMaxAndReportsBeyond) {
  ASSERT_OK_AND_ASSIGN(auto core,
                       FailingCore({{"failing.mode", "midstream"},
                                    {"replay_max", "100"},
                                    {"breaker_threshold", "1000000"}}));
  Rng rng(6);
  for (bool encrypt : {true, false}) {
    SCOPED_TRACE(encrypt ? "encrypt" : "decrypt");
    Op op;
    op.alg = FindAlgorithm(ACCELCRYPT_ALG_AES_256_GCM);
    op.encrypt = true;
    op.key = rng.Bytes(32);
    op.iv = rng.Bytes(12);
    op.aad = rng.Bytes(11);
    op.data = rng.Bytes(80);
    op.parts = {20, 33, 27};
    Bytes ref_tag;
    ASSERT_OK_AND_ASSIGN(Bytes ct, Reference(*core, op, &ref_tag));
    Bytes want = ct;
    if (!encrypt) {
      op.encrypt = false;
      want = op.data;
      op.data = ct;
    }
    // 11 + 80 bytes fit replay_max = 100: the stream moves to software.
    Bytes tag = ref_tag;
    ASSERT_OK_AND_ASSIGN(auto cipher,
                         core->router().NewCipher(ACCELCRYPT_ALG_AES_256_GCM));
    ASSERT_OK_AND_ASSIGN(Bytes got, RunCipher(*cipher, op, &tag));
    EXPECT_EQ(ToHex(got), ToHex(want));
    EXPECT_EQ(ToHex(tag), ToHex(ref_tag));
    EXPECT_EQ(cipher->backend(), "software");
  }
  // 11 + 200 bytes do not fit: the second update's device error is returned.
  Op big;
  big.alg = FindAlgorithm(ACCELCRYPT_ALG_AES_256_GCM);
  big.encrypt = true;
  big.key = rng.Bytes(32);
  big.iv = rng.Bytes(12);
  big.aad = rng.Bytes(11);
  big.data = rng.Bytes(200);
  big.parts = {150, 50};
  Bytes tag;
  ASSERT_OK_AND_ASSIGN(auto cipher,
                       core->router().NewCipher(ACCELCRYPT_ALG_AES_256_GCM));
  EXPECT_THAT(RunCipher(*cipher, big, &tag),
              StatusIs(absl::StatusCode::kUnavailable));
  // A single update is the first update, which midstream lets through.
  big.parts = {200};
  Bytes ref_tag;
  ASSERT_OK_AND_ASSIGN(Bytes want, Reference(*core, big, &ref_tag));
  ASSERT_OK_AND_ASSIGN(auto again,
                       core->router().NewCipher(ACCELCRYPT_ALG_AES_256_GCM));
  ASSERT_OK_AND_ASSIGN(Bytes got, RunCipher(*again, big, &tag));
  EXPECT_EQ(ToHex(got), ToHex(want));
  EXPECT_EQ(ToHex(tag), ToHex(ref_tag));
}

// ACCELCRYPT_CAP_CPU decides the update path. The failing backend is a
// device (it never claims CAP_CPU): a GCM stream and a digest that fail on
// it mid-way are replayed on software from the copy the router kept, with
// the right bytes. Software declares CAP_CPU: served first, with failing
// after it as a fallback, the same operations keep no copy at all
// (Router::ReplayedBytes stays where it was).
TEST(RouterTest, ReplayCopyOnlyForDeviceBackends) {
  ASSERT_OK_AND_ASSIGN(auto core,
                       FailingCore({{"failing.mode", "midstream"},
                                    {"breaker_threshold", "1000000"}}));
  Router& router = core->router();
  Rng rng(12);
  Op op;
  op.alg = FindAlgorithm(ACCELCRYPT_ALG_AES_128_GCM);
  op.encrypt = true;
  op.key = rng.Bytes(16);
  op.iv = rng.Bytes(12);
  op.aad = rng.Bytes(13);
  op.data = rng.Bytes(300);
  op.parts = {64, 100, 136};
  Bytes ref_tag;
  ASSERT_OK_AND_ASSIGN(Bytes want, Reference(*core, op, &ref_tag));
  const Bytes msg = rng.Bytes(200);
  Bytes want_md(32), got_md(32);
  ASSERT_OK(
      core->registry()
          .Find("software")
          ->DigestOneShot(ACCELCRYPT_ALG_SHA256, msg, absl::MakeSpan(want_md)));

  // Device first: replay, fallback, right bytes.
  const uint64_t before = router.ReplayedBytes();
  {
    ASSERT_OK_AND_ASSIGN(auto cipher, router.NewCipher(op.alg->id));
    EXPECT_EQ(cipher->backend(), "failing");
    Bytes tag;
    ASSERT_OK_AND_ASSIGN(Bytes got, RunCipher(*cipher, op, &tag));
    EXPECT_EQ(ToHex(got), ToHex(want));
    EXPECT_EQ(ToHex(tag), ToHex(ref_tag));
    EXPECT_EQ(cipher->backend(), "software");
  }
  EXPECT_GE(StatsOf(*core, "failing", "AES-128-GCM").fallbacks, 1u);
  const uint64_t gcm_copied = router.ReplayedBytes() - before;
  EXPECT_GE(gcm_copied, op.aad.size() + op.parts[0]);
  {
    ASSERT_OK_AND_ASSIGN(auto digest, router.NewDigest(ACCELCRYPT_ALG_SHA256));
    EXPECT_EQ(digest->backend(), "failing");
    // failing's midstream mode fails cipher updates only: the digest
    // stays there, and the copy is kept all the same.
    ASSERT_OK(digest->Update(absl::MakeConstSpan(msg).first(50)));
    ASSERT_OK(digest->Update(absl::MakeConstSpan(msg).subspan(50)));
    ASSERT_OK(digest->Final(absl::MakeSpan(got_md)));
    EXPECT_EQ(ToHex(got_md), ToHex(want_md));
  }
  EXPECT_EQ(router.ReplayedBytes() - before, gcm_copied + msg.size());

  // CPU first (failing still after it as a fallback): no copy.
  ASSERT_OK_AND_ASSIGN(auto cpu_first,
                       FailingCore({{"failing.mode", "midstream"},
                                    {"route.aes-128-gcm", "software, failing"},
                                    {"route.sha256", "software, failing"}}));
  Router& cpu_router = cpu_first->router();
  ASSERT_THAT(cpu_router.Candidates(op.alg->id),
              ElementsAre("software", "failing"));
  {
    ASSERT_OK_AND_ASSIGN(auto cipher, cpu_router.NewCipher(op.alg->id));
    EXPECT_EQ(cipher->backend(), "software");
    Bytes tag;
    ASSERT_OK_AND_ASSIGN(Bytes got, RunCipher(*cipher, op, &tag));
    EXPECT_EQ(ToHex(got), ToHex(want));
    EXPECT_EQ(ToHex(tag), ToHex(ref_tag));
    ASSERT_OK_AND_ASSIGN(auto digest,
                         cpu_router.NewDigest(ACCELCRYPT_ALG_SHA256));
    EXPECT_EQ(digest->backend(), "software");
    ASSERT_OK(digest->Update(absl::MakeConstSpan(msg).first(50)));
    ASSERT_OK(digest->Update(absl::MakeConstSpan(msg).subspan(50)));
    ASSERT_OK(digest->Final(absl::MakeSpan(got_md)));
    EXPECT_EQ(ToHex(got_md), ToHex(want_md));
  }
  EXPECT_EQ(cpu_router.ReplayedBytes(), 0u);
  EXPECT_EQ(StatsOf(*cpu_first, "software", "AES-128-GCM").ops, 1u);
  EXPECT_EQ(StatsOf(*cpu_first, "software", "AES-128-GCM").bytes,
            op.aad.size() + op.data.size());
  EXPECT_EQ(FailingCounts(*cpu_first).calls, 0u);
}

// Several threads share one router while failing.so fails at random: every
// operation still succeeds with the right output, and the shared counters
// (breaker, stats, the backend's own) stay consistent.
TEST(RouterTest, ConcurrentUseWithRandomDeviceErrors) {
  ASSERT_OK_AND_ASSIGN(auto core,
                       FailingCore({{"failing.mode", "random"},
                                    {"failing.rate", "25"},
                                    {"failing.seed", "3"},
                                    {"breaker_threshold", "1000000"}}));
  constexpr int kThreads = 4, kOps = 400;
  std::vector<int> visible(kThreads, 0), wrong(kThreads, 0);
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Rng rng(1000 + t);
      const auto ciphers = Algs(Family::kCipher);
      for (int i = 0; i < kOps; ++i) {
        if (i % 2 == 0) {
          Op op = RandomOp(rng, ciphers[(i / 2 + t) % ciphers.size()], 150);
          op.encrypt = true;
          Bytes ref_tag, tag;
          auto want = Reference(*core, op, &ref_tag);
          auto cipher = core->router().NewCipher(op.alg->id);
          auto got = cipher.ok() ? RunCipher(**cipher, op, &tag)
                                 : absl::StatusOr<Bytes>(cipher.status());
          if (!got.ok() || !want.ok()) {
            ++visible[t];
          } else if (*got != *want || tag != ref_tag) {
            ++wrong[t];
          }
        } else {
          Bytes msg = rng.Bytes(rng.Range(0, 300)), got(32), want(32);
          absl::Status st = core->router().DigestOneShot(
              ACCELCRYPT_ALG_SHA256, msg, absl::MakeSpan(got));
          absl::Status ref = core->registry()
                                 .Find("software")
                                 ->DigestOneShot(ACCELCRYPT_ALG_SHA256, msg,
                                                 absl::MakeSpan(want));
          if (!st.ok() || !ref.ok()) {
            ++visible[t];
          } else if (got != want) {
            ++wrong[t];
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(visible[t], 0) << "thread " << t;
    EXPECT_EQ(wrong[t], 0) << "thread " << t;
  }
  EXPECT_GT(FailingCounts(*core).failures, 100u);
  const Cell sha_sw = StatsOf(*core, "software", "SHA2-256");
  const Cell sha_hw = StatsOf(*core, "failing", "SHA2-256");
  // Every digest op was counted exactly once, on the backend that served it.
  EXPECT_EQ(sha_sw.ops + sha_hw.ops,
            static_cast<uint64_t>(kThreads * kOps / 2));
  EXPECT_EQ(sha_hw.fallbacks, sha_sw.ops);
}

}  // namespace
}  // namespace accelcrypt::router_test
