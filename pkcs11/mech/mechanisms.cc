// SPDX-License-Identifier: Apache-2.0
// The module's crypto engine: mechanism table, key parsing, operation
// dispatch, key generation and the DRBG.
#include "pkcs11/mech/mechanisms.h"

#include <openssl/bn.h>
#include <openssl/crypto.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/algorithms.h"
#include "core/core.h"
#include "core/status.h"
#include "pkcs11/common/ck_error.h"
#include "pkcs11/mech/internal/mech_internal.h"
#include "pkcs11/mech/internal/private_libcrypto.h"

namespace accelcrypt::p11 {
namespace {

using internal::AsymmetricKey;
using internal::SecretKey;

enum class Group {
  kAes,
  kAesKeyGen,
  kDigest,
  kHmac,
  kSecretKeyGen,
  kRsa,
  kRsaKeyGen,
  kDsa,
  kDsaKeyGen,
};

struct MechRow {
  CK_MECHANISM_TYPE type;
  Group group;
  // The core algorithm the mechanism is routed to (Supports, CKF_HW).
  accelcrypt_alg alg;
  CK_FLAGS flags;
  // RSA: the padding (ACCELCRYPT_PAD_*) some backend must offer for the
  // mechanism to be listed.
  uint32_t padding = Router::kAnyPadding;
};

constexpr CK_FLAGS kCrypt = CKF_ENCRYPT | CKF_DECRYPT;
constexpr CK_FLAGS kSig = CKF_SIGN | CKF_VERIFY;

// The mechanisms of PKCS#11's own making: padding variants, key generation,
// HMAC, RSA and DSA with their hash combinations. The plain AES modes and
// digests come from the core's identity table (AlgorithmInfo::ckm), so a
// mode or digest the core gains is offered here without an edit.
constexpr MechRow kModuleMechanisms[] = {
    {CKM_AES_CBC_PAD, Group::kAes, ACCELCRYPT_ALG_AES_128_CBC, kCrypt},
    {CKM_AES_KEY_GEN, Group::kAesKeyGen, ACCELCRYPT_ALG_AES_128_ECB,
     CKF_GENERATE},
    {CKM_SHA_1_HMAC, Group::kHmac, ACCELCRYPT_ALG_SHA1, kSig},
    {CKM_SHA224_HMAC, Group::kHmac, ACCELCRYPT_ALG_SHA224, kSig},
    {CKM_SHA256_HMAC, Group::kHmac, ACCELCRYPT_ALG_SHA256, kSig},
    {CKM_SHA384_HMAC, Group::kHmac, ACCELCRYPT_ALG_SHA384, kSig},
    {CKM_SHA512_HMAC, Group::kHmac, ACCELCRYPT_ALG_SHA512, kSig},
    {CKM_GENERIC_SECRET_KEY_GEN, Group::kSecretKeyGen, 0, CKF_GENERATE},
    {CKM_RSA_PKCS_KEY_PAIR_GEN, Group::kRsaKeyGen, ACCELCRYPT_ALG_RSA_SIGN,
     CKF_GENERATE_KEY_PAIR},
    {CKM_RSA_PKCS, Group::kRsa, ACCELCRYPT_ALG_RSA_SIGN,
     kCrypt | kSig | CKF_VERIFY_RECOVER, ACCELCRYPT_PAD_PKCS1},
    {CKM_RSA_X_509, Group::kRsa, ACCELCRYPT_ALG_RSA_SIGN,
     kCrypt | kSig | CKF_VERIFY_RECOVER, ACCELCRYPT_PAD_NONE},
    {CKM_RSA_PKCS_PSS, Group::kRsa, ACCELCRYPT_ALG_RSA_SIGN, kSig,
     ACCELCRYPT_PAD_PSS},
    {CKM_SHA1_RSA_PKCS, Group::kRsa, ACCELCRYPT_ALG_RSA_SIGN, kSig,
     ACCELCRYPT_PAD_PKCS1},
    {CKM_SHA224_RSA_PKCS, Group::kRsa, ACCELCRYPT_ALG_RSA_SIGN, kSig,
     ACCELCRYPT_PAD_PKCS1},
    {CKM_SHA256_RSA_PKCS, Group::kRsa, ACCELCRYPT_ALG_RSA_SIGN, kSig,
     ACCELCRYPT_PAD_PKCS1},
    {CKM_SHA384_RSA_PKCS, Group::kRsa, ACCELCRYPT_ALG_RSA_SIGN, kSig,
     ACCELCRYPT_PAD_PKCS1},
    {CKM_SHA512_RSA_PKCS, Group::kRsa, ACCELCRYPT_ALG_RSA_SIGN, kSig,
     ACCELCRYPT_PAD_PKCS1},
    {CKM_SHA1_RSA_PKCS_PSS, Group::kRsa, ACCELCRYPT_ALG_RSA_SIGN, kSig,
     ACCELCRYPT_PAD_PSS},
    {CKM_SHA224_RSA_PKCS_PSS, Group::kRsa, ACCELCRYPT_ALG_RSA_SIGN, kSig,
     ACCELCRYPT_PAD_PSS},
    {CKM_SHA256_RSA_PKCS_PSS, Group::kRsa, ACCELCRYPT_ALG_RSA_SIGN, kSig,
     ACCELCRYPT_PAD_PSS},
    {CKM_SHA384_RSA_PKCS_PSS, Group::kRsa, ACCELCRYPT_ALG_RSA_SIGN, kSig,
     ACCELCRYPT_PAD_PSS},
    {CKM_SHA512_RSA_PKCS_PSS, Group::kRsa, ACCELCRYPT_ALG_RSA_SIGN, kSig,
     ACCELCRYPT_PAD_PSS},
    {CKM_RSA_PKCS_OAEP, Group::kRsa, ACCELCRYPT_ALG_RSA_CRYPT, kCrypt,
     ACCELCRYPT_PAD_OAEP},
    {CKM_DSA_KEY_PAIR_GEN, Group::kDsaKeyGen, ACCELCRYPT_ALG_DSA_SIGN,
     CKF_GENERATE_KEY_PAIR},
    {CKM_DSA, Group::kDsa, ACCELCRYPT_ALG_DSA_SIGN, kSig},
    {CKM_DSA_SHA1, Group::kDsa, ACCELCRYPT_ALG_DSA_SIGN, kSig},
    {CKM_DSA_SHA224, Group::kDsa, ACCELCRYPT_ALG_DSA_SIGN, kSig},
    {CKM_DSA_SHA256, Group::kDsa, ACCELCRYPT_ALG_DSA_SIGN, kSig},
    {CKM_DSA_SHA384, Group::kDsa, ACCELCRYPT_ALG_DSA_SIGN, kSig},
    {CKM_DSA_SHA512, Group::kDsa, ACCELCRYPT_ALG_DSA_SIGN, kSig},
};

// Rows returns the module's mechanism table: the identity table's AES
// modes (one row per mode, keyed by its 128-bit algorithm; Available and
// the operation pick the key size) and digests, then kModuleMechanisms.
// (A plain static: the module can be unloaded, and a heap object reached
// only from its static storage would then be lost.)
const std::vector<MechRow>& Rows() {
  static const std::vector<MechRow> rows = [] {
    std::vector<MechRow> out;
    for (const AlgorithmInfo& alg : AllAlgorithms()) {
      if (alg.ckm == 0) continue;
      if (alg.family == Family::kCipher && alg.key_len == 16) {
        out.push_back({alg.ckm, Group::kAes, alg.id, kCrypt});
      } else if (alg.family == Family::kDigest) {
        out.push_back({alg.ckm, Group::kDigest, alg.id, CKF_DIGEST});
      }
    }
    out.insert(out.end(), std::begin(kModuleMechanisms),
               std::end(kModuleMechanisms));
    return out;
  }();
  return rows;
}

const MechRow* FindRow(CK_MECHANISM_TYPE type) {
  for (const MechRow& row : Rows()) {
    if (row.type == type) return &row;
  }
  return nullptr;
}

size_t StrippedBits(absl::Span<const uint8_t> v) {
  while (!v.empty() && v.front() == 0) v.remove_prefix(1);
  if (v.empty()) return 0;
  size_t bits = (v.size() - 1) * 8;
  for (uint8_t top = v.front(); top != 0; top >>= 1) ++bits;
  return bits;
}

// Range is a key size range in bits; empty when min > max.
struct Range {
  size_t min = std::numeric_limits<size_t>::max();
  size_t max = 0;
  bool Holds(size_t bits) const { return bits >= min && bits <= max; }
};

class MechanismsImpl final : public Mechanisms {
 public:
  MechanismsImpl(Core* core, std::unique_ptr<internal::PrivateLibcrypto> lib)
      : core_(*core), lib_(std::move(lib)) {}

