// SPDX-License-Identifier: Apache-2.0
// DSA keymgmt: keys are core KeyMaterial (internal::PkeyKey). Parameter
// names follow OpenSSL 3.0's dsa_kmgmt.c (FFC names p, q, g, pub, priv).
// Domain parameter and key generation (FIPS 186-4) run libcrypto in the
// provider's private library context.
#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <memory>
#include <new>
#include <string>

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

constexpr int kDom = OSSL_KEYMGMT_SELECT_DOMAIN_PARAMETERS;

const KeyField kDsaFields[] = {
    {OSSL_PKEY_PARAM_FFC_P, &KeyMaterial::dsa_p, kDom},
    {OSSL_PKEY_PARAM_FFC_Q, &KeyMaterial::dsa_q, kDom},
    {OSSL_PKEY_PARAM_FFC_G, &KeyMaterial::dsa_g, kDom},
    {OSSL_PKEY_PARAM_PUB_KEY, &KeyMaterial::dsa_y,
     OSSL_KEYMGMT_SELECT_PUBLIC_KEY},
    {OSSL_PKEY_PARAM_PRIV_KEY, &KeyMaterial::dsa_x,
     OSSL_KEYMGMT_SELECT_PRIVATE_KEY},
};
const char* const kDsaDomain[] = {OSSL_PKEY_PARAM_FFC_P, OSSL_PKEY_PARAM_FFC_Q,
                                  OSSL_PKEY_PARAM_FFC_G};

const KeyFormat kDsa = {
    KeyMaterial::Type::kDsa, "DSA", kDsaFields, {}, kDsaDomain, {}};

#define ACCELCRYPT_DSA_KEY_TYPES                          \
  OSSL_PARAM_BN(OSSL_PKEY_PARAM_FFC_P, nullptr, 0),       \
      OSSL_PARAM_BN(OSSL_PKEY_PARAM_FFC_Q, nullptr, 0),   \
      OSSL_PARAM_BN(OSSL_PKEY_PARAM_FFC_G, nullptr, 0),   \
      OSSL_PARAM_BN(OSSL_PKEY_PARAM_PUB_KEY, nullptr, 0), \
      OSSL_PARAM_BN(OSSL_PKEY_PARAM_PRIV_KEY, nullptr, 0)

const OSSL_PARAM kDsaKeyTypes[] = {ACCELCRYPT_DSA_KEY_TYPES, OSSL_PARAM_END};
const OSSL_PARAM kDsaGettable[] = {
    OSSL_PARAM_int(OSSL_PKEY_PARAM_BITS, nullptr),
    OSSL_PARAM_int(OSSL_PKEY_PARAM_SECURITY_BITS, nullptr),
    OSSL_PARAM_int(OSSL_PKEY_PARAM_MAX_SIZE, nullptr),
    OSSL_PARAM_utf8_string(OSSL_PKEY_PARAM_DEFAULT_DIGEST, nullptr, 0),
    ACCELCRYPT_DSA_KEY_TYPES,
    OSSL_PARAM_END};
const OSSL_PARAM kDsaGenSettable[] = {
    OSSL_PARAM_utf8_string(OSSL_PKEY_PARAM_FFC_TYPE, nullptr, 0),
    OSSL_PARAM_size_t(OSSL_PKEY_PARAM_FFC_PBITS, nullptr),
    OSSL_PARAM_size_t(OSSL_PKEY_PARAM_FFC_QBITS, nullptr),
    OSSL_PARAM_utf8_string(OSSL_PKEY_PARAM_FFC_DIGEST, nullptr, 0),
    OSSL_PARAM_END};

