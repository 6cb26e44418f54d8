// SPDX-License-Identifier: Apache-2.0
// Digests (CKM_SHA_1, CKM_SHA224..512) and HMAC (CKM_SHA*_HMAC, RFC 2104 /
// FIPS 198-1) over the core's routed Digest, so digest hardware serves
// both. The core's Digest exports no state, so a digest operation keeps
// the input it was fed (up to kMaxStateData) for C_GetOperationState.
#include <openssl/crypto.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/core.h"
#include "core/status.h"
#include "pkcs11/common/ck_error.h"
#include "pkcs11/mech/internal/mech_internal.h"

namespace accelcrypt::p11::internal {
namespace {

// Saved digest state, version 1 (all integers little-endian):
//   "ACP11DST" | version u8 = 1 | mechanism u32 | data_len u32 | data |
//   SHA-256 of everything before it (32 bytes).
// The hash guards against garbage and truncation (CKR_SAVED_STATE_INVALID);
// the blob holds only message bytes the application fed itself.
constexpr uint8_t kStateMagic[8] = {'A', 'C', 'P', '1', '1', 'D', 'S', 'T'};
constexpr uint8_t kStateVersion = 1;
constexpr size_t kStateHeader = sizeof(kStateMagic) + 1 + 4 + 4;
constexpr size_t kStateCheck = 32;

void PutU32(std::vector<uint8_t>* out, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out->push_back(static_cast<uint8_t>(v >> (8 * i)));
}
uint32_t GetU32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 |
         uint32_t{p[3]} << 24;
}

absl::Status CoreError(const absl::Status& st) {
  if (IsDeviceError(st) || st.code() == absl::StatusCode::kInternal) return st;
  return CkError(CKR_FUNCTION_FAILED, AsStd(st.message()));
}

absl::StatusOr<std::unique_ptr<Digest>> RoutedDigest(Core& core,
                                                     accelcrypt_alg alg) {
  auto digest = core.router().NewDigest(alg);
  if (!digest.ok()) {
    if (IsDeviceError(digest.status())) return digest.status();
    return CkError(CKR_MECHANISM_INVALID, AsStd(digest.status().message()));
  }
  return digest;
}

// WipedBuffer is an append-only byte buffer whose old storage is wiped
// when it grows and whose contents are wiped on destruction.
class WipedBuffer {
 public:
  ~WipedBuffer() { Release(); }
  void Append(absl::Span<const uint8_t> in) {
    if (bytes_.size() + in.size() > bytes_.capacity()) {
      std::vector<uint8_t> grown;
      grown.reserve(std::max(bytes_.size() + in.size(), 2 * bytes_.capacity()));
      grown.assign(bytes_.begin(), bytes_.end());
      Release();
      bytes_.swap(grown);
    }
    bytes_.insert(bytes_.end(), in.begin(), in.end());
  }
  void Release() {
    if (bytes_.capacity() == 0) return;  // nothing held (the per-call path)
    OPENSSL_cleanse(bytes_.data(), bytes_.size());
    std::vector<uint8_t>().swap(bytes_);
  }
  absl::Span<const uint8_t> span() const { return bytes_; }
  size_t size() const { return bytes_.size(); }

 private:
  std::vector<uint8_t> bytes_;
};

class DigestOp final : public OperationBase {
 public:
  DigestOp(Core& core, CK_MECHANISM_TYPE mechanism,
           std::unique_ptr<Digest> digest)
      : core_(core),
        mechanism_(mechanism),
        digest_(std::move(digest)),
        len_(digest_->info().digest_len) {}

