// SPDX-License-Identifier: Apache-2.0
// RSA and DSA mechanisms: NIST CAVP vectors (RSASP1, SigGen15, SigGenPSS,
// SigVer15, DSA SigVer), round trips against libcrypto's default provider
// with keys the engine generates, and the PKCS#11 error codes.
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/dsa.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>

#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tests/pkcs11/mech/mech_test_util.h"

namespace accelcrypt::p11::testing {
namespace {

using accelcrypt::testing::FromHex;
using accelcrypt::testing::Rng;

// Hex reads a hex field that NIST may print with an odd digit count.
Bytes Hex(const VectorRecord& r, std::string_view key) {
  std::string h = r.Get(key);
  if (h.size() % 2 != 0) h = "0" + h;
  return FromHex(h);
}
Bytes SectionHex(const VectorRecord& r, std::string_view key) {
  std::string h = r.SectionValue(key).value_or(r.Get(key));
  if (h.size() % 2 != 0) h = "0" + h;
  return FromHex(h);
}
// KeyCarry follows the SigGen files' key: `n` opens a section (or sits in
// a record), `e` is printed in the first record after it; both hold until
// the next ones.
struct KeyCarry {
  Bytes n, e;
  std::pair<Bytes, Bytes> Next(const VectorRecord& r) {
    if (r.Has("n") || r.SectionValue("n").has_value()) {
      Bytes got = SectionHex(r, "n");
      if (got != n) e.clear();
      n = got;
    }
    if (r.Has("e") || r.SectionValue("e").has_value()) e = SectionHex(r, "e");
    return {n, e};
  }
};

Bytes LeftPad(Bytes v, size_t len) {
  while (v.size() > len && v.front() == 0) v.erase(v.begin());
  if (v.size() < len) v.insert(v.begin(), len - v.size(), 0);
  return v;
}

CK_MECHANISM_TYPE HashMech(const std::string& sha) {
  if (sha == "SHA1" || sha == "SHA-1") return CKM_SHA_1;
  if (sha == "SHA224" || sha == "SHA-224") return CKM_SHA224;
  if (sha == "SHA256" || sha == "SHA-256") return CKM_SHA256;
  if (sha == "SHA384" || sha == "SHA-384") return CKM_SHA384;
  if (sha == "SHA512" || sha == "SHA-512") return CKM_SHA512;
  return 0;
}
CK_MECHANISM_TYPE RsaPkcsMech(CK_MECHANISM_TYPE h) {
  switch (h) {
    case CKM_SHA_1:
      return CKM_SHA1_RSA_PKCS;
    case CKM_SHA224:
      return CKM_SHA224_RSA_PKCS;
    case CKM_SHA256:
      return CKM_SHA256_RSA_PKCS;
    case CKM_SHA384:
      return CKM_SHA384_RSA_PKCS;
    default:
      return CKM_SHA512_RSA_PKCS;
  }
}
CK_MECHANISM_TYPE RsaPssMech(CK_MECHANISM_TYPE h) {
  switch (h) {
    case CKM_SHA_1:
      return CKM_SHA1_RSA_PKCS_PSS;
    case CKM_SHA224:
      return CKM_SHA224_RSA_PKCS_PSS;
    case CKM_SHA256:
      return CKM_SHA256_RSA_PKCS_PSS;
    case CKM_SHA384:
      return CKM_SHA384_RSA_PKCS_PSS;
    default:
      return CKM_SHA512_RSA_PKCS_PSS;
  }
}
CK_MECHANISM_TYPE DsaMech(CK_MECHANISM_TYPE h) {
  switch (h) {
    case CKM_SHA_1:
      return CKM_DSA_SHA1;
    case CKM_SHA224:
      return CKM_DSA_SHA224;
    case CKM_SHA256:
      return CKM_DSA_SHA256;
    case CKM_SHA384:
      return CKM_DSA_SHA384;
    default:
      return CKM_DSA_SHA512;
  }
}
CK_RSA_PKCS_MGF_TYPE Mgf(CK_MECHANISM_TYPE h) {
  switch (h) {
    case CKM_SHA_1:
      return CKG_MGF1_SHA1;
    case CKM_SHA224:
      return CKG_MGF1_SHA224;
    case CKM_SHA256:
      return CKG_MGF1_SHA256;
    case CKM_SHA384:
      return CKG_MGF1_SHA384;
    default:
      return CKG_MGF1_SHA512;
  }
}
const char* MdName(CK_MECHANISM_TYPE h) {
  switch (h) {
    case CKM_SHA_1:
      return "SHA1";
    case CKM_SHA224:
      return "SHA224";
    case CKM_SHA256:
      return "SHA256";
    case CKM_SHA384:
      return "SHA384";
    default:
      return "SHA512";
  }
}

Bytes Sha(CK_MECHANISM_TYPE h, absl::Span<const uint8_t> msg) {
  Bytes out(EVP_MAX_MD_SIZE);
  unsigned int len = 0;
  EVP_MD* md = EVP_MD_fetch(nullptr, MdName(h), nullptr);
  EVP_Digest(msg.data(), msg.size(), out.data(), &len, md, nullptr);
  EVP_MD_free(md);
  out.resize(len);
  return out;
}

// EvpKey builds a default-provider EVP_PKEY from PKCS#11 attributes.
EVP_PKEY* EvpKey(const AttributeMap& a, bool rsa, bool with_private) {
  OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
  std::vector<BIGNUM*> bns;
  auto push = [&](const char* name, CK_ATTRIBUTE_TYPE type) {
    Bytes v = a.GetBytes(type);
    BIGNUM* bn = BN_bin2bn(v.data(), static_cast<int>(v.size()), nullptr);
    bns.push_back(bn);
    OSSL_PARAM_BLD_push_BN(bld, name, bn);
  };
  if (rsa) {
    push(OSSL_PKEY_PARAM_RSA_N, CKA_MODULUS);
    push(OSSL_PKEY_PARAM_RSA_E, CKA_PUBLIC_EXPONENT);
    if (with_private) {
      push(OSSL_PKEY_PARAM_RSA_D, CKA_PRIVATE_EXPONENT);
      push(OSSL_PKEY_PARAM_RSA_FACTOR1, CKA_PRIME_1);
      push(OSSL_PKEY_PARAM_RSA_FACTOR2, CKA_PRIME_2);
      push(OSSL_PKEY_PARAM_RSA_EXPONENT1, CKA_EXPONENT_1);
      push(OSSL_PKEY_PARAM_RSA_EXPONENT2, CKA_EXPONENT_2);
      push(OSSL_PKEY_PARAM_RSA_COEFFICIENT1, CKA_COEFFICIENT);
    }
  } else {
    push(OSSL_PKEY_PARAM_FFC_P, CKA_PRIME);
    push(OSSL_PKEY_PARAM_FFC_Q, CKA_SUBPRIME);
    push(OSSL_PKEY_PARAM_FFC_G, CKA_BASE);
    push(with_private ? OSSL_PKEY_PARAM_PRIV_KEY : OSSL_PKEY_PARAM_PUB_KEY,
         CKA_VALUE);
  }
  OSSL_PARAM* params = OSSL_PARAM_BLD_to_param(bld);
  EVP_PKEY_CTX* ctx =
      EVP_PKEY_CTX_new_from_name(nullptr, rsa ? "RSA" : "DSA", nullptr);
  EVP_PKEY* pkey = nullptr;
  EVP_PKEY_fromdata_init(ctx);
  EVP_PKEY_fromdata(ctx, &pkey,
                    with_private ? EVP_PKEY_KEYPAIR : EVP_PKEY_PUBLIC_KEY,
                    params);
  EVP_PKEY_CTX_free(ctx);
  OSSL_PARAM_free(params);
  OSSL_PARAM_BLD_free(bld);
  for (BIGNUM* bn : bns) BN_free(bn);
  return pkey;
}

// EvpSign/EvpVerify run one EVP_PKEY_sign/verify over `tbs` (a hash, or
// raw input when md is null) with optional RSA padding settings.
struct EvpOpts {
  int pad = 0;  // 0: leave default
  const char* md = nullptr;
  const char* mgf1 = nullptr;
  int salt = -2;
};
void Configure(EVP_PKEY_CTX* ctx, const EvpOpts& o) {
  if (o.pad != 0) EVP_PKEY_CTX_set_rsa_padding(ctx, o.pad);
  if (o.md != nullptr) {
    EVP_MD* md = EVP_MD_fetch(nullptr, o.md, nullptr);
    EVP_PKEY_CTX_set_signature_md(ctx, md);
    EVP_MD_free(md);
  }
  if (o.mgf1 != nullptr) {
    EVP_PKEY_CTX_set_rsa_mgf1_md_name(ctx, o.mgf1, nullptr);
  }
  if (o.pad == RSA_PKCS1_PSS_PADDING) {
    EVP_PKEY_CTX_set_rsa_pss_saltlen(ctx, o.salt);
  }
}
Bytes EvpSign(EVP_PKEY* key, const EvpOpts& o, absl::Span<const uint8_t> tbs) {
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_pkey(nullptr, key, nullptr);
  EVP_PKEY_sign_init(ctx);
  Configure(ctx, o);
  size_t len = 0;
  EVP_PKEY_sign(ctx, nullptr, &len, tbs.data(), tbs.size());
  Bytes sig(len);
  if (EVP_PKEY_sign(ctx, sig.data(), &len, tbs.data(), tbs.size()) != 1) {
    sig.clear();
  } else {
    sig.resize(len);
  }
  EVP_PKEY_CTX_free(ctx);
  return sig;
}
bool EvpVerify(EVP_PKEY* key, const EvpOpts& o, absl::Span<const uint8_t> tbs,
               absl::Span<const uint8_t> sig) {
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_pkey(nullptr, key, nullptr);
  EVP_PKEY_verify_init(ctx);
  Configure(ctx, o);
  const bool ok =
      EVP_PKEY_verify(ctx, sig.data(), sig.size(), tbs.data(), tbs.size()) == 1;
  EVP_PKEY_CTX_free(ctx);
  return ok;
}

Bytes DsaDer(absl::Span<const uint8_t> rs) {
  const size_t q = rs.size() / 2;
  DSA_SIG* sig = DSA_SIG_new();
  DSA_SIG_set0(sig, BN_bin2bn(rs.data(), static_cast<int>(q), nullptr),
               BN_bin2bn(rs.data() + q, static_cast<int>(q), nullptr));
  unsigned char* der = nullptr;
  int len = i2d_DSA_SIG(sig, &der);
  Bytes out(der, der + len);
  OPENSSL_free(der);
  DSA_SIG_free(sig);
  return out;
}
Bytes DsaRs(absl::Span<const uint8_t> der, size_t q) {
  const unsigned char* p = der.data();
  DSA_SIG* sig = d2i_DSA_SIG(nullptr, &p, static_cast<long>(der.size()));
  const BIGNUM *r = nullptr, *s = nullptr;
  DSA_SIG_get0(sig, &r, &s);
  Bytes out(2 * q);
  BN_bn2binpad(r, out.data(), static_cast<int>(q));
  BN_bn2binpad(s, out.data() + q, static_cast<int>(q));
  DSA_SIG_free(sig);
  return out;
}

class PkeyMechTest : public MechTest {
 protected:
  std::shared_ptr<PreparedKey> Prepare(const AttributeMap& a) {
    auto k = mech_->PrepareKey(a);
    EXPECT_TRUE(k.ok()) << k.status();
    return k.ok() ? *k : nullptr;
  }
  std::shared_ptr<PreparedKey> RsaPublic(const Bytes& n, const Bytes& e) {
    AttributeMap a;
    a.SetUlong(CKA_CLASS, CKO_PUBLIC_KEY);
    a.SetUlong(CKA_KEY_TYPE, CKK_RSA);
    a.Set(CKA_MODULUS, n);
    a.Set(CKA_PUBLIC_EXPONENT, e);
    return Prepare(a);
  }
  std::shared_ptr<PreparedKey> RsaPrivate(const Bytes& n, const Bytes& e,
                                          const Bytes& d) {
    AttributeMap a;
    a.SetUlong(CKA_CLASS, CKO_PRIVATE_KEY);
    a.SetUlong(CKA_KEY_TYPE, CKK_RSA);
    a.Set(CKA_MODULUS, n);
    a.Set(CKA_PUBLIC_EXPONENT, e);
    a.Set(CKA_PRIVATE_EXPONENT, d);
    return Prepare(a);
  }
  std::shared_ptr<PreparedKey> DsaKey(CK_OBJECT_CLASS cls, const Bytes& p,
                                      const Bytes& q, const Bytes& g,
                                      const Bytes& value) {
    AttributeMap a;
    a.SetUlong(CKA_CLASS, cls);
    a.SetUlong(CKA_KEY_TYPE, CKK_DSA);
    a.Set(CKA_PRIME, p);
    a.Set(CKA_SUBPRIME, q);
    a.Set(CKA_BASE, g);
    a.Set(CKA_VALUE, value);
    return Prepare(a);
  }
  // Generated keys are made once per binary (RSA-2048 generation costs).
  const std::pair<AttributeMap, AttributeMap>& RsaPair() {
    static auto* pair = [this] {
      CK_MECHANISM m{CKM_RSA_PKCS_KEY_PAIR_GEN, nullptr, 0};
      AttributeMap pub_tmpl, priv_tmpl;
      pub_tmpl.SetUlong(CKA_MODULUS_BITS, 2048);
      auto got = mech_->GenerateKeyPair(m, pub_tmpl, priv_tmpl);
      EXPECT_TRUE(got.ok()) << got.status();
      return new std::pair<AttributeMap, AttributeMap>(
          got.ok() ? *std::move(got) : std::pair<AttributeMap, AttributeMap>());
    }();
    return *pair;
  }
  Bytes Sign(CK_MECHANISM_TYPE type, const void* param, size_t len,
             std::shared_ptr<PreparedKey> key, absl::Span<const uint8_t> in) {
    auto op = Start(OpKind::kSign, type, param, len, std::move(key));
    if (op == nullptr) return {};
    auto got = OneShot(*op, in);
    EXPECT_TRUE(got.ok()) << got.status();
    return got.ok() ? *got : Bytes();
  }
  CK_RV VerifyRv(CK_MECHANISM_TYPE type, const void* param, size_t len,
                 std::shared_ptr<PreparedKey> key, absl::Span<const uint8_t> in,
                 absl::Span<const uint8_t> sig) {
    auto op = Start(OpKind::kVerify, type, param, len, std::move(key));
    if (op == nullptr) return CKR_GENERAL_ERROR;
    return Rv(op->Verify(in, sig));
  }
};

TEST_F(PkeyMechTest, RsaSp1RawSignAndVerifyRecover) {
  ASSERT_OK_AND_ASSIGN(VectorFile vf, ParseVectorFile(Vec("rsa/RSASP1.fax")));
  size_t fails = 0, passes = 0;
  for (const VectorRecord& r : vf.records) {
    Bytes n = Hex(r, "n"), e = Hex(r, "e"), d = Hex(r, "d");
    Bytes em = Hex(r, "EM");
    auto priv = RsaPrivate(n, e, d);
    ASSERT_NE(priv, nullptr);
    auto op = Start(OpKind::kSign, CKM_RSA_X_509, nullptr, 0, priv);
    auto got = OneShot(*op, em);
    if (r.Get("S").rfind("FAIL", 0) == 0) {
      ++fails;
      EXPECT_EQ(Rv(got.status()), CKR_DATA_LEN_RANGE) << r.line;
      continue;
    }
    ++passes;
    Bytes s = Hex(r, "S");
    ASSERT_TRUE(got.ok()) << r.line << got.status();
    EXPECT_EQ(*got, s) << r.line;
    auto pub = RsaPublic(n, e);
    auto rec = Start(OpKind::kVerifyRecover, CKM_RSA_X_509, nullptr, 0, pub);
    ASSERT_OK_AND_ASSIGN(Bytes recovered, OneShot(*rec, s));
    EXPECT_EQ(recovered, LeftPad(em, s.size())) << r.line;
    EXPECT_EQ(VerifyRv(CKM_RSA_X_509, nullptr, 0, pub, em, s), CKR_OK);
    Bytes other = em;
    other.back() ^= 1;
    EXPECT_EQ(VerifyRv(CKM_RSA_X_509, nullptr, 0, pub, other, s),
              CKR_SIGNATURE_INVALID);
  }
  EXPECT_GT(fails, 0u);
  EXPECT_GT(passes, 0u);
}

TEST_F(PkeyMechTest, SigGen15VerifiesAndRecoversDigestInfo) {
  ASSERT_OK_AND_ASSIGN(VectorFile vf,
                       ParseVectorFile(Vec("rsa/SigGen15_186-3.rsp")));
  ASSERT_FALSE(vf.records.empty());
  KeyCarry carry;
  for (const VectorRecord& r : vf.records) {
    auto [n, e] = carry.Next(r);
    Bytes msg = Hex(r, "Msg"), s = Hex(r, "S");
    const CK_MECHANISM_TYPE h = HashMech(r.Get("SHAAlg"));
    auto pub = RsaPublic(n, e);
    ASSERT_NE(pub, nullptr) << r.line;
    EXPECT_EQ(VerifyRv(RsaPkcsMech(h), nullptr, 0, pub, msg, s), CKR_OK)
        << r.line;
    Bytes tampered = msg;
    tampered[0] ^= 0x80;
    EXPECT_EQ(VerifyRv(RsaPkcsMech(h), nullptr, 0, pub, tampered, s),
              CKR_SIGNATURE_INVALID)
        << r.line;
    // CKM_RSA_PKCS verify-recover returns the DigestInfo: it ends in the
    // hash of the message.
    auto rec = Start(OpKind::kVerifyRecover, CKM_RSA_PKCS, nullptr, 0, pub);
    ASSERT_OK_AND_ASSIGN(Bytes info, OneShot(*rec, s));
    Bytes hash = Sha(h, msg);
    ASSERT_GT(info.size(), hash.size());
    EXPECT_EQ(Bytes(info.end() - hash.size(), info.end()), hash) << r.line;
    // ... and CKM_RSA_PKCS verifies that DigestInfo.
    EXPECT_EQ(VerifyRv(CKM_RSA_PKCS, nullptr, 0, pub, info, s), CKR_OK);
  }
}

// PssSaltLengths reads the "Combinations selected" header line of a
// SigGenPSS file: (mod, SHA-x) -> salt length.
std::map<std::pair<std::string, std::string>, size_t> PssSaltLengths(
    const std::string& path) {
  std::map<std::pair<std::string, std::string>, size_t> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("Combinations selected") == std::string::npos) continue;
    std::string mod;
    size_t pos = 0;
    while (pos < line.size()) {
      size_t m = line.find("Mod Size ", pos);
      size_t s = line.find("SHA-", pos);
      if (s == std::string::npos) break;
      if (m != std::string::npos && m < s) {
        mod = line.substr(m + 9, line.find(' ', m + 9) - (m + 9));
        pos = m + 9;
        continue;
      }
      std::string sha = line.substr(s, line.find('(', s) - s);
      size_t colon = line.find(':', s);
      out[{mod, sha}] = std::stoul(line.substr(colon + 1));
      pos = colon + 1;
    }
  }
  return out;
}

