// SPDX-License-Identifier: Apache-2.0
// The PKCS#1 paddings the PKCS#11 client backend does over a token's raw
// RSA (backends/pkcs11/rsa_padding.h), checked against libcrypto both
// ways: what the backend encodes, raw RSA applied by libcrypto
// (RSA_NO_PADDING), must verify or decrypt under libcrypto's own padding;
// what libcrypto signs or encrypts, raw RSA undone, must check here. Plus
// the refusals: tampered encodings, wrong salt lengths and labels, messages
// too long. No token needed.
#include "backends/pkcs11/rsa_padding.h"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "accelcrypt/kit/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace accelcrypt::testing {
namespace {

using ::accelcrypt::pkcs11_client::EmsaPkcs1V15Encode;
using ::accelcrypt::pkcs11_client::EmsaPssEncode;
using ::accelcrypt::pkcs11_client::EmsaPssVerify;
using ::accelcrypt::pkcs11_client::FindMd;
using ::accelcrypt::pkcs11_client::MdInfo;
using ::accelcrypt::pkcs11_client::RsaesDecode;
using ::accelcrypt::pkcs11_client::RsaesEncode;
using ::testing::HasSubstr;

using Bytes = std::vector<uint8_t>;

// Key is an RSA key of a given size in a private library context, with
// raw RSA and libcrypto's paddings over it.
class Key {
 public:
  explicit Key(int bits) : bits_(bits) {
    libctx_ = OSSL_LIB_CTX_new();
    pkey_ =
        EVP_PKEY_Q_keygen(libctx_, nullptr, "RSA", static_cast<size_t>(bits));
  }
  ~Key() {
    EVP_PKEY_free(pkey_);
    OSSL_LIB_CTX_free(libctx_);
  }
  // ok: made, with exactly the bits asked for (OpenSSL 3.0 makes a 2048-bit
  // modulus when asked for 2049).
  bool ok() const {
    return pkey_ != nullptr && EVP_PKEY_get_bits(pkey_) == bits_;
  }
  OSSL_LIB_CTX* libctx() const { return libctx_; }
  size_t bits() const { return static_cast<size_t>(bits_); }
  size_t len() const { return static_cast<size_t>(EVP_PKEY_get_size(pkey_)); }

  // RawPrivate is RSADP/RSASP1; RawPublic RSAEP/RSAVP1.
  Bytes RawPrivate(const Bytes& in) const {
    return Crypt(/*encrypt=*/false, in, RSA_NO_PADDING, nullptr, "");
  }
  Bytes RawPublic(const Bytes& in) const {
    return Crypt(/*encrypt=*/true, in, RSA_NO_PADDING, nullptr, "");
  }
  // Crypt encrypts or decrypts with libcrypto's padding (OAEP with `md`
  // for the digest, MGF1 and `label`); empty on failure.
  Bytes Crypt(bool encrypt, const Bytes& in, int padding, const char* md,
              const std::string& label) const {
    EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_pkey(libctx_, pkey_, nullptr);
    size_t out_len = len();
    Bytes out(out_len);
    bool ok = ctx != nullptr &&
              (encrypt ? EVP_PKEY_encrypt_init(ctx)
                       : EVP_PKEY_decrypt_init(ctx)) == 1 &&
              EVP_PKEY_CTX_set_rsa_padding(ctx, padding) == 1;
    if (ok && md != nullptr) {
      ok = EVP_PKEY_CTX_set_rsa_oaep_md_name(ctx, md, nullptr) == 1 &&
           EVP_PKEY_CTX_set_rsa_mgf1_md_name(ctx, md, nullptr) == 1;
      if (ok && !label.empty()) {
        // set0 takes ownership of an OPENSSL_malloc'ed copy.
        auto* copy = static_cast<unsigned char*>(
            OPENSSL_memdup(label.data(), label.size()));
        ok = copy != nullptr &&
             EVP_PKEY_CTX_set0_rsa_oaep_label(ctx, copy, label.size()) == 1;
      }
    }
    ok = ok && (encrypt ? EVP_PKEY_encrypt(ctx, out.data(), &out_len, in.data(),
                                           in.size())
                        : EVP_PKEY_decrypt(ctx, out.data(), &out_len, in.data(),
                                           in.size())) == 1;
    EVP_PKEY_CTX_free(ctx);
    if (!ok) return {};
    out.resize(out_len);
    return out;
  }
  // Sign signs `digest` (of `md`) with PKCS#1 v1.5 or PSS (salt length
  // `salt`, an RSA_PSS_SALTLEN_* or bytes); Verify checks such a signature.
  Bytes Sign(const Bytes& digest, const char* md, int padding, int salt) const {
    EVP_PKEY_CTX* ctx = SigCtx(/*sign=*/true, md, padding, salt, nullptr);
    size_t sig_len = len();
    Bytes sig(sig_len);
    bool ok =
        ctx != nullptr && EVP_PKEY_sign(ctx, sig.data(), &sig_len,
                                        digest.data(), digest.size()) == 1;
    EVP_PKEY_CTX_free(ctx);
    if (!ok) return {};
    sig.resize(sig_len);
    return sig;
  }
  bool Verify(const Bytes& digest, const Bytes& sig, const char* md,
              int padding, int salt, const char* mgf1 = nullptr) const {
    EVP_PKEY_CTX* ctx = SigCtx(/*sign=*/false, md, padding, salt, mgf1);
    bool ok =
        ctx != nullptr && EVP_PKEY_verify(ctx, sig.data(), sig.size(),
                                          digest.data(), digest.size()) == 1;
    EVP_PKEY_CTX_free(ctx);
    return ok;
  }