  std::vector<CK_MECHANISM_TYPE> List() const override {
    std::vector<CK_MECHANISM_TYPE> out;
    for (const MechRow& row : Rows()) {
      if (Available(row)) out.push_back(row.type);
    }
    return out;
  }

  absl::StatusOr<CK_MECHANISM_INFO> Info(
      CK_MECHANISM_TYPE type) const override {
    const MechRow* row = FindRow(type);
    if (row == nullptr || !Available(*row)) {
      return CkError(CKR_MECHANISM_INVALID, "mechanism not offered");
    }
    CK_MECHANISM_INFO info{};
    info.flags = row->flags;
    switch (row->group) {
      case Group::kAes:
      case Group::kAesKeyGen: {
        // Key sizes (bytes) some backend offers in this mode.
        const uint32_t mode = ACCELCRYPT_CIPHER_MODE(row->alg);
        info.ulMinKeySize = 32;
        info.ulMaxKeySize = 16;
        for (uint32_t key_len : {16u, 24u, 32u}) {
          if (core_.router().Supports(ACCELCRYPT_CIPHER_ALG(mode, key_len))) {
            info.ulMinKeySize = std::min<CK_ULONG>(info.ulMinKeySize, key_len);
            info.ulMaxKeySize = std::max<CK_ULONG>(info.ulMaxKeySize, key_len);
          }
        }
        break;
      }
      case Group::kHmac:
      case Group::kSecretKeyGen:
        info.ulMinKeySize = 1;
        info.ulMaxKeySize = internal::kMaxHmacKeyLen;
        break;
      case Group::kDigest:
        break;
      case Group::kRsa:
      case Group::kRsaKeyGen:
      case Group::kDsa:
      case Group::kDsaKeyGen: {
        Range r = KeyRange(row->alg);
        info.ulMinKeySize = r.min;
        info.ulMaxKeySize = r.max;
        break;
      }
    }
    // Key generation runs in libcrypto (software); the others are served
    // by the router's first choice.
    const bool keygen =
        row->group == Group::kAesKeyGen || row->group == Group::kSecretKeyGen ||
        row->group == Group::kRsaKeyGen || row->group == Group::kDsaKeyGen;
    if (!keygen && row->alg != 0 && core_.router().FirstIsHardware(row->alg)) {
      info.flags |= CKF_HW;
    }
    return info;
  }

