// SPDX-License-Identifier: Apache-2.0
// RSA keymgmt: keys are core KeyMaterial (internal::PkeyKey). Parameter
// names and selection rules follow OpenSSL 3.0's rsa_kmgmt.c, so libcrypto
// moves keys to and from the default provider by export/import. Key
// generation runs libcrypto's RSA keygen in the provider's private library
// context (the core has no keygen; the application's context would route
// back to us).
#include "provider/internal/keymgmt_rsa.h"

#include <openssl/bn.h>
#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <memory>
#include <new>

#include "absl/strings/str_format.h"
#include "core/status.h"
#include "provider/errors.h"
#include "provider/internal/keymgmt_common.h"
#include "provider/internal/pkey_key.h"
#include "provider/pkey.h"

namespace accelcrypt::provider {
namespace {

using internal::KeyField;
using internal::KeyFormat;
using internal::PkeyKey;

constexpr int kPub = OSSL_KEYMGMT_SELECT_PUBLIC_KEY;
constexpr int kPriv = OSSL_KEYMGMT_SELECT_PRIVATE_KEY;

// d comes first among the private fields: KeymgmtMatch compares it alone.
const KeyField kRsaFields[] = {
    {OSSL_PKEY_PARAM_RSA_N, &KeyMaterial::n, kPub},
    {OSSL_PKEY_PARAM_RSA_E, &KeyMaterial::e, kPub},
    {OSSL_PKEY_PARAM_RSA_D, &KeyMaterial::d, kPriv},
    {OSSL_PKEY_PARAM_RSA_FACTOR1, &KeyMaterial::p, kPriv},
    {OSSL_PKEY_PARAM_RSA_FACTOR2, &KeyMaterial::q, kPriv},
    {OSSL_PKEY_PARAM_RSA_EXPONENT1, &KeyMaterial::dmp1, kPriv},
    {OSSL_PKEY_PARAM_RSA_EXPONENT2, &KeyMaterial::dmq1, kPriv},
    {OSSL_PKEY_PARAM_RSA_COEFFICIENT1, &KeyMaterial::iqmp, kPriv},
};
const char* const kRsaRequired[] = {OSSL_PKEY_PARAM_RSA_N,
                                    OSSL_PKEY_PARAM_RSA_E};
// Multi-prime keys (RFC 8017 section 3.1 with u > 2): KeyMaterial holds two
// primes only.
const char* const kRsaRefused[] = {OSSL_PKEY_PARAM_RSA_FACTOR3,
                                   OSSL_PKEY_PARAM_RSA_EXPONENT3,
                                   OSSL_PKEY_PARAM_RSA_COEFFICIENT2};

const KeyFormat kRsa = {
    KeyMaterial::Type::kRsa, "RSA", kRsaFields, kRsaRequired, {}, kRsaRefused};

#define ACCELCRYPT_RSA_KEY_TYPES                                \
  OSSL_PARAM_BN(OSSL_PKEY_PARAM_RSA_N, nullptr, 0),             \
      OSSL_PARAM_BN(OSSL_PKEY_PARAM_RSA_E, nullptr, 0),         \
      OSSL_PARAM_BN(OSSL_PKEY_PARAM_RSA_D, nullptr, 0),         \
      OSSL_PARAM_BN(OSSL_PKEY_PARAM_RSA_FACTOR1, nullptr, 0),   \
      OSSL_PARAM_BN(OSSL_PKEY_PARAM_RSA_FACTOR2, nullptr, 0),   \
      OSSL_PARAM_BN(OSSL_PKEY_PARAM_RSA_EXPONENT1, nullptr, 0), \
      OSSL_PARAM_BN(OSSL_PKEY_PARAM_RSA_EXPONENT2, nullptr, 0), \
      OSSL_PARAM_BN(OSSL_PKEY_PARAM_RSA_COEFFICIENT1, nullptr, 0)

const OSSL_PARAM kRsaKeyTypes[] = {ACCELCRYPT_RSA_KEY_TYPES, OSSL_PARAM_END};
const OSSL_PARAM kRsaGettable[] = {
    OSSL_PARAM_int(OSSL_PKEY_PARAM_BITS, nullptr),
    OSSL_PARAM_int(OSSL_PKEY_PARAM_SECURITY_BITS, nullptr),
    OSSL_PARAM_int(OSSL_PKEY_PARAM_MAX_SIZE, nullptr),
    OSSL_PARAM_utf8_string(OSSL_PKEY_PARAM_DEFAULT_DIGEST, nullptr, 0),
    ACCELCRYPT_RSA_KEY_TYPES,
    OSSL_PARAM_END};
const OSSL_PARAM kRsaGenSettable[] = {
    OSSL_PARAM_size_t(OSSL_PKEY_PARAM_RSA_BITS, nullptr),
    OSSL_PARAM_size_t(OSSL_PKEY_PARAM_RSA_PRIMES, nullptr),
    OSSL_PARAM_BN(OSSL_PKEY_PARAM_RSA_E, nullptr, 0), OSSL_PARAM_END};

void* RsaNew(void* provctx) { return internal::KeymgmtNew(provctx, kRsa); }
int RsaHas(const void* k, int sel) { return internal::KeymgmtHas(k, sel); }
int RsaMatch(const void* a, const void* b, int sel) {
  return internal::KeymgmtMatch(kRsa, a, b, sel);
}
int RsaImport(void* k, int sel, const OSSL_PARAM params[]) {
  return internal::KeymgmtImport(kRsa, k, sel, params);
}
int RsaExport(void* k, int sel, OSSL_CALLBACK* cb, void* arg) {
  return internal::KeymgmtExport(kRsa, k, sel, cb, arg);
}
const OSSL_PARAM* RsaKeyTypes(int) { return kRsaKeyTypes; }
int RsaGetParams(void* k, OSSL_PARAM params[]) {
  return internal::KeymgmtGetParams(kRsa, k, params);
}
const OSSL_PARAM* RsaGettable(void*) { return kRsaGettable; }
void* RsaDup(const void* k, int sel) {
  return internal::KeymgmtDup(kRsa, k, sel);
}
int RsaValidate(const void* k, int sel, int checktype) {
  return internal::KeymgmtValidate(kRsa, k, sel, checktype);
}
const char* RsaQueryOperationName(int) { return "RSA"; }

struct RsaGenCtx {
  ProvCtx* prov;
  int selection;
  size_t bits = 2048;
  std::vector<uint8_t> e = {0x01, 0x00, 0x01};  // F4
};

int RsaGenSetParams(void* vctx, const OSSL_PARAM params[]) {
  auto* gen = static_cast<RsaGenCtx*>(vctx);
  return Guard(gen->prov, [&] {
    absl::Status st = internal::RsaGenParams(params, &gen->bits, &gen->e);
    return st.ok() ? 1 : RaiseError(gen->prov, st);
  });
}

void* RsaGenInit(void* provctx, int selection, const OSSL_PARAM params[]) {
  auto* gen =
      new (std::nothrow) RsaGenCtx{static_cast<ProvCtx*>(provctx), selection};
  if (gen == nullptr) return nullptr;
  if (!RsaGenSetParams(gen, params)) {
    delete gen;
    return nullptr;
  }
  return gen;
}

const OSSL_PARAM* RsaGenSettable(void*, void*) { return kRsaGenSettable; }

void* RsaGen(void* vctx, OSSL_CALLBACK*, void*) {
  auto* gen = static_cast<RsaGenCtx*>(vctx);
  PkeyKey* out = nullptr;
  Guard(gen->prov, [&] {
    absl::StatusOr<PkeyKey*> key =
        internal::GenerateRsaKey(gen->prov, gen->bits, gen->e);
    if (!key.ok()) return RaiseError(gen->prov, key.status());
    out = *key;
    return 1;
  });
  return out;
}

void RsaGenCleanup(void* vctx) { delete static_cast<RsaGenCtx*>(vctx); }

using Fn = void (*)();

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct PkeyCtxFree {
  void operator()(EVP_PKEY_CTX* p) const { EVP_PKEY_CTX_free(p); }
};

}  // namespace

namespace internal {

const KeyFormat& RsaKeyFormat() { return kRsa; }

absl::Status RsaGenParams(const OSSL_PARAM params[], size_t* bits,
                          std::vector<uint8_t>* e) {
  const OSSL_PARAM* p =
      OSSL_PARAM_locate_const(params, OSSL_PKEY_PARAM_RSA_BITS);
  if (p != nullptr && !OSSL_PARAM_get_size_t(p, bits)) {
    return ProviderError(Reason::kBadParameter,
                         absl::StatusCode::kInvalidArgument,
                         "RSA keygen: bits is not a number");
  }
  p = OSSL_PARAM_locate_const(params, OSSL_PKEY_PARAM_RSA_PRIMES);
  if (p != nullptr) {
    size_t primes = 0;
    if (!OSSL_PARAM_get_size_t(p, &primes) || primes != 2) {
      return ProviderError(Reason::kNotSupported,
                           absl::StatusCode::kInvalidArgument,
                           "RSA keygen: only two-prime keys");
    }
  }
  absl::StatusOr<bool> got = ParamBytes(params, OSSL_PKEY_PARAM_RSA_E, e);
  return got.ok() ? absl::OkStatus() : got.status();
}

absl::StatusOr<PkeyKey*> GenerateRsaKey(ProvCtx* prov, size_t bits,
                                        const std::vector<uint8_t>& e) {
  OSSL_LIB_CTX* lib = prov->private_libctx();
  if (lib == nullptr) {
    return absl::InternalError("RSA keygen: no private libctx");
  }
  std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree> ctx(
      EVP_PKEY_CTX_new_from_name(lib, "RSA", "provider=default"));
  if (ctx == nullptr || EVP_PKEY_keygen_init(ctx.get()) != 1) {
    return LibcryptoError(absl::StatusCode::kInternal, "RSA keygen init");
  }
  ParamBuilder builder;
  ACCELCRYPT_RETURN_IF_ERROR(builder.Add(OSSL_PKEY_PARAM_RSA_E, e));
  ACCELCRYPT_ASSIGN_OR_RETURN(OSSL_PARAM * e_param, builder.Build());
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_size_t(OSSL_PKEY_PARAM_RSA_BITS, &bits),
      OSSL_PARAM_END};
  EVP_PKEY* raw = nullptr;
  const bool generated = EVP_PKEY_CTX_set_params(ctx.get(), params) == 1 &&
                         EVP_PKEY_CTX_set_params(ctx.get(), e_param) == 1 &&
                         EVP_PKEY_generate(ctx.get(), &raw) == 1;
  OSSL_PARAM_free(e_param);
  if (!generated) {
    return LibcryptoError(absl::StatusCode::kInvalidArgument,
                          absl::StrFormat("RSA keygen (%u bits)", bits));
  }
  std::unique_ptr<EVP_PKEY, PkeyFree> pkey(raw);
  auto* key = new PkeyKey(prov, KeyMaterial::Type::kRsa);
  absl::Status st = FromPkey(kRsa, pkey.get(), OSSL_KEYMGMT_SELECT_KEYPAIR,
                             &key->mutable_material());
  if (!st.ok()) {
    PkeyKey::Unref(key);
    return st;
  }
  return key;
}

}  // namespace internal

