// SPDX-License-Identifier: Apache-2.0
// AES mechanisms (PKCS#11 v2.40 current mechanisms, section 2.8 "AES" and
// 2.11/2.12 for CTR and GCM) over the core's routed Cipher, with the
// core's CipherStream for partial blocks and PKCS#7 padding (CBC_PAD).
#include <openssl/crypto.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/cipher_stream.h"
#include "core/core.h"
#include "core/status.h"
#include "pkcs11/common/ck_error.h"
#include "pkcs11/mech/internal/mech_internal.h"

namespace accelcrypt::p11::internal {
namespace {

constexpr size_t kBlock = 16;
// GCM decryption holds the whole message until C_DecryptFinal (so no
// unauthenticated plaintext is ever released); this bounds that buffer.
constexpr size_t kMaxGcmMessage = size_t{256} << 20;

// Rv turns a core status into one carrying `rv`, except for statuses that
// already say something more precise: a CK_RV payload, a device error
// (CKR_DEVICE_ERROR), a short buffer.
absl::Status Rv(const absl::Status& st, CK_RV rv) {
  if (st.ok() || IsDeviceError(st) ||
      st.code() == absl::StatusCode::kOutOfRange ||
      st.code() == absl::StatusCode::kInternal) {
    return st;
  }
  return CkError(rv, AsStd(st.message()));
}

absl::Status LenRange(bool encrypt, std::string_view what) {
  return CkError(encrypt ? CKR_DATA_LEN_RANGE : CKR_ENCRYPTED_DATA_LEN_RANGE,
                 what);
}

// AesBlockOp is CKM_AES_ECB, CKM_AES_CBC (whole blocks only: the total
// length must be a multiple of 16, PKCS#11 v2.40 2.8.4/2.8.5) and
// CKM_AES_CBC_PAD (PKCS#7 padding, 2.8.6).
class AesBlockOp final : public OperationBase {
 public:
  AesBlockOp(Core& core, std::unique_ptr<CipherStream> stream, bool encrypt,
             bool pad, CK_MECHANISM_TYPE mechanism, size_t key_len)
      : core_(core),
        stream_(std::move(stream)),
        encrypt_(encrypt),
        pad_(pad),
        mechanism_(mechanism),
        key_len_(key_len) {}

  // Restart re-keys the same routed cipher: same mechanism, direction and
  // key size (so the same routed algorithm), parameters checked as
  // NewAesOperation checks them.
  bool Restart(OpKind kind, const CK_MECHANISM& mechanism,
               const PreparedKey* key) override {
    if (key == nullptr || mechanism.mechanism != mechanism_ ||
        kind != (encrypt_ ? OpKind::kEncrypt : OpKind::kDecrypt)) {
      return false;
    }
    const auto* secret = dynamic_cast<const SecretKey*>(key);
    if (secret == nullptr || secret->key_type() != CKK_AES ||
        secret->value().size() != key_len_) {
      return false;
    }
    absl::Span<const uint8_t> iv;
    if (mechanism_ == CKM_AES_ECB) {
      if (mechanism.ulParameterLen != 0) return false;
    } else {
      if (mechanism.pParameter == nullptr ||
          mechanism.ulParameterLen != kBlock) {
        return false;
      }
      iv = absl::MakeConstSpan(
          static_cast<const uint8_t*>(mechanism.pParameter), kBlock);
    }
    if (!stream_->Init(encrypt_, secret->value(), iv).ok()) return false;
    total_ = 0;
    return true;
  }

  size_t OutputBound(Call call, size_t in_len) const override {
    switch (call) {
      case Call::kOneShot:
        return encrypt_ && pad_ ? (in_len / kBlock + 1) * kBlock : in_len;
      case Call::kUpdate:
        return stream_->MaxUpdateOutput(in_len);
      case Call::kFinal:
        return pad_ ? kBlock : 0;
    }
    return 0;
  }

