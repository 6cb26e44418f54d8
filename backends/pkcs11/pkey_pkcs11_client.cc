// SPDX-License-Identifier: Apache-2.0
#include "backends/pkcs11/pkey_pkcs11_client.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "accelcrypt/kit/dsa_sig.h"
#include "backends/pkcs11/ck_status.h"

namespace accelcrypt::pkcs11_client {

// MdInfo is one digest as the padding code needs it.
struct MdInfo {
  accelcrypt_alg md;
  CK_MECHANISM_TYPE ckm;
  CK_RSA_PKCS_MGF_TYPE mgf;
  size_t len;
  // DER DigestInfo prefix (RFC 8017 section 9.2, note 1).
  const char* prefix;
  size_t prefix_len;
  const char* ossl_name;  // for EVP_MD_fetch
};

namespace {

constexpr MdInfo kMds[] = {
    {ACCELCRYPT_ALG_SHA1, CKM_SHA_1, CKG_MGF1_SHA1, 20,
     "\x30\x21\x30\x09\x06\x05\x2b\x0e\x03\x02\x1a\x05\x00\x04\x14", 15, "SHA1"},
    {ACCELCRYPT_ALG_SHA224, CKM_SHA224, CKG_MGF1_SHA224, 28,
     "\x30\x2d\x30\x0d\x06\x09\x60\x86\x48\x01\x65\x03\x04\x02\x04\x05\x00\x04"
     "\x1c",
     19, "SHA2-224"},
    {ACCELCRYPT_ALG_SHA256, CKM_SHA256, CKG_MGF1_SHA256, 32,
     "\x30\x31\x30\x0d\x06\x09\x60\x86\x48\x01\x65\x03\x04\x02\x01\x05\x00\x04"
     "\x20",
     19, "SHA2-256"},
    {ACCELCRYPT_ALG_SHA384, CKM_SHA384, CKG_MGF1_SHA384, 48,
     "\x30\x41\x30\x0d\x06\x09\x60\x86\x48\x01\x65\x03\x04\x02\x02\x05\x00\x04"
     "\x30",
     19, "SHA2-384"},
    {ACCELCRYPT_ALG_SHA512, CKM_SHA512, CKG_MGF1_SHA512, 64,
     "\x30\x51\x30\x0d\x06\x09\x60\x86\x48\x01\x65\x03\x04\x02\x03\x05\x00\x04"
     "\x40",
     19, "SHA2-512"},
};

const MdInfo* FindMd(accelcrypt_alg md) {
  for (const MdInfo& m : kMds) {
    if (m.md == md) return &m;
  }
  return nullptr;
}

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

bool StaleHandle(CK_RV rv) {
  return rv == CKR_KEY_HANDLE_INVALID || rv == CKR_OBJECT_HANDLE_INVALID;
}

bool SessionBroken(CK_RV rv) {
  // CKR_BUFFER_TOO_SMALL leaves the operation active (v2.40 5.2): the
  // session is not handed out again with it.
  return rv == CKR_SESSION_HANDLE_INVALID || rv == CKR_SESSION_CLOSED ||
         rv == CKR_DEVICE_ERROR || rv == CKR_DEVICE_REMOVED ||
         rv == CKR_TOKEN_NOT_PRESENT || rv == CKR_GENERAL_ERROR ||
         rv == CKR_OPERATION_ACTIVE || rv == CKR_USER_NOT_LOGGED_IN ||
         rv == CKR_BUFFER_TOO_SMALL || rv == CKR_DEVICE_MEMORY ||
         rv == CKR_FUNCTION_FAILED;
}

// A mechanism or its parameters refused at C_*Init is the token's limit
// (SoftHSMv2 takes OAEP with SHA-1 only), not the caller's error: marked
// with a vendor code that Run turns into kUnimplemented, so the router
// asks the next backend.
constexpr CK_RV kParamsUnsupported = CKR_VENDOR_DEFINED | 0x4143u;

// A C_Decrypt failure that the token's quirk (TokenQuirks) says is the
// caller's bad ciphertext, though the token reported a device error: Run
// turns it into kInvalidArgument, and the session stays in the pool.
constexpr CK_RV kBadCiphertext = CKR_VENDOR_DEFINED | 0x4144u;

CK_RV InitFailed(CK_RV rv) {
  if (rv == CKR_ARGUMENTS_BAD || rv == CKR_MECHANISM_PARAM_INVALID ||
      rv == CKR_MECHANISM_INVALID) {
    return kParamsUnsupported;
  }
  return rv;
}

absl::Status OutOfRange(size_t need, size_t* out_len) {
  *out_len = need;
  return absl::OutOfRangeError(absl::StrFormat(
      "pkcs11: output buffer too small (%d bytes needed)", need));
}

// Hash runs `md` over the concatenation of `parts` in the backend's private
// library context.
bool Hash(OSSL_LIB_CTX* libctx, const MdInfo& md,
          std::initializer_list<std::pair<const uint8_t*, size_t>> parts,
          uint8_t* out) {
  EVP_MD* evp = EVP_MD_fetch(libctx, md.ossl_name, nullptr);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  bool ok = evp != nullptr && ctx != nullptr &&
            EVP_DigestInit_ex(ctx, evp, nullptr) == 1;
  for (const auto& [p, n] : parts) {
    ok = ok && EVP_DigestUpdate(ctx, p, n) == 1;
  }
  ok = ok && EVP_DigestFinal_ex(ctx, out, nullptr) == 1;
  EVP_MD_CTX_free(ctx);
  EVP_MD_free(evp);
  return ok;
}

// Mgf1Xor XORs MGF1(seed) (RFC 8017 appendix B.2.1) into out[0..len).
bool Mgf1Xor(OSSL_LIB_CTX* libctx, const MdInfo& md, const uint8_t* seed,
             size_t seed_len, uint8_t* out, size_t len) {
  uint8_t block[64];
  size_t done = 0;
  for (uint32_t counter = 0; done < len; ++counter) {
    uint8_t c[4] = {static_cast<uint8_t>(counter >> 24),
                    static_cast<uint8_t>(counter >> 16),
                    static_cast<uint8_t>(counter >> 8),
                    static_cast<uint8_t>(counter)};
    if (!Hash(libctx, md, {{seed, seed_len}, {c, 4}}, block)) return false;
    for (size_t i = 0; i < md.len && done < len; ++i) out[done++] ^= block[i];
  }
  OPENSSL_cleanse(block, sizeof(block));
  return true;
}

// Constant-time helpers: masks are all ones (true) or zero (false).
uint32_t CtIsZero(uint32_t x) { return 0u - ((~x & (x - 1)) >> 31); }
uint32_t CtEq(uint32_t a, uint32_t b) { return CtIsZero(a ^ b); }
// CtLt for a, b < 2^62.
uint32_t CtLt(size_t a, size_t b) {
  return 0u - static_cast<uint32_t>((a - b) >> 63);
}
size_t CtSelect(uint32_t mask, size_t a, size_t b) {
  size_t m = static_cast<size_t>(
      static_cast<int64_t>(static_cast<int32_t>(mask)));
  return (a & m) | (b & ~m);
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
      const accelcrypt_key_public_sink* sink =
          desc.struct_size >= offsetof(accelcrypt_key_desc, public_out) +
                                  sizeof(desc.public_out)
              ? desc.public_out
              : nullptr;
      if (sink != nullptr && sink->put != nullptr) {
        absl::Status st = ReportPublic(token, *found, is_rsa, *sink);
        if (!st.ok()) return st;
      }
      if (is_rsa != k->rsa_) {
        return absl::UnimplementedError(
            absl::StrFormat("pkcs11: the URI names a %s key, not %s",
                            is_rsa ? "RSA" : "DSA", k->rsa_ ? "RSA" : "DSA"));
      }
      absl::StatusOr<std::vector<uint8_t>> size_attr = token->GetAttribute(
          any, k->rsa_ ? CKA_MODULUS : CKA_SUBPRIME);
      if (!size_attr.ok()) return size_attr.status();
      std::vector<uint8_t> v = *size_attr;
      accelcrypt_bn bn{v.data(), v.size()};
      std::vector<uint8_t> min = Copy(bn);
      (k->rsa_ ? k->mod_len_ : k->q_len_) = min.size();
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
  k->fingerprint_ = absl::StrFormat(
      "%s%s:", k->rsa_ ? "rsa" : "dsa", k->private_ ? "-priv" : "-pub");
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

template <typename Fn>
absl::Status PkeyPkcs11Client::Run(const char* what, Fn&& fn) {
  CK_RV rv = CKR_OK;
  for (int attempt = 0;; ++attempt) {
    absl::StatusOr<KeyObjects> objects = Objects();
    if (!objects.ok()) return objects.status();
    absl::StatusOr<Token::Session> session = token_->Acquire();
    if (!session.ok()) return session.status();
    rv = fn(session->handle, *objects);
    token_->Release(*session, SessionBroken(rv));
    // Logins are lazy: a token that wants one for this operation gets it
    // now (once; a refused PIN is not tried again, see EnsureLogin).
    if (rv != CKR_USER_NOT_LOGGED_IN || attempt > 0 || token_->logged_in() ||
        !token_->has_pin()) {
      break;
    }
    absl::Status login = token_->LoginForUse();
    if (!login.ok()) return login;
  }
  if (StaleHandle(rv)) {
    // The cached objects are gone (token reset, evicted elsewhere): import
    // again next time; this call falls back.
    token_->Forget(uri_.empty() ? fingerprint_ : "uri:" + uri_);
  }
  if (rv == kParamsUnsupported) {
    return absl::UnimplementedError(absl::StrFormat(
        "pkcs11: %s: the token refuses these mechanism parameters", what));
  }
  if (rv == kBadCiphertext) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "pkcs11: %s: decryption failed (bad ciphertext or padding)", what));
  }
  return FromCkRv(rv, what);
}

