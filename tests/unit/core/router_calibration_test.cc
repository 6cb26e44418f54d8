// SPDX-License-Identifier: Apache-2.0
// How a calibration merges with the declared routes (issue 30: a
// calibration made with fewer backends loaded switched AES off the x86
// backend in every process). A calibration reorders only the backends it
// measured, among the places they hold in the declared route; a backend it
// did not measure keeps its place; an algorithm the file marks "declared"
// (slower through the provider) keeps the declared route; `list` learns
// whether the file is current, partial or stale. Backends: the test-only
// failing.so in mode none (a pass-through to the software tables that
// declares itself hardware: the stand-in for x86) and software. Which
// backend served is read from Cipher::backend(); nothing here depends on
// timing.
#include <stdlib.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/calibration.h"
#include "core/core.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_env.h"

namespace accelcrypt {
namespace {

using ::accelcrypt::testing::BuildTreeConfig;
using ::accelcrypt::testing::TestBackendDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Bytes = std::vector<uint8_t>;

class RouterCalibrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* var : {"ACCELCRYPT_FAILING_MODE", "ACCELCRYPT_CALIBRATION",
                            "ACCELCRYPT_FAILING_FAIL_INIT"}) {
      unsetenv(var);
    }
    std::string templ = ::testing::TempDir() + "/router-calibration-XXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
    path_ = dir_ + "/calibration.json";
    ASSERT_OK_AND_ASSIGN(auto core, Make("failing,software"));
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

  absl::StatusOr<std::unique_ptr<Core>> Make(const std::string& backends) {
    return Core::Create(BuildTreeConfig({{"backend_dir", TestBackendDir()},
                                         {"backends", backends},
                                         {"selftest", "0"},
                                         {"calibration_file", path_}}));
  }

  // Save writes a calibration of this CPU that measured only `measured`
  // (name -> ns at every size and direction) for AES-128-GCM, AES-128-CTR
  // and SHA-256, as `accelcrypt calibrate` does with only those backends
  // loaded.
  void Save(const std::map<std::string, double>& measured,
            const std::vector<std::string>& declared = {}) {
    Calibration cal;
    cal.cpu = CpuSignature();
    for (const auto& [name, ns] : measured) {
      cal.backend_versions[name] = versions_[name];
    }
    for (const char* key :
         {"aes-128-gcm/encrypt", "aes-128-gcm/decrypt", "aes-128-ctr/encrypt",
          "aes-128-ctr/decrypt", "sha256"}) {
      for (uint64_t bucket : Calibration::SizeBuckets()) {
        for (const auto& [name, ns] : measured) cal.ns[key][bucket][name] = ns;
      }
    }
    cal.declared.insert(declared.begin(), declared.end());
    ASSERT_OK(cal.Save(path_));
  }

  std::string dir_, path_;
  std::map<std::string, std::string> versions_;
};

const AlgorithmInfo& Gcm() {
  return *FindAlgorithm(ACCELCRYPT_ALG_AES_128_GCM);
}
const AlgorithmInfo& Ctr() {
  return *FindAlgorithm(ACCELCRYPT_ALG_AES_128_CTR);
}

// Served runs one AES-128-GCM (or CTR) encryption of `size` bytes through
// the router and returns the backend that served it.
std::string Served(Core& core, accelcrypt_alg alg, size_t size) {
  auto cipher = core.router().NewCipher(alg);
  if (!cipher.ok()) {
    ADD_FAILURE() << cipher.status();
    return "";
  }
  const Bytes key(16, 0x42), iv(alg == ACCELCRYPT_ALG_AES_128_GCM ? 12 : 16, 1);
  Bytes in(size, 0x5a), out(size);
  EXPECT_OK((*cipher)->Init(true, key, iv));
  EXPECT_OK((*cipher)->Update(in, absl::MakeSpan(out)));
  return std::string((*cipher)->backend());
}

// Every cell of `alg` (both directions, every size) goes to `backend` for
// `why`.
void ExpectEveryCell(const Router& router, const AlgorithmInfo& alg,
                     const std::string& backend, const std::string& why) {
  for (bool decrypt : {false, true}) {
    for (uint64_t bucket : Calibration::SizeBuckets()) {
      const Router::RouteChoice c = router.Chosen(alg, bucket, decrypt);
      EXPECT_EQ(c.backend, backend) << alg.name << " " << bucket;
      EXPECT_EQ(c.why, why) << alg.name << " " << bucket;
    }
  }
}

