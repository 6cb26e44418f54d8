// SPDX-License-Identifier: Apache-2.0
// Digest and HMAC mechanisms against SHAVS and HMACVS vectors, cross-checks
// with libcrypto's HMAC, saved operation state and the error codes.
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <string>
#include <vector>

#include "tests/pkcs11/mech/mech_test_util.h"

namespace accelcrypt::p11::testing {
namespace {

using accelcrypt::testing::Rng;

class DigestMechTest : public MechTest {};

struct ShaFile {
  const char* file;
  CK_MECHANISM_TYPE mech;
};

TEST_F(DigestMechTest, ShaVectorsOneShotAndStreamed) {
  for (const ShaFile& f : {ShaFile{"sha/SHA1ShortMsg.rsp", CKM_SHA_1},
                           ShaFile{"sha/SHA224ShortMsg.rsp", CKM_SHA224},
                           ShaFile{"sha/SHA256ShortMsg.rsp", CKM_SHA256},
                           ShaFile{"sha/SHA384ShortMsg.rsp", CKM_SHA384},
                           ShaFile{"sha/SHA512ShortMsg.rsp", CKM_SHA512},
                           ShaFile{"sha/SHA256LongMsg.rsp", CKM_SHA256}}) {
    ASSERT_OK_AND_ASSIGN(VectorFile vf, ParseVectorFile(Vec(f.file)));
    ASSERT_FALSE(vf.records.empty());
    for (const VectorRecord& r : vf.records) {
      Bytes msg = r.Get("Len") == "0" ? Bytes() : Field(r, "Msg");
      Bytes md = Field(r, "MD");
      auto op = Start(OpKind::kDigest, f.mech, nullptr, 0, nullptr);
      ASSERT_OK_AND_ASSIGN(Bytes got, OneShot(*op, msg));
      EXPECT_EQ(got, md) << f.file << ":" << r.line;
      op = Start(OpKind::kDigest, f.mech, nullptr, 0, nullptr);
      ASSERT_OK_AND_ASSIGN(Bytes streamed, Stream(*op, msg, 13));
      EXPECT_EQ(streamed, md) << f.file << ":" << r.line;
    }
  }
}

CK_MECHANISM_TYPE HmacForL(const std::string& l) {
  if (l == "20") return CKM_SHA_1_HMAC;
  if (l == "28") return CKM_SHA224_HMAC;
  if (l == "32") return CKM_SHA256_HMAC;
  if (l == "48") return CKM_SHA384_HMAC;
  if (l == "64") return CKM_SHA512_HMAC;
  return 0;
}

class DigestBackendTest : public DigestMechTest,
                          public ::testing::WithParamInterface<const char*> {};

TEST_P(DigestBackendTest, HmacVectors) {
  if (GetParam()[0] != '\0') Build({{"backends", GetParam()}});
  ASSERT_OK_AND_ASSIGN(VectorFile vf, ParseVectorFile(Vec("hmac/HMAC.rsp")));
  ASSERT_FALSE(vf.records.empty());
  size_t full = 0;
  for (const VectorRecord& r : vf.records) {
    const std::string l = r.SectionValue("L").value_or("");
    const CK_MECHANISM_TYPE m = HmacForL(l);
    ASSERT_NE(m, 0u) << r.line;
    Bytes key = Field(r, "Key"), msg = Field(r, "Msg"), mac = Field(r, "Mac");
    auto k = SecretKeyOf(CKK_GENERIC_SECRET, key);
    auto op = Start(OpKind::kSign, m, nullptr, 0, k);
    ASSERT_OK_AND_ASSIGN(Bytes got, OneShot(*op, msg));
    ASSERT_EQ(got.size(), std::stoul(l));
    // Mac is the leftmost Tlen bytes (HMACVS); this mechanism gives the
    // full length.
    EXPECT_EQ(Bytes(got.begin(), got.begin() + mac.size()), mac) << r.line;
    auto verify = Start(OpKind::kVerify, m, nullptr, 0, k);
    if (mac.size() == got.size()) {
      ++full;
      ASSERT_OK(verify->Verify(msg, mac));
      op = Start(OpKind::kSign, m, nullptr, 0, k);
      ASSERT_OK_AND_ASSIGN(Bytes streamed, Stream(*op, msg, 17));
      EXPECT_EQ(streamed, mac) << r.line;
    } else {
      EXPECT_EQ(Rv(verify->Verify(msg, mac)), CKR_SIGNATURE_LEN_RANGE);
    }
  }
  EXPECT_GT(full, 0u);
}

TEST_P(DigestBackendTest, HmacRfcVectors) {
  if (GetParam()[0] != '\0') Build({{"backends", GetParam()}});
  ASSERT_OK_AND_ASSIGN(VectorFile vf,
                       ParseVectorFile(Vec("hmac/RFC2202_RFC4231.rsp")));
  ASSERT_EQ(vf.records.size(), 35u);
  for (const VectorRecord& r : vf.records) {
    const std::string l = r.SectionValue("L").value_or("");
    const CK_MECHANISM_TYPE m = HmacForL(l);
    ASSERT_NE(m, 0u) << r.line;
    Bytes key = Field(r, "Key"), msg = Field(r, "Msg"), mac = Field(r, "Mac");
    auto k = SecretKeyOf(CKK_GENERIC_SECRET, key);
    auto op = Start(OpKind::kSign, m, nullptr, 0, k);
    ASSERT_OK_AND_ASSIGN(Bytes got, OneShot(*op, msg));
    EXPECT_EQ(Bytes(got.begin(), got.begin() + mac.size()), mac)
        << "L=" << l << " case " << r.Get("Count");
    op = Start(OpKind::kSign, m, nullptr, 0, k);
    ASSERT_OK_AND_ASSIGN(Bytes streamed, Stream(*op, msg, 5));
    EXPECT_EQ(streamed, got);
  }
}

// "" is the build tree's whole registry (hardware first where present).
INSTANTIATE_TEST_SUITE_P(Routes, DigestBackendTest,
                         ::testing::Values("", "software"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           return std::string(i.param[0] ? i.param
                                                         : "all_backends");
                         });

TEST_F(DigestMechTest, HmacMatchesLibcryptoForAllKeyLengths) {
  struct Pair {
    CK_MECHANISM_TYPE mech;
    const char* md;
  };
  for (const Pair& p :
       {Pair{CKM_SHA_1_HMAC, "SHA1"}, Pair{CKM_SHA224_HMAC, "SHA224"},
        Pair{CKM_SHA256_HMAC, "SHA256"}, Pair{CKM_SHA384_HMAC, "SHA384"},
        Pair{CKM_SHA512_HMAC, "SHA512"}}) {
    EVP_MD* md = EVP_MD_fetch(nullptr, p.md, nullptr);
    ASSERT_NE(md, nullptr);
    for (size_t key_len : {1u, 20u, 64u, 65u, 128u, 129u, 300u}) {
      Bytes key = Rng(key_len).Bytes(key_len);
      Bytes msg = Rng(key_len + 1).Bytes(key_len * 3);
      unsigned char want[EVP_MAX_MD_SIZE];
      unsigned int want_len = 0;
      ASSERT_NE(HMAC(md, key.data(), static_cast<int>(key.size()), msg.data(),
                     msg.size(), want, &want_len),
                nullptr);
      auto k = SecretKeyOf(CKK_GENERIC_SECRET, key);
      auto op = Start(OpKind::kSign, p.mech, nullptr, 0, k);
      ASSERT_OK_AND_ASSIGN(Bytes got, OneShot(*op, msg));
      EXPECT_EQ(got, Bytes(want, want + want_len)) << p.md << " " << key_len;
    }
    EVP_MD_free(md);
  }
}

TEST_F(DigestMechTest, HmacErrorsAndRetry) {
  auto k = SecretKeyOf(CKK_GENERIC_SECRET, Bytes(32, 0x0b));
  Bytes msg = {'H', 'i'};
  auto op = Start(OpKind::kSign, CKM_SHA256_HMAC, nullptr, 0, k);
  EXPECT_EQ(op->OutputBound(Operation::Call::kOneShot, 2), 32u);
  Bytes small(31);
  EXPECT_EQ(Rv(op->OneShot(msg, absl::MakeSpan(small)).status()),
            CKR_BUFFER_TOO_SMALL);
  ASSERT_OK_AND_ASSIGN(Bytes mac, OneShot(*op, msg));
  auto again = Start(OpKind::kSign, CKM_SHA256_HMAC, nullptr, 0, k);
  ASSERT_OK_AND_ASSIGN(Bytes mac2, OneShot(*again, msg));
  EXPECT_EQ(mac, mac2);

  auto verify = Start(OpKind::kVerify, CKM_SHA256_HMAC, nullptr, 0, k);
  Bytes bad = mac;
  bad[5] ^= 0x40;
  EXPECT_EQ(Rv(verify->Verify(msg, bad)), CKR_SIGNATURE_INVALID);
  verify = Start(OpKind::kVerify, CKM_SHA256_HMAC, nullptr, 0, k);
  ASSERT_OK(verify->Update(msg, {}).status());
  ASSERT_OK(verify->VerifyFinal(mac));

  // Key type and parameter errors.
  auto aes = SecretKeyOf(CKK_AES, Bytes(16, 1));
  EXPECT_EQ(InitRv(OpKind::kSign, CKM_SHA256_HMAC, nullptr, 0, aes),
            CKR_KEY_TYPE_INCONSISTENT);
  auto sha256_key = SecretKeyOf(CKK_SHA256_HMAC, Bytes(16, 1));
  EXPECT_EQ(InitRv(OpKind::kSign, CKM_SHA_1_HMAC, nullptr, 0, sha256_key),
            CKR_KEY_TYPE_INCONSISTENT);
  EXPECT_EQ(InitRv(OpKind::kSign, CKM_SHA256_HMAC, nullptr, 0, sha256_key),
            CKR_OK);
  CK_ULONG len = 16;
  EXPECT_EQ(InitRv(OpKind::kSign, CKM_SHA256_HMAC, &len, sizeof(len), k),
            CKR_MECHANISM_PARAM_INVALID);
  EXPECT_EQ(InitRv(OpKind::kEncrypt, CKM_SHA256_HMAC, nullptr, 0, k),
            CKR_MECHANISM_INVALID);
}

TEST_F(DigestMechTest, StateSaveAndRestore) {
  Bytes msg = Rng(9).Bytes(1000);
  for (CK_MECHANISM_TYPE m :
       {CKM_SHA_1, CKM_SHA224, CKM_SHA256, CKM_SHA384, CKM_SHA512}) {
    auto ref = Start(OpKind::kDigest, m, nullptr, 0, nullptr);
    ASSERT_OK_AND_ASSIGN(Bytes want, OneShot(*ref, msg));
    auto op = Start(OpKind::kDigest, m, nullptr, 0, nullptr);
    ASSERT_OK(op->Update(absl::MakeConstSpan(msg).first(333), {}).status());
    ASSERT_OK_AND_ASSIGN(Bytes state, op->GetState());
    ASSERT_OK_AND_ASSIGN(auto restored, mech_->RestoreDigest(state));
    for (Operation* o : {op.get(), restored.get()}) {
      ASSERT_OK(o->Update(absl::MakeConstSpan(msg).subspan(333), {}).status());
      Bytes out(o->OutputBound(Operation::Call::kFinal, 0));
      ASSERT_OK(o->Final(absl::MakeSpan(out)).status());
      EXPECT_EQ(out, want) << m;
    }
  }
}

TEST_F(DigestMechTest, StateIsCheckedOnRestore) {
  auto op = Start(OpKind::kDigest, CKM_SHA256, nullptr, 0, nullptr);
  ASSERT_OK(op->Update(Bytes(50, 1), {}).status());
  ASSERT_OK_AND_ASSIGN(Bytes state, op->GetState());
  EXPECT_EQ(Rv(mech_->RestoreDigest(Bytes(10, 0)).status()),
            CKR_SAVED_STATE_INVALID);
  EXPECT_EQ(Rv(mech_->RestoreDigest({}).status()), CKR_SAVED_STATE_INVALID);
  for (size_t i = 0; i < state.size(); i += 7) {
    Bytes bad = state;
    bad[i] ^= 0x01;
    EXPECT_EQ(Rv(mech_->RestoreDigest(bad).status()), CKR_SAVED_STATE_INVALID)
        << i;
  }
  Bytes truncated(state.begin(), state.end() - 1);
  EXPECT_EQ(Rv(mech_->RestoreDigest(truncated).status()),
            CKR_SAVED_STATE_INVALID);
  Bytes longer = state;
  longer.push_back(0);
  EXPECT_EQ(Rv(mech_->RestoreDigest(longer).status()), CKR_SAVED_STATE_INVALID);
}

TEST_F(DigestMechTest, StateUnsaveableBeyond64KiBAndAfterDigestKey) {
  auto op = Start(OpKind::kDigest, CKM_SHA512, nullptr, 0, nullptr);
  ASSERT_OK(op->Update(Bytes(64 * 1024, 2), {}).status());
  ASSERT_OK(op->GetState().status());
  ASSERT_OK(op->Update(Bytes(1, 2), {}).status());
  EXPECT_EQ(Rv(op->GetState().status()), CKR_STATE_UNSAVEABLE);

  AttributeMap key;
  key.SetUlong(CKA_CLASS, CKO_SECRET_KEY);
  key.SetUlong(CKA_KEY_TYPE, CKK_GENERIC_SECRET);
  Bytes value = Rng(4).Bytes(40);
  key.Set(CKA_VALUE, value);
  op = Start(OpKind::kDigest, CKM_SHA256, nullptr, 0, nullptr);
  ASSERT_OK(op->DigestKey(key));
  EXPECT_EQ(Rv(op->GetState().status()), CKR_STATE_UNSAVEABLE);
  Bytes out(32);
  ASSERT_OK(op->Final(absl::MakeSpan(out)).status());
  auto ref = Start(OpKind::kDigest, CKM_SHA256, nullptr, 0, nullptr);
  ASSERT_OK_AND_ASSIGN(Bytes want, OneShot(*ref, value));
  EXPECT_EQ(out, want);

  AttributeMap pub;
  pub.SetUlong(CKA_CLASS, CKO_PUBLIC_KEY);
  op = Start(OpKind::kDigest, CKM_SHA256, nullptr, 0, nullptr);
  EXPECT_EQ(Rv(op->DigestKey(pub)), CKR_KEY_INDIGESTIBLE);

  // Other operations have no saveable state.
  auto k = SecretKeyOf(CKK_GENERIC_SECRET, Bytes(16, 3));
  auto hmac = Start(OpKind::kSign, CKM_SHA256_HMAC, nullptr, 0, k);
  EXPECT_EQ(Rv(hmac->GetState().status()), CKR_STATE_UNSAVEABLE);
}

TEST_F(DigestMechTest, DigestBufferTooSmallThenRetry) {
  Bytes msg = {'a', 'b', 'c'};
  auto op = Start(OpKind::kDigest, CKM_SHA_1, nullptr, 0, nullptr);
  EXPECT_EQ(op->OutputBound(Operation::Call::kOneShot, 3), 20u);
  Bytes small(19);
  EXPECT_EQ(Rv(op->OneShot(msg, absl::MakeSpan(small)).status()),
            CKR_BUFFER_TOO_SMALL);
  ASSERT_OK_AND_ASSIGN(Bytes got, OneShot(*op, msg));
  Bytes want(20);
  unsigned int len = 0;
  ASSERT_EQ(EVP_Digest(msg.data(), msg.size(), want.data(), &len, EVP_sha1(),
                       nullptr),
            1);
  EXPECT_EQ(got, want);
  CK_ULONG param = 1;
  EXPECT_EQ(InitRv(OpKind::kDigest, CKM_SHA256, &param, sizeof(param), nullptr),
            CKR_MECHANISM_PARAM_INVALID);
  EXPECT_EQ(InitRv(OpKind::kSign, CKM_SHA256, nullptr, 0, nullptr),
            CKR_MECHANISM_INVALID);
}

}  // namespace
}  // namespace accelcrypt::p11::testing
