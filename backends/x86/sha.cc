// SPDX-License-Identifier: Apache-2.0
#include "backends/x86/sha.h"

#include <string.h>

#include "absl/strings/str_format.h"
#include "backends/x86/internal/aes_leaf.h"

namespace accelcrypt::x86 {
namespace {

// Initial hash values, FIPS 180-4 §5.3.1, §5.3.2, §5.3.3.
constexpr uint32_t kSha1Init[5] = {0x67452301, 0xefcdab89, 0x98badcfe,
                                   0x10325476, 0xc3d2e1f0};
constexpr uint32_t kSha224Init[8] = {0xc1059ed8, 0x367cd507, 0x3070dd17,
                                     0xf70e5939, 0xffc00b31, 0x68581511,
                                     0x64f98fa7, 0xbefa4fa4};
constexpr uint32_t kSha256Init[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372,
                                     0xa54ff53a, 0x510e527f, 0x9b05688c,
                                     0x1f83d9ab, 0x5be0cd19};

const char* Name(accelcrypt_alg alg) {
  switch (alg) {
    case ACCELCRYPT_ALG_SHA1:
      return "SHA-1";
    case ACCELCRYPT_ALG_SHA224:
      return "SHA-224";
    default:
      return "SHA-256";
  }
}

}  // namespace

size_t ShaX86::DigestSize(accelcrypt_alg alg) {
  switch (alg) {
    case ACCELCRYPT_ALG_SHA1:
      return 20;
    case ACCELCRYPT_ALG_SHA224:
      return 28;
    case ACCELCRYPT_ALG_SHA256:
      return 32;
  }
  return 0;
}

absl::StatusOr<std::unique_ptr<ShaX86>> ShaX86::Create(
    accelcrypt_alg alg, const Implementations& impl) {
  if (DigestSize(alg) == 0) {
    return absl::UnimplementedError(
        absl::StrFormat("x86: digest algorithm 0x%08x is not offered", alg));
  }
  if (impl.sha != ShaImpl::kShani) {
    return absl::UnimplementedError(absl::StrFormat(
        "x86: %s needs SHA-NI, which this CPU lacks or was disabled",
        Name(alg)));
  }
  std::unique_ptr<ShaX86> sha(new ShaX86(alg));
  sha->Init();
  return sha;
}

ShaX86::~ShaX86() {
  explicit_bzero(h_, sizeof(h_));
  explicit_bzero(buffer_, sizeof(buffer_));
}

void ShaX86::Init() {
  if (alg_ == ACCELCRYPT_ALG_SHA1) {
    memcpy(h_, kSha1Init, sizeof(kSha1Init));
  } else if (alg_ == ACCELCRYPT_ALG_SHA224) {
    memcpy(h_, kSha224Init, sizeof(kSha224Init));
  } else {
    memcpy(h_, kSha256Init, sizeof(kSha256Init));
  }
  buffer_len_ = 0;
  total_len_ = 0;
  finished_ = false;
}

std::unique_ptr<ShaX86> ShaX86::Clone() const {
  return std::unique_ptr<ShaX86>(new ShaX86(*this));
}

void ShaX86::Compress(const uint8_t* data, size_t num_blocks) {
  if (alg_ == ACCELCRYPT_ALG_SHA1) {
    internal::Sha1BlocksShani(h_, data, num_blocks);
  } else {
    internal::Sha256BlocksShani(h_, data, num_blocks);
  }
}

absl::Status ShaX86::Update(const uint8_t* data, size_t len) {
  if (finished_) {
    return absl::FailedPreconditionError(
        absl::StrFormat("x86: %s update after final", Name(alg_)));
  }
  if (len == 0) return absl::OkStatus();
  if (data == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrFormat("x86: %s update with NULL data", Name(alg_)));
  }
  total_len_ += len;
  if (buffer_len_ > 0) {
    const size_t take = len < 64 - buffer_len_ ? len : 64 - buffer_len_;
    memcpy(buffer_ + buffer_len_, data, take);
    buffer_len_ += take;
    data += take;
    len -= take;
    if (buffer_len_ < 64) return absl::OkStatus();
    Compress(buffer_, 1);
    buffer_len_ = 0;
  }
  if (len >= 64) {
    Compress(data, len / 64);
    data += len & ~size_t{63};
    len &= 63;
  }
  if (len > 0) {
    memcpy(buffer_, data, len);
    buffer_len_ = len;
  }
  return absl::OkStatus();
}

absl::Status ShaX86::Final(uint8_t* out, size_t out_len) {
  const size_t size = DigestSize(alg_);
  if (finished_) {
    return absl::FailedPreconditionError(
        absl::StrFormat("x86: %s final called twice without init", Name(alg_)));
  }
  if (out == nullptr || out_len < size) {
    return absl::OutOfRangeError(
        absl::StrFormat("x86: %s final needs %d output bytes, got %d",
                        Name(alg_), size, out_len));
  }
  // Padding: 0x80, zeros, then the message length in bits, big-endian.
  const uint64_t bits = total_len_ * 8;
  buffer_[buffer_len_++] = 0x80;
  if (buffer_len_ > 56) {
    memset(buffer_ + buffer_len_, 0, 64 - buffer_len_);
    Compress(buffer_, 1);
    buffer_len_ = 0;
  }
  memset(buffer_ + buffer_len_, 0, 56 - buffer_len_);
  for (int i = 0; i < 8; ++i) {
    buffer_[56 + i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
  }
  Compress(buffer_, 1);
  for (size_t i = 0; i < size / 4; ++i) {
    out[4 * i] = static_cast<uint8_t>(h_[i] >> 24);
    out[4 * i + 1] = static_cast<uint8_t>(h_[i] >> 16);
    out[4 * i + 2] = static_cast<uint8_t>(h_[i] >> 8);
    out[4 * i + 3] = static_cast<uint8_t>(h_[i]);
  }
  explicit_bzero(buffer_, sizeof(buffer_));
  buffer_len_ = 0;
  finished_ = true;
  return absl::OkStatus();
}

}  // namespace accelcrypt::x86
