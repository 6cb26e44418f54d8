// SPDX-License-Identifier: Apache-2.0
// Per-function ISA targets for the x86 backend's leaf files (STYLE.md §8).
// Files are never compiled with -maes/-mavx512f: only the functions carrying
// one of these attributes may use the matching instructions, and callers
// reach them only after cpu_features.cc has confirmed the CPU and the OS
// support them.
#ifndef ACCELCRYPT_BACKENDS_X86_INTERNAL_TARGET_H_
#define ACCELCRYPT_BACKENDS_X86_INTERNAL_TARGET_H_

// AES-NI and PCLMULQDQ over 128-bit XMM registers.
#define ACCELCRYPT_TARGET_AESNI \
  __attribute__((target("aes,pclmul,ssse3,sse4.1")))

// VAES over 256-bit YMM registers (VEX encoding, AVX2 integer ops).
#define ACCELCRYPT_TARGET_VAES256 \
  __attribute__((target("vaes,vpclmulqdq,avx,avx2,aes,pclmul,ssse3,sse4.1")))

// VAES and VPCLMULQDQ over 512-bit ZMM registers with opmask tails.
#define ACCELCRYPT_TARGET_VAES512                                            \
  __attribute__((target(                                                     \
      "vaes,vpclmulqdq,avx512f,avx512bw,avx512vl,avx2,avx,aes,pclmul,ssse3," \
      "sse4.1")))

// SHA-NI (SHA-1 and SHA-256 round instructions).
#define ACCELCRYPT_TARGET_SHANI __attribute__((target("sha,ssse3,sse4.1")))

#define ACCELCRYPT_TARGET_RDRAND __attribute__((target("rdrnd")))
#define ACCELCRYPT_TARGET_RDSEED __attribute__((target("rdseed")))

#endif  // ACCELCRYPT_BACKENDS_X86_INTERNAL_TARGET_H_
