// SPDX-License-Identifier: Apache-2.0
// The engine's key loader: ENGINE_load_private_key / ENGINE_load_public_key
// for RFC 7512 `pkcs11:` URIs, as nginx's `ssl_certificate_key
// engine:accelcrypt:pkcs11:...` and `openssl ... -engine accelcrypt
// -keyform engine` call it. The key is found through the core, as the
// provider's `pkcs11:` store finds it (Router::DescribeTokenKey: the backend
// holding the object reads its type and public parts from the token), and
// returned as a legacy RSA or DSA object with the engine's method, the
// public parts and no private part: its private operations are routed
// (Router::NewPublicKeyOps over the URI) to the token that holds the key,
// which never leaves it. The engine names no backend.
//
// The PIN comes from the configured source of the backend holding the token
// (or the URI's pin-value/pin-source); the UI_METHOD an application passes
// is never used: a daemon has no terminal to prompt on. A private key is
// proven usable at load with one signature, so that a server that cannot
// use its key (no PIN, a wrong one, a token it cannot open) fails when it
// starts, saying why, rather than at its first handshake.
#include <openssl/bn.h>
#include <openssl/dsa.h>
#include <openssl/engine.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "core/core.h"
#include "core/pkey.h"
#include "core/router.h"
#include "engine/engine_state.h"

