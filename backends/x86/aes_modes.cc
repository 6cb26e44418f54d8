// SPDX-License-Identifier: Apache-2.0
#include "backends/x86/aes_modes.h"

#include <string.h>

#include <algorithm>
#include <memory>

#include "absl/strings/str_format.h"
#include "accelcrypt/kit/abi_error.h"
#include "accelcrypt/kit/status.h"

namespace accelcrypt::x86 {
namespace {

// SP 800-38D §5.2.1.1: at most 2^39 - 256 bits of plaintext per invocation.
constexpr uint64_t kGcmMaxData = (uint64_t{1} << 36) - 32;

// GhashPowersFor is how many powers of H a GCM path reads for a call of
// `blocks` blocks (bulk data, AAD or IV): the table is extended to it on
// first need, so a short message never pays for the powers a long one uses.
int GhashPowersFor(GcmImpl impl, size_t blocks) {
  size_t most = internal::kGhashXmmPowers;
  size_t want = blocks;
  switch (impl) {
    case GcmImpl::kVaes512:
      most = internal::kGhashPowers;
      break;
    case GcmImpl::kVaes256:
      // An odd count of fewer than 16 blocks is padded in front with a zero
      // block times H^(n+1); from 32 blocks on, GCM reduces once per 32.
      most = blocks >= 32 ? internal::kGhashPowers : 16;
      want = blocks + 1;
      break;
    default:
      break;
  }
  return static_cast<int>(std::min(want, most));
}

uint64_t LoadBe64(const uint8_t* p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return __builtin_bswap64(v);
}

void StoreBe64(uint8_t* p, uint64_t v) {
  v = __builtin_bswap64(v);
  memcpy(p, &v, 8);
}

// Adds n to a 128-bit big-endian counter, modulo 2^128.
void AddCounter128(uint8_t ctr[16], uint64_t n) {
  uint64_t lo = LoadBe64(ctr + 8);
  uint64_t hi = LoadBe64(ctr);
  const uint64_t sum = lo + n;
  if (sum < lo) ++hi;
  StoreBe64(ctr, hi);
  StoreBe64(ctr + 8, sum);
}

void SubOneCounter128(uint8_t ctr[16]) {
  uint64_t lo = LoadBe64(ctr + 8);
  uint64_t hi = LoadBe64(ctr);
  if (lo == 0) --hi;
  StoreBe64(ctr, hi);
  StoreBe64(ctr + 8, lo - 1);
}

// SP 800-38D inc32: the last 32 bits, modulo 2^32.
void Inc32(uint8_t ctr[16]) {
  for (int i = 15; i >= 12; --i) {
    if (++ctr[i] != 0) break;
  }
}

void Xor(uint8_t* out, const uint8_t* a, const uint8_t* b, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = a[i] ^ b[i];
}

}  // namespace

absl::StatusOr<std::unique_ptr<AesX86>> AesX86::Create(
    accelcrypt_alg alg, const Implementations& impl) {
  const uint32_t mode = ACCELCRYPT_CIPHER_MODE(alg);
  const uint32_t key_bytes = ACCELCRYPT_CIPHER_KEY_BYTES(alg);
  if (ACCELCRYPT_ALG_FAMILY(alg) != ACCELCRYPT_FAMILY_CIPHER ||
      (key_bytes != 16 && key_bytes != 24 && key_bytes != 32) || mode < 1 ||
      mode > ACCELCRYPT_MODE_GCM) {
    return absl::UnimplementedError(
        absl::StrFormat("x86: cipher algorithm 0x%08x is not offered", alg));
  }
  if (impl.aes_serial == AesImpl::kNone ||
      (mode == ACCELCRYPT_MODE_GCM && impl.gcm == GcmImpl::kNone)) {
    return absl::UnimplementedError(absl::StrFormat(
        "x86: AES-%d-%s needs %s, which this CPU lacks or was disabled",
        key_bytes * 8, kit::ModeName(mode),
        mode == ACCELCRYPT_MODE_GCM ? "AES-NI and PCLMULQDQ" : "AES-NI"));
  }
  return std::unique_ptr<AesX86>(new AesX86(alg, impl));
}

AesX86::AesX86(accelcrypt_alg alg, const Implementations& impl)
    : mode_(ACCELCRYPT_CIPHER_MODE(alg)),
      key_len_(ACCELCRYPT_CIPHER_KEY_BYTES(alg)),
      parallel_(impl.aes_parallel),
      gcm_(impl.gcm) {
  memset(&keys_, 0, sizeof(keys_));
  memset(&htable_, 0, sizeof(htable_));
}

AesX86::~AesX86() {
  explicit_bzero(&keys_, sizeof(keys_));
  explicit_bzero(&htable_, sizeof(htable_));
  explicit_bzero(iv_, sizeof(iv_));
  explicit_bzero(ks_, sizeof(ks_));
  explicit_bzero(j0_, sizeof(j0_));
  explicit_bzero(xi_, sizeof(xi_));
  explicit_bzero(partial_, sizeof(partial_));
  explicit_bzero(tag_, sizeof(tag_));
  explicit_bzero(raw_key_, sizeof(raw_key_));
}

bool AesX86::SameKey(const uint8_t* key, size_t key_len) const {
  if (phase_ == Phase::kNoKey || key_len != key_len_) return false;
  uint8_t diff = 0;
  for (size_t i = 0; i < key_len; ++i) {
    diff = static_cast<uint8_t>(diff | (key[i] ^ raw_key_[i]));
  }
  __asm__ volatile("" : "+r"(diff));
  return diff == 0;
}

std::unique_ptr<AesX86> AesX86::Clone() const {
  return std::make_unique<AesX86>(*this);
}

std::string_view AesX86::implementation() const {
  if (mode_ == ACCELCRYPT_MODE_GCM) return GcmImplName(gcm_);
  const bool parallel = mode_ == ACCELCRYPT_MODE_ECB ||
                        mode_ == ACCELCRYPT_MODE_CTR ||
                        (mode_ == ACCELCRYPT_MODE_CBC && !encrypt_);
  return parallel ? AesImplName(parallel_) : AesImplName(AesImpl::kAesni);
}

absl::Status AesX86::Init(bool encrypt, const uint8_t* key, size_t key_len,
                          const uint8_t* iv, size_t iv_len) {
  const int bits = static_cast<int>(key_len_ * 8);
  const char* mode = kit::ModeName(mode_);
  if (key == nullptr) {
    if (key_len != 0 || phase_ == Phase::kNoKey) {
      return absl::InvalidArgumentError(
          absl::StrFormat("x86: AES-%d-%s init without a key", bits, mode));
    }
    if (encrypt != encrypt_) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "x86: AES-%d-%s re-init cannot change direction without a key", bits,
          mode));
    }
  } else if (key_len != key_len_) {
    return absl::InvalidArgumentError(
        absl::StrFormat("x86: AES-%d-%s needs a %d-byte key, got %d", bits,
                        mode, key_len_, key_len));
  }
  size_t want_iv = 16;
  if (mode_ == ACCELCRYPT_MODE_ECB) want_iv = 0;
  if (mode_ == ACCELCRYPT_MODE_GCM) {
    if (iv == nullptr || iv_len < 1 || iv_len > 1024) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "x86: AES-%d-GCM needs an IV of 1..1024 bytes, got %d", bits,
          iv_len));
    }
  } else if (iv_len != want_iv || (want_iv > 0 && iv == nullptr)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("x86: AES-%d-%s needs a %d-byte IV, got %d", bits, mode,
                        want_iv, iv_len));
  }

  // GCM uses the encryption schedule in both directions, so the same key
  // with a new IV needs neither a new schedule nor new powers of H.
  if (key != nullptr && mode_ == ACCELCRYPT_MODE_GCM && SameKey(key, key_len)) {
    key = nullptr;
  }
  if (key != nullptr) {
    // Only ECB and CBC decryption run the inverse cipher.
    const bool with_dec =
        mode_ == ACCELCRYPT_MODE_ECB || mode_ == ACCELCRYPT_MODE_CBC;
    internal::AesExpandKeyAesni(key, key_len, &keys_, with_dec);
  }
  if (key != nullptr && mode_ == ACCELCRYPT_MODE_GCM) {
    memcpy(raw_key_, key, key_len);
  }
  encrypt_ = encrypt;
  memset(iv_, 0, sizeof(iv_));
  memset(ks_, 0, sizeof(ks_));
  num_ = 0;
  if (mode_ != ACCELCRYPT_MODE_GCM) {
    if (want_iv > 0) memcpy(iv_, iv, 16);
    phase_ = Phase::kReady;
    return absl::OkStatus();
  }

  // SP 800-38D §7.1: H = E(K, 0^128); J0 = IV || 0^31 || 1 for 96-bit IVs,
  // else GHASH(IV || 0^s || [0]_64 || [len(IV)]_64).
  if (key != nullptr) {
    // The table of powers of H depends on the key only: a re-init with the
    // key kept (a new IV per message) reuses it. A new key computes H
    // alone; EnsurePowers adds the powers a message reads.
    alignas(16) uint8_t h[16] = {};
    EncryptBlock(h, h);
    internal::GhashInitPclmul(h, &htable_, 1);
    powers_ready_ = 1;
    explicit_bzero(h, sizeof(h));
  }
  if (iv_len == 12) {
    memcpy(j0_, iv, 12);
    j0_[12] = j0_[13] = j0_[14] = 0;
    j0_[15] = 1;
  } else {
    memset(j0_, 0, sizeof(j0_));
    const size_t full = iv_len / 16;
    Ghash(j0_, iv, full);
    alignas(16) uint8_t block[16] = {};
    if (iv_len % 16 != 0) {
      memcpy(block, iv + 16 * full, iv_len % 16);
      Ghash(j0_, block, 1);
    }
    memset(block, 0, sizeof(block));
    StoreBe64(block + 8, static_cast<uint64_t>(iv_len) * 8);
    Ghash(j0_, block, 1);
  }
  memcpy(iv_, j0_, 16);
  Inc32(iv_);
  memset(xi_, 0, sizeof(xi_));
  memset(partial_, 0, sizeof(partial_));
  partial_len_ = 0;
  aad_len_ = 0;
  data_len_ = 0;
  memset(tag_, 0, sizeof(tag_));
  expected_tag_len_ = 0;
  phase_ = Phase::kReady;
  return absl::OkStatus();
}

