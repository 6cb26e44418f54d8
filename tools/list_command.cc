// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "core/algorithms.h"
#include "nlohmann/json.hpp"
#include "tools/commands.h"
#include "tools/cpu_features.h"
#include "tools/openssl_cnf_check.h"
#include "tools/routing_table.h"

namespace accelcrypt::tools {
namespace {

// EventResult labels a load event: a backend the configuration kept out
// (`backends`, `disable`) or one that found no device is not a failure.
const char* EventResult(const LoadEvent& event) {
  if (event.ok) return "ok";
  if (event.excluded) return "excluded";
  if (event.declined) return "declined";
  return "FAILED";
}

std::vector<std::string> CapabilityFlags(const accelcrypt_capability& cap) {
  std::vector<std::string> flags = CapabilityNames(cap);
  if (cap.min_key_bits != 0 || cap.max_key_bits != 0) {
    flags.push_back(std::to_string(cap.min_key_bits) + "-" +
                    std::to_string(cap.max_key_bits) + "-bit");
  }
  return flags;
}

std::string AlgorithmName(accelcrypt_alg alg) {
  const AlgorithmInfo* info = FindAlgorithm(alg);
  if (info != nullptr) return std::string(info->name);
  char buf[32];
  std::snprintf(buf, sizeof(buf), "alg-0x%08x", alg);
  return buf;
}

nlohmann::json CpuJson(const CpuFeatureSet& cpu) {
  nlohmann::json j;
  j["cpuid"] = cpu.cpuid_available;
  j["vendor"] = cpu.vendor;
  j["centaur_leaves"] = cpu.centaur_leaves;
  nlohmann::json features = nlohmann::json::object();
  for (int i = 0; i < cpu.num_features; ++i) {
    features[cpu.features[i].name] = {{"present", cpu.features[i].present},
                                      {"usable", cpu.features[i].usable}};
  }
  j["features"] = features;
  return j;
}

void PrintCpu(const CpuFeatureSet& cpu) {
  std::cout << "\nCPU features (CPUID as this process sees it; each backend's "
               "own view is its describe line above):\n";
  if (!cpu.cpuid_available) {
    std::cout << "  CPUID not available on this architecture\n";
    return;
  }
  std::cout << "  vendor        " << cpu.vendor << "\n";
  for (int i = 0; i < cpu.num_features; ++i) {
    const CpuFeature& f = cpu.features[i];
    const char* state = f.usable    ? "yes"
                        : f.present ? "present, not enabled (OS/firmware)"
                                    : "no";
    std::cout << "  " << f.name
              << std::string(14 - std::min<size_t>(13, strlen(f.name)), ' ')
              << state << "\n";
  }
  if (!cpu.centaur_leaves) {
    std::cout << "  padlock       no (no Centaur CPUID leaves: not a VIA/"
                 "Zhaoxin CPU)\n";
  }
}

// OpensslCnfJson is the check of the openssl.cnf OpenSSL programs read
// here (tools/openssl_cnf_check.h): a key misspelt there never reaches the
// provider, so `list` is where it shows.
nlohmann::json OpensslCnfJson() {
  const std::string path = OpensslCnfInUse();
  nlohmann::json j = {{"path", path}};
  absl::StatusOr<OpensslCnfReport> report = CheckOpensslCnf(path);
  if (!report.ok()) {
    j["error"] = std::string(report.status().message());
    return j;
  }
  j["sections"] = report->sections;
  j["mistakes"] = report->mistakes;
  return j;
}

void PrintOpensslCnf(const nlohmann::json& j) {
  std::cout << "\nopenssl.cnf in use (" << j["path"].get<std::string>()
            << "):\n";
  if (j.contains("error")) {
    std::cout << "  cannot check it: " << j["error"].get<std::string>() << "\n";
    return;
  }
  if (j["sections"].empty()) {
    std::cout << "  no provider section loads accelcrypt (OpenSSL programs "
                 "load it only when asked; `accelcrypt enable` adds it)\n";
    return;
  }
  for (const auto& s : j["sections"]) {
    std::cout << "  loads accelcrypt: " << s.get<std::string>() << "\n";
  }
  if (j["mistakes"].empty()) std::cout << "  no mistake in its keys\n";
  for (const auto& m : j["mistakes"]) {
    std::cout << "  MISTAKE " << m.get<std::string>() << "\n";
  }
}

// CalibrationJson / PrintCalibration: the calibration in use and how much
// of the routing it covers (Router::CalibrationStatus).
nlohmann::json CalibrationJson(const Router& router) {
  const Router::CalibrationStatus& c = router.calibration_status();
  return {{"state", c.state},
          {"file", c.path},
          {"why", c.why},
          {"unmeasured", c.unmeasured},
          {"declared", c.declared}};
}

void PrintCalibration(const Router& router) {
  const Router::CalibrationStatus& c = router.calibration_status();
  std::cout << "\nCalibration: " << c.state;
  if (!c.path.empty()) std::cout << " (" << c.path << ")";
  if (c.state == "none" || c.state == "stale") {
    std::cout << ": " << c.why << "; routes as declared";
  } else if (c.state == "partial") {
    std::cout << ": it did not measure " << absl::StrJoin(c.unmeasured, ", ")
              << " (loaded now), whose places stay as declared";
  }
  std::cout << "\n";
  if (!c.declared.empty()) {
    std::cout << "  declared route kept (measured slower through the "
                 "provider): "
              << absl::StrJoin(c.declared, ", ") << "\n";
  }
}

}  // namespace

int RunList(const ListOptions& options) {
  auto core_or = CreateCore(options.core);
  if (!core_or.ok()) {
    std::cerr << "accelcrypt list: cannot set up the core: "
              << core_or.status().ToString() << "\n";
    return kExitSetup;
  }
  Core& core = **core_or;
  Registry& registry = core.registry();
  Router& router = core.router();
  const CpuFeatureSet cpu = ReadCpuFeatures();
  if (options.selftest) router.SelfTestAll();
  std::vector<LoadEvent> events(registry.events().begin(),
                                registry.events().end());
  for (LoadEvent& e : router.SelfTestEvents()) events.push_back(std::move(e));
  // By Router::SelfTestState.
  const std::array<size_t, 4> kat_counts = router.SelfTestCounts();
  const char* mode = registry.selftest_mode() == SelfTestMode::kLoad ? "load"
                     : registry.selftest_mode() == SelfTestMode::kOff
                         ? "off"
                         : "first-use";

  if (options.json) {
    nlohmann::json out;
    out["version"] = ACCELCRYPT_VERSION;
    out["backend_dirs"] = nlohmann::json::array();
    for (const auto& dir : registry.backend_dirs()) {
      out["backend_dirs"].push_back(dir);
    }
    out["backends"] = nlohmann::json::array();
    for (const auto& backend : registry.backends()) {
      nlohmann::json b;
      b["name"] = std::string(backend->name());
      b["version"] = std::string(backend->version());
      b["origin"] = std::string(backend->origin());
      b["hardware"] = backend->hardware();
      b["describe"] = backend->Describe();
      b["algorithms"] = nlohmann::json::array();
      for (const auto& cap : backend->capabilities()) {
        b["algorithms"].push_back({{"name", AlgorithmName(cap.alg)},
                                   {"flags", CapabilityFlags(cap)},
                                   {"alignment", cap.alignment},
                                   {"max_chunk", cap.max_chunk}});
      }
      out["backends"].push_back(b);
    }
    out["events"] = nlohmann::json::array();
    out["selftest"] = {{"mode", mode},
                       {"passed", kat_counts[0]},
                       {"pending", kat_counts[1] + kat_counts[2]},
                       {"failed", kat_counts[3]}};
    for (const auto& event : events) {
      out["events"].push_back({{"backend", event.backend},
                               {"algorithm", event.algorithm},
                               {"ok", event.ok},
                               {"result", EventResult(event)},
                               {"message", event.message}});
    }
    out["routes"] = nlohmann::json::object();
    for (const auto& alg : AllAlgorithms()) {
      out["routes"][std::string(alg.name)] = router.Candidates(alg.id);
    }
    out["routing"] = RoutingPolicyJson(router);
    out["calibration"] = CalibrationJson(router);
    out["interpose"] = InterpositionJson(router);
    out["cpu"] = CpuJson(cpu);
    out["openssl_cnf"] = OpensslCnfJson();
    std::cout << out.dump(2) << "\n";
    return registry.backends().empty() ? kExitFailure : kExitOk;
  }

  std::cout << "accelcrypt " << ACCELCRYPT_VERSION << "\n";
  std::cout << "Backend directories searched: "
            << (registry.backend_dirs().empty()
                    ? std::string("(none)")
                    : absl::StrJoin(registry.backend_dirs(), ", "))
            << "\n";

  std::cout << "\nBackends, in priority order:\n";
  if (registry.backends().empty()) std::cout << "  (none loaded)\n";
  for (const auto& backend : registry.backends()) {
    std::cout << "\n  " << backend->name() << " " << backend->version() << "  ["
              << (backend->hardware() ? "hardware" : "software") << "]  from "
              << backend->origin() << "\n";
    const std::string describe = backend->Describe();
    if (!describe.empty()) std::cout << "    " << describe << "\n";
    std::vector<std::vector<std::string>> rows;
    for (const auto& cap : backend->capabilities()) {
      rows.push_back({AlgorithmName(cap.alg),
                      absl::StrJoin(CapabilityFlags(cap), ","),
                      std::to_string(cap.alignment),
                      cap.max_chunk == 0 ? std::string("unlimited")
                                         : std::to_string(cap.max_chunk)});
    }
    std::ostringstream table;
    PrintTable(table, {"algorithm", "capabilities", "align", "max chunk"},
               rows);
    std::istringstream lines(table.str());
    for (std::string line; std::getline(lines, line);) {
      std::cout << "    " << line << "\n";
    }
  }

  std::vector<std::vector<std::string>> event_rows;
  size_t hidden = 0;
  for (const auto& event : events) {
    if (event.ok && !options.all_events) {
      ++hidden;
      continue;
    }
    event_rows.push_back({EventResult(event), event.backend,
                          event.algorithm.empty() ? "-" : event.algorithm,
                          event.message});
  }
  std::cout << "\nLoad events";
  if (hidden > 0)
    std::cout << " (" << hidden
              << " successful ones hidden; "
                 "--all-events shows them)";
  std::cout << ":\n";
  if (event_rows.empty()) {
    std::cout << "  (no backend declined, no self-test failed)\n";
  } else {
    std::ostringstream table;
    PrintTable(table, {"result", "backend", "algorithm", "message"},
               event_rows);
    std::istringstream lines(table.str());
    for (std::string line; std::getline(lines, line);) {
      std::cout << "  " << line << "\n";
    }
  }

  std::cout << "\nKnown-answer self-tests (selftest = " << mode << "): ";
  if (registry.selftest_mode() == SelfTestMode::kOff) {
    std::cout << "off\n";
  } else {
    std::cout << kat_counts[0] << " passed, " << kat_counts[3] << " failed";
    if (kat_counts[1] + kat_counts[2] > 0) {
      std::cout << ", " << kat_counts[1] + kat_counts[2]
                << " not run yet (each runs at its algorithm's first use on "
                   "that backend; --selftest runs them now)";
    }
    std::cout << "\n";
  }

  std::cout << "\nRouting order per algorithm:\n";
  std::vector<std::vector<std::string>> route_rows;
  for (const auto& alg : AllAlgorithms()) {
    auto candidates = router.Candidates(alg.id);
    route_rows.push_back(
        {std::string(alg.name), candidates.empty()
                                    ? std::string("(no backend)")
                                    : absl::StrJoin(candidates, ", ")});
  }
  std::ostringstream table;
  PrintTable(table,
             {"algorithm",
              "backends (first is used, the rest are "
              "fallbacks)"},
             route_rows);
  std::istringstream lines(table.str());
  for (std::string line; std::getline(lines, line);) {
    std::cout << "  " << line << "\n";
  }
  PrintRoutingPolicy(std::cout, router);
  PrintCalibration(router);
  PrintInterposition(std::cout, router);

  PrintOpensslCnf(OpensslCnfJson());
  PrintCpu(cpu);
  if (registry.backends().empty()) {
    std::cerr << "accelcrypt list: no backend loaded\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace accelcrypt::tools