 private:
  // SigCtx: MGF1 with `mgf1`, else with `md`.
  EVP_PKEY_CTX* SigCtx(bool sign, const char* md, int padding, int salt,
                       const char* mgf1) const {
    EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_pkey(libctx_, pkey_, nullptr);
    EVP_MD* evp_md = EVP_MD_fetch(libctx_, md, nullptr);
    bool ok =
        ctx != nullptr && evp_md != nullptr &&
        (sign ? EVP_PKEY_sign_init(ctx) : EVP_PKEY_verify_init(ctx)) == 1 &&
        EVP_PKEY_CTX_set_rsa_padding(ctx, padding) == 1 &&
        EVP_PKEY_CTX_set_signature_md(ctx, evp_md) == 1;
    EVP_MD_free(evp_md);
    if (ok && padding == RSA_PKCS1_PSS_PADDING) {
      ok = EVP_PKEY_CTX_set_rsa_pss_saltlen(ctx, salt) == 1 &&
           (mgf1 == nullptr ||
            EVP_PKEY_CTX_set_rsa_mgf1_md_name(ctx, mgf1, nullptr) == 1);
    }
    if (!ok) {
      EVP_PKEY_CTX_free(ctx);
      return nullptr;
    }
    return ctx;
  }

  int bits_;
  OSSL_LIB_CTX* libctx_ = nullptr;
  EVP_PKEY* pkey_ = nullptr;
};

const Key& TheKey(int bits) {
  // Made once per size (key generation is the slow part); never freed.
  static auto* keys = new std::map<int, std::unique_ptr<Key>>();
  std::unique_ptr<Key>& key = (*keys)[bits];
  if (key == nullptr) key = std::make_unique<Key>(bits);
  return *key;
}

Bytes Digest(const Key& key, const char* md, const std::string& msg) {
  Bytes out(EVP_MAX_MD_SIZE);
  size_t len = 0;
  EXPECT_EQ(EVP_Q_digest(key.libctx(), md, nullptr, msg.data(), msg.size(),
                         out.data(), &len),
            1);
  out.resize(len);
  return out;
}

Bytes Message(size_t n) {
  Bytes m(n);
  for (size_t i = 0; i < n; ++i) m[i] = static_cast<uint8_t>(i * 7 + 1);
  return m;
}

accelcrypt_pkey_params Params(uint32_t padding, accelcrypt_alg md,
                              const std::string* label) {
  accelcrypt_pkey_params p{};
  p.struct_size = sizeof(p);
  p.padding = padding;
  p.md = md;
  if (label != nullptr) {
    p.label = reinterpret_cast<const uint8_t*>(label->data());
    p.label_len = label->size();
  }
  return p;
}

// The modulus sizes: a whole number of bytes (PSS masks emLen's top bit),
// one bit less (two bits masked), and a byte and a bit (PSS's emLen is a
// byte shorter than the modulus).
class RsaPaddingTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(key().ok()) << "RSA key generation failed";
  }
  const Key& key() const { return TheKey(GetParam()); }
};

