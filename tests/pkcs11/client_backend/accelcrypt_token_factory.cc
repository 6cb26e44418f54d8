// SPDX-License-Identifier: Apache-2.0
// The token of tests/backends/pkcs11's suites when built here:
// accelcrypt-pkcs11.so.
#include "tests/backends/pkcs11/token_fixture.h"
#include "tests/pkcs11/client_backend/accelcrypt_token.h"

namespace accelcrypt::testing {

absl::StatusOr<std::unique_ptr<TokenFixture>> CreateTokenFixture() {
  return AccelcryptToken::Create();
}

// The module is a build dependency of these tests: no token is a failure.
bool TokenFixtureRequired() { return true; }

}  // namespace accelcrypt::testing
