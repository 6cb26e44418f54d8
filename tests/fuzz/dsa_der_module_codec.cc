// SPDX-License-Identifier: Apache-2.0
// The PKCS#11 module's DSA signature codec (r||s <-> DER) lives in an
// unnamed namespace of pkcs11/mech/pkey_ops.cc; compiled once more here for
// the fuzz target, as dsa_der_client_codec.cc does for the client backend.
#include "pkcs11/mech/pkey_ops.cc"  // NOLINT(build/include)

#include "tests/fuzz/dsa_der_codecs.h"

namespace accelcrypt::fuzz {

bool ModuleDerToRs(const uint8_t* der, size_t n, size_t q_len, uint8_t* out) {
  return p11::internal::DerToRs(absl::MakeConstSpan(der, n), q_len, out);
}

std::vector<uint8_t> ModuleRsToDer(const uint8_t* rs, size_t q_len) {
  return p11::internal::RsToDer(absl::MakeConstSpan(rs, q_len),
                                absl::MakeConstSpan(rs + q_len, q_len));
}

}  // namespace accelcrypt::fuzz
