// SPDX-License-Identifier: Apache-2.0
// The XMM and ZMM instruction ceilings of bench_x86 (bench_ceilings.h),
// and the thread CPU clock they and bench_x86 time by.
#include <time.h>
#include <x86intrin.h>

#include "tests/backends/x86/bench_ceiling_loop.h"
#include "tests/backends/x86/bench_ceilings.h"

namespace accelcrypt::x86::test {

// CpuNs is this thread's CPU time: on a shared, loaded machine the time the
// thread was preempted is not counted (wall-clock time would be).
double CpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

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

}  // namespace accelcrypt::x86::test