INSTANTIATE_TEST_SUITE_P(Sizes, RsaPaddingTest,
                         ::testing::Values(2048, 2047, 1025),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "rsa" + std::to_string(info.param);
                         });

TEST_P(RsaPaddingTest, Pkcs1Type1IsLibcryptosSignature) {
  const Bytes digest = Digest(key(), "SHA2-256", "abc");
  const MdInfo* md = FindMd(ACCELCRYPT_ALG_SHA256);
  ASSERT_NE(md, nullptr);
  Bytes t(md->prefix, md->prefix + md->prefix_len);
  t.insert(t.end(), digest.begin(), digest.end());
  const Bytes em = EmsaPkcs1V15Encode(t, key().len());
  ASSERT_EQ(em.size(), key().len());
  const Bytes sig = key().RawPrivate(em);
  // PKCS#1 v1.5 signatures are deterministic: byte for byte libcrypto's.
  EXPECT_EQ(sig, key().Sign(digest, "SHA2-256", RSA_PKCS1_PADDING, 0));
  EXPECT_TRUE(key().Verify(digest, sig, "SHA2-256", RSA_PKCS1_PADDING, 0));
}

TEST_P(RsaPaddingTest, PssSignaturesVerifyInLibcrypto) {
  const Bytes digest = Digest(key(), "SHA2-384", "a message");
  const MdInfo* md = FindMd(ACCELCRYPT_ALG_SHA384);
  const MdInfo* mgf = FindMd(ACCELCRYPT_ALG_SHA256);
  ASSERT_NE(md, nullptr);
  ASSERT_NE(mgf, nullptr);
  for (int32_t salt :
       {int32_t{ACCELCRYPT_PSS_SALT_DIGEST}, int32_t{ACCELCRYPT_PSS_SALT_MAX},
        int32_t{0}, int32_t{20}}) {
    SCOPED_TRACE(salt);
    Bytes em(key().len(), 0);
    ASSERT_THAT(EmsaPssEncode(key().libctx(), *md, *mgf, salt, digest.data(),
                              key().bits(), absl::MakeSpan(em)),
                IsOk());
    const Bytes sig = key().RawPrivate(em);
    ASSERT_EQ(sig.size(), key().len());
    // libcrypto recovers the salt length from the signature (AUTO).
    EXPECT_TRUE(key().Verify(digest, sig, "SHA2-384", RSA_PKCS1_PSS_PADDING,
                             RSA_PSS_SALTLEN_AUTO, "SHA2-256"));
    EXPECT_FALSE(key().Verify(digest, sig, "SHA2-384", RSA_PKCS1_PSS_PADDING,
                              RSA_PSS_SALTLEN_AUTO, "SHA2-384"));
    Bytes recovered = key().RawPublic(sig);
    EXPECT_THAT(EmsaPssVerify(key().libctx(), *md, *mgf, salt, digest.data(),
                              key().bits(), absl::MakeSpan(recovered)),
                IsOk());
  }
}