  size_t OutputBound(Call call, size_t) const override {
    return call == Call::kUpdate ? 0 : len_;
  }
  absl::StatusOr<size_t> OneShot(absl::Span<const uint8_t> in,
                                 absl::Span<uint8_t> out) override {
    if (out.size() < len_) return TooSmall(out.size(), len_);
    // The operation ends here: nothing is kept for GetState.
    if (pending_init_) {
      // A restarted operation with nothing fed: the route's direct digest,
      // else the router's one-shot path, hashes the whole message without
      // the routed digest's layers (its Init, replay copy for fallback,
      // Final), and the routed digest stays un-initialised for the next
      // restart.
      const AlgorithmInfo& info = digest_->info();
      if (Router::DirectDigest d = core_.router().Direct(info);
          d.fn != nullptr) {
        DirectDigestMessage(*d.fn, in, in.size(), out.data());
        d.counter->Add(in.size());
        return len_;
      }
      absl::Status st = core_.router().DigestOneShot(info, in, out.first(len_));
      if (!st.ok()) return CoreError(st);
      return len_;
    }
    absl::Status st = digest_->Update(in);
    if (!st.ok()) return CoreError(st);
    return Final(out);
  }
  absl::StatusOr<size_t> Update(absl::Span<const uint8_t> in,
                                absl::Span<uint8_t>) override {
    ACCELCRYPT_RETURN_IF_ERROR(Feed(in));
    return size_t{0};
  }
  absl::StatusOr<size_t> Final(absl::Span<uint8_t> out) override {
    if (out.size() < len_) return TooSmall(out.size(), len_);
    ACCELCRYPT_RETURN_IF_ERROR(EnsureInit());
    absl::Status st = digest_->Final(out.first(len_));
    if (!st.ok()) return CoreError(st);
    saved_.Release();
    return len_;
  }
  // DigestKey feeds a secret key's CKA_VALUE. The state then holds key
  // material, so it can no longer be saved (CKR_STATE_UNSAVEABLE).
  absl::Status DigestKey(const AttributeMap& key) override {
    const SecretBytes* value = key.Find(CKA_VALUE);
    if (key.GetUlong(CKA_CLASS) != CKO_SECRET_KEY || value == nullptr) {
      return CkError(CKR_KEY_INDIGESTIBLE,
                     "only secret keys with a value can be digested");
    }
    ACCELCRYPT_RETURN_IF_ERROR(EnsureInit());
    absl::Status st = digest_->Update(value->span());
    if (!st.ok()) return CoreError(st);
    unsaveable_ = true;
    saved_.Release();
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<uint8_t>> GetState() const override {
    if (unsaveable_) {
      return CkError(CKR_STATE_UNSAVEABLE,
                     "digest state holds key material or more than 64 KiB");
    }
    std::vector<uint8_t> out(kStateMagic, kStateMagic + sizeof(kStateMagic));
    out.push_back(kStateVersion);
    PutU32(&out, static_cast<uint32_t>(mechanism_));
    PutU32(&out, static_cast<uint32_t>(saved_.size()));
    out.insert(out.end(), saved_.span().begin(), saved_.span().end());
    uint8_t check[kStateCheck];
    absl::Status st =
        core_.router().DigestOneShot(ACCELCRYPT_ALG_SHA256, out, check);
    if (!st.ok()) return CoreError(st);
    out.insert(out.end(), check, check + kStateCheck);
    return out;
  }
  bool hardware() const override {
    return IsHardwareBackend(core_, digest_->backend());
  }
  bool Restart(OpKind kind, const CK_MECHANISM& mechanism,
               const PreparedKey*) override {
    if (kind != OpKind::kDigest || mechanism.mechanism != mechanism_ ||
        mechanism.ulParameterLen != 0) {
      return false;
    }
    // The routed digest is initialised when data first reaches it
    // (EnsureInit), so a single-part C_Digest can take the one-shot path
    // instead and no operation is counted twice.
    pending_init_ = true;
    saved_.Release();
    unsaveable_ = false;
    return true;
  }

  // EnsureInit initialises the routed digest of a restarted operation.
  absl::Status EnsureInit() {
    if (!pending_init_) return absl::OkStatus();
    absl::Status st = digest_->Init();
    if (!st.ok()) return CoreError(st);
    pending_init_ = false;
    return absl::OkStatus();
  }

  // Feed hashes `in` and keeps it for GetState while that stays possible.
  absl::Status Feed(absl::Span<const uint8_t> in) {
    ACCELCRYPT_RETURN_IF_ERROR(EnsureInit());
    absl::Status st = digest_->Update(in);
    if (!st.ok()) return CoreError(st);
    if (!unsaveable_) {
      if (saved_.size() + in.size() > kMaxStateData) {
        unsaveable_ = true;
        saved_.Release();
      } else {
        saved_.Append(in);
      }
    }
    return absl::OkStatus();
  }

 private:
  Core& core_;
  const CK_MECHANISM_TYPE mechanism_;
  std::unique_ptr<Digest> digest_;
  const size_t len_;
  WipedBuffer saved_;
  bool unsaveable_ = false;
  // pending_init_: restarted, digest_ not yet initialised (EnsureInit).
  bool pending_init_ = false;
};

// HmacOp is HMAC (FIPS 198-1) with the full-length MAC: K0 is the key
// hashed when longer than the digest's block, else zero-padded;
// MAC = H((K0 ^ opad) || H((K0 ^ ipad) || text)). The inner hash runs on
// a routed Digest from the start; K0 ^ ipad is wiped once fed and
// K0 ^ opad lives in a wiped buffer until the operation ends.
class HmacOp final : public OperationBase {
 public:
  static absl::StatusOr<std::unique_ptr<Operation>> Create(
      Core& core, bool sign, accelcrypt_alg alg,
      absl::Span<const uint8_t> key) {
    const AlgorithmInfo* info = FindAlgorithm(alg);
    if (info == nullptr || info->block_len == 0) {
      return CkError(CKR_MECHANISM_INVALID, "unknown HMAC digest");
    }
    const size_t block = info->block_len;
    SecretBytes k0(block);
    if (key.size() > block) {
      absl::Status st = core.router().DigestOneShot(
          alg, key, k0.mutable_span().first(info->digest_len));
      if (!st.ok()) return CoreError(st);
    } else {
      std::copy(key.begin(), key.end(), k0.data());
    }
    SecretBytes ipad(block), opad(block);
    for (size_t i = 0; i < block; ++i) {
      ipad.data()[i] = k0.data()[i] ^ 0x36;
      opad.data()[i] = k0.data()[i] ^ 0x5c;
    }
    ACCELCRYPT_ASSIGN_OR_RETURN(auto inner, RoutedDigest(core, alg));
    absl::Status st = inner->Update(ipad.span());
    if (!st.ok()) return CoreError(st);
    return std::unique_ptr<Operation>(new HmacOp(
        core, sign, alg, info->digest_len, std::move(inner), std::move(opad)));
  }

