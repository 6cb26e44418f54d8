// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_TESTS_PKCS11_CONFORMANCE_MECH_FIXTURE_H_
#define ACCELCRYPT_TESTS_PKCS11_CONFORMANCE_MECH_FIXTURE_H_

// The fixture and helpers shared by the symmetric-mechanism suites
// (mech_test.cc: known answers; mech_state_test.cc: operation-state rules
// and bad parameters): a read-write user session per test, one encrypt or
// decrypt and one digest operation driven single- or multi-part.

#include <p11-kit-1/p11-kit/pkcs11.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/pkcs11/conformance/conformance_fixture.h"
#include "tests/pkcs11/conformance/p11_harness.h"

namespace accelcrypt::p11test::mech {

using Bytes = std::vector<uint8_t>;

// Vec is the path of `rel` under tests/vectors/.
std::string Vec(const std::string& rel);

// Runs one encrypt or decrypt operation. chunk == 0: single part with the
// two-call convention (NULL output first); chunk > 0: C_*Update in pieces of
// `chunk` bytes, then C_*Final. Returns the first failing CK_RV.
CK_RV Crypt(CK_FUNCTION_LIST* f, CK_SESSION_HANDLE h, CK_MECHANISM* mech,
            CK_OBJECT_HANDLE key, bool encrypt, const Bytes& in, size_t chunk,
            Bytes* out);

// Digest runs one digest of `in` with mechanism `m`, single-part (chunk ==
// 0) or in C_DigestUpdate pieces of `chunk` bytes.
CK_RV Digest(CK_FUNCTION_LIST* f, CK_SESSION_HANDLE h, CK_MECHANISM_TYPE m,
             const Bytes& in, size_t chunk, Bytes* out);

class MechTest : public P11Test {
 protected:
  void SetUp() override {
    P11Test::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_CKR(CKR_OK, OpenUserRw(&h_));
  }
  CK_RV AesKey(const Bytes& value, CK_OBJECT_HANDLE* key) {
    return CreateSecretKey(h_, CKK_AES, value, key);
  }
  // Encrypts and decrypts every record of `file` single- and multi-part.
  void RunAesFile(const std::string& file, CK_MECHANISM_TYPE m);

  CK_SESSION_HANDLE h_ = 0;
};

}  // namespace accelcrypt::p11test::mech

#endif  // ACCELCRYPT_TESTS_PKCS11_CONFORMANCE_MECH_FIXTURE_H_
