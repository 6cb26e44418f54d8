// SPDX-License-Identifier: Apache-2.0
//
// accelcrypt: inspect, test, configure and trace the accelcrypt stack.
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "CLI/CLI.hpp"
#include "tools/commands.h"

namespace {

using accelcrypt::tools::CoreOptions;

void AddCoreOptions(CLI::App* app, CoreOptions* options) {
  app->add_option("--config", options->config_file,
                  "accelcrypt settings file (openssl.cnf syntax, section "
                  "[accelcrypt]); default: $ACCELCRYPT_CONF")
      ->check(CLI::ExistingFile);
  app->add_option("--backend-dir", options->backend_dir,
                  "directories (colon-separated) to load backend modules from");
  app->add_option("--backends", options->backends,
                  "comma list: load only these backends, in this order");
}

// SplitTraceCommand returns how many leading arguments CLI11 should parse.
// For `accelcrypt trace [OPTIONS] [--] CMD ARGS...` the command starts after
// `--`, or at the first word that is neither a trace option nor its value;
// it is moved into `command`.
int SplitTraceCommand(int argc, char** argv,
                      std::vector<std::string>* command) {
  if (argc < 2 || std::string_view(argv[1]) != "trace") return argc;
  for (int i = 2; i < argc; ++i) {
    const std::string_view arg = argv[i];
    int start = -1;
    if (arg == "--") {
      start = i + 1;
    } else if (arg == "--conf" || arg == "-o" || arg == "--output" ||
               arg == "--keep") {
      ++i;  // its value
      continue;
    } else if (!arg.empty() && arg[0] == '-') {
      continue;
    } else {
      start = i;
    }
    for (int j = start; j < argc; ++j) command->push_back(argv[j]);
    return i;
  }
  return argc;
}

constexpr char kExitCodes[] =
    "Exit codes: 0 success, 1 a check failed, 2 usage or input error, "
    "3 setup error (config, core); trace exits with the command's code.";

}  // namespace