void AesX86::EncryptBlock(const uint8_t in[16], uint8_t out[16]) const {
  internal::AesEncryptBlockAesni(&keys_, in, out);
}

void AesX86::EnsurePowers(size_t num_blocks) const {
  const int want = GhashPowersFor(gcm_, num_blocks);
  if (want > powers_ready_) {
    internal::GhashExtendPclmul(&htable_, powers_ready_, want);
    powers_ready_ = want;
  }
}

void AesX86::Ghash(uint8_t xi[16], const uint8_t* data,
                   size_t num_blocks) const {
  if (num_blocks == 0) return;
  EnsurePowers(num_blocks);
  // 1..3 blocks (AAD, IV, the tag's length block): the XMM code, with no
  // padding or masking of a wide register (the same call as the last
  // branch, on purpose).
  if (num_blocks < 4) {  // NOLINT(bugprone-branch-clone)
    internal::GhashPclmul(&htable_, xi, data, num_blocks);
  } else if (gcm_ == GcmImpl::kVaes512) {
    internal::GhashVaes512(&htable_, xi, data, num_blocks);
  } else if (gcm_ == GcmImpl::kVaes256) {
    internal::GhashVaes256(&htable_, xi, data, num_blocks);
  } else {
    internal::GhashPclmul(&htable_, xi, data, num_blocks);
  }
}

