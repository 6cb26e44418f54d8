// SPDX-License-Identifier: Apache-2.0
// The PKCS#11 client backend's plugin-ABI shim: the only place its
// statuses become ABI codes, and where no exception may pass.
#include <openssl/crypto.h>
#include <openssl/provider.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "accelcrypt/backend.h"
#include "backends/pkcs11/ck_status.h"
#include "backends/pkcs11/pkey_pkcs11_client.h"
#include "backends/pkcs11/token.h"

#ifndef ACCELCRYPT_PKCS11_CLIENT_VERSION
#define ACCELCRYPT_PKCS11_CLIENT_VERSION "0.0.0"
#endif

namespace accelcrypt::pkcs11_client {
namespace {

// Keys under 1024 bits are never offloaded, whatever the token allows.
constexpr size_t kMinKeyBits = 1024;

// Instance is the backend: the token, a private library context (for the
// key fingerprints: never the application's, which may route back into
// accelcrypt) and the capability list built from the token's mechanisms.
struct Instance {
  OSSL_LIB_CTX* libctx = nullptr;
  OSSL_PROVIDER* provider = nullptr;
  std::unique_ptr<Token> token;
  std::vector<accelcrypt_capability> caps;
  KeyLimits limits;
  ~Instance() {
    token.reset();
    if (provider != nullptr) OSSL_PROVIDER_unload(provider);
    OSSL_LIB_CTX_free(libctx);
  }
};

// Guard: the kit's (accelcrypt/kit/status.h), named for this backend, on
// a thread marked as inside it (TokenCall). A thread already inside some
// instance of this backend is refused at once (busy: the router serves
// the call elsewhere, or, for a start, tries later): it came back here
// from the token module's own code (a module that uses OpenSSL), and
// calling the module again from there would re-enter it, or wait on a
// lock this thread holds.
constexpr char kNestedMessage[] =
    "pkcs11: busy: asked from inside a call into a PKCS#11 module on this "
    "thread (the module uses OpenSSL, which came back into accelcrypt)";

template <typename F>
accelcrypt_status Guard(accelcrypt_error* err, F&& f) {
  if (TokenCall::Nested()) {
    return WriteAbiError(ACCELCRYPT_ERR_RESOURCE_EXHAUSTED, kNestedMessage,
                         err);
  }
  TokenCall call;
  return kit::Guard("pkcs11", err, std::forward<F>(f));
}

Instance* AsInstance(void* backend) { return static_cast<Instance*>(backend); }
PkeyPkcs11Client* AsKey(accelcrypt_pkey* key) {
  return reinterpret_cast<PkeyPkcs11Client*>(key);
}

// Range merges the key sizes of the mechanisms present with `flag`.
void Range(const Token& token, std::initializer_list<CK_MECHANISM_TYPE> mechs,
           CK_FLAGS flag, uint32_t* lo, uint32_t* hi) {
  *lo = 0;
  *hi = 0;
  for (CK_MECHANISM_TYPE m : mechs) {
    const MechInfo& mi = token.mech(m);
    if (!mi.present || !(mi.flags & flag)) continue;
    uint32_t mn =
        static_cast<uint32_t>(std::max<CK_ULONG>(mi.min_bits, kMinKeyBits));
    uint32_t mx = static_cast<uint32_t>(mi.max_bits);
    *lo = *lo == 0 ? mn : std::min(*lo, mn);
    *hi = std::max(*hi, mx);
  }
}

void BuildCaps(Instance* in) {
  const Token& t = *in->token;
  auto has = [&](CK_MECHANISM_TYPE m, CK_FLAGS f) {
    return t.mech(m).present && (t.mech(m).flags & f) != 0;
  };
  uint32_t sign = 0, crypt = 0;
  if (has(CKM_RSA_PKCS, CKF_SIGN) || has(CKM_RSA_X_509, CKF_SIGN)) {
    // With only CKM_RSA_X_509, EMSA-PKCS1-v1_5 is done in this backend.
    sign |= ACCELCRYPT_CAP_RSA_PKCS1;
  }
  if (has(CKM_RSA_PKCS_PSS, CKF_SIGN) || has(CKM_RSA_X_509, CKF_SIGN)) {
    // With only CKM_RSA_X_509, EMSA-PSS is done in this backend too.
    sign |= ACCELCRYPT_CAP_RSA_PSS;
  }
  if (has(CKM_RSA_X_509, CKF_SIGN)) sign |= ACCELCRYPT_CAP_RSA_RAW;
  // With only CKM_RSA_X_509, both encryption paddings are done here.
  if (has(CKM_RSA_PKCS, CKF_DECRYPT) || has(CKM_RSA_X_509, CKF_DECRYPT)) {
    crypt |= ACCELCRYPT_CAP_RSA_PKCS1;
  }
  if (has(CKM_RSA_PKCS_OAEP, CKF_DECRYPT) || has(CKM_RSA_X_509, CKF_DECRYPT)) {
    crypt |= ACCELCRYPT_CAP_RSA_OAEP;
  }
  if (has(CKM_RSA_X_509, CKF_DECRYPT)) crypt |= ACCELCRYPT_CAP_RSA_RAW;
  uint32_t lo, hi;
  Range(t, {CKM_RSA_PKCS, CKM_RSA_PKCS_PSS, CKM_RSA_PKCS_OAEP, CKM_RSA_X_509},
        CKF_SIGN | CKF_DECRYPT, &lo, &hi);
  in->limits.rsa_min = lo;
  in->limits.rsa_max = hi;
  if (sign != 0 && lo != 0 && hi >= lo) {
    in->caps.push_back(accelcrypt_capability{
        ACCELCRYPT_ALG_RSA_SIGN,
        sign | ACCELCRYPT_CAP_KEY_IMPORT | ACCELCRYPT_CAP_OFFLOAD, 1, lo, 0, hi,
        0});
  }
  if (crypt != 0 && lo != 0 && hi >= lo) {
    in->caps.push_back(accelcrypt_capability{
        ACCELCRYPT_ALG_RSA_CRYPT,
        crypt | ACCELCRYPT_CAP_KEY_IMPORT | ACCELCRYPT_CAP_OFFLOAD, 1, lo, 0,
        hi, 0});
  }
  Range(t, {CKM_DSA}, CKF_SIGN, &lo, &hi);
  in->limits.dsa_min = lo;
  in->limits.dsa_max = hi;
  if (has(CKM_DSA, CKF_SIGN) && lo != 0 && hi >= lo) {
    in->caps.push_back(accelcrypt_capability{
        ACCELCRYPT_ALG_DSA_SIGN,
        ACCELCRYPT_CAP_KEY_IMPORT | ACCELCRYPT_CAP_OFFLOAD, 1, lo, 0, hi, 0});
  }
}

accelcrypt_status BackendInit(const accelcrypt_host* host, void** backend_out,
                              accelcrypt_error* err) {
  if (backend_out == nullptr) {
    return WriteAbiError(ACCELCRYPT_ERR_INVALID_ARGUMENT,
                         "pkcs11: backend_out is NULL", err);
  }
  // The configuration first, nested or not (it calls no module): a
  // mistake in it (a module that leads back here) is reported as such.
  absl::StatusOr<TokenConfig> config;
  accelcrypt_status read = kit::Guard("pkcs11", err, [&]() -> absl::Status {
    config = ReadConfig(host);
    return config.status();
  });
  if (read != ACCELCRYPT_OK) return read;
  return Guard(err, [&]() -> absl::Status {
    auto in = std::make_unique<Instance>();
    in->libctx = OSSL_LIB_CTX_new();
    in->provider = in->libctx != nullptr
                       ? OSSL_PROVIDER_load(in->libctx, "default")
                       : nullptr;
    if (in->provider == nullptr) {
      return absl::UnavailableError(
          "pkcs11: cannot load OpenSSL's default provider");
    }
    absl::StatusOr<std::unique_ptr<Token>> token =
        Token::Create(*config, in->libctx, host);
    if (!token.ok()) return token.status();
    in->token = std::move(*token);
    BuildCaps(in.get());
    if (in->caps.empty()) {
      return absl::UnavailableError(
          "pkcs11: the token offers no RSA or DSA mechanism this backend uses");
    }
    *backend_out = in.release();
    return absl::OkStatus();
  });
}

void BackendTeardown(void* backend) {
  TokenCall call;
  delete AsInstance(backend);
}

accelcrypt_status BackendCapabilities(void* backend,
                                      const accelcrypt_capability** out,
                                      size_t* num_out, accelcrypt_error* err) {
  if (backend == nullptr || out == nullptr || num_out == nullptr) {
    return WriteAbiError(ACCELCRYPT_ERR_INVALID_ARGUMENT,
                         "pkcs11: NULL argument", err);
  }
  *out = AsInstance(backend)->caps.data();
  *num_out = AsInstance(backend)->caps.size();
  return ACCELCRYPT_OK;
}

accelcrypt_status PkeyLoad(void* backend, const accelcrypt_key_desc* desc,
                           accelcrypt_pkey** out, accelcrypt_error* err) {
  if (backend == nullptr || desc == nullptr || out == nullptr ||
      desc->struct_size < sizeof(accelcrypt_key_desc)) {
    return WriteAbiError(ACCELCRYPT_ERR_INVALID_ARGUMENT,
                         "pkcs11: bad load_key arguments", err);
  }
  return Guard(err, [&]() -> absl::Status {
    Instance* in = AsInstance(backend);
    absl::StatusOr<std::unique_ptr<PkeyPkcs11Client>> key =
        PkeyPkcs11Client::Load(in->token.get(), in->libctx, in->limits, *desc);
    if (!key.ok()) return key.status();
    *out = reinterpret_cast<accelcrypt_pkey*>(key->release());
    return absl::OkStatus();
  });
}

void PkeyFree(accelcrypt_pkey* key) { delete AsKey(key); }

bool BadParams(accelcrypt_pkey* key, const accelcrypt_pkey_params* params) {
  return key == nullptr || params == nullptr ||
         params->struct_size < sizeof(accelcrypt_pkey_params);
}

accelcrypt_status PkeySign(accelcrypt_pkey* key,
                           const accelcrypt_pkey_params* params,
                           const uint8_t* tbs, size_t tbs_len, uint8_t* sig,
                           size_t* sig_len, accelcrypt_error* err) {
  if (BadParams(key, params) || sig_len == nullptr) {
    return WriteAbiError(ACCELCRYPT_ERR_INVALID_ARGUMENT,
                         "pkcs11: bad sign arguments", err);
  }
  return Guard(err, [&] {
    return AsKey(key)->Sign(*params, tbs, tbs_len, sig, sig_len);
  });
}

accelcrypt_status PkeyVerify(accelcrypt_pkey* key,
                             const accelcrypt_pkey_params* params,
                             const uint8_t* tbs, size_t tbs_len,
                             const uint8_t* sig, size_t sig_len,
                             accelcrypt_error* err) {
  if (BadParams(key, params)) {
    return WriteAbiError(ACCELCRYPT_ERR_INVALID_ARGUMENT,
                         "pkcs11: bad verify arguments", err);
  }
  return Guard(err, [&] {
    return AsKey(key)->Verify(*params, tbs, tbs_len, sig, sig_len);
  });
}

accelcrypt_status PkeyEncrypt(accelcrypt_pkey* key,
                              const accelcrypt_pkey_params* params,
                              const uint8_t* in, size_t in_len, uint8_t* out,
                              size_t* out_len, accelcrypt_error* err) {
  if (BadParams(key, params) || out_len == nullptr) {
    return WriteAbiError(ACCELCRYPT_ERR_INVALID_ARGUMENT,
                         "pkcs11: bad encrypt arguments", err);
  }
  return Guard(err, [&] {
    return AsKey(key)->Encrypt(*params, in, in_len, out, out_len);
  });
}

accelcrypt_status PkeyDecrypt(accelcrypt_pkey* key,
                              const accelcrypt_pkey_params* params,
                              const uint8_t* in, size_t in_len, uint8_t* out,
                              size_t* out_len, accelcrypt_error* err) {
  if (BadParams(key, params) || out_len == nullptr) {
    return WriteAbiError(ACCELCRYPT_ERR_INVALID_ARGUMENT,
                         "pkcs11: bad decrypt arguments", err);
  }
  return Guard(err, [&] {
    return AsKey(key)->Decrypt(*params, in, in_len, out, out_len);
  });
}

constexpr accelcrypt_pkey_table kRsaTable = {
    sizeof(accelcrypt_pkey_table),
    PkeyLoad,
    PkeyFree,
    PkeySign,
    PkeyVerify,
    PkeyEncrypt,
    PkeyDecrypt,
};
constexpr accelcrypt_pkey_table kDsaTable = {
    sizeof(accelcrypt_pkey_table),
    PkeyLoad,
    PkeyFree,
    PkeySign,
    PkeyVerify,
    nullptr,
    nullptr,
};

const void* BackendQueryFamily(void* backend, uint32_t family) {
  switch (family) {
    case ACCELCRYPT_FAMILY_RSA:
      return &kRsaTable;
    case ACCELCRYPT_FAMILY_DSA:
      return &kDsaTable;
    default:
      return nullptr;
  }
}

void BackendDescribe(void* backend, char* out, size_t out_len) {
  if (backend == nullptr || out == nullptr || out_len == 0) return;
  try {
    std::snprintf(out, out_len, "%s",
                  AsInstance(backend)->token->Describe().c_str());
  } catch (...) {
    out[0] = '\0';
  }
}

constexpr accelcrypt_backend_desc kDescriptor = {
    ACCELCRYPT_ABI_VERSION,
    sizeof(accelcrypt_backend_desc),
    "pkcs11",
    ACCELCRYPT_PKCS11_CLIENT_VERSION,
    BackendInit,
    BackendTeardown,
    BackendCapabilities,
    BackendQueryFamily,
    BackendDescribe,
};

}  // namespace
}  // namespace accelcrypt::pkcs11_client

extern "C" ACCELCRYPT_BACKEND_EXPORT const accelcrypt_backend_desc*
accelcrypt_backend_entry(uint32_t host_abi_version) {
  if (host_abi_version != ACCELCRYPT_ABI_VERSION) return nullptr;
  return &accelcrypt::pkcs11_client::kDescriptor;
}

// Without pkcs11.module this backend declines (ReadConfig): the loader
// reads that here and does not load the module at all. Its start is
// deferred to the first RSA or DSA operation: the token module's
// C_Initialize must not run while OpenSSL loads its configuration or an
// ENGINE (a module that uses OpenSSL, as SoftHSMv2 and accelcrypt's own
// do, loads accelcrypt again from there), and a process that never signs
// never loads the token module; a start that fails is retried with
// back-off (a token plugged in later).
ACCELCRYPT_BACKEND_LOAD_HINTS(ACCELCRYPT_LOAD_HINT("name=pkcs11")
                                  ACCELCRYPT_LOAD_HINT("needs-config=module")
                                      ACCELCRYPT_LOAD_HINT("defer=rsa,dsa"));
