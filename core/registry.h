// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_CORE_REGISTRY_H_
#define ACCELCRYPT_CORE_REGISTRY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "core/algorithms.h"
#include "core/backend.h"
#include "core/config.h"
#include "core/internal/os_mutex.h"

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
  // deferred: a backend whose load hints defer its start (`defer=`): not
  // started at load; the router starts it at first use (PendingBackend).
  bool deferred = false;
};

// PendingBackend is a backend module the router may still start: one whose
// load hints defer its start to the first operation of a family it serves
// (`defer=rsa,dsa`, accelcrypt/backend.h: the PKCS#11 client backend, whose
// token module may itself use OpenSSL and so must never be initialised
// while OpenSSL loads its configuration or an ENGINE), and such a backend
// that failed to start, retried every `backend_retry_s` seconds.
struct PendingBackend {
  std::string path;  // the module file
  std::string name;  // its hinted name
  // families: bit (1 << Family) per family whose first routed operation
  // starts it.
  uint32_t families = 0;
  // load_failure: set when it was started at load (`deferred_start =
  // load`) and failed; OK when it was not tried yet.
  absl::Status load_failure;
};

// DeferredStartMode is `deferred_start`: kFirstUse (`first-use`, the
// default) starts a deferred backend at the first routed operation of its
// families; kLoad (`load`) starts it at load like any other (the
// `accelcrypt` command, so that list, selftest and calibrate show and
// measure the token) and keeps it pending for retries when it fails.
enum class DeferredStartMode { kFirstUse, kLoad };

// FamilyBit is the PendingBackend::families bit of `family`.
constexpr uint32_t FamilyBit(Family family) {
  return 1u << static_cast<uint32_t>(family);
}

// ReportToOperator writes one line (no trailing newline in `line`) where a
// daemon's operator sees it: standard error and syslog(3) (LOG_ERR, the
// process's own openlog identity and facility). Never give it a secret.
void ReportToOperator(const std::string& line);

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
// gives the order. Immutable after Create (backends started later, by
// StartPending, are kept apart); thread-safe for reads.
class Registry {
 public:
  // Create loads, version-checks and initialises every backend, and with
  // `selftest = load` self-tests them.
  // A backend that declines or fails is skipped and recorded as a LoadEvent;
  // Create itself fails only on a malformed config. A backend whose load
  // hints defer its start is not initialised here unless `deferred_start
  // = load`: it is left pending().
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
  DeferredStartMode deferred_start() const { return deferred_start_; }

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

  // pending lists the backends the router may start later (see
  // PendingBackend). Fixed after Create.
  absl::Span<const PendingBackend> pending() const { return pending_; }
  // StartPending loads and initialises pending()[i] now and keeps the
  // backend for the registry's life (it is not in backends(), which never
  // changes after Create). kUnavailable when it declines (the reason from
  // the backend), kResourceExhausted when it is busy (asked from inside its
  // own initialisation on this thread: try later). Thread-safe; the router
  // starts one entry at a time.
  absl::StatusOr<Backend*> StartPending(size_t i) const;
  // retry_interval_s is `backend_retry_s`: how often a pending backend that
  // failed to start is tried again (0: never).
  uint64_t retry_interval_s() const { return retry_interval_s_; }
  // Rank is the priority of a backend named `name` (smaller first): its
  // place in `backends`, else hardware before software.
  size_t Rank(std::string_view name, bool hardware) const;

 private:
  Registry() = default;
  std::vector<std::unique_ptr<Backend>> backends_;
  std::vector<LoadEvent> events_;
  std::vector<std::string> dirs_;
  SelfTestMode selftest_mode_ = SelfTestMode::kFirstUse;
  std::unique_ptr<Backend> checker_;
  DeferredStartMode deferred_start_ = DeferredStartMode::kFirstUse;
  std::vector<std::string> only_;  // `backends`
  std::vector<PendingBackend> pending_;
  uint64_t retry_interval_s_ = 30;
  // A copy of the configuration, for the hosts of backends started later
  // (Backend::Create keeps a pointer to it).
  Config config_;
  mutable internal::OsMutex started_mu_;
  mutable std::vector<std::unique_ptr<Backend>> started_
      ABSL_GUARDED_BY(started_mu_);
};

}  // namespace accelcrypt

#endif  // ACCELCRYPT_CORE_REGISTRY_H_
