// SPDX-License-Identifier: Apache-2.0
// OSSL_STORE loader for RFC 7512 `pkcs11:` URIs: a key that lives on a token
// is used in place. The loader asks the core which backend holds the object
// (Router::DescribeTokenKey: its type and public parts, read from the
// token) and hands OpenSSL one OSSL_OBJECT_PKEY by reference: a PkeyKey
// whose KeyMaterial has `uri` and the public integers. Our RSA/DSA keymgmt's
// load() takes the reference (internal::KeymgmtLoad); a keymgmt of another
// provider gets the public parts only through export_object (the private
// half never leaves the token). The provider names no backend.
#include "provider/store.h"

#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/core_object.h>
#include <openssl/params.h>
#include <openssl/store.h>

#include <new>
#include <string>
#include <string_view>

#include "absl/strings/str_format.h"
#include "core/status.h"
#include "provider/algorithm_table.h"
#include "provider/errors.h"
#include "provider/internal/pkey_key.h"
#include "provider/pkey.h"

namespace accelcrypt::provider {
namespace {

using internal::PkeyKey;

// StoreCtx is one open `pkcs11:` URI. One object per URI: after the first
// load (successful or not) the loader is at its end.
struct StoreCtx {
  ProvCtx* prov;
  std::string uri;
  int expect = 0;  // OSSL_STORE_INFO_* the caller wants; 0 = any
  bool done = false;
};

void* StoreOpen(void* provctx, const char* uri) {
  auto* prov = static_cast<ProvCtx*>(provctx);
  if (uri == nullptr) return nullptr;
  // Only the scheme is checked here; the token decides in load whether the
  // object exists (so the error names the reason, not "unsupported").
  if (std::string_view(uri).rfind("pkcs11:", 0) != 0) return nullptr;
  return new (std::nothrow) StoreCtx{prov, uri};
}

const OSSL_PARAM kSettable[] = {
    OSSL_PARAM_int(OSSL_STORE_PARAM_EXPECT, nullptr), OSSL_PARAM_END};

const OSSL_PARAM* StoreSettableCtxParams(void*) { return kSettable; }

int StoreSetCtxParams(void* vctx, const OSSL_PARAM params[]) {
  auto* ctx = static_cast<StoreCtx*>(vctx);
  if (ctx == nullptr) return 0;
  const OSSL_PARAM* p =
      OSSL_PARAM_locate_const(params, OSSL_STORE_PARAM_EXPECT);
  if (p != nullptr && !OSSL_PARAM_get_int(p, &ctx->expect)) return 0;
  // Search criteria (subject, fingerprint, alias) are not ours to answer:
  // the URI names the object. They are accepted and have no effect.
  return 1;
}

// Wanted is false when the caller asked for a kind of object a key is not
// (certificates, CRLs, names).
bool Wanted(int expect) {
  return expect == 0 || expect == OSSL_STORE_INFO_PKEY ||
         expect == OSSL_STORE_INFO_PUBKEY || expect == OSSL_STORE_INFO_PARAMS;
}

int StoreLoad(void* vctx, OSSL_CALLBACK* object_cb, void* object_cbarg,
              OSSL_PASSPHRASE_CALLBACK*, void*) {
  auto* ctx = static_cast<StoreCtx*>(vctx);
  if (ctx == nullptr || ctx->done) return 0;
  ctx->done = true;
  if (!Wanted(ctx->expect)) return 1;  // nothing of that kind here
  return Guard(ctx->prov, [&] {
    absl::StatusOr<KeyMaterial> described =
        ctx->prov->core().router().DescribeTokenKey(ctx->uri);
    if (!described.ok()) return RaiseError(ctx->prov, described.status());
    const bool rsa = described->type == KeyMaterial::Type::kRsa;
    PkeyKey* key = new PkeyKey(ctx->prov, described->type);
    key->mutable_material() = *std::move(described);
    int object_type = OSSL_OBJECT_PKEY;
    char data_type[4] = {'R', 'S', 'A', '\0'};
    if (!rsa) data_type[0] = 'D';  // "DSA"
    // The reference is the address of our pointer: KeymgmtLoad takes the
    // key and clears the pointer; whatever is left afterwards is ours.
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_int(OSSL_OBJECT_PARAM_TYPE, &object_type),
        OSSL_PARAM_construct_utf8_string(OSSL_OBJECT_PARAM_DATA_TYPE, data_type,
                                         0),
        OSSL_PARAM_construct_octet_string(
            OSSL_OBJECT_PARAM_REFERENCE, &key,
            // the pointer's bytes, on purpose
            // NOLINTNEXTLINE(bugprone-sizeof-expression)
            sizeof(key)),
        OSSL_PARAM_END};
    const int ok = object_cb(params, object_cbarg);
    PkeyKey::Unref(key);  // null when the keymgmt took it
    return ok;
  });
}

int StoreEof(void* vctx) {
  auto* ctx = static_cast<StoreCtx*>(vctx);
  return ctx == nullptr || ctx->done ? 1 : 0;
}

int StoreClose(void* vctx) {
  delete static_cast<StoreCtx*>(vctx);
  return 1;
}

// FindExport returns our keymgmt's export function for `rsa`.
OSSL_FUNC_keymgmt_export_fn* FindExport(bool rsa) {
  for (const OSSL_DISPATCH* d = rsa ? kRsaKeymgmtFunctions
                                    : kDsaKeymgmtFunctions;
       d->function_id != 0; ++d) {
    if (d->function_id == OSSL_FUNC_KEYMGMT_EXPORT) {
      return OSSL_FUNC_keymgmt_export(d);
    }
  }
  return nullptr;
}

// StoreExportObject serves a keymgmt of another provider (OpenSSL fetched
// one because nothing prefers accelcrypt). A key whose private half stays
// on a token is not exported: such a keymgmt could hold only the public
// parts (a key that verifies but cannot sign), so it is refused and
// OpenSSL falls back to this provider's own keymgmt, which keeps the token
// reference (libcrypto 3.0's try_key_ref does that fallback). Keys with
// their private parts in memory do not come from this loader.
int StoreExportObject(void* vctx, const void* reference, size_t reference_sz,
                      OSSL_CALLBACK* export_cb, void* export_cbarg) {
  auto* ctx = static_cast<StoreCtx*>(vctx);
  if (ctx == nullptr || reference == nullptr ||
      reference_sz != sizeof(PkeyKey*)) {
    return 0;
  }
  PkeyKey* key = *static_cast<PkeyKey* const*>(reference);
  if (key == nullptr) return 0;
  if (!key->material().uri.empty() && !key->material().has_private_material()) {
    return 0;  // not without its token: our keymgmt takes it instead
  }
  OSSL_FUNC_keymgmt_export_fn* fn = FindExport(key->rsa());
  if (fn == nullptr) return 0;
  return fn(
      key,
      OSSL_KEYMGMT_SELECT_PUBLIC_KEY | OSSL_KEYMGMT_SELECT_DOMAIN_PARAMETERS,
      export_cb, export_cbarg);
}

using Fn = void (*)();

}  // namespace

