// SPDX-License-Identifier: Apache-2.0
// PkeyPkcs11Client's key (pkey_pkcs11_client.h): Load, from key material
// (the import templates and the public-key fingerprint the token's key
// cache is keyed by) or from a `pkcs11:` URI naming token objects (whose
// public parts it can report), and the key's sizes. The operations are in
// pkey_pkcs11_client.cc.
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "backends/pkcs11/pkey_pkcs11_client.h"

namespace accelcrypt::pkcs11_client {
namespace {

std::vector<uint8_t> Copy(const accelcrypt_bn& bn) {
  size_t i = 0;
  while (i < bn.len && bn.data[i] == 0) ++i;  // minimal big-endian
  return std::vector<uint8_t>(bn.data + i, bn.data + bn.len);
}

size_t BitLength(const std::vector<uint8_t>& v) {
  if (v.empty()) return 0;
  size_t bits = (v.size() - 1) * 8;
  for (uint8_t top = v[0]; top != 0; top >>= 1) ++bits;
  return bits;
}

void Wipe(std::vector<uint8_t>* v) {
  if (!v->empty()) OPENSSL_cleanse(v->data(), v->size());
}

// ReportPublic reads the public parts of a token key (from the public key
// object when there is one, else from the private key object's public
// attributes) and hands them to `sink`. DSA y exists on the public object
// only (the private object's CKA_VALUE is x and is never read).
absl::Status ReportPublic(Token* token, const KeyObjects& objects, bool rsa,
                          const accelcrypt_key_public_sink& sink) {
  struct Part {
    CK_ATTRIBUTE_TYPE attr;
    uint32_t part;
    bool public_object_only;
  };
  static constexpr Part kRsaParts[] = {
      {CKA_MODULUS, ACCELCRYPT_KEY_PART_RSA_N, false},
      {CKA_PUBLIC_EXPONENT, ACCELCRYPT_KEY_PART_RSA_E, false}};
  static constexpr Part kDsaParts[] = {
      {CKA_PRIME, ACCELCRYPT_KEY_PART_DSA_P, false},
      {CKA_SUBPRIME, ACCELCRYPT_KEY_PART_DSA_Q, false},
      {CKA_BASE, ACCELCRYPT_KEY_PART_DSA_G, false},
      {CKA_VALUE, ACCELCRYPT_KEY_PART_DSA_Y, true}};
  for (const Part& part : rsa ? absl::Span<const Part>(kRsaParts)
                              : absl::Span<const Part>(kDsaParts)) {
    CK_OBJECT_HANDLE from = objects.pub;
    if (from == CK_INVALID_HANDLE) {
      if (part.public_object_only) continue;
      from = objects.priv;
    }
    absl::StatusOr<std::vector<uint8_t>> value =
        token->GetAttribute(from, part.attr);
    if (!value.ok()) {
      return absl::Status(
          value.status().code(),
          absl::StrFormat("pkcs11: reading the public parts of the URI's key: "
                          "%s",
                          value.status().message()));
    }
    if (value->empty()) continue;
    sink.put(sink.arg, part.part, value->data(), value->size());
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<PkeyPkcs11Client>> PkeyPkcs11Client::Load(
    Token* token, OSSL_LIB_CTX* libctx, const KeyLimits& limits,
    const accelcrypt_key_desc& desc) {
  std::unique_ptr<PkeyPkcs11Client> k(new PkeyPkcs11Client());
  k->token_ = token;
  k->libctx_ = libctx;
  k->rsa_ = desc.alg != ACCELCRYPT_ALG_DSA_SIGN;
  const bool has_material = k->rsa_ ? desc.n.len != 0 : desc.dsa_p.len != 0;
  if (desc.uri != nullptr && *desc.uri != '\0') {
    absl::StatusOr<KeyObjects> found = token->FindByUri(desc.uri);
    if (found.ok()) {
      k->uri_ = desc.uri;
      k->private_ = found->priv != CK_INVALID_HANDLE;
      CK_OBJECT_HANDLE any =
          found->pub != CK_INVALID_HANDLE ? found->pub : found->priv;
      absl::StatusOr<std::vector<uint8_t>> type_attr =
          token->GetAttribute(any, CKA_KEY_TYPE);
      if (!type_attr.ok()) return type_attr.status();
      CK_KEY_TYPE type = CKK_VENDOR_DEFINED;
      if (type_attr->size() == sizeof(type)) {
        std::memcpy(&type, type_attr->data(), sizeof(type));
      }
      if (type != CKK_RSA && type != CKK_DSA) {
        return absl::UnimplementedError(
            "pkcs11: the URI names a key that is neither RSA nor DSA");
      }
      const bool is_rsa = type == CKK_RSA;
      // The descriptor is versioned: it has public_out when its size
      // reaches past that field, a pointer (its size, on purpose).
      const size_t public_out_end =
          offsetof(accelcrypt_key_desc, public_out) +
          // NOLINTNEXTLINE(bugprone-sizeof-expression)
          sizeof(desc.public_out);
      const accelcrypt_key_public_sink* sink =
          desc.struct_size >= public_out_end ? desc.public_out : nullptr;
      if (sink != nullptr && sink->put != nullptr) {
        absl::Status st = ReportPublic(token, *found, is_rsa, *sink);
        if (!st.ok()) return st;
      }
      if (is_rsa != k->rsa_) {
        return absl::UnimplementedError(
            absl::StrFormat("pkcs11: the URI names a %s key, not %s",
                            is_rsa ? "RSA" : "DSA", k->rsa_ ? "RSA" : "DSA"));
      }
      absl::StatusOr<std::vector<uint8_t>> size_attr =
          token->GetAttribute(any, k->rsa_ ? CKA_MODULUS : CKA_SUBPRIME);
      if (!size_attr.ok()) return size_attr.status();
      std::vector<uint8_t> v = *size_attr;
      accelcrypt_bn bn{v.data(), v.size()};
      std::vector<uint8_t> min = Copy(bn);
      (k->rsa_ ? k->mod_len_ : k->q_len_) = min.size();
      if (k->rsa_) k->uri_mod_bits_ = BitLength(min);
      return k;
    }
    if (!has_material) return found.status();
  }
  if (!has_material) {
    return absl::UnimplementedError("pkcs11: the key has no key material");
  }
  if (k->rsa_) {
    k->n_ = Copy(desc.n);
    k->e_ = Copy(desc.e);
    k->d_ = Copy(desc.d);
    k->p_ = Copy(desc.p);
    k->q_ = Copy(desc.q);
    k->dmp1_ = Copy(desc.dmp1);
    k->dmq1_ = Copy(desc.dmq1);
    k->iqmp_ = Copy(desc.iqmp);
    k->private_ = !k->d_.empty();
    k->mod_len_ = k->n_.size();
  } else {
    k->dp_ = Copy(desc.dsa_p);
    k->dq_ = Copy(desc.dsa_q);
    k->dg_ = Copy(desc.dsa_g);
    k->dy_ = Copy(desc.dsa_y);
    k->dx_ = Copy(desc.dsa_x);
    k->private_ = !k->dx_.empty();
    k->q_len_ = k->dq_.size();
    k->key_type_ = CKK_DSA;
  }
  // Tokens trust their templates: an empty integer can crash one
  // (SoftHSMv2 dereferences a missing exponent at C_Verify).
  if (k->rsa_ ? (k->n_.empty() || k->e_.empty())
              : (k->dp_.empty() || k->dq_.empty() || k->dg_.empty() ||
                 k->dy_.empty())) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "pkcs11: %s key lacks a public part", k->rsa_ ? "RSA" : "DSA"));
  }
  size_t bits = BitLength(k->rsa_ ? k->n_ : k->dp_);
  size_t lo = k->rsa_ ? limits.rsa_min : limits.dsa_min;
  size_t hi = k->rsa_ ? limits.rsa_max : limits.dsa_max;
  if (bits < lo || bits > hi) {
    return absl::UnimplementedError(absl::StrFormat(
        "pkcs11: %s keys of %d bits are not served by this token (%d..%d)",
        k->rsa_ ? "RSA" : "DSA", bits, lo, hi));
  }
  // Fingerprint: SHA-256 over the public key, length-prefixed parts, plus
  // whether the private half is present (a public-only import differs).
  std::vector<uint8_t> pub;
  auto add = [&pub](const std::vector<uint8_t>& v) {
    for (int shift = 24; shift >= 0; shift -= 8) {
      pub.push_back(static_cast<uint8_t>(v.size() >> shift));
    }
    pub.insert(pub.end(), v.begin(), v.end());
  };
  if (k->rsa_) {
    add(k->n_);
    add(k->e_);
  } else {
    add(k->dp_);
    add(k->dq_);
    add(k->dg_);
    add(k->dy_);
  }
  uint8_t md[32];
  size_t md_len = 0;
  if (!EVP_Q_digest(libctx, "SHA2-256", nullptr, pub.data(), pub.size(), md,
                    &md_len)) {
    return absl::InternalError("pkcs11: fingerprint digest failed");
  }
  k->fingerprint_ = absl::StrFormat("%s%s:", k->rsa_ ? "rsa" : "dsa",
                                    k->private_ ? "-priv" : "-pub");
  for (size_t i = 0; i < md_len; ++i) {
    k->fingerprint_ += absl::StrFormat("%02x", md[i]);
  }
  k->BuildTemplates();
  // Import now, so a token that refuses the key says so at load.
  absl::StatusOr<KeyObjects> objects = k->Objects();
  if (!objects.ok()) return objects.status();
  return k;
}

PkeyPkcs11Client::~PkeyPkcs11Client() {
  for (auto* v : {&d_, &p_, &q_, &dmp1_, &dmq1_, &iqmp_, &dx_}) Wipe(v);
  // A URI may carry a PIN (pin-value).
  if (!uri_.empty()) OPENSSL_cleanse(uri_.data(), uri_.size());
}

void PkeyPkcs11Client::BuildTemplates() {
  auto attr = [](CK_ATTRIBUTE_TYPE t, void* v, size_t n) {
    return CK_ATTRIBUTE{t, v, static_cast<CK_ULONG>(n)};
  };
  auto bn = [&](CK_ATTRIBUTE_TYPE t, std::vector<uint8_t>& v) {
    return attr(t, v.data(), v.size());
  };
  Token::Attrs pub{attr(CKA_CLASS, &pub_class_, sizeof(pub_class_)),
                   attr(CKA_KEY_TYPE, &key_type_, sizeof(key_type_)),
                   attr(CKA_TOKEN, &false_, sizeof(false_)),
                   attr(CKA_VERIFY, &true_, sizeof(true_))};
  Token::Attrs priv{
      attr(CKA_CLASS, &priv_class_, sizeof(priv_class_)),
      attr(CKA_KEY_TYPE, &key_type_, sizeof(key_type_)),
      attr(CKA_TOKEN, &false_, sizeof(false_)),
      // Not logged in, a session may create public objects
      // only; the key stays sensitive and non-extractable.
      attr(CKA_PRIVATE, token_->logged_in() ? &true_ : &false_, sizeof(true_)),
      attr(CKA_SENSITIVE, &true_, sizeof(true_)),
      attr(CKA_EXTRACTABLE, &false_, sizeof(false_)),
      attr(CKA_SIGN, &true_, sizeof(true_))};
  if (rsa_) {
    pub.push_back(attr(CKA_ENCRYPT, &true_, sizeof(true_)));
    pub.push_back(bn(CKA_MODULUS, n_));
    pub.push_back(bn(CKA_PUBLIC_EXPONENT, e_));
    priv.push_back(attr(CKA_DECRYPT, &true_, sizeof(true_)));
    priv.push_back(bn(CKA_MODULUS, n_));
    priv.push_back(bn(CKA_PUBLIC_EXPONENT, e_));
    priv.push_back(bn(CKA_PRIVATE_EXPONENT, d_));
    if (!p_.empty() && !q_.empty() && !dmp1_.empty() && !dmq1_.empty() &&
        !iqmp_.empty()) {
      priv.push_back(bn(CKA_PRIME_1, p_));
      priv.push_back(bn(CKA_PRIME_2, q_));
      priv.push_back(bn(CKA_EXPONENT_1, dmp1_));
      priv.push_back(bn(CKA_EXPONENT_2, dmq1_));
      priv.push_back(bn(CKA_COEFFICIENT, iqmp_));
    }
  } else {
    for (Token::Attrs* t : {&pub, &priv}) {
      t->push_back(bn(CKA_PRIME, dp_));
      t->push_back(bn(CKA_SUBPRIME, dq_));
      t->push_back(bn(CKA_BASE, dg_));
    }
    pub.push_back(bn(CKA_VALUE, dy_));
    priv.push_back(bn(CKA_VALUE, dx_));
  }
  pub_template_ = std::move(pub);
  if (private_) priv_template_ = std::move(priv);
}

absl::StatusOr<KeyObjects> PkeyPkcs11Client::Objects() {
  if (!uri_.empty()) return token_->FindByUri(uri_);
  return token_->Objects(fingerprint_, priv_template_, pub_template_);
}

size_t PkeyPkcs11Client::ModBits() const {
  return n_.empty() ? uri_mod_bits_ : BitLength(n_);
}

}  // namespace accelcrypt::pkcs11_client
