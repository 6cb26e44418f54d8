// SPDX-License-Identifier: Apache-2.0
// Token (token.h): the backend's configuration, loading the module and
// sharing its C_Initialize, the slot, the session pool, fork detection,
// the lazy login with its refused-PIN memory, and Describe. Key objects
// (the import cache, URI lookup, attributes) are in token_objects.cc.
#include "backends/pkcs11/token.h"

#include <dlfcn.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "backends/pkcs11/ck_status.h"
#include "backends/pkcs11/pin_marker.h"

namespace accelcrypt::pkcs11_client {
namespace {

// The mechanisms this backend can use (PKCS#11 v2.40 section 2.1).
constexpr CK_MECHANISM_TYPE kUsed[] = {
    CKM_RSA_PKCS, CKM_RSA_PKCS_PSS, CKM_RSA_PKCS_OAEP, CKM_RSA_X_509, CKM_DSA,
};

constexpr std::pair<const char*, CK_MECHANISM_TYPE> kMechNames[] = {
    {"CKM_RSA_PKCS", CKM_RSA_PKCS},
    {"CKM_RSA_PKCS_PSS", CKM_RSA_PKCS_PSS},
    {"CKM_RSA_PKCS_OAEP", CKM_RSA_PKCS_OAEP},
    {"CKM_RSA_X_509", CKM_RSA_X_509},
    {"CKM_DSA", CKM_DSA},
};

// Module initialisations per process: several Token objects (several
// cores in one process) may share one dlopen'ed module; C_Finalize only
// when the last one that initialised it goes. Plain zero-initialised
// statics (no constructor or destructor runs, nothing to leak when this
// object is unloaded); a process uses a handful of modules at most.
// The module's C_Initialize runs outside g_module_mu: a module that uses
// OpenSSL may come back into accelcrypt from it (see TokenCall). While one
// thread runs it, `initialising` is set (with that thread); other threads
// wanting the module wait for the outcome, the same thread is refused.
struct ModuleUse {
  CK_FUNCTION_LIST* fl;
  pid_t pid;
  int users;
  bool ours;  // we called C_Initialize (not someone else)
  bool initialising;
  pthread_t initialiser;
};
ABSL_CONST_INIT absl::Mutex g_module_mu(absl::kConstInit);
ModuleUse g_module_uses[16] ABSL_GUARDED_BY(g_module_mu);

// Depth of TokenCall scopes on this thread (initial-exec would be wrong in
// a dlopen'ed object: the default model).
thread_local int t_token_calls = 0;

// Process exit. A PKCS#11 module written in C++ (SoftHSMv2) registers its
// static destructors when it is dlopen'ed; OpenSSL's own exit handler, which
// unloads the provider and so tears this backend down, was registered
// earlier and therefore runs later, when the module's objects are already
// gone: any C_* call then crashes. An exit handler registered right after
// the module's dlopen runs before the module's destructors and records that
// the process is exiting; teardown then leaves the module alone (the
// process is going away: the OS reclaims sessions and memory).
std::atomic<bool> g_exiting{false};
std::atomic<bool> g_exit_hook{false};
void MarkExiting() { g_exiting.store(true, std::memory_order_relaxed); }

// UseOf returns the entry for `fl` (creating it), or nullptr when full.
ModuleUse* UseOf(CK_FUNCTION_LIST* fl)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(g_module_mu) {
  ModuleUse* free_slot = nullptr;
  for (ModuleUse& u : g_module_uses) {
    if (u.fl == fl) return &u;
    if (u.fl == nullptr && free_slot == nullptr) free_slot = &u;
  }
  if (free_slot != nullptr) *free_slot = ModuleUse{fl, 0, 0, false, false, {}};
  return free_slot;
}

std::string Padded(const unsigned char* field, size_t len) {
  std::string s(reinterpret_cast<const char*>(field), len);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\0')) s.pop_back();
  return s;
}

const char* Get(const accelcrypt_host* host, const char* key) {
  if (host == nullptr || host->config_get == nullptr) return nullptr;
  const char* v = host->config_get(host->host_ctx, key);
  return (v != nullptr && *v != '\0') ? v : nullptr;
}

std::string Resolved(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) return path;
  return buf;
}

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// HostIsPkcs11Module: the object the core runs in exports
// C_GetFunctionList itself (the symbol found in it is defined by it, not
// by a library it links).
bool HostIsPkcs11Module(const char* host_object) {
  void* handle = dlopen(host_object, RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return false;
  void* sym = dlsym(handle, "C_GetFunctionList");
  Dl_info info{};
  const bool defined_here = sym != nullptr && dladdr(sym, &info) != 0 &&
                            info.dli_fname != nullptr &&
                            Resolved(info.dli_fname) == host_object;
  dlclose(handle);
  return defined_here;
}

// IsP11KitForwarder: p11-kit-proxy.so (a link to libp11-kit.so.0) forwards
// to every registered module, p11-kit-client.so to a server that may load
// any of them.
bool IsP11KitForwarder(const std::string& path) {
  const std::string name = BaseName(path);
  return absl::StartsWith(name, "p11-kit-proxy") ||
         absl::StartsWith(name, "p11-kit-client") ||
         absl::StartsWith(name, "libp11-kit");
}

// RefuseLoop keeps this backend from loading the object that hosts its
// core (a PKCS#11 module configured with a client backend on itself), or,
// inside a PKCS#11 module, a p11-kit forwarder, which may lead back to it:
// either would recurse into the module, or deadlock in its C_Initialize.
// Whether the host is a PKCS#11 module is asked only when it matters.
absl::Status RefuseLoop(const accelcrypt_host* host,
                        const std::string& module) {
  if (host->struct_size <
          offsetof(accelcrypt_host, host_object) + sizeof(host->host_object) ||
      host->host_object == nullptr) {
    return absl::OkStatus();  // an older core: it cannot say where it runs
  }
  const std::string self = host->host_object;
  const std::string resolved = Resolved(module);
  std::string reason;
  if (resolved == self) {
    reason =
        HostIsPkcs11Module(self.c_str())
            ? absl::StrFormat(
                  "pkcs11.module = %s is this PKCS#11 module itself", module)
            : absl::StrFormat(
                  "pkcs11.module = %s is the object this backend's core "
                  "runs in",
                  module);
  } else if ((IsP11KitForwarder(module) || IsP11KitForwarder(resolved)) &&
             HostIsPkcs11Module(self.c_str())) {
    reason = absl::StrFormat(
        "pkcs11.module = %s is a p11-kit forwarder that may lead back into "
        "this PKCS#11 module",
        module);
  }
  if (reason.empty()) return absl::OkStatus();
  // A configuration mistake, not a token that may come later: never
  // retried (FailedPrecondition, not Unavailable).
  return absl::FailedPreconditionError(
      absl::StrCat(reason, ": PKCS#11 client backend disabled"));
}

}  // namespace

TokenCall::TokenCall() { ++t_token_calls; }
TokenCall::~TokenCall() { --t_token_calls; }
bool TokenCall::Nested() { return t_token_calls > 0; }

TokenConfig::~TokenConfig() {
  if (!pin.empty()) OPENSSL_cleanse(pin.data(), pin.size());
}

absl::StatusOr<TokenConfig> ReadConfig(const accelcrypt_host* host) {
  TokenConfig c;
  const char* module = Get(host, "module");
  if (module == nullptr) {
    return absl::UnavailableError(
        "pkcs11: no module configured (set pkcs11.module)");
  }
  c.module = module;
  if (absl::Status st = RefuseLoop(host, c.module); !st.ok()) {
    if (host->log != nullptr) {
      host->log(host->host_ctx, 1, std::string(st.message()).c_str());
    }
    return st;
  }
  if (const char* label = Get(host, "token_label")) c.token_label = label;
  if (const char* slot = Get(host, "slot")) {
    unsigned long v = 0;
    if (!absl::SimpleAtoi(slot, &v)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("pkcs11: slot = %s is not a number", slot));
    }
    c.has_slot = true;
    c.slot = v;
  }
  if (Get(host, "pin") != nullptr) {
    return absl::InvalidArgumentError(
        "pkcs11: a PIN in the configuration is refused; use pin_file or "
        "pin_env");
  }
  if (const char* file = Get(host, "pin_file")) {
    std::ifstream in(file);
    if (!in) {
      return absl::UnavailableError(
          absl::StrFormat("pkcs11: cannot read pin_file %s", file));
    }
    std::getline(in, c.pin);
    while (!c.pin.empty() && (c.pin.back() == '\r' || c.pin.back() == '\n')) {
      c.pin.pop_back();
    }
    c.pin_source = absl::StrFormat("pin_file %s", file);
  } else if (const char* env = Get(host, "pin_env")) {
    const char* v = std::getenv(env);
    if (v == nullptr) {
      return absl::UnavailableError(
          absl::StrFormat("pkcs11: pin_env names %s, which is not set", env));
    }
    c.pin = v;
    c.pin_source = absl::StrFormat("pin_env %s", env);
  }
  if (const char* dir = Get(host, "pin_state_dir")) c.pin_state_dir = dir;
  if (const char* hide = Get(host, "hide_mechanisms")) {
    for (absl::string_view name :
         absl::StrSplit(hide, absl::ByAnyChar(", "), absl::SkipEmpty())) {
      bool known = false;
      for (const auto& [n, m] : kMechNames) {
        if (name == n) {
          c.hidden.push_back(m);
          known = true;
        }
      }
      if (!known) {
        return absl::InvalidArgumentError(
            absl::StrFormat("pkcs11: hide_mechanisms: unknown mechanism %s",
                            std::string(name)));
      }
    }
  }
  for (auto [key, out] : {std::pair{"rsa_max_key_bits", &c.rsa_max_bits},
                          std::pair{"dsa_max_key_bits", &c.dsa_max_bits}}) {
    if (const char* v = Get(host, key)) {
      if (!absl::SimpleAtoi(v, out) || *out < 1024) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "pkcs11: %s = %s must be a number of bits >= 1024", key, v));
      }
    }
  }
  if (const char* n = Get(host, "key_cache_size")) {
    size_t v = 0;
    if (!absl::SimpleAtoi(n, &v) || v == 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "pkcs11: key_cache_size = %s must be a positive number", n));
    }
    c.key_cache_size = v;
  }
  return c;
}

