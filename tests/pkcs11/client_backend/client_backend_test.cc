// SPDX-License-Identifier: Apache-2.0
// What only accelcrypt's own PKCS#11 module has, beyond the client
// backend's scenarios that p11_client_backend_test runs against it from
// tests/backends/pkcs11/pkcs11_client_*_test.cc (built into the same binary
// with AccelcryptToken as the TokenFixture): the module's own core, which must
// not route back into the module.
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/backend.h"
#include "core/core.h"
#include "core/pkey.h"
#include "core/stats.h"
#include "core/status.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/backends/pkcs11/softhsm_fixture.h"
#include "tests/pkcs11/client_backend/accelcrypt_token.h"
#include "tests/support/test_env.h"

namespace accelcrypt::testing {
namespace {

// ModuleStatsOfThisProcess maps the name of each stats file this process
// wrote in `dir` to its parsed content.
std::map<std::string, nlohmann::json> ModuleStatsOfThisProcess(
    const std::string& dir) {
  std::map<std::string, nlohmann::json> out;
  const std::string prefix = absl::StrFormat("accelcrypt-%d-", getpid());
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || entry.path().extension() != ".json") {
      continue;
    }
    std::ifstream in(entry.path());
    out[name] = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  }
  return out;
}

// LoadEvents lists why each backend of `core` loaded or not.
std::string LoadEvents(Core& core) {
  std::string out;
  for (const LoadEvent& e : core.registry().events()) {
    out += e.backend + ": " + e.message + "\n";
  }
  return out;
}