// Raw RSA needs 0 <= input < n (RFC 8017 sections 5.1.1, 5.2.1): checked
// here, since tokens report the violation as a device error (SoftHSMv2:
// CKR_GENERAL_ERROR). n is public: no constant time needed.
absl::Status PkeyPkcs11Client::CheckBelowModulus(const uint8_t* in,
                                                 size_t in_len) const {
  if (in_len != mod_len_) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "pkcs11: raw RSA input must be %d bytes", mod_len_));
  }
  if (!n_.empty() && std::memcmp(in, n_.data(), mod_len_) >= 0) {
    return absl::InvalidArgumentError(
        "pkcs11: raw RSA input is not smaller than the modulus");
  }
  return absl::OkStatus();
}

absl::Status PkeyPkcs11Client::Sign(const accelcrypt_pkey_params& params,
                                    const uint8_t* tbs, size_t tbs_len,
                                    uint8_t* sig, size_t* sig_len) {
  if (!private_) {
    return absl::FailedPreconditionError(
        "pkcs11: signing needs a private key");
  }
  const MdInfo* md = params.md != 0 ? FindMd(params.md) : nullptr;
  if (params.md != 0 && md == nullptr) {
    return absl::InvalidArgumentError("pkcs11: unsupported digest");
  }
  if (md != nullptr && tbs_len != md->len) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "pkcs11: input is %d bytes, the digest is %d", tbs_len, md->len));
  }
  if (!rsa_) {
    const size_t need = kit::DsaDerMaxSize(q_len_);
    if (sig == nullptr || *sig_len < need) return OutOfRange(need, sig_len);
    if (!token_->mech(CKM_DSA).present) {
      return absl::UnimplementedError("pkcs11: token has no CKM_DSA");
    }
    std::vector<uint8_t> rs(2 * q_len_);
    absl::Status st = Run("C_Sign (CKM_DSA)", [&](CK_SESSION_HANDLE s,
                                                  const KeyObjects& o) {
      CK_MECHANISM m{CKM_DSA, nullptr, 0};
      CK_RV rv = token_->fl()->C_SignInit(s, &m, o.priv);
      if (rv != CKR_OK) return InitFailed(rv);
      CK_ULONG len = rs.size();
      // FIPS 186-4 section 4.6: the leftmost min(N, outlen) bits of the
      // hash are used; CKM_DSA takes exactly that.
      rv = token_->fl()->C_Sign(s, const_cast<uint8_t*>(tbs),
                                std::min(tbs_len, q_len_), rs.data(), &len);
      if (rv == CKR_OK && len != rs.size()) rv = CKR_FUNCTION_FAILED;
      return rv;
    });
    if (!st.ok()) return st;
    std::vector<uint8_t> der = kit::DsaRsToDer(rs.data(), q_len_);
    std::memcpy(sig, der.data(), der.size());
    *sig_len = der.size();
    return absl::OkStatus();
  }
  if (sig == nullptr || *sig_len < mod_len_) return OutOfRange(mod_len_, sig_len);
  CK_MECHANISM mech{CKM_RSA_PKCS, nullptr, 0};
  CK_RSA_PKCS_PSS_PARAMS pss{};
  std::vector<uint8_t> data(tbs, tbs + tbs_len);
  switch (params.padding) {
    case ACCELCRYPT_PAD_PKCS1:
      if (md != nullptr) {
        data.insert(data.begin(), md->prefix, md->prefix + md->prefix_len);
      }
      if (!token_->mech(CKM_RSA_PKCS).present) {
        if (!token_->mech(CKM_RSA_X_509).present) {
          return absl::UnimplementedError("pkcs11: no PKCS#1 v1.5 signing");
        }
        // EMSA-PKCS1-v1_5 (RFC 8017 section 9.2) done here, then raw RSA.
        if (data.size() + 11 > mod_len_) {
          return absl::InvalidArgumentError("pkcs11: input too long");
        }
        std::vector<uint8_t> em(mod_len_, 0xff);
        em[0] = 0;
        em[1] = 1;
        em[mod_len_ - data.size() - 1] = 0;
        std::copy(data.begin(), data.end(), em.end() - data.size());
        absl::Status st = RawPrivate(em.data(), em.size(), sig);
        if (st.ok()) *sig_len = mod_len_;
        return st;
      }
      break;
    case ACCELCRYPT_PAD_PSS: {
      if (md == nullptr) {
        return absl::InvalidArgumentError("pkcs11: PSS needs a digest");
      }
      const MdInfo* mgf = params.mgf1_md != 0 ? FindMd(params.mgf1_md) : md;
      if (mgf == nullptr) {
        return absl::InvalidArgumentError("pkcs11: unsupported MGF1 digest");
      }
      if (!token_->mech(CKM_RSA_PKCS_PSS).present) {
        if (!token_->mech(CKM_RSA_X_509).present) {
          return absl::UnimplementedError("pkcs11: no PSS signing");
        }
        absl::Status st = SignPssFramework(*md, *mgf, params.salt_len, tbs, sig);
        if (st.ok()) *sig_len = mod_len_;
        return st;
      }
      size_t mod_bits = n_.empty() ? mod_len_ * 8 : BitLength(n_);
      size_t em_len = (mod_bits - 1 + 7) / 8;  // RFC 8017 section 8.1.1
      long salt = params.salt_len;
      if (salt == ACCELCRYPT_PSS_SALT_DIGEST) {
        salt = static_cast<long>(md->len);
      } else if (salt == ACCELCRYPT_PSS_SALT_MAX) {
        salt = static_cast<long>(em_len) - static_cast<long>(md->len) - 2;
      } else if (salt < 0) {
        return absl::UnimplementedError(
            "pkcs11: PSS salt length must be explicit for the token");
      }
      pss.hashAlg = md->ckm;
      pss.mgf = mgf->mgf;
      pss.sLen = static_cast<unsigned long>(salt);
      mech = CK_MECHANISM{CKM_RSA_PKCS_PSS, &pss, sizeof(pss)};
      break;
    }
    case ACCELCRYPT_PAD_NONE: {
      if (!token_->mech(CKM_RSA_X_509).present) {
        return absl::UnimplementedError("pkcs11: token has no CKM_RSA_X_509");
      }
      if (tbs_len != mod_len_) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "pkcs11: raw RSA input must be %d bytes", mod_len_));
      }
      absl::Status st = RawPrivate(tbs, tbs_len, sig);
      if (st.ok()) *sig_len = mod_len_;
      return st;
    }
    default:
      return absl::InvalidArgumentError("pkcs11: padding not valid for signing");
  }
  CK_ULONG len = *sig_len;
  absl::Status st = Run("C_Sign", [&](CK_SESSION_HANDLE s, const KeyObjects& o) {
    CK_RV rv = token_->fl()->C_SignInit(s, &mech, o.priv);
    if (rv != CKR_OK) return InitFailed(rv);
    return token_->fl()->C_Sign(s, data.data(), data.size(), sig, &len);
  });
  if (st.ok()) *sig_len = len;
  return st;
}

