// SPDX-License-Identifier: Apache-2.0
// The `accelcrypt` ENGINE (engines-3/accelcrypt.so): a bridge for OpenSSL
// 3.0-3.5 applications on the legacy method paths (RSA_METHOD, DSA_METHOD,
// engine digests) into the same core and router as the provider. Settings come
// from Config::FromEnvironment() ($ACCELCRYPT_CONF and the ACCELCRYPT_*
// variables), then the engine's ctrl commands (from an openssl.cnf engine
// section or ENGINE_ctrl_cmd_string), later ones winning. One Core per ENGINE
// instance: created by init, destroyed by finish (which writes its final
// statistics). The ALIAS command registers the same engine (state, Core,
// methods, key loader) under a second id as well: `ALIAS = pkcs11` answers
// mod_ssl, which loads a `pkcs11:` key through the engine named after the
// URI's scheme.
#include <openssl/engine.h>
#include <openssl/err.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/config.h"
#include "core/core.h"
#include "engine/engine_state.h"

namespace accelcrypt::engine {
namespace {

constexpr char kEngineId[] = "accelcrypt";
constexpr char kEngineName[] =
    "accelcrypt: accelerators through the accelcrypt router";

// Ctrl commands. CONF names an accelcrypt config file (merged over the
// environment's); SET takes one `key = value` (any Config key, route.* and
// <backend>.<key> included); every fixed Config key also has a command of
// its own, upper-cased (BACKENDS, STATS_DIR, LOG_LEVEL, ...).
constexpr unsigned int kCmdConf = ENGINE_CMD_BASE;
constexpr unsigned int kCmdSet = ENGINE_CMD_BASE + 1;
constexpr unsigned int kCmdAlias = ENGINE_CMD_BASE + 2;
constexpr char kAliasName[] =
    "accelcrypt: keys and accelerators through the accelcrypt router (an "
    "alias of the accelcrypt engine)";

int g_engine_index = -1;
int g_error_lib = 0;
std::once_flag g_static_once;
std::atomic<Core*> g_active_core{nullptr};

thread_local bool t_inside_engine = false;

// The command table: built once from Config::KnownKeys(); its strings live
// for the process (OpenSSL keeps pointers to them in every engine bound).
struct CommandTable {
  std::vector<std::string> names;  // upper-case command names
  std::vector<std::string> keys;   // the config key of each name
  std::vector<std::string> help;
  std::vector<ENGINE_CMD_DEFN> defns;
};

const CommandTable& Commands() {
  static const CommandTable* table = [] {
    auto* t = new CommandTable;
    std::vector<std::string> keys = Config::KnownKeys();
    t->names.reserve(keys.size() + 2);
    t->keys.reserve(keys.size() + 2);
    t->help.reserve(keys.size() + 2);
    t->names.push_back("CONF");
    t->keys.push_back("");
    t->help.push_back(
        "Path of an accelcrypt config file (openssl.cnf syntax, [accelcrypt] "
        "section), merged over $ACCELCRYPT_CONF");
    t->names.push_back("SET");
    t->keys.push_back("");
    t->help.push_back(
        "One accelcrypt setting as key=value (route.<alg>, <backend>.<key>, "
        "any key of docs/configuration.md)");
    t->names.push_back("ALIAS");
    t->keys.push_back("");
    t->help.push_back(
        "Also register this engine under another id (pkcs11: mod_ssl loads "
        "pkcs11: keys through the engine named after the URI scheme)");
    for (const std::string& k : keys) {
      t->names.push_back(absl::AsciiStrToUpper(k));
      t->keys.push_back(k);
      t->help.push_back(
          absl::StrCat("accelcrypt setting `", k, "` (docs/configuration.md)"));
    }
    for (size_t i = 0; i < t->names.size(); ++i) {
      t->defns.push_back(ENGINE_CMD_DEFN{
          static_cast<unsigned int>(kCmdConf + i), t->names[i].c_str(),
          t->help[i].c_str(), ENGINE_CMD_FLAG_STRING});
    }
    t->defns.push_back(ENGINE_CMD_DEFN{0, nullptr, nullptr, 0});
    return t;
  }();
  return *table;
}

const ERR_STRING_DATA kReasonStrings[] = {
    {ERR_PACK(0, 0, kReasonInitFailed), "accelcrypt engine init failed"},
    {ERR_PACK(0, 0, kReasonBadCtrl), "bad accelcrypt engine setting"},
    {ERR_PACK(0, 0, kReasonOperationFailed), "accelcrypt operation failed"},
    {ERR_PACK(0, 0, kReasonKeyLoad), "accelcrypt cannot load the key"},
    {0, nullptr}};

EngineState* StateOf(ENGINE* e) {
  return static_cast<EngineState*>(ENGINE_get_ex_data(e, g_engine_index));
}

bool AddAlias(EngineState* state, const std::string& id);

int Ctrl(ENGINE* e, int cmd, long i, void* p, void (*f)()) {
  EngineState* state = StateOf(e);
  const CommandTable& table = Commands();
  const unsigned int c = static_cast<unsigned int>(cmd);
  if (state == nullptr || c < kCmdConf || c >= kCmdConf + table.names.size()) {
    ERR_raise(ERR_LIB_ENGINE, ENGINE_R_CTRL_COMMAND_NOT_IMPLEMENTED);
    return 0;
  }
  const std::string name = table.names[c - kCmdConf];
  if (p == nullptr) {
    RaiseError(kReasonBadCtrl,
               absl::InvalidArgumentError(absl::StrCat(name, ": no value")));
    return 0;
  }
  const std::string value(static_cast<const char*>(p));
  std::lock_guard<std::mutex> l(state->mu);
  if (state->core.load() != nullptr) {
    RaiseError(kReasonBadCtrl,
               absl::FailedPreconditionError(absl::StrCat(
                   name,
                   ": the engine is already initialised; settings are "
                   "read at init (put `init = 1` after them)")));
    return 0;
  }
  if (c == kCmdAlias) return AddAlias(state, value) ? 1 : 0;
  if (c == kCmdConf) {
    absl::StatusOr<Config> file = Config::LoadFile(value);
    if (!file.ok()) {
      RaiseError(kReasonBadCtrl,
                 absl::Status(file.status().code(),
                              absl::StrCat("CONF ", value, ": ",
                                           file.status().message())));
      return 0;
    }
    state->ctrl_config.Merge(*file);
    return 1;
  }
  std::string key;
  std::string val;
  if (c == kCmdSet) {
    std::vector<std::string> kv =
        absl::StrSplit(value, absl::MaxSplits('=', 1));
    if (kv.size() != 2) {
      RaiseError(kReasonBadCtrl, absl::InvalidArgumentError(absl::StrCat(
                                     "SET '", value, "': want key=value")));
      return 0;
    }
    key = std::string(absl::StripAsciiWhitespace(kv[0]));
    val = std::string(absl::StripAsciiWhitespace(kv[1]));
    if (!Config::Known(key)) {
      RaiseError(
          kReasonBadCtrl,
          absl::InvalidArgumentError(absl::StrCat(
              "SET '", value, "': unknown accelcrypt setting '", key, "'")));
      return 0;
    }
  } else {
    key = table.keys[c - kCmdConf];
    val = value;
  }
  // Checked now so a bad value is reported at the command that gave it.
  Config probe;
  probe.Set(key, val, "engine ctrl " + name);
  absl::Status valid = probe.Validate();
  if (!valid.ok()) {
    RaiseError(kReasonBadCtrl, valid);
    return 0;
  }
  state->ctrl_config.Set(key, val, "engine ctrl " + name);
  return 1;
}

int InitCore(ENGINE* e);

int Init(ENGINE* e) {
  try {
    return InitCore(e);
  } catch (...) {
    return 0;
  }
}

int InitCore(ENGINE* e) {
  EngineState* state = StateOf(e);
  if (state == nullptr) return 0;
  std::lock_guard<std::mutex> l(state->mu);
  if (state->core.load() != nullptr) {
    ++state->inits;  // an alias, or the engine beside its alias
    return 1;
  }
  absl::StatusOr<Config> config = Config::FromEnvironment();
  if (!config.ok()) {
    RaiseError(kReasonInitFailed,
               absl::Status(config.status().code(),
                            absl::StrCat("accelcrypt configuration: ",
                                         config.status().message())));
    return 0;
  }
  config->Merge(state->ctrl_config);
  // Init runs under OpenSSL's global ENGINE lock: a token backend started
  // here would run its module's C_Initialize under it, and a module that
  // uses OpenSSL (SoftHSMv2 looks up ENGINEs) waits on that lock forever.
  // Deferred backends start at their first operation instead.
  config->Set("deferred_start", "first-use", "the accelcrypt engine");
  absl::StatusOr<std::unique_ptr<Core>> core = Core::Create(*std::move(config));
  if (!core.ok()) {
    RaiseError(kReasonInitFailed,
               absl::Status(
                   core.status().code(),
                   absl::StrCat("accelcrypt core: ", core.status().message())));
    return 0;
  }
  state->owned_core = *std::move(core);
  state->core.store(state->owned_core.get());
  state->inits = 1;
  SetActiveCore(state->owned_core.get());
  return 1;
}

int Finish(ENGINE* e) {
  EngineState* state = StateOf(e);
  if (state == nullptr) return 1;
  std::lock_guard<std::mutex> l(state->mu);
  // The engine and its alias share the Core: the last to finish ends it.
  if (state->inits > 1) {
    --state->inits;
    return 1;
  }
  state->inits = 0;
  Core* core = state->core.exchange(nullptr);
  Core* expected = core;
  g_active_core.compare_exchange_strong(expected, nullptr);
  // Destroying the Core writes its final statistics.
  state->owned_core.reset();
  return 1;
}

int Destroy(ENGINE* e) {
  EngineState* state = StateOf(e);
  if (state == nullptr) return 1;
  ENGINE_set_ex_data(e, g_engine_index, nullptr);
  if (state->refs.fetch_sub(1) > 1) return 1;  // its alias or engine remains
  FreePkeyMethods(state);
  delete state;
  return 1;
}

// SetFunctions gives `e` the engine's functions and methods over `state`.
bool SetFunctions(ENGINE* e, EngineState* state) {
  return ENGINE_set_init_function(e, Init) == 1 &&
         ENGINE_set_finish_function(e, Finish) == 1 &&
         ENGINE_set_destroy_function(e, Destroy) == 1 &&
         ENGINE_set_ctrl_function(e, Ctrl) == 1 &&
         ENGINE_set_cmd_defns(e, Commands().defns.data()) == 1 &&
         ENGINE_set_RSA(e, state->rsa_method) == 1 &&
         ENGINE_set_DSA(e, state->dsa_method) == 1 &&
         ENGINE_set_load_privkey_function(e, LoadPrivateKey) == 1 &&
         ENGINE_set_load_pubkey_function(e, LoadPublicKey) == 1;
}

// AddAlias registers a second ENGINE, `id`, sharing `state` (settings,
// Core, methods, key loader; not the digests, which follow the Core of the
// engine last initialised anyway) and adds it to OpenSSL's engine list,
// where ENGINE_by_id finds it before any engine of that name on disk.
bool AddAlias(EngineState* state, const std::string& id) {
  const bool valid =
      !id.empty() && id.size() <= 64 && id != kEngineId &&
      id.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-") ==
          std::string::npos;
  if (!valid) {
    RaiseError(kReasonBadCtrl, absl::InvalidArgumentError(absl::StrCat(
                                   "ALIAS '", id,
                                   "': want an engine id of lower-case "
                                   "letters, digits, '-' or '_'")));
    return false;
  }
  if (!state->alias_id.empty()) {
    RaiseError(kReasonBadCtrl,
               absl::FailedPreconditionError(
                   absl::StrCat("ALIAS ", id, ": this engine is already also '",
                                state->alias_id, "' (one alias per engine)")));
    return false;
  }
  state->alias_id = id;  // ENGINE_set_id keeps the pointer
  ENGINE* alias = ENGINE_new();
  if (alias == nullptr || ENGINE_set_id(alias, state->alias_id.c_str()) != 1 ||
      ENGINE_set_name(alias, kAliasName) != 1 || !SetFunctions(alias, state) ||
      ENGINE_set_ex_data(alias, g_engine_index, state) != 1) {
    ENGINE_free(alias);
    state->alias_id.clear();
    RaiseError(kReasonBadCtrl,
               absl::ResourceExhaustedError("ALIAS: cannot make the engine"));
    return false;
  }
  state->refs.fetch_add(1);  // the alias's Destroy gives it back
  if (ENGINE_add(alias) != 1) {
    ENGINE_free(alias);  // runs Destroy
    RaiseError(kReasonBadCtrl,
               absl::AlreadyExistsError(absl::StrCat(
                   "ALIAS ", id,
                   ": an engine with this id is already loaded "
                   "in this process (give the alias before anything loads "
                   "that engine)")));
    return false;
  }
  ENGINE_free(alias);  // the engine list keeps its own reference
  return true;
}

absl::Status StaticInit() {
  absl::Status result = absl::OkStatus();
  std::call_once(g_static_once, [&] {
    g_engine_index =
        ENGINE_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
    g_error_lib = ERR_get_next_error_library();
    // ERR_load_strings packs the library into each entry; a copy per
    // process keeps the constant table untouched.
    static ERR_STRING_DATA
        strings[sizeof(kReasonStrings) / sizeof(kReasonStrings[0])];
    std::memcpy(strings, kReasonStrings, sizeof(kReasonStrings));
    ERR_load_strings(g_error_lib, strings);
    // The library's own name is the entry (lib, 0, 0); a zero code ends a
    // table, so it is packed here.
    static ERR_STRING_DATA lib_name[] = {{0, "accelcrypt engine"},
                                         {0, nullptr}};
    lib_name[0].error = ERR_PACK(g_error_lib, 0, 0);
    ERR_load_strings(g_error_lib, lib_name);
  });
  if (g_engine_index < 0) {
    return absl::ResourceExhaustedError("cannot allocate ENGINE ex_data");
  }
  return RegisterPkeyExData();
}

int Bind(ENGINE* e, const char* id) {
  if (id != nullptr && std::strcmp(id, kEngineId) != 0) return 0;
  absl::Status st = StaticInit();
  if (!st.ok()) {
    RaiseError(kReasonInitFailed, st);
    return 0;
  }
  auto state = std::make_unique<EngineState>();
  st = BuildPkeyMethods(state.get());
  if (!st.ok()) {
    RaiseError(kReasonInitFailed, st);
    return 0;
  }
  if (ENGINE_set_id(e, kEngineId) != 1 ||
      ENGINE_set_name(e, kEngineName) != 1 || !SetFunctions(e, state.get()) ||
      ENGINE_set_digests(e, DigestSelector) != 1 ||
      ENGINE_set_ex_data(e, g_engine_index, state.get()) != 1) {
    FreePkeyMethods(state.get());
    return 0;
  }
  static_cast<void>(state.release());  // the engine's ex_data owns it now
  return 1;
}

}  // namespace

int ErrorLibrary() { return g_error_lib; }

EngineState* StateOfEngine(ENGINE* e) { return StateOf(e); }

void RaiseError(Reason reason, const absl::Status& status) {
  ERR_new();
  ERR_set_debug(nullptr, 0, nullptr);
  const std::string message(status.message());
  ERR_set_error(g_error_lib, reason, "%s", message.c_str());
}

bool InsideEngine() { return t_inside_engine; }
EngineCallGuard::EngineCallGuard() : previous_(t_inside_engine) {
  t_inside_engine = true;
}
EngineCallGuard::~EngineCallGuard() { t_inside_engine = previous_; }

Core* ActiveCore() { return g_active_core.load(std::memory_order_acquire); }
void SetActiveCore(Core* core) {
  g_active_core.store(core, std::memory_order_release);
}

}  // namespace accelcrypt::engine

extern "C" {
#pragma GCC visibility push(default)
// Nothing of ours throws; an allocation failure in a library must not
// leave the object as an exception.
static int accelcrypt_engine_bind(ENGINE* e, const char* id) {
  try {
    return accelcrypt::engine::Bind(e, id);
  } catch (...) {
    return 0;
  }
}
IMPLEMENT_DYNAMIC_CHECK_FN()
IMPLEMENT_DYNAMIC_BIND_FN(accelcrypt_engine_bind)
#pragma GCC visibility pop
}
