// SPDX-License-Identifier: Apache-2.0
// The PKCS#11 client backend with keys that live on the token: RFC 7512
// URIs, public parts read from the token, token-only keys, PINs from the URI
// and a wrong PIN tried once.
// Fixture and helpers: pkcs11_client_fixture.h.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
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
  auto control = OpenLatencyShim(ACCELCRYPT_LATENCY_SHIM).control;
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

// A token key named by its URI whose modulus is not a whole number of bytes
// (2047 bits), on a raw-RSA-only token: the backend pads PSS itself with
// emBits = modBits - 1 (RFC 8017 section 9.1.1), modBits read from the
// token's CKA_MODULUS (it once took the byte length times 8: then the
// encoding's top bit is random, so about every other signature failed;
// 16 signatures with random salts leave that 1 chance in 65,536).
TEST_F(Pkcs11ClientTest, UriKeyWithAnOddModulusSignsPssOnARawOnlyToken) {
  const KeyMaterial key = RsaKey(2047);
  ASSERT_EQ(key.n.size(), 256u);
  ASSERT_LT(key.n[0], 0x80);
  ASSERT_TRUE(g_hsm->Import(key, "odd rsa", "0b0b").ok());
  auto overrides = g_hsm->Overrides();
  overrides["pkcs11.hide_mechanisms"] =
      "CKM_RSA_PKCS, CKM_RSA_PKCS_PSS, CKM_RSA_PKCS_OAEP";
  auto core = MakeCore(overrides);
  ASSERT_TRUE(core.ok()) << core.status();
  KeyMaterial by_uri;
  by_uri.uri = "pkcs11:object=odd%20rsa;type=private";
  auto ops = (*core)->router().NewPublicKeyOps(by_uri);
  ASSERT_TRUE(ops.ok()) << ops.status();
  auto sw = software_->LoadKey(ACCELCRYPT_ALG_RSA_SIGN, PublicOnly(key));
  ASSERT_TRUE(sw.ok()) << sw.status();
  const std::vector<uint8_t> digest = Digest("odd modulus");
  for (int i = 0; i < 16; ++i) {
    std::vector<uint8_t> sig(256);
    auto len = (*ops)->Sign(Pss(), digest, absl::MakeSpan(sig));
    ASSERT_TRUE(len.ok()) << i << ": " << len.status();
    EXPECT_EQ((*ops)->last_backend(), "pkcs11");
    sig.resize(*len);
    EXPECT_TRUE((*sw)->Verify(Pss(), digest, sig).ok()) << i;
  }
}

}  // namespace
}  // namespace accelcrypt::testing
