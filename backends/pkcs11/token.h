// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_BACKENDS_PKCS11_TOKEN_H_
#define ACCELCRYPT_BACKENDS_PKCS11_TOKEN_H_

#include <p11-kit-1/p11-kit/pkcs11.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "accelcrypt/backend.h"
#include "backends/pkcs11/ck_status.h"
#include "backends/pkcs11/pin_marker.h"

namespace accelcrypt::pkcs11_client {

// TokenConfig is the backend's configuration (host->config_get keys).
struct TokenConfig {
  std::string module;       // `module`: path of the PKCS#11 module
  std::string token_label;  // `token_label`, or
  bool has_slot = false;    // `slot`: a slot id
  CK_SLOT_ID slot = 0;
  std::string pin;         // read from `pin_file` or `pin_env`; wiped
  std::string pin_source;  // "pin_file PATH" / "pin_env NAME", for messages
  // `pin_state_dir`: where refused-PIN markers live (empty: the default,
  // see ResolveStateDir in pin_marker.h).
  std::string pin_state_dir;
  size_t key_cache_size = 64;  // `key_cache_size`
  // `hide_mechanisms`: mechanisms treated as absent (e.g. CKM_RSA_PKCS, to
  // run a token the way one that has only CKM_RSA_X_509 is run).
  std::vector<CK_MECHANISM_TYPE> hidden;
  // `rsa_max_key_bits` / `dsa_max_key_bits`: raise the token's reported
  // largest key size (0 = as reported).
  size_t rsa_max_bits = 0, dsa_max_bits = 0;
  // Wipes `pin`. It also leaves TokenConfig without implicit move
  // operations, on purpose: a defaulted move of a short PIN (held inside
  // the std::string) copies its bytes and leaves them in the source, whose
  // size is then 0, so this destructor would wipe nothing there. Copies are
  // each wiped.
  ~TokenConfig();
};

// TokenCall marks the current thread, for its lifetime, as inside this
// backend, where a call into the token module may follow. A token module
// that uses OpenSSL (SoftHSMv2; accelcrypt's own module) can come back into
// accelcrypt from such a call, through the provider or the engine loaded in
// the same process: into another core and another instance of this
// backend, on the same thread, while this one may hold a lock or be inside
// the module's C_Initialize. Nested() says so; the ABI entry points then
// refuse at once (busy) instead of calling the module again. Per thread,
// shared by every instance of this backend in the process.
class TokenCall {
 public:
  TokenCall();
  ~TokenCall();
  TokenCall(const TokenCall&) = delete;
  TokenCall& operator=(const TokenCall&) = delete;
  static bool Nested();
};

// ReadConfig reads and checks the configuration. kUnavailable "no module
// configured" when `module` is absent (the backend declines); a PIN is
// never read from the configuration itself, only from `pin_file` or the
// environment variable named by `pin_env`.
absl::StatusOr<TokenConfig> ReadConfig(const accelcrypt_host* host);

// Mechanisms is what the token lists (C_GetMechanismList/Info), reduced to
// what this backend uses.
struct MechInfo {
  bool present = false;
  CK_FLAGS flags = 0;
  CK_ULONG min_bits = 0, max_bits = 0;
};

// KeyObjects are the token objects for one key: the private key (0 when
// public only) and the public key (0 when none), valid for `generation`.
struct KeyObjects {
  CK_OBJECT_HANDLE priv = CK_INVALID_HANDLE;
  CK_OBJECT_HANDLE pub = CK_INVALID_HANDLE;
  uint64_t generation = 0;
};

// Token is one PKCS#11 module and token: the function list, a pool of
// sessions shared by threads (one logged-in anchor session keeps the login
// and owns the imported session objects), fork detection, and a bounded
// LRU cache of imported key objects keyed by a public-key fingerprint.
// Thread-safe.
class Token {
 public:
  // Create loads the module, calls C_Initialize with CKF_OS_LOCKING_OK,
  // finds the token, opens the anchor session and reads the mechanism list.
  // It never logs in: the login is lazy (EnsureLogin), so a process that
  // never uses the token's private objects spends no login attempt.
  // kUnavailable with a clear message when the module is missing or broken
  // or the token is absent. `libctx` (the backend's private context, for
  // the PIN markers' KDF) and `host` (for log lines; may be null) must
  // outlive the token.
  static absl::StatusOr<std::unique_ptr<Token>> Create(
      const TokenConfig& config, OSSL_LIB_CTX* libctx,
      const accelcrypt_host* host);
  ~Token();
  Token(const Token&) = delete;
  Token& operator=(const Token&) = delete;

