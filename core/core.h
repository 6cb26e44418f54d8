// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_CORE_CORE_H_
#define ACCELCRYPT_CORE_CORE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/config.h"
#include "core/registry.h"
#include "core/router.h"
#include "core/stats.h"

namespace accelcrypt {

// Core is one instance of the whole stack (config, registry, router, stats),
// owned by a front end (the provider's provctx, the PKCS#11 module, the CLI).
// Nothing is global: two providers in one process get two cores. On
// creation its statistics go live in a file under the resolved `stats_dir`
// (core/stats.h ResolveStatsDir); on destruction the final JSON replaces it.
class Core {
 public:
  static absl::StatusOr<std::unique_ptr<Core>> Create(Config config);
  ~Core();

  const Config& config() const { return config_; }
  Registry& registry() { return *registry_; }
  Router& router() { return *router_; }
  Stats& stats() { return *stats_; }
  // FlushStats ends the stats now (also done at destruction): the final
  // JSON file replaces the live one. Once per core.
  void FlushStats();

 private:
  Core() = default;
  Config config_;
  std::unique_ptr<Stats> stats_;
  std::string stats_dir_;  // resolved; empty: none
  std::unique_ptr<Registry> registry_;
  std::unique_ptr<Router> router_;
};

}  // namespace accelcrypt

#endif  // ACCELCRYPT_CORE_CORE_H_
