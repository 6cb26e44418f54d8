// SPDX-License-Identifier: Apache-2.0
// The only file of the x86 backend that executes CPUID and XGETBV.
#include "backends/x86/cpu_features.h"

#include <cpuid.h>
#include <stdint.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace accelcrypt::x86 {
namespace {

// XCR0 state-component bits (Intel SDM Vol. 1, 13.1).
constexpr uint64_t kXcr0Sse = 1u << 1;
constexpr uint64_t kXcr0Avx = 1u << 2;
constexpr uint64_t kXcr0Opmask = 1u << 5;
constexpr uint64_t kXcr0ZmmHi256 = 1u << 6;
constexpr uint64_t kXcr0Hi16Zmm = 1u << 7;

uint64_t ReadXcr0() {
  uint32_t eax, edx;
  // XGETBV with ECX = 0 reads XCR0. Only executed when CPUID.1:ECX.OSXSAVE
  // says the OS has set CR4.OSXSAVE; otherwise it raises #UD.
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

CpuFeatures Probe() {
  CpuFeatures f;
  unsigned int eax, ebx, ecx, edx;
  if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return f;
  const unsigned int max_leaf = eax;
  __cpuid(1, eax, ebx, ecx, edx);
  const uint32_t ecx1 = ecx;
  uint32_t ebx7 = 0, ecx7 = 0;
  if (max_leaf >= 7) {
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    ebx7 = ebx;
    ecx7 = ecx;
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
  const bool osxsave = ecx1 & (1u << 27);
  const uint64_t xcr0 = osxsave ? ReadXcr0() : 0;
  const bool ymm_os = (xcr0 & (kXcr0Sse | kXcr0Avx)) == (kXcr0Sse | kXcr0Avx);
  const uint64_t zmm_mask = kXcr0Opmask | kXcr0ZmmHi256 | kXcr0Hi16Zmm;
  const bool zmm_os = ymm_os && (xcr0 & zmm_mask) == zmm_mask;
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
