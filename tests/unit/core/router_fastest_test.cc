// SPDX-License-Identifier: Apache-2.0
// policy = fastest: the router sends each operation to the backend a
// calibration file measured fastest for its size. The file is written by the
// test into its own temp dir (routing preferences, not crypto data) over two
// backends that are always built: the test-only failing.so in mode none (a
// pass-through to the software tables that declares itself hardware) and
// software. Which backend served is read from Cipher::backend() and Stats,
// and from failing.so's own call counter; nothing here depends on timing.
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/calibration.h"
#include "core/core.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/status_matchers.h"
#include "tests/support/test_env.h"

namespace accelcrypt {
namespace {

using ::accelcrypt::testing::BuildTreeConfig;
using ::accelcrypt::testing::TestBackendDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Bytes = std::vector<uint8_t>;

constexpr uint64_t kSmall = 16;
constexpr uint64_t kLarge = 16384;

class RouterFastestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* var :
         {"ACCELCRYPT_FAILING_MODE", "ACCELCRYPT_FAILING_AFTER",
          "ACCELCRYPT_FAILING_EVERY", "ACCELCRYPT_FAILING_RATE",
          "ACCELCRYPT_FAILING_SEED", "ACCELCRYPT_FAILING_FAIL_INIT",
          "ACCELCRYPT_CALIBRATION"}) {
      unsetenv(var);
    }
    std::string templ = ::testing::TempDir() + "/router-fastest-XXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
    path_ = dir_ + "/calibration.json";
    // The versions the file must carry: the loaded backends'.
    ASSERT_OK_AND_ASSIGN(auto core, MakeCoreWith({}));
    for (const char* name : {"failing", "software"}) {
      const Backend* b = core->registry().Find(name);
      ASSERT_NE(b, nullptr)
          << name << " backend not loaded from " << TestBackendDir();
      versions_[name] = std::string(b->version());
    }
  }
  void TearDown() override {
    unlink(path_.c_str());
    unlink(Calibration::CachePath(path_).c_str());
    rmdir(dir_.c_str());
  }

  // MakeCoreWith loads failing.so (test dir) and software, self-tests off so
  // failing.so's call counter starts at zero.
  absl::StatusOr<std::unique_ptr<Core>> MakeCoreWith(
      const std::map<std::string, std::string>& overrides) {
    std::map<std::string, std::string> all = {
        {"backend_dir", TestBackendDir()},
        {"backends", "failing,software"},
        {"selftest", "0"},
    };
    for (const auto& [k, v] : overrides) all[k] = v;
    return Core::Create(BuildTreeConfig(all));
  }

  std::map<std::string, std::string> Fastest(
      const std::string& backends = "failing,software") {
    return {{"policy", "fastest"},
            {"calibration_file", path_},
            {"backends", backends}};
  }

  // WriteCalibration says failing.so is fastest up to 1 KiB and software
  // from 8 KiB, for AES-128-CTR and SHA256.
  void WriteCalibration(const std::string& cpu,
                        const std::map<std::string, std::string>& versions) {
    Calibration cal;
    cal.cpu = cpu;
    cal.backend_versions = versions;
    for (const char* alg : {"aes-128-ctr", "sha256"}) {
      for (uint64_t bucket : Calibration::SizeBuckets()) {
        const bool small = bucket <= 1024;
        cal.ns[alg][bucket]["failing"] = small ? 10.0 : 9000.0;
        cal.ns[alg][bucket]["software"] = small ? 20.0 : 3000.0;
      }
    }
    ASSERT_OK(cal.Save(path_));
  }

  std::string dir_, path_;
  std::map<std::string, std::string> versions_;
};

uint64_t FailingCalls(Core& core) {
  const Backend* failing = core.registry().Find("failing");
  if (failing == nullptr) {
    ADD_FAILURE() << "failing backend not loaded";
    return 0;
  }
  std::string d = failing->Describe();
  unsigned long long calls = 0, failures = 0;
  size_t pos = d.find("calls=");
  if (pos == std::string::npos ||
      std::sscanf(d.c_str() + pos, "calls=%llu failures=%llu", &calls,
                  &failures) != 2) {
    ADD_FAILURE() << "cannot read counters from describe(): " << d;
  }
  return calls;
}

