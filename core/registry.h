// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_CORE_REGISTRY_H_
#define ACCELCRYPT_CORE_REGISTRY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/backend.h"
#include "core/config.h"

namespace accelcrypt {

// LoadEvent records what happened to one backend or algorithm at load time,
// for `accelcrypt list` and logs: declined (no device), ABI mismatch,
// self-test failure.
struct LoadEvent {
  std::string backend;    // backend name or module path
  std::string algorithm;  // empty for whole-backend events
  std::string message;
  bool ok;
  // declined: the backend found no device here (not an error).
  bool declined = false;
  // excluded: `backends` / `disable` kept the backend out.
  bool excluded = false;
};

// SelfTestMode says when the known-answer tests run (config `selftest`):
// kFirstUse (the default, `1` or `first-use`): each (backend, algorithm)
// pair's test runs in the router at that algorithm's first use on that
// backend, and a failure takes the backend out of that algorithm's routes
// for the life of the process; kLoad (`load`): every test at load, a failure
// drops the capability (and is a LoadEvent); kOff (`0`): none.
enum class SelfTestMode { kOff, kFirstUse, kLoad };

// Registry loads and owns the backends: the built-in ones (linked in, listed
// by the build) and every module found in the backend directories. Order:
// hardware backends first, then software, unless `backends` in the config
// gives the order. Immutable after Create; thread-safe for reads.
class Registry {
 public:
  // Create loads, version-checks and initialises every backend, and with
  // `selftest = load` self-tests them.
  // A backend that declines or fails is skipped and recorded as a LoadEvent;
  // Create itself fails only on a malformed config.
  static absl::StatusOr<std::unique_ptr<Registry>> Create(const Config& config);

  absl::Span<const std::unique_ptr<Backend>> backends() const {
    return backends_;
  }
  // Find returns the backend named `name`, or nullptr.
  Backend* Find(std::string_view name) const;
  absl::Span<const LoadEvent> events() const { return events_; }
  // backend_dirs are the directories that were searched.
  absl::Span<const std::string> backend_dirs() const { return dirs_; }
  SelfTestMode selftest_mode() const { return selftest_mode_; }

  // checker is the CPU backend that checks offloaded RSA/DSA results: the
  // software backend, also when `backends`/`disable` keep it from serving
  // (it is then loaded for that alone and never routed). Null only when it
  // cannot initialise.
  const Backend* checker() const {
    const Backend* b = Find("software");
    return b != nullptr ? b : checker_.get();
  }

  // SelfTest runs the built-in known-answer test for `alg` on `backend`.
  static absl::Status SelfTest(const Backend& backend, accelcrypt_alg alg);

 private:
  Registry() = default;
  std::vector<std::unique_ptr<Backend>> backends_;
  std::vector<LoadEvent> events_;
  std::vector<std::string> dirs_;
  SelfTestMode selftest_mode_ = SelfTestMode::kFirstUse;
  std::unique_ptr<Backend> checker_;
};

}  // namespace accelcrypt

#endif  // ACCELCRYPT_CORE_REGISTRY_H_
