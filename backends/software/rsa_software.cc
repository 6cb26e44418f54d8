// SPDX-License-Identifier: Apache-2.0
// RSA (and the shared RSA/DSA key object) for the software backend: the
// default provider's key management, signature and asymmetric cipher
// functions called directly (provider_direct.h), never EVP: EVP would let an
// application's ENGINE take the operation over. Parameters go in as
// OSSL_PARAMs, so digests are fetched from the backend's private library
// context, never from the application's (which may prefer accelcrypt: no
// recursion).
#include "backends/software/rsa_software.h"

#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/dsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>  // EVP_PKEY_KEYPAIR / EVP_PKEY_PUBLIC_KEY only
#include <openssl/param_build.h>
#include <openssl/params.h>
#include <openssl/rsa.h>

#include <new>
#include <vector>

#include "absl/strings/str_format.h"
#include "backends/software/openssl_error.h"

namespace accelcrypt::software {
namespace {

struct BnHolder {
  BIGNUM* bn = nullptr;
  ~BnHolder() { BN_clear_free(bn); }
};

bool ToBn(const accelcrypt_bn& in, bool secret, BnHolder* out) {
  out->bn = secret ? BN_secure_new() : BN_new();
  return out->bn != nullptr &&
         BN_bin2bn(in.data, static_cast<int>(in.len), out->bn) != nullptr;
}

size_t BitLength(const accelcrypt_bn& bn) {
  size_t i = 0;
  while (i < bn.len && bn.data[i] == 0) ++i;
  if (i == bn.len) return 0;
  size_t bits = (bn.len - i - 1) * 8;
  for (uint8_t top = bn.data[i]; top != 0; top >>= 1) ++bits;
  return bits;
}

absl::Status OutOfRange(const char* name, size_t need, size_t* out_len) {
  *out_len = need;
  return absl::OutOfRangeError(absl::StrFormat(
      "software: %s: output buffer too small (%d bytes needed)", name, need));
}

// UseOpenSslMethod gives a key object of the default provider OpenSSL's own
// RSA or DSA implementation. The provider's functions are called directly,
// but its key objects are libcrypto RSA/DSA structures (the keydata of its
// RSA and DSA key management, OpenSSL 3.0-3.5), and libcrypto creates them
// with the process's default method: that of a default RSA/DSA ENGINE when
// an application or openssl.cnf set one (accelcrypt's own engine among
// them). Without this the ENGINE served, and counted, every operation of
// this backend a second time: with the provider and the engine both loaded,
// each verification was routed and counted by the provider's core and again
// by the engine's. SoftHSMv2 does the same for its keys.
void UseOpenSslMethod(bool rsa, void* keydata) {
#if !defined(OPENSSL_NO_DEPRECATED_3_0)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  if (rsa) {
    RSA_set_method(static_cast<RSA*>(keydata), RSA_PKCS1_OpenSSL());
  } else {
    DSA_set_method(static_cast<DSA*>(keydata), DSA_OpenSSL());
  }
#pragma GCC diagnostic pop
#else
  static_cast<void>(rsa);
  static_cast<void>(keydata);
#endif
}

}  // namespace

const char* MdName(accelcrypt_alg md) {
  switch (md) {
    case ACCELCRYPT_ALG_SHA1:
      return "SHA1";
    case ACCELCRYPT_ALG_SHA224:
      return "SHA2-224";
    case ACCELCRYPT_ALG_SHA256:
      return "SHA2-256";
    case ACCELCRYPT_ALG_SHA384:
      return "SHA2-384";
    case ACCELCRYPT_ALG_SHA512:
      return "SHA2-512";
    default:
      return nullptr;
  }
}

