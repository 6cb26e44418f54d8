// SPDX-License-Identifier: Apache-2.0
// RSA (PKCS#11 v2.40 current mechanisms 2.1) and DSA (2.2) mechanisms over
// the core's routed PublicKeyOps. Everything runs on the core:
//  - CKM_RSA_PKCS sign = the core's PKCS#1 v1.5 signature with no digest
//    (the input, a DigestInfo, is padded as it is: EMSA-PKCS1-v1_5 step 3+);
//  - CKM_RSA_X_509 sign/decrypt = the core's raw RSASP1/RSADP
//    (ACCELCRYPT_PAD_NONE, input left-padded to the modulus length);
//  - the public raw operation RSAVP1 (CKM_RSA_X_509 verify and
//    verify-recover, CKM_RSA_PKCS verify-recover) = the core's raw RSAEP
//    (ACCELCRYPT_PAD_NONE encryption: the same s^e mod n), after which the
//    EMSA-PKCS1-v1_5 block is checked here;
//  - SHA*_RSA_PKCS(_PSS) and DSA_SHA* hash with the routed core Digest and
//    sign the hash with the core (md set, so DigestInfo/PSS are the
//    backend's);
//  - DSA signatures cross the core ABI DER-encoded; PKCS#11 wants r || s,
//    each as long as q (2.2.4), converted here.
#include <openssl/crypto.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "accelcrypt/kit/dsa_sig.h"
#include "core/core.h"
#include "core/status.h"
#include "pkcs11/common/ck_error.h"
#include "pkcs11/mech/internal/mech_internal.h"

namespace accelcrypt::p11::internal {
namespace {

enum class Scheme { kPkcs1, kX509, kPss, kOaep, kDsa };

absl::Status ParamInvalid(std::string_view what) {
  return CkError(CKR_MECHANISM_PARAM_INVALID, what);
}

// CoreFailure maps a core status from a private-key operation: device
// errors and short buffers stay as they are, anything else is `rv`.
absl::Status CoreFailure(const absl::Status& st, CK_RV rv) {
  if (IsDeviceError(st) || st.code() == absl::StatusCode::kInternal) return st;
  if (st.code() == absl::StatusCode::kOutOfRange) {
    return CkError(CKR_BUFFER_TOO_SMALL, AsStd(st.message()));
  }
  return CkError(rv, AsStd(st.message()));
}

// LessThan compares two equal-length big-endian numbers (not secret).
bool LessThan(absl::Span<const uint8_t> a, absl::Span<const uint8_t> b) {
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
}

// LeftPad returns `in` left-padded with zeros to `len` bytes (len >= size).
SecretBytes LeftPad(absl::Span<const uint8_t> in, size_t len) {
  SecretBytes out(len);
  std::copy(in.begin(), in.end(), out.data() + (len - in.size()));
  return out;
}

// Modulus returns n left-padded to `k` bytes (KeyMaterial may carry a
// leading zero or none).
std::vector<uint8_t> Modulus(const KeyMaterial& key, size_t k) {
  absl::Span<const uint8_t> n = key.n;
  while (!n.empty() && n.front() == 0) n.remove_prefix(1);
  std::vector<uint8_t> out(k - std::min(k, n.size()), 0);
  out.insert(out.end(), n.begin(), n.end());
  return out;
}

size_t StrippedLen(const std::vector<uint8_t>& v) {
  size_t i = 0;
  while (i < v.size() && v[i] == 0) ++i;
  return v.size() - i;
}

// PkeyOp is one RSA or DSA operation. Mechanisms with a hash in their name
// (`digest_` set) are multi-part; the others are single-part.
class PkeyOp final : public OperationBase {
 public:
  PkeyOp(Core& core, OpKind kind, Scheme scheme,
         std::shared_ptr<AsymmetricKey> key, PkeyParams params,
         std::unique_ptr<Digest> digest, size_t hash_len)
      : core_(core),
        kind_(kind),
        scheme_(scheme),
        key_(std::move(key)),
        params_(std::move(params)),
        digest_(std::move(digest)),
        hash_len_(hash_len) {
    k_ = key_->modulus_len();
    if (scheme_ == Scheme::kDsa) q_len_ = StrippedLen(key_->material().dsa_q);
  }

