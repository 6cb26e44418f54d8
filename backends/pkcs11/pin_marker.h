// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_BACKENDS_PKCS11_PIN_MARKER_H_
#define ACCELCRYPT_BACKENDS_PKCS11_PIN_MARKER_H_

#include <openssl/types.h>
#include <p11-kit-1/p11-kit/pkcs11.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace accelcrypt::pkcs11_client {

// TokenIdentity names a token for the refused-PIN markers: the fields of
// CK_TOKEN_INFO (padding stripped). The serial number, manufacturer and
// model pick the marker file; the label is recorded for people.
struct TokenIdentity {
  std::string serial, manufacturer, model, label;
};

// PinHash is a refused PIN as remembered: PBKDF2-HMAC-SHA256 over the PIN,
// salted with a random salt plus a fixed domain string and the token's
// serial number. A PIN is never stored.
struct PinHash {
  std::vector<uint8_t> salt;
  std::vector<uint8_t> hash;
  std::string result;  // the CKR_* the token answered
  std::string time;    // UTC, ISO 8601
};

// ResolveStateDir returns the directory for refused-PIN markers, created
// (mode 0700) when missing: `configured` (`pin_state_dir`) when not empty,
// else $ACCELCRYPT_STATE_DIR, else /var/lib/accelcrypt for root, else
// $XDG_STATE_HOME/accelcrypt or ~/.local/state/accelcrypt, falling back to
// /var/lib/accelcrypt when that is writable. kUnavailable (with the reason)
// when nothing is writable: markers are then kept in memory only.
absl::StatusOr<std::string> ResolveStateDir(const std::string& configured);

// MarkerPath is the marker file of `token` inside `dir`:
// pin-refused-<32 hex digits>.marker (a digest of manufacturer, model and
// serial, so no token field needs escaping in a file name).
std::string MarkerPath(const std::string& dir, const TokenIdentity& token);

// HashPin computes the remembered form of `pin` for `token` with `salt`
// (fresh random bytes when empty) in `libctx` (the backend's private
// context). kInternal when the KDF is not available.
absl::StatusOr<PinHash> HashPin(OSSL_LIB_CTX* libctx,
                                const TokenIdentity& token,
                                absl::string_view pin,
                                std::vector<uint8_t> salt = {});

// Matches is true when `pin` hashes to `refused` (constant-time compare).
bool Matches(OSSL_LIB_CTX* libctx, const TokenIdentity& token,
             absl::string_view pin, const PinHash& refused);

// ReadMarker reads a marker file; std::nullopt when absent or unreadable
// (an unreadable or malformed marker blocks nothing).
std::optional<PinHash> ReadMarker(const std::string& path);

// WriteMarker writes the marker atomically (temporary file, mode 0600,
// renamed over the old one). kUnavailable when it cannot be written.
absl::Status WriteMarker(const std::string& path, const TokenIdentity& token,
                         const PinHash& refused);

// UtcNow is the current time as 2026-12-03T11:00:00Z (for the marker).
std::string UtcNow();

// MarkerLock holds an exclusive flock(2) on `<marker>.lock` so that the
// processes starting at once read, try and write the marker one after the
// other (only the first spends a login attempt). Not locked (locked() false)
// when the lock file cannot be opened.
class MarkerLock {
 public:
  explicit MarkerLock(const std::string& marker_path);
  ~MarkerLock();
  MarkerLock(const MarkerLock&) = delete;
  MarkerLock& operator=(const MarkerLock&) = delete;
  bool locked() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace accelcrypt::pkcs11_client

#endif  // ACCELCRYPT_BACKENDS_PKCS11_PIN_MARKER_H_
