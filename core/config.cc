// SPDX-License-Identifier: Apache-2.0
#include "core/config.h"

#include <openssl/conf.h>
#include <openssl/err.h>

#include <cstdlib>
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/status.h"

namespace accelcrypt {
namespace {

struct ConfDeleter {
  void operator()(CONF* conf) const { NCONF_free(conf); }
};

std::string DrainErrors() {
  std::string out;
  unsigned long e;
  char buf[256];
  while ((e = ERR_get_error()) != 0) {
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out;
}

// AddSection copies every key of `section` into `config`, each prefixed.
void AddSection(const CONF* conf, const char* section, std::string_view prefix,
                Config* config) {
  STACK_OF(CONF_VALUE)* values = NCONF_get_section(conf, section);
  if (values == nullptr) return;
  for (int i = 0; i < sk_CONF_VALUE_num(values); ++i) {
    const CONF_VALUE* v = sk_CONF_VALUE_value(values, i);
    config->Set(absl::StrCat(AsAbsl(prefix), v->name), v->value);
  }
}

}  // namespace

absl::StatusOr<Config> Config::LoadFile(const std::string& path) {
  std::unique_ptr<CONF, ConfDeleter> conf(NCONF_new(nullptr));
  if (conf == nullptr) return absl::ResourceExhaustedError("NCONF_new failed");
  long error_line = -1;
  if (NCONF_load(conf.get(), path.c_str(), &error_line) <= 0) {
    std::string detail = DrainErrors();
    if (error_line <= 0) {
      return absl::NotFoundError(absl::StrFormat(
          "cannot read accelcrypt config %s: %s", path, detail));
    }
    return absl::InvalidArgumentError(absl::StrFormat(
        "malformed accelcrypt config %s, line %d: %s", path, error_line,
        detail));
  }
  Config config;
  const char* section_name =
      NCONF_get_string(conf.get(), nullptr, "accelcrypt_conf");
  ERR_clear_error();
  std::string section = section_name != nullptr ? section_name : "accelcrypt";
  AddSection(conf.get(), section.c_str(), "", &config);
  // A key `backend_sections = a, b` is not needed: each backend's section is
  // found by name, `[backend_<name>]`, and its keys become `<name>.<key>`.
  STACK_OF(CONF_VALUE)* top = NCONF_get_section(conf.get(), section.c_str());
  if (top == nullptr) {
    ERR_clear_error();
    // No accelcrypt section: accept a file holding only the default section.
    AddSection(conf.get(), "default", "", &config);
  }
  // Backend sections: every section named backend_<name>.
  // NCONF has no section iterator; read the names we know from `backends`
  // and the usual ones.
  std::vector<std::string> names = config.GetList("backends");
  for (const char* n : {"software", "padlock", "x86", "pkcs11", "failing"}) {
    names.emplace_back(n);
  }
  for (const std::string& name : names) {
    std::string sec = absl::StrCat("backend_", name);
    AddSection(conf.get(), sec.c_str(), absl::StrCat(name, "."), &config);
  }
  ERR_clear_error();
  return config;
}

absl::StatusOr<Config> Config::FromEnvironment() {
  Config config;
  if (const char* path = std::getenv("ACCELCRYPT_CONF");
      path != nullptr && *path != '\0') {
    auto loaded = LoadFile(path);
    if (!loaded.ok()) return loaded.status();
    config = *std::move(loaded);
  }
  if (const char* v = std::getenv("ACCELCRYPT_BACKEND_DIR"); v && *v) {
    config.Set("backend_dir", v);
  }
  if (const char* v = std::getenv("ACCELCRYPT_STATS_DIR"); v && *v) {
    config.Set("stats_dir", v);
  }
  if (const char* v = std::getenv("ACCELCRYPT_LOG_LEVEL"); v && *v) {
    config.Set("log_level", v);
  }
  return config;
}

void Config::Set(std::string_view key, std::string_view value) {
  values_[absl::AsciiStrToLower(AsAbsl(key))] =
      std::string(absl::StripAsciiWhitespace(AsAbsl(value)));
}

std::optional<std::string> Config::Get(std::string_view key) const {
  auto it = values_.find(absl::AsciiStrToLower(AsAbsl(key)));
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::string Config::GetOr(std::string_view key,
                          std::string_view fallback) const {
  auto v = Get(key);
  return v.has_value() ? *v : std::string(fallback);
}

absl::StatusOr<long long> Config::GetInt(std::string_view key,
                                         long long fallback) const {
  auto v = Get(key);
  if (!v.has_value() || v->empty()) return fallback;
  long long out;
  if (!absl::SimpleAtoi(*v, &out)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "accelcrypt config: %s = '%s' is not a number", key, *v));
  }
  return out;
}

std::vector<std::string> Config::GetList(std::string_view key) const {
  std::vector<std::string> out;
  auto v = Get(key);
  if (!v.has_value()) return out;
  for (absl::string_view part :
       absl::StrSplit(*v, absl::ByAnyChar(", \t"), absl::SkipEmpty())) {
    out.emplace_back(part);
  }
  return out;
}

void Config::Merge(const Config& other) {
  for (const auto& [k, v] : other.values_) values_[k] = v;
}

std::vector<std::string> Config::KnownKeys() {
  // Built per call (init-time only): no static object to leak or destroy.
  return {"backend_dir", "backends", "disable", "policy", "breaker_threshold",
          "breaker_cooldown_ms", "replay_max", "calibration_file", "selftest",
          "stats_dir", "log_level", "offload_min_bits", "rsa_offload_min_bits",
          "dsa_offload_min_bits"};
}

bool Config::Known(std::string_view key) {
  std::string lower = absl::AsciiStrToLower(AsAbsl(key));
  for (const std::string& k : KnownKeys()) {
    if (k == lower) return true;
  }
  if (absl::StartsWith(lower, "route.")) return true;
  // <backend>.<key>
  size_t dot = lower.find('.');
  return dot != std::string::npos && dot > 0 && dot + 1 < lower.size();
}

}  // namespace accelcrypt