  absl::StatusOr<std::shared_ptr<PreparedKey>> PrepareKey(
      const AttributeMap& key) const override {
    std::optional<CK_ULONG> cls = key.GetUlong(CKA_CLASS);
    std::optional<CK_ULONG> type = key.GetUlong(CKA_KEY_TYPE);
    if (!cls.has_value() || !type.has_value()) {
      return CkError(CKR_TEMPLATE_INCOMPLETE, "key without class or type");
    }
    if (*cls == CKO_SECRET_KEY) return PrepareSecret(*type, key);
    if (*cls != CKO_PUBLIC_KEY && *cls != CKO_PRIVATE_KEY) {
      return CkError(CKR_KEY_TYPE_INCONSISTENT, "not a key object");
    }
    if (*type == CKK_RSA) return PrepareRsa(*cls, key);
    if (*type == CKK_DSA) return PrepareDsa(*cls, key);
    return CkError(CKR_KEY_TYPE_INCONSISTENT, "unsupported key type");
  }

  absl::StatusOr<std::unique_ptr<Operation>> NewOperation(
      OpKind kind, const CK_MECHANISM& mechanism,
      std::shared_ptr<PreparedKey> key) override {
    const MechRow* row = FindRow(mechanism.mechanism);
    if (row == nullptr || !Available(*row)) {
      return CkError(CKR_MECHANISM_INVALID, "mechanism not offered");
    }
    if (mechanism.ulParameterLen != 0 && mechanism.pParameter == nullptr) {
      return CkError(CKR_MECHANISM_PARAM_INVALID,
                     "parameter length without a parameter");
    }
    if (row->group == Group::kDigest) {
      if (kind != OpKind::kDigest) {
        return CkError(CKR_MECHANISM_INVALID, "a digest only digests");
      }
      if (mechanism.ulParameterLen != 0) {
        return CkError(CKR_MECHANISM_PARAM_INVALID, "digests take no param");
      }
      return internal::NewDigestOperation(core_, mechanism.mechanism);
    }
    if (kind == OpKind::kDigest) {
      return CkError(CKR_MECHANISM_INVALID, "not a digest mechanism");
    }
    if (key == nullptr) {
      return CkError(CKR_KEY_HANDLE_INVALID, "operation needs a key");
    }
    switch (row->group) {
      case Group::kAes: {
        auto* secret = dynamic_cast<const SecretKey*>(key.get());
        if (secret == nullptr) {
          return CkError(CKR_KEY_TYPE_INCONSISTENT, "AES needs a secret key");
        }
        return internal::NewAesOperation(core_, kind, mechanism, *secret);
      }
      case Group::kHmac: {
        auto* secret = dynamic_cast<const SecretKey*>(key.get());
        if (secret == nullptr) {
          return CkError(CKR_KEY_TYPE_INCONSISTENT, "HMAC needs a secret key");
        }
        if (mechanism.ulParameterLen != 0) {
          return CkError(CKR_MECHANISM_PARAM_INVALID, "HMAC takes no param");
        }
        return internal::NewHmacOperation(core_, kind, mechanism.mechanism,
                                          *secret);
      }
      case Group::kRsa:
      case Group::kDsa: {
        auto pkey = std::dynamic_pointer_cast<AsymmetricKey>(key);
        if (pkey == nullptr) {
          return CkError(CKR_KEY_TYPE_INCONSISTENT,
                         "RSA/DSA mechanisms need an RSA/DSA key");
        }
        return row->group == Group::kRsa
                   ? internal::NewRsaOperation(core_, kind, mechanism,
                                               std::move(pkey))
                   : internal::NewDsaOperation(core_, kind, mechanism,
                                               std::move(pkey));
      }
      default:
        return CkError(CKR_MECHANISM_INVALID,
                       "key generation mechanism used for an operation");
    }
  }

