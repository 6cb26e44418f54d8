// SPDX-License-Identifier: Apache-2.0
// Entropy source of the x86 backend: RDSEED words behind SP 800-90B
// continuous health tests.
#ifndef ACCELCRYPT_BACKENDS_X86_RNG_H_
#define ACCELCRYPT_BACKENDS_X86_RNG_H_

#include <stddef.h>
#include <stdint.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

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

// StartupRecord remembers, until the machine reboots, that its RDSEED
// passed the SP 800-90B §4.3 start-up test. §4.3 asks for start-up tests
// when the noise source powers up; the CPU's DRNG powers up with the
// machine, not with each process, so one passed test per boot and user
// serves every later process (about 0.3-0.6 ms of RDSEED each on AMD Zen,
// docs/performance-history.md, 2026-12-05). The continuous tests (§4.4)
// still run on every sample in every process. The record holds the
// kernel's boot_id (a new one at each boot) and is believed only in a
// regular file that no one but its owner, this user or root, can write.
class StartupRecord {
 public:
  // ForThisUser: root reads and writes /run/accelcrypt/rdseed-startup;
  // another user reads and writes $XDG_RUNTIME_DIR/accelcrypt-rdseed-startup
  // (a per-user tmpfs) and also believes root's. None (every process tests)
  // with ACCELCRYPT_RDSEED_STARTUP=every-process. No file is read here (this
  // runs when the backend loads): the kernel's boot_id is read at the first
  // Passed() or Remember(), and without one every process tests.
  static StartupRecord ForThisUser();
  // None: no record; every process runs the start-up test.
  static StartupRecord None() { return StartupRecord({}, "", ""); }
  StartupRecord(std::vector<std::string> read_paths, std::string write_path,
                std::string boot_id)
      : read_paths_(std::move(read_paths)),
        write_path_(std::move(write_path)),
        boot_id_(std::move(boot_id)),
        boot_id_known_(true) {}

  // Passed: a trusted record of this boot exists.
  bool Passed() const;
  // Remember writes the record (best effort: temporary file and rename).
  void Remember() const;

 private:
  // BootId is this boot's id: the one given, or the kernel's (read once).
  const std::string& BootId() const;

  std::vector<std::string> read_paths_;
  std::string write_path_;
  mutable std::string boot_id_;
  mutable bool boot_id_known_ = false;
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
  // The start-up test is skipped when StartupRecord::ForThisUser() says it
  // passed in this boot, and recorded there when it passes.
  static absl::StatusOr<std::unique_ptr<EntropySourceX86>> CreateRdseed();
  // CreateForTest uses `source` (with `arg`) instead of RDSEED, and
  // `record` (none by default) for the start-up test.
  static absl::StatusOr<std::unique_ptr<EntropySourceX86>> CreateForTest(
      RawSource source, void* arg,
      StartupRecord record = StartupRecord::None());

  // Fill writes len bytes and sets *entropy_bits to the min-entropy claimed
  // (4 bits per byte). kUnavailable when the source gave no data or failed a
  // health test; `out` is then zeroed.
  absl::Status Fill(uint8_t* out, size_t len, size_t* entropy_bits);

 private:
  EntropySourceX86(RawSource source, void* arg, StartupRecord record)
      : source_(source), arg_(arg), record_(std::move(record)) {}
  absl::Status NextWord(uint64_t* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status StartUp() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const RawSource source_;
  void* const arg_;
  const StartupRecord record_;
  absl::Mutex mu_;
  HealthTests tests_ ABSL_GUARDED_BY(mu_);
  bool failed_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace accelcrypt::x86

#endif  // ACCELCRYPT_BACKENDS_X86_RNG_H_
