// SPDX-License-Identifier: Apache-2.0
#include "core/cipher_stream.h"

#include <openssl/crypto.h>

#include <cstring>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/status.h"

namespace accelcrypt {
namespace {

constexpr size_t kBlock = 16;

bool IsBlockMode(CipherMode mode) {
  return mode == CipherMode::kEcb || mode == CipherMode::kCbc;
}

bool Overlaps(const uint8_t* a, size_t a_len, const uint8_t* b, size_t b_len) {
  return a_len != 0 && b_len != 0 && a < b + b_len && b < a + a_len;
}

}  // namespace

CipherStream::CipherStream(std::unique_ptr<Cipher> cipher)
    : cipher_(std::move(cipher)),
      block_mode_(IsBlockMode(cipher_->info().mode)) {}

CipherStream::~CipherStream() {
  OPENSSL_cleanse(buf_, sizeof(buf_));
  OPENSSL_cleanse(final_block_, sizeof(final_block_));
}

absl::Status CipherStream::Init(bool encrypt, absl::Span<const uint8_t> key,
                                absl::Span<const uint8_t> iv) {
  initialized_ = false;
  finished_ = false;
  // Only ECB/CBC ever put input (or a decrypted last block) in these
  // buffers; the other modes never touch them, so they are still zero.
  if (block_mode_) {
    OPENSSL_cleanse(buf_, sizeof(buf_));
    OPENSSL_cleanse(final_block_, sizeof(final_block_));
  }
  buf_len_ = 0;
  final_ready_ = false;
  ACCELCRYPT_RETURN_IF_ERROR(cipher_->Init(encrypt, key, iv));
  encrypt_ = encrypt;
  initialized_ = true;
  return absl::OkStatus();
}

size_t CipherStream::MaxUpdateOutput(size_t in_len) const {
  if (!block_mode_) return in_len;
  size_t total = buf_len_ + in_len;
  size_t whole = total - total % kBlock;
  // Decrypting with padding holds the last whole block back.
  if (!encrypt_ && padding_ && whole > 0 && total % kBlock == 0) {
    whole -= kBlock;
  }
  return whole;
}

absl::StatusOr<size_t> CipherStream::Update(absl::Span<const uint8_t> in,
                                            absl::Span<uint8_t> out) {
  if (!initialized_ || finished_) [[unlikely]] {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s: update %s", cipher_->info().name,
                        finished_ ? "after final" : "before init"));
  }
  if (!block_mode_) {
    const AlgorithmInfo& info = cipher_->info();
    if (out.size() < in.size()) {
      return absl::OutOfRangeError(absl::StrFormat(
          "%s: output buffer of %d bytes is too small for %d bytes", info.name,
          out.size(), in.size()));
    }
    if (in.data() != out.data() &&
        Overlaps(in.data(), in.size(), out.data(), in.size())) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: input and output partially overlap", info.name));
    }
    ACCELCRYPT_RETURN_IF_ERROR(cipher_->Update(in, out));
    return in.size();
  }

  const AlgorithmInfo& info = cipher_->info();
  const size_t produce = MaxUpdateOutput(in.size());
  if (out.size() < produce) {
    return absl::OutOfRangeError(
        absl::StrFormat("%s: output buffer of %d bytes is too small, need %d",
                        info.name, out.size(), produce));
  }
  // The output runs ahead of the input by buf_len_ bytes; if the caller's
  // buffers share memory that would overwrite input not yet read, so such
  // calls work from a copy (rare: in-place update after a partial block).
  std::vector<uint8_t> copy;
  if (produce > 0 && (in.data() != out.data() || buf_len_ != 0) &&
      Overlaps(in.data(), in.size(), out.data(), produce)) {
    copy.assign(in.begin(), in.end());
    in = copy;
  }
  size_t written = 0;
  size_t consumed = 0;
  if (produce > 0 && buf_len_ > 0) {
    size_t take = kBlock - buf_len_;
    uint8_t block[kBlock];
    std::memcpy(block, buf_, buf_len_);
    std::memcpy(block + buf_len_, in.data(), take);
    absl::Status st = cipher_->Update(block, out.subspan(0, kBlock));
    OPENSSL_cleanse(block, sizeof(block));
    ACCELCRYPT_RETURN_IF_ERROR(st);
    consumed = take;
    written = kBlock;
    buf_len_ = 0;
  }
  if (written < produce) {
    size_t n = produce - written;
    absl::Status st =
        cipher_->Update(in.subspan(consumed, n), out.subspan(written, n));
    if (!st.ok()) {
      // A device error here is rare (the router already retried it on
      // another backend); the first block, if any, went through.
      if (!copy.empty()) OPENSSL_cleanse(copy.data(), copy.size());
      return st;
    }
    consumed += n;
    written += n;
  }
  size_t rest = in.size() - consumed;
  // An empty update's span may hold a null pointer (UB for memcpy).
  if (rest > 0) std::memcpy(buf_ + buf_len_, in.data() + consumed, rest);
  buf_len_ += rest;
  if (!copy.empty()) OPENSSL_cleanse(copy.data(), copy.size());
  return written;
}