void AesX86::CtrBlocks(const uint8_t* in, uint8_t* out, size_t num_blocks) {
  while (num_blocks > 0) {
    // The leaves add to the low 64 bits only: split where they would wrap.
    const uint64_t lo = LoadBe64(iv_ + 8);
    uint64_t room = lo == 0 ? UINT64_MAX : (0 - lo);
    const size_t n = static_cast<size_t>(std::min<uint64_t>(room, num_blocks));
    switch (parallel_) {
      case AesImpl::kVaes512:
        internal::AesCtr128Vaes512(&keys_, iv_, in, out, n);
        break;
      case AesImpl::kVaes256:
        internal::AesCtr128Vaes256(&keys_, iv_, in, out, n);
        break;
      default:
        internal::AesCtr128Aesni(&keys_, iv_, in, out, n);
        break;
    }
    in += 16 * n;
    out += 16 * n;
    num_blocks -= n;
  }
}

absl::Status AesX86::Update(const uint8_t* in, size_t in_len, uint8_t* out) {
  const int bits = static_cast<int>(key_len_ * 8);
  if (phase_ == Phase::kNoKey) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "x86: AES-%d-%s update before init", bits, kit::ModeName(mode_)));
  }
  if (in_len == 0) return absl::OkStatus();
  if (in == nullptr || out == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrFormat("x86: AES-%d-%s update with a NULL buffer", bits,
                        kit::ModeName(mode_)));
  }
  if (mode_ == ACCELCRYPT_MODE_GCM) return UpdateGcm(in, in_len, out);

  if ((mode_ == ACCELCRYPT_MODE_ECB || mode_ == ACCELCRYPT_MODE_CBC) &&
      in_len % 16 != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "x86: AES-%d-%s takes whole 16-byte blocks, got %d bytes", bits,
        kit::ModeName(mode_), in_len));
  }
  const size_t blocks = in_len / 16;
  switch (mode_) {
    case ACCELCRYPT_MODE_ECB:
      // As CBC decryption below: short inputs run the XMM code.
      if (parallel_ == AesImpl::kVaes512 && blocks >= 8) {
        (encrypt_ ? internal::AesEcbEncryptVaes512
                  : internal::AesEcbDecryptVaes512)(&keys_, in, out, blocks);
      } else if (parallel_ == AesImpl::kVaes256 && blocks >= 2) {
        (encrypt_ ? internal::AesEcbEncryptVaes256
                  : internal::AesEcbDecryptVaes256)(&keys_, in, out, blocks);
      } else {
        (encrypt_ ? internal::AesEcbEncryptAesni
                  : internal::AesEcbDecryptAesni)(&keys_, in, out, blocks);
      }
      return absl::OkStatus();
    case ACCELCRYPT_MODE_CBC:
      // Short inputs run the XMM code (ECB above too): a 16-byte decryption
      // through the ZMM loop (eleven broadcast round keys, masked load and
      // store) took 10.3-10.7 ns against 8.3-8.5 ns, and 4..7 blocks
      // decrypted in place (as `openssl speed` does) 18.4 ns against 13.9
      // (bench_x86 and accelcrypt calibrate, AMD EPYC;
      // docs/performance-history.md, 2026-12-05).
      if (encrypt_) {
        internal::AesCbcEncryptAesni(&keys_, iv_, in, out, blocks);
      } else if (parallel_ == AesImpl::kVaes512 && blocks >= 8) {
        internal::AesCbcDecryptVaes512(&keys_, iv_, in, out, blocks);
      } else if (parallel_ == AesImpl::kVaes256 && blocks >= 2) {
        internal::AesCbcDecryptVaes256(&keys_, iv_, in, out, blocks);
      } else {
        internal::AesCbcDecryptAesni(&keys_, iv_, in, out, blocks);
      }
      return absl::OkStatus();
    default:
      break;
  }

  // CFB128, OFB, CTR: finish the current block byte by byte, then whole
  // blocks, then start a new block. The register conventions match
  // OpenSSL's CRYPTO_{cfb128,ofb128,ctr128}_encrypt, so get_state/set_state
  // interoperate with the software backend.
  size_t len = in_len;
  while (num_ != 0 && len > 0) {
    const uint8_t c = *in++;
    switch (mode_) {
      case ACCELCRYPT_MODE_CFB128:
        if (encrypt_) {
          iv_[num_] ^= c;
          *out++ = iv_[num_];
        } else {
          *out++ = iv_[num_] ^ c;
          iv_[num_] = c;
        }
        break;
      case ACCELCRYPT_MODE_OFB:
        *out++ = iv_[num_] ^ c;
        break;
      default:
        *out++ = ks_[num_] ^ c;
        break;
    }
    num_ = (num_ + 1) & 15;
    --len;
  }
  const size_t full = len / 16;
  if (full > 0) {
    switch (mode_) {
      case ACCELCRYPT_MODE_CFB128:
        (encrypt_ ? internal::AesCfbEncryptAesni
                  : internal::AesCfbDecryptAesni)(&keys_, iv_, in, out, full);
        break;
      case ACCELCRYPT_MODE_OFB:
        internal::AesOfbAesni(&keys_, iv_, in, out, full);
        break;
      default:
        CtrBlocks(in, out, full);
        break;
    }
    in += 16 * full;
    out += 16 * full;
    len -= 16 * full;
  }
  if (len > 0) {
    switch (mode_) {
      case ACCELCRYPT_MODE_CFB128:
        EncryptBlock(iv_, iv_);
        for (size_t i = 0; i < len; ++i) {
          const uint8_t c = in[i];
          if (encrypt_) {
            iv_[i] ^= c;
            out[i] = iv_[i];
          } else {
            out[i] = iv_[i] ^ c;
            iv_[i] = c;
          }
        }
        break;
      case ACCELCRYPT_MODE_OFB:
        EncryptBlock(iv_, iv_);
        Xor(out, in, iv_, len);
        break;
      default:
        EncryptBlock(iv_, ks_);
        AddCounter128(iv_, 1);
        Xor(out, in, ks_, len);
        break;
    }
    num_ = static_cast<uint32_t>(len);
  }
  return absl::OkStatus();
}