  bool multi_part() const override { return digest_ != nullptr; }

  size_t OutputBound(Call call, size_t) const override {
    if (kind_ == OpKind::kVerify || call == Call::kUpdate) return 0;
    return scheme_ == Scheme::kDsa ? 2 * q_len_ : k_;
  }

  absl::StatusOr<size_t> OneShot(absl::Span<const uint8_t> in,
                                 absl::Span<uint8_t> out) override {
    switch (kind_) {
      case OpKind::kSign:
        if (digest_ != nullptr) {
          if (out.size() < OutputBound(Call::kFinal, 0)) {
            return TooSmall(out.size(), OutputBound(Call::kFinal, 0));
          }
          ACCELCRYPT_RETURN_IF_ERROR(Feed(in));
          return Final(out);
        }
        return SignInput(in, out);
      case OpKind::kEncrypt:
        return Encrypt(in, out);
      case OpKind::kDecrypt:
        return Decrypt(in, out);
      case OpKind::kVerifyRecover:
        return Recover(in, out);
      default:
        return NotSupported("this RSA/DSA operation has no output");
    }
  }
  absl::StatusOr<size_t> Update(absl::Span<const uint8_t> in,
                                absl::Span<uint8_t>) override {
    if (digest_ == nullptr) {
      return NotSupported("this mechanism is single-part only");
    }
    ACCELCRYPT_RETURN_IF_ERROR(Feed(in));
    return size_t{0};
  }
  absl::StatusOr<size_t> Final(absl::Span<uint8_t> out) override {
    if (digest_ == nullptr || kind_ != OpKind::kSign) {
      return NotSupported("this mechanism is single-part only");
    }
    const size_t need = OutputBound(Call::kFinal, 0);
    if (out.size() < need) return TooSmall(out.size(), need);
    ACCELCRYPT_ASSIGN_OR_RETURN(SecretBytes hash, FinishHash());
    return SignInput(hash.span(), out);
  }
  absl::Status Verify(absl::Span<const uint8_t> data,
                      absl::Span<const uint8_t> signature) override {
    if (kind_ != OpKind::kVerify) return NotSupported("not a verification");
    if (digest_ != nullptr) {
      ACCELCRYPT_RETURN_IF_ERROR(Feed(data));
      return VerifyFinal(signature);
    }
    return VerifyInput(data, signature);
  }
  absl::Status VerifyFinal(absl::Span<const uint8_t> signature) override {
    if (kind_ != OpKind::kVerify || digest_ == nullptr) {
      return NotSupported("this mechanism is single-part only");
    }
    ACCELCRYPT_ASSIGN_OR_RETURN(SecretBytes hash, FinishHash());
    return VerifyInput(hash.span(), signature);
  }

  bool hardware() const override {
    std::string last = key_->ops().last_backend();
    if (!last.empty()) return IsHardwareBackend(core_, last);
    accelcrypt_alg alg =
        scheme_ == Scheme::kDsa ? ACCELCRYPT_ALG_DSA_SIGN
        : (kind_ == OpKind::kEncrypt || kind_ == OpKind::kDecrypt)
            ? ACCELCRYPT_ALG_RSA_CRYPT
            : ACCELCRYPT_ALG_RSA_SIGN;
    return core_.router().FirstIsHardware(alg);
  }

 private:
  absl::Status Feed(absl::Span<const uint8_t> in) {
    absl::Status st = digest_->Update(in);
    if (st.ok() || IsDeviceError(st)) return st;
    return CkError(CKR_FUNCTION_FAILED, AsStd(st.message()));
  }
  absl::StatusOr<SecretBytes> FinishHash() {
    SecretBytes hash(digest_->info().digest_len);
    absl::Status st = digest_->Final(hash.mutable_span());
    if (!st.ok()) return CoreFailure(st, CKR_FUNCTION_FAILED);
    return hash;
  }

