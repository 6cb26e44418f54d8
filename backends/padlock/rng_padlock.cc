// SPDX-License-Identifier: Apache-2.0
//
// The xstore noise source as an entropy input (facts §4.3, §4.4): every
// xstore status word is checked, the delivered bytes go through the
// SP 800-90B §4.4 continuous health tests (Repetition Count and Adaptive
// Proportion) after a start-up test over 1024 discarded samples, and any
// failure takes the source out of service for the life of the backend. No
// byte of a failed request reaches the caller.
#include <stdio.h>
#include <string.h>

#include "backends/padlock/padlock_asm.h"
#include "backends/padlock/padlock_internal.h"
#include "backends/padlock/portable_crypto.h"

namespace accelcrypt::padlock {
namespace {

// Claimed min-entropy: 4 bits per byte (the conservative claim of facts
// §4.4). Cut-offs for alpha = 2^-20: RCT C = 1 + ceil(20 / H) = 6; APT with
// W = 512 byte samples: C = 1 + critbinom(512, 2^-4, 1 - 2^-20) = 62.
constexpr uint32_t kBitsPerByte = 4;
constexpr uint32_t kRctCutoff = 6;
constexpr uint32_t kAptWindow = 512;
constexpr uint32_t kAptCutoff = 62;
constexpr int kStartupSamples = 1024;
// xstore may report 0 bytes while the source refills; Linux polls 20 times.
constexpr int kMaxEmptyReads = 64;

// Status bits (facts §4.2): 6 = enabled; 10..14 = DC bias, raw bits, string
// filter enabled / failed must all be clear.
constexpr uint32_t kStatusEnabled = 1u << 6;
constexpr uint32_t kStatusBad = 0x7Cu << 8;

void Latch(RngState& s, const char* why) {
  s.failed = true;
  snprintf(s.reason, sizeof(s.reason), "%s", why);
}

// Feed runs both continuous tests on one sample; false on a failure.
bool Feed(RngState& s, uint8_t b) {
  if (s.last == b) {
    if (++s.rct_run >= kRctCutoff) {
      Latch(s, "repetition count test failed");
      return false;
    }
  } else {
    s.last = b;
    s.rct_run = 1;
  }
  if (s.apt_pos == 0) {
    s.apt_ref = b;
    s.apt_count = 1;
  } else if (b == s.apt_ref) {
    if (++s.apt_count >= kAptCutoff) {
      Latch(s, "adaptive proportion test failed");
      return false;
    }
  }
  s.apt_pos = (s.apt_pos + 1) % kAptWindow;
  return true;
}

enum class Draw { kOk, kEmpty, kFailed };

// Draw8 reads 8 bytes with EDX = 0 and checks the status word.
Draw Draw8(RngState& s, uint8_t out[8]) {
  alignas(16) uint8_t tmp[16];
  for (int i = 0; i < kMaxEmptyReads; ++i) {
    const uint32_t status = Xstore(tmp, 0);
    if ((status & kStatusEnabled) == 0) {
      Latch(s, "xstore reports the RNG disabled");
      return Draw::kFailed;
    }
    if ((status & kStatusBad) != 0) {
      Latch(s, "xstore status reports DC bias, raw bits or a string filter");
      return Draw::kFailed;
    }
    const uint32_t count = status & 0x1f;
    if (count == 0) continue;
    if (count != 8) {
      Latch(s, "xstore stored a short count");
      return Draw::kFailed;
    }
    memcpy(out, tmp, 8);
    SecureZero(tmp, sizeof(tmp));
    for (int j = 0; j < 8; ++j) {
      if (!Feed(s, out[j])) {
        SecureZero(out, 8);
        return Draw::kFailed;
      }
    }
    return Draw::kOk;
  }
  return Draw::kEmpty;
}

accelcrypt_status Entropy(void* backend, uint8_t* out, size_t len,
                          size_t* entropy_bits, accelcrypt_error* err) {
  auto* be = static_cast<Backend*>(backend);
  if ((len > 0 && out == nullptr) || entropy_bits == nullptr) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_INVALID_ARGUMENT,
                               "padlock: entropy: NULL buffer");
  }
  // On every failure the whole output is wiped: nothing of a failed
  // request, and nothing left over from the caller's buffer, looks random.
  if (len > 0) SecureZero(out, len);
  std::lock_guard<std::mutex> lock(be->rng.mu);
  RngState& s = be->rng;
  if (s.failed) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_UNAVAILABLE,
                               "padlock: RNG out of service: %s", s.reason);
  }
  uint8_t block[8];
  if (!s.started) {
    for (int i = 0; i < kStartupSamples / 8; ++i) {
      const Draw r = Draw8(s, block);
      if (r == Draw::kEmpty) {
        return kit::WriteAbiErrorf(
            err, ACCELCRYPT_ERR_UNAVAILABLE,
            "padlock: RNG start-up: xstore returned no data");
      }
      if (r == Draw::kFailed) {
        return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_UNAVAILABLE,
                                   "padlock: RNG start-up test: %s", s.reason);
      }
    }
    s.started = true;
  }
  for (size_t pos = 0; pos < len; pos += 8) {
    const Draw r = Draw8(s, block);
    if (r != Draw::kOk) {
      SecureZero(out, len);
      SecureZero(block, sizeof(block));
      if (r == Draw::kEmpty) {
        return kit::WriteAbiErrorf(
            err, ACCELCRYPT_ERR_UNAVAILABLE,
            "padlock: RNG: xstore returned no data %d times", kMaxEmptyReads);
      }
      return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_UNAVAILABLE,
                                 "padlock: RNG taken out of service: %s",
                                 s.reason);
    }
    const size_t take = len - pos < 8 ? len - pos : 8;
    memcpy(out + pos, block, take);
  }
  SecureZero(block, sizeof(block));
  *entropy_bits = len * kBitsPerByte;
  return ACCELCRYPT_OK;
}

}  // namespace

const accelcrypt_rng_table kRngTable = {
    sizeof(accelcrypt_rng_table),
    nullptr,  // random_bytes: xstore output is an entropy input only (§4.3)
    Entropy,
};

}  // namespace accelcrypt::padlock
