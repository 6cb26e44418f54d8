// SPDX-License-Identifier: Apache-2.0
// The instruction ceilings of bench_x86: register-only loops of the
// instructions each x86 path executes (no memory traffic), timed by thread
// CPU time, best of 20 slices; bytes per ns (= GB/s). A caller runs each
// only after CPUID (after the mask) reports every instruction in it.
#ifndef ACCELCRYPT_TESTS_BACKENDS_X86_BENCH_CEILINGS_H_
#define ACCELCRYPT_TESTS_BACKENDS_X86_BENCH_CEILINGS_H_

namespace accelcrypt::x86::test {

// CpuNs is this thread's CPU time: on a shared, loaded machine the time the
// thread was preempted is not counted (wall-clock time would be).
double CpuNs();

// AES-NI (XMM AESENC), and the GCM shape over XMM (AES rounds + PCLMULQDQ).
double AesniCeiling(double seconds);
double GcmShapeXmmCeiling(double seconds);
// VAES over YMM, and the GCM shape over YMM with 4 (schoolbook) or 3
// (Karatsuba) VPCLMULQDQ per register.
double Vaes256Ceiling(double seconds);
double GcmShape256Ceiling(double seconds);
double GcmShape256KaratsubaCeiling(double seconds);
// VAES and the GCM shape over ZMM (AVX-512).
__attribute__((target("vaes,avx512f"))) double Vaes512Ceiling(double seconds);
__attribute__((target("vaes,vpclmulqdq,avx512f"))) double GcmShape512Ceiling(
    double seconds);

}  // namespace accelcrypt::x86::test

#endif  // ACCELCRYPT_TESTS_BACKENDS_X86_BENCH_CEILINGS_H_
