// SPDX-License-Identifier: Apache-2.0
// The backend kit (accelcrypt/kit/): one Status -> ABI mapping whose
// authentication-failure convention the core's FromAbi reads back, the
// guard that turns exceptions into codes, and message writing that never
// overruns the ABI's buffer.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <new>
#include <stdexcept>
#include <string>

#include "accelcrypt/kit/abi_error.h"
#include "accelcrypt/kit/files.h"
#include "accelcrypt/kit/status.h"
#include "core/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accelcrypt {
namespace {

TEST(KitTest, EveryStatusCodeMapsAndReadsBack) {
  const struct {
    absl::Status status;
    accelcrypt_status code;
  } cases[] = {
      {absl::OkStatus(), ACCELCRYPT_OK},
      {absl::InvalidArgumentError("a"), ACCELCRYPT_ERR_INVALID_ARGUMENT},
      {absl::FailedPreconditionError("b"), ACCELCRYPT_ERR_FAILED_PRECONDITION},
      {absl::OutOfRangeError("c"), ACCELCRYPT_ERR_OUT_OF_RANGE},
      {kit::AuthFailedError("d"), ACCELCRYPT_ERR_AUTH_FAILED},
      {absl::UnimplementedError("e"), ACCELCRYPT_ERR_UNIMPLEMENTED},
      {absl::UnavailableError("f"), ACCELCRYPT_ERR_UNAVAILABLE},
      {absl::ResourceExhaustedError("g"), ACCELCRYPT_ERR_RESOURCE_EXHAUSTED},
      {absl::InternalError("h"), ACCELCRYPT_ERR_INTERNAL},
      {absl::DataLossError("i"), ACCELCRYPT_ERR_INTERNAL},
  };
  for (const auto& c : cases) {
    accelcrypt_error err = {};
    EXPECT_EQ(kit::ToAbi(c.status, &err), c.code) << c.status;
    if (c.status.ok()) continue;
    EXPECT_EQ(err.code, c.code);
    EXPECT_EQ(std::string(err.message), std::string(c.status.message()));
    // What the core makes of it again: same code, and an authentication
    // failure is one for the core too.
    absl::Status back = FromAbi(err.code, err.message);
    EXPECT_EQ(kit::IsAuthFailed(back), c.code == ACCELCRYPT_ERR_AUTH_FAILED);
    EXPECT_EQ(GetStatusDetail(back) == StatusDetail::kAuthFailed,
              c.code == ACCELCRYPT_ERR_AUTH_FAILED);
    if (c.code != ACCELCRYPT_ERR_INTERNAL) {
      EXPECT_EQ(kit::AbiCode(back), c.code);
    }
  }
  // The core's own AuthFailedError is the kit's.
  EXPECT_TRUE(kit::IsAuthFailed(AuthFailedError("x")));
  EXPECT_EQ(ToAbi(AuthFailedError("x"), nullptr), ACCELCRYPT_ERR_AUTH_FAILED);
  // Plain kInvalidArgument is not an authentication failure.
  EXPECT_FALSE(kit::IsAuthFailed(absl::InvalidArgumentError("x")));
}

TEST(KitTest, MessagesAreCutToTheBufferAndTerminated) {
  accelcrypt_error err;
  std::memset(&err, 'z', sizeof(err));
  const std::string long_message(2 * sizeof(err.message), 'm');
  EXPECT_EQ(kit::WriteAbiError(ACCELCRYPT_ERR_INTERNAL, long_message, &err),
            ACCELCRYPT_ERR_INTERNAL);
  EXPECT_EQ(std::string(err.message),
            std::string(sizeof(err.message) - 1, 'm'));
  EXPECT_EQ(
      kit::WriteAbiErrorf(&err, ACCELCRYPT_ERR_UNAVAILABLE, "%s %d", "dev", 7),
      ACCELCRYPT_ERR_UNAVAILABLE);
  EXPECT_EQ(err.code, ACCELCRYPT_ERR_UNAVAILABLE);
  EXPECT_STREQ(err.message, "dev 7");
  EXPECT_EQ(kit::WriteAbiError(ACCELCRYPT_ERR_INTERNAL, "x", nullptr),
            ACCELCRYPT_ERR_INTERNAL);
}

TEST(KitTest, GuardTurnsExceptionsIntoCodes) {
  accelcrypt_error err = {};
  EXPECT_EQ(kit::Guard("mine", &err,
                       []() -> absl::Status { throw std::bad_alloc(); }),
            ACCELCRYPT_ERR_RESOURCE_EXHAUSTED);
  EXPECT_STREQ(err.message, "mine: out of memory");
  EXPECT_EQ(
      kit::Guard("mine", &err,
                 []() -> absl::Status { throw std::runtime_error("boom"); }),
      ACCELCRYPT_ERR_INTERNAL);
  EXPECT_STREQ(err.message, "mine: unexpected exception");
  EXPECT_EQ(
      kit::Guard("mine", &err, [] { return kit::AuthFailedError("tag"); }),
      ACCELCRYPT_ERR_AUTH_FAILED);
  EXPECT_STREQ(err.message, "tag");
  EXPECT_EQ(kit::Guard("mine", &err, [] { return absl::OkStatus(); }),
            ACCELCRYPT_OK);
}

TEST(KitTest, ModeNames) {
  EXPECT_STREQ(kit::ModeName(ACCELCRYPT_MODE_CBC), "CBC");
  EXPECT_STREQ(kit::ModeName(ACCELCRYPT_MODE_GCM), "GCM");
  EXPECT_STREQ(kit::ModeName(0), "?");
}

class KitFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/accelcrypt-kit-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  // Entries of the directory (a failed or finished write leaves only the
  // files it named).
  size_t Entries() const {
    size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) {
      (void)e;
      ++n;
    }
    return n;
  }
  std::string dir_;
};