TEST_P(RsaPaddingTest, LibcryptoPssSignaturesVerifyHere) {
  const Bytes digest = Digest(key(), "SHA2-256", "signed by libcrypto");
  const MdInfo* md = FindMd(ACCELCRYPT_ALG_SHA256);
  ASSERT_NE(md, nullptr);
  const Bytes sig = key().Sign(digest, "SHA2-256", RSA_PKCS1_PSS_PADDING,
                               RSA_PSS_SALTLEN_DIGEST);
  ASSERT_FALSE(sig.empty());
  auto verify = [&](int32_t salt, const Bytes& d, Bytes em) {
    return EmsaPssVerify(key().libctx(), *md, *md, salt, d.data(), key().bits(),
                         absl::MakeSpan(em));
  };
  const Bytes em = key().RawPublic(sig);
  EXPECT_THAT(verify(ACCELCRYPT_PSS_SALT_DIGEST, digest, em), IsOk());
  EXPECT_THAT(verify(32, digest, em), IsOk());
  EXPECT_THAT(verify(ACCELCRYPT_PSS_SALT_AUTO, digest, em), IsOk());
  // A salt length other than the one used, another digest, a flipped bit:
  // the auth-failed status, never OK.
  EXPECT_TRUE(kit::IsAuthFailed(verify(20, digest, em)));
  const Bytes other = Digest(key(), "SHA2-256", "something else");
  EXPECT_TRUE(kit::IsAuthFailed(verify(ACCELCRYPT_PSS_SALT_DIGEST, other, em)));
  for (size_t at : {size_t{0}, em.size() / 2, em.size() - 1}) {
    Bytes bad = em;
    bad[at] ^= 0x01;
    EXPECT_TRUE(
        kit::IsAuthFailed(verify(ACCELCRYPT_PSS_SALT_AUTO, digest, bad)))
        << "bit flipped at " << at;
  }
}

TEST_P(RsaPaddingTest, PssSaltThatDoesNotFitIsRefused) {
  const Bytes digest = Digest(key(), "SHA2-512", "x");
  const MdInfo* md = FindMd(ACCELCRYPT_ALG_SHA512);
  ASSERT_NE(md, nullptr);
  const size_t em_len = (key().bits() - 1 + 7) / 8;
  const int32_t largest = static_cast<int32_t>(em_len - md->len - 2);
  Bytes em(key().len(), 0);
  EXPECT_THAT(EmsaPssEncode(key().libctx(), *md, *md, largest, digest.data(),
                            key().bits(), absl::MakeSpan(em)),
              IsOk());
  Bytes em2(key().len(), 0);
  EXPECT_THAT(
      EmsaPssEncode(key().libctx(), *md, *md, largest + 1, digest.data(),
                    key().bits(), absl::MakeSpan(em2)),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("does not fit")));
}

TEST_P(RsaPaddingTest, OaepBothWaysWithALabel) {
  const std::string label = "a label";
  const accelcrypt_pkey_params params =
      Params(ACCELCRYPT_PAD_OAEP, ACCELCRYPT_ALG_SHA256, &label);
  const Bytes msg = Message(48);
  // Encoded here, decrypted by libcrypto.
  Bytes em(key().len(), 0);
  ASSERT_THAT(RsaesEncode(key().libctx(), params, msg.data(), msg.size(),
                          absl::MakeSpan(em)),
              IsOk());
  const Bytes ct = key().RawPublic(em);
  EXPECT_EQ(key().Crypt(false, ct, RSA_PKCS1_OAEP_PADDING, "SHA2-256", label),
            msg);
  // Encrypted by libcrypto, decoded here.
  const Bytes ct2 =
      key().Crypt(true, msg, RSA_PKCS1_OAEP_PADDING, "SHA2-256", label);
  ASSERT_FALSE(ct2.empty());
  Bytes em2 = key().RawPrivate(ct2);
  absl::StatusOr<size_t> at =
      RsaesDecode(key().libctx(), params, absl::MakeSpan(em2));
  ASSERT_THAT(at, IsOk());
  EXPECT_EQ(Bytes(em2.begin() + *at, em2.end()), msg);
  // A changed byte anywhere, or another label: one error, the same text.
  for (size_t at_byte :
       {size_t{0}, size_t{1}, key().len() / 2, key().len() - 1}) {
    Bytes bad = key().RawPrivate(ct2);
    bad[at_byte] ^= 0x40;
    EXPECT_THAT(RsaesDecode(key().libctx(), params, absl::MakeSpan(bad)),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "pkcs11: decryption failed (bad ciphertext or "
                         "padding)"))
        << "byte " << at_byte;
  }
  const std::string other = "another label";
  Bytes em3 = key().RawPrivate(ct2);
  EXPECT_THAT(
      RsaesDecode(key().libctx(),
                  Params(ACCELCRYPT_PAD_OAEP, ACCELCRYPT_ALG_SHA256, &other),
                  absl::MakeSpan(em3)),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "pkcs11: decryption failed (bad ciphertext or padding)"));
}

