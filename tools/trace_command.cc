// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "tools/commands.h"
#include "tools/trace_stats.h"

namespace accelcrypt::tools {
namespace {

// ChildResult is how the traced command ended, as a shell would report it.
struct ChildResult {
  int exit_code;        // the code trace exits with
  std::string problem;  // non-empty when the command could not be run
};

// RunChild forks and execs `argv` with the stats directory (and OPENSSL_CONF)
// in its environment, then waits for it. Like system(3), the parent ignores
// SIGINT/SIGQUIT while waiting so an interrupt reaches the command and the
// report is still printed.
ChildResult RunChild(const std::vector<std::string>& command,
                     const std::string& stats_dir,
                     const std::string& conf_file) {
  // A close-on-exec pipe carries exec's errno back to the parent.
  int fds[2];
#if defined(__linux__)
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return {kExitSetup, std::string("pipe: ") + std::strerror(errno)};
  }
#else
  // No pipe2 before Solaris 11.4: set close-on-exec after pipe (no other
  // thread forks here).
  if (pipe(fds) != 0 || fcntl(fds[0], F_SETFD, FD_CLOEXEC) != 0 ||
      fcntl(fds[1], F_SETFD, FD_CLOEXEC) != 0) {
    return {kExitSetup, std::string("pipe: ") + std::strerror(errno)};
  }
#endif
  struct sigaction ignore = {}, old_int = {}, old_quit = {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);

  std::vector<char*> argv;
  argv.reserve(command.size() + 1);
  for (const auto& arg : command)
    argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);

  const pid_t pid = fork();
  if (pid == 0) {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGQUIT, &old_quit, nullptr);
    close(fds[0]);
    setenv("ACCELCRYPT_STATS_DIR", stats_dir.c_str(), 1);
    if (!conf_file.empty()) setenv("OPENSSL_CONF", conf_file.c_str(), 1);
    execvp(argv[0], argv.data());
    const int err = errno;
    ssize_t ignored = write(fds[1], &err, sizeof(err));
    (void)ignored;
    _exit(127);
  }
  close(fds[1]);
  if (pid < 0) {
    const int err = errno;
    close(fds[0]);
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGQUIT, &old_quit, nullptr);
    return {kExitSetup, std::string("fork: ") + std::strerror(err)};
  }
  int exec_errno = 0;
  ssize_t n;
  do {
    n = read(fds[0], &exec_errno, sizeof(exec_errno));
  } while (n < 0 && errno == EINTR);
  close(fds[0]);
  int status = 0;
  pid_t waited;
  do {
    waited = waitpid(pid, &status, 0);
  } while (waited < 0 && errno == EINTR);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);

  if (n == static_cast<ssize_t>(sizeof(exec_errno))) {
    return {exec_errno == ENOENT ? 127 : 126,
            "cannot run '" + command[0] + "': " + std::strerror(exec_errno)};
  }
  if (waited < 0) return {kExitSetup, "waitpid failed"};
  if (WIFEXITED(status)) return {WEXITSTATUS(status), ""};
  if (WIFSIGNALED(status)) return {128 + WTERMSIG(status), ""};
  return {kExitSetup, "command ended in an unknown way"};
}

void PrintReport(std::ostream& out, const TraceReport& report) {
  // One stats file per accelcrypt core: a process that loaded both the
  // provider and the engine has two (each counts only what it served), so
  // processes are counted by pid and such a process is shown once.
  std::vector<std::pair<std::string, size_t>> shown;  // "pid name", cores
  std::map<int64_t, size_t> index_of;
  for (size_t i = 0; i < report.processes.size(); ++i) {
    const int64_t pid = i < report.procs.size() ? report.procs[i].pid : 0;
    auto [it, fresh] = index_of.emplace(pid, shown.size());
    if (fresh || pid <= 0) {
      it->second = shown.size();
      shown.emplace_back(report.processes[i], 1);
    } else {
      ++shown[it->second].second;
    }
  }
  out << "accelcrypt trace: " << shown.size() << " process"
      << (shown.size() == 1 ? "" : "es") << " loaded accelcrypt";
  bool several_cores = false;
  if (!shown.empty()) {
    out << " (";
    for (size_t i = 0; i < shown.size(); ++i) {
      if (i > 0) out << ", ";
      if (i == 8) {
        out << "...";
        break;
      }
      out << "pid " << shown[i].first;
      if (shown[i].second > 1) {
        out << " with " << shown[i].second << " cores";
        several_cores = true;
      }
    }
    out << ")";
  }
  out << "\n";
  if (several_cores) {
    out << "  a process with several cores loaded the provider and the engine "
        << "(or accelcrypt's PKCS#11 module): each core counts the operations "
        << "it served, once\n";
  }
  if (report.live > 0) {
    out << "  " << report.live << " of them still running: their counts so "
        << "far\n";
  }
  if (report.gone > 0) {
    out << "  " << report.gone << " left without teardown (_exit, a signal "
        << "or exec): counted up to that moment\n";
  }
  PrintCells(out, report);
}

}  // namespace

