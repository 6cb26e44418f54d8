// SPDX-License-Identifier: Apache-2.0
// DSA mechanisms: NIST CAVP DSA SigVer vectors, and key generation with a
// round trip against libcrypto's default provider.
// Fixture and helpers: pkey_mech_fixture.h.
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>

#include <string>
#include <utility>
#include <vector>

#include "tests/pkcs11/mech/mech_test_util.h"
#include "tests/pkcs11/mech/pkey_mech_fixture.h"

namespace accelcrypt::p11::testing::pkey {
namespace {

TEST_F(PkeyMechTest, DsaSigVerPassAndFail) {
  ASSERT_OK_AND_ASSIGN(VectorFile vf, ParseVectorFile(Vec("dsa/SigVer.rsp")));
  size_t pass = 0, fail = 0;
  for (const VectorRecord& r : vf.records) {
    Bytes p = SectionHex(r, "P"), q = SectionHex(r, "Q"),
          g = SectionHex(r, "G");
    Bytes msg = Hex(r, "Msg"), y = Hex(r, "Y");
    const size_t q_len = LeftPad(q, 0).size();
    Bytes rs = LeftPad(Hex(r, "R"), q_len);
    Bytes s = LeftPad(Hex(r, "S"), q_len);
    rs.insert(rs.end(), s.begin(), s.end());
    const std::string mod = r.SectionValue("mod").value_or("");
    const CK_MECHANISM_TYPE h = HashMech(mod.substr(mod.rfind(' ') + 1));
    auto pub = DsaKey(CKO_PUBLIC_KEY, p, q, g, y);
    ASSERT_NE(pub, nullptr) << r.line;
    const bool ok = r.Get("Result").rfind('P', 0) == 0;
    (ok ? pass : fail)++;
    EXPECT_EQ(VerifyRv(DsaMech(h), nullptr, 0, pub, msg, rs),
              ok ? CKR_OK : CKR_SIGNATURE_INVALID)
        << r.line;
    if (ok && pass % 10 == 1) {
      // Sign with x (the private object holds x only; y is derived) and
      // verify with the vector's y.
      auto priv = DsaKey(CKO_PRIVATE_KEY, p, q, g, Hex(r, "X"));
      Bytes sig = Sign(DsaMech(h), nullptr, 0, priv, msg);
      EXPECT_EQ(sig.size(), 2 * q_len);
      EXPECT_EQ(VerifyRv(DsaMech(h), nullptr, 0, pub, msg, sig), CKR_OK);
      Bytes hash = Sha(h, msg);
      if (hash.size() <= 64) {
        Bytes raw_sig = Sign(CKM_DSA, nullptr, 0, priv, hash);
        EXPECT_EQ(VerifyRv(CKM_DSA, nullptr, 0, pub, hash, raw_sig), CKR_OK);
      }
    }
  }
  EXPECT_GT(pass, 0u);
  EXPECT_GT(fail, 0u);
}

TEST_F(PkeyMechTest, DsaKeyGenerationAndLibcryptoRoundTrip) {
  ASSERT_OK_AND_ASSIGN(VectorFile vf, ParseVectorFile(Vec("dsa/SigVer.rsp")));
  const VectorRecord* domain = nullptr;
  for (const VectorRecord& r : vf.records) {
    if (r.SectionValue("mod").value_or("").find("L=2048, N=256") !=
        std::string::npos) {
      domain = &r;
      break;
    }
  }
  ASSERT_NE(domain, nullptr);
  CK_MECHANISM m{CKM_DSA_KEY_PAIR_GEN, nullptr, 0};
  AttributeMap tmpl, none;
  EXPECT_EQ(Rv(mech_->GenerateKeyPair(m, tmpl, none).status()),
            CKR_TEMPLATE_INCOMPLETE);
  tmpl.Set(CKA_PRIME, SectionHex(*domain, "P"));
  tmpl.Set(CKA_SUBPRIME, Bytes(13, 0xff));
  tmpl.Set(CKA_BASE, SectionHex(*domain, "G"));
  EXPECT_EQ(Rv(mech_->GenerateKeyPair(m, tmpl, none).status()),
            CKR_ATTRIBUTE_VALUE_INVALID);
  tmpl.Set(CKA_SUBPRIME, SectionHex(*domain, "Q"));
  // A base outside the order-q subgroup (g = 2 almost surely is) or g = 1.
  tmpl.Set(CKA_BASE, Bytes{0x02});
  EXPECT_EQ(Rv(mech_->GenerateKeyPair(m, tmpl, none).status()),
            CKR_ATTRIBUTE_VALUE_INVALID);
  tmpl.Set(CKA_BASE, Bytes{0x01});
  EXPECT_EQ(Rv(mech_->GenerateKeyPair(m, tmpl, none).status()),
            CKR_ATTRIBUTE_VALUE_INVALID);
  tmpl.Set(CKA_BASE, SectionHex(*domain, "G"));
  ASSERT_OK_AND_ASSIGN(auto pair, mech_->GenerateKeyPair(m, tmpl, none));
  EXPECT_EQ(pair.first.GetBytes(CKA_PRIME), tmpl.GetBytes(CKA_PRIME));
  auto pub = Prepare(pair.first);
  auto priv = Prepare(pair.second);
  EVP_PKEY* evp_pub = EvpKey(pair.first, false, false);
  ASSERT_NE(evp_pub, nullptr);
  Bytes msg = Rng(21).Bytes(100);
  Bytes sig = Sign(CKM_DSA_SHA256, nullptr, 0, priv, msg);
  ASSERT_EQ(sig.size(), 64u);
  EXPECT_TRUE(
      EvpVerify(evp_pub, {0, "SHA256"}, Sha(CKM_SHA256, msg), DsaDer(sig)));
  // libcrypto signs (key with x and y), the module verifies.
  AttributeMap full = pair.first;
  full.Set(CKA_VALUE, pair.second.GetBytes(CKA_VALUE));
  EVP_PKEY* evp_priv = nullptr;
  {
    OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
    std::vector<BIGNUM*> bns;
    for (auto [name, bytes] :
         {std::pair{OSSL_PKEY_PARAM_FFC_P, pair.first.GetBytes(CKA_PRIME)},
          std::pair{OSSL_PKEY_PARAM_FFC_Q, pair.first.GetBytes(CKA_SUBPRIME)},
          std::pair{OSSL_PKEY_PARAM_FFC_G, pair.first.GetBytes(CKA_BASE)},
          std::pair{OSSL_PKEY_PARAM_PUB_KEY, pair.first.GetBytes(CKA_VALUE)},
          std::pair{OSSL_PKEY_PARAM_PRIV_KEY,
                    pair.second.GetBytes(CKA_VALUE)}}) {
      bns.push_back(
          BN_bin2bn(bytes.data(), static_cast<int>(bytes.size()), nullptr));
      OSSL_PARAM_BLD_push_BN(bld, name, bns.back());
    }
    OSSL_PARAM* params = OSSL_PARAM_BLD_to_param(bld);
    EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_name(nullptr, "DSA", nullptr);
    EVP_PKEY_fromdata_init(ctx);
    EVP_PKEY_fromdata(ctx, &evp_priv, EVP_PKEY_KEYPAIR, params);
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    for (BIGNUM* bn : bns) BN_free(bn);
  }
  ASSERT_NE(evp_priv, nullptr);
  Bytes der = EvpSign(evp_priv, {0, "SHA512"}, Sha(CKM_SHA512, msg));
  ASSERT_FALSE(der.empty());
  EXPECT_EQ(VerifyRv(CKM_DSA_SHA512, nullptr, 0, pub, msg, DsaRs(der, 32)),
            CKR_OK);
  // Error codes.
  EXPECT_EQ(VerifyRv(CKM_DSA_SHA256, nullptr, 0, pub, msg,
                     Bytes(sig.begin(), sig.end() - 1)),
            CKR_SIGNATURE_LEN_RANGE);
  Bytes bad = sig;
  bad[40] ^= 4;
  EXPECT_EQ(VerifyRv(CKM_DSA_SHA256, nullptr, 0, pub, msg, bad),
            CKR_SIGNATURE_INVALID);
  auto op = Start(OpKind::kSign, CKM_DSA, nullptr, 0, priv);
  Bytes out(64);
  EXPECT_EQ(Rv(op->OneShot(Bytes(19), absl::MakeSpan(out)).status()),
            CKR_DATA_LEN_RANGE);
  Bytes small(63);
  EXPECT_EQ(Rv(op->OneShot(Bytes(32), absl::MakeSpan(small)).status()),
            CKR_BUFFER_TOO_SMALL);
  ASSERT_OK(op->OneShot(Bytes(32), absl::MakeSpan(out)).status());
  EXPECT_EQ(InitRv(OpKind::kEncrypt, CKM_DSA, nullptr, 0, pub),
            CKR_MECHANISM_INVALID);
  EXPECT_EQ(InitRv(OpKind::kSign, CKM_DSA, nullptr, 0, pub),
            CKR_KEY_TYPE_INCONSISTENT);
  EVP_PKEY_free(evp_pub);
  EVP_PKEY_free(evp_priv);
}

}  // namespace
}  // namespace accelcrypt::p11::testing::pkey
