// SPDX-License-Identifier: Apache-2.0
// DSA keys for the software backend (FIPS 186-4): the descriptor imported
// with the default provider's DSA key management, called directly
// (provider_direct.h; no EVP, so no ENGINE). Signing and
// verifying share PkeySoftware (rsa_software.cc); signatures are DER
// Dss-Sig-Value, as OpenSSL makes them.
#include <openssl/core_names.h>
#include <openssl/evp.h>  // EVP_PKEY_KEYPAIR / EVP_PKEY_PUBLIC_KEY only
#include <openssl/param_build.h>
#include <openssl/params.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/software/openssl_error.h"
#include "backends/software/rsa_software.h"

namespace accelcrypt::software {
namespace {

struct BnHolder {
  BIGNUM* bn = nullptr;
  ~BnHolder() { BN_clear_free(bn); }
};

}  // namespace

absl::Status BuildDsaKey(const PkeyDispatch& dispatch,
                         const accelcrypt_key_desc& desc, bool* is_private,
                         ProviderKey* out) {
  if (desc.dsa_p.len == 0 || desc.dsa_q.len == 0 || desc.dsa_g.len == 0 ||
      desc.dsa_y.len == 0) {
    return absl::InvalidArgumentError("software: DSA key lacks p, q, g or y");
  }
  *is_private = desc.dsa_x.len != 0;
  BnHolder p, q, g, y, x;
  p.bn = BN_bin2bn(desc.dsa_p.data, static_cast<int>(desc.dsa_p.len), nullptr);
  q.bn = BN_bin2bn(desc.dsa_q.data, static_cast<int>(desc.dsa_q.len), nullptr);
  g.bn = BN_bin2bn(desc.dsa_g.data, static_cast<int>(desc.dsa_g.len), nullptr);
  y.bn = BN_bin2bn(desc.dsa_y.data, static_cast<int>(desc.dsa_y.len), nullptr);
  if (*is_private) {
    x.bn = BN_secure_new();
    if (x.bn != nullptr &&
        BN_bin2bn(desc.dsa_x.data, static_cast<int>(desc.dsa_x.len), x.bn) ==
            nullptr) {
      BN_clear_free(x.bn);
      x.bn = nullptr;
    }
  }
  if (p.bn == nullptr || q.bn == nullptr || g.bn == nullptr ||
      y.bn == nullptr || (*is_private && x.bn == nullptr)) {
    return LibcryptoError(absl::StatusCode::kResourceExhausted, "DSA",
                          "BN_bin2bn");
  }
  OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
  if (bld == nullptr ||
      !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_FFC_P, p.bn) ||
      !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_FFC_Q, q.bn) ||
      !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_FFC_G, g.bn) ||
      !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_PUB_KEY, y.bn) ||
      (*is_private &&
       !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_PRIV_KEY, x.bn))) {
    OSSL_PARAM_BLD_free(bld);
    return LibcryptoError(absl::StatusCode::kResourceExhausted, "DSA",
                          "OSSL_PARAM_BLD");
  }
  OSSL_PARAM* params = OSSL_PARAM_BLD_to_param(bld);
  OSSL_PARAM_BLD_free(bld);
  if (params == nullptr) {
    return LibcryptoError(absl::StatusCode::kResourceExhausted, "DSA",
                          "OSSL_PARAM_BLD_to_param");
  }
  absl::Status st = ProviderKey::Import(
      dispatch, *is_private ? EVP_PKEY_KEYPAIR : EVP_PKEY_PUBLIC_KEY, params,
      out);
  // x sits in the secure block, which OSSL_PARAM_free wipes.
  OSSL_PARAM_free(params);
  return st;
}

}  // namespace accelcrypt::software
