// SPDX-License-Identifier: Apache-2.0
#include "core/routing/options.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "core/algorithms.h"
#include "core/config_keys.h"
#include "core/status.h"

namespace accelcrypt {
namespace {

// PkeyRoutes collects `route.rsa-<bits>` and `route.dsa-<bits>` overrides,
// keyed "rsa-2048".
std::map<std::string, std::string, std::less<>> PkeyRoutes(
    const Config& config) {
  std::map<std::string, std::string, std::less<>> out;
  for (const auto& [raw_key, value] : config.values()) {
    std::string key = absl::AsciiStrToLower(raw_key);
    absl::string_view rest = key;
    if (!absl::ConsumePrefix(&rest, "route.")) continue;
    if (!IsSizedPkeyRouteName(std::string_view(rest.data(), rest.size()))) {
      continue;
    }
    out.emplace(std::string(rest), value);
  }
  return out;
}

}  // namespace

absl::StatusOr<RouterOptions> RouterOptions::FromConfig(const Config& config) {
  RouterOptions o;
  o.policy = config.GetOr("policy", "auto");
  if (o.policy != "auto" && o.policy != "priority" && o.policy != "fastest") {
    return absl::InvalidArgumentError(absl::StrFormat(
        "accelcrypt config: policy = %s is not supported (use auto, priority "
        "or fastest)",
        o.policy));
  }
  ACCELCRYPT_ASSIGN_OR_RETURN(long long margin,
                              config.GetInt("route_margin_pct", 3));
  if (margin < 0 || margin > 100) {
    return absl::InvalidArgumentError(
        "accelcrypt config: route_margin_pct must be 0..100");
  }
  o.margin_pct = static_cast<uint64_t>(margin);
  const std::string interpose = config.GetOr("interpose", "wins");
  if (interpose != "wins" && interpose != "all") {
    return absl::InvalidArgumentError(absl::StrFormat(
        "accelcrypt config: interpose = %s is not supported (use wins or all)",
        interpose));
  }
  o.interpose_all = interpose == "all";
  ACCELCRYPT_ASSIGN_OR_RETURN(long long threshold,
                              config.GetInt("breaker_threshold", 5));
  ACCELCRYPT_ASSIGN_OR_RETURN(long long cooldown_ms,
                              config.GetInt("breaker_cooldown_ms", 1000));
  ACCELCRYPT_ASSIGN_OR_RETURN(long long replay,
                              config.GetInt("replay_max", 1024));
  if (threshold < 1 || cooldown_ms < 0 || replay < 0) {
    return absl::InvalidArgumentError(
        "accelcrypt config: breaker_threshold must be >= 1, "
        "breaker_cooldown_ms and replay_max >= 0");
  }
  o.breaker_threshold = static_cast<uint64_t>(threshold);
  o.breaker_cooldown_ms = static_cast<uint64_t>(cooldown_ms);
  o.replay_max = static_cast<size_t>(replay);
  ACCELCRYPT_ASSIGN_OR_RETURN(long long offload_min,
                              config.GetInt("offload_min_bits", 0));
  ACCELCRYPT_ASSIGN_OR_RETURN(
      long long rsa_offload_min,
      config.GetInt("rsa_offload_min_bits", offload_min));
  ACCELCRYPT_ASSIGN_OR_RETURN(
      long long dsa_offload_min,
      config.GetInt("dsa_offload_min_bits", offload_min));
  if (offload_min < 0 || rsa_offload_min < 0 || dsa_offload_min < 0) {
    return absl::InvalidArgumentError(
        "accelcrypt config: offload_min_bits, rsa_offload_min_bits and "
        "dsa_offload_min_bits must be >= 0");
  }
  o.rsa_offload_min_bits = static_cast<size_t>(rsa_offload_min);
  o.dsa_offload_min_bits = static_cast<size_t>(dsa_offload_min);
  o.calibration_file = config.Get("calibration_file");
  o.pkey_routes = PkeyRoutes(config);
  o.routes.resize(AllAlgorithms().size());
  for (const AlgorithmInfo& alg : AllAlgorithms()) {
    std::optional<std::string> value =
        config.Get(absl::StrFormat("route.%s", alg.key));
    if (!value.has_value()) continue;
    absl::string_view v = *value;
    Route route;
    route.exclusive = absl::ConsumePrefix(&v, "only:");
    route.backends = Config::SplitList(AsStd(v));
    o.routes[alg.index] = std::move(route);
  }
  return o;
}

const std::optional<RouterOptions::Route>& RouterOptions::RouteFor(
    const AlgorithmInfo& alg) const {
  static const std::optional<Route> kNone;
  return alg.index < routes.size() ? routes[alg.index] : kNone;
}

std::vector<std::vector<size_t>> BuildRoutes(
    absl::Span<const Backend* const> backends, const RouterOptions& options) {
  std::vector<std::vector<size_t>> routes;
  routes.reserve(AllAlgorithms().size());
  for (const AlgorithmInfo& alg : AllAlgorithms()) {
    std::vector<size_t> order;
    auto add = [&](size_t i) {
      if (backends[i]->Capability(alg.id) != nullptr &&
          std::find(order.begin(), order.end(), i) == order.end()) {
        order.push_back(i);
      }
    };
    const std::optional<RouterOptions::Route>& route = options.RouteFor(alg);
    if (route.has_value()) {
      // A route may name a backend absent on this machine: skipped.
      for (const std::string& name : route->backends) {
        for (size_t i = 0; i < backends.size(); ++i) {
          if (backends[i]->name() == name) add(i);
        }
      }
    }
    if (!route.has_value() || !route->exclusive) {
      for (size_t i = 0; i < backends.size(); ++i) add(i);
    }
    routes.push_back(std::move(order));
  }
  return routes;
}

}  // namespace accelcrypt