  // SignInput signs the mechanism's input (or the computed hash).
  absl::StatusOr<size_t> SignInput(absl::Span<const uint8_t> tbs,
                                   absl::Span<uint8_t> out) {
    const size_t need = OutputBound(Call::kOneShot, 0);
    if (scheme_ == Scheme::kDsa) {
      ACCELCRYPT_RETURN_IF_ERROR(CheckDsaInput(tbs));
      if (out.size() < need) return TooSmall(out.size(), need);
      std::vector<uint8_t> der(key_->ops().SignatureSize());
      auto len = key_->ops().Sign(params_, tbs, absl::MakeSpan(der));
      if (!len.ok()) return CoreFailure(len.status(), CKR_FUNCTION_FAILED);
      std::vector<uint8_t> rs(2 * q_len_);
      if (!kit::DsaDerToRs(der.data(), *len, q_len_, rs.data())) {
        return CkError(CKR_FUNCTION_FAILED,
                       "DSA: the backend returned a malformed signature");
      }
      std::copy(rs.begin(), rs.end(), out.begin());
      return need;
    }
    ACCELCRYPT_RETURN_IF_ERROR(CheckSignInput(tbs));
    if (out.size() < need) return TooSmall(out.size(), need);
    absl::StatusOr<size_t> len;
    if (scheme_ == Scheme::kX509) {
      ACCELCRYPT_ASSIGN_OR_RETURN(SecretBytes block, RawBlock(tbs));
      len = key_->ops().Sign(params_, block.span(), out);
    } else {
      len = key_->ops().Sign(params_, tbs, out);
    }
    if (!len.ok() || *len != k_) {
      // Nothing of a failed signature is released. RSA signatures are
      // exactly k bytes (RFC 8017 8.1.1/8.2.1 I2OSP).
      OPENSSL_cleanse(out.data(), std::min(out.size(), k_));
      if (!len.ok()) return CoreFailure(len.status(), CKR_FUNCTION_FAILED);
      return CkError(CKR_FUNCTION_FAILED, "RSA signature size");
    }
    return *len;
  }

  absl::Status CheckSignInput(absl::Span<const uint8_t> tbs) const {
    switch (scheme_) {
      case Scheme::kPkcs1:
        // v2.40 2.1.6 table: input <= k - 11 bytes (the DigestInfo for
        // CKM_RSA_PKCS; the hash for SHA*_RSA_PKCS is always shorter).
        if (digest_ == nullptr && tbs.size() + 11 > k_) {
          return CkError(CKR_DATA_LEN_RANGE, "input longer than k - 11");
        }
        return absl::OkStatus();
      case Scheme::kX509:
        if (tbs.size() > k_) {
          return CkError(CKR_DATA_LEN_RANGE, "input longer than the modulus");
        }
        return absl::OkStatus();
      case Scheme::kPss:
        // v2.40 2.1.11: CKM_RSA_PKCS_PSS takes the hash of hashAlg.
        if (tbs.size() != hash_len_) {
          return CkError(CKR_DATA_LEN_RANGE,
                         "PSS input must be the hash of hashAlg");
        }
        return absl::OkStatus();
      default:
        return CkError(CKR_MECHANISM_INVALID, "not a signature scheme");
    }
  }

  absl::Status CheckDsaInput(absl::Span<const uint8_t> hash) const {
    // v2.40 2.2.4 table: CKM_DSA input is 20, 28, 32, 48 or 64 bytes.
    switch (hash.size()) {
      case 20:
      case 28:
      case 32:
      case 48:
      case 64:
        return absl::OkStatus();
      default:
        return CkError(CKR_DATA_LEN_RANGE, "DSA input must be a hash");
    }
  }

