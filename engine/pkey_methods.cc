// SPDX-License-Identifier: Apache-2.0
// The engine's RSA_METHOD and DSA_METHOD: copies of OpenSSL's own tables
// (RSA_PKCS1_OpenSSL(), DSA_OpenSSL()) with the private- and public-key
// operations routed through the core. A key's parts are read once per RSA
// or DSA object into KeyMaterial and the routed PublicKeyOps are kept in
// the object's ex_data (freed with it). Whatever the router cannot serve
// (no backend for the key size or padding, every backend failing) runs in
// OpenSSL's own implementation, so an application never loses an
// operation to the engine; caller errors (bad padding, input too long) are
// returned as errors.
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/dsa.h>
#include <openssl/err.h>
#include <openssl/rsa.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/pkey.h"
#include "core/router.h"
#include "engine/engine_state.h"

namespace accelcrypt::engine {
namespace {

int g_rsa_index = -1;
int g_dsa_index = -1;
std::once_flag g_index_once;
// Serialises the first use of a key by several threads (building its ops).
std::mutex g_cache_mu;

// CachedOps are the routed operations of one RSA or DSA object, with the
// identity of the key parts they were built from: a key whose parts were
// replaced (RSA_set0_key on a used object) is not served stale ones.
struct CachedOps {
  Core* core = nullptr;
  const BIGNUM* pub = nullptr;   // RSA n, DSA y
  const BIGNUM* priv = nullptr;  // RSA d, DSA x
  // Null: the router cannot take it. Shared by the duplicates of a token
  // key (the token object is the same key).
  std::shared_ptr<PublicKeyOps> ops;
  // Which operations some loaded backend declares for this key's size
  // with key import (the k* bits below): the rest go to OpenSSL directly, as
  // the router would refuse them with a caller-error code.
  uint32_t routable = 0;
  // A key the key loader made for a token object (AttachTokenOps): no
  // private part in memory, so its private operations are the token's or
  // fail, and its ops are not rebuilt from the object's parts.
  bool token = false;
};

// Routable bits.
constexpr uint32_t kSignPkcs1 = 1u << 0;
constexpr uint32_t kSignRaw = 1u << 1;
constexpr uint32_t kCryptPkcs1 = 1u << 2;
constexpr uint32_t kCryptOaep = 1u << 3;
constexpr uint32_t kCryptRaw = 1u << 4;
constexpr uint32_t kDsaSign = 1u << 5;

uint32_t RoutableFor(Router& router, const KeyMaterial& key) {
  const size_t bits = key.bits();
  uint32_t out = 0;
  auto declares = [&](accelcrypt_alg alg, uint32_t padding) {
    return router.TakesKey(alg, padding, bits);
  };
  if (key.type == KeyMaterial::Type::kDsa) {
    return declares(ACCELCRYPT_ALG_DSA_SIGN, Router::kAnyPadding) ? kDsaSign
                                                                  : 0u;
  }
  if (declares(ACCELCRYPT_ALG_RSA_SIGN, ACCELCRYPT_PAD_PKCS1)) {
    out |= kSignPkcs1;
  }
  if (declares(ACCELCRYPT_ALG_RSA_SIGN, ACCELCRYPT_PAD_NONE)) out |= kSignRaw;
  if (declares(ACCELCRYPT_ALG_RSA_CRYPT, ACCELCRYPT_PAD_PKCS1)) {
    out |= kCryptPkcs1;
  }
  if (declares(ACCELCRYPT_ALG_RSA_CRYPT, ACCELCRYPT_PAD_OAEP)) {
    out |= kCryptOaep;
  }
  if (declares(ACCELCRYPT_ALG_RSA_CRYPT, ACCELCRYPT_PAD_NONE)) {
    out |= kCryptRaw;
  }
  return out;
}

void FreeCachedOps(void* parent, void* ptr, CRYPTO_EX_DATA* ad, int idx,
                   long argl, void* argp) {
  delete static_cast<CachedOps*>(ptr);
}

// A duplicated key (RSAPrivateKey_dup, EVP_PKEY_dup) starts without ops
// (the entry must not be shared by two objects), except a token key's
// duplicate, which holds no private part to rebuild them from: it gets an
// entry of its own sharing the token key's operations.
int DupCachedOps(CRYPTO_EX_DATA* to, const CRYPTO_EX_DATA* from, void** from_d,
                 int idx, long argl, void* argp) {
  const auto* source = static_cast<const CachedOps*>(*from_d);
  *from_d = nullptr;
  if (source == nullptr || !source->token) return 1;
  auto* copy = new (std::nothrow) CachedOps;
  if (copy == nullptr) return 0;
  copy->core = source->core;
  copy->ops = source->ops;
  copy->routable = source->routable;
  copy->token = true;
  *from_d = copy;
  return 1;
}

std::vector<uint8_t> Bytes(const BIGNUM* bn) {
  if (bn == nullptr) return {};
  std::vector<uint8_t> out(BN_num_bytes(bn));
  if (!out.empty()) BN_bn2bin(bn, out.data());
  return out;
}

KeyMaterial RsaMaterial(const RSA* rsa) {
  const BIGNUM *n, *e, *d, *p, *q, *dmp1, *dmq1, *iqmp;
  RSA_get0_key(rsa, &n, &e, &d);
  RSA_get0_factors(rsa, &p, &q);
  RSA_get0_crt_params(rsa, &dmp1, &dmq1, &iqmp);
  KeyMaterial m;
  m.type = KeyMaterial::Type::kRsa;
  m.n = Bytes(n);
  m.e = Bytes(e);
  m.d = Bytes(d);
  // Multi-prime keys (RFC 8017 section 3.1, u > 2) carry more than p and q;
  // the two-prime CRT values would be wrong for them, so only d is given.
  if (RSA_get_multi_prime_extra_count(rsa) == 0) {
    m.p = Bytes(p);
    m.q = Bytes(q);
    m.dmp1 = Bytes(dmp1);
    m.dmq1 = Bytes(dmq1);
    m.iqmp = Bytes(iqmp);
  }
  return m;
}

KeyMaterial DsaMaterial(const DSA* dsa) {
  const BIGNUM *p, *q, *g, *y, *x;
  DSA_get0_pqg(dsa, &p, &q, &g);
  DSA_get0_key(dsa, &y, &x);
  KeyMaterial m;
  m.type = KeyMaterial::Type::kDsa;
  m.dsa_p = Bytes(p);
  m.dsa_q = Bytes(q);
  m.dsa_g = Bytes(g);
  m.dsa_y = Bytes(y);
  m.dsa_x = Bytes(x);
  return m;
}

// OpsFor returns the routed ops for a key, building and caching them on
// first use. Null when the engine has no core or the router takes no
// backend for this key: the caller falls back to OpenSSL.
// `need` is the Routable bit of the operation: null when no backend
// declares it for this key.
template <typename Key, typename GetEx, typename SetEx, typename Material>
PublicKeyOps* OpsFor(Key* key, int index, Core* core, const BIGNUM* pub,
                     const BIGNUM* priv, uint32_t need, GetEx get_ex,
                     SetEx set_ex, Material material) {
  if (core == nullptr || index < 0) return nullptr;
  auto matches = [&](const CachedOps* c) {
    return c != nullptr && c->core == core &&
           (c->token || (c->pub == pub && c->priv == priv));
  };
  auto serve = [need](const CachedOps* c) {
    return (c->routable & need) != 0 ? c->ops.get() : nullptr;
  };
  auto* cached = static_cast<CachedOps*>(get_ex(key, index));
  if (matches(cached)) return serve(cached);
  std::lock_guard<std::mutex> l(g_cache_mu);
  cached = static_cast<CachedOps*>(get_ex(key, index));
  if (matches(cached)) return serve(cached);
  if (cached != nullptr) {
    // The key's parts changed under a cached entry that another thread may
    // be using: leave it (freed with the key) and serve this key from
    // OpenSSL rather than race on the replacement.
    return nullptr;
  }
  auto fresh = std::make_unique<CachedOps>();
  fresh->core = core;
  fresh->pub = pub;
  fresh->priv = priv;
  KeyMaterial m = material(key);
  fresh->routable = RoutableFor(core->router(), m);
  if (fresh->routable != 0) {
    absl::StatusOr<std::unique_ptr<PublicKeyOps>> ops =
        core->router().NewPublicKeyOps(std::move(m));
    if (ops.ok()) fresh->ops = *std::move(ops);
  }
  PublicKeyOps* result = serve(fresh.get());
  if (set_ex(key, index, fresh.get()) == 1) {
    static_cast<void>(fresh.release());  // the key's ex_data owns it now
  }
  return result;
}

EngineState* RsaState(const RSA* rsa) {
  return static_cast<EngineState*>(RSA_meth_get0_app_data(RSA_get_method(rsa)));
}

EngineState* DsaState(DSA* dsa) {
  return static_cast<EngineState*>(DSA_meth_get0_app_data(DSA_get_method(dsa)));
}

PublicKeyOps* RsaOps(RSA* rsa, uint32_t need) {
  EngineState* state = RsaState(rsa);
  Core* core = state != nullptr ? state->core.load() : nullptr;
  const BIGNUM *n, *e, *d;
  RSA_get0_key(rsa, &n, &e, &d);
  return OpsFor(rsa, g_rsa_index, core, n, d, need, RSA_get_ex_data,
                RSA_set_ex_data, RsaMaterial);
}

PublicKeyOps* DsaOps(DSA* dsa) {
  EngineState* state = DsaState(dsa);
  Core* core = state != nullptr ? state->core.load() : nullptr;
  const BIGNUM *y, *x;
  DSA_get0_key(dsa, &y, &x);
  return OpsFor(dsa, g_dsa_index, core, y, x, kDsaSign, DSA_get_ex_data,
                DSA_set_ex_data, DsaMaterial);
}

// FallsBack is true for failures OpenSSL's own implementation may still
// serve: nothing routed took the operation, or every backend failed.
// Caller errors (kInvalidArgument: bad padding, input too long, a wrong
// signature; kOutOfRange) are the answer. A private operation with a key
// whose private half exists only on its token (`ops` of a loaded token
// key) has nothing for OpenSSL to use: the token's answer stands.
bool FallsBack(const absl::Status& status, const PublicKeyOps& ops,
               bool private_op) {
  if (private_op && !ops.key().uri.empty() &&
      !ops.key().has_private_material()) {
    return false;
  }
  return status.code() != absl::StatusCode::kInvalidArgument &&
         status.code() != absl::StatusCode::kOutOfRange;
}

// RsaParams maps an RSA_METHOD padding to core parameters and the
// Routable bit it needs; false for the paddings we do not route (X9.31,
// SSLv23), which OpenSSL then serves.
bool RsaParams(int padding, bool cipher, PkeyParams* out, uint32_t* need) {
  switch (padding) {
    case RSA_PKCS1_PADDING:
      // Signatures: the input is the DigestInfo (or the TLS 1.0 MD5+SHA1
      // concatenation) as RSA_sign made it; it is padded as it is.
      out->padding = ACCELCRYPT_PAD_PKCS1;
      *need = cipher ? kCryptPkcs1 : kSignPkcs1;
      return true;
    case RSA_NO_PADDING:
      out->padding = ACCELCRYPT_PAD_NONE;
      *need = cipher ? kCryptRaw : kSignRaw;
      return true;
    case RSA_PKCS1_OAEP_PADDING:
      // RSA_private_decrypt's OAEP is RFC 8017 section 7.1 with SHA-1, MGF1
      // with SHA-1 and an empty label.
      if (!cipher) return false;
      out->padding = ACCELCRYPT_PAD_OAEP;
      out->md = ACCELCRYPT_ALG_SHA1;
      out->mgf1_md = ACCELCRYPT_ALG_SHA1;
      *need = kCryptOaep;
      return true;
    default:
      return false;
  }
}

const RSA_METHOD* OpenSslRsa() { return RSA_PKCS1_OpenSSL(); }

using RsaMethodFn = int (*)(int, const unsigned char*, unsigned char*, RSA*,
                            int);

// RouteRsa serves one RSA_METHOD call (`cipher`: an encryption or
// decryption, else a signature) with `op` on the routed ops; what no
// backend takes, and failures OpenSSL may still serve, go to OpenSSL's own
// `openssl` function.
template <typename Op>
int RouteRsa(int flen, const unsigned char* from, unsigned char* to, RSA* rsa,
             int padding, bool cipher, bool private_op, RsaMethodFn openssl,
             Op&& op) {
  auto fallback = [&] { return openssl(flen, from, to, rsa, padding); };
  PkeyParams params;
  uint32_t need = 0;
  if (InsideEngine() || flen < 0 ||
      !RsaParams(padding, cipher, &params, &need)) {
    return fallback();
  }
  PublicKeyOps* ops = RsaOps(rsa, need);
  if (ops == nullptr) return fallback();
  EngineCallGuard guard;
  absl::StatusOr<size_t> n =
      op(*ops, params, absl::MakeConstSpan(from, flen),
         absl::MakeSpan(to, static_cast<size_t>(RSA_size(rsa))));
  if (n.ok()) return static_cast<int>(*n);
  if (FallsBack(n.status(), *ops, private_op)) return fallback();
  RaiseError(kReasonOperationFailed, n.status());
  return -1;
}

int RsaPrivEnc(int flen, const unsigned char* from, unsigned char* to, RSA* rsa,
               int padding) {
  return RouteRsa(
      flen, from, to, rsa, padding, /*cipher=*/false, /*private_op=*/true,
      RSA_meth_get_priv_enc(OpenSslRsa()),
      [](PublicKeyOps& ops, const PkeyParams& p, absl::Span<const uint8_t> in,
         absl::Span<uint8_t> out) { return ops.Sign(p, in, out); });
}

int RsaPrivDec(int flen, const unsigned char* from, unsigned char* to, RSA* rsa,
               int padding) {
  return RouteRsa(
      flen, from, to, rsa, padding, /*cipher=*/true, /*private_op=*/true,
      RSA_meth_get_priv_dec(OpenSslRsa()),
      [](PublicKeyOps& ops, const PkeyParams& p, absl::Span<const uint8_t> in,
         absl::Span<uint8_t> out) { return ops.Decrypt(p, in, out); });
}

int RsaPubEnc(int flen, const unsigned char* from, unsigned char* to, RSA* rsa,
              int padding) {
  return RouteRsa(
      flen, from, to, rsa, padding, /*cipher=*/true, /*private_op=*/false,
      RSA_meth_get_pub_enc(OpenSslRsa()),
      [](PublicKeyOps& ops, const PkeyParams& p, absl::Span<const uint8_t> in,
         absl::Span<uint8_t> out) { return ops.Encrypt(p, in, out); });
}

// RsaPubDec recovers the signed block (RSA_verify's path): the raw public
// operation (RSAVP1, RFC 8017 section 5.2.2, which is RSAEP) is routed as
// an unpadded encryption, and the PKCS#1 type 1 padding is checked here
// with OpenSSL's own check, as rsa_ossl_public_decrypt does.
int RsaPubDec(int flen, const unsigned char* from, unsigned char* to, RSA* rsa,
              int padding) {
  auto fallback = [&] {
    return RSA_meth_get_pub_dec(OpenSslRsa())(flen, from, to, rsa, padding);
  };
  const int num = RSA_size(rsa);
  if (InsideEngine() || flen < 0 || flen > num ||
      (padding != RSA_PKCS1_PADDING && padding != RSA_NO_PADDING)) {
    return fallback();
  }
  PublicKeyOps* ops = RsaOps(rsa, kCryptRaw);
  if (ops == nullptr) return fallback();
  // The signature as a modulus-sized integer (a shorter one has leading
  // zero bytes stripped).
  std::vector<uint8_t> in(num, 0);
  std::memcpy(in.data() + (num - flen), from, flen);
  std::vector<uint8_t> block(num, 0);
  PkeyParams params;
  params.padding = ACCELCRYPT_PAD_NONE;
  absl::StatusOr<size_t> n;
  {
    EngineCallGuard guard;
    n = ops->Encrypt(params, in, absl::MakeSpan(block));
  }
  if (!n.ok()) {
    if (FallsBack(n.status(), *ops, /*private_op=*/false)) return fallback();
    RaiseError(kReasonOperationFailed, n.status());
    return -1;
  }
  int r = -1;
  if (*n == static_cast<size_t>(num)) {
    if (padding == RSA_NO_PADDING) {
      std::memcpy(to, block.data(), num);
      r = num;
    } else {
      r = RSA_padding_check_PKCS1_type_1(to, num, block.data(), num, num);
    }
  }
  OPENSSL_cleanse(block.data(), block.size());
  return r;
}

DSA_SIG* DsaDoSign(const unsigned char* dgst, int dlen, DSA* dsa) {
  auto fallback = [&] {
    return DSA_meth_get_sign(DSA_OpenSSL())(dgst, dlen, dsa);
  };
  if (InsideEngine() || dlen < 0) return fallback();
  PublicKeyOps* ops = DsaOps(dsa);
  if (ops == nullptr) return fallback();
  std::vector<uint8_t> der(ops->SignatureSize());
  absl::StatusOr<size_t> n;
  {
    EngineCallGuard guard;
    n = ops->Sign(PkeyParams(), absl::MakeConstSpan(dgst, dlen),
                  absl::MakeSpan(der));
  }
  if (!n.ok()) {
    if (FallsBack(n.status(), *ops, /*private_op=*/true)) return fallback();
    RaiseError(kReasonOperationFailed, n.status());
    return nullptr;
  }
  // DSA signatures cross the plugin ABI DER-encoded (Dss-Sig-Value).
  const unsigned char* p = der.data();
  DSA_SIG* sig = d2i_DSA_SIG(nullptr, &p, static_cast<long>(*n));
  if (sig == nullptr) {
    RaiseError(kReasonOperationFailed,
               absl::InternalError("a backend returned a malformed DSA "
                                   "signature"));
  }
  return sig;
}

int DsaDoVerify(const unsigned char* dgst, int dlen, DSA_SIG* sig, DSA* dsa) {
  auto fallback = [&] {
    return DSA_meth_get_verify(DSA_OpenSSL())(dgst, dlen, sig, dsa);
  };
  if (InsideEngine() || dlen < 0) return fallback();
  PublicKeyOps* ops = DsaOps(dsa);
  if (ops == nullptr) return fallback();
  unsigned char* der = nullptr;
  int der_len = i2d_DSA_SIG(sig, &der);
  if (der_len <= 0) return fallback();
  absl::Status st;
  {
    EngineCallGuard guard;
    st = ops->Verify(PkeyParams(), absl::MakeConstSpan(dgst, dlen),
                     absl::MakeConstSpan(der, static_cast<size_t>(der_len)));
  }
  OPENSSL_free(der);
  if (st.ok()) return 1;
  if (st.code() == absl::StatusCode::kInvalidArgument) return 0;
  return fallback();
}

}  // namespace

absl::Status RegisterPkeyExData() {
  std::call_once(g_index_once, [] {
    g_rsa_index =
        RSA_get_ex_new_index(0, nullptr, nullptr, DupCachedOps, FreeCachedOps);
    g_dsa_index =
        DSA_get_ex_new_index(0, nullptr, nullptr, DupCachedOps, FreeCachedOps);
  });
  if (g_rsa_index < 0 || g_dsa_index < 0) {
    return absl::ResourceExhaustedError("cannot allocate RSA/DSA ex_data");
  }
  return absl::OkStatus();
}

namespace {

// Every operation: the router decides per operation which backend holding
// the token key takes it, and says why when none does.
constexpr uint32_t kAllRsa =
    kSignPkcs1 | kSignRaw | kCryptPkcs1 | kCryptOaep | kCryptRaw;

template <typename Key, typename SetEx>
absl::Status Attach(Key* key, int index, const BIGNUM* pub, Core* core,
                    std::unique_ptr<PublicKeyOps> ops, uint32_t routable,
                    SetEx set_ex) {
  if (index < 0 || core == nullptr || ops == nullptr) {
    return absl::FailedPreconditionError("the engine is not initialised");
  }
  auto fresh = std::make_unique<CachedOps>();
  fresh->core = core;
  fresh->pub = pub;
  fresh->ops = std::move(ops);
  fresh->routable = routable;
  fresh->token = true;
  if (set_ex(key, index, fresh.get()) != 1) {
    return absl::ResourceExhaustedError("cannot attach the token key");
  }
  static_cast<void>(fresh.release());  // the key's ex_data owns it now
  return absl::OkStatus();
}

}  // namespace

absl::Status AttachTokenOps(RSA* rsa, Core* core,
                            std::unique_ptr<PublicKeyOps> ops) {
  const BIGNUM *n, *e, *d;
  RSA_get0_key(rsa, &n, &e, &d);
  return Attach(rsa, g_rsa_index, n, core, std::move(ops), kAllRsa,
                RSA_set_ex_data);
}

absl::Status AttachTokenOps(DSA* dsa, Core* core,
                            std::unique_ptr<PublicKeyOps> ops) {
  const BIGNUM *y, *x;
  DSA_get0_key(dsa, &y, &x);
  return Attach(dsa, g_dsa_index, y, core, std::move(ops), kDsaSign,
                DSA_set_ex_data);
}

absl::Status BuildPkeyMethods(EngineState* state) {
  RSA_METHOD* rsa = RSA_meth_dup(RSA_PKCS1_OpenSSL());
  DSA_METHOD* dsa = DSA_meth_dup(DSA_OpenSSL());
  if (rsa == nullptr || dsa == nullptr ||
      RSA_meth_set1_name(rsa, "accelcrypt routed RSA") != 1 ||
      RSA_meth_set0_app_data(rsa, state) != 1 ||
      RSA_meth_set_priv_enc(rsa, RsaPrivEnc) != 1 ||
      RSA_meth_set_priv_dec(rsa, RsaPrivDec) != 1 ||
      RSA_meth_set_pub_enc(rsa, RsaPubEnc) != 1 ||
      RSA_meth_set_pub_dec(rsa, RsaPubDec) != 1 ||
      DSA_meth_set1_name(dsa, "accelcrypt routed DSA") != 1 ||
      DSA_meth_set0_app_data(dsa, state) != 1 ||
      DSA_meth_set_sign(dsa, DsaDoSign) != 1 ||
      DSA_meth_set_verify(dsa, DsaDoVerify) != 1) {
    RSA_meth_free(rsa);
    DSA_meth_free(dsa);
    return absl::ResourceExhaustedError("cannot build the RSA/DSA methods");
  }
  state->rsa_method = rsa;
  state->dsa_method = dsa;
  return absl::OkStatus();
}

void FreePkeyMethods(EngineState* state) {
  RSA_meth_free(state->rsa_method);
  DSA_meth_free(state->dsa_method);
  state->rsa_method = nullptr;
  state->dsa_method = nullptr;
}

}  // namespace accelcrypt::engine
