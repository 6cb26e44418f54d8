// SPDX-License-Identifier: Apache-2.0
// RSA-PSS keymgmt: RSA keys of type id-RSASSA-PSS (RFC 4055 section 3.1),
// optionally restricted by RSASSA-PSS-params to one digest, one MGF1 digest
// and a minimum salt. Parameter names, selections and defaults follow
// OpenSSL 3.0's rsa_kmgmt.c (rsapss_*) and rsa_backend.c
// (ossl_rsa_pss_params_30_fromdata/_todata), so the base provider's
// decoders and encoders move such keys in and out of accelcrypt by
// export/import. The key integers are handled as for RSA keys; the
// restrictions live in the PkeyKey and the signature code enforces them.
#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/params.h>

#include <new>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "core/status.h"
#include "provider/errors.h"
#include "provider/internal/keymgmt_common.h"
#include "provider/internal/keymgmt_rsa.h"
#include "provider/internal/pkey_key.h"
#include "provider/pkey.h"

namespace accelcrypt::provider {
namespace {

using internal::PkeyKey;
using internal::PssRestrictions;

const internal::KeyFormat& Format() { return internal::RsaKeyFormat(); }

absl::Status PssError(const std::string& message) {
  return ProviderError(Reason::kBadParameter,
                       absl::StatusCode::kInvalidArgument, message);
}

absl::StatusOr<const char*> Utf8(const OSSL_PARAM* p) {
  const char* s = nullptr;
  if (!OSSL_PARAM_get_utf8_string_ptr(p, &s) || s == nullptr) {
    return PssError(absl::StrFormat("RSA-PSS: %s is not a string", p->key));
  }
  return s;
}

// PssDigest reads a restriction digest into `id` and `name`: a digest
// accelcrypt offers gets its id, any other that libcrypto knows (checked in
// the private library context) id 0 and its name.
absl::Status PssDigest(ProvCtx* prov, const OSSL_PARAM* p, accelcrypt_alg* id,
                       std::string* name) {
  ACCELCRYPT_ASSIGN_OR_RETURN(const char* given, Utf8(p));
  absl::StatusOr<accelcrypt_alg> md = internal::DigestByName(given);
  if (md.ok()) {
    *id = *md;
    *name = std::string(internal::DigestName(*md));
    return absl::OkStatus();
  }
  OSSL_LIB_CTX* lib = prov->private_libctx();
  EVP_MD* known = lib == nullptr ? nullptr : EVP_MD_fetch(lib, given, nullptr);
  if (known == nullptr) {
    ERR_clear_error();
    return PssError(
        absl::StrFormat("RSA-PSS: %s %s is not a known digest", p->key, given));
  }
  *name = EVP_MD_get0_name(known);
  EVP_MD_free(known);
  *id = 0;
  return absl::OkStatus();
}

// ReadPss applies the restriction parameters present in `params` to `r`.
// As ossl_rsa_pss_params_30_fromdata: the first one present starts from
// RFC 4055's defaults (SHA-1, MGF1 with SHA-1, salt 20); only MGF1 is a
// known mask generation function.
absl::Status ReadPss(ProvCtx* prov, const OSSL_PARAM params[],
                     std::optional<PssRestrictions>* r) {
  if (params == nullptr) return absl::OkStatus();
  const OSSL_PARAM* md =
      OSSL_PARAM_locate_const(params, OSSL_PKEY_PARAM_RSA_DIGEST);
  const OSSL_PARAM* mgf =
      OSSL_PARAM_locate_const(params, OSSL_PKEY_PARAM_RSA_MASKGENFUNC);
  const OSSL_PARAM* mgf1 =
      OSSL_PARAM_locate_const(params, OSSL_PKEY_PARAM_RSA_MGF1_DIGEST);
  const OSSL_PARAM* salt =
      OSSL_PARAM_locate_const(params, OSSL_PKEY_PARAM_RSA_PSS_SALTLEN);
  if (md == nullptr && mgf == nullptr && mgf1 == nullptr && salt == nullptr) {
    return absl::OkStatus();
  }
  PssRestrictions out = r->value_or(PssRestrictions());
  if (mgf != nullptr) {
    ACCELCRYPT_ASSIGN_OR_RETURN(const char* name, Utf8(mgf));
    if (!absl::EqualsIgnoreCase(name, SN_mgf1)) {
      return PssError(absl::StrFormat(
          "RSA-PSS: mask generation function %s is not MGF1", name));
    }
  }
  if (md != nullptr) {
    ACCELCRYPT_RETURN_IF_ERROR(PssDigest(prov, md, &out.md, &out.md_name));
  }
  if (mgf1 != nullptr) {
    ACCELCRYPT_RETURN_IF_ERROR(
        PssDigest(prov, mgf1, &out.mgf1_md, &out.mgf1_name));
  }
  if (salt != nullptr && !OSSL_PARAM_get_int(salt, &out.min_salt_len)) {
    return PssError("RSA-PSS: saltlen is not an integer");
  }
  *r = out;
  return absl::OkStatus();
}

// PssParams holds the export/get form of a key's restrictions: digest
// names only when not the default, the salt always, so the receiver sees a
// restricted key (as ossl_rsa_pss_params_30_todata).
struct PssParams {
  explicit PssParams(const PssRestrictions& r)
      : md(r.md_name), mgf1(r.mgf1_name), salt(r.min_salt_len) {
    if (r.md != ACCELCRYPT_ALG_SHA1) {
      params.push_back(OSSL_PARAM_construct_utf8_string(
          OSSL_PKEY_PARAM_RSA_DIGEST, md.data(), 0));
    }
    if (r.mgf1_md != ACCELCRYPT_ALG_SHA1) {
      params.push_back(OSSL_PARAM_construct_utf8_string(
          OSSL_PKEY_PARAM_RSA_MGF1_DIGEST, mgf1.data(), 0));
    }
    params.push_back(
        OSSL_PARAM_construct_int(OSSL_PKEY_PARAM_RSA_PSS_SALTLEN, &salt));
  }
  PssParams(const PssParams&) = delete;
  PssParams& operator=(const PssParams&) = delete;
  std::string md, mgf1;
  int salt;
  std::vector<OSSL_PARAM> params;
};

void* PssNew(void* provctx) {
  auto* key = static_cast<PkeyKey*>(internal::KeymgmtNew(provctx, Format()));
  if (key != nullptr) key->set_pss(true);
  return key;
}

int PssHas(const void* k, int sel) { return internal::KeymgmtHas(k, sel); }

int PssMatch(const void* a, const void* b, int sel) {
  return internal::KeymgmtMatch(Format(), a, b, sel);
}

int PssImport(void* k, int sel, const OSSL_PARAM params[]) {
  auto* key = static_cast<PkeyKey*>(k);
  if (key == nullptr) return 0;
  if (!internal::KeymgmtImport(Format(), k, sel, params)) return 0;
  return Guard(key->prov(), [&] {
    if ((sel & OSSL_KEYMGMT_SELECT_OTHER_PARAMETERS) == 0) return 1;
    std::optional<PssRestrictions> r = key->pss_restrictions();
    absl::Status st = ReadPss(key->prov(), params, &r);
    if (!st.ok()) return RaiseError(key->prov(), st);
    key->set_pss_restrictions(r);
    return 1;
  });
}

int PssExport(void* k, int sel, OSSL_CALLBACK* cb, void* arg) {
  auto* key = static_cast<PkeyKey*>(k);
  if (key == nullptr) return 0;
  if ((sel & OSSL_KEYMGMT_SELECT_OTHER_PARAMETERS) == 0 ||
      !key->pss_restrictions().has_value()) {
    return internal::KeymgmtExport(Format(), k, sel, cb, arg);
  }
  PssParams pss(*key->pss_restrictions());
  return internal::KeymgmtExport(Format(), k, sel, cb, arg, pss.params);
}

#define ACCELCRYPT_RSA_PSS_KEY_TYPES                                       \
  OSSL_PARAM_BN(OSSL_PKEY_PARAM_RSA_N, nullptr, 0),                        \
      OSSL_PARAM_BN(OSSL_PKEY_PARAM_RSA_E, nullptr, 0),                    \
      OSSL_PARAM_BN(OSSL_PKEY_PARAM_RSA_D, nullptr, 0),                    \
      OSSL_PARAM_BN(OSSL_PKEY_PARAM_RSA_FACTOR1, nullptr, 0),              \
      OSSL_PARAM_BN(OSSL_PKEY_PARAM_RSA_FACTOR2, nullptr, 0),              \
      OSSL_PARAM_BN(OSSL_PKEY_PARAM_RSA_EXPONENT1, nullptr, 0),            \
      OSSL_PARAM_BN(OSSL_PKEY_PARAM_RSA_EXPONENT2, nullptr, 0),            \
      OSSL_PARAM_BN(OSSL_PKEY_PARAM_RSA_COEFFICIENT1, nullptr, 0),         \
      OSSL_PARAM_utf8_string(OSSL_PKEY_PARAM_RSA_DIGEST, nullptr, 0),      \
      OSSL_PARAM_utf8_string(OSSL_PKEY_PARAM_RSA_MASKGENFUNC, nullptr, 0), \
      OSSL_PARAM_utf8_string(OSSL_PKEY_PARAM_RSA_MGF1_DIGEST, nullptr, 0), \
      OSSL_PARAM_int(OSSL_PKEY_PARAM_RSA_PSS_SALTLEN, nullptr)

const OSSL_PARAM kPssKeyTypes[] = {ACCELCRYPT_RSA_PSS_KEY_TYPES,
                                   OSSL_PARAM_END};
const OSSL_PARAM kPssGettable[] = {
    OSSL_PARAM_int(OSSL_PKEY_PARAM_BITS, nullptr),
    OSSL_PARAM_int(OSSL_PKEY_PARAM_SECURITY_BITS, nullptr),
    OSSL_PARAM_int(OSSL_PKEY_PARAM_MAX_SIZE, nullptr),
    OSSL_PARAM_utf8_string(OSSL_PKEY_PARAM_DEFAULT_DIGEST, nullptr, 0),
    OSSL_PARAM_utf8_string(OSSL_PKEY_PARAM_MANDATORY_DIGEST, nullptr, 0),
    ACCELCRYPT_RSA_PSS_KEY_TYPES,
    OSSL_PARAM_END};
const OSSL_PARAM kPssGenSettable[] = {
    OSSL_PARAM_size_t(OSSL_PKEY_PARAM_RSA_BITS, nullptr),
    OSSL_PARAM_size_t(OSSL_PKEY_PARAM_RSA_PRIMES, nullptr),
    OSSL_PARAM_BN(OSSL_PKEY_PARAM_RSA_E, nullptr, 0),
    OSSL_PARAM_utf8_string(OSSL_PKEY_PARAM_RSA_DIGEST, nullptr, 0),
    OSSL_PARAM_utf8_string(OSSL_PKEY_PARAM_RSA_DIGEST_PROPS, nullptr, 0),
    OSSL_PARAM_utf8_string(OSSL_PKEY_PARAM_RSA_MASKGENFUNC, nullptr, 0),
    OSSL_PARAM_utf8_string(OSSL_PKEY_PARAM_RSA_MGF1_DIGEST, nullptr, 0),
    OSSL_PARAM_int(OSSL_PKEY_PARAM_RSA_PSS_SALTLEN, nullptr),
    OSSL_PARAM_END};

const OSSL_PARAM* PssKeyTypes(int) { return kPssKeyTypes; }
const OSSL_PARAM* PssGettable(void*) { return kPssGettable; }
const OSSL_PARAM* PssGenSettable(void*, void*) { return kPssGenSettable; }

int PssGetParams(void* k, OSSL_PARAM params[]) {
  auto* key = static_cast<PkeyKey*>(k);
  if (key == nullptr) return 0;
  if (!internal::KeymgmtGetParams(Format(), k, params)) return 0;
  if (!key->pss_restrictions().has_value()) return 1;
  return Guard(key->prov(), [&] {
    // A restricted key has one digest: it is the default and mandatory
    // (EVP_PKEY_get_default_digest_name reports it as required).
    const PssRestrictions& r = *key->pss_restrictions();
    const std::string& md = r.md_name;
    for (const char* name :
         {OSSL_PKEY_PARAM_DEFAULT_DIGEST, OSSL_PKEY_PARAM_MANDATORY_DIGEST}) {
      OSSL_PARAM* p = OSSL_PARAM_locate(params, name);
      if (p != nullptr && !OSSL_PARAM_set_utf8_string(p, md.c_str())) return 0;
    }
    PssParams pss(r);
    for (const OSSL_PARAM& have : pss.params) {
      OSSL_PARAM* p = OSSL_PARAM_locate(params, have.key);
      if (p == nullptr) continue;
      const bool ok = have.data_type == OSSL_PARAM_INTEGER
                          ? OSSL_PARAM_set_int(p, pss.salt)
                          : OSSL_PARAM_set_utf8_string(
                                p, static_cast<const char*>(have.data));
      if (!ok) return 0;
    }
    return 1;
  });
}

void* PssDup(const void* k, int sel) {
  const auto* src = static_cast<const PkeyKey*>(k);
  auto* dup = static_cast<PkeyKey*>(internal::KeymgmtDup(Format(), k, sel));
  if (dup == nullptr) return nullptr;
  dup->set_pss(true);
  if ((sel & OSSL_KEYMGMT_SELECT_OTHER_PARAMETERS) != 0) {
    dup->set_pss_restrictions(src->pss_restrictions());
  }
  return dup;
}

int PssValidate(const void* k, int sel, int checktype) {
  return internal::KeymgmtValidate(Format(), k, sel, checktype);
}

const char* PssQueryOperationName(int) { return "RSA"; }

struct PssGenCtx {
  ProvCtx* prov;
  size_t bits = 2048;
  std::vector<uint8_t> e = {0x01, 0x00, 0x01};  // F4
  std::optional<PssRestrictions> restrictions;
};

int PssGenSetParams(void* vctx, const OSSL_PARAM params[]) {
  auto* gen = static_cast<PssGenCtx*>(vctx);
  return Guard(gen->prov, [&] {
    absl::Status st = internal::RsaGenParams(params, &gen->bits, &gen->e);
    if (st.ok()) st = ReadPss(gen->prov, params, &gen->restrictions);
    return st.ok() ? 1 : RaiseError(gen->prov, st);
  });
}

void* PssGenInit(void* provctx, int, const OSSL_PARAM params[]) {
  auto* gen = new (std::nothrow) PssGenCtx{static_cast<ProvCtx*>(provctx)};
  if (gen == nullptr) return nullptr;
  if (!PssGenSetParams(gen, params)) {
    delete gen;
    return nullptr;
  }
  return gen;
}

void* PssGen(void* vctx, OSSL_CALLBACK*, void*) {
  auto* gen = static_cast<PssGenCtx*>(vctx);
  PkeyKey* out = nullptr;
  Guard(gen->prov, [&] {
    absl::StatusOr<PkeyKey*> key =
        internal::GenerateRsaKey(gen->prov, gen->bits, gen->e);
    if (!key.ok()) return RaiseError(gen->prov, key.status());
    (*key)->set_pss(true);
    (*key)->set_pss_restrictions(gen->restrictions);
    out = *key;
    return 1;
  });
  return out;
}

void PssGenCleanup(void* vctx) { delete static_cast<PssGenCtx*>(vctx); }

using Fn = void (*)();

}  // namespace

const OSSL_DISPATCH kRsaPssKeymgmtFunctions[] = {
    {OSSL_FUNC_KEYMGMT_NEW, reinterpret_cast<Fn>(&PssNew)},
    {OSSL_FUNC_KEYMGMT_FREE, reinterpret_cast<Fn>(&internal::KeymgmtFree)},
    {OSSL_FUNC_KEYMGMT_HAS, reinterpret_cast<Fn>(&PssHas)},
    {OSSL_FUNC_KEYMGMT_MATCH, reinterpret_cast<Fn>(&PssMatch)},
    {OSSL_FUNC_KEYMGMT_IMPORT, reinterpret_cast<Fn>(&PssImport)},
    {OSSL_FUNC_KEYMGMT_IMPORT_TYPES, reinterpret_cast<Fn>(&PssKeyTypes)},
    {OSSL_FUNC_KEYMGMT_EXPORT, reinterpret_cast<Fn>(&PssExport)},
    {OSSL_FUNC_KEYMGMT_EXPORT_TYPES, reinterpret_cast<Fn>(&PssKeyTypes)},
    {OSSL_FUNC_KEYMGMT_GET_PARAMS, reinterpret_cast<Fn>(&PssGetParams)},
    {OSSL_FUNC_KEYMGMT_GETTABLE_PARAMS, reinterpret_cast<Fn>(&PssGettable)},
    {OSSL_FUNC_KEYMGMT_GEN_INIT, reinterpret_cast<Fn>(&PssGenInit)},
    {OSSL_FUNC_KEYMGMT_GEN_SET_PARAMS, reinterpret_cast<Fn>(&PssGenSetParams)},
    {OSSL_FUNC_KEYMGMT_GEN_SETTABLE_PARAMS,
     reinterpret_cast<Fn>(&PssGenSettable)},
    {OSSL_FUNC_KEYMGMT_GEN, reinterpret_cast<Fn>(&PssGen)},
    {OSSL_FUNC_KEYMGMT_GEN_CLEANUP, reinterpret_cast<Fn>(&PssGenCleanup)},
    {OSSL_FUNC_KEYMGMT_DUP, reinterpret_cast<Fn>(&PssDup)},
    {OSSL_FUNC_KEYMGMT_VALIDATE, reinterpret_cast<Fn>(&PssValidate)},
    {OSSL_FUNC_KEYMGMT_QUERY_OPERATION_NAME,
     reinterpret_cast<Fn>(&PssQueryOperationName)},
    {0, nullptr}};

}  // namespace accelcrypt::provider
