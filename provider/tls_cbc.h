// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_PROVIDER_TLS_CBC_H_
#define ACCELCRYPT_PROVIDER_TLS_CBC_H_

#include <openssl/types.h>

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace accelcrypt::provider {

// TLS 1.0-1.2 CBC records (RFC 5246 section 6.2.3.2) as libssl hands them
// to a provider: libssl sets the protocol version and MAC size, then passes
// each record in place through the cipher's update; the provider adds the
// padding when sealing and, when opening, removes explicit IV, padding and
// MAC itself, leaving the MAC for libssl to fetch and check.

// kTlsMaxMacSize is the largest MAC a record carries (HMAC-SHA384 is 48).
inline constexpr size_t kTlsMaxMacSize = 64;

// TlsCbcPad appends TLS padding to the `len` bytes at `buf` (capacity
// `cap`): 1..16 bytes, each holding the pad length minus one. Returns the
// padded length, a multiple of 16, or kOutOfRange when it does not fit.
absl::StatusOr<size_t> TlsCbcPad(uint8_t* buf, size_t len, size_t cap);

// TlsCbcOpen removes the explicit IV (TLS 1.1 and later), the padding and
// the MAC from a decrypted record `rec` of `rec_len` bytes, in constant time
// with respect to the padding and record contents. On return *data_offset
// and *data_len locate the payload, and `mac` (mac_size bytes, at most
// kTlsMaxMacSize) holds the MAC found there, or random bytes when the
// padding was bad, so that libssl's MAC check fails without a timing
// difference. With mac_size 0 (encrypt-then-MAC) bad padding is reported
// directly. Returns kInvalidArgument only for lengths that are public
// (record shorter than IV + padding byte + MAC, unknown version).
absl::Status TlsCbcOpen(unsigned int version, const uint8_t* rec,
                        size_t rec_len, size_t mac_size, OSSL_LIB_CTX* libctx,
                        size_t* data_offset, size_t* data_len, uint8_t* mac);

// TlsVersionSupported reports whether `version` is one TlsCbcOpen handles
// (TLS 1.0-1.2 and DTLS; SSL 3.0 is not).
bool TlsVersionSupported(unsigned int version);

}  // namespace accelcrypt::provider

#endif  // ACCELCRYPT_PROVIDER_TLS_CBC_H_