uint64_t Ops(Core& core, const std::string& backend, const std::string& alg) {
  nlohmann::json j = nlohmann::json::parse(core.stats().ToJson());
  if (!j.contains("backends") || !j["backends"].contains(backend) ||
      !j["backends"][backend].contains(alg)) {
    return 0;
  }
  return j["backends"][backend][alg].value("ops", 0ull);
}

// CtrBackend runs one AES-128-CTR operation whose first update is `size`
// bytes and returns the backend that served it; the output is checked
// against the software backend directly.
std::string CtrBackend(Core& core, uint64_t size) {
  auto cipher = core.router().NewCipher(ACCELCRYPT_ALG_AES_128_CTR);
  if (!cipher.ok()) {
    ADD_FAILURE() << cipher.status();
    return "";
  }
  const Bytes key(16, 0x42), iv(16, 0x24), in(size, 0x5a);
  Bytes out(size), want(size);
  EXPECT_OK((*cipher)->Init(true, key, iv));
  EXPECT_OK((*cipher)->Update(in, absl::MakeSpan(out)));
  EXPECT_OK((*cipher)->Final());
  const Backend* sw = core.registry().Find("software");
  auto ref = sw->NewCipher(ACCELCRYPT_ALG_AES_128_CTR);
  EXPECT_OK(ref.status());
  if (ref.ok()) {
    EXPECT_OK((*ref)->Init(true, key, iv));
    EXPECT_OK((*ref)->Update(in, absl::MakeSpan(want)));
    EXPECT_EQ(out, want) << "size " << size;
  }
  return std::string((*cipher)->backend());
}

