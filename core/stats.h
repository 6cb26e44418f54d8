// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_CORE_STATS_H_
#define ACCELCRYPT_CORE_STATS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "core/algorithms.h"

namespace accelcrypt {

// Counter is one (backend, algorithm) cell. Relaxed atomics: the hot path
// only increments.
struct Counter {
  std::atomic<uint64_t> ops{0};
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint64_t> errors{0};
  std::atomic<uint64_t> fallbacks{0};  // ops moved *away* from this backend
  void Add(uint64_t n_bytes) {
    ops.fetch_add(1, std::memory_order_relaxed);
    bytes.fetch_add(n_bytes, std::memory_order_relaxed);
  }
  void AddBytes(uint64_t n_bytes) {
    bytes.fetch_add(n_bytes, std::memory_order_relaxed);
  }
};

// Stats holds a dense table of counters, one row per backend slot and one
// column per algorithm of the identity table. Backend slots are registered
// at load time (not thread-safe then); Cell is lock-free and allocation-free.
class Stats {
 public:
  static constexpr size_t kMaxBackends = 16;
  Stats();

  // RegisterBackend returns the slot for `name` (creating it).
  size_t RegisterBackend(std::string_view name);
  Counter& Cell(size_t backend_slot, const AlgorithmInfo& alg) {
    return cells_[backend_slot * num_algs_ + alg.index];
  }

  // ToJson renders every non-zero counter:
  // {"pid":N,"process":"...","backends":{"software":{"AES-128-CBC":
  //  {"ops":..,"bytes":..,"errors":..,"fallbacks":..}}}}
  std::string ToJson() const;
  // WriteToDir writes ToJson() to dir/accelcrypt-<pid>-<seq>.json atomically
  // (temp file + rename).
  absl::Status WriteToDir(const std::string& dir) const;

 private:
  size_t num_algs_;
  std::vector<std::string> names_;
  std::unique_ptr<Counter[]> cells_;
};

}  // namespace accelcrypt

#endif  // ACCELCRYPT_CORE_STATS_H_
