// SPDX-License-Identifier: Apache-2.0
// RDSEED and RDRAND, 64-bit forms only, with bounded retries: both report
// "no data yet" through CF = 0, RDSEED far more often under load (Intel
// DRNG Software Implementation Guide §5.3.1, §5.3.2).
#include <immintrin.h>

#include "backends/x86/internal/aes_leaf.h"
#include "backends/x86/internal/target.h"

namespace accelcrypt::x86::internal {

ACCELCRYPT_TARGET_RDSEED bool Rdseed64(uint64_t* out, int max_tries) {
  for (int i = 0; i < max_tries; ++i) {
    unsigned long long v;
    if (_rdseed64_step(&v)) {
      *out = v;
      return true;
    }
    _mm_pause();
  }
  return false;
}

ACCELCRYPT_TARGET_RDRAND bool Rdrand64(uint64_t* out, int max_tries) {
  for (int i = 0; i < max_tries; ++i) {
    unsigned long long v;
    if (_rdrand64_step(&v)) {
      *out = v;
      return true;
    }
  }
  return false;
}

}  // namespace accelcrypt::x86::internal
