// SPDX-License-Identifier: Apache-2.0
// CPU feature detection for the x86 backend and the choice of implementation
// per algorithm. cpu_features.cc is the only file that executes CPUID/XGETBV.
#ifndef ACCELCRYPT_BACKENDS_X86_CPU_FEATURES_H_
#define ACCELCRYPT_BACKENDS_X86_CPU_FEATURES_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace accelcrypt::x86 {

// CpuFeatures is the set of instruction-set extensions that the CPU reports
// and the operating system has enabled (XCR0). A plain value: tests mask it to
// force each code path.
struct CpuFeatures {
  bool aesni = false;
  bool pclmulqdq = false;
  bool ssse3 = false;
  bool sse41 = false;
  bool avx = false;  // CPUID bit and XCR0 SSE|AVX state enabled
  bool avx2 = false;
  bool avx512 = false;  // F+BW+VL and XCR0 opmask/ZMM state enabled
  bool vaes = false;    // VAES usable with at least YMM registers
  bool vpclmulqdq = false;
  bool shani = false;
  bool rdrand = false;
  bool rdseed = false;
};

// DetectCpuFeatures runs CPUID and XGETBV once per process and returns the
// cached result. Thread-safe.
const CpuFeatures& DetectCpuFeatures();

// MaskCpuFeatures clears the features named in `disable`, a comma-separated
// list of: vaes512, vaes, avx512, vpclmulqdq, aesni, shani, rdseed, rdrand.
// Unknown names return kInvalidArgument. "vaes512" disables only the 512-bit
// VAES paths (it clears avx512).
absl::StatusOr<CpuFeatures> MaskCpuFeatures(const CpuFeatures& in,
                                            std::string_view disable);

enum class AesImpl { kNone, kAesni, kVaes256, kVaes512 };
enum class GcmImpl { kNone, kAesniPclmul, kVaes256, kVaes512 };
enum class ShaImpl { kNone, kShani };
enum class RngImpl { kNone, kRdseed };

// Implementations names the code path serving each algorithm for a feature
// set. `aes_parallel` serves ECB, CTR and CBC decryption; `aes_serial` serves
// CBC encryption, CFB128 and OFB (chained modes, one block at a time).
struct Implementations {
  AesImpl aes_parallel = AesImpl::kNone;
  AesImpl aes_serial = AesImpl::kNone;
  GcmImpl gcm = GcmImpl::kNone;
  ShaImpl sha = ShaImpl::kNone;
  RngImpl rng = RngImpl::kNone;
};

Implementations ChooseImplementations(const CpuFeatures& f);

const char* AesImplName(AesImpl impl);
const char* GcmImplName(GcmImpl impl);

// DescribeFeatures lists the features present, e.g.
// "aesni pclmulqdq avx avx2 avx512 vaes vpclmulqdq shani rdrand rdseed".
std::string DescribeFeatures(const CpuFeatures& f);

// DescribeImplementations lists the implementation per algorithm, e.g.
// "aes-ecb=vaes512 aes-ctr=vaes512 aes-cbc-dec=vaes512 aes-cbc-enc=aesni ...".
std::string DescribeImplementations(const Implementations& impl);

}  // namespace accelcrypt::x86

#endif  // ACCELCRYPT_BACKENDS_X86_CPU_FEATURES_H_
