// SPDX-License-Identifier: Apache-2.0
// bench_x86: the x86 backend through its ABI against OpenSSL's default
// provider, in one run, for 16 B .. 16 KiB. Streaming updates on a running
// context (as `openssl speed -evp` measures), plus whole GCM messages (init,
// update, final, tag) at 16 KiB. Prints ns/op, GB/s, the ratio, TSC
// cycles per byte and the share of the instruction ceiling of the path
// serving the row (register-only loops of AESENC xmm/ymm/zmm and of the GCM
// shape, AES rounds + carry-less products per block; each measured only
// where CPUID, after the mask, reports its instructions).
// Usage: bench_x86 [seconds-per-cell, default 0.2]
// [mask for ACCELCRYPT_X86_DISABLE] [one size only].
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <x86intrin.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "backends/x86/cpu_features.h"
#include "tests/backends/x86/x86_abi.h"

namespace accelcrypt::x86::test {
namespace {

// CpuNs is this thread's CPU time: on a shared, loaded machine the time the
// thread was preempted is not counted (wall-clock time would be).
double CpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

struct Result {
  double ns_per_op;
  double tsc_per_op;
};

// RunSlice runs `op` for about `seconds` of CPU time; returns CPU ns and
// TSC ticks (wall) per op. The clock is read once per batch, and the batch
// doubles until a batch takes 20 us, so reading it costs nothing measurable.
Result RunSlice(const std::function<void()>& op, double seconds) {
  size_t iters = 0, batch = 16;
  const double start = CpuNs();
  const uint64_t tsc0 = __rdtsc();
  double now = start, last = start;
  do {
    for (size_t i = 0; i < batch; ++i) op();
    iters += batch;
    now = CpuNs();
    if (now - last < 20e3) batch *= 2;
    last = now;
  } while (now - start < seconds * 1e9);
  const uint64_t tsc1 = __rdtsc();
  return {(now - start) / iters, static_cast<double>(tsc1 - tsc0) / iters};
}

// MeasurePair alternates short slices of `ours` and `theirs` (the machine
// is shared and its load drifts; alternating exposes both to the same
// drift) and keeps the best slice of each.
void MeasurePair(const std::function<void()>& ours,
                 const std::function<void()>& theirs, double seconds,
                 Result* out_ours, Result* out_theirs) {
  constexpr int kSlices = 20;
  *out_ours = *out_theirs = {1e30, 1e30};
  for (int slice = 0; slice < kSlices; ++slice) {
    const Result a = RunSlice(ours, seconds / (2 * kSlices));
    const Result b = RunSlice(theirs, seconds / (2 * kSlices));
    if (a.ns_per_op < out_ours->ns_per_op) *out_ours = a;
    if (b.ns_per_op < out_theirs->ns_per_op) *out_theirs = b;
  }
}

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

// AES-NI: 8 XMM blocks per rep (128 bytes), as aes_aesni.cc's CTR.
double AesniCeiling(double seconds) {
  double r;
  CEILING_LOOP(seconds, 128.0 * kAsmReps, r, {
    size_t n = kAsmReps;
    __asm__ volatile(
        "movdqa %1, %%xmm15\n"
        "pxor %%xmm14, %%xmm14\n"
        "pcmpeqd %%xmm13, %%xmm13\n"
        "pxor %%xmm9, %%xmm9\n"
        "1:\n"
        "paddd %%xmm15, %%xmm14\n"
        "movdqa %%xmm14, %%xmm0\n"
        "movdqa %%xmm14, %%xmm1\n"
        "movdqa %%xmm14, %%xmm2\n"
        "movdqa %%xmm14, %%xmm3\n"
        "movdqa %%xmm14, %%xmm4\n"
        "movdqa %%xmm14, %%xmm5\n"
        "movdqa %%xmm14, %%xmm6\n"
        "movdqa %%xmm14, %%xmm7\n"
        "aesenc %%xmm13, %%xmm0\n"
        "aesenc %%xmm13, %%xmm1\n"
        "aesenc %%xmm13, %%xmm2\n"
        "aesenc %%xmm13, %%xmm3\n"
        "aesenc %%xmm13, %%xmm4\n"
        "aesenc %%xmm13, %%xmm5\n"
        "aesenc %%xmm13, %%xmm6\n"
        "aesenc %%xmm13, %%xmm7\n"
        "aesenc %%xmm13, %%xmm0\n"
        "aesenc %%xmm13, %%xmm1\n"
        "aesenc %%xmm13, %%xmm2\n"
        "aesenc %%xmm13, %%xmm3\n"
        "aesenc %%xmm13, %%xmm4\n"
        "aesenc %%xmm13, %%xmm5\n"
        "aesenc %%xmm13, %%xmm6\n"
        "aesenc %%xmm13, %%xmm7\n"
        "aesenc %%xmm13, %%xmm0\n"
        "aesenc %%xmm13, %%xmm1\n"
        "aesenc %%xmm13, %%xmm2\n"
        "aesenc %%xmm13, %%xmm3\n"
        "aesenc %%xmm13, %%xmm4\n"
        "aesenc %%xmm13, %%xmm5\n"
        "aesenc %%xmm13, %%xmm6\n"
        "aesenc %%xmm13, %%xmm7\n"
        "aesenc %%xmm13, %%xmm0\n"
        "aesenc %%xmm13, %%xmm1\n"
        "aesenc %%xmm13, %%xmm2\n"
        "aesenc %%xmm13, %%xmm3\n"
        "aesenc %%xmm13, %%xmm4\n"
        "aesenc %%xmm13, %%xmm5\n"
        "aesenc %%xmm13, %%xmm6\n"
        "aesenc %%xmm13, %%xmm7\n"
        "aesenc %%xmm13, %%xmm0\n"
        "aesenc %%xmm13, %%xmm1\n"
        "aesenc %%xmm13, %%xmm2\n"
        "aesenc %%xmm13, %%xmm3\n"
        "aesenc %%xmm13, %%xmm4\n"
        "aesenc %%xmm13, %%xmm5\n"
        "aesenc %%xmm13, %%xmm6\n"
        "aesenc %%xmm13, %%xmm7\n"
        "aesenc %%xmm13, %%xmm0\n"
        "aesenc %%xmm13, %%xmm1\n"
        "aesenc %%xmm13, %%xmm2\n"
        "aesenc %%xmm13, %%xmm3\n"
        "aesenc %%xmm13, %%xmm4\n"
        "aesenc %%xmm13, %%xmm5\n"
        "aesenc %%xmm13, %%xmm6\n"
        "aesenc %%xmm13, %%xmm7\n"
        "aesenc %%xmm13, %%xmm0\n"
        "aesenc %%xmm13, %%xmm1\n"
        "aesenc %%xmm13, %%xmm2\n"
        "aesenc %%xmm13, %%xmm3\n"
        "aesenc %%xmm13, %%xmm4\n"
        "aesenc %%xmm13, %%xmm5\n"
        "aesenc %%xmm13, %%xmm6\n"
        "aesenc %%xmm13, %%xmm7\n"
        "aesenc %%xmm13, %%xmm0\n"
        "aesenc %%xmm13, %%xmm1\n"
        "aesenc %%xmm13, %%xmm2\n"
        "aesenc %%xmm13, %%xmm3\n"
        "aesenc %%xmm13, %%xmm4\n"
        "aesenc %%xmm13, %%xmm5\n"
        "aesenc %%xmm13, %%xmm6\n"
        "aesenc %%xmm13, %%xmm7\n"
        "aesenc %%xmm13, %%xmm0\n"
        "aesenc %%xmm13, %%xmm1\n"
        "aesenc %%xmm13, %%xmm2\n"
        "aesenc %%xmm13, %%xmm3\n"
        "aesenc %%xmm13, %%xmm4\n"
        "aesenc %%xmm13, %%xmm5\n"
        "aesenc %%xmm13, %%xmm6\n"
        "aesenc %%xmm13, %%xmm7\n"
        "aesenc %%xmm13, %%xmm0\n"
        "aesenc %%xmm13, %%xmm1\n"
        "aesenc %%xmm13, %%xmm2\n"
        "aesenc %%xmm13, %%xmm3\n"
        "aesenc %%xmm13, %%xmm4\n"
        "aesenc %%xmm13, %%xmm5\n"
        "aesenc %%xmm13, %%xmm6\n"
        "aesenc %%xmm13, %%xmm7\n"
        "pxor %%xmm0, %%xmm9\n"
        "pxor %%xmm1, %%xmm9\n"
        "pxor %%xmm2, %%xmm9\n"
        "pxor %%xmm3, %%xmm9\n"
        "pxor %%xmm4, %%xmm9\n"
        "pxor %%xmm5, %%xmm9\n"
        "pxor %%xmm6, %%xmm9\n"
        "pxor %%xmm7, %%xmm9\n"
        "dec %0\n"
        "jnz 1b\n"
        : "+r"(n)
        : "m"(kCounterStep)
        : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
          "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15",
          "cc");
  });
  return r;
}

// GCM shape over XMM, as aes_gcm_aesni.cc's loop: per 8 blocks, 8 x 10
// AESENC and 8 Karatsuba products (3 PCLMULQDQ each, with the register
// copies the two-operand forms need) into 3 accumulators.
double GcmShapeXmmCeiling(double seconds) {
  double r;
  CEILING_LOOP(seconds, 128.0 * kAsmReps, r, {
    size_t n = kAsmReps;
    __asm__ volatile(
        "movdqa %1, %%xmm15\n"
        "pxor %%xmm14, %%xmm14\n"
        "pcmpeqd %%xmm13, %%xmm13\n"
        "movdqa %%xmm15, %%xmm12\n"
        "pxor %%xmm9, %%xmm9\n"
        "pxor %%xmm10, %%xmm10\n"
        "pxor %%xmm11, %%xmm11\n"
        "1:\n"
        "paddd %%xmm15, %%xmm14\n"
        "movdqa %%xmm14, %%xmm0\n"
        "movdqa %%xmm14, %%xmm1\n"
        "movdqa %%xmm14, %%xmm2\n"
        "movdqa %%xmm14, %%xmm3\n"
        "movdqa %%xmm14, %%xmm4\n"
        "movdqa %%xmm14, %%xmm5\n"
        "movdqa %%xmm14, %%xmm6\n"
        "movdqa %%xmm14, %%xmm7\n"
        "aesenc %%xmm13, %%xmm0\n"
        "aesenc %%xmm13, %%xmm1\n"
        "aesenc %%xmm13, %%xmm2\n"
        "aesenc %%xmm13, %%xmm3\n"
        "aesenc %%xmm13, %%xmm4\n"
        "aesenc %%xmm13, %%xmm5\n"
        "aesenc %%xmm13, %%xmm6\n"
        "aesenc %%xmm13, %%xmm7\n"
        "movdqa %%xmm0, %%xmm8\n"
        "pclmulqdq $0x00, %%xmm12, %%xmm8\n"
        "pxor %%xmm8, %%xmm9\n"
        "movdqa %%xmm0, %%xmm8\n"
        "pclmulqdq $0x11, %%xmm12, %%xmm8\n"
        "pxor %%xmm8, %%xmm10\n"
        "movdqa %%xmm0, %%xmm8\n"
        "pclmulqdq $0x01, %%xmm12, %%xmm8\n"
        "pxor %%xmm8, %%xmm11\n"
        "aesenc %%xmm13, %%xmm0\n"
        "aesenc %%xmm13, %%xmm1\n"
        "aesenc %%xmm13, %%xmm2\n"
        "aesenc %%xmm13, %%xmm3\n"
        "aesenc %%xmm13, %%xmm4\n"
        "aesenc %%xmm13, %%xmm5\n"
        "aesenc %%xmm13, %%xmm6\n"
        "aesenc %%xmm13, %%xmm7\n"
        "movdqa %%xmm1, %%xmm8\n"
        "pclmulqdq $0x00, %%xmm12, %%xmm8\n"
        "pxor %%xmm8, %%xmm9\n"
        "movdqa %%xmm1, %%xmm8\n"
        "pclmulqdq $0x11, %%xmm12, %%xmm8\n"
        "pxor %%xmm8, %%xmm10\n"
        "movdqa %%xmm1, %%xmm8\n"
        "pclmulqdq $0x01, %%xmm12, %%xmm8\n"
        "pxor %%xmm8, %%xmm11\n"
        "aesenc %%xmm13, %%xmm0\n"
        "aesenc %%xmm13, %%xmm1\n"
        "aesenc %%xmm13, %%xmm2\n"
        "aesenc %%xmm13, %%xmm3\n"
        "aesenc %%xmm13, %%xmm4\n"
        "aesenc %%xmm13, %%xmm5\n"
        "aesenc %%xmm13, %%xmm6\n"
        "aesenc %%xmm13, %%xmm7\n"
        "movdqa %%xmm2, %%xmm8\n"
        "pclmulqdq $0x00, %%xmm12, %%xmm8\n"
        "pxor %%xmm8, %%xmm9\n"
        "movdqa %%xmm2, %%xmm8\n"
        "pclmulqdq $0x11, %%xmm12, %%xmm8\n"
        "pxor %%xmm8, %%xmm10\n"
        "movdqa %%xmm2, %%xmm8\n"
        "pclmulqdq $0x01, %%xmm12, %%xmm8\n"
        "pxor %%xmm8, %%xmm11\n"
        "aesenc %%xmm13, %%xmm0\n"
        "aesenc %%xmm13, %%xmm1\n"
        "aesenc %%xmm13, %%xmm2\n"
        "aesenc %%xmm13, %%xmm3\n"
        "aesenc %%xmm13, %%xmm4\n"
        "aesenc %%xmm13, %%xmm5\n"
        "aesenc %%xmm13, %%xmm6\n"
        "aesenc %%xmm13, %%xmm7\n"
        "movdqa %%xmm3, %%xmm8\n"
        "pclmulqdq $0x00, %%xmm12, %%xmm8\n"
        "pxor %%xmm8, %%xmm9\n"
        "movdqa %%xmm3, %%xmm8\n"
        "pclmulqdq $0x11, %%xmm12, %%xmm8\n"
        "pxor %%xmm8, %%xmm10\n"
        "movdqa %%xmm3, %%xmm8\n"
        "pclmulqdq $0x01, %%xmm12, %%xmm8\n"
        "pxor %%xmm8, %%xmm11\n"
        "aesenc %%xmm13, %%xmm0\n"
        "aesenc %%xmm13, %%xmm1\n"
        "aesenc %%xmm13, %%xmm2\n"
        "aesenc %%xmm13, %%xmm3\n"
        "aesenc %%xmm13, %%xmm4\n"
        "aesenc %%xmm13, %%xmm5\n"
        "aesenc %%xmm13, %%xmm6\n"
        "aesenc %%xmm13, %%xmm7\n"
        "movdqa %%xmm4, %%xmm8\n"
        "pclmulqdq $0x00, %%xmm12, %%xmm8\n"
        "pxor %%xmm8, %%xmm9\n"
        "movdqa %%xmm4, %%xmm8\n"
        "pclmulqdq $0x11, %%xmm12, %%xmm8\n"
        "pxor %%xmm8, %%xmm10\n"
        "movdqa %%xmm4, %%xmm8\n"
        "pclmulqdq $0x01, %%xmm12, %%xmm8\n"
        "pxor %%xmm8, %%xmm11\n"
        "aesenc %%xmm13, %%xmm0\n"
        "aesenc %%xmm13, %%xmm1\n"
        "aesenc %%xmm13, %%xmm2\n"
        "aesenc %%xmm13, %%xmm3\n"
        "aesenc %%xmm13, %%xmm4\n"
        "aesenc %%xmm13, %%xmm5\n"
        "aesenc %%xmm13, %%xmm6\n"
        "aesenc %%xmm13, %%xmm7\n"
        "movdqa %%xmm5, %%xmm8\n"
        "pclmulqdq $0x00, %%xmm12, %%xmm8\n"
        "pxor %%xmm8, %%xmm9\n"
        "movdqa %%xmm5, %%xmm8\n"
        "pclmulqdq $0x11, %%xmm12, %%xmm8\n"
        "pxor %%xmm8, %%xmm10\n"
        "movdqa %%xmm5, %%xmm8\n"
        "pclmulqdq $0x01, %%xmm12, %%xmm8\n"
        "pxor %%xmm8, %%xmm11\n"
        "aesenc %%xmm13, %%xmm0\n"
        "aesenc %%xmm13, %%xmm1\n"
        "aesenc %%xmm13, %%xmm2\n"
        "aesenc %%xmm13, %%xmm3\n"
        "aesenc %%xmm13, %%xmm4\n"
        "aesenc %%xmm13, %%xmm5\n"
        "aesenc %%xmm13, %%xmm6\n"
        "aesenc %%xmm13, %%xmm7\n"
        "movdqa %%xmm6, %%xmm8\n"
        "pclmulqdq $0x00, %%xmm12, %%xmm8\n"
        "pxor %%xmm8, %%xmm9\n"
        "movdqa %%xmm6, %%xmm8\n"
        "pclmulqdq $0x11, %%xmm12, %%xmm8\n"
        "pxor %%xmm8, %%xmm10\n"
        "movdqa %%xmm6, %%xmm8\n"
        "pclmulqdq $0x01, %%xmm12, %%xmm8\n"
        "pxor %%xmm8, %%xmm11\n"
        "aesenc %%xmm13, %%xmm0\n"
        "aesenc %%xmm13, %%xmm1\n"
        "aesenc %%xmm13, %%xmm2\n"
        "aesenc %%xmm13, %%xmm3\n"
        "aesenc %%xmm13, %%xmm4\n"
        "aesenc %%xmm13, %%xmm5\n"
        "aesenc %%xmm13, %%xmm6\n"
        "aesenc %%xmm13, %%xmm7\n"
        "movdqa %%xmm7, %%xmm8\n"
        "pclmulqdq $0x00, %%xmm12, %%xmm8\n"
        "pxor %%xmm8, %%xmm9\n"
        "movdqa %%xmm7, %%xmm8\n"
        "pclmulqdq $0x11, %%xmm12, %%xmm8\n"
        "pxor %%xmm8, %%xmm10\n"
        "movdqa %%xmm7, %%xmm8\n"
        "pclmulqdq $0x01, %%xmm12, %%xmm8\n"
        "pxor %%xmm8, %%xmm11\n"
        "aesenc %%xmm13, %%xmm0\n"
        "aesenc %%xmm13, %%xmm1\n"
        "aesenc %%xmm13, %%xmm2\n"
        "aesenc %%xmm13, %%xmm3\n"
        "aesenc %%xmm13, %%xmm4\n"
        "aesenc %%xmm13, %%xmm5\n"
        "aesenc %%xmm13, %%xmm6\n"
        "aesenc %%xmm13, %%xmm7\n"
        "aesenc %%xmm13, %%xmm0\n"
        "aesenc %%xmm13, %%xmm1\n"
        "aesenc %%xmm13, %%xmm2\n"
        "aesenc %%xmm13, %%xmm3\n"
        "aesenc %%xmm13, %%xmm4\n"
        "aesenc %%xmm13, %%xmm5\n"
        "aesenc %%xmm13, %%xmm6\n"
        "aesenc %%xmm13, %%xmm7\n"
        "pxor %%xmm0, %%xmm9\n"
        "pxor %%xmm1, %%xmm9\n"
        "pxor %%xmm2, %%xmm9\n"
        "pxor %%xmm3, %%xmm9\n"
        "pxor %%xmm4, %%xmm9\n"
        "pxor %%xmm5, %%xmm9\n"
        "pxor %%xmm6, %%xmm9\n"
        "pxor %%xmm7, %%xmm9\n"
        "dec %0\n"
        "jnz 1b\n"
        : "+r"(n)
        : "m"(kCounterStep)
        : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
          "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15",
          "cc");
  });
  return r;
}

// VAES-256: 12 YMM registers (24 blocks, 384 bytes) per rep, as the YMM
// CTR (whose round keys come from memory operands: 16 registers do not
// hold 16 blocks, 11 keys and the counter).
double Vaes256Ceiling(double seconds) {
  double r;
  CEILING_LOOP(seconds, 384.0 * kAsmReps, r, {
    size_t n = kAsmReps;
    __asm__ volatile(
        "vmovdqa %1, %%ymm15\n"
        "vpxor %%ymm14, %%ymm14, %%ymm14\n"
        "vpcmpeqd %%ymm13, %%ymm13, %%ymm13\n"
        "vpxor %%ymm12, %%ymm12, %%ymm12\n"
        "1:\n"
        "vpaddd %%ymm15, %%ymm14, %%ymm14\n"
        "vpxor %%ymm14, %%ymm13, %%ymm0\n"
        "vpxor %%ymm14, %%ymm13, %%ymm1\n"
        "vpxor %%ymm14, %%ymm13, %%ymm2\n"
        "vpxor %%ymm14, %%ymm13, %%ymm3\n"
        "vpxor %%ymm14, %%ymm13, %%ymm4\n"
        "vpxor %%ymm14, %%ymm13, %%ymm5\n"
        "vpxor %%ymm14, %%ymm13, %%ymm6\n"
        "vpxor %%ymm14, %%ymm13, %%ymm7\n"
        "vpxor %%ymm14, %%ymm13, %%ymm8\n"
        "vpxor %%ymm14, %%ymm13, %%ymm9\n"
        "vpxor %%ymm14, %%ymm13, %%ymm10\n"
        "vpxor %%ymm14, %%ymm13, %%ymm11\n"
        "vaesenc %%ymm13, %%ymm0, %%ymm0\n"
        "vaesenc %%ymm13, %%ymm1, %%ymm1\n"
        "vaesenc %%ymm13, %%ymm2, %%ymm2\n"
        "vaesenc %%ymm13, %%ymm3, %%ymm3\n"
        "vaesenc %%ymm13, %%ymm4, %%ymm4\n"
        "vaesenc %%ymm13, %%ymm5, %%ymm5\n"
        "vaesenc %%ymm13, %%ymm6, %%ymm6\n"
        "vaesenc %%ymm13, %%ymm7, %%ymm7\n"
        "vaesenc %%ymm13, %%ymm8, %%ymm8\n"
        "vaesenc %%ymm13, %%ymm9, %%ymm9\n"
        "vaesenc %%ymm13, %%ymm10, %%ymm10\n"
        "vaesenc %%ymm13, %%ymm11, %%ymm11\n"
        "vaesenc %%ymm13, %%ymm0, %%ymm0\n"
        "vaesenc %%ymm13, %%ymm1, %%ymm1\n"
        "vaesenc %%ymm13, %%ymm2, %%ymm2\n"
        "vaesenc %%ymm13, %%ymm3, %%ymm3\n"
        "vaesenc %%ymm13, %%ymm4, %%ymm4\n"
        "vaesenc %%ymm13, %%ymm5, %%ymm5\n"
        "vaesenc %%ymm13, %%ymm6, %%ymm6\n"
        "vaesenc %%ymm13, %%ymm7, %%ymm7\n"
        "vaesenc %%ymm13, %%ymm8, %%ymm8\n"
        "vaesenc %%ymm13, %%ymm9, %%ymm9\n"
        "vaesenc %%ymm13, %%ymm10, %%ymm10\n"
        "vaesenc %%ymm13, %%ymm11, %%ymm11\n"
        "vaesenc %%ymm13, %%ymm0, %%ymm0\n"
        "vaesenc %%ymm13, %%ymm1, %%ymm1\n"
        "vaesenc %%ymm13, %%ymm2, %%ymm2\n"
        "vaesenc %%ymm13, %%ymm3, %%ymm3\n"
        "vaesenc %%ymm13, %%ymm4, %%ymm4\n"
        "vaesenc %%ymm13, %%ymm5, %%ymm5\n"
        "vaesenc %%ymm13, %%ymm6, %%ymm6\n"
        "vaesenc %%ymm13, %%ymm7, %%ymm7\n"
        "vaesenc %%ymm13, %%ymm8, %%ymm8\n"
        "vaesenc %%ymm13, %%ymm9, %%ymm9\n"
        "vaesenc %%ymm13, %%ymm10, %%ymm10\n"
        "vaesenc %%ymm13, %%ymm11, %%ymm11\n"
        "vaesenc %%ymm13, %%ymm0, %%ymm0\n"
        "vaesenc %%ymm13, %%ymm1, %%ymm1\n"
        "vaesenc %%ymm13, %%ymm2, %%ymm2\n"
        "vaesenc %%ymm13, %%ymm3, %%ymm3\n"
        "vaesenc %%ymm13, %%ymm4, %%ymm4\n"
        "vaesenc %%ymm13, %%ymm5, %%ymm5\n"
        "vaesenc %%ymm13, %%ymm6, %%ymm6\n"
        "vaesenc %%ymm13, %%ymm7, %%ymm7\n"
        "vaesenc %%ymm13, %%ymm8, %%ymm8\n"
        "vaesenc %%ymm13, %%ymm9, %%ymm9\n"
        "vaesenc %%ymm13, %%ymm10, %%ymm10\n"
        "vaesenc %%ymm13, %%ymm11, %%ymm11\n"
        "vaesenc %%ymm13, %%ymm0, %%ymm0\n"
        "vaesenc %%ymm13, %%ymm1, %%ymm1\n"
        "vaesenc %%ymm13, %%ymm2, %%ymm2\n"
        "vaesenc %%ymm13, %%ymm3, %%ymm3\n"
        "vaesenc %%ymm13, %%ymm4, %%ymm4\n"
        "vaesenc %%ymm13, %%ymm5, %%ymm5\n"
        "vaesenc %%ymm13, %%ymm6, %%ymm6\n"
        "vaesenc %%ymm13, %%ymm7, %%ymm7\n"
        "vaesenc %%ymm13, %%ymm8, %%ymm8\n"
        "vaesenc %%ymm13, %%ymm9, %%ymm9\n"
        "vaesenc %%ymm13, %%ymm10, %%ymm10\n"
        "vaesenc %%ymm13, %%ymm11, %%ymm11\n"
        "vaesenc %%ymm13, %%ymm0, %%ymm0\n"
        "vaesenc %%ymm13, %%ymm1, %%ymm1\n"
        "vaesenc %%ymm13, %%ymm2, %%ymm2\n"
        "vaesenc %%ymm13, %%ymm3, %%ymm3\n"
        "vaesenc %%ymm13, %%ymm4, %%ymm4\n"
        "vaesenc %%ymm13, %%ymm5, %%ymm5\n"
        "vaesenc %%ymm13, %%ymm6, %%ymm6\n"
        "vaesenc %%ymm13, %%ymm7, %%ymm7\n"
        "vaesenc %%ymm13, %%ymm8, %%ymm8\n"
        "vaesenc %%ymm13, %%ymm9, %%ymm9\n"
        "vaesenc %%ymm13, %%ymm10, %%ymm10\n"
        "vaesenc %%ymm13, %%ymm11, %%ymm11\n"
        "vaesenc %%ymm13, %%ymm0, %%ymm0\n"
        "vaesenc %%ymm13, %%ymm1, %%ymm1\n"
        "vaesenc %%ymm13, %%ymm2, %%ymm2\n"
        "vaesenc %%ymm13, %%ymm3, %%ymm3\n"
        "vaesenc %%ymm13, %%ymm4, %%ymm4\n"
        "vaesenc %%ymm13, %%ymm5, %%ymm5\n"
        "vaesenc %%ymm13, %%ymm6, %%ymm6\n"
        "vaesenc %%ymm13, %%ymm7, %%ymm7\n"
        "vaesenc %%ymm13, %%ymm8, %%ymm8\n"
        "vaesenc %%ymm13, %%ymm9, %%ymm9\n"
        "vaesenc %%ymm13, %%ymm10, %%ymm10\n"
        "vaesenc %%ymm13, %%ymm11, %%ymm11\n"
        "vaesenc %%ymm13, %%ymm0, %%ymm0\n"
        "vaesenc %%ymm13, %%ymm1, %%ymm1\n"
        "vaesenc %%ymm13, %%ymm2, %%ymm2\n"
        "vaesenc %%ymm13, %%ymm3, %%ymm3\n"
        "vaesenc %%ymm13, %%ymm4, %%ymm4\n"
        "vaesenc %%ymm13, %%ymm5, %%ymm5\n"
        "vaesenc %%ymm13, %%ymm6, %%ymm6\n"
        "vaesenc %%ymm13, %%ymm7, %%ymm7\n"
        "vaesenc %%ymm13, %%ymm8, %%ymm8\n"
        "vaesenc %%ymm13, %%ymm9, %%ymm9\n"
        "vaesenc %%ymm13, %%ymm10, %%ymm10\n"
        "vaesenc %%ymm13, %%ymm11, %%ymm11\n"
        "vaesenc %%ymm13, %%ymm0, %%ymm0\n"
        "vaesenc %%ymm13, %%ymm1, %%ymm1\n"
        "vaesenc %%ymm13, %%ymm2, %%ymm2\n"
        "vaesenc %%ymm13, %%ymm3, %%ymm3\n"
        "vaesenc %%ymm13, %%ymm4, %%ymm4\n"
        "vaesenc %%ymm13, %%ymm5, %%ymm5\n"
        "vaesenc %%ymm13, %%ymm6, %%ymm6\n"
        "vaesenc %%ymm13, %%ymm7, %%ymm7\n"
        "vaesenc %%ymm13, %%ymm8, %%ymm8\n"
        "vaesenc %%ymm13, %%ymm9, %%ymm9\n"
        "vaesenc %%ymm13, %%ymm10, %%ymm10\n"
        "vaesenc %%ymm13, %%ymm11, %%ymm11\n"
        "vaesenc %%ymm13, %%ymm0, %%ymm0\n"
        "vaesenc %%ymm13, %%ymm1, %%ymm1\n"
        "vaesenc %%ymm13, %%ymm2, %%ymm2\n"
        "vaesenc %%ymm13, %%ymm3, %%ymm3\n"
        "vaesenc %%ymm13, %%ymm4, %%ymm4\n"
        "vaesenc %%ymm13, %%ymm5, %%ymm5\n"
        "vaesenc %%ymm13, %%ymm6, %%ymm6\n"
        "vaesenc %%ymm13, %%ymm7, %%ymm7\n"
        "vaesenc %%ymm13, %%ymm8, %%ymm8\n"
        "vaesenc %%ymm13, %%ymm9, %%ymm9\n"
        "vaesenc %%ymm13, %%ymm10, %%ymm10\n"
        "vaesenc %%ymm13, %%ymm11, %%ymm11\n"
        "vpxor %%ymm0, %%ymm12, %%ymm12\n"
        "vpxor %%ymm1, %%ymm12, %%ymm12\n"
        "vpxor %%ymm2, %%ymm12, %%ymm12\n"
        "vpxor %%ymm3, %%ymm12, %%ymm12\n"
        "vpxor %%ymm4, %%ymm12, %%ymm12\n"
        "vpxor %%ymm5, %%ymm12, %%ymm12\n"
        "vpxor %%ymm6, %%ymm12, %%ymm12\n"
        "vpxor %%ymm7, %%ymm12, %%ymm12\n"
        "vpxor %%ymm8, %%ymm12, %%ymm12\n"
        "vpxor %%ymm9, %%ymm12, %%ymm12\n"
        "vpxor %%ymm10, %%ymm12, %%ymm12\n"
        "vpxor %%ymm11, %%ymm12, %%ymm12\n"
        "dec %0\n"
        "jnz 1b\n"
        "vzeroupper\n"
        : "+r"(n)
        : "m"(kCounterStep)
        : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
          "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15",
          "cc");
  });
  return r;
}

// GCM shape over YMM with schoolbook products (issue 12's definition, and
// aes_gcm_vaes256.cc's loop before it moved to Karatsuba): per 16 blocks, 8
// registers x 10 VAESENC and 8 x 4 VPCLMULQDQ into 3 XOR accumulators.
double GcmShape256Ceiling(double seconds) {
  double r;
  CEILING_LOOP(seconds, 256.0 * kAsmReps, r, {
    size_t n = kAsmReps;
    __asm__ volatile(
        "vmovdqa %1, %%ymm15\n"
        "vpxor %%ymm14, %%ymm14, %%ymm14\n"
        "vpcmpeqd %%ymm13, %%ymm13, %%ymm13\n"
        "vmovdqa %%ymm15, %%ymm12\n"
        "vpxor %%ymm9, %%ymm9, %%ymm9\n"
        "vpxor %%ymm10, %%ymm10, %%ymm10\n"
        "vpxor %%ymm11, %%ymm11, %%ymm11\n"
        "1:\n"
        "vpaddd %%ymm15, %%ymm14, %%ymm14\n"
        "vpxor %%ymm14, %%ymm13, %%ymm0\n"
        "vpxor %%ymm14, %%ymm13, %%ymm1\n"
        "vpxor %%ymm14, %%ymm13, %%ymm2\n"
        "vpxor %%ymm14, %%ymm13, %%ymm3\n"
        "vpxor %%ymm14, %%ymm13, %%ymm4\n"
        "vpxor %%ymm14, %%ymm13, %%ymm5\n"
        "vpxor %%ymm14, %%ymm13, %%ymm6\n"
        "vpxor %%ymm14, %%ymm13, %%ymm7\n"
        "vaesenc %%ymm13, %%ymm0, %%ymm0\n"
        "vaesenc %%ymm13, %%ymm1, %%ymm1\n"
        "vaesenc %%ymm13, %%ymm2, %%ymm2\n"
        "vaesenc %%ymm13, %%ymm3, %%ymm3\n"
        "vaesenc %%ymm13, %%ymm4, %%ymm4\n"
        "vaesenc %%ymm13, %%ymm5, %%ymm5\n"
        "vaesenc %%ymm13, %%ymm6, %%ymm6\n"
        "vaesenc %%ymm13, %%ymm7, %%ymm7\n"
        "vpclmulqdq $0x00, %%ymm12, %%ymm0, %%ymm8\n"
        "vpxor %%ymm8, %%ymm9, %%ymm9\n"
        "vpclmulqdq $0x11, %%ymm12, %%ymm0, %%ymm8\n"
        "vpxor %%ymm8, %%ymm10, %%ymm10\n"
        "vpclmulqdq $0x01, %%ymm12, %%ymm0, %%ymm8\n"
        "vpxor %%ymm8, %%ymm11, %%ymm11\n"
        "vpclmulqdq $0x10, %%ymm12, %%ymm0, %%ymm8\n"
        "vpxor %%ymm8, %%ymm11, %%ymm11\n"
        "vaesenc %%ymm13, %%ymm0, %%ymm0\n"
        "vaesenc %%ymm13, %%ymm1, %%ymm1\n"
        "vaesenc %%ymm13, %%ymm2, %%ymm2\n"
        "vaesenc %%ymm13, %%ymm3, %%ymm3\n"
        "vaesenc %%ymm13, %%ymm4, %%ymm4\n"
        "vaesenc %%ymm13, %%ymm5, %%ymm5\n"
        "vaesenc %%ymm13, %%ymm6, %%ymm6\n"
        "vaesenc %%ymm13, %%ymm7, %%ymm7\n"
        "vpclmulqdq $0x00, %%ymm12, %%ymm1, %%ymm8\n"
        "vpxor %%ymm8, %%ymm9, %%ymm9\n"
        "vpclmulqdq $0x11, %%ymm12, %%ymm1, %%ymm8\n"
        "vpxor %%ymm8, %%ymm10, %%ymm10\n"
        "vpclmulqdq $0x01, %%ymm12, %%ymm1, %%ymm8\n"
        "vpxor %%ymm8, %%ymm11, %%ymm11\n"
        "vpclmulqdq $0x10, %%ymm12, %%ymm1, %%ymm8\n"
        "vpxor %%ymm8, %%ymm11, %%ymm11\n"
        "vaesenc %%ymm13, %%ymm0, %%ymm0\n"
        "vaesenc %%ymm13, %%ymm1, %%ymm1\n"
        "vaesenc %%ymm13, %%ymm2, %%ymm2\n"
        "vaesenc %%ymm13, %%ymm3, %%ymm3\n"
        "vaesenc %%ymm13, %%ymm4, %%ymm4\n"
        "vaesenc %%ymm13, %%ymm5, %%ymm5\n"
        "vaesenc %%ymm13, %%ymm6, %%ymm6\n"
        "vaesenc %%ymm13, %%ymm7, %%ymm7\n"
        "vpclmulqdq $0x00, %%ymm12, %%ymm2, %%ymm8\n"
        "vpxor %%ymm8, %%ymm9, %%ymm9\n"
        "vpclmulqdq $0x11, %%ymm12, %%ymm2, %%ymm8\n"
        "vpxor %%ymm8, %%ymm10, %%ymm10\n"
        "vpclmulqdq $0x01, %%ymm12, %%ymm2, %%ymm8\n"
        "vpxor %%ymm8, %%ymm11, %%ymm11\n"
        "vpclmulqdq $0x10, %%ymm12, %%ymm2, %%ymm8\n"
        "vpxor %%ymm8, %%ymm11, %%ymm11\n"
        "vaesenc %%ymm13, %%ymm0, %%ymm0\n"
        "vaesenc %%ymm13, %%ymm1, %%ymm1\n"
        "vaesenc %%ymm13, %%ymm2, %%ymm2\n"
        "vaesenc %%ymm13, %%ymm3, %%ymm3\n"
        "vaesenc %%ymm13, %%ymm4, %%ymm4\n"
        "vaesenc %%ymm13, %%ymm5, %%ymm5\n"
        "vaesenc %%ymm13, %%ymm6, %%ymm6\n"
        "vaesenc %%ymm13, %%ymm7, %%ymm7\n"
        "vpclmulqdq $0x00, %%ymm12, %%ymm3, %%ymm8\n"
        "vpxor %%ymm8, %%ymm9, %%ymm9\n"
        "vpclmulqdq $0x11, %%ymm12, %%ymm3, %%ymm8\n"
        "vpxor %%ymm8, %%ymm10, %%ymm10\n"
        "vpclmulqdq $0x01, %%ymm12, %%ymm3, %%ymm8\n"
        "vpxor %%ymm8, %%ymm11, %%ymm11\n"
        "vpclmulqdq $0x10, %%ymm12, %%ymm3, %%ymm8\n"
        "vpxor %%ymm8, %%ymm11, %%ymm11\n"
        "vaesenc %%ymm13, %%ymm0, %%ymm0\n"
        "vaesenc %%ymm13, %%ymm1, %%ymm1\n"
        "vaesenc %%ymm13, %%ymm2, %%ymm2\n"
        "vaesenc %%ymm13, %%ymm3, %%ymm3\n"
        "vaesenc %%ymm13, %%ymm4, %%ymm4\n"
        "vaesenc %%ymm13, %%ymm5, %%ymm5\n"
        "vaesenc %%ymm13, %%ymm6, %%ymm6\n"
        "vaesenc %%ymm13, %%ymm7, %%ymm7\n"
        "vpclmulqdq $0x00, %%ymm12, %%ymm4, %%ymm8\n"
        "vpxor %%ymm8, %%ymm9, %%ymm9\n"
        "vpclmulqdq $0x11, %%ymm12, %%ymm4, %%ymm8\n"
        "vpxor %%ymm8, %%ymm10, %%ymm10\n"
        "vpclmulqdq $0x01, %%ymm12, %%ymm4, %%ymm8\n"
        "vpxor %%ymm8, %%ymm11, %%ymm11\n"
        "vpclmulqdq $0x10, %%ymm12, %%ymm4, %%ymm8\n"
        "vpxor %%ymm8, %%ymm11, %%ymm11\n"
        "vaesenc %%ymm13, %%ymm0, %%ymm0\n"
        "vaesenc %%ymm13, %%ymm1, %%ymm1\n"
        "vaesenc %%ymm13, %%ymm2, %%ymm2\n"
        "vaesenc %%ymm13, %%ymm3, %%ymm3\n"
        "vaesenc %%ymm13, %%ymm4, %%ymm4\n"
        "vaesenc %%ymm13, %%ymm5, %%ymm5\n"
        "vaesenc %%ymm13, %%ymm6, %%ymm6\n"
        "vaesenc %%ymm13, %%ymm7, %%ymm7\n"
        "vpclmulqdq $0x00, %%ymm12, %%ymm5, %%ymm8\n"
        "vpxor %%ymm8, %%ymm9, %%ymm9\n"
        "vpclmulqdq $0x11, %%ymm12, %%ymm5, %%ymm8\n"
        "vpxor %%ymm8, %%ymm10, %%ymm10\n"
        "vpclmulqdq $0x01, %%ymm12, %%ymm5, %%ymm8\n"
        "vpxor %%ymm8, %%ymm11, %%ymm11\n"
        "vpclmulqdq $0x10, %%ymm12, %%ymm5, %%ymm8\n"
        "vpxor %%ymm8, %%ymm11, %%ymm11\n"
        "vaesenc %%ymm13, %%ymm0, %%ymm0\n"
        "vaesenc %%ymm13, %%ymm1, %%ymm1\n"
        "vaesenc %%ymm13, %%ymm2, %%ymm2\n"
        "vaesenc %%ymm13, %%ymm3, %%ymm3\n"
        "vaesenc %%ymm13, %%ymm4, %%ymm4\n"
        "vaesenc %%ymm13, %%ymm5, %%ymm5\n"
        "vaesenc %%ymm13, %%ymm6, %%ymm6\n"
        "vaesenc %%ymm13, %%ymm7, %%ymm7\n"
        "vpclmulqdq $0x00, %%ymm12, %%ymm6, %%ymm8\n"
        "vpxor %%ymm8, %%ymm9, %%ymm9\n"
        "vpclmulqdq $0x11, %%ymm12, %%ymm6, %%ymm8\n"
        "vpxor %%ymm8, %%ymm10, %%ymm10\n"
        "vpclmulqdq $0x01, %%ymm12, %%ymm6, %%ymm8\n"
        "vpxor %%ymm8, %%ymm11, %%ymm11\n"
        "vpclmulqdq $0x10, %%ymm12, %%ymm6, %%ymm8\n"
        "vpxor %%ymm8, %%ymm11, %%ymm11\n"
        "vaesenc %%ymm13, %%ymm0, %%ymm0\n"
        "vaesenc %%ymm13, %%ymm1, %%ymm1\n"
        "vaesenc %%ymm13, %%ymm2, %%ymm2\n"
        "vaesenc %%ymm13, %%ymm3, %%ymm3\n"
        "vaesenc %%ymm13, %%ymm4, %%ymm4\n"
        "vaesenc %%ymm13, %%ymm5, %%ymm5\n"
        "vaesenc %%ymm13, %%ymm6, %%ymm6\n"
        "vaesenc %%ymm13, %%ymm7, %%ymm7\n"
        "vpclmulqdq $0x00, %%ymm12, %%ymm7, %%ymm8\n"
        "vpxor %%ymm8, %%ymm9, %%ymm9\n"
        "vpclmulqdq $0x11, %%ymm12, %%ymm7, %%ymm8\n"
        "vpxor %%ymm8, %%ymm10, %%ymm10\n"
        "vpclmulqdq $0x01, %%ymm12, %%ymm7, %%ymm8\n"
        "vpxor %%ymm8, %%ymm11, %%ymm11\n"
        "vpclmulqdq $0x10, %%ymm12, %%ymm7, %%ymm8\n"
        "vpxor %%ymm8, %%ymm11, %%ymm11\n"
        "vaesenc %%ymm13, %%ymm0, %%ymm0\n"
        "vaesenc %%ymm13, %%ymm1, %%ymm1\n"
        "vaesenc %%ymm13, %%ymm2, %%ymm2\n"
        "vaesenc %%ymm13, %%ymm3, %%ymm3\n"
        "vaesenc %%ymm13, %%ymm4, %%ymm4\n"
        "vaesenc %%ymm13, %%ymm5, %%ymm5\n"
        "vaesenc %%ymm13, %%ymm6, %%ymm6\n"
        "vaesenc %%ymm13, %%ymm7, %%ymm7\n"
        "vaesenc %%ymm13, %%ymm0, %%ymm0\n"
        "vaesenc %%ymm13, %%ymm1, %%ymm1\n"
        "vaesenc %%ymm13, %%ymm2, %%ymm2\n"
        "vaesenc %%ymm13, %%ymm3, %%ymm3\n"
        "vaesenc %%ymm13, %%ymm4, %%ymm4\n"
        "vaesenc %%ymm13, %%ymm5, %%ymm5\n"
        "vaesenc %%ymm13, %%ymm6, %%ymm6\n"
        "vaesenc %%ymm13, %%ymm7, %%ymm7\n"
        "vpxor %%ymm0, %%ymm9, %%ymm9\n"
        "vpxor %%ymm1, %%ymm9, %%ymm9\n"
        "vpxor %%ymm2, %%ymm9, %%ymm9\n"
        "vpxor %%ymm3, %%ymm9, %%ymm9\n"
        "vpxor %%ymm4, %%ymm9, %%ymm9\n"
        "vpxor %%ymm5, %%ymm9, %%ymm9\n"
        "vpxor %%ymm6, %%ymm9, %%ymm9\n"
        "vpxor %%ymm7, %%ymm9, %%ymm9\n"
        "dec %0\n"
        "jnz 1b\n"
        "vzeroupper\n"
        : "+r"(n)
        : "m"(kCounterStep)
        : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
          "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15",
          "cc");
  });
  return r;
}

// GCM shape over YMM with Karatsuba products, as aes_gcm_vaes256.cc's loop
// now runs: per 16 blocks, 8 registers x 10 VAESENC and 8 x 3 VPCLMULQDQ
// (plus the VPSHUFD and VPXOR forming the middle operand).
double GcmShape256KaratsubaCeiling(double seconds) {
  double r;
  CEILING_LOOP(seconds, 256.0 * kAsmReps, r, {
    size_t n = kAsmReps;
    __asm__ volatile(
        "vmovdqa %1, %%ymm15\n"
        "vpxor %%ymm14, %%ymm14, %%ymm14\n"
        "vpcmpeqd %%ymm13, %%ymm13, %%ymm13\n"
        "vmovdqa %%ymm15, %%ymm12\n"
        "vpxor %%ymm9, %%ymm9, %%ymm9\n"
        "vpxor %%ymm10, %%ymm10, %%ymm10\n"
        "vpxor %%ymm11, %%ymm11, %%ymm11\n"
        "1:\n"
        "vpaddd %%ymm15, %%ymm14, %%ymm14\n"
        "vpxor %%ymm14, %%ymm13, %%ymm0\n"
        "vpxor %%ymm14, %%ymm13, %%ymm1\n"
        "vpxor %%ymm14, %%ymm13, %%ymm2\n"
        "vpxor %%ymm14, %%ymm13, %%ymm3\n"
        "vpxor %%ymm14, %%ymm13, %%ymm4\n"
        "vpxor %%ymm14, %%ymm13, %%ymm5\n"
        "vpxor %%ymm14, %%ymm13, %%ymm6\n"
        "vpxor %%ymm14, %%ymm13, %%ymm7\n"
        "vaesenc %%ymm13, %%ymm0, %%ymm0\n"
        "vaesenc %%ymm13, %%ymm1, %%ymm1\n"
        "vaesenc %%ymm13, %%ymm2, %%ymm2\n"
        "vaesenc %%ymm13, %%ymm3, %%ymm3\n"
        "vaesenc %%ymm13, %%ymm4, %%ymm4\n"
        "vaesenc %%ymm13, %%ymm5, %%ymm5\n"
        "vaesenc %%ymm13, %%ymm6, %%ymm6\n"
        "vaesenc %%ymm13, %%ymm7, %%ymm7\n"
        "vpclmulqdq $0x00, %%ymm12, %%ymm0, %%ymm8\n"
        "vpxor %%ymm8, %%ymm9, %%ymm9\n"
        "vpclmulqdq $0x11, %%ymm12, %%ymm0, %%ymm8\n"
        "vpxor %%ymm8, %%ymm10, %%ymm10\n"
        "vpshufd $0x4e, %%ymm0, %%ymm8\n"
        "vpxor %%ymm0, %%ymm8, %%ymm8\n"
        "vpclmulqdq $0x00, %%ymm12, %%ymm8, %%ymm8\n"
        "vpxor %%ymm8, %%ymm11, %%ymm11\n"
        "vaesenc %%ymm13, %%ymm0, %%ymm0\n"
        "vaesenc %%ymm13, %%ymm1, %%ymm1\n"
        "vaesenc %%ymm13, %%ymm2, %%ymm2\n"
        "vaesenc %%ymm13, %%ymm3, %%ymm3\n"
        "vaesenc %%ymm13, %%ymm4, %%ymm4\n"
        "vaesenc %%ymm13, %%ymm5, %%ymm5\n"
        "vaesenc %%ymm13, %%ymm6, %%ymm6\n"
        "vaesenc %%ymm13, %%ymm7, %%ymm7\n"
        "vpclmulqdq $0x00, %%ymm12, %%ymm1, %%ymm8\n"
        "vpxor %%ymm8, %%ymm9, %%ymm9\n"
        "vpclmulqdq $0x11, %%ymm12, %%ymm1, %%ymm8\n"
        "vpxor %%ymm8, %%ymm10, %%ymm10\n"
        "vpshufd $0x4e, %%ymm1, %%ymm8\n"
        "vpxor %%ymm1, %%ymm8, %%ymm8\n"
        "vpclmulqdq $0x00, %%ymm12, %%ymm8, %%ymm8\n"
        "vpxor %%ymm8, %%ymm11, %%ymm11\n"
        "vaesenc %%ymm13, %%ymm0, %%ymm0\n"
        "vaesenc %%ymm13, %%ymm1, %%ymm1\n"
        "vaesenc %%ymm13, %%ymm2, %%ymm2\n"
        "vaesenc %%ymm13, %%ymm3, %%ymm3\n"
        "vaesenc %%ymm13, %%ymm4, %%ymm4\n"
        "vaesenc %%ymm13, %%ymm5, %%ymm5\n"
        "vaesenc %%ymm13, %%ymm6, %%ymm6\n"
        "vaesenc %%ymm13, %%ymm7, %%ymm7\n"
        "vpclmulqdq $0x00, %%ymm12, %%ymm2, %%ymm8\n"
        "vpxor %%ymm8, %%ymm9, %%ymm9\n"
        "vpclmulqdq $0x11, %%ymm12, %%ymm2, %%ymm8\n"
        "vpxor %%ymm8, %%ymm10, %%ymm10\n"
        "vpshufd $0x4e, %%ymm2, %%ymm8\n"
        "vpxor %%ymm2, %%ymm8, %%ymm8\n"
        "vpclmulqdq $0x00, %%ymm12, %%ymm8, %%ymm8\n"
        "vpxor %%ymm8, %%ymm11, %%ymm11\n"
        "vaesenc %%ymm13, %%ymm0, %%ymm0\n"
        "vaesenc %%ymm13, %%ymm1, %%ymm1\n"
        "vaesenc %%ymm13, %%ymm2, %%ymm2\n"
        "vaesenc %%ymm13, %%ymm3, %%ymm3\n"
        "vaesenc %%ymm13, %%ymm4, %%ymm4\n"
        "vaesenc %%ymm13, %%ymm5, %%ymm5\n"
        "vaesenc %%ymm13, %%ymm6, %%ymm6\n"
        "vaesenc %%ymm13, %%ymm7, %%ymm7\n"
        "vpclmulqdq $0x00, %%ymm12, %%ymm3, %%ymm8\n"
        "vpxor %%ymm8, %%ymm9, %%ymm9\n"
        "vpclmulqdq $0x11, %%ymm12, %%ymm3, %%ymm8\n"
        "vpxor %%ymm8, %%ymm10, %%ymm10\n"
        "vpshufd $0x4e, %%ymm3, %%ymm8\n"
        "vpxor %%ymm3, %%ymm8, %%ymm8\n"
        "vpclmulqdq $0x00, %%ymm12, %%ymm8, %%ymm8\n"
        "vpxor %%ymm8, %%ymm11, %%ymm11\n"
        "vaesenc %%ymm13, %%ymm0, %%ymm0\n"
        "vaesenc %%ymm13, %%ymm1, %%ymm1\n"
        "vaesenc %%ymm13, %%ymm2, %%ymm2\n"
        "vaesenc %%ymm13, %%ymm3, %%ymm3\n"
        "vaesenc %%ymm13, %%ymm4, %%ymm4\n"
        "vaesenc %%ymm13, %%ymm5, %%ymm5\n"
        "vaesenc %%ymm13, %%ymm6, %%ymm6\n"
        "vaesenc %%ymm13, %%ymm7, %%ymm7\n"
        "vpclmulqdq $0x00, %%ymm12, %%ymm4, %%ymm8\n"
        "vpxor %%ymm8, %%ymm9, %%ymm9\n"
        "vpclmulqdq $0x11, %%ymm12, %%ymm4, %%ymm8\n"
        "vpxor %%ymm8, %%ymm10, %%ymm10\n"
        "vpshufd $0x4e, %%ymm4, %%ymm8\n"
        "vpxor %%ymm4, %%ymm8, %%ymm8\n"
        "vpclmulqdq $0x00, %%ymm12, %%ymm8, %%ymm8\n"
        "vpxor %%ymm8, %%ymm11, %%ymm11\n"
        "vaesenc %%ymm13, %%ymm0, %%ymm0\n"
        "vaesenc %%ymm13, %%ymm1, %%ymm1\n"
        "vaesenc %%ymm13, %%ymm2, %%ymm2\n"
        "vaesenc %%ymm13, %%ymm3, %%ymm3\n"
        "vaesenc %%ymm13, %%ymm4, %%ymm4\n"
        "vaesenc %%ymm13, %%ymm5, %%ymm5\n"
        "vaesenc %%ymm13, %%ymm6, %%ymm6\n"
        "vaesenc %%ymm13, %%ymm7, %%ymm7\n"
        "vpclmulqdq $0x00, %%ymm12, %%ymm5, %%ymm8\n"
        "vpxor %%ymm8, %%ymm9, %%ymm9\n"
        "vpclmulqdq $0x11, %%ymm12, %%ymm5, %%ymm8\n"
        "vpxor %%ymm8, %%ymm10, %%ymm10\n"
        "vpshufd $0x4e, %%ymm5, %%ymm8\n"
        "vpxor %%ymm5, %%ymm8, %%ymm8\n"
        "vpclmulqdq $0x00, %%ymm12, %%ymm8, %%ymm8\n"
        "vpxor %%ymm8, %%ymm11, %%ymm11\n"
        "vaesenc %%ymm13, %%ymm0, %%ymm0\n"
        "vaesenc %%ymm13, %%ymm1, %%ymm1\n"
        "vaesenc %%ymm13, %%ymm2, %%ymm2\n"
        "vaesenc %%ymm13, %%ymm3, %%ymm3\n"
        "vaesenc %%ymm13, %%ymm4, %%ymm4\n"
        "vaesenc %%ymm13, %%ymm5, %%ymm5\n"
        "vaesenc %%ymm13, %%ymm6, %%ymm6\n"
        "vaesenc %%ymm13, %%ymm7, %%ymm7\n"
        "vpclmulqdq $0x00, %%ymm12, %%ymm6, %%ymm8\n"
        "vpxor %%ymm8, %%ymm9, %%ymm9\n"
        "vpclmulqdq $0x11, %%ymm12, %%ymm6, %%ymm8\n"
        "vpxor %%ymm8, %%ymm10, %%ymm10\n"
        "vpshufd $0x4e, %%ymm6, %%ymm8\n"
        "vpxor %%ymm6, %%ymm8, %%ymm8\n"
        "vpclmulqdq $0x00, %%ymm12, %%ymm8, %%ymm8\n"
        "vpxor %%ymm8, %%ymm11, %%ymm11\n"
        "vaesenc %%ymm13, %%ymm0, %%ymm0\n"
        "vaesenc %%ymm13, %%ymm1, %%ymm1\n"
        "vaesenc %%ymm13, %%ymm2, %%ymm2\n"
        "vaesenc %%ymm13, %%ymm3, %%ymm3\n"
        "vaesenc %%ymm13, %%ymm4, %%ymm4\n"
        "vaesenc %%ymm13, %%ymm5, %%ymm5\n"
        "vaesenc %%ymm13, %%ymm6, %%ymm6\n"
        "vaesenc %%ymm13, %%ymm7, %%ymm7\n"
        "vpclmulqdq $0x00, %%ymm12, %%ymm7, %%ymm8\n"
        "vpxor %%ymm8, %%ymm9, %%ymm9\n"
        "vpclmulqdq $0x11, %%ymm12, %%ymm7, %%ymm8\n"
        "vpxor %%ymm8, %%ymm10, %%ymm10\n"
        "vpshufd $0x4e, %%ymm7, %%ymm8\n"
        "vpxor %%ymm7, %%ymm8, %%ymm8\n"
        "vpclmulqdq $0x00, %%ymm12, %%ymm8, %%ymm8\n"
        "vpxor %%ymm8, %%ymm11, %%ymm11\n"
        "vaesenc %%ymm13, %%ymm0, %%ymm0\n"
        "vaesenc %%ymm13, %%ymm1, %%ymm1\n"
        "vaesenc %%ymm13, %%ymm2, %%ymm2\n"
        "vaesenc %%ymm13, %%ymm3, %%ymm3\n"
        "vaesenc %%ymm13, %%ymm4, %%ymm4\n"
        "vaesenc %%ymm13, %%ymm5, %%ymm5\n"
        "vaesenc %%ymm13, %%ymm6, %%ymm6\n"
        "vaesenc %%ymm13, %%ymm7, %%ymm7\n"
        "vaesenc %%ymm13, %%ymm0, %%ymm0\n"
        "vaesenc %%ymm13, %%ymm1, %%ymm1\n"
        "vaesenc %%ymm13, %%ymm2, %%ymm2\n"
        "vaesenc %%ymm13, %%ymm3, %%ymm3\n"
        "vaesenc %%ymm13, %%ymm4, %%ymm4\n"
        "vaesenc %%ymm13, %%ymm5, %%ymm5\n"
        "vaesenc %%ymm13, %%ymm6, %%ymm6\n"
        "vaesenc %%ymm13, %%ymm7, %%ymm7\n"
        "vpxor %%ymm0, %%ymm9, %%ymm9\n"
        "vpxor %%ymm1, %%ymm9, %%ymm9\n"
        "vpxor %%ymm2, %%ymm9, %%ymm9\n"
        "vpxor %%ymm3, %%ymm9, %%ymm9\n"
        "vpxor %%ymm4, %%ymm9, %%ymm9\n"
        "vpxor %%ymm5, %%ymm9, %%ymm9\n"
        "vpxor %%ymm6, %%ymm9, %%ymm9\n"
        "vpxor %%ymm7, %%ymm9, %%ymm9\n"
        "dec %0\n"
        "jnz 1b\n"
        "vzeroupper\n"
        : "+r"(n)
        : "m"(kCounterStep)
        : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
          "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15",
          "cc");
  });
  return r;
}

// VAES-512: 16 ZMM registers per rep (1024 bytes), as the ZMM CTR.
__attribute__((target("vaes,avx512f"))) double Vaes512Ceiling(double seconds) {
  __m512i c = _mm512_set1_epi32(1), sink = _mm512_setzero_si512();
  const __m512i four = _mm512_set1_epi64(4);
  const __m512i k = _mm512_set1_epi32(0x5a5a5a5a);
  double r;
  CEILING_LOOP(seconds, 1024.0, r, {
    __m512i a[16];
    c = _mm512_add_epi32(c, four);
    _Pragma("GCC unroll 16") for (int i = 0; i < 16; ++i) a[i] =
        _mm512_xor_si512(c, _mm512_set1_epi32(i));
    _Pragma("GCC unroll 10") for (int j = 0; j < 10; ++j) {
      _Pragma("GCC unroll 16") for (int i = 0; i < 16; ++i) a[i] =
          _mm512_aesenc_epi128(a[i], k);
    }
    _Pragma("GCC unroll 16") for (int i = 0; i < 16; ++i) sink =
        _mm512_xor_si512(sink, a[i]);
    __asm__ volatile("" : "+v"(sink), "+v"(c));
  });
  return r;
}

// GCM shape over ZMM, as aes_gcm_vaes512.cc's loop: per 32 blocks, 8
// registers x 10 VAESENC and 8 x 4 VPCLMULQDQ.
__attribute__((target("vaes,vpclmulqdq,avx512f"))) double GcmShape512Ceiling(
    double seconds) {
  __m512i c = _mm512_set1_epi32(1), sink = _mm512_setzero_si512();
  __m512i lo = sink, hi = sink, mid = sink;
  const __m512i four = _mm512_set1_epi64(4);
  const __m512i k = _mm512_set1_epi32(0x5a5a5a5a);
  const __m512i h = _mm512_set1_epi32(0x1234567);
  double r;
  CEILING_LOOP(seconds, 512.0, r, {
    __m512i a[8];
    c = _mm512_add_epi32(c, four);
    _Pragma("GCC unroll 8") for (int i = 0; i < 8; ++i) a[i] =
        _mm512_xor_si512(c, _mm512_set1_epi32(i));
    _Pragma("GCC unroll 10") for (int j = 0; j < 10; ++j) {
      _Pragma("GCC unroll 8") for (int i = 0; i < 8; ++i) a[i] =
          _mm512_aesenc_epi128(a[i], k);
      if (j < 8) {
        lo = _mm512_xor_si512(lo, _mm512_clmulepi64_epi128(a[j], h, 0x00));
        hi = _mm512_xor_si512(hi, _mm512_clmulepi64_epi128(a[j], h, 0x11));
        mid = _mm512_xor_si512(
            mid, _mm512_xor_si512(_mm512_clmulepi64_epi128(a[j], h, 0x01),
                                  _mm512_clmulepi64_epi128(a[j], h, 0x10)));
      }
    }
    _Pragma("GCC unroll 8") for (int i = 0; i < 8; ++i) sink =
        _mm512_xor_si512(sink, a[i]);
    __asm__ volatile("" : "+v"(sink), "+v"(c), "+v"(lo), "+v"(hi), "+v"(mid));
  });
  return r;
}

// Row prints one cell; `ceiling` (GB/s, 0 = none) is the register-only
// limit of the path serving it, shown as the share of it reached.
void Row(const char* alg, size_t size, const Result& ours, const Result& ossl,
         double ceiling = 0) {
  const double gbs = size / ours.ns_per_op;
  const double ogbs = size / ossl.ns_per_op;
  char pct[16] = "-";
  if (ceiling > 0) snprintf(pct, sizeof(pct), "%.0f%%", 100 * gbs / ceiling);
  printf("%-22s %6zu  %9.1f %8.2f  %9.1f %8.2f  %6.2fx  %7.3f  %6s\n", alg,
         size, ours.ns_per_op, gbs, ossl.ns_per_op, ogbs,
         ossl.ns_per_op / ours.ns_per_op, ours.tsc_per_op / size, pct);
  fflush(stdout);
}

int Main(int argc, char** argv) {
  if (argc > 1 &&
      (std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help")) {
    printf(
        "usage: bench_x86 [seconds-per-cell, default 0.2] [mask, as "
        "ACCELCRYPT_X86_DISABLE] [one size only]\n");
    return 0;
  }
  const double secs = argc > 1 ? atof(argv[1]) : 0.2;
  if (!(secs > 0)) {
    fprintf(stderr, "bench_x86: seconds must be a positive number\n");
    return 2;
  }
  const std::string mask = argc > 2 ? argv[2] : "";
  auto inst = Instance::Create(mask);
  if (!inst) {
    fprintf(stderr, "x86 backend unavailable\n");
    return 1;
  }
  printf("# %s\n", inst->Describe().c_str());
  printf("# TSC c/B = TSC ticks per byte (TSC runs at the nominal clock).\n");
  // Features after the mask: a ceiling row only where its instructions run.
  auto feats = MaskCpuFeatures(DetectCpuFeatures(), mask);
  if (!feats.ok()) {
    fprintf(stderr, "%s\n", std::string(feats.status().message()).c_str());
    return 1;
  }
  const CpuFeatures& f = *feats;
  // Each ceiling runs only where CPUID (after the mask) reports every
  // instruction it executes; 0 = not measured.
  double aes_xmm = 0, aes_ymm = 0, aes_zmm = 0;
  double gcm_xmm = 0, gcm_ymm = 0, gcm_ymm_k = 0, gcm_zmm = 0;
  printf("# ceilings (register-only AES-128 loops, GB/s):\n");
  if (f.aesni) {
    aes_xmm = AesniCeiling(secs);
    printf("#   AES-NI xmm        %6.1f\n", aes_xmm);
  }
  if (f.aesni && f.pclmulqdq) {
    gcm_xmm = GcmShapeXmmCeiling(secs);
    printf("#   GCM shape xmm     %6.1f\n", gcm_xmm);
  }
  if (f.vaes && f.avx2) {
    aes_ymm = Vaes256Ceiling(secs);
    printf("#   VAES-256 ymm      %6.1f\n", aes_ymm);
  }
  if (f.vaes && f.avx512) {
    aes_zmm = Vaes512Ceiling(secs);
    printf("#   VAES-512 zmm      %6.1f\n", aes_zmm);
  }
  if (f.vaes && f.vpclmulqdq && f.avx2) {
    gcm_ymm = GcmShape256Ceiling(secs);
    printf("#   GCM shape ymm     %6.1f  (4 VPCLMULQDQ per register)\n",
           gcm_ymm);
    gcm_ymm_k = GcmShape256KaratsubaCeiling(secs);
    printf(
        "#   GCM shape ymm K   %6.1f  (3, Karatsuba: the VAES-256 loop's "
        "mix; %% ceil uses it)\n",
        gcm_ymm_k);
  }
  if (f.vaes && f.vpclmulqdq && f.avx512) {
    gcm_zmm = GcmShape512Ceiling(secs);
    printf("#   GCM shape zmm     %6.1f\n", gcm_zmm);
  }
  // The ceiling of the path each row runs on (CBC encryption is one
  // dependency chain: latency-bound, no throughput ceiling).
  const Implementations impl = ChooseImplementations(f);
  const double parallel_ceiling =
      impl.aes_parallel == AesImpl::kVaes512   ? aes_zmm
      : impl.aes_parallel == AesImpl::kVaes256 ? aes_ymm
                                               : aes_xmm;
  const double gcm_ceiling = impl.gcm == GcmImpl::kVaes512   ? gcm_zmm
                             : impl.gcm == GcmImpl::kVaes256 ? gcm_ymm_k
                                                             : gcm_xmm;
  printf("%-22s %6s  %9s %8s  %9s %8s  %7s  %7s  %6s\n", "algorithm", "bytes",
         "x86 ns", "GB/s", "ossl ns", "GB/s", "ratio", "TSC c/B", "% ceil");
  std::vector<size_t> sizes = {16, 64, 256, 1024, 4096, 16384};
  if (argc > 3) sizes = {static_cast<size_t>(atol(argv[3]))};
  std::vector<uint8_t> key(16, 0x2b), iv(16, 0x01), iv12(12, 0x07);
  std::vector<uint8_t> in(16384, 0x5c), out(16384 + 32);

  struct CipherCase {
    const char* name;
    accelcrypt_alg alg;
    const char* evp;
    bool enc;
  };
  const CipherCase kCiphers[] = {
      {"AES-128-ECB", ACCELCRYPT_ALG_AES_128_ECB, "AES-128-ECB", true},
      {"AES-128-CTR", ACCELCRYPT_ALG_AES_128_CTR, "AES-128-CTR", true},
      {"AES-128-GCM enc", ACCELCRYPT_ALG_AES_128_GCM, "AES-128-GCM", true},
      {"AES-128-GCM dec", ACCELCRYPT_ALG_AES_128_GCM, "AES-128-GCM", false},
      {"AES-256-GCM enc", ACCELCRYPT_ALG_AES_256_GCM, "AES-256-GCM", true},
      {"AES-256-GCM dec", ACCELCRYPT_ALG_AES_256_GCM, "AES-256-GCM", false},
      {"AES-128-CBC enc", ACCELCRYPT_ALG_AES_128_CBC, "AES-128-CBC", true},
      {"AES-128-CBC dec", ACCELCRYPT_ALG_AES_128_CBC, "AES-128-CBC", false},
  };
  for (const CipherCase& cc : kCiphers) {
    const bool gcm = ACCELCRYPT_CIPHER_MODE(cc.alg) == ACCELCRYPT_MODE_GCM;
    Cipher c(*inst, cc.alg);
    const bool ecb = ACCELCRYPT_CIPHER_MODE(cc.alg) == ACCELCRYPT_MODE_ECB;
    const std::vector<uint8_t> ckey(ACCELCRYPT_CIPHER_KEY_BYTES(cc.alg), 0x2b);
    c.Init(cc.enc, ckey, gcm ? iv12 : ecb ? std::vector<uint8_t>() : iv);
    EVP_CIPHER* evp = EVP_CIPHER_fetch(nullptr, cc.evp, "provider=default");
    EVP_CIPHER_CTX* ectx = EVP_CIPHER_CTX_new();
    EVP_CipherInit_ex(ectx, evp, nullptr, ckey.data(),
                      gcm ? iv12.data() : iv.data(), cc.enc ? 1 : 0);
    EVP_CIPHER_CTX_set_padding(ectx, 0);
    for (size_t size : sizes) {
      int n = 0;
      Result ours, ossl;
      const accelcrypt_cipher_table* t = c.table();
      accelcrypt_cipher_ctx* ctx = c.ctx();
      MeasurePair([&] { t->update(ctx, in.data(), size, out.data(), nullptr); },
                  [&] {
                    EVP_CipherUpdate(ectx, out.data(), &n, in.data(),
                                     static_cast<int>(size));
                  },
                  secs, &ours, &ossl);
      const bool serial =
          ACCELCRYPT_CIPHER_MODE(cc.alg) == ACCELCRYPT_MODE_CBC && cc.enc;
      // The ceilings run 10 rounds: AES-128 rows only.
      const bool aes128 = ACCELCRYPT_CIPHER_KEY_BYTES(cc.alg) == 16;
      Row(cc.name, size, ours, ossl,
          !aes128  ? 0
          : gcm    ? gcm_ceiling
          : serial ? 0
                   : parallel_ceiling);
    }
    EVP_CIPHER_CTX_free(ectx);
    EVP_CIPHER_free(evp);
  }

  {
    // Whole GCM messages: new IV, 16 bytes of AAD, data, final, tag.
    Cipher c(*inst, ACCELCRYPT_ALG_AES_128_GCM);
    c.Init(true, key, iv12);
    EVP_CIPHER* evp =
        EVP_CIPHER_fetch(nullptr, "AES-128-GCM", "provider=default");
    EVP_CIPHER_CTX* ectx = EVP_CIPHER_CTX_new();
    EVP_EncryptInit_ex(ectx, evp, nullptr, key.data(), iv12.data());
    uint8_t tag[16];
    for (size_t size : {size_t{1024}, size_t{16384}}) {
      int n = 0;
      Result ours, ossl;
      MeasurePair(
          [&] {
            c.Init(true, {}, iv12);
            c.Aad(in.data(), 16);
            c.Update(in.data(), size, out.data());
            c.Final();
            c.GetTag(tag, 16);
          },
          [&] {
            EVP_EncryptInit_ex(ectx, nullptr, nullptr, nullptr, iv12.data());
            EVP_EncryptUpdate(ectx, nullptr, &n, in.data(), 16);
            EVP_EncryptUpdate(ectx, out.data(), &n, in.data(),
                              static_cast<int>(size));
            EVP_EncryptFinal_ex(ectx, out.data() + n, &n);
            EVP_CIPHER_CTX_ctrl(ectx, EVP_CTRL_AEAD_GET_TAG, 16, tag);
          },
          secs, &ours, &ossl);
      Row("AES-128-GCM message", size, ours, ossl, gcm_ceiling);
    }
    EVP_CIPHER_CTX_free(ectx);
    EVP_CIPHER_free(evp);
  }

  {
    const accelcrypt_digest_table* t = inst->digests();
    accelcrypt_digest_ctx* ctx = nullptr;
    if (t == nullptr || t->newctx(inst->handle(), ACCELCRYPT_ALG_SHA256, &ctx,
                                  nullptr) != ACCELCRYPT_OK) {
      printf("SHA-256 not offered\n");
      return 0;
    }
    EVP_MD* md = EVP_MD_fetch(nullptr, "SHA2-256", "provider=default");
    EVP_MD_CTX* mctx = EVP_MD_CTX_new();
    EVP_DigestInit_ex(mctx, md, nullptr);
    for (size_t size : sizes) {
      Result ours, ossl;
      MeasurePair([&] { t->update(ctx, in.data(), size, nullptr); },
                  [&] { EVP_DigestUpdate(mctx, in.data(), size); }, secs, &ours,
                  &ossl);
      Row("SHA-256", size, ours, ossl);
    }
    uint8_t dg[32];
    for (size_t size : {size_t{64}, size_t{16384}}) {
      Result ours, ossl;
      MeasurePair(
          [&] {
            t->oneshot(inst->handle(), ACCELCRYPT_ALG_SHA256, in.data(), size,
                       dg, 32, nullptr);
          },
          [&] {
            unsigned int n = 0;
            EVP_Digest(in.data(), size, dg, &n, md, nullptr);
          },
          secs, &ours, &ossl);
      Row("SHA-256 oneshot", size, ours, ossl);
    }
    t->freectx(ctx);
    EVP_MD_CTX_free(mctx);
    EVP_MD_free(md);
  }
  return 0;
}

}  // namespace
}  // namespace accelcrypt::x86::test

int main(int argc, char** argv) {
  return accelcrypt::x86::test::Main(argc, argv);
}