// An exception escaping main ends the program (std::terminate), as before.
int main(int argc, char** argv) {  // NOLINT(bugprone-exception-escape)
  CLI::App app{
      "accelcrypt: crypto accelerators behind one core, for OpenSSL 3 and "
      "PKCS#11.\nInspect backends, run the vector self-tests, print the "
      "openssl.cnf stanza, trace which backend served a command."};
  app.footer(kExitCodes);
  app.set_version_flag("--version",
                       std::string("accelcrypt ") + ACCELCRYPT_VERSION);
  app.require_subcommand(1);

  accelcrypt::tools::ListOptions list;
  CLI::App* list_cmd = app.add_subcommand(
      "list",
      "Show loaded backends, their algorithms and capabilities, load events "
      "(declined backends, failed self-tests), the routing order per "
      "algorithm and the CPU features CPUID reports.");
  AddCoreOptions(list_cmd, &list.core);
  list_cmd->add_flag("--json", list.json, "machine-readable output");
  list_cmd->add_flag("--selftest", list.selftest,
                     "run every known-answer test now (they otherwise run at "
                     "each algorithm's first use; on a PKCS#11 token this "
                     "imports session keys)");
  list_cmd->add_flag("--all-events", list.all_events,
                     "also show successful load events");
  list_cmd->footer("Exit codes: 0 ok, 1 no backend loaded, 3 setup error.");

  accelcrypt::tools::SelftestOptions selftest;
  CLI::App* selftest_cmd = app.add_subcommand(
      "selftest",
      "Run every vector file (NIST CAVP, SP 800-38A, FIPS 180) against every "
      "loaded backend and print a backend x algorithm table.");
  AddCoreOptions(selftest_cmd, &selftest.core);
  selftest_cmd
      ->add_option("--vectors", selftest.vector_dir,
                   "vector directory (default: the installed "
                   "share/accelcrypt/vectors, else the source tree's "
                   "tests/vectors)")
      ->check(CLI::ExistingDirectory);
  selftest_cmd->add_option("--backend", selftest.only_backends,
                           "test only this backend (repeatable)");
  selftest_cmd->add_flag("--json", selftest.json, "machine-readable output");
  selftest_cmd->add_flag("-v,--verbose", selftest.verbose,
                         "print every failure");
  selftest_cmd->footer(
      "Exit codes: 0 all vectors passed, 1 a vector failed or none ran, "
      "2 no vectors found, 3 setup error.");

  accelcrypt::tools::ConfigOptions config;
  CLI::App* config_cmd = app.add_subcommand(
      "config",
      "Print an openssl.cnf that loads the default provider and accelcrypt "
      "and prefers accelcrypt (soft_load: a missing module breaks nothing).");
  config_cmd->add_option("--module", config.module_path,
                         "path of accelcrypt.so (default: the installed one)");
  config_cmd->add_flag("--include-only", config.include_only,
                       "print only the sections to `.include` at the end of "
                       "an existing openssl.cnf");
  config_cmd->add_flag(
      "--check", config.check,
      "instead of printing, check the accelcrypt provider sections of an "
      "openssl.cnf (FILE, default $OPENSSL_CONF or OPENSSLDIR/openssl.cnf): "
      "OpenSSL passes a provider only the keys it asks for, so a misspelt "
      "key there would be dropped without a word");
  config_cmd->add_option("FILE", config.check_file,
                         "the openssl.cnf --check reads");
  config_cmd->footer(
      "Exit codes: 0 printed (--check: no mistake found), 1 --check found "
      "mistakes, 2 bad --module or usage, 3 --check cannot read FILE.");

  accelcrypt::tools::TraceOptions trace;
  CLI::App* trace_cmd = app.add_subcommand(
      "trace",
      "Run CMD with accelcrypt stats enabled and report, per backend and "
      "algorithm, the operations, bytes, errors and fallbacks of every "
      "process it started. The report goes to stderr.");
  trace_cmd->add_option("--conf", trace.conf_file,
                        "run CMD with OPENSSL_CONF=FILE");
  trace_cmd->add_option("-o,--output", trace.output_file,
                        "write the report to FILE instead of stderr");
  trace_cmd->add_option("--keep", trace.keep_dir,
                        "write the per-process stats files into this (empty) "
                        "directory and keep them");
  trace_cmd->add_flag("--json", trace.json, "report as JSON");
  trace_cmd->add_option("command", trace.command,
                        "CMD ARGS...: everything after `--` (or from the first "
                        "word that is not a trace option) is run as is");
  trace_cmd->footer(
      "Usage: accelcrypt trace [--conf FILE] -- CMD ARGS...\n"
      "Exit code: CMD's (128+N if killed by signal N; 127 not found, 126 not "
      "executable); 2 bad options.");

  accelcrypt::tools::StatsOptions stats;
  CLI::App* stats_cmd = app.add_subcommand(
      "stats",
      "Summarise what processes that loaded accelcrypt counted: per process "
      "(running, ended, or left without teardown such as _exit or a signal) "
      "and per backend and algorithm. Counts are live: a running daemon's "
      "workers show their work so far.");
  stats_cmd->add_option("dir", stats.dir,
                        "stats directory (default: $ACCELCRYPT_STATS_DIR, "
                        "else " +
                            accelcrypt::tools::DefaultStatsDir() +
                            "; as root, every user's subdirectory)");
  stats_cmd->add_flag("--json", stats.json,
                      "print JSON (one document per "
                      "refresh with --watch)");
  stats_cmd->add_flag("-a,--all", stats.all,
                      "also list processes that did no operation");
  stats_cmd->add_option("-w,--watch", stats.watch,
                        "redraw every SECONDS like top, with byte rates");
  stats_cmd->add_option("-n,--iterations", stats.iterations,
                        "with --watch: stop after N refreshes");
  stats_cmd->add_flag("--prune", stats.prune,
                      "after printing, delete the files of processes that are "
                      "no longer running");
  stats_cmd->footer(
      "Exit codes: 0 printed, 1 a file could not be pruned, "
      "2 bad options, 3 directory missing or unreadable.");

  accelcrypt::tools::BenchOptions bench;
  CLI::App* bench_cmd = app.add_subcommand(
      "bench",
      "Compare `openssl speed` through accelcrypt (software backend) with "
      "OpenSSL's default provider: AES-128-CBC, AES-128-CTR, AES-256-GCM, "
      "SHA-256; prints throughput per block size and the ratio.");
  bench_cmd->add_flag("--quick", bench.quick,
                      "short run: --seconds 1 --rounds 1 (about a minute)");
  bench_cmd
      ->add_option("--seconds", bench.seconds,
                   "whole seconds per block size per openssl speed run")
      ->check(CLI::PositiveNumber);
  bench_cmd
      ->add_option("--rounds", bench.rounds,
                   "rounds per side and block size; the best counts "
                   "(the script's default: 2)")
      ->check(CLI::PositiveNumber);
  bench_cmd->add_option("--alg", bench.algorithms,
                        "algorithm to run (repeatable; default all four)");
  bench_cmd->add_option("--module", bench.module_path,
                        "path of accelcrypt.so (default: the installed one)");
  bench_cmd->add_option("--script", bench.script, "path of bench.sh");
  bench_cmd->add_option("--markdown", bench.markdown_file,
                        "also write the table as Markdown to FILE");
  bench_cmd->add_option("--svg", bench.svg_file,
                        "also draw the ratios as an SVG bar chart into FILE");
  bench_cmd->footer("Exit codes: the script's (0 ok, 1 a run failed).");

  accelcrypt::tools::CalibrateOptions calibrate;
  CLI::App* calibrate_cmd = app.add_subcommand(
      "calibrate",
      "Measure every loaded backend on every cipher and digest it declares, "
      "per input size (16 B to 16 KiB), and on RSA/DSA signing per key "
      "size, print the table and write the calibration file that `policy = "
      "fastest` routes by.");
  AddCoreOptions(calibrate_cmd, &calibrate.core);
  calibrate_cmd
      ->add_option("--seconds-per-cell", calibrate.seconds_per_cell,
                   "CPU time per backend, algorithm and size (split "
                   "into 5 alternating rounds; the best counts)")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 60.0));
  calibrate_cmd
      ->add_option("--alg,--algorithms", calibrate.algorithms,
                   "measure only these algorithms (repeatable or "
                   "comma list; the file keeps the others' entries)")
      ->delimiter(',');
  calibrate_cmd
      ->add_option("--pkey-sizes", calibrate.pkey_sizes,
                   "RSA/DSA key sizes to measure (comma list of "
                   "1024, 2048, 3072, 4096; default: all each "
                   "backend declares)")
      ->delimiter(',')
      ->check(CLI::IsMember({1024, 2048, 3072, 4096}));
  calibrate_cmd->add_option("-o,--output", calibrate.output,
                            "calibration file to write (default: "
                            "$ACCELCRYPT_CALIBRATION, else the per-user cache "
                            "or, as root, /var/lib/accelcrypt)");
  calibrate_cmd->footer(
      "Exit codes: 0 written, 1 a backend could not be measured or the file "
      "not written, 2 usage error, 3 setup error.");

  accelcrypt::tools::EnableOptions enable, disable;
  disable.disable = true;
  CLI::App* enable_cmd = app.add_subcommand(
      "enable",
      "Load accelcrypt in every OpenSSL program: append `.include SNIPPET` "
      "to the system openssl.cnf (idempotent; the file as it was is kept as "
      "openssl.cnf.accelcrypt-bak).");
  CLI::App* disable_cmd = app.add_subcommand(
      "disable", "Remove the `.include SNIPPET` line `enable` added.");
  for (auto [cmd, opts] :
       {std::pair{enable_cmd, &enable}, std::pair{disable_cmd, &disable}}) {
    cmd->add_option("--openssl-cnf", opts->openssl_cnf,
                    "the file to edit (default: OPENSSLDIR/openssl.cnf, "
                    "symlinks followed)");
    cmd->add_option("--snippet", opts->snippet,
                    "the provider snippet to include (default: the "
                    "installed share/accelcrypt/accelcrypt.cnf)");
    cmd->add_flag("-n,--dry-run", opts->dry_run,
                  "print what would change, change nothing");
    cmd->footer(
        "Exit codes: 0 done or nothing to do, 2 usage error, "
        "3 file or snippet missing, not writable.");
  }

  accelcrypt::tools::PinOptions pin_status, pin_reset;
  pin_reset.reset = true;
  CLI::App* pin_status_cmd = app.add_subcommand(
      "pin-status",
      "Show the PKCS#11 client backend's refused-PIN markers: tokens whose "
      "PIN (from pin_file/pin_env) was refused once and is not tried again "
      "until the PIN source changes or `pin-reset` removes the marker.");
  CLI::App* pin_reset_cmd = app.add_subcommand(
      "pin-reset",
      "Remove refused-PIN markers (all, or one token's with --token), so "
      "the next use of the token tries its configured PIN again (once).");
  pin_reset_cmd->add_option("--token", pin_reset.token,
                            "serial number of the token whose marker to "
                            "remove (see pin-status; default: all)");
  for (auto [cmd, opts] : {std::pair{pin_status_cmd, &pin_status},
                           std::pair{pin_reset_cmd, &pin_reset}}) {
    cmd->add_option("--state-dir", opts->state_dir,
                    "marker directory (default: pkcs11.pin_state_dir, else "
                    "$ACCELCRYPT_STATE_DIR, else $XDG_STATE_HOME/accelcrypt "
                    "or ~/.local/state/accelcrypt, as root "
                    "/var/lib/accelcrypt)");
    cmd->add_option("--config", opts->config_file,
                    "accelcrypt settings file to read pkcs11.pin_state_dir "
                    "from; default: $ACCELCRYPT_CONF")
        ->check(CLI::ExistingFile);
    cmd->footer("Exit codes: 0 done, 1 a marker could not be removed.");
  }

  // `trace` passes its command through untouched, options included, so the
  // command is cut off before CLI11 sees it.
  std::vector<std::string> traced_command;
  const int parsed_argc = SplitTraceCommand(argc, argv, &traced_command);
  try {
    app.parse(parsed_argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : accelcrypt::tools::kExitUsage;
  }

  if (list_cmd->parsed()) return accelcrypt::tools::RunList(list);
  if (selftest_cmd->parsed()) return accelcrypt::tools::RunSelftest(selftest);
  if (config_cmd->parsed()) return accelcrypt::tools::RunConfig(config);
  if (trace_cmd->parsed()) {
    trace.command = traced_command;
    return accelcrypt::tools::RunTrace(trace);
  }
  if (stats_cmd->parsed()) return accelcrypt::tools::RunStats(stats);
  if (bench_cmd->parsed()) return accelcrypt::tools::RunBench(bench);
  if (calibrate_cmd->parsed()) {
    return accelcrypt::tools::RunCalibrate(calibrate);
  }
  if (enable_cmd->parsed()) return accelcrypt::tools::RunEnable(enable);
  if (disable_cmd->parsed()) return accelcrypt::tools::RunEnable(disable);
  if (pin_status_cmd->parsed()) return accelcrypt::tools::RunPin(pin_status);
  if (pin_reset_cmd->parsed()) return accelcrypt::tools::RunPin(pin_reset);
  std::cerr << app.help();
  return accelcrypt::tools::kExitUsage;
}