TEST_F(PkeyMechTest, SigGenPssVerifies) {
  const std::string path = Vec("rsa/SigGenPSS_186-3.rsp");
  auto salts = PssSaltLengths(path);
  ASSERT_EQ(salts.size(), 15u);
  ASSERT_OK_AND_ASSIGN(VectorFile vf, ParseVectorFile(path));
  KeyCarry carry;
  for (const VectorRecord& r : vf.records) {
    auto [n, e] = carry.Next(r);
    Bytes msg = Hex(r, "Msg"), s = Hex(r, "S");
    const std::string sha = r.Get("SHAAlg");
    const CK_MECHANISM_TYPE h = HashMech(sha);
    const std::string mod = r.SectionValue("mod").value_or("");
    const std::string sha_dash = "SHA-" + sha.substr(3);
    ASSERT_TRUE(salts.count({mod, sha_dash})) << mod << " " << sha_dash;
    CK_RSA_PKCS_PSS_PARAMS params{h, Mgf(h), salts[{mod, sha_dash}]};
    auto pub = RsaPublic(n, e);
    EXPECT_EQ(VerifyRv(RsaPssMech(h), &params, sizeof(params), pub, msg, s),
              CKR_OK)
        << r.line;
    EXPECT_EQ(VerifyRv(CKM_RSA_PKCS_PSS, &params, sizeof(params), pub,
                       Sha(h, msg), s),
              CKR_OK)
        << r.line;
    CK_RSA_PKCS_PSS_PARAMS wrong_salt = params;
    wrong_salt.sLen += 1;
    EXPECT_EQ(
        VerifyRv(RsaPssMech(h), &wrong_salt, sizeof(wrong_salt), pub, msg, s),
        CKR_SIGNATURE_INVALID)
        << r.line;
  }
}

