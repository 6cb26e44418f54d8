// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_TESTS_PKCS11_TOKEN_FIXTURE_H_
#define ACCELCRYPT_TESTS_PKCS11_TOKEN_FIXTURE_H_

#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/pkey.h"

namespace accelcrypt::testing {

// TokenFixture is one initialised PKCS#11 token for a test binary (its own
// temporary directory, removed on destruction) that the client backend's
// suites (pkcs11_client_*_test.cc, pkey_vectors_test.cc) run against:
// SoftHsm (softhsm_fixture.h) or AccelcryptToken
// (tests/pkcs11/client_backend/accelcrypt_token.h).
class TokenFixture {
 public:
  virtual ~TokenFixture() = default;
  // The PKCS#11 module, the token's label and its user PIN.
  virtual std::string module() const = 0;
  virtual std::string label() const = 0;
  virtual std::string pin() const = 0;
  virtual const std::string& dir() const = 0;
  // Overrides loads the PKCS#11 client backend on this token (PIN from a
  // file) ahead of software.
  virtual std::map<std::string, std::string> Overrides() const = 0;
  // Import puts `key` on the token as a token key pair sharing CKA_LABEL
  // `label` and CKA_ID `id_hex`, from another process, as an administrator
  // would.
  virtual absl::Status Import(const KeyMaterial& key, const std::string& label,
                              const std::string& id_hex) const = 0;
  // Whether CKM_RSA_PKCS_OAEP with SHA-256/MGF1-SHA-256 and a label runs on
  // the token (v2.40 allows it; SoftHSMv2 refuses it at C_*Init).
  virtual bool oaep_sha2_and_label() const = 0;
};

// CreateTokenFixture and TokenFixtureRequired are defined once per test
// binary (softhsm_token.cc for SoftHSMv2;
// tests/pkcs11/client_backend/accelcrypt_token_factory.cc for
// accelcrypt-pkcs11.so). An error from CreateTokenFixture says why there is
// no token. TokenFixtureRequired says what the suites do then: fail (a token
// built with the tests) or skip with that reason (an optional package).
absl::StatusOr<std::unique_ptr<TokenFixture>> CreateTokenFixture();
bool TokenFixtureRequired();

}  // namespace accelcrypt::testing

#endif  // ACCELCRYPT_TESTS_PKCS11_TOKEN_FIXTURE_H_
