// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_PROVIDER_INTERNAL_PKEY_KEY_H_
#define ACCELCRYPT_PROVIDER_INTERNAL_PKEY_KEY_H_

#include <openssl/core.h>
#include <openssl/param_build.h>
#include <openssl/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/pkey.h"
#include "provider/provider_ctx.h"

namespace accelcrypt::provider::internal {

// PssRestrictions are the RSASSA-PSS-params an RSA-PSS key carries (RFC
// 4055 section 3.1, RFC 8017 A.2.3; OpenSSL's RSA_PSS_PARAMS_30): the one
// digest and MGF1 digest its signatures may use and the smallest salt. A
// key that names any of them gets RFC 4055's defaults for the others.
struct PssRestrictions {
  accelcrypt_alg md = ACCELCRYPT_ALG_SHA1;
  accelcrypt_alg mgf1_md = ACCELCRYPT_ALG_SHA1;
  int min_salt_len = 20;
  // OpenSSL's names of the two digests. A digest accelcrypt does not offer
  // (SHA-3, SHA-512/256) has id 0 and only its name: the key still loads,
  // prints and exports, and signing with it is refused.
  std::string md_name = "SHA1";
  std::string mgf1_name = "SHA1";
};

// PkeyKey is the keydata object of the RSA and DSA keymgmt: a core
// KeyMaterial plus the routed PublicKeyOps made from it on first use.
// Reference counted, because signature and asym-cipher contexts keep the key
// they were initialised with while OpenSSL may free its keydata. The
// material is written only while the key is private to one keymgmt call
// (new + import, gen, dup); afterwards it is read-only and the object is
// thread-safe.
class PkeyKey {
 public:
  PkeyKey(ProvCtx* prov, KeyMaterial::Type type) : prov_(prov) {
    material_.type = type;
  }
  PkeyKey(const PkeyKey&) = delete;
  PkeyKey& operator=(const PkeyKey&) = delete;

  void Ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  // Unref deletes the key when the last reference goes; null is a no-op.
  static void Unref(PkeyKey* key);

  ProvCtx* prov() const { return prov_; }
  bool rsa() const { return material_.type == KeyMaterial::Type::kRsa; }
  KeyMaterial& mutable_material() {
    ResetOps();
    return material_;
  }
  const KeyMaterial& material() const { return material_; }

  // An RSA-PSS key (id-RSASSA-PSS, keymgmt "RSA-PSS") signs with PSS only
  // and, when restricted, only as its restrictions allow. Set, like the
  // material, only while the key is private to one keymgmt call.
  bool pss() const { return pss_; }
  void set_pss(bool pss) { pss_ = pss; }
  const std::optional<PssRestrictions>& pss_restrictions() const {
    return pss_restrictions_;
  }
  void set_pss_restrictions(std::optional<PssRestrictions> r) {
    pss_restrictions_ = std::move(r);
  }

  bool has_public() const;
  bool has_private() const;
  bool has_domain() const;  // DSA p, q, g (RSA has none: always true)

  // Ops returns the routed operations over this key, made on the first call
  // (Router::NewPublicKeyOps); the pointer lives as long as the key.
  absl::StatusOr<PublicKeyOps*> Ops();

  // SecurityBits is the key's strength as OpenSSL reports it (SP 800-57
  // via libcrypto), computed once.
  int SecurityBits();

 private:
  ~PkeyKey() = default;
  void ResetOps();

  ProvCtx* const prov_;
  std::atomic<int> refs_{1};
  KeyMaterial material_;
  bool pss_ = false;
  std::optional<PssRestrictions> pss_restrictions_;
  absl::Mutex mu_;
  std::unique_ptr<PublicKeyOps> ops_ ABSL_GUARDED_BY(mu_);
  std::atomic<int> security_bits_{-1};
};

// ParamBytes reads the integer parameter `name` from `params` into `out`
// (big-endian, minimal). Returns false when absent; kInvalidArgument when
// present but not an integer.
absl::StatusOr<bool> ParamBytes(const OSSL_PARAM params[], const char* name,
                                std::vector<uint8_t>* out);

// ParamBuilder collects integer parameters for an export callback or a
// get_params answer; the BIGNUMs it makes are cleared and freed with it.
class ParamBuilder {
 public:
  ParamBuilder();
  ~ParamBuilder();
  ParamBuilder(const ParamBuilder&) = delete;
  ParamBuilder& operator=(const ParamBuilder&) = delete;
  // Add pushes `value` under `name` unless it is empty.
  absl::Status Add(const char* name, const std::vector<uint8_t>& value);
  // Build returns the OSSL_PARAM array (free with OSSL_PARAM_free).
  absl::StatusOr<OSSL_PARAM*> Build();

 private:
  OSSL_PARAM_BLD* bld_;
  std::vector<BIGNUM*> bns_;
};

// ClearFreeParams wipes every value of a built parameter array, then frees
// it (OpenSSL 3.0 has no OSSL_PARAM_clear_free). Null is a no-op.
void ClearFreeParams(OSSL_PARAM* params);

// SetParamBytes answers a get_params request for `name` with `value` when
// the caller asked for it and the value exists.
absl::Status SetParamBytes(OSSL_PARAM params[], const char* name,
                           const std::vector<uint8_t>& value);

// FromPkeyBn copies the integer parameter `name` of `pkey` into `out`.
absl::Status FromPkeyBn(const EVP_PKEY* pkey, const char* name,
                        std::vector<uint8_t>* out);

// LibcryptoError drains libcrypto's error queue into a status message.
absl::Status LibcryptoError(absl::StatusCode code, std::string_view what);

// DigestByName maps an OpenSSL digest name ("SHA256", "SHA2-256", OID) to a
// core digest id; kInvalidArgument when it is not one the core offers.
absl::StatusOr<accelcrypt_alg> DigestByName(std::string_view name);

// DigestName returns the canonical name of a digest id ("SHA256"), or "".
std::string_view DigestName(accelcrypt_alg md);

// DigestLen returns the output size of a digest id, 0 when unknown.
size_t DigestLen(accelcrypt_alg md);

}  // namespace accelcrypt::provider::internal

#endif  // ACCELCRYPT_PROVIDER_INTERNAL_PKEY_KEY_H_