absl::Status BuildRsaKey(const PkeyDispatch& dispatch,
                         const accelcrypt_key_desc& desc, bool* is_private,
                         ProviderKey* out) {
  if (desc.n.len == 0 || desc.e.len == 0) {
    return absl::InvalidArgumentError("software: RSA key lacks n or e");
  }
  *is_private = desc.d.len != 0;
  const bool crt = desc.p.len != 0 && desc.q.len != 0 && desc.dmp1.len != 0 &&
                   desc.dmq1.len != 0 && desc.iqmp.len != 0;
  BnHolder n, e, d, p, q, dp, dq, qinv;
  bool ok = ToBn(desc.n, false, &n) && ToBn(desc.e, false, &e);
  if (*is_private) ok = ok && ToBn(desc.d, true, &d);
  if (*is_private && crt) {
    ok = ok && ToBn(desc.p, true, &p) && ToBn(desc.q, true, &q) &&
         ToBn(desc.dmp1, true, &dp) && ToBn(desc.dmq1, true, &dq) &&
         ToBn(desc.iqmp, true, &qinv);
  }
  OSSL_PARAM_BLD* bld = ok ? OSSL_PARAM_BLD_new() : nullptr;
  ok = bld != nullptr &&
       OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, n.bn) &&
       OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, e.bn);
  if (ok && *is_private) {
    ok = OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_D, d.bn);
    if (ok && crt) {
      ok = OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_FACTOR1, p.bn) &&
           OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_FACTOR2, q.bn) &&
           OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_EXPONENT1, dp.bn) &&
           OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_EXPONENT2, dq.bn) &&
           OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_COEFFICIENT1,
                                  qinv.bn);
    }
  }
  OSSL_PARAM* params = ok ? OSSL_PARAM_BLD_to_param(bld) : nullptr;
  OSSL_PARAM_BLD_free(bld);
  if (params == nullptr) {
    return LibcryptoError(absl::StatusCode::kResourceExhausted, "RSA",
                          "building key parameters");
  }
  absl::Status st = ProviderKey::Import(
      dispatch, *is_private ? EVP_PKEY_KEYPAIR : EVP_PKEY_PUBLIC_KEY, params,
      out);
  // Private parts sit in the secure block, which OSSL_PARAM_free wipes.
  OSSL_PARAM_free(params);
  return st;
}

absl::StatusOr<std::unique_ptr<PkeySoftware>> PkeySoftware::Load(
    const LibContext& lib, const accelcrypt_key_desc& desc) {
  const bool rsa = desc.alg != ACCELCRYPT_ALG_DSA_SIGN;
  const accelcrypt_bn& modulus = rsa ? desc.n : desc.dsa_p;
  if (modulus.len == 0) {
    // A token reference with no material: not ours to use.
    return absl::UnimplementedError(
        "software: the key has no key material (token object only)");
  }
  size_t bits = BitLength(modulus);
  size_t min_bits = 1024, max_bits = rsa ? 16384 : 3072;
  if (bits < min_bits || bits > max_bits) {
    return absl::UnimplementedError(
        absl::StrFormat("software: %s keys of %d bits are not served (%d..%d)",
                        rsa ? "RSA" : "DSA", bits, min_bits, max_bits));
  }
  std::unique_ptr<PkeySoftware> key(new (std::nothrow) PkeySoftware());
  if (key == nullptr)
    return absl::ResourceExhaustedError("software: no memory");
  key->d_ = rsa ? lib.Rsa() : lib.Dsa();
  key->rsa_ = rsa;
  key->name_ = rsa ? "RSA" : "DSA";
  if (key->d_ == nullptr || (rsa && !key->d_->has_cipher())) {
    return absl::UnimplementedError(absl::StrFormat(
        "software: %s: not offered by the default provider", key->name_));
  }
  bool is_private = false;
  absl::Status built =
      rsa ? BuildRsaKey(*key->d_, desc, &is_private, &key->key_)
          : BuildDsaKey(*key->d_, desc, &is_private, &key->key_);
  if (!built.ok()) return built;
  UseOpenSslMethod(rsa, key->key_.get());
  key->private_ = is_private;
  key->size_ = key->key_.MaxSize();
  if (key->size_ == 0) {
    return LibcryptoError(absl::StatusCode::kInvalidArgument, key->name_,
                          "key size");
  }
  return key;
}

