// SPDX-License-Identifier: Apache-2.0
// The PKCS#11 client backend against a real token, through the core's
// router (Router::NewPublicKeyOps) and cross-checked with the software
// backend. The token is the binary's TokenFixture (token_fixture.h):
// SoftHSMv2 in pkcs11_client_test, accelcrypt's own module in
// tests/pkcs11/client_backend's p11_client_backend_test, which builds
// this same file.
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/backend.h"
#include "core/core.h"
#include "core/pkey.h"
#include "core/status.h"
#include "gtest/gtest.h"
#include "tests/backends/pkcs11/softhsm_fixture.h"
#include "tests/backends/pkcs11/token_fixture.h"
#include "tests/support/test_env.h"

namespace accelcrypt::testing {
namespace {

TokenFixture* g_hsm = nullptr;

class Pkcs11ClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto hsm = CreateTokenFixture();
    if (hsm.ok()) {
      g_hsm = hsm->release();
    } else {
      create_error_ = std::string(hsm.status().message());
    }
  }
  static void TearDownTestSuite() {
    delete g_hsm;
    g_hsm = nullptr;
  }
  void SetUp() override {
    if (g_hsm == nullptr) {
      if (TokenFixtureRequired()) FAIL() << "no token: " << create_error_;
      GTEST_SKIP() << create_error_;
    }
    auto core = MakeCore(g_hsm->Overrides());
    ASSERT_TRUE(core.ok()) << core.status();
    core_ = *std::move(core);
    pkcs11_ = core_->registry().Find("pkcs11");
    software_ = core_->registry().Find("software");
    if (pkcs11_ == nullptr) {
      std::string why;
      for (const LoadEvent& e : core_->registry().events()) {
        why += e.backend + ": " + e.message + "\n";
      }
      FAIL() << "pkcs11 backend not registered:\n" << why;
    }
    ASSERT_NE(software_, nullptr);
    // The tests count the objects made on the token: the self-tests'
    // session keys (made at first use otherwise) come first.
    core_->router().SelfTestAll();
  }

  Counter& Cell(std::string_view backend, accelcrypt_alg alg) {
    return core_->stats().Cell(core_->stats().RegisterBackend(backend),
                               *FindAlgorithm(alg));
  }
  static uint64_t Created(const Backend& b) {
    std::smatch m;
    std::string d = b.Describe();
    if (!std::regex_search(d, m, std::regex("objects_created=([0-9]+)"))) {
      return ~0ull;
    }
    return std::stoull(m[1]);
  }

  static std::string create_error_;
  std::unique_ptr<Core> core_;
  Backend* pkcs11_ = nullptr;
  Backend* software_ = nullptr;
};
std::string Pkcs11ClientTest::create_error_;

PkeyParams Pkcs1() {
  PkeyParams p;
  p.padding = ACCELCRYPT_PAD_PKCS1;
  p.md = ACCELCRYPT_ALG_SHA256;
  return p;
}

PkeyParams Pss() {
  PkeyParams p;
  p.padding = ACCELCRYPT_PAD_PSS;
  p.md = ACCELCRYPT_ALG_SHA256;
  p.salt_len = ACCELCRYPT_PSS_SALT_DIGEST;
  return p;
}

std::vector<uint8_t> Digest(const std::string& s) {
  return Sha256(std::vector<uint8_t>(s.begin(), s.end()));
}

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

// RSA-2048/3072/4096 signatures made by the token verify with the software
// backend, and software signatures verify on the token.
class RsaSizeTest : public Pkcs11ClientTest,
                    public ::testing::WithParamInterface<int> {};

