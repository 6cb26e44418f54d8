// SPDX-License-Identifier: Apache-2.0
// Properties every backend's raw ciphers must have, checked per (backend,
// cipher) the build tree's registry declares, against the software backend:
// empty input, every split of a streaming input, in-place and unaligned
// buffers, sizes 0..4097, GCM AAD and tag lengths, clone and state transfer
// mid-stream, reuse after an error.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "core/cipher.h"
#include "core/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_env.h"

namespace accelcrypt {
namespace {

using ::accelcrypt::testing::BackendAlg;
using ::accelcrypt::testing::BackendAlgName;
using ::accelcrypt::testing::Rng;
using ::accelcrypt::testing::SharedBackendAlgs;
using ::accelcrypt::testing::SoftwareBackend;
using ::accelcrypt::testing::StatusIs;
using ::accelcrypt::testing::ToHex;
using Bytes = std::vector<uint8_t>;

bool IsBlock(const AlgorithmInfo& alg) {
  return alg.mode == CipherMode::kEcb || alg.mode == CipherMode::kCbc;
}
bool IsGcm(const AlgorithmInfo& alg) { return alg.mode == CipherMode::kGcm; }

// Message is one operation's inputs.
struct Message {
  Bytes key, iv, aad, data;
};

class CipherPropertyTest : public ::testing::TestWithParam<BackendAlg> {
 protected:
  void SetUp() override {
    backend_ = GetParam().backend;
    alg_ = GetParam().alg;
    software_ = SoftwareBackend();
    ASSERT_NE(software_, nullptr) << "software backend not registered";
    cap_ = backend_->Capability(alg_->id);
    ASSERT_NE(cap_, nullptr);
    streaming_ = (cap_->flags & ACCELCRYPT_CAP_STREAMING) != 0;
  }

  // Len rounds a length down to what the raw mode accepts.
  size_t Len(size_t n) const { return IsBlock(*alg_) ? n - n % 16 : n; }

  Message Random(Rng& rng, size_t data_len, size_t aad_len = 0) const {
    Message m;
    m.key = rng.Bytes(alg_->key_len);
    m.iv = rng.Bytes(IsGcm(*alg_) ? 12 : alg_->iv_len);
    m.aad = rng.Bytes(IsGcm(*alg_) ? aad_len : 0);
    m.data = rng.Bytes(Len(data_len));
    return m;
  }

  // Chunks turns split points into update sizes within max_chunk.
  std::vector<size_t> Chunks(size_t len, std::vector<size_t> cuts) const {
    std::sort(cuts.begin(), cuts.end());
    std::vector<size_t> sizes;
    size_t prev = 0;
    uint64_t limit = cap_->max_chunk;
    if (limit != 0 && IsBlock(*alg_)) limit -= limit % 16;
    for (size_t cut : cuts) {
      if (cut < prev || cut > len) continue;
      sizes.push_back(cut - prev);
      prev = cut;
    }
    sizes.push_back(len - prev);
    std::vector<size_t> out;
    for (size_t n : sizes) {
      while (limit != 0 && n > limit) {
        out.push_back(limit);
        n -= limit;
      }
      out.push_back(n);
    }
    return out;
  }

  // Crypt runs `m` on `backend` with updates of `chunks` bytes. For GCM,
  // encrypt writes the 16-byte tag into *tag; decrypt checks `*tag`.
  absl::StatusOr<Bytes> Crypt(const Backend& backend, bool encrypt,
                              const Message& m,
                              const std::vector<size_t>& chunks,
                              Bytes* tag) const {
    ACCELCRYPT_ASSIGN_OR_RETURN(std::unique_ptr<Cipher> c,
                                backend.NewCipher(alg_->id));
    ACCELCRYPT_RETURN_IF_ERROR(c->Init(encrypt, m.key, m.iv));
    if (!m.aad.empty()) ACCELCRYPT_RETURN_IF_ERROR(c->Aad(m.aad));
    Bytes out(m.data.size());
    size_t off = 0;
    for (size_t n : chunks) {
      ACCELCRYPT_RETURN_IF_ERROR(
          c->Update(absl::MakeConstSpan(m.data).subspan(off, n),
                    absl::MakeSpan(out).subspan(off, n)));
      off += n;
    }
    if (off != m.data.size()) return absl::InternalError("chunks short");
    if (IsGcm(*alg_) && !encrypt) {
      ACCELCRYPT_RETURN_IF_ERROR(c->SetTag(*tag));
    }
    ACCELCRYPT_RETURN_IF_ERROR(c->Final());
    if (IsGcm(*alg_) && encrypt) {
      tag->assign(16, 0);
      ACCELCRYPT_RETURN_IF_ERROR(c->GetTag(absl::MakeSpan(*tag)));
    }
    return out;
  }

