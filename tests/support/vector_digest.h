// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_TESTS_SUPPORT_VECTOR_DIGEST_H_
#define ACCELCRYPT_TESTS_SUPPORT_VECTOR_DIGEST_H_

#include <openssl/evp.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "accelcrypt/backend.h"

namespace accelcrypt::testing {

// VectorDigest hashes `msg` with libcrypto (the tests' own reference) under
// the digest a CAVP file names ("SHA-256", "SHA256", ...), and sets *id to
// the core's algorithm id for it. Unknown names: *id = 0 and an empty result.
inline std::vector<uint8_t> VectorDigest(const std::string& name,
                                         const std::vector<uint8_t>& msg,
                                         accelcrypt_alg* id) {
  std::string n = name;
  n.erase(std::remove(n.begin(), n.end(), '-'), n.end());
  const struct {
    const char* name;
    accelcrypt_alg id;
  } kMds[] = {{"SHA1", ACCELCRYPT_ALG_SHA1},
              {"SHA224", ACCELCRYPT_ALG_SHA224},
              {"SHA256", ACCELCRYPT_ALG_SHA256},
              {"SHA384", ACCELCRYPT_ALG_SHA384},
              {"SHA512", ACCELCRYPT_ALG_SHA512}};
  for (const auto& md : kMds) {
    if (n != md.name) continue;
    *id = md.id;
    std::vector<uint8_t> out(EVP_MAX_MD_SIZE);
    unsigned int len = 0;
    EVP_Digest(msg.data(), msg.size(), out.data(), &len,
               EVP_get_digestbyname(md.name), nullptr);
    out.resize(len);
    return out;
  }
  *id = 0;
  return {};
}

}  // namespace accelcrypt::testing

#endif  // ACCELCRYPT_TESTS_SUPPORT_VECTOR_DIGEST_H_
