// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_CORE_ROUTER_H_
#define ACCELCRYPT_CORE_ROUTER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/backend.h"
#include "core/cipher.h"
#include "core/config.h"
#include "core/digest.h"
#include "core/registry.h"
#include "core/stats.h"

namespace accelcrypt {

// Router chooses the backend for each operation and hides device failures:
//  - candidates per algorithm: `route.<alg>` from the config, else the
//    registry's priority order, restricted to backends that declare `alg`;
//  - a device error (kUnavailable, kResourceExhausted) re-runs the operation
//    on the next candidate: one-shot ops always, ciphers when the state is
//    portable (or nothing was processed yet), GCM and digests while the
//    message so far fits `replay_max` bytes (replayed on the next backend);
//    caller errors are returned as they are;
//  - after `breaker_threshold` consecutive device errors a backend is out of
//    rotation for `breaker_cooldown_ms`, then one probe decides;
//  - a call made from inside a backend (thread-local guard) is never routed
//    back into that same backend.
// Objects it returns count ops/bytes in Stats and report backend(). The
// router is thread-safe and outlives every object it returns.
class Router {
 public:
  static absl::StatusOr<std::unique_ptr<Router>> Create(
      const Registry* registry, const Config& config, Stats* stats);
  ~Router();

  // Supports is true when some backend declares `alg`.
  bool Supports(accelcrypt_alg alg) const;
  // Candidates lists backend names for `alg` in routing order.
  std::vector<std::string> Candidates(accelcrypt_alg alg) const;

  absl::StatusOr<std::unique_ptr<Cipher>> NewCipher(accelcrypt_alg alg);
  absl::StatusOr<std::unique_ptr<Digest>> NewDigest(accelcrypt_alg alg);
  absl::Status DigestOneShot(accelcrypt_alg alg, absl::Span<const uint8_t> data,
                             absl::Span<uint8_t> out);
  // RandomBytes fills `out` from the first RNG_RANDOM backend that works.
  absl::Status RandomBytes(absl::Span<uint8_t> out);
  // Entropy fills `out` from the first RNG_ENTROPY backend that works and
  // returns the entropy bits it vouches for.
  absl::StatusOr<size_t> Entropy(absl::Span<uint8_t> out);

  // Internal interface for the routed objects (core/internal only).
  struct Slot;
  // Candidate lists live inline: choosing a route allocates nothing.
  using SlotList = absl::InlinedVector<Slot*, 8>;
  Slot* slot(size_t i) const { return slots_[i].get(); }
  size_t num_slots() const { return slots_.size(); }
  // Order returns the candidate slots for `alg`, skipping backends whose
  // breaker is open (unless every one is) and the backend this thread is
  // currently inside.
  void Order(const AlgorithmInfo& alg, SlotList* out) const;
  void RecordSuccess(Slot* slot);
  void RecordDeviceError(Slot* slot, const AlgorithmInfo& alg);
  Stats* stats() const { return stats_; }

 private:
  Router() = default;
  template <typename Fn>
  absl::Status RunOneShot(const AlgorithmInfo& info, uint64_t n_bytes,
                          Fn&& fn);
  const Registry* registry_ = nullptr;
  size_t replay_max_ = 1024;
  Stats* stats_ = nullptr;
  uint64_t breaker_threshold_ = 5;
  uint64_t breaker_cooldown_ns_ = 1000000000ull;
  std::vector<std::unique_ptr<Slot>> slots_;
  // Per algorithm (identity-table index): candidate slot indices in order.
  std::vector<std::vector<size_t>> routes_;
};

// Router::Slot is a backend as the router sees it: breaker state and stats
// slot. Public so routed objects in core can use it.
struct Router::Slot {
  Backend* backend;
  size_t stats_slot;
  std::atomic<uint64_t> consecutive_errors{0};
  std::atomic<uint64_t> open_until_ns{0};  // 0 = closed
};

// BackendGuard marks the current thread as executing inside `backend` for
// its lifetime, so re-entrant calls are not routed back into it.
class BackendGuard {
 public:
  explicit BackendGuard(const Backend* backend);
  ~BackendGuard();
  static bool Inside(const Backend* backend);

 private:
  const Backend* previous_;
};

}  // namespace accelcrypt

#endif  // ACCELCRYPT_CORE_ROUTER_H_