TEST_P(RsaSizeTest, TokenSignaturesVerifyInSoftwareAndBack) {
  KeyMaterial key = RsaKey(GetParam());
  ASSERT_EQ(key.bits(), static_cast<size_t>(GetParam()));
  auto ops = core_->router().NewPublicKeyOps(key);
  ASSERT_TRUE(ops.ok()) << ops.status();
  auto sw = software_->LoadKey(ACCELCRYPT_ALG_RSA_SIGN, PublicOnly(key));
  ASSERT_TRUE(sw.ok()) << sw.status();
  auto sw_priv = software_->LoadKey(ACCELCRYPT_ALG_RSA_SIGN, key);
  ASSERT_TRUE(sw_priv.ok()) << sw_priv.status();
  auto tok = pkcs11_->LoadKey(ACCELCRYPT_ALG_RSA_SIGN, PublicOnly(key));
  ASSERT_TRUE(tok.ok()) << tok.status();
  std::vector<uint8_t> digest = Digest("accelcrypt issue 4");
  for (const PkeyParams& params : {Pkcs1(), Pss()}) {
    std::vector<uint8_t> sig((*ops)->SignatureSize());
    auto len = (*ops)->Sign(params, digest, absl::MakeSpan(sig));
    ASSERT_TRUE(len.ok()) << len.status();
    EXPECT_EQ((*ops)->last_backend(), "pkcs11");
    sig.resize(*len);
    EXPECT_TRUE((*sw)->Verify(params, digest, sig).ok());
    sig[sig.size() / 2] ^= 0x10;
    EXPECT_EQ(GetStatusDetail((*sw)->Verify(params, digest, sig)),
              StatusDetail::kAuthFailed);
    // The reverse: software signs, the token verifies.
    std::vector<uint8_t> sw_sig(sig.size() + 8);
    auto sw_len = (*sw_priv)->Sign(params, digest, absl::MakeSpan(sw_sig));
    ASSERT_TRUE(sw_len.ok()) << sw_len.status();
    sw_sig.resize(*sw_len);
    EXPECT_TRUE((*tok)->Verify(params, digest, sw_sig).ok());
    sw_sig[3] ^= 1;
    EXPECT_EQ(GetStatusDetail((*tok)->Verify(params, digest, sw_sig)),
              StatusDetail::kAuthFailed);
  }
  // The token did every private-key operation.
  EXPECT_EQ(Cell("pkcs11", ACCELCRYPT_ALG_RSA_SIGN).ops.load(), 2u);
  EXPECT_EQ(Cell("software", ACCELCRYPT_ALG_RSA_SIGN).ops.load(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Sizes, RsaSizeTest,
                         ::testing::Values(2048, 3072, 4096),
                         [](const auto& info) {
                           return "RSA" + std::to_string(info.param);
                         });

TEST_F(Pkcs11ClientTest, Dsa2048SignaturesCrossVerify) {
  KeyMaterial key = DsaKeyFromVectors();
  ASSERT_EQ(key.bits(), 2048u);
  auto ops = core_->router().NewPublicKeyOps(key);
  ASSERT_TRUE(ops.ok()) << ops.status();
  auto sw = software_->LoadKey(ACCELCRYPT_ALG_DSA_SIGN, PublicOnly(key));
  ASSERT_TRUE(sw.ok()) << sw.status();
  auto sw_priv = software_->LoadKey(ACCELCRYPT_ALG_DSA_SIGN, key);
  ASSERT_TRUE(sw_priv.ok()) << sw_priv.status();
  PkeyParams params;
  params.md = ACCELCRYPT_ALG_SHA256;
  std::vector<uint8_t> digest = Digest("dsa through the token");
  std::vector<uint8_t> sig((*ops)->SignatureSize());
  auto len = (*ops)->Sign(params, digest, absl::MakeSpan(sig));
  ASSERT_TRUE(len.ok()) << len.status();
  EXPECT_EQ((*ops)->last_backend(), "pkcs11");
  sig.resize(*len);
  EXPECT_TRUE((*sw)->Verify(params, digest, sig).ok());
  // Software signature verified by the token, through the router.
  std::vector<uint8_t> sw_sig(80);
  auto sw_len = (*sw_priv)->Sign(params, digest, absl::MakeSpan(sw_sig));
  ASSERT_TRUE(sw_len.ok());
  sw_sig.resize(*sw_len);
  EXPECT_TRUE((*ops)->Verify(params, digest, sw_sig).ok());
  EXPECT_EQ((*ops)->last_backend(), "pkcs11");
  digest[0] ^= 1;
  absl::Status bad = (*ops)->Verify(params, digest, sw_sig);
  EXPECT_EQ(GetStatusDetail(bad), StatusDetail::kAuthFailed) << bad;
  EXPECT_EQ(Cell("pkcs11", ACCELCRYPT_ALG_DSA_SIGN).fallbacks.load(), 0u);
}

TEST_F(Pkcs11ClientTest, OaepAndPkcs1EncryptionRoundTrip) {
  KeyMaterial key = RsaKey(2048);
  auto ops = core_->router().NewPublicKeyOps(key);
  ASSERT_TRUE(ops.ok());
  auto sw = software_->LoadKey(ACCELCRYPT_ALG_RSA_CRYPT, key);
  ASSERT_TRUE(sw.ok()) << sw.status();
  std::vector<uint8_t> msg = Digest("session key");
  // What the software backend makes of a ciphertext.
  auto software_decrypts = [&](const PkeyParams& params,
                               const std::vector<uint8_t>& ct)
      -> absl::StatusOr<std::vector<uint8_t>> {
    std::vector<uint8_t> out(256);
    auto len = (*sw)->Decrypt(params, ct, absl::MakeSpan(out));
    if (!len.ok()) return len.status();
    out.resize(*len);
    return out;
  };
  // OAEP with SHA-1 (the one SoftHSMv2 offers) and PKCS#1 v1.5 run on the
  // token.
  PkeyParams oaep;
  oaep.padding = ACCELCRYPT_PAD_OAEP;
  oaep.md = ACCELCRYPT_ALG_SHA1;
  PkeyParams pkcs1;
  pkcs1.padding = ACCELCRYPT_PAD_PKCS1;
  for (const PkeyParams& params : {oaep, pkcs1}) {
    std::vector<uint8_t> ct(256), pt(256);
    auto ct_len = (*ops)->Encrypt(params, msg, absl::MakeSpan(ct));
    ASSERT_TRUE(ct_len.ok()) << ct_len.status();
    ct.resize(*ct_len);
    auto pt_len = (*ops)->Decrypt(params, ct, absl::MakeSpan(pt));
    ASSERT_TRUE(pt_len.ok()) << pt_len.status();
    EXPECT_EQ((*ops)->last_backend(), "pkcs11");
    pt.resize(*pt_len);
    EXPECT_EQ(pt, msg);
    // Software decrypts what the token encrypted.
    auto sw_pt = software_decrypts(params, ct);
    ASSERT_TRUE(sw_pt.ok()) << sw_pt.status();
    EXPECT_EQ(*sw_pt, msg);
    // A corrupted ciphertext is the caller's error (a token that reports a
    // failed unpadding as CKR_GENERAL_ERROR, as SoftHSMv2 does, is covered
    // by the client backend's quirk table; see BadPaddingIsNeverAFallback).
    ct[10] ^= 0x55;
    auto bad = (*ops)->Decrypt(params, ct, absl::MakeSpan(pt));
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument)
        << bad.status();
  }
  const uint64_t errors_before =
      Cell("pkcs11", ACCELCRYPT_ALG_RSA_CRYPT).errors.load();
  // OAEP-SHA256 with a label. PKCS#11 v2.40 (CK_RSA_PKCS_OAEP_PARAMS)
  // allows any hashAlg/MGF1 and CKZ_DATA_SPECIFIED: a token that takes them
  // runs both directions; one that refuses them at C_EncryptInit/
  // C_DecryptInit (SoftHSMv2) leaves them to software. Either way the label
  // must match and the result equals software's.
  oaep.md = ACCELCRYPT_ALG_SHA256;
  oaep.label = {'l', 'b', 'l'};
  const char* oaep_backend =
      g_hsm->oaep_sha2_and_label() ? "pkcs11" : "software";
  std::vector<uint8_t> ct(256), pt(256);
  auto ct_len = (*ops)->Encrypt(oaep, msg, absl::MakeSpan(ct));
  ASSERT_TRUE(ct_len.ok());
  EXPECT_EQ((*ops)->last_backend(), oaep_backend);
  ct.resize(*ct_len);
  auto pt_len = (*ops)->Decrypt(oaep, ct, absl::MakeSpan(pt));
  ASSERT_TRUE(pt_len.ok()) << pt_len.status();
  EXPECT_EQ((*ops)->last_backend(), oaep_backend);
  pt.resize(*pt_len);
  EXPECT_EQ(pt, msg);
  auto sw_pt = software_decrypts(oaep, ct);
  ASSERT_TRUE(sw_pt.ok()) << sw_pt.status();
  EXPECT_EQ(*sw_pt, msg);
  // Neither taken nor refused parameters are device errors.
  EXPECT_EQ(Cell("pkcs11", ACCELCRYPT_ALG_RSA_CRYPT).errors.load(),
            errors_before);
  oaep.label = {'x'};
  pt.resize(256);
  EXPECT_FALSE((*ops)->Decrypt(oaep, ct, absl::MakeSpan(pt)).ok());
}

TEST_F(Pkcs11ClientTest, KeyIsImportedOncePerKeyNotPerOperation) {
  KeyMaterial key = RsaKey(2048);
  uint64_t before = Created(*pkcs11_);
  ASSERT_NE(before, ~0ull) << pkcs11_->Describe();
  auto ops = core_->router().NewPublicKeyOps(key);
  ASSERT_TRUE(ops.ok());
  std::vector<uint8_t> digest = Digest("once"), sig(256);
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE((*ops)->Sign(Pkcs1(), digest, absl::MakeSpan(sig)).ok());
    ASSERT_TRUE((*ops)->Verify(Pkcs1(), digest, sig).ok());
  }
  // Private and public object, once.
  EXPECT_EQ(Created(*pkcs11_), before + 2);
  // A second handle on the same key (as OpenSSL makes for each EVP_PKEY
  // duplicate) finds the cached objects by fingerprint.
  auto again = core_->router().NewPublicKeyOps(key);
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE((*again)->Sign(Pkcs1(), digest, absl::MakeSpan(sig)).ok());
  EXPECT_EQ(Created(*pkcs11_), before + 2);
  EXPECT_EQ(Cell("pkcs11", ACCELCRYPT_ALG_RSA_SIGN).ops.load(), 41u);
}

TEST_F(Pkcs11ClientTest, ForkedChildSignsWithFreshSessions) {
  KeyMaterial key = RsaKey(2048);
  auto ops = core_->router().NewPublicKeyOps(key);
  ASSERT_TRUE(ops.ok());
  auto sw = software_->LoadKey(ACCELCRYPT_ALG_RSA_SIGN, PublicOnly(key));
  ASSERT_TRUE(sw.ok());
  std::vector<uint8_t> digest = Digest("fork"), sig(256);
  ASSERT_TRUE((*ops)->Sign(Pkcs1(), digest, absl::MakeSpan(sig)).ok());
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Child: sign through the token (re-initialised), verify in software.
    int code = 0;
    for (int i = 0; i < 3 && code == 0; ++i) {
      std::vector<uint8_t> s(256);
      auto len = (*ops)->Sign(Pkcs1(), digest, absl::MakeSpan(s));
      if (!len.ok()) {
        code = 2;
      } else if ((*ops)->last_backend() != "pkcs11") {
        code = 3;
      } else if (!(*sw)->Verify(Pkcs1(), digest, s).ok()) {
        code = 4;
      }
    }
    if (code == 0 &&
        pkcs11_->Describe().find("reinit=1") == std::string::npos) {
      code = 5;
    }
    _exit(code);
  }
  // The parent keeps signing meanwhile.
  for (int i = 0; i < 5; ++i) {
    auto len = (*ops)->Sign(Pkcs1(), digest, absl::MakeSpan(sig));
    ASSERT_TRUE(len.ok()) << len.status();
    EXPECT_TRUE((*sw)->Verify(Pkcs1(), digest, sig).ok());
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "child: 2 sign failed, 3 not served by pkcs11, 4 bad signature, "
         "5 no re-initialisation";
  EXPECT_EQ(Cell("software", ACCELCRYPT_ALG_RSA_SIGN).ops.load(), 0u);
  EXPECT_NE(pkcs11_->Describe().find("reinit=0"), std::string::npos);
}

