// SPDX-License-Identifier: Apache-2.0
// RSA and DSA through the module: keys generated on the token (5.14.2
// C_GenerateKeyPair), public halves exported as attributes and checked with
// libcrypto's default provider; CAVP SigVer vectors verified through
// imported public keys. Sections: current mechanisms v2.40 2.1.4 (RSA key
// pair generation), 2.1.6 (PKCS #1 v1.5), 2.1.8 (OAEP), 2.1.10 (PSS),
// 2.1.12 (X.509 raw), 2.1.14/2.1.15 (hash-and-sign), 2.2 (DSA); base spec
// 5.11-5.12 (sign/verify, verify-recover), 4.7-4.9 (key attributes).
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/dsa.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>
#include <p11-kit-1/p11-kit/pkcs11.h>

#include <memory>
#include <string>
#include <vector>

#include "core/vector_file.h"
#include "gtest/gtest.h"
#include "tests/pkcs11/conformance/conformance_fixture.h"
#include "tests/pkcs11/conformance/p11_harness.h"
#include "tests/support/test_env.h"

namespace accelcrypt::p11test {
namespace {

using Bytes = std::vector<uint8_t>;

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;

std::string Vec(const std::string& rel) {
  return accelcrypt::testing::VectorDir() + "/" + rel;
}

// FromData builds a libcrypto public key of `type` ("RSA"/"DSA") from big
// endian integer parameters.
PkeyPtr FromData(const char* type,
                 const std::vector<std::pair<const char*, Bytes>>& params) {
  OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
  std::vector<BIGNUM*> bns;
  for (const auto& [name, value] : params) {
    BIGNUM* bn = BN_bin2bn(value.data(), value.size(), nullptr);
    bns.push_back(bn);
    OSSL_PARAM_BLD_push_BN(bld, name, bn);
  }
  OSSL_PARAM* p = OSSL_PARAM_BLD_to_param(bld);
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr);
  EVP_PKEY* pkey = nullptr;
  if (EVP_PKEY_fromdata_init(ctx) != 1 ||
      EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, p) != 1) {
    pkey = nullptr;
  }
  EVP_PKEY_CTX_free(ctx);
  OSSL_PARAM_free(p);
  OSSL_PARAM_BLD_free(bld);
  for (BIGNUM* bn : bns) BN_free(bn);
  return PkeyPtr(pkey);
}

// Verifies a signature with libcrypto (md may be null for a raw
// PKCS#1/DSA signature over an already-hashed input).
bool LibcryptoVerify(EVP_PKEY* pkey, const EVP_MD* md, int padding,
                     int salt_len, const Bytes& msg, const Bytes& sig) {
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new(pkey, nullptr);
  bool ok = EVP_PKEY_verify_init(ctx) == 1;
  if (padding != 0) ok = ok && EVP_PKEY_CTX_set_rsa_padding(ctx, padding) == 1;
  if (md != nullptr) ok = ok && EVP_PKEY_CTX_set_signature_md(ctx, md) == 1;
  if (padding == RSA_PKCS1_PSS_PADDING) {
    ok = ok && EVP_PKEY_CTX_set_rsa_pss_saltlen(ctx, salt_len) == 1;
  }
  Bytes hash = msg;
  if (md != nullptr) {
    hash.resize(EVP_MAX_MD_SIZE);
    unsigned int hl = 0;
    EVP_Digest(msg.data(), msg.size(), hash.data(), &hl, md, nullptr);
    hash.resize(hl);
  }
  ok = ok && EVP_PKEY_verify(ctx, sig.data(), sig.size(), hash.data(),
                             hash.size()) == 1;
  EVP_PKEY_CTX_free(ctx);
  return ok;
}

class RsaTest : public P11Test {
 protected:
  void SetUp() override {
    P11Test::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_CKR(CKR_OK, OpenUserRw(&h_));
    if (!HasMechanism(CKM_RSA_PKCS_KEY_PAIR_GEN)) {
      GTEST_SKIP() << ModuleName(kind())
                   << " does not list CKM_RSA_PKCS_KEY_PAIR_GEN";
    }
    CK_MECHANISM gen = {CKM_RSA_PKCS_KEY_PAIR_GEN, nullptr, 0};
    Bytes e = {1, 0, 1};
    Template pub;
    pub.Bool(CKA_TOKEN, false)
        .Ulong(CKA_MODULUS_BITS, 2048)
        .Bytes(CKA_PUBLIC_EXPONENT, e)
        .Bool(CKA_VERIFY, true)
        .Bool(CKA_ENCRYPT, true)
        .Bool(CKA_VERIFY_RECOVER, true);
    Template priv;
    priv.Bool(CKA_TOKEN, false)
        .Bool(CKA_PRIVATE, true)
        .Bool(CKA_SENSITIVE, true)
        .Bool(CKA_EXTRACTABLE, false)
        .Bool(CKA_SIGN, true)
        .Bool(CKA_DECRYPT, true)
        .Bool(CKA_SIGN_RECOVER, true);
    ASSERT_CKR(CKR_OK,
               f()->C_GenerateKeyPair(h_, &gen, pub.data(), pub.size(),
                                      priv.data(), priv.size(), &pub_, &priv_));
    ASSERT_CKR(CKR_OK, GetAttribute(f(), h_, pub_, CKA_MODULUS, &n_));
    ASSERT_CKR(CKR_OK, GetAttribute(f(), h_, pub_, CKA_PUBLIC_EXPONENT, &e_));
    pkey_ = FromData(
        "RSA", {{OSSL_PKEY_PARAM_RSA_N, n_}, {OSSL_PKEY_PARAM_RSA_E, e_}});
    ASSERT_TRUE(pkey_ != nullptr);
  }

