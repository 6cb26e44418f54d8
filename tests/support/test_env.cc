// SPDX-License-Identifier: Apache-2.0
#include "tests/support/test_env.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_format.h"

#ifndef ACCELCRYPT_TEST_VECTOR_DIR
#error "ACCELCRYPT_TEST_VECTOR_DIR must be defined by the build"
#endif
#ifndef ACCELCRYPT_TEST_BACKEND_DIR
#error "ACCELCRYPT_TEST_BACKEND_DIR must be defined by the build"
#endif
#ifndef ACCELCRYPT_TEST_ONLY_BACKEND_DIR
#error "ACCELCRYPT_TEST_ONLY_BACKEND_DIR must be defined by the build"
#endif

namespace accelcrypt::testing {

std::string VectorDir() { return ACCELCRYPT_TEST_VECTOR_DIR; }
// ACCELCRYPT_TEST_EXTRA_BACKEND_DIR adds a directory of backends built
// elsewhere (a third party's, the out-of-tree example's) after the build
// tree's, so they join the registry-driven suites without test edits.
std::string BackendDir() {
  std::string dir = ACCELCRYPT_TEST_BACKEND_DIR;
  const char* extra = std::getenv("ACCELCRYPT_TEST_EXTRA_BACKEND_DIR");
  if (extra != nullptr && *extra != '\0') dir = dir + ":" + extra;
  return dir;
}
std::string TestBackendDir() { return ACCELCRYPT_TEST_ONLY_BACKEND_DIR; }

Config BuildTreeConfig(const std::map<std::string, std::string>& overrides) {
  Config config;
  config.Set("backend_dir", BackendDir());
  for (const auto& [key, value] : overrides) config.Set(key, value);
  return config;
}

absl::StatusOr<std::unique_ptr<Core>> MakeCore(
    const std::map<std::string, std::string>& overrides) {
  return Core::Create(BuildTreeConfig(overrides));
}

const Registry& SharedRegistry() {
  static const Registry* registry = [] {
    auto created = Registry::Create(BuildTreeConfig());
    if (!created.ok()) {
      std::fprintf(stderr, "cannot create the build-tree registry: %s\n",
                   created.status().ToString().c_str());
      std::abort();
    }
    return created->release();
  }();
  return *registry;
}

std::ostream& operator<<(std::ostream& os, const BackendAlg& p) {
  return os << p.backend->name() << "/" << p.alg->name;
}

std::vector<BackendAlg> BackendAlgs(const Registry& registry, Family family) {
  std::vector<BackendAlg> out;
  for (const auto& backend : registry.backends()) {
    for (const AlgorithmInfo& alg : AllAlgorithms()) {
      if (alg.family != family) continue;
      if (backend->Capability(alg.id) == nullptr) continue;
      out.push_back(BackendAlg{backend.get(), &alg});
    }
  }
  return out;
}

std::vector<BackendAlg> SharedBackendAlgs(Family family) {
  return BackendAlgs(SharedRegistry(), family);
}

std::string BackendAlgName(const ::testing::TestParamInfo<BackendAlg>& info) {
  std::string name = absl::StrFormat("%s_%s", info.param.backend->name(),
                                     info.param.alg->name);
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

const Backend* SoftwareBackend() { return SharedRegistry().Find("software"); }

std::string ToHex(absl::Span<const uint8_t> data) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(data.size() * 2);
  for (uint8_t b : data) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

std::vector<uint8_t> FromHex(std::string_view hex) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (hex.size() % 2 != 0) {
    std::fprintf(stderr, "FromHex: odd length\n");
    std::abort();
  }
  std::vector<uint8_t> out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      std::fprintf(stderr, "FromHex: bad digit\n");
      std::abort();
    }
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return out;
}

std::vector<uint8_t> Rng::Bytes(size_t n) {
  std::vector<uint8_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(engine_());
  return out;
}

size_t Rng::Range(size_t lo, size_t hi) {
  return std::uniform_int_distribution<size_t>(lo, hi)(engine_);
}

}  // namespace accelcrypt::testing