absl::StatusOr<std::unique_ptr<Token>> Token::Create(
    const TokenConfig& config, OSSL_LIB_CTX* libctx,
    const accelcrypt_host* host) {
  std::unique_ptr<Token> t(new Token());
  t->config_ = config;
  t->libctx_ = libctx;
  t->host_ = host;
  t->dl_ = dlopen(t->config_.module.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (t->dl_ == nullptr) {
    const char* why = dlerror();
    return absl::UnavailableError(
        absl::StrFormat("pkcs11: cannot load module %s: %s", t->config_.module,
                        why ? why : "?"));
  }
  if (!g_exit_hook.exchange(true)) std::atexit(MarkExiting);
  auto get_list = reinterpret_cast<CK_RV (*)(CK_FUNCTION_LIST_PTR_PTR)>(
      dlsym(t->dl_, "C_GetFunctionList"));
  if (get_list == nullptr) {
    return absl::UnavailableError(absl::StrFormat(
        "pkcs11: %s is not a PKCS#11 module (no C_GetFunctionList)",
        t->config_.module));
  }
  CK_RV rv = get_list(&t->fl_);
  if (rv != CKR_OK || t->fl_ == nullptr) {
    return absl::UnavailableError(
        absl::StrFormat("pkcs11: C_GetFunctionList of %s failed: %s",
                        t->config_.module, CkRvName(rv)));
  }
  absl::MutexLock lock(&t->mu_);
  absl::Status st = t->Start();
  if (!st.ok()) return st;
  t->ReadMechanisms();
  return t;
}

absl::Status Token::Start() {
  CK_C_INITIALIZE_ARGS args{};
  args.flags = CKF_OS_LOCKING_OK;
  bool initialise = false, forked = false;
  {
    absl::MutexLock lock(&g_module_mu);
    ModuleUse* slot = UseOf(fl_);
    if (slot == nullptr) {
      return absl::ResourceExhaustedError("pkcs11: too many PKCS#11 modules");
    }
    ModuleUse& use = *slot;
    forked = use.pid != 0 && use.pid != getpid();
    // The parent's users (and a start the parent had under way) are gone.
    if (forked) use = ModuleUse{fl_, 0, 0, false, false, {}};
    if (use.initialising && pthread_equal(use.initialiser, pthread_self())) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "pkcs11: %s is being initialised on this thread (its "
          "C_Initialize came back into accelcrypt); not started here",
          config_.module));
    }
    g_module_mu.Await(absl::Condition(
        +[](ModuleUse* u) { return !u->initialising; }, &use));
    if (use.users == 0) {
      use.initialising = true;
      use.initialiser = pthread_self();
      initialise = true;
    } else {
      if (!we_initialised_ || pid_ != getpid()) ++use.users;
      we_initialised_ = true;
    }
  }
  if (initialise) {
    CK_RV rv = CKR_OK;
    {
      TokenCall call;
      rv = fl_->C_Initialize(&args);
      if (rv == CKR_CRYPTOKI_ALREADY_INITIALIZED && forked) {
        // A forked child whose module kept the parent's state: start over
        // (PKCS#11 v2.40 section 5.4).
        fl_->C_Finalize(nullptr);
        rv = fl_->C_Initialize(&args);
      }
    }
    absl::MutexLock lock(&g_module_mu);
    ModuleUse* use = UseOf(fl_);
    use->initialising = false;
    if (rv != CKR_OK && rv != CKR_CRYPTOKI_ALREADY_INITIALIZED) {
      return absl::UnavailableError(
          absl::StrFormat("pkcs11: C_Initialize of %s failed: %s",
                          config_.module, CkRvName(rv)));
    }
    use->ours = rv == CKR_OK;
    use->pid = getpid();
    if (!we_initialised_ || pid_ != getpid()) ++use->users;
    we_initialised_ = true;
  }
  pid_ = getpid();
  absl::Status st = FindSlot();
  if (!st.ok()) return st;
  CK_RV rv = fl_->C_OpenSession(slot_, CKF_SERIAL_SESSION | CKF_RW_SESSION,
                                nullptr, nullptr, &anchor_);
  if (rv != CKR_OK) {
    return absl::UnavailableError(
        absl::StrFormat("pkcs11: C_OpenSession on token '%s' failed: %s",
                        label_, CkRvName(rv)));
  }
  sessions_opened_.fetch_add(1, std::memory_order_relaxed);
  // No login here: EnsureLogin runs when the token's private objects are
  // first needed (a wrong PIN configured system-wide would otherwise spend
  // one attempt in every process that loads the provider, and lock the
  // token after a few `openssl` runs).
  return absl::OkStatus();
}