absl::StatusOr<size_t> CipherStream::Final(absl::Span<uint8_t> out) {
  const AlgorithmInfo& info = cipher_->info();
  if (!initialized_) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s: final before init", info.name));
  }
  if (finished_) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s: final called twice", info.name));
  }
  if (!IsBlockMode(info.mode)) {
    ACCELCRYPT_RETURN_IF_ERROR(cipher_->Final());
    finished_ = true;
    return 0;
  }
  if (!padding_) {
    if (buf_len_ != 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: data not a multiple of the block length (%d bytes left) and "
          "padding is off",
          info.name, buf_len_));
    }
    finished_ = true;
    return 0;
  }
  if (encrypt_) {
    if (out.size() < kBlock) {
      return absl::OutOfRangeError(absl::StrFormat(
          "%s: output buffer of %d bytes is too small for the final block",
          info.name, out.size()));
    }
    uint8_t block[kBlock];
    std::memcpy(block, buf_, buf_len_);
    const uint8_t pad = static_cast<uint8_t>(kBlock - buf_len_);
    std::memset(block + buf_len_, pad, pad);
    absl::Status st = cipher_->Update(block, out.subspan(0, kBlock));
    OPENSSL_cleanse(block, sizeof(block));
    ACCELCRYPT_RETURN_IF_ERROR(st);
    buf_len_ = 0;
    finished_ = true;
    return kBlock;
  }
  if (buf_len_ != kBlock) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: wrong final block length (%d bytes)", info.name, buf_len_));
  }
  if (!final_ready_) {
    ACCELCRYPT_RETURN_IF_ERROR(cipher_->Update(buf_, final_block_));
    final_ready_ = true;
  }
  const uint8_t* block = final_block_;
  // Check the PKCS#7 padding without branching on its bytes.
  const uint8_t pad = block[kBlock - 1];
  uint8_t bad = static_cast<uint8_t>((pad == 0) | (pad > kBlock));
  for (size_t i = 0; i < kBlock; ++i) {
    const uint8_t in_pad = static_cast<uint8_t>(i >= kBlock - pad);
    bad |= static_cast<uint8_t>(in_pad & (block[i] != pad));
  }
  if (bad) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: bad decrypt (invalid padding)", info.name));
  }
  const size_t n = kBlock - pad;
  if (out.size() < n) {
    return absl::OutOfRangeError(absl::StrFormat(
        "%s: output buffer of %d bytes is too small for %d bytes", info.name,
        out.size(), n));
  }
  std::memcpy(out.data(), block, n);
  OPENSSL_cleanse(final_block_, sizeof(final_block_));
  final_ready_ = false;
  buf_len_ = 0;
  finished_ = true;
  return n;
}

absl::StatusOr<std::unique_ptr<CipherStream>> CipherStream::Clone() const {
  ACCELCRYPT_ASSIGN_OR_RETURN(std::unique_ptr<Cipher> cipher, cipher_->Clone());
  auto copy = std::make_unique<CipherStream>(std::move(cipher));
  copy->encrypt_ = encrypt_;
  copy->padding_ = padding_;
  copy->initialized_ = initialized_;
  copy->finished_ = finished_;
  std::memcpy(copy->buf_, buf_, sizeof(buf_));
  copy->buf_len_ = buf_len_;
  std::memcpy(copy->final_block_, final_block_, sizeof(final_block_));
  copy->final_ready_ = final_ready_;
  return copy;
}

}  // namespace accelcrypt
