// SPDX-License-Identifier: Apache-2.0
#include "backends/software/provider_direct.h"

#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <openssl/provider.h>

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "backends/software/openssl_error.h"

namespace accelcrypt::software {
namespace {

void BindPkey(const char* name, void* provctx, const OSSL_ALGORITHM* keymgmt,
              const OSSL_ALGORITHM* signature,
              const OSSL_ALGORITHM* asym_cipher, PkeyDispatch* d) {
  const OSSL_DISPATCH* km = FindImplementation(keymgmt, name);
  const OSSL_DISPATCH* sig = FindImplementation(signature, name);
  if (km == nullptr || sig == nullptr) return;
  PkeyDispatch out;
  out.provctx = provctx;
  Bind(km, OSSL_FUNC_KEYMGMT_NEW, &out.km_new);
  Bind(km, OSSL_FUNC_KEYMGMT_FREE, &out.km_free);
  Bind(km, OSSL_FUNC_KEYMGMT_IMPORT, &out.km_import);
  Bind(km, OSSL_FUNC_KEYMGMT_HAS, &out.km_has);
  Bind(km, OSSL_FUNC_KEYMGMT_GET_PARAMS, &out.km_get_params);
  Bind(sig, OSSL_FUNC_SIGNATURE_NEWCTX, &out.sig_newctx);
  Bind(sig, OSSL_FUNC_SIGNATURE_FREECTX, &out.sig_freectx);
  Bind(sig, OSSL_FUNC_SIGNATURE_SIGN_INIT, &out.sign_init);
  Bind(sig, OSSL_FUNC_SIGNATURE_SIGN, &out.sign);
  Bind(sig, OSSL_FUNC_SIGNATURE_VERIFY_INIT, &out.verify_init);
  Bind(sig, OSSL_FUNC_SIGNATURE_VERIFY, &out.verify);
  Bind(sig, OSSL_FUNC_SIGNATURE_SET_CTX_PARAMS, &out.sig_set_ctx_params);
  if (const OSSL_DISPATCH* ac = FindImplementation(asym_cipher, name)) {
    Bind(ac, OSSL_FUNC_ASYM_CIPHER_NEWCTX, &out.ac_newctx);
    Bind(ac, OSSL_FUNC_ASYM_CIPHER_FREECTX, &out.ac_freectx);
    Bind(ac, OSSL_FUNC_ASYM_CIPHER_ENCRYPT_INIT, &out.encrypt_init);
    Bind(ac, OSSL_FUNC_ASYM_CIPHER_ENCRYPT, &out.encrypt);
    Bind(ac, OSSL_FUNC_ASYM_CIPHER_DECRYPT_INIT, &out.decrypt_init);
    Bind(ac, OSSL_FUNC_ASYM_CIPHER_DECRYPT, &out.decrypt);
    Bind(ac, OSSL_FUNC_ASYM_CIPHER_SET_CTX_PARAMS, &out.ac_set_ctx_params);
  }
  out.name = name;
  *d = out;
}

}  // namespace

const OSSL_DISPATCH* FindImplementation(const OSSL_ALGORITHM* algs,
                                        absl::string_view name) {
  for (const OSSL_ALGORITHM* a = algs; a != nullptr && a->algorithm_names;
       ++a) {
    for (absl::string_view alias : absl::StrSplit(a->algorithm_names, ':')) {
      if (absl::EqualsIgnoreCase(alias, name)) return a->implementation;
    }
  }
  return nullptr;
}

void ProviderPkeys::LookUp(OSSL_PROVIDER* provider) {
  provider_ = provider;
  int no_store = 0;
  keymgmt_ =
      OSSL_PROVIDER_query_operation(provider, OSSL_OP_KEYMGMT, &no_store);
  signature_ =
      OSSL_PROVIDER_query_operation(provider, OSSL_OP_SIGNATURE, &no_store);
  asym_cipher_ =
      OSSL_PROVIDER_query_operation(provider, OSSL_OP_ASYM_CIPHER, &no_store);
  void* provctx = OSSL_PROVIDER_get0_provider_ctx(provider);
  BindPkey("RSA", provctx, keymgmt_, signature_, asym_cipher_, &rsa_);
  BindPkey("DSA", provctx, keymgmt_, signature_, nullptr, &dsa_);
}

ProviderPkeys::~ProviderPkeys() { Clear(); }

void ProviderPkeys::Clear() {
  rsa_ = PkeyDispatch();
  dsa_ = PkeyDispatch();
  if (provider_ == nullptr) return;
  if (keymgmt_ != nullptr) {
    OSSL_PROVIDER_unquery_operation(provider_, OSSL_OP_KEYMGMT, keymgmt_);
  }
  if (signature_ != nullptr) {
    OSSL_PROVIDER_unquery_operation(provider_, OSSL_OP_SIGNATURE, signature_);
  }
  if (asym_cipher_ != nullptr) {
    OSSL_PROVIDER_unquery_operation(provider_, OSSL_OP_ASYM_CIPHER,
                                    asym_cipher_);
  }
  provider_ = nullptr;
  keymgmt_ = signature_ = asym_cipher_ = nullptr;
}

absl::Status ProviderKey::Import(const PkeyDispatch& d, int selection,
                                 const OSSL_PARAM* params, ProviderKey* out) {
  ProviderKey key(&d, d.km_new(d.provctx));
  if (key.get() == nullptr) {
    return LibcryptoError(absl::StatusCode::kResourceExhausted, d.name,
                          "key object");
  }
  if (d.km_import(key.get(), selection, params) != 1 ||
      d.km_has(key.get(), selection) != 1) {
    return LibcryptoError(absl::StatusCode::kInvalidArgument, d.name,
                          "key import");
  }
  *out = std::move(key);
  return absl::OkStatus();
}

size_t ProviderKey::MaxSize() const {
  int size = 0;
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_int(OSSL_PKEY_PARAM_MAX_SIZE, &size),
      OSSL_PARAM_construct_end()};
  if (key_ == nullptr || d_->km_get_params(key_, params) != 1 ||
      !OSSL_PARAM_modified(&params[0]) || size <= 0) {
    return 0;
  }
  return static_cast<size_t>(size);
}

}  // namespace accelcrypt::software
