// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_TOOLS_TRACE_STATS_H_
#define ACCELCRYPT_TOOLS_TRACE_STATS_H_

#include <cstdint>
#include <map>
#include <ostream>
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

// ProcessStats is one stats file: one process image (a core in it).
struct ProcessStats {
  int64_t pid = 0;
  int64_t ppid = 0;
  uint64_t uid = 0;
  std::string name;
  // "ended": torn down cleanly (a .json file); "live": a live file whose
  // process still runs; "gone": a live file whose process left without
  // teardown (_exit, a signal, exec) - its counts are complete.
  std::string state;
  std::string path;
  int64_t created_unix_ms = 0;
  TraceCounts total;
  std::map<std::pair<std::string, std::string>, TraceCounts> cells;
};

// TraceReport is the aggregate of the stats files that processes wrote
// (core/stats.h: live .stats files and final .json files).
struct TraceReport {
  size_t files = 0;                    // files read successfully
  std::vector<std::string> processes;  // "pid name" per file
  std::vector<std::string> bad_files;  // "path: reason", skipped files
  std::map<std::pair<std::string, std::string>, TraceCounts> cells;
  std::vector<ProcessStats> procs;  // one per file read
  size_t live = 0, gone = 0, ended = 0;

  // AddJson adds one Stats::ToJson document; `origin` names it in errors.
  // kInvalidArgument (nothing added) when it is not that shape.
  absl::Status AddJson(const std::string& text, const std::string& origin);
  nlohmann::json ToJson() const;
};

// PrintCells writes the report's backend x algorithm table (non-zero cells),
// or a line saying no operation went through accelcrypt.
void PrintCells(std::ostream& out, const TraceReport& report);

// AggregateStatsDir reads every accelcrypt-*.json and accelcrypt-*.stats
// file in `dir` and in its per-user subdirectories (numeric names, as a
// shared root has them); a .stats file whose .json twin exists is skipped
// (the process ended while it was being replaced). Other names, such as
// in-progress temp files, are ignored. Unreadable or malformed files are
// listed in bad_files; kNotFound when `dir` is missing.
absl::StatusOr<TraceReport> AggregateStatsDir(const std::string& dir);

}  // namespace accelcrypt::tools

#endif  // ACCELCRYPT_TOOLS_TRACE_STATS_H_
