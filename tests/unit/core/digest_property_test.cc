// SPDX-License-Identifier: Apache-2.0
// Properties every backend's digests must have, per (backend, digest) the
// build tree's registry declares, against the software backend.
#include <algorithm>
#include <memory>
#include <vector>

#include "core/digest.h"
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

class DigestPropertyTest : public ::testing::TestWithParam<BackendAlg> {
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

  std::string Reference(const Bytes& msg) const {
    Bytes out(alg_->digest_len);
    absl::Status st =
        software_->DigestOneShot(alg_->id, msg, absl::MakeSpan(out));
    EXPECT_TRUE(st.ok()) << st;
    return ToHex(out);
  }

  absl::StatusOr<std::string> OneShot(const Bytes& msg) const {
    Bytes out(alg_->digest_len);
    ACCELCRYPT_RETURN_IF_ERROR(
        backend_->DigestOneShot(alg_->id, msg, absl::MakeSpan(out)));
    return ToHex(out);
  }

  // Streamed hashes `msg` in pieces ending at `cuts` (split further to
  // max_chunk).
  absl::StatusOr<std::string> Streamed(const Bytes& msg,
                                       std::vector<size_t> cuts) const {
    ACCELCRYPT_ASSIGN_OR_RETURN(auto d, backend_->NewDigest(alg_->id));
    std::sort(cuts.begin(), cuts.end());
    cuts.push_back(msg.size());
    size_t prev = 0;
    for (size_t cut : cuts) {
      size_t n = cut - prev;
      while (n > 0 || cut == prev) {
        size_t take =
            cap_->max_chunk != 0 && n > cap_->max_chunk ? cap_->max_chunk : n;
        ACCELCRYPT_RETURN_IF_ERROR(
            d->Update(absl::MakeConstSpan(msg).subspan(prev, take)));
        prev += take;
        n -= take;
        if (n == 0) break;
      }
    }
    Bytes out(alg_->digest_len);
    ACCELCRYPT_RETURN_IF_ERROR(d->Final(absl::MakeSpan(out)));
    return ToHex(out);
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

TEST_P(DigestPropertyTest, EmptyMessage) {
  const std::string want = Reference({});
  ASSERT_OK_AND_ASSIGN(std::string one, OneShot({}));
  EXPECT_EQ(one, want);
  // A fresh context finalised with no update at all.
  ASSERT_OK_AND_ASSIGN(auto d, backend_->NewDigest(alg_->id));
  Bytes out(alg_->digest_len);
  ASSERT_OK(d->Final(absl::MakeSpan(out)));
  EXPECT_EQ(ToHex(out), want);
  // Updates of zero bytes change nothing.
  ASSERT_OK(d->Init());
  ASSERT_OK(d->Update({}));
  ASSERT_OK(d->Update({}));
  ASSERT_OK(d->Final(absl::MakeSpan(out)));
  EXPECT_EQ(ToHex(out), want);
}

TEST_P(DigestPropertyTest, EveryTwoWaySplit) {
  RequireStreaming();
  Rng rng(21);
  for (size_t len = 0; len <= 80; ++len) {
    Bytes msg = rng.Bytes(len);
    const std::string want = Reference(msg);
    for (size_t cut = 0; cut <= len; ++cut) {
      ASSERT_OK_AND_ASSIGN(std::string got, Streamed(msg, {cut}));
      ASSERT_EQ(got, want) << "len " << len << " cut " << cut;
    }
  }
}

TEST_P(DigestPropertyTest, RandomMultiWaySplitsOf4097Bytes) {
  RequireStreaming();
  Rng rng(22);
  for (int round = 0; round < 24; ++round) {
    Bytes msg = rng.Bytes(4097);
    std::vector<size_t> cuts;
    size_t pieces = rng.Range(2, 16);
    for (size_t i = 0; i < pieces; ++i) cuts.push_back(rng.Range(0, 4097));
    ASSERT_OK_AND_ASSIGN(std::string got, Streamed(msg, cuts));
    ASSERT_EQ(got, Reference(msg)) << "round " << round;
  }
}

TEST_P(DigestPropertyTest, SizesUpTo4097MatchSoftware) {
  Rng rng(23);
  std::vector<size_t> sizes;
  for (size_t n = 0; n <= 260; ++n) sizes.push_back(n);  // every padding case
  for (size_t n = 261; n < 4090; n += 89) sizes.push_back(n);
  for (size_t n : {4095, 4096, 4097}) sizes.push_back(n);
  for (size_t n : sizes) {
    if (!streaming_ && cap_->max_chunk != 0 && n > cap_->max_chunk) break;
    Bytes msg = rng.Bytes(n);
    const std::string want = Reference(msg);
    ASSERT_OK_AND_ASSIGN(std::string one, OneShot(msg));
    ASSERT_EQ(one, want) << "one-shot, size " << n;
    if (streaming_) {
      ASSERT_OK_AND_ASSIGN(std::string streamed, Streamed(msg, {}));
      ASSERT_EQ(streamed, want) << "streamed, size " << n;
    }
  }
}

TEST_P(DigestPropertyTest, UnalignedInput) {
  Rng rng(24);
  Bytes msg = rng.Bytes(300);
  const std::string want = Reference(msg);
  for (size_t off = 1; off < 16; ++off) {
    Bytes buf(msg.size() + 16);
    std::copy(msg.begin(), msg.end(), buf.begin() + off);
    Bytes out(alg_->digest_len + 16);
    ASSERT_OK(backend_->DigestOneShot(
        alg_->id, absl::MakeConstSpan(buf).subspan(off, msg.size()),
        absl::MakeSpan(out).subspan(off, alg_->digest_len)));
    EXPECT_EQ(ToHex(absl::MakeConstSpan(out).subspan(off, alg_->digest_len)),
              want)
        << "offset " << off;
  }
}

TEST_P(DigestPropertyTest, CloneMidStreamContinuesIdentically) {
  RequireStreaming();
  Rng rng(25);
  Bytes msg = rng.Bytes(333);
  Bytes other = rng.Bytes(77);
  ASSERT_OK_AND_ASSIGN(auto d, backend_->NewDigest(alg_->id));
  ASSERT_OK(d->Update(absl::MakeConstSpan(msg).subspan(0, 130)));
  ASSERT_OK_AND_ASSIGN(auto clone, d->Clone());
  EXPECT_EQ(clone->backend(), backend_->name());
  // The clone takes a different tail first; the original must not see it.
  ASSERT_OK(clone->Update(other));
  ASSERT_OK(d->Update(absl::MakeConstSpan(msg).subspan(130)));
  Bytes a(alg_->digest_len), b(alg_->digest_len);
  ASSERT_OK(d->Final(absl::MakeSpan(a)));
  ASSERT_OK(clone->Final(absl::MakeSpan(b)));
  EXPECT_EQ(ToHex(a), Reference(msg));
  Bytes cloned_msg(msg.begin(), msg.begin() + 130);
  cloned_msg.insert(cloned_msg.end(), other.begin(), other.end());
  EXPECT_EQ(ToHex(b), Reference(cloned_msg));
}

TEST_P(DigestPropertyTest, ShortOutputIsOutOfRangeAndReuseWorks) {
  Rng rng(26);
  Bytes msg = rng.Bytes(100);
  Bytes small(alg_->digest_len - 1);
  EXPECT_THAT(backend_->DigestOneShot(alg_->id, msg, absl::MakeSpan(small)),
              StatusIs(absl::StatusCode::kOutOfRange));
  ASSERT_OK_AND_ASSIGN(auto d, backend_->NewDigest(alg_->id));
  ASSERT_OK(d->Update(msg));
  EXPECT_THAT(d->Final(absl::MakeSpan(small)),
              StatusIs(absl::StatusCode::kOutOfRange));
  // The failed Final consumed nothing.
  Bytes out(alg_->digest_len);
  ASSERT_OK(d->Final(absl::MakeSpan(out)));
  EXPECT_EQ(ToHex(out), Reference(msg));
  // Init after Final restarts the hash.
  Bytes msg2 = rng.Bytes(64);
  ASSERT_OK(d->Init());
  ASSERT_OK(d->Update(msg2));
  ASSERT_OK(d->Final(absl::MakeSpan(out)));
  EXPECT_EQ(ToHex(out), Reference(msg2));
}

// The largest single update the backend declares (max_chunk), or 1 MiB when
// it declares no limit, one-shot and in one update.
TEST_P(DigestPropertyTest, LargestSingleUpdate) {
  size_t n = cap_->max_chunk != 0 && cap_->max_chunk < (1u << 20)
                 ? static_cast<size_t>(cap_->max_chunk)
                 : size_t{1} << 20;
  Rng rng(27);
  Bytes msg = rng.Bytes(n);
  const std::string want = Reference(msg);
  ASSERT_OK_AND_ASSIGN(std::string one, OneShot(msg));
  EXPECT_EQ(one, want);
  if (streaming_) {
    ASSERT_OK_AND_ASSIGN(std::string streamed, Streamed(msg, {}));
    EXPECT_EQ(streamed, want);
  }
}

TEST_P(DigestPropertyTest, ReportsItsBackend) {
  ASSERT_OK_AND_ASSIGN(auto d, backend_->NewDigest(alg_->id));
  EXPECT_EQ(d->backend(), backend_->name());
  EXPECT_EQ(d->info().id, alg_->id);
}

INSTANTIATE_TEST_SUITE_P(
    Registry, DigestPropertyTest,
    ::testing::ValuesIn(SharedBackendAlgs(Family::kDigest)), BackendAlgName);

}  // namespace
}  // namespace accelcrypt
