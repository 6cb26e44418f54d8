// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_BACKENDS_SOFTWARE_RSA_SOFTWARE_H_
#define ACCELCRYPT_BACKENDS_SOFTWARE_RSA_SOFTWARE_H_

#include <openssl/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "accelcrypt/backend.h"
#include "backends/software/lib_context.h"
#include "backends/software/provider_direct.h"

namespace accelcrypt::software {

// PkeySoftware is an RSA or DSA key prepared by the software backend: a key
// object of OpenSSL's default provider, built once from the key descriptor
// and used through the provider's own functions (provider_direct.h: no EVP,
// so an application's ENGINE never takes the operation over). Immutable
// after Load; each operation makes its own provider context, so one key
// serves several threads.
class PkeySoftware {
 public:
  // Load builds the key. kUnimplemented for a token reference without key
  // material or a size outside the declared range; kInvalidArgument for
  // inconsistent material.
  static absl::StatusOr<std::unique_ptr<PkeySoftware>> Load(
      const LibContext& lib, const accelcrypt_key_desc& desc);
  ~PkeySoftware() = default;
  PkeySoftware(const PkeySoftware&) = delete;
  PkeySoftware& operator=(const PkeySoftware&) = delete;

  // Sign/Verify/Encrypt/Decrypt follow accelcrypt_pkey_table: outputs sized
  // with *out_len (kOutOfRange and the size needed when too small); Verify
  // returns the AuthFailed status for a signature that does not verify;
  // Decrypt returns kInvalidArgument for a bad padding.
  absl::Status Sign(const accelcrypt_pkey_params& params, const uint8_t* tbs,
                    size_t tbs_len, uint8_t* sig, size_t* sig_len) const;
  absl::Status Verify(const accelcrypt_pkey_params& params, const uint8_t* tbs,
                      size_t tbs_len, const uint8_t* sig, size_t sig_len) const;
  absl::Status Encrypt(const accelcrypt_pkey_params& params, const uint8_t* in,
                       size_t in_len, uint8_t* out, size_t* out_len) const;
  absl::Status Decrypt(const accelcrypt_pkey_params& params, const uint8_t* in,
                       size_t in_len, uint8_t* out, size_t* out_len) const;

 private:
  PkeySoftware() = default;
  // SetParams checks `p` and hands it to the provider operation context
  // `ctx` (a signature context, or an asymmetric cipher one when `cipher`).
  absl::Status SetParams(void* ctx, const accelcrypt_pkey_params& p,
                         bool cipher) const;

  const PkeyDispatch* d_ = nullptr;
  ProviderKey key_;
  bool rsa_ = true;
  bool private_ = false;
  size_t size_ = 0;  // largest signature/ciphertext in bytes
  const char* name_ = "RSA";
};

// BuildRsaKey and BuildDsaKey import the descriptor's integers into a key
// object of `d` (rsa_software.cc, dsa_software.cc); *is_private says
// whether the private part was present. kInvalidArgument for material the
// provider rejects.
absl::Status BuildRsaKey(const PkeyDispatch& d, const accelcrypt_key_desc& desc,
                         bool* is_private, ProviderKey* out);
absl::Status BuildDsaKey(const PkeyDispatch& d, const accelcrypt_key_desc& desc,
                         bool* is_private, ProviderKey* out);

// MdName returns OpenSSL's name for a digest id, or nullptr.
const char* MdName(accelcrypt_alg md);

}  // namespace accelcrypt::software

#endif  // ACCELCRYPT_BACKENDS_SOFTWARE_RSA_SOFTWARE_H_
