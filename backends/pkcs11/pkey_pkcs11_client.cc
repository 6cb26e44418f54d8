// SPDX-License-Identifier: Apache-2.0
// PkeyPkcs11Client's operations (pkey_pkcs11_client.h): sign, verify,
// encrypt and decrypt on the token, choosing the token's mechanism for the
// padding asked for, else the padding done here (rsa_padding.h) over raw
// RSA on the token; leased sessions, lazy login and stale handles (Run).
// Loading the key is in pkey_pkcs11_client_load.cc.
#include "backends/pkcs11/pkey_pkcs11_client.h"

#include <openssl/crypto.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "accelcrypt/kit/dsa_sig.h"
#include "backends/pkcs11/ck_status.h"
#include "backends/pkcs11/rsa_padding.h"

namespace accelcrypt::pkcs11_client {
namespace {

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

}  // namespace

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
    return absl::InvalidArgumentError(
        absl::StrFormat("pkcs11: raw RSA input must be %d bytes", mod_len_));
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
    return absl::FailedPreconditionError("pkcs11: signing needs a private key");
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
    absl::Status st =
        Run("C_Sign (CKM_DSA)", [&](CK_SESSION_HANDLE s, const KeyObjects& o) {
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
  if (sig == nullptr || *sig_len < mod_len_)
    return OutOfRange(mod_len_, sig_len);
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
        std::vector<uint8_t> em = EmsaPkcs1V15Encode(data, mod_len_);
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
        absl::Status st =
            SignPssFramework(*md, *mgf, params.salt_len, tbs, sig);
        if (st.ok()) *sig_len = mod_len_;
        return st;
      }
      size_t mod_bits = ModBits();
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
      return absl::InvalidArgumentError(
          "pkcs11: padding not valid for signing");
  }
  CK_ULONG len = *sig_len;
  absl::Status st =
      Run("C_Sign", [&](CK_SESSION_HANDLE s, const KeyObjects& o) {
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
  return Run("C_Encrypt (CKM_RSA_X_509)",
             [&](CK_SESSION_HANDLE s, const KeyObjects& o) {
               CK_RV rv = token_->fl()->C_EncryptInit(s, &m, o.pub);
               if (rv != CKR_OK) return InitFailed(rv);
               CK_ULONG len = mod_len_;
               rv = token_->fl()->C_Encrypt(s, const_cast<uint8_t*>(in), in_len,
                                            out, &len);
               if (rv == CKR_OK && len != mod_len_) {
                 std::memmove(out + (mod_len_ - len), out, len);
                 std::memset(out, 0, mod_len_ - len);
               }
               return rv;
             });
}

// EMSA-PSS-ENCODE (RFC 8017 section 9.1.1) here, RSASP1 on the token: for
// tokens with raw RSA only.
absl::Status PkeyPkcs11Client::SignPssFramework(const MdInfo& md,
                                                const MdInfo& mgf,
                                                int32_t salt_param,
                                                const uint8_t* m_hash,
                                                uint8_t* sig) {
  std::vector<uint8_t> em(mod_len_, 0);
  absl::Status st = EmsaPssEncode(libctx_, md, mgf, salt_param, m_hash,
                                  ModBits(), absl::MakeSpan(em));
  if (!st.ok()) return st;
  return RawPrivate(em.data(), em.size(), sig);
}

// EMSA-PSS-VERIFY (RFC 8017 section 9.1.2) over RSAVP1 done on the token.
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
  return EmsaPssVerify(libctx_, md, mgf, salt_param, m_hash, ModBits(),
                       absl::MakeSpan(em));
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
    return Run("C_Verify (CKM_DSA)",
               [&](CK_SESSION_HANDLE s, const KeyObjects& o) {
                 CK_RV rv = token_->fl()->C_VerifyInit(s, &m, o.pub);
                 if (rv != CKR_OK) return InitFailed(rv);
                 return token_->fl()->C_Verify(s, const_cast<uint8_t*>(tbs),
                                               std::min(tbs_len, q_len_),
                                               rs.data(), rs.size());
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
        std::vector<uint8_t> em = EmsaPkcs1V15Encode(data, mod_len_);
        std::vector<uint8_t> got(mod_len_);
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
    const char* what, CK_MECHANISM* mech, CK_RSA_PKCS_OAEP_PARAMS* oaep) const {
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
  if (out == nullptr || *out_len < mod_len_)
    return OutOfRange(mod_len_, out_len);
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
  absl::Status st =
      Run("C_Encrypt", [&](CK_SESSION_HANDLE s, const KeyObjects& o) {
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
  absl::Status encoded =
      RsaesEncode(libctx_, params, in, in_len, absl::MakeSpan(em));
  if (!encoded.ok()) {
    // The plaintext may already be in `em` (OAEP fails after copying it,
    // at the seed or MGF1).
    OPENSSL_cleanse(em.data(), em.size());
    return encoded;
  }
  absl::Status st = RawPublic(em.data(), k, out);
  OPENSSL_cleanse(em.data(), em.size());
  if (st.ok()) *out_len = k;
  return st;
}

// RSADP on the token, then the padding checked here in constant time
// (RsaesDecode). Only the final verdict branches.
absl::Status PkeyPkcs11Client::DecryptFramework(
    const accelcrypt_pkey_params& params, const uint8_t* in, size_t in_len,
    uint8_t* out, size_t* out_len) {
  const size_t k = mod_len_;
  std::vector<uint8_t> em(k);
  absl::Status st = RawPrivate(in, in_len, em.data());
  if (!st.ok()) return st;
  absl::StatusOr<size_t> msg_start =
      RsaesDecode(libctx_, params, absl::MakeSpan(em));
  absl::Status result = absl::OkStatus();
  if (!msg_start.ok()) {
    result = msg_start.status();
  } else {
    const size_t len = k - *msg_start;
    if (out == nullptr || *out_len < len) {
      result = OutOfRange(len, out_len);
    } else {
      std::memcpy(out, em.data() + *msg_start, len);
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
  absl::Status st =
      Run("C_Decrypt", [&](CK_SESSION_HANDLE s, const KeyObjects& o) {
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
