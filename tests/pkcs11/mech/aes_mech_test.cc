// SPDX-License-Identifier: Apache-2.0
// AES mechanisms of the module's crypto engine against NIST vectors
// (SP 800-38A via AESAVS, GCMVS) and their PKCS#11 error rules.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/algorithms.h"
#include "tests/pkcs11/mech/mech_test_util.h"

namespace accelcrypt::p11::testing {
namespace {

using accelcrypt::testing::Rng;

class AesMechTest : public MechTest {
 protected:
  // RunFile checks every [ENCRYPT]/[DECRYPT] record of an AESAVS file
  // with `type` (IV from the file as the parameter), one-shot and in
  // 7-byte pieces.
  void RunFile(const std::string& file, CK_MECHANISM_TYPE type) {
    ASSERT_OK_AND_ASSIGN(VectorFile vf, ParseVectorFile(Vec(file)));
    ASSERT_FALSE(vf.records.empty());
    for (const VectorRecord& r : vf.records) {
      const bool encrypt = r.InSection("ENCRYPT");
      Bytes key = Field(r, "KEY"), iv = Field(r, "IV");
      Bytes pt = Field(r, "PLAINTEXT"), ct = Field(r, "CIPHERTEXT");
      auto k = SecretKeyOf(CKK_AES, key);
      ASSERT_NE(k, nullptr);
      const Bytes& in = encrypt ? pt : ct;
      const Bytes& want = encrypt ? ct : pt;
      OpKind kind = encrypt ? OpKind::kEncrypt : OpKind::kDecrypt;
      auto op =
          Start(kind, type, iv.empty() ? nullptr : iv.data(), iv.size(), k);
      ASSERT_NE(op, nullptr);
      ASSERT_OK_AND_ASSIGN(Bytes got, OneShot(*op, in));
      EXPECT_EQ(accelcrypt::testing::ToHex(got),
                accelcrypt::testing::ToHex(want))
          << file << ":" << r.line;
      op = Start(kind, type, iv.empty() ? nullptr : iv.data(), iv.size(), k);
      ASSERT_OK_AND_ASSIGN(Bytes streamed, Stream(*op, in, 7));
      EXPECT_EQ(streamed, want) << file << ":" << r.line << " streamed";
    }
  }
};

TEST_F(AesMechTest, EcbVectors) {
  for (const char* f :
       {"aes/ECBMMT128.rsp", "aes/ECBMMT192.rsp", "aes/ECBMMT256.rsp",
        "aes/ECBGFSbox128.rsp", "aes/ECBVarKey256.rsp"}) {
    RunFile(f, CKM_AES_ECB);
  }
}

TEST_F(AesMechTest, CbcVectors) {
  for (const char* f :
       {"aes/CBCMMT128.rsp", "aes/CBCMMT192.rsp", "aes/CBCMMT256.rsp",
        "aes/CBCGFSbox256.rsp", "aes/CBCKeySbox128.rsp"}) {
    RunFile(f, CKM_AES_CBC);
  }
}

// CKM_AES_CFB128 and CKM_AES_OFB come from the core's identity table
// (AlgorithmInfo::ckm): AESAVS vectors at every key size, one-shot and in
// 7-byte pieces (stream modes: any length).
TEST_F(AesMechTest, Cfb128AndOfbVectors) {
  for (const char* f :
       {"aes/CFB128MMT128.rsp", "aes/CFB128MMT192.rsp", "aes/CFB128MMT256.rsp",
        "aes/CFB128GFSbox128.rsp", "aes/CFB128VarKey256.rsp"}) {
    RunFile(f, CKM_AES_CFB128);
  }
  for (const char* f :
       {"aes/OFBMMT128.rsp", "aes/OFBMMT192.rsp", "aes/OFBMMT256.rsp",
        "aes/OFBGFSbox128.rsp", "aes/OFBVarKey256.rsp"}) {
    RunFile(f, CKM_AES_OFB);
  }
}

TEST_F(AesMechTest, Cfb128AndOfbNeedA16ByteIv) {
  auto k = SecretKeyOf(CKK_AES, Bytes(16, 0x11));
  ASSERT_NE(k, nullptr);
  uint8_t iv[17] = {};
  for (CK_MECHANISM_TYPE m : {CKM_AES_CFB128, CKM_AES_OFB}) {
    EXPECT_EQ(InitRv(OpKind::kEncrypt, m, iv, 15, k),
              CKR_MECHANISM_PARAM_INVALID);
    EXPECT_EQ(InitRv(OpKind::kEncrypt, m, iv, 17, k),
              CKR_MECHANISM_PARAM_INVALID);
    EXPECT_EQ(InitRv(OpKind::kDecrypt, m, nullptr, 0, k),
              CKR_MECHANISM_PARAM_INVALID);
    EXPECT_EQ(InitRv(OpKind::kSign, m, iv, 16, k), CKR_MECHANISM_INVALID);
  }
}

// The module lists every mechanism of the identity table whose algorithm
// some backend serves: a mode or digest the core gains needs no edit here.
TEST_F(AesMechTest, EveryIdentityTableMechanismIsListed) {
  const std::vector<CK_MECHANISM_TYPE> listed = mech_->List();
  for (const AlgorithmInfo& alg : AllAlgorithms()) {
    if (alg.ckm == 0 || !core_->router().Supports(alg.id)) continue;
    if (alg.family != Family::kCipher && alg.family != Family::kDigest) {
      continue;
    }
    EXPECT_NE(std::find(listed.begin(), listed.end(), alg.ckm), listed.end())
        << alg.name << " (CKM 0x" << std::hex << alg.ckm << ") not listed";
  }
}

TEST_F(AesMechTest, VectorsOnTheSoftwareBackendAlone) {
  // The default route may lead to a hardware backend; the same vectors
  // through the software backend alone.
  Build({{"backends", "software"}});
  RunFile("aes/ECBMMT256.rsp", CKM_AES_ECB);
  RunFile("aes/CBCMMT128.rsp", CKM_AES_CBC);
  auto k = SecretKeyOf(CKK_AES, Bytes(16, 1));
  auto op = Start(OpKind::kEncrypt, CKM_AES_ECB, nullptr, 0, k);
  EXPECT_FALSE(op->hardware());
}

TEST_F(AesMechTest, CtrVectorsWithFullAndShortCounters) {
  ASSERT_OK_AND_ASSIGN(VectorFile vf,
                       ParseVectorFile(Vec("aes/CTR_SP800-38A.rsp")));
  ASSERT_FALSE(vf.records.empty());
  for (const VectorRecord& r : vf.records) {
    const bool encrypt = r.InSection("ENCRYPT");
    Bytes key = Field(r, "KEY"), iv = Field(r, "IV");
    Bytes pt = Field(r, "PLAINTEXT"), ct = Field(r, "CIPHERTEXT");
    auto k = SecretKeyOf(CKK_AES, key);
    // The SP 800-38A counter block ends in ...fcfdfeff: 4 blocks fit a
    // 32-bit counter field (and 128).
    for (CK_ULONG bits : {128ul, 32ul}) {
      CK_AES_CTR_PARAMS params{};
      params.ulCounterBits = bits;
      ASSERT_EQ(iv.size(), 16u);
      std::memcpy(params.cb, iv.data(), 16);
      auto op = Start(encrypt ? OpKind::kEncrypt : OpKind::kDecrypt,
                      CKM_AES_CTR, &params, sizeof(params), k);
      ASSERT_NE(op, nullptr);
      ASSERT_OK_AND_ASSIGN(Bytes got, Stream(*op, encrypt ? pt : ct, 5));
      EXPECT_EQ(got, encrypt ? ct : pt) << r.line << " bits " << bits;
    }
  }
}

TEST_F(AesMechTest, CtrRefusesCounterWrap) {
  Bytes key(16, 0x11);
  auto k = SecretKeyOf(CKK_AES, key);
  CK_AES_CTR_PARAMS params{};
  params.ulCounterBits = 8;
  params.cb[15] = 0xfe;  // room for counter values fe and ff: two blocks
  auto op = Start(OpKind::kEncrypt, CKM_AES_CTR, &params, sizeof(params), k);
  Bytes in(33), out(33);
  EXPECT_EQ(Rv(op->OneShot(in, absl::MakeSpan(out)).status()),
            CKR_DATA_LEN_RANGE);
  op = Start(OpKind::kEncrypt, CKM_AES_CTR, &params, sizeof(params), k);
  ASSERT_OK_AND_ASSIGN(Bytes two,
                       OneShot(*op, absl::MakeConstSpan(in).first(32)));
  EXPECT_EQ(two.size(), 32u);
  // Multi-part: the update that would cross the wrap is refused.
  op = Start(OpKind::kDecrypt, CKM_AES_CTR, &params, sizeof(params), k);
  ASSERT_OK(op->Update(absl::MakeConstSpan(in).first(20), absl::MakeSpan(out))
                .status());
  EXPECT_EQ(
      Rv(op->Update(absl::MakeConstSpan(in).first(13), absl::MakeSpan(out))
             .status()),
      CKR_ENCRYPTED_DATA_LEN_RANGE);
  ASSERT_OK(op->Update(absl::MakeConstSpan(in).first(12), absl::MakeSpan(out))
                .status());
}

TEST_F(AesMechTest, CtrParameterErrors) {
  auto k = SecretKeyOf(CKK_AES, Bytes(16, 1));
  CK_AES_CTR_PARAMS params{};
  for (CK_ULONG bits : {0ul, 129ul}) {
    params.ulCounterBits = bits;
    EXPECT_EQ(InitRv(OpKind::kEncrypt, CKM_AES_CTR, &params, sizeof(params), k),
              CKR_MECHANISM_PARAM_INVALID);
  }
  params.ulCounterBits = 64;
  EXPECT_EQ(
      InitRv(OpKind::kEncrypt, CKM_AES_CTR, &params, sizeof(params) - 1, k),
      CKR_MECHANISM_PARAM_INVALID);
  EXPECT_EQ(InitRv(OpKind::kEncrypt, CKM_AES_CTR, nullptr, 0, k),
            CKR_MECHANISM_PARAM_INVALID);
}

TEST_F(AesMechTest, GcmVectors) {
  for (const char* f :
       {"aes-gcm/gcmEncryptExtIV128.rsp", "aes-gcm/gcmEncryptExtIV256.rsp",
        "aes-gcm/gcmDecrypt128.rsp", "aes-gcm/gcmDecrypt192.rsp"}) {
    ASSERT_OK_AND_ASSIGN(VectorFile vf, ParseVectorFile(Vec(f)));
    ASSERT_FALSE(vf.records.empty());
    const bool decrypt_file =
        std::string(f).find("Decrypt") != std::string::npos;
    size_t fails = 0;
    for (const VectorRecord& r : vf.records) {
      Bytes key = Field(r, "Key"), iv = Field(r, "IV"), pt = Field(r, "PT"),
            aad = Field(r, "AAD"), ct = Field(r, "CT"), tag = Field(r, "Tag");
      auto k = SecretKeyOf(CKK_AES, key);
      CK_GCM_PARAMS params{};
      params.pIv = iv.data();
      params.ulIvLen = iv.size();
      params.ulIvBits = iv.size() * 8;
      params.pAAD = aad.empty() ? nullptr : aad.data();
      params.ulAADLen = aad.size();
      params.ulTagBits = tag.size() * 8;
      Bytes sealed = ct;
      sealed.insert(sealed.end(), tag.begin(), tag.end());
      if (!decrypt_file) {
        auto op =
            Start(OpKind::kEncrypt, CKM_AES_GCM, &params, sizeof(params), k);
        ASSERT_OK_AND_ASSIGN(Bytes got, OneShot(*op, pt));
        EXPECT_EQ(got, sealed) << f << ":" << r.line;
        op = Start(OpKind::kEncrypt, CKM_AES_GCM, &params, sizeof(params), k);
        ASSERT_OK_AND_ASSIGN(Bytes streamed, Stream(*op, pt, 9));
        EXPECT_EQ(streamed, sealed) << f << ":" << r.line << " streamed";
        continue;
      }
      for (bool stream : {false, true}) {
        auto op =
            Start(OpKind::kDecrypt, CKM_AES_GCM, &params, sizeof(params), k);
        absl::StatusOr<Bytes> got =
            stream ? Stream(*op, sealed, 9) : OneShot(*op, sealed);
        if (r.Has("FAIL")) {
          EXPECT_EQ(Rv(got.status()), CKR_ENCRYPTED_DATA_INVALID)
              << f << ":" << r.line;
        } else {
          ASSERT_TRUE(got.ok()) << f << ":" << r.line << " " << got.status();
          EXPECT_EQ(*got, pt) << f << ":" << r.line;
        }
      }
      if (r.Has("FAIL")) ++fails;
    }
    if (decrypt_file) {
      EXPECT_GT(fails, 0u) << f;
    }
  }
}

TEST_F(AesMechTest, GcmDecryptReleasesNothingBeforeFinal) {
  auto k = SecretKeyOf(CKK_AES, Bytes(32, 7));
  Bytes iv(12, 3);
  CK_GCM_PARAMS params{iv.data(), 12, 96, nullptr, 0, 128};
  auto enc = Start(OpKind::kEncrypt, CKM_AES_GCM, &params, sizeof(params), k);
  Bytes pt = Rng(1).Bytes(100);
  ASSERT_OK_AND_ASSIGN(Bytes sealed, OneShot(*enc, pt));
  auto dec = Start(OpKind::kDecrypt, CKM_AES_GCM, &params, sizeof(params), k);
  EXPECT_EQ(dec->OutputBound(Operation::Call::kUpdate, 50), 0u);
  Bytes none;
  ASSERT_OK_AND_ASSIGN(size_t n, dec->Update(sealed, absl::MakeSpan(none)));
  EXPECT_EQ(n, 0u);
  // Too small a final buffer: BUFFER_TOO_SMALL, then the retry works.
  EXPECT_EQ(dec->OutputBound(Operation::Call::kFinal, 0), pt.size());
  Bytes small(pt.size() - 1);
  EXPECT_EQ(Rv(dec->Final(absl::MakeSpan(small)).status()),
            CKR_BUFFER_TOO_SMALL);
  Bytes out(pt.size());
  ASSERT_OK_AND_ASSIGN(n, dec->Final(absl::MakeSpan(out)));
  EXPECT_EQ(out, pt);

  // A flipped tag bit: nothing is written to the output.
  sealed.back() ^= 1;
  dec = Start(OpKind::kDecrypt, CKM_AES_GCM, &params, sizeof(params), k);
  Bytes guard(pt.size(), 0xAB);
  EXPECT_EQ(Rv(dec->OneShot(sealed, absl::MakeSpan(guard)).status()),
            CKR_ENCRYPTED_DATA_INVALID);
  EXPECT_EQ(guard, Bytes(pt.size(), 0xAB));
  // Shorter than the tag.
  dec = Start(OpKind::kDecrypt, CKM_AES_GCM, &params, sizeof(params), k);
  EXPECT_EQ(Rv(dec->OneShot(absl::MakeConstSpan(sealed).first(15),
                            absl::MakeSpan(guard))
                   .status()),
            CKR_ENCRYPTED_DATA_LEN_RANGE);
}

TEST_F(AesMechTest, GcmParameterErrors) {
  auto k = SecretKeyOf(CKK_AES, Bytes(16, 7));
  Bytes iv(300, 3);
  for (CK_ULONG tag_bits : {0ul, 24ul, 33ul, 136ul}) {
    CK_GCM_PARAMS params{iv.data(), 12, 96, nullptr, 0, tag_bits};
    EXPECT_EQ(InitRv(OpKind::kEncrypt, CKM_AES_GCM, &params, sizeof(params), k),
              CKR_MECHANISM_PARAM_INVALID)
        << tag_bits;
  }
  for (CK_ULONG iv_len : {0ul, 257ul}) {
    CK_GCM_PARAMS params{iv.data(), iv_len, iv_len * 8, nullptr, 0, 128};
    EXPECT_EQ(InitRv(OpKind::kDecrypt, CKM_AES_GCM, &params, sizeof(params), k),
              CKR_MECHANISM_PARAM_INVALID)
        << iv_len;
  }
  for (CK_ULONG iv_len : {1ul, 256ul}) {
    CK_GCM_PARAMS params{iv.data(), iv_len, iv_len * 8, nullptr, 0, 32};
    EXPECT_EQ(InitRv(OpKind::kEncrypt, CKM_AES_GCM, &params, sizeof(params), k),
              CKR_OK)
        << iv_len;
  }
  CK_GCM_PARAMS aad_null{iv.data(), 12, 96, nullptr, 5, 128};
  EXPECT_EQ(
      InitRv(OpKind::kEncrypt, CKM_AES_GCM, &aad_null, sizeof(aad_null), k),
      CKR_MECHANISM_PARAM_INVALID);
  EXPECT_EQ(InitRv(OpKind::kEncrypt, CKM_AES_GCM, nullptr, 0, k),
            CKR_MECHANISM_PARAM_INVALID);
}

TEST_F(AesMechTest, BlockModeLengthAndIvErrors) {
  auto k = SecretKeyOf(CKK_AES, Bytes(16, 9));
  Bytes iv(16, 1), in(17), out(48);
  for (size_t iv_len : {0u, 15u, 17u}) {
    for (CK_MECHANISM_TYPE m : {CKM_AES_CBC, CKM_AES_CBC_PAD}) {
      EXPECT_EQ(
          InitRv(OpKind::kEncrypt, m, iv_len ? iv.data() : nullptr, iv_len, k),
          CKR_MECHANISM_PARAM_INVALID);
    }
  }
  EXPECT_EQ(InitRv(OpKind::kEncrypt, CKM_AES_ECB, iv.data(), 16, k),
            CKR_MECHANISM_PARAM_INVALID);
  for (CK_MECHANISM_TYPE m : {CKM_AES_ECB, CKM_AES_CBC}) {
    const void* p = m == CKM_AES_ECB ? nullptr : iv.data();
    size_t plen = m == CKM_AES_ECB ? 0 : 16;
    auto enc = Start(OpKind::kEncrypt, m, p, plen, k);
    EXPECT_EQ(Rv(enc->OneShot(in, absl::MakeSpan(out)).status()),
              CKR_DATA_LEN_RANGE);
    auto dec = Start(OpKind::kDecrypt, m, p, plen, k);
    EXPECT_EQ(Rv(dec->OneShot(in, absl::MakeSpan(out)).status()),
              CKR_ENCRYPTED_DATA_LEN_RANGE);
    // Multi-part: the total is checked at Final.
    dec = Start(OpKind::kDecrypt, m, p, plen, k);
    ASSERT_OK(dec->Update(in, absl::MakeSpan(out)).status());
    EXPECT_EQ(Rv(dec->Final(absl::MakeSpan(out)).status()),
              CKR_ENCRYPTED_DATA_LEN_RANGE);
  }
}

TEST_F(AesMechTest, CbcPadMatchesCbcOfPaddedInputAndChecksPadding) {
  auto k = SecretKeyOf(CKK_AES, Bytes(24, 5));
  Bytes iv = Rng(2).Bytes(16);
  for (size_t len = 0; len <= 40; ++len) {
    Bytes pt = Rng(len).Bytes(len);
    Bytes padded = pt;
    const size_t pad = 16 - len % 16;
    padded.insert(padded.end(), pad, static_cast<uint8_t>(pad));
    auto cbc = Start(OpKind::kEncrypt, CKM_AES_CBC, iv.data(), 16, k);
    ASSERT_OK_AND_ASSIGN(Bytes want, OneShot(*cbc, padded));
    auto enc = Start(OpKind::kEncrypt, CKM_AES_CBC_PAD, iv.data(), 16, k);
    ASSERT_OK_AND_ASSIGN(Bytes ct, OneShot(*enc, pt));
    EXPECT_EQ(ct, want) << len;
    enc = Start(OpKind::kEncrypt, CKM_AES_CBC_PAD, iv.data(), 16, k);
    ASSERT_OK_AND_ASSIGN(Bytes ct2, Stream(*enc, pt, 5));
    EXPECT_EQ(ct2, want) << len;
    auto dec = Start(OpKind::kDecrypt, CKM_AES_CBC_PAD, iv.data(), 16, k);
    ASSERT_OK_AND_ASSIGN(Bytes back, OneShot(*dec, ct));
    EXPECT_EQ(back, pt) << len;
    dec = Start(OpKind::kDecrypt, CKM_AES_CBC_PAD, iv.data(), 16, k);
    ASSERT_OK_AND_ASSIGN(Bytes back2, Stream(*dec, ct, 3));
    EXPECT_EQ(back2, pt) << len;
  }
  // Bad padding: a last block that decrypts to ...00 (pad byte 0).
  Bytes bad(32, 0);
  auto cbc = Start(OpKind::kEncrypt, CKM_AES_CBC, iv.data(), 16, k);
  ASSERT_OK_AND_ASSIGN(Bytes ct, OneShot(*cbc, bad));
  auto dec = Start(OpKind::kDecrypt, CKM_AES_CBC_PAD, iv.data(), 16, k);
  Bytes out(32, 0xCD);
  EXPECT_EQ(Rv(dec->OneShot(ct, absl::MakeSpan(out)).status()),
            CKR_ENCRYPTED_DATA_INVALID);
  EXPECT_EQ(Bytes(out.begin(), out.begin() + 16), Bytes(16, 0))
      << "partial plaintext released";
  for (size_t len : {0u, 15u, 17u}) {
    dec = Start(OpKind::kDecrypt, CKM_AES_CBC_PAD, iv.data(), 16, k);
    EXPECT_EQ(Rv(dec->OneShot(Bytes(len), absl::MakeSpan(out)).status()),
              CKR_ENCRYPTED_DATA_LEN_RANGE)
        << len;
  }
}

TEST_F(AesMechTest, BufferTooSmallLeavesOperationUsable) {
  auto k = SecretKeyOf(CKK_AES, Bytes(16, 4));
  Bytes iv(16, 2);
  Bytes pt = Rng(3).Bytes(48);
  auto ref = Start(OpKind::kEncrypt, CKM_AES_CBC_PAD, iv.data(), 16, k);
  ASSERT_OK_AND_ASSIGN(Bytes want, OneShot(*ref, pt));

  auto op = Start(OpKind::kEncrypt, CKM_AES_CBC_PAD, iv.data(), 16, k);
  EXPECT_EQ(op->OutputBound(Operation::Call::kOneShot, pt.size()), 64u);
  Bytes small(63);
  EXPECT_EQ(Rv(op->OneShot(pt, absl::MakeSpan(small)).status()),
            CKR_BUFFER_TOO_SMALL);
  ASSERT_OK_AND_ASSIGN(Bytes got, OneShot(*op, pt));
  EXPECT_EQ(got, want);

  // Multi-part: a short Update, then the same Update again.
  op = Start(OpKind::kEncrypt, CKM_AES_CBC_PAD, iv.data(), 16, k);
  Bytes out(op->OutputBound(Operation::Call::kUpdate, 40));
  EXPECT_EQ(out.size(), 32u);
  Bytes tiny(31);
  EXPECT_EQ(
      Rv(op->Update(absl::MakeConstSpan(pt).first(40), absl::MakeSpan(tiny))
             .status()),
      CKR_BUFFER_TOO_SMALL);
  ASSERT_OK_AND_ASSIGN(size_t n, op->Update(absl::MakeConstSpan(pt).first(40),
                                            absl::MakeSpan(out)));
  Bytes all(out.begin(), out.begin() + n);
  Bytes rest(op->OutputBound(Operation::Call::kUpdate, 8));
  ASSERT_OK_AND_ASSIGN(
      n, op->Update(absl::MakeConstSpan(pt).subspan(40), absl::MakeSpan(rest)));
  all.insert(all.end(), rest.begin(), rest.begin() + n);
  Bytes fin(16);
  Bytes fin_small(15);
  EXPECT_EQ(Rv(op->Final(absl::MakeSpan(fin_small)).status()),
            CKR_BUFFER_TOO_SMALL);
  ASSERT_OK_AND_ASSIGN(n, op->Final(absl::MakeSpan(fin)));
  all.insert(all.end(), fin.begin(), fin.begin() + n);
  EXPECT_EQ(all, want);

  // CBC_PAD decrypt Final: the exact size suffices, a smaller one is
  // BUFFER_TOO_SMALL and the retry gives the plaintext once.
  Bytes five = {1, 2, 3, 4, 5};
  ref = Start(OpKind::kEncrypt, CKM_AES_CBC_PAD, iv.data(), 16, k);
  ASSERT_OK_AND_ASSIGN(Bytes ct, OneShot(*ref, five));
  // One-shot: the exact plaintext size suffices too, and a short buffer
  // leaves the operation as it was.
  auto one = Start(OpKind::kDecrypt, CKM_AES_CBC_PAD, iv.data(), 16, k);
  Bytes four_bytes(4), five_bytes(5);
  EXPECT_EQ(Rv(one->OneShot(ct, absl::MakeSpan(four_bytes)).status()),
            CKR_BUFFER_TOO_SMALL);
  ASSERT_OK_AND_ASSIGN(n, one->OneShot(ct, absl::MakeSpan(five_bytes)));
  EXPECT_EQ(n, 5u);
  EXPECT_EQ(five_bytes, five);

  auto dec = Start(OpKind::kDecrypt, CKM_AES_CBC_PAD, iv.data(), 16, k);
  Bytes none;
  ASSERT_OK_AND_ASSIGN(n, dec->Update(ct, absl::MakeSpan(none)));
  EXPECT_EQ(n, 0u);
  Bytes four(4);
  EXPECT_EQ(Rv(dec->Final(absl::MakeSpan(four)).status()),
            CKR_BUFFER_TOO_SMALL);
  Bytes exact(5);
  ASSERT_OK_AND_ASSIGN(n, dec->Final(absl::MakeSpan(exact)));
  EXPECT_EQ(exact, five);
}

TEST_F(AesMechTest, KeyErrors) {
  AttributeMap key;
  key.SetUlong(CKA_CLASS, CKO_SECRET_KEY);
  key.SetUlong(CKA_KEY_TYPE, CKK_AES);
  key.Set(CKA_VALUE, Bytes(17, 1));
  EXPECT_EQ(Rv(mech_->PrepareKey(key).status()), CKR_KEY_SIZE_RANGE);
  key.Erase(CKA_VALUE);
  EXPECT_EQ(Rv(mech_->PrepareKey(key).status()), CKR_TEMPLATE_INCOMPLETE);
  auto generic = SecretKeyOf(CKK_GENERIC_SECRET, Bytes(16, 1));
  EXPECT_EQ(InitRv(OpKind::kEncrypt, CKM_AES_ECB, nullptr, 0, generic),
            CKR_KEY_TYPE_INCONSISTENT);
  auto aes = SecretKeyOf(CKK_AES, Bytes(16, 1));
  EXPECT_EQ(InitRv(OpKind::kSign, CKM_AES_ECB, nullptr, 0, aes),
            CKR_MECHANISM_INVALID);
  EXPECT_EQ(InitRv(OpKind::kEncrypt, CKM_SHA256_HMAC, nullptr, 0, aes),
            CKR_MECHANISM_INVALID);
  EXPECT_EQ(InitRv(OpKind::kEncrypt, 0x80001234ul, nullptr, 0, aes),
            CKR_MECHANISM_INVALID);
}

}  // namespace
}  // namespace accelcrypt::p11::testing
