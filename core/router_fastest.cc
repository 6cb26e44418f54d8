// SPDX-License-Identifier: Apache-2.0
// policy = fastest: size-bucketed routes from a calibration file.
#include <algorithm>
#include <iterator>

#include "absl/strings/str_format.h"
#include "core/calibration.h"
#include "core/router.h"

namespace accelcrypt {

void Router::LoadCalibration(const Config& config) {
  size_routes_.clear();
  pkey_fastest_.clear();
  if (policy_ != "fastest") return;
  std::string path = config.GetOr("calibration_file", DefaultCalibrationPath());
  auto cal = Calibration::Load(path);
  if (!cal.ok()) {
    notes_.push_back(absl::StrFormat(
        "policy = fastest, but %s; using priority order",
        std::string(cal.status().message())));
    return;
  }
  const std::string cpu = CpuSignature();
  if (cal->cpu != cpu) {
    notes_.push_back(absl::StrFormat(
        "policy = fastest, but %s was measured on another CPU (%s, this is "
        "%s); using priority order until `accelcrypt calibrate` runs here",
        path, cal->cpu, cpu));
    return;
  }
  for (const auto& slot : slots_) {
    std::string name(slot->backend->name());
    auto it = cal->backend_versions.find(name);
    if (it != cal->backend_versions.end() &&
        it->second != slot->backend->version()) {
      notes_.push_back(absl::StrFormat(
          "policy = fastest, but %s measured %s %s and %s is loaded; using "
          "priority order until `accelcrypt calibrate` runs again",
          path, name, it->second, slot->backend->version()));
      return;
    }
  }
  size_routes_.resize(AllAlgorithms().size());
  size_t covered = 0;
  for (const AlgorithmInfo& alg : AllAlgorithms()) {
    if (alg.family != Family::kCipher && alg.family != Family::kDigest) {
      continue;
    }
    const std::vector<size_t>& route = routes_[alg.index];
    for (uint64_t bucket : Calibration::SizeBuckets()) {
      std::vector<size_t> ranked;
      for (const std::string& name : cal->Fastest(std::string(alg.key), bucket)) {
        for (size_t i : route) {
          if (slots_[i]->backend->name() == name) ranked.push_back(i);
        }
      }
      if (!ranked.empty()) size_routes_[alg.index][bucket] = std::move(ranked);
    }
    if (!size_routes_[alg.index].empty()) ++covered;
  }
  // RSA and DSA: bucket = key bits, value = ns per signature.
  for (const char* family : {"rsa", "dsa"}) {
    auto a = cal->ns.find(family);
    if (a == cal->ns.end()) continue;
    for (const auto& [bits, backends] : a->second) {
      (void)backends;
      pkey_fastest_[family][bits] = cal->Fastest(family, bits);
    }
    ++covered;
  }
  notes_.push_back(absl::StrFormat(
      "policy = fastest: calibration %s covers %d algorithms", path, covered));
}

Router::Slot* Router::Preferred(const AlgorithmInfo& alg,
                                uint64_t size) const {
  if (!SizeRouted(alg)) return nullptr;
  const auto& buckets = size_routes_[alg.index];
  auto it = buckets.find(Calibration::BucketFor(size));
  if (it == buckets.end()) return nullptr;
  uint64_t now = 0;
  for (size_t i : it->second) {
    Slot* slot = slots_[i].get();
    if (BackendGuard::Inside(slot->backend) || BreakerOpen(*slot, &now)) {
      continue;
    }
    return slot;
  }
  return nullptr;
}

void Router::OrderFor(const AlgorithmInfo& alg, uint64_t size,
                      SlotList* out) const {
  Order(alg, out);
  Slot* want = Preferred(alg, size);
  if (want == nullptr) return;
  auto it = std::find(out->begin(), out->end(), want);
  if (it != out->end()) std::rotate(out->begin(), it, it + 1);
}

std::string Router::PkeyFastest(const std::string& family, size_t key_bits,
                                const SlotList& candidates) const {
  auto f = pkey_fastest_.find(family);
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
                                            uint64_t bucket) const {
  std::vector<std::string> out;
  if (!SizeRouted(alg)) return out;
  auto it = size_routes_[alg.index].find(bucket);
  if (it == size_routes_[alg.index].end()) return out;
  for (size_t i : it->second) out.emplace_back(slots_[i]->backend->name());
  return out;
}

}  // namespace accelcrypt