absl::Status Token::FindSlot() {
  // SoftHSMv2 rewrites its token file when it refuses a login (the PIN
  // count flags), and a process reading the token at that moment sees it
  // uninitialised; its client backend would then stay unloaded for the
  // process's life. When the wanted token is not found but a present one
  // is not initialised, the list is read again, 5 ms apart, 3 more times.
  // A token that is absent (or another label) does not wait.
  for (int attempt = 0;; ++attempt) {
    bool saw_uninitialised = false;
    absl::Status st = FindSlotOnce(&saw_uninitialised);
    if (st.ok() || !saw_uninitialised || attempt == 3) return st;
    struct timespec pause = {0, 5 * 1000 * 1000};
    nanosleep(&pause, nullptr);
  }
}

absl::Status Token::FindSlotOnce(bool* saw_uninitialised) {
  CK_ULONG n = 0;
  CK_RV rv = fl_->C_GetSlotList(CK_TRUE, nullptr, &n);
  std::vector<CK_SLOT_ID> slots(n);
  if (rv == CKR_OK && n > 0) rv = fl_->C_GetSlotList(CK_TRUE, slots.data(), &n);
  if (rv != CKR_OK) {
    return absl::UnavailableError(
        absl::StrFormat("pkcs11: C_GetSlotList failed: %s", CkRvName(rv)));
  }
  slots.resize(n);
  for (CK_SLOT_ID s : slots) {
    CK_TOKEN_INFO info{};
    if (fl_->C_GetTokenInfo(s, &info) != CKR_OK) continue;
    if (!(info.flags & CKF_TOKEN_INITIALIZED)) {
      *saw_uninitialised = true;
      continue;
    }
    std::string label = Padded(info.label, sizeof(info.label));
    bool match = config_.has_slot               ? s == config_.slot
                 : !config_.token_label.empty() ? label == config_.token_label
                                                : true;
    if (!match) continue;
    slot_ = s;
    label_ = label;
    identity_ =
        TokenIdentity{Padded(info.serialNumber, sizeof(info.serialNumber)),
                      Padded(info.manufacturerID, sizeof(info.manufacturerID)),
                      Padded(info.model, sizeof(info.model)), label};
    model_ = absl::StrFormat(
        "%s %s", Padded(info.manufacturerID, sizeof(info.manufacturerID)),
        Padded(info.model, sizeof(info.model)));
    quirks_ = QuirksFor(identity_.manufacturer, identity_.model);
    return absl::OkStatus();
  }
  return absl::UnavailableError(absl::StrFormat(
      "pkcs11: no initialised token %s in %s",
      config_.has_slot ? absl::StrFormat("in slot %d", config_.slot)
      : config_.token_label.empty()
          ? std::string()
          : absl::StrFormat("labelled '%s'", config_.token_label),
      config_.module));
}

