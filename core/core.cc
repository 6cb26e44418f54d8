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
  // Live statistics (core/stats.h): the file is made at the first counted
  // operation, before its count, so no exit path loses a count.
  auto dir =
      ResolveStatsDir(core->config_.Get("stats_dir"), DefaultStatsRoot());
  if (!dir.ok()) {
    std::fprintf(stderr,
                 "accelcrypt: %s; statistics of this process are not "
                 "recorded\n",
                 std::string(dir.status().message()).c_str());
  } else if (!dir->empty()) {
    // The file is made at the first counted operation (Stats::Arm): a
    // process that does no crypto through accelcrypt makes none. When it
    // cannot be made, the JSON file is still tried at teardown.
    core->stats_dir_ = *dir;
    core->stats_->GoLiveAtFirstUse(
        *dir, !core->config_.GetOr("log_level", "").empty());
  }
  return core;
}

Core::~Core() {
  FlushStats();
  // The router refers to the registry's backends: drop it first.
  router_.reset();
  registry_.reset();
}

void Core::FlushStats() {
  if (stats_ == nullptr) return;
  absl::Status st = stats_->Finish(stats_dir_);
  if (!st.ok() && !config_.GetOr("log_level", "").empty()) {
    std::fprintf(stderr, "accelcrypt: %s\n", std::string(st.message()).c_str());
  }
}

}  // namespace accelcrypt
