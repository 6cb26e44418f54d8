// SPDX-License-Identifier: Apache-2.0
// CipherStream (EVP-style buffering and PKCS#7 padding over a raw Cipher),
// checked against OpenSSL's own EVP implementation of the same modes.
#include "core/cipher_stream.h"

#include <openssl/evp.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "core/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_env.h"

namespace accelcrypt {
namespace {

using ::accelcrypt::testing::Rng;
using ::accelcrypt::testing::SharedRegistry;
using ::accelcrypt::testing::StatusIs;
using ::accelcrypt::testing::ToHex;
using ::testing::HasSubstr;
using Bytes = std::vector<uint8_t>;

std::unique_ptr<CipherStream> NewStream(accelcrypt_alg alg) {
  const Backend* software = SharedRegistry().Find("software");
  if (software == nullptr) return nullptr;
  auto cipher = software->NewCipher(alg);
  if (!cipher.ok()) return nullptr;
  return std::make_unique<CipherStream>(*std::move(cipher));
}

const EVP_CIPHER* EvpFor(accelcrypt_alg alg) {
  switch (alg) {
    case ACCELCRYPT_ALG_AES_128_CBC:
      return EVP_aes_128_cbc();
    case ACCELCRYPT_ALG_AES_256_CBC:
      return EVP_aes_256_cbc();
    case ACCELCRYPT_ALG_AES_192_ECB:
      return EVP_aes_192_ecb();
    case ACCELCRYPT_ALG_AES_128_CTR:
      return EVP_aes_128_ctr();
    default:
      return nullptr;
  }
}

// Evp is the independent reference: OpenSSL's EVP with the same padding.
Bytes Evp(accelcrypt_alg alg, bool encrypt, bool padding, const Bytes& key,
          const Bytes& iv, const Bytes& in) {
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  Bytes out(in.size() + 32);
  int n = 0, m = 0;
  bool ok = EVP_CipherInit_ex(ctx, EvpFor(alg), nullptr, key.data(),
                              iv.empty() ? nullptr : iv.data(), encrypt) == 1 &&
            EVP_CIPHER_CTX_set_padding(ctx, padding ? 1 : 0) == 1 &&
            EVP_CipherUpdate(ctx, out.data(), &n, in.data(),
                             static_cast<int>(in.size())) == 1 &&
            EVP_CipherFinal_ex(ctx, out.data() + n, &m) == 1;
  EVP_CIPHER_CTX_free(ctx);
  EXPECT_TRUE(ok) << "EVP reference failed";
  out.resize(ok ? n + m : 0);
  return out;
}

// Stream runs `in` through `s` in pieces of `piece` bytes with exactly
// sized output buffers (MaxUpdateOutput), then Final.
absl::StatusOr<Bytes> Stream(CipherStream& s, const Bytes& in, size_t piece) {
  Bytes out;
  size_t off = 0;
  do {
    size_t n = std::min(piece, in.size() - off);
    Bytes buf(s.MaxUpdateOutput(n));
    auto wrote =
        s.Update(absl::MakeConstSpan(in).subspan(off, n), absl::MakeSpan(buf));
    if (!wrote.ok()) return wrote.status();
    if (*wrote != buf.size()) {
      return absl::InternalError("Update wrote less than MaxUpdateOutput");
    }
    out.insert(out.end(), buf.begin(), buf.end());
    off += n;
  } while (off < in.size());
  Bytes last(16);
  auto wrote = s.Final(absl::MakeSpan(last));
  if (!wrote.ok()) return wrote.status();
  out.insert(out.end(), last.begin(), last.begin() + *wrote);
  return out;
}

TEST(CipherStreamTest, PaddingMatchesEvpForEveryLengthAndSplit) {
  Rng rng(1);
  for (accelcrypt_alg alg :
       {ACCELCRYPT_ALG_AES_128_CBC, ACCELCRYPT_ALG_AES_192_ECB}) {
    const AlgorithmInfo* info = FindAlgorithm(alg);
    for (size_t len = 0; len <= 50; ++len) {
      Bytes key = rng.Bytes(info->key_len), iv = rng.Bytes(info->iv_len);
      Bytes msg = rng.Bytes(len);
      Bytes want = Evp(alg, true, true, key, iv, msg);
      ASSERT_EQ(want.size(), (len / 16 + 1) * 16);
      for (size_t piece : {1, 5, 16, 17, 64}) {
        SCOPED_TRACE(::testing::Message()
                     << info->name << " len " << len << " piece " << piece);
        auto enc = NewStream(alg);
        ASSERT_NE(enc, nullptr);
        ASSERT_OK(enc->Init(true, key, iv));
        ASSERT_OK_AND_ASSIGN(Bytes ct, Stream(*enc, msg, piece));
        ASSERT_EQ(ToHex(ct), ToHex(want));
        auto dec = NewStream(alg);
        ASSERT_OK(dec->Init(false, key, iv));
        ASSERT_OK_AND_ASSIGN(Bytes pt, Stream(*dec, ct, piece));
        ASSERT_EQ(ToHex(pt), ToHex(msg));
      }
    }
  }
}

TEST(CipherStreamTest, PaddingOffWholeBlocksMatchEvp) {
  Rng rng(2);
  Bytes key = rng.Bytes(32), iv = rng.Bytes(16), msg = rng.Bytes(64);
  auto s = NewStream(ACCELCRYPT_ALG_AES_256_CBC);
  ASSERT_NE(s, nullptr);
  s->set_padding(false);
  ASSERT_OK(s->Init(true, key, iv));
  ASSERT_OK_AND_ASSIGN(Bytes ct, Stream(*s, msg, 7));
  EXPECT_EQ(ToHex(ct),
            ToHex(Evp(ACCELCRYPT_ALG_AES_256_CBC, true, false, key, iv, msg)));
  auto d = NewStream(ACCELCRYPT_ALG_AES_256_CBC);
  d->set_padding(false);
  ASSERT_OK(d->Init(false, key, iv));
  ASSERT_OK_AND_ASSIGN(Bytes pt, Stream(*d, ct, 16));
  EXPECT_EQ(ToHex(pt), ToHex(msg));
}

TEST(CipherStreamTest, PartialBlockWithoutPaddingIsRejected) {
  Rng rng(3);
  for (bool encrypt : {true, false}) {
    auto s = NewStream(ACCELCRYPT_ALG_AES_128_CBC);
    ASSERT_NE(s, nullptr);
    s->set_padding(false);
    ASSERT_OK(s->Init(encrypt, rng.Bytes(16), rng.Bytes(16)));
    Bytes in = rng.Bytes(20), out(32);
    ASSERT_OK_AND_ASSIGN(size_t n, s->Update(in, absl::MakeSpan(out)));
    EXPECT_EQ(n, 16u);
    EXPECT_THAT(s->Final(absl::MakeSpan(out)),
                StatusIs(absl::StatusCode::kInvalidArgument));
  }
}

TEST(CipherStreamTest, BadPaddingIsRejected) {
  Rng rng(4);
  Bytes key = rng.Bytes(16), iv = rng.Bytes(16);
  // Last plaintext blocks whose PKCS#7 padding is invalid: pad byte 0, pad
  // byte > 16, and inconsistent pad bytes.
  std::vector<Bytes> last_blocks;
  Bytes zero(16, 0x41);
  zero[15] = 0x00;
  last_blocks.push_back(zero);
  Bytes big(16, 0x41);
  big[15] = 0x11;
  last_blocks.push_back(big);
  Bytes mixed(16, 0x41);
  mixed[13] = 0x03;
  mixed[14] = 0x02;
  mixed[15] = 0x03;
  last_blocks.push_back(mixed);
  for (const Bytes& block : last_blocks) {
    Bytes msg = rng.Bytes(16);
    msg.insert(msg.end(), block.begin(), block.end());
    Bytes ct = Evp(ACCELCRYPT_ALG_AES_128_CBC, true, false, key, iv, msg);
    auto s = NewStream(ACCELCRYPT_ALG_AES_128_CBC);
    ASSERT_OK(s->Init(false, key, iv));
    EXPECT_THAT(Stream(*s, ct, 32), StatusIs(absl::StatusCode::kInvalidArgument,
                                             HasSubstr("bad decrypt")))
        << ToHex(block);
  }
  // A ciphertext that is not a whole number of blocks cannot be unpadded.
  auto s = NewStream(ACCELCRYPT_ALG_AES_128_CBC);
  ASSERT_OK(s->Init(false, key, iv));
  Bytes odd = rng.Bytes(33);
  EXPECT_THAT(Stream(*s, odd, 33),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(CipherStreamTest, ShortOutputIsOutOfRangeAndConsumesNothing) {
  Rng rng(5);
  Bytes key = rng.Bytes(16), iv = rng.Bytes(16), msg = rng.Bytes(45);
  Bytes want = Evp(ACCELCRYPT_ALG_AES_128_CBC, true, true, key, iv, msg);
  auto s = NewStream(ACCELCRYPT_ALG_AES_128_CBC);
  ASSERT_OK(s->Init(true, key, iv));
  Bytes out(64);
  // 45 bytes produce 32: a 31-byte buffer is refused, and nothing is used up.
  EXPECT_THAT(s->Update(msg, absl::MakeSpan(out).subspan(0, 31)),
              StatusIs(absl::StatusCode::kOutOfRange));
  ASSERT_OK_AND_ASSIGN(size_t n, s->Update(msg, absl::MakeSpan(out)));
  ASSERT_EQ(n, 32u);
  // Final needs a whole block when padding.
  EXPECT_THAT(s->Final(absl::MakeSpan(out).subspan(32, 15)),
              StatusIs(absl::StatusCode::kOutOfRange));
  ASSERT_OK_AND_ASSIGN(size_t m, s->Final(absl::MakeSpan(out).subspan(32)));
  ASSERT_EQ(m, 16u);
  out.resize(48);
  EXPECT_EQ(ToHex(out), ToHex(want));

  // Decrypt: the final block holds 13 plaintext bytes; a 12-byte buffer is
  // refused and a retry with room still yields the right bytes.
  auto d = NewStream(ACCELCRYPT_ALG_AES_128_CBC);
  ASSERT_OK(d->Init(false, key, iv));
  Bytes pt(48);
  ASSERT_OK_AND_ASSIGN(size_t k, d->Update(want, absl::MakeSpan(pt)));
  ASSERT_EQ(k, 32u);
  EXPECT_THAT(d->Final(absl::MakeSpan(pt).subspan(32, 12)),
              StatusIs(absl::StatusCode::kOutOfRange));
  ASSERT_OK_AND_ASSIGN(size_t f, d->Final(absl::MakeSpan(pt).subspan(32)));
  ASSERT_EQ(f, 13u);
  pt.resize(45);
  EXPECT_EQ(ToHex(pt), ToHex(msg));
}

TEST(CipherStreamTest, StreamModesPassThrough) {
  Rng rng(6);
  Bytes key = rng.Bytes(16), iv = rng.Bytes(16), msg = rng.Bytes(77);
  auto s = NewStream(ACCELCRYPT_ALG_AES_128_CTR);
  ASSERT_NE(s, nullptr);
  ASSERT_OK(s->Init(true, key, iv));
  EXPECT_EQ(s->MaxUpdateOutput(5), 5u);
  ASSERT_OK_AND_ASSIGN(Bytes ct, Stream(*s, msg, 9));
  EXPECT_EQ(ToHex(ct),
            ToHex(Evp(ACCELCRYPT_ALG_AES_128_CTR, true, false, key, iv, msg)));
  Bytes small(4);
  auto t = NewStream(ACCELCRYPT_ALG_AES_128_CTR);
  ASSERT_OK(t->Init(true, key, iv));
  EXPECT_THAT(t->Update(msg, absl::MakeSpan(small)),
              StatusIs(absl::StatusCode::kOutOfRange));
}

TEST(CipherStreamTest, CallsOutOfOrderAreFailedPrecondition) {
  auto s = NewStream(ACCELCRYPT_ALG_AES_128_CBC);
  ASSERT_NE(s, nullptr);
  Bytes in(16), out(32);
  EXPECT_THAT(s->Update(in, absl::MakeSpan(out)),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(s->Final(absl::MakeSpan(out)),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  ASSERT_OK(s->Init(true, Bytes(16, 1), Bytes(16, 2)));
  ASSERT_OK(s->Final(absl::MakeSpan(out)).status());
  EXPECT_TRUE(s->finished());
  EXPECT_THAT(s->Update(in, absl::MakeSpan(out)),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(s->Final(absl::MakeSpan(out)),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  // Init makes it usable again.
  ASSERT_OK(s->Init(true, Bytes(16, 1), Bytes(16, 2)));
  EXPECT_OK(s->Update(in, absl::MakeSpan(out)).status());
}

TEST(CipherStreamTest, CloneWithBufferedBytesContinuesIdentically) {
  Rng rng(7);
  Bytes key = rng.Bytes(16), iv = rng.Bytes(16), msg = rng.Bytes(61);
  Bytes want = Evp(ACCELCRYPT_ALG_AES_128_CBC, true, true, key, iv, msg);
  auto s = NewStream(ACCELCRYPT_ALG_AES_128_CBC);
  ASSERT_OK(s->Init(true, key, iv));
  Bytes head(16);
  ASSERT_OK_AND_ASSIGN(
      size_t n,
      s->Update(absl::MakeConstSpan(msg).subspan(0, 21), absl::MakeSpan(head)));
  ASSERT_EQ(n, 16u);
  ASSERT_OK_AND_ASSIGN(auto clone, s->Clone());
  Bytes rest(msg.begin() + 21, msg.end());
  for (CipherStream* c : {clone.get(), s.get()}) {
    ASSERT_OK_AND_ASSIGN(Bytes tail, Stream(*c, rest, 11));
    Bytes all = head;
    all.insert(all.end(), tail.begin(), tail.end());
    EXPECT_EQ(ToHex(all), ToHex(want));
  }
}

TEST(CipherStreamTest, InPlaceWithBufferedBytes) {
  Rng rng(8);
  Bytes key = rng.Bytes(32), iv = rng.Bytes(16), msg = rng.Bytes(100);
  Bytes want = Evp(ACCELCRYPT_ALG_AES_256_CBC, true, true, key, iv, msg);
  auto s = NewStream(ACCELCRYPT_ALG_AES_256_CBC);
  ASSERT_OK(s->Init(true, key, iv));
  Bytes buf = msg;
  buf.resize(128);
  // 7 bytes (buffered), then the remaining 93 in place at their offset:
  // the output runs ahead of the input by the 7 buffered bytes.
  ASSERT_OK_AND_ASSIGN(size_t a, s->Update(absl::MakeConstSpan(buf.data(), 7),
                                           absl::MakeSpan(buf.data(), 0)));
  ASSERT_EQ(a, 0u);
  ASSERT_OK_AND_ASSIGN(size_t b,
                       s->Update(absl::MakeConstSpan(buf.data() + 7, 93),
                                 absl::MakeSpan(buf.data(), 96)));
  ASSERT_EQ(b, 96u);
  ASSERT_OK_AND_ASSIGN(size_t c, s->Final(absl::MakeSpan(buf.data() + 96, 32)));
  ASSERT_EQ(c, 16u);
  buf.resize(112);
  EXPECT_EQ(ToHex(buf), ToHex(want));
}

TEST(CipherStreamTest, GcmFinalComputesAndChecksTheTag) {
  Rng rng(9);
  Bytes key = rng.Bytes(16), iv = rng.Bytes(12), msg = rng.Bytes(40),
        aad = rng.Bytes(9);
  auto s = NewStream(ACCELCRYPT_ALG_AES_128_GCM);
  ASSERT_NE(s, nullptr);
  ASSERT_OK(s->Init(true, key, iv));
  ASSERT_OK(s->cipher().Aad(aad));
  ASSERT_OK_AND_ASSIGN(Bytes ct, Stream(*s, msg, 13));
  ASSERT_EQ(ct.size(), msg.size());
  Bytes tag(16);
  ASSERT_OK(s->cipher().GetTag(absl::MakeSpan(tag)));
  auto d = NewStream(ACCELCRYPT_ALG_AES_128_GCM);
  ASSERT_OK(d->Init(false, key, iv));
  ASSERT_OK(d->cipher().Aad(aad));
  ASSERT_OK(d->cipher().SetTag(tag));
  ASSERT_OK_AND_ASSIGN(Bytes pt, Stream(*d, ct, 40));
  EXPECT_EQ(ToHex(pt), ToHex(msg));
  tag[0] ^= 1;
  auto e = NewStream(ACCELCRYPT_ALG_AES_128_GCM);
  ASSERT_OK(e->Init(false, key, iv));
  ASSERT_OK(e->cipher().Aad(aad));
  ASSERT_OK(e->cipher().SetTag(tag));
  auto bad = Stream(*e, ct, 40);
  EXPECT_EQ(GetStatusDetail(bad.status()), StatusDetail::kAuthFailed)
      << bad.status();
}

}  // namespace
}  // namespace accelcrypt
