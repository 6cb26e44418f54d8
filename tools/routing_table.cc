// SPDX-License-Identifier: Apache-2.0
#include "tools/routing_table.h"

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
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

constexpr size_t kPkeyBits[] = {1024, 2048, 3072, 4096};

// Ops lists an algorithm's directions: a cipher's encryption and
// decryption are routed apart, a digest has one.
std::vector<std::pair<const char*, bool>> Ops(const AlgorithmInfo& alg) {
  if (alg.family == Family::kCipher) {
    return {{"encrypt", false}, {"decrypt", true}};
  }
  return {{"-", false}};
}

// PkeyOps lists the public-key rows: the algorithm and whether the row is
// its public operation.
struct PkeyOp {
  accelcrypt_alg alg;
  const char* label;
  bool public_op;
};
constexpr PkeyOp kPkeyOps[] = {
    {ACCELCRYPT_ALG_RSA_SIGN, "RSA sign", false},
    {ACCELCRYPT_ALG_RSA_SIGN, "RSA verify", true},
    {ACCELCRYPT_ALG_RSA_CRYPT, "RSA decrypt", false},
    {ACCELCRYPT_ALG_RSA_CRYPT, "RSA encrypt", true},
    {ACCELCRYPT_ALG_DSA_SIGN, "DSA sign", false},
    {ACCELCRYPT_ALG_DSA_SIGN, "DSA verify", true},
};

void PrintIndented(std::ostream& out, const std::vector<std::string>& header,
                   const std::vector<std::vector<std::string>>& rows) {
  std::ostringstream table;
  PrintTable(table, header, rows);
  std::istringstream lines(table.str());
  for (std::string line; std::getline(lines, line);) {
    out << "  " << line << "\n";
  }
}

}  // namespace

void PrintRoutingPolicy(std::ostream& out, const Router& router) {
  out << "\nRouting policy: " << router.policy()
      << (router.policy() == "auto" ? " (the default)" : "") << "\n";
  for (const std::string& note : router.notes()) out << "  " << note << "\n";

  // The route per algorithm, direction and input size, and why.
  std::vector<std::string> header = {"algorithm", "op"};
  for (uint64_t bucket : Calibration::SizeBuckets()) {
    header.push_back("<=" + std::to_string(bucket) + " B");
  }
  header.push_back("why");
  std::vector<std::vector<std::string>> rows;
  for (const AlgorithmInfo& alg : AllAlgorithms()) {
    if (alg.family != Family::kCipher && alg.family != Family::kDigest) {
      continue;
    }
    if (!router.Supports(alg.id)) continue;
    for (const auto& [op, decrypt] : Ops(alg)) {
      std::vector<std::string> row = {std::string(alg.name), op};
      std::vector<std::string> whys;
      for (uint64_t bucket : Calibration::SizeBuckets()) {
        const Router::RouteChoice c = router.Chosen(alg, bucket, decrypt);
        row.push_back(c.backend.empty() ? "-" : c.backend);
        if (!c.why.empty() &&
            std::find(whys.begin(), whys.end(), c.why) == whys.end()) {
          whys.push_back(c.why);
        }
      }
      std::string why;
      for (const std::string& w : whys) why += (why.empty() ? "" : ",") + w;
      row.push_back(why);
      rows.push_back(std::move(row));
    }
  }
  out << "  backend per input size (a cipher's or digest's first update; "
         "larger inputs use the last column). why: calibrated = measured "
         "fastest here (or within route_margin_pct of it and earlier in "
         "priority order); declared = no calibration, a hardware backend "
         "first in priority order; priority = no calibration, priority "
         "order; configured = route.<alg>:\n";
  PrintIndented(out, header, rows);

  std::vector<std::string> pheader = {"operation"};
  for (size_t bits : kPkeyBits)
    pheader.push_back(std::to_string(bits) + " bits");
  std::vector<std::vector<std::string>> prows;
  for (const PkeyOp& p : kPkeyOps) {
    const AlgorithmInfo* alg = FindAlgorithm(p.alg);
    if (alg == nullptr || !router.Supports(p.alg)) continue;
    std::vector<std::string> row = {p.label};
    for (size_t bits : kPkeyBits) {
      const Router::RouteChoice c = router.PkeyChosen(*alg, bits, p.public_op);
      row.push_back(c.backend.empty()
                        ? "-"
                        : absl::StrFormat("%s (%s)", c.backend, c.why));
    }
    prows.push_back(std::move(row));
  }
  if (!prows.empty()) {
    out << "  RSA/DSA backend per key size (imported keys; cpu = a public "
           "operation kept on the CPU, no calibration says a token is "
           "faster):\n";
    PrintIndented(out, pheader, prows);
  }

  if (!router.calibrated()) return;
  for (const char* family : {"rsa", "dsa"}) {
    for (const char* op : {"sign", "verify"}) {
      const auto buckets = router.PkeyBuckets(Calibration::OpKey(family, op));
      if (buckets.empty()) continue;
      out << "  " << (family[0] == 'r' ? "RSA" : "DSA") << " " << op
          << " as measured (the nearest measured size >= the key's, else "
             "the largest; route."
          << family << "-BITS wins):\n";
      for (const auto& [bits, ranked] : buckets) {
        out << "    " << bits << " bits: " << JoinNames(ranked) << "\n";
      }
    }
  }
}