  CK_RV Sign(CK_MECHANISM* mech, const Bytes& msg, Bytes* sig) {
    CK_RV rv = f()->C_SignInit(h_, mech, priv_);
    if (rv != CKR_OK) return rv;
    Bytes in = msg;
    CK_ULONG len = 0;
    rv = f()->C_Sign(h_, in.data(), in.size(), nullptr, &len);
    if (rv != CKR_OK) return rv;
    sig->assign(len, 0);
    rv = f()->C_Sign(h_, in.data(), in.size(), sig->data(), &len);
    sig->resize(len);
    return rv;
  }
  CK_RV Verify(CK_MECHANISM* mech, const Bytes& msg, const Bytes& sig) {
    CK_RV rv = f()->C_VerifyInit(h_, mech, pub_);
    if (rv != CKR_OK) return rv;
    Bytes in = msg, s = sig;
    return f()->C_Verify(h_, in.data(), in.size(), s.data(), s.size());
  }
  CK_RV Decrypt(CK_MECHANISM* mech, const Bytes& ct, Bytes* pt) {
    CK_RV rv = f()->C_DecryptInit(h_, mech, priv_);
    if (rv != CKR_OK) return rv;
    Bytes in = ct;
    pt->assign(n_.size(), 0);
    CK_ULONG len = pt->size();
    rv = f()->C_Decrypt(h_, in.data(), in.size(), pt->data(), &len);
    if (rv == CKR_OK) pt->resize(len);
    return rv;
  }
  CK_RV Encrypt(CK_MECHANISM* mech, const Bytes& pt, Bytes* ct) {
    CK_RV rv = f()->C_EncryptInit(h_, mech, pub_);
    if (rv != CKR_OK) return rv;
    Bytes in = pt;
    ct->assign(n_.size(), 0);
    CK_ULONG len = ct->size();
    rv = f()->C_Encrypt(h_, in.data(), in.size(), ct->data(), &len);
    if (rv == CKR_OK) ct->resize(len);
    return rv;
  }

  CK_SESSION_HANDLE h_ = 0;
  CK_OBJECT_HANDLE pub_ = 0, priv_ = 0;
  Bytes n_, e_;
  PkeyPtr pkey_;
};

// 2.1.4 / 4.7-4.9: the generated pair's attributes.
TEST_P(RsaTest, KeyPairAttributes) {
  EXPECT_EQ(256u, n_.size());
  EXPECT_EQ((Bytes{1, 0, 1}), e_);
  CK_ULONG u = 0;
  ASSERT_CKR(CKR_OK, GetUlong(f(), h_, pub_, CKA_MODULUS_BITS, &u));
  EXPECT_EQ(2048u, u);
  for (CK_OBJECT_HANDLE obj : {pub_, priv_}) {
    bool local = false;
    ASSERT_CKR(CKR_OK, GetBool(f(), h_, obj, CKA_LOCAL, &local));
    EXPECT_TRUE(local);
    ASSERT_CKR(CKR_OK, GetUlong(f(), h_, obj, CKA_KEY_GEN_MECHANISM, &u));
    EXPECT_EQ(CKM_RSA_PKCS_KEY_PAIR_GEN, u);
    ASSERT_CKR(CKR_OK, GetUlong(f(), h_, obj, CKA_KEY_TYPE, &u));
    EXPECT_EQ(CKK_RSA, u);
  }
  ASSERT_CKR(CKR_OK, GetUlong(f(), h_, pub_, CKA_CLASS, &u));
  EXPECT_EQ(CKO_PUBLIC_KEY, u);
  ASSERT_CKR(CKR_OK, GetUlong(f(), h_, priv_, CKA_CLASS, &u));
  EXPECT_EQ(CKO_PRIVATE_KEY, u);
  bool b = false;
  ASSERT_CKR(CKR_OK, GetBool(f(), h_, priv_, CKA_ALWAYS_SENSITIVE, &b));
  EXPECT_TRUE(b);
  ASSERT_CKR(CKR_OK, GetBool(f(), h_, priv_, CKA_NEVER_EXTRACTABLE, &b));
  EXPECT_TRUE(b);
  // 2.1.3: the private key carries the modulus; its private parts are
  // sensitive.
  Bytes n2;
  ASSERT_CKR(CKR_OK, GetAttribute(f(), h_, priv_, CKA_MODULUS, &n2));
  EXPECT_EQ(n_, n2);
  Bytes d;
  EXPECT_CKR(CKR_ATTRIBUTE_SENSITIVE,
             GetAttribute(f(), h_, priv_, CKA_PRIVATE_EXPONENT, &d));
  EXPECT_CKR(CKR_ATTRIBUTE_SENSITIVE,
             GetAttribute(f(), h_, priv_, CKA_PRIME_1, &d));
  // 2.1.4: CKA_MODULUS_BITS is required in the public template.
  CK_MECHANISM gen = {CKM_RSA_PKCS_KEY_PAIR_GEN, nullptr, 0};
  Template pub;
  pub.Bool(CKA_TOKEN, false);
  Template priv;
  priv.Bool(CKA_TOKEN, false);
  CK_OBJECT_HANDLE a, c;
  EXPECT_CKR(CKR_TEMPLATE_INCOMPLETE,
             f()->C_GenerateKeyPair(h_, &gen, pub.data(), pub.size(),
                                    priv.data(), priv.size(), &a, &c));
}

