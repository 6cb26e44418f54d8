// SPDX-License-Identifier: Apache-2.0
#include "core/config.h"

#include <openssl/conf.h>
#include <openssl/err.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "accelcrypt/kit/openssl_errors.h"
#include "core/algorithms.h"
#include "core/config_keys.h"
#include "core/status.h"

namespace accelcrypt {
namespace {

struct ConfDeleter {
  void operator()(CONF* conf) const { NCONF_free(conf); }
};

std::string DrainErrors() { return kit::DrainOpenSslErrors(); }

// KeyLines maps "section/key" to the line of `path` where it is assigned
// (the last assignment wins, as in NCONF). Keys that come from an .include
// are not found and get the file name alone.
using KeyLines = std::map<std::string, int, std::less<>>;

KeyLines ScanKeyLines(const std::string& path) {
  KeyLines lines;
  std::ifstream in(path);
  std::string line, section = "default";
  for (int n = 1; std::getline(in, line); ++n) {
    absl::string_view l = absl::StripLeadingAsciiWhitespace(line);
    if (l.empty() || l[0] == '#' || l[0] == ';') continue;
    if (l[0] == '[') {
      size_t end = l.find(']');
      if (end != absl::string_view::npos) {
        section = std::string(absl::StripAsciiWhitespace(l.substr(1, end - 1)));
      }
      continue;
    }
    size_t eq = l.find('=');
    if (eq == absl::string_view::npos) continue;
    std::string key(absl::StripTrailingAsciiWhitespace(l.substr(0, eq)));
    lines[absl::StrCat(section, "/", absl::AsciiStrToLower(key))] = n;
  }
  return lines;
}

// AddSection copies every key of `section` into `config`, each prefixed.
void AddSection(const CONF* conf, const char* section, std::string_view prefix,
                const std::string& path, const KeyLines& lines,
                Config* config) {
  STACK_OF(CONF_VALUE)* values = NCONF_get_section(conf, section);
  if (values == nullptr) return;
  for (int i = 0; i < sk_CONF_VALUE_num(values); ++i) {
    const CONF_VALUE* v = sk_CONF_VALUE_value(values, i);
    auto it =
        lines.find(absl::StrCat(section, "/", absl::AsciiStrToLower(v->name)));
    std::string origin =
        it == lines.end() ? absl::StrFormat("%s, section [%s]", path, section)
                          : absl::StrFormat("%s line %d", path, it->second);
    config->Set(absl::StrCat(AsAbsl(prefix), v->name), v->value, origin);
  }
}

}  // namespace

absl::StatusOr<Config> Config::LoadFile(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    // fopen() opens a directory and reads nothing: it would be an empty
    // configuration instead of a mistake.
    return absl::InvalidArgumentError(absl::StrFormat(
        "accelcrypt config %s is %s, not a file", path,
        S_ISDIR(st.st_mode) ? "a directory" : "not a regular file"));
  }
  std::unique_ptr<CONF, ConfDeleter> conf(NCONF_new(nullptr));
  if (conf == nullptr) return absl::ResourceExhaustedError("NCONF_new failed");
  long error_line = -1;
  if (NCONF_load(conf.get(), path.c_str(), &error_line) <= 0) {
    std::string detail = DrainErrors();
    if (error_line <= 0) {
      return absl::NotFoundError(absl::StrFormat(
          "cannot read accelcrypt config %s: %s", path, detail));
    }
    return absl::InvalidArgumentError(
        absl::StrFormat("malformed accelcrypt config %s, line %d: %s", path,
                        error_line, detail));
  }
  Config config;
  const KeyLines lines = ScanKeyLines(path);
  const char* section_name =
      NCONF_get_string(conf.get(), nullptr, "accelcrypt_conf");
  ERR_clear_error();
  std::string section = section_name != nullptr ? section_name : "accelcrypt";
  AddSection(conf.get(), section.c_str(), "", path, lines, &config);
  // A key `backend_sections = a, b` is not needed: each backend's section is
  // found by name, `[backend_<name>]`, and its keys become `<name>.<key>`.
  STACK_OF(CONF_VALUE)* top = NCONF_get_section(conf.get(), section.c_str());
  if (top == nullptr) {
    ERR_clear_error();
    // No accelcrypt section: accept a file holding only the default section.
    AddSection(conf.get(), "default", "", path, lines, &config);
  }
  // Backend sections: every section named backend_<name>, whatever backend
  // it is for (a third party's included): its keys become `<name>.<key>`.
  std::vector<std::string> names;
  if (STACK_OF(OPENSSL_CSTRING)* sections =
          NCONF_get_section_names(conf.get())) {
    for (int i = 0; i < sk_OPENSSL_CSTRING_num(sections); ++i) {
      absl::string_view sec = sk_OPENSSL_CSTRING_value(sections, i);
      if (absl::ConsumePrefix(&sec, "backend_") && !sec.empty()) {
        names.emplace_back(sec);
      }
    }
    sk_OPENSSL_CSTRING_free(sections);
  }
  for (const std::string& name : names) {
    std::string sec = absl::StrCat("backend_", name);
    AddSection(conf.get(), sec.c_str(), absl::StrCat(name, "."), path, lines,
               &config);
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
    config.Set("backend_dir", v, "environment ACCELCRYPT_BACKEND_DIR");
  }
  if (const char* v = std::getenv("ACCELCRYPT_STATS_DIR"); v && *v) {
    config.Set("stats_dir", v, "environment ACCELCRYPT_STATS_DIR");
  }
  if (const char* v = std::getenv("ACCELCRYPT_LOG_LEVEL"); v && *v) {
    config.Set("log_level", v, "environment ACCELCRYPT_LOG_LEVEL");
  }
  return config;
}

