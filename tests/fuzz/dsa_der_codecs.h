// SPDX-License-Identifier: Apache-2.0
// The DSA signature codecs under test (dsa_der_fuzz.cc), exported from the
// sources that keep them private (dsa_der_*_codec.cc).
#ifndef ACCELCRYPT_TESTS_FUZZ_DSA_DER_CODECS_H_
#define ACCELCRYPT_TESTS_FUZZ_DSA_DER_CODECS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace accelcrypt::fuzz {

// backends/pkcs11/pkey_pkcs11_client.cc: strict DER in, r||s out.
bool ClientDecodeDsa(const uint8_t* der, size_t n, size_t q_len,
                     std::vector<uint8_t>* rs);
std::vector<uint8_t> ClientEncodeDsa(const uint8_t* rs, size_t q_len);

// pkcs11/mech/pkey_ops.cc.
bool ModuleDerToRs(const uint8_t* der, size_t n, size_t q_len, uint8_t* out);
std::vector<uint8_t> ModuleRsToDer(const uint8_t* rs, size_t q_len);

}  // namespace accelcrypt::fuzz

#endif  // ACCELCRYPT_TESTS_FUZZ_DSA_DER_CODECS_H_