absl::Status PkeyPkcs11Client::RawPrivate(const uint8_t* in, size_t in_len,
                                          uint8_t* out) {
  absl::Status range = CheckBelowModulus(in, in_len);
  if (!range.ok()) return range;
  CK_MECHANISM m{CKM_RSA_X_509, nullptr, 0};
  return Run("C_Sign (CKM_RSA_X_509)", [&](CK_SESSION_HANDLE s,
                                           const KeyObjects& o) {
    CK_RV rv = token_->fl()->C_SignInit(s, &m, o.priv);
    if (rv != CKR_OK) return InitFailed(rv);
    CK_ULONG len = mod_len_;
    rv = token_->fl()->C_Sign(s, const_cast<uint8_t*>(in), in_len, out, &len);
    if (rv == CKR_OK && len != mod_len_) {
      // Some tokens strip leading zeros: restore the fixed width.
      std::memmove(out + (mod_len_ - len), out, len);
      std::memset(out, 0, mod_len_ - len);
    }
    return rv;
  });
}

absl::Status PkeyPkcs11Client::RawPublic(const uint8_t* in, size_t in_len,
                                         uint8_t* out) {
  absl::Status range = CheckBelowModulus(in, in_len);
  if (!range.ok()) return range;
  CK_MECHANISM m{CKM_RSA_X_509, nullptr, 0};
  return Run("C_Encrypt (CKM_RSA_X_509)", [&](CK_SESSION_HANDLE s,
                                              const KeyObjects& o) {
    CK_RV rv = token_->fl()->C_EncryptInit(s, &m, o.pub);
    if (rv != CKR_OK) return InitFailed(rv);
    CK_ULONG len = mod_len_;
    rv = token_->fl()->C_Encrypt(s, const_cast<uint8_t*>(in), in_len, out,
                                 &len);
    if (rv == CKR_OK && len != mod_len_) {
      std::memmove(out + (mod_len_ - len), out, len);
      std::memset(out, 0, mod_len_ - len);
    }
    return rv;
  });
}

