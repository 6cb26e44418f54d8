// SPDX-License-Identifier: Apache-2.0
//
// Internal types of the PadLock backend: the backend instance, cipher and
// digest contexts and the ABI tables. The ABI shim lives in
// padlock_backend.cc; modes in cipher_padlock.cc, hashes in
// digest_padlock.cc, the RNG in rng_padlock.cc.
//
// Status values inside this backend are the ABI's accelcrypt_status codes:
// the backend may include nothing of ours but accelcrypt/backend.h, and the
// i386 test build has no Abseil (STYLE.md §2 takes precedence over §3 here).
#ifndef ACCELCRYPT_BACKENDS_PADLOCK_PADLOCK_INTERNAL_H_
#define ACCELCRYPT_BACKENDS_PADLOCK_PADLOCK_INTERNAL_H_

#include <stddef.h>
#include <stdint.h>

#include <mutex>

#include "accelcrypt/backend.h"
#include "accelcrypt/kit/abi_error.h"
#include "backends/padlock/cpuid.h"

namespace accelcrypt::padlock {

// Errors are written with the backend kit's kit::WriteAbiErrorf
// (accelcrypt/kit/abi_error.h).

// RngState holds the SP 800-90B continuous health tests of the xstore
// source. Guarded by `mu`.
struct RngState {
  std::mutex mu;
  bool failed = false;
  char reason[128] = {};
  bool started = false;
  int last = -1;
  uint32_t rct_run = 0;
  uint32_t apt_pos = 0;
  uint8_t apt_ref = 0;
  uint32_t apt_count = 0;
};

struct Backend {
  Features features;
  const accelcrypt_host* host = nullptr;
  accelcrypt_capability caps[24] = {};
  size_t num_caps = 0;
  RngState rng;
};

// AceBlock is the 16-aligned area the xcrypt operands live in (facts §2.3,
// §2.4): IV/counter, control words, one scratch block and the 256-byte key
// area the hardware reads.
struct alignas(16) AceBlock {
  uint8_t iv[16];
  uint8_t cword[16];      // the mode's control word
  uint8_t cword_enc[16];  // forward cipher, for single keystream blocks
  uint8_t scratch[16];
  uint8_t key[256];
};
static_assert(alignof(AceBlock) == 16);
static_assert(offsetof(AceBlock, iv) % 16 == 0);
static_assert(offsetof(AceBlock, cword) % 16 == 0);
static_assert(offsetof(AceBlock, cword_enc) % 16 == 0);
static_assert(offsetof(AceBlock, scratch) % 16 == 0);
static_assert(offsetof(AceBlock, key) % 16 == 0);

struct CipherCtx {
  AceBlock ace;
  const Backend* backend = nullptr;
  accelcrypt_alg alg = 0;
  uint32_t mode = 0;
  size_t key_len = 0;
  bool keyed = false;
  bool encrypt = true;
  uint32_t num = 0;         // position in the current block (CFB/OFB/CTR/GCM)
  uint8_t ecount[16] = {};  // CTR/GCM keystream of the current block
  // GCM (SP 800-38D).
  uint8_t h[16] = {};
  uint8_t ek_j0[16] = {};
  uint8_t ghash[16] = {};
  uint8_t gbuf[16] = {};
  size_t gbuf_len = 0;
  uint64_t aad_len = 0;
  uint64_t ct_len = 0;
  bool data_started = false;
  bool finished = false;
  uint8_t tag[16] = {};
  size_t expected_tag_len = 0;
};

enum class ShaKind { kSha1, kSha256, kSha512 };

// Size of the C7 message buffer: messages up to this size are hashed by one
// finalizing PHE call; longer ones are compressed in software and finished
// by PHE (facts §3.5).
constexpr size_t kC7Buffer = 4096;

struct alignas(16) DigestCtx {
  uint8_t state[128];  // PHE state area (facts §3.2: reserve 128 bytes)
  uint8_t buf[kC7Buffer];
  const Backend* backend = nullptr;
  accelcrypt_alg alg = 0;
  ShaKind kind = ShaKind::kSha256;
  size_t block_len = 64;
  size_t out_len = 0;
  size_t buf_len = 0;
  uint64_t total = 0;
  uint64_t absorbed = 0;        // C7: bytes compressed in software
  bool oneshot_design = false;  // C7: no block mode
  bool finished = false;
};
static_assert(offsetof(DigestCtx, state) % 16 == 0);

extern const accelcrypt_cipher_table kCipherTable;
extern const accelcrypt_digest_table kDigestTable;
extern const accelcrypt_rng_table kRngTable;

}  // namespace accelcrypt::padlock

#endif  // ACCELCRYPT_BACKENDS_PADLOCK_PADLOCK_INTERNAL_H_
