// SPDX-License-Identifier: Apache-2.0
#include "tools/openssl_cnf_check.h"

#include <openssl/conf.h>
#include <openssl/crypto.h>
#include <openssl/err.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "accelcrypt/kit/files.h"
#include "accelcrypt/kit/openssl_errors.h"
#include "core/config.h"
#include "core/config_keys.h"

namespace accelcrypt::tools {
namespace {

// The keys OpenSSL itself reads in a provider section (OpenSSL 3.0
// crypto/provider_conf.c); the provider never sees them.
constexpr std::string_view kOpensslKeys[] = {"identity", "module", "activate",
                                             "soft_load"};
// The key naming an accelcrypt config file (provider/provider.cc).
constexpr std::string_view kConfKey = "conf";

struct ConfFree {
  void operator()(CONF* c) const { NCONF_free(c); }
};

// One physical line of a file OpenSSL read: where a key was written.
struct KeyLine {
  std::string file;
  size_t line = 0;
};

// Source is one file OpenSSL read, with its text (empty when unreadable).
struct Source {
  std::string path;
  std::string text;
};

// SourceFiles reads `path` and the files its `.include` lines name (a
// directory: its *.cnf and *.conf, sorted, as OpenSSL reads them), in the
// order OpenSSL reads them, each once. One level deep, which is what the
// line lookup needs; NCONF itself follows every level.
std::vector<Source> SourceFiles(const std::string& path) {
  std::vector<std::string> files = {path};
  std::string text;
  if (!kit::ReadFile(path, &text)) return {{path, ""}};
  const char* include_dir = std::getenv("OPENSSL_CONF_INCLUDE");
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (!absl::ConsumePrefix(&line, ".include")) continue;
    line = absl::StripLeadingAsciiWhitespace(line);
    absl::ConsumePrefix(&line, "=");
    std::filesystem::path target(std::string(absl::StripAsciiWhitespace(line)));
    if (target.empty()) continue;
    if (target.is_relative() && include_dir != nullptr && *include_dir) {
      target = std::filesystem::path(include_dir) / target;
    }
    std::error_code ec;
    if (std::filesystem::is_directory(target, ec)) {
      std::vector<std::string> in_dir;
      for (const auto& entry :
           std::filesystem::directory_iterator(target, ec)) {
        const std::string ext = entry.path().extension().string();
        if (ext == ".cnf" || ext == ".conf") in_dir.push_back(entry.path());
      }
      std::sort(in_dir.begin(), in_dir.end());
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else {
      files.push_back(target.string());
    }
  }
  std::vector<Source> sources;
  sources.push_back({path, std::move(text)});
  for (size_t i = 1; i < files.size(); ++i) {
    Source source{files[i], ""};
    kit::ReadFile(source.path, &source.text);
    sources.push_back(std::move(source));
  }
  return sources;
}

// FindKeyLine returns where `key` was last set in `[section]` across
// `sources` (a later setting replaces an earlier one, as in NCONF); line 0
// when the text scan cannot tell (a key made by variable expansion).
KeyLine FindKeyLine(const std::vector<Source>& sources,
                    const std::string& section, const std::string& key) {
  KeyLine found;
  for (const auto& [file, text] : sources) {
    std::string current = "default";
    size_t n = 0;
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      ++n;
      line = absl::StripAsciiWhitespace(line);
      if (absl::ConsumePrefix(&line, "[")) {
        const size_t close = line.find(']');
        if (close != absl::string_view::npos) {
          current =
              std::string(absl::StripAsciiWhitespace(line.substr(0, close)));
        }
        continue;
      }
      if (current != section) continue;
      const size_t eq = line.find('=');
      if (eq == absl::string_view::npos) continue;
      if (absl::StripAsciiWhitespace(line.substr(0, eq)) == key) {
        found = {file, n};
      }
    }
  }
  if (found.line == 0) found.file = sources.front().path;
  return found;
}

std::string Where(const KeyLine& at, const std::string& section) {
  if (at.line == 0) return absl::StrFormat("%s [%s]", at.file, section);
  return absl::StrFormat("%s line %d: [%s]", at.file, at.line, section);
}

// IsAccelcrypt: the provider section loads accelcrypt.
bool IsAccelcrypt(CONF* conf, const std::string& name,
                  const std::string& section) {
  const char* module = NCONF_get_string(conf, section.c_str(), "module");
  ERR_clear_error();
  if (module == nullptr) return name == "accelcrypt";
  const std::string base = std::filesystem::path(module).filename().string();
  return base == "accelcrypt.so" || base == "accelcrypt";
}

void CheckSection(CONF* conf, const std::vector<Source>& sources,
                  const std::string& section, OpensslCnfReport* report) {
  STACK_OF(CONF_VALUE)* values = NCONF_get_section(conf, section.c_str());
  if (values == nullptr) return;
  for (int i = 0; i < sk_CONF_VALUE_num(values); ++i) {
    const CONF_VALUE* v = sk_CONF_VALUE_value(values, i);
    const std::string key = v->name;
    const std::string value = v->value != nullptr ? v->value : "";
    if (std::find(std::begin(kOpensslKeys), std::end(kOpensslKeys), key) !=
            std::end(kOpensslKeys) ||
        key == kConfKey) {
      continue;
    }
    const ConfigKey* known = FindConfigKey(key);
    std::string mistake;  // empty: the key is read and its value accepted
    if (known != nullptr && key != known->name &&
        (*known->alias == '\0' || key != known->alias)) {
      // OpenSSL passes the name as written and the provider asks for the
      // lower-case one: a key in another case is never read.
      mistake = absl::StrFormat(
          "key '%s' is not read: the provider's key is '%s' (lower case)", key,
          known->name);
    } else if (known == nullptr) {
      mistake =
          Config::Known(absl::AsciiStrToLower(key))
              ? absl::StrFormat(
                    "key '%s' is read only from the file named by `conf =` "
                    "(route.* and backend keys); in openssl.cnf the "
                    "provider never sees it",
                    key)
              : absl::StrFormat(
                    "unknown key '%s' (the provider never sees it; keys are "
                    "listed in accelcrypt(1) and docs/configuration.md)",
                    key);
    } else if (absl::Status st = CheckValue(*known, value); !st.ok()) {
      mistake = absl::StrCat(st.message(),
                             " (the provider refuses to start with it)");
    }
    if (mistake.empty()) continue;
    // Only a mistake is located in the files (a text scan per key).
    report->mistakes.push_back(absl::StrCat(
        Where(FindKeyLine(sources, section, key), section), ": ", mistake));
  }
}

}  // namespace