TEST_F(PkeyMechTest, SigVer15PassAndFail) {
  ASSERT_OK_AND_ASSIGN(VectorFile vf,
                       ParseVectorFile(Vec("rsa/SigVer15_186-3.rsp")));
  size_t pass = 0, fail = 0;
  for (const VectorRecord& r : vf.records) {
    Bytes n = SectionHex(r, "n");
    Bytes e = Hex(r, "e"), msg = Hex(r, "Msg");
    Bytes s = LeftPad(Hex(r, "S"), LeftPad(n, 0).size());
    const CK_MECHANISM_TYPE h = HashMech(r.Get("SHAAlg"));
    auto pub = RsaPublic(n, e);
    ASSERT_NE(pub, nullptr) << r.line;
    const bool ok = r.Get("Result").rfind('P', 0) == 0;
    (ok ? pass : fail)++;
    EXPECT_EQ(VerifyRv(RsaPkcsMech(h), nullptr, 0, pub, msg, s),
              ok ? CKR_OK : CKR_SIGNATURE_INVALID)
        << r.line;
  }
  EXPECT_GT(pass, 0u);
  EXPECT_GT(fail, 0u);
}

TEST_F(PkeyMechTest, RsaRoundTripsWithLibcrypto) {
  const auto& [pub_attrs, priv_attrs] = RsaPair();
  ASSERT_TRUE(pub_attrs.Has(CKA_MODULUS));
  EXPECT_EQ(pub_attrs.GetUlong(CKA_MODULUS_BITS), 2048u);
  auto pub = Prepare(pub_attrs);
  auto priv = Prepare(priv_attrs);
  EVP_PKEY* evp_pub = EvpKey(pub_attrs, true, false);
  EVP_PKEY* evp_priv = EvpKey(priv_attrs, true, true);
  ASSERT_NE(evp_pub, nullptr);
  ASSERT_NE(evp_priv, nullptr);
  Bytes msg = Rng(11).Bytes(300);

  // PKCS#1 v1.5 with a hash, both ways; deterministic, so CKM_RSA_PKCS
  // over the DigestInfo gives the same bytes.
  Bytes sig = Sign(CKM_SHA256_RSA_PKCS, nullptr, 0, priv, msg);
  EXPECT_TRUE(EvpVerify(evp_pub, {RSA_PKCS1_PADDING, "SHA256"},
                        Sha(CKM_SHA256, msg), sig));
  Bytes evp_sig =
      EvpSign(evp_priv, {RSA_PKCS1_PADDING, "SHA384"}, Sha(CKM_SHA384, msg));
  EXPECT_EQ(VerifyRv(CKM_SHA384_RSA_PKCS, nullptr, 0, pub, msg, evp_sig),
            CKR_OK);
  auto rec = Start(OpKind::kVerifyRecover, CKM_RSA_PKCS, nullptr, 0, pub);
  ASSERT_OK_AND_ASSIGN(Bytes info, OneShot(*rec, sig));
  EXPECT_EQ(Sign(CKM_RSA_PKCS, nullptr, 0, priv, info), sig);
  // Multi-part SHA*_RSA_PKCS gives the same signature.
  auto mp = Start(OpKind::kSign, CKM_SHA256_RSA_PKCS, nullptr, 0, priv);
  ASSERT_OK_AND_ASSIGN(Bytes streamed, Stream(*mp, msg, 77));
  EXPECT_EQ(streamed, sig);

  // PSS both ways (module SHA384-PSS salt 48; libcrypto SHA-256 hash with
  // MGF1-SHA1 and salt 20 into CKM_RSA_PKCS_PSS).
  CK_RSA_PKCS_PSS_PARAMS pss{CKM_SHA384, CKG_MGF1_SHA384, 48};
  Bytes pss_sig = Sign(CKM_SHA384_RSA_PKCS_PSS, &pss, sizeof(pss), priv, msg);
  EXPECT_TRUE(EvpVerify(evp_pub,
                        {RSA_PKCS1_PSS_PADDING, "SHA384", "SHA384", 48},
                        Sha(CKM_SHA384, msg), pss_sig));
  EXPECT_EQ(
      VerifyRv(CKM_SHA384_RSA_PKCS_PSS, &pss, sizeof(pss), pub, msg, pss_sig),
      CKR_OK);
  Bytes evp_pss =
      EvpSign(evp_priv, {RSA_PKCS1_PSS_PADDING, "SHA256", "SHA1", 20},
              Sha(CKM_SHA256, msg));
  CK_RSA_PKCS_PSS_PARAMS pss2{CKM_SHA256, CKG_MGF1_SHA1, 20};
  EXPECT_EQ(VerifyRv(CKM_RSA_PKCS_PSS, &pss2, sizeof(pss2), pub,
                     Sha(CKM_SHA256, msg), evp_pss),
            CKR_OK);

  // OAEP with a label, both ways; a wrong label fails.
  Bytes label = {'l', 'b', 'l'};
  CK_RSA_PKCS_OAEP_PARAMS oaep{CKM_SHA256, CKG_MGF1_SHA256, CKZ_DATA_SPECIFIED,
                               label.data(), label.size()};
  Bytes secret = Rng(12).Bytes(64);
  auto enc =
      Start(OpKind::kEncrypt, CKM_RSA_PKCS_OAEP, &oaep, sizeof(oaep), pub);
  ASSERT_OK_AND_ASSIGN(Bytes ct, OneShot(*enc, secret));
  {
    EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_pkey(nullptr, evp_priv, nullptr);
    EVP_PKEY_decrypt_init(ctx);
    EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_OAEP_PADDING);
    EVP_PKEY_CTX_set_rsa_oaep_md_name(ctx, "SHA256", nullptr);
    EVP_PKEY_CTX_set_rsa_mgf1_md_name(ctx, "SHA256", nullptr);
    EVP_PKEY_CTX_set0_rsa_oaep_label(ctx, OPENSSL_memdup(label.data(), 3), 3);
    Bytes out(256);
    size_t len = out.size();
    ASSERT_EQ(EVP_PKEY_decrypt(ctx, out.data(), &len, ct.data(), ct.size()), 1);
    out.resize(len);
    EXPECT_EQ(out, secret);
    // And libcrypto encrypts for the module.
    EVP_PKEY_CTX* ectx = EVP_PKEY_CTX_new_from_pkey(nullptr, evp_pub, nullptr);
    EVP_PKEY_encrypt_init(ectx);
    EVP_PKEY_CTX_set_rsa_padding(ectx, RSA_PKCS1_OAEP_PADDING);
    EVP_PKEY_CTX_set_rsa_oaep_md_name(ectx, "SHA256", nullptr);
    EVP_PKEY_CTX_set_rsa_mgf1_md_name(ectx, "SHA256", nullptr);
    EVP_PKEY_CTX_set0_rsa_oaep_label(ectx, OPENSSL_memdup(label.data(), 3), 3);
    Bytes ct2(256);
    len = ct2.size();
    ASSERT_EQ(
        EVP_PKEY_encrypt(ectx, ct2.data(), &len, secret.data(), secret.size()),
        1);
    auto dec =
        Start(OpKind::kDecrypt, CKM_RSA_PKCS_OAEP, &oaep, sizeof(oaep), priv);
    ASSERT_OK_AND_ASSIGN(Bytes back, OneShot(*dec, ct2));
    EXPECT_EQ(back, secret);
    EVP_PKEY_CTX_free(ctx);
    EVP_PKEY_CTX_free(ectx);
  }
  Bytes other_label = {'x'};
  CK_RSA_PKCS_OAEP_PARAMS wrong = oaep;
  wrong.pSourceData = other_label.data();
  wrong.ulSourceDataLen = 1;
  auto dec =
      Start(OpKind::kDecrypt, CKM_RSA_PKCS_OAEP, &wrong, sizeof(wrong), priv);
  Bytes out(256);
  EXPECT_EQ(Rv(dec->OneShot(ct, absl::MakeSpan(out)).status()),
            CKR_ENCRYPTED_DATA_INVALID);

  // PKCS#1 v1.5 encryption both ways.
  {
    auto e1 = Start(OpKind::kEncrypt, CKM_RSA_PKCS, nullptr, 0, pub);
    ASSERT_OK_AND_ASSIGN(Bytes c1, OneShot(*e1, secret));
    EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_pkey(nullptr, evp_priv, nullptr);
    EVP_PKEY_decrypt_init(ctx);
    EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PADDING);
    Bytes p1(256);
    size_t len = p1.size();
    ASSERT_EQ(EVP_PKEY_decrypt(ctx, p1.data(), &len, c1.data(), c1.size()), 1);
    p1.resize(len);
    EXPECT_EQ(p1, secret);
    EVP_PKEY_CTX_free(ctx);
    auto d1 = Start(OpKind::kDecrypt, CKM_RSA_PKCS, nullptr, 0, priv);
    ASSERT_OK_AND_ASSIGN(Bytes p2, OneShot(*d1, c1));
    EXPECT_EQ(p2, secret);
  }

  // Raw RSA: short input is left-padded; decrypt gives the k-byte block.
  auto xe = Start(OpKind::kEncrypt, CKM_RSA_X_509, nullptr, 0, pub);
  ASSERT_OK_AND_ASSIGN(Bytes xc, OneShot(*xe, secret));
  auto xd = Start(OpKind::kDecrypt, CKM_RSA_X_509, nullptr, 0, priv);
  ASSERT_OK_AND_ASSIGN(Bytes xp, OneShot(*xd, xc));
  EXPECT_EQ(xp, LeftPad(secret, 256));
  Bytes n = pub_attrs.GetBytes(CKA_MODULUS);
  xe = Start(OpKind::kEncrypt, CKM_RSA_X_509, nullptr, 0, pub);
  EXPECT_EQ(Rv(xe->OneShot(n, absl::MakeSpan(out)).status()),
            CKR_DATA_LEN_RANGE);
  Bytes longer(257, 0);
  EXPECT_EQ(Rv(xe->OneShot(longer, absl::MakeSpan(out)).status()),
            CKR_DATA_LEN_RANGE);
  EVP_PKEY_free(evp_pub);
  EVP_PKEY_free(evp_priv);
}

