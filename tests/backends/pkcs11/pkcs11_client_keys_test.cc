// SPDX-License-Identifier: Apache-2.0
// The PKCS#11 client backend's key operations on the token, cross-checked
// with the software backend: RSA and DSA signatures, OAEP and PKCS#1
// encryption, key import, fork, threads, refused sizes and buffers, a raw
// RSA-only token.
// Fixture and helpers: pkcs11_client_fixture.h.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "core/backend.h"
#include "core/core.h"
#include "core/pkey.h"
#include "core/status.h"
#include "gtest/gtest.h"
#include "tests/backends/pkcs11/pkcs11_client_fixture.h"
#include "tests/backends/pkcs11/softhsm_fixture.h"
#include "tests/backends/pkcs11/token_fixture.h"
#include "tests/support/test_env.h"

namespace accelcrypt::testing {
namespace {

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

}  // namespace
}  // namespace accelcrypt::testing
