// SPDX-License-Identifier: Apache-2.0
// `accelcrypt pin-status` / `accelcrypt pin-reset`: the refused-PIN markers
// the PKCS#11 client backend writes (docs/configuration.md, "PIN safety").
// The directory is resolved the way the backend resolves it
// (backends/pkcs11/pin_marker.cc, ResolveStateDir); the tool only reads and
// removes files, so it names no backend.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/strip.h"
#include "core/config.h"
#include "tools/commands.h"

namespace accelcrypt::tools {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

// StateDir: --state-dir, else pkcs11.pin_state_dir from the configuration,
// else $ACCELCRYPT_STATE_DIR, else (not root) $XDG_STATE_HOME/accelcrypt or
// ~/.local/state/accelcrypt when it exists, else /var/lib/accelcrypt.
std::string StateDir(const PinOptions& options) {
  if (!options.state_dir.empty()) return options.state_dir;
  absl::StatusOr<Config> config = options.config_file.empty()
                                      ? Config::FromEnvironment()
                                      : Config::LoadFile(options.config_file);
  if (config.ok()) {
    if (auto dir = config->Get("pkcs11.pin_state_dir"); dir && !dir->empty()) {
      return *dir;
    }
  }
  if (std::string env = Env("ACCELCRYPT_STATE_DIR"); !env.empty()) return env;
  if (geteuid() != 0) {
    std::string dir;
    if (std::string xdg = Env("XDG_STATE_HOME"); !xdg.empty()) {
      dir = xdg + "/accelcrypt";
    } else if (std::string home = Env("HOME"); !home.empty()) {
      dir = home + "/.local/state/accelcrypt";
    }
    std::error_code ec;
    if (!dir.empty() && std::filesystem::is_directory(dir, ec)) return dir;
  }
  return "/var/lib/accelcrypt";
}

struct Marker {
  std::string path;
  std::map<std::string, std::string> fields;
};

std::vector<Marker> ReadMarkers(const std::string& dir) {
  std::vector<Marker> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("pin-refused-", 0) != 0 ||
        entry.path().extension() != ".marker") {
      continue;
    }
    Marker m;
    m.path = entry.path().string();
    std::ifstream in(m.path);
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] == '#') continue;
      size_t eq = line.find('=');
      if (eq == std::string::npos) continue;
      m.fields[std::string(absl::StripAsciiWhitespace(line.substr(0, eq)))] =
          std::string(absl::StripAsciiWhitespace(line.substr(eq + 1)));
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace

int RunPin(const PinOptions& options) {
  const std::string dir = StateDir(options);
  std::vector<Marker> markers = ReadMarkers(dir);
  if (!options.reset) {
    std::cout << "Refused-PIN markers in " << dir << ":\n";
    if (markers.empty()) std::cout << "  (none: no PIN is blocked)\n";
    for (const Marker& m : markers) {
      auto f = [&](const char* k) {
        auto it = m.fields.find(k);
        return it == m.fields.end() ? std::string("?") : it->second;
      };
      std::cout << "  token '" << f("token_label") << "' serial "
                << f("token_serial") << " (" << f("token_manufacturer") << " "
                << f("token_model") << "): " << f("result") << " at "
                << f("time") << "\n    " << m.path << "\n";
    }
    if (!markers.empty()) {
      std::cout << "The PIN each marker names is not tried again until the "
                   "PIN source (pin_file/pin_env) changes or `accelcrypt "
                   "pin-reset` removes the marker.\n";
    }
    return kExitOk;
  }
  int removed = 0;
  for (const Marker& m : markers) {
    auto serial = m.fields.find("token_serial");
    if (!options.token.empty() &&
        (serial == m.fields.end() || serial->second != options.token)) {
      continue;
    }
    std::error_code ec;
    if (!std::filesystem::remove(m.path, ec) || ec) {
      std::cerr << "accelcrypt pin-reset: cannot remove " << m.path << ": "
                << ec.message() << "\n";
      return kExitFailure;
    }
    std::filesystem::remove(m.path + ".lock", ec);
    std::cout << "removed " << m.path << "\n";
    ++removed;
  }
  if (removed == 0) {
    std::cout << "no marker"
              << (options.token.empty() ? "" : " for token " + options.token)
              << " in " << dir << "\n";
  }
  return kExitOk;
}

}  // namespace accelcrypt::tools
