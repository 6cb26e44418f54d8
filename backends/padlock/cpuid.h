// SPDX-License-Identifier: Apache-2.0
//
// PadLock feature detection (facts §1). cpuid.cc is the only file that
// executes `cpuid`; it reads through a replaceable source so tests can
// present a VIA/Zhaoxin CPU on any x86 machine.
#ifndef ACCELCRYPT_BACKENDS_PADLOCK_CPUID_H_
#define ACCELCRYPT_BACKENDS_PADLOCK_CPUID_H_

#include <stdint.h>

namespace accelcrypt::padlock {

// CpuidSource fills out[0..3] = EAX, EBX, ECX, EDX for (leaf, subleaf).
using CpuidSource = void (*)(uint32_t leaf, uint32_t subleaf, uint32_t out[4]);

// Features is an immutable snapshot of what the CPU offers. A unit counts
// only when both its "present" and "enabled" bits are set (facts §1.2).
struct Features {
  char vendor[13] = {};
  uint32_t family = 0;
  uint32_t model = 0;
  uint32_t stepping = 0;
  uint32_t centaur_edx = 0;  // leaf 0xC0000001 EDX
  bool centaur_vendor = false;
  bool rng = false;
  bool ace = false;
  bool ace2 = false;
  bool phe = false;
  bool phe_block_mode = false;  // Nano and Zhaoxin: RAX = -1 block mode
  bool phe2 = false;
};

// RealCpuid runs the `cpuid` instruction.
void RealCpuid(uint32_t leaf, uint32_t subleaf, uint32_t out[4]);

// DetectFeatures reads the vendor, leaf 1 and the Centaur leaves through
// `source`. Never fails: a non-VIA CPU yields centaur_vendor == false.
Features DetectFeatures(CpuidSource source);

}  // namespace accelcrypt::padlock

#endif  // ACCELCRYPT_BACKENDS_PADLOCK_CPUID_H_
