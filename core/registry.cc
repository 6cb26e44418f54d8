// SPDX-License-Identifier: Apache-2.0
#include "core/registry.h"

#include <dirent.h>
#include <dlfcn.h>
#include <syslog.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "accelcrypt/kit/cpuid.h"
#include "core/algorithms.h"
#include "core/internal/builtin_backends.h"
#include "core/module_check.h"
#include "core/status.h"

namespace accelcrypt {
namespace {

// HintedName is the name a module's load hints give it; empty without one.
std::string HintedName(const LoadHints& hints) {
  std::string name;
  for (const auto& [key, value] : hints) {
    if (key == "name") name = value;
  }
  return name;
}

// Forced is true when the environment asks for the module whatever its
// other hints say (`load-if-env=NAME=VALUE`: a test harness that emulates
// the device).
bool Forced(const LoadHints& hints) {
  for (const auto& [key, value] : hints) {
    if (key != "load-if-env") continue;
    const size_t eq = value.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    const char* env = std::getenv(value.substr(0, eq).c_str());
    if (env != nullptr && value.compare(eq + 1, std::string::npos, env) == 0) {
      return true;
    }
  }
  return false;
}

// CpuVendor is CPUID leaf 0's vendor string, or "" where the loader cannot
// ask (not x86, or a CPU without CPUID).
std::string CpuVendor() {
#ifdef ACCELCRYPT_KIT_HAVE_CPUID
  if (!kit::HaveCpuid()) return "";
  char vendor[13];
  kit::Vendor(kit::Cpuid(0), vendor);
  return vendor;
#else
  return "";
#endif
}

// DeclineReason is the reason the backend `name` would decline here, from
// its hints, without loading it; nullopt when it may serve:
//  - `needs-config=KEY`: KEY is not configured;
//  - `needs-cpu-vendor=V1|V2...`: CPUID names another vendor (ignored
//    where the loader cannot ask).
// `load-if-env` overrides both.
std::optional<std::string> DeclineReason(const LoadHints& hints,
                                         const Config& config,
                                         const std::string& name) {
  if (Forced(hints)) return std::nullopt;
  for (const auto& [key, value] : hints) {
    if (key == "needs-config" && !value.empty() &&
        !BackendConfigValue(config, name, value).has_value()) {
      return absl::StrFormat(
          "%s: no %s configured (set %s.%s); the module was not loaded", name,
          value, name, value);
    }
    if (key == "needs-cpu-vendor" && !value.empty()) {
      const std::string vendor = CpuVendor();
      if (vendor.empty()) continue;
      const std::vector<std::string> wanted = absl::StrSplit(value, '|');
      if (std::find(wanted.begin(), wanted.end(), vendor) != wanted.end()) {
        continue;
      }
      return absl::StrFormat(
          "%s: the CPU vendor is %s, the backend serves only '%s'; the module "
          "was not loaded",
          name, vendor, absl::StrJoin(wanted, "' or '"));
    }
  }
  return std::nullopt;
}

// DeferFamilies reads the `defer=` load hint: the families whose first
// routed operation starts the backend (0: its start is not deferred).
uint32_t DeferFamilies(const LoadHints& hints) {
  uint32_t bits = 0;
  for (const auto& [key, value] : hints) {
    if (key != "defer") continue;
    for (absl::string_view f :
         absl::StrSplit(value, absl::ByAnyChar(", "), absl::SkipEmpty())) {
      if (f == "cipher") bits |= FamilyBit(Family::kCipher);
      if (f == "digest") bits |= FamilyBit(Family::kDigest);
      if (f == "rsa") bits |= FamilyBit(Family::kRsa);
      if (f == "dsa") bits |= FamilyBit(Family::kDsa);
    }
  }
  return bits;
}

// OpenModule dlopens a module that CheckLoadableModule accepted and
// returns its handle and descriptor (the descriptor may be null or of
// another ABI version: Backend::Create reports that).
struct Opened {
  void* handle = nullptr;
  const accelcrypt_backend_desc* desc = nullptr;
};
absl::StatusOr<Opened> OpenModule(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return absl::FailedPreconditionError(
        absl::StrFormat("cannot load: %s", why ? why : "?"));
  }
  auto entry = reinterpret_cast<accelcrypt_backend_entry_fn>(
      dlsym(handle, ACCELCRYPT_BACKEND_ENTRY_SYMBOL));
  if (entry == nullptr) {
    dlclose(handle);
    return absl::FailedPreconditionError(
        "not a backend: no accelcrypt_backend_entry");
  }
  return Opened{handle, entry(ACCELCRYPT_ABI_VERSION)};
}

// ModulesIn lists the *.so files of `dir`, sorted; nullopt when `dir`
// cannot be opened (missing, not a directory).
std::optional<std::vector<std::string>> ModulesIn(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return std::nullopt;
  std::vector<std::string> out;
  while (struct dirent* e = readdir(d)) {
    absl::string_view name = e->d_name;
    if (absl::EndsWith(name, ".so")) out.push_back(dir + "/" + e->d_name);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// BackendModules finds the backend directories and their modules:
// `backend_dir` when configured (every directory in it, searched in
// order), else the installed location, else, in a build tree that was
// never installed, the tree's own backend directory (so tests and the
// demo need no setup). `dirs` receives the directories searched. No stat
// first: opening the directory is the test (one system call less per
// process that loads the provider).
std::vector<std::string> BackendModules(const Config& config,
                                        std::vector<std::string>* dirs) {
  std::vector<std::string> modules;
  if (auto v = config.Get("backend_dir"); v.has_value()) {
    for (absl::string_view d : absl::StrSplit(*v, ':', absl::SkipEmpty())) {
      dirs->emplace_back(d);
      if (auto found = ModulesIn(dirs->back()); found.has_value()) {
        modules.insert(modules.end(), found->begin(), found->end());
      }
    }
    return modules;
  }
  for (const char* dir :
       {ACCELCRYPT_DEFAULT_BACKEND_DIR, ACCELCRYPT_BUILD_TREE_BACKEND_DIR}) {
    if (auto found = ModulesIn(dir); found.has_value()) {
      dirs->emplace_back(dir);
      return *std::move(found);
    }
  }
  return modules;
}

bool Contains(const std::vector<std::string>& list, std::string_view name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Registry>> Registry::Create(
    const Config& config) {
  std::unique_ptr<Registry> registry(new Registry());
  const std::vector<std::string> only = config.GetList("backends");
  const std::vector<std::string> disabled = config.GetList("disable");
  const std::string selftest = config.Get("selftest").value_or("first-use");
  if (selftest == "load") {
    registry->selftest_mode_ = SelfTestMode::kLoad;
  } else if (selftest == "0") {
    registry->selftest_mode_ = SelfTestMode::kOff;
  } else if (selftest == "1" || selftest == "first-use") {
    registry->selftest_mode_ = SelfTestMode::kFirstUse;
  } else {
    return absl::InvalidArgumentError(absl::StrFormat(
        "accelcrypt config: selftest = '%s' is not supported (want one of: "
        "first-use, load, 1, 0)",
        selftest));
  }
  const std::string start = config.Get("deferred_start").value_or("first-use");
  if (start == "load") {
    registry->deferred_start_ = DeferredStartMode::kLoad;
  } else if (start != "first-use") {
    return absl::InvalidArgumentError(absl::StrFormat(
        "accelcrypt config: deferred_start = '%s' is not supported (want "
        "first-use or load)",
        start));
  }
  absl::StatusOr<long long> retry = config.GetInt("backend_retry_s", 30);
  if (!retry.ok()) return retry.status();
  if (*retry < 0) {
    return absl::InvalidArgumentError(
        "accelcrypt config: backend_retry_s must be >= 0");
  }
  registry->retry_interval_s_ = static_cast<uint64_t>(*retry);
  registry->only_ = only;
  registry->config_ = config;
  const std::vector<std::string> modules =
      BackendModules(config, &registry->dirs_);

  // `pending`: the module's hints defer its start (PendingBackend): a
  // failure to start is an error (the backend is configured: a token that
  // cannot be used), kept pending for the router's retries, and a busy
  // backend (kResourceExhausted: asked from inside its own start) is
  // pending without an error.
  auto add = [&](absl::StatusOr<std::unique_ptr<Backend>> created,
                 const std::string& origin,
                 const PendingBackend* pending = nullptr) {
    if (!created.ok()) {
      const absl::StatusCode code = created.status().code();
      const bool retry =
          pending != nullptr && (code == absl::StatusCode::kUnavailable ||
                                 code == absl::StatusCode::kResourceExhausted);
      registry->events_.push_back(
          {origin, "", std::string(created.status().message()), false,
           retry ? code == absl::StatusCode::kResourceExhausted
                 : code == absl::StatusCode::kUnavailable});
      if (retry) {
        registry->pending_.push_back(*pending);
        registry->pending_.back().load_failure = created.status();
      }
      return;
    }
    std::unique_ptr<Backend> backend = *std::move(created);
    std::string name(backend->name());
    if (registry->Find(name) != nullptr) {
      registry->events_.push_back(
          {name, "",
           absl::StrFormat("duplicate backend name from %s ignored", origin),
           false});
      return;
    }
    if (registry->selftest_mode_ == SelfTestMode::kLoad) {
      std::vector<accelcrypt_alg> algs;
      for (const accelcrypt_capability& cap : backend->capabilities()) {
        algs.push_back(cap.alg);
      }
      for (accelcrypt_alg alg : algs) {
        absl::Status st = SelfTest(*backend, alg);
        if (!st.ok()) {
          backend->Disable(alg);
          registry->events_.push_back(
              {name, std::string(FindAlgorithm(alg)->name),
               absl::StrFormat("disabled: %s", st.message()), false});
        }
      }
    }
    registry->events_.push_back(
        {name, "",
         absl::StrFormat("loaded from %s, %d algorithms", backend->origin(),
                         backend->capabilities().size()),
         true});
    registry->backends_.push_back(std::move(backend));
  };

  // excluded applies `backends` / `disable` to a descriptor by its name
  // before Backend::Create calls its init, so an excluded backend never
  // initialises (no device opened, no module dlopened by it). A descriptor
  // of another ABI version is left to Create, which reports the mismatch.
  auto excluded_name = [&](const std::string& name) {
    if ((only.empty() || Contains(only, name)) && !Contains(disabled, name)) {
      return false;
    }
    registry->events_.push_back({name, "",
                                 "not loaded: excluded by configuration", false,
                                 false, /*excluded=*/true});
    return true;
  };
  auto excluded = [&](const accelcrypt_backend_desc* desc) {
    if (desc == nullptr || desc->abi_version != ACCELCRYPT_ABI_VERSION ||
        desc->struct_size <
            offsetof(accelcrypt_backend_desc, name) + sizeof(desc->name) ||
        desc->name == nullptr) {
      return false;
    }
    return excluded_name(desc->name);
  };

  for (accelcrypt_backend_entry_fn entry : internal::BuiltinBackends()) {
    const accelcrypt_backend_desc* desc = entry(ACCELCRYPT_ABI_VERSION);
    if (excluded(desc)) {
      // Kept out of routing, still the checker of offloaded results.
      if (desc != nullptr && desc->name != nullptr &&
          std::string_view(desc->name) == "software") {
        absl::StatusOr<std::unique_ptr<Backend>> checker =
            Backend::Create(desc, nullptr, &config, "built-in");
        if (checker.ok()) registry->checker_ = *std::move(checker);
      }
      continue;
    }
    add(Backend::Create(desc, nullptr, &config, "built-in"), "built-in");
  }
  for (const std::string& path : modules) {
    // A broken file must be refused before dlopen: the loader maps it as
    // its headers say, and a truncated one kills the process with SIGBUS.
    LoadHints hints;
    if (absl::Status shape = CheckLoadableModule(path, &hints); !shape.ok()) {
      registry->events_.push_back(
          {path, "", absl::StrFormat("not loaded: %s", shape.message()),
           false});
      continue;
    }
    // The module's load hints (accelcrypt/backend.h): a backend that is
    // excluded, or would decline for want of a setting, is not loaded at
    // all (mapping and initialising a module costs every process).
    const std::string name = HintedName(hints);
    if (!name.empty()) {
      if (excluded_name(name)) continue;
      if (std::optional<std::string> reason =
              DeclineReason(hints, config, name)) {
        registry->events_.push_back(
            {path, "", *reason, false, /*declined=*/true});
        continue;
      }
    }
    // A deferred start (`defer=`): left to the router's first operation
    // of those families, outside whatever OpenSSL or the application
    // holds while the provider or the engine loads.
    std::optional<PendingBackend> pending;
    if (const uint32_t defer = DeferFamilies(hints);
        defer != 0 && !name.empty()) {
      pending = PendingBackend{path, name, defer, absl::OkStatus()};
      if (registry->deferred_start_ == DeferredStartMode::kFirstUse) {
        registry->pending_.push_back(*pending);
        registry->events_.push_back(
            {path, "",
             absl::StrFormat("%s: deferred: starts at its first operation "
                             "in this process",
                             name),
             false, /*declined=*/true, /*excluded=*/false,
             /*deferred=*/true});
        continue;
      }
    }
    absl::StatusOr<Opened> opened = OpenModule(path);
    if (!opened.ok()) {
      registry->events_.push_back(
          {path, "", std::string(opened.status().message()), false});
      continue;
    }
    if (excluded(opened->desc)) {
      dlclose(opened->handle);
      continue;
    }
    add(Backend::Create(opened->desc, opened->handle, &config, path), path,
        pending ? &*pending : nullptr);
  }

  // Priority: the configured order, else hardware before software.
  auto rank = [&](const Backend& b) -> size_t {
    return registry->Rank(b.name(), b.hardware());
  };
  std::stable_sort(
      registry->backends_.begin(), registry->backends_.end(),
      [&](const auto& a, const auto& b) { return rank(*a) < rank(*b); });
  return registry;
}

absl::StatusOr<Backend*> Registry::StartPending(size_t i) const {
  const PendingBackend& p = pending_.at(i);
  if (absl::Status shape = CheckLoadableModule(p.path); !shape.ok()) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s: not loaded: %s", p.path, shape.message()));
  }
  ACCELCRYPT_ASSIGN_OR_RETURN(Opened opened, OpenModule(p.path));
  ACCELCRYPT_ASSIGN_OR_RETURN(
      std::unique_ptr<Backend> backend,
      Backend::Create(opened.desc, opened.handle, &config_, p.path));
  internal::OsMutexLock lock(&started_mu_);
  started_.push_back(std::move(backend));
  return started_.back().get();
}

size_t Registry::Rank(std::string_view name, bool hardware) const {
  if (!only_.empty()) {
    return std::find(only_.begin(), only_.end(), name) - only_.begin();
  }
  return hardware ? 0 : 1;
}

void ReportToOperator(const std::string& line) {
  std::fprintf(stderr, "%s\n", line.c_str());
  syslog(LOG_ERR, "%s", line.c_str());
}

Backend* Registry::Find(std::string_view name) const {
  for (const auto& b : backends_) {
    if (b->name() == name) return b.get();
  }
  return nullptr;
}

}  // namespace accelcrypt