  // Reference is the software backend's one-update result.
  absl::StatusOr<Bytes> Reference(bool encrypt, const Message& m,
                                  Bytes* tag) const {
    return Crypt(*software_, encrypt, m, {m.data.size()}, tag);
  }

  // CheckBothWays encrypts `m` on the backend with `chunks`, compares with
  // the reference, then decrypts the reference ciphertext the same way.
  void CheckBothWays(const Message& m, const std::vector<size_t>& chunks) {
    Bytes ref_tag;
    ASSERT_OK_AND_ASSIGN(Bytes ref_ct, Reference(true, m, &ref_tag));
    Bytes tag;
    ASSERT_OK_AND_ASSIGN(Bytes ct, Crypt(*backend_, true, m, chunks, &tag));
    ASSERT_EQ(ToHex(ct), ToHex(ref_ct));
    ASSERT_EQ(ToHex(tag), ToHex(ref_tag));
    Message back = m;
    back.data = ref_ct;
    ASSERT_OK_AND_ASSIGN(Bytes pt,
                         Crypt(*backend_, false, back, chunks, &ref_tag));
    ASSERT_EQ(ToHex(pt), ToHex(m.data));
  }

  void RequireStreaming() {
    if (!streaming_) {
      GTEST_SKIP() << backend_->name() << " declares " << alg_->name
                   << " one-shot only (no ACCELCRYPT_CAP_STREAMING)";
    }
  }