TEST_F(Pkcs11ClientTest, EightThreadsShareOneKey) {
  KeyMaterial key = RsaKey(2048);
  auto ops = core_->router().NewPublicKeyOps(key);
  ASSERT_TRUE(ops.ok());
  auto sw = software_->LoadKey(ACCELCRYPT_ALG_RSA_SIGN, PublicOnly(key));
  ASSERT_TRUE(sw.ok());
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  threads.reserve(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::vector<uint8_t> digest = Digest("thread " + std::to_string(t));
      for (int i = 0; i < 10; ++i) {
        std::vector<uint8_t> sig(256);
        auto len =
            (*ops)->Sign(t % 2 ? Pss() : Pkcs1(), digest, absl::MakeSpan(sig));
        if (!len.ok() ||
            !(*sw)->Verify(t % 2 ? Pss() : Pkcs1(), digest, sig).ok()) {
          failures.fetch_add(1);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(Cell("pkcs11", ACCELCRYPT_ALG_RSA_SIGN).ops.load(), 80u);
  EXPECT_EQ(Cell("pkcs11", ACCELCRYPT_ALG_RSA_SIGN).errors.load(), 0u);
}

TEST_F(Pkcs11ClientTest, SmallKeyIsRefusedClearly) {
  KeyMaterial key = RsaKey(512);
  ASSERT_EQ(key.bits(), 512u);
  auto ops = core_->router().NewPublicKeyOps(key);
  ASSERT_TRUE(ops.ok());
  std::vector<uint8_t> digest = Digest("small"), sig(64);
  auto len = (*ops)->Sign(Pkcs1(), digest, absl::MakeSpan(sig));
  EXPECT_EQ(len.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(len.status().message()).find("512-bit"),
            std::string::npos)
      << len.status();
}

TEST_F(Pkcs11ClientTest, ShortBufferIsOutOfRangeAndNotRetried) {
  KeyMaterial key = RsaKey(2048);
  auto ops = core_->router().NewPublicKeyOps(key);
  ASSERT_TRUE(ops.ok());
  std::vector<uint8_t> digest = Digest("short"), sig(100);
  auto len = (*ops)->Sign(Pkcs1(), digest, absl::MakeSpan(sig));
  EXPECT_EQ(len.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(Cell("software", ACCELCRYPT_ALG_RSA_SIGN).ops.load(), 0u);
}

// Only CKM_RSA_X_509 (the UltraSPARC T1/T2 shape): PKCS#1 v1.5 and PSS
// padding are done by the backend, the token does the raw RSA operations;
// OAEP is not offered and goes to software.
TEST_F(Pkcs11ClientTest, RawOnlyTokenGetsFrameworkPkcs1Padding) {
  auto overrides = g_hsm->Overrides();
  overrides["pkcs11.hide_mechanisms"] =
      "CKM_RSA_PKCS, CKM_RSA_PKCS_PSS, CKM_RSA_PKCS_OAEP";
  auto core = MakeCore(overrides);
  ASSERT_TRUE(core.ok());
  Backend* raw_only = (*core)->registry().Find("pkcs11");
  ASSERT_NE(raw_only, nullptr);
  const accelcrypt_capability* cap =
      raw_only->Capability(ACCELCRYPT_ALG_RSA_SIGN);
  ASSERT_NE(cap, nullptr);
  EXPECT_TRUE(cap->flags & ACCELCRYPT_CAP_RSA_PKCS1);
  EXPECT_TRUE(cap->flags & ACCELCRYPT_CAP_RSA_PSS);
  KeyMaterial key = RsaKey(2048);
  auto ops = (*core)->router().NewPublicKeyOps(key);
  ASSERT_TRUE(ops.ok());
  auto sw = software_->LoadKey(ACCELCRYPT_ALG_RSA_SIGN, PublicOnly(key));
  ASSERT_TRUE(sw.ok());
  std::vector<uint8_t> digest = Digest("t2"), sig(256);
  auto len = (*ops)->Sign(Pkcs1(), digest, absl::MakeSpan(sig));
  ASSERT_TRUE(len.ok()) << len.status();
  EXPECT_EQ((*ops)->last_backend(), "pkcs11");
  EXPECT_TRUE((*sw)->Verify(Pkcs1(), digest, sig).ok());
  EXPECT_TRUE((*ops)->Verify(Pkcs1(), digest, sig).ok());
  sig[0] ^= 1;
  EXPECT_EQ(GetStatusDetail((*ops)->Verify(Pkcs1(), digest, sig)),
            StatusDetail::kAuthFailed);
  for (int32_t salt :
       {ACCELCRYPT_PSS_SALT_DIGEST, 0, 20, ACCELCRYPT_PSS_SALT_MAX}) {
    PkeyParams pss = Pss();
    pss.salt_len = salt;
    std::vector<uint8_t> pss_sig(256);
    ASSERT_TRUE((*ops)->Sign(pss, digest, absl::MakeSpan(pss_sig)).ok());
    EXPECT_EQ((*ops)->last_backend(), "pkcs11");
    if (salt == ACCELCRYPT_PSS_SALT_MAX)
      pss.salt_len = ACCELCRYPT_PSS_SALT_AUTO;
    EXPECT_TRUE((*sw)->Verify(pss, digest, pss_sig).ok()) << salt;
    EXPECT_TRUE((*ops)->Verify(pss, digest, pss_sig).ok()) << salt;
    EXPECT_EQ((*ops)->last_backend(), "pkcs11");
    pss_sig[100] ^= 4;
    EXPECT_EQ(GetStatusDetail((*ops)->Verify(pss, digest, pss_sig)),
              StatusDetail::kAuthFailed);
  }
  // Software-made PSS signatures verify through the framework path.
  auto sw_priv = software_->LoadKey(ACCELCRYPT_ALG_RSA_SIGN, key);
  ASSERT_TRUE(sw_priv.ok());
  std::vector<uint8_t> sw_sig(256);
  ASSERT_TRUE((*sw_priv)->Sign(Pss(), digest, absl::MakeSpan(sw_sig)).ok());
  EXPECT_TRUE((*ops)->Verify(Pss(), digest, sw_sig).ok());
  // Encryption paddings done here too (OAEP with any SHA and a label,
  // PKCS#1 v1.5), cross-checked with software both ways.
  auto sw_crypt = software_->LoadKey(ACCELCRYPT_ALG_RSA_CRYPT, key);
  ASSERT_TRUE(sw_crypt.ok());
  PkeyParams oaep;
  oaep.padding = ACCELCRYPT_PAD_OAEP;
  oaep.md = ACCELCRYPT_ALG_SHA256;
  oaep.label = {'t', '2'};
  PkeyParams pkcs1;
  pkcs1.padding = ACCELCRYPT_PAD_PKCS1;
  for (const PkeyParams& params : {oaep, pkcs1}) {
    std::vector<uint8_t> ct(256), pt(256), sw_ct(256);
    auto ct_len = (*ops)->Encrypt(params, digest, absl::MakeSpan(ct));
    ASSERT_TRUE(ct_len.ok()) << ct_len.status();
    EXPECT_EQ((*ops)->last_backend(), "pkcs11");
    auto sw_pt = (*sw_crypt)->Decrypt(params, ct, absl::MakeSpan(pt));
    ASSERT_TRUE(sw_pt.ok()) << sw_pt.status();
    EXPECT_EQ(std::vector<uint8_t>(pt.begin(), pt.begin() + *sw_pt), digest);
    auto sw_len = (*sw_crypt)->Encrypt(params, digest, absl::MakeSpan(sw_ct));
    ASSERT_TRUE(sw_len.ok());
    std::fill(pt.begin(), pt.end(), 0);
    auto pt_len = (*ops)->Decrypt(params, sw_ct, absl::MakeSpan(pt));
    ASSERT_TRUE(pt_len.ok()) << pt_len.status();
    EXPECT_EQ((*ops)->last_backend(), "pkcs11");
    EXPECT_EQ(std::vector<uint8_t>(pt.begin(), pt.begin() + *pt_len), digest);
    // Corrupted: a caller error from the token path, no fallback.
    sw_ct[5] ^= 0x20;
    uint64_t fallbacks = (*core)
                             ->stats()
                             .Cell((*core)->stats().RegisterBackend("pkcs11"),
                                   *FindAlgorithm(ACCELCRYPT_ALG_RSA_CRYPT))
                             .fallbacks.load();
    auto bad = (*ops)->Decrypt(params, sw_ct, absl::MakeSpan(pt));
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument)
        << bad.status();
    EXPECT_EQ((*core)
                  ->stats()
                  .Cell((*core)->stats().RegisterBackend("pkcs11"),
                        *FindAlgorithm(ACCELCRYPT_ALG_RSA_CRYPT))
                  .fallbacks.load(),
              fallbacks);
  }
  // A wrong OAEP label is refused.
  std::vector<uint8_t> ct(256), pt(256);
  ASSERT_TRUE((*ops)->Encrypt(oaep, digest, absl::MakeSpan(ct)).ok());
  oaep.label = {'x'};
  EXPECT_EQ((*ops)->Decrypt(oaep, ct, absl::MakeSpan(pt)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

std::string LoadMessage(const Core& core) {
  std::string out;
  for (const LoadEvent& e : const_cast<Core&>(core).registry().events()) {
    out += e.backend + ": " + e.message + "\n";
  }
  return out;
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

// The token fails mid-run (the latency shim injects CKR_DEVICE_REMOVED and
// CKR_SESSION_HANDLE_INVALID): callers see no failure, signatures stay
// correct, the breaker opens, and after the cool-down the token is probed
// and serves again.
TEST_F(Pkcs11ClientTest, TokenFailuresFallBackAndTheBreakerReprobes) {
  core_.reset();
  setenv("ACCELCRYPT_SHIM_MODULE", g_hsm->module().c_str(), 1);
  auto overrides = g_hsm->Overrides();
  overrides["pkcs11.module"] = ACCELCRYPT_LATENCY_SHIM;
  overrides["breaker_threshold"] = "3";
  // Long enough that the open-breaker checks below finish well inside it
  // even on a loaded machine or under valgrind.
  overrides["breaker_cooldown_ms"] = "1500";
  auto core = MakeCore(overrides);
  ASSERT_TRUE(core.ok());
  ASSERT_NE((*core)->registry().Find("pkcs11"), nullptr) << LoadMessage(**core);
  void* shim = dlopen(ACCELCRYPT_LATENCY_SHIM, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(shim, nullptr);
  auto control = reinterpret_cast<long (*)(const char*)>(
      dlsym(shim, "accelcrypt_shim_control"));
  ASSERT_NE(control, nullptr);
  KeyMaterial key = RsaKey(2048);
  auto ops = (*core)->router().NewPublicKeyOps(key);
  ASSERT_TRUE(ops.ok());
  auto verifier = (*core)
                      ->registry()
                      .Find("software")
                      ->LoadKey(ACCELCRYPT_ALG_RSA_SIGN, PublicOnly(key));
  ASSERT_TRUE(verifier.ok());
  Stats& stats = (*core)->stats();
  const AlgorithmInfo& info = *FindAlgorithm(ACCELCRYPT_ALG_RSA_SIGN);
  Counter& tok = stats.Cell(stats.RegisterBackend("pkcs11"), info);
  Counter& soft = stats.Cell(stats.RegisterBackend("software"), info);
  std::vector<uint8_t> digest = Digest("faults");
  auto sign_ok = [&](const char* want) {
    std::vector<uint8_t> sig(256);
    auto len = (*ops)->Sign(Pkcs1(), digest, absl::MakeSpan(sig));
    ASSERT_TRUE(len.ok()) << len.status();
    EXPECT_TRUE((*verifier)->Verify(Pkcs1(), digest, sig).ok());
    EXPECT_EQ((*ops)->last_backend(), want);
  };
  sign_ok("pkcs11");
  control("fail=CKR_DEVICE_REMOVED,count=3");
  for (int i = 0; i < 3; ++i) sign_ok("software");
  EXPECT_EQ(tok.errors.load(), 3u);
  EXPECT_EQ(tok.fallbacks.load(), 3u);
  // Breaker open: the token is not asked (the shim sees no new call).
  long calls = control(nullptr);
  sign_ok("software");
  EXPECT_EQ(control(nullptr), calls);
  // After the cool-down one probe goes to the token, which works again.
  std::this_thread::sleep_for(std::chrono::milliseconds(1600));
  sign_ok("pkcs11");
  sign_ok("pkcs11");
  // A session the token dropped: that session is closed, the call falls
  // back, the next one runs on a fresh session.
  control("fail=CKR_SESSION_HANDLE_INVALID,count=1");
  sign_ok("software");
  sign_ok("pkcs11");
  EXPECT_EQ(tok.errors.load(), 4u);
  EXPECT_EQ(soft.ops.load(), 5u);
  EXPECT_EQ(tok.ops.load(), 4u);
}

// A faulty token (the latency shim flips one bit in every 4th C_Sign and
// C_Decrypt result): every RSA and DSA signature and every raw RSA
// decryption the router returns is right, because each result from the
// token is checked on the CPU first; every corrupted one is counted as a
// device error on the token and served again by software.
TEST_F(Pkcs11ClientTest, FaultyTokenResultsAreCheckedAndNeverReturned) {
  core_.reset();
  setenv("ACCELCRYPT_SHIM_MODULE", g_hsm->module().c_str(), 1);
  auto overrides = g_hsm->Overrides();
  overrides["pkcs11.module"] = ACCELCRYPT_LATENCY_SHIM;
  // Faults must not open the breaker: every operation asks the token.
  overrides["breaker_threshold"] = "1000000";
  auto core = MakeCore(overrides);
  ASSERT_TRUE(core.ok()) << core.status();
  ASSERT_NE((*core)->registry().Find("pkcs11"), nullptr) << LoadMessage(**core);
  (*core)->router().SelfTestAll();  // the tests' own signatures first
  void* shim = dlopen(ACCELCRYPT_LATENCY_SHIM, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(shim, nullptr);
  auto control = reinterpret_cast<long (*)(const char*)>(
      dlsym(shim, "accelcrypt_shim_control"));
  auto flipped =
      reinterpret_cast<long (*)()>(dlsym(shim, "accelcrypt_shim_flipped"));
  ASSERT_NE(control, nullptr);
  ASSERT_NE(flipped, nullptr);
  Stats& stats = (*core)->stats();
  auto cell = [&](const char* backend, accelcrypt_alg alg) -> Counter& {
    return stats.Cell(stats.RegisterBackend(backend), *FindAlgorithm(alg));
  };
  KeyMaterial rsa = RsaKey(2048);
  KeyMaterial dsa = DsaKeyFromVectors();
  auto rsa_ops = (*core)->router().NewPublicKeyOps(rsa);
  auto dsa_ops = (*core)->router().NewPublicKeyOps(dsa);
  ASSERT_TRUE(rsa_ops.ok() && dsa_ops.ok());
  const Backend* software = (*core)->registry().Find("software");
  auto rsa_check = software->LoadKey(ACCELCRYPT_ALG_RSA_SIGN, PublicOnly(rsa));
  auto dsa_check = software->LoadKey(ACCELCRYPT_ALG_DSA_SIGN, PublicOnly(dsa));
  ASSERT_TRUE(rsa_check.ok() && dsa_check.ok());
  PkeyParams dsa_params;
  dsa_params.md = ACCELCRYPT_ALG_SHA256;
  PkeyParams raw;
  raw.padding = ACCELCRYPT_PAD_NONE;
  const long before = flipped();
  control("flip=4");
  int wrong = 0, token_served = 0;
  constexpr int kRounds = 400;
  for (int i = 0; i < kRounds; ++i) {
    std::vector<uint8_t> digest = Digest("fault " + std::to_string(i));
    std::vector<uint8_t> sig(256);
    auto len = (*rsa_ops)->Sign(Pkcs1(), digest, absl::MakeSpan(sig));
    ASSERT_TRUE(len.ok()) << len.status();
    sig.resize(*len);
    if (!(*rsa_check)->Verify(Pkcs1(), digest, sig).ok()) ++wrong;
    if ((*rsa_ops)->last_backend() == "pkcs11") ++token_served;
    if (i % 4 == 0) {
      std::vector<uint8_t> dsig((*dsa_ops)->SignatureSize());
      auto dlen = (*dsa_ops)->Sign(dsa_params, digest, absl::MakeSpan(dsig));
      ASSERT_TRUE(dlen.ok()) << dlen.status();
      dsig.resize(*dlen);
      if (!(*dsa_check)->Verify(dsa_params, digest, dsig).ok()) ++wrong;
      // Raw decryption of a known value: the check re-encrypts on the CPU.
      std::vector<uint8_t> m(256, 0);
      for (size_t j = 1; j < m.size(); ++j) m[j] = static_cast<uint8_t>(i + j);
      std::vector<uint8_t> c(256), back(256);
      auto clen = (*rsa_ops)->Encrypt(raw, m, absl::MakeSpan(c));
      ASSERT_TRUE(clen.ok()) << clen.status();
      auto plen = (*rsa_ops)->Decrypt(raw, c, absl::MakeSpan(back));
      ASSERT_TRUE(plen.ok()) << plen.status();
      back.resize(*plen);
      if (back != m) ++wrong;
    }
  }
  control("flip=0");
  const long injected = flipped() - before;
  EXPECT_EQ(wrong, 0) << "wrong results reached the caller";
  EXPECT_GT(injected, kRounds / 8) << "the shim injected too few faults";
  const uint64_t errors =
      cell("pkcs11", ACCELCRYPT_ALG_RSA_SIGN).errors.load() +
      cell("pkcs11", ACCELCRYPT_ALG_DSA_SIGN).errors.load() +
      cell("pkcs11", ACCELCRYPT_ALG_RSA_CRYPT).errors.load();
  // Every injected fault was caught and counted as a device error (the raw
  // decryptions may have gone to a CPU backend: then the token never saw
  // them and nothing was flipped there).
  EXPECT_EQ(errors, static_cast<uint64_t>(injected));
  EXPECT_GT(token_served, kRounds / 2) << "the token should serve most";
  EXPECT_GT(cell("software", ACCELCRYPT_ALG_RSA_SIGN).ops.load(), 0u)
      << "software served the refused ones";
}

// Result codes by which a token says it failed (issue 17 item 5): a
// CKR_BUFFER_TOO_SMALL for a buffer of the full result size, CKR_GENERAL_ERROR,
// CKR_DEVICE_*, CKR_FUNCTION_FAILED, a session lost mid-operation. The
// latency shim injects each on one C_Sign and one C_Decrypt; the router
// falls back, the application gets the right signature and plaintext, the
// token's error and fallback counters move and software serves. Codes that
// mean the caller's data is bad stay the caller's error: no fallback. The
// shim reports its own token model, so no quirk of the real token applies.
TEST_F(Pkcs11ClientTest, TokenFaultCodesFallBackAndCallerCodesDoNot) {
  core_.reset();
  setenv("ACCELCRYPT_SHIM_MODULE", g_hsm->module().c_str(), 1);
  setenv("ACCELCRYPT_SHIM_MANUFACTURER", "accelcrypt tests", 1);
  auto overrides = g_hsm->Overrides();
  overrides["pkcs11.module"] = ACCELCRYPT_LATENCY_SHIM;
  overrides["breaker_threshold"] = "1000000";
  auto core = MakeCore(overrides);
  unsetenv("ACCELCRYPT_SHIM_MANUFACTURER");
  ASSERT_TRUE(core.ok()) << core.status();
  const Backend* token = (*core)->registry().Find("pkcs11");
  ASSERT_NE(token, nullptr) << LoadMessage(**core);
  EXPECT_EQ(token->Describe().find("quirks="), std::string::npos)
      << token->Describe();
  (*core)->router().SelfTestAll();
  void* shim = dlopen(ACCELCRYPT_LATENCY_SHIM, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(shim, nullptr);
  auto control = reinterpret_cast<long (*)(const char*)>(
      dlsym(shim, "accelcrypt_shim_control"));
  ASSERT_NE(control, nullptr);
  Stats& stats = (*core)->stats();
  auto cell = [&](const char* backend, accelcrypt_alg alg) -> Counter& {
    return stats.Cell(stats.RegisterBackend(backend), *FindAlgorithm(alg));
  };
  Counter& tok_sign = cell("pkcs11", ACCELCRYPT_ALG_RSA_SIGN);
  Counter& soft_sign = cell("software", ACCELCRYPT_ALG_RSA_SIGN);
  Counter& tok_crypt = cell("pkcs11", ACCELCRYPT_ALG_RSA_CRYPT);
  Counter& soft_crypt = cell("software", ACCELCRYPT_ALG_RSA_CRYPT);
  KeyMaterial key = RsaKey(2048);
  auto ops = (*core)->router().NewPublicKeyOps(key);
  ASSERT_TRUE(ops.ok());
  auto verifier = (*core)
                      ->registry()
                      .Find("software")
                      ->LoadKey(ACCELCRYPT_ALG_RSA_SIGN, PublicOnly(key));
  ASSERT_TRUE(verifier.ok());
  PkeyParams pkcs1;
  pkcs1.padding = ACCELCRYPT_PAD_PKCS1;
  const std::vector<uint8_t> msg = Digest("fault codes");
  std::vector<uint8_t> ct(256);
  auto ct_len = (*ops)->Encrypt(pkcs1, msg, absl::MakeSpan(ct));
  ASSERT_TRUE(ct_len.ok()) << ct_len.status();
  ct.resize(*ct_len);

  for (const char* fault :
       {"CKR_BUFFER_TOO_SMALL", "CKR_GENERAL_ERROR", "CKR_DEVICE_ERROR",
        "CKR_DEVICE_MEMORY", "CKR_DEVICE_REMOVED", "CKR_SESSION_HANDLE_INVALID",
        "CKR_FUNCTION_FAILED"}) {
    SCOPED_TRACE(fault);
    const uint64_t sign_errors = tok_sign.errors.load();
    const uint64_t sign_fallbacks = tok_sign.fallbacks.load();
    const uint64_t soft_signs = soft_sign.ops.load();
    control(absl::StrFormat("fail=%s,count=1", fault).c_str());
    std::vector<uint8_t> sig(256);
    auto len = (*ops)->Sign(Pkcs1(), msg, absl::MakeSpan(sig));
    ASSERT_TRUE(len.ok()) << len.status();
    EXPECT_EQ((*ops)->last_backend(), "software");
    EXPECT_TRUE((*verifier)->Verify(Pkcs1(), msg, sig).ok());
    EXPECT_EQ(tok_sign.errors.load(), sign_errors + 1);
    EXPECT_EQ(tok_sign.fallbacks.load(), sign_fallbacks + 1);
    EXPECT_EQ(soft_sign.ops.load(), soft_signs + 1);

    const uint64_t crypt_errors = tok_crypt.errors.load();
    const uint64_t soft_decrypts = soft_crypt.ops.load();
    control(absl::StrFormat("fail=%s,count=1", fault).c_str());
    std::vector<uint8_t> pt(256);
    auto pt_len = (*ops)->Decrypt(pkcs1, ct, absl::MakeSpan(pt));
    ASSERT_TRUE(pt_len.ok()) << pt_len.status();
    pt.resize(*pt_len);
    EXPECT_EQ(pt, msg);
    EXPECT_EQ((*ops)->last_backend(), "software");
    EXPECT_EQ(tok_crypt.errors.load(), crypt_errors + 1);
    EXPECT_EQ(soft_crypt.ops.load(), soft_decrypts + 1);
    // The token serves the next one again.
    ASSERT_TRUE((*ops)->Sign(Pkcs1(), msg, absl::MakeSpan(sig)).ok());
    EXPECT_EQ((*ops)->last_backend(), "pkcs11");
  }

  for (const char* caller :
       {"CKR_ENCRYPTED_DATA_INVALID", "CKR_ENCRYPTED_DATA_LEN_RANGE",
        "CKR_DATA_LEN_RANGE"}) {
    SCOPED_TRACE(caller);
    const uint64_t crypt_errors = tok_crypt.errors.load();
    const uint64_t fallbacks = tok_crypt.fallbacks.load();
    const uint64_t soft_decrypts = soft_crypt.ops.load();
    control(absl::StrFormat("fail=%s,count=1", caller).c_str());
    std::vector<uint8_t> pt(256);
    auto pt_len = (*ops)->Decrypt(pkcs1, ct, absl::MakeSpan(pt));
    EXPECT_EQ(pt_len.status().code(), absl::StatusCode::kInvalidArgument)
        << pt_len.status();
    EXPECT_EQ(tok_crypt.errors.load(), crypt_errors);
    EXPECT_EQ(tok_crypt.fallbacks.load(), fallbacks);
    EXPECT_EQ(soft_crypt.ops.load(), soft_decrypts);
  }
}

// A ciphertext whose padding does not check is the caller's error on every
// token, also on one that reports it as CKR_GENERAL_ERROR (SoftHSMv2; the
// client backend's quirk table, keyed by the token's manufacturer and
// model, says so): the router never re-runs it elsewhere, which would make
// the token's padding check a timing oracle (a fallback takes far longer)
// or, on a backend with implicit rejection, a success. The token is not
// counted as failing, and many bad ciphertexts do not take it out of
// rotation.
TEST_F(Pkcs11ClientTest, BadPaddingIsNeverAFallback) {
  KeyMaterial key = RsaKey(2048);
  auto ops = core_->router().NewPublicKeyOps(key);
  ASSERT_TRUE(ops.ok());
  Counter& tok = Cell("pkcs11", ACCELCRYPT_ALG_RSA_CRYPT);
  Counter& soft = Cell("software", ACCELCRYPT_ALG_RSA_CRYPT);
  PkeyParams oaep;
  oaep.padding = ACCELCRYPT_PAD_OAEP;
  oaep.md = ACCELCRYPT_ALG_SHA1;
  PkeyParams pkcs1;
  pkcs1.padding = ACCELCRYPT_PAD_PKCS1;
  const std::vector<uint8_t> msg = Digest("padding");
  for (const PkeyParams& params : {pkcs1, oaep}) {
    std::vector<uint8_t> ct(256), pt(256);
    auto ct_len = (*ops)->Encrypt(params, msg, absl::MakeSpan(ct));
    ASSERT_TRUE(ct_len.ok()) << ct_len.status();
    ct.resize(*ct_len);
    const uint64_t errors = tok.errors.load(), soft_ops = soft.ops.load();
    for (int i = 0; i < 12; ++i) {
      std::vector<uint8_t> bad = ct;
      bad[20 + i] ^= 0x5a;
      auto len = (*ops)->Decrypt(params, bad, absl::MakeSpan(pt));
      EXPECT_EQ(len.status().code(), absl::StatusCode::kInvalidArgument)
          << len.status();
    }
    EXPECT_EQ(tok.errors.load(), errors) << "bad padding counted as a fault";
    EXPECT_EQ(soft.ops.load(), soft_ops) << "bad padding re-run in software";
    auto len = (*ops)->Decrypt(params, ct, absl::MakeSpan(pt));
    ASSERT_TRUE(len.ok()) << len.status();
    EXPECT_EQ((*ops)->last_backend(), "pkcs11");
    pt.resize(*len);
    EXPECT_EQ(pt, msg);
  }
}

// The quirk follows the token model, whatever the cause: through the shim
// with SoftHSMv2's identity, an injected CKR_GENERAL_ERROR on C_Decrypt is
// reported as a bad ciphertext (no fallback), while the same code on
// C_Sign is a device fault (fallback). (For a model without the quirk the
// same decryption fault falls back:
// TokenFaultCodesFallBackAndCallerCodesDoNot.)
TEST_F(Pkcs11ClientTest, QuirkTableIsKeyedByTheTokenModel) {
  if (g_hsm->module().find("softhsm") == std::string::npos) {
    GTEST_SKIP() << "the fixture token is not SoftHSMv2";
  }
  core_.reset();
  setenv("ACCELCRYPT_SHIM_MODULE", g_hsm->module().c_str(), 1);
  unsetenv("ACCELCRYPT_SHIM_MANUFACTURER");
  auto overrides = g_hsm->Overrides();
  overrides["pkcs11.module"] = ACCELCRYPT_LATENCY_SHIM;
  overrides["breaker_threshold"] = "1000000";
  auto core = MakeCore(overrides);
  ASSERT_TRUE(core.ok()) << core.status();
  const Backend* token = (*core)->registry().Find("pkcs11");
  ASSERT_NE(token, nullptr) << LoadMessage(**core);
  EXPECT_NE(token->Describe().find("quirks=decrypt_failure_is_general_error"),
            std::string::npos)
      << token->Describe();
  (*core)->router().SelfTestAll();
  void* shim = dlopen(ACCELCRYPT_LATENCY_SHIM, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(shim, nullptr);
  auto control = reinterpret_cast<long (*)(const char*)>(
      dlsym(shim, "accelcrypt_shim_control"));
  ASSERT_NE(control, nullptr);
  Stats& stats = (*core)->stats();
  Counter& soft_crypt = stats.Cell(stats.RegisterBackend("software"),
                                   *FindAlgorithm(ACCELCRYPT_ALG_RSA_CRYPT));
  KeyMaterial key = RsaKey(2048);
  auto ops = (*core)->router().NewPublicKeyOps(key);
  ASSERT_TRUE(ops.ok());
  PkeyParams pkcs1;
  pkcs1.padding = ACCELCRYPT_PAD_PKCS1;
  const std::vector<uint8_t> msg = Digest("quirk");
  std::vector<uint8_t> ct(256), pt(256), sig(256);
  auto ct_len = (*ops)->Encrypt(pkcs1, msg, absl::MakeSpan(ct));
  ASSERT_TRUE(ct_len.ok());
  ct.resize(*ct_len);
  const uint64_t soft_decrypts = soft_crypt.ops.load();
  control("fail=CKR_GENERAL_ERROR,count=1");
  auto len = (*ops)->Decrypt(pkcs1, ct, absl::MakeSpan(pt));
  EXPECT_EQ(len.status().code(), absl::StatusCode::kInvalidArgument)
      << len.status();
  EXPECT_EQ(soft_crypt.ops.load(), soft_decrypts);
  control("fail=CKR_GENERAL_ERROR,count=1");
  ASSERT_TRUE((*ops)->Sign(Pkcs1(), msg, absl::MakeSpan(sig)).ok());
  EXPECT_EQ((*ops)->last_backend(), "software");
}

// A key generated on the token (pkcs11-tool, as an administrator would) is
// used in place through its RFC 7512 URI: nothing is imported, software
// cannot serve it, the token signs and verifies.
TEST_F(Pkcs11ClientTest, TokenKeyByUriIsUsedInPlace) {
  if (access("/usr/bin/pkcs11-tool", X_OK) != 0) {
    GTEST_SKIP() << "pkcs11-tool (Debian package opensc) is not installed";
  }
  std::string cmd = absl::StrFormat(
      "pkcs11-tool --module %s --token-label %s --login --pin %s "
      "--keypairgen --key-type rsa:2048 --label 'tok key' --id 4711 "
      ">%s/keygen.log 2>&1",
      g_hsm->module(), g_hsm->label(), g_hsm->pin(), g_hsm->dir());
  if (std::system(cmd.c_str()) != 0) {
    // The directory goes with the fixture: show pkcs11-tool's output here.
    std::ifstream in(g_hsm->dir() + "/keygen.log");
    FAIL() << "pkcs11-tool --keypairgen failed:\n"
           << std::string(std::istreambuf_iterator<char>(in),
                          std::istreambuf_iterator<char>());
  }
  uint64_t before = Created(*pkcs11_);
  KeyMaterial key;
  key.uri =
      absl::StrFormat("pkcs11:token=%s;object=tok%%20key", g_hsm->label());
  auto ops = core_->router().NewPublicKeyOps(key);
  ASSERT_TRUE(ops.ok()) << ops.status();
  std::vector<uint8_t> digest = Digest("in place"), sig(512);
  for (const PkeyParams& params : {Pkcs1(), Pss()}) {
    auto len = (*ops)->Sign(params, digest, absl::MakeSpan(sig));
    ASSERT_TRUE(len.ok()) << len.status();
    EXPECT_EQ(*len, 256u);
    EXPECT_EQ((*ops)->last_backend(), "pkcs11");
    std::vector<uint8_t> s(sig.begin(), sig.begin() + *len);
    EXPECT_TRUE((*ops)->Verify(params, digest, s).ok());
    s[7] ^= 1;
    EXPECT_EQ(GetStatusDetail((*ops)->Verify(params, digest, s)),
              StatusDetail::kAuthFailed);
  }
  EXPECT_EQ(Created(*pkcs11_), before);  // used in place, never imported
  // By id as well; a URI for another token or object is not served.
  KeyMaterial by_id;
  by_id.uri = "pkcs11:id=%47%11";
  auto id_ops = core_->router().NewPublicKeyOps(by_id);
  ASSERT_TRUE(id_ops.ok());
  EXPECT_TRUE((*id_ops)->Sign(Pkcs1(), digest, absl::MakeSpan(sig)).ok());
  for (const char* uri :
       {"pkcs11:token=other;object=tok%20key", "pkcs11:object=missing"}) {
    KeyMaterial other;
    other.uri = uri;
    auto other_ops = core_->router().NewPublicKeyOps(other);
    ASSERT_TRUE(other_ops.ok());
    auto st = (*other_ops)->Sign(Pkcs1(), digest, absl::MakeSpan(sig));
    EXPECT_FALSE(st.ok()) << uri;
    EXPECT_EQ(st.status().code(), absl::StatusCode::kUnimplemented)
        << uri << ": " << st.status();
  }
}

// Router::DescribeTokenKey turns a URI into a key with the public parts
// read from the token (RSA n, e; DSA p, q, g, y), equal to what was put on
// it; that key routes by its size, signs on the token and verifies in
// software. Unknown objects and non-pkcs11 URIs are clear errors.
TEST_F(Pkcs11ClientTest, DescribeTokenKeyReadsThePublicPartsFromTheToken) {
  const KeyMaterial rsa = RsaKey(2048);
  const KeyMaterial dsa = DsaKeyFromVectors();
  ASSERT_TRUE(g_hsm->Import(rsa, "desc rsa", "0a01").ok());
  ASSERT_TRUE(g_hsm->Import(dsa, "desc dsa", "0a02").ok());
  const uint64_t before = Created(*pkcs11_);
  std::vector<uint8_t> digest = Digest("described");
  PkeyParams dsa_params;
  dsa_params.md = ACCELCRYPT_ALG_SHA256;
  struct Case {
    std::string uri;
    const KeyMaterial* put;
    PkeyParams params;
  } cases[] = {
      {absl::StrFormat("pkcs11:token=%s;object=desc%%20rsa;type=private",
                       g_hsm->label()),
       &rsa, Pkcs1()},
      {"pkcs11:id=%0a%01", &rsa, Pss()},
      {"pkcs11:object=desc%20dsa;type=private", &dsa, dsa_params},
  };
  for (const Case& c : cases) {
    auto key = core_->router().DescribeTokenKey(c.uri);
    ASSERT_TRUE(key.ok()) << c.uri << ": " << key.status();
    EXPECT_EQ(key->uri, c.uri);
    EXPECT_EQ(key->type, c.put->type);
    EXPECT_FALSE(key->has_private_material());
    EXPECT_TRUE(key->has_public()) << c.uri;
    EXPECT_EQ(key->bits(), c.put->bits());
    EXPECT_EQ(key->n, c.put->n);
    EXPECT_EQ(key->e, c.put->e);
    EXPECT_EQ(key->dsa_p, c.put->dsa_p);
    EXPECT_EQ(key->dsa_q, c.put->dsa_q);
    EXPECT_EQ(key->dsa_g, c.put->dsa_g);
    EXPECT_EQ(key->dsa_y, c.put->dsa_y);
    auto ops = core_->router().NewPublicKeyOps(*key);
    ASSERT_TRUE(ops.ok());
    std::vector<uint8_t> sig((*ops)->SignatureSize());
    auto len = (*ops)->Sign(c.params, digest, absl::MakeSpan(sig));
    ASSERT_TRUE(len.ok()) << c.uri << ": " << len.status();
    EXPECT_EQ((*ops)->last_backend(), "pkcs11");
    sig.resize(*len);
    // The public parts alone verify in software.
    auto alg = key->type == KeyMaterial::Type::kRsa ? ACCELCRYPT_ALG_RSA_SIGN
                                                    : ACCELCRYPT_ALG_DSA_SIGN;
    auto sw = software_->LoadKey(alg, PublicOnly(*key));
    ASSERT_TRUE(sw.ok()) << sw.status();
    EXPECT_TRUE((*sw)->Verify(c.params, digest, sig).ok()) << c.uri;
    sig[sig.size() / 2] ^= 1;
    EXPECT_FALSE((*sw)->Verify(c.params, digest, sig).ok());
  }
  EXPECT_EQ(Created(*pkcs11_), before);  // used in place, nothing imported
  // A private key without its public object: n and e come from the private
  // key object's own public attributes.
  std::string del = absl::StrFormat(
      "pkcs11-tool --module %s --token-label %s --login --pin %s "
      "--delete-object --type pubkey --id 0a01 >%s/delete.log 2>&1",
      g_hsm->module(), g_hsm->label(), g_hsm->pin(), g_hsm->dir());
  if (access("/usr/bin/pkcs11-tool", X_OK) == 0 &&
      std::system(del.c_str()) == 0) {
    auto core = MakeCore(g_hsm->Overrides());  // a fresh URI cache
    ASSERT_TRUE(core.ok());
    auto key = (*core)->router().DescribeTokenKey("pkcs11:object=desc%20rsa");
    ASSERT_TRUE(key.ok()) << key.status();
    EXPECT_EQ(key->n, rsa.n);
    EXPECT_EQ(key->e, rsa.e);
  }
  // Errors.
  auto missing = core_->router().DescribeTokenKey("pkcs11:object=nothing");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("no key on token"),
            std::string::npos)
      << missing.status();
  auto other = core_->router().DescribeTokenKey(
      "pkcs11:token=elsewhere;object=desc%20rsa");
  EXPECT_EQ(other.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(
      core_->router().DescribeTokenKey("file:/etc/passwd").status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(core_->router().DescribeTokenKey("pkcs11:id=%zz").status().code(),
            absl::StatusCode::kInvalidArgument);
  // A PIN in the URI never shows in a message.
  auto pinned = core_->router().DescribeTokenKey(
      "pkcs11:object=nothing?pin-value=secret");
  EXPECT_EQ(pinned.status().message().find("secret"), std::string::npos);
}

// A key whose private half lives only on the token: when the token fails,
// the caller gets the token's error (the software backend, holding the
// public parts, cannot sign and is not what the message is about), and the
// next call signs on the token again. offload_min_bits does not apply to
// such a key.
TEST_F(Pkcs11ClientTest, TokenOnlyKeyFailsClearlyWhenTheTokenFails) {
  core_.reset();
  const KeyMaterial rsa = RsaKey(2048);
  ASSERT_TRUE(g_hsm->Import(rsa, "fail rsa", "0b01").ok());
  setenv("ACCELCRYPT_SHIM_MODULE", g_hsm->module().c_str(), 1);
  auto overrides = g_hsm->Overrides();
  overrides["pkcs11.module"] = ACCELCRYPT_LATENCY_SHIM;
  overrides["offload_min_bits"] = "4096";
  auto core = MakeCore(overrides);
  ASSERT_TRUE(core.ok());
  ASSERT_NE((*core)->registry().Find("pkcs11"), nullptr) << LoadMessage(**core);
  void* shim = dlopen(ACCELCRYPT_LATENCY_SHIM, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(shim, nullptr);
  auto control = reinterpret_cast<long (*)(const char*)>(
      dlsym(shim, "accelcrypt_shim_control"));
  ASSERT_NE(control, nullptr);
  auto key = (*core)->router().DescribeTokenKey("pkcs11:object=fail%20rsa");
  ASSERT_TRUE(key.ok()) << key.status();
  auto ops = (*core)->router().NewPublicKeyOps(*key);
  ASSERT_TRUE(ops.ok());
  std::vector<uint8_t> digest = Digest("token only"), sig(256);
  ASSERT_TRUE((*ops)->Sign(Pkcs1(), digest, absl::MakeSpan(sig)).ok());
  EXPECT_EQ((*ops)->last_backend(), "pkcs11");  // below the threshold, too
  control("fail=CKR_DEVICE_REMOVED,count=1");
  auto failed = (*ops)->Sign(Pkcs1(), digest, absl::MakeSpan(sig));
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnavailable)
      << failed.status();
  EXPECT_NE(failed.status().message().find("stays on its token"),
            std::string::npos)
      << failed.status();
  EXPECT_NE(failed.status().message().find("CKR_DEVICE_REMOVED"),
            std::string::npos)
      << failed.status();
  auto again = (*ops)->Sign(Pkcs1(), digest, absl::MakeSpan(sig));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*ops)->last_backend(), "pkcs11");
  EXPECT_TRUE((*ops)->Verify(Pkcs1(), digest, sig).ok());
}

// No PIN source configured: the backend still registers (its self-test
// keys become public session objects), and a URI carrying the PIN
// (pin-value, or pin-source naming a file) logs in so the token's private
// key can be found and used. A wrong PIN is a caller error whose message
// does not contain it.
TEST_F(Pkcs11ClientTest, PinFromTheUriLogsInWhenNoneIsConfigured) {
  core_.reset();
  const KeyMaterial rsa = RsaKey(2048);
  ASSERT_TRUE(g_hsm->Import(rsa, "pin rsa", "0c01").ok());
  auto overrides = g_hsm->Overrides();
  overrides.erase("pkcs11.pin_file");
  const std::string pin_source = g_hsm->dir() + "/uri-pin";
  { std::ofstream(pin_source) << g_hsm->pin() << "\n"; }
  std::vector<uint8_t> digest = Digest("uri pin"), sig(256);
  // (The login state belongs to the module, shared by every core in
  // this process: each case gets a fresh core, and the wrong PIN is tried
  // last, once every core that logged in is gone.)
  struct Case {
    std::string query;
    bool ok;
  } cases[] = {
      {absl::StrFormat("?pin-value=%s", g_hsm->pin()), true},
      {"?pin-source=file:" + pin_source, true},
  };
  for (const Case& c : cases) {
    auto core = MakeCore(overrides);
    ASSERT_TRUE(core.ok());
    const accelcrypt_capability* cap =
        (*core)->registry().Find("pkcs11")->Capability(ACCELCRYPT_ALG_RSA_SIGN);
    ASSERT_NE(cap, nullptr) << "no PIN: RSA signing must still register\n"
                            << LoadMessage(**core);
    const std::string uri = "pkcs11:object=pin%20rsa;type=private" + c.query;
    auto key = (*core)->router().DescribeTokenKey(uri);
    if (!c.ok) {
      EXPECT_FALSE(key.ok()) << c.query;
      EXPECT_EQ(key.status().message().find("0000-wrong"), std::string::npos);
      continue;
    }
    ASSERT_TRUE(key.ok()) << c.query << ": " << key.status();
    EXPECT_EQ(key->n, rsa.n);
    auto ops = (*core)->router().NewPublicKeyOps(*key);
    ASSERT_TRUE(ops.ok());
    auto len = (*ops)->Sign(Pkcs1(), digest, absl::MakeSpan(sig));
    ASSERT_TRUE(len.ok()) << len.status();
    EXPECT_EQ((*ops)->last_backend(), "pkcs11");
    auto sw = (*core)
                  ->registry()
                  .Find("software")
                  ->LoadKey(ACCELCRYPT_ALG_RSA_SIGN, PublicOnly(rsa));
    ASSERT_TRUE(sw.ok());
    EXPECT_TRUE((*sw)->Verify(Pkcs1(), digest, sig).ok());
  }
  auto wrong = MakeCore(overrides);
  ASSERT_TRUE(wrong.ok());
  auto st = (*wrong)->router().DescribeTokenKey(
      "pkcs11:object=pin%20rsa?pin-value=0000-wrong");
  EXPECT_EQ(st.status().code(), absl::StatusCode::kInvalidArgument)
      << st.status();
  EXPECT_NE(st.status().message().find("CKR_PIN_INCORRECT"), std::string::npos)
      << st.status();
}

// A wrong PIN in pin_file: loading spends no login (the backend registers,
// self-tests included); the first use of a token key tries the PIN once and
// writes a marker; later cores (as later processes would) refuse to try it
// again with a clear message; the correct PIN clears the block.
TEST_F(Pkcs11ClientTest, WrongPinIsTriedOnceThenBlockedUntilItChanges) {
  core_.reset();
  pkcs11_ = software_ = nullptr;
  const KeyMaterial rsa = RsaKey(2048);
  ASSERT_TRUE(g_hsm->Import(rsa, "wrong pin rsa", "0c02").ok());
  const std::string wrong_pin = g_hsm->dir() + "/wrong-pin";
  { std::ofstream(wrong_pin) << "0000-wrong\n"; }
  const std::string state = g_hsm->dir() + "/state-wrong";
  auto overrides = g_hsm->Overrides();
  overrides["pkcs11.pin_file"] = wrong_pin;
  overrides["pkcs11.pin_state_dir"] = state;
  const std::string uri = "pkcs11:object=wrong%20pin%20rsa;type=private";
  auto count_markers = [&] {
    int n = 0;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(state, ec)) {
      if (e.path().extension() == ".marker") ++n;
    }
    return n;
  };
  {
    auto core = MakeCore(overrides);
    ASSERT_TRUE(core.ok());
    Backend* p11 = (*core)->registry().Find("pkcs11");
    ASSERT_NE(p11, nullptr) << LoadMessage(**core);
    EXPECT_NE(p11->Describe().find("login=on first use"), std::string::npos)
        << p11->Describe();
    EXPECT_EQ(count_markers(), 0);
    auto key = (*core)->router().DescribeTokenKey(uri);
    ASSERT_FALSE(key.ok());
    EXPECT_NE(key.status().message().find("CKR_PIN_INCORRECT"),
              std::string::npos)
        << key.status();
    EXPECT_NE(key.status().message().find("will not be tried again"),
              std::string::npos)
        << key.status();
    EXPECT_EQ(key.status().message().find("0000-wrong"), std::string::npos);
    EXPECT_EQ(count_markers(), 1);
    // Same process: remembered, not tried again.
    auto again = (*core)->router().DescribeTokenKey(uri);
    ASSERT_FALSE(again.ok());
    EXPECT_NE(again.status().message().find("refused earlier"),
              std::string::npos)
        << again.status();
    // Imported keys still work (no login needed, or software fallback).
    auto ops = (*core)->router().NewPublicKeyOps(rsa);
    ASSERT_TRUE(ops.ok());
    std::vector<uint8_t> digest = Digest("blocked"), sig(256);
    ASSERT_TRUE((*ops)->Sign(Pkcs1(), digest, absl::MakeSpan(sig)).ok());
  }
  {
    // A later core reads the marker: blocked, and `list` would say so.
    auto core = MakeCore(overrides);
    ASSERT_TRUE(core.ok());
    Backend* p11 = (*core)->registry().Find("pkcs11");
    ASSERT_NE(p11, nullptr);
    EXPECT_NE(p11->Describe().find("login=BLOCKED"), std::string::npos)
        << p11->Describe();
    auto key = (*core)->router().DescribeTokenKey(uri);
    ASSERT_FALSE(key.ok());
    EXPECT_NE(key.status().message().find("refused earlier"), std::string::npos)
        << key.status();
    EXPECT_NE(key.status().message().find("accelcrypt pin-reset"),
              std::string::npos)
        << key.status();
  }
  {
    // The PIN source now holds the right PIN: the marker is dropped and the
    // login works.
    { std::ofstream(wrong_pin) << g_hsm->pin() << "\n"; }
    auto core = MakeCore(overrides);
    ASSERT_TRUE(core.ok());
    auto key = (*core)->router().DescribeTokenKey(uri);
    ASSERT_TRUE(key.ok()) << key.status();
    EXPECT_EQ(key->n, rsa.n);
    EXPECT_EQ(count_markers(), 0);
    EXPECT_NE((*core)->registry().Find("pkcs11")->Describe().find("login=done"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace accelcrypt::testing
