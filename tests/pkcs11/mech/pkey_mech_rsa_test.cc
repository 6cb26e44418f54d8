// SPDX-License-Identifier: Apache-2.0
// RSA mechanisms: NIST CAVP vectors (RSASP1, SigGen15, SigGenPSS, SigVer15),
// round trips against libcrypto's default provider with keys the engine
// generates, and the PKCS#11 error codes.
// Fixture and helpers: pkey_mech_fixture.h.
#include <openssl/evp.h>
#include <openssl/rsa.h>

#include <fstream>
#include <map>
#include <string>
#include <utility>

#include "tests/pkcs11/mech/mech_test_util.h"
#include "tests/pkcs11/mech/pkey_mech_fixture.h"

namespace accelcrypt::p11::testing::pkey {
namespace {

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

}  // namespace
}  // namespace accelcrypt::p11::testing::pkey
