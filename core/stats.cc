// SPDX-License-Identifier: Apache-2.0
#include "core/stats.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"

namespace accelcrypt {
namespace {

std::string ProcessName() {
  std::ifstream in("/proc/self/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

std::atomic<uint64_t> g_write_seq{0};

}  // namespace

Stats::Stats()
    : num_algs_(AllAlgorithms().size()),
      cells_(new Counter[kMaxBackends * AllAlgorithms().size()]) {}

size_t Stats::RegisterBackend(std::string_view name) {
  for (size_t i = 0; i < names_.size(); ++i) {
    if (names_[i] == name) return i;
  }
  if (names_.size() == kMaxBackends) return kMaxBackends - 1;
  names_.emplace_back(name);
  return names_.size() - 1;
}

std::string Stats::ToJson() const {
  nlohmann::json backends = nlohmann::json::object();
  for (size_t b = 0; b < names_.size(); ++b) {
    nlohmann::json algs = nlohmann::json::object();
    for (const AlgorithmInfo& alg : AllAlgorithms()) {
      const Counter& c = cells_[b * num_algs_ + alg.index];
      uint64_t ops = c.ops.load(std::memory_order_relaxed);
      uint64_t bytes = c.bytes.load(std::memory_order_relaxed);
      uint64_t errors = c.errors.load(std::memory_order_relaxed);
      uint64_t fallbacks = c.fallbacks.load(std::memory_order_relaxed);
      if (ops == 0 && bytes == 0 && errors == 0 && fallbacks == 0) continue;
      algs[std::string(alg.name)] = {{"ops", ops},
                                     {"bytes", bytes},
                                     {"errors", errors},
                                     {"fallbacks", fallbacks}};
    }
    backends[names_[b]] = std::move(algs);
  }
  nlohmann::json doc = {{"pid", static_cast<int64_t>(getpid())},
                        {"process", ProcessName()},
                        {"backends", std::move(backends)}};
  return doc.dump();
}

absl::Status Stats::WriteToDir(const std::string& dir) const {
  std::string json = ToJson();
  uint64_t seq = g_write_seq.fetch_add(1, std::memory_order_relaxed);
  std::string final_path =
      absl::StrFormat("%s/accelcrypt-%d-%d.json", dir, getpid(), seq);
  std::string tmp_path = final_path + ".tmp";
  int fd = open(tmp_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                0644);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrFormat(
        "cannot write stats to %s: %s", tmp_path, std::strerror(errno)));
  }
  size_t off = 0;
  while (off < json.size()) {
    ssize_t n = write(fd, json.data() + off, json.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      int saved = errno;
      close(fd);
      unlink(tmp_path.c_str());
      return absl::UnavailableError(absl::StrFormat(
          "cannot write stats to %s: %s", tmp_path, std::strerror(saved)));
    }
    off += static_cast<size_t>(n);
  }
  close(fd);
  if (rename(tmp_path.c_str(), final_path.c_str()) != 0) {
    int saved = errno;
    unlink(tmp_path.c_str());
    return absl::UnavailableError(absl::StrFormat(
        "cannot rename stats file %s: %s", final_path, std::strerror(saved)));
  }
  return absl::OkStatus();
}

}  // namespace accelcrypt
