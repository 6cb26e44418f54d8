// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_CORE_CIPHER_STREAM_H_
#define ACCELCRYPT_CORE_CIPHER_STREAM_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/cipher.h"

namespace accelcrypt {

// CipherStream adds EVP/PKCS#11 stream semantics over a raw Cipher: any
// update length for ECB/CBC (partial blocks buffered), optional PKCS#7
// padding, final. Used by both front ends. Not thread-safe.
class CipherStream {
 public:
  explicit CipherStream(std::unique_ptr<Cipher> cipher);
  ~CipherStream();  // wipes buffered plaintext

  absl::Status Init(bool encrypt, absl::Span<const uint8_t> key,
                    absl::Span<const uint8_t> iv);
  void set_padding(bool padding) { padding_ = padding; }
  bool padding() const { return padding_; }

  // MaxUpdateOutput is the most bytes Update(in_len) can write.
  size_t MaxUpdateOutput(size_t in_len) const;
  // Update writes whole blocks (ECB/CBC) or everything (other modes) to
  // `out`; returns the byte count. kOutOfRange when `out` is too small
  // (nothing consumed). In decrypt-with-padding mode the last full block is
  // held back for Final.
  absl::StatusOr<size_t> Update(absl::Span<const uint8_t> in,
                                absl::Span<uint8_t> out);
  // Final flushes: encrypt+padding writes the pad block; decrypt+padding
  // checks and strips the padding (kInvalidArgument "bad decrypt" on bad
  // padding); without padding a partial block is kInvalidArgument. GCM:
  // computes or checks the tag. Returns the byte count written.
  absl::StatusOr<size_t> Final(absl::Span<uint8_t> out);

  Cipher& cipher() { return *cipher_; }
  const Cipher& cipher() const { return *cipher_; }
  absl::StatusOr<std::unique_ptr<CipherStream>> Clone() const;
  bool encrypting() const { return encrypt_; }
  bool finished() const { return finished_; }

 private:
  std::unique_ptr<Cipher> cipher_;
  bool block_mode_;  // ECB or CBC: whole blocks, buffering, padding
  bool encrypt_ = true;
  bool padding_ = true;
  bool initialized_ = false;
  bool finished_ = false;
  uint8_t buf_[16] = {};
  size_t buf_len_ = 0;
  // Decrypt with padding: the last block, already decrypted, kept when the
  // caller's Final buffer was too small so a retry does not decrypt twice.
  uint8_t final_block_[16] = {};
  bool final_ready_ = false;
};

}  // namespace accelcrypt

#endif  // ACCELCRYPT_CORE_CIPHER_STREAM_H_
