// SPDX-License-Identifier: Apache-2.0
// NIST CAVP RSA and DSA vector files run against every backend that claims
// the algorithm (software, the PKCS#11 client backend on the binary's
// TokenFixture, and the same token run as a raw-RSA-only one): SoftHSMv2
// when installed in pkey_vectors_test, accelcrypt's own module in
// tests/pkcs11/client_backend's p11_client_backend_vectors_test, which
// builds this same file. RSASP1 raw signatures must reproduce S exactly
// (the only deterministic private-key file with d), SigGen15 signatures
// must verify, SigVerPSS and DSA SigVer P/F results must be reproduced.
#include <openssl/evp.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/core.h"
#include "core/pkey.h"
#include "core/status.h"
#include "core/vector_file.h"
#include "gtest/gtest.h"
#include "tests/backends/pkcs11/softhsm_fixture.h"
#include "tests/backends/pkcs11/token_fixture.h"
#include "tests/support/test_env.h"
#include "tests/support/vector_digest.h"

namespace accelcrypt::testing {
namespace {

struct Env {
  std::unique_ptr<TokenFixture> hsm;
  std::unique_ptr<Core> core;
  // The same token run as a raw-RSA-only one (hide_mechanisms): PKCS#1 v1.5
  // and PSS padding in the backend over CKM_RSA_X_509.
  std::unique_ptr<Core> raw_core;
  std::string note;
};

Env& SharedEnv() {
  static Env* env = [] {
    auto* e = new Env();
    // The token directory goes at exit (after the handlers registered later,
    // such as accelcrypt-pkcs11's at C_Initialize, which writes its stats
    // there).
    std::atexit([] { SharedEnv().hsm.reset(); });
    auto hsm = CreateTokenFixture();
    std::map<std::string, std::string> overrides;
    if (hsm.ok()) {
      e->hsm = *std::move(hsm);
      overrides = e->hsm->Overrides();
    } else {
      e->note = std::string(hsm.status().message());
    }
    auto core = MakeCore(overrides);
    if (core.ok()) e->core = *std::move(core);
    if (e->hsm != nullptr) {
      overrides["backends"] = "pkcs11";
      overrides["pkcs11.hide_mechanisms"] =
          "CKM_RSA_PKCS, CKM_RSA_PKCS_PSS, CKM_RSA_PKCS_OAEP";
      auto raw = MakeCore(overrides);
      if (raw.ok()) e->raw_core = *std::move(raw);
    }
    return e;
  }();
  return *env;
}

std::vector<const Backend*> Claiming(accelcrypt_alg alg, uint32_t flag) {
  std::vector<const Backend*> out;
  for (Core* core : {SharedEnv().core.get(), SharedEnv().raw_core.get()}) {
    if (core == nullptr) continue;
    for (const auto& b : core->registry().backends()) {
      const accelcrypt_capability* cap = b->Capability(alg);
      if (cap != nullptr && (cap->flags & flag) == flag &&
          (cap->flags & ACCELCRYPT_CAP_KEY_IMPORT)) {
        out.push_back(b.get());
      }
    }
  }
  return out;
}

bool Fits(const Backend& b, accelcrypt_alg alg, size_t bits) {
  const accelcrypt_capability* cap = b.Capability(alg);
  return cap != nullptr && bits >= cap->min_key_bits &&
         bits <= cap->max_key_bits;
}

std::string Field(const VectorRecord& r, const char* key) {
  std::string v = r.Get(key);
  if (v.empty()) v = r.SectionValue(key).value_or("");
  return v;
}

VectorFile Load(const std::string& rel) {
  auto file = ParseVectorFile(VectorDir() + "/" + rel);
  EXPECT_TRUE(file.ok()) << file.status();
  return file.ok() ? *file : VectorFile{};
}

class PkeyVectorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(SharedEnv().core, nullptr);
    if (SharedEnv().hsm == nullptr) {
      ASSERT_FALSE(TokenFixtureRequired()) << "no token: " << SharedEnv().note;
      std::cerr << "note: PKCS#11 client backend not exercised: "
                << SharedEnv().note << "\n";
    } else {
      ASSERT_NE(SharedEnv().core->registry().Find("pkcs11"), nullptr)
          << "the token is here but the pkcs11 backend did not load";
      ASSERT_NE(SharedEnv().raw_core, nullptr);
      ASSERT_NE(SharedEnv().raw_core->registry().Find("pkcs11"), nullptr);
    }
  }
};

