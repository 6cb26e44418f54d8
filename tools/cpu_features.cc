// SPDX-License-Identifier: Apache-2.0
//
// The CLI's one CPUID leaf file (through the backend kit's reader,
// accelcrypt/kit/cpuid.h). /proc/cpuinfo is not used: in VMs it can
// omit flags CPUID reports (rdseed on a Zen 5 guest, DESIGN.md hazards).
#include "tools/cpu_features.h"

#include <cstdint>
#include <cstring>

#include "accelcrypt/kit/cpuid.h"

namespace accelcrypt::tools {
namespace {

void Add(CpuFeatureSet* set, const char* name, bool present, bool usable) {
  if (set->num_features >= CpuFeatureSet::kMaxFeatures) return;
  set->features[set->num_features++] = {name, present, present && usable};
}

}  // namespace

CpuFeatureSet ReadCpuFeatures() {
  CpuFeatureSet set;
  std::memset(&set, 0, sizeof(set));
#ifdef ACCELCRYPT_KIT_HAVE_CPUID
  if (!kit::HaveCpuid()) return set;
  set.cpuid_available = true;
  const kit::CpuidRegs leaf0 = kit::Cpuid(0);
  const uint32_t max_leaf = leaf0.eax;
  kit::Vendor(leaf0, set.vendor);

  const kit::CpuidRegs leaf1 = kit::Cpuid(1);
  const bool aes = (leaf1.ecx >> 25) & 1;
  const bool pclmul = (leaf1.ecx >> 1) & 1;
  const bool avx = (leaf1.ecx >> 28) & 1;
  const bool rdrand = (leaf1.ecx >> 30) & 1;
  // AVX state must be enabled by the OS in XCR0 before any VEX-encoded
  // instruction is usable; AVX-512 also needs the opmask and ZMM states.
  const uint64_t xcr0 = kit::ReadXcr0(leaf1);
  const bool os_ymm = (xcr0 & kit::kXcr0Ymm) == kit::kXcr0Ymm;
  const bool os_zmm = (xcr0 & kit::kXcr0Zmm) == kit::kXcr0Zmm;

  bool vaes = false, vpclmulqdq = false, sha = false, rdseed = false,
       avx512f = false;
  if (max_leaf >= 7) {
    const kit::CpuidRegs leaf7 = kit::Cpuid(7, 0);
    avx512f = (leaf7.ebx >> 16) & 1;
    rdseed = (leaf7.ebx >> 18) & 1;
    sha = (leaf7.ebx >> 29) & 1;
    vaes = (leaf7.ecx >> 9) & 1;
    vpclmulqdq = (leaf7.ecx >> 10) & 1;
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
  if (kit::IsCentaurVendor(set.vendor) &&
      kit::CentaurLeavesExist(kit::Cpuid(0xC0000000u))) {
    set.centaur_leaves = true;
    const uint32_t edx = kit::Cpuid(0xC0000001u).edx;
    Add(&set, "padlock-rng", (edx >> 2) & 1, (edx >> 3) & 1);
    Add(&set, "padlock-ace", (edx >> 6) & 1, (edx >> 7) & 1);
    Add(&set, "padlock-ace2", (edx >> 8) & 1, (edx >> 9) & 1);
    Add(&set, "padlock-phe", (edx >> 10) & 1, (edx >> 11) & 1);
    Add(&set, "padlock-pmm", (edx >> 12) & 1, (edx >> 13) & 1);
  }
#endif
  return set;
}

}  // namespace accelcrypt::tools
