// SPDX-License-Identifier: Apache-2.0
// SHA-1, SHA-224 and SHA-256 digests of the x86 backend: buffering and
// padding (FIPS 180-4 §5.1.1) over the SHA-NI compression functions.
#ifndef ACCELCRYPT_BACKENDS_X86_SHA_H_
#define ACCELCRYPT_BACKENDS_X86_SHA_H_

#include <stddef.h>
#include <stdint.h>

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "accelcrypt/backend.h"
#include "backends/x86/cpu_features.h"

namespace accelcrypt::x86 {

// ShaState is the whole running state of one hash: plain data, so a copy of
// the bytes duplicates the hash (the direct digest's contract).
struct ShaState {
  uint32_t h[8];
  uint8_t buffer[64];
  uint64_t total_len;
  uint32_t buffer_len;
};

// ShaDirect returns the accelcrypt_digest_direct table of `alg` over a
// ShaState (SHA-NI compression), or nullptr for an algorithm not offered.
// The caller checks that the CPU has SHA-NI.
const accelcrypt_digest_direct* ShaDirect(accelcrypt_alg alg);

// ShaX86 hashes a message incrementally. Not thread-safe. Status codes:
// kUnimplemented (algorithm not offered), kInvalidArgument (NULL data with a
// length, output too small: kOutOfRange), kFailedPrecondition (update or
// final after final).
class ShaX86 {
 public:
  static absl::StatusOr<std::unique_ptr<ShaX86>> Create(
      accelcrypt_alg alg, const Implementations& impl);
  // DigestSize returns 20, 28 or 32, or 0 for an algorithm not offered.
  static constexpr size_t DigestSize(accelcrypt_alg alg) {
    switch (alg) {
      case ACCELCRYPT_ALG_SHA1:
        return 20;
      case ACCELCRYPT_ALG_SHA224:
        return 28;
      case ACCELCRYPT_ALG_SHA256:
        return 32;
    }
    return 0;
  }

  ~ShaX86();
  void Init();
  absl::Status Update(const uint8_t* data, size_t len);
  absl::Status Final(uint8_t* out, size_t out_len);
  std::unique_ptr<ShaX86> Clone() const;

 private:
  explicit ShaX86(accelcrypt_alg alg) : alg_(alg) {}

  accelcrypt_alg alg_;
  ShaState state_ = {};
  bool finished_ = false;
};

}  // namespace accelcrypt::x86

#endif  // ACCELCRYPT_BACKENDS_X86_SHA_H_