void* DsaNew(void* provctx) { return internal::KeymgmtNew(provctx, kDsa); }
int DsaHas(const void* k, int sel) { return internal::KeymgmtHas(k, sel); }
int DsaMatch(const void* a, const void* b, int sel) {
  return internal::KeymgmtMatch(kDsa, a, b, sel);
}
int DsaImport(void* k, int sel, const OSSL_PARAM params[]) {
  return internal::KeymgmtImport(kDsa, k, sel, params);
}
int DsaExport(void* k, int sel, OSSL_CALLBACK* cb, void* arg) {
  return internal::KeymgmtExport(kDsa, k, sel, cb, arg);
}
const OSSL_PARAM* DsaKeyTypes(int) { return kDsaKeyTypes; }
int DsaGetParams(void* k, OSSL_PARAM params[]) {
  return internal::KeymgmtGetParams(kDsa, k, params);
}
const OSSL_PARAM* DsaGettable(void*) { return kDsaGettable; }
void* DsaDup(const void* k, int sel) {
  return internal::KeymgmtDup(kDsa, k, sel);
}
int DsaValidate(const void* k, int sel, int checktype) {
  return internal::KeymgmtValidate(kDsa, k, sel, checktype);
}
const char* DsaQueryOperationName(int) { return "DSA"; }

struct DsaGenCtx {
  ProvCtx* prov;
  int selection;
  size_t pbits = 2048;
  size_t qbits = 0;  // 0: libcrypto's default for pbits
  std::string digest;
  std::string type;
  // Domain parameters from a template key (genpkey -paramfile).
  std::vector<uint8_t> p, q, g;
};

int DsaGenSetParams(void* vctx, const OSSL_PARAM params[]) {
  auto* gen = static_cast<DsaGenCtx*>(vctx);
  return Guard(gen->prov, [&] {
    auto bad = [&](const char* what) {
      return RaiseError(
          gen->prov, ProviderError(Reason::kBadParameter,
                                   absl::StatusCode::kInvalidArgument,
                                   absl::StrFormat("DSA paramgen: %s", what)));
    };
    const OSSL_PARAM* p =
        OSSL_PARAM_locate_const(params, OSSL_PKEY_PARAM_FFC_PBITS);
    if (p != nullptr && !OSSL_PARAM_get_size_t(p, &gen->pbits)) {
      return bad("pbits is not a number");
    }
    p = OSSL_PARAM_locate_const(params, OSSL_PKEY_PARAM_FFC_QBITS);
    if (p != nullptr && !OSSL_PARAM_get_size_t(p, &gen->qbits)) {
      return bad("qbits is not a number");
    }
    for (auto [name, field] :
         {std::pair{OSSL_PKEY_PARAM_FFC_DIGEST, &gen->digest},
          std::pair{OSSL_PKEY_PARAM_FFC_TYPE, &gen->type}}) {
      p = OSSL_PARAM_locate_const(params, name);
      if (p == nullptr) continue;
      const char* s = nullptr;
      if (!OSSL_PARAM_get_utf8_string_ptr(p, &s)) return bad("not a string");
      *field = s;
    }
    return 1;
  });
}

void* DsaGenInit(void* provctx, int selection, const OSSL_PARAM params[]) {
  auto* gen =
      new (std::nothrow) DsaGenCtx{static_cast<ProvCtx*>(provctx), selection};
  if (gen == nullptr) return nullptr;
  if (!DsaGenSetParams(gen, params)) {
    delete gen;
    return nullptr;
  }
  return gen;
}

int DsaGenSetTemplate(void* vctx, void* templ) {
  auto* gen = static_cast<DsaGenCtx*>(vctx);
  const auto* key = static_cast<const PkeyKey*>(templ);
  if (key == nullptr || !key->has_domain()) {
    return RaiseError(
        gen->prov,
        ProviderError(Reason::kBadParameter, absl::StatusCode::kInvalidArgument,
                      "DSA keygen: template has no p, q, g"));
  }
  gen->p = key->material().dsa_p;
  gen->q = key->material().dsa_q;
  gen->g = key->material().dsa_g;
  return 1;
}

