// SPDX-License-Identifier: Apache-2.0
#include "tools/routing_table.h"

#include <sstream>
#include <string>
#include <vector>

#include "core/algorithms.h"
#include "core/calibration.h"
#include "tools/cli_common.h"

namespace accelcrypt::tools {
namespace {

// JoinNames is "a > b > c" (fastest first).
std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : " > ") + n;
  return out;
}

}  // namespace

void PrintRoutingPolicy(std::ostream& out, const Router& router) {
  out << "\nRouting policy: " << router.policy() << "\n";
  for (const std::string& note : router.notes()) out << "  " << note << "\n";
  if (router.policy() != "fastest") return;
  for (const char* family : {"rsa", "dsa"}) {
    const auto buckets = router.PkeyBuckets(family);
    if (buckets.empty()) continue;
    out << "  " << (family[0] == 'r' ? "RSA" : "DSA")
        << " backend by key size (the nearest measured size >= the key's, "
           "else the largest; route." << family << "-BITS wins):\n";
    for (const auto& [bits, ranked] : buckets) {
      out << "    " << bits << " bits: " << JoinNames(ranked) << "\n";
    }
  }
  std::vector<std::string> header = {"algorithm"};
  for (uint64_t bucket : Calibration::SizeBuckets()) {
    header.push_back("<=" + std::to_string(bucket) + " B");
  }
  std::vector<std::vector<std::string>> rows;
  for (const AlgorithmInfo& alg : AllAlgorithms()) {
    if (!router.SizeRouted(alg)) continue;
    std::vector<std::string> row = {std::string(alg.name)};
    for (uint64_t bucket : Calibration::SizeBuckets()) {
      std::vector<std::string> ranked = router.FastestFor(alg, bucket);
      row.push_back(ranked.empty() ? std::string("(priority)") : ranked[0]);
    }
    rows.push_back(std::move(row));
  }
  if (rows.empty()) {
    out << "  no algorithm is routed by size (priority order applies)\n";
    return;
  }
  out << "  backend used per input size (the first update's size for "
         "ciphers and digests; larger inputs use the last column):\n";
  std::ostringstream table;
  PrintTable(table, header, rows);
  std::istringstream lines(table.str());
  for (std::string line; std::getline(lines, line);)
    out << "  " << line << "\n";
}

nlohmann::json RoutingPolicyJson(const Router& router) {
  nlohmann::json j;
  j["policy"] = router.policy();
  j["notes"] = nlohmann::json::array();
  for (const std::string& note : router.notes()) j["notes"].push_back(note);
  j["fastest_pkey"] = nlohmann::json::object();
  for (const char* family : {"rsa", "dsa"}) {
    const auto buckets = router.PkeyBuckets(family);
    if (buckets.empty()) continue;
    nlohmann::json jb = nlohmann::json::object();
    for (const auto& [bits, ranked] : buckets) jb[std::to_string(bits)] = ranked;
    j["fastest_pkey"][family] = std::move(jb);
  }
  j["fastest"] = nlohmann::json::object();
  for (const AlgorithmInfo& alg : AllAlgorithms()) {
    if (!router.SizeRouted(alg)) continue;
    nlohmann::json buckets = nlohmann::json::object();
    for (uint64_t bucket : Calibration::SizeBuckets()) {
      buckets[std::to_string(bucket)] = router.FastestFor(alg, bucket);
    }
    j["fastest"][std::string(alg.name)] = std::move(buckets);
  }
  return j;
}

}  // namespace accelcrypt::tools