  absl::StatusOr<std::unique_ptr<Operation>> RestoreDigest(
      absl::Span<const uint8_t> state) override {
    return internal::RestoreDigestOperation(core_, state);
  }

  absl::StatusOr<AttributeMap> GenerateKey(const CK_MECHANISM& mechanism,
                                           const AttributeMap& tmpl) override {
    const MechRow* row = FindRow(mechanism.mechanism);
    if (row == nullptr || !Available(*row) ||
        (row->group != Group::kAesKeyGen &&
         row->group != Group::kSecretKeyGen)) {
      return CkError(CKR_MECHANISM_INVALID, "not a secret key generation");
    }
    if (mechanism.ulParameterLen != 0) {
      return CkError(CKR_MECHANISM_PARAM_INVALID, "key generation param");
    }
    const bool aes = row->group == Group::kAesKeyGen;
    const CK_KEY_TYPE key_type = aes ? CKK_AES : CKK_GENERIC_SECRET;
    ACCELCRYPT_RETURN_IF_ERROR(
        CheckTemplateClass(tmpl, CKO_SECRET_KEY, key_type));
    if (!tmpl.Has(CKA_VALUE_LEN)) {
      return CkError(CKR_TEMPLATE_INCOMPLETE, "CKA_VALUE_LEN is required");
    }
    std::optional<CK_ULONG> len = tmpl.GetUlong(CKA_VALUE_LEN);
    if (!len.has_value()) {
      return CkError(CKR_ATTRIBUTE_VALUE_INVALID, "CKA_VALUE_LEN malformed");
    }
    if (aes ? (*len != 16 && *len != 24 && *len != 32)
            : (*len < 1 || *len > internal::kMaxHmacKeyLen)) {
      return CkError(CKR_KEY_SIZE_RANGE, "key length out of range");
    }
    SecretBytes value(*len);
    ACCELCRYPT_RETURN_IF_ERROR(lib_->Random(value.mutable_span()));
    AttributeMap out;
    out.SetUlong(CKA_CLASS, CKO_SECRET_KEY);
    out.SetUlong(CKA_KEY_TYPE, key_type);
    out.Set(CKA_VALUE, value.span());
    out.SetUlong(CKA_VALUE_LEN, *len);
    return out;
  }

