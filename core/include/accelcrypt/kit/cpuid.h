// SPDX-License-Identifier: Apache-2.0
// The backend kit's CPUID reader (x86 and x86-64 only): the one place that
// executes CPUID and XGETBV and knows how to read the vendor, the OS's
// saved-state mask and the Centaur (VIA/Zhaoxin) leaves. The x86 and
// PadLock backends and the `accelcrypt` tool decode their own feature bits
// from what it returns. Header-only; nothing crosses the shared-object
// boundary.
//
// Read CPUID, never /proc/cpuinfo: in virtual machines the kernel's list
// can omit flags the CPU reports to the guest.
#ifndef ACCELCRYPT_KIT_CPUID_H_
#define ACCELCRYPT_KIT_CPUID_H_

#if defined(__x86_64__) || defined(__i386__)

#include <cpuid.h>

#include <cstdint>
#include <cstring>

namespace accelcrypt::kit {

#define ACCELCRYPT_KIT_HAVE_CPUID 1

struct CpuidRegs {
  uint32_t eax = 0;
  uint32_t ebx = 0;
  uint32_t ecx = 0;
  uint32_t edx = 0;
};

// Cpuid executes CPUID for `leaf`/`subleaf`. The caller checks that the
// leaf exists (leaf 0's EAX for basic leaves, CentaurLeavesExist for the
// Centaur range): an absent leaf returns another leaf's data.
inline CpuidRegs Cpuid(uint32_t leaf, uint32_t subleaf = 0) {
  unsigned a, b, c, d;
  __cpuid_count(leaf, subleaf, a, b, c, d);
  return {a, b, c, d};
}

// HaveCpuid is false only on 32-bit CPUs older than the instruction.
inline bool HaveCpuid() {
  unsigned a, b, c, d;
  return __get_cpuid(0, &a, &b, &c, &d) != 0;
}

// Vendor writes leaf 0's 12-character vendor string, NUL-terminated.
inline void Vendor(const CpuidRegs& leaf0, char out[13]) {
  std::memcpy(out + 0, &leaf0.ebx, 4);
  std::memcpy(out + 4, &leaf0.edx, 4);
  std::memcpy(out + 8, &leaf0.ecx, 4);
  out[12] = '\0';
}

// IsCentaurVendor: VIA ("CentaurHauls") and Zhaoxin ("  Shanghai  ", some
// parts say CentaurHauls), the vendors with PadLock units.
inline bool IsCentaurVendor(const char* vendor) {
  return std::strcmp(vendor, "CentaurHauls") == 0 ||
         std::strcmp(vendor, "  Shanghai  ") == 0;
}

// CentaurLeavesExist reads leaf 0xC0000000's EAX (the highest Centaur
// leaf): the feature leaf 0xC0000001 exists only when it lies in the
// Centaur range. "EAX != 0" is not enough (Valgrind answers 7 here).
inline bool CentaurLeavesExist(const CpuidRegs& leaf_c0000000) {
  return leaf_c0000000.eax >= 0xC0000001u && leaf_c0000000.eax <= 0xC00000FFu;
}

// XCR0 state components (Intel SDM Vol. 1, 13.1): what the OS saves on a
// context switch, so which register files are usable.
inline constexpr uint64_t kXcr0Sse = 1u << 1;
inline constexpr uint64_t kXcr0Avx = 1u << 2;
inline constexpr uint64_t kXcr0Opmask = 1u << 5;
inline constexpr uint64_t kXcr0ZmmHi256 = 1u << 6;
inline constexpr uint64_t kXcr0Hi16Zmm = 1u << 7;
inline constexpr uint64_t kXcr0Ymm = kXcr0Sse | kXcr0Avx;
inline constexpr uint64_t kXcr0Zmm =
    kXcr0Ymm | kXcr0Opmask | kXcr0ZmmHi256 | kXcr0Hi16Zmm;

// ReadXcr0 returns XCR0 when CPUID.1:ECX.OSXSAVE (bit 27) says the OS set
// CR4.OSXSAVE, else 0: XGETBV raises #UD otherwise. Emitted as bytes so no
// -mxsave is needed.
inline uint64_t ReadXcr0(const CpuidRegs& leaf1) {
  if ((leaf1.ecx & (1u << 27)) == 0) return 0;
  uint32_t eax, edx;
  __asm__ volatile(".byte 0x0f, 0x01, 0xd0" /* xgetbv */
                   : "=a"(eax), "=d"(edx)
                   : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

}  // namespace accelcrypt::kit

#endif  // x86

#endif  // ACCELCRYPT_KIT_CPUID_H_
