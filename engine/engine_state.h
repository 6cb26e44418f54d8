// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_ENGINE_ENGINE_STATE_H_
#define ACCELCRYPT_ENGINE_ENGINE_STATE_H_

#include <openssl/dsa.h>
#include <openssl/engine.h>
#include <openssl/rsa.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/config.h"
#include "core/core.h"
#include "core/pkey.h"

namespace accelcrypt::engine {

// EngineState is one ENGINE instance's state: the settings gathered from
// ctrl commands before init, the Core created at init and destroyed at
// finish, and the legacy method tables whose callbacks route through it.
// Created by bind, freed by the ENGINE's destroy function.
struct EngineState {
  // Settings from ctrl commands, merged over Config::FromEnvironment() at
  // init. Guarded by mu.
  Config ctrl_config;
  std::mutex mu;
  // The Core, set by init and reset by finish. Readers on the operation
  // paths load it without the lock: OpenSSL holds a functional reference
  // (which keeps finish from running) for every key or context using it.
  std::atomic<Core*> core{nullptr};
  std::unique_ptr<Core> owned_core;

  RSA_METHOD* rsa_method = nullptr;
  DSA_METHOD* dsa_method = nullptr;

  // The ENGINEs sharing this state: the engine and its alias (ALIAS), each
  // giving its reference back in its destroy function.
  std::atomic<int> refs{1};
  // How many of them are initialised (init/finish), guarded by mu: the
  // Core lives while any is.
  int inits = 0;
  // The alias's id (the ENGINE keeps a pointer to it); empty when none.
  std::string alias_id;
};

// The library code of our error strings (ERR_get_next_error_library), set
// once at the first bind.
int ErrorLibrary();

// Reasons we push onto OpenSSL's error queue.
enum Reason : int {
  kReasonInitFailed = 100,
  kReasonBadCtrl = 101,
  kReasonOperationFailed = 102,
  kReasonKeyLoad = 103,
};

// StateOfEngine returns the state bind attached to `e`, or null.
EngineState* StateOfEngine(ENGINE* e);

// RaiseError pushes `reason` with `status`'s message onto the error queue.
void RaiseError(Reason reason, const absl::Status& status);

// InsideEngine is true while this thread runs a routed operation of ours:
// a backend that calls libcrypto on a key whose method is ours (the
// software backend's default-provider keys pick up the default engine)
// must get OpenSSL's own implementation, not a second trip through the
// router.
bool InsideEngine();
class EngineCallGuard {
 public:
  EngineCallGuard();
  ~EngineCallGuard();
  EngineCallGuard(const EngineCallGuard&) = delete;
  EngineCallGuard& operator=(const EngineCallGuard&) = delete;

 private:
  bool previous_;
};

// ActiveCore is the Core of the most recently initialised engine instance
// (an EVP_MD has no per-method data to find its own); null
// when none is initialised.
Core* ActiveCore();
void SetActiveCore(Core* core);

// RSA and DSA method tables (pkey_methods.cc): built at bind, freed at
// destroy.
absl::Status BuildPkeyMethods(EngineState* state);
void FreePkeyMethods(EngineState* state);
// RegisterPkeyExData allocates the RSA and DSA ex_data indexes once.
absl::Status RegisterPkeyExData();
// AttachTokenOps gives an RSA or DSA object made by the key loader (public
// parts only, the engine's method) the routed operations of its token key
// (`ops`, built by the router over a `pkcs11:` reference): its private
// operations go to the token, and never to OpenSSL's own code (which has no
// private key to use). The object owns them from here on.
absl::Status AttachTokenOps(RSA* rsa, Core* core,
                            std::unique_ptr<PublicKeyOps> ops);
absl::Status AttachTokenOps(DSA* dsa, Core* core,
                            std::unique_ptr<PublicKeyOps> ops);

// Key loading (key_loader.cc): ENGINE_set_load_privkey_function and
// ENGINE_set_load_pubkey_function callbacks for RFC 7512 `pkcs11:` URIs.
EVP_PKEY* LoadPrivateKey(ENGINE* e, const char* key_id, UI_METHOD* ui,
                         void* callback_data);
EVP_PKEY* LoadPublicKey(ENGINE* e, const char* key_id, UI_METHOD* ui,
                        void* callback_data);

// The ENGINE_set_digests callback (digests.cc). Its EVP_MDs are built once
// per process and live as long as it (the object is never unloaded).
int DigestSelector(ENGINE* e, const EVP_MD** md, const int** nids, int nid);

}  // namespace accelcrypt::engine

#endif  // ACCELCRYPT_ENGINE_ENGINE_STATE_H_
