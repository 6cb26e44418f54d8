// SPDX-License-Identifier: Apache-2.0
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_join.h"
#include "core/algorithms.h"
#include "core/vector_runner.h"
#include "nlohmann/json.hpp"
#include "tools/commands.h"

namespace accelcrypt::tools {
namespace {

struct Cell {
  size_t passed = 0;
  size_t failed = 0;
  size_t skipped = 0;
  bool claimed = false;
  std::vector<std::string> failures;
};

std::string SuiteAlgorithms(const VectorSuite& suite) {
  std::vector<std::string> names;
  for (accelcrypt_alg alg : suite.algs) {
    const AlgorithmInfo* info = FindAlgorithm(alg);
    names.push_back(info != nullptr ? std::string(info->name) : "?");
  }
  return names.empty() ? std::string("(unknown)") : absl::StrJoin(names, "/");
}

}  // namespace

int RunSelftest(const SelftestOptions& options) {
  const std::string dir =
      options.vector_dir.empty() ? DefaultVectorDir() : options.vector_dir;
  if (dir.empty()) {
    std::cerr << "accelcrypt selftest: no vector directory found (looked for "
              << ACCELCRYPT_INSTALLED_VECTOR_DIR << " and "
              << ACCELCRYPT_SOURCE_VECTOR_DIR << "); pass --vectors DIR\n";
    return kExitUsage;
  }
  auto suites_or = DiscoverVectorSuites(dir);
  if (!suites_or.ok()) {
    std::cerr << "accelcrypt selftest: cannot read vectors in " << dir << ": "
              << suites_or.status().ToString() << "\n";
    return kExitUsage;
  }
  const std::vector<VectorSuite>& suites = *suites_or;
  if (suites.empty()) {
    std::cerr << "accelcrypt selftest: no vector files under " << dir << "\n";
    return kExitUsage;
  }
  auto core_or = CreateCore(options.core);
  if (!core_or.ok()) {
    std::cerr << "accelcrypt selftest: cannot set up the core: "
              << core_or.status().ToString() << "\n";
    return kExitSetup;
  }
  Registry& registry = (*core_or)->registry();

  std::vector<const Backend*> backends;
  for (const auto& backend : registry.backends()) {
    if (!options.only_backends.empty() &&
        std::find(options.only_backends.begin(), options.only_backends.end(),
                  backend->name()) == options.only_backends.end()) {
      continue;
    }
    backends.push_back(backend.get());
  }
  for (const auto& wanted : options.only_backends) {
    if (registry.Find(wanted) == nullptr) {
      std::cerr << "accelcrypt selftest: backend '" << wanted
                << "' is not loaded (see `accelcrypt list`)\n";
      return kExitUsage;
    }
  }
  if (backends.empty()) {
    std::cerr << "accelcrypt selftest: no backend loaded\n";
    return kExitFailure;
  }

  const bool progress = isatty(STDERR_FILENO) && !options.json;
  const size_t total_steps = backends.size() * suites.size();
  size_t step = 0;
  // (backend, algorithm label) -> results, kept in a stable print order.
  std::vector<std::pair<std::string, std::string>> order;
  std::map<std::pair<std::string, std::string>, Cell> cells;
  size_t errors = 0;
  std::vector<std::string> error_messages;

  for (const Backend* backend : backends) {
    for (const VectorSuite& suite : suites) {
      ++step;
      if (progress) {
        std::cerr << "\r\033[K[" << step << "/" << total_steps << "] "
                  << backend->name() << " " << suite.relative << std::flush;
      }
      const std::pair<std::string, std::string> key(
          std::string(backend->name()), SuiteAlgorithms(suite));
      if (cells.find(key) == cells.end()) order.push_back(key);
      Cell& cell = cells[key];
      for (accelcrypt_alg alg : suite.algs) {
        if (backend->Capability(alg) != nullptr) cell.claimed = true;
      }
      auto result = RunVectorSuite(*backend, suite);
      if (!result.ok()) {
        ++errors;
        ++cell.failed;
        const std::string msg = std::string(backend->name()) + ": " +
                                suite.relative + ": " +
                                result.status().ToString();
        error_messages.push_back(msg);
        cell.failures.push_back(msg);
        continue;
      }
      cell.passed += result->passed;
      cell.failed += result->failed;
      cell.skipped += result->skipped;
      for (const auto& f : result->failures) {
        cell.failures.push_back(std::string(backend->name()) + ": " + f);
      }
    }
  }
  if (progress) std::cerr << "\r\033[K" << std::flush;

  size_t passed = 0, failed = 0, skipped = 0;
  for (const auto& [key, cell] : cells) {
    passed += cell.passed;
    failed += cell.failed;
    skipped += cell.skipped;
  }
  const bool ok = failed == 0 && errors == 0 && passed > 0;

  if (options.json) {
    nlohmann::json out;
    out["vector_dir"] = dir;
    out["files"] = suites.size();
    out["results"] = nlohmann::json::array();
    for (const auto& key : order) {
      const Cell& cell = cells[key];
      out["results"].push_back({{"backend", key.first},
                                {"algorithm", key.second},
                                {"claimed", cell.claimed},
                                {"passed", cell.passed},
                                {"failed", cell.failed},
                                {"skipped", cell.skipped},
                                {"failures", cell.failures}});
    }
    out["passed"] = passed;
    out["failed"] = failed;
    out["skipped"] = skipped;
    out["ok"] = ok;
    std::cout << out.dump(2) << "\n";
    return ok ? kExitOk : kExitFailure;
  }

  std::cout << "Vectors: " << dir << " (" << suites.size() << " files)\n\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& key : order) {
    const Cell& cell = cells[key];
    std::string verdict;
    if (cell.failed > 0) {
      verdict = "FAIL";
    } else if (!cell.claimed) {
      verdict = "not claimed";
    } else if (cell.passed == 0) {
      verdict = "skipped";
    } else {
      verdict = "ok";
    }
    rows.push_back({key.first, key.second, std::to_string(cell.passed),
                    std::to_string(cell.failed), std::to_string(cell.skipped),
                    verdict});
  }
  PrintTable(std::cout,
             {"backend", "algorithm", "passed", "failed", "skipped", "result"},
             rows);

  std::vector<std::string> shown;
  for (const auto& key : order) {
    for (const auto& f : cells[key].failures) shown.push_back(f);
  }
  if (!shown.empty()) {
    std::cout << "\nFailures:\n";
    const size_t limit = options.verbose ? shown.size() : 20;
    for (size_t i = 0; i < shown.size() && i < limit; ++i) {
      std::cout << "  " << shown[i] << "\n";
    }
    if (shown.size() > limit) {
      std::cout << "  ... " << shown.size() - limit
                << " more (--verbose shows all)\n";
    }
  }
  std::cout << "\nselftest: " << passed << " passed, " << failed << " failed, "
            << skipped << " skipped\n";
  if (passed == 0 && failed == 0) {
    std::cerr << "accelcrypt selftest: no vector ran on any backend\n";
  }
  return ok ? kExitOk : kExitFailure;
}

}  // namespace accelcrypt::tools
