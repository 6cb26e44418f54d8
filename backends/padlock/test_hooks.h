// SPDX-License-Identifier: Apache-2.0
//
// The only seam between the production backend and the test-only PadLock
// trap emulator (tests/backends/padlock/emulator). The backend contains no
// emulator code. When, and only when, the environment has
// ACCELCRYPT_PADLOCK_EMULATOR=1, backend init looks up two optional symbols
// in the process's global scope with dlsym(RTLD_DEFAULT):
//
//   void accelcrypt_padlock_test_cpuid(uint32_t leaf, uint32_t subleaf,
//                                      uint32_t out[4]);
//   void accelcrypt_padlock_test_note_reload(void);
//
// The emulator library (LD_PRELOADed or linked into a test binary) defines
// both. The first replaces the real `cpuid` as the detection source (CPUID
// cannot be faked on this AMD host, facts §6.4); the second is called next to
// every `pushf; popf` because the emulator cannot see EFLAGS bit 30. Without
// the variable, or without the symbols, the real `cpuid` is used.
#ifndef ACCELCRYPT_BACKENDS_PADLOCK_TEST_HOOKS_H_
#define ACCELCRYPT_BACKENDS_PADLOCK_TEST_HOOKS_H_

#include "backends/padlock/cpuid.h"

namespace accelcrypt::padlock {

struct TestHooks {
  CpuidSource cpuid = nullptr;      // NULL: use RealCpuid
  void (*note_reload)() = nullptr;  // NULL: none
};

// LookupTestHooks returns the hooks described above, or an empty struct.
TestHooks LookupTestHooks();

}  // namespace accelcrypt::padlock

#endif  // ACCELCRYPT_BACKENDS_PADLOCK_TEST_HOOKS_H_
