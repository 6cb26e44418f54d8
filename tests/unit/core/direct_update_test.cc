// SPDX-License-Identifier: Apache-2.0
// Cipher::Direct: the raw per-call transform the router hands a front end
// (the provider's update hot path). It must do exactly what Update does,
// appear only once the router has nothing left to decide, disappear at the
// next state change, never come from a backend without get_direct, and
// leave the statistics whole.
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "core/core.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/status_matchers.h"
#include "tests/support/test_env.h"

namespace accelcrypt {
namespace {

using ::accelcrypt::testing::MakeCore;
using ::accelcrypt::testing::Rng;
using ::accelcrypt::testing::TestBackendDir;
using Bytes = std::vector<uint8_t>;

std::unique_ptr<Core> SoftwareCore() {
  auto core = MakeCore({{"backends", "software"}, {"selftest", "0"}});
  EXPECT_TRUE(core.ok()) << core.status();
  return core.ok() ? *std::move(core) : nullptr;
}

uint64_t StatsBytes(Core& core, const std::string& backend,
                    const std::string& alg) {
  nlohmann::json j = nlohmann::json::parse(core.stats().ToJson());
  if (!j["backends"].contains(backend) ||
      !j["backends"][backend].contains(alg)) {
    return 0;
  }
  return j["backends"][backend][alg]["bytes"].get<uint64_t>();
}

// (backend, algorithm): every backend offering get_direct. A backend that
// does not serve the algorithm here (x86 without AES-NI, or not built)
// skips with the reason.
using DirectParam = std::tuple<std::string, accelcrypt_alg>;
class DirectUpdateTest : public ::testing::TestWithParam<DirectParam> {};

// Half the message through Update, the rest through the transform: the
// result equals a second cipher fed only through Update, and every byte is
// counted once the operation ends.
TEST_P(DirectUpdateTest, MatchesUpdateAndCountsEveryByte) {
  const std::string backend = std::get<0>(GetParam());
  const accelcrypt_alg alg = std::get<1>(GetParam());
  auto made = MakeCore({{"backends", backend}, {"selftest", "0"}});
  if (!made.ok() || !(*made)->router().Supports(alg)) {
    GTEST_SKIP() << backend << " does not serve this algorithm here";
  }
  std::unique_ptr<Core> core = *std::move(made);
  const AlgorithmInfo* info = FindAlgorithm(alg);
  ASSERT_NE(info, nullptr);
  Rng rng(7);
  const Bytes key = rng.Bytes(info->key_len);
  const Bytes iv = rng.Bytes(info->iv_len);
  const Bytes msg = rng.Bytes(16 * 64);
  Bytes want(msg.size()), got(msg.size());
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Cipher> ref,
                         core->router().NewCipher(info->id));
    ASSERT_OK(ref->Init(true, key, iv));
    for (size_t off = 0; off < msg.size(); off += 48) {
      const size_t n = std::min<size_t>(48, msg.size() - off);
      ASSERT_OK(ref->Update(absl::MakeConstSpan(msg).subspan(off, n),
                            absl::MakeSpan(want).subspan(off, n)));
    }
  }
  const uint64_t before = StatsBytes(*core, backend, std::string(info->name));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Cipher> c,
                       core->router().NewCipher(info->id));
  ASSERT_OK(c->Init(true, key, iv));
  // Nothing has gone through the backend yet: a fallback now would restart
  // from the IV, so there is no transform to hand out.
  EXPECT_EQ(c->Direct().fn, nullptr);
  ASSERT_OK(c->Update(absl::MakeConstSpan(msg).subspan(0, 48),
                      absl::MakeSpan(got).subspan(0, 48)));
  DirectUpdate d = c->Direct();
  ASSERT_NE(d.fn, nullptr) << info->name;
  ASSERT_NE(d.pending_bytes, nullptr);
  for (size_t off = 48; off < msg.size(); off += 48) {
    const size_t n = std::min<size_t>(48, msg.size() - off);
    size_t out_len = 0;
    ASSERT_EQ(d.fn(d.ctx, got.data() + off, &out_len, n, msg.data() + off, n),
              1);
    EXPECT_EQ(out_len, n);
    *d.pending_bytes += n;
  }
  EXPECT_EQ(got, want);
  ASSERT_OK(c->Final());
  EXPECT_EQ(StatsBytes(*core, backend, std::string(info->name)) - before,
            msg.size());
  // A new Init ends the transform until data flows again.
  ASSERT_OK(c->Init(true, key, iv));
  EXPECT_EQ(c->Direct().fn, nullptr);
}

INSTANTIATE_TEST_SUITE_P(
    Modes, DirectUpdateTest,
    ::testing::Combine(::testing::Values("software", "x86"),
                       ::testing::Values(ACCELCRYPT_ALG_AES_128_ECB,
                                         ACCELCRYPT_ALG_AES_128_CBC,
                                         ACCELCRYPT_ALG_AES_192_CFB128,
                                         ACCELCRYPT_ALG_AES_256_OFB,
                                         ACCELCRYPT_ALG_AES_128_CTR)),
    [](const ::testing::TestParamInfo<DirectParam>& p) {
      std::string name = std::get<0>(p.param) + "_" +
                         std::string(FindAlgorithm(std::get<1>(p.param))->name);
      for (char& ch : name) {
        if (ch == '-') ch = '_';
      }
      return name;
    });

TEST(DirectUpdate, NoneForGcm) {
  std::unique_ptr<Core> core = SoftwareCore();
  ASSERT_NE(core, nullptr);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Cipher> c,
                       core->router().NewCipher(ACCELCRYPT_ALG_AES_128_GCM));
  Bytes key(16, 1), iv(12, 2), msg(32, 3), out(32);
  ASSERT_OK(c->Init(true, key, iv));
  ASSERT_OK(c->Update(msg, absl::MakeSpan(out)));
  EXPECT_EQ(c->Direct().fn, nullptr);
}

// failing.so has no get_direct (and its device errors need the router's
// fallback): an operation served by it never gets a transform.
TEST(DirectUpdate, NoneFromABackendWithoutGetDirect) {
  auto core = MakeCore({{"backend_dir", TestBackendDir()},
                        {"backends", "failing,software"},
                        {"selftest", "0"}});
  ASSERT_OK(core.status());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Cipher> c,
                       (*core)->router().NewCipher(ACCELCRYPT_ALG_AES_128_CTR));
  Bytes key(16, 1), iv(16, 2), msg(32, 3), out(32);
  ASSERT_OK(c->Init(true, key, iv));
  ASSERT_OK(c->Update(msg, absl::MakeSpan(out)));
  ASSERT_EQ(c->backend(), "failing");
  EXPECT_EQ(c->Direct().fn, nullptr);
}

}  // namespace
}  // namespace accelcrypt