  const Backend* backend_ = nullptr;
  const Backend* software_ = nullptr;
  const AlgorithmInfo* alg_ = nullptr;
  const accelcrypt_capability* cap_ = nullptr;
  bool streaming_ = false;
};

TEST_P(CipherPropertyTest, EmptyInput) {
  Rng rng(1);
  Message m = Random(rng, 0);
  CheckBothWays(m, {0});
  // No update at all, only Final.
  Bytes ref_tag, tag;
  ASSERT_OK_AND_ASSIGN(Bytes ref, Reference(true, m, &ref_tag));
  ASSERT_OK_AND_ASSIGN(Bytes got, Crypt(*backend_, true, m, {}, &tag));
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(ToHex(tag), ToHex(ref_tag));
}

TEST_P(CipherPropertyTest, EveryTwoWaySplit) {
  RequireStreaming();
  Rng rng(2);
  const size_t step = IsBlock(*alg_) ? 16 : 1;
  for (size_t len = 0; len <= 80; len += step) {
    Message m = Random(rng, len, IsGcm(*alg_) ? 13 : 0);
    for (size_t cut = 0; cut <= len; cut += step) {
      SCOPED_TRACE(::testing::Message() << "len " << len << " cut " << cut);
      CheckBothWays(m, Chunks(len, {cut}));
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST_P(CipherPropertyTest, RandomMultiWaySplitsOf4097Bytes) {
  RequireStreaming();
  Rng rng(3);
  for (int round = 0; round < 24; ++round) {
    Message m = Random(rng, 4097, IsGcm(*alg_) ? 31 : 0);
    std::vector<size_t> cuts;
    size_t pieces = rng.Range(2, 12);
    for (size_t i = 0; i < pieces; ++i) {
      size_t cut = rng.Range(0, m.data.size());
      cuts.push_back(IsBlock(*alg_) ? cut - cut % 16 : cut);
    }
    SCOPED_TRACE(::testing::Message() << "round " << round);
    CheckBothWays(m, Chunks(m.data.size(), cuts));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST_P(CipherPropertyTest, SizesUpTo4097MatchSoftware) {
  Rng rng(4);
  std::vector<size_t> sizes;
  for (size_t n = 0; n <= 66; ++n) sizes.push_back(n);
  for (size_t n = 67; n < 4090; n += 97) sizes.push_back(n);
  for (size_t n : {4095, 4096, 4097}) sizes.push_back(n);
  for (size_t n : sizes) {
    if (!streaming_ && cap_->max_chunk != 0 && n > cap_->max_chunk) break;
    Message m = Random(rng, n, IsGcm(*alg_) ? n % 40 : 0);
    SCOPED_TRACE(::testing::Message() << "size " << m.data.size());
    CheckBothWays(m, Chunks(m.data.size(), {}));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST_P(CipherPropertyTest, InPlaceAndUnalignedBuffers) {
  Rng rng(5);
  Message m = Random(rng, 16 * 20 + 7, IsGcm(*alg_) ? 20 : 0);
  Bytes ref_tag;
  ASSERT_OK_AND_ASSIGN(Bytes ref, Reference(true, m, &ref_tag));
  const size_t n = m.data.size();
  for (size_t in_off = 0; in_off < 16; ++in_off) {
    for (bool in_place : {false, true}) {
      SCOPED_TRACE(::testing::Message()
                   << "offset " << in_off << (in_place ? " in place" : ""));
      size_t out_off = in_place ? in_off : (in_off * 7 + 3) % 16;
      Bytes in_buf(n + 32), out_buf(n + 32);
      std::memcpy(in_buf.data() + in_off, m.data.data(), n);
      uint8_t* out =
          in_place ? in_buf.data() + in_off : out_buf.data() + out_off;
      ASSERT_OK_AND_ASSIGN(auto c, backend_->NewCipher(alg_->id));
      ASSERT_OK(c->Init(true, m.key, m.iv));
      if (!m.aad.empty()) {
        // AAD unaligned too.
        Bytes aad_buf(m.aad.size() + 16);
        std::memcpy(aad_buf.data() + in_off, m.aad.data(), m.aad.size());
        ASSERT_OK(
            c->Aad(absl::MakeConstSpan(aad_buf).subspan(in_off, m.aad.size())));
      }
      ASSERT_OK(c->Update(absl::MakeConstSpan(in_buf.data() + in_off, n),
                          absl::MakeSpan(out, n)));
      ASSERT_OK(c->Final());
      ASSERT_EQ(ToHex(absl::MakeConstSpan(out, n)), ToHex(ref));
      if (IsGcm(*alg_)) {
        Bytes tag(16);
        ASSERT_OK(c->GetTag(absl::MakeSpan(tag)));
        ASSERT_EQ(ToHex(tag), ToHex(ref_tag));
      }
    }
  }
}

TEST_P(CipherPropertyTest, RandomKeysIvsAndMessagesMatchSoftware) {
  Rng rng(6);
  for (int i = 0; i < 64; ++i) {
    Message m = Random(rng, rng.Range(0, 600), rng.Range(0, 50));
    if (IsGcm(*alg_)) m.iv = rng.Bytes(rng.Range(1, 64));  // non-96-bit too
    SCOPED_TRACE(::testing::Message() << "case " << i);
    CheckBothWays(m, Chunks(m.data.size(), {}));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// GCM-only properties, instantiated over the GCM pairs only.
class GcmPropertyTest : public CipherPropertyTest {};

std::vector<BackendAlg> GcmAlgs() {
  std::vector<BackendAlg> out;
  for (const BackendAlg& p : SharedBackendAlgs(Family::kCipher)) {
    if (IsGcm(*p.alg)) out.push_back(p);
  }
  return out;
}

TEST_P(GcmPropertyTest, AadAndTagLengths) {
  Rng rng(7);
  for (size_t aad_len = 0; aad_len <= 70; ++aad_len) {
    SCOPED_TRACE(::testing::Message() << "aad " << aad_len);
    Message m = Random(rng, aad_len * 3 % 50, aad_len);
    Bytes ref_tag;
    ASSERT_OK_AND_ASSIGN(Bytes ref, Reference(true, m, &ref_tag));
    // AAD fed in two pieces must give the same tag.
    ASSERT_OK_AND_ASSIGN(auto enc, backend_->NewCipher(alg_->id));
    ASSERT_OK(enc->Init(true, m.key, m.iv));
    size_t half = aad_len / 2;
    ASSERT_OK(enc->Aad(absl::MakeConstSpan(m.aad).subspan(0, half)));
    ASSERT_OK(enc->Aad(absl::MakeConstSpan(m.aad).subspan(half)));
    Bytes ct(m.data.size());
    ASSERT_OK(enc->Update(m.data, absl::MakeSpan(ct)));
    ASSERT_OK(enc->Final());
    ASSERT_EQ(ToHex(ct), ToHex(ref));
    for (size_t tag_len = 4; tag_len <= 16; ++tag_len) {
      SCOPED_TRACE(::testing::Message() << "tag " << tag_len);
      Bytes tag(tag_len);
      ASSERT_OK(enc->GetTag(absl::MakeSpan(tag)));
      ASSERT_EQ(ToHex(tag),
                ToHex(absl::MakeConstSpan(ref_tag).subspan(0, tag_len)));
      // Decrypting with the truncated tag verifies...
      Message back = m;
      back.data = ref;
      ASSERT_OK_AND_ASSIGN(
          Bytes pt, Crypt(*backend_, false, back, {back.data.size()}, &tag));
      ASSERT_EQ(ToHex(pt), ToHex(m.data));
      // ...and any flipped bit is an authentication failure.
      Bytes bad = tag;
      bad[rng.Range(0, tag_len - 1)] ^=
          static_cast<uint8_t>(1u << rng.Range(0, 7));
      auto rejected = Crypt(*backend_, false, back, {back.data.size()}, &bad);
      ASSERT_THAT(rejected, StatusIs(absl::StatusCode::kInvalidArgument));
      ASSERT_EQ(GetStatusDetail(rejected.status()), StatusDetail::kAuthFailed)
          << rejected.status();
    }
  }
}

TEST_P(GcmPropertyTest, TamperedCiphertextOrAadIsRejected) {
  Rng rng(8);
  Message m = Random(rng, 100, 20);
  Bytes tag;
  ASSERT_OK_AND_ASSIGN(Bytes ct, Reference(true, m, &tag));
  Message back = m;
  back.data = ct;
  back.data[57] ^= 0x01;
  auto r1 = Crypt(*backend_, false, back, {back.data.size()}, &tag);
  EXPECT_EQ(GetStatusDetail(r1.status()), StatusDetail::kAuthFailed)
      << r1.status();
  back.data = ct;
  back.aad[3] ^= 0x80;
  auto r2 = Crypt(*backend_, false, back, {back.data.size()}, &tag);
  EXPECT_EQ(GetStatusDetail(r2.status()), StatusDetail::kAuthFailed)
      << r2.status();
}

TEST_P(CipherPropertyTest, CloneMidStreamContinuesIdentically) {
  RequireStreaming();
  Rng rng(9);
  Message m = Random(rng, 16 * 9 + 5, IsGcm(*alg_) ? 9 : 0);
  Bytes ref_tag;
  ASSERT_OK_AND_ASSIGN(Bytes ref, Reference(true, m, &ref_tag));
  const size_t cut = IsBlock(*alg_) ? 64 : 37;
  const size_t n = m.data.size();
  ASSERT_OK_AND_ASSIGN(auto c, backend_->NewCipher(alg_->id));
  ASSERT_OK(c->Init(true, m.key, m.iv));
  if (!m.aad.empty()) {
    ASSERT_OK(c->Aad(m.aad));
  }
  Bytes out(n), out2(n);
  ASSERT_OK(c->Update(absl::MakeConstSpan(m.data).subspan(0, cut),
                      absl::MakeSpan(out).subspan(0, cut)));
  ASSERT_OK_AND_ASSIGN(auto clone, c->Clone());
  EXPECT_EQ(clone->backend(), backend_->name());
  std::copy(out.begin(), out.begin() + cut, out2.begin());
  // Continue the clone first: the original must not be affected by it.
  ASSERT_OK(clone->Update(absl::MakeConstSpan(m.data).subspan(cut),
                          absl::MakeSpan(out2).subspan(cut)));
  ASSERT_OK(c->Update(absl::MakeConstSpan(m.data).subspan(cut),
                      absl::MakeSpan(out).subspan(cut)));
  ASSERT_OK(c->Final());
  ASSERT_OK(clone->Final());
  EXPECT_EQ(ToHex(out), ToHex(ref));
  EXPECT_EQ(ToHex(out2), ToHex(ref));
  if (IsGcm(*alg_)) {
    Bytes t1(16), t2(16);
    ASSERT_OK(c->GetTag(absl::MakeSpan(t1)));
    ASSERT_OK(clone->GetTag(absl::MakeSpan(t2)));
    EXPECT_EQ(ToHex(t1), ToHex(ref_tag));
    EXPECT_EQ(ToHex(t2), ToHex(ref_tag));
  }
}

// The portable state (accelcrypt_cipher_state) is defined for the non-AEAD
// modes only, so this runs over those.
class PortableStateTest : public CipherPropertyTest {};

std::vector<BackendAlg> NonAeadAlgs() {
  std::vector<BackendAlg> out;
  for (const BackendAlg& p : SharedBackendAlgs(Family::kCipher)) {
    if (!IsGcm(*p.alg)) out.push_back(p);
  }
  return out;
}

TEST_P(PortableStateTest, StateMovesBetweenContextsMidStream) {
  if (!(cap_->flags & ACCELCRYPT_CAP_PORTABLE_STATE)) {
    GTEST_SKIP() << backend_->name() << " does not declare " << alg_->name
                 << " state portable (ACCELCRYPT_CAP_PORTABLE_STATE)";
  }
  RequireStreaming();
  const accelcrypt_capability* soft_cap = software_->Capability(alg_->id);
  ASSERT_NE(soft_cap, nullptr);
  ASSERT_TRUE(soft_cap->flags & ACCELCRYPT_CAP_PORTABLE_STATE)
      << "software must accept every portable state";
  Rng rng(10);
  for (bool encrypt : {true, false}) {
    // Both directions of the move: this backend -> software and back.
    for (bool to_software : {true, false}) {
      for (size_t cut : {16u, 21u, 47u, 64u}) {
        if (IsBlock(*alg_) && cut % 16 != 0) continue;
        SCOPED_TRACE(::testing::Message()
                     << (encrypt ? "encrypt" : "decrypt") << " cut " << cut
                     << (to_software ? " to software" : " from software"));
        Message m = Random(rng, 16 * 8 + 3);
        Bytes unused;
        ASSERT_OK_AND_ASSIGN(Bytes ref, Reference(encrypt, m, &unused));
        const Backend& first = to_software ? *backend_ : *software_;
        const Backend& second = to_software ? *software_ : *backend_;
        const size_t n = m.data.size();
        Bytes out(n);
        ASSERT_OK_AND_ASSIGN(auto a, first.NewCipher(alg_->id));
        ASSERT_OK(a->Init(encrypt, m.key, m.iv));
        ASSERT_OK(a->Update(absl::MakeConstSpan(m.data).subspan(0, cut),
                            absl::MakeSpan(out).subspan(0, cut)));
        ASSERT_OK_AND_ASSIGN(accelcrypt_cipher_state state, a->GetState());
        ASSERT_OK_AND_ASSIGN(auto b, second.NewCipher(alg_->id));
        ASSERT_OK(b->Init(encrypt, m.key, m.iv));
        ASSERT_OK(b->SetState(state));
        ASSERT_OK(b->Update(absl::MakeConstSpan(m.data).subspan(cut),
                            absl::MakeSpan(out).subspan(cut)));
        ASSERT_EQ(ToHex(out), ToHex(ref));
      }
    }
  }
}

TEST_P(CipherPropertyTest, WrongKeyOrIvLengthIsInvalidArgument) {
  ASSERT_OK_AND_ASSIGN(auto c, backend_->NewCipher(alg_->id));
  Bytes key(alg_->key_len + 8, 1), iv(16, 2);
  EXPECT_THAT(
      c->Init(
          true, absl::MakeConstSpan(key).subspan(0, alg_->key_len - 1),
          absl::MakeConstSpan(iv).subspan(0, IsGcm(*alg_) ? 12 : alg_->iv_len)),
      StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(c->Init(true, key,
                      absl::MakeConstSpan(iv).subspan(
                          0, IsGcm(*alg_) ? 12 : alg_->iv_len)),
              StatusIs(absl::StatusCode::kInvalidArgument));
  if (!IsGcm(*alg_)) {
    Bytes long_iv(alg_->iv_len + 1, 3);
    EXPECT_THAT(
        c->Init(true, absl::MakeConstSpan(key).subspan(0, alg_->key_len),
                long_iv),
        StatusIs(absl::StatusCode::kInvalidArgument));
  } else {
    EXPECT_THAT(
        c->Init(true, absl::MakeConstSpan(key).subspan(0, alg_->key_len),
                absl::Span<const uint8_t>()),
        StatusIs(absl::StatusCode::kInvalidArgument));
  }
}

TEST_P(CipherPropertyTest, ReuseAfterAnError) {
  Rng rng(11);
  Message m = Random(rng, 16 * 4 + 9, IsGcm(*alg_) ? 5 : 0);
  Bytes ref_tag;
  ASSERT_OK_AND_ASSIGN(Bytes ref, Reference(true, m, &ref_tag));
  ASSERT_OK_AND_ASSIGN(auto c, backend_->NewCipher(alg_->id));
  ASSERT_OK(c->Init(true, m.key, m.iv));
  if (!m.aad.empty()) {
    ASSERT_OK(c->Aad(m.aad));
  }
  Bytes out(m.data.size() + 16);
  const size_t first = IsBlock(*alg_) ? 32 : 19;
  ASSERT_OK(c->Update(absl::MakeConstSpan(m.data).subspan(0, first),
                      absl::MakeSpan(out).subspan(0, first)));
  // A failed call leaves the stream as it was (plugin ABI atomicity).
  if (IsBlock(*alg_)) {
    EXPECT_THAT(c->Update(absl::MakeConstSpan(m.data).subspan(first, 5),
                          absl::MakeSpan(out).subspan(first, 5)),
                StatusIs(absl::StatusCode::kInvalidArgument));
  }
  EXPECT_THAT(c->Update(absl::MakeConstSpan(m.data).subspan(first, 16),
                        absl::MakeSpan(out).subspan(first, 15)),
              StatusIs(absl::StatusCode::kOutOfRange));
  ASSERT_OK(
      c->Update(absl::MakeConstSpan(m.data).subspan(first),
                absl::MakeSpan(out).subspan(first, m.data.size() - first)));
  ASSERT_OK(c->Final());
  out.resize(m.data.size());
  EXPECT_EQ(ToHex(out), ToHex(ref));

  // A context re-initialised after a failure (here: a GCM tag mismatch or a
  // bad key) works like a fresh one.
  Bytes bad_key(alg_->key_len + 1, 7);
  EXPECT_THAT(c->Init(true, bad_key, m.iv),
              StatusIs(absl::StatusCode::kInvalidArgument));
  if (IsGcm(*alg_)) {
    ASSERT_OK(c->Init(false, m.key, m.iv));
    ASSERT_OK(c->Aad(m.aad));
    Bytes pt(ref.size());
    ASSERT_OK(c->Update(ref, absl::MakeSpan(pt)));
    Bytes wrong = ref_tag;
    wrong[0] ^= 1;
    ASSERT_OK(c->SetTag(wrong));
    EXPECT_EQ(GetStatusDetail(c->Final()), StatusDetail::kAuthFailed);
  }
  ASSERT_OK(c->Init(true, m.key, m.iv));
  if (!m.aad.empty()) {
    ASSERT_OK(c->Aad(m.aad));
  }
  Bytes again(m.data.size());
  ASSERT_OK(c->Update(m.data, absl::MakeSpan(again)));
  ASSERT_OK(c->Final());
  EXPECT_EQ(ToHex(again), ToHex(ref));
  if (IsGcm(*alg_)) {
    Bytes tag(16);
    ASSERT_OK(c->GetTag(absl::MakeSpan(tag)));
    EXPECT_EQ(ToHex(tag), ToHex(ref_tag));
  }
}

// The largest single update the backend declares (max_chunk), or 1 MiB when
// it declares no limit, in one call.
TEST_P(CipherPropertyTest, LargestSingleUpdate) {
  size_t n = cap_->max_chunk != 0 && cap_->max_chunk < (1u << 20)
                 ? static_cast<size_t>(cap_->max_chunk)
                 : size_t{1} << 20;
  Rng rng(12);
  Message m = Random(rng, n, IsGcm(*alg_) ? 16 : 0);
  SCOPED_TRACE(::testing::Message() << m.data.size() << " bytes");
  CheckBothWays(m, {m.data.size()});
}

TEST_P(CipherPropertyTest, ReportsItsBackend) {
  ASSERT_OK_AND_ASSIGN(auto c, backend_->NewCipher(alg_->id));
  EXPECT_EQ(c->backend(), backend_->name());
  EXPECT_EQ(c->info().id, alg_->id);
}

INSTANTIATE_TEST_SUITE_P(
    Registry, CipherPropertyTest,
    ::testing::ValuesIn(SharedBackendAlgs(Family::kCipher)), BackendAlgName);
INSTANTIATE_TEST_SUITE_P(Registry, PortableStateTest,
                         ::testing::ValuesIn(NonAeadAlgs()), BackendAlgName);
INSTANTIATE_TEST_SUITE_P(Registry, GcmPropertyTest,
                         ::testing::ValuesIn(GcmAlgs()), BackendAlgName);

}  // namespace
}  // namespace accelcrypt