TEST_F(PkeyVectorsTest, RsaSp1RawPrivateOperation) {
  VectorFile file = Load("rsa/RSASP1.fax");
  auto backends = Claiming(ACCELCRYPT_ALG_RSA_SIGN, ACCELCRYPT_CAP_RSA_RAW);
  ASSERT_FALSE(backends.empty());
  for (const Backend* b : backends) {
    size_t passed = 0, refused = 0;
    for (const VectorRecord& r : file.records) {
      KeyMaterial key;
      key.n = FromHex(Field(r, "n"));
      key.e = FromHex(Field(r, "e"));
      key.d = FromHex(Field(r, "d"));
      if (!Fits(*b, ACCELCRYPT_ALG_RSA_SIGN, key.bits())) continue;
      auto loaded = b->LoadKey(ACCELCRYPT_ALG_RSA_SIGN, key);
      ASSERT_TRUE(loaded.ok())
          << b->name() << " line " << r.line << ": " << loaded.status();
      PkeyParams raw;
      raw.padding = ACCELCRYPT_PAD_NONE;
      std::vector<uint8_t> em = FromHex(r.Get("EM"));
      std::vector<uint8_t> s(key.n.size());
      auto len = (*loaded)->Sign(raw, em, absl::MakeSpan(s));
      if (r.Get("S").rfind("FAIL", 0) == 0) {
        EXPECT_FALSE(len.ok())
            << b->name() << " line " << r.line << ": EM >= n was accepted";
        EXPECT_FALSE(IsDeviceError(len.status())) << len.status();
        ++refused;
        continue;
      }
      ASSERT_TRUE(len.ok())
          << b->name() << " line " << r.line << ": " << len.status();
      s.resize(*len);
      EXPECT_EQ(ToHex(s), ToHex(FromHex(r.Get("S"))))
          << b->name() << " line " << r.line;
      ++passed;
    }
    EXPECT_EQ(passed, 15u) << b->name();
    EXPECT_EQ(refused, 15u) << b->name();
  }
}

TEST_F(PkeyVectorsTest, RsaPkcs1SigGen15Verifies) {
  VectorFile file = Load("rsa/SigGen15_186-3.rsp");
  auto backends = Claiming(ACCELCRYPT_ALG_RSA_SIGN, ACCELCRYPT_CAP_RSA_PKCS1);
  ASSERT_FALSE(backends.empty());
  // software, pkcs11 with CKM_RSA_PKCS, pkcs11 raw-only with our padding.
  if (SharedEnv().hsm != nullptr) {
    EXPECT_EQ(backends.size(), 3u);
  }
  for (const Backend* b : backends) {
    size_t checked = 0;
    std::string e, n;  // e is given once per section, with its first record
    for (const VectorRecord& r : file.records) {
      if (Field(r, "n") != n) {
        n = Field(r, "n");
        e.clear();
      }
      if (!r.Get("e").empty()) e = r.Get("e");
      if (!r.Has("S")) continue;
      KeyMaterial key;
      key.n = FromHex(n);
      key.e = FromHex(e.empty() ? Field(r, "e") : e);
      if (!Fits(*b, ACCELCRYPT_ALG_RSA_SIGN, key.bits())) continue;
      auto loaded = b->LoadKey(ACCELCRYPT_ALG_RSA_SIGN, key);
      ASSERT_TRUE(loaded.ok()) << b->name() << ": " << loaded.status();
      PkeyParams params;
      params.padding = ACCELCRYPT_PAD_PKCS1;
      std::vector<uint8_t> digest =
          VectorDigest(r.Get("SHAAlg"), FromHex(r.Get("Msg")), &params.md);
      ASSERT_NE(params.md, 0u) << r.Get("SHAAlg");
      std::vector<uint8_t> sig = FromHex(r.Get("S"));
      EXPECT_TRUE((*loaded)->Verify(params, digest, sig).ok())
          << b->name() << " line " << r.line;
      sig.back() ^= 1;
      EXPECT_EQ(GetStatusDetail((*loaded)->Verify(params, digest, sig)),
                StatusDetail::kAuthFailed)
          << b->name() << " line " << r.line;
      ++checked;
    }
    EXPECT_GE(checked, 140u) << b->name();  // 150 records, 1024..3072
  }
}