// 2.1.14 hash-and-sign PKCS #1 v1.5 and 2.1.6 raw CKM_RSA_PKCS over a
// DigestInfo: libcrypto verifies the token's signatures; the token rejects
// a corrupted one (CKR_SIGNATURE_INVALID, 5.12.2).
TEST_P(RsaTest, Pkcs1SignVerify) {
  const struct {
    CK_MECHANISM_TYPE m;
    const EVP_MD* (*md)();
  } kCases[] = {{CKM_SHA1_RSA_PKCS, EVP_sha1},
                {CKM_SHA256_RSA_PKCS, EVP_sha256},
                {CKM_SHA384_RSA_PKCS, EVP_sha384},
                {CKM_SHA512_RSA_PKCS, EVP_sha512}};
  Bytes msg(300, 0x6d);
  for (const auto& c : kCases) {
    if (!HasMechanism(c.m)) {
      ADD_FAILURE() << "missing mechanism 0x" << std::hex << c.m;
      continue;
    }
    CK_MECHANISM mech = {c.m, nullptr, 0};
    Bytes sig;
    ASSERT_CKR(CKR_OK, Sign(&mech, msg, &sig));
    ASSERT_EQ(256u, sig.size());
    EXPECT_TRUE(
        LibcryptoVerify(pkey_.get(), c.md(), RSA_PKCS1_PADDING, 0, msg, sig));
    EXPECT_CKR(CKR_OK, Verify(&mech, msg, sig));
    // Multi-part signing gives the same (deterministic) signature.
    ASSERT_CKR(CKR_OK, f()->C_SignInit(h_, &mech, priv_));
    ASSERT_CKR(CKR_OK, f()->C_SignUpdate(h_, msg.data(), 100));
    ASSERT_CKR(CKR_OK, f()->C_SignUpdate(h_, msg.data() + 100, 200));
    Bytes sig2(256);
    CK_ULONG len = sig2.size();
    ASSERT_CKR(CKR_OK, f()->C_SignFinal(h_, sig2.data(), &len));
    EXPECT_EQ(sig, sig2);
    sig[10] ^= 0x40;
    EXPECT_CKR(CKR_SIGNATURE_INVALID, Verify(&mech, msg, sig));
    Bytes short_sig(sig.begin(), sig.end() - 1);
    CK_RV rv = Verify(&mech, msg, short_sig);
    EXPECT_TRUE(rv == CKR_SIGNATURE_LEN_RANGE || rv == CKR_SIGNATURE_INVALID)
        << CkrName(rv);
  }
  // Raw CKM_RSA_PKCS over a caller-built DigestInfo (SHA-256).
  const Bytes prefix = {0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60,
                        0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02,
                        0x01, 0x05, 0x00, 0x04, 0x20};
  Bytes hash(32);
  unsigned int hl = 0;
  EVP_Digest(msg.data(), msg.size(), hash.data(), &hl, EVP_sha256(), nullptr);
  Bytes info = prefix;
  info.insert(info.end(), hash.begin(), hash.end());
  CK_MECHANISM raw = {CKM_RSA_PKCS, nullptr, 0};
  Bytes sig;
  ASSERT_CKR(CKR_OK, Sign(&raw, info, &sig));
  EXPECT_TRUE(LibcryptoVerify(pkey_.get(), EVP_sha256(), RSA_PKCS1_PADDING, 0,
                              msg, sig));
}