absl::Status PkeySoftware::SetParams(void* ctx, const accelcrypt_pkey_params& p,
                                     bool cipher) const {
  OSSL_PARAM params[6];
  size_t n = 0;
  int pad = 0;
  int salt = p.salt_len;
  const char* md = MdName(p.md);
  const char* mgf1 = MdName(p.mgf1_md != 0 ? p.mgf1_md : p.md);
  if (p.md != 0 && md == nullptr) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "software: %s: digest 0x%08x is not supported", name_, p.md));
  }
  if (rsa_) {
    switch (p.padding) {
      case ACCELCRYPT_PAD_NONE:
        pad = RSA_NO_PADDING;
        break;
      case ACCELCRYPT_PAD_PKCS1:
        pad = RSA_PKCS1_PADDING;
        break;
      case ACCELCRYPT_PAD_PSS:
        pad = RSA_PKCS1_PSS_PADDING;
        break;
      case ACCELCRYPT_PAD_OAEP:
        pad = RSA_PKCS1_OAEP_PADDING;
        break;
      default:
        return absl::InvalidArgumentError(
            absl::StrFormat("software: RSA: unknown padding %d", p.padding));
    }
    if (cipher ? pad == RSA_PKCS1_PSS_PADDING : pad == RSA_PKCS1_OAEP_PADDING) {
      return absl::InvalidArgumentError(
          absl::StrFormat("software: RSA: padding %d is not valid for %s",
                          p.padding, cipher ? "encryption" : "signatures"));
    }
    if ((pad == RSA_PKCS1_PSS_PADDING || pad == RSA_PKCS1_OAEP_PADDING) &&
        md == nullptr) {
      return absl::InvalidArgumentError(
          "software: RSA: PSS and OAEP need a digest");
    }
    // Both names are "pad-mode" in OpenSSL 3.0; each is named for its API.
    params[n++] =
        // NOLINTNEXTLINE(bugprone-branch-clone)
        OSSL_PARAM_construct_int(cipher ? OSSL_ASYM_CIPHER_PARAM_PAD_MODE
                                        : OSSL_SIGNATURE_PARAM_PAD_MODE,
                                 &pad);
  }
  if (!cipher && md != nullptr) {
    params[n++] = OSSL_PARAM_construct_utf8_string(OSSL_SIGNATURE_PARAM_DIGEST,
                                                   const_cast<char*>(md), 0);
  }
  if (!cipher && rsa_ && pad == RSA_PKCS1_PSS_PADDING) {
    params[n++] = OSSL_PARAM_construct_utf8_string(
        OSSL_SIGNATURE_PARAM_MGF1_DIGEST, const_cast<char*>(mgf1), 0);
    params[n++] =
        OSSL_PARAM_construct_int(OSSL_SIGNATURE_PARAM_PSS_SALTLEN, &salt);
  }
  if (cipher && pad == RSA_PKCS1_OAEP_PADDING) {
    params[n++] = OSSL_PARAM_construct_utf8_string(
        OSSL_ASYM_CIPHER_PARAM_OAEP_DIGEST, const_cast<char*>(md), 0);
    params[n++] = OSSL_PARAM_construct_utf8_string(
        OSSL_ASYM_CIPHER_PARAM_MGF1_DIGEST, const_cast<char*>(mgf1), 0);
    if (p.label_len > 0) {
      // The provider keeps its own copy of the label.
      params[n++] = OSSL_PARAM_construct_octet_string(
          OSSL_ASYM_CIPHER_PARAM_OAEP_LABEL, const_cast<uint8_t*>(p.label),
          p.label_len);
    }
  }
  params[n] = OSSL_PARAM_construct_end();
  if (n > 0 && (cipher ? d_->ac_set_ctx_params(ctx, params)
                       : d_->sig_set_ctx_params(ctx, params)) != 1) {
    return LibcryptoError(absl::StatusCode::kInvalidArgument, name_,
                          "operation parameters");
  }
  return absl::OkStatus();
}

