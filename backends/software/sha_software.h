// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_BACKENDS_SOFTWARE_SHA_SOFTWARE_H_
#define ACCELCRYPT_BACKENDS_SOFTWARE_SHA_SOFTWARE_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/base/optimization.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "accelcrypt/backend.h"
#include "backends/software/lib_context.h"

namespace accelcrypt::software {

// ShaSoftware is one SHA-1/SHA-2 hash over a context of OpenSSL's default
// provider, driven through the provider's dispatch functions. Not
// thread-safe; one per operation.
class ShaSoftware {
 public:
  // Create allocates and initialises a provider context for `d` (which
  // outlives this object). kResourceExhausted when the provider cannot
  // allocate.
  static absl::StatusOr<std::unique_ptr<ShaSoftware>> Create(
      const DigestDispatch& d);
  ~ShaSoftware();
  ShaSoftware(const ShaSoftware&) = delete;
  ShaSoftware& operator=(const ShaSoftware&) = delete;

  // Init restarts the hash.
  absl::Status Init();
  // Update hashes len bytes of `data`. kFailedPrecondition after Final.
  // Inline so the shim's OK path needs no Status object.
  absl::Status Update(const uint8_t* data, size_t len) {
    if (ABSL_PREDICT_TRUE(ready_ && data != nullptr && len != 0)) {
      if (ABSL_PREDICT_TRUE(d_.update(prov_ctx_, data, len) > 0)) {
        return absl::OkStatus();
      }
      return UpdateFailed();
    }
    return UpdateSlow(data, len);
  }
  // Final writes the digest to `out` (out_len >= digest size, else
  // kOutOfRange with nothing changed); the context then needs Init.
  absl::Status Final(uint8_t* out, size_t out_len);
  absl::StatusOr<std::unique_ptr<ShaSoftware>> Clone() const;

  // Direct returns the plain-CPU implementation of `alg` over caller-owned
  // state (libcrypto's low-level SHA functions), or nullptr for an
  // algorithm without one.
  static const accelcrypt_digest_direct* Direct(accelcrypt_alg alg);

  // OneShot hashes `data` into `out` (libcrypto's one-shot SHA function:
  // a stack context, no allocation).
  static absl::Status OneShot(const DigestDispatch& d, const uint8_t* data,
                              size_t len, uint8_t* out, size_t out_len);

 private:
  // OneShotDispatch is OneShot on a temporary provider context, for a
  // digest without a libcrypto one-shot function.
  static absl::Status OneShotDispatch(const DigestDispatch& d,
                                      const uint8_t* data, size_t len,
                                      uint8_t* out, size_t out_len);

  ShaSoftware(const DigestDispatch& d, void* prov_ctx)
      : d_(d), prov_ctx_(prov_ctx) {}

  // UpdateSlow handles the calls Update's fast path does not take.
  absl::Status UpdateSlow(const uint8_t* data, size_t len);
  absl::Status UpdateFailed() const;

  const DigestDispatch& d_;
  void* prov_ctx_;
  bool ready_ = false;
};

}  // namespace accelcrypt::software

#endif  // ACCELCRYPT_BACKENDS_SOFTWARE_SHA_SOFTWARE_H_