// 2.1.10 / 2.1.15 PSS: token signatures verify in libcrypto with the same
// salt length; 2.1.9: the params' hashAlg must match the mechanism's hash.
TEST_P(RsaTest, PssSignVerify) {
  REQUIRE_MECHANISM(CKM_SHA256_RSA_PKCS_PSS);
  CK_RSA_PKCS_PSS_PARAMS p = {CKM_SHA256, CKG_MGF1_SHA256, 32};
  CK_MECHANISM mech = {CKM_SHA256_RSA_PKCS_PSS, &p, sizeof(p)};
  Bytes msg(123, 0x70), sig;
  ASSERT_CKR(CKR_OK, Sign(&mech, msg, &sig));
  EXPECT_TRUE(LibcryptoVerify(pkey_.get(), EVP_sha256(), RSA_PKCS1_PSS_PADDING,
                              32, msg, sig));
  EXPECT_CKR(CKR_OK, Verify(&mech, msg, sig));
  // PSS is randomised: a second signature differs and verifies too.
  Bytes sig2;
  ASSERT_CKR(CKR_OK, Sign(&mech, msg, &sig2));
  EXPECT_NE(sig, sig2);
  EXPECT_CKR(CKR_OK, Verify(&mech, msg, sig2));
  msg[0] ^= 1;
  EXPECT_CKR(CKR_SIGNATURE_INVALID, Verify(&mech, msg, sig));
  // CKM_RSA_PKCS_PSS over a SHA-384 hash.
  if (HasMechanism(CKM_RSA_PKCS_PSS)) {
    CK_RSA_PKCS_PSS_PARAMS p384 = {CKM_SHA384, CKG_MGF1_SHA384, 48};
    CK_MECHANISM raw = {CKM_RSA_PKCS_PSS, &p384, sizeof(p384)};
    Bytes data(77, 0x33), hash(48);
    unsigned int hl = 0;
    EVP_Digest(data.data(), data.size(), hash.data(), &hl, EVP_sha384(),
               nullptr);
    ASSERT_CKR(CKR_OK, Sign(&raw, hash, &sig));
    EXPECT_TRUE(LibcryptoVerify(pkey_.get(), EVP_sha384(),
                                RSA_PKCS1_PSS_PADDING, 48, data, sig));
  }
  {
    SKIP_IF_DEVIATES("pss.hash_mismatch");
    CK_RSA_PKCS_PSS_PARAMS bad = {CKM_SHA_1, CKG_MGF1_SHA1, 20};
    CK_MECHANISM m = {CKM_SHA256_RSA_PKCS_PSS, &bad, sizeof(bad)};
    EXPECT_CKR(CKR_MECHANISM_PARAM_INVALID, f()->C_SignInit(h_, &m, priv_));
  }
}

// 2.1.6 CKM_RSA_PKCS encryption and 2.1.8 OAEP: libcrypto encrypts, the
// token decrypts; the token's own encryption round-trips.
TEST_P(RsaTest, Pkcs1AndOaepEncryptDecrypt) {
  Bytes msg = {'a', 'c', 'c', 'e', 'l', 'c', 'r', 'y',
               'p', 't', '-', 'o', 'a', 'e', 'p'};
  auto lib_encrypt = [&](int padding, const EVP_MD* md, const Bytes& label) {
    EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new(pkey_.get(), nullptr);
    EXPECT_EQ(1, EVP_PKEY_encrypt_init(ctx));
    EXPECT_EQ(1, EVP_PKEY_CTX_set_rsa_padding(ctx, padding));
    if (padding == RSA_PKCS1_OAEP_PADDING) {
      EVP_PKEY_CTX_set_rsa_oaep_md(ctx, md);
      EVP_PKEY_CTX_set_rsa_mgf1_md(ctx, md);
      if (!label.empty()) {
        void* l = OPENSSL_memdup(label.data(), label.size());
        EVP_PKEY_CTX_set0_rsa_oaep_label(ctx, l, label.size());
      }
    }
    Bytes out(256);
    size_t len = out.size();
    EXPECT_EQ(1,
              EVP_PKEY_encrypt(ctx, out.data(), &len, msg.data(), msg.size()));
    out.resize(len);
    EVP_PKEY_CTX_free(ctx);
    return out;
  };
  // PKCS #1 v1.5.
  CK_MECHANISM pkcs = {CKM_RSA_PKCS, nullptr, 0};
  Bytes pt, ct;
  ASSERT_CKR(CKR_OK,
             Decrypt(&pkcs, lib_encrypt(RSA_PKCS1_PADDING, nullptr, {}), &pt));
  EXPECT_EQ(msg, pt);
  ASSERT_CKR(CKR_OK, Encrypt(&pkcs, msg, &ct));
  ASSERT_CKR(CKR_OK, Decrypt(&pkcs, ct, &pt));
  EXPECT_EQ(msg, pt);

  REQUIRE_MECHANISM(CKM_RSA_PKCS_OAEP);
  // OAEP with SHA-1, no label.
  CK_RSA_PKCS_OAEP_PARAMS p1 = {CKM_SHA_1, CKG_MGF1_SHA1, CKZ_DATA_SPECIFIED,
                                nullptr, 0};
  CK_MECHANISM oaep1 = {CKM_RSA_PKCS_OAEP, &p1, sizeof(p1)};
  ASSERT_CKR(CKR_OK,
             Decrypt(&oaep1,
                     lib_encrypt(RSA_PKCS1_OAEP_PADDING, EVP_sha1(), {}), &pt));
  EXPECT_EQ(msg, pt);
  ASSERT_CKR(CKR_OK, Encrypt(&oaep1, msg, &ct));
  ASSERT_CKR(CKR_OK, Decrypt(&oaep1, ct, &pt));
  EXPECT_EQ(msg, pt);
  // Corrupted ciphertext: an error, no plaintext (5.9.2).
  ct[5] ^= 1;
  CK_RV rv = Decrypt(&oaep1, ct, &pt);
  // 5.1.6 / 2.1.8: ciphertext that fails the OAEP decoding is
  // CKR_ENCRYPTED_DATA_INVALID.
  EXPECT_NE(CKR_OK, rv);
  if (FindDeviation(kind(), "oaep.bad_ciphertext_code") == nullptr) {
    EXPECT_CKR(CKR_ENCRYPTED_DATA_INVALID, rv);
  }

  SKIP_IF_DEVIATES("oaep.sha256_label");
  Bytes label = {'L', '1'};
  CK_RSA_PKCS_OAEP_PARAMS p256 = {CKM_SHA256, CKG_MGF1_SHA256,
                                  CKZ_DATA_SPECIFIED, label.data(),
                                  label.size()};
  CK_MECHANISM oaep256 = {CKM_RSA_PKCS_OAEP, &p256, sizeof(p256)};
  ASSERT_CKR(
      CKR_OK,
      Decrypt(&oaep256,
              lib_encrypt(RSA_PKCS1_OAEP_PADDING, EVP_sha256(), label), &pt));
  EXPECT_EQ(msg, pt);
  // The wrong label does not decrypt.
  Bytes other = {'L', '2'};
  p256.pSourceData = other.data();
  EXPECT_NE(
      CKR_OK,
      Decrypt(&oaep256,
              lib_encrypt(RSA_PKCS1_OAEP_PADDING, EVP_sha256(), label), &pt));
}

