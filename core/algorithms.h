// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_CORE_ALGORITHMS_H_
#define ACCELCRYPT_CORE_ALGORITHMS_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "absl/types/span.h"
#include "accelcrypt/backend.h"

namespace accelcrypt {

// kRsa and kDsa are the public-key families (ACCELCRYPT_FAMILY_RSA/DSA).
enum class Family { kCipher, kDigest, kRng, kRsa, kDsa };

enum class CipherMode { kNone, kEcb, kCbc, kCfb128, kOfb, kCtr, kGcm };

// AlgorithmInfo is one row of the identity table: everything the front ends
// need to publish an algorithm (OpenSSL names, PKCS#11 mechanism) and its
// sizes. Rows are static and live forever.
struct AlgorithmInfo {
  accelcrypt_alg id;
  Family family;
  // Canonical name, also the stats and config key: "AES-128-CBC", "SHA256".
  std::string_view name;
  // OpenSSL algorithm names, colon-separated, canonical first, as an
  // OSSL_ALGORITHM's algorithm_names (includes aliases and OIDs).
  std::string_view openssl_names;
  // Config/route key in lower case: "aes-128-cbc", "sha256".
  std::string_view key;
  CipherMode mode;
  size_t key_len;     // cipher key bytes
  size_t iv_len;      // cipher default IV bytes (0 for ECB, 12 for GCM)
  size_t block_len;   // cipher block bytes as OpenSSL reports it (1 for
                      // stream modes), digest input block bytes
  size_t digest_len;  // digest output bytes
  uint64_t ckm;       // PKCS#11 CKM_* mechanism, 0 when none
  size_t index;       // position in AllAlgorithms(), for dense arrays
};

// kNumAlgorithms is the identity table's number of rows, for tables sized
// at compile time (the provider's per-algorithm dispatch tables).
inline constexpr size_t kNumAlgorithms = 28;

// AllAlgorithms returns the identity table (kNumAlgorithms rows).
absl::Span<const AlgorithmInfo> AllAlgorithms();

// FindAlgorithm returns the row for `id`, or nullptr.
const AlgorithmInfo* FindAlgorithm(accelcrypt_alg id);

// FindAlgorithmByName matches the canonical name, the config key or any
// OpenSSL alias, case-insensitively. Returns nullptr when unknown.
const AlgorithmInfo* FindAlgorithmByName(std::string_view name);

// IsStreamMode is true for CFB128, OFB and CTR (any length, no padding).
bool IsStreamMode(CipherMode mode);

}  // namespace accelcrypt

#endif  // ACCELCRYPT_CORE_ALGORITHMS_H_
