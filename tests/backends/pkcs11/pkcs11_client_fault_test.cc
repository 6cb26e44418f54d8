// SPDX-License-Identifier: Apache-2.0
// The PKCS#11 client backend when the token fails or lies: fallback and the
// breaker, results checked on the CPU, fault codes against caller codes, bad
// padding never a fallback, the quirk table.
// Fixture and helpers: pkcs11_client_fixture.h.
#include <dlfcn.h>
#include <stdlib.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
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
  auto control = OpenLatencyShim(ACCELCRYPT_LATENCY_SHIM).control;
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
  const LatencyShim shim = OpenLatencyShim(ACCELCRYPT_LATENCY_SHIM);
  auto control = shim.control;
  auto flipped = shim.flipped;
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

// SoftHSMv2 answers "not initialised" for its token while a refused login
// rewrites the token file; a process starting then used to run without its
// client backend for its whole life. The token list is read again (3 more
// times, 5 ms apart) when a present token is not initialised; a token that
// stays so makes the backend decline with the reason.
TEST_F(Pkcs11ClientTest, ATokenSeenUninitialisedForAMomentIsReadAgain) {
  setenv("ACCELCRYPT_SHIM_MODULE", g_hsm->module().c_str(), 1);
  // Loaded here first, so that its control is set before the core's
  // client backend opens it (the same handle).
  const LatencyShim shim =
      OpenLatencyShim(ACCELCRYPT_LATENCY_SHIM, /*load=*/true);
  ASSERT_NE(shim.handle, nullptr) << dlerror();
  auto control = shim.control;
  ASSERT_NE(control, nullptr);
  auto overrides = g_hsm->Overrides();
  overrides["pkcs11.module"] = ACCELCRYPT_LATENCY_SHIM;
  // The first two answers (one pass over SoftHSMv2's two slots) say
  // "not initialised": the second pass finds the token.
  control("uninit=2");
  {
    auto core = MakeCore(overrides);
    ASSERT_TRUE(core.ok()) << core.status();
    EXPECT_NE((*core)->registry().Find("pkcs11"), nullptr)
        << LoadMessage(**core);
  }
  // Never initialised within the retries: declined, with the reason.
  control("uninit=1000");
  {
    auto core = MakeCore(overrides);
    ASSERT_TRUE(core.ok()) << core.status();
    EXPECT_EQ((*core)->registry().Find("pkcs11"), nullptr);
    EXPECT_NE(LoadMessage(**core).find("no initialised token"),
              std::string::npos)
        << LoadMessage(**core);
  }
  control("uninit=0");
  dlclose(shim.handle);
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
  auto control = OpenLatencyShim(ACCELCRYPT_LATENCY_SHIM).control;
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
  auto control = OpenLatencyShim(ACCELCRYPT_LATENCY_SHIM).control;
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

}  // namespace
}  // namespace accelcrypt::testing