// 2.1.12 CKM_RSA_X_509 (raw RSA): sign = m^d, checked by libcrypto's raw
// public operation; raw encrypt/decrypt round-trips.
TEST_P(RsaTest, RawX509) {
  REQUIRE_MECHANISM(CKM_RSA_X_509);
  Bytes m(256);
  for (size_t i = 0; i < m.size(); ++i) m[i] = static_cast<uint8_t>(i * 13);
  m[0] = 0x00;  // below the modulus
  CK_MECHANISM raw = {CKM_RSA_X_509, nullptr, 0};
  Bytes sig;
  ASSERT_CKR(CKR_OK, Sign(&raw, m, &sig));
  ASSERT_EQ(256u, sig.size());
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new(pkey_.get(), nullptr);
  ASSERT_EQ(1, EVP_PKEY_verify_recover_init(ctx));
  ASSERT_EQ(1, EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_NO_PADDING));
  Bytes rec(256);
  size_t rlen = rec.size();
  ASSERT_EQ(1, EVP_PKEY_verify_recover(ctx, rec.data(), &rlen, sig.data(),
                                       sig.size()));
  EVP_PKEY_CTX_free(ctx);
  rec.resize(rlen);
  EXPECT_EQ(m, rec);
  EXPECT_CKR(CKR_OK, Verify(&raw, m, sig));
  Bytes ct, pt;
  ASSERT_CKR(CKR_OK, Encrypt(&raw, m, &ct));
  ASSERT_CKR(CKR_OK, Decrypt(&raw, ct, &pt));
  EXPECT_EQ(m, pt);
}

// 5.12.6 C_VerifyRecover with CKM_RSA_PKCS: the data comes back; the
// two-call convention applies; a corrupted signature is
// CKR_SIGNATURE_INVALID.
TEST_P(RsaTest, VerifyRecover) {
  CK_MECHANISM_INFO mi;
  ASSERT_CKR(CKR_OK, f()->C_GetMechanismInfo(slot(), CKM_RSA_PKCS, &mi));
  if (!(mi.flags & CKF_VERIFY_RECOVER)) {
    GTEST_SKIP() << ModuleName(kind())
                 << " does not offer CKF_VERIFY_RECOVER for CKM_RSA_PKCS";
  }
  CK_MECHANISM mech = {CKM_RSA_PKCS, nullptr, 0};
  Bytes data(40, 0x5c), sig;
  ASSERT_CKR(CKR_OK, Sign(&mech, data, &sig));
  ASSERT_CKR(CKR_OK, f()->C_VerifyRecoverInit(h_, &mech, pub_));
  CK_ULONG len = 0;
  ASSERT_CKR(CKR_OK,
             f()->C_VerifyRecover(h_, sig.data(), sig.size(), nullptr, &len));
  EXPECT_GE(len, data.size());
  Bytes out(len);
  CK_ULONG small = 1;
  EXPECT_CKR(
      CKR_BUFFER_TOO_SMALL,
      f()->C_VerifyRecover(h_, sig.data(), sig.size(), out.data(), &small));
  ASSERT_CKR(CKR_OK, f()->C_VerifyRecover(h_, sig.data(), sig.size(),
                                          out.data(), &len));
  out.resize(len);
  EXPECT_EQ(data, out);
  sig[3] ^= 0x10;
  ASSERT_CKR(CKR_OK, f()->C_VerifyRecoverInit(h_, &mech, pub_));
  len = out.capacity();
  out.resize(256);
  len = out.size();
  EXPECT_CKR(
      CKR_SIGNATURE_INVALID,
      f()->C_VerifyRecover(h_, sig.data(), sig.size(), out.data(), &len));
}