size_t PkeyPkcs11Client::ModBits() const {
  return n_.empty() ? mod_len_ * 8 : BitLength(n_);
}

// EMSA-PSS-ENCODE (RFC 8017 section 9.1.1) here, RSASP1 on the token: for
// tokens with raw RSA only. The salt comes from the private library
// context's DRBG.
absl::Status PkeyPkcs11Client::SignPssFramework(const MdInfo& md,
                                                const MdInfo& mgf,
                                                int32_t salt_param,
                                                const uint8_t* m_hash,
                                                uint8_t* sig) {
  const size_t em_bits = ModBits() - 1;
  const size_t em_len = (em_bits + 7) / 8;
  long salt_len = salt_param;
  if (salt_len == ACCELCRYPT_PSS_SALT_DIGEST) {
    salt_len = static_cast<long>(md.len);
  } else if (salt_len == ACCELCRYPT_PSS_SALT_MAX) {
    salt_len = static_cast<long>(em_len) - static_cast<long>(md.len) - 2;
  }
  if (salt_len < 0 || em_len < md.len + static_cast<size_t>(salt_len) + 2) {
    return absl::InvalidArgumentError("pkcs11: PSS salt length does not fit");
  }
  std::vector<uint8_t> salt(static_cast<size_t>(salt_len));
  if (!salt.empty() &&
      RAND_bytes_ex(libctx_, salt.data(), salt.size(), 0) != 1) {
    return absl::UnavailableError("pkcs11: no random salt");
  }
  const uint8_t zeros[8] = {};
  std::vector<uint8_t> em(mod_len_, 0);
  uint8_t* out = em.data() + (mod_len_ - em_len);
  const size_t db_len = em_len - md.len - 1;
  uint8_t* h = out + db_len;
  if (!Hash(libctx_, md,
            {{zeros, 8}, {m_hash, md.len}, {salt.data(), salt.size()}}, h)) {
    return absl::InternalError("pkcs11: PSS hash failed");
  }
  out[db_len - salt.size() - 1] = 0x01;
  std::copy(salt.begin(), salt.end(), out + db_len - salt.size());
  if (!Mgf1Xor(libctx_, mgf, h, md.len, out, db_len)) {
    return absl::InternalError("pkcs11: MGF1 failed");
  }
  out[0] &= static_cast<uint8_t>(0xff >> (8 * em_len - em_bits));
  out[em_len - 1] = 0xbc;
  return RawPrivate(em.data(), em.size(), sig);
}