  absl::StatusOr<size_t> OneShot(absl::Span<const uint8_t> in,
                                 absl::Span<uint8_t> out) override {
    ACCELCRYPT_RETURN_IF_ERROR(CheckTotal(in.size()));
    const size_t need = OutputBound(Call::kOneShot, in.size());
    if (out.size() < need && !encrypt_ && pad_) return OpenExact(in, out);
    if (out.size() < need) return TooSmall(out.size(), need);
    auto n = stream_->Update(in, out);
    if (!n.ok()) return Rv(n.status(), DataInvalid());
    auto m = stream_->Final(out.subspan(*n));
    if (!m.ok()) {
      // Nothing of a failed call is released (bad padding: the plaintext
      // decrypted so far is wiped from the caller's buffer).
      OPENSSL_cleanse(out.data(), *n);
      return Rv(m.status(), DataInvalid());
    }
    total_ += in.size();
    return *n + *m;
  }

  absl::StatusOr<size_t> Update(absl::Span<const uint8_t> in,
                                absl::Span<uint8_t> out) override {
    const size_t need = stream_->MaxUpdateOutput(in.size());
    if (out.size() < need) return TooSmall(out.size(), need);
    auto n = stream_->Update(in, out);
    if (!n.ok()) return Rv(n.status(), DataInvalid());
    total_ += in.size();
    return *n;
  }

  absl::StatusOr<size_t> Final(absl::Span<uint8_t> out) override {
    ACCELCRYPT_RETURN_IF_ERROR(CheckTotal(0));
    if (encrypt_ && pad_ && out.size() < kBlock) {
      return TooSmall(out.size(), kBlock);
    }
    // Decrypt with padding: the stream keeps the decrypted last block when
    // `out` is too small for the exact plaintext, so a retry is exact.
    auto m = stream_->Final(out);
    if (!m.ok()) {
      if (m.status().code() == absl::StatusCode::kOutOfRange) {
        return CkError(CKR_BUFFER_TOO_SMALL, AsStd(m.status().message()));
      }
      return Rv(m.status(), DataInvalid());
    }
    return *m;
  }

  bool hardware() const override {
    return IsHardwareBackend(core_, stream_->cipher().backend());
  }

 private:
  CK_RV DataInvalid() const {
    return encrypt_ ? CKR_DATA_INVALID : CKR_ENCRYPTED_DATA_INVALID;
  }
  // OpenExact is a CBC_PAD C_Decrypt into a buffer smaller than the
  // ciphertext: the plaintext may still fit (v2.40 section 5.2 wants
  // CKR_BUFFER_TOO_SMALL only when it does not). It decrypts on a copy of
  // the stream into a wiped scratch buffer; the operation changes only when
  // the plaintext is delivered.
  absl::StatusOr<size_t> OpenExact(absl::Span<const uint8_t> in,
                                   absl::Span<uint8_t> out) {
    auto copy = stream_->Clone();
    if (!copy.ok()) return TooSmall(out.size(), in.size());
    SecretBytes plain(in.size());
    auto n = (*copy)->Update(in, plain.mutable_span());
    if (!n.ok()) return Rv(n.status(), DataInvalid());
    auto m = (*copy)->Final(plain.mutable_span().subspan(*n));
    if (!m.ok()) return Rv(m.status(), DataInvalid());
    const size_t len = *n + *m;
    if (len > out.size()) return TooSmall(out.size(), len);
    std::copy(plain.data(), plain.data() + len, out.begin());
    stream_ = *std::move(copy);
    total_ += in.size();
    return len;
  }
  // CheckTotal checks the whole message length (what was fed so far plus
  // `more`) at the end of the message.
  absl::Status CheckTotal(size_t more) const {
    const size_t total = total_ + more;
    if (pad_ && encrypt_) return absl::OkStatus();
    if (total % kBlock != 0) {
      return LenRange(encrypt_,
                      "AES ECB/CBC need a multiple of 16 bytes in total");
    }
    if (pad_ && total == 0) {
      return LenRange(false, "CBC_PAD ciphertext cannot be empty");
    }
    return absl::OkStatus();
  }

