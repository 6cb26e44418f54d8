// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <unistd.h>

#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "tools/commands.h"

namespace accelcrypt::tools {

// The benchmark itself is scripts/bench.sh (openssl speed through
// accelcrypt and through the default provider, side by side); this command
// finds the script and replaces the process with it.
int RunBench(const BenchOptions& options) {
  const std::string script =
      options.script.empty() ? DefaultBenchScript() : options.script;
  if (script.empty()) {
    std::cerr << "accelcrypt bench: bench.sh not found (looked for "
              << ACCELCRYPT_INSTALLED_BENCH << " and "
              << ACCELCRYPT_SOURCE_BENCH << ")\n";
    return kExitSetup;
  }
  std::vector<std::string> args = {"bash", script};
  args.push_back("--module");
  args.push_back(options.module_path.empty() ? DefaultModulePath()
                                             : options.module_path);
  if (options.quick) args.push_back("--quick");
  if (options.seconds > 0) {
    args.push_back("--seconds");
    args.push_back(std::to_string(options.seconds));
  }
  if (options.rounds > 0) {
    args.push_back("--rounds");
    args.push_back(std::to_string(options.rounds));
  }
  if (!options.markdown_file.empty()) {
    args.push_back("--markdown");
    args.push_back(options.markdown_file);
  }
  if (!options.svg_file.empty()) {
    args.push_back("--svg");
    args.push_back(options.svg_file);
  }
  for (const auto& alg : options.algorithms) {
    args.push_back("--alg");
    args.push_back(alg);
  }
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::cout.flush();
  execvp("bash", argv.data());
  std::cerr << "accelcrypt bench: cannot run bash " << script << ": "
            << std::strerror(errno) << "\n";
  return kExitSetup;
}

}  // namespace accelcrypt::tools
