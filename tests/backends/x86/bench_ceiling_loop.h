// SPDX-License-Identifier: Apache-2.0
// What the ceiling loops (bench_ceilings_*.cc) share: the timing macro and
// the counter step of the assembly loops.
#ifndef ACCELCRYPT_TESTS_BACKENDS_X86_BENCH_CEILING_LOOP_H_
#define ACCELCRYPT_TESTS_BACKENDS_X86_BENCH_CEILING_LOOP_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "tests/backends/x86/bench_ceilings.h"

namespace accelcrypt::x86::test {

// Ceilings: register-only loops of the instructions each path executes
// (no memory traffic), timed like the cells (CPU time, best of 20 slices).
// Each runs only when the CPU (after the mask) has its instructions. Bytes
// per ns.
// CEILING_LOOP runs BODY in timed slices inside the caller (a macro, not a
// lambda: a lambda would not inherit the caller's target attribute) and
// stores the best bytes per ns in `best`.
#define CEILING_LOOP(seconds, bytes_per_rep, best, BODY)                \
  do {                                                                  \
    (best) = 0;                                                         \
    for (int slice = 0; slice < 20; ++slice) {                          \
      size_t iters = 0;                                                 \
      const double start = CpuNs();                                     \
      double now = start;                                               \
      do {                                                              \
        for (int rep = 0; rep < 256; ++rep) {                           \
          BODY                                                          \
        }                                                               \
        iters += 256;                                                   \
        now = CpuNs();                                                  \
      } while (now - start < (seconds)*1e9 / 20);                       \
      (best) = std::max((best), (bytes_per_rep)*iters / (now - start)); \
    }                                                                   \
  } while (0)

// The XMM and YMM ceiling loops are written in assembly, so that the
// instruction mix is exactly the one named (compiled intrinsics spill and
// reorder around 16 XMM/YMM registers); the ZMM ones, with 32 registers,
// stay intrinsics. Each is counter mode in registers: every rep
// derives fresh blocks from a counter, so reps are independent and the CPU
// overlaps them as it overlaps the iterations of the real loops; 10 AES
// rounds (AES-128); the results XORed into a sink. The GCM shapes add the
// carry-less products of the real loop, one block (register) per round.
// Inline assembly needs no target attribute; each function is still called
// only after the CPUID check for every instruction it contains.
alignas(32) const uint32_t kCounterStep[8] = {0, 0, 0, 1, 0, 0, 0, 1};
constexpr int kAsmReps = 64;

}  // namespace accelcrypt::x86::test

#endif  // ACCELCRYPT_TESTS_BACKENDS_X86_BENCH_CEILING_LOOP_H_