// EMSA-PSS-VERIFY (RFC 8017 section 9.1.2) over RSAVP1 done on the token.
// Everything here is public: no constant time needed.
absl::Status PkeyPkcs11Client::VerifyPssFramework(
    const MdInfo& md, const MdInfo& mgf, int32_t salt_param,
    const uint8_t* m_hash, const uint8_t* sig, size_t sig_len) {
  if (sig_len != mod_len_) return AuthFailed("RSA-PSS");
  std::vector<uint8_t> em(mod_len_);
  absl::Status st = RawPublic(sig, sig_len, em.data());
  if (!st.ok()) {
    return st.code() == absl::StatusCode::kInvalidArgument
               ? AuthFailed("RSA-PSS")
               : st;
  }
  const size_t em_bits = ModBits() - 1;
  const size_t em_len = (em_bits + 7) / 8;
  for (size_t i = 0; i < mod_len_ - em_len; ++i) {
    if (em[i] != 0) return AuthFailed("RSA-PSS");
  }
  uint8_t* e = em.data() + (mod_len_ - em_len);
  if (em_len < md.len + 2 || e[em_len - 1] != 0xbc) {
    return AuthFailed("RSA-PSS");
  }
  const size_t db_len = em_len - md.len - 1;
  const uint8_t* h = e + db_len;
  const size_t spare = 8 * em_len - em_bits;
  if (spare != 0 && (e[0] >> (8 - spare)) != 0) return AuthFailed("RSA-PSS");
  if (!Mgf1Xor(libctx_, mgf, h, md.len, e, db_len)) {
    return absl::InternalError("pkcs11: MGF1 failed");
  }
  e[0] &= static_cast<uint8_t>(0xff >> spare);
  size_t one = 0;
  while (one < db_len && e[one] == 0) ++one;
  if (one == db_len || e[one] != 0x01) return AuthFailed("RSA-PSS");
  const size_t salt_len = db_len - one - 1;
  if ((salt_param >= 0 && salt_len != static_cast<size_t>(salt_param)) ||
      (salt_param == ACCELCRYPT_PSS_SALT_DIGEST && salt_len != md.len)) {
    return AuthFailed("RSA-PSS");
  }
  const uint8_t zeros[8] = {};
  uint8_t h2[64];
  if (!Hash(libctx_, md,
            {{zeros, 8}, {m_hash, md.len}, {e + one + 1, salt_len}}, h2)) {
    return absl::InternalError("pkcs11: PSS hash failed");
  }
  return std::memcmp(h2, h, md.len) == 0 ? absl::OkStatus()
                                         : AuthFailed("RSA-PSS");
}

