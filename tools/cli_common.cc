// SPDX-License-Identifier: Apache-2.0
#include "tools/cli_common.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "core/status.h"

namespace accelcrypt::tools {
namespace {

bool IsDirectory(const std::string& path) {
  std::error_code ec;
  return !path.empty() && std::filesystem::is_directory(path, ec);
}

bool IsFile(const std::string& path) {
  std::error_code ec;
  return !path.empty() && std::filesystem::is_regular_file(path, ec);
}

bool IsNumber(const std::string& s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
}

}  // namespace

absl::StatusOr<std::unique_ptr<Core>> CreateCore(const CoreOptions& options) {
  Config config;
  if (!options.config_file.empty()) {
    ACCELCRYPT_ASSIGN_OR_RETURN(config, Config::LoadFile(options.config_file));
  } else {
    ACCELCRYPT_ASSIGN_OR_RETURN(config, Config::FromEnvironment());
  }
  if (!options.backend_dir.empty()) {
    config.Set("backend_dir", options.backend_dir);
  }
  if (!options.backends.empty()) config.Set("backends", options.backends);
  if (options.selftest_at_load && config.Get("selftest") != "0") {
    config.Set("selftest", "load");
  }
  // list, selftest and calibrate show, test and measure a token backend:
  // started now, not at a first operation. (Its module may load OpenSSL's
  // configuration and so the provider, whose core then finds the backend
  // busy and leaves it for later: no deadlock.)
  config.Set("deferred_start", "load", "the accelcrypt command");
  return Core::Create(std::move(config));
}

bool RunningFromBuildTree() {
  std::error_code ec;
  // The running executable: Linux /proc/self/exe, Solaris
  // /proc/self/path/a.out; elsewhere not known, so not the build tree.
#if defined(__sun)
  auto self = std::filesystem::canonical("/proc/self/path/a.out", ec);
#else
  auto self = std::filesystem::canonical("/proc/self/exe", ec);
#endif
  if (ec) return false;
  auto built = std::filesystem::weakly_canonical(ACCELCRYPT_BUILD_TREE_EXE, ec);
  if (ec) return false;
  return self == built;
}

std::string DefaultModulePath() {
  if (RunningFromBuildTree() && IsFile(ACCELCRYPT_BUILD_TREE_MODULE)) {
    return ACCELCRYPT_BUILD_TREE_MODULE;
  }
  return ACCELCRYPT_INSTALLED_MODULE;
}

std::string DefaultVectorDir() {
  std::vector<std::string> order = {ACCELCRYPT_INSTALLED_VECTOR_DIR,
                                    ACCELCRYPT_SOURCE_VECTOR_DIR};
  if (RunningFromBuildTree()) std::swap(order[0], order[1]);
  for (const auto& dir : order) {
    if (IsDirectory(dir)) return dir;
  }
  return "";
}

std::string DefaultBenchScript() {
  std::vector<std::string> order = {ACCELCRYPT_INSTALLED_BENCH,
                                    ACCELCRYPT_SOURCE_BENCH};
  if (RunningFromBuildTree()) std::swap(order[0], order[1]);
  for (const auto& path : order) {
    if (IsFile(path)) return path;
  }
  return "";
}

void PrintTable(std::ostream& out, const std::vector<std::string>& header,
                const std::vector<std::vector<std::string>>& rows) {
  const size_t cols = header.size();
  std::vector<size_t> width(cols);
  std::vector<bool> numeric(cols, !rows.empty());
  for (size_t c = 0; c < cols; ++c) width[c] = header[c].size();
  for (const auto& row : rows) {
    for (size_t c = 0; c < cols && c < row.size(); ++c) {
      width[c] = std::max(width[c], row[c].size());
      if (!IsNumber(row[c])) numeric[c] = false;
    }
  }
  auto emit = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t c = 0; c < cols; ++c) {
      const std::string cell = c < row.size() ? row[c] : "";
      const std::string pad(width[c] - std::min(width[c], cell.size()), ' ');
      if (c > 0) line += "  ";
      line += numeric[c] ? pad + cell : cell + pad;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  };
  emit(header);
  std::vector<std::string> rule(cols);
  for (size_t c = 0; c < cols; ++c) rule[c] = std::string(width[c], '-');
  emit(rule);
  for (const auto& row : rows) emit(row);
}

}  // namespace accelcrypt::tools
