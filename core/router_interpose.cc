// SPDX-License-Identifier: Apache-2.0
// Router::Interposes: which algorithms the provider offers OpenSSL.
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/router.h"

namespace accelcrypt {
namespace {

// Kind says what makes a backend's capability a win, from its flags.
const char* Kind(const accelcrypt_capability& cap) {
  if ((cap.flags & ACCELCRYPT_CAP_OFFLOAD) != 0) return "offload";
  if ((cap.flags & ACCELCRYPT_CAP_HARDWARE) != 0) return "hardware";
  if ((cap.flags & ACCELCRYPT_CAP_CPU) != 0) return "CPU code";
  return "backend";
}

bool Wins(const accelcrypt_capability* cap) {
  return cap != nullptr && (cap->flags & ACCELCRYPT_CAP_PASS_THROUGH) == 0;
}

}  // namespace

Router::Interposition Router::Interposes(accelcrypt_alg alg) const {
  Interposition d;
  const AlgorithmInfo* info = FindAlgorithm(alg);
  if (alg == ACCELCRYPT_ALG_RNG_RANDOM) {
    // OpenSSL's DRBGs stay OpenSSL's; the provider offers only their seed
    // source (ENTROPY). Random bytes serve the PKCS#11 module.
    d.why = "the provider offers no DRBG (OpenSSL's run over its seed source)";
    return d;
  }
  // A deferred backend (a token: `defer=` in its load hints) that would
  // serve the family and may still start: the provider offers the
  // algorithm, or the token could never be reached through it (it starts
  // at the first routed operation, which would never come). What it
  // serves is known only once it started; until then its family counts.
  if (info != nullptr && alg != ACCELCRYPT_ALG_RNG_ENTROPY) {
    for (const auto& p : pending_) {
      if (p->done.load(std::memory_order_acquire) ||
          (p->families & FamilyBit(info->family)) == 0) {
        continue;
      }
      d.offered = true;
      d.wins = true;
      d.backend = p->name;
      d.why = absl::StrFormat("%s (offload; starts at its first operation)",
                              p->name);
      return d;
    }
  }
  if (info == nullptr || routes_[info->index].empty()) {
    d.why = "no backend serves it";
    return d;
  }
  std::vector<size_t> usable;
  for (size_t i : routes_[info->index]) {
    if (SelfTestStateOf(i, *info) != SelfTestState::kFailed) {
      usable.push_back(i);
    }
  }
  if (usable.empty()) {
    d.why = "every backend serving it failed its known-answer test";
    return d;
  }
  // The backends whose declaration decides: for RSA/DSA every routed one
  // (a token serves keys by URI, and imported keys may be routed to it);
  // otherwise the one routed first, per size bucket and direction where a
  // calibration routes by size.
  std::vector<size_t> deciding;
  const bool pkey =
      info->family == Family::kRsa || info->family == Family::kDsa;
  if (pkey) {
    deciding = usable;
  } else if (SizeRouted(*info)) {
    for (const BucketRoutes& by_bucket : size_routes_[info->index]) {
      for (const std::vector<size_t>& ranked : by_bucket) {
        deciding.push_back(ranked.empty() ? usable[0] : ranked[0]);
      }
    }
  } else {
    deciding.push_back(usable[0]);
  }
  for (size_t i : deciding) {
    const Backend& b = *slots_[i]->backend;
    const accelcrypt_capability* cap = b.Capability(alg);
    if (!Wins(cap)) continue;
    d.wins = true;
    d.backend = std::string(b.name());
    d.why = absl::StrFormat("%s (%s%s)", b.name(), Kind(*cap),
                            SizeRouted(*info) ? ", measured fastest" : "");
    break;
  }
  if (!d.wins) {
    std::vector<std::string> winners, others;
    for (size_t i : usable) {
      const Backend& b = *slots_[i]->backend;
      (Wins(b.Capability(alg)) ? winners : others).emplace_back(b.name());
    }
    if (winners.empty()) {
      d.why = absl::StrFormat(
          "only pass-through backends serve it (%s: no faster than "
          "OpenSSL's own code)",
          absl::StrJoin(others, ", "));
    } else {
      d.why = absl::StrFormat(
          "%s (pass-through) is routed first (%s); %s only behind it",
          slots_[deciding[0]]->backend->name(),
          SizeRouted(*info) ? "calibrated" : route_why_[info->index],
          absl::StrJoin(winners, ", "));
    }
  }
  // A seed source is offered only when it wins, whatever `interpose` says:
  // OpenSSL's own reads the kernel's getrandom too.
  if (interpose_all_ && !d.wins && alg != ACCELCRYPT_ALG_RNG_ENTROPY) {
    d.offered = true;
    d.why = absl::StrFormat("interpose = all (%s)", d.why);
    return d;
  }
  d.offered = d.wins;
  return d;
}

}  // namespace accelcrypt