TEST_F(KitFilesTest, WriteReplacesWithTheExactModeAndLeavesNothingElse) {
  const std::string path = dir_ + "/f";
  ASSERT_TRUE(kit::WriteFileAtomically(path, "one", {.mode = 0600}));
  ASSERT_TRUE(kit::WriteFileAtomically(path, "two", {.mode = 0640}));
  std::string got;
  ASSERT_TRUE(kit::ReadFile(path, &got));
  EXPECT_EQ(got, "two");
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(Entries(), 1u);
  // `like`: the mode of another file.
  ASSERT_EQ(chmod(path.c_str(), 0604), 0);
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  ASSERT_TRUE(
      kit::WriteFileAtomically(path, "three", {.like = &st, .sync = true}));
  struct stat after;
  ASSERT_EQ(stat(path.c_str(), &after), 0);
  EXPECT_EQ(after.st_mode & 07777, 0604u);
}

TEST_F(KitFilesTest, NoReplaceRefusesATakenName) {
  const std::string path = dir_ + "/f";
  ASSERT_TRUE(kit::WriteFileAtomically(path, "first", {.no_replace = true}));
  EXPECT_FALSE(kit::WriteFileAtomically(path, "second", {.no_replace = true}));
  EXPECT_EQ(errno, EEXIST);
  std::string got;
  ASSERT_TRUE(kit::ReadFile(path, &got));
  EXPECT_EQ(got, "first");
  EXPECT_EQ(Entries(), 1u);
}

TEST_F(KitFilesTest, AFailedWriteLeavesNothing) {
  EXPECT_FALSE(kit::WriteFileAtomically(dir_ + "/no/such/dir/f", "x"));
  EXPECT_EQ(errno, ENOENT);
  // A name that is a directory: the rename fails, the temporary goes.
  ASSERT_EQ(mkdir((dir_ + "/d").c_str(), 0700), 0);
  ASSERT_EQ(mkdir((dir_ + "/d/inner").c_str(), 0700), 0);
  EXPECT_FALSE(kit::WriteFileAtomically(dir_ + "/d", "x"));
  EXPECT_EQ(Entries(), 1u);
}

TEST_F(KitFilesTest, ReadOptions) {
  const std::string path = dir_ + "/f";
  ASSERT_TRUE(kit::WriteFileAtomically(path, "0123456789", {.mode = 0644}));
  std::string got;
  ASSERT_TRUE(kit::ReadFile(path, &got, {.max_bytes = 4}));
  EXPECT_EQ(got, "0123");
  ASSERT_TRUE(kit::ReadFile(path, &got, {.trusted_only = true}));
  EXPECT_EQ(got, "0123456789");
  ASSERT_EQ(chmod(path.c_str(), 0666), 0);
  EXPECT_FALSE(kit::ReadFile(path, &got, {.trusted_only = true}));
  EXPECT_EQ(errno, EPERM);
  EXPECT_TRUE(kit::ReadFile(path, &got));
  const std::string link = dir_ + "/l";
  ASSERT_EQ(symlink(path.c_str(), link.c_str()), 0);
  EXPECT_TRUE(kit::ReadFile(link, &got));
  EXPECT_FALSE(kit::ReadFile(link, &got, {.no_follow = true}));
  EXPECT_EQ(errno, ELOOP);
  EXPECT_FALSE(kit::ReadFile(dir_, &got));
  EXPECT_EQ(errno, EISDIR);
  EXPECT_FALSE(kit::ReadFile(dir_ + "/missing", &got));
  EXPECT_EQ(errno, ENOENT);
}

}  // namespace
}  // namespace accelcrypt
