// SPDX-License-Identifier: Apache-2.0
//
// The CLI's one CPUID leaf file. /proc/cpuinfo is not used: in VMs it can
// omit flags CPUID reports (rdseed on a Zen 5 guest, DESIGN.md hazards).
#include "tools/cpu_features.h"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define ACCELCRYPT_TOOLS_HAVE_CPUID 1
#endif

namespace accelcrypt::tools {
namespace {

void Add(CpuFeatureSet* set, const char* name, bool present, bool usable) {
  if (set->num_features >= CpuFeatureSet::kMaxFeatures) return;
  set->features[set->num_features++] = {name, present, present && usable};
}

#ifdef ACCELCRYPT_TOOLS_HAVE_CPUID
uint64_t ReadXcr0() {
  uint32_t eax, edx;
  // xgetbv with ECX = 0 (Intel SDM Vol. 2C, XGETBV). Emitted as bytes so no
  // -mxsave is needed; only called once OSXSAVE (leaf 1 ECX bit 27) is set.
  __asm__ volatile(".byte 0x0f, 0x01, 0xd0" /* xgetbv */
                   : "=a"(eax), "=d"(edx)
                   : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}
#endif

}  // namespace

CpuFeatureSet ReadCpuFeatures() {
  CpuFeatureSet set;
  std::memset(&set, 0, sizeof(set));
#ifdef ACCELCRYPT_TOOLS_HAVE_CPUID
  unsigned int eax, ebx, ecx, edx;
  if (__get_cpuid(0, &eax, &ebx, &ecx, &edx) == 0) return set;
  set.cpuid_available = true;
  const unsigned int max_leaf = eax;
  std::memcpy(set.vendor + 0, &ebx, 4);
  std::memcpy(set.vendor + 4, &edx, 4);
  std::memcpy(set.vendor + 8, &ecx, 4);
  set.vendor[12] = '\0';

  __cpuid(1, eax, ebx, ecx, edx);
  const bool aes = (ecx >> 25) & 1;
  const bool pclmul = (ecx >> 1) & 1;
  const bool osxsave = (ecx >> 27) & 1;
  const bool avx = (ecx >> 28) & 1;
  const bool rdrand = (ecx >> 30) & 1;
  // AVX state must be enabled by the OS in XCR0 (bits 1 SSE, 2 AVX) before
  // any VEX-encoded instruction is usable; AVX-512 also needs bits 5-7.
  uint64_t xcr0 = osxsave ? ReadXcr0() : 0;
  const bool os_ymm = (xcr0 & 0x6) == 0x6;
  const bool os_zmm = os_ymm && (xcr0 & 0xe0) == 0xe0;

  bool vaes = false, vpclmulqdq = false, sha = false, rdseed = false,
       avx512f = false;
  if (max_leaf >= 7) {
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    avx512f = (ebx >> 16) & 1;
    rdseed = (ebx >> 18) & 1;
    sha = (ebx >> 29) & 1;
    vaes = (ecx >> 9) & 1;
    vpclmulqdq = (ecx >> 10) & 1;
  }
  Add(&set, "aes", aes, true);
  Add(&set, "pclmulqdq", pclmul, true);
  Add(&set, "avx", avx, os_ymm);
  Add(&set, "vaes", vaes, os_ymm);
  Add(&set, "vpclmulqdq", vpclmulqdq, os_ymm);
  Add(&set, "sha", sha, true);
  Add(&set, "rdrand", rdrand, true);
  Add(&set, "rdseed", rdseed, true);
  Add(&set, "avx512f", avx512f, os_zmm);

  // Centaur leaves (VIA PadLock / Zhaoxin): leaf 0xC0000000 EAX is the
  // highest Centaur leaf; 0xC0000001 EDX holds (present, enabled) bit pairs:
  // RNG 2/3, ACE 6/7, ACE2 8/9, PHE 10/11, PMM 12/13. Only meaningful on
  // CentaurHauls or "  Shanghai  " parts; other vendors may return garbage.
  const bool centaur_vendor = std::strcmp(set.vendor, "CentaurHauls") == 0 ||
                              std::strcmp(set.vendor, "  Shanghai  ") == 0;
  if (centaur_vendor) {
    __cpuid(0xC0000000u, eax, ebx, ecx, edx);
    if (eax >= 0xC0000001u) {
      set.centaur_leaves = true;
      __cpuid(0xC0000001u, eax, ebx, ecx, edx);
      Add(&set, "padlock-rng", (edx >> 2) & 1, (edx >> 3) & 1);
      Add(&set, "padlock-ace", (edx >> 6) & 1, (edx >> 7) & 1);
      Add(&set, "padlock-ace2", (edx >> 8) & 1, (edx >> 9) & 1);
      Add(&set, "padlock-phe", (edx >> 10) & 1, (edx >> 11) & 1);
      Add(&set, "padlock-pmm", (edx >> 12) & 1, (edx >> 13) & 1);
    }
  }
#endif
  return set;
}

}  // namespace accelcrypt::tools
