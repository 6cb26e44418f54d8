// SPDX-License-Identifier: Apache-2.0
#include "pkcs11/module/module_config.h"

#include <openssl/conf.h>
#include <openssl/err.h>

#include <cstdlib>
#include <memory>
#include <string_view>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status.h"
#include "pkcs11/common/ck_error.h"

namespace accelcrypt::p11 {
namespace {

struct ConfDeleter {
  void operator()(CONF* conf) const { NCONF_free(conf); }
};

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

absl::Status ParseCount(std::string_view key, const std::string& value,
                        uint32_t min, uint32_t max, uint32_t* out) {
  uint32_t v = 0;
  if (!absl::SimpleAtoi(AsAbsl(value), &v) || v < min || v > max) {
    return CkError(CKR_FUNCTION_FAILED,
                   absl::StrFormat("[accelcrypt_pkcs11] %s = %s: want %u..%u",
                                   AsAbsl(key), value, min, max));
  }
  *out = v;
  return absl::OkStatus();
}

// ReadModuleSection reads [accelcrypt_pkcs11] of `path` into `config`.
absl::Status ReadModuleSection(const std::string& path, ModuleConfig* config) {
  std::unique_ptr<CONF, ConfDeleter> conf(NCONF_new(nullptr));
  if (conf == nullptr) return CkError(CKR_HOST_MEMORY, "NCONF_new failed");
  long error_line = -1;
  if (NCONF_load(conf.get(), path.c_str(), &error_line) <= 0) {
    ERR_clear_error();
    return CkError(
        CKR_FUNCTION_FAILED,
        absl::StrFormat("cannot read %s (line %d)", path, error_line));
  }
  STACK_OF(CONF_VALUE)* values =
      NCONF_get_section(conf.get(), "accelcrypt_pkcs11");
  ERR_clear_error();
  if (values == nullptr) return absl::OkStatus();
  for (int i = 0; i < sk_CONF_VALUE_num(values); ++i) {
    const CONF_VALUE* v = sk_CONF_VALUE_value(values, i);
    std::string_view name = v->name;
    std::string value = v->value;
    if (name == "token_dir") {
      config->token_dir = value;
    } else if (name == "slots") {
      ACCELCRYPT_RETURN_IF_ERROR(
          ParseCount(name, value, 1, 64, &config->slots));
    } else if (name == "pbkdf2_iterations") {
      ACCELCRYPT_RETURN_IF_ERROR(
          ParseCount(name, value, 1, 100000000, &config->pbkdf2_iterations));
    } else if (name == "max_pin_failures") {
      ACCELCRYPT_RETURN_IF_ERROR(
          ParseCount(name, value, 1, 1000000, &config->max_pin_failures));
    } else {
      return CkError(CKR_FUNCTION_FAILED,
                     absl::StrFormat("%s: unknown key [accelcrypt_pkcs11] %s",
                                     path, AsAbsl(name)));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ModuleConfig> LoadModuleConfig() {
  ModuleConfig config;
  std::string path = Env("ACCELCRYPT_PKCS11_CONF");
  if (!path.empty()) {
    absl::StatusOr<Config> core = Config::LoadFile(path);
    if (!core.ok()) {
      return CkError(
          CKR_FUNCTION_FAILED,
          absl::StrCat("ACCELCRYPT_PKCS11_CONF: ", core.status().message()));
    }
    config.core = *std::move(core);
    ACCELCRYPT_RETURN_IF_ERROR(ReadModuleSection(path, &config));
  }
  if (std::string v = Env("ACCELCRYPT_BACKEND_DIR"); !v.empty()) {
    config.core.Set("backend_dir", v);
  }
  if (std::string v = Env("ACCELCRYPT_STATS_DIR"); !v.empty()) {
    config.core.Set("stats_dir", v);
  }
  if (std::string v = Env("ACCELCRYPT_LOG_LEVEL"); !v.empty()) {
    config.core.Set("log_level", v);
  }
  if (auto level = config.core.Get("log_level"); level.has_value()) {
    int v = 0;
    config.log_level = absl::SimpleAtoi(*level, &v) ? v : 1;
  }
  if (std::string v = Env("ACCELCRYPT_PKCS11_TOKEN_DIR"); !v.empty()) {
    config.token_dir = v;
  }
  if (config.token_dir.empty()) {
    if (std::string xdg = Env("XDG_DATA_HOME"); !xdg.empty()) {
      config.token_dir = absl::StrCat(xdg, "/accelcrypt/tokens");
    } else if (std::string home = Env("HOME"); !home.empty()) {
      config.token_dir = absl::StrCat(home, "/.local/share/accelcrypt/tokens");
    } else {
      return CkError(CKR_FUNCTION_FAILED,
                     "no token_dir: set [accelcrypt_pkcs11] token_dir, "
                     "ACCELCRYPT_PKCS11_TOKEN_DIR, XDG_DATA_HOME or HOME");
    }
  }
  return config;
}

}  // namespace accelcrypt::p11