  size_t OutputBound(Call call, size_t) const override {
    return sign_ && call != Call::kUpdate ? len_ : 0;
  }
  absl::StatusOr<size_t> OneShot(absl::Span<const uint8_t> in,
                                 absl::Span<uint8_t> out) override {
    if (!sign_) return NotSupported("HMAC verify uses Verify");
    if (out.size() < len_) return TooSmall(out.size(), len_);
    ACCELCRYPT_RETURN_IF_ERROR(Feed(in));
    return Final(out);
  }
  absl::StatusOr<size_t> Update(absl::Span<const uint8_t> in,
                                absl::Span<uint8_t>) override {
    ACCELCRYPT_RETURN_IF_ERROR(Feed(in));
    return size_t{0};
  }
  absl::StatusOr<size_t> Final(absl::Span<uint8_t> out) override {
    if (!sign_) return NotSupported("HMAC verify uses VerifyFinal");
    if (out.size() < len_) return TooSmall(out.size(), len_);
    ACCELCRYPT_RETURN_IF_ERROR(Compute(out.first(len_)));
    return len_;
  }
  absl::Status Verify(absl::Span<const uint8_t> data,
                      absl::Span<const uint8_t> signature) override {
    if (sign_) return NotSupported("HMAC sign uses OneShot");
    if (signature.size() != len_) return LenError();
    ACCELCRYPT_RETURN_IF_ERROR(Feed(data));
    return VerifyFinal(signature);
  }
  absl::Status VerifyFinal(absl::Span<const uint8_t> signature) override {
    if (sign_) return NotSupported("HMAC sign uses Final");
    if (signature.size() != len_) return LenError();
    SecretBytes mac(len_);
    ACCELCRYPT_RETURN_IF_ERROR(Compute(mac.mutable_span()));
    if (CRYPTO_memcmp(mac.data(), signature.data(), len_) != 0) {
      return CkError(CKR_SIGNATURE_INVALID, "HMAC does not match");
    }
    return absl::OkStatus();
  }
  bool hardware() const override {
    return IsHardwareBackend(core_, inner_->backend());
  }

 private:
  HmacOp(Core& core, bool sign, accelcrypt_alg alg, size_t len,
         std::unique_ptr<Digest> inner, SecretBytes opad)
      : core_(core),
        sign_(sign),
        alg_(alg),
        len_(len),
        inner_(std::move(inner)),
        opad_(std::move(opad)) {}

  static absl::Status LenError() {
    return CkError(CKR_SIGNATURE_LEN_RANGE, "HMAC length does not match");
  }
  absl::Status Feed(absl::Span<const uint8_t> in) {
    absl::Status st = inner_->Update(in);
    return st.ok() ? st : CoreError(st);
  }
  // Compute finishes the inner hash and runs the outer one into `out`.
  absl::Status Compute(absl::Span<uint8_t> out) {
    SecretBytes inner_hash(len_);
    absl::Status st = inner_->Final(inner_hash.mutable_span());
    if (!st.ok()) return CoreError(st);
    ACCELCRYPT_ASSIGN_OR_RETURN(auto outer, RoutedDigest(core_, alg_));
    st = outer->Update(opad_.span());
    if (st.ok()) st = outer->Update(inner_hash.span());
    if (st.ok()) st = outer->Final(out);
    if (!st.ok()) return CoreError(st);
    opad_.Wipe();
    return absl::OkStatus();
  }

