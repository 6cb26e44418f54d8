// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_TESTS_P11MODULE_CONFORMANCE_CHILD_PROCESS_H_
#define ACCELCRYPT_TESTS_P11MODULE_CONFORMANCE_CHILD_PROCESS_H_

// Child processes for the multi-process suites (persistence, coherence,
// crash safety): p11_conformance_helper (conformance_helper.cc) started
// with the test's environment.

#include <sys/types.h>

#include <string>
#include <vector>

namespace accelcrypt::p11test {

// Child is a running process; `out_fd` reads its stdout when captured.
struct Child {
  pid_t pid = -1;
  int out_fd = -1;
};

// SpawnHelper starts p11_conformance_helper with `args` (after argv[0])
// and the current environment; `capture` pipes its stdout to `out_fd`.
// pid -1 when it could not be started.
Child SpawnHelper(const std::vector<std::string>& args, bool capture);

// ReadLine reads one line of the child's stdout (up to `timeout_ms`); ""
// on EOF or timeout.
std::string ReadLine(const Child& c, int timeout_ms = 60000);

// Wait reaps the child and closes `out_fd`; its exit status, or -1 when
// it did not exit normally (killed by a signal).
int Wait(const Child& c);

// RunHelper runs p11_conformance_helper with `args` to completion: its
// exit status (-1 when it could not run or was killed).
int RunHelper(const std::vector<std::string>& args);

}  // namespace accelcrypt::p11test

#endif  // ACCELCRYPT_TESTS_P11MODULE_CONFORMANCE_CHILD_PROCESS_H_
