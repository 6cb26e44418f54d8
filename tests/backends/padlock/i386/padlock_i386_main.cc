// SPDX-License-Identifier: Apache-2.0
//
// i386 vector runner: the PadLock backend linked statically, the trap
// emulator as a shared library, the AES/GCM/SHA vector files of
// tests/vectors under the profile named by ACCELCRYPT_PADLOCK_PROFILE.
// Exit 0 only when every record passes and each family ran.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

#include "accelcrypt/backend.h"
#include "tests/backends/padlock/emulator/padlock_emu.h"
#include "tests/backends/padlock/rsp_runner.h"

extern "C" const accelcrypt_backend_desc* accelcrypt_backend_entry(uint32_t);

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s VECTOR_DIR\n", argv[0]);
    return 2;
  }
  static_assert(sizeof(void*) == 4, "this runner is for the i386 build");
  const std::string dir = argv[1];
  const std::string profile = accelcrypt_padlock_emu_profile();
  const std::vector<std::string> files = padlock_test::ListRspFiles(dir);
  printf("i386 %s: %zu vector files under %s\n", profile.c_str(), files.size(),
         dir.c_str());
  if (files.empty()) {
    fprintf(stderr, "i386 %s: no .rsp vector file found under %s\n",
            profile.c_str(), dir.c_str());
    return 1;
  }
  padlock_test::RunCounts self = padlock_test::EmuSelfCheck(
      dir, accelcrypt_padlock_emu_aes_block, accelcrypt_padlock_emu_sha);
  printf("i386 %s: emulator self-check %zu passed %zu failed\n",
         profile.c_str(), self.passed, self.failed);
  const accelcrypt_backend_desc* desc =
      accelcrypt_backend_entry(ACCELCRYPT_ABI_VERSION);
  void* be = nullptr;
  accelcrypt_error err{};
  if (desc->init(nullptr, &be, &err) != ACCELCRYPT_OK) {
    fprintf(stderr, "init failed: %s\n", err.message);
    return 1;
  }
  char what[256];
  desc->describe(be, what, sizeof(what));
  padlock_test::RunCounts aes, gcm, sha;
  for (const std::string& path : files) {
    padlock_test::RunCounts rc = padlock_test::RunRspFile(desc, be, path, 3);
    if (path.find("/aes-gcm/") != std::string::npos)
      gcm.Add(rc);
    else if (path.find("/aes/") != std::string::npos)
      aes.Add(rc);
    else
      sha.Add(rc);
  }
  desc->teardown(be);
  printf(
      "i386 %s (%s): AES %zu passed %zu failed %zu skipped; GCM %zu/%zu/%zu; "
      "SHA %zu/%zu/%zu\n",
      profile.c_str(), what, aes.passed, aes.failed, aes.skipped, gcm.passed,
      gcm.failed, gcm.skipped, sha.passed, sha.failed, sha.skipped);
  for (const auto& f : self.failures) printf("FAIL %s\n", f.c_str());
  for (const auto& f : aes.failures) printf("FAIL %s\n", f.c_str());
  for (const auto& f : gcm.failures) printf("FAIL %s\n", f.c_str());
  for (const auto& f : sha.failures) printf("FAIL %s\n", f.c_str());
  const bool has_sha = profile != "c3";
  const bool ok = self.failed == 0 && self.passed > 1000 && aes.failed == 0 &&
                  aes.passed > 5000 && gcm.failed == 0 && gcm.passed > 1000 &&
                  sha.failed == 0 && (!has_sha || sha.passed > 300);
  return ok ? 0 : 1;
}
