// SPDX-License-Identifier: Apache-2.0
// Measured routing (policy = auto, the default, and policy = fastest):
// routes from a calibration file, per operation and input-size bucket.
#include <algorithm>
#include <iterator>
#include <limits>

#include "absl/strings/str_format.h"
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
  calibrated_ = false;
  for (const AlgorithmInfo& alg : AllAlgorithms()) {
    const std::vector<size_t>& route = routes_[alg.index];
    if (configured_[alg.index]) {
      route_why_[alg.index] = "configured";
    } else if (!route.empty()) {
      const accelcrypt_capability* cap =
          slots_[route[0]]->backend->Capability(alg.id);
      if (cap != nullptr && (cap->flags & ACCELCRYPT_CAP_HARDWARE) != 0) {
        route_why_[alg.index] = "declared";
      }
    }
  }
  if (policy_ == "priority") return;
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
    notes_.push_back(absl::StrFormat("policy = %s, but %s; %s", policy_,
                                     std::string(found.status().message()),
                                     uncalibrated));
    return;
  }
  calibration_ = std::make_shared<const Calibration>(std::move(found->first));
  const Calibration& cal = *calibration_;
  const std::string& path = found->second;
  const std::string cpu = CpuSignature();
  if (cal.cpu != cpu) {
    notes_.push_back(absl::StrFormat(
        "policy = %s, but %s was measured on another CPU (%s, this is "
        "%s); %s until `accelcrypt calibrate` runs here",
        policy_, path, cal.cpu, cpu, uncalibrated));
    return;
  }
  for (const auto& slot : slots_) {
    std::string name(slot->backend->name());
    auto it = cal.backend_versions.find(name);
    if (it != cal.backend_versions.end() &&
        it->second != slot->backend->version()) {
      notes_.push_back(absl::StrFormat(
          "policy = %s, but %s measured %s %s and %s is loaded; %s until "
          "`accelcrypt calibrate` runs again",
          policy_, path, name, it->second, slot->backend->version(),
          uncalibrated));
      return;
    }
  }
  calibrated_ = true;
  const absl::Span<const uint64_t> buckets = Calibration::SizeBuckets();
  const double margin = 1.0 + static_cast<double>(margin_pct_) / 100.0;
  size_t covered = 0;
  for (const AlgorithmInfo& alg : AllAlgorithms()) {
    if (alg.family != Family::kCipher && alg.family != Family::kDigest) {
      continue;
    }
    // A configured route is the administrator's decision.
    if (configured_[alg.index]) continue;
    std::vector<size_t>& route = routes_[alg.index];
    const int n_dirs = alg.family == Family::kCipher ? 2 : 1;
    // One backend within the margin of the fastest at every measured size
    // and direction serves them all (the earliest such in priority order):
    // a route split by size costs a decision per operation, and a switch
    // of backend after a cipher's init.
    std::vector<bool> everywhere(slots_.size(), true);
    for (int dir = 0; dir < n_dirs; ++dir) {
      auto entry = cal.ns.find(
          Calibration::OpKey(alg.key, alg.family == Family::kDigest ? ""
                                      : dir == 0                    ? "encrypt"
                                                 : "decrypt"));
      for (size_t i = 0; i < slots_.size(); ++i) {
        if (entry == cal.ns.end()) everywhere[i] = false;
      }
      if (entry == cal.ns.end()) continue;
      for (uint64_t bucket : buckets) {
        auto cells = entry->second.find(bucket);
        double best = std::numeric_limits<double>::infinity();
        if (cells != entry->second.end()) {
          for (size_t i : route) {
            auto v = cells->second.find(slots_[i]->backend->name());
            if (v != cells->second.end()) best = std::min(best, v->second);
          }
        }
        for (size_t i = 0; i < slots_.size(); ++i) {
          if (cells == entry->second.end()) {
            everywhere[i] = false;
            continue;
          }
          auto v = cells->second.find(slots_[i]->backend->name());
          if (v == cells->second.end() || v->second > best * margin) {
            everywhere[i] = false;
          }
        }
      }
    }
    size_t overall = std::numeric_limits<size_t>::max();
    for (size_t i : route) {
      if (everywhere[i]) {
        overall = i;
        break;
      }
    }
    bool any = false;
    bool uniform = true;
    size_t common = std::numeric_limits<size_t>::max();
    for (int dir = 0; dir < n_dirs; ++dir) {
      const std::string key =
          Calibration::OpKey(alg.key, alg.family == Family::kDigest ? ""
                                      : dir == 0                    ? "encrypt"
                                                 : "decrypt");
      auto entry = cal.ns.find(key);
      // Measured() ranks these from the calibration when asked (`accelcrypt
      // list`), not at every load.
      if (entry != cal.ns.end()) measured_keys_.push_back(key);
      BucketRoutes& by_bucket = size_routes_[alg.index][dir];
      by_bucket.assign(buckets.size(), {});
      for (size_t b = 0; b < buckets.size(); ++b) {
        if (entry == cal.ns.end()) {
          uniform = false;
          continue;
        }
        auto cells = entry->second.find(buckets[b]);
        if (cells == entry->second.end()) {
          uniform = false;
          continue;
        }
        // Measured route members, fastest first.
        std::vector<std::pair<double, size_t>> ranked;
        for (size_t i : route) {
          auto v = cells->second.find(slots_[i]->backend->name());
          if (v != cells->second.end()) ranked.push_back({v->second, i});
        }
        if (ranked.empty()) {
          uniform = false;
          continue;
        }
        std::stable_sort(ranked.begin(), ranked.end());
        // The earliest backend in priority order within the margin of the
        // fastest: measurement noise between near-equal backends does not
        // split a route by size (which costs a decision per operation).
        size_t chosen = ranked[0].second;
        for (size_t i : route) {
          if (overall != std::numeric_limits<size_t>::max()) {
            chosen = overall;
            break;
          }
          auto it = std::find_if(ranked.begin(), ranked.end(),
                                 [&](const auto& r) { return r.second == i; });
          if (it != ranked.end() && it->first <= ranked[0].first * margin) {
            chosen = i;
            break;
          }
        }
        std::vector<size_t>& list = by_bucket[b];
        list.push_back(chosen);
        for (const auto& r : ranked) {
          if (r.second != chosen) list.push_back(r.second);
        }
        any = true;
        if (common == std::numeric_limits<size_t>::max()) common = chosen;
        if (chosen != common) uniform = false;
      }
    }
    if (!any) {
      size_routes_[alg.index] = {};
      continue;
    }
    ++covered;
    route_why_[alg.index] = "calibrated";
    if (uniform) {
      // One backend for every size and direction: put it first and decide
      // nothing per operation (the fast paths stay open).
      auto it = std::find(route.begin(), route.end(), common);
      if (it != route.end()) std::rotate(route.begin(), it, it + 1);
      size_routes_[alg.index] = {};
    } else {
      size_routed_[alg.index] = true;
    }
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

std::string Router::PkeyFastest(const std::string& op, size_t key_bits,
                                const SlotList& candidates) const {
  auto f = pkey_fastest_.find(op);
  if (key_bits == 0 || f == pkey_fastest_.end() || f->second.empty()) {
    return "";  // size unknown (a token key without its public part)
  }
  auto b = f->second.lower_bound(key_bits);
  if (b == f->second.end()) b = std::prev(f->second.end());
  for (const std::string& name : b->second) {
    for (const Slot* slot : candidates) {
      if (slot->backend->name() == name) return name;
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
    return {std::string(slots_[i]->backend->name()), route_why_[alg.index]};
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
  } else if (!PkeyFastest(op, key_bits, order).empty()) {
    c.why = "calibrated";
  } else if (public_op && policy_ != "priority" && !offload) {
    c.why = "cpu";
  } else if (offload) {
    c.why = "declared";
  }
  return c;
}

}  // namespace accelcrypt