  Core& core_;
  std::unique_ptr<CipherStream> stream_;
  const bool encrypt_, pad_;
  const CK_MECHANISM_TYPE mechanism_;
  const size_t key_len_;
  uint64_t total_ = 0;
};

// AesCtrOp is CKM_AES_CTR with CK_AES_CTR_PARAMS (v2.40 2.8.7 / 2.11), and
// with `unlimited` the other stream modes, CKM_AES_OFB and CKM_AES_CFB128
// (v2.40 2.10: as many output bytes as input bytes, any length). The
// core's CTR increments the whole 128-bit counter block (SP 800-38A
// B.1 with m = 128); for ulCounterBits = m < 128 that is the same
// keystream as long as the low m bits do not wrap, so a message needing
// more than 2^m - (initial counter field) blocks is refused with
// CKR_DATA_LEN_RANGE (encrypt) / CKR_ENCRYPTED_DATA_LEN_RANGE (decrypt)
// before anything is processed.
class AesCtrOp final : public OperationBase {
 public:
  AesCtrOp(Core& core, std::unique_ptr<CipherStream> stream, bool encrypt,
           unsigned __int128 max_blocks, bool unlimited)
      : core_(core),
        stream_(std::move(stream)),
        encrypt_(encrypt),
        max_blocks_(max_blocks),
        unlimited_(unlimited) {}

  size_t OutputBound(Call call, size_t in_len) const override {
    return call == Call::kFinal ? 0 : in_len;
  }
  absl::StatusOr<size_t> OneShot(absl::Span<const uint8_t> in,
                                 absl::Span<uint8_t> out) override {
    ACCELCRYPT_ASSIGN_OR_RETURN(size_t n, Update(in, out));
    ACCELCRYPT_RETURN_IF_ERROR(stream_->Final({}).status());
    return n;
  }
  absl::StatusOr<size_t> Update(absl::Span<const uint8_t> in,
                                absl::Span<uint8_t> out) override {
    if (out.size() < in.size()) return TooSmall(out.size(), in.size());
    if (!unlimited_) {
      const unsigned __int128 total =
          static_cast<unsigned __int128>(total_) + in.size();
      if ((total + kBlock - 1) / kBlock > max_blocks_) {
        return LenRange(encrypt_,
                        "AES-CTR: the message would wrap the counter field");
      }
    }
    auto n = stream_->Update(in, out);
    if (!n.ok()) return Rv(n.status(), CKR_FUNCTION_FAILED);
    total_ += in.size();
    return *n;
  }
  absl::StatusOr<size_t> Final(absl::Span<uint8_t>) override {
    auto m = stream_->Final({});
    if (!m.ok()) return Rv(m.status(), CKR_FUNCTION_FAILED);
    return size_t{0};
  }
  bool hardware() const override {
    return IsHardwareBackend(core_, stream_->cipher().backend());
  }

 private:
  Core& core_;
  std::unique_ptr<CipherStream> stream_;
  const bool encrypt_;
  const unsigned __int128 max_blocks_;
  const bool unlimited_;
  uint64_t total_ = 0;
};

// AesGcmOp is CKM_AES_GCM with CK_GCM_PARAMS (v2.40 2.12). Encryption
// streams and appends the tag at the end; decryption buffers the whole
// ciphertext||tag and releases plaintext only after the tag checked
// (C_DecryptUpdate returns no output), in a wiped scratch buffer until then.
class AesGcmOp final : public OperationBase {
 public:
  AesGcmOp(Core& core, std::unique_ptr<Cipher> cipher, bool encrypt,
           size_t tag_len)
      : core_(core),
        cipher_(std::move(cipher)),
        encrypt_(encrypt),
        tag_len_(tag_len) {}

  size_t OutputBound(Call call, size_t in_len) const override {
    if (encrypt_) {
      switch (call) {
        case Call::kOneShot:
          return in_len + tag_len_;
        case Call::kUpdate:
          return in_len;
        case Call::kFinal:
          return tag_len_;
      }
      return 0;
    }
    switch (call) {
      case Call::kOneShot:
        return in_len > tag_len_ ? in_len - tag_len_ : 0;
      case Call::kUpdate:
        return 0;
      case Call::kFinal:
        return buffer_.size() > tag_len_ ? buffer_.size() - tag_len_ : 0;
    }
    return 0;
  }

