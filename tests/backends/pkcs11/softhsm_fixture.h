// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_TESTS_PKCS11_SOFTHSM_FIXTURE_H_
#define ACCELCRYPT_TESTS_PKCS11_SOFTHSM_FIXTURE_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/core.h"
#include "core/pkey.h"
#include "tests/backends/pkcs11/token_fixture.h"

namespace accelcrypt::testing {

// SoftHsm is a SoftHSMv2 token initialised for one test binary in a
// temporary directory (SOFTHSM2_CONF points there; library.reset_on_fork is
// on, as a real token behaves across fork), removed on destruction.
class SoftHsm : public TokenFixture {
 public:
  static constexpr char kModule[] = "/usr/lib/softhsm/libsofthsm2.so";
  static constexpr char kLabel[] = "accelcrypt-test";
  static constexpr char kPin[] = "4711-test";

  // Create initialises the token; an error says why (softhsm2 missing...).
  static absl::StatusOr<std::unique_ptr<SoftHsm>> Create();
  ~SoftHsm() override;

  std::string module() const override { return kModule; }
  std::string label() const override { return kLabel; }
  std::string pin() const override { return kPin; }
  bool oaep_sha2_and_label() const override { return false; }

  // Overrides is the configuration that loads the PKCS#11 client backend on
  // this token (PIN from a file) ahead of software.
  std::map<std::string, std::string> Overrides() const override;
  const std::string& dir() const override { return dir_; }
  // Import puts `key` (with its private part) on the token as a token key
  // pair (softhsm2-util --import: private and public key objects sharing
  // CKA_LABEL `label` and CKA_ID `id_hex`), as an administrator would.
  absl::Status Import(const KeyMaterial& key, const std::string& label,
                      const std::string& id_hex) const override;
  const std::string& pin_file() const { return pin_file_; }

 private:
  std::string dir_, pin_file_;
};

// RsaKey generates an RSA key of `bits` with libcrypto's default provider
// and returns it as KeyMaterial (all CRT parts).
KeyMaterial RsaKey(int bits);
// DsaKeyFromVectors returns a DSA key (L=2048, N=256) from
// tests/vectors/dsa/SigVer.rsp (the first passing record, which has X).
KeyMaterial DsaKeyFromVectors();
// PublicOnly strips the private parts.
KeyMaterial PublicOnly(const KeyMaterial& key);
// Sha256 hashes `data` with libcrypto.
std::vector<uint8_t> Sha256(const std::vector<uint8_t>& data);

}  // namespace accelcrypt::testing

#endif  // ACCELCRYPT_TESTS_PKCS11_SOFTHSM_FIXTURE_H_