// 5.11.1: a public key cannot sign (CKR_KEY_TYPE_INCONSISTENT or
// CKR_KEY_FUNCTION_NOT_PERMITTED), an RSA key cannot do AES.
TEST_P(RsaTest, WrongKeyForMechanism) {
  CK_MECHANISM mech = {CKM_SHA256_RSA_PKCS, nullptr, 0};
  CK_RV rv = f()->C_SignInit(h_, &mech, pub_);
  EXPECT_TRUE(rv == CKR_KEY_TYPE_INCONSISTENT ||
              rv == CKR_KEY_FUNCTION_NOT_PERMITTED)
      << CkrName(rv);
  CK_MECHANISM ecb = {CKM_AES_ECB, nullptr, 0};
  EXPECT_CKR(CKR_KEY_TYPE_INCONSISTENT, f()->C_EncryptInit(h_, &ecb, pub_));
}

ACCELCRYPT_P11_INSTANTIATE(RsaTest);

// ---------------------------------------------------------------------------
// Known-answer verification through imported public keys (CAVP SigVer).

// Int decodes an integer field, whose hex may have an odd number of digits.
Bytes Int(const VectorRecord& r, const char* key) {
  std::string hex = r.Get(key);
  if (hex.size() % 2 == 1) hex = "0" + hex;
  return accelcrypt::testing::FromHex(hex);
}

class PkeyVectorTest : public P11Test {
 protected:
  void SetUp() override {
    P11Test::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_CKR(CKR_OK, OpenUserRw(&h_));
  }
  CK_SESSION_HANDLE h_ = 0;
};

CK_MECHANISM_TYPE RsaPkcsMech(const std::string& alg) {
  if (alg == "SHA1") return CKM_SHA1_RSA_PKCS;
  if (alg == "SHA224") return CKM_SHA224_RSA_PKCS;
  if (alg == "SHA256") return CKM_SHA256_RSA_PKCS;
  if (alg == "SHA384") return CKM_SHA384_RSA_PKCS;
  if (alg == "SHA512") return CKM_SHA512_RSA_PKCS;
  return CKM_VENDOR_DEFINED;
}

// RSA2VS SigVer15 (mod 2048): Result = P verifies, F is
// CKR_SIGNATURE_INVALID (or CKR_SIGNATURE_LEN_RANGE).
TEST_P(PkeyVectorTest, RsaPkcs1SigVer) {
  auto vf = ParseVectorFile(Vec("rsa/SigVer15_186-3.rsp"));
  ASSERT_TRUE(vf.ok()) << vf.status();
  int pass = 0, fail = 0;
  for (const VectorRecord& r : vf->records) {
    if (r.SectionValue("mod").value_or("") != "2048") continue;
    SCOPED_TRACE("SigVer15_186-3.rsp:" + std::to_string(r.line));
    CK_MECHANISM_TYPE m = RsaPkcsMech(r.Get("SHAAlg"));
    if (!HasMechanism(m)) continue;
    auto n = Bytes();
    {
      VectorRecord sec;
      sec.fields = r.section;
      auto nb = sec.Bytes("n");
      ASSERT_TRUE(nb.ok());
      n = *nb;
    }
    Template pub;
    pub.Ulong(CKA_CLASS, CKO_PUBLIC_KEY)
        .Ulong(CKA_KEY_TYPE, CKK_RSA)
        .Bool(CKA_TOKEN, false)
        .Bool(CKA_VERIFY, true)
        .Bytes(CKA_MODULUS, n)
        .Bytes(CKA_PUBLIC_EXPONENT, Int(r, "e"));
    auto msg_or = r.Bytes("Msg");
    auto sig_or = r.Bytes("S");
    if (!msg_or.ok() || !sig_or.ok()) continue;  // not byte-aligned
    CK_OBJECT_HANDLE key;
    ASSERT_CKR(CKR_OK, f()->C_CreateObject(h_, pub.data(), pub.size(), &key));
    CK_MECHANISM mech = {m, nullptr, 0};
    Bytes msg = *msg_or, sig = *sig_or;
    ASSERT_CKR(CKR_OK, f()->C_VerifyInit(h_, &mech, key));
    CK_RV rv =
        f()->C_Verify(h_, msg.data(), msg.size(), sig.data(), sig.size());
    if (r.Get("Result").rfind('P', 0) == 0) {
      EXPECT_CKR(CKR_OK, rv);
      ++pass;
    } else {
      EXPECT_TRUE(rv == CKR_SIGNATURE_INVALID || rv == CKR_SIGNATURE_LEN_RANGE)
          << CkrName(rv);
      ++fail;
    }
    f()->C_DestroyObject(h_, key);
  }
  EXPECT_GT(pass, 5);
  EXPECT_GT(fail, 5);
}