// The module's own core: its configuration (AccelcryptToken) asks for a
// PKCS#11 client backend on this very module ahead of x86 and software. The
// no-recursion rule must drop it, so the private-key operations the client
// backend sends to the module are served by the module's core with x86 or
// software, never by a route back into the module (which would recurse or
// deadlock). The module's core writes its counters to the fixture's stats
// directory when its instance ends: at C_Finalize by the client backend once
// the last core of this process that uses it is gone.
TEST(P11ModuleCoreTest, ModuleCoreServesWithoutRoutingBackIntoItself) {
  // The module is a build dependency of this test: no token is a failure.
  auto token = AccelcryptToken::Create();
  ASSERT_TRUE(token.ok()) << "accelcrypt-pkcs11 token: " << token.status();
  const AccelcryptToken& tok = **token;
  const auto before = ModuleStatsOfThisProcess(tok.StatsDir());
  constexpr uint64_t kSigns = 5;
  {
    // The module logs why it dropped its client backend (log level 1, read
    // from the environment at C_Initialize): capture stderr while the
    // client backend initialises the module.
    const std::string log_path = tok.dir() + "/module-init.log";
    setenv("ACCELCRYPT_LOG_LEVEL", "1", 1);
    std::fflush(stderr);
    const int saved_stderr = dup(STDERR_FILENO);
    const int log_fd =
        open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT_GE(log_fd, 0);
    dup2(log_fd, STDERR_FILENO);
    close(log_fd);
    auto core = MakeCore(tok.Overrides());
    std::fflush(stderr);
    dup2(saved_stderr, STDERR_FILENO);
    close(saved_stderr);
    unsetenv("ACCELCRYPT_LOG_LEVEL");
    ASSERT_TRUE(core.ok()) << core.status();
    ASSERT_NE((*core)->registry().Find("pkcs11"), nullptr)
        << LoadEvents(**core);
    std::ifstream log_in(log_path);
    const std::string log((std::istreambuf_iterator<char>(log_in)),
                          std::istreambuf_iterator<char>());
    EXPECT_NE(log.find("is this PKCS#11 module itself: PKCS#11 client "
                       "backend disabled"),
              std::string::npos)
        << "module log:\n"
        << log;
    const KeyMaterial rsa = RsaKey(2048), dsa = DsaKeyFromVectors();
    PkeyParams rsa_params;
    rsa_params.padding = ACCELCRYPT_PAD_PKCS1;
    rsa_params.md = ACCELCRYPT_ALG_SHA256;
    PkeyParams dsa_params;
    dsa_params.md = ACCELCRYPT_ALG_SHA256;
    const std::string text = "no recursion";
    const std::vector<uint8_t> digest =
        Sha256(std::vector<uint8_t>(text.begin(), text.end()));
    for (const KeyMaterial* key : {&rsa, &dsa}) {
      auto ops = (*core)->router().NewPublicKeyOps(*key);
      ASSERT_TRUE(ops.ok()) << ops.status();
      const PkeyParams params = key == &rsa ? rsa_params : dsa_params;
      for (uint64_t i = 0; i < kSigns; ++i) {
        std::vector<uint8_t> sig((*ops)->SignatureSize());
        auto len = (*ops)->Sign(params, digest, absl::MakeSpan(sig));
        ASSERT_TRUE(len.ok()) << len.status();
        ASSERT_EQ((*ops)->last_backend(), "pkcs11");
        sig.resize(*len);
        EXPECT_TRUE((*ops)->Verify(params, digest, sig).ok());
      }
    }
    Stats& stats = (*core)->stats();
    EXPECT_EQ(stats
                  .Cell(stats.RegisterBackend("pkcs11"),
                        *FindAlgorithm(ACCELCRYPT_ALG_RSA_SIGN))
                  .ops.load(),
              2 * kSigns);  // each Sign and each Verify on the token
  }  // last core: the client backend calls C_Finalize, the module's core ends
  const auto after = ModuleStatsOfThisProcess(tok.StatsDir());
  std::vector<const nlohmann::json*> fresh;
  for (const auto& [name, doc] : after) {
    if (before.count(name) == 0) fresh.push_back(&doc);
  }
  ASSERT_EQ(fresh.size(), 1u)
      << "want one stats file from the module instance C_Finalize ended, in "
      << tok.StatsDir();
  const nlohmann::json& doc = *fresh[0];
  ASSERT_TRUE(doc.is_object() && doc.contains("backends")) << doc.dump();
  // The client backend, requested first in the module's configuration, does
  // not exist in its core at all.
  EXPECT_FALSE(doc["backends"].contains("pkcs11")) << doc.dump();
  uint64_t rsa_ops = 0, dsa_ops = 0;
  for (const auto& [backend, algs] : doc["backends"].items()) {
    EXPECT_TRUE(backend == "x86" || backend == "software") << backend;
    if (algs.contains("RSA-SIGN")) {
      rsa_ops += algs["RSA-SIGN"]["ops"].get<uint64_t>();
    }
    if (algs.contains("DSA")) dsa_ops += algs["DSA"]["ops"].get<uint64_t>();
  }
  // kSigns signatures and verifications each (plus the client backend's
  // registration self-tests), all done by the module's core on the CPU
  // backends.
  EXPECT_GE(rsa_ops, 2 * kSigns) << doc.dump();
  EXPECT_GE(dsa_ops, 2 * kSigns) << doc.dump();
}

// The client backend refuses p11-kit's forwarders only where its core runs
// inside a PKCS#11 module (there they may lead back into the module;
// ModuleTest.ClientBackendPointingHereIsDisabled): a core in a program, as
// the provider's, may reach its token through one. A link named like
// p11-kit's proxy that leads to SoftHSMv2 loads here.
TEST(P11ModuleCoreTest, ForwarderNamesAreRefusedOnlyInsideAPkcs11Module) {
  auto hsm = SoftHsm::Create();
  ASSERT_TRUE(hsm.ok()) << hsm.status();
  const std::string link = (*hsm)->dir() + "/p11-kit-proxy.so";
  std::error_code ec;
  std::filesystem::create_symlink(SoftHsm::kModule, link, ec);
  ASSERT_FALSE(ec) << link << ": " << ec.message();
  std::map<std::string, std::string> overrides = (*hsm)->Overrides();
  overrides["pkcs11.module"] = link;
  auto core = MakeCore(overrides);
  ASSERT_TRUE(core.ok()) << core.status();
  EXPECT_NE((*core)->registry().Find("pkcs11"), nullptr) << LoadEvents(**core);
}

}  // namespace
}  // namespace accelcrypt::testing