absl::Status AesX86::Aad(const uint8_t* aad, size_t aad_len) {
  const int bits = static_cast<int>(key_len_ * 8);
  if (mode_ != ACCELCRYPT_MODE_GCM) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "x86: AES-%d-%s takes no AAD", bits, kit::ModeName(mode_)));
  }
  if (phase_ != Phase::kReady && phase_ != Phase::kAad) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "x86: AES-%d-GCM AAD must come after init and before any data", bits));
  }
  if (aad_len == 0) return absl::OkStatus();
  if (aad == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrFormat("x86: AES-%d-GCM AAD is NULL", bits));
  }
  phase_ = Phase::kAad;
  aad_len_ += aad_len;
  if (partial_len_ > 0) {
    const size_t take = std::min(aad_len, 16 - partial_len_);
    memcpy(partial_ + partial_len_, aad, take);
    partial_len_ += take;
    aad += take;
    aad_len -= take;
    if (partial_len_ < 16) return absl::OkStatus();
    Ghash(xi_, partial_, 1);
    partial_len_ = 0;
  }
  Ghash(xi_, aad, aad_len / 16);
  aad += 16 * (aad_len / 16);
  aad_len %= 16;
  if (aad_len > 0) {
    memset(partial_, 0, sizeof(partial_));
    memcpy(partial_, aad, aad_len);
    partial_len_ = aad_len;
  }
  return absl::OkStatus();
}

