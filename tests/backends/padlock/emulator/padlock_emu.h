// SPDX-License-Identifier: Apache-2.0
//
// libpadlock_emu: a test-only SIGILL trap emulator for the VIA/Zhaoxin
// PadLock instructions (xcrypt-*, xsha1/256/512, xstore), so the PadLock
// backend's real inline asm runs on CPUs without PadLock. Never installed,
// never linked into anything shipped.
//
// Activation: load the library (link it into a test binary, or LD_PRELOAD
// it) and set ACCELCRYPT_PADLOCK_EMULATOR=1 so the backend picks up the two
// hooks below (backends/padlock/test_hooks.h). The library's constructor
// installs one process-wide SIGILL handler (SA_SIGINFO | SA_ONSTACK) and an
// alternate signal stack for the loading thread; other threads may call
// accelcrypt_padlock_emu_thread_init(). Opcodes that are not PadLock, or that
// the selected CPU profile lacks, are passed to the previous handler (or
// kill the process like a real #UD).
//
// Environment (read at load; the setters below change it at run time):
//   ACCELCRYPT_PADLOCK_PROFILE        c3 | c7 | nano | nano_s2 | zhaoxin
//                                     (default nano)
//   ACCELCRYPT_PADLOCK_EMU_STRICT     1 (default): misaligned operands and
//                                     bad control words abort with a message
//                                     naming the operand; 0: accepted
//   ACCELCRYPT_PADLOCK_EMU_PARTIAL    k > 0: each trap does at most k blocks
//                                     and re-executes (rep interruption)
//   ACCELCRYPT_PADLOCK_EMU_PREEMPT_EVERY  N > 0: drop the key cache every N
//                                     xcrypt traps (simulated context switch)
//   ACCELCRYPT_PADLOCK_EMU_RAX_MOVES  1: CBC/CFB encryption leave RAX at the
//                                     last output block instead of updating
//                                     [RAX] (the "RAX moved" reading)
//   ACCELCRYPT_PADLOCK_EMU_POISON     1: junk in RAX/RCX after xsha
//   ACCELCRYPT_PADLOCK_EMU_C7_BLOCK   wrong (default) | ud: what PHE block
//                                     mode does on the c7 profile
//   ACCELCRYPT_PADLOCK_EMU_IGNORE_RELOAD  1: ignore note-reload calls
//   ACCELCRYPT_PADLOCK_EMU_OVERREAD   1 (default): read past the input end
//                                     like the prefetcher (facts §2.8). The
//                                     hardware does this inside a page, so
//                                     Valgrind/ASan report it on heap
//                                     buffers; set 0 under those tools
//   ACCELCRYPT_PADLOCK_RNG_FAULT      none | stuck | biased | repeat |
//                                     status | disabled
//   ACCELCRYPT_PADLOCK_RNG_FAULT_AFTER  bytes of good output first
//   ACCELCRYPT_PADLOCK_RNG_ZERO_STREAK  N xstore calls reporting 0 bytes
//   ACCELCRYPT_PADLOCK_RNG_SEED       PRNG seed (default fixed)
#ifndef ACCELCRYPT_TESTS_PADLOCK_EMULATOR_PADLOCK_EMU_H_
#define ACCELCRYPT_TESTS_PADLOCK_EMULATOR_PADLOCK_EMU_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PADLOCK_EMU_EXPORT __attribute__((visibility("default")))

/* Hooks the backend looks up (test_hooks.h). */
PADLOCK_EMU_EXPORT void accelcrypt_padlock_test_cpuid(uint32_t leaf,
                                                      uint32_t subleaf,
                                                      uint32_t out[4]);
PADLOCK_EMU_EXPORT void accelcrypt_padlock_test_note_reload(void);

/* Profile control. Returns 0, or -1 for an unknown name. */
PADLOCK_EMU_EXPORT int accelcrypt_padlock_emu_set_profile(const char* name);
PADLOCK_EMU_EXPORT const char* accelcrypt_padlock_emu_profile(void);

enum padlock_emu_rng_fault {
  PADLOCK_EMU_RNG_NONE = 0,
  PADLOCK_EMU_RNG_STUCK = 1,    /* every byte the same */
  PADLOCK_EMU_RNG_BIASED = 2,   /* 30% of the bytes are 0x00 */
  PADLOCK_EMU_RNG_REPEAT = 3,   /* the same 8-byte word over and over */
  PADLOCK_EMU_RNG_STATUS = 4,   /* DC-bias bit set in the status word */
  PADLOCK_EMU_RNG_DISABLED = 5, /* enable bit clear in the status word */
};
/* Fault from `after_bytes` delivered bytes on (counted from this call). */
PADLOCK_EMU_EXPORT void accelcrypt_padlock_emu_set_rng_fault(
    int kind, uint64_t after_bytes);
PADLOCK_EMU_EXPORT void accelcrypt_padlock_emu_set_rng_zero_streak(
    uint32_t calls);

/* Options by name: "strict", "partial", "preempt_every", "rax_moves",
 * "poison", "c7_block_ud", "ignore_reload", "overread". Returns 0 or -1. */
PADLOCK_EMU_EXPORT int accelcrypt_padlock_emu_set_option(const char* name,
                                                         long value);

struct padlock_emu_stats {
  uint64_t xcrypt_traps;
  uint64_t xsha_traps;
  uint64_t xstore_traps;
  uint64_t key_loads;    /* key cache (re)filled from memory */
  uint64_t reload_notes; /* note-reload calls seen */
  uint64_t chained;      /* SIGILLs passed on */
};
PADLOCK_EMU_EXPORT void accelcrypt_padlock_emu_get_stats(
    struct padlock_emu_stats* out);

/* Drops the calling thread's key cache. */
PADLOCK_EMU_EXPORT void accelcrypt_padlock_emu_reset_key_cache(void);
/* Gives the calling thread an alternate signal stack. 0 on success. */
PADLOCK_EMU_EXPORT int accelcrypt_padlock_emu_thread_init(void);

/* The emulator's own primitives, exposed so tests can validate them
 * against NIST vectors before trusting the emulator. aes: key 16/24/32
 * bytes, one block. sha: bits = 1, 224, 256, 384 or 512. */
PADLOCK_EMU_EXPORT int accelcrypt_padlock_emu_aes_block(const uint8_t* key,
                                                        size_t key_len,
                                                        int decrypt,
                                                        const uint8_t in[16],
                                                        uint8_t out[16]);
PADLOCK_EMU_EXPORT int accelcrypt_padlock_emu_sha(int bits, const uint8_t* msg,
                                                  size_t len, uint8_t* out);

#ifdef __cplusplus
}
#endif

#endif /* ACCELCRYPT_TESTS_PADLOCK_EMULATOR_PADLOCK_EMU_H_ */
