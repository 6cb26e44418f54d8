// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_BACKENDS_SOFTWARE_AES_SOFTWARE_H_
#define ACCELCRYPT_BACKENDS_SOFTWARE_AES_SOFTWARE_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/base/optimization.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "accelcrypt/backend.h"
#include "backends/software/lib_context.h"

namespace accelcrypt::software {

// AesSoftware is one raw AES cipher context (the plugin ABI's cipher
// contract) over a context of OpenSSL's default provider, driven through the
// provider's dispatch functions. Not thread-safe; one per operation. A call
// that fails leaves the running state as it was.
class AesSoftware {
 public:
  // Create allocates a provider context for `d` (which outlives this object).
  // kResourceExhausted when the provider cannot allocate.
  static absl::StatusOr<std::unique_ptr<AesSoftware>> Create(
      const CipherDispatch& d);
  // The destructor wipes the key copy and frees the provider context (which
  // wipes its key schedule).
  ~AesSoftware();
  AesSoftware(const AesSoftware&) = delete;
  AesSoftware& operator=(const AesSoftware&) = delete;

  // Init sets direction, key and IV and resets all running state.
  // kInvalidArgument for a wrong key or IV length.
  absl::Status Init(bool encrypt, absl::Span<const uint8_t> key,
                    absl::Span<const uint8_t> iv);
  // Update transforms in_len bytes of `in` into `out` (room for in_len
  // bytes; may equal `in`). kFailedPrecondition before Init or after a GCM
  // Final; kInvalidArgument for a partial block in ECB/CBC.
  // Inline so the shim's OK path needs no Status object.
  absl::Status Update(const uint8_t* in, size_t in_len, uint8_t* out) {
    if (ABSL_PREDICT_TRUE(raw_ready_ && in != nullptr && out != nullptr &&
                          in_len != 0 && (in_len & block_mask_) == 0)) {
      // The provider's raw `cipher` call: no padding logic, no buffering,
      // the position within a block kept by the provider (CFB/OFB/CTR).
      size_t out_len = 0;
      if (ABSL_PREDICT_TRUE(
              d_.cipher(prov_ctx_, out, &out_len, in_len, in, in_len) > 0)) {
        return absl::OkStatus();
      }
      return CipherFailed();
    }
    return UpdateSlow(in, in_len, out);
  }
  // Direct sets *fn and *direct_ctx to the default provider's raw `cipher`
  // function and context, the call Update's fast path makes (the plugin
  // ABI's get_direct). kUnimplemented for GCM and before Init. The pair
  // stays valid until the next Init, SetState or destruction.
  absl::Status Direct(accelcrypt_cipher_direct_fn* fn, void** direct_ctx) const;
  // Aad feeds GCM additional data; kFailedPrecondition after data or for a
  // non-GCM mode.
  absl::Status Aad(const uint8_t* aad, size_t aad_len);
  // Final ends a GCM operation (tag mismatch: AuthFailedError). No-op for
  // other modes.
  absl::Status Final();
  absl::Status GetTag(uint8_t* tag, size_t tag_len);
  absl::Status SetTag(const uint8_t* tag, size_t tag_len);
  // GetState/SetState: chaining value and position (not GCM:
  // kUnimplemented).
  absl::Status GetState(accelcrypt_cipher_state* out) const;
  absl::Status SetState(const accelcrypt_cipher_state& state);
  // Clone deep-copies key and running state.
  absl::StatusOr<std::unique_ptr<AesSoftware>> Clone() const;

 private:
  // GCM progress; other modes use only kIdle and kData.
  enum class Phase { kIdle, kAad, kData, kFinal };

  AesSoftware(const CipherDispatch& d, void* prov_ctx)
      : d_(d),
        prov_ctx_(prov_ctx),
        block_mask_(d.mode == ACCELCRYPT_MODE_ECB ||
                            d.mode == ACCELCRYPT_MODE_CBC
                        ? 15
                        : 0) {}
  // ProviderInit runs the provider's init (GCM: IV length first).
  absl::Status ProviderInit(bool encrypt, absl::Span<const uint8_t> key,
                            absl::Span<const uint8_t> iv);
  // UpdateSlow handles everything but a valid non-GCM update: errors, empty
  // input and GCM.
  absl::Status UpdateSlow(const uint8_t* in, size_t in_len, uint8_t* out);
  absl::Status CipherFailed() const;
  // Restart re-runs the provider's init with the stored direction, no key
  // (the schedule is kept) and `iv`; position 0.
  absl::Status Restart(const uint8_t iv[16]);
  // Advance runs `num` bytes (< 16) through the cipher to move the position
  // inside the current block; `in` is the input to use (or zeros when null).
  absl::Status Advance(const uint8_t* in, size_t num);
  // EcbBlock computes AES_K(in) (encrypt) or AES^-1_K(in) for one block
  // with `key` (d_.key_len bytes).
  absl::Status EcbBlock(const uint8_t* key, bool encrypt, const uint8_t in[16],
                        uint8_t out[16]) const;

  const CipherDispatch& d_;
  void* prov_ctx_;
  uint8_t key_[32] = {};
  bool initialized_ = false;
  // initialized_ and not GCM: Update may go straight to the provider.
  bool raw_ready_ = false;
  // 15 for ECB/CBC (whole blocks only), 0 for the other modes.
  size_t block_mask_;
  bool encrypt_ = true;
  Phase phase_ = Phase::kIdle;
  bool tag_set_ = false;
  // GCM: the IV length the provider context holds since the last successful
  // init (0 = unknown: sent with the next init).
  size_t provider_iv_len_ = 0;
};

}  // namespace accelcrypt::software

#endif  // ACCELCRYPT_BACKENDS_SOFTWARE_AES_SOFTWARE_H_