TEST_F(PkeyMechTest, RsaErrorCodes) {
  const auto& [pub_attrs, priv_attrs] = RsaPair();
  auto pub = Prepare(pub_attrs);
  auto priv = Prepare(priv_attrs);
  Bytes out(256);
  // Parameters.
  CK_RSA_PKCS_PSS_PARAMS pss{CKM_SHA256, CKG_MGF1_SHA256, 32};
  EXPECT_EQ(
      InitRv(OpKind::kSign, CKM_RSA_PKCS_PSS, &pss, sizeof(pss) - 1, priv),
      CKR_MECHANISM_PARAM_INVALID);
  EXPECT_EQ(
      InitRv(OpKind::kSign, CKM_SHA384_RSA_PKCS_PSS, &pss, sizeof(pss), priv),
      CKR_MECHANISM_PARAM_INVALID);
  CK_RSA_PKCS_PSS_PARAMS bad_mgf{CKM_SHA256, 0x99, 32};
  EXPECT_EQ(
      InitRv(OpKind::kSign, CKM_RSA_PKCS_PSS, &bad_mgf, sizeof(bad_mgf), priv),
      CKR_MECHANISM_PARAM_INVALID);
  CK_RSA_PKCS_PSS_PARAMS big_salt{CKM_SHA256, CKG_MGF1_SHA256, 256 - 32 - 1};
  EXPECT_EQ(InitRv(OpKind::kSign, CKM_RSA_PKCS_PSS, &big_salt, sizeof(big_salt),
                   priv),
            CKR_MECHANISM_PARAM_INVALID);
  CK_RSA_PKCS_OAEP_PARAMS oaep{CKM_SHA256, CKG_MGF1_SHA256, 2, nullptr, 0};
  EXPECT_EQ(
      InitRv(OpKind::kEncrypt, CKM_RSA_PKCS_OAEP, &oaep, sizeof(oaep), pub),
      CKR_MECHANISM_PARAM_INVALID);
  oaep.source = CKZ_DATA_SPECIFIED;
  oaep.ulSourceDataLen = 4;
  EXPECT_EQ(
      InitRv(OpKind::kEncrypt, CKM_RSA_PKCS_OAEP, &oaep, sizeof(oaep), pub),
      CKR_MECHANISM_PARAM_INVALID);
  CK_ULONG junk = 0;
  EXPECT_EQ(InitRv(OpKind::kSign, CKM_RSA_PKCS, &junk, sizeof(junk), priv),
            CKR_MECHANISM_PARAM_INVALID);
  // Mechanism/operation and key mismatches.
  EXPECT_EQ(InitRv(OpKind::kSign, CKM_RSA_PKCS_OAEP, nullptr, 0, priv),
            CKR_MECHANISM_INVALID);
  EXPECT_EQ(
      InitRv(OpKind::kVerifyRecover, CKM_RSA_PKCS_PSS, &pss, sizeof(pss), pub),
      CKR_MECHANISM_INVALID);
  EXPECT_EQ(InitRv(OpKind::kSign, CKM_RSA_PKCS, nullptr, 0, pub),
            CKR_KEY_TYPE_INCONSISTENT);
  EXPECT_EQ(InitRv(OpKind::kSign, CKM_DSA_SHA256, nullptr, 0, priv),
            CKR_KEY_TYPE_INCONSISTENT);
  auto aes = SecretKeyOf(CKK_AES, Bytes(16, 1));
  EXPECT_EQ(InitRv(OpKind::kSign, CKM_RSA_PKCS, nullptr, 0, aes),
            CKR_KEY_TYPE_INCONSISTENT);
  // Data lengths.
  auto op = Start(OpKind::kSign, CKM_RSA_PKCS, nullptr, 0, priv);
  EXPECT_FALSE(op->multi_part());
  EXPECT_EQ(Rv(op->Update(Bytes(3), {}).status()), CKR_FUNCTION_NOT_SUPPORTED);
  EXPECT_EQ(Rv(op->OneShot(Bytes(246), absl::MakeSpan(out)).status()),
            CKR_DATA_LEN_RANGE);
  Bytes small(255);
  EXPECT_EQ(Rv(op->OneShot(Bytes(245), absl::MakeSpan(small)).status()),
            CKR_BUFFER_TOO_SMALL);
  ASSERT_OK_AND_ASSIGN(size_t n, op->OneShot(Bytes(245), absl::MakeSpan(out)));
  EXPECT_EQ(n, 256u);
  op = Start(OpKind::kSign, CKM_RSA_PKCS_PSS, &pss, sizeof(pss), priv);
  EXPECT_EQ(Rv(op->OneShot(Bytes(31), absl::MakeSpan(out)).status()),
            CKR_DATA_LEN_RANGE);
  EXPECT_EQ(
      VerifyRv(CKM_SHA256_RSA_PKCS, nullptr, 0, pub, Bytes(3), Bytes(255)),
      CKR_SIGNATURE_LEN_RANGE);
  auto enc = Start(OpKind::kEncrypt, CKM_RSA_PKCS, nullptr, 0, pub);
  EXPECT_EQ(Rv(enc->OneShot(Bytes(246), absl::MakeSpan(out)).status()),
            CKR_DATA_LEN_RANGE);
  CK_RSA_PKCS_OAEP_PARAMS oaep_ok{CKM_SHA256, CKG_MGF1_SHA256,
                                  CKZ_DATA_SPECIFIED, nullptr, 0};
  enc = Start(OpKind::kEncrypt, CKM_RSA_PKCS_OAEP, &oaep_ok, sizeof(oaep_ok),
              pub);
  EXPECT_EQ(Rv(enc->OneShot(Bytes(256 - 66 + 1), absl::MakeSpan(out)).status()),
            CKR_DATA_LEN_RANGE);
  auto dec = Start(OpKind::kDecrypt, CKM_RSA_PKCS, nullptr, 0, priv);
  EXPECT_EQ(Rv(dec->OneShot(Bytes(255), absl::MakeSpan(out)).status()),
            CKR_ENCRYPTED_DATA_LEN_RANGE);
  EXPECT_EQ(Rv(dec->OneShot(Bytes(256, 0x01), absl::MakeSpan(out)).status()),
            CKR_ENCRYPTED_DATA_INVALID);
  // PKCS#1 v1.5 decryption: the exact plaintext length suffices; one
  // byte less is BUFFER_TOO_SMALL and the same call then succeeds.
  auto e1 = Start(OpKind::kEncrypt, CKM_RSA_PKCS, nullptr, 0, pub);
  Bytes secret = Rng(31).Bytes(40);
  ASSERT_OK_AND_ASSIGN(Bytes c1, OneShot(*e1, secret));
  dec = Start(OpKind::kDecrypt, CKM_RSA_PKCS, nullptr, 0, priv);
  Bytes short_out(39), exact(40);
  EXPECT_EQ(Rv(dec->OneShot(c1, absl::MakeSpan(short_out)).status()),
            CKR_BUFFER_TOO_SMALL);
  ASSERT_OK_AND_ASSIGN(n, dec->OneShot(c1, absl::MakeSpan(exact)));
  EXPECT_EQ(n, 40u);
  EXPECT_EQ(exact, secret);
  // A signature that is not PKCS#1 type 1 fails verify-recover.
  auto xs = Start(OpKind::kSign, CKM_RSA_X_509, nullptr, 0, priv);
  ASSERT_OK_AND_ASSIGN(Bytes raw_sig, OneShot(*xs, Bytes(200, 0x42)));
  auto rec = Start(OpKind::kVerifyRecover, CKM_RSA_PKCS, nullptr, 0, pub);
  EXPECT_EQ(Rv(rec->OneShot(raw_sig, absl::MakeSpan(out)).status()),
            CKR_SIGNATURE_INVALID);
}

