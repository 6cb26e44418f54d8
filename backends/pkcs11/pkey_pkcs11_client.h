// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_BACKENDS_PKCS11_PKEY_PKCS11_CLIENT_H_
#define ACCELCRYPT_BACKENDS_PKCS11_PKEY_PKCS11_CLIENT_H_

#include <openssl/types.h>
#include <p11-kit-1/p11-kit/pkcs11.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "accelcrypt/backend.h"
#include "backends/pkcs11/token.h"

namespace accelcrypt::pkcs11_client {

struct MdInfo;

// KeyLimits are the key sizes the backend declared per family.
struct KeyLimits {
  size_t rsa_min = 0, rsa_max = 0, dsa_min = 0, dsa_max = 0;
};

// PkeyPkcs11Client is an RSA or DSA key as the PKCS#11 client backend uses
// it: either key material, imported once as session objects (private and
// public key, CKA_TOKEN false) and found again through the token's key
// cache by a SHA-256 fingerprint of the public key, or objects on the token
// named by a `pkcs11:` URI. The key material is kept (wiped on destruction)
// so a forked child or an evicted entry can import it again. Thread-safe:
// every operation leases its own session.
class PkeyPkcs11Client {
 public:
  // Load prepares the key. kUnimplemented when the token cannot use it
  // (size outside `limits`, a URI naming another token or nothing).
  static absl::StatusOr<std::unique_ptr<PkeyPkcs11Client>> Load(
      Token* token, OSSL_LIB_CTX* libctx, const KeyLimits& limits,
      const accelcrypt_key_desc& desc);
  ~PkeyPkcs11Client();

  absl::Status Sign(const accelcrypt_pkey_params& params, const uint8_t* tbs,
                    size_t tbs_len, uint8_t* sig, size_t* sig_len);
  absl::Status Verify(const accelcrypt_pkey_params& params, const uint8_t* tbs,
                      size_t tbs_len, const uint8_t* sig, size_t sig_len);
  absl::Status Encrypt(const accelcrypt_pkey_params& params, const uint8_t* in,
                       size_t in_len, uint8_t* out, size_t* out_len);
  absl::Status Decrypt(const accelcrypt_pkey_params& params, const uint8_t* in,
                       size_t in_len, uint8_t* out, size_t* out_len);

 private:
  PkeyPkcs11Client() = default;
  absl::StatusOr<KeyObjects> Objects();
  void BuildTemplates();
  // Run leases a session, runs `fn` on it and maps its CK_RV; stale object
  // handles drop the cache entry so the next call imports again.
  template <typename Fn>
  absl::Status Run(const char* what, Fn&& fn);
  size_t ModBits() const;
  // PSS done here over raw RSA on the token (tokens without
  // CKM_RSA_PKCS_PSS).
  absl::Status SignPssFramework(const MdInfo& md, const MdInfo& mgf,
                                int32_t salt_param, const uint8_t* m_hash,
                                uint8_t* sig);
  absl::Status VerifyPssFramework(const MdInfo& md, const MdInfo& mgf,
                                  int32_t salt_param, const uint8_t* m_hash,
                                  const uint8_t* sig, size_t sig_len);
  // PKCS#1 v1.5 and OAEP encryption padding done here over raw RSA.
  absl::Status EncryptFramework(const accelcrypt_pkey_params& params,
                                const uint8_t* in, size_t in_len, uint8_t* out,
                                size_t* out_len);
  absl::Status DecryptFramework(const accelcrypt_pkey_params& params,
                                const uint8_t* in, size_t in_len, uint8_t* out,
                                size_t* out_len);
  absl::Status CheckBelowModulus(const uint8_t* in, size_t in_len) const;
  absl::Status CryptMechanism(const accelcrypt_pkey_params& params,
                              const uint8_t* in, size_t in_len,
                              const char* what, CK_MECHANISM* mech,
                              CK_RSA_PKCS_OAEP_PARAMS* oaep) const;
  absl::Status RawPrivate(const uint8_t* in, size_t in_len, uint8_t* out);
  absl::Status RawPublic(const uint8_t* in, size_t in_len, uint8_t* out);

  Token* token_ = nullptr;
  OSSL_LIB_CTX* libctx_ = nullptr;
  bool rsa_ = true;
  bool private_ = false;
  size_t mod_len_ = 0;  // RSA modulus bytes
  // RSA modulus bits of a key named by a URI (no n_ here): read from the
  // token's CKA_MODULUS, for PSS's emBits when the backend pads.
  size_t uri_mod_bits_ = 0;
  size_t q_len_ = 0;  // DSA q bytes
  std::string uri_;
  std::string fingerprint_;
  // Owned copies of the key material, pointed to by the templates.
  std::vector<uint8_t> n_, e_, d_, p_, q_, dmp1_, dmq1_, iqmp_;
  std::vector<uint8_t> dp_, dq_, dg_, dy_, dx_;
  CK_OBJECT_CLASS priv_class_ = CKO_PRIVATE_KEY;
  CK_OBJECT_CLASS pub_class_ = CKO_PUBLIC_KEY;
  CK_KEY_TYPE key_type_ = CKK_RSA;
  CK_BBOOL true_ = CK_TRUE;
  CK_BBOOL false_ = CK_FALSE;
  Token::Attrs priv_template_, pub_template_;
};

}  // namespace accelcrypt::pkcs11_client

#endif  // ACCELCRYPT_BACKENDS_PKCS11_PKEY_PKCS11_CLIENT_H_
