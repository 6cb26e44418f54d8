// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_TESTS_SUPPORT_TEST_ENV_H_
#define ACCELCRYPT_TESTS_SUPPORT_TEST_ENV_H_

#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/algorithms.h"
#include "core/backend.h"
#include "core/config.h"
#include "core/core.h"
#include "core/registry.h"
#include "gtest/gtest.h"

namespace accelcrypt::testing {

// VectorDir is the tree's tests/vectors directory.
std::string VectorDir();
// BackendDir is the build tree's backend module directory
// (ACCELCRYPT_BACKEND_OUT); TestBackendDir holds test-only modules such as
// failing.so (ACCELCRYPT_TEST_BACKEND_OUT).
std::string BackendDir();
std::string TestBackendDir();

// BuildTreeConfig returns a Config that loads the build tree's backends
// (backend_dir = BackendDir()) with `overrides` applied on top. The
// environment (ACCELCRYPT_CONF, ACCELCRYPT_BACKEND_DIR) is deliberately
// ignored so a developer's settings cannot change what the tests see.
Config BuildTreeConfig(
    const std::map<std::string, std::string>& overrides = {});

// MakeCore builds a whole Core from BuildTreeConfig(overrides).
absl::StatusOr<std::unique_ptr<Core>> MakeCore(
    const std::map<std::string, std::string>& overrides = {});

// SharedRegistry is one process-wide registry of the build tree's backends,
// created on first use and never destroyed; used to instantiate
// parameterised suites. Aborts the test binary with a message if the
// registry cannot be created.
const Registry& SharedRegistry();

// BackendAlg is one (backend, algorithm) pair a registry declares.
struct BackendAlg {
  const Backend* backend;
  const AlgorithmInfo* alg;
};
std::ostream& operator<<(std::ostream& os, const BackendAlg& p);

// BackendAlgs lists every (backend, algorithm) pair of `family` that
// `registry` declares, in registry order then identity-table order.
std::vector<BackendAlg> BackendAlgs(const Registry& registry, Family family);
// SharedBackendAlgs is BackendAlgs(SharedRegistry(), family), for
// INSTANTIATE_TEST_SUITE_P.
std::vector<BackendAlg> SharedBackendAlgs(Family family);

// BackendAlgName prints a parameter as `software_AES_128_CBC`.
std::string BackendAlgName(const ::testing::TestParamInfo<BackendAlg>& info);

// SoftwareBackend returns the shared registry's software backend (the
// reference), or nullptr.
const Backend* SoftwareBackend();

// Hex helpers for messages and for tests that build small inputs.
std::string ToHex(absl::Span<const uint8_t> data);
std::vector<uint8_t> FromHex(std::string_view hex);  // aborts on bad hex

// Rng is a deterministic generator for property tests; the seed is fixed per
// test so a failure reproduces.
class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  std::vector<uint8_t> Bytes(size_t n);
  // Uniform in [lo, hi].
  size_t Range(size_t lo, size_t hi);

 private:
  std::mt19937_64 engine_;
};

}  // namespace accelcrypt::testing

#endif  // ACCELCRYPT_TESTS_SUPPORT_TEST_ENV_H_
