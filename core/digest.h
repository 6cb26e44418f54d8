// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_CORE_DIGEST_H_
#define ACCELCRYPT_CORE_DIGEST_H_

#include <cstdint>
#include <memory>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/algorithms.h"

namespace accelcrypt {

// Digest hashes a message incrementally. Not thread-safe; one per operation.
class Digest {
 public:
  virtual ~Digest() = default;
  // Init restarts the hash (a new Digest is already initialised).
  virtual absl::Status Init() = 0;
  virtual absl::Status Update(absl::Span<const uint8_t> data) = 0;
  // Final writes info().digest_len bytes to `out` (kOutOfRange if smaller);
  // the object needs Init before reuse.
  virtual absl::Status Final(absl::Span<uint8_t> out) = 0;
  virtual absl::StatusOr<std::unique_ptr<Digest>> Clone() const = 0;
  virtual const AlgorithmInfo& info() const = 0;
  virtual std::string_view backend() const = 0;  // "padlock", "x86", ...
};

}  // namespace accelcrypt

#endif  // ACCELCRYPT_CORE_DIGEST_H_
