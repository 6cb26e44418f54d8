// SPDX-License-Identifier: Apache-2.0
//
// A small CAVP .rsp vector runner that drives a backend straight through the
// plugin ABI (accelcrypt/backend.h). It needs neither Abseil nor libcrypto,
// so the i386 build (tests/backends/padlock/i386) uses it too. Each AES record
// runs three ways: aligned, in place at an odd address, and split into uneven
// pieces; each SHA record one-shot and streamed.
#ifndef ACCELCRYPT_TESTS_PADLOCK_RSP_RUNNER_H_
#define ACCELCRYPT_TESTS_PADLOCK_RSP_RUNNER_H_

#include <stddef.h>

#include <string>
#include <vector>

#include "accelcrypt/backend.h"

namespace padlock_test {

struct RunCounts {
  size_t passed = 0;
  size_t failed = 0;
  size_t skipped = 0;                 // algorithm not offered by the backend
  std::vector<std::string> failures;  // "file:line: what", first few
  void Add(const RunCounts& o);
};

// RunRspFile runs every record of one AES (aes/), GCM (aes-gcm/) or SHA
// (sha/) vector file. SHA Monte files check the first `monte_limit`
// checkpoints. Unknown files count nothing.
RunCounts RunRspFile(const accelcrypt_backend_desc* desc, void* backend,
                     const std::string& path, size_t monte_limit);

// ListRspFiles returns the .rsp files under dir/aes, dir/aes-gcm, dir/sha,
// sorted.
std::vector<std::string> ListRspFiles(const std::string& dir);

// EmuSelfCheck validates a raw AES block function and a SHA function (the
// emulator's) against the ECB and SHA short-message files under `dir`.
using AesBlockFn = int (*)(const unsigned char* key, size_t key_len,
                           int decrypt, const unsigned char* in,
                           unsigned char* out);
using ShaFn = int (*)(int bits, const unsigned char* msg, size_t len,
                      unsigned char* out);
RunCounts EmuSelfCheck(const std::string& dir, AesBlockFn aes, ShaFn sha);

}  // namespace padlock_test

#endif  // ACCELCRYPT_TESTS_PADLOCK_RSP_RUNNER_H_
