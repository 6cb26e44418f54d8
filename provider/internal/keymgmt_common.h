// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_PROVIDER_INTERNAL_KEYMGMT_COMMON_H_
#define ACCELCRYPT_PROVIDER_INTERNAL_KEYMGMT_COMMON_H_

#include <openssl/core.h>
#include <openssl/core_dispatch.h>

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/pkey.h"
#include "provider/internal/pkey_key.h"

namespace accelcrypt::provider::internal {

// KeyField names one integer of a key as OpenSSL's keymgmt parameters name
// it, the KeyMaterial member holding it, and the selection it belongs to
// (OSSL_KEYMGMT_SELECT_PUBLIC_KEY, _PRIVATE_KEY or _DOMAIN_PARAMETERS).
struct KeyField {
  const char* name;
  std::vector<uint8_t> KeyMaterial::*member;
  int selection;
};

// KeyFormat describes one key type for the generic keymgmt functions below.
struct KeyFormat {
  KeyMaterial::Type type;
  const char* name;  // "RSA", "DSA"
  absl::Span<const KeyField> fields;
  // Params that must be present when importing each selection part.
  absl::Span<const char* const> required_public;
  absl::Span<const char* const> required_domain;
  // Parameter names that mark a shape we cannot hold (multi-prime RSA).
  absl::Span<const char* const> refused;
};

// The generic parts of a keymgmt: a key is a PkeyKey; `format` says which
// OpenSSL parameter holds which KeyMaterial member.
void* KeymgmtNew(void* provctx, const KeyFormat& format);
void KeymgmtFree(void* keydata);
int KeymgmtHas(const void* keydata, int selection);
int KeymgmtMatch(const KeyFormat& format, const void* keydata1,
                 const void* keydata2, int selection);
int KeymgmtImport(const KeyFormat& format, void* keydata, int selection,
                  const OSSL_PARAM params[]);
// KeymgmtExport hands the key's integers in `selection`, followed by
// `extra` (parameters the caller built, e.g. RSA-PSS restrictions; their
// data must outlive the call), to `param_cb`.
int KeymgmtExport(const KeyFormat& format, void* keydata, int selection,
                  OSSL_CALLBACK* param_cb, void* cbarg,
                  absl::Span<const OSSL_PARAM> extra = {});
void* KeymgmtDup(const KeyFormat& format, const void* keydata, int selection);
// KeymgmtLoad takes over the PkeyKey a reference points at (the STORE's
// object reference: a PkeyKey* whose slot is cleared).
void* KeymgmtLoad(const void* reference, size_t reference_sz);
// KeymgmtGetParams answers bits, security-bits, max-size, default-digest
// (SHA256) and every key integer present.
int KeymgmtGetParams(const KeyFormat& format, void* keydata,
                     OSSL_PARAM params[]);
// KeymgmtValidate checks the key with libcrypto's own checks in the
// provider's private library context.
int KeymgmtValidate(const KeyFormat& format, const void* keydata, int selection,
                    int checktype);

// ToPkeyParams builds the OpenSSL parameter array of the key's integers in
// `selection` (free with OSSL_PARAM_free).
absl::StatusOr<OSSL_PARAM*> ToParams(const KeyFormat& format,
                                     const KeyMaterial& key, int selection);

// FromPkey copies every field of `pkey` (made in the private context) into
// `key`.
absl::Status FromPkey(const KeyFormat& format, const EVP_PKEY* pkey,
                      int selection, KeyMaterial* key);

}  // namespace accelcrypt::provider::internal

#endif  // ACCELCRYPT_PROVIDER_INTERNAL_KEYMGMT_COMMON_H_