TEST_F(PkeyMechTest, RsaKeyGenerationErrors) {
  CK_MECHANISM m{CKM_RSA_PKCS_KEY_PAIR_GEN, nullptr, 0};
  AttributeMap pub, priv;
  EXPECT_EQ(Rv(mech_->GenerateKeyPair(m, pub, priv).status()),
            CKR_TEMPLATE_INCOMPLETE);
  pub.SetUlong(CKA_MODULUS_BITS, 512);
  EXPECT_EQ(Rv(mech_->GenerateKeyPair(m, pub, priv).status()),
            CKR_KEY_SIZE_RANGE);
  pub.SetUlong(CKA_MODULUS_BITS, 1024);
  pub.Set(CKA_PUBLIC_EXPONENT, Bytes{0x01, 0x00, 0x00});
  EXPECT_EQ(Rv(mech_->GenerateKeyPair(m, pub, priv).status()),
            CKR_ATTRIBUTE_VALUE_INVALID);
  pub.Set(CKA_PUBLIC_EXPONENT, Bytes{0x03});
  priv.SetUlong(CKA_KEY_TYPE, CKK_DSA);
  EXPECT_EQ(Rv(mech_->GenerateKeyPair(m, pub, priv).status()),
            CKR_TEMPLATE_INCONSISTENT);
  priv.Erase(CKA_KEY_TYPE);
  ASSERT_OK_AND_ASSIGN(auto pair, mech_->GenerateKeyPair(m, pub, priv));
  EXPECT_EQ(pair.first.GetBytes(CKA_PUBLIC_EXPONENT), Bytes{0x03});
  EXPECT_EQ(pair.first.GetUlong(CKA_CLASS), CKO_PUBLIC_KEY);
  EXPECT_EQ(pair.second.GetUlong(CKA_CLASS), CKO_PRIVATE_KEY);
  EXPECT_FALSE(pair.first.Has(CKA_PRIVATE_EXPONENT));
  auto k = Prepare(pair.second);
  Bytes sig = Sign(CKM_SHA1_RSA_PKCS, nullptr, 0, k, Bytes(5, 1));
  EXPECT_EQ(sig.size(), 128u);
  CK_ULONG param = 0;
  CK_MECHANISM with_param{CKM_RSA_PKCS_KEY_PAIR_GEN, &param, sizeof(param)};
  EXPECT_EQ(Rv(mech_->GenerateKeyPair(with_param, pub, {}).status()),
            CKR_MECHANISM_PARAM_INVALID);
}

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
}  // namespace accelcrypt::p11::testing