void AesX86::GcmBulk(const uint8_t* in, uint8_t* out, size_t num_blocks) {
  EnsurePowers(num_blocks);
  // Fewer than 4 blocks (one ZMM register): the XMM leaf's single-block
  // chains cost less than broadcasting round keys into ZMM and masking a
  // tail (a 16-byte update ran at 0.89x of the default provider through
  // the ZMM leaf).
  if (gcm_ == GcmImpl::kVaes512 && num_blocks >= 4) {
    (encrypt_ ? internal::AesGcmEncryptVaes512
              : internal::AesGcmDecryptVaes512)(&keys_, &htable_, iv_, xi_, in,
                                                out, num_blocks);
    return;
  }
  // Fewer than 16 blocks (one iteration of the YMM loop): the XMM path
  // below costs less than broadcasting the round keys and padding a tail.
  if (gcm_ == GcmImpl::kVaes256 && num_blocks >= 16) {
    (encrypt_ ? internal::AesGcmEncryptVaes256
              : internal::AesGcmDecryptVaes256)(&keys_, &htable_, iv_, xi_, in,
                                                out, num_blocks);
    return;
  }
  (encrypt_ ? internal::AesGcmEncryptAesni : internal::AesGcmDecryptAesni)(
      &keys_, &htable_, iv_, xi_, in, out, num_blocks);
}

