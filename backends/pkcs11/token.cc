// SPDX-License-Identifier: Apache-2.0
#include "backends/pkcs11/token.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <openssl/crypto.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
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
struct ModuleUse {
  CK_FUNCTION_LIST* fl;
  pid_t pid;
  int users;
  bool ours;  // we called C_Initialize (not someone else)
};
ABSL_CONST_INIT absl::Mutex g_module_mu(absl::kConstInit);
ModuleUse g_module_uses[16] ABSL_GUARDED_BY(g_module_mu);

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
  if (free_slot != nullptr) *free_slot = ModuleUse{fl, 0, 0, false};
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

// PercentDecode decodes RFC 3986 %XX escapes (RFC 7512 section 2.3).
absl::StatusOr<std::string> PercentDecode(absl::string_view in) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out.push_back(in[i]);
      continue;
    }
    int v = 0;
    if (i + 2 >= in.size()) {
      return absl::InvalidArgumentError("pkcs11: bad %-escape in URI");
    }
    for (int k = 1; k <= 2; ++k) {
      char c = absl::ascii_tolower(in[i + k]);
      int d = (c >= '0' && c <= '9') ? c - '0'
              : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                                       : -1;
      if (d < 0) return absl::InvalidArgumentError("pkcs11: bad %-escape in URI");
      v = v * 16 + d;
    }
    out.push_back(static_cast<char>(v));
    i += 2;
  }
  return out;
}

}  // namespace

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
      return absl::UnavailableError(absl::StrFormat(
          "pkcs11: pin_env names %s, which is not set", env));
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
        return absl::InvalidArgumentError(absl::StrFormat(
            "pkcs11: hide_mechanisms: unknown mechanism %s",
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
    TokenConfig config, OSSL_LIB_CTX* libctx, const accelcrypt_host* host) {
  std::unique_ptr<Token> t(new Token());
  t->config_ = std::move(config);
  t->libctx_ = libctx;
  t->host_ = host;
  t->dl_ = dlopen(t->config_.module.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (t->dl_ == nullptr) {
    const char* why = dlerror();
    return absl::UnavailableError(absl::StrFormat(
        "pkcs11: cannot load module %s: %s", t->config_.module,
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
    return absl::UnavailableError(absl::StrFormat(
        "pkcs11: C_GetFunctionList of %s failed: %s", t->config_.module,
        CkRvName(rv)));
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
  CK_RV rv = CKR_OK;
  {
    absl::MutexLock lock(&g_module_mu);
    ModuleUse* slot = UseOf(fl_);
    if (slot == nullptr) {
      return absl::ResourceExhaustedError("pkcs11: too many PKCS#11 modules");
    }
    ModuleUse& use = *slot;
    const bool forked = use.pid != 0 && use.pid != getpid();
    if (forked) use = ModuleUse{fl_, 0, 0, false};  // parent's users gone
    if (use.users == 0) {
      rv = fl_->C_Initialize(&args);
      if (rv == CKR_CRYPTOKI_ALREADY_INITIALIZED && forked) {
        // A forked child whose module kept the parent's state: start over
        // (PKCS#11 v2.40 section 5.4).
        fl_->C_Finalize(nullptr);
        rv = fl_->C_Initialize(&args);
      }
      if (rv != CKR_OK && rv != CKR_CRYPTOKI_ALREADY_INITIALIZED) {
        return absl::UnavailableError(absl::StrFormat(
            "pkcs11: C_Initialize of %s failed: %s", config_.module,
            CkRvName(rv)));
      }
      use.ours = rv == CKR_OK;
      use.pid = getpid();
    }
    if (!we_initialised_ || pid_ != getpid()) ++use.users;
    we_initialised_ = true;
  }
  pid_ = getpid();
  absl::Status st = FindSlot();
  if (!st.ok()) return st;
  rv = fl_->C_OpenSession(slot_, CKF_SERIAL_SESSION | CKF_RW_SESSION, nullptr,
                          nullptr, &anchor_);
  if (rv != CKR_OK) {
    return absl::UnavailableError(absl::StrFormat(
        "pkcs11: C_OpenSession on token '%s' failed: %s", label_,
        CkRvName(rv)));
  }
  sessions_opened_.fetch_add(1, std::memory_order_relaxed);
  // No login here: EnsureLogin runs when the token's private objects are
  // first needed (a wrong PIN configured system-wide would otherwise spend
  // one attempt in every process that loads the provider, and lock the
  // token after a few `openssl` runs).
  return absl::OkStatus();
}

absl::Status Token::FindSlot() {
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
    if (!(info.flags & CKF_TOKEN_INITIALIZED)) continue;
    std::string label = Padded(info.label, sizeof(info.label));
    bool match = config_.has_slot ? s == config_.slot
                 : !config_.token_label.empty() ? label == config_.token_label
                                                : true;
    if (!match) continue;
    slot_ = s;
    label_ = label;
    identity_ = TokenIdentity{
        Padded(info.serialNumber, sizeof(info.serialNumber)),
        Padded(info.manufacturerID, sizeof(info.manufacturerID)),
        Padded(info.model, sizeof(info.model)), label};
    model_ = absl::StrFormat("%s %s",
                             Padded(info.manufacturerID,
                                    sizeof(info.manufacturerID)),
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
  return Start();
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
  CK_RV rv = fl_->C_OpenSession(slot, CKF_SERIAL_SESSION, nullptr, nullptr,
                                &s.handle);
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

void Token::Touch(const std::string& key) {
  auto it = cache_.find(key);
  if (it == cache_.end()) return;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
}

void Token::Insert(const std::string& key, KeyObjects objects) {
  while (cache_.size() >= config_.key_cache_size && !lru_.empty()) {
    const std::string& victim = lru_.back();
    auto it = cache_.find(victim);
    if (it != cache_.end()) {
      // Imported session objects are destroyed on eviction; objects found
      // by URI are token objects and stay.
      if (victim.rfind("uri:", 0) != 0) {
        if (it->second.objects.priv != CK_INVALID_HANDLE) {
          fl_->C_DestroyObject(anchor_, it->second.objects.priv);
        }
        if (it->second.objects.pub != CK_INVALID_HANDLE) {
          fl_->C_DestroyObject(anchor_, it->second.objects.pub);
        }
      }
      cache_.erase(it);
    }
    lru_.pop_back();
  }
  lru_.push_front(key);
  cache_[key] = Entry{objects, lru_.begin()};
}

void Token::Forget(const std::string& fingerprint) {
  absl::MutexLock lock(&mu_);
  auto it = cache_.find(fingerprint);
  if (it == cache_.end()) return;
  lru_.erase(it->second.lru);
  cache_.erase(it);
}

absl::StatusOr<KeyObjects> Token::Objects(const std::string& fingerprint,
                                          const Attrs& priv_template,
                                          const Attrs& pub_template) {
  absl::Status st = CheckFork();
  if (!st.ok()) return st;
  absl::MutexLock lock(&mu_);
  uint64_t gen = generation_.load(std::memory_order_relaxed);
  if (auto it = cache_.find(fingerprint); it != cache_.end()) {
    Touch(fingerprint);
    return it->second.objects;
  }
  // Imports run on the anchor session, so the objects live as long as the
  // login; mu_ serialises use of that one session.
  KeyObjects objects;
  objects.generation = gen;
  if (!priv_template.empty()) {
    // CKA_PRIVATE follows the login state at import time: a public session
    // may create public objects only (PKCS#11 v2.40 section 4.4). Imports
    // do not log in by themselves (the key material is in this process
    // already, and the registration self-test imports keys): only a token
    // that refuses the import without a login gets one.
    Attrs attrs = priv_template;
    CK_BBOOL is_private = CK_FALSE;
    auto create = [&] {
      is_private = logged_in() ? CK_TRUE : CK_FALSE;
      for (CK_ATTRIBUTE& a : attrs) {
        if (a.type == CKA_PRIVATE) {
          a.pValue = &is_private;
          a.ulValueLen = sizeof(is_private);
        }
      }
      return fl_->C_CreateObject(anchor_, attrs.data(), attrs.size(),
                                 &objects.priv);
    };
    CK_RV rv = create();
    if (rv == CKR_USER_NOT_LOGGED_IN && !logged_in() && !config_.pin.empty()) {
      absl::Status login = EnsureLogin(config_.pin, pin_from_uri_);
      if (!login.ok()) return login;
      rv = create();
    }
    if (rv != CKR_OK) {
      absl::Status s = FromCkRv(rv, "C_CreateObject (private key)");
      // A template the token refuses means it cannot take this key here.
      return s.code() == absl::StatusCode::kInvalidArgument
                 ? absl::UnimplementedError(s.message())
                 : s;
    }
    objects_created_.fetch_add(1, std::memory_order_relaxed);
  }
  if (!pub_template.empty()) {
    Attrs attrs = pub_template;
    CK_RV rv = fl_->C_CreateObject(anchor_, attrs.data(), attrs.size(),
                                   &objects.pub);
    if (rv != CKR_OK) {
      if (objects.priv != CK_INVALID_HANDLE) {
        fl_->C_DestroyObject(anchor_, objects.priv);
      }
      absl::Status s = FromCkRv(rv, "C_CreateObject (public key)");
      return s.code() == absl::StatusCode::kInvalidArgument
                 ? absl::UnimplementedError(s.message())
                 : s;
    }
    objects_created_.fetch_add(1, std::memory_order_relaxed);
  }
  Insert(fingerprint, objects);
  return objects;
}

absl::StatusOr<KeyObjects> Token::FindByUri(const std::string& uri) {
  absl::string_view rest = uri;
  if (!absl::ConsumePrefix(&rest, "pkcs11:")) {
    return absl::UnimplementedError("pkcs11: not a pkcs11: URI");
  }
  // Path attributes name the object (RFC 7512 section 2.3); the query may
  // carry a PIN (pin-value, pin-source), nothing else is used.
  absl::string_view query;
  if (size_t q = rest.find('?'); q != absl::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  std::string object, id, token;
  bool has_object = false, has_id = false;
  for (absl::string_view attr : absl::StrSplit(rest, ';', absl::SkipEmpty())) {
    size_t eq = attr.find('=');
    if (eq == absl::string_view::npos) continue;
    absl::string_view name = attr.substr(0, eq);
    absl::StatusOr<std::string> value = PercentDecode(attr.substr(eq + 1));
    if (!value.ok()) return value.status();
    if (name == "object") {
      object = *value;
      has_object = true;
    } else if (name == "id") {
      id = *value;
      has_id = true;
    } else if (name == "token") {
      token = *value;
    }
  }
  if (!token.empty() && token != label_) {
    return absl::UnimplementedError(absl::StrFormat(
        "pkcs11: the URI names token '%s', not '%s'", token, label_));
  }
  if (!has_object && !has_id) {
    return absl::InvalidArgumentError(
        "pkcs11: the URI names no object (object= or id=)");
  }
  absl::Status st = CheckFork();
  if (!st.ok()) return st;
  const std::string key = "uri:" + uri;
  absl::MutexLock lock(&mu_);
  if (auto it = cache_.find(key); it != cache_.end()) {
    Touch(key);
    return it->second.objects;
  }
  st = LoginWithUriPin(query);
  if (!st.ok()) return st;
  KeyObjects objects;
  objects.generation = generation_.load(std::memory_order_relaxed);
  for (CK_OBJECT_CLASS cls : {CKO_PRIVATE_KEY, CKO_PUBLIC_KEY}) {
    Attrs attrs;
    attrs.push_back({CKA_CLASS, &cls, sizeof(cls)});
    if (has_object) attrs.push_back({CKA_LABEL, object.data(), object.size()});
    if (has_id) attrs.push_back({CKA_ID, id.data(), id.size()});
    absl::StatusOr<CK_OBJECT_HANDLE> found = FindOne(attrs);
    if (!found.ok()) return found.status();
    (cls == CKO_PRIVATE_KEY ? objects.priv : objects.pub) = *found;
  }
  if (objects.priv == CK_INVALID_HANDLE && objects.pub == CK_INVALID_HANDLE) {
    return absl::UnimplementedError(
        absl::StrFormat("pkcs11: no key on token '%s' matches the URI", label_));
  }
  if (objects.pub == CK_INVALID_HANDLE) {
    // The public half of a key pair shares the private key's CKA_ID (PKCS#11
    // section 4.6's convention), else its label.
    for (CK_ATTRIBUTE_TYPE link : {CKA_ID, CKA_LABEL}) {
      CK_ATTRIBUTE attr{link, nullptr, 0};
      CK_RV rv = fl_->C_GetAttributeValue(anchor_, objects.priv, &attr, 1);
      if (rv != CKR_OK || attr.ulValueLen == 0 ||
          attr.ulValueLen == CK_UNAVAILABLE_INFORMATION) {
        continue;
      }
      std::vector<uint8_t> value(attr.ulValueLen);
      attr.pValue = value.data();
      if (fl_->C_GetAttributeValue(anchor_, objects.priv, &attr, 1) != CKR_OK) {
        continue;
      }
      CK_OBJECT_CLASS cls = CKO_PUBLIC_KEY;
      Attrs attrs = {{CKA_CLASS, &cls, sizeof(cls)},
                     {link, value.data(), value.size()}};
      absl::StatusOr<CK_OBJECT_HANDLE> found = FindOne(attrs);
      if (!found.ok()) return found.status();
      if (*found != CK_INVALID_HANDLE) {
        objects.pub = *found;
        break;
      }
    }
  }
  Insert(key, objects);
  return objects;
}

absl::StatusOr<CK_OBJECT_HANDLE> Token::FindOne(const Attrs& attrs) {
  CK_RV rv = fl_->C_FindObjectsInit(
      anchor_, const_cast<CK_ATTRIBUTE*>(attrs.data()), attrs.size());
  if (rv != CKR_OK) return FromCkRv(rv, "C_FindObjectsInit");
  CK_OBJECT_HANDLE found = CK_INVALID_HANDLE;
  CK_ULONG count = 0;
  rv = fl_->C_FindObjects(anchor_, &found, 1, &count);
  fl_->C_FindObjectsFinal(anchor_);
  if (rv != CKR_OK) return FromCkRv(rv, "C_FindObjects");
  return count == 1 ? found : CK_INVALID_HANDLE;
}

absl::Status Token::LoginWithUriPin(absl::string_view query) {
  if (logged_in()) return absl::OkStatus();
  // A configured PIN wins over the URI's.
  if (!config_.pin.empty()) return EnsureLogin(config_.pin, pin_from_uri_);
  std::string pin;
  for (absl::string_view attr : absl::StrSplit(query, '&', absl::SkipEmpty())) {
    size_t eq = attr.find('=');
    if (eq == absl::string_view::npos) continue;
    absl::string_view name = attr.substr(0, eq);
    if (name != "pin-value" && name != "pin-source") continue;
    absl::StatusOr<std::string> value = PercentDecode(attr.substr(eq + 1));
    if (!value.ok()) return value.status();
    if (name == "pin-value") {
      pin = *value;
    } else {
      absl::string_view path = *value;
      absl::ConsumePrefix(&path, "file://");
      absl::ConsumePrefix(&path, "file:");
      std::ifstream in{std::string(path)};
      if (!in) {
        return absl::InvalidArgumentError(
            "pkcs11: cannot read the URI's pin-source file");
      }
      std::getline(in, pin);
      while (!pin.empty() && (pin.back() == '\r' || pin.back() == '\n')) {
        pin.pop_back();
      }
    }
    OPENSSL_cleanse(value->data(), value->size());
  }
  if (pin.empty()) return absl::OkStatus();
  absl::Status st = EnsureLogin(pin, /*from_uri=*/true);
  if (st.ok()) {
    // Kept for the re-login of a forked child; wiped with the config.
    config_.pin = std::move(pin);
    config_.pin_source = "the URI's PIN";
    pin_from_uri_ = true;
  }
  if (!pin.empty()) OPENSSL_cleanse(pin.data(), pin.size());
  return st;
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
  CK_RV rv = fl_->C_Login(anchor_, CKU_USER,
                          reinterpret_cast<CK_UTF8CHAR*>(copy.data()),
                          copy.size());
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

absl::StatusOr<std::vector<uint8_t>> Token::GetAttribute(
    CK_OBJECT_HANDLE object, CK_ATTRIBUTE_TYPE type) {
  absl::StatusOr<Session> s = Acquire();
  if (!s.ok()) return s.status();
  CK_ATTRIBUTE attr{type, nullptr, 0};
  CK_RV rv = fl_->C_GetAttributeValue(s->handle, object, &attr, 1);
  std::vector<uint8_t> out;
  if (rv == CKR_OK && attr.ulValueLen != CK_UNAVAILABLE_INFORMATION) {
    out.resize(attr.ulValueLen);
    attr.pValue = out.data();
    rv = fl_->C_GetAttributeValue(s->handle, object, &attr, 1);
  }
  Release(*s, rv != CKR_OK);
  if (rv != CKR_OK) return FromCkRv(rv, "C_GetAttributeValue");
  return out;
}

}  // namespace accelcrypt::pkcs11_client
