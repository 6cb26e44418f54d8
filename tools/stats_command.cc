// SPDX-License-Identifier: Apache-2.0
// `accelcrypt stats [DIR]`: what the processes that loaded accelcrypt have
// counted, live or finished (core/stats.h writes the files).
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/stats.h"
#include "tools/commands.h"
#include "tools/trace_stats.h"

namespace accelcrypt::tools {
namespace {

std::string StartedAt(int64_t unix_ms) {
  if (unix_ms <= 0) return "-";
  time_t t = static_cast<time_t>(unix_ms / 1000);
  struct tm tm = {};
  localtime_r(&t, &tm);
  char buf[32];
  strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string Rate(double bytes_per_s) {
  const char* units[] = {"B/s", "KB/s", "MB/s", "GB/s"};
  int u = 0;
  while (bytes_per_s >= 1000 && u < 3) {
    bytes_per_s /= 1000;
    ++u;
  }
  return absl::StrFormat("%.1f %s", bytes_per_s, units[u]);
}

// Previous byte counts per file, for --watch rates.
using Snapshot = std::map<std::string, uint64_t>;

void PrintStats(std::ostream& out, const std::string& dir,
                const TraceReport& report, bool all, const Snapshot* before,
                double interval_s) {
  out << "accelcrypt stats: " << dir << ": " << report.files << " process"
      << (report.files == 1 ? "" : "es") << " (" << report.live << " running, "
      << report.ended << " ended, " << report.gone
      << " left without teardown)\n";
  std::vector<std::vector<std::string>> rows;
  size_t idle = 0;
  for (const ProcessStats& p : report.procs) {
    if (!all && p.total.ops == 0 && p.total.errors == 0) {
      ++idle;
      continue;
    }
    std::vector<std::string> row = {std::to_string(p.pid),
                                    std::to_string(p.ppid),
                                    std::to_string(p.uid),
                                    p.name,
                                    // The file says "live"; the table says
                                    // what an operator reads (docs/sysadmin.md).
                                    p.state == "live" ? "running" : p.state,
                                    StartedAt(p.created_unix_ms),
                                    std::to_string(p.total.ops),
                                    std::to_string(p.total.bytes)};
    if (before != nullptr) {
      auto it = before->find(p.path);
      uint64_t prev = it == before->end() ? 0 : it->second;
      row.push_back(
          interval_s > 0 && p.total.bytes >= prev
              ? Rate(static_cast<double>(p.total.bytes - prev) / interval_s)
              : "-");
    }
    rows.push_back(std::move(row));
  }
  if (!rows.empty()) {
    out << "\nper process:\n";
    std::vector<std::string> header = {"pid",   "ppid",    "uid", "process",
                                       "state", "started", "ops", "bytes"};
    if (before != nullptr) header.push_back("rate");
    PrintTable(out, header, rows);
  }
  if (idle > 0) {
    out << "  (" << idle << " process" << (idle == 1 ? "" : "es")
        << " loaded accelcrypt and did no operation through it; --all lists "
           "them)\n";
  }
  out << "\nper backend and algorithm (all processes):\n";
  PrintCells(out, report);
  for (const std::string& bad : report.bad_files) {
    out << "skipped: " << bad << "\n";
  }
}

int Prune(const TraceReport& report) {
  size_t removed = 0, failed = 0;
  for (const ProcessStats& p : report.procs) {
    if (p.state == "live") continue;
    std::error_code ec;
    if (std::filesystem::remove(p.path, ec)) {
      ++removed;
    } else if (ec) {
      ++failed;
      std::cerr << "accelcrypt stats: cannot remove " << p.path << ": "
                << ec.message() << "\n";
    }
  }
  std::cout << "pruned " << removed << " file" << (removed == 1 ? "" : "s")
            << " of processes that are no longer running\n";
  return failed == 0 ? kExitOk : kExitFailure;
}

}  // namespace

std::string DefaultStatsDir() {
  if (const char* env = std::getenv("ACCELCRYPT_STATS_DIR");
      env != nullptr && *env != '\0') {
    return env;
  }
  return DefaultStatsRoot();
}

int RunStats(const StatsOptions& options) {
  const std::string dir = options.dir.empty() ? DefaultStatsDir() : options.dir;
  if (dir.empty()) {
    std::cerr << "accelcrypt stats: no directory given and this build has no "
                 "default (ACCELCRYPT_STATS_ROOT is empty)\n";
    return kExitUsage;
  }
  if (options.watch < 0 || options.iterations < 0) {
    std::cerr << "accelcrypt stats: --watch and --iterations must be >= 0\n";
    return kExitUsage;
  }
  if (options.watch > 0 && options.prune) {
    std::cerr << "accelcrypt stats: --prune does not go with --watch\n";
    return kExitUsage;
  }
  Snapshot before;
  for (int round = 0;; ++round) {
    auto report = AggregateStatsDir(dir);
    if (!report.ok()) {
      std::cerr << "accelcrypt stats: " << report.status().message();
      if (options.dir.empty()) {
        std::cerr << " (the package creates it at boot through "
                     "systemd-tmpfiles; or set stats_dir / "
                     "ACCELCRYPT_STATS_DIR and name that directory)";
      }
      std::cerr << "\n";
      return kExitSetup;
    }
    if (options.json) {
      nlohmann::json j = report->ToJson();
      j["dir"] = dir;
      std::cout << j.dump(options.watch > 0 ? -1 : 2) << "\n" << std::flush;
    } else if (options.watch > 0) {
      // Like top: redraw in place.
      std::cout << "\033[H\033[2J"
                << StartedAt(static_cast<int64_t>(time(nullptr)) * 1000)
                << "  (every " << options.watch << " s; Ctrl-C ends)\n";
      PrintStats(std::cout, dir, *report, options.all,
                 round == 0 ? nullptr : &before, options.watch);
      std::cout << std::flush;
    } else {
      PrintStats(std::cout, dir, *report, options.all, nullptr, 0);
    }
    if (options.watch <= 0) {
      return options.prune ? Prune(*report) : kExitOk;
    }
    if (options.iterations > 0 && round + 1 >= options.iterations) {
      return kExitOk;
    }
    before.clear();
    for (const ProcessStats& p : report->procs) before[p.path] = p.total.bytes;
    std::this_thread::sleep_for(std::chrono::duration<double>(options.watch));
  }
}

}  // namespace accelcrypt::tools
