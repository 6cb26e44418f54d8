// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_CORE_BACKEND_H_
#define ACCELCRYPT_CORE_BACKEND_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "accelcrypt/backend.h"
#include "core/cipher.h"
#include "core/digest.h"

namespace accelcrypt {

class Config;
namespace internal {
struct HostState;
}  // namespace internal

// Backend is one registered backend: a plugin-ABI descriptor (from a loaded
// module or linked in) plus its instance. It turns the C tables into the C++
// family interfaces. Thread-safe; outlives every object it creates only if
// the registry keeps it (the registry does, for its own lifetime).
class Backend {
 public:
  // Create checks the descriptor's version and size, calls its init with a
  // host view of `config`, and reads its capabilities. `dl_handle` (may be
  // null) is closed on destruction. kUnavailable when the backend declines
  // (device absent); kFailedPrecondition for an ABI mismatch.
  static absl::StatusOr<std::unique_ptr<Backend>> Create(
      const accelcrypt_backend_desc* desc, void* dl_handle,
      const Config* config, std::string origin);
  ~Backend();
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  std::string_view name() const { return name_; }
  std::string_view version() const { return version_; }
  // origin is the path the module was loaded from, or "built-in".
  std::string_view origin() const { return origin_; }
  std::string Describe() const;

  // Capability returns the declared capability for `alg`, or nullptr.
  const accelcrypt_capability* Capability(accelcrypt_alg alg) const;
  absl::Span<const accelcrypt_capability> capabilities() const {
    return caps_;
  }
  bool hardware() const;

  // Disable drops `alg` from the capabilities (a failed self-test).
  void Disable(accelcrypt_alg alg);

  // NewCipher/NewDigest create a raw backend object (no routing, no stats).
  // kUnimplemented when `alg` is not declared.
  absl::StatusOr<std::unique_ptr<Cipher>> NewCipher(accelcrypt_alg alg) const;
  absl::StatusOr<std::unique_ptr<Digest>> NewDigest(accelcrypt_alg alg) const;
  // DigestOneShot hashes `data` into `out` (digest_len bytes).
  absl::Status DigestOneShot(accelcrypt_alg alg, absl::Span<const uint8_t> data,
                             absl::Span<uint8_t> out) const;
  absl::Status RandomBytes(absl::Span<uint8_t> out) const;
  // Entropy fills `out` from the noise source and returns the min-entropy
  // (bits) the backend vouches for.
  absl::StatusOr<size_t> Entropy(absl::Span<uint8_t> out) const;

 private:
  Backend() = default;
  const accelcrypt_backend_desc* desc_ = nullptr;
  void* dl_handle_ = nullptr;
  void* instance_ = nullptr;
  accelcrypt_host host_{};
  std::unique_ptr<internal::HostState> host_state_;
  std::string name_, version_, origin_;
  std::vector<accelcrypt_capability> caps_;
  const accelcrypt_cipher_table* cipher_ = nullptr;
  const accelcrypt_digest_table* digest_ = nullptr;
  const accelcrypt_rng_table* rng_ = nullptr;
};

// RawCipherView is the plugin-ABI table and context behind a Cipher made by
// Backend::NewCipher. The router's update path calls the table directly
// through it (one indirect call instead of two virtual ones).
struct RawCipherView {
  const accelcrypt_cipher_table* table = nullptr;
  accelcrypt_cipher_ctx* ctx = nullptr;
};

// RawView returns the view of `cipher` when Backend::NewCipher made it,
// otherwise an empty view. Valid while `cipher` lives.
RawCipherView RawView(Cipher& cipher);

}  // namespace accelcrypt

#endif  // ACCELCRYPT_CORE_BACKEND_H_
