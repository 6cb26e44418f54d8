// SPDX-License-Identifier: Apache-2.0
// AES cipher contexts of the x86 backend: the portable half of every mode
// (keys, partial blocks, counters, GCM state machine, argument checks) over
// the leaf functions chosen for the CPU.
#ifndef ACCELCRYPT_BACKENDS_X86_AES_MODES_H_
#define ACCELCRYPT_BACKENDS_X86_AES_MODES_H_

#include <stddef.h>
#include <stdint.h>

#include <memory>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "accelcrypt/backend.h"
#include "backends/x86/cpu_features.h"
#include "backends/x86/internal/aes_leaf.h"

namespace accelcrypt::x86 {

// AesX86 runs one AES algorithm (ECB, CBC, CFB128, OFB, CTR or GCM with a
// 128-, 192- or 256-bit key) with the semantics of accelcrypt/backend.h's
// cipher table. Not thread-safe: one operation at a time. Key material is
// wiped on destruction. Every method checks its arguments before it changes
// anything, so a failed call leaves the object as it was.
//
// Status codes: kInvalidArgument for bad lengths and sizes,
// kFailedPrecondition for calls out of order, kit::AuthFailedError for a GCM
// tag mismatch, kUnimplemented for state export on GCM.
class AesX86 {
 public:
  // Create returns a context for `alg`, or kUnimplemented when `impl` has no
  // path for it (no AES-NI, or no PCLMULQDQ for GCM).
  static absl::StatusOr<std::unique_ptr<AesX86>> Create(
      accelcrypt_alg alg, const Implementations& impl);

  AesX86(const AesX86&) = default;
  AesX86& operator=(const AesX86&) = delete;
  ~AesX86();

  // Init sets key, direction and IV and resets all running state. A NULL key
  // with key_len 0 keeps the previous key (and direction must not change).
  absl::Status Init(bool encrypt, const uint8_t* key, size_t key_len,
                    const uint8_t* iv, size_t iv_len);
  absl::Status Update(const uint8_t* in, size_t in_len, uint8_t* out);
  absl::Status Aad(const uint8_t* aad, size_t aad_len);
  absl::Status Final();
  absl::Status GetTag(uint8_t* tag, size_t tag_len) const;
  absl::Status SetTag(const uint8_t* tag, size_t tag_len);
  absl::Status GetState(accelcrypt_cipher_state* out) const;
  absl::Status SetState(const accelcrypt_cipher_state& state);
  std::unique_ptr<AesX86> Clone() const;

  // DirectReady is true when Update may be called through the plugin ABI's
  // direct transform: a key is set and the mode is not GCM (whose AAD and
  // tag phases the direct contract does not cover).
  bool DirectReady() const {
    return phase_ != Phase::kNoKey && mode_ != ACCELCRYPT_MODE_GCM;
  }

  // implementation names the leaf serving this context's bulk data, e.g.
  // "vaes512", "aesni", "vaes512-vpclmulqdq".
  std::string_view implementation() const;

 private:
  enum class Phase { kNoKey, kReady, kAad, kData, kDone };

  AesX86(accelcrypt_alg alg, const Implementations& impl);

  absl::Status UpdateGcm(const uint8_t* in, size_t in_len, uint8_t* out);
  void GcmBulk(const uint8_t* in, uint8_t* out, size_t num_blocks);
  void Ghash(uint8_t xi[16], const uint8_t* data, size_t num_blocks) const;
  // EnsurePowers extends htable_ to the powers of H that a call over
  // `num_blocks` blocks reads on this path.
  void EnsurePowers(size_t num_blocks) const;
  void CtrBlocks(const uint8_t* in, uint8_t* out, size_t num_blocks);
  void EncryptBlock(const uint8_t in[16], uint8_t out[16]) const;
  void ComputeTag(uint8_t tag[16]) const;

  // SameKey is true when `key` equals the key already expanded (constant
  // time): callers such as `openssl speed` pass the key again with every new
  // IV, and the expansion and powers of H are then reused.
  bool SameKey(const uint8_t* key, size_t key_len) const;

  internal::AesRoundKeys keys_;
  // Powers of H, computed on first need (a cache of the key: extending it
  // in a const method, such as the tag's GHASH, is not a visible change).
  mutable internal::GhashTable htable_;
  mutable int powers_ready_ = 0;
  // The raw key behind keys_ (GCM only, for SameKey); wiped on destruction.
  uint8_t raw_key_[32] = {};
  uint32_t mode_;
  size_t key_len_;
  AesImpl parallel_;
  GcmImpl gcm_;
  Phase phase_ = Phase::kNoKey;
  bool encrypt_ = true;
  // Chaining value (CBC/CFB/OFB), next counter block (CTR, GCM).
  alignas(16) uint8_t iv_[16] = {};
  // Keystream of the current partial block (CTR, GCM).
  alignas(16) uint8_t ks_[16] = {};
  uint32_t num_ = 0;
  // GCM only.
  alignas(16) uint8_t j0_[16] = {};
  alignas(16) uint8_t xi_[16] = {};
  alignas(16) uint8_t partial_[16] = {};  // pending AAD or ciphertext bytes
  size_t partial_len_ = 0;
  uint64_t aad_len_ = 0;
  uint64_t data_len_ = 0;
  uint8_t tag_[16] = {};
  size_t expected_tag_len_ = 0;
};

}  // namespace accelcrypt::x86

#endif  // ACCELCRYPT_BACKENDS_X86_AES_MODES_H_
