// SPDX-License-Identifier: Apache-2.0
#include "core/core.h"

#include <cstdio>

namespace accelcrypt {

absl::StatusOr<std::unique_ptr<Core>> Core::Create(Config config) {
  if (absl::Status st = config.Validate(); !st.ok()) return st;
  std::unique_ptr<Core> core(new Core());
  core->config_ = std::move(config);
  core->stats_ = std::make_unique<Stats>();
  auto registry = Registry::Create(core->config_);
  if (!registry.ok()) return registry.status();
  core->registry_ = *std::move(registry);
  auto router =
      Router::Create(core->registry_.get(), core->config_, core->stats_.get());
  if (!router.ok()) return router.status();
  core->router_ = *std::move(router);
  return core;
}

Core::~Core() {
  FlushStats();
  // The router refers to the registry's backends: drop it first.
  router_.reset();
  registry_.reset();
}

void Core::FlushStats() {
  auto dir = config_.Get("stats_dir");
  if (!dir.has_value() || dir->empty() || stats_ == nullptr) return;
  absl::Status st = stats_->WriteToDir(*dir);
  if (!st.ok() && config_.GetOr("log_level", "").size() > 0) {
    std::fprintf(stderr, "accelcrypt: %s\n", std::string(st.message()).c_str());
  }
}

}  // namespace accelcrypt