std::string SystemOpensslCnf() {
  std::string dir = OpenSSL_version(OPENSSL_DIR);  // OPENSSLDIR: "/usr/lib/ssl"
  const size_t open = dir.find('"');
  const size_t close = dir.rfind('"');
  if (open != std::string::npos && close > open) {
    dir = dir.substr(open + 1, close - open - 1);
  }
  return dir + "/openssl.cnf";
}

std::string OpensslCnfInUse() {
  // libcrypto's own answer: $OPENSSL_CONF (not for setuid programs), else
  // OPENSSLDIR/openssl.cnf.
  char* path = CONF_get1_default_config_file();
  if (path == nullptr) return SystemOpensslCnf();
  std::string out = path;
  OPENSSL_free(path);
  return out;
}

absl::StatusOr<OpensslCnfReport> CheckOpensslCnf(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is a directory, not a file"));
  }
  std::unique_ptr<CONF, ConfFree> conf(NCONF_new(nullptr));
  if (conf == nullptr) return absl::ResourceExhaustedError("NCONF_new failed");
  long error_line = 0;
  if (NCONF_load(conf.get(), path.c_str(), &error_line) <= 0) {
    std::string why = kit::DrainOpenSslErrors(/*first_only=*/true);
    if (error_line > 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s line %d: OpenSSL cannot parse it: %s", path, error_line, why));
    }
    return absl::FailedPreconditionError(
        absl::StrFormat("cannot read %s: %s", path, why));
  }
  OpensslCnfReport report;
  const char* init = NCONF_get_string(conf.get(), nullptr, "openssl_conf");
  ERR_clear_error();
  if (init == nullptr) return report;  // OpenSSL loads no provider from it
  const char* providers = NCONF_get_string(conf.get(), init, "providers");
  ERR_clear_error();
  if (providers == nullptr) return report;
  STACK_OF(CONF_VALUE)* list = NCONF_get_section(conf.get(), providers);
  if (list == nullptr) return report;
  const std::vector<Source> sources = SourceFiles(path);
  for (int i = 0; i < sk_CONF_VALUE_num(list); ++i) {
    const CONF_VALUE* v = sk_CONF_VALUE_value(list, i);
    if (v->name == nullptr || v->value == nullptr) continue;
    const std::string name = v->name;
    const std::string section = v->value;
    if (!IsAccelcrypt(conf.get(), name, section)) continue;
    report.sections.push_back(
        absl::StrFormat("[%s] (provider %s)", section, name));
    CheckSection(conf.get(), sources, section, &report);
  }
  return report;
}

}  // namespace accelcrypt::tools