TEST_F(PkeyVectorsTest, RsaPssSigVerResults) {
  VectorFile file = Load("rsa/SigVerPSS_186-3.rsp");
  auto backends = Claiming(ACCELCRYPT_ALG_RSA_SIGN, ACCELCRYPT_CAP_RSA_PSS);
  ASSERT_FALSE(backends.empty());
  if (SharedEnv().hsm != nullptr) {
    EXPECT_EQ(backends.size(), 3u);
  }
  for (const Backend* b : backends) {
    size_t pass = 0, fail = 0;
    for (const VectorRecord& r : file.records) {
      if (!r.Has("Result")) continue;
      KeyMaterial key;
      key.n = FromHex(Field(r, "n"));
      key.e = FromHex(Field(r, "e"));
      if (!Fits(*b, ACCELCRYPT_ALG_RSA_SIGN, key.bits())) continue;
      auto loaded = b->LoadKey(ACCELCRYPT_ALG_RSA_SIGN, key);
      ASSERT_TRUE(loaded.ok()) << b->name() << ": " << loaded.status();
      PkeyParams params;
      params.padding = ACCELCRYPT_PAD_PSS;
      std::vector<uint8_t> digest =
          VectorDigest(r.Get("SHAAlg"), FromHex(r.Get("Msg")), &params.md);
      std::string salt = r.Get("SaltVal");
      params.salt_len =
          salt == "00" ? 0 : static_cast<int32_t>(FromHex(salt).size());
      absl::Status st = (*loaded)->Verify(params, digest, FromHex(r.Get("S")));
      if (r.Get("Result").rfind('P', 0) == 0) {
        EXPECT_TRUE(st.ok()) << b->name() << " line " << r.line << ": " << st;
        ++pass;
      } else {
        EXPECT_FALSE(st.ok()) << b->name() << " line " << r.line;
        EXPECT_FALSE(IsDeviceError(st)) << st;
        ++fail;
      }
    }
    EXPECT_GT(pass, 0u) << b->name();
    EXPECT_GT(fail, 0u) << b->name();
  }
}

TEST_F(PkeyVectorsTest, DsaSigVerResults) {
  VectorFile file = Load("dsa/SigVer.rsp");
  auto backends = Claiming(ACCELCRYPT_ALG_DSA_SIGN, 0);
  ASSERT_FALSE(backends.empty());
  for (const Backend* b : backends) {
    size_t pass = 0, fail = 0;
    for (const VectorRecord& r : file.records) {
      if (!r.Has("Result")) continue;
      KeyMaterial key;
      key.type = KeyMaterial::Type::kDsa;
      key.dsa_p = FromHex(Field(r, "P"));
      key.dsa_q = FromHex(Field(r, "Q"));
      key.dsa_g = FromHex(Field(r, "G"));
      key.dsa_y = FromHex(r.Get("Y"));
      if (!Fits(*b, ACCELCRYPT_ALG_DSA_SIGN, key.bits())) continue;
      auto loaded = b->LoadKey(ACCELCRYPT_ALG_DSA_SIGN, key);
      ASSERT_TRUE(loaded.ok()) << b->name() << ": " << loaded.status();
      std::string mod = r.SectionValue("mod").value_or("");
      PkeyParams params;
      std::vector<uint8_t> digest = VectorDigest(
          mod.substr(mod.rfind(' ') + 1), FromHex(r.Get("Msg")), &params.md);
      ASSERT_NE(params.md, 0u) << mod;
      // DER Dss-Sig-Value from R and S.
      // Minimal INTEGER: leading zero octets dropped, one 0x00 put back
      // where the top bit is set; an empty value encodes as 0.
      auto der_int = [](const std::vector<uint8_t>& v) {
        size_t start = 0;
        while (start + 1 < v.size() && v[start] == 0) ++start;
        const bool pad = start == v.size() || (v[start] & 0x80) != 0;
        const size_t len = v.size() - start + (pad ? 1 : 0);
        std::vector<uint8_t> out;
        out.reserve(2 + len);
        out.push_back(0x02);
        out.push_back(static_cast<uint8_t>(len));
        if (pad) out.push_back(0);
        for (size_t i = start; i < v.size(); ++i) out.push_back(v[i]);
        return out;
      };
      std::vector<uint8_t> body = der_int(FromHex(r.Get("R")));
      std::vector<uint8_t> s_part = der_int(FromHex(r.Get("S")));
      body.insert(body.end(), s_part.begin(), s_part.end());
      std::vector<uint8_t> sig{0x30};
      if (body.size() >= 128) sig.push_back(0x81);
      sig.push_back(static_cast<uint8_t>(body.size()));
      sig.insert(sig.end(), body.begin(), body.end());
      absl::Status st = (*loaded)->Verify(params, digest, sig);
      if (r.Get("Result").rfind('P', 0) == 0) {
        EXPECT_TRUE(st.ok()) << b->name() << " line " << r.line << ": " << st;
        ++pass;
      } else {
        EXPECT_FALSE(st.ok()) << b->name() << " line " << r.line;
        EXPECT_FALSE(IsDeviceError(st)) << st;
        ++fail;
      }
    }
    EXPECT_GT(pass, 0u) << b->name();
    EXPECT_GT(fail, 0u) << b->name();
  }
}

}  // namespace
}  // namespace accelcrypt::testing