  absl::StatusOr<std::pair<AttributeMap, AttributeMap>> GenerateKeyPair(
      const CK_MECHANISM& mechanism, const AttributeMap& public_tmpl,
      const AttributeMap& private_tmpl) override {
    const MechRow* row = FindRow(mechanism.mechanism);
    if (row == nullptr || !Available(*row) ||
        (row->group != Group::kRsaKeyGen && row->group != Group::kDsaKeyGen)) {
      return CkError(CKR_MECHANISM_INVALID, "not a key pair generation");
    }
    if (mechanism.ulParameterLen != 0) {
      return CkError(CKR_MECHANISM_PARAM_INVALID, "key generation param");
    }
    const CK_KEY_TYPE key_type =
        row->group == Group::kRsaKeyGen ? CKK_RSA : CKK_DSA;
    ACCELCRYPT_RETURN_IF_ERROR(
        CheckTemplateClass(public_tmpl, CKO_PUBLIC_KEY, key_type));
    ACCELCRYPT_RETURN_IF_ERROR(
        CheckTemplateClass(private_tmpl, CKO_PRIVATE_KEY, key_type));
    const Range range = KeyRange(row->alg);
    if (key_type == CKK_RSA) {
      if (!public_tmpl.Has(CKA_MODULUS_BITS)) {
        return CkError(CKR_TEMPLATE_INCOMPLETE, "CKA_MODULUS_BITS required");
      }
      std::optional<CK_ULONG> bits = public_tmpl.GetUlong(CKA_MODULUS_BITS);
      if (!bits.has_value()) {
        return CkError(CKR_ATTRIBUTE_VALUE_INVALID,
                       "CKA_MODULUS_BITS malformed");
      }
      if (!range.Holds(*bits)) {
        return CkError(
            CKR_KEY_SIZE_RANGE,
            absl::StrFormat("RSA keys are %d..%d bits", range.min, range.max));
      }
      std::vector<uint8_t> e = {0x01, 0x00, 0x01};
      if (const SecretBytes* given = public_tmpl.Find(CKA_PUBLIC_EXPONENT)) {
        e.assign(given->span().begin(), given->span().end());
        // An RSA public exponent is odd and > 1 (RFC 8017 3.1); at most
        // 256 bits as FIPS 186-4 B.3.1 allows.
        if (StrippedBits(e) < 2 || StrippedBits(e) > 256 ||
            (e.back() & 1) == 0) {
          return CkError(CKR_ATTRIBUTE_VALUE_INVALID,
                         "CKA_PUBLIC_EXPONENT must be odd, > 1, <= 256 bits");
        }
      }
      return lib_->GenerateRsa(*bits, e);
    }
    const SecretBytes* p = public_tmpl.Find(CKA_PRIME);
    const SecretBytes* q = public_tmpl.Find(CKA_SUBPRIME);
    const SecretBytes* g = public_tmpl.Find(CKA_BASE);
    if (p == nullptr || q == nullptr || g == nullptr) {
      return CkError(CKR_TEMPLATE_INCOMPLETE,
                     "DSA needs CKA_PRIME, CKA_SUBPRIME and CKA_BASE");
    }
    if (!range.Holds(StrippedBits(p->span()))) {
      return CkError(
          CKR_KEY_SIZE_RANGE,
          absl::StrFormat("DSA primes are %d..%d bits", range.min, range.max));
    }
    const size_t q_bits = StrippedBits(q->span());
    if (q_bits != 160 && q_bits != 224 && q_bits != 256) {
      return CkError(CKR_ATTRIBUTE_VALUE_INVALID,
                     "DSA subprime must be 160, 224 or 256 bits");
    }
    return lib_->GenerateDsa(p->span(), q->span(), g->span());
  }

  absl::Status GenerateRandom(absl::Span<uint8_t> out) override {
    return lib_->Random(out);
  }
  absl::Status SeedRandom(absl::Span<const uint8_t> seed) override {
    return lib_->Seed(seed);
  }

 private:
  bool Available(const MechRow& row) const {
    Router& router = core_.router();
    switch (row.group) {
      case Group::kAes:
      case Group::kAesKeyGen: {
        const uint32_t mode = ACCELCRYPT_CIPHER_MODE(row.alg);
        for (uint32_t key_len : {16u, 24u, 32u}) {
          if (router.Supports(ACCELCRYPT_CIPHER_ALG(mode, key_len))) {
            return true;
          }
        }
        return false;
      }
      case Group::kSecretKeyGen:
        return true;
      case Group::kRsa:
        return router.OfferedKeys(row.alg, row.padding).offered;
      default:
        return router.Supports(row.alg);
    }
  }