  absl::StatusOr<size_t> OneShot(absl::Span<const uint8_t> in,
                                 absl::Span<uint8_t> out) override {
    if (!encrypt_) return Open(in, out);
    const size_t need = in.size() + tag_len_;
    if (in.size() > kMaxGcmMessage) {
      return LenRange(true, "AES-GCM message too long");
    }
    if (out.size() < need) return TooSmall(out.size(), need);
    absl::Status st = cipher_->Update(in, out.first(in.size()));
    if (st.ok()) st = cipher_->Final();
    if (st.ok()) st = cipher_->GetTag(out.subspan(in.size(), tag_len_));
    if (!st.ok()) {
      OPENSSL_cleanse(out.data(), need);
      return Rv(st, CKR_FUNCTION_FAILED);
    }
    return need;
  }

  absl::StatusOr<size_t> Update(absl::Span<const uint8_t> in,
                                absl::Span<uint8_t> out) override {
    if (!encrypt_) {
      if (buffer_.size() + in.size() > kMaxGcmMessage + tag_len_) {
        return LenRange(false, "AES-GCM message too long");
      }
      buffer_.insert(buffer_.end(), in.begin(), in.end());
      return size_t{0};
    }
    if (out.size() < in.size()) return TooSmall(out.size(), in.size());
    if (total_ + in.size() > kMaxGcmMessage) {
      return LenRange(true, "AES-GCM message too long");
    }
    absl::Status st = cipher_->Update(in, out.first(in.size()));
    if (!st.ok()) return Rv(st, CKR_FUNCTION_FAILED);
    total_ += in.size();
    return in.size();
  }

  absl::StatusOr<size_t> Final(absl::Span<uint8_t> out) override {
    if (!encrypt_) return Open(buffer_, out);
    if (out.size() < tag_len_) return TooSmall(out.size(), tag_len_);
    absl::Status st = cipher_->Final();
    if (st.ok()) st = cipher_->GetTag(out.first(tag_len_));
    if (!st.ok()) return Rv(st, CKR_FUNCTION_FAILED);
    return tag_len_;
  }

  bool hardware() const override {
    return IsHardwareBackend(core_, cipher_->backend());
  }

 private:
  // Open decrypts ciphertext||tag in one go; plaintext reaches `out` only
  // when the tag matched.
  absl::StatusOr<size_t> Open(absl::Span<const uint8_t> in,
                              absl::Span<uint8_t> out) {
    if (in.size() < tag_len_) {
      return LenRange(false, "AES-GCM input shorter than the tag");
    }
    const size_t ct_len = in.size() - tag_len_;
    if (out.size() < ct_len) return TooSmall(out.size(), ct_len);
    SecretBytes plain(ct_len);
    absl::Status st = cipher_->Update(in.first(ct_len), plain.mutable_span());
    if (st.ok()) st = cipher_->SetTag(in.subspan(ct_len));
    if (st.ok()) st = cipher_->Final();
    if (!st.ok()) {
      if (GetStatusDetail(st) == StatusDetail::kAuthFailed) {
        return CkError(CKR_ENCRYPTED_DATA_INVALID,
                       "AES-GCM: tag does not match");
      }
      return Rv(st, CKR_ENCRYPTED_DATA_INVALID);
    }
    std::copy(plain.span().begin(), plain.span().end(), out.begin());
    return ct_len;
  }