absl::Status PkeyPkcs11Client::Verify(const accelcrypt_pkey_params& params,
                                      const uint8_t* tbs, size_t tbs_len,
                                      const uint8_t* sig, size_t sig_len) {
  const MdInfo* md = params.md != 0 ? FindMd(params.md) : nullptr;
  if (params.md != 0 && md == nullptr) {
    return absl::InvalidArgumentError("pkcs11: unsupported digest");
  }
  if (md != nullptr && tbs_len != md->len) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "pkcs11: input is %d bytes, the digest is %d", tbs_len, md->len));
  }
  if (!rsa_) {
    std::vector<uint8_t> rs(2 * q_len_);
    if (!kit::DsaDerToRs(sig, sig_len, q_len_, rs.data())) {
      return AuthFailed("DSA signature is not a valid DER Dss-Sig-Value");
    }
    CK_MECHANISM m{CKM_DSA, nullptr, 0};
    return Run("C_Verify (CKM_DSA)", [&](CK_SESSION_HANDLE s,
                                         const KeyObjects& o) {
      CK_RV rv = token_->fl()->C_VerifyInit(s, &m, o.pub);
      if (rv != CKR_OK) return InitFailed(rv);
      return token_->fl()->C_Verify(s, const_cast<uint8_t*>(tbs),
                                    std::min(tbs_len, q_len_), rs.data(),
                                    rs.size());
    });
  }
  CK_MECHANISM mech{CKM_RSA_PKCS, nullptr, 0};
  CK_RSA_PKCS_PSS_PARAMS pss{};
  std::vector<uint8_t> data(tbs, tbs + tbs_len);
  switch (params.padding) {
    case ACCELCRYPT_PAD_PKCS1:
      if (md != nullptr) {
        data.insert(data.begin(), md->prefix, md->prefix + md->prefix_len);
      }
      if (!token_->mech(CKM_RSA_PKCS).present) {
        if (!token_->mech(CKM_RSA_X_509).present) {
          return absl::UnimplementedError("pkcs11: no PKCS#1 v1.5");
        }
        if (sig_len != mod_len_ || data.size() + 11 > mod_len_) {
          return AuthFailed("RSA PKCS#1 v1.5");
        }
        std::vector<uint8_t> em(mod_len_, 0xff), got(mod_len_);
        em[0] = 0;
        em[1] = 1;
        em[mod_len_ - data.size() - 1] = 0;
        std::copy(data.begin(), data.end(), em.end() - data.size());
        absl::Status st = RawPublic(sig, sig_len, got.data());
        if (!st.ok()) {
          return st.code() == absl::StatusCode::kInvalidArgument
                     ? AuthFailed("RSA PKCS#1 v1.5")
                     : st;
        }
        if (CRYPTO_memcmp(em.data(), got.data(), mod_len_) != 0) {
          return AuthFailed("RSA PKCS#1 v1.5");
        }
        return absl::OkStatus();
      }
      break;
    case ACCELCRYPT_PAD_PSS: {
      if (md == nullptr) {
        return absl::InvalidArgumentError("pkcs11: PSS needs a digest");
      }
      const MdInfo* mgf = params.mgf1_md != 0 ? FindMd(params.mgf1_md) : md;
      if (mgf == nullptr) {
        return absl::InvalidArgumentError("pkcs11: unsupported MGF1 digest");
      }
      if (!token_->mech(CKM_RSA_PKCS_PSS).present) {
        if (!token_->mech(CKM_RSA_X_509).present) {
          return absl::UnimplementedError("pkcs11: no PSS verification");
        }
        return VerifyPssFramework(*md, *mgf, params.salt_len, tbs, sig,
                                  sig_len);
      }
      long salt = params.salt_len;
      if (salt == ACCELCRYPT_PSS_SALT_DIGEST) {
        salt = static_cast<long>(md->len);
      } else if (salt < 0) {
        // AUTO and MAX need the salt length recovered from the signature,
        // which CKM_RSA_PKCS_PSS cannot do: another backend verifies.
        return absl::UnimplementedError(
            "pkcs11: PSS verification needs an explicit salt length");
      }
      pss.hashAlg = md->ckm;
      pss.mgf = mgf->mgf;
      pss.sLen = static_cast<unsigned long>(salt);
      mech = CK_MECHANISM{CKM_RSA_PKCS_PSS, &pss, sizeof(pss)};
      break;
    }
    case ACCELCRYPT_PAD_NONE: {
      if (!token_->mech(CKM_RSA_X_509).present) {
        return absl::UnimplementedError("pkcs11: token has no CKM_RSA_X_509");
      }
      if (sig_len != mod_len_ || tbs_len != mod_len_) {
        return AuthFailed("raw RSA");
      }
      std::vector<uint8_t> got(mod_len_);
      absl::Status st = RawPublic(sig, sig_len, got.data());
      if (!st.ok()) {
        return st.code() == absl::StatusCode::kInvalidArgument
                   ? AuthFailed("raw RSA")
                   : st;
      }
      return CRYPTO_memcmp(got.data(), tbs, mod_len_) == 0
                 ? absl::OkStatus()
                 : AuthFailed("raw RSA");
    }
    default:
      return absl::InvalidArgumentError(
          "pkcs11: padding not valid for signatures");
  }
  return Run("C_Verify", [&](CK_SESSION_HANDLE s, const KeyObjects& o) {
    CK_RV rv = token_->fl()->C_VerifyInit(s, &mech, o.pub);
    if (rv != CKR_OK) return InitFailed(rv);
    return token_->fl()->C_Verify(s, data.data(), data.size(),
                                  const_cast<uint8_t*>(sig), sig_len);
  });
}

// CryptMechanism picks the token mechanism for an RSA encryption or
// decryption (`what` names it in errors) with `params`' padding: PKCS#1,
// raw X.509 (input below the modulus) or OAEP, whose parameters are
// written to `*oaep` and pointed to by `*mech`.
absl::Status PkeyPkcs11Client::CryptMechanism(
    const accelcrypt_pkey_params& params, const uint8_t* in, size_t in_len,
    const char* what, CK_MECHANISM* mech,
    CK_RSA_PKCS_OAEP_PARAMS* oaep) const {
  *mech = CK_MECHANISM{CKM_RSA_PKCS, nullptr, 0};
  switch (params.padding) {
    case ACCELCRYPT_PAD_PKCS1:
      return absl::OkStatus();
    case ACCELCRYPT_PAD_NONE:
      mech->mechanism = CKM_RSA_X_509;
      return CheckBelowModulus(in, in_len);
    case ACCELCRYPT_PAD_OAEP: {
      const MdInfo* md = FindMd(params.md);
      const MdInfo* mgf = params.mgf1_md != 0 ? FindMd(params.mgf1_md) : md;
      if (md == nullptr || mgf == nullptr) {
        return absl::InvalidArgumentError("pkcs11: OAEP needs a SHA digest");
      }
      *oaep = CK_RSA_PKCS_OAEP_PARAMS{};
      oaep->hashAlg = md->ckm;
      oaep->mgf = mgf->mgf;
      oaep->source = CKZ_DATA_SPECIFIED;
      oaep->pSourceData = const_cast<uint8_t*>(params.label);
      oaep->ulSourceDataLen = params.label_len;
      *mech = CK_MECHANISM{CKM_RSA_PKCS_OAEP, oaep, sizeof(*oaep)};
      return absl::OkStatus();
    }
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("pkcs11: padding not valid for ", what));
  }
}

