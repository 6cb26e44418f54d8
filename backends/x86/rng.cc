// SPDX-License-Identifier: Apache-2.0
#include "backends/x86/rng.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "accelcrypt/kit/files.h"
#include "backends/x86/internal/aes_leaf.h"

namespace accelcrypt::x86 {
namespace {

bool RdseedSource(void*, uint64_t* out) {
  return internal::Rdseed64(out, EntropySourceX86::kRdseedTries);
}

constexpr char kRecordMagic[] = "accelcrypt rdseed start-up passed 1024";
constexpr char kRootRecord[] = "/run/accelcrypt/rdseed-startup";

// ReadSmall reads up to 255 bytes of `path`; empty when it cannot, or when
// `trusted` and the file is not a regular file whose owner is this user or
// root and that neither group nor others can write.
std::string ReadSmall(const std::string& path, bool trusted) {
  std::string out;
  if (!kit::ReadFile(
          path, &out,
          {.max_bytes = 255, .no_follow = true, .trusted_only = trusted})) {
    return "";
  }
  return out;
}

}  // namespace

StartupRecord StartupRecord::ForThisUser() {
  const char* mode = std::getenv("ACCELCRYPT_RDSEED_STARTUP");
  if (mode != nullptr && std::string(mode) == "every-process") return None();
  StartupRecord record = None();
  record.boot_id_known_ = false;  // read at first use, not at load
  if (geteuid() == 0) {
    record.read_paths_ = {kRootRecord};
    record.write_path_ = kRootRecord;
    return record;
  }
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  if (runtime != nullptr && runtime[0] == '/') {
    record.write_path_ = absl::StrCat(runtime, "/accelcrypt-rdseed-startup");
    record.read_paths_.push_back(record.write_path_);
  }
  record.read_paths_.push_back(kRootRecord);
  return record;
}

const std::string& StartupRecord::BootId() const {
  if (!boot_id_known_) {
    boot_id_ = std::string(absl::StripAsciiWhitespace(
        ReadSmall("/proc/sys/kernel/random/boot_id", /*trusted=*/false)));
    boot_id_known_ = true;
  }
  return boot_id_;
}

bool StartupRecord::Passed() const {
  if (read_paths_.empty() || BootId().empty()) return false;
  const std::string want = absl::StrCat(kRecordMagic, " ", BootId(), "\n");
  for (const std::string& path : read_paths_) {
    if (ReadSmall(path, /*trusted=*/true) == want) return true;
  }
  return false;
}

void StartupRecord::Remember() const {
  if (write_path_.empty() || BootId().empty()) return;
  if (write_path_ == kRootRecord) mkdir("/run/accelcrypt", 0755);
  const std::string text = absl::StrCat(kRecordMagic, " ", BootId(), "\n");
  (void)kit::WriteFileAtomically(write_path_, text, {.mode = 0644});
}

bool HealthTests::Feed(uint64_t sample) {
  bool ok = true;
  // Repetition count test (SP 800-90B §4.4.1).
  if (have_last_ && sample == last_) {
    if (++repeat_count_ >= kRepetitionCutoff) ok = false;
  } else {
    repeat_count_ = 1;
  }
  have_last_ = true;
  last_ = sample;
  // Adaptive proportion test (SP 800-90B §4.4.2).
  if (window_pos_ == 0) {
    window_first_ = sample;
    window_count_ = 1;
  } else if (sample == window_first_) {
    if (++window_count_ >= kAdaptiveCutoff) ok = false;
  }
  if (++window_pos_ == kAdaptiveWindow) window_pos_ = 0;
  return ok;
}

absl::StatusOr<std::unique_ptr<EntropySourceX86>>
EntropySourceX86::CreateRdseed() {
  return CreateForTest(&RdseedSource, nullptr, StartupRecord::ForThisUser());
}

absl::StatusOr<std::unique_ptr<EntropySourceX86>>
EntropySourceX86::CreateForTest(RawSource source, void* arg,
                                StartupRecord record) {
  return std::unique_ptr<EntropySourceX86>(
      new EntropySourceX86(source, arg, std::move(record)));
}

absl::Status EntropySourceX86::StartUp() {
  // SP 800-90B §4.3 start-up testing, at the first request rather than at
  // load: a process that never asks for entropy never spends the 1024
  // samples, and none does once the test passed in this boot (the record).
  // A health-test failure puts the source out of service for good; no data
  // (RDSEED exhausted) leaves start-up to the next request.
  if (record_.Passed()) {
    started_ = true;
    return absl::OkStatus();
  }
  for (int i = 0; i < kStartupSamples; ++i) {
    uint64_t word;
    absl::Status s = NextWord(&word);
    word = 0;
    if (!s.ok()) {
      return absl::UnavailableError(
          std::string("x86: RDSEED start-up test failed: ") +
          std::string(s.message()));
    }
  }
  started_ = true;
  record_.Remember();
  return absl::OkStatus();
}

absl::Status EntropySourceX86::NextWord(uint64_t* out) {
  if (failed_) {
    return absl::UnavailableError(
        "x86: RDSEED entropy source is out of service after a failed health "
        "test");
  }
  if (!source_(arg_, out)) {
    return absl::UnavailableError(
        "x86: RDSEED returned no data after the retry bound");
  }
  if (!tests_.Feed(*out)) {
    failed_ = true;
    *out = 0;
    return absl::UnavailableError(
        "x86: RDSEED failed a continuous health test (SP 800-90B); source "
        "taken out of service");
  }
  return absl::OkStatus();
}

absl::Status EntropySourceX86::Fill(uint8_t* out, size_t len,
                                    size_t* entropy_bits) {
  absl::MutexLock lock(&mu_);
  if (!started_) {
    if (absl::Status s = StartUp(); !s.ok()) {
      explicit_bzero(out, len);
      return s;
    }
  }
  size_t done = 0;
  while (done < len) {
    uint64_t word;
    absl::Status s = NextWord(&word);
    if (!s.ok()) {
      explicit_bzero(out, len);
      return s;
    }
    const size_t n = len - done < 8 ? len - done : 8;
    memcpy(out + done, &word, n);
    explicit_bzero(&word, sizeof(word));
    done += n;
  }
  *entropy_bits = len * 8 * HealthTests::kEntropyPerSample / 64;
  return absl::OkStatus();
}

}  // namespace accelcrypt::x86