  // KeyRange is the union of the key sizes the routed backends taking key
  // material offer for `alg` (the router answers).
  Range KeyRange(accelcrypt_alg alg) const {
    const Router::KeyOffer offer = core_.router().OfferedKeys(alg);
    Range r;
    r.min = offer.min_bits;
    r.max = offer.max_bits;
    return r;
  }

  static absl::Status CheckTemplateClass(const AttributeMap& tmpl,
                                         CK_OBJECT_CLASS cls,
                                         CK_KEY_TYPE type) {
    if (tmpl.Has(CKA_CLASS) && tmpl.GetUlong(CKA_CLASS) != cls) {
      return CkError(CKR_TEMPLATE_INCONSISTENT,
                     "CKA_CLASS does not match the mechanism");
    }
    if (tmpl.Has(CKA_KEY_TYPE) && tmpl.GetUlong(CKA_KEY_TYPE) != type) {
      return CkError(CKR_TEMPLATE_INCONSISTENT,
                     "CKA_KEY_TYPE does not match the mechanism");
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::shared_ptr<PreparedKey>> PrepareSecret(
      CK_KEY_TYPE type, const AttributeMap& key) const {
    const SecretBytes* value = key.Find(CKA_VALUE);
    if (value == nullptr) {
      return CkError(CKR_TEMPLATE_INCOMPLETE, "secret key without CKA_VALUE");
    }
    switch (type) {
      case CKK_AES:
        if (value->size() != 16 && value->size() != 24 && value->size() != 32) {
          return CkError(CKR_KEY_SIZE_RANGE, "AES keys are 16, 24, 32 bytes");
        }
        break;
      case CKK_GENERIC_SECRET:
      case CKK_SHA_1_HMAC:
      case CKK_SHA224_HMAC:
      case CKK_SHA256_HMAC:
      case CKK_SHA384_HMAC:
      case CKK_SHA512_HMAC:
        if (value->empty() || value->size() > internal::kMaxHmacKeyLen) {
          return CkError(CKR_KEY_SIZE_RANGE, "secret key length out of range");
        }
        break;
      default:
        return CkError(CKR_KEY_TYPE_INCONSISTENT, "unsupported secret key");
    }
    return std::shared_ptr<PreparedKey>(
        std::make_shared<SecretKey>(type, value->span()));
  }

  absl::StatusOr<std::shared_ptr<PreparedKey>> MakeAsymmetric(
      CK_KEY_TYPE type, CK_OBJECT_CLASS cls, KeyMaterial material) const {
    const Range range = KeyRange(type == CKK_RSA ? ACCELCRYPT_ALG_RSA_SIGN
                                                 : ACCELCRYPT_ALG_DSA_SIGN);
    if (!range.Holds(material.bits())) {
      return CkError(
          CKR_KEY_SIZE_RANGE,
          absl::StrFormat("%d-bit key: no backend takes it", material.bits()));
    }
    auto ops = core_.router().NewPublicKeyOps(std::move(material));
    if (!ops.ok()) {
      if (IsDeviceError(ops.status())) return ops.status();
      return CkError(CKR_KEY_SIZE_RANGE, AsStd(ops.status().message()));
    }
    return std::shared_ptr<PreparedKey>(std::make_shared<AsymmetricKey>(
        type, cls, std::shared_ptr<PublicKeyOps>(std::move(*ops))));
  }

  absl::StatusOr<std::shared_ptr<PreparedKey>> PrepareRsa(
      CK_OBJECT_CLASS cls, const AttributeMap& key) const {
    KeyMaterial m;
    m.type = KeyMaterial::Type::kRsa;
    m.n = key.GetBytes(CKA_MODULUS);
    m.e = key.GetBytes(CKA_PUBLIC_EXPONENT);
    if (m.n.empty() || m.e.empty()) {
      return CkError(CKR_TEMPLATE_INCOMPLETE,
                     "RSA key needs CKA_MODULUS and CKA_PUBLIC_EXPONENT");
    }
    if (cls == CKO_PRIVATE_KEY) {
      m.d = key.GetBytes(CKA_PRIVATE_EXPONENT);
      if (m.d.empty()) {
        return CkError(CKR_TEMPLATE_INCOMPLETE,
                       "RSA private key needs CKA_PRIVATE_EXPONENT");
      }
      m.p = key.GetBytes(CKA_PRIME_1);
      m.q = key.GetBytes(CKA_PRIME_2);
      m.dmp1 = key.GetBytes(CKA_EXPONENT_1);
      m.dmq1 = key.GetBytes(CKA_EXPONENT_2);
      m.iqmp = key.GetBytes(CKA_COEFFICIENT);
      // CRT values are used all together or not at all.
      if (m.p.empty() || m.q.empty() || m.dmp1.empty() || m.dmq1.empty() ||
          m.iqmp.empty()) {
        m.p.clear();
        m.q.clear();
        m.dmp1.clear();
        m.dmq1.clear();
        m.iqmp.clear();
      }
    }
    return MakeAsymmetric(CKK_RSA, cls, std::move(m));
  }

  absl::StatusOr<std::shared_ptr<PreparedKey>> PrepareDsa(
      CK_OBJECT_CLASS cls, const AttributeMap& key) const {
    KeyMaterial m;
    m.type = KeyMaterial::Type::kDsa;
    m.dsa_p = key.GetBytes(CKA_PRIME);
    m.dsa_q = key.GetBytes(CKA_SUBPRIME);
    m.dsa_g = key.GetBytes(CKA_BASE);
    std::vector<uint8_t> value = key.GetBytes(CKA_VALUE);
    if (m.dsa_p.empty() || m.dsa_q.empty() || m.dsa_g.empty() ||
        value.empty()) {
      return CkError(CKR_TEMPLATE_INCOMPLETE,
                     "DSA key needs CKA_PRIME, SUBPRIME, BASE and VALUE");
    }
    if (cls == CKO_PUBLIC_KEY) {
      m.dsa_y = std::move(value);
    } else {
      m.dsa_x = std::move(value);
      // A PKCS#11 DSA private key holds x only; the core's key material
      // wants y too: y = g^x mod p (constant time in x).
      ACCELCRYPT_ASSIGN_OR_RETURN(m.dsa_y, DsaPublic(m));
    }
    return MakeAsymmetric(CKK_DSA, cls, std::move(m));
  }

  absl::StatusOr<std::vector<uint8_t>> DsaPublic(const KeyMaterial& m) const {
    BN_CTX* ctx = BN_CTX_new_ex(lib_->libctx());
    BIGNUM* p =
        BN_bin2bn(m.dsa_p.data(), static_cast<int>(m.dsa_p.size()), nullptr);
    BIGNUM* g =
        BN_bin2bn(m.dsa_g.data(), static_cast<int>(m.dsa_g.size()), nullptr);
    BIGNUM* x = BN_secure_new();
    BIGNUM* y = BN_new();
    bool ok = ctx != nullptr && p != nullptr && g != nullptr && x != nullptr &&
              y != nullptr &&
              BN_bin2bn(m.dsa_x.data(), static_cast<int>(m.dsa_x.size()), x) !=
                  nullptr &&
              !BN_is_zero(p) && BN_is_odd(p);
    if (ok) {
      BN_set_flags(x, BN_FLG_CONSTTIME);
      ok = BN_mod_exp_mont_consttime(y, g, x, p, ctx, nullptr) == 1;
    }
    std::vector<uint8_t> out;
    if (ok) {
      out.resize(static_cast<size_t>(BN_num_bytes(y)));
      BN_bn2bin(y, out.data());
    }
    BN_free(p);
    BN_free(g);
    BN_clear_free(x);
    BN_free(y);
    BN_CTX_free(ctx);
    if (!ok) {
      return CkError(CKR_KEY_TYPE_INCONSISTENT, "DSA domain parameters");
    }
    return out;
  }

  Core& core_;
  std::unique_ptr<internal::PrivateLibcrypto> lib_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Mechanisms>> Mechanisms::Create(Core* core) {
  if (core == nullptr) {
    return CkError(CKR_GENERAL_ERROR, "Mechanisms need a core");
  }
  ACCELCRYPT_ASSIGN_OR_RETURN(
      auto lib, internal::PrivateLibcrypto::Create(&core->router()));
  return std::unique_ptr<Mechanisms>(new MechanismsImpl(core, std::move(lib)));
}

}  // namespace accelcrypt::p11