// The case: `calibrate --config` with a configuration that does not
// load x86 (here failing.so) measured software alone. A process that loads
// both keeps the hardware backend first for AES, at every size.
TEST_F(RouterCalibrationTest, UnmeasuredBackendKeepsItsDeclaredPlace) {
  Save({{"software", 10.0}});
  ASSERT_OK_AND_ASSIGN(auto core, Make("failing,software"));
  Router& router = core->router();
  EXPECT_TRUE(router.calibrated());
  EXPECT_THAT(router.Candidates(Gcm().id), ElementsAre("failing", "software"));
  EXPECT_THAT(router.Candidates(Ctr().id), ElementsAre("failing", "software"));
  EXPECT_FALSE(router.SizeRouted(Gcm()));
  ExpectEveryCell(router, Gcm(), "failing", "declared");
  ExpectEveryCell(router, Ctr(), "failing", "declared");
  EXPECT_EQ(Served(*core, ACCELCRYPT_ALG_AES_128_GCM, 16384), "failing");
  EXPECT_EQ(Served(*core, ACCELCRYPT_ALG_AES_128_GCM, 16), "failing");
  EXPECT_EQ(Served(*core, ACCELCRYPT_ALG_AES_128_CTR, 16), "failing");
  // `list` says the file is partial and what it did not measure.
  const Router::CalibrationStatus& status = router.calibration_status();
  EXPECT_EQ(status.state, "partial");
  EXPECT_EQ(status.path, path_);
  EXPECT_THAT(status.unmeasured, ElementsAre("failing"));
  std::string notes;
  for (const std::string& n : router.notes()) notes += n + "\n";
  EXPECT_THAT(notes, HasSubstr("is partial: it did not measure failing"));
}

// A backend measured fast does not jump ahead of a declared one it was not
// measured against (the calibration knows nothing about their order).
TEST_F(RouterCalibrationTest, MeasuredBackendDoesNotPassAnUnmeasuredOne) {
  Save({{"failing", 1.0}});
  ASSERT_OK_AND_ASSIGN(auto core, Make("software,failing"));
  Router& router = core->router();
  EXPECT_THAT(router.Candidates(Ctr().id), ElementsAre("software", "failing"));
  ExpectEveryCell(router, Ctr(), "software", "priority");
  EXPECT_EQ(Served(*core, ACCELCRYPT_ALG_AES_128_CTR, 16), "software");
  EXPECT_EQ(router.calibration_status().state, "partial");
  EXPECT_THAT(router.calibration_status().unmeasured, ElementsAre("software"));
}

// Both measured: the calibration decides, and the file is current.
TEST_F(RouterCalibrationTest, MeasuredBackendsAreReordered) {
  Save({{"failing", 20.0}, {"software", 10.0}});
  ASSERT_OK_AND_ASSIGN(auto core, Make("failing,software"));
  Router& router = core->router();
  EXPECT_THAT(router.Candidates(Gcm().id), ElementsAre("software", "failing"));
  ExpectEveryCell(router, Gcm(), "software", "calibrated");
  EXPECT_EQ(Served(*core, ACCELCRYPT_ALG_AES_128_GCM, 16), "software");
  EXPECT_EQ(router.calibration_status().state, "current");
  EXPECT_TRUE(router.calibration_status().unmeasured.empty());
}

// An algorithm the file marks declared (`calibrate` timed its measured
// route slower through the provider) keeps the declared route; the others
// follow the measurements. The load cache carries the mark.
TEST_F(RouterCalibrationTest, DeclaredAlgorithmKeepsTheDeclaredRoute) {
  Save({{"failing", 20.0}, {"software", 10.0}}, {"aes-128-ctr"});
  for (int load = 0; load < 2; ++load) {
    SCOPED_TRACE(load == 0 ? "load cache" : "JSON");
    ASSERT_OK_AND_ASSIGN(Calibration loaded, Calibration::Load(path_));
    EXPECT_EQ(loaded.from_cache, load == 0);
    EXPECT_THAT(loaded.declared, ElementsAre("aes-128-ctr"));
    ASSERT_OK_AND_ASSIGN(auto core, Make("failing,software"));
    Router& router = core->router();
    ExpectEveryCell(router, Ctr(), "failing", "declared");
    ExpectEveryCell(router, Gcm(), "software", "calibrated");
    EXPECT_EQ(Served(*core, ACCELCRYPT_ALG_AES_128_CTR, 16), "failing");
    EXPECT_THAT(router.calibration_status().declared,
                ElementsAre("AES-128-CTR"));
    unlink(Calibration::CachePath(path_).c_str());
  }
}

// Stale: another version of a loaded backend; nothing measured is used.
TEST_F(RouterCalibrationTest, StaleFileIsSaidSo) {
  versions_["failing"] += "-older";
  Save({{"failing", 20.0}, {"software", 10.0}});
  ASSERT_OK_AND_ASSIGN(auto core, Make("failing,software"));
  EXPECT_FALSE(core->router().calibrated());
  EXPECT_EQ(core->router().calibration_status().state, "stale");
  EXPECT_THAT(core->router().calibration_status().why, HasSubstr("-older and"));
  ExpectEveryCell(core->router(), Gcm(), "failing", "declared");
}

}  // namespace
}  // namespace accelcrypt
