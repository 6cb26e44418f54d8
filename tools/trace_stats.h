// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_TOOLS_TRACE_STATS_H_
#define ACCELCRYPT_TOOLS_TRACE_STATS_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace accelcrypt::tools {

// TraceCounts sums one (backend, algorithm) cell over every process.
struct TraceCounts {
  uint64_t ops = 0;
  uint64_t bytes = 0;
  uint64_t errors = 0;
  uint64_t fallbacks = 0;
};

// TraceReport is the aggregate of the stats files that the processes of a
// traced command wrote (core/stats.h, Stats::ToJson).
struct TraceReport {
  size_t files = 0;                    // files read successfully
  std::vector<std::string> processes;  // "pid name" per file
  std::vector<std::string> bad_files;  // "path: reason", skipped files
  std::map<std::pair<std::string, std::string>, TraceCounts> cells;

  // AddJson adds one Stats::ToJson document; `origin` names it in errors.
  // kInvalidArgument (nothing added) when it is not that shape.
  absl::Status AddJson(const std::string& text, const std::string& origin);
  nlohmann::json ToJson() const;
};

// AggregateStatsDir reads every accelcrypt-*.json file in `dir` (other
// names, such as in-progress temp files, are ignored). Unreadable or
// malformed files are listed in bad_files; kNotFound when `dir` is missing.
absl::StatusOr<TraceReport> AggregateStatsDir(const std::string& dir);

}  // namespace accelcrypt::tools

#endif  // ACCELCRYPT_TOOLS_TRACE_STATS_H_
