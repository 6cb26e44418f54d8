// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_CORE_CIPHER_H_
#define ACCELCRYPT_CORE_CIPHER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "accelcrypt/backend.h"
#include "core/algorithms.h"
#include "core/stats.h"

namespace accelcrypt {

// PartiallyOverlaps is true when the `len`-byte ranges at `in` and `out`
// share bytes without being the same buffer: what Cipher::Update and the
// direct transform forbid (in place is allowed). Unsigned differences, so
// two compares and no overflow.
inline bool PartiallyOverlaps(const void* in, const void* out, size_t len) {
  const uintptr_t gap =
      reinterpret_cast<uintptr_t>(out) - reinterpret_cast<uintptr_t>(in);
  return gap != 0 && (gap < len || 0 - gap < len);
}

// DirectUpdate is the raw per-call transform behind a Cipher (the plugin
// ABI's get_direct, accelcrypt_cipher_direct_fn): `fn(ctx, out, &out_len,
// out_size, in, in_len)` does what Update does, without the Cipher's
// layers, and returns 1; 0 only for input outside the transform's contract
// (a caller error: no fallback). The caller adds the bytes it hands to the
// transform to `*pending_bytes` (the operation's statistics) and, once that
// reaches kStatsFlushBytes, moves it into `*counter` (CountDirect). Empty
// (fn null) when there is no such path.
struct DirectUpdate {
  accelcrypt_cipher_direct_fn fn = nullptr;
  void* ctx = nullptr;
  uint64_t* pending_bytes = nullptr;
  Counter* counter = nullptr;  // may be null: no statistics
};

// CountDirect adds `n` bytes to a DirectUpdate's tally, keeping the shared
// cell live for long transfers.
inline void CountDirect(const DirectUpdate& d, uint64_t n) {
  uint64_t& pending = *d.pending_bytes;
  pending += n;
  if (pending >= kStatsFlushBytes && d.counter != nullptr) [[unlikely]] {
    d.counter->AddBytes(pending);
    pending = 0;
  }
}

// Cipher runs one raw AES mode (the plugin ABI's cipher contract): ECB and
// CBC take whole blocks, CFB128/OFB/CTR any length, GCM any length after its
// AAD. Padding and partial-block buffering live in CipherStream. Not
// thread-safe; one per operation. A failed call leaves the state as before.
class Cipher {
 public:
  virtual ~Cipher() = default;

  // Init sets direction, key and IV; resets all running state. Returns
  // kInvalidArgument for a wrong key or IV length.
  virtual absl::Status Init(bool encrypt, absl::Span<const uint8_t> key,
                            absl::Span<const uint8_t> iv) = 0;
  // Update transforms `in` into `out` (out.size() >= in.size(); in place
  // allowed). kFailedPrecondition before Init; kInvalidArgument for a
  // partial block in ECB/CBC.
  virtual absl::Status Update(absl::Span<const uint8_t> in,
                              absl::Span<uint8_t> out) = 0;
  // Aad feeds GCM additional data before any Update.
  virtual absl::Status Aad(absl::Span<const uint8_t> aad) = 0;
  // Final ends a GCM operation (computes the tag, or checks the one given
  // with SetTag: AuthFailedError on mismatch). No-op for other modes.
  virtual absl::Status Final() = 0;
  virtual absl::Status GetTag(absl::Span<uint8_t> out) = 0;
  virtual absl::Status SetTag(absl::Span<const uint8_t> tag) = 0;
  // GetState/SetState read and restore the portable state (chaining value
  // and position); kUnimplemented where the backend has none.
  virtual absl::StatusOr<accelcrypt_cipher_state> GetState() const = 0;
  virtual absl::Status SetState(const accelcrypt_cipher_state& state) = 0;
  // Clone deep-copies key and running state (EVP dupctx).
  virtual absl::StatusOr<std::unique_ptr<Cipher>> Clone() const = 0;

  // Direct returns the raw transform serving this operation now, for a
  // front end's update hot path, or an empty one (the default). It stays
  // valid until the next call on this object other than Update (Init,
  // Final, SetState, Aad, SetTag end it) and never outlives the object.
  // ECB/CBC: whole blocks only.
  virtual DirectUpdate Direct() { return {}; }

  virtual const AlgorithmInfo& info() const = 0;
  // backend names the backend serving the operation right now ("software",
  // "padlock", ...); may change after a fallback.
  virtual std::string_view backend() const = 0;
};

}  // namespace accelcrypt

#endif  // ACCELCRYPT_CORE_CIPHER_H_
