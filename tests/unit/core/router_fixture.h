// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_TESTS_UNIT_CORE_ROUTER_FIXTURE_H_
#define ACCELCRYPT_TESTS_UNIT_CORE_ROUTER_FIXTURE_H_

// Helpers shared by the router tests with a backend that fails on cue
// (router_fallback_test.cc, router_rules_test.cc): the test-only failing.so
// (tests/support/failing_backend), loaded from the build tree's test-backend
// directory ahead of software. Its describe() line reports how many calls it
// saw and how many it failed, which proves what was (not) retried.

#include <stdlib.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/core.h"
#include "core/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/status_matchers.h"
#include "tests/support/test_env.h"

namespace accelcrypt::router_test {

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
inline absl::StatusOr<std::unique_ptr<Core>> FailingCore(
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
inline Counts FailingCounts(const Core& core_const) {
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
inline Cell StatsOf(Core& core, const std::string& backend,
                    const std::string& alg) {
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
inline uint64_t TotalFallbacks(Core& core, const std::string& backend) {
  nlohmann::json j = nlohmann::json::parse(core.stats().ToJson());
  uint64_t total = 0;
  if (!j.contains("backends") || !j["backends"].contains(backend)) return 0;
  for (const auto& [alg, cell] : j["backends"][backend].items()) {
    total += cell.value("fallbacks", 0ull);
  }
  return total;
}

inline bool IsBlock(const AlgorithmInfo& a) {
  return a.mode == CipherMode::kEcb || a.mode == CipherMode::kCbc;
}
inline bool IsGcm(const AlgorithmInfo& a) { return a.mode == CipherMode::kGcm; }

inline std::vector<const AlgorithmInfo*> Algs(Family family) {
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
inline absl::StatusOr<Bytes> RunCipher(Cipher& cipher, const Op& op,
                                       Bytes* tag) {
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

inline absl::StatusOr<Bytes> Reference(const Core& core_const, const Op& op,
                                       Bytes* tag) {
  Core& core = const_cast<Core&>(core_const);
  const Backend* software = core.registry().Find("software");
  if (software == nullptr) return absl::NotFoundError("no software backend");
  ACCELCRYPT_ASSIGN_OR_RETURN(auto c, software->NewCipher(op.alg->id));
  Op whole = op;
  whole.parts = {op.data.size()};
  return RunCipher(*c, whole, tag);
}

inline Op RandomOp(Rng& rng, const AlgorithmInfo* alg, size_t max_len) {
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

}  // namespace accelcrypt::router_test

#endif  // ACCELCRYPT_TESTS_UNIT_CORE_ROUTER_FIXTURE_H_
