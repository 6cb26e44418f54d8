// SPDX-License-Identifier: Apache-2.0
// Deferred backends (core/router.h, "Deferred backends"): the router starts
// the registry's pending backends at the first routed operation of a family
// they serve, retries a failed start with back-off, and admits a started
// backend into its slots and routes while other threads route.
#include <unistd.h>

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"
#include "core/routing/internal.h"

namespace accelcrypt {

using routing::NowNs;

namespace {

// A start that found the backend busy (asked from inside its own start on
// this thread) is tried again after this long, not after the full back-off.
constexpr uint64_t kBusyRetryNs = 1000000000ull;

}  // namespace

void Router::SlotTable::Reserve(size_t n) {
  storage_ = std::make_unique<std::unique_ptr<Slot>[]>(n);
  capacity_ = n;
}

void Router::SlotTable::Append(std::unique_ptr<Slot> slot) {
  const size_t n = size_.load(std::memory_order_relaxed);
  storage_[n] = std::move(slot);
  size_.store(n + 1, std::memory_order_release);
}

void Router::RouteTable::Publish(Table table) {
  tables_.push_back(std::make_unique<Table>(std::move(table)));
  current_.store(tables_.back().get(), std::memory_order_release);
}

void Router::SetUpPending() {
  if (registry_ == nullptr) return;
  retry_ns_ = registry_->retry_interval_s() * 1000000000ull;
  const uint64_t now = NowNs();
  for (size_t i = 0; i < registry_->pending().size(); ++i) {
    const PendingBackend& backend = registry_->pending()[i];
    auto p = std::make_unique<Pending>();
    p->index = i;
    p->families = backend.families;
    p->name = backend.name;
    if (!backend.load_failure.ok()) {
      // Started at load (`deferred_start = load`) and failed.
      {
        internal::OsMutexLock lock(&p->mu);
        p->last_error = std::string(backend.load_failure.message());
      }
      const bool busy =
          backend.load_failure.code() == absl::StatusCode::kResourceExhausted;
      if (!busy) ReportStartFailure(p.get(), backend.load_failure, true);
      if (retry_ns_ == 0 && !busy) {
        p->done.store(true, std::memory_order_relaxed);
      } else {
        p->next_ns.store(now + (busy ? kBusyRetryNs : retry_ns_),
                         std::memory_order_relaxed);
      }
    }
    pending_.push_back(std::move(p));
  }
  UpdatePendingFamilies();
}

void Router::UpdatePendingFamilies() {
  uint32_t families = 0;
  for (const auto& p : pending_) {
    if (!p->done.load(std::memory_order_relaxed)) families |= p->families;
  }
  pending_families_.store(families, std::memory_order_release);
}

size_t Router::StartPending(uint32_t families, bool force) {
  // Never from inside one of this router's backends: its own calls must
  // not start (and so initialise a token module) under it.
  if (routing::t_inside != nullptr) return 0;
  if (force) {
    internal::OsMutexLock lock(&start_mu_);
    return StartLocked(families, /*force=*/true);
  }
  const uint64_t now = NowNs();
  if (std::none_of(pending_.begin(), pending_.end(),
                   [&](const auto& p) { return Due(*p, families, now); })) {
    return 0;
  }
  // Another thread is starting one (a token's C_Initialize may take a
  // while): this call goes on with the backends already in the routes.
  if (!start_mu_.TryLock()) return 0;
  const size_t started = StartLocked(families, /*force=*/false);
  start_mu_.Unlock();
  return started;
}

bool Router::Due(const Pending& p, uint32_t families, uint64_t now) {
  return (p.families & families) != 0 &&
         !p.done.load(std::memory_order_relaxed) &&
         now >= p.next_ns.load(std::memory_order_relaxed);
}

size_t Router::StartLocked(uint32_t families, bool force) {
  size_t started = 0;
  for (const auto& entry : pending_) {
    Pending& p = *entry;
    const uint64_t now = NowNs();
    if (!Due(p, families, force ? ~0ull : now)) continue;
    absl::StatusOr<Backend*> backend = registry_->StartPending(p.index);
    if (backend.ok()) {
      Admit(*backend, &p);
      p.done.store(true, std::memory_order_relaxed);
      internal::OsMutexLock lock(&p.mu);
      p.last_error.clear();
      ++started;
      continue;
    }
    {
      internal::OsMutexLock lock(&p.mu);
      p.last_error = std::string(backend.status().message());
    }
    if (backend.status().code() == absl::StatusCode::kResourceExhausted) {
      p.next_ns.store(now + kBusyRetryNs, std::memory_order_relaxed);
      continue;
    }
    // Unavailable (no module, no token, C_Initialize failing) may change:
    // retried. Anything else (a configuration the backend refuses, an ABI
    // mismatch) will not: given up.
    const bool transient =
        backend.status().code() == absl::StatusCode::kUnavailable;
    ReportStartFailure(&p, backend.status(), transient);
    if (retry_ns_ == 0 || !transient) {
      p.done.store(true, std::memory_order_relaxed);
    } else {
      p.next_ns.store(now + retry_ns_, std::memory_order_relaxed);
    }
  }
  UpdatePendingFamilies();
  return started;
}

size_t Router::StatsSlot(Pending* pending) {
  // Registered at the first failure or the start: a backend that never
  // starts in a process that never asks for it adds no row.
  size_t slot = pending->stats_slot.load(std::memory_order_relaxed);
  if (slot == Pending::kNoSlot) {
    slot = stats_->RegisterBackend(pending->name);
    pending->stats_slot.store(slot, std::memory_order_relaxed);
  }
  return slot;
}

void Router::ReportStartFailure(Pending* pending, const absl::Status& status,
                                bool retried) {
  stats_->InitCell(StatsSlot(pending))
      .errors.fetch_add(1, std::memory_order_relaxed);
  const pid_t pid = getpid();
  if (pending->reported_pid.load(std::memory_order_relaxed) == pid) return;
  pending->reported_pid.store(pid, std::memory_order_relaxed);
  ReportToOperator(absl::StrFormat(
      "accelcrypt: backend %s not started: %s; its operations go to the "
      "next backend%s",
      pending->name, status.message(),
      retried && retry_ns_ != 0
          ? absl::StrFormat("; tried again at an operation, at most every "
                            "%d s (backend_retry_s)",
                            retry_ns_ / 1000000000ull)
          : std::string()));
}

void Router::Admit(Backend* backend, Pending* pending) {
  if (slots_.size() >= slots_.capacity()) return;  // cannot happen
  auto slot = std::make_unique<Slot>();
  slot->backend = backend;
  slot->stats_slot = StatsSlot(pending);
  const size_t n_algs = AllAlgorithms().size();
  slot->selftest = std::make_unique<std::atomic<uint8_t>[]>(n_algs);
  const SelfTestMode mode = registry_->selftest_mode();
  for (const AlgorithmInfo& alg : AllAlgorithms()) {
    if (backend->Capability(alg.id) == nullptr) continue;
    // `selftest = load`: tested now, before any thread can see it.
    if (mode == SelfTestMode::kLoad) {
      absl::Status st;
      {
        BackendGuard guard(backend);
        st = Registry::SelfTest(*backend, alg.id);
      }
      if (!st.ok()) {
        backend->Disable(alg.id);
        stats_->Cell(slot->stats_slot, alg)
            .errors.fetch_add(1, std::memory_order_relaxed);
        ReportToOperator(absl::StrFormat(
            "accelcrypt: %s: %s failed its known-answer test and is not "
            "used in this process (%s)",
            backend->name(), alg.name, st.message()));
        std::lock_guard<std::recursive_mutex> lock(selftest_mu_);
        selftest_events_.push_back(
            {std::string(backend->name()), std::string(alg.name),
             absl::StrFormat("disabled: %s", st.message()), false});
      }
    }
  }
  for (const AlgorithmInfo& alg : AllAlgorithms()) {
    const bool pending_test = mode == SelfTestMode::kFirstUse &&
                              backend->Capability(alg.id) != nullptr;
    slot->selftest[alg.index].store(
        static_cast<uint8_t>(pending_test ? SelfTestState::kPending
                                          : SelfTestState::kPassed),
        std::memory_order_relaxed);
  }
  const size_t index = slots_.size();
  slots_.Append(std::move(slot));
  RouteTable::Table next = routes_.current();
  for (const AlgorithmInfo& alg : AllAlgorithms()) {
    if (backend->Capability(alg.id) != nullptr) {
      InsertLate(&next[alg.index], index, alg);
    }
  }
  routes_.Publish(std::move(next));
}

void Router::InsertLate(std::vector<size_t>* route, size_t index,
                        const AlgorithmInfo& alg) const {
  const Backend& late = *slots_[index]->backend;
  const std::vector<std::string>& named = route_names_[alg.index];
  auto position = [&](std::string_view name) {
    return static_cast<size_t>(std::find(named.begin(), named.end(), name) -
                               named.begin());
  };
  const size_t late_pos = position(late.name());
  if (route_exclusive_[alg.index] && late_pos == named.size()) return;
  auto rank = [&](const Backend& b) {
    return registry_->Rank(b.name(), b.hardware());
  };
  // The late backend goes before `entry` when the configured route names
  // it earlier (or names only it), else when it ranks earlier and neither
  // is named.
  auto goes_before = [&](size_t entry) {
    const Backend& e = *slots_[entry]->backend;
    const size_t entry_pos = position(e.name());
    if (late_pos != named.size()) return entry_pos > late_pos;
    if (entry_pos != named.size()) return false;
    return rank(late) < rank(e);
  };
  auto at = std::find_if(route->begin(), route->end(), goes_before);
  // A calibrated route keeps its measured order: the unmeasured backend
  // comes after. A direct digest serves the route's first backend without
  // reading the route: the late backend goes after it.
  if (route_why_[alg.index] == "calibrated") at = route->end();
  if (at == route->begin() && !route->empty() &&
      direct_digests_[alg.index].fn != nullptr) {
    ++at;
  }
  route->insert(at, index);
}

std::vector<std::string> Router::PendingReasons() const {
  std::vector<std::string> out;
  for (const auto& p : pending_) {
    if (p->done.load(std::memory_order_relaxed)) {
      // Started: a backend like the others. Given up: its last reason.
      internal::OsMutexLock lock(&p->mu);
      if (p->last_error.empty()) continue;
      out.push_back(absl::StrFormat("%s (%s)", p->name, p->last_error));
      continue;
    }
    internal::OsMutexLock lock(&p->mu);
    out.push_back(absl::StrFormat(
        "%s (%s)", p->name,
        p->last_error.empty() ? "deferred, not started yet" : p->last_error));
  }
  return out;
}

bool Router::IsPending(const std::string& path) const {
  if (registry_ == nullptr) return false;
  for (const PendingBackend& p : registry_->pending()) {
    if (p.path == path) return true;
  }
  return false;
}

}  // namespace accelcrypt
