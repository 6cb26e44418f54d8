// SPDX-License-Identifier: Apache-2.0
// The only file of the x86 backend that reads CPUID and XGETBV (through
// the backend kit's reader, accelcrypt/kit/cpuid.h).
#include "backends/x86/cpu_features.h"

#include <stdint.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "accelcrypt/kit/cpuid.h"

namespace accelcrypt::x86 {
namespace {

CpuFeatures Probe() {
  CpuFeatures f;
  if (!kit::HaveCpuid()) return f;
  const uint32_t max_leaf = kit::Cpuid(0).eax;
  const kit::CpuidRegs leaf1 = kit::Cpuid(1);
  const uint32_t ecx1 = leaf1.ecx;
  uint32_t ebx7 = 0, ecx7 = 0;
  if (max_leaf >= 7) {
    const kit::CpuidRegs leaf7 = kit::Cpuid(7, 0);
    ebx7 = leaf7.ebx;
    ecx7 = leaf7.ecx;
  }
  // CPUID.1:ECX (Intel SDM Vol. 2A, Table 3-10).
  f.pclmulqdq = ecx1 & (1u << 1);
  f.ssse3 = ecx1 & (1u << 9);
  f.sse41 = ecx1 & (1u << 19);
  f.aesni = (ecx1 & (1u << 25)) && f.ssse3 && f.sse41;
  f.rdrand = ecx1 & (1u << 30);
  // CPUID.7.0:EBX/ECX.
  f.rdseed = ebx7 & (1u << 18);
  f.shani = (ebx7 & (1u << 29)) && f.ssse3 && f.sse41;

  // AVX bits mean nothing unless the OS saves the YMM/ZMM state on context
  // switch: check OSXSAVE, then XCR0 (BoringSSL's cpu_intel.c does the same).
  const uint64_t xcr0 = kit::ReadXcr0(leaf1);
  const bool ymm_os = (xcr0 & kit::kXcr0Ymm) == kit::kXcr0Ymm;
  const bool zmm_os = (xcr0 & kit::kXcr0Zmm) == kit::kXcr0Zmm;
  f.avx = ymm_os && (ecx1 & (1u << 28));
  f.avx2 = f.avx && (ebx7 & (1u << 5));
  f.avx512 = zmm_os && f.avx2 && (ebx7 & (1u << 16)) &&  // AVX512F
             (ebx7 & (1u << 30)) &&                      // AVX512BW
             (ebx7 & (1u << 31));                        // AVX512VL
  f.vaes = f.avx2 && f.aesni && (ecx7 & (1u << 9));
  f.vpclmulqdq = f.avx2 && f.pclmulqdq && (ecx7 & (1u << 10));
  return f;
}

}  // namespace

const CpuFeatures& DetectCpuFeatures() {
  // A function-local static: probed on first use, never at load time.
  static const CpuFeatures features = Probe();
  return features;
}

absl::StatusOr<CpuFeatures> MaskCpuFeatures(const CpuFeatures& in,
                                            std::string_view disable) {
  CpuFeatures f = in;
  std::vector<std::string> names(1);
  for (char ch : disable) {
    if (ch == ',') {
      names.emplace_back();
    } else if (ch != ' ' && ch != '\t') {
      names.back().push_back(
          static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch));
    }
  }
  for (const std::string& name : names) {
    if (name.empty()) continue;
    if (name == "vaes512" || name == "avx512") {
      f.avx512 = false;
    } else if (name == "vaes") {
      f.vaes = false;
    } else if (name == "vpclmulqdq") {
      f.vpclmulqdq = false;
    } else if (name == "aesni") {
      // Every AES path needs AES-NI; VAES without it is not a CPU that exists.
      f.aesni = false;
      f.vaes = false;
    } else if (name == "pclmulqdq") {
      f.pclmulqdq = false;
      f.vpclmulqdq = false;
    } else if (name == "shani") {
      f.shani = false;
    } else if (name == "rdseed") {
      f.rdseed = false;
    } else if (name == "rdrand") {
      f.rdrand = false;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "x86: unknown feature '", name,
          "' in ACCELCRYPT_X86_DISABLE (known: vaes512, vaes, avx512, "
          "vpclmulqdq, pclmulqdq, aesni, shani, rdseed, rdrand)"));
    }
  }
  return f;
}

Implementations ChooseImplementations(const CpuFeatures& f) {
  Implementations impl;
  if (f.aesni) {
    impl.aes_serial = AesImpl::kAesni;
    impl.aes_parallel = AesImpl::kAesni;
    if (f.vaes && f.avx2) impl.aes_parallel = AesImpl::kVaes256;
    if (f.vaes && f.avx512) impl.aes_parallel = AesImpl::kVaes512;
    if (f.pclmulqdq) impl.gcm = GcmImpl::kAesniPclmul;
    if (f.vaes && f.vpclmulqdq && f.avx2 && f.pclmulqdq) {
      impl.gcm = GcmImpl::kVaes256;
    }
    if (f.vaes && f.vpclmulqdq && f.avx512 && f.pclmulqdq) {
      impl.gcm = GcmImpl::kVaes512;
    }
  }
  if (f.shani) impl.sha = ShaImpl::kShani;
  if (f.rdseed) impl.rng = RngImpl::kRdseed;
  return impl;
}

const char* AesImplName(AesImpl impl) {
  switch (impl) {
    case AesImpl::kAesni:
      return "aesni";
    case AesImpl::kVaes256:
      return "vaes256";
    case AesImpl::kVaes512:
      return "vaes512";
    case AesImpl::kNone:
      break;
  }
  return "none";
}

const char* GcmImplName(GcmImpl impl) {
  switch (impl) {
    case GcmImpl::kAesniPclmul:
      return "aesni-pclmul";
    case GcmImpl::kVaes256:
      return "vaes256-vpclmulqdq";
    case GcmImpl::kVaes512:
      return "vaes512-vpclmulqdq";
    case GcmImpl::kNone:
      break;
  }
  return "none";
}

std::string DescribeFeatures(const CpuFeatures& f) {
  std::string names;
  auto add = [&names](const char* name) {
    if (!names.empty()) names += ' ';
    names += name;
  };
  if (f.aesni) add("aesni");
  if (f.pclmulqdq) add("pclmulqdq");
  if (f.avx) add("avx");
  if (f.avx2) add("avx2");
  if (f.avx512) add("avx512");
  if (f.vaes) add("vaes");
  if (f.vpclmulqdq) add("vpclmulqdq");
  if (f.shani) add("shani");
  if (f.rdrand) add("rdrand");
  if (f.rdseed) add("rdseed");
  if (names.empty()) return "none";
  return names;
}

std::string DescribeImplementations(const Implementations& impl) {
  const char* par = AesImplName(impl.aes_parallel);
  const char* ser = AesImplName(impl.aes_serial);
  return absl::StrCat(
      "aes-ecb=", par, " aes-ctr=", par, " aes-cbc-dec=", par,
      " aes-cbc-enc=", ser, " aes-cfb128=", ser, " aes-ofb=", ser,
      " aes-gcm=", GcmImplName(impl.gcm),
      " sha1=", impl.sha == ShaImpl::kShani ? "shani" : "none",
      " sha224=", impl.sha == ShaImpl::kShani ? "shani" : "none",
      " sha256=", impl.sha == ShaImpl::kShani ? "shani" : "none",
      " rng-entropy=", impl.rng == RngImpl::kRdseed ? "rdseed" : "none");
}

}  // namespace accelcrypt::x86