absl::Status PkeySoftware::Sign(const accelcrypt_pkey_params& params,
                                const uint8_t* tbs, size_t tbs_len,
                                uint8_t* sig, size_t* sig_len) const {
  if (!private_) {
    return absl::FailedPreconditionError(
        absl::StrFormat("software: %s: signing needs a private key", name_));
  }
  if (sig == nullptr || *sig_len < size_) {
    return OutOfRange(name_, size_, sig_len);
  }
  SignatureCtx ctx(*d_);
  if (ctx.get() == nullptr ||
      d_->sign_init(ctx.get(), key_.get(), nullptr) != 1) {
    return LibcryptoError(absl::StatusCode::kInternal, name_, "sign init");
  }
  absl::Status st = SetParams(ctx.get(), params, false);
  if (!st.ok()) return st;
  size_t len = *sig_len;
  if (d_->sign(ctx.get(), sig, &len, *sig_len, tbs, tbs_len) != 1) {
    return LibcryptoError(absl::StatusCode::kInvalidArgument, name_, "sign");
  }
  *sig_len = len;
  return absl::OkStatus();
}

absl::Status PkeySoftware::Verify(const accelcrypt_pkey_params& params,
                                  const uint8_t* tbs, size_t tbs_len,
                                  const uint8_t* sig, size_t sig_len) const {
  SignatureCtx ctx(*d_);
  if (ctx.get() == nullptr ||
      d_->verify_init(ctx.get(), key_.get(), nullptr) != 1) {
    return LibcryptoError(absl::StatusCode::kInternal, name_, "verify init");
  }
  absl::Status st = SetParams(ctx.get(), params, false);
  if (!st.ok()) return st;
  if (d_->verify(ctx.get(), sig, sig_len, tbs, tbs_len) != 1) {
    // Malformed and wrong signatures alike: the signature does not verify.
    return AuthFailedError(name_);
  }
  return absl::OkStatus();
}

absl::Status PkeySoftware::Encrypt(const accelcrypt_pkey_params& params,
                                   const uint8_t* in, size_t in_len,
                                   uint8_t* out, size_t* out_len) const {
  if (!rsa_) return absl::UnimplementedError("software: DSA cannot encrypt");
  if (out == nullptr || *out_len < size_) {
    return OutOfRange(name_, size_, out_len);
  }
  CipherCtx ctx(*d_);
  if (ctx.get() == nullptr ||
      d_->encrypt_init(ctx.get(), key_.get(), nullptr) != 1) {
    return LibcryptoError(absl::StatusCode::kInternal, name_, "encrypt init");
  }
  absl::Status st = SetParams(ctx.get(), params, true);
  if (!st.ok()) return st;
  size_t len = *out_len;
  if (d_->encrypt(ctx.get(), out, &len, *out_len, in, in_len) != 1) {
    return LibcryptoError(absl::StatusCode::kInvalidArgument, name_,
                          "encrypt (input too long for the padding?)");
  }
  *out_len = len;
  return absl::OkStatus();
}

absl::Status PkeySoftware::Decrypt(const accelcrypt_pkey_params& params,
                                   const uint8_t* in, size_t in_len,
                                   uint8_t* out, size_t* out_len) const {
  if (!rsa_) return absl::UnimplementedError("software: DSA cannot decrypt");
  if (!private_) {
    return absl::FailedPreconditionError(
        "software: RSA: decryption needs a private key");
  }
  CipherCtx ctx(*d_);
  if (ctx.get() == nullptr ||
      d_->decrypt_init(ctx.get(), key_.get(), nullptr) != 1) {
    return LibcryptoError(absl::StatusCode::kInternal, name_, "decrypt init");
  }
  absl::Status st = SetParams(ctx.get(), params, true);
  if (!st.ok()) return st;
  // Decrypt into a modulus-sized scratch buffer so a caller who sized `out`
  // for the plaintext alone is served; the scratch is wiped.
  std::vector<uint8_t> scratch(size_);
  size_t len = scratch.size();
  int rc =
      d_->decrypt(ctx.get(), scratch.data(), &len, scratch.size(), in, in_len);
  if (rc != 1) {
    OPENSSL_cleanse(scratch.data(), scratch.size());
    ERR_clear_error();
    return absl::InvalidArgumentError(
        "software: RSA: decryption failed (bad ciphertext or padding)");
  }
  absl::Status result = absl::OkStatus();
  if (out == nullptr || *out_len < len) {
    result = OutOfRange(name_, len, out_len);
  } else {
    std::copy(scratch.begin(), scratch.begin() + len, out);
    *out_len = len;
  }
  OPENSSL_cleanse(scratch.data(), scratch.size());
  return result;
}

}  // namespace accelcrypt::software
