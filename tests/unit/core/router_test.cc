// SPDX-License-Identifier: Apache-2.0
// Router behaviour with a backend that fails on cue: the test-only failing.so
// (tests/support/failing_backend), loaded from the build tree's test-backend
// directory ahead of software. Its describe() line reports how many calls it
// saw and how many it failed, which proves what was (not) retried.
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/core.h"
#include "core/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/status_matchers.h"
#include "tests/support/test_env.h"

namespace accelcrypt {
namespace {

using ::accelcrypt::testing::BuildTreeConfig;
using ::accelcrypt::testing::Rng;
using ::accelcrypt::testing::StatusIs;
using ::accelcrypt::testing::TestBackendDir;
using ::accelcrypt::testing::ToHex;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Bytes = std::vector<uint8_t>;

// FailingCore builds a Core with failing.so first and software second.
// Self-tests are off so the failing backend's call counter starts at zero.
absl::StatusOr<std::unique_ptr<Core>> FailingCore(
    const std::map<std::string, std::string>& overrides) {
  // failing.so lets ACCELCRYPT_FAILING_* override its config: a developer's
  // shell must not change what these tests inject.
  for (const char* var :
       {"ACCELCRYPT_FAILING_MODE", "ACCELCRYPT_FAILING_AFTER",
        "ACCELCRYPT_FAILING_EVERY", "ACCELCRYPT_FAILING_RATE",
        "ACCELCRYPT_FAILING_SEED", "ACCELCRYPT_FAILING_FAIL_INIT"}) {
    unsetenv(var);
  }
  std::map<std::string, std::string> all = {
      {"backend_dir", TestBackendDir()},
      {"backends", "failing,software"},
      {"selftest", "0"},
  };
  for (const auto& [k, v] : overrides) all[k] = v;
  return Core::Create(BuildTreeConfig(all));
}

struct Counts {
  uint64_t calls = 0;
  uint64_t failures = 0;
};

// FailingCounts parses "... calls=N failures=M" from failing.so's describe().
Counts FailingCounts(const Core& core_const) {
  Core& core = const_cast<Core&>(core_const);
  Counts c;
  const Backend* failing = core.registry().Find("failing");
  if (failing == nullptr) {
    ADD_FAILURE() << "failing backend not loaded";
    return c;
  }
  std::string d = failing->Describe();
  unsigned long long calls = 0, failures = 0;
  size_t pos = d.find("calls=");
  if (pos == std::string::npos ||
      std::sscanf(d.c_str() + pos, "calls=%llu failures=%llu", &calls,
                  &failures) != 2) {
    ADD_FAILURE() << "cannot read counters from describe(): " << d;
  }
  c.calls = calls;
  c.failures = failures;
  return c;
}

// StatsOf returns the counters of one (backend, algorithm) cell from the
// stats JSON (all zero when absent).
struct Cell {
  uint64_t ops = 0, bytes = 0, errors = 0, fallbacks = 0;
};
Cell StatsOf(Core& core, const std::string& backend, const std::string& alg) {
  Cell c;
  nlohmann::json j = nlohmann::json::parse(core.stats().ToJson());
  if (!j.contains("backends") || !j["backends"].contains(backend) ||
      !j["backends"][backend].contains(alg)) {
    return c;
  }
  const auto& cell = j["backends"][backend][alg];
  c.ops = cell.value("ops", 0ull);
  c.bytes = cell.value("bytes", 0ull);
  c.errors = cell.value("errors", 0ull);
  c.fallbacks = cell.value("fallbacks", 0ull);
  return c;
}

// TotalFallbacks sums the fallbacks counted for `backend` over all
// algorithms.
uint64_t TotalFallbacks(Core& core, const std::string& backend) {
  nlohmann::json j = nlohmann::json::parse(core.stats().ToJson());
  uint64_t total = 0;
  if (!j.contains("backends") || !j["backends"].contains(backend)) return 0;
  for (const auto& [alg, cell] : j["backends"][backend].items()) {
    total += cell.value("fallbacks", 0ull);
  }
  return total;
}

bool IsBlock(const AlgorithmInfo& a) {
  return a.mode == CipherMode::kEcb || a.mode == CipherMode::kCbc;
}
bool IsGcm(const AlgorithmInfo& a) { return a.mode == CipherMode::kGcm; }

std::vector<const AlgorithmInfo*> Algs(Family family) {
  std::vector<const AlgorithmInfo*> out;
  for (const AlgorithmInfo& a : AllAlgorithms()) {
    if (a.family == family) out.push_back(&a);
  }
  return out;
}

struct Op {
  const AlgorithmInfo* alg;
  bool encrypt;
  Bytes key, iv, aad, data;
  std::vector<size_t> parts;  // update sizes
};

// RunCipher runs `op` through `cipher` (already created) and returns the
// output; GCM encrypt writes the tag to *tag, GCM decrypt checks *tag.
absl::StatusOr<Bytes> RunCipher(Cipher& cipher, const Op& op, Bytes* tag) {
  ACCELCRYPT_RETURN_IF_ERROR(cipher.Init(op.encrypt, op.key, op.iv));
  if (!op.aad.empty()) ACCELCRYPT_RETURN_IF_ERROR(cipher.Aad(op.aad));
  Bytes out(op.data.size());
  size_t off = 0;
  for (size_t n : op.parts) {
    ACCELCRYPT_RETURN_IF_ERROR(
        cipher.Update(absl::MakeConstSpan(op.data).subspan(off, n),
                      absl::MakeSpan(out).subspan(off, n)));
    off += n;
  }
  if (IsGcm(*op.alg) && !op.encrypt)
    ACCELCRYPT_RETURN_IF_ERROR(cipher.SetTag(*tag));
  ACCELCRYPT_RETURN_IF_ERROR(cipher.Final());
  if (IsGcm(*op.alg) && op.encrypt) {
    tag->assign(16, 0);
    ACCELCRYPT_RETURN_IF_ERROR(cipher.GetTag(absl::MakeSpan(*tag)));
  }
  return out;
}

absl::StatusOr<Bytes> Reference(const Core& core_const, const Op& op,
                                Bytes* tag) {
  Core& core = const_cast<Core&>(core_const);
  const Backend* software = core.registry().Find("software");
  if (software == nullptr) return absl::NotFoundError("no software backend");
  ACCELCRYPT_ASSIGN_OR_RETURN(auto c, software->NewCipher(op.alg->id));
  Op whole = op;
  whole.parts = {op.data.size()};
  return RunCipher(*c, whole, tag);
}

Op RandomOp(Rng& rng, const AlgorithmInfo* alg, size_t max_len) {
  Op op;
  op.alg = alg;
  op.encrypt = rng.Range(0, 1) == 1;
  op.key = rng.Bytes(alg->key_len);
  op.iv = rng.Bytes(IsGcm(*alg) ? 12 : alg->iv_len);
  if (IsGcm(*alg)) op.aad = rng.Bytes(rng.Range(0, 40));
  size_t len = rng.Range(0, max_len);
  if (IsBlock(*alg)) len -= len % 16;
  op.data = rng.Bytes(len);
  size_t pieces = rng.Range(1, 4);
  size_t left = len;
  for (size_t i = 0; i + 1 < pieces && left > 0; ++i) {
    size_t n = rng.Range(0, left);
    if (IsBlock(*alg)) n -= n % 16;
    op.parts.push_back(n);
    left -= n;
  }
  op.parts.push_back(left);
  return op;
}

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
}  // namespace accelcrypt
