// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_TOOLS_COMMANDS_H_
#define ACCELCRYPT_TOOLS_COMMANDS_H_

#include <string>
#include <vector>

#include "tools/cli_common.h"

namespace accelcrypt::tools {

// Each Run* function implements one subcommand and returns the process exit
// code (see cli_common.h). They print results on stdout and diagnostics on
// stderr, except `trace`, whose report goes to stderr (or --output) so it
// never mixes with the traced command's stdout.

struct ListOptions {
  CoreOptions core;
  bool json = false;
  bool all_events = false;  // also print successful load events
  bool selftest = false;    // run every pending known-answer test first
};
int RunList(const ListOptions& options);

struct SelftestOptions {
  CoreOptions core;
  std::string vector_dir;  // empty: DefaultVectorDir()
  std::vector<std::string> only_backends;
  bool json = false;
  bool verbose = false;  // print every failure message kept by the runner
};
int RunSelftest(const SelftestOptions& options);

struct ConfigOptions {
  std::string module_path;  // empty: DefaultModulePath()
  bool include_only = false;
  bool check = false;      // --check: check an openssl.cnf, print nothing else
  std::string check_file;  // the file --check reads; empty: the one in use
};
int RunConfig(const ConfigOptions& options);

struct TraceOptions {
  std::string conf_file;    // OPENSSL_CONF for the command, when set
  std::string output_file;  // report destination; empty: stderr
  std::string keep_dir;     // write stats here and keep them; empty: temp
  bool json = false;
  std::vector<std::string> command;
};
int RunTrace(const TraceOptions& options);

// `stats [DIR]`: summarise the live and final stats files in DIR (default:
// DefaultStatsDir()) per process and per backend and algorithm
// (tools/stats_command.cc).
struct StatsOptions {
  std::string dir;
  bool json = false;
  bool all = false;    // also processes that did no operation
  double watch = 0;    // > 0: redraw every `watch` seconds
  int iterations = 0;  // with watch: stop after this many (0: never)
  bool prune = false;  // then delete files of processes that are gone
};
int RunStats(const StatsOptions& options);
// DefaultStatsDir is $ACCELCRYPT_STATS_DIR, else the build's shared root.
std::string DefaultStatsDir();

struct BenchOptions {
  std::string script;  // empty: DefaultBenchScript()
  std::string module_path;
  std::vector<std::string> algorithms;
  int seconds = 0;  // 0: the script's default
  int rounds = 0;   // 0: the script's default
  bool quick = false;
  std::string markdown_file;  // also write the table as Markdown
  std::string svg_file;       // also draw the ratios as SVG
};
int RunBench(const BenchOptions& options);

struct CalibrateOptions {
  CoreOptions core;
  double seconds_per_cell = 0.05;       // per backend x algorithm x size bucket
  std::vector<std::string> algorithms;  // empty: every cipher and digest,
                                        // plus "rsa" and "dsa" (signing)
  std::vector<int> pkey_sizes;  // empty: 1024..4096 (RSA), 1024..3072 (DSA)
  std::string output;           // empty: DefaultCalibrationPath()
};
int RunCalibrate(const CalibrateOptions& options);

// `enable` / `disable`: add or remove the `.include SNIPPET` line in the
// system openssl.cnf (tools/enable_command.cc).
struct EnableOptions {
  bool disable = false;
  std::string openssl_cnf;  // empty: OPENSSLDIR/openssl.cnf
  std::string snippet;      // empty: the installed accelcrypt.cnf
  bool dry_run = false;
};
int RunEnable(const EnableOptions& options);

// `pin-status` / `pin-reset`: list or remove the PKCS#11 client backend's
// refused-PIN markers (tools/pin_command.cc).
struct PinOptions {
  bool reset = false;
  std::string token;        // pin-reset --token SERIAL; empty: every marker
  std::string state_dir;    // --state-dir; empty: as the backend resolves it
  std::string config_file;  // --config; empty: $ACCELCRYPT_CONF
};
int RunPin(const PinOptions& options);

}  // namespace accelcrypt::tools

#endif  // ACCELCRYPT_TOOLS_COMMANDS_H_
