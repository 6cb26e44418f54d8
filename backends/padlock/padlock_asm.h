// SPDX-License-Identifier: Apache-2.0
//
// Leaf functions around the PadLock instructions (VIA PadLock Programming
// Guide; register roles per intelxed `datafiles/via`, see
// docs/padlock-facts.md §2.2, §3.2, §4.1). Each function executes
// exactly one instruction; everything else (chunking, bounce buffers, key
// schedules, padding, health tests) lives in the portable code around them.
// No allocation, no status: plain functions over bytes.
#ifndef ACCELCRYPT_BACKENDS_PADLOCK_PADLOCK_ASM_H_
#define ACCELCRYPT_BACKENDS_PADLOCK_PADLOCK_ASM_H_

#include <stddef.h>
#include <stdint.h>

namespace accelcrypt::padlock {

// Xcrypt* run one `rep xcrypt-<mode>` over `num_blocks` 16-byte blocks.
// `in` and `out` must be 16-byte aligned (the caller bounces otherwise),
// `key` points at a 16-aligned 256-byte key area, `cword` at the 16-aligned
// control word and `iv` at the 16-aligned IV/counter (unused by ECB). The
// hardware may read past the end of `in` (prefetch, facts §2.8): callers
// guard page ends. Returns the value of RAX after the instruction, which is
// `iv` on every part seen so far; callers copy the chaining value from it
// when it differs (facts §2.6). `num_blocks` must be > 0.
uint8_t* XcryptEcb(const uint8_t* in, uint8_t* out, size_t num_blocks,
                   const void* key, const void* cword, uint8_t* iv);
uint8_t* XcryptCbc(const uint8_t* in, uint8_t* out, size_t num_blocks,
                   const void* key, const void* cword, uint8_t* iv);
uint8_t* XcryptCtr(const uint8_t* in, uint8_t* out, size_t num_blocks,
                   const void* key, const void* cword, uint8_t* iv);
uint8_t* XcryptCfb(const uint8_t* in, uint8_t* out, size_t num_blocks,
                   const void* key, const void* cword, uint8_t* iv);
uint8_t* XcryptOfb(const uint8_t* in, uint8_t* out, size_t num_blocks,
                   const void* key, const void* cword, uint8_t* iv);

// ForceKeyReload makes the next xcrypt reload the control word and key from
// memory: `pushf; popf` clears EFLAGS bit 30 ("key loaded", facts §2.5).
// When a note-reload hook is installed (test builds under the emulator, see
// test_hooks.h) it is called too, because the emulator cannot observe
// EFLAGS bit 30 on non-VIA CPUs.
void ForceKeyReload();

// SetNoteReloadHook installs the hook ForceKeyReload calls (NULL: none).
// Called once by backend init, before any context exists.
void SetNoteReloadHook(void (*hook)());

// XshaBlocks* run PHE block mode (RAX = -1, facts §3.3): compress
// `num_blocks` 64-byte blocks (128-byte blocks for SHA-512) from `in` (any
// alignment) into `state`, a 16-aligned 128-byte buffer holding the hash
// words in host order. Nano and Zhaoxin only; SHA-512 needs PHE2.
void XshaBlocks1(void* state, const uint8_t* in, size_t num_blocks);
void XshaBlocks256(void* state, const uint8_t* in, size_t num_blocks);
void XshaBlocks512(void* state, const uint8_t* in, size_t num_blocks);

// XshaFinal* run PHE finalizing mode: `state` holds the state after
// `done_len` bytes (a multiple of 64, 0 for the IV); the hardware hashes the
// `total_len - done_len` bytes at `in`, pads with bit length 8*total_len and
// leaves the final words in `state`. Works on C7, Nano and Zhaoxin, but
// Zhaoxin does nothing when total_len is 0.
void XshaFinal1(void* state, const uint8_t* in, size_t done_len,
                size_t total_len);
void XshaFinal256(void* state, const uint8_t* in, size_t done_len,
                  size_t total_len);

// Xstore runs one `xstore` with EDX = `divisor` (0..3) and returns EAX, the
// status word (bytes stored in bits 4:0, facts §4.2). `out` must have room
// for 8 bytes.
uint32_t Xstore(uint8_t* out, uint32_t divisor);

}  // namespace accelcrypt::padlock

#endif  // ACCELCRYPT_BACKENDS_PADLOCK_PADLOCK_ASM_H_