absl::Status AesX86::UpdateGcm(const uint8_t* in, size_t in_len, uint8_t* out) {
  const int bits = static_cast<int>(key_len_ * 8);
  if (phase_ == Phase::kDone) {
    return absl::FailedPreconditionError(
        absl::StrFormat("x86: AES-%d-GCM update after final", bits));
  }
  if (in_len > kGcmMaxData - data_len_) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "x86: AES-%d-GCM message exceeds 2^39-256 bits (SP 800-38D)", bits));
  }
  if (phase_ != Phase::kData) {
    if (partial_len_ > 0) {  // pending AAD, zero-padded
      memset(partial_ + partial_len_, 0, 16 - partial_len_);
      Ghash(xi_, partial_, 1);
      partial_len_ = 0;
    }
    phase_ = Phase::kData;
  }
  data_len_ += in_len;
  size_t len = in_len;
  while (num_ != 0 && len > 0) {
    const uint8_t c = *in++;
    const uint8_t o = ks_[num_] ^ c;
    *out++ = o;
    partial_[num_] = encrypt_ ? o : c;
    num_ = (num_ + 1) & 15;
    --len;
    if (num_ == 0) Ghash(xi_, partial_, 1);
  }
  const size_t full = len / 16;
  if (full > 0) {
    GcmBulk(in, out, full);
    in += 16 * full;
    out += 16 * full;
    len -= 16 * full;
  }
  if (len > 0) {
    EncryptBlock(iv_, ks_);
    Inc32(iv_);
    memset(partial_, 0, sizeof(partial_));
    for (size_t i = 0; i < len; ++i) {
      const uint8_t c = in[i];
      out[i] = ks_[i] ^ c;
      partial_[i] = encrypt_ ? out[i] : c;
    }
    num_ = static_cast<uint32_t>(len);
  }
  return absl::OkStatus();
}

void AesX86::ComputeTag(uint8_t tag[16]) const {
  // Works on copies so that a failed final leaves the context unchanged.
  alignas(16) uint8_t xi[16];
  memcpy(xi, xi_, 16);
  alignas(16) uint8_t block[16] = {};
  const size_t pending = phase_ == Phase::kData ? num_ : partial_len_;
  if (pending > 0) {
    memcpy(block, partial_, pending);
    Ghash(xi, block, 1);
  }
  StoreBe64(block, aad_len_ * 8);
  StoreBe64(block + 8, data_len_ * 8);
  Ghash(xi, block, 1);
  EncryptBlock(j0_, block);
  Xor(tag, xi, block, 16);
  explicit_bzero(xi, sizeof(xi));
  explicit_bzero(block, sizeof(block));
}

absl::Status AesX86::Final() {
  const int bits = static_cast<int>(key_len_ * 8);
  if (phase_ == Phase::kNoKey) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "x86: AES-%d-%s final before init", bits, kit::ModeName(mode_)));
  }
  if (mode_ != ACCELCRYPT_MODE_GCM) return absl::OkStatus();
  if (phase_ == Phase::kDone) {
    return absl::FailedPreconditionError(
        absl::StrFormat("x86: AES-%d-GCM final called twice", bits));
  }
  if (!encrypt_ && expected_tag_len_ == 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "x86: AES-%d-GCM decryption needs set_tag before final", bits));
  }
  alignas(16) uint8_t tag[16];
  ComputeTag(tag);
  if (!encrypt_) {
    // Constant time: every byte is compared whatever the earlier ones were.
    uint8_t diff = 0;
    for (size_t i = 0; i < expected_tag_len_; ++i) {
      diff = static_cast<uint8_t>(diff | (tag[i] ^ tag_[i]));
    }
    // Keep the compiler from turning the loop into an early-exit compare.
    __asm__ volatile("" : "+r"(diff));
    explicit_bzero(tag, sizeof(tag));
    if (diff != 0) {
      return kit::AuthFailedError(
          absl::StrFormat("x86: AES-%d-GCM tag mismatch", bits));
    }
  } else {
    memcpy(tag_, tag, 16);
    explicit_bzero(tag, sizeof(tag));
  }
  phase_ = Phase::kDone;
  return absl::OkStatus();
}