  // RawBlock is `in` left-padded to k bytes, refused when >= n
  // (RFC 8017 5.1.1/5.2.1: the representative must be < n).
  absl::StatusOr<SecretBytes> RawBlock(absl::Span<const uint8_t> in) const {
    if (in.size() > k_) {
      return CkError(CKR_DATA_LEN_RANGE, "input longer than the modulus");
    }
    SecretBytes block = LeftPad(in, k_);
    if (!LessThan(block.span(), Modulus(key_->material(), k_))) {
      return CkError(CKR_DATA_LEN_RANGE, "input not less than the modulus");
    }
    return block;
  }

  absl::Status VerifyInput(absl::Span<const uint8_t> tbs,
                           absl::Span<const uint8_t> sig) {
    if (scheme_ == Scheme::kDsa) {
      ACCELCRYPT_RETURN_IF_ERROR(CheckDsaInput(tbs));
      if (sig.size() != 2 * q_len_) {
        return CkError(CKR_SIGNATURE_LEN_RANGE, "DSA signature is 2 * |q|");
      }
      std::vector<uint8_t> der = kit::DsaRsToDer(sig.data(), q_len_);
      return SignatureResult(key_->ops().Verify(params_, tbs, der));
    }
    ACCELCRYPT_RETURN_IF_ERROR(CheckSignInput(tbs));
    if (sig.size() != k_) {
      return CkError(CKR_SIGNATURE_LEN_RANGE,
                     "RSA signature must be the modulus length");
    }
    if (scheme_ == Scheme::kX509) {
      SecretBytes recovered(k_);
      ACCELCRYPT_RETURN_IF_ERROR(PublicRaw(sig, recovered.mutable_span()));
      SecretBytes expected = LeftPad(tbs, k_);
      if (CRYPTO_memcmp(recovered.data(), expected.data(), k_) != 0) {
        return CkError(CKR_SIGNATURE_INVALID, "signature does not verify");
      }
      return absl::OkStatus();
    }
    return SignatureResult(key_->ops().Verify(params_, tbs, sig));
  }

  // SignatureResult: any caller-side failure of a verification (bad
  // signature, signature >= n) is CKR_SIGNATURE_INVALID.
  static absl::Status SignatureResult(const absl::Status& st) {
    if (st.ok() || IsDeviceError(st) ||
        st.code() == absl::StatusCode::kInternal) {
      return st;
    }
    return CkError(CKR_SIGNATURE_INVALID, AsStd(st.message()));
  }

  // PublicRaw computes RSAVP1 (s^e mod n, k bytes) with the core's raw
  // public operation.
  absl::Status PublicRaw(absl::Span<const uint8_t> sig,
                         absl::Span<uint8_t> out) {
    PkeyParams raw;
    raw.padding = ACCELCRYPT_PAD_NONE;
    auto len = key_->ops().Encrypt(raw, sig, out);
    if (!len.ok()) return SignatureResult(len.status());
    if (*len != k_) return CkError(CKR_SIGNATURE_INVALID, "RSAVP1 size");
    return absl::OkStatus();
  }