  Core& core_;
  const bool sign_;
  const accelcrypt_alg alg_;
  const size_t len_;
  std::unique_ptr<Digest> inner_;
  SecretBytes opad_;
};

accelcrypt_alg HmacDigest(CK_MECHANISM_TYPE mechanism) {
  switch (mechanism) {
    case CKM_SHA_1_HMAC:
      return ACCELCRYPT_ALG_SHA1;
    case CKM_SHA224_HMAC:
      return ACCELCRYPT_ALG_SHA224;
    case CKM_SHA256_HMAC:
      return ACCELCRYPT_ALG_SHA256;
    case CKM_SHA384_HMAC:
      return ACCELCRYPT_ALG_SHA384;
    case CKM_SHA512_HMAC:
      return ACCELCRYPT_ALG_SHA512;
    default:
      return 0;
  }
}

// HmacKeyTypeFits: generic secrets serve every HMAC; the v2.40 per-hash
// key types (CKK_SHA256_HMAC...) only their own mechanism.
bool HmacKeyTypeFits(CK_KEY_TYPE type, CK_MECHANISM_TYPE mechanism) {
  switch (type) {
    case CKK_GENERIC_SECRET:
      return true;
    case CKK_SHA_1_HMAC:
      return mechanism == CKM_SHA_1_HMAC;
    case CKK_SHA224_HMAC:
      return mechanism == CKM_SHA224_HMAC;
    case CKK_SHA256_HMAC:
      return mechanism == CKM_SHA256_HMAC;
    case CKK_SHA384_HMAC:
      return mechanism == CKM_SHA384_HMAC;
    case CKK_SHA512_HMAC:
      return mechanism == CKM_SHA512_HMAC;
    default:
      return false;
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<Operation>> NewDigestOperation(
    Core& core, CK_MECHANISM_TYPE mechanism) {
  const accelcrypt_alg alg = DigestAlg(mechanism);
  if (alg == 0) return CkError(CKR_MECHANISM_INVALID, "not a digest");
  ACCELCRYPT_ASSIGN_OR_RETURN(auto digest, RoutedDigest(core, alg));
  return std::unique_ptr<Operation>(
      new DigestOp(core, mechanism, std::move(digest)));
}

absl::StatusOr<std::unique_ptr<Operation>> RestoreDigestOperation(
    Core& core, absl::Span<const uint8_t> state) {
  auto invalid = [](std::string_view why) {
    return CkError(CKR_SAVED_STATE_INVALID, why);
  };
  if (state.size() < kStateHeader + kStateCheck ||
      std::memcmp(state.data(), kStateMagic, sizeof(kStateMagic)) != 0) {
    return invalid("not an accelcrypt digest state");
  }
  const uint8_t* p = state.data() + sizeof(kStateMagic);
  if (p[0] != kStateVersion) return invalid("unknown state version");
  const CK_MECHANISM_TYPE mechanism = GetU32(p + 1);
  const size_t data_len = GetU32(p + 5);
  if (data_len > kMaxStateData ||
      state.size() != kStateHeader + data_len + kStateCheck) {
    return invalid("state length does not match");
  }
  const size_t body = kStateHeader + data_len;
  uint8_t check[kStateCheck];
  absl::Status st = core.router().DigestOneShot(ACCELCRYPT_ALG_SHA256,
                                                state.first(body), check);
  if (!st.ok()) return CoreError(st);
  if (CRYPTO_memcmp(check, state.data() + body, kStateCheck) != 0) {
    return invalid("state integrity check failed");
  }
  if (DigestAlg(mechanism) == 0) return invalid("state names no digest");
  ACCELCRYPT_ASSIGN_OR_RETURN(auto op, NewDigestOperation(core, mechanism));
  ACCELCRYPT_RETURN_IF_ERROR(
      static_cast<DigestOp&>(*op).Feed(state.subspan(kStateHeader, data_len)));
  return op;
}

absl::StatusOr<std::unique_ptr<Operation>> NewHmacOperation(
    Core& core, OpKind kind, CK_MECHANISM_TYPE mechanism,
    const SecretKey& key) {
  const accelcrypt_alg alg = HmacDigest(mechanism);
  if (alg == 0) return CkError(CKR_MECHANISM_INVALID, "not an HMAC");
  if (kind != OpKind::kSign && kind != OpKind::kVerify) {
    return CkError(CKR_MECHANISM_INVALID, "HMAC only signs and verifies");
  }
  if (!HmacKeyTypeFits(key.key_type(), mechanism)) {
    return CkError(CKR_KEY_TYPE_INCONSISTENT,
                   "HMAC needs a generic secret (or matching HMAC) key");
  }
  if (key.value().empty() || key.value().size() > kMaxHmacKeyLen) {
    return CkError(CKR_KEY_SIZE_RANGE, "HMAC key length out of range");
  }
  return HmacOp::Create(core, kind == OpKind::kSign, alg, key.value());
}

}  // namespace accelcrypt::p11::internal
