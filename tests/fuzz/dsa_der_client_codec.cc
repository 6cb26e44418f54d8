// SPDX-License-Identifier: Apache-2.0
// The PKCS#11 client backend's DSA signature codec (DER Dss-Sig-Value <->
// r||s) lives in an unnamed namespace of pkey_pkcs11_client.cc. This file
// compiles that source once more, for the fuzz target only, and exports the
// two functions under test; the target does not link the library's copy of
// the object (every symbol it would supply is defined here).
#include "backends/pkcs11/pkey_pkcs11_client.cc"  // NOLINT(build/include)

#include "tests/fuzz/dsa_der_codecs.h"

namespace accelcrypt::fuzz {

bool ClientDecodeDsa(const uint8_t* der, size_t n, size_t q_len,
                     std::vector<uint8_t>* rs) {
  return pkcs11_client::DecodeDsa(der, n, q_len, rs);
}

std::vector<uint8_t> ClientEncodeDsa(const uint8_t* rs, size_t q_len) {
  return pkcs11_client::EncodeDsa(rs, q_len);
}

}  // namespace accelcrypt::fuzz
