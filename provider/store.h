// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_PROVIDER_STORE_H_
#define ACCELCRYPT_PROVIDER_STORE_H_

#include <openssl/core.h>

#include <vector>

#include "provider/provider_ctx.h"

namespace accelcrypt::provider {

// Dispatch table of the OSSL_STORE loader for RFC 7512 `pkcs11:` URIs (see
// store.cc): one OSSL_OBJECT_PKEY per URI, by reference, taken by our RSA or
// DSA keymgmt's load(); export_object gives other providers' keymgmt the
// public parts.
extern const OSSL_DISPATCH kPkcs11StoreFunctions[];

// AppendStoreAlgorithms appends the "pkcs11" store loader when the provider
// offers RSA or DSA keys (Router::Interposes: a token backend serves them,
// or `interpose = all`). Does not terminate the array.
void AppendStoreAlgorithms(ProvCtx& ctx, std::vector<OSSL_ALGORITHM>* store);

}  // namespace accelcrypt::provider

#endif  // ACCELCRYPT_PROVIDER_STORE_H_
