// SPDX-License-Identifier: Apache-2.0
// Measured routing for RSA/DSA (policy = fastest) with the latency shim in
// front of SoftHSMv2 shaped like the seed's accelerator: RSA as the token
// does it, DSA 20x slower than software. The built `accelcrypt calibrate`
// measures both backends; a mixed RSA+DSA workload then sends each
// signature to the backend the calibration found fastest for it. Routing is
// asserted (last_backend, stats); times are only reported.
#include <stdlib.h>
#include <time.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/backend.h"
#include "core/calibration.h"
#include "core/core.h"
#include "core/pkey.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/backends/pkcs11/softhsm_fixture.h"
#include "tests/support/test_env.h"

#ifndef ACCELCRYPT_LATENCY_SHIM
#error "ACCELCRYPT_LATENCY_SHIM must be defined by the build"
#endif
#ifndef ACCELCRYPT_CLI
#error "ACCELCRYPT_CLI must be defined by the build"
#endif

namespace accelcrypt::testing {
namespace {

uint64_t WallNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull +
         static_cast<uint64_t>(ts.tv_nsec);
}

PkeyParams Sha256Params() {
  PkeyParams p;
  p.padding = ACCELCRYPT_PAD_PKCS1;
  p.md = ACCELCRYPT_ALG_SHA256;
  return p;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(PkeyRoutingTest, CalibratedFastestSendsRsaAndDsaToTheirFastestBackend) {
  auto hsm = SoftHsm::Create();
  if (!hsm.ok()) GTEST_SKIP() << hsm.status().message();
  const std::string dir = (*hsm)->dir();
  const KeyMaterial rsa = RsaKey(2048);
  const KeyMaterial dsa = DsaKeyFromVectors();
  ASSERT_TRUE(rsa.has_private());
  ASSERT_TRUE(dsa.has_private());
  const PkeyParams params = Sha256Params();
  const std::vector<uint8_t> digest = Sha256({'m', 'i', 'x', 'e', 'd'});

  // Size the shim's DSA delay from what software DSA-2048 costs here: 20x.
  uint64_t soft_dsa_ns = 0;
  {
    auto soft = MakeCore({{"backends", "software"}});
    ASSERT_TRUE(soft.ok()) << soft.status();
    auto key = (*soft)
                   ->registry()
                   .Find("software")
                   ->LoadKey(ACCELCRYPT_ALG_DSA_SIGN, dsa);
    ASSERT_TRUE(key.ok()) << key.status();
    std::vector<uint8_t> sig(128);
    ASSERT_TRUE((*key)->Sign(params, digest, absl::MakeSpan(sig)).ok());
    const uint64_t t0 = WallNs();
    for (int i = 0; i < 10; ++i) {
      ASSERT_TRUE((*key)->Sign(params, digest, absl::MakeSpan(sig)).ok());
    }
    soft_dsa_ns = (WallNs() - t0) / 10;
  }
  const long dsa_delay_us =
      std::max<long>(1000, static_cast<long>(20 * soft_dsa_ns / 1000));
  setenv("ACCELCRYPT_SHIM_MODULE", SoftHsm::kModule, 1);
  setenv("ACCELCRYPT_SHIM_DELAY",
         absl::StrFormat("CKM_DSA=%d", dsa_delay_us).c_str(), 1);

  auto overrides = (*hsm)->Overrides();
  overrides["pkcs11.module"] = ACCELCRYPT_LATENCY_SHIM;
  overrides["policy"] = "fastest";
  overrides["calibration_file"] = dir + "/calibration.json";
  const std::string conf = dir + "/accelcrypt.cnf";
  {
    std::ofstream out(conf);
    out << "[accelcrypt]\nbackend_dir = " << BackendDir() << "\n";
    for (const auto& [key, value] : overrides) {
      out << key << " = " << value << "\n";
    }
  }
  const std::string log = dir + "/calibrate.log";
  const std::string cmd = absl::StrFormat(
      "'%s' calibrate --config '%s' --alg rsa,dsa --pkey-sizes 2048 "
      "--seconds-per-cell 0.25 -o '%s' > '%s' 2>&1",
      ACCELCRYPT_CLI, conf, overrides["calibration_file"], log);
  const int rc = std::system(cmd.c_str());
  std::printf("%s", ReadFile(log).c_str());
  ASSERT_EQ(rc, 0) << cmd;

  auto cal = Calibration::Load(overrides["calibration_file"]);
  ASSERT_TRUE(cal.ok()) << cal.status();
  for (const char* family : {"rsa", "dsa"}) {
    const auto& cells = cal->ns[Calibration::OpKey(family, "sign")][2048];
    ASSERT_EQ(cells.count("pkcs11"), 1u) << family;
    ASSERT_EQ(cells.count("software"), 1u) << family;
  }
  const std::string rsa_best = cal->Fastest("rsa/sign", 2048)[0];
  const std::string dsa_best = cal->Fastest("dsa/sign", 2048)[0];
  // The shim makes the token's DSA 20x slower than software: calibration
  // must see it.
  EXPECT_EQ(dsa_best, "software");

  // `accelcrypt list` shows the RSA/DSA routes it will use.
  const std::string list_json = dir + "/list.json";
  ASSERT_EQ(std::system(absl::StrFormat("'%s' list --json --config '%s' > '%s'",
                                        ACCELCRYPT_CLI, conf, list_json)
                            .c_str()),
            0);
  const nlohmann::json listed =
      nlohmann::json::parse(ReadFile(list_json), nullptr, false);
  ASSERT_FALSE(listed.is_discarded());
  ASSERT_TRUE(listed.contains("routing") &&
              listed["routing"].contains("fastest_pkey"))
      << listed.dump();
  const nlohmann::json& pkey = listed["routing"]["fastest_pkey"];
  EXPECT_EQ(pkey.value("/rsa/2048/0"_json_pointer, ""), rsa_best) << pkey;
  EXPECT_EQ(pkey.value("/dsa/2048/0"_json_pointer, ""), dsa_best) << pkey;

  auto core = MakeCore(overrides);
  ASSERT_TRUE(core.ok()) << core.status();
  ASSERT_NE((*core)->registry().Find("pkcs11"), nullptr);
  ASSERT_EQ((*core)->router().policy(), "fastest");
  auto rsa_ops = (*core)->router().NewPublicKeyOps(rsa);
  auto dsa_ops = (*core)->router().NewPublicKeyOps(dsa);
  ASSERT_TRUE(rsa_ops.ok()) << rsa_ops.status();
  ASSERT_TRUE(dsa_ops.ok()) << dsa_ops.status();
  const Backend* software = (*core)->registry().Find("software");
  auto rsa_verify = software->LoadKey(ACCELCRYPT_ALG_RSA_SIGN, PublicOnly(rsa));
  auto dsa_verify = software->LoadKey(ACCELCRYPT_ALG_DSA_SIGN, PublicOnly(dsa));
  ASSERT_TRUE(rsa_verify.ok() && dsa_verify.ok());

  constexpr int kRounds = 20;
  std::map<std::string, int> rsa_by, dsa_by;
  const uint64_t t0 = WallNs();
  for (int i = 0; i < kRounds; ++i) {
    std::vector<uint8_t> sig(256);
    auto len = (*rsa_ops)->Sign(params, digest, absl::MakeSpan(sig));
    ASSERT_TRUE(len.ok()) << len.status();
    sig.resize(*len);
    EXPECT_TRUE((*rsa_verify)->Verify(params, digest, sig).ok());
    ++rsa_by[std::string((*rsa_ops)->last_backend())];
    sig.assign(128, 0);
    len = (*dsa_ops)->Sign(params, digest, absl::MakeSpan(sig));
    ASSERT_TRUE(len.ok()) << len.status();
    sig.resize(*len);
    EXPECT_TRUE((*dsa_verify)->Verify(params, digest, sig).ok());
    ++dsa_by[std::string((*dsa_ops)->last_backend())];
  }
  const uint64_t mixed_wall_ns = WallNs() - t0;
  EXPECT_EQ(rsa_by[rsa_best], kRounds) << "RSA not all on " << rsa_best;
  EXPECT_EQ(dsa_by[dsa_best], kRounds) << "DSA not all on " << dsa_best;
  Stats& stats = (*core)->stats();
  auto ops = [&](const char* backend, accelcrypt_alg alg) {
    return stats.Cell(stats.RegisterBackend(backend), *FindAlgorithm(alg))
        .ops.load();
  };
  EXPECT_EQ(ops(rsa_best.c_str(), ACCELCRYPT_ALG_RSA_SIGN),
            static_cast<uint64_t>(kRounds));
  EXPECT_EQ(ops(dsa_best.c_str(), ACCELCRYPT_ALG_DSA_SIGN),
            static_cast<uint64_t>(kRounds));

  // Throughput, from the calibration's costs: each op on the backend it
  // went to, against the best single backend for the whole workload. Each
  // op went to its cheapest backend (asserted above), so the ratio is >= 1
  // by construction; it is reported, and the wall time only printed.
  auto cost = [&](const char* family, const std::string& backend) {
    return cal->ns[Calibration::OpKey(family, "sign")][2048][backend];
  };
  const double mixed =
      kRounds * (cost("rsa", rsa_best) + cost("dsa", dsa_best));
  double best_single = 0;
  std::string best_single_name;
  for (const char* b : {"pkcs11", "software"}) {
    const double total = kRounds * (cost("rsa", b) + cost("dsa", b));
    if (best_single_name.empty() || total < best_single) {
      best_single = total;
      best_single_name = b;
    }
  }
  std::printf(
      "calibrated ns/sign 2048: rsa pkcs11 %.0f software %.0f; dsa pkcs11 "
      "%.0f software %.0f (shim CKM_DSA delay %ld us)\n"
      "mixed run: %d RSA on %s, %d DSA on %s; throughput vs best single "
      "backend (%s) %.2fx by calibration; wall %.1f ms (with "
      "verification) vs %.1f ms calibrated signing (not asserted)\n",
      cost("rsa", "pkcs11"), cost("rsa", "software"), cost("dsa", "pkcs11"),
      cost("dsa", "software"), dsa_delay_us, kRounds, rsa_best.c_str(), kRounds,
      dsa_best.c_str(), best_single_name.c_str(), best_single / mixed,
      mixed_wall_ns / 1e6, mixed / 1e6);
  EXPECT_GE(best_single / mixed, 0.95);
}

// With SoftHSMv2 behind the shim the token's RSA costs more than software
// (it signs on this CPU, plus PKCS#11), so the test above routes RSA to
// software. The token-wins shape comes from a calibration file written here:
// RSA-2048 to pkcs11, DSA to software, other sizes by the nearest bucket
// >= the key's bits (else the largest), regardless of the configured order.
TEST(PkeyRoutingTest, CalibrationOrdersBackendsPerKeySizeBucket) {
  auto hsm = SoftHsm::Create();
  if (!hsm.ok()) GTEST_SKIP() << hsm.status().message();
  auto overrides = (*hsm)->Overrides();
  overrides["backends"] = "software, pkcs11";  // priority: software first
  overrides["policy"] = "fastest";
  overrides["calibration_file"] = (*hsm)->dir() + "/calibration.json";
  Calibration cal;
  cal.cpu = CpuSignature();
  {
    auto core = MakeCore(overrides);
    ASSERT_TRUE(core.ok()) << core.status();
    ASSERT_NE((*core)->registry().Find("pkcs11"), nullptr);
    for (const auto& b : (*core)->registry().backends()) {
      cal.backend_versions[std::string(b->name())] = std::string(b->version());
    }
  }
  cal.ns["rsa"][2048] = {{"pkcs11", 100000}, {"software", 300000}};
  cal.ns["rsa"][4096] = {{"pkcs11", 9000000}, {"software", 3000000}};
  cal.ns["dsa"][2048] = {{"pkcs11", 8000000}, {"software", 400000}};
  ASSERT_TRUE(cal.Save(overrides["calibration_file"]).ok());
  auto core = MakeCore(overrides);
  ASSERT_TRUE(core.ok()) << core.status();
  const PkeyParams params = Sha256Params();
  const std::vector<uint8_t> digest = Sha256({'b', 'u', 'c', 'k', 'e', 't'});
  struct Case {
    KeyMaterial key;
    const char* want;
  } cases[] = {{RsaKey(2048), "pkcs11"},
               {RsaKey(3072), "software"},  // bucket 4096
               {DsaKeyFromVectors(), "software"}};
  for (const Case& c : cases) {
    auto ops = (*core)->router().NewPublicKeyOps(c.key);
    ASSERT_TRUE(ops.ok()) << ops.status();
    std::vector<uint8_t> sig(512);
    ASSERT_TRUE((*ops)->Sign(params, digest, absl::MakeSpan(sig)).ok());
    EXPECT_EQ((*ops)->last_backend(), c.want) << c.key.bits();
  }
  // Without the calibration file the configured order (software first)
  // decides again.
  overrides["calibration_file"] = (*hsm)->dir() + "/absent.json";
  auto plain = MakeCore(overrides);
  ASSERT_TRUE(plain.ok()) << plain.status();
  auto ops = (*plain)->router().NewPublicKeyOps(RsaKey(2048));
  ASSERT_TRUE(ops.ok());
  std::vector<uint8_t> sig(256);
  ASSERT_TRUE((*ops)->Sign(params, digest, absl::MakeSpan(sig)).ok());
  EXPECT_EQ((*ops)->last_backend(), "software");
}

// policy = auto (the default) with a token first in the configured order:
// signing goes to the token as declared, verification stays on the CPU
// (nothing secret, and SoftHSMv2 verifies slower than libcrypto) until a
// calibration measures the token faster at verifying; policy = priority
// keeps the configured order for both.
TEST(PkeyRoutingTest, AutoVerifiesOnTheCpuUnlessCalibratedOtherwise) {
  auto hsm = SoftHsm::Create();
  if (!hsm.ok()) GTEST_SKIP() << hsm.status().message();
  auto overrides = (*hsm)->Overrides();  // backends = pkcs11, software
  overrides["policy"] = "auto";
  overrides["calibration_file"] = (*hsm)->dir() + "/calibration.json";
  const PkeyParams params = Sha256Params();
  const std::vector<uint8_t> digest = Sha256({'a', 'u', 't', 'o'});
  const KeyMaterial key = RsaKey(2048);
  // Signs then verifies with a fresh core; returns the two backends.
  auto run = [&](const std::map<std::string, std::string>& o) {
    std::pair<std::string, std::string> served;
    auto core = MakeCore(o);
    EXPECT_TRUE(core.ok()) << core.status();
    if (!core.ok()) return served;
    auto ops = (*core)->router().NewPublicKeyOps(key);
    EXPECT_TRUE(ops.ok()) << ops.status();
    if (!ops.ok()) return served;
    std::vector<uint8_t> sig(256);
    auto len = (*ops)->Sign(params, digest, absl::MakeSpan(sig));
    EXPECT_TRUE(len.ok()) << len.status();
    if (!len.ok()) return served;
    served.first = (*ops)->last_backend();
    EXPECT_TRUE(
        (*ops)
            ->Verify(params, digest, absl::MakeConstSpan(sig).first(*len))
            .ok());
    served.second = (*ops)->last_backend();
    return served;
  };
  // No calibration file.
  EXPECT_EQ(run(overrides),
            std::make_pair(std::string("pkcs11"), std::string("software")));
  auto priority = overrides;
  priority["policy"] = "priority";
  EXPECT_EQ(run(priority),
            std::make_pair(std::string("pkcs11"), std::string("pkcs11")));
  // A calibration measuring the token faster at both.
  Calibration cal;
  cal.cpu = CpuSignature();
  {
    auto core = MakeCore(overrides);
    ASSERT_TRUE(core.ok()) << core.status();
    for (const auto& b : (*core)->registry().backends()) {
      cal.backend_versions[std::string(b->name())] = std::string(b->version());
    }
  }
  cal.ns["rsa/sign"][2048] = {{"pkcs11", 100000}, {"software", 300000}};
  cal.ns["rsa/verify"][2048] = {{"pkcs11", 1000}, {"software", 20000}};
  ASSERT_TRUE(cal.Save(overrides["calibration_file"]).ok());
  EXPECT_EQ(run(overrides),
            std::make_pair(std::string("pkcs11"), std::string("pkcs11")));
  // And one measuring the CPU faster at verifying, the token at signing.
  cal.ns["rsa/verify"][2048] = {{"pkcs11", 90000}, {"software", 20000}};
  ASSERT_TRUE(cal.Save(overrides["calibration_file"]).ok());
  EXPECT_EQ(run(overrides),
            std::make_pair(std::string("pkcs11"), std::string("software")));
}

// Ties and unmeasured backends (issue 30): a token measured within the tie
// band (5 %) of the CPU does not take verification from it (it did for
// DSA-2048 at 1.00x), and does not lose signing, which it holds as
// declared; a calibration that did not measure the token leaves it its
// declared place (signing) rather than moving work to the only backend it
// measured.
TEST(PkeyRoutingTest, TiesAndUnmeasuredBackendsKeepTheDeclaredRoute) {
  auto hsm = SoftHsm::Create();
  if (!hsm.ok()) GTEST_SKIP() << hsm.status().message();
  auto overrides = (*hsm)->Overrides();  // backends = pkcs11, software
  overrides["policy"] = "auto";
  overrides["calibration_file"] = (*hsm)->dir() + "/calibration.json";
  Calibration cal;
  cal.cpu = CpuSignature();
  {
    auto core = MakeCore(overrides);
    ASSERT_TRUE(core.ok()) << core.status();
    ASSERT_NE((*core)->registry().Find("pkcs11"), nullptr);
    for (const auto& b : (*core)->registry().backends()) {
      cal.backend_versions[std::string(b->name())] = std::string(b->version());
    }
  }
  const AlgorithmInfo& rsa = *FindAlgorithm(ACCELCRYPT_ALG_RSA_SIGN);
  const AlgorithmInfo& dsa = *FindAlgorithm(ACCELCRYPT_ALG_DSA_SIGN);
  auto chosen = [&](const AlgorithmInfo& alg, bool public_op) {
    auto core = MakeCore(overrides);
    EXPECT_TRUE(core.ok()) << core.status();
    if (!core.ok()) return Router::RouteChoice();
    return (*core)->router().PkeyChosen(alg, 2048, public_op);
  };
  // The token 1-3 % faster: a tie.
  cal.ns["rsa/sign"][2048] = {{"pkcs11", 295000}, {"software", 300000}};
  cal.ns["rsa/verify"][2048] = {{"pkcs11", 19800}, {"software", 20000}};
  cal.ns["dsa/sign"][2048] = {{"pkcs11", 400000}, {"software", 396000}};
  cal.ns["dsa/verify"][2048] = {{"pkcs11", 450000}, {"software", 450500}};
  ASSERT_TRUE(cal.Save(overrides["calibration_file"]).ok());
  EXPECT_EQ(chosen(rsa, false).backend, "pkcs11");  // declared
  EXPECT_EQ(chosen(rsa, true).backend, "software");
  EXPECT_EQ(chosen(rsa, true).why, "calibrated");
  EXPECT_EQ(chosen(dsa, false).backend, "pkcs11");
  EXPECT_EQ(chosen(dsa, true).backend, "software");
  // A real verification follows.
  {
    auto core = MakeCore(overrides);
    ASSERT_TRUE(core.ok()) << core.status();
    auto ops = (*core)->router().NewPublicKeyOps(RsaKey(2048));
    ASSERT_TRUE(ops.ok()) << ops.status();
    const PkeyParams params = Sha256Params();
    const std::vector<uint8_t> digest = Sha256({'t', 'i', 'e'});
    std::vector<uint8_t> sig(256);
    auto len = (*ops)->Sign(params, digest, absl::MakeSpan(sig));
    ASSERT_TRUE(len.ok()) << len.status();
    EXPECT_EQ((*ops)->last_backend(), "pkcs11");
    ASSERT_TRUE(
        (*ops)
            ->Verify(params, digest, absl::MakeConstSpan(sig).first(*len))
            .ok());
    EXPECT_EQ((*ops)->last_backend(), "software");
  }
  // Beyond the band the faster one wins either way.
  cal.ns["rsa/sign"][2048] = {{"pkcs11", 400000}, {"software", 300000}};
  cal.ns["rsa/verify"][2048] = {{"pkcs11", 10000}, {"software", 20000}};
  ASSERT_TRUE(cal.Save(overrides["calibration_file"]).ok());
  EXPECT_EQ(chosen(rsa, false).backend, "software");
  EXPECT_EQ(chosen(rsa, true).backend, "pkcs11");
  // Not measuring the token: signing keeps it, as declared.
  cal.backend_versions.erase("pkcs11");
  for (const char* key : {"rsa/sign", "rsa/verify", "dsa/sign", "dsa/verify"}) {
    cal.ns[key][2048].erase("pkcs11");
  }
  ASSERT_TRUE(cal.Save(overrides["calibration_file"]).ok());
  EXPECT_EQ(chosen(rsa, false).backend, "pkcs11");
  EXPECT_EQ(chosen(rsa, false).why, "declared");
  EXPECT_EQ(chosen(rsa, true).backend, "software");
  EXPECT_EQ(chosen(dsa, false).backend, "pkcs11");
}

// With a token backend loaded the provider offers RSA and DSA to OpenSSL
// (Router::Interposes): the token holds keys by URI and is routed for
// imported ones, so the provider's key objects must reach it. Routed
// behind the software backend (`route.rsa = software, pkcs11`) it still
// does; without it only the pass-through software backend serves RSA, and
// OpenSSL's default provider does that itself.
TEST(PkeyRoutingTest, ATokenBackendMakesTheProviderOfferRsaAndDsa) {
  auto hsm = SoftHsm::Create();
  if (!hsm.ok()) GTEST_SKIP() << hsm.status().message();
  auto overrides = (*hsm)->Overrides();  // backends = pkcs11, software
  for (const char* route : {"", "software, pkcs11"}) {
    if (*route != '\0') overrides["route.rsa"] = route;
    auto core = MakeCore(overrides);
    ASSERT_TRUE(core.ok()) << core.status();
    for (accelcrypt_alg alg :
         {ACCELCRYPT_ALG_RSA_SIGN, ACCELCRYPT_ALG_RSA_CRYPT,
          ACCELCRYPT_ALG_DSA_SIGN}) {
      const Router::Interposition d = (*core)->router().Interposes(alg);
      EXPECT_TRUE(d.offered) << FindAlgorithm(alg)->name << ": " << d.why;
      EXPECT_EQ(d.backend, "pkcs11") << FindAlgorithm(alg)->name;
    }
  }
  overrides["backends"] = "software";
  overrides.erase("route.rsa");
  auto soft = MakeCore(overrides);
  ASSERT_TRUE(soft.ok()) << soft.status();
  EXPECT_FALSE((*soft)->router().Interposes(ACCELCRYPT_ALG_RSA_SIGN).offered);
}

}  // namespace
}  // namespace accelcrypt::testing