CK_MECHANISM_TYPE DsaMech(const std::string& section) {
  if (section.find("SHA-1") != std::string::npos) return CKM_DSA_SHA1;
  if (section.find("SHA-224") != std::string::npos) return CKM_DSA_SHA224;
  if (section.find("SHA-256") != std::string::npos) return CKM_DSA_SHA256;
  if (section.find("SHA-384") != std::string::npos) return CKM_DSA_SHA384;
  if (section.find("SHA-512") != std::string::npos) return CKM_DSA_SHA512;
  return CKM_VENDOR_DEFINED;
}

Bytes LeftPad(const Bytes& v, size_t len) {
  if (v.size() >= len) return Bytes(v.end() - len, v.end());
  Bytes out(len - v.size(), 0);
  out.insert(out.end(), v.begin(), v.end());
  return out;
}

Bytes SectionBytes(const VectorRecord& r, const char* key) {
  VectorRecord sec;
  sec.fields = r.section;
  auto b = sec.Bytes(key);
  return b.ok() ? *b : Bytes();
}

// DSA2VS SigVer (L = 2048, N = 256): the PKCS#11 DSA signature is r || s,
// each N bits (current mechanisms 2.2); P verifies, F fails.
TEST_P(PkeyVectorTest, DsaSigVer) {
  auto vf = ParseVectorFile(Vec("dsa/SigVer.rsp"));
  ASSERT_TRUE(vf.ok()) << vf.status();
  int pass = 0, fail = 0;
  for (const VectorRecord& r : vf->records) {
    std::string mod = r.SectionValue("mod").value_or("");
    if (mod.find("L=2048, N=256") == std::string::npos) continue;
    CK_MECHANISM_TYPE m = DsaMech(mod);
    if (!HasMechanism(m)) continue;
    SCOPED_TRACE("SigVer.rsp:" + std::to_string(r.line));
    Template pub;
    pub.Ulong(CKA_CLASS, CKO_PUBLIC_KEY)
        .Ulong(CKA_KEY_TYPE, CKK_DSA)
        .Bool(CKA_TOKEN, false)
        .Bool(CKA_VERIFY, true)
        .Bytes(CKA_PRIME, SectionBytes(r, "P"))
        .Bytes(CKA_SUBPRIME, SectionBytes(r, "Q"))
        .Bytes(CKA_BASE, SectionBytes(r, "G"))
        .Bytes(CKA_VALUE, Int(r, "Y"));
    CK_OBJECT_HANDLE key;
    ASSERT_CKR(CKR_OK, f()->C_CreateObject(h_, pub.data(), pub.size(), &key));
    Bytes sig = LeftPad(Int(r, "R"), 32);
    Bytes s = LeftPad(Int(r, "S"), 32);
    sig.insert(sig.end(), s.begin(), s.end());
    Bytes msg = Int(r, "Msg");
    CK_MECHANISM mech = {m, nullptr, 0};
    ASSERT_CKR(CKR_OK, f()->C_VerifyInit(h_, &mech, key));
    CK_RV rv =
        f()->C_Verify(h_, msg.data(), msg.size(), sig.data(), sig.size());
    if (r.Get("Result").rfind('P', 0) == 0) {
      EXPECT_CKR(CKR_OK, rv);
      ++pass;
    } else {
      EXPECT_CKR(CKR_SIGNATURE_INVALID, rv);
      ++fail;
    }
    f()->C_DestroyObject(h_, key);
  }
  EXPECT_GT(pass, 3);
  EXPECT_GT(fail, 3);
}