const OSSL_DISPATCH kRsaKeymgmtFunctions[] = {
    {OSSL_FUNC_KEYMGMT_NEW, reinterpret_cast<Fn>(&RsaNew)},
    {OSSL_FUNC_KEYMGMT_FREE, reinterpret_cast<Fn>(&internal::KeymgmtFree)},
    {OSSL_FUNC_KEYMGMT_HAS, reinterpret_cast<Fn>(&RsaHas)},
    {OSSL_FUNC_KEYMGMT_MATCH, reinterpret_cast<Fn>(&RsaMatch)},
    {OSSL_FUNC_KEYMGMT_IMPORT, reinterpret_cast<Fn>(&RsaImport)},
    {OSSL_FUNC_KEYMGMT_IMPORT_TYPES, reinterpret_cast<Fn>(&RsaKeyTypes)},
    {OSSL_FUNC_KEYMGMT_EXPORT, reinterpret_cast<Fn>(&RsaExport)},
    {OSSL_FUNC_KEYMGMT_EXPORT_TYPES, reinterpret_cast<Fn>(&RsaKeyTypes)},
    {OSSL_FUNC_KEYMGMT_GET_PARAMS, reinterpret_cast<Fn>(&RsaGetParams)},
    {OSSL_FUNC_KEYMGMT_GETTABLE_PARAMS, reinterpret_cast<Fn>(&RsaGettable)},
    {OSSL_FUNC_KEYMGMT_GEN_INIT, reinterpret_cast<Fn>(&RsaGenInit)},
    {OSSL_FUNC_KEYMGMT_GEN_SET_PARAMS, reinterpret_cast<Fn>(&RsaGenSetParams)},
    {OSSL_FUNC_KEYMGMT_GEN_SETTABLE_PARAMS,
     reinterpret_cast<Fn>(&RsaGenSettable)},
    {OSSL_FUNC_KEYMGMT_GEN, reinterpret_cast<Fn>(&RsaGen)},
    {OSSL_FUNC_KEYMGMT_GEN_CLEANUP, reinterpret_cast<Fn>(&RsaGenCleanup)},
    {OSSL_FUNC_KEYMGMT_LOAD, reinterpret_cast<Fn>(&internal::KeymgmtLoad)},
    {OSSL_FUNC_KEYMGMT_DUP, reinterpret_cast<Fn>(&RsaDup)},
    {OSSL_FUNC_KEYMGMT_VALIDATE, reinterpret_cast<Fn>(&RsaValidate)},
    {OSSL_FUNC_KEYMGMT_QUERY_OPERATION_NAME,
     reinterpret_cast<Fn>(&RsaQueryOperationName)},
    {0, nullptr}};

}  // namespace accelcrypt::provider
