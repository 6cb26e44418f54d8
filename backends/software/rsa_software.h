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

namespace accelcrypt::software {

// PkeySoftware is an RSA or DSA key prepared by the software backend: an
// EVP_PKEY built once from the key descriptor in the backend's private
// library context. Immutable after Load; each operation makes its own
// EVP_PKEY_CTX, so one key serves several threads.
class PkeySoftware {
 public:
  // Load builds the key. kUnimplemented for a token reference without key
  // material or a size outside the declared range; kInvalidArgument for
  // inconsistent material.
  static absl::StatusOr<std::unique_ptr<PkeySoftware>> Load(
      const LibContext& lib, const accelcrypt_key_desc& desc);
  ~PkeySoftware();
  PkeySoftware(const PkeySoftware&) = delete;
  PkeySoftware& operator=(const PkeySoftware&) = delete;

  // Sign/Verify/Encrypt/Decrypt follow accelcrypt_pkey_table: outputs sized
  // with *out_len (kOutOfRange and the size needed when too small); Verify
  // returns the AuthFailed status for a signature that does not verify;
  // Decrypt returns kInvalidArgument for a bad padding.
  absl::Status Sign(const accelcrypt_pkey_params& params, const uint8_t* tbs,
                    size_t tbs_len, uint8_t* sig, size_t* sig_len) const;
  absl::Status Verify(const accelcrypt_pkey_params& params, const uint8_t* tbs,
                      size_t tbs_len, const uint8_t* sig,
                      size_t sig_len) const;
  absl::Status Encrypt(const accelcrypt_pkey_params& params, const uint8_t* in,
                       size_t in_len, uint8_t* out, size_t* out_len) const;
  absl::Status Decrypt(const accelcrypt_pkey_params& params, const uint8_t* in,
                       size_t in_len, uint8_t* out, size_t* out_len) const;

 private:
  PkeySoftware() = default;
  absl::Status SetParams(EVP_PKEY_CTX* ctx, const accelcrypt_pkey_params& p,
                         bool cipher) const;

  OSSL_LIB_CTX* libctx_ = nullptr;
  EVP_PKEY* pkey_ = nullptr;
  bool rsa_ = true;
  bool private_ = false;
  size_t size_ = 0;  // largest signature/ciphertext in bytes
  const char* name_ = "RSA";
};

// BuildRsaKey and BuildDsaKey make an EVP_PKEY in `libctx` from the
// descriptor's integers (rsa_software.cc, dsa_software.cc); *is_private
// says whether the private part was present.
absl::StatusOr<EVP_PKEY*> BuildRsaKey(OSSL_LIB_CTX* libctx,
                                      const accelcrypt_key_desc& desc,
                                      bool* is_private);
absl::StatusOr<EVP_PKEY*> BuildDsaKey(OSSL_LIB_CTX* libctx,
                                      const accelcrypt_key_desc& desc,
                                      bool* is_private);

// MdName returns OpenSSL's name for a digest id, or nullptr.
const char* MdName(accelcrypt_alg md);

}  // namespace accelcrypt::software

#endif  // ACCELCRYPT_BACKENDS_SOFTWARE_RSA_SOFTWARE_H_
