// SPDX-License-Identifier: Apache-2.0
// Route construction, apart from the router: the configuration becomes a
// RouterOptions (every routing setting parsed and checked once), and the
// options plus the loaded backends become the per-algorithm routes. The
// router (core/router.cc) takes both and only decides at run time: policy,
// breaker, calibration, fallback.
#ifndef ACCELCRYPT_CORE_ROUTING_OPTIONS_H_
#define ACCELCRYPT_CORE_ROUTING_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/algorithms.h"
#include "core/backend.h"
#include "core/config.h"

namespace accelcrypt {

struct RouterOptions {
  // policy: "auto", "priority" or "fastest".
  std::string policy = "auto";
  // route_margin_pct: a backend earlier in priority order keeps a
  // calibrated route when it is within this many percent of the fastest.
  uint64_t margin_pct = 3;
  uint64_t breaker_threshold = 5;
  uint64_t breaker_cooldown_ms = 1000;
  // replay_max: bytes of GCM / digest input kept to replay on a fallback.
  size_t replay_max = 1024;
  size_t rsa_offload_min_bits = 0;
  size_t dsa_offload_min_bits = 0;
  // calibration_file, when configured (else the search path).
  std::optional<std::string> calibration_file;
  // interpose = all (true) or wins (false, the default): Router::Interposes.
  bool interpose_all = false;

  // A `route.<alg>` setting: backend names in order; `exclusive` ("only:")
  // drops the backends it does not name.
  struct Route {
    std::vector<std::string> backends;
    bool exclusive = false;
  };
  // Per AlgorithmInfo::index; nullopt where no route is configured.
  std::vector<std::optional<Route>> routes;
  // RouteFor is `routes` for `alg`; nullopt also when `routes` is shorter
  // (options built by hand).
  const std::optional<Route>& RouteFor(const AlgorithmInfo& alg) const;
  // `route.rsa-<bits>` / `route.dsa-<bits>`, keyed "rsa-2048" (the value
  // as written: NewPublicKeyOps parses it per key size).
  std::map<std::string, std::string, std::less<>> pkey_routes;

  // FromConfig reads and checks every routing setting; kInvalidArgument
  // naming the setting when one is out of range.
  static absl::StatusOr<RouterOptions> FromConfig(const Config& config);
};

// BuildRoutes returns, per AlgorithmInfo::index, the indexes into
// `backends` (priority order) that serve the algorithm, in routing order:
// a configured route's backends first (those declaring the algorithm),
// then, unless the route is exclusive, every other backend declaring it.
std::vector<std::vector<size_t>> BuildRoutes(
    absl::Span<const Backend* const> backends, const RouterOptions& options);

}  // namespace accelcrypt

#endif  // ACCELCRYPT_CORE_ROUTING_OPTIONS_H_