const OSSL_PARAM* DsaGenSettable(void*, void*) { return kDsaGenSettable; }

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct PkeyCtxFree {
  void operator()(EVP_PKEY_CTX* p) const { EVP_PKEY_CTX_free(p); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;
using PkeyCtxPtr = std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree>;

absl::StatusOr<PkeyPtr> DomainFromTemplate(OSSL_LIB_CTX* lib,
                                           const DsaGenCtx& gen) {
  KeyMaterial m;
  m.type = KeyMaterial::Type::kDsa;
  m.dsa_p = gen.p;
  m.dsa_q = gen.q;
  m.dsa_g = gen.g;
  ACCELCRYPT_ASSIGN_OR_RETURN(OSSL_PARAM * params,
                              internal::ToParams(kDsa, m, kDom));
  PkeyCtxPtr ctx(EVP_PKEY_CTX_new_from_name(lib, "DSA", "provider=default"));
  EVP_PKEY* raw = nullptr;
  const bool ok =
      ctx != nullptr && EVP_PKEY_fromdata_init(ctx.get()) == 1 &&
      EVP_PKEY_fromdata(ctx.get(), &raw, EVP_PKEY_KEY_PARAMETERS, params) == 1;
  internal::ClearFreeParams(params);
  if (!ok) {
    return internal::LibcryptoError(absl::StatusCode::kInvalidArgument,
                                    "DSA keygen: template parameters");
  }
  return PkeyPtr(raw);
}

absl::StatusOr<PkeyPtr> GenerateDomain(OSSL_LIB_CTX* lib,
                                       const DsaGenCtx& gen) {
  PkeyCtxPtr ctx(EVP_PKEY_CTX_new_from_name(lib, "DSA", "provider=default"));
  if (ctx == nullptr || EVP_PKEY_paramgen_init(ctx.get()) != 1) {
    return internal::LibcryptoError(absl::StatusCode::kInternal,
                                    "DSA paramgen init");
  }
  OSSL_PARAM params[5];
  size_t n = 0;
  size_t pbits = gen.pbits, qbits = gen.qbits;
  params[n++] = OSSL_PARAM_construct_size_t(OSSL_PKEY_PARAM_FFC_PBITS, &pbits);
  if (qbits != 0) {
    params[n++] =
        OSSL_PARAM_construct_size_t(OSSL_PKEY_PARAM_FFC_QBITS, &qbits);
  }
  if (!gen.digest.empty()) {
    params[n++] = OSSL_PARAM_construct_utf8_string(
        OSSL_PKEY_PARAM_FFC_DIGEST, const_cast<char*>(gen.digest.c_str()), 0);
  }
  if (!gen.type.empty()) {
    params[n++] = OSSL_PARAM_construct_utf8_string(
        OSSL_PKEY_PARAM_FFC_TYPE, const_cast<char*>(gen.type.c_str()), 0);
  }
  params[n] = OSSL_PARAM_construct_end();
  EVP_PKEY* raw = nullptr;
  if (EVP_PKEY_CTX_set_params(ctx.get(), params) != 1 ||
      EVP_PKEY_generate(ctx.get(), &raw) != 1) {
    return internal::LibcryptoError(
        absl::StatusCode::kInvalidArgument,
        absl::StrFormat("DSA paramgen (%u/%u bits)", gen.pbits, gen.qbits));
  }
  return PkeyPtr(raw);
}

absl::StatusOr<PkeyKey*> DsaGenerate(DsaGenCtx& gen) {
  OSSL_LIB_CTX* lib = gen.prov->private_libctx();
  if (lib == nullptr) return absl::InternalError("DSA keygen: no libctx");
  PkeyPtr domain;
  if (!gen.p.empty()) {
    ACCELCRYPT_ASSIGN_OR_RETURN(domain, DomainFromTemplate(lib, gen));
  } else {
    ACCELCRYPT_ASSIGN_OR_RETURN(domain, GenerateDomain(lib, gen));
  }
  PkeyPtr result = std::move(domain);
  int selection = kDom;
  if ((gen.selection & OSSL_KEYMGMT_SELECT_KEYPAIR) != 0) {
    PkeyCtxPtr ctx(
        EVP_PKEY_CTX_new_from_pkey(lib, result.get(), "provider=default"));
    EVP_PKEY* raw = nullptr;
    if (ctx == nullptr || EVP_PKEY_keygen_init(ctx.get()) != 1 ||
        EVP_PKEY_generate(ctx.get(), &raw) != 1) {
      return internal::LibcryptoError(absl::StatusCode::kInvalidArgument,
                                      "DSA keygen");
    }
    result.reset(raw);
    selection = OSSL_KEYMGMT_SELECT_KEYPAIR;
  }
  auto* key = new PkeyKey(gen.prov, KeyMaterial::Type::kDsa);
  absl::Status st = internal::FromPkey(kDsa, result.get(), selection,
                                       &key->mutable_material());
  if (!st.ok()) {
    PkeyKey::Unref(key);
    return st;
  }
  return key;
}

void* DsaGen(void* vctx, OSSL_CALLBACK*, void*) {
  auto* gen = static_cast<DsaGenCtx*>(vctx);
  PkeyKey* out = nullptr;
  Guard(gen->prov, [&] {
    absl::StatusOr<PkeyKey*> key = DsaGenerate(*gen);
    if (!key.ok()) return RaiseError(gen->prov, key.status());
    out = *key;
    return 1;
  });
  return out;
}

void DsaGenCleanup(void* vctx) { delete static_cast<DsaGenCtx*>(vctx); }

using Fn = void (*)();

}  // namespace

const OSSL_DISPATCH kDsaKeymgmtFunctions[] = {
    {OSSL_FUNC_KEYMGMT_NEW, reinterpret_cast<Fn>(&DsaNew)},
    {OSSL_FUNC_KEYMGMT_FREE, reinterpret_cast<Fn>(&internal::KeymgmtFree)},
    {OSSL_FUNC_KEYMGMT_HAS, reinterpret_cast<Fn>(&DsaHas)},
    {OSSL_FUNC_KEYMGMT_MATCH, reinterpret_cast<Fn>(&DsaMatch)},
    {OSSL_FUNC_KEYMGMT_IMPORT, reinterpret_cast<Fn>(&DsaImport)},
    {OSSL_FUNC_KEYMGMT_IMPORT_TYPES, reinterpret_cast<Fn>(&DsaKeyTypes)},
    {OSSL_FUNC_KEYMGMT_EXPORT, reinterpret_cast<Fn>(&DsaExport)},
    {OSSL_FUNC_KEYMGMT_EXPORT_TYPES, reinterpret_cast<Fn>(&DsaKeyTypes)},
    {OSSL_FUNC_KEYMGMT_GET_PARAMS, reinterpret_cast<Fn>(&DsaGetParams)},
    {OSSL_FUNC_KEYMGMT_GETTABLE_PARAMS, reinterpret_cast<Fn>(&DsaGettable)},
    {OSSL_FUNC_KEYMGMT_GEN_INIT, reinterpret_cast<Fn>(&DsaGenInit)},
    {OSSL_FUNC_KEYMGMT_GEN_SET_TEMPLATE,
     reinterpret_cast<Fn>(&DsaGenSetTemplate)},
    {OSSL_FUNC_KEYMGMT_GEN_SET_PARAMS, reinterpret_cast<Fn>(&DsaGenSetParams)},
    {OSSL_FUNC_KEYMGMT_GEN_SETTABLE_PARAMS,
     reinterpret_cast<Fn>(&DsaGenSettable)},
    {OSSL_FUNC_KEYMGMT_GEN, reinterpret_cast<Fn>(&DsaGen)},
    {OSSL_FUNC_KEYMGMT_GEN_CLEANUP, reinterpret_cast<Fn>(&DsaGenCleanup)},
    {OSSL_FUNC_KEYMGMT_LOAD, reinterpret_cast<Fn>(&internal::KeymgmtLoad)},
    {OSSL_FUNC_KEYMGMT_DUP, reinterpret_cast<Fn>(&DsaDup)},
    {OSSL_FUNC_KEYMGMT_VALIDATE, reinterpret_cast<Fn>(&DsaValidate)},
    {OSSL_FUNC_KEYMGMT_QUERY_OPERATION_NAME,
     reinterpret_cast<Fn>(&DsaQueryOperationName)},
    {0, nullptr}};

}  // namespace accelcrypt::provider