void Token::ReadMechanisms() {
  CK_ULONG n = 0;
  if (fl_->C_GetMechanismList(slot_, nullptr, &n) != CKR_OK) return;
  std::vector<CK_MECHANISM_TYPE> list(n);
  if (fl_->C_GetMechanismList(slot_, list.data(), &n) != CKR_OK) return;
  list.resize(n);
  for (CK_MECHANISM_TYPE m : kUsed) {
    if (std::find(list.begin(), list.end(), m) == list.end()) continue;
    if (std::find(config_.hidden.begin(), config_.hidden.end(), m) !=
        config_.hidden.end()) {
      continue;
    }
    CK_MECHANISM_INFO info{};
    if (fl_->C_GetMechanismInfo(slot_, m, &info) != CKR_OK) continue;
    MechInfo mi;
    mi.present = true;
    mi.flags = info.flags;
    mi.min_bits = info.ulMinKeySize;
    mi.max_bits = info.ulMaxKeySize;
    // Some tokens under-report (SoftHSMv2 lists DSA up to 1024 bits and
    // signs 2048); the operator may raise the bound, and the registration
    // self-test then proves the larger size before it is offered.
    size_t raise = m == CKM_DSA ? config_.dsa_max_bits : config_.rsa_max_bits;
    if (raise != 0) mi.max_bits = std::max<CK_ULONG>(mi.max_bits, raise);
    mechs_[m] = mi;
  }
}