void Config::Set(std::string_view key, std::string_view value,
                 std::string_view origin) {
  std::string name = absl::AsciiStrToLower(AsAbsl(key));
  if (const ConfigKey* k = FindConfigKey(name); k != nullptr) name = k->name;
  if (!origin.empty()) origins_[name] = std::string(origin);
  values_[name] = std::string(absl::StripAsciiWhitespace(AsAbsl(value)));
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
  auto v = Get(key);
  if (!v.has_value()) return {};
  return SplitList(*v);
}

std::vector<std::string> Config::SplitList(std::string_view value) {
  std::vector<std::string> out;
  for (absl::string_view part : absl::StrSplit(
           AsAbsl(value), absl::ByAnyChar(", \t"), absl::SkipEmpty())) {
    out.emplace_back(part);
  }
  return out;
}

void Config::Merge(const Config& other) {
  for (const auto& [k, v] : other.values_) values_[k] = v;
  for (const auto& [k, o] : other.origins_) origins_[k] = o;
}

namespace {

// RouteKeyKnown accepts route.<alg> for an algorithm of the identity table
// and route.rsa-<bits> / route.dsa-<bits>.
bool RouteKeyKnown(absl::string_view alg) {
  const std::string_view name(alg.data(), alg.size());
  return FindAlgorithmByName(name) != nullptr || IsSizedPkeyRouteName(name);
}

}  // namespace

absl::Status Config::Validate() const {
  for (const auto& [key, value] : values_) {
    auto o = origins_.find(key);
    const std::string where =
        o == origins_.end() ? "accelcrypt config"
                            : absl::StrCat("accelcrypt config ", o->second);
    absl::string_view name = key;
    if (const ConfigKey* k = FindConfigKey(key); k != nullptr) {
      absl::Status st = CheckValue(*k, value);
      if (!st.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": ", st.message()));
      }
      continue;
    }
    absl::string_view alg = name;
    if (absl::ConsumePrefix(&alg, "route.")) {
      if (!RouteKeyKnown(alg)) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: unknown algorithm in %s (see `accelcrypt list` for names)",
            where, key));
      }
      continue;
    }
    const size_t dot = name.find('.');
    if (dot != absl::string_view::npos && dot > 0 && dot + 1 < name.size()) {
      continue;  // <backend>.<key>: the backend reads and checks it
    }
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: unknown key '%s' (keys are listed in "
                        "accelcrypt(1) and docs/configuration.md)",
                        where, key));
  }
  return absl::OkStatus();
}

std::vector<std::string> Config::KnownKeys() {
  // Built per call (init-time only): no static object to leak or destroy.
  std::vector<std::string> keys;
  for (const ConfigKey& k : ConfigKeys()) {
    keys.emplace_back(k.name);
    if (*k.alias != '\0') keys.emplace_back(k.alias);
  }
  return keys;
}

bool Config::Known(std::string_view key) {
  std::string lower = absl::AsciiStrToLower(AsAbsl(key));
  if (FindConfigKey(lower) != nullptr) return true;
  if (absl::StartsWith(lower, "route.")) return true;
  // <backend>.<key>
  size_t dot = lower.find('.');
  return dot != std::string::npos && dot > 0 && dot + 1 < lower.size();
}

}  // namespace accelcrypt
