// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_TOOLS_CLI_COMMON_H_
#define ACCELCRYPT_TOOLS_CLI_COMMON_H_

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/core.h"

namespace accelcrypt::tools {

// Exit codes shared by every subcommand (documented in accelcrypt(1)).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // a check failed (selftest, list)
inline constexpr int kExitUsage = 2;    // bad command line or input file
inline constexpr int kExitSetup = 3;    // core/config could not be set up

// CoreOptions are the command-line settings that shape the core the CLI
// builds for `list` and `selftest`.
struct CoreOptions {
  std::string config_file;  // --config: openssl.cnf-syntax file
  std::string backend_dir;  // --backend-dir: overrides backend_dir
  std::string backends;     // --backends: comma list, overrides backends
  // selftest_at_load: run every known-answer test while the core is built
  // (commands that use backends directly, e.g. calibrate), unless the
  // configuration turns self-tests off.
  bool selftest_at_load = false;
};

// CreateCore builds the configuration (the --config file, else
// $ACCELCRYPT_CONF and the environment overrides), applies the command-line
// overrides and creates a core. Returns the config/registry error as is.
absl::StatusOr<std::unique_ptr<Core>> CreateCore(const CoreOptions& options);

// RunningFromBuildTree is true when this executable is the one the build
// wrote into <build>/bin (so build-tree defaults apply: the provider in
// <build>/lib, vectors from the source tree).
bool RunningFromBuildTree();

// DefaultModulePath is the accelcrypt.so the `config` and `bench` commands
// point at when no --module is given: the build tree's when running from it,
// else the installed one in OpenSSL's modules directory.
std::string DefaultModulePath();

// DefaultVectorDir is the first existing directory of: the installed
// ${datadir}/accelcrypt/vectors and the source tree's tests/vectors (build
// tree runs try the source tree first). Empty when neither exists.
std::string DefaultVectorDir();

// DefaultBenchScript finds scripts/bench.sh (installed copy or source tree).
std::string DefaultBenchScript();

// PrintTable writes `rows` under `header` as aligned columns; columns whose
// cells are all numbers are right-aligned.
void PrintTable(std::ostream& out, const std::vector<std::string>& header,
                const std::vector<std::vector<std::string>>& rows);

}  // namespace accelcrypt::tools

#endif  // ACCELCRYPT_TOOLS_CLI_COMMON_H_