Token::~Token() {
  if (g_exiting.load(std::memory_order_relaxed)) return;  // see MarkExiting
  if (fl_ != nullptr) {
    absl::MutexLock lock(&mu_);
    if (pid_ == getpid()) {
      for (CK_SESSION_HANDLE s : idle_) fl_->C_CloseSession(s);
      // Closing the anchor destroys the imported session objects and ends
      // the login (PKCS#11 v2.40 section 5.6).
      if (anchor_ != CK_INVALID_HANDLE) fl_->C_CloseSession(anchor_);
      if (we_initialised_) {
        absl::MutexLock module_lock(&g_module_mu);
        ModuleUse* use = UseOf(fl_);
        if (use != nullptr && use->pid == getpid() && --use->users == 0) {
          if (use->ours) fl_->C_Finalize(nullptr);
          *use = ModuleUse{};
        }
      }
    }
  }
  if (dl_ != nullptr) dlclose(dl_);
}

const MechInfo& Token::mech(CK_MECHANISM_TYPE m) const {
  static const MechInfo kNone;
  auto it = mechs_.find(m);
  return it == mechs_.end() ? kNone : it->second;
}

std::string Token::Describe() const {
  absl::MutexLock lock(&mu_);
  return absl::StrFormat(
      "PKCS#11 client: token '%s' (%s, serial %s) via %s; %s; %s"
      "objects_created=%d cached_keys=%d/%d sessions_opened=%d "
      "idle_sessions=%d reinit=%d",
      label_, model_, identity_.serial, config_.module, LoginState(),
      quirks_.names.empty() ? "" : "quirks=" + quirks_.names + "; ",
      objects_created(), cache_.size(), config_.key_cache_size,
      sessions_opened_.load(), idle_.size(), reinitialisations());
}

absl::Status Token::CheckFork() {
  // Caller holds no lock; takes mu_.
  absl::MutexLock lock(&mu_);
  if (pid_ == getpid()) return absl::OkStatus();
  // A forked child: the parent's sessions, login and object handles are not
  // ours (PKCS#11 v2.40 section 5.4: the child must call C_Initialize).
  // They are forgotten, never closed or reused.
  idle_.clear();
  anchor_ = CK_INVALID_HANDLE;
  cache_.clear();
  lru_.clear();
  // The login belonged to the parent; the child logs in again when it
  // needs to (the refused PINs stay remembered).
  logged_in_.store(false, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_relaxed);
  reinits_.fetch_add(1, std::memory_order_relaxed);
  absl::Status st = Start();
  if (!st.ok()) ReportForkedFailure(st);
  return st;
}

