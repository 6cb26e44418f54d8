// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_BACKENDS_SOFTWARE_PROVIDER_DIRECT_H_
#define ACCELCRYPT_BACKENDS_SOFTWARE_PROVIDER_DIRECT_H_

// Direct calls into OpenSSL's default provider, bypassing the EVP layer.
//
// Why: EVP_PKEY_CTX_new_from_name/_from_pkey consult the ENGINE table
// (ENGINE_get_pkey_meth_engine) even for a private OSSL_LIB_CTX, so an
// application that loads an ENGINE with `default_algorithms = ALL` (libp11's
// pkcs11 engine, for one) would take over our RSA/DSA operations. Dispatch
// tables taken from OSSL_PROVIDER_query_operation never see an ENGINE.

#include <openssl/core.h>
#include <openssl/core_dispatch.h>
#include <openssl/types.h>

#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace accelcrypt::software {

// FindImplementation returns the dispatch table of the algorithm one of whose
// colon-separated names is `name` (case-insensitive), or nullptr.
const OSSL_DISPATCH* FindImplementation(const OSSL_ALGORITHM* algs,
                                        absl::string_view name);

// Bind stores the function with `id` from `table` into *out (untouched when
// the table has none).
template <typename Fn>
void Bind(const OSSL_DISPATCH* table, int id, Fn** out) {
  for (const OSSL_DISPATCH* d = table; d != nullptr && d->function_id != 0;
       ++d) {
    if (d->function_id == id) {
      *out = reinterpret_cast<Fn*>(d->function);
      return;
    }
  }
}

// PkeyDispatch is one public-key algorithm ("RSA" or "DSA") of the default
// provider: key management, signature and (RSA only) asymmetric cipher
// functions. Every pointer is set when ok(); the cipher ones only when
// has_cipher().
struct PkeyDispatch {
  const char* name = nullptr;
  void* provctx = nullptr;
  // OSSL_OP_KEYMGMT
  OSSL_FUNC_keymgmt_new_fn* km_new = nullptr;
  OSSL_FUNC_keymgmt_free_fn* km_free = nullptr;
  OSSL_FUNC_keymgmt_import_fn* km_import = nullptr;
  OSSL_FUNC_keymgmt_has_fn* km_has = nullptr;
  OSSL_FUNC_keymgmt_get_params_fn* km_get_params = nullptr;
  // OSSL_OP_SIGNATURE
  OSSL_FUNC_signature_newctx_fn* sig_newctx = nullptr;
  OSSL_FUNC_signature_freectx_fn* sig_freectx = nullptr;
  OSSL_FUNC_signature_sign_init_fn* sign_init = nullptr;
  OSSL_FUNC_signature_sign_fn* sign = nullptr;
  OSSL_FUNC_signature_verify_init_fn* verify_init = nullptr;
  OSSL_FUNC_signature_verify_fn* verify = nullptr;
  OSSL_FUNC_signature_set_ctx_params_fn* sig_set_ctx_params = nullptr;
  // OSSL_OP_ASYM_CIPHER
  OSSL_FUNC_asym_cipher_newctx_fn* ac_newctx = nullptr;
  OSSL_FUNC_asym_cipher_freectx_fn* ac_freectx = nullptr;
  OSSL_FUNC_asym_cipher_encrypt_init_fn* encrypt_init = nullptr;
  OSSL_FUNC_asym_cipher_encrypt_fn* encrypt = nullptr;
  OSSL_FUNC_asym_cipher_decrypt_init_fn* decrypt_init = nullptr;
  OSSL_FUNC_asym_cipher_decrypt_fn* decrypt = nullptr;
  OSSL_FUNC_asym_cipher_set_ctx_params_fn* ac_set_ctx_params = nullptr;

  bool ok() const {
    return name != nullptr && km_new != nullptr && km_free != nullptr &&
           km_import != nullptr && km_has != nullptr &&
           km_get_params != nullptr && sig_newctx != nullptr &&
           sig_freectx != nullptr && sign_init != nullptr && sign != nullptr &&
           verify_init != nullptr && verify != nullptr &&
           sig_set_ctx_params != nullptr;
  }
  bool has_cipher() const {
    return ac_newctx != nullptr && ac_freectx != nullptr &&
           encrypt_init != nullptr && encrypt != nullptr &&
           decrypt_init != nullptr && decrypt != nullptr &&
           ac_set_ctx_params != nullptr;
  }
};

