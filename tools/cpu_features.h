// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_TOOLS_CPU_FEATURES_H_
#define ACCELCRYPT_TOOLS_CPU_FEATURES_H_

namespace accelcrypt::tools {

// CpuFeature is one named CPU capability as CPUID reports it to this
// process. `usable` adds the OS check (XCR0 state enabled for AVX-class
// features, the "enabled" bit for Centaur units); `present` is the raw bit.
struct CpuFeature {
  const char* name;
  bool present;
  bool usable;
};

// CpuFeatureSet is what the CLI prints under "CPU features". It is filled
// once by ReadCpuFeatures and never changes.
struct CpuFeatureSet {
  static constexpr int kMaxFeatures = 16;
  char vendor[13];  // CPUID leaf 0 vendor string, NUL-terminated
  bool cpuid_available;
  bool centaur_leaves;  // leaf 0xC0000001 exists (VIA/Zhaoxin)
  int num_features;
  CpuFeature features[kMaxFeatures];
};

// ReadCpuFeatures executes CPUID (and XGETBV when OSXSAVE is set). This is
// the only place in tools/ that does; on non-x86 builds it reports
// cpuid_available = false. Thread-safe (no shared state).
CpuFeatureSet ReadCpuFeatures();

}  // namespace accelcrypt::tools

#endif  // ACCELCRYPT_TOOLS_CPU_FEATURES_H_