void Token::ReportForkedFailure(const absl::Status& status) const {
  // A server's worker (forked, often another user, often without the
  // parent's environment) that cannot use the token its parent used: its
  // operations fall back to the next backend (each counted as an error in
  // the statistics); the operator hears it once per process, on stderr
  // (the server's error log) and in syslog. No PIN is in `status`.
  static std::atomic<pid_t> reported{0};
  const pid_t pid = getpid();
  if (reported.exchange(pid) == pid) return;
  const std::string line = absl::StrFormat(
      "accelcrypt: pkcs11: token '%s' cannot be used in this process (pid "
      "%d, uid %d, forked from the process that started it): %s; RSA/DSA "
      "operations go to the next backend",
      label_, pid, geteuid(), status.message());
  std::fprintf(stderr, "%s\n", line.c_str());
  syslog(LOG_ERR, "%s", line.c_str());
}

absl::StatusOr<Token::Session> Token::Acquire() {
  {
    absl::MutexLock lock(&mu_);
    if (pid_ == getpid() && !idle_.empty()) {
      Session s{idle_.back(), generation_.load(std::memory_order_relaxed)};
      idle_.pop_back();
      return s;
    }
  }
  absl::Status st = CheckFork();
  if (!st.ok()) return st;
  CK_SLOT_ID slot;
  {
    absl::MutexLock lock(&mu_);
    if (!idle_.empty()) {
      Session s{idle_.back(), generation_.load(std::memory_order_relaxed)};
      idle_.pop_back();
      return s;
    }
    slot = slot_;
  }
  Session s;
  s.generation = generation_.load(std::memory_order_relaxed);
  CK_RV rv =
      fl_->C_OpenSession(slot, CKF_SERIAL_SESSION, nullptr, nullptr, &s.handle);
  if (rv != CKR_OK) return FromCkRv(rv, "C_OpenSession");
  sessions_opened_.fetch_add(1, std::memory_order_relaxed);
  return s;
}

void Token::Release(Session session, bool broken) {
  absl::MutexLock lock(&mu_);
  if (session.generation != generation_.load(std::memory_order_relaxed) ||
      pid_ != getpid()) {
    return;  // from before a fork: not ours to close
  }
  if (broken) {
    fl_->C_CloseSession(session.handle);
    return;
  }
  idle_.push_back(session.handle);
}

bool Token::has_pin() const {
  absl::MutexLock lock(&mu_);
  return !config_.pin.empty();
}

absl::Status Token::LoginForUse() {
  absl::MutexLock lock(&mu_);
  if (config_.pin.empty()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "pkcs11: token '%s' needs a login and no PIN is configured (set "
        "pkcs11.pin_file or pkcs11.pin_env)",
        label_));
  }
  return EnsureLogin(config_.pin, pin_from_uri_);
}

void Token::Log(int level, const std::string& message) const {
  if (host_ != nullptr && host_->log != nullptr) {
    host_->log(host_->host_ctx, level, message.c_str());
  }
}

const std::string& Token::StateDir() const {
  if (!state_dir_resolved_) {
    state_dir_resolved_ = true;
    absl::StatusOr<std::string> dir = ResolveStateDir(config_.pin_state_dir);
    if (dir.ok()) {
      state_dir_ = *dir;
    } else {
      Log(1, absl::StrFormat(
                 "pkcs11: %s; a PIN the token refuses is remembered in this "
                 "process only",
                 dir.status().message()));
    }
  }
  return state_dir_;
}

absl::Status Token::Blocked(const PinHash& refused, bool from_uri) const {
  std::string msg = absl::StrFormat(
      "pkcs11: PIN refused earlier by token '%s' (serial %s: %s%s%s); not "
      "retried: fix %s, or run `accelcrypt pin-reset --token %s` to try "
      "this PIN again",
      label_, identity_.serial, refused.result,
      refused.time.empty() ? "" : " at ", refused.time,
      from_uri ? "the URI's pin-value/pin-source"
               : (config_.pin_source.empty() ? std::string("pin_file/pin_env")
                                             : config_.pin_source),
      identity_.serial);
  return from_uri ? absl::InvalidArgumentError(msg)
                  : absl::UnavailableError(msg);
}