absl::Status PkeyPkcs11Client::Encrypt(const accelcrypt_pkey_params& params,
                                       const uint8_t* in, size_t in_len,
                                       uint8_t* out, size_t* out_len) {
  if (!rsa_) return absl::UnimplementedError("pkcs11: DSA cannot encrypt");
  if (out == nullptr || *out_len < mod_len_) return OutOfRange(mod_len_, out_len);
  CK_RSA_PKCS_OAEP_PARAMS oaep{};
  CK_MECHANISM mech{};
  absl::Status chosen =
      CryptMechanism(params, in, in_len, "encryption", &mech, &oaep);
  if (!chosen.ok()) return chosen;
  if (!token_->mech(mech.mechanism).present) {
    if (mech.mechanism != CKM_RSA_X_509 &&
        token_->mech(CKM_RSA_X_509).present) {
      return EncryptFramework(params, in, in_len, out, out_len);
    }
    return absl::UnimplementedError("pkcs11: the token lacks the mechanism");
  }
  CK_ULONG len = *out_len;
  absl::Status st = Run("C_Encrypt", [&](CK_SESSION_HANDLE s,
                                         const KeyObjects& o) {
    CK_RV rv = token_->fl()->C_EncryptInit(s, &mech, o.pub);
    if (rv != CKR_OK) return InitFailed(rv);
    return token_->fl()->C_Encrypt(s, const_cast<uint8_t*>(in), in_len, out,
                                   &len);
  });
  if (st.ok()) *out_len = len;
  return st;
}

// RSAES-PKCS1-v1_5 and RSAES-OAEP encoding (RFC 8017 sections 7.2.1, 7.1.1)
// here, RSAEP on the token: for tokens with raw RSA only.
absl::Status PkeyPkcs11Client::EncryptFramework(
    const accelcrypt_pkey_params& params, const uint8_t* in, size_t in_len,
    uint8_t* out, size_t* out_len) {
  const size_t k = mod_len_;
  std::vector<uint8_t> em(k, 0);
  if (params.padding == ACCELCRYPT_PAD_PKCS1) {
    if (in_len + 11 > k) {
      return absl::InvalidArgumentError("pkcs11: message too long");
    }
    const size_t ps_len = k - in_len - 3;
    em[1] = 0x02;
    uint8_t* ps = em.data() + 2;
    if (RAND_bytes_ex(libctx_, ps, ps_len, 0) != 1) {
      return absl::UnavailableError("pkcs11: no random padding");
    }
    for (size_t i = 0; i < ps_len; ++i) {
      while (ps[i] == 0) {
        if (RAND_bytes_ex(libctx_, ps + i, 1, 0) != 1) {
          return absl::UnavailableError("pkcs11: no random padding");
        }
      }
    }
    std::memcpy(em.data() + 3 + ps_len, in, in_len);
  } else {
    const MdInfo* md = FindMd(params.md);
    const MdInfo* mgf = params.mgf1_md != 0 ? FindMd(params.mgf1_md) : md;
    if (md == nullptr || mgf == nullptr) {
      return absl::InvalidArgumentError("pkcs11: OAEP needs a SHA digest");
    }
    const size_t h = md->len;
    if (k < 2 * h + 2 || in_len > k - 2 * h - 2) {
      return absl::InvalidArgumentError("pkcs11: message too long for OAEP");
    }
    uint8_t* seed = em.data() + 1;
    uint8_t* db = em.data() + 1 + h;
    const size_t db_len = k - h - 1;
    if (!Hash(libctx_, *md, {{params.label, params.label_len}}, db)) {
      return absl::InternalError("pkcs11: OAEP label hash failed");
    }
    db[db_len - in_len - 1] = 0x01;
    std::memcpy(db + db_len - in_len, in, in_len);
    if (RAND_bytes_ex(libctx_, seed, h, 0) != 1) {
      return absl::UnavailableError("pkcs11: no random seed");
    }
    if (!Mgf1Xor(libctx_, *mgf, seed, h, db, db_len) ||
        !Mgf1Xor(libctx_, *mgf, db, db_len, seed, h)) {
      return absl::InternalError("pkcs11: MGF1 failed");
    }
  }
  absl::Status st = RawPublic(em.data(), k, out);
  OPENSSL_cleanse(em.data(), em.size());
  if (st.ok()) *out_len = k;
  return st;
}