  Core& core_;
  std::unique_ptr<Cipher> cipher_;
  const bool encrypt_;
  const size_t tag_len_;
  uint64_t total_ = 0;
  std::vector<uint8_t> buffer_;  // decrypt: ciphertext||tag so far
};

absl::Status ParamInvalid(std::string_view what) {
  return CkError(CKR_MECHANISM_PARAM_INVALID, what);
}

accelcrypt_alg AesAlg(uint32_t mode, size_t key_len) {
  return ACCELCRYPT_CIPHER_ALG(mode, static_cast<uint32_t>(key_len));
}

absl::StatusOr<std::unique_ptr<Cipher>> RoutedCipher(Core& core,
                                                     accelcrypt_alg alg) {
  if (!core.router().Supports(alg)) {
    // The mechanism is offered for other key sizes only.
    return CkError(CKR_KEY_SIZE_RANGE, "no backend offers this AES key size");
  }
  auto cipher = core.router().NewCipher(alg);
  if (!cipher.ok()) {
    if (IsDeviceError(cipher.status())) return cipher.status();
    return CkError(CKR_MECHANISM_INVALID, AsStd(cipher.status().message()));
  }
  return cipher;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Operation>> NewAesOperation(
    Core& core, OpKind kind, const CK_MECHANISM& mechanism,
    const SecretKey& key) {
  if (kind != OpKind::kEncrypt && kind != OpKind::kDecrypt) {
    return CkError(CKR_MECHANISM_INVALID,
                   "AES mechanisms only encrypt and decrypt");
  }
  const bool encrypt = kind == OpKind::kEncrypt;
  if (key.key_type() != CKK_AES) {
    return CkError(CKR_KEY_TYPE_INCONSISTENT, "AES mechanism needs an AES key");
  }
  const size_t key_len = key.value().size();
  if (key_len != 16 && key_len != 24 && key_len != 32) {
    return CkError(CKR_KEY_SIZE_RANGE, "AES keys are 16, 24 or 32 bytes");
  }
  const auto* param = static_cast<const uint8_t*>(mechanism.pParameter);
  const size_t param_len = mechanism.ulParameterLen;
  switch (mechanism.mechanism) {
    case CKM_AES_ECB:
    case CKM_AES_CBC:
    case CKM_AES_CBC_PAD: {
      const bool ecb = mechanism.mechanism == CKM_AES_ECB;
      absl::Span<const uint8_t> iv;
      if (ecb) {
        if (param_len != 0) return ParamInvalid("CKM_AES_ECB takes no IV");
      } else {
        // v2.40 2.8.5/2.8.6: the parameter is the 16-byte IV.
        if (param == nullptr || param_len != kBlock) {
          return ParamInvalid("AES-CBC needs a 16-byte IV");
        }
        iv = absl::MakeConstSpan(param, param_len);
      }
      ACCELCRYPT_ASSIGN_OR_RETURN(
          auto cipher, RoutedCipher(core, AesAlg(ecb ? ACCELCRYPT_MODE_ECB
                                                     : ACCELCRYPT_MODE_CBC,
                                                 key_len)));
      auto stream = std::make_unique<CipherStream>(std::move(cipher));
      const bool pad = mechanism.mechanism == CKM_AES_CBC_PAD;
      stream->set_padding(pad);
      absl::Status st = stream->Init(encrypt, key.value(), iv);
      if (!st.ok()) return Rv(st, CKR_MECHANISM_PARAM_INVALID);
      return std::unique_ptr<Operation>(new AesBlockOp(
          core, std::move(stream), encrypt, pad, mechanism.mechanism, key_len));
    }
    case CKM_AES_CTR: {
      if (param == nullptr || param_len != sizeof(CK_AES_CTR_PARAMS)) {
        return ParamInvalid("CKM_AES_CTR needs CK_AES_CTR_PARAMS");
      }
      CK_AES_CTR_PARAMS ctr;
      std::memcpy(&ctr, param, sizeof(ctr));
      // v2.40 2.11.1: 0 < ulCounterBits <= 128.
      if (ctr.ulCounterBits == 0 || ctr.ulCounterBits > 128) {
        return ParamInvalid("ulCounterBits must be 1..128");
      }
      const bool unlimited = ctr.ulCounterBits == 128;
      unsigned __int128 max_blocks = 0;
      if (!unlimited) {
        unsigned __int128 counter = 0;
        for (uint8_t b : ctr.cb) counter = (counter << 8) | b;
        const unsigned __int128 space = static_cast<unsigned __int128>(1)
                                        << ctr.ulCounterBits;
        max_blocks = space - (counter & (space - 1));
      }
      ACCELCRYPT_ASSIGN_OR_RETURN(
          auto cipher,
          RoutedCipher(core, AesAlg(ACCELCRYPT_MODE_CTR, key_len)));
      auto stream = std::make_unique<CipherStream>(std::move(cipher));
      stream->set_padding(false);
      absl::Status st = stream->Init(encrypt, key.value(),
                                     absl::MakeConstSpan(ctr.cb, kBlock));
      OPENSSL_cleanse(&ctr, sizeof(ctr));
      if (!st.ok()) return Rv(st, CKR_MECHANISM_PARAM_INVALID);
      return std::unique_ptr<Operation>(new AesCtrOp(
          core, std::move(stream), encrypt, max_blocks, unlimited));
    }
    case CKM_AES_OFB:
    case CKM_AES_CFB128: {
      // v2.40 2.10: the parameter is the 16-byte IV.
      const bool ofb = mechanism.mechanism == CKM_AES_OFB;
      if (param == nullptr || param_len != kBlock) {
        return ParamInvalid(ofb ? "AES-OFB needs a 16-byte IV"
                                : "AES-CFB128 needs a 16-byte IV");
      }
      ACCELCRYPT_ASSIGN_OR_RETURN(
          auto cipher, RoutedCipher(core, AesAlg(ofb ? ACCELCRYPT_MODE_OFB
                                                     : ACCELCRYPT_MODE_CFB128,
                                                 key_len)));
      auto stream = std::make_unique<CipherStream>(std::move(cipher));
      stream->set_padding(false);
      absl::Status st = stream->Init(encrypt, key.value(),
                                     absl::MakeConstSpan(param, param_len));
      if (!st.ok()) return Rv(st, CKR_MECHANISM_PARAM_INVALID);
      return std::unique_ptr<Operation>(new AesCtrOp(core, std::move(stream),
                                                     encrypt, /*max_blocks=*/0,
                                                     /*unlimited=*/true));
    }
    case CKM_AES_GCM: {
      if (param == nullptr || param_len != sizeof(CK_GCM_PARAMS)) {
        return ParamInvalid("CKM_AES_GCM needs CK_GCM_PARAMS");
      }
      CK_GCM_PARAMS gcm;
      std::memcpy(&gcm, param, sizeof(gcm));
      // v2.40 2.12.3: 1 <= ulIvLen <= 256; ulTagBits 0..128. The core's
      // GCM backends take tags of 4..16 bytes, so ulTagBits is 32..128 in
      // whole bytes here; other values are refused.
      if (gcm.pIv == nullptr || gcm.ulIvLen < 1 || gcm.ulIvLen > 256) {
        return ParamInvalid("GCM IV must be 1..256 bytes");
      }
      if (gcm.ulTagBits % 8 != 0 || gcm.ulTagBits < 32 || gcm.ulTagBits > 128) {
        return ParamInvalid("GCM ulTagBits must be 32..128, whole bytes");
      }
      if (gcm.pAAD == nullptr && gcm.ulAADLen != 0) {
        return ParamInvalid("GCM AAD pointer is null");
      }
      ACCELCRYPT_ASSIGN_OR_RETURN(
          auto cipher,
          RoutedCipher(core, AesAlg(ACCELCRYPT_MODE_GCM, key_len)));
      absl::Status st = cipher->Init(encrypt, key.value(),
                                     absl::MakeConstSpan(gcm.pIv, gcm.ulIvLen));
      if (st.ok() && gcm.ulAADLen > 0) {
        st = cipher->Aad(absl::MakeConstSpan(gcm.pAAD, gcm.ulAADLen));
      }
      if (!st.ok()) return Rv(st, CKR_MECHANISM_PARAM_INVALID);
      return std::unique_ptr<Operation>(
          new AesGcmOp(core, std::move(cipher), encrypt, gcm.ulTagBits / 8));
    }
    default:
      return CkError(CKR_MECHANISM_INVALID, "not an AES mechanism");
  }
}

}  // namespace accelcrypt::p11::internal
