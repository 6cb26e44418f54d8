// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_TESTS_SUPPORT_STATUS_MATCHERS_H_
#define ACCELCRYPT_TESTS_SUPPORT_STATUS_MATCHERS_H_

#include <ostream>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accelcrypt::testing {

namespace internal {

inline const absl::Status& GetStatus(const absl::Status& status) {
  return status;
}
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

}  // namespace internal

// IsOk matches an OK absl::Status or absl::StatusOr<T>; on failure it prints
// the status.
MATCHER(IsOk, negation ? "is not OK" : "is OK") {
  const absl::Status& status = internal::GetStatus(arg);
  if (!status.ok()) *result_listener << "which is " << status.ToString();
  return status.ok();
}

// StatusIs(code) matches a Status or StatusOr<T> with that code;
// StatusIs(code, message_matcher) also matches the message.
MATCHER_P(StatusIs, code,
          std::string(negation ? "does not have" : "has") + " code " +
              absl::StatusCodeToString(code)) {
  const absl::Status& status = internal::GetStatus(arg);
  *result_listener << "which is " << status.ToString();
  return status.code() == code;
}

MATCHER_P2(StatusIs, code, message_matcher,
           std::string(negation ? "does not have" : "has") + " code " +
               absl::StatusCodeToString(code) + " and a message that " +
               ::testing::DescribeMatcher<std::string>(message_matcher,
                                                       negation)) {
  const absl::Status& status = internal::GetStatus(arg);
  *result_listener << "which is " << status.ToString();
  return status.code() == code &&
         ::testing::Matches(message_matcher)(std::string(status.message()));
}

// IsOkAndHolds(v) matches an OK absl::StatusOr<T> whose value equals v.
MATCHER_P(IsOkAndHolds, value,
          std::string(negation ? "is not OK or does not hold "
                               : "is OK and holds ") +
              ::testing::PrintToString(value)) {
  if (!arg.ok()) {
    *result_listener << "which is " << arg.status().ToString();
    return false;
  }
  *result_listener << "which holds " << ::testing::PrintToString(*arg);
  return *arg == value;
}

}  // namespace accelcrypt::testing

// ASSERT_OK_AND_ASSIGN(lhs, expr): fails the test when `expr` (a StatusOr)
// is not OK, otherwise moves its value into `lhs` (may be a declaration).
#define ACCELCRYPT_TEST_CONCAT_INNER_(a, b) a##b
#define ACCELCRYPT_TEST_CONCAT_(a, b) ACCELCRYPT_TEST_CONCAT_INNER_(a, b)
#define ASSERT_OK_AND_ASSIGN(lhs, expr) \
  ASSERT_OK_AND_ASSIGN_IMPL_(           \
      ACCELCRYPT_TEST_CONCAT_(accelcrypt_test_so_, __LINE__), lhs, expr)
// `tmp` is a name and `lhs` may be a declaration: neither can take the
// parentheses bugprone-macro-parentheses asks for.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define ASSERT_OK_AND_ASSIGN_IMPL_(tmp, lhs, expr)  \
  auto tmp = (expr);                                \
  ASSERT_TRUE(tmp.ok()) << tmp.status().ToString(); \
  lhs = std::move(tmp).value()
// NOLINTEND(bugprone-macro-parentheses)

#define ASSERT_OK(expr) ASSERT_THAT((expr), ::accelcrypt::testing::IsOk())
#define EXPECT_OK(expr) EXPECT_THAT((expr), ::accelcrypt::testing::IsOk())

#endif  // ACCELCRYPT_TESTS_SUPPORT_STATUS_MATCHERS_H_