const OSSL_DISPATCH kPkcs11StoreFunctions[] = {
    {OSSL_FUNC_STORE_OPEN, reinterpret_cast<Fn>(&StoreOpen)},
    {OSSL_FUNC_STORE_SETTABLE_CTX_PARAMS,
     reinterpret_cast<Fn>(&StoreSettableCtxParams)},
    {OSSL_FUNC_STORE_SET_CTX_PARAMS, reinterpret_cast<Fn>(&StoreSetCtxParams)},
    {OSSL_FUNC_STORE_LOAD, reinterpret_cast<Fn>(&StoreLoad)},
    {OSSL_FUNC_STORE_EOF, reinterpret_cast<Fn>(&StoreEof)},
    {OSSL_FUNC_STORE_CLOSE, reinterpret_cast<Fn>(&StoreClose)},
    {OSSL_FUNC_STORE_EXPORT_OBJECT, reinterpret_cast<Fn>(&StoreExportObject)},
    {0, nullptr}};

void AppendStoreAlgorithms(ProvCtx& ctx, std::vector<OSSL_ALGORITHM>* store) {
  // With the RSA/DSA key management the provider offers (Router::
  // Interposes: a token backend, or `interpose = all`).
  const Router& router = ctx.core().router();
  if (!router.Interposes(ACCELCRYPT_ALG_RSA_SIGN).offered &&
      !router.Interposes(ACCELCRYPT_ALG_RSA_CRYPT).offered &&
      !router.Interposes(ACCELCRYPT_ALG_DSA_SIGN).offered) {
    return;  // no keymgmt here could take what the loader finds
  }
  store->push_back(OSSL_ALGORITHM{"pkcs11", kProperties, kPkcs11StoreFunctions,
                                  "accelcrypt RFC 7512 pkcs11: URIs"});
}

}  // namespace accelcrypt::provider
