// SPDX-License-Identifier: Apache-2.0
#include "tests/pkcs11/conformance/child_process.h"

#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "tests/pkcs11/conformance/conformance_fixture.h"

extern char** environ;

namespace accelcrypt::p11test {

Child SpawnHelper(const std::vector<std::string>& args, bool capture) {
  std::vector<std::string> all = {HelperPath()};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  argv.reserve(all.size() + 1);
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  int fds[2] = {-1, -1};
  if (capture) {
    if (pipe(fds) != 0) {
      posix_spawn_file_actions_destroy(&actions);
      return {};
    }
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    posix_spawn_file_actions_addclose(&actions, fds[1]);
  }
  Child c;
  if (posix_spawn(&c.pid, all[0].c_str(), &actions, nullptr, argv.data(),
                  environ) != 0) {
    c.pid = -1;
  }
  posix_spawn_file_actions_destroy(&actions);
  if (capture) {
    close(fds[1]);
    c.out_fd = fds[0];
  }
  return c;
}

std::string ReadLine(const Child& c, int timeout_ms) {
  std::string line;
  char ch;
  while (true) {
    pollfd pfd = {c.out_fd, POLLIN, 0};
    if (poll(&pfd, 1, timeout_ms) <= 0) return "";
    if (read(c.out_fd, &ch, 1) != 1) return "";
    if (ch == '\n') return line;
    line.push_back(ch);
  }
}

int Wait(const Child& c) {
  int status = 0;
  pid_t got;
  do {
    got = waitpid(c.pid, &status, 0);
  } while (got < 0 && errno == EINTR);
  if (c.out_fd >= 0) close(c.out_fd);
  if (got != c.pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int RunHelper(const std::vector<std::string>& args) {
  Child c = SpawnHelper(args, false);
  if (c.pid <= 0) return -1;
  return Wait(c);
}

}  // namespace accelcrypt::p11test
