// SPDX-License-Identifier: Apache-2.0
// The PKCS#11 client backend loading and routing: what it declares from the
// token's mechanism list, self-tests at first use, bad configurations,
// per-size routes and the offload threshold.
// Fixture and helpers: pkcs11_client_fixture.h.

#include <map>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/core.h"
#include "core/pkey.h"
#include "gtest/gtest.h"
#include "tests/backends/pkcs11/pkcs11_client_fixture.h"
#include "tests/backends/pkcs11/softhsm_fixture.h"
#include "tests/backends/pkcs11/token_fixture.h"
#include "tests/support/test_env.h"

namespace accelcrypt::testing {
namespace {

TEST_F(Pkcs11ClientTest, DeclaresRsaAndDsaFromTheMechanismList) {
  const accelcrypt_capability* sign =
      pkcs11_->Capability(ACCELCRYPT_ALG_RSA_SIGN);
  ASSERT_NE(sign, nullptr);
  EXPECT_TRUE(sign->flags & ACCELCRYPT_CAP_RSA_PKCS1);
  EXPECT_TRUE(sign->flags & ACCELCRYPT_CAP_RSA_PSS);
  EXPECT_TRUE(sign->flags & ACCELCRYPT_CAP_KEY_IMPORT);
  EXPECT_GE(sign->min_key_bits, 1024u);
  EXPECT_GE(sign->max_key_bits, 4096u);
  const accelcrypt_capability* crypt =
      pkcs11_->Capability(ACCELCRYPT_ALG_RSA_CRYPT);
  ASSERT_NE(crypt, nullptr);
  EXPECT_TRUE(crypt->flags & ACCELCRYPT_CAP_RSA_OAEP);
  ASSERT_NE(pkcs11_->Capability(ACCELCRYPT_ALG_DSA_SIGN), nullptr)
      << pkcs11_->Describe();
  // Every registration self-test passed (none disabled an algorithm).
  for (const LoadEvent& e : core_->registry().events()) {
    if (e.backend == "pkcs11") {
      EXPECT_TRUE(e.ok) << e.algorithm << e.message;
    }
  }
  for (const LoadEvent& e : core_->router().SelfTestEvents()) {
    ADD_FAILURE() << e.backend << " " << e.algorithm << ": " << e.message;
  }
}

// Self-tests run at first use: a core that only loads (as `accelcrypt
// list` or a process that never signs) makes no object on the token; the
// first RSA operation runs the token's test, then serves.
TEST_F(Pkcs11ClientTest, LoadingMakesNoTokenObjectUntilFirstUse) {
  auto fresh = MakeCore(g_hsm->Overrides());
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  const Backend* token = (*fresh)->registry().Find("pkcs11");
  ASSERT_NE(token, nullptr);
  EXPECT_EQ(Created(*token), 0u) << token->Describe();
  const AlgorithmInfo& sign = *FindAlgorithm(ACCELCRYPT_ALG_RSA_SIGN);
  size_t slot = 0;
  while ((*fresh)->router().backend_at(slot) != token) ++slot;
  EXPECT_EQ((*fresh)->router().SelfTestStateOf(slot, sign),
            Router::SelfTestState::kPending);
  auto ops = (*fresh)->router().NewPublicKeyOps(RsaKey(2048));
  ASSERT_TRUE(ops.ok()) << ops.status();
  std::vector<uint8_t> digest = Digest("first use"), sig(256);
  ASSERT_TRUE((*ops)->Sign(Pkcs1(), digest, absl::MakeSpan(sig)).ok());
  EXPECT_EQ((*fresh)->router().SelfTestStateOf(slot, sign),
            Router::SelfTestState::kPassed);
  EXPECT_GT(Created(*token), 0u);
}

TEST_F(Pkcs11ClientTest, BadConfigurationsDeclineWithClearErrors) {
  struct Case {
    std::map<std::string, std::string> change;
    std::string expect;
  };
  std::string not_a_module = "/usr/lib/x86_64-linux-gnu/libz.so.1";
  // Login state is per process and module: no other core may be logged in
  // for the wrong PIN to be seen.
  core_.reset();
  pkcs11_ = software_ = nullptr;
  std::vector<Case> cases = {
      {{{"pkcs11.module", "/nonexistent/libnothing.so"}}, "cannot load module"},
      {{{"pkcs11.module", not_a_module}}, "not a PKCS#11 module"},
      {{{"pkcs11.token_label", "no-such-token"}}, "no initialised token"},
      {{{"pkcs11.pin", "1234"}}, "PIN in the configuration is refused"},
  };
  for (const Case& c : cases) {
    auto overrides = g_hsm->Overrides();
    for (const auto& [k, v] : c.change) overrides[k] = v;
    auto core = MakeCore(overrides);
    ASSERT_TRUE(core.ok()) << core.status();
    EXPECT_EQ((*core)->registry().Find("pkcs11"), nullptr);
    EXPECT_NE(LoadMessage(**core).find(c.expect), std::string::npos)
        << "want '" << c.expect << "' in:\n"
        << LoadMessage(**core);
    // The software backend still serves RSA.
    EXPECT_NE((*core)->registry().Find("software"), nullptr);
  }
  // No module configured at all: declines with that reason.
  auto core = MakeCore({{"backends", "pkcs11, software"}});
  ASSERT_TRUE(core.ok());
  EXPECT_NE(LoadMessage(**core).find("no module configured"), std::string::npos)
      << LoadMessage(**core);
}

TEST_F(Pkcs11ClientTest, PerKeySizeRoutesOverrideTheOrder) {
  core_.reset();
  auto overrides = g_hsm->Overrides();
  overrides["route.dsa-2048"] = "software";
  overrides["route.rsa-3072"] = "only:software";
  auto core = MakeCore(overrides);
  ASSERT_TRUE(core.ok());
  std::vector<uint8_t> digest = Digest("routes");
  PkeyParams dsa_params;
  dsa_params.md = ACCELCRYPT_ALG_SHA256;
  struct Case {
    KeyMaterial key;
    PkeyParams params;
    const char* want;
  } cases[] = {{DsaKeyFromVectors(), dsa_params, "software"},
               {RsaKey(3072), Pkcs1(), "software"},
               {RsaKey(2048), Pkcs1(), "pkcs11"}};
  for (const Case& c : cases) {
    auto ops = (*core)->router().NewPublicKeyOps(c.key);
    ASSERT_TRUE(ops.ok());
    std::vector<uint8_t> sig((*ops)->SignatureSize());
    ASSERT_TRUE((*ops)->Sign(c.params, digest, absl::MakeSpan(sig)).ok());
    EXPECT_EQ((*ops)->last_backend(), c.want) << c.key.bits();
  }
}

// offload_min_bits keeps small keys on the CPU although the token comes
// first in the order; the per-family keys override the general one, and a
// per-size route still decides its size.
TEST_F(Pkcs11ClientTest, OffloadThresholdKeepsSmallKeysOnTheCpu) {
  core_.reset();
  std::vector<uint8_t> digest = Digest("threshold");
  PkeyParams dsa_params;
  dsa_params.md = ACCELCRYPT_ALG_SHA256;
  const KeyMaterial rsa2048 = RsaKey(2048), rsa3072 = RsaKey(3072);
  const KeyMaterial dsa2048 = DsaKeyFromVectors();
  struct Case {
    std::map<std::string, std::string> extra;
    // Backend expected for RSA-2048, RSA-3072, DSA-2048.
    const char* want[3];
  } cases[] = {
      {{}, {"pkcs11", "pkcs11", "pkcs11"}},
      {{{"offload_min_bits", "3072"}}, {"software", "pkcs11", "software"}},
      {{{"rsa_offload_min_bits", "3072"}}, {"software", "pkcs11", "pkcs11"}},
      {{{"offload_min_bits", "4096"}, {"dsa_offload_min_bits", "1024"}},
       {"software", "software", "pkcs11"}},
      {{{"offload_min_bits", "4096"}, {"route.rsa-2048", "pkcs11, software"}},
       {"pkcs11", "software", "software"}},
  };
  for (const Case& c : cases) {
    auto overrides = g_hsm->Overrides();
    overrides["route.rsa"] = "pkcs11, software";
    overrides["route.dsa"] = "pkcs11, software";
    std::string label;
    for (const auto& [k, v] : c.extra) {
      overrides[k] = v;
      label.append(k).append("=").append(v).append(" ");
    }
    auto core = MakeCore(overrides);
    ASSERT_TRUE(core.ok()) << core.status();
    const KeyMaterial* keys[3] = {&rsa2048, &rsa3072, &dsa2048};
    for (int i = 0; i < 3; ++i) {
      auto ops = (*core)->router().NewPublicKeyOps(*keys[i]);
      ASSERT_TRUE(ops.ok()) << ops.status();
      std::vector<uint8_t> sig((*ops)->SignatureSize());
      auto len = (*ops)->Sign(i < 2 ? Pkcs1() : dsa_params, digest,
                              absl::MakeSpan(sig));
      ASSERT_TRUE(len.ok()) << label << len.status();
      EXPECT_EQ((*ops)->last_backend(), c.want[i])
          << label << "key " << keys[i]->bits() << " bits";
      sig.resize(*len);
      EXPECT_TRUE(
          (*ops)->Verify(i < 2 ? Pkcs1() : dsa_params, digest, sig).ok())
          << label;
    }
  }
  // Below the threshold with only the token left, the token still serves.
  auto overrides = g_hsm->Overrides();
  overrides["backends"] = "pkcs11";
  overrides["offload_min_bits"] = "4096";
  auto only_token = MakeCore(overrides);
  ASSERT_TRUE(only_token.ok()) << only_token.status();
  auto ops = (*only_token)->router().NewPublicKeyOps(rsa2048);
  ASSERT_TRUE(ops.ok());
  std::vector<uint8_t> sig(256);
  ASSERT_TRUE((*ops)->Sign(Pkcs1(), digest, absl::MakeSpan(sig)).ok());
  EXPECT_EQ((*ops)->last_backend(), "pkcs11");
  // Bad values are configuration errors.
  for (const char* bad : {"-1", "big"}) {
    auto o = g_hsm->Overrides();
    o["rsa_offload_min_bits"] = bad;
    auto core = MakeCore(o);
    EXPECT_FALSE(core.ok()) << bad;
  }
}

}  // namespace
}  // namespace accelcrypt::testing
