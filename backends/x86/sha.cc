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

void StateInit(ShaState* s, accelcrypt_alg alg) {
  if (alg == ACCELCRYPT_ALG_SHA1) {
    memcpy(s->h, kSha1Init, sizeof(kSha1Init));
  } else if (alg == ACCELCRYPT_ALG_SHA224) {
    memcpy(s->h, kSha224Init, sizeof(kSha224Init));
  } else {
    memcpy(s->h, kSha256Init, sizeof(kSha256Init));
  }
  s->buffer_len = 0;
  s->total_len = 0;
}

template <bool kSha1>
void Compress(ShaState* s, const uint8_t* data, size_t num_blocks) {
  if (kSha1) {
    internal::Sha1BlocksShani(s->h, data, num_blocks);
  } else {
    internal::Sha256BlocksShani(s->h, data, num_blocks);
  }
}

// StateUpdate hashes len bytes (data != NULL when len > 0).
template <bool kSha1>
void StateUpdate(ShaState* s, const uint8_t* data, size_t len) {
  if (len == 0) return;
  s->total_len += len;
  if (s->buffer_len > 0) {
    const size_t take = len < 64 - s->buffer_len ? len : 64 - s->buffer_len;
    memcpy(s->buffer + s->buffer_len, data, take);
    s->buffer_len += static_cast<uint32_t>(take);
    data += take;
    len -= take;
    if (s->buffer_len < 64) return;
    Compress<kSha1>(s, s->buffer, 1);
    s->buffer_len = 0;
  }
  if (len >= 64) {
    Compress<kSha1>(s, data, len / 64);
    data += len & ~size_t{63};
    len &= 63;
  }
  if (len > 0) {
    memcpy(s->buffer, data, len);
    s->buffer_len = static_cast<uint32_t>(len);
  }
}

// StateFinal pads (0x80, zeros, the length in bits, big-endian), writes
// `size` digest bytes and wipes the message block.
template <bool kSha1>
void StateFinal(ShaState* s, uint8_t* out, size_t size) {
  const uint64_t bits = s->total_len * 8;
  s->buffer[s->buffer_len++] = 0x80;
  if (s->buffer_len > 56) {
    memset(s->buffer + s->buffer_len, 0, 64 - s->buffer_len);
    Compress<kSha1>(s, s->buffer, 1);
    s->buffer_len = 0;
  }
  memset(s->buffer + s->buffer_len, 0, 56 - s->buffer_len);
  for (int i = 0; i < 8; ++i) {
    s->buffer[56 + i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
  }
  Compress<kSha1>(s, s->buffer, 1);
  for (size_t i = 0; i < size / 4; ++i) {
    out[4 * i] = static_cast<uint8_t>(s->h[i] >> 24);
    out[4 * i + 1] = static_cast<uint8_t>(s->h[i] >> 16);
    out[4 * i + 2] = static_cast<uint8_t>(s->h[i] >> 8);
    out[4 * i + 3] = static_cast<uint8_t>(s->h[i]);
  }
  explicit_bzero(s->buffer, sizeof(s->buffer));
  s->buffer_len = 0;
}

// Direct is the accelcrypt_digest_direct table of one algorithm.
template <accelcrypt_alg kAlg>
struct Direct {
  static constexpr bool kSha1 = kAlg == ACCELCRYPT_ALG_SHA1;
  static constexpr size_t kSize = ShaX86::DigestSize(kAlg);
  static void Init(void* state) {
    StateInit(static_cast<ShaState*>(state), kAlg);
  }
  static void Update(void* state, const uint8_t* data, size_t len) {
    StateUpdate<kSha1>(static_cast<ShaState*>(state), data, len);
  }
  static void Final(void* state, uint8_t* out) {
    StateFinal<kSha1>(static_cast<ShaState*>(state), out, kSize);
  }
  static constexpr accelcrypt_digest_direct kTable = {
      sizeof(accelcrypt_digest_direct), sizeof(ShaState), Init, Update, Final};
};

}  // namespace

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

ShaX86::~ShaX86() { explicit_bzero(&state_, sizeof(state_)); }

void ShaX86::Init() {
  StateInit(&state_, alg_);
  finished_ = false;
}

std::unique_ptr<ShaX86> ShaX86::Clone() const {
  return std::make_unique<ShaX86>(*this);
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
  if (alg_ == ACCELCRYPT_ALG_SHA1) {
    StateUpdate<true>(&state_, data, len);
  } else {
    StateUpdate<false>(&state_, data, len);
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
  if (alg_ == ACCELCRYPT_ALG_SHA1) {
    StateFinal<true>(&state_, out, size);
  } else {
    StateFinal<false>(&state_, out, size);
  }
  finished_ = true;
  return absl::OkStatus();
}

const accelcrypt_digest_direct* ShaDirect(accelcrypt_alg alg) {
  switch (alg) {
    case ACCELCRYPT_ALG_SHA1:
      return &Direct<ACCELCRYPT_ALG_SHA1>::kTable;
    case ACCELCRYPT_ALG_SHA224:
      return &Direct<ACCELCRYPT_ALG_SHA224>::kTable;
    case ACCELCRYPT_ALG_SHA256:
      return &Direct<ACCELCRYPT_ALG_SHA256>::kTable;
  }
  return nullptr;
}

}  // namespace accelcrypt::x86
