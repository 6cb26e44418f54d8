// SPDX-License-Identifier: Apache-2.0
//
// `xstore` (facts §4.1): RDI destination (advanced by the bytes stored),
// EDX[1:0] divisor (XED marks EDX written: reloaded on every call), EAX
// status on return.
#include "backends/padlock/padlock_asm.h"

namespace accelcrypt::padlock {

uint32_t Xstore(uint8_t* out, uint32_t divisor) {
  uint32_t status;
  asm volatile(".byte 0x0f,0xa7,0xc0"  // xstore-rng
               : "=a"(status), "+D"(out), "+d"(divisor)
               :
               : "memory", "cc");
  return status;
}

}  // namespace accelcrypt::padlock