// RSADP on the token, then the padding checked here in constant time
// (RFC 8017 section 7.1.2 note: no distinguishable failures; the same
// holds for PKCS#1 v1.5 type 2). Only the final verdict branches.
absl::Status PkeyPkcs11Client::DecryptFramework(
    const accelcrypt_pkey_params& params, const uint8_t* in, size_t in_len,
    uint8_t* out, size_t* out_len) {
  const size_t k = mod_len_;
  std::vector<uint8_t> em(k);
  absl::Status st = RawPrivate(in, in_len, em.data());
  if (!st.ok()) return st;
  uint32_t good = CtEq(em[0], 0);
  size_t msg_start = 0;
  if (params.padding == ACCELCRYPT_PAD_PKCS1) {
    good &= CtEq(em[1], 2);
    uint32_t found = 0;
    for (size_t i = 2; i < k; ++i) {
      uint32_t zero = CtEq(em[i], 0);
      msg_start = CtSelect(~found & zero, i + 1, msg_start);
      found |= zero;
    }
    // At least 8 bytes of PS: the separator at index 10 or later.
    good &= found & ~CtLt(msg_start, 11);
  } else {
    const MdInfo* md = FindMd(params.md);
    const MdInfo* mgf = params.mgf1_md != 0 ? FindMd(params.mgf1_md) : md;
    if (md == nullptr || mgf == nullptr) {
      OPENSSL_cleanse(em.data(), em.size());
      return absl::InvalidArgumentError("pkcs11: OAEP needs a SHA digest");
    }
    const size_t h = md->len;
    if (k < 2 * h + 2) {
      OPENSSL_cleanse(em.data(), em.size());
      return absl::InvalidArgumentError("pkcs11: key too small for OAEP");
    }
    uint8_t* seed = em.data() + 1;
    uint8_t* db = em.data() + 1 + h;
    const size_t db_len = k - h - 1;
    uint8_t lhash[64];
    if (!Hash(libctx_, *md, {{params.label, params.label_len}}, lhash) ||
        !Mgf1Xor(libctx_, *mgf, db, db_len, seed, h) ||
        !Mgf1Xor(libctx_, *mgf, seed, h, db, db_len)) {
      OPENSSL_cleanse(em.data(), em.size());
      return absl::InternalError("pkcs11: OAEP hash failed");
    }
    uint32_t diff = 0;
    for (size_t i = 0; i < h; ++i) diff |= db[i] ^ lhash[i];
    good &= CtIsZero(diff);
    uint32_t found = 0, bad = 0;
    for (size_t i = h; i < db_len; ++i) {
      uint32_t one = CtEq(db[i], 1);
      uint32_t zero = CtEq(db[i], 0);
      msg_start = CtSelect(~found & one, 1 + h + i + 1, msg_start);
      bad |= ~found & ~one & ~zero;
      found |= one;
    }
    good &= found & ~bad;
  }
  absl::Status result = absl::OkStatus();
  if (!good) {
    result = absl::InvalidArgumentError(
        "pkcs11: decryption failed (bad ciphertext or padding)");
  } else {
    const size_t len = k - msg_start;
    if (out == nullptr || *out_len < len) {
      result = OutOfRange(len, out_len);
    } else {
      std::memcpy(out, em.data() + msg_start, len);
      *out_len = len;
    }
  }
  OPENSSL_cleanse(em.data(), em.size());
  return result;
}

absl::Status PkeyPkcs11Client::Decrypt(const accelcrypt_pkey_params& params,
                                       const uint8_t* in, size_t in_len,
                                       uint8_t* out, size_t* out_len) {
  if (!rsa_) return absl::UnimplementedError("pkcs11: DSA cannot decrypt");
  if (!private_) {
    return absl::FailedPreconditionError(
        "pkcs11: decryption needs a private key");
  }
  CK_RSA_PKCS_OAEP_PARAMS oaep{};
  CK_MECHANISM mech{};
  absl::Status chosen =
      CryptMechanism(params, in, in_len, "decryption", &mech, &oaep);
  if (!chosen.ok()) return chosen;
  if (!token_->mech(mech.mechanism).present) {
    if (mech.mechanism != CKM_RSA_X_509 &&
        token_->mech(CKM_RSA_X_509).present) {
      return DecryptFramework(params, in, in_len, out, out_len);
    }
    return absl::UnimplementedError("pkcs11: the token lacks the mechanism");
  }
  std::vector<uint8_t> scratch(mod_len_);
  CK_ULONG len = scratch.size();
  const bool padded = mech.mechanism != CKM_RSA_X_509;
  const bool quirk = token_->quirks().decrypt_failure_is_general_error;
  absl::Status st = Run("C_Decrypt", [&](CK_SESSION_HANDLE s,
                                         const KeyObjects& o) {
    CK_RV rv = token_->fl()->C_DecryptInit(s, &mech, o.priv);
    if (rv != CKR_OK) return InitFailed(rv);
    rv = token_->fl()->C_Decrypt(s, const_cast<uint8_t*>(in), in_len,
                                 scratch.data(), &len);
    // The ciphertext's padding failed on a token that says so with
    // CKR_GENERAL_ERROR: the caller's error, never a fallback.
    if (rv == CKR_GENERAL_ERROR && padded && quirk) rv = kBadCiphertext;
    return rv;
  });
  if (st.ok()) {
    if (out == nullptr || *out_len < len) {
      st = OutOfRange(len, out_len);
    } else {
      std::memcpy(out, scratch.data(), len);
      *out_len = len;
    }
  }
  OPENSSL_cleanse(scratch.data(), scratch.size());
  return st;
}

}  // namespace accelcrypt::pkcs11_client