int RunTrace(const TraceOptions& options) {
  if (options.command.empty()) {
    std::cerr << "accelcrypt trace: no command given (usage: accelcrypt trace "
                 "[--conf FILE] -- CMD ARGS...)\n";
    return kExitUsage;
  }
  std::error_code ec;
  std::string conf;
  if (!options.conf_file.empty()) {
    if (!std::filesystem::is_regular_file(options.conf_file, ec)) {
      std::cerr << "accelcrypt trace: --conf " << options.conf_file
                << ": no such file\n";
      return kExitUsage;
    }
    conf = std::filesystem::absolute(options.conf_file, ec).string();
  }

  std::string dir;
  bool remove_dir = false;
  if (!options.keep_dir.empty()) {
    dir = std::filesystem::absolute(options.keep_dir, ec).string();
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      std::cerr << "accelcrypt trace: cannot create " << dir << ": "
                << ec.message() << "\n";
      return kExitUsage;
    }
    auto existing = AggregateStatsDir(dir);
    if (existing.ok() &&
        (existing->files > 0 || !existing->bad_files.empty())) {
      std::cerr << "accelcrypt trace: " << dir
                << " already holds stats files; use an empty directory\n";
      return kExitUsage;
    }
  } else {
    const char* tmp = getenv("TMPDIR");
    std::string templ = std::string(tmp != nullptr && *tmp ? tmp : "/tmp") +
                        "/accelcrypt-trace-XXXXXX";
    if (mkdtemp(templ.data()) == nullptr) {
      std::cerr << "accelcrypt trace: cannot create a temporary directory in "
                << templ << ": " << std::strerror(errno) << "\n";
      return kExitSetup;
    }
    dir = templ;
    remove_dir = true;
  }

  const ChildResult child = RunChild(options.command, dir, conf);
  if (!child.problem.empty()) {
    std::cerr << "accelcrypt trace: " << child.problem << "\n";
  }

  auto report_or = AggregateStatsDir(dir);
  if (remove_dir) std::filesystem::remove_all(dir, ec);
  if (!report_or.ok()) {
    std::cerr << "accelcrypt trace: " << report_or.status().ToString() << "\n";
    return child.exit_code;
  }
  const TraceReport& report = *report_or;

  std::ofstream file;
  std::ostream* out = &std::cerr;
  if (!options.output_file.empty()) {
    file.open(options.output_file, std::ios::out | std::ios::trunc);
    if (!file) {
      std::cerr << "accelcrypt trace: cannot write " << options.output_file
                << "\n";
    } else {
      out = &file;
    }
  }
  for (const auto& bad : report.bad_files) {
    std::cerr << "accelcrypt trace: skipped a malformed stats file: " << bad
              << "\n";
  }
  if (options.json) {
    nlohmann::json j = report.ToJson();
    j["command_exit_code"] = child.exit_code;
    *out << j.dump(2) << "\n";
  } else if (report.files > 0) {
    PrintReport(*out, report);
  }
  if (report.files == 0 && child.problem.empty()) {
    std::cerr << "accelcrypt trace: saw no accelcrypt statistics in " << dir
              << ": no process of the command did crypto through accelcrypt "
                 "with statistics going there (not loaded: check OPENSSL_CONF "
                 "or pass --conf FILE, `accelcrypt config` prints one; or "
                 "loaded, but what it used the provider leaves to OpenSSL's "
                 "default provider, see `accelcrypt list`; or a stats_dir in "
                 "its configuration sends them elsewhere, or the directory was "
                 "not writable for it)\n";
  }
  return child.exit_code;
}

}  // namespace accelcrypt::tools
