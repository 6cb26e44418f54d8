// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_CORE_BACKEND_H_
#define ACCELCRYPT_CORE_BACKEND_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "accelcrypt/backend.h"
#include "core/cipher.h"
#include "core/digest.h"
#include "core/pkey.h"

namespace accelcrypt {

class Config;
class BackendKey;
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
  absl::Span<const accelcrypt_capability> capabilities() const { return caps_; }
  bool hardware() const;
  // TakesKeyMaterial is true when the backend declares `alg` and accepts
  // imported key material for it (RSA/DSA keys from software), for keys of
  // `bits` (0: any size).
  bool TakesKeyMaterial(accelcrypt_alg alg, size_t bits = 0) const;

  // Disable drops `alg` from the capabilities (a failed self-test).
  void Disable(accelcrypt_alg alg);

  // NewCipher/NewDigest create a raw backend object (no routing, no stats).
  // kUnimplemented when `alg` is not declared.
  absl::StatusOr<std::unique_ptr<Cipher>> NewCipher(accelcrypt_alg alg) const;
  absl::StatusOr<std::unique_ptr<Digest>> NewDigest(accelcrypt_alg alg) const;
  // DigestOneShot hashes `data` into `out` (digest_len bytes).
  absl::Status DigestOneShot(accelcrypt_alg alg, absl::Span<const uint8_t> data,
                             absl::Span<uint8_t> out) const;
  // RoutedDigestOneShot is DigestOneShot for the router's per-call path:
  // `info` must be a digest this backend declares (the router's routes are
  // built from the capabilities once registration, which alone disables
  // algorithms, is over) and `out` at least info.digest_len bytes; neither
  // is checked again.
  absl::Status RoutedDigestOneShot(const AlgorithmInfo& info,
                                   absl::Span<const uint8_t> data,
                                   absl::Span<uint8_t> out) const;
  // DigestDirect returns the backend's plain-CPU implementation of `alg`
  // over caller-owned state (the digest table's get_direct), or nullptr
  // when it has none, `alg` is not declared, or the table is malformed
  // (a state over kMaxDigestDirectState bytes, a missing function).
  static constexpr uint32_t kMaxDigestDirectState = 256;
  const accelcrypt_digest_direct* DigestDirect(accelcrypt_alg alg) const;
  absl::Status RandomBytes(absl::Span<uint8_t> out) const;
  // Entropy fills `out` from the noise source and returns the min-entropy
  // (bits) the backend vouches for.
  absl::StatusOr<size_t> Entropy(absl::Span<uint8_t> out) const;

  // LoadKey prepares `key` for `alg` (RSA_SIGN, RSA_CRYPT or DSA_SIGN) on
  // this backend (the backend's load_key: e.g. a token import). kUnimplemented
  // when `alg` is not declared or the backend cannot use this key (size, a
  // URI it does not own, key material without KEY_IMPORT); device errors as
  // kUnavailable/kResourceExhausted. `key` may be destroyed afterwards.
  absl::StatusOr<std::unique_ptr<BackendKey>> LoadKey(
      accelcrypt_alg alg, const KeyMaterial& key) const;

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
  const accelcrypt_pkey_table* rsa_ = nullptr;
  const accelcrypt_pkey_table* dsa_ = nullptr;
};

// DirectDigestMessage hashes `data` with the direct digest `d` on a stack
// state, in two updates split at `split` (clamped to the message), into
// `out` (the algorithm's digest size), and wipes the state. For self-tests,
// vector runs and one-shot front ends.
void DirectDigestMessage(const accelcrypt_digest_direct& d,
                         absl::Span<const uint8_t> data, size_t split,
                         uint8_t* out);

// BackendKey is a key prepared by one backend: the raw RSA/DSA operations of
// its plugin table (no routing, no stats). Thread-safe (backends serve one
// prepared key from several threads). Frees the backend's key on
// destruction; must not outlive its Backend.
class BackendKey {
 public:
  ~BackendKey();
  BackendKey(const BackendKey&) = delete;
  BackendKey& operator=(const BackendKey&) = delete;

  // Sign writes the signature into `out` and returns its length;
  // kOutOfRange when `out` is too small.
  absl::StatusOr<size_t> Sign(const PkeyParams& params,
                              absl::Span<const uint8_t> tbs,
                              absl::Span<uint8_t> out) const;
  // Verify returns OK, or kInvalidArgument with the AuthFailed detail for a
  // signature that does not verify.
  absl::Status Verify(const PkeyParams& params, absl::Span<const uint8_t> tbs,
                      absl::Span<const uint8_t> sig) const;
  // Encrypt/Decrypt (RSA_CRYPT) size their output as Sign does.
  absl::StatusOr<size_t> Encrypt(const PkeyParams& params,
                                 absl::Span<const uint8_t> in,
                                 absl::Span<uint8_t> out) const;
  absl::StatusOr<size_t> Decrypt(const PkeyParams& params,
                                 absl::Span<const uint8_t> in,
                                 absl::Span<uint8_t> out) const;
  std::string_view backend() const { return backend_; }
  accelcrypt_alg alg() const { return alg_; }

 private:
  friend class Backend;
  BackendKey() = default;
  const accelcrypt_pkey_table* table_ = nullptr;
  accelcrypt_pkey* key_ = nullptr;
  accelcrypt_alg alg_ = 0;
  std::string_view backend_;
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

// CapabilityNames names the flags of `cap` as `accelcrypt list` prints
// them ("hardware", "streaming" or "one-shot", "portable-state", the RSA
// paddings, "key-import", "offload", "cpu", "pass-through").
std::vector<std::string> CapabilityNames(const accelcrypt_capability& cap);

// BackendConfigValue is the value a backend named `backend` reads as `key`
// through its host's config_get: `backend.key`, else `key` from the global
// section unless `key` is one of the core's own settings.
std::optional<std::string> BackendConfigValue(const Config& config,
                                              std::string_view backend,
                                              std::string_view key);

}  // namespace accelcrypt

#endif  // ACCELCRYPT_CORE_BACKEND_H_