  const MechInfo& mech(CK_MECHANISM_TYPE m) const;
  CK_FUNCTION_LIST* fl() const { return fl_; }
  const std::string& label() const { return label_; }
  // quirks are the token model's known misreported result codes (the
  // quirk table in ck_status.cc), fixed once the token is found.
  const TokenQuirks& quirks() const { return quirks_; }
  std::string Describe() const;

  // Session is a leased session handle; give it back with Release.
  struct Session {
    CK_SESSION_HANDLE handle = CK_INVALID_HANDLE;
    uint64_t generation = 0;
  };
  // Acquire re-initialises first when the process forked, then hands out a
  // pooled or new session.
  absl::StatusOr<Session> Acquire();
  // Release returns the session to the pool; `broken` (a device or session
  // error happened on it) closes it instead.
  void Release(Session session, bool broken);

  // Objects returns the token objects for a key, importing it as session
  // objects on a cache miss (C_CreateObject, CKA_TOKEN false). `fingerprint`
  // identifies the public key; `make_templates` is called only on a miss.
  using Attrs = std::vector<CK_ATTRIBUTE>;
  absl::StatusOr<KeyObjects> Objects(const std::string& fingerprint,
                                     const Attrs& priv_template,
                                     const Attrs& pub_template);
  // FindByUri looks up token objects named by an RFC 7512 URI (object=,
  // id=, token=), cached like imports. kUnimplemented when the URI names
  // another token or nothing is found. With a PIN (configured, else the
  // URI's `pin-value` or `pin-source`: a file, `file:` URI or path; first
  // line) the token is logged in first (EnsureLogin; a URI's PIN is kept
  // for a forked child's login; never logged). A configured PIN the token
  // refuses is kUnavailable, a URI's kInvalidArgument.
  // When the URI names the private key only, the public key object with the
  // same CKA_ID (else the same CKA_LABEL) is found as well.
  absl::StatusOr<KeyObjects> FindByUri(const std::string& uri);
  // Forget drops a cache entry whose handles turned out stale.
  void Forget(const std::string& fingerprint);
  // GetAttribute reads one attribute of an object (two-call sizing).
  absl::StatusOr<std::vector<uint8_t>> GetAttribute(CK_OBJECT_HANDLE object,
                                                    CK_ATTRIBUTE_TYPE type);

  // LoginForUse logs in with the PIN in use (configured or from a URI)
  // when the token asks for a login (CKR_USER_NOT_LOGGED_IN) on an
  // operation; see EnsureLogin. kFailedPrecondition when there is no PIN.
  absl::Status LoginForUse() ABSL_LOCKS_EXCLUDED(mu_);
  bool has_pin() const;

  // logged_in is true once a user login succeeded (configured PIN, or a
  // URI's PIN). Without it, imported private keys are public session
  // objects (CKA_PRIVATE false: PKCS#11 lets a public session create only
  // those), still sensitive and never extractable, and visible only inside
  // this process like every session object.
  bool logged_in() const { return logged_in_.load(std::memory_order_acquire); }

  uint64_t objects_created() const {
    return objects_created_.load(std::memory_order_relaxed);
  }
  uint64_t reinitialisations() const {
    return reinits_.load(std::memory_order_relaxed);
  }

