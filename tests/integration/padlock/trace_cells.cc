// SPDX-License-Identifier: Apache-2.0
// trace_cells: reads the JSON report of `accelcrypt trace --json` on stdin
// and prints one line per (backend, algorithm) cell,
//   BACKEND ALGORITHM OPS BYTES ERRORS FALLBACKS
// then `files N` and `exit N` (the traced command's exit code), so shell
// tests can check who served what with awk. Exits 1 (with a message) when
// the input is not such a report.
#include <iostream>
#include <iterator>
#include <string>

#include "nlohmann/json.hpp"

// An exception out of main ends this test helper with a failure status,
// which the calling test reports: nothing to catch for.
int main() {  // NOLINT(bugprone-exception-escape)
  const std::string text((std::istreambuf_iterator<char>(std::cin)),
                         std::istreambuf_iterator<char>());
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("cells") ||
      !j["cells"].is_array() || !j.contains("files")) {
    std::cerr << "trace_cells: input is not an `accelcrypt trace --json` "
                 "report\n";
    return 1;
  }
  try {
    for (const auto& c : j["cells"]) {
      std::cout << c.at("backend").get<std::string>() << ' '
                << c.at("algorithm").get<std::string>() << ' '
                << c.at("ops").get<uint64_t>() << ' '
                << c.at("bytes").get<uint64_t>() << ' '
                << c.at("errors").get<uint64_t>() << ' '
                << c.at("fallbacks").get<uint64_t>() << '\n';
    }
    std::cout << "files " << j.at("files").get<uint64_t>() << '\n';
    if (j.contains("command_exit_code")) {
      std::cout << "exit " << j["command_exit_code"].get<int>() << '\n';
    }
  } catch (const nlohmann::json::exception& e) {
    std::cerr << "trace_cells: malformed cell: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
