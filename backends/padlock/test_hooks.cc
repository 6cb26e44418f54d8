// SPDX-License-Identifier: Apache-2.0
#include "backends/padlock/test_hooks.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

namespace accelcrypt::padlock {

TestHooks LookupTestHooks() {
  TestHooks hooks;
  const char* env = getenv("ACCELCRYPT_PADLOCK_EMULATOR");
  if (env == nullptr || strcmp(env, "1") != 0) return hooks;
  hooks.cpuid = reinterpret_cast<CpuidSource>(
      dlsym(RTLD_DEFAULT, "accelcrypt_padlock_test_cpuid"));
  hooks.note_reload = reinterpret_cast<void (*)()>(
      dlsym(RTLD_DEFAULT, "accelcrypt_padlock_test_note_reload"));
  return hooks;
}

}  // namespace accelcrypt::padlock