namespace accelcrypt::engine {
namespace {

// Shown is the URI without its query (which may carry a PIN).
std::string Shown(std::string_view uri) {
  return std::string(uri.substr(0, uri.find('?')));
}

BIGNUM* ToBn(const std::vector<uint8_t>& bytes) {
  return BN_bin2bn(bytes.data(), static_cast<int>(bytes.size()), nullptr);
}

// HasPinSource is true when the configuration gives some backend a PIN
// source (a `<backend>.pin_file` or `<backend>.pin_env` key) or the URI
// carries one (RFC 7512 pin-value or pin-source).
bool HasPinSource(const Config& config, std::string_view uri) {
  const size_t query = uri.find('?');
  if (query != std::string_view::npos) {
    const std::string_view q = uri.substr(query + 1);
    if (q.find("pin-value=") != std::string_view::npos ||
        q.find("pin-source=") != std::string_view::npos) {
      return true;
    }
  }
  for (const auto& [key, value] : config.values()) {
    if (value.empty()) continue;
    if (key.ends_with(".pin_file") || key.ends_with(".pin_env")) {
      return true;
    }
  }
  return false;
}

// Probe signs once with the token key: a key that cannot be used is
// reported now. RSA: a PKCS#1 v1.5 signature over a SHA-256 DigestInfo, as
// RSA_sign makes them (TLS 1.2); DSA: over a 32-byte digest.
absl::Status Probe(PublicKeyOps& ops, bool rsa) {
  // DigestInfo for SHA-256 (RFC 8017 section 9.2, note 1) and 32 zero bytes.
  static constexpr std::array<uint8_t, 19> kSha256Prefix = {
      0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01,
      0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20};
  std::vector<uint8_t> tbs;
  if (rsa) tbs.assign(kSha256Prefix.begin(), kSha256Prefix.end());
  tbs.resize(tbs.size() + 32, 0);
  std::vector<uint8_t> sig(ops.SignatureSize());
  PkeyParams params;
  if (rsa) params.padding = ACCELCRYPT_PAD_PKCS1;
  EngineCallGuard guard;
  return ops.Sign(params, tbs, absl::MakeSpan(sig)).status();
}

// NewKey makes the RSA or DSA object: the engine's method, the public
// parts of `key`, no private part. Returns the EVP_PKEY owning it.
absl::StatusOr<EVP_PKEY*> NewKey(ENGINE* e, const KeyMaterial& key,
                                 RSA** rsa_out, DSA** dsa_out) {
  EVP_PKEY* pkey = EVP_PKEY_new();
  if (pkey == nullptr) return absl::ResourceExhaustedError("EVP_PKEY_new");
  if (key.type == KeyMaterial::Type::kRsa) {
    RSA* rsa = RSA_new_method(e);
    BIGNUM* n = ToBn(key.n);
    BIGNUM* pub_e = ToBn(key.e);
    if (rsa == nullptr || n == nullptr || pub_e == nullptr ||
        RSA_set0_key(rsa, n, pub_e, nullptr) != 1) {
      BN_free(n);
      BN_free(pub_e);
      RSA_free(rsa);
      EVP_PKEY_free(pkey);
      return absl::ResourceExhaustedError("cannot build the RSA key");
    }
    if (EVP_PKEY_assign_RSA(pkey, rsa) != 1) {
      RSA_free(rsa);
      EVP_PKEY_free(pkey);
      return absl::ResourceExhaustedError("EVP_PKEY_assign_RSA");
    }
    *rsa_out = rsa;
    return pkey;
  }
  DSA* dsa = DSA_new_method(e);
  BIGNUM* p = ToBn(key.dsa_p);
  BIGNUM* q = ToBn(key.dsa_q);
  BIGNUM* g = ToBn(key.dsa_g);
  BIGNUM* y = key.dsa_y.empty() ? nullptr : ToBn(key.dsa_y);
  const bool pqg_ok = dsa != nullptr && p != nullptr && q != nullptr &&
                      g != nullptr && DSA_set0_pqg(dsa, p, q, g) == 1;
  if (!pqg_ok) {
    BN_free(p);
    BN_free(q);
    BN_free(g);
  }
  if (!pqg_ok || y == nullptr || DSA_set0_key(dsa, y, nullptr) != 1) {
    BN_free(y);
    DSA_free(dsa);
    EVP_PKEY_free(pkey);
    return absl::FailedPreconditionError(
        "the token shows no public value (y) for this DSA key");
  }
  if (EVP_PKEY_assign_DSA(pkey, dsa) != 1) {
    DSA_free(dsa);
    EVP_PKEY_free(pkey);
    return absl::ResourceExhaustedError("EVP_PKEY_assign_DSA");
  }
  *dsa_out = dsa;
  return pkey;
}

absl::StatusOr<EVP_PKEY*> Load(ENGINE* e, const char* key_id,
                               bool want_private) {
  EngineState* state = StateOfEngine(e);
  Core* core = state != nullptr ? state->core.load() : nullptr;
  if (core == nullptr) {
    return absl::FailedPreconditionError(
        "the accelcrypt engine is not initialised (init = 1 in its "
        "openssl.cnf section, or ENGINE_init)");
  }
  const std::string_view uri = key_id != nullptr ? key_id : "";
  if (!uri.starts_with("pkcs11:")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", Shown(uri),
        "' is not an RFC 7512 pkcs11: URI (the accelcrypt engine loads keys "
        "that live on a token, named as pkcs11:token=...;object=...)"));
  }
  EngineCallGuard guard;
  absl::StatusOr<KeyMaterial> described = core->router().DescribeTokenKey(uri);
  if (!described.ok()) return described.status();
  if (!described->has_public()) {
    return absl::FailedPreconditionError(
        absl::StrCat(Shown(uri),
                     ": the token shows no public key for this object; a key "
                     "without its public half cannot serve TLS"));
  }
  const bool rsa = described->type == KeyMaterial::Type::kRsa;
  std::unique_ptr<PublicKeyOps> ops;
  if (want_private) {
    absl::StatusOr<std::unique_ptr<PublicKeyOps>> routed =
        core->router().NewPublicKeyOps(*described);
    if (!routed.ok()) return routed.status();
    ops = *std::move(routed);
    absl::Status usable = Probe(*ops, rsa);
    if (!usable.ok()) {
      if (!HasPinSource(core->config(), uri)) {
        return absl::FailedPreconditionError(absl::StrCat(
            Shown(uri),
            ": the private key cannot be used, and no PIN source is "
            "configured: the accelcrypt engine never prompts for a PIN (a "
            "daemon has no terminal). Give the token backend a PIN source "
            "in the accelcrypt configuration (<backend>.pin_file or "
            "<backend>.pin_env, docs/configuration.md) or pin-source= in "
            "the URI. The token said: ",
            usable.message()));
      }
      return absl::Status(
          usable.code(),
          absl::StrCat(Shown(uri),
                       ": the private key cannot be used: ", usable.message()));
    }
  }
  RSA* rsa_key = nullptr;
  DSA* dsa_key = nullptr;
  absl::StatusOr<EVP_PKEY*> pkey = NewKey(e, *described, &rsa_key, &dsa_key);
  if (!pkey.ok() || !want_private) return pkey;
  absl::Status attached = rsa ? AttachTokenOps(rsa_key, core, std::move(ops))
                              : AttachTokenOps(dsa_key, core, std::move(ops));
  if (!attached.ok()) {
    EVP_PKEY_free(*pkey);
    return attached;
  }
  return pkey;
}

EVP_PKEY* LoadOrRaise(ENGINE* e, const char* key_id, bool want_private) {
  try {
    absl::StatusOr<EVP_PKEY*> pkey = Load(e, key_id, want_private);
    if (pkey.ok()) return *pkey;
    RaiseError(kReasonKeyLoad, pkey.status());
  } catch (...) {
    RaiseError(kReasonKeyLoad, absl::ResourceExhaustedError("out of memory"));
  }
  return nullptr;
}

}  // namespace

EVP_PKEY* LoadPrivateKey(ENGINE* e, const char* key_id, UI_METHOD*, void*) {
  return LoadOrRaise(e, key_id, /*want_private=*/true);
}

EVP_PKEY* LoadPublicKey(ENGINE* e, const char* key_id, UI_METHOD*, void*) {
  return LoadOrRaise(e, key_id, /*want_private=*/false);
}

}  // namespace accelcrypt::engine