  // Recover is C_VerifyRecover: CKM_RSA_X_509 returns the whole k-byte
  // block; CKM_RSA_PKCS checks the EMSA-PKCS1-v1_5 block
  // 00 01 FF..FF (at least 8) 00 D and returns D (v2.40 2.1.6).
  absl::StatusOr<size_t> Recover(absl::Span<const uint8_t> sig,
                                 absl::Span<uint8_t> out) {
    if (sig.size() != k_) {
      return CkError(CKR_SIGNATURE_LEN_RANGE,
                     "RSA signature must be the modulus length");
    }
    if (scheme_ == Scheme::kX509 && out.size() < k_) {
      return TooSmall(out.size(), k_);
    }
    SecretBytes em(k_);
    ACCELCRYPT_RETURN_IF_ERROR(PublicRaw(sig, em.mutable_span()));
    if (scheme_ == Scheme::kX509) {
      std::copy(em.span().begin(), em.span().end(), out.begin());
      return k_;
    }
    const uint8_t* p = em.data();
    size_t i = 2;
    bool ok = k_ >= 11 && p[0] == 0x00 && p[1] == 0x01;
    while (ok && i < k_ && p[i] == 0xff) ++i;
    ok = ok && i < k_ && p[i] == 0x00 && i - 2 >= 8;
    if (!ok) {
      return CkError(CKR_SIGNATURE_INVALID, "not a PKCS#1 v1.5 signature");
    }
    const size_t data_len = k_ - i - 1;
    if (out.size() < data_len) return TooSmall(out.size(), data_len);
    std::copy(p + i + 1, p + k_, out.begin());
    return data_len;
  }

  absl::StatusOr<size_t> Encrypt(absl::Span<const uint8_t> in,
                                 absl::Span<uint8_t> out) {
    switch (scheme_) {
      case Scheme::kPkcs1:
        // RFC 8017 7.2.1: mLen <= k - 11.
        if (in.size() + 11 > k_) {
          return CkError(CKR_DATA_LEN_RANGE, "input longer than k - 11");
        }
        break;
      case Scheme::kOaep:
        // RFC 8017 7.1.1: mLen <= k - 2 hLen - 2.
        if (in.size() + 2 * hash_len_ + 2 > k_) {
          return CkError(CKR_DATA_LEN_RANGE, "input longer than OAEP allows");
        }
        break;
      case Scheme::kX509:
        break;
      default:
        return CkError(CKR_MECHANISM_INVALID, "not an encryption scheme");
    }
    if (out.size() < k_) return TooSmall(out.size(), k_);
    absl::StatusOr<size_t> len;
    if (scheme_ == Scheme::kX509) {
      ACCELCRYPT_ASSIGN_OR_RETURN(SecretBytes block, RawBlock(in));
      len = key_->ops().Encrypt(params_, block.span(), out);
    } else {
      len = key_->ops().Encrypt(params_, in, out);
    }
    if (!len.ok()) {
      OPENSSL_cleanse(out.data(), std::min(out.size(), k_));
      return CoreFailure(len.status(), CKR_FUNCTION_FAILED);
    }
    return *len;
  }

  absl::StatusOr<size_t> Decrypt(absl::Span<const uint8_t> in,
                                 absl::Span<uint8_t> out) {
    if (in.size() != k_) {
      return CkError(CKR_ENCRYPTED_DATA_LEN_RANGE,
                     "RSA ciphertext must be the modulus length");
    }
    if (scheme_ == Scheme::kX509 && out.size() < k_) {
      return TooSmall(out.size(), k_);
    }
    auto len = key_->ops().Decrypt(params_, in, out);
    if (!len.ok()) {
      // No partial plaintext: whatever a backend wrote is wiped.
      OPENSSL_cleanse(out.data(), std::min(out.size(), k_));
      return CoreFailure(len.status(), CKR_ENCRYPTED_DATA_INVALID);
    }
    return *len;
  }