 private:
  Token() = default;
  // LoginWithUriPin logs in with the configured PIN, else with the PIN of
  // a URI's query (see FindByUri); nothing when there is neither.
  absl::Status LoginWithUriPin(absl::string_view query)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // EnsureLogin logs the token in with `pin`, at most once per process and
  // never with a PIN the token refused before: a PIN refused in this
  // process (remembered in memory) or in an earlier one (a marker file in
  // the state directory, keyed by the token's serial number, holding a
  // salted hash of the PIN) is not tried again, and the call fails with a
  // message saying so. A marker for another PIN value is removed (the PIN
  // source changed). The marker is read, the login tried and the marker
  // written under an flock, so processes starting together spend one
  // attempt between them. CKF_USER_PIN_LOCKED: not tried. Failures:
  // kUnavailable, or kInvalidArgument when the PIN came from a URI.
  absl::Status EnsureLogin(const std::string& pin, bool from_uri)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Blocked is the "refused earlier" error for `refused`.
  absl::Status Blocked(const PinHash& refused, bool from_uri) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // StateDir resolves the marker directory once; empty when none is
  // writable (logged once; markers then live in memory only).
  const std::string& StateDir() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // LoginState is Describe's `login=` field.
  std::string LoginState() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Log(int level, const std::string& message) const;
  // FindOne returns the first object matching `attrs` on the anchor
  // session, or CK_INVALID_HANDLE.
  absl::StatusOr<CK_OBJECT_HANDLE> FindOne(const Attrs& attrs)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Start runs C_Initialize, finds the slot, opens the anchor session and
  // logs in. Called at Create and in a forked child.
  absl::Status Start() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CheckFork() ABSL_LOCKS_EXCLUDED(mu_);
  // ReportForkedFailure tells the operator, once per process, that a
  // forked child cannot restart the token (CheckFork).
  void ReportForkedFailure(const absl::Status& status) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status FindSlot() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // FindSlotOnce is one pass over the slot list; *saw_uninitialised says
  // whether a present token was not initialised.
  absl::Status FindSlotOnce(bool* saw_uninitialised)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReadMechanisms() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Touch(const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Insert(const std::string& key, KeyObjects objects)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  TokenConfig config_;
  OSSL_LIB_CTX* libctx_ = nullptr;
  const accelcrypt_host* host_ = nullptr;
  void* dl_ = nullptr;
  CK_FUNCTION_LIST* fl_ = nullptr;
  bool we_initialised_ = false;
  std::string label_, model_;
  TokenQuirks quirks_;      // set by FindSlot
  TokenIdentity identity_;  // set by FindSlot

  mutable absl::Mutex mu_;
  pid_t pid_ ABSL_GUARDED_BY(mu_) = 0;
  CK_SLOT_ID slot_ ABSL_GUARDED_BY(mu_) = 0;
  CK_SESSION_HANDLE anchor_ ABSL_GUARDED_BY(mu_) = CK_INVALID_HANDLE;
  std::vector<CK_SESSION_HANDLE> idle_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> generation_{1};
  std::map<CK_MECHANISM_TYPE, MechInfo> mechs_;
  // LRU: most recently used at the front.
  std::list<std::string> lru_ ABSL_GUARDED_BY(mu_);
  struct Entry {
    KeyObjects objects;
    std::list<std::string>::iterator lru;
  };
  std::map<std::string, Entry> cache_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> logged_in_{false};
  bool pin_from_uri_ ABSL_GUARDED_BY(mu_) = false;
  // PINs this token refused, in this process or (read from a marker) an
  // earlier one.
  std::vector<PinHash> refused_ ABSL_GUARDED_BY(mu_);
  mutable bool state_dir_resolved_ ABSL_GUARDED_BY(mu_) = false;
  mutable std::string state_dir_ ABSL_GUARDED_BY(mu_);
  // Describe reads the marker once per process (the KDF is slow).
  mutable bool describe_checked_ ABSL_GUARDED_BY(mu_) = false;
  mutable std::optional<PinHash> describe_block_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> objects_created_{0};
  std::atomic<uint64_t> reinits_{0};
  std::atomic<uint64_t> sessions_opened_{0};
};

}  // namespace accelcrypt::pkcs11_client

#endif  // ACCELCRYPT_BACKENDS_PKCS11_TOKEN_H_