TEST_P(RsaPaddingTest, Pkcs1Type2BothWays) {
  const accelcrypt_pkey_params params =
      Params(ACCELCRYPT_PAD_PKCS1, 0, nullptr);
  for (size_t n : {size_t{0}, size_t{1}, size_t{32}, key().len() - 11}) {
    SCOPED_TRACE(n);
    const Bytes msg = Message(n);
    Bytes em(key().len(), 0);
    ASSERT_THAT(RsaesEncode(key().libctx(), params, msg.data(), msg.size(),
                            absl::MakeSpan(em)),
                IsOk());
    EXPECT_EQ(em[0], 0);
    EXPECT_EQ(em[1], 2);
    if (n != 0) {
      EXPECT_EQ(key().Crypt(false, key().RawPublic(em), RSA_PKCS1_PADDING,
                            nullptr, ""),
                msg);
    }
    const Bytes ct = key().Crypt(true, msg, RSA_PKCS1_PADDING, nullptr, "");
    ASSERT_FALSE(ct.empty());
    Bytes em2 = key().RawPrivate(ct);
    absl::StatusOr<size_t> at =
        RsaesDecode(key().libctx(), params, absl::MakeSpan(em2));
    ASSERT_THAT(at, IsOk());
    EXPECT_EQ(Bytes(em2.begin() + *at, em2.end()), msg);
  }
  // A block type other than 2, and padding shorter than 8 bytes.
  const Bytes msg = Message(20);
  Bytes em(key().len(), 0);
  ASSERT_THAT(RsaesEncode(key().libctx(), params, msg.data(), msg.size(),
                          absl::MakeSpan(em)),
              IsOk());
  Bytes type1 = em;
  type1[1] = 1;
  EXPECT_THAT(RsaesDecode(key().libctx(), params, absl::MakeSpan(type1)),
              StatusIs(absl::StatusCode::kInvalidArgument));
  Bytes short_ps = em;
  short_ps[9] = 0;  // PS of 7 bytes
  EXPECT_THAT(RsaesDecode(key().libctx(), params, absl::MakeSpan(short_ps)),
              StatusIs(absl::StatusCode::kInvalidArgument));
  Bytes eight_ps = em;
  eight_ps[10] = 0;  // PS of exactly 8 bytes: accepted
  absl::StatusOr<size_t> at =
      RsaesDecode(key().libctx(), params, absl::MakeSpan(eight_ps));
  ASSERT_THAT(at, IsOk());
  EXPECT_EQ(*at, 11u);
}

TEST_P(RsaPaddingTest, MessagesTooLongAreRefused) {
  Bytes em(key().len(), 0);
  const Bytes pkcs1 = Message(key().len() - 10);
  EXPECT_THAT(
      RsaesEncode(key().libctx(), Params(ACCELCRYPT_PAD_PKCS1, 0, nullptr),
                  pkcs1.data(), pkcs1.size(), absl::MakeSpan(em)),
      StatusIs(absl::StatusCode::kInvalidArgument, "pkcs11: message too long"));
  const accelcrypt_pkey_params oaep =
      Params(ACCELCRYPT_PAD_OAEP, ACCELCRYPT_ALG_SHA1, nullptr);
  const Bytes fits = Message(key().len() - 2 * 20 - 2);
  Bytes em2(key().len(), 0);
  EXPECT_THAT(RsaesEncode(key().libctx(), oaep, fits.data(), fits.size(),
                          absl::MakeSpan(em2)),
              IsOk());
  const Bytes too_long = Message(fits.size() + 1);
  Bytes em3(key().len(), 0);
  EXPECT_THAT(RsaesEncode(key().libctx(), oaep, too_long.data(),
                          too_long.size(), absl::MakeSpan(em3)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "pkcs11: message too long for OAEP"));
  Bytes em4(key().len(), 0);
  EXPECT_THAT(
      RsaesEncode(key().libctx(),
                  Params(ACCELCRYPT_PAD_OAEP, ACCELCRYPT_ALG_DSA_SIGN, nullptr),
                  fits.data(), fits.size(), absl::MakeSpan(em4)),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "pkcs11: OAEP needs a SHA digest"));
}

}  // namespace
}  // namespace accelcrypt::testing
