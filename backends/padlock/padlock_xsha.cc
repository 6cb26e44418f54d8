// SPDX-License-Identifier: Apache-2.0
//
// `rep xsha1`, `rep xsha256` and Zhaoxin's `xsha512` (facts §3). RSI input
// (any alignment), RDI state (16-aligned, 128-byte area), RCX length, RAX
// mode: all-ones for block mode, bytes already hashed for finalizing mode.
// RSI, RCX and RAX are treated as clobbered (Zhaoxin's lib/crypto patch
// declares exactly these as outputs).
#include "backends/padlock/padlock_asm.h"

namespace accelcrypt::padlock {

#define ACCELCRYPT_XSHA(bytes)                     \
  asm volatile(".byte " bytes                      \
               : "+S"(in), "+c"(count), "+a"(mode) \
               : "D"(state)                        \
               : "memory", "cc")

void XshaBlocks1(void* state, const uint8_t* in, size_t num_blocks) {
  size_t count = num_blocks;
  size_t mode = ~size_t{0};
  ACCELCRYPT_XSHA("0xf3,0x0f,0xa6,0xc8");  // rep xsha1
}

void XshaBlocks256(void* state, const uint8_t* in, size_t num_blocks) {
  size_t count = num_blocks;
  size_t mode = ~size_t{0};
  ACCELCRYPT_XSHA("0xf3,0x0f,0xa6,0xd0");  // rep xsha256
}

void XshaBlocks512(void* state, const uint8_t* in, size_t num_blocks) {
  size_t count = num_blocks;
  size_t mode = ~size_t{0};                // ignored by xsha512, kept defined
  ACCELCRYPT_XSHA("0xf3,0x0f,0xa6,0xe0");  // rep xsha512 (PHE2)
}

void XshaFinal1(void* state, const uint8_t* in, size_t done_len,
                size_t total_len) {
  size_t count = total_len;
  size_t mode = done_len;
  ACCELCRYPT_XSHA("0xf3,0x0f,0xa6,0xc8");  // rep xsha1
}

void XshaFinal256(void* state, const uint8_t* in, size_t done_len,
                  size_t total_len) {
  size_t count = total_len;
  size_t mode = done_len;
  ACCELCRYPT_XSHA("0xf3,0x0f,0xa6,0xd0");  // rep xsha256
}

#undef ACCELCRYPT_XSHA

}  // namespace accelcrypt::padlock