nlohmann::json RoutingPolicyJson(const Router& router) {
  nlohmann::json j;
  j["policy"] = router.policy();
  j["calibrated"] = router.calibrated();
  j["notes"] = nlohmann::json::array();
  for (const std::string& note : router.notes()) j["notes"].push_back(note);
  j["fastest_pkey"] = nlohmann::json::object();
  for (const char* family : {"rsa", "dsa"}) {
    for (const char* op : {"sign", "verify"}) {
      const auto buckets = router.PkeyBuckets(Calibration::OpKey(family, op));
      if (buckets.empty()) continue;
      nlohmann::json jb = nlohmann::json::object();
      for (const auto& [bits, ranked] : buckets) {
        jb[std::to_string(bits)] = ranked;
      }
      // "rsa" is signing (as in format-1 files); "rsa/verify" verifying.
      j["fastest_pkey"][std::string(op) == "sign"
                            ? std::string(family)
                            : Calibration::OpKey(family, op)] = std::move(jb);
    }
  }
  // As measured, per calibration entry ("aes-128-cbc/encrypt", "sha256").
  j["fastest"] = nlohmann::json::object();
  for (const auto& [key, buckets] : router.Measured()) {
    nlohmann::json jb = nlohmann::json::object();
    for (const auto& [bucket, ranked] : buckets) {
      jb[std::to_string(bucket)] = ranked;
    }
    j["fastest"][key] = std::move(jb);
  }
  // As routed: backend and why per algorithm, direction and size bucket.
  j["routes"] = nlohmann::json::object();
  for (const AlgorithmInfo& alg : AllAlgorithms()) {
    if (alg.family != Family::kCipher && alg.family != Family::kDigest) {
      continue;
    }
    if (!router.Supports(alg.id)) continue;
    nlohmann::json ja = nlohmann::json::object();
    for (const auto& [op, decrypt] : Ops(alg)) {
      nlohmann::json jb = nlohmann::json::object();
      for (uint64_t bucket : Calibration::SizeBuckets()) {
        const Router::RouteChoice c = router.Chosen(alg, bucket, decrypt);
        jb[std::to_string(bucket)] = {{"backend", c.backend}, {"why", c.why}};
      }
      ja[std::string(op) == "-" ? "digest" : op] = std::move(jb);
    }
    j["routes"][std::string(alg.name)] = std::move(ja);
  }
  j["pkey_routes"] = nlohmann::json::object();
  for (const PkeyOp& p : kPkeyOps) {
    const AlgorithmInfo* alg = FindAlgorithm(p.alg);
    if (alg == nullptr || !router.Supports(p.alg)) continue;
    nlohmann::json jb = nlohmann::json::object();
    for (size_t bits : kPkeyBits) {
      const Router::RouteChoice c = router.PkeyChosen(*alg, bits, p.public_op);
      jb[std::to_string(bits)] = {{"backend", c.backend}, {"why", c.why}};
    }
    j["pkey_routes"][p.label] = std::move(jb);
  }
  return j;
}

void PrintInterposition(std::ostream& out, const Router& router) {
  out << "\nOffered to OpenSSL by the provider (interpose = "
      << (router.interpose_all() ? "all" : "wins (the default)")
      << "; what it leaves out OpenSSL's default provider serves at its own "
         "speed):\n";
  std::vector<std::vector<std::string>> rows;
  for (const AlgorithmInfo& alg : AllAlgorithms()) {
    const Router::Interposition d = router.Interposes(alg.id);
    rows.push_back({std::string(alg.name),
                    d.offered
                        ? "offered: " + d.why
                        : "left to OpenSSL's default provider: " + d.why});
  }
  PrintIndented(out, {"algorithm", "provider"}, rows);
}

nlohmann::json InterpositionJson(const Router& router) {
  nlohmann::json j;
  j["mode"] = router.interpose_all() ? "all" : "wins";
  j["algorithms"] = nlohmann::json::object();
  for (const AlgorithmInfo& alg : AllAlgorithms()) {
    const Router::Interposition d = router.Interposes(alg.id);
    j["algorithms"][std::string(alg.name)] = {{"offered", d.offered},
                                              {"wins", d.wins},
                                              {"backend", d.backend},
                                              {"why", d.why}};
  }
  return j;
}

}  // namespace accelcrypt::tools
