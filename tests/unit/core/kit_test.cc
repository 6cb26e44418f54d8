// SPDX-License-Identifier: Apache-2.0
// The backend kit (accelcrypt/kit/): one Status -> ABI mapping whose
// authentication-failure convention the core's FromAbi reads back, the
// guard that turns exceptions into codes, and message writing that never
// overruns the ABI's buffer.
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "accelcrypt/kit/abi_error.h"
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
  EXPECT_EQ(kit::WriteAbiErrorf(&err, ACCELCRYPT_ERR_UNAVAILABLE, "%s %d",
                                "dev", 7),
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
  EXPECT_EQ(kit::Guard("mine", &err,
                       []() -> absl::Status {
                         throw std::runtime_error("boom");
                       }),
            ACCELCRYPT_ERR_INTERNAL);
  EXPECT_STREQ(err.message, "mine: unexpected exception");
  EXPECT_EQ(kit::Guard("mine", &err,
                       [] { return kit::AuthFailedError("tag"); }),
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

}  // namespace
}  // namespace accelcrypt