// ProviderPkeys queries the provider's key management, signature and
// asymmetric cipher tables once and binds RSA and DSA from them; the tables
// are handed back on destruction. Immutable after LookUp, so thread-safe.
class ProviderPkeys {
 public:
  ProviderPkeys() = default;
  ~ProviderPkeys();
  ProviderPkeys(const ProviderPkeys&) = delete;
  ProviderPkeys& operator=(const ProviderPkeys&) = delete;

  // LookUp binds RSA and DSA from `provider` (which must outlive this).
  // An algorithm the provider lacks is left unbound (rsa()/dsa() null).
  void LookUp(OSSL_PROVIDER* provider);

  // Clear hands the tables back (also done by the destructor); rsa()/dsa()
  // are null afterwards.
  void Clear();

  const PkeyDispatch* rsa() const { return rsa_.ok() ? &rsa_ : nullptr; }
  const PkeyDispatch* dsa() const { return dsa_.ok() ? &dsa_ : nullptr; }

 private:
  OSSL_PROVIDER* provider_ = nullptr;
  const OSSL_ALGORITHM* keymgmt_ = nullptr;
  const OSSL_ALGORITHM* signature_ = nullptr;
  const OSSL_ALGORITHM* asym_cipher_ = nullptr;
  PkeyDispatch rsa_, dsa_;
};

// ProviderKey owns one key object (keydata) of a PkeyDispatch.
class ProviderKey {
 public:
  ProviderKey() = default;
  ProviderKey(const PkeyDispatch* d, void* keydata) : d_(d), key_(keydata) {}
  ~ProviderKey() { Reset(); }
  ProviderKey(ProviderKey&& o) noexcept : d_(o.d_), key_(o.key_) {
    o.key_ = nullptr;
  }
  ProviderKey& operator=(ProviderKey&& o) noexcept {
    if (this != &o) {
      Reset();
      d_ = o.d_;
      key_ = o.key_;
      o.key_ = nullptr;
    }
    return *this;
  }
  ProviderKey(const ProviderKey&) = delete;
  ProviderKey& operator=(const ProviderKey&) = delete;

  // Import makes a key from `params` with `selection` (OSSL_KEYMGMT_SELECT_*,
  // which equal EVP_PKEY_KEYPAIR / EVP_PKEY_PUBLIC_KEY). kInvalidArgument
  // when the provider rejects the material (libcrypto's reason attached).
  static absl::Status Import(const PkeyDispatch& d, int selection,
                             const OSSL_PARAM* params, ProviderKey* out);

  // MaxSize is OSSL_PKEY_PARAM_MAX_SIZE: the largest signature/ciphertext in
  // bytes, 0 when the provider cannot tell.
  size_t MaxSize() const;

  void* get() const { return key_; }
  const PkeyDispatch* dispatch() const { return d_; }

 private:
  void Reset() {
    if (key_ != nullptr) d_->km_free(key_);  // the provider clears secrets
    key_ = nullptr;
  }
  const PkeyDispatch* d_ = nullptr;
  void* key_ = nullptr;
};

// SignatureCtx and CipherCtx own one provider operation context.
class SignatureCtx {
 public:
  explicit SignatureCtx(const PkeyDispatch& d)
      : d_(d), ctx_(d.sig_newctx(d.provctx, nullptr)) {}
  ~SignatureCtx() {
    if (ctx_ != nullptr) d_.sig_freectx(ctx_);
  }
  SignatureCtx(const SignatureCtx&) = delete;
  SignatureCtx& operator=(const SignatureCtx&) = delete;
  void* get() const { return ctx_; }

 private:
  const PkeyDispatch& d_;
  void* ctx_;
};

class CipherCtx {
 public:
  explicit CipherCtx(const PkeyDispatch& d)
      : d_(d), ctx_(d.ac_newctx(d.provctx)) {}
  ~CipherCtx() {
    if (ctx_ != nullptr) d_.ac_freectx(ctx_);
  }
  CipherCtx(const CipherCtx&) = delete;
  CipherCtx& operator=(const CipherCtx&) = delete;
  void* get() const { return ctx_; }

 private:
  const PkeyDispatch& d_;
  void* ctx_;
};

}  // namespace accelcrypt::software

#endif  // ACCELCRYPT_BACKENDS_SOFTWARE_PROVIDER_DIRECT_H_
