// SPDX-License-Identifier: Apache-2.0
// The token of tests/backends/pkcs11's suites: SoftHSMv2.
#include "tests/backends/pkcs11/softhsm_fixture.h"
#include "tests/backends/pkcs11/token_fixture.h"

namespace accelcrypt::testing {

absl::StatusOr<std::unique_ptr<TokenFixture>> CreateTokenFixture() {
  return SoftHsm::Create();
}

// softhsm2 is an optional package: without it the suites skip.
bool TokenFixtureRequired() { return false; }

}  // namespace accelcrypt::testing
