// SPDX-License-Identifier: Apache-2.0
#include "backends/padlock/cpuid.h"

#include <string.h>

#include "accelcrypt/kit/cpuid.h"

namespace accelcrypt::padlock {
namespace {

constexpr uint32_t kPairRng = 0x3u << 2;
constexpr uint32_t kPairAce = 0x3u << 6;
constexpr uint32_t kPairAce2 = 0x3u << 8;
constexpr uint32_t kPairPhe = 0x3u << 10;
constexpr uint32_t kPairPhe2 = 0x3u << 25;

bool Has(uint32_t edx, uint32_t pair) { return (edx & pair) == pair; }

}  // namespace

void RealCpuid(uint32_t leaf, uint32_t subleaf, uint32_t out[4]) {
  const kit::CpuidRegs r = kit::Cpuid(leaf, subleaf);
  out[0] = r.eax;
  out[1] = r.ebx;
  out[2] = r.ecx;
  out[3] = r.edx;
}

Features DetectFeatures(CpuidSource source) {
  Features f;
  uint32_t r[4];
  source(0, 0, r);
  const uint32_t max_leaf = r[0];
  kit::Vendor({r[0], r[1], r[2], r[3]}, f.vendor);
  // "  Shanghai  " is Zhaoxin; some Zhaoxin parts say CentaurHauls (§1.1).
  f.centaur_vendor = kit::IsCentaurVendor(f.vendor);
  if (max_leaf >= 1) {
    source(1, 0, r);
    const uint32_t base_family = (r[0] >> 8) & 0xf;
    const uint32_t base_model = (r[0] >> 4) & 0xf;
    f.stepping = r[0] & 0xf;
    f.family =
        base_family == 0xf ? base_family + ((r[0] >> 20) & 0xff) : base_family;
    f.model = (base_family == 0x6 || base_family == 0xf || base_family == 0x7)
                  ? base_model | (((r[0] >> 16) & 0xf) << 4)
                  : base_model;
  }
  if (!f.centaur_vendor) return f;
  source(0xC0000000u, 0, r);
  // Require the leaf to exist; "EAX != 0" is not enough (Valgrind returns
  // 7 here, facts §6.6).
  if (!kit::CentaurLeavesExist({r[0], r[1], r[2], r[3]})) return f;
  source(0xC0000001u, 0, r);
  f.centaur_edx = r[3];
  f.rng = Has(r[3], kPairRng);
  f.ace = Has(r[3], kPairAce);
  f.ace2 = f.ace && Has(r[3], kPairAce2);
  f.phe = Has(r[3], kPairPhe);
  f.phe2 = f.phe && Has(r[3], kPairPhe2);
  // Block mode exists from Nano (family 6, model 15) on and on Zhaoxin's
  // family 7; C7 (models 10 and 13) has finalizing mode only (§3.5).
  f.phe_block_mode =
      f.phe && (f.family > 6 || (f.family == 6 && f.model >= 0xf));
  return f;
}

}  // namespace accelcrypt::padlock