// Current mechanisms 2.2: CKM_DSA_KEY_PAIR_GEN with domain parameters from
// the CAVP file,
// CKM_DSA_SHA256 / CKM_DSA signatures checked by libcrypto.
TEST_P(PkeyVectorTest, DsaGenerateSignVerify) {
  REQUIRE_MECHANISM(CKM_DSA_KEY_PAIR_GEN);
  REQUIRE_MECHANISM(CKM_DSA_SHA256);
  auto vf = ParseVectorFile(Vec("dsa/SigGen.rsp"));
  ASSERT_TRUE(vf.ok()) << vf.status();
  const VectorRecord* dom = nullptr;
  for (const VectorRecord& r : vf->records) {
    if (r.SectionValue("mod").value_or("") == "L=2048, N=256, SHA-256") {
      dom = &r;
      break;
    }
  }
  ASSERT_NE(nullptr, dom);
  Bytes p = SectionBytes(*dom, "P"), q = SectionBytes(*dom, "Q"),
        g = SectionBytes(*dom, "G");
  CK_MECHANISM gen = {CKM_DSA_KEY_PAIR_GEN, nullptr, 0};
  Template pub;
  pub.Bool(CKA_TOKEN, false)
      .Bool(CKA_VERIFY, true)
      .Bytes(CKA_PRIME, p)
      .Bytes(CKA_SUBPRIME, q)
      .Bytes(CKA_BASE, g);
  Template priv;
  priv.Bool(CKA_TOKEN, false)
      .Bool(CKA_PRIVATE, true)
      .Bool(CKA_SENSITIVE, true)
      .Bool(CKA_SIGN, true);
  CK_OBJECT_HANDLE pk, sk;
  ASSERT_CKR(CKR_OK,
             f()->C_GenerateKeyPair(h_, &gen, pub.data(), pub.size(),
                                    priv.data(), priv.size(), &pk, &sk));
  Bytes y;
  ASSERT_CKR(CKR_OK, GetAttribute(f(), h_, pk, CKA_VALUE, &y));
  bool local = false;
  ASSERT_CKR(CKR_OK, GetBool(f(), h_, sk, CKA_LOCAL, &local));
  EXPECT_TRUE(local);
  CK_ULONG u = 0;
  ASSERT_CKR(CKR_OK, GetUlong(f(), h_, sk, CKA_KEY_GEN_MECHANISM, &u));
  EXPECT_EQ(CKM_DSA_KEY_PAIR_GEN, u);
  Bytes x;
  EXPECT_CKR(CKR_ATTRIBUTE_SENSITIVE, GetAttribute(f(), h_, sk, CKA_VALUE, &x));
  PkeyPtr pkey = FromData("DSA", {{OSSL_PKEY_PARAM_FFC_P, p},
                                  {OSSL_PKEY_PARAM_FFC_Q, q},
                                  {OSSL_PKEY_PARAM_FFC_G, g},
                                  {OSSL_PKEY_PARAM_PUB_KEY, y}});
  ASSERT_TRUE(pkey != nullptr);

  auto to_der = [](const Bytes& rs) {
    DSA_SIG* sig = DSA_SIG_new();
    size_t half = rs.size() / 2;
    DSA_SIG_set0(sig, BN_bin2bn(rs.data(), half, nullptr),
                 BN_bin2bn(rs.data() + half, half, nullptr));
    unsigned char* der = nullptr;
    int len = i2d_DSA_SIG(sig, &der);
    Bytes out(der, der + (len > 0 ? len : 0));
    OPENSSL_free(der);
    DSA_SIG_free(sig);
    return out;
  };
  Bytes msg(222, 0x44);
  CK_MECHANISM mech = {CKM_DSA_SHA256, nullptr, 0};
  ASSERT_CKR(CKR_OK, f()->C_SignInit(h_, &mech, sk));
  CK_ULONG len = 0;
  ASSERT_CKR(CKR_OK, f()->C_Sign(h_, msg.data(), msg.size(), nullptr, &len));
  EXPECT_EQ(64u, len);
  Bytes sig(len);
  ASSERT_CKR(CKR_OK, f()->C_Sign(h_, msg.data(), msg.size(), sig.data(), &len));
  EXPECT_TRUE(
      LibcryptoVerify(pkey.get(), EVP_sha256(), 0, 0, msg, to_der(sig)));
  ASSERT_CKR(CKR_OK, f()->C_VerifyInit(h_, &mech, pk));
  EXPECT_CKR(CKR_OK,
             f()->C_Verify(h_, msg.data(), msg.size(), sig.data(), sig.size()));
  sig[40] ^= 2;
  ASSERT_CKR(CKR_OK, f()->C_VerifyInit(h_, &mech, pk));
  EXPECT_CKR(CKR_SIGNATURE_INVALID,
             f()->C_Verify(h_, msg.data(), msg.size(), sig.data(), sig.size()));
  if (HasMechanism(CKM_DSA)) {
    Bytes hash(32);
    unsigned int hl = 0;
    EVP_Digest(msg.data(), msg.size(), hash.data(), &hl, EVP_sha256(), nullptr);
    CK_MECHANISM raw = {CKM_DSA, nullptr, 0};
    ASSERT_CKR(CKR_OK, f()->C_SignInit(h_, &raw, sk));
    len = 64;
    Bytes rs(64);
    ASSERT_CKR(CKR_OK,
               f()->C_Sign(h_, hash.data(), hash.size(), rs.data(), &len));
    EXPECT_TRUE(
        LibcryptoVerify(pkey.get(), EVP_sha256(), 0, 0, msg, to_der(rs)));
  }
}

ACCELCRYPT_P11_INSTANTIATE(PkeyVectorTest);

}  // namespace
}  // namespace accelcrypt::p11test
