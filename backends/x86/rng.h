// SPDX-License-Identifier: Apache-2.0
// Entropy source of the x86 backend: RDSEED words behind SP 800-90B
// continuous health tests.
#ifndef ACCELCRYPT_BACKENDS_X86_RNG_H_
#define ACCELCRYPT_BACKENDS_X86_RNG_H_

#include <stddef.h>
#include <stdint.h>

#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace accelcrypt::x86 {

// HealthTests runs SP 800-90B §4.4.1 (repetition count) and §4.4.2
// (adaptive proportion) over raw 64-bit samples, with cutoffs derived from
// the claimed min-entropy of kEntropyPerSample bits per sample and a false
// positive rate of 2^-20 per test. Not thread-safe.
class HealthTests {
 public:
  // 0.5 bit per bit: we claim half of each RDSEED word. RDSEED output is
  // conditioned and specified as full entropy (Intel DRNG guide §3.2), but
  // in a VM we cannot verify the host's source, so we stay conservative.
  static constexpr int kEntropyPerSample = 32;
  // RCT: C = 1 + ceil(20 / H) = 2 identical consecutive samples.
  static constexpr int kRepetitionCutoff = 2;
  // APT: W = 512 (non-binary); with H = 32 the binomial critical value is 0,
  // so any recurrence of the window's first sample within the window fails.
  static constexpr int kAdaptiveWindow = 512;
  static constexpr int kAdaptiveCutoff = 2;

  // Feed checks one sample; false when a test fails (the source must then
  // be taken out of service).
  bool Feed(uint64_t sample);

 private:
  bool have_last_ = false;
  uint64_t last_ = 0;
  int repeat_count_ = 0;
  int window_pos_ = 0;  // 0 = start a new window with this sample
  uint64_t window_first_ = 0;
  int window_count_ = 0;
};

// EntropySourceX86 hands out health-tested words. Thread-safe. Once a health
// test fails the source stays out of service for the life of the object.
class EntropySourceX86 {
 public:
  // RawSource writes one raw 64-bit sample; false when the hardware gave no
  // data after its bounded retries. Tests replace it to inject faults.
  using RawSource = bool (*)(void* arg, uint64_t* out);

  // RDSEED tries per word before giving up (the DRNG guide suggests retrying
  // with a pause; 100 tries bounds a call to well under a millisecond).
  static constexpr int kRdseedTries = 100;
  // SP 800-90B §4.3 start-up testing: 1024 samples before first use (run
  // by the first Fill).
  static constexpr int kStartupSamples = 1024;

  // CreateRdseed uses RDSEED; the caller has checked the CPU supports it.
  static absl::StatusOr<std::unique_ptr<EntropySourceX86>> CreateRdseed();
  // CreateForTest uses `source` (with `arg`) instead of RDSEED.
  static absl::StatusOr<std::unique_ptr<EntropySourceX86>> CreateForTest(
      RawSource source, void* arg);

  // Fill writes len bytes and sets *entropy_bits to the min-entropy claimed
  // (4 bits per byte). kUnavailable when the source gave no data or failed a
  // health test; `out` is then zeroed.
  absl::Status Fill(uint8_t* out, size_t len, size_t* entropy_bits);

 private:
  EntropySourceX86(RawSource source, void* arg) : source_(source), arg_(arg) {}
  absl::Status NextWord(uint64_t* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status StartUp() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const RawSource source_;
  void* const arg_;
  absl::Mutex mu_;
  HealthTests tests_ ABSL_GUARDED_BY(mu_);
  bool failed_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace accelcrypt::x86

#endif  // ACCELCRYPT_BACKENDS_X86_RNG_H_
