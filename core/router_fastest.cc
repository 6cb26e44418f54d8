// SPDX-License-Identifier: Apache-2.0
// Measured routing (policy = auto, the default, and policy = fastest):
// routes from a calibration file, per operation and input-size bucket.
#include <algorithm>
#include <iterator>
#include <limits>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/calibration.h"
#include "core/router.h"

namespace accelcrypt {
namespace {

// FirstFound returns the first readable calibration of `paths` (or the
// last error when none is).
absl::StatusOr<std::pair<Calibration, std::string>> FirstFound(
    const std::vector<std::string>& paths) {
  absl::Status last;
  for (const std::string& path : paths) {
    auto cal = Calibration::Load(path);
    if (cal.ok()) return std::make_pair(*std::move(cal), path);
    // The first missing file is reported, unless one is malformed.
    if (last.ok() || (last.code() == absl::StatusCode::kNotFound &&
                      cal.status().code() != absl::StatusCode::kNotFound)) {
      last = cal.status();
    }
  }
  if (last.ok()) last = absl::NotFoundError("no calibration file");
  return last;
}

// HeadWhy is why `head` serves `alg` without a calibration (RouteChoice):
// "configured", "declared" (a hardware backend) or "priority".
std::string HeadWhy(bool configured, const Backend* head,
                    const AlgorithmInfo& alg) {
  if (configured) return "configured";
  const accelcrypt_capability* cap =
      head == nullptr ? nullptr : head->Capability(alg.id);
  if (cap != nullptr && (cap->flags & ACCELCRYPT_CAP_HARDWARE) != 0) {
    return "declared";
  }
  return "priority";
}

// kPkeyTiePct: RSA/DSA backends measured within this many percent of the
// fastest tie (or within route_margin_pct when that is larger): signatures
// are timed by the wall clock, and a token's figure is one caller's (it
// serialises many). A tie keeps the declared backend (the CPU for public
// operations), else goes to the CPU.
constexpr uint64_t kPkeyTiePct = 5;

}  // namespace

void Router::LoadCalibration(
    const std::optional<std::string>& calibration_file) {
  const size_t n_algs = AllAlgorithms().size();
  size_routes_.assign(n_algs, {});
  size_routed_.assign(n_algs, false);
  route_why_.assign(n_algs, "priority");
  pkey_fastest_.clear();
  measured_keys_.clear();
  calibration_.reset();
  calibration_status_ = {};
  calibrated_ = false;
  for (const AlgorithmInfo& alg : AllAlgorithms()) {
    const std::vector<size_t>& route = routes_[alg.index];
    route_why_[alg.index] =
        HeadWhy(configured_[alg.index],
                route.empty() ? nullptr : slots_[route[0]]->backend, alg);
  }
  if (policy_ == "priority") {
    calibration_status_.why = "policy = priority reads no calibration";
    return;
  }
  const std::vector<std::string> paths =
      calibration_file.has_value() ? std::vector<std::string>{*calibration_file}
                                   : CalibrationSearchPath();
  const std::string uncalibrated =
      policy_ == "auto"
          ? "hardware backends first as declared, RSA/DSA public operations "
            "on the CPU"
          : "using priority order";
  auto found = FirstFound(paths);
  if (!found.ok()) {
    calibration_status_.why = std::string(found.status().message());
    notes_.push_back(absl::StrFormat("policy = %s, but %s; %s", policy_,
                                     calibration_status_.why, uncalibrated));
    return;
  }
  calibration_ = std::make_shared<const Calibration>(std::move(found->first));
  const Calibration& cal = *calibration_;
  const std::string& path = found->second;
  calibration_status_.path = path;
  const std::string cpu = CpuSignature();
  if (cal.cpu != cpu) {
    calibration_status_.state = "stale";
    calibration_status_.why = absl::StrFormat(
        "measured on another CPU (%s, this is %s)", cal.cpu, cpu);
    notes_.push_back(absl::StrFormat(
        "policy = %s, but calibration %s is stale: %s; %s until `accelcrypt "
        "calibrate` runs here",
        policy_, path, calibration_status_.why, uncalibrated));
    return;
  }
  for (const auto& slot : slots_) {
    std::string name(slot->backend->name());
    auto it = cal.backend_versions.find(name);
    if (it == cal.backend_versions.end()) {
      calibration_status_.unmeasured.push_back(name);
    } else if (it->second != slot->backend->version()) {
      calibration_status_.state = "stale";
      calibration_status_.unmeasured.clear();
      calibration_status_.why =
          absl::StrFormat("it measured %s %s and %s is loaded", name,
                          it->second, slot->backend->version());
      notes_.push_back(absl::StrFormat(
          "policy = %s, but calibration %s is stale: %s; %s until "
          "`accelcrypt calibrate` runs again",
          policy_, path, calibration_status_.why, uncalibrated));
      return;
    }
  }
  calibrated_ = true;
  calibration_status_.state =
      calibration_status_.unmeasured.empty() ? "current" : "partial";
  if (!calibration_status_.unmeasured.empty()) {
    notes_.push_back(absl::StrFormat(
        "calibration %s is partial: it did not measure %s (loaded now), "
        "whose places in every route stay as declared; `accelcrypt "
        "calibrate` with them loaded measures them",
        path, absl::StrJoin(calibration_status_.unmeasured, ", ")));
  }
  const absl::Span<const uint64_t> buckets = Calibration::SizeBuckets();
  const double margin = 1.0 + static_cast<double>(margin_pct_) / 100.0;
  constexpr size_t kNone = std::numeric_limits<size_t>::max();
  size_t covered = 0;
  for (const AlgorithmInfo& alg : AllAlgorithms()) {
    if (alg.family != Family::kCipher && alg.family != Family::kDigest) {
      continue;
    }
    // A configured route is the administrator's decision.
    if (configured_[alg.index]) continue;
    std::vector<size_t>& route = routes_[alg.index];
    const int n_dirs = alg.family == Family::kCipher ? 2 : 1;
    const std::map<uint64_t, Calibration::Cells>* entries[2] = {nullptr,
                                                                nullptr};
    for (int dir = 0; dir < n_dirs; ++dir) {
      const std::string key =
          Calibration::OpKey(alg.key, alg.family == Family::kDigest ? ""
                                      : dir == 0                    ? "encrypt"
                                                 : "decrypt");
      auto entry = cal.ns.find(key);
      if (entry == cal.ns.end()) continue;
      entries[dir] = &entry->second;
      // Measured() ranks these from the calibration when asked (`accelcrypt
      // list`), not at every load.
      measured_keys_.push_back(key);
    }
    if (route.empty() || (entries[0] == nullptr && entries[1] == nullptr)) {
      continue;
    }
    // Measured slower through the provider than the declared route (the
    // `calibrate` check): the declared route stays.
    if (cal.declared.count(alg.key) != 0) {
      calibration_status_.declared.emplace_back(alg.name);
      continue;
    }
    // The measured time of each route member in each cell (one lookup
    // each: this runs in every process that loads a calibration), < 0
    // where the calibration has none.
    std::vector<double> measured(n_dirs * buckets.size() * slots_.size(), -1);
    for (int dir = 0; dir < n_dirs; ++dir) {
      if (entries[dir] == nullptr) continue;
      for (size_t b = 0; b < buckets.size(); ++b) {
        auto cells = entries[dir]->find(buckets[b]);
        if (cells == entries[dir]->end()) continue;
        for (size_t i : route) {
          auto v = cells->second.find(slots_[i]->backend->name());
          if (v != cells->second.end()) {
            measured[(dir * buckets.size() + b) * slots_.size() + i] =
                v->second;
          }
        }
      }
    }
    auto ns_at = [&](int dir, size_t b, size_t slot) {
      return measured[(dir * buckets.size() + b) * slots_.size() + slot];
    };
    // The calibration decides a cell only where it measured the route's
    // first backend: a backend it did not measure keeps its declared place
    // (a calibration made with fewer backends loaded never moves work away
    // from one it knows nothing about), and one it measured is replaced
    // only by one measured faster.
    std::vector<bool> everywhere(slots_.size(), true);
    bool any = false;
    for (int dir = 0; dir < n_dirs; ++dir) {
      for (size_t b = 0; b < buckets.size(); ++b) {
        if (ns_at(dir, b, route[0]) < 0) continue;
        any = true;
        double best = std::numeric_limits<double>::infinity();
        for (size_t i : route) {
          const double v = ns_at(dir, b, i);
          if (v >= 0) best = std::min(best, v);
        }
        for (size_t i : route) {
          const double v = ns_at(dir, b, i);
          if (v < 0 || v > best * margin) everywhere[i] = false;
        }
      }
    }
    if (!any) continue;  // the declared first backend was not measured
    // One backend within the margin of the fastest in every decided cell
    // serves them all (the earliest such in priority order): a route split
    // by size costs a decision per operation, and a switch of backend after
    // a cipher's init.
    size_t overall = kNone;
    for (size_t i : route) {
      if (everywhere[i]) {
        overall = i;
        break;
      }
    }
    bool uniform = true;
    size_t common = kNone;
    std::vector<bool> moved(slots_.size(), false);
    for (int dir = 0; dir < n_dirs; ++dir) {
      BucketRoutes& by_bucket = size_routes_[alg.index][dir];
      by_bucket.assign(buckets.size(), {});
      for (size_t b = 0; b < buckets.size(); ++b) {
        size_t chosen = route[0];
        if (ns_at(dir, b, route[0]) >= 0) {
          // Measured route members, fastest first; the chosen one first.
          std::vector<std::pair<double, size_t>> ranked;
          for (size_t i : route) {
            const double v = ns_at(dir, b, i);
            if (v >= 0) ranked.push_back({v, i});
          }
          std::stable_sort(ranked.begin(), ranked.end());
          chosen = overall;
          for (size_t i = 0; chosen == kNone && i < route.size(); ++i) {
            const double v = ns_at(dir, b, route[i]);
            // The earliest in priority order within the margin of the
            // fastest: noise between near-equal backends does not split a
            // route by size.
            if (v >= 0 && v <= ranked[0].first * margin) chosen = route[i];
          }
          std::vector<size_t> picks = {chosen};
          for (const auto& r : ranked) {
            if (r.second != chosen) picks.push_back(r.second);
          }
          // The measured members take the places measured members held;
          // the others keep theirs.
          std::vector<size_t>& list = by_bucket[b];
          size_t next = 0;
          for (size_t i : route) {
            if (ns_at(dir, b, i) >= 0) {
              moved[i] = true;
              list.push_back(picks[next++]);
            } else {
              list.push_back(i);
            }
          }
        }
        if (common == kNone) common = chosen;
        if (chosen != common) uniform = false;
      }
    }
    ++covered;
    route_why_[alg.index] = "calibrated";
    if (uniform) {
      // One backend for every size and direction: it takes the first place
      // (measured members keep their declared order behind it, in the
      // places measured members held) and nothing is decided per operation
      // (the fast paths stay open).
      std::vector<size_t> order = {common};
      for (size_t i : route) {
        if (moved[i] && i != common) order.push_back(i);
      }
      size_t next = 0;
      for (size_t& i : route) {
        if (moved[i]) i = order[next++];
      }
      size_routes_[alg.index] = {};
    } else {
      size_routed_[alg.index] = true;
    }
  }
  if (!calibration_status_.declared.empty()) {
    notes_.push_back(absl::StrFormat(
        "calibration %s keeps the declared route for %s: the measured one "
        "was slower through the provider",
        path, absl::StrJoin(calibration_status_.declared, ", ")));
  }
  // RSA and DSA: bucket = key bits, value = ns per signature or
  // verification.
  for (const char* family : {"rsa", "dsa"}) {
    bool any = false;
    for (const char* op : {"sign", "verify"}) {
      const std::string key = Calibration::OpKey(family, op);
      auto a = cal.ns.find(key);
      if (a == cal.ns.end()) continue;
      for (const auto& [bits, backends] : a->second) {
        (void)backends;
        pkey_fastest_[key][bits] = cal.Fastest(key, bits);
      }
      any = true;
    }
    if (any) ++covered;
  }
  notes_.push_back(
      absl::StrFormat("policy = %s: calibration %s covers %d "
                      "algorithms",
                      policy_, path, covered));
}

std::map<std::string, std::map<uint64_t, std::vector<std::string>>>
Router::Measured() const {
  std::map<std::string, std::map<uint64_t, std::vector<std::string>>> out;
  if (!calibrated_ || calibration_ == nullptr) return out;
  for (const std::string& key : measured_keys_) {
    auto entry = calibration_->ns.find(key);
    if (entry == calibration_->ns.end()) continue;
    for (const auto& [bucket, cells] : entry->second) {
      (void)cells;
      out[key][bucket] = calibration_->Fastest(key, bucket);
    }
  }
  return out;
}

Router::Slot* Router::Preferred(const AlgorithmInfo& alg, uint64_t size,
                                bool decrypt) const {
  if (!SizeRouted(alg)) return nullptr;
  const BucketRoutes& by_bucket =
      size_routes_[alg.index][decrypt && alg.family == Family::kCipher ? 1 : 0];
  if (by_bucket.empty()) return nullptr;
  const std::vector<size_t>& ranked = by_bucket[Calibration::BucketIndex(size)];
  uint64_t now = 0;
  for (size_t i : ranked) {
    Slot* slot = slots_[i].get();
    if (BackendGuard::Inside(slot->backend) || BreakerOpen(*slot, &now)) {
      continue;
    }
    return slot;
  }
  return nullptr;
}

void Router::OrderFor(const AlgorithmInfo& alg, uint64_t size, SlotList* out,
                      bool decrypt) const {
  Order(alg, out);
  Slot* want = Preferred(alg, size, decrypt);
  if (want == nullptr) return;
  auto it = std::find(out->begin(), out->end(), want);
  if (it != out->end()) std::rotate(out->begin(), it, it + 1);
}

std::string Router::PkeyFastest(const AlgorithmInfo& alg, const std::string& op,
                                size_t key_bits,
                                const SlotList& candidates) const {
  if (!calibrated_ || calibration_ == nullptr || key_bits == 0 ||
      candidates.empty()) {
    return "";  // size unknown (a token key without its public part)
  }
  auto entry = calibration_->ns.find(op);
  if (entry == calibration_->ns.end() || entry->second.empty()) return "";
  auto b = entry->second.lower_bound(key_bits);
  if (b == entry->second.end()) b = std::prev(entry->second.end());
  const Calibration::Cells& cells = b->second;
  auto ns_of = [&](const Slot* slot) -> double {
    auto v = cells.find(slot->backend->name());
    return v == cells.end() ? -1 : v->second;
  };
  // The declared first backend not measured: it keeps its place.
  if (ns_of(candidates[0]) < 0) return "";
  double best = std::numeric_limits<double>::infinity();
  for (const Slot* slot : candidates) {
    if (ns_of(slot) >= 0) best = std::min(best, ns_of(slot));
  }
  const double band =
      1.0 + static_cast<double>(std::max(kPkeyTiePct, margin_pct_)) / 100.0;
  auto offload = [&](const Slot* slot) {
    const accelcrypt_capability* cap = slot->backend->Capability(alg.id);
    return cap != nullptr && (cap->flags & (ACCELCRYPT_CAP_OFFLOAD |
                                            ACCELCRYPT_CAP_HARDWARE)) != 0;
  };
  // A tie keeps the declared first backend; among others tied for the
  // fastest, a CPU backend first, then the declared order.
  if (ns_of(candidates[0]) <= best * band) {
    return std::string(candidates[0]->backend->name());
  }
  for (bool cpu_only : {true, false}) {
    for (const Slot* slot : candidates) {
      const double v = ns_of(slot);
      if (v >= 0 && v <= best * band && (!cpu_only || !offload(slot))) {
        return std::string(slot->backend->name());
      }
    }
  }
  return "";
}

std::vector<std::string> Router::FastestFor(const AlgorithmInfo& alg,
                                            uint64_t bucket,
                                            bool decrypt) const {
  std::vector<std::string> out;
  if (!SizeRouted(alg)) return out;
  const BucketRoutes& by_bucket =
      size_routes_[alg.index][decrypt && alg.family == Family::kCipher ? 1 : 0];
  if (by_bucket.empty()) return out;
  for (size_t i : by_bucket[Calibration::BucketIndex(bucket)]) {
    out.emplace_back(slots_[i]->backend->name());
  }
  return out;
}

Router::RouteChoice Router::Chosen(const AlgorithmInfo& alg, uint64_t bucket,
                                   bool decrypt) const {
  RouteChoice c;
  const std::vector<std::string> sized = FastestFor(alg, bucket, decrypt);
  if (!sized.empty()) return {sized[0], "calibrated"};
  for (size_t i : routes_[alg.index]) {
    if (SelfTestStateOf(i, alg) == SelfTestState::kFailed) continue;
    // A size the calibration left undecided (it did not measure the
    // declared first backend there) keeps the declared route.
    return {std::string(slots_[i]->backend->name()),
            SizeRouted(alg)
                ? HeadWhy(configured_[alg.index],
                          slots_[routes_[alg.index][0]]->backend, alg)
                : route_why_[alg.index]};
  }
  return c;
}

Router::RouteChoice Router::PkeyChosen(const AlgorithmInfo& alg,
                                       size_t key_bits, bool public_op) const {
  SlotList order;
  PkeyOrderUngated(alg, key_bits, /*from_uri=*/false, &order, public_op);
  if (order.empty()) return {};
  RouteChoice c{std::string(order[0]->backend->name()), "priority"};
  const std::string op =
      Calibration::OpKey(alg.family == Family::kDsa ? "dsa" : "rsa",
                         public_op ? "verify" : "sign");
  const std::string sized_route = absl::StrFormat(
      "%s-%d", alg.family == Family::kDsa ? "dsa" : "rsa", key_bits);
  const accelcrypt_capability* cap = order[0]->backend->Capability(alg.id);
  const bool offload =
      cap != nullptr &&
      (cap->flags & (ACCELCRYPT_CAP_OFFLOAD | ACCELCRYPT_CAP_HARDWARE)) != 0;
  if (pkey_routes_.count(sized_route) != 0 || configured_[alg.index]) {
    c.why = "configured";
  } else if (!PkeyFastest(alg, op, key_bits, order).empty()) {
    c.why = "calibrated";
  } else if (public_op && policy_ != "priority" && !offload) {
    c.why = "cpu";
  } else if (offload) {
    c.why = "declared";
  }
  return c;
}

}  // namespace accelcrypt