  Core& core_;
  const OpKind kind_;
  const Scheme scheme_;
  std::shared_ptr<AsymmetricKey> key_;
  const PkeyParams params_;
  std::unique_ptr<Digest> digest_;
  const size_t hash_len_;
  size_t k_ = 0;
  size_t q_len_ = 0;
};

// HashOfMechanism is the digest mechanism of SHA*_RSA_PKCS(_PSS) and
// DSA_SHA*, or 0.
CK_MECHANISM_TYPE HashOfMechanism(CK_MECHANISM_TYPE m) {
  switch (m) {
    case CKM_SHA1_RSA_PKCS:
    case CKM_SHA1_RSA_PKCS_PSS:
    case CKM_DSA_SHA1:
      return CKM_SHA_1;
    case CKM_SHA224_RSA_PKCS:
    case CKM_SHA224_RSA_PKCS_PSS:
    case CKM_DSA_SHA224:
      return CKM_SHA224;
    case CKM_SHA256_RSA_PKCS:
    case CKM_SHA256_RSA_PKCS_PSS:
    case CKM_DSA_SHA256:
      return CKM_SHA256;
    case CKM_SHA384_RSA_PKCS:
    case CKM_SHA384_RSA_PKCS_PSS:
    case CKM_DSA_SHA384:
      return CKM_SHA384;
    case CKM_SHA512_RSA_PKCS:
    case CKM_SHA512_RSA_PKCS_PSS:
    case CKM_DSA_SHA512:
      return CKM_SHA512;
    default:
      return 0;
  }
}

// CheckKeyClass: private-key operations need a private key object,
// public-key operations a public key object.
absl::Status CheckKeyClass(OpKind kind, const AsymmetricKey& key) {
  const bool want_private = kind == OpKind::kSign || kind == OpKind::kDecrypt;
  if (key.is_private() != want_private) {
    return CkError(CKR_KEY_TYPE_INCONSISTENT,
                   want_private ? "operation needs a private key"
                                : "operation needs a public key");
  }
  return absl::OkStatus();
}

absl::Status NoParameter(const CK_MECHANISM& m) {
  if (m.ulParameterLen != 0) {
    return ParamInvalid("this mechanism takes no parameter");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Digest>> MechanismDigest(Core& core,
                                                        accelcrypt_alg alg) {
  auto digest = core.router().NewDigest(alg);
  if (!digest.ok() && !IsDeviceError(digest.status())) {
    return CkError(CKR_MECHANISM_INVALID, AsStd(digest.status().message()));
  }
  return digest;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Operation>> NewRsaOperation(
    Core& core, OpKind kind, const CK_MECHANISM& mechanism,
    std::shared_ptr<AsymmetricKey> key) {
  const CK_MECHANISM_TYPE m = mechanism.mechanism;
  const bool sig_kind = kind == OpKind::kSign || kind == OpKind::kVerify;
  const bool enc_kind = kind == OpKind::kEncrypt || kind == OpKind::kDecrypt;
  Scheme scheme;
  PkeyParams params;
  size_t hash_len = 0;
  std::unique_ptr<Digest> digest;
  const CK_MECHANISM_TYPE hash_mech = HashOfMechanism(m);
  if (m == CKM_RSA_PKCS || m == CKM_RSA_X_509) {
    if (!sig_kind && !enc_kind && kind != OpKind::kVerifyRecover) {
      return CkError(CKR_MECHANISM_INVALID,
                     "not an operation of this RSA "
                     "mechanism");
    }
    ACCELCRYPT_RETURN_IF_ERROR(NoParameter(mechanism));
    scheme = m == CKM_RSA_PKCS ? Scheme::kPkcs1 : Scheme::kX509;
    params.padding =
        m == CKM_RSA_PKCS ? ACCELCRYPT_PAD_PKCS1 : ACCELCRYPT_PAD_NONE;
  } else if (m == CKM_RSA_PKCS_OAEP) {
    if (!enc_kind) {
      return CkError(CKR_MECHANISM_INVALID, "OAEP only encrypts/decrypts");
    }
    if (mechanism.pParameter == nullptr ||
        mechanism.ulParameterLen != sizeof(CK_RSA_PKCS_OAEP_PARAMS)) {
      return ParamInvalid("CKM_RSA_PKCS_OAEP needs CK_RSA_PKCS_OAEP_PARAMS");
    }
    CK_RSA_PKCS_OAEP_PARAMS oaep;
    std::memcpy(&oaep, mechanism.pParameter, sizeof(oaep));
    params.padding = ACCELCRYPT_PAD_OAEP;
    params.md = DigestAlg(oaep.hashAlg);
    params.mgf1_md = MgfDigestAlg(oaep.mgf);
    if (params.md == 0 || params.mgf1_md == 0) {
      return ParamInvalid("OAEP hashAlg/mgf unknown");
    }
    // v2.40 2.1.8: source is CKZ_DATA_SPECIFIED with the label in
    // pSourceData (empty allowed); a zero source with no data is taken as
    // the empty label too.
    if (oaep.source != CKZ_DATA_SPECIFIED &&
        !(oaep.source == 0 && oaep.ulSourceDataLen == 0)) {
      return ParamInvalid("OAEP source must be CKZ_DATA_SPECIFIED");
    }
    if (oaep.ulSourceDataLen != 0) {
      if (oaep.pSourceData == nullptr) {
        return ParamInvalid("OAEP label pointer is null");
      }
      const auto* label = static_cast<const uint8_t*>(oaep.pSourceData);
      params.label.assign(label, label + oaep.ulSourceDataLen);
    }
    hash_len = DigestLen(params.md);
    if (key->modulus_len() < 2 * hash_len + 2) {
      return CkError(CKR_KEY_SIZE_RANGE, "modulus too small for OAEP");
    }
    scheme = Scheme::kOaep;
  } else if (m == CKM_RSA_PKCS_PSS ||
             (hash_mech != 0 && m != CKM_DSA_SHA1 && m != CKM_DSA_SHA224 &&
              m != CKM_DSA_SHA256 && m != CKM_DSA_SHA384 &&
              m != CKM_DSA_SHA512)) {
    if (!sig_kind) {
      return CkError(CKR_MECHANISM_INVALID, "this mechanism only signs");
    }
    const bool pss =
        m == CKM_RSA_PKCS_PSS || m == CKM_SHA1_RSA_PKCS_PSS ||
        m == CKM_SHA224_RSA_PKCS_PSS || m == CKM_SHA256_RSA_PKCS_PSS ||
        m == CKM_SHA384_RSA_PKCS_PSS || m == CKM_SHA512_RSA_PKCS_PSS;
    if (pss) {
      if (mechanism.pParameter == nullptr ||
          mechanism.ulParameterLen != sizeof(CK_RSA_PKCS_PSS_PARAMS)) {
        return ParamInvalid("PSS needs CK_RSA_PKCS_PSS_PARAMS");
      }
      CK_RSA_PKCS_PSS_PARAMS pss_params;
      std::memcpy(&pss_params, mechanism.pParameter, sizeof(pss_params));
      params.padding = ACCELCRYPT_PAD_PSS;
      params.md = DigestAlg(pss_params.hashAlg);
      params.mgf1_md = MgfDigestAlg(pss_params.mgf);
      if (params.md == 0 || params.mgf1_md == 0) {
        return ParamInvalid("PSS hashAlg/mgf unknown");
      }
      // v2.40 2.1.14: for SHA*_RSA_PKCS_PSS hashAlg names the mechanism's
      // own hash.
      if (hash_mech != 0 && pss_params.hashAlg != hash_mech) {
        return ParamInvalid("PSS hashAlg differs from the mechanism's hash");
      }
      hash_len = DigestLen(params.md);
      // RFC 8017 9.1.1: emLen = ceil((modBits - 1) / 8) >= hLen + sLen + 2.
      const size_t em_len = (key->material().bits() - 1 + 7) / 8;
      if (pss_params.sLen > em_len || em_len < hash_len + pss_params.sLen + 2) {
        return ParamInvalid("PSS salt too long for this key");
      }
      params.salt_len = static_cast<int32_t>(pss_params.sLen);
      scheme = Scheme::kPss;
    } else {
      ACCELCRYPT_RETURN_IF_ERROR(NoParameter(mechanism));
      params.padding = ACCELCRYPT_PAD_PKCS1;
      scheme = Scheme::kPkcs1;
    }
    if (hash_mech != 0) {
      params.md = DigestAlg(hash_mech);
      ACCELCRYPT_ASSIGN_OR_RETURN(digest, MechanismDigest(core, params.md));
    }
  } else {
    return CkError(CKR_MECHANISM_INVALID, "not an RSA mechanism");
  }
  if (key->key_type() != CKK_RSA) {
    return CkError(CKR_KEY_TYPE_INCONSISTENT, "RSA mechanism needs an RSA key");
  }
  ACCELCRYPT_RETURN_IF_ERROR(CheckKeyClass(kind, *key));
  // The core operation each path ends in, so a missing capability is
  // refused here rather than looking like a bad signature later.
  accelcrypt_alg alg = ACCELCRYPT_ALG_RSA_SIGN;
  uint32_t padding = ACCELCRYPT_PAD_PKCS1;
  switch (scheme) {
    case Scheme::kPkcs1:
      if (kind == OpKind::kVerifyRecover) {
        alg = ACCELCRYPT_ALG_RSA_CRYPT;
        padding = ACCELCRYPT_PAD_NONE;
      } else if (enc_kind) {
        alg = ACCELCRYPT_ALG_RSA_CRYPT;
      }
      break;
    case Scheme::kX509:
      padding = ACCELCRYPT_PAD_NONE;
      if (kind != OpKind::kSign) alg = ACCELCRYPT_ALG_RSA_CRYPT;
      break;
    case Scheme::kPss:
      padding = ACCELCRYPT_PAD_PSS;
      break;
    case Scheme::kOaep:
      alg = ACCELCRYPT_ALG_RSA_CRYPT;
      padding = ACCELCRYPT_PAD_OAEP;
      break;
    case Scheme::kDsa:
      break;
  }
  ACCELCRYPT_RETURN_IF_ERROR(
      CheckOffered(core, alg, padding, key->material().bits()));
  return std::unique_ptr<Operation>(new PkeyOp(
      core, kind, scheme, std::move(key), params, std::move(digest), hash_len));
}

absl::StatusOr<std::unique_ptr<Operation>> NewDsaOperation(
    Core& core, OpKind kind, const CK_MECHANISM& mechanism,
    std::shared_ptr<AsymmetricKey> key) {
  const CK_MECHANISM_TYPE m = mechanism.mechanism;
  const CK_MECHANISM_TYPE hash_mech = HashOfMechanism(m);
  if (m != CKM_DSA &&
      !(hash_mech != 0 &&
        (m == CKM_DSA_SHA1 || m == CKM_DSA_SHA224 || m == CKM_DSA_SHA256 ||
         m == CKM_DSA_SHA384 || m == CKM_DSA_SHA512))) {
    return CkError(CKR_MECHANISM_INVALID, "not a DSA mechanism");
  }
  if (kind != OpKind::kSign && kind != OpKind::kVerify) {
    return CkError(CKR_MECHANISM_INVALID, "DSA only signs and verifies");
  }
  ACCELCRYPT_RETURN_IF_ERROR(NoParameter(mechanism));
  if (key->key_type() != CKK_DSA) {
    return CkError(CKR_KEY_TYPE_INCONSISTENT, "DSA mechanism needs a DSA key");
  }
  ACCELCRYPT_RETURN_IF_ERROR(CheckKeyClass(kind, *key));
  ACCELCRYPT_RETURN_IF_ERROR(CheckOffered(core, ACCELCRYPT_ALG_DSA_SIGN,
                                          Router::kAnyPadding,
                                          key->material().bits()));
  PkeyParams params;
  std::unique_ptr<Digest> digest;
  if (hash_mech != 0) {
    params.md = DigestAlg(hash_mech);
    ACCELCRYPT_ASSIGN_OR_RETURN(digest, MechanismDigest(core, params.md));
  }
  return std::unique_ptr<Operation>(new PkeyOp(
      core, kind, Scheme::kDsa, std::move(key), params, std::move(digest), 0));
}

}  // namespace accelcrypt::p11::internal