absl::Status Token::EnsureLogin(const std::string& pin, bool from_uri) {
  if (logged_in() || pin.empty()) return absl::OkStatus();
  for (const PinHash& r : refused_) {
    if (Matches(libctx_, identity_, pin, r)) return Blocked(r, from_uri);
  }
  const std::string& dir = StateDir();
  std::string path;
  std::optional<MarkerLock> lock;
  if (!dir.empty()) {
    path = MarkerPath(dir, identity_);
    lock.emplace(path);
    if (std::optional<PinHash> marker = ReadMarker(path)) {
      if (Matches(libctx_, identity_, pin, *marker)) {
        refused_.push_back(*marker);
        return Blocked(*marker, from_uri);
      }
      // The PIN source's value changed: the old refusal says nothing about
      // this PIN.
      unlink(path.c_str());
      Log(2, absl::StrFormat("pkcs11: %s is for another PIN; removed", path));
    }
  }
  CK_TOKEN_INFO info{};
  if (fl_->C_GetTokenInfo(slot_, &info) == CKR_OK &&
      (info.flags & CKF_USER_PIN_LOCKED)) {
    return absl::UnavailableError(absl::StrFormat(
        "pkcs11: the user PIN of token '%s' (serial %s) is locked "
        "(CKF_USER_PIN_LOCKED); no login tried: unlock it with the SO PIN",
        label_, identity_.serial));
  }
  std::string copy = pin;  // C_Login takes a non-const pointer
  CK_RV rv =
      fl_->C_Login(anchor_, CKU_USER,
                   reinterpret_cast<CK_UTF8CHAR*>(copy.data()), copy.size());
  OPENSSL_cleanse(copy.data(), copy.size());
  if (rv == CKR_OK || rv == CKR_USER_ALREADY_LOGGED_IN) {
    logged_in_.store(true, std::memory_order_release);
    describe_checked_ = false;
    return absl::OkStatus();
  }
  if (rv != CKR_PIN_INCORRECT && rv != CKR_PIN_LEN_RANGE &&
      rv != CKR_PIN_LOCKED) {
    absl::Status st = FromCkRv(rv, "C_Login");
    return absl::Status(
        from_uri ? absl::StatusCode::kInvalidArgument : st.code(),
        absl::StrFormat("pkcs11: login to token '%s' failed: %s", label_,
                        CkRvName(rv)));
  }
  std::string where = "in memory only";
  absl::StatusOr<PinHash> refused = HashPin(libctx_, identity_, pin);
  if (refused.ok()) {
    refused->result = CkRvName(rv);
    refused->time = UtcNow();
    refused_.push_back(*refused);
    describe_checked_ = false;
    if (!path.empty()) {
      absl::Status written = WriteMarker(path, identity_, *refused);
      if (written.ok()) {
        where = "marker " + path;
      } else {
        Log(1, absl::StrFormat("pkcs11: %s", written.message()));
      }
    }
  }
  std::string msg = absl::StrFormat(
      "pkcs11: login to token '%s' (serial %s) with %s failed: %s; this PIN "
      "will not be tried again (%s): fix %s, or run `accelcrypt pin-reset "
      "--token %s` to try it again",
      label_, identity_.serial,
      from_uri ? "the URI's PIN"
               : (config_.pin_source.empty() ? std::string("the PIN")
                                             : config_.pin_source),
      CkRvName(rv), where,
      from_uri ? "the URI's pin-value/pin-source" : "pin_file/pin_env",
      identity_.serial);
  Log(0, msg);
  return from_uri ? absl::InvalidArgumentError(msg)
                  : absl::UnavailableError(msg);
}

std::string Token::LoginState() const {
  if (logged_in()) return "login=done";
  if (config_.pin.empty()) return "login=none (no PIN source)";
  if (!describe_checked_) {
    describe_checked_ = true;
    describe_block_.reset();
    for (const PinHash& r : refused_) {
      if (Matches(libctx_, identity_, config_.pin, r)) describe_block_ = r;
    }
    const std::string& dir = StateDir();
    if (!describe_block_ && !dir.empty()) {
      std::optional<PinHash> marker = ReadMarker(MarkerPath(dir, identity_));
      if (marker && Matches(libctx_, identity_, config_.pin, *marker)) {
        describe_block_ = marker;
      }
    }
  }
  if (describe_block_) {
    return absl::StrFormat(
        "login=BLOCKED: %s",
        absl::StripPrefix(Blocked(*describe_block_, pin_from_uri_).message(),
                          "pkcs11: "));
  }
  return "login=on first use (lazy)";
}

}  // namespace accelcrypt::pkcs11_client