absl::Status AesX86::GetTag(uint8_t* tag, size_t tag_len) const {
  const int bits = static_cast<int>(key_len_ * 8);
  if (mode_ != ACCELCRYPT_MODE_GCM) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "x86: AES-%d-%s has no tag", bits, kit::ModeName(mode_)));
  }
  if (tag == nullptr || tag_len < 4 || tag_len > 16) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "x86: AES-%d-GCM tag length must be 4..16, got %d", bits, tag_len));
  }
  if (!encrypt_ || phase_ != Phase::kDone) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "x86: AES-%d-GCM tag is available after final when encrypting", bits));
  }
  memcpy(tag, tag_, tag_len);
  return absl::OkStatus();
}

absl::Status AesX86::SetTag(const uint8_t* tag, size_t tag_len) {
  const int bits = static_cast<int>(key_len_ * 8);
  if (mode_ != ACCELCRYPT_MODE_GCM) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "x86: AES-%d-%s has no tag", bits, kit::ModeName(mode_)));
  }
  if (tag == nullptr || tag_len < 4 || tag_len > 16) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "x86: AES-%d-GCM tag length must be 4..16, got %d", bits, tag_len));
  }
  if (encrypt_ || phase_ == Phase::kNoKey || phase_ == Phase::kDone) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "x86: AES-%d-GCM set_tag is for decryption, before final", bits));
  }
  memset(tag_, 0, sizeof(tag_));
  memcpy(tag_, tag, tag_len);
  expected_tag_len_ = tag_len;
  return absl::OkStatus();
}

absl::Status AesX86::GetState(accelcrypt_cipher_state* out) const {
  const int bits = static_cast<int>(key_len_ * 8);
  if (mode_ == ACCELCRYPT_MODE_GCM) {
    return absl::UnimplementedError(
        absl::StrFormat("x86: AES-%d-GCM state is not portable", bits));
  }
  if (phase_ == Phase::kNoKey) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "x86: AES-%d-%s get_state before init", bits, kit::ModeName(mode_)));
  }
  memcpy(out->iv, iv_, 16);
  out->num = num_;
  return absl::OkStatus();
}

absl::Status AesX86::SetState(const accelcrypt_cipher_state& state) {
  const int bits = static_cast<int>(key_len_ * 8);
  if (mode_ == ACCELCRYPT_MODE_GCM) {
    return absl::UnimplementedError(
        absl::StrFormat("x86: AES-%d-GCM state is not portable", bits));
  }
  if (phase_ == Phase::kNoKey) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "x86: AES-%d-%s set_state before init", bits, kit::ModeName(mode_)));
  }
  const bool blockwise =
      mode_ == ACCELCRYPT_MODE_ECB || mode_ == ACCELCRYPT_MODE_CBC;
  if (state.num > 15 || (blockwise && state.num != 0)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("x86: AES-%d-%s state position %d is out of range",
                        bits, kit::ModeName(mode_), state.num));
  }
  memcpy(iv_, state.iv, 16);
  num_ = state.num;
  if (mode_ == ACCELCRYPT_MODE_CTR && num_ != 0) {
    // The partial block's keystream belongs to the counter before `iv`.
    alignas(16) uint8_t prev[16];
    memcpy(prev, iv_, 16);
    SubOneCounter128(prev);
    EncryptBlock(prev, ks_);
  }
  return absl::OkStatus();
}

}  // namespace accelcrypt::x86