std::string NotesOf(Core& core) {
  std::string all;
  for (const std::string& n : core.router().notes()) all += n + "\n";
  return all;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

// The load cache (calibration.h) holds the same data as the JSON, and is
// taken only for the JSON text it was made from.
TEST_F(RouterFastestTest, LoadCacheHoldsTheJsonsDataAndOnlyForThatJson) {
  WriteCalibration("AuthenticAMD 25/1/1 \"quoted\" name", versions_);
  ASSERT_EQ(access(Calibration::CachePath(path_).c_str(), R_OK), 0)
      << "Save wrote no load cache";
  ASSERT_OK_AND_ASSIGN(Calibration cached, Calibration::Load(path_));
  EXPECT_TRUE(cached.from_cache);
  const std::string cache_text = ReadText(Calibration::CachePath(path_));
  unlink(Calibration::CachePath(path_).c_str());
  ASSERT_OK_AND_ASSIGN(Calibration parsed, Calibration::Load(path_));
  EXPECT_FALSE(parsed.from_cache);
  EXPECT_EQ(cached.cpu, parsed.cpu);
  EXPECT_EQ(cached.backend_versions, parsed.backend_versions);
  EXPECT_EQ(cached.ns, parsed.ns);
  EXPECT_EQ(cached.ns.size(), 3u);  // aes-128-ctr in both directions, sha256

  // The JSON edited after the cache was made (same length: one digit
  // changed): the JSON's value counts, not the cache's.
  WriteText(Calibration::CachePath(path_), cache_text);
  std::string json = ReadText(path_);
  nlohmann::json doc = nlohmann::json::parse(json);
  doc["algorithms"]["sha256"]["16"]["software"] = 21.0;  // was 20
  WriteText(path_, doc.dump(1) + "\n");
  ASSERT_OK_AND_ASSIGN(Calibration edited, Calibration::Load(path_));
  EXPECT_FALSE(edited.from_cache);
  EXPECT_EQ(edited.ns["sha256"][16]["software"], 21.0);

  // A damaged cache is not an error: the JSON is parsed.
  WriteCalibration("cpu", versions_);
  std::string damaged = ReadText(Calibration::CachePath(path_));
  damaged.resize(damaged.size() / 2);
  damaged += "ns\tsha256\tsixteen\tsoftware\t1\n";
  WriteText(Calibration::CachePath(path_), damaged);
  ASSERT_OK_AND_ASSIGN(Calibration after_damage, Calibration::Load(path_));
  EXPECT_FALSE(after_damage.from_cache);
  EXPECT_EQ(after_damage.ns["sha256"][16]["software"], 20.0);

  // The JSON gone: no calibration, whatever the cache says.
  WriteCalibration("cpu", versions_);
  unlink(path_.c_str());
  EXPECT_EQ(Calibration::Load(path_).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(RouterFastestTest, RoutesBySizeAsCalibrated) {
  WriteCalibration(CpuSignature(), versions_);
  // Both priority orders: the size decides, not the order.
  for (const std::string order : {"failing,software", "software,failing"}) {
    SCOPED_TRACE(order);
    ASSERT_OK_AND_ASSIGN(auto core, MakeCoreWith(Fastest(order)));
    EXPECT_EQ(core->router().policy(), "fastest");
    EXPECT_THAT(NotesOf(*core), HasSubstr("covers 2 algorithms"));
    const AlgorithmInfo& ctr = *FindAlgorithm(ACCELCRYPT_ALG_AES_128_CTR);
    EXPECT_TRUE(core->router().SizeRouted(ctr));
    EXPECT_THAT(core->router().FastestFor(ctr, 16),
                ElementsAre("failing", "software"));
    EXPECT_THAT(core->router().FastestFor(ctr, 16384),
                ElementsAre("software", "failing"));

    EXPECT_EQ(CtrBackend(*core, kSmall), "failing");
    EXPECT_EQ(CtrBackend(*core, kLarge), "software");
    // 100 KB uses the largest bucket; 17 bytes the 64-byte one.
    EXPECT_EQ(CtrBackend(*core, 100000), "software");
    EXPECT_EQ(CtrBackend(*core, 17), "failing");
    EXPECT_EQ(Ops(*core, "failing", "AES-128-CTR"), 2u);
    EXPECT_EQ(Ops(*core, "software", "AES-128-CTR"), 2u);

    // One-shot digests by their size.
    Bytes md(32);
    const uint64_t before = FailingCalls(*core);
    ASSERT_OK(core->router().DigestOneShot(
        ACCELCRYPT_ALG_SHA256, Bytes(kSmall, 1), absl::MakeSpan(md)));
    EXPECT_EQ(FailingCalls(*core), before + 1);
    ASSERT_OK(core->router().DigestOneShot(
        ACCELCRYPT_ALG_SHA256, Bytes(kLarge, 1), absl::MakeSpan(md)));
    EXPECT_EQ(FailingCalls(*core), before + 1);
    EXPECT_EQ(Ops(*core, "failing", "SHA2-256"), 1u);
    EXPECT_EQ(Ops(*core, "software", "SHA2-256"), 1u);
  }
}

TEST_F(RouterFastestTest, UncalibratedAlgorithmKeepsPriorityOrder) {
  WriteCalibration(CpuSignature(), versions_);
  ASSERT_OK_AND_ASSIGN(auto core, MakeCoreWith(Fastest("software,failing")));
  const AlgorithmInfo& cbc = *FindAlgorithm(ACCELCRYPT_ALG_AES_128_CBC);
  EXPECT_FALSE(core->router().SizeRouted(cbc));
  EXPECT_EQ(core->router().PreferredBackend(cbc, 16), "");
  auto cipher = core->router().NewCipher(ACCELCRYPT_ALG_AES_128_CBC);
  ASSERT_OK(cipher.status());
  ASSERT_OK((*cipher)->Init(true, Bytes(16, 1), Bytes(16, 2)));
  Bytes out(16);
  ASSERT_OK((*cipher)->Update(Bytes(16, 3), absl::MakeSpan(out)));
  EXPECT_EQ((*cipher)->backend(), "software");
}

TEST_F(RouterFastestTest, FileFromAnotherCpuIsRefused) {
  WriteCalibration("GenuineNotThis 99/99/9 Imaginary CPU @ 9.99GHz", versions_);
  ASSERT_OK_AND_ASSIGN(auto core, MakeCoreWith(Fastest()));
  EXPECT_EQ(core->router().policy(), "fastest");
  EXPECT_THAT(NotesOf(*core), HasSubstr("another CPU"));
  EXPECT_THAT(NotesOf(*core), HasSubstr("using priority order"));
  const AlgorithmInfo& ctr = *FindAlgorithm(ACCELCRYPT_ALG_AES_128_CTR);
  EXPECT_FALSE(core->router().SizeRouted(ctr));
  // Priority order: failing first at every size.
  EXPECT_EQ(CtrBackend(*core, kLarge), "failing");
  EXPECT_EQ(CtrBackend(*core, kSmall), "failing");
}

TEST_F(RouterFastestTest, FileFromAnotherBackendVersionIsRefused) {
  std::map<std::string, std::string> versions = versions_;
  versions["software"] += "-other-build";
  WriteCalibration(CpuSignature(), versions);
  ASSERT_OK_AND_ASSIGN(auto core, MakeCoreWith(Fastest()));
  EXPECT_THAT(NotesOf(*core), HasSubstr("measured software"));
  EXPECT_THAT(NotesOf(*core), HasSubstr("using priority order"));
  EXPECT_EQ(CtrBackend(*core, kLarge), "failing");
}

TEST_F(RouterFastestTest, MissingFileFallsBackToPriorityWithNote) {
  ASSERT_OK_AND_ASSIGN(auto core, MakeCoreWith(Fastest()));
  EXPECT_THAT(NotesOf(*core), HasSubstr("no calibration file"));
  EXPECT_THAT(NotesOf(*core), HasSubstr("using priority order"));
  EXPECT_EQ(CtrBackend(*core, kLarge), "failing");
  Bytes md(32);
  const uint64_t before = FailingCalls(*core);
  ASSERT_OK(core->router().DigestOneShot(ACCELCRYPT_ALG_SHA256,
                                         Bytes(kLarge, 1), absl::MakeSpan(md)));
  EXPECT_EQ(FailingCalls(*core), before + 1);
}

TEST_F(RouterFastestTest, MalformedFileFallsBackToPriorityWithNote) {
  {
    std::ofstream out(path_);
    out << "{\"format\": 1, \"cpu\": 7}\n";
  }
  ASSERT_OK_AND_ASSIGN(auto core, MakeCoreWith(Fastest()));
  EXPECT_THAT(NotesOf(*core), HasSubstr("malformed"));
  EXPECT_EQ(CtrBackend(*core, kLarge), "failing");
}

TEST_F(RouterFastestTest, PriorityPolicyIgnoresTheFile) {
  WriteCalibration(CpuSignature(), versions_);
  std::map<std::string, std::string> cfg = Fastest();
  cfg["policy"] = "priority";
  ASSERT_OK_AND_ASSIGN(auto core, MakeCoreWith(cfg));
  EXPECT_EQ(core->router().policy(), "priority");
  EXPECT_EQ(CtrBackend(*core, kLarge), "failing");
}

TEST_F(RouterFastestTest, BreakerOpenBackendIsSkipped) {
  WriteCalibration(CpuSignature(), versions_);
  std::map<std::string, std::string> cfg = Fastest("software,failing");
  cfg["failing.mode"] = "always";
  cfg["breaker_threshold"] = "1";
  cfg["breaker_cooldown_ms"] = "600000";
  ASSERT_OK_AND_ASSIGN(auto core, MakeCoreWith(cfg));
  Bytes md(32);
  // The calibrated choice for 16 bytes is failing.so: it fails, the digest
  // falls back to software, and the breaker opens.
  ASSERT_OK(core->router().DigestOneShot(ACCELCRYPT_ALG_SHA256,
                                         Bytes(kSmall, 1), absl::MakeSpan(md)));
  EXPECT_EQ(FailingCalls(*core), 1u);
  EXPECT_EQ(Ops(*core, "software", "SHA2-256"), 1u);
  const AlgorithmInfo& sha = *FindAlgorithm(ACCELCRYPT_ALG_SHA256);
  const AlgorithmInfo& ctr = *FindAlgorithm(ACCELCRYPT_ALG_AES_128_CTR);
  // Preferred skips the open breaker: software for both algorithms.
  ASSERT_NE(core->router().PreferredBackend(sha, kSmall), "");
  EXPECT_EQ(core->router().PreferredBackend(sha, kSmall), "software");
  EXPECT_EQ(core->router().PreferredBackend(ctr, kSmall), "software");
  // Small operations no longer touch failing.so.
  ASSERT_OK(core->router().DigestOneShot(ACCELCRYPT_ALG_SHA256,
                                         Bytes(kSmall, 1), absl::MakeSpan(md)));
  EXPECT_EQ(CtrBackend(*core, kSmall), "software");
  EXPECT_EQ(FailingCalls(*core), 1u);
  EXPECT_EQ(Ops(*core, "software", "SHA2-256"), 2u);
}

// CbcBackend runs one AES-128-CBC encryption or decryption of 64 bytes
// through the router and returns the backend that served it; the output is
// checked against the software backend directly.
std::string CbcBackend(Core& core, bool encrypt) {
  auto cipher = core.router().NewCipher(ACCELCRYPT_ALG_AES_128_CBC);
  if (!cipher.ok()) {
    ADD_FAILURE() << cipher.status();
    return "";
  }
  const Bytes key(16, 0x11), iv(16, 0x22), in(64, 0x33);
  Bytes out(64), want(64);
  EXPECT_OK((*cipher)->Init(encrypt, key, iv));
  EXPECT_OK((*cipher)->Update(in, absl::MakeSpan(out)));
  auto ref =
      core.registry().Find("software")->NewCipher(ACCELCRYPT_ALG_AES_128_CBC);
  EXPECT_OK(ref.status());
  if (ref.ok()) {
    EXPECT_OK((*ref)->Init(encrypt, key, iv));
    EXPECT_OK((*ref)->Update(in, absl::MakeSpan(want)));
    EXPECT_EQ(out, want);
  }
  return std::string((*cipher)->backend());
}

// With no policy configured the router measures: policy = auto reads the
// calibration as fastest does; without one the declared order serves.
TEST_F(RouterFastestTest, AutoIsTheDefaultAndRoutesByTheCalibration) {
  WriteCalibration(CpuSignature(), versions_);
  ASSERT_OK_AND_ASSIGN(auto core,
                       MakeCoreWith({{"calibration_file", path_},
                                     {"backends", "software,failing"}}));
  EXPECT_EQ(core->router().policy(), "auto");
  EXPECT_TRUE(core->router().calibrated());
  EXPECT_THAT(NotesOf(*core), HasSubstr("policy = auto: calibration"));
  EXPECT_EQ(CtrBackend(*core, kSmall), "failing");
  EXPECT_EQ(CtrBackend(*core, kLarge), "software");
  const AlgorithmInfo& ctr = *FindAlgorithm(ACCELCRYPT_ALG_AES_128_CTR);
  EXPECT_EQ(core->router().Chosen(ctr, kSmall).backend, "failing");
  EXPECT_EQ(core->router().Chosen(ctr, kSmall).why, "calibrated");
  EXPECT_EQ(core->router().Chosen(ctr, kLarge, /*decrypt=*/true).backend,
            "software");

  ASSERT_OK_AND_ASSIGN(
      auto plain, MakeCoreWith({{"calibration_file", dir_ + "/absent.json"}}));
  EXPECT_EQ(plain->router().policy(), "auto");
  EXPECT_FALSE(plain->router().calibrated());
  EXPECT_THAT(NotesOf(*plain), HasSubstr("no calibration file"));
  EXPECT_EQ(CtrBackend(*plain, kLarge), "failing");
  // failing.so declares ACCELCRYPT_CAP_HARDWARE and is first.
  EXPECT_EQ(plain->router().Chosen(ctr, kLarge).why, "declared");
}

// Encryption and decryption have their own entries (CBC encryption is
// serial, its decryption is not): each direction goes to its own fastest.
TEST_F(RouterFastestTest, EncryptAndDecryptAreRoutedApart) {
  Calibration cal;
  cal.cpu = CpuSignature();
  cal.backend_versions = versions_;
  for (uint64_t bucket : Calibration::SizeBuckets()) {
    cal.ns["aes-128-cbc/encrypt"][bucket] = {{"failing", 10.0},
                                             {"software", 20.0}};
    cal.ns["aes-128-cbc/decrypt"][bucket] = {{"failing", 20.0},
                                             {"software", 10.0}};
  }
  ASSERT_OK(cal.Save(path_));
  for (const std::string order : {"failing,software", "software,failing"}) {
    SCOPED_TRACE(order);
    ASSERT_OK_AND_ASSIGN(auto core, MakeCoreWith({{"calibration_file", path_},
                                                  {"backends", order}}));
    const AlgorithmInfo& cbc = *FindAlgorithm(ACCELCRYPT_ALG_AES_128_CBC);
    EXPECT_TRUE(core->router().SizeRouted(cbc));
    EXPECT_EQ(CbcBackend(*core, /*encrypt=*/true), "failing");
    EXPECT_EQ(CbcBackend(*core, /*encrypt=*/false), "software");
    EXPECT_EQ(core->router().Chosen(cbc, kSmall, /*decrypt=*/false).backend,
              "failing");
    EXPECT_EQ(core->router().Chosen(cbc, kSmall, /*decrypt=*/true).backend,
              "software");
  }
}

// Backends measured within route_margin_pct (3) of each other everywhere:
// the one earlier in priority order serves every size, and the route is
// not split (nothing is decided per operation). With a margin of 0 the
// measured fastest serves, again for every size.
TEST_F(RouterFastestTest, NearEqualBackendsKeepOneRouteInPriorityOrder) {
  Calibration cal;
  cal.cpu = CpuSignature();
  cal.backend_versions = versions_;
  for (uint64_t bucket : Calibration::SizeBuckets()) {
    for (const char* key :
         {"aes-128-ctr/encrypt", "aes-128-ctr/decrypt", "sha256"}) {
      cal.ns[key][bucket] = {{"failing", 10.0}, {"software", 10.2}};
    }
  }
  ASSERT_OK(cal.Save(path_));
  const AlgorithmInfo& ctr = *FindAlgorithm(ACCELCRYPT_ALG_AES_128_CTR);
  const AlgorithmInfo& sha = *FindAlgorithm(ACCELCRYPT_ALG_SHA256);
  {
    ASSERT_OK_AND_ASSIGN(auto core,
                         MakeCoreWith({{"calibration_file", path_},
                                       {"backends", "software,failing"}}));
    EXPECT_FALSE(core->router().SizeRouted(ctr));
    EXPECT_FALSE(core->router().SizeRouted(sha));
    EXPECT_THAT(core->router().Candidates(ctr.id),
                ElementsAre("software", "failing"));
    EXPECT_EQ(CtrBackend(*core, kSmall), "software");
    EXPECT_EQ(CtrBackend(*core, kLarge), "software");
    EXPECT_EQ(core->router().Chosen(ctr, kSmall).why, "calibrated");
  }
  {
    ASSERT_OK_AND_ASSIGN(auto core,
                         MakeCoreWith({{"calibration_file", path_},
                                       {"backends", "software,failing"},
                                       {"route_margin_pct", "0"}}));
    EXPECT_FALSE(core->router().SizeRouted(ctr));
    EXPECT_THAT(core->router().Candidates(ctr.id),
                ElementsAre("failing", "software"));
    EXPECT_THAT(core->router().Candidates(sha.id),
                ElementsAre("failing", "software"));
    EXPECT_EQ(CtrBackend(*core, kSmall), "failing");
    EXPECT_EQ(CtrBackend(*core, kLarge), "failing");
    Bytes md(32);
    const uint64_t before = FailingCalls(*core);
    ASSERT_OK(core->router().DigestOneShot(
        ACCELCRYPT_ALG_SHA256, Bytes(kSmall, 1), absl::MakeSpan(md)));
    EXPECT_EQ(FailingCalls(*core), before + 1);
  }
}

}  // namespace
}  // namespace accelcrypt
