// SPDX-License-Identifier: Apache-2.0
#include "backends/pkcs11/pin_marker.h"

#include <fcntl.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "accelcrypt/kit/files.h"

namespace accelcrypt::pkcs11_client {
namespace {

// Domain strings keep these digests apart from any other use of the same
// inputs. Changing the hash's inputs or cost means a new version string.
constexpr char kNameDomain[] = "accelcrypt pkcs11 pin marker name v1";
constexpr char kHashDomain[] = "accelcrypt pkcs11 refused pin v1";
// PBKDF2 cost: the marker lies in a user-readable place and a wrong PIN is
// often one typo away from the right one, so the hash is slow to invert
// (about 10 ms here, spent only when a marker exists and a login is due).
constexpr unsigned kIterations = 20000;
constexpr size_t kSaltLen = 16;

// MakeDirs creates `path` and its parents with `mode`; true when it exists
// as a directory afterwards.
bool MakeDirs(const std::string& path, mode_t mode) {
  struct stat st;
  if (stat(path.c_str(), &st) == 0) return S_ISDIR(st.st_mode);
  size_t slash = path.find_last_of('/');
  if (slash != std::string::npos && slash > 0 &&
      !MakeDirs(path.substr(0, slash), 0755)) {
    return false;
  }
  return mkdir(path.c_str(), mode) == 0 || errno == EEXIST;
}

bool Writable(const std::string& dir) {
  return access(dir.c_str(), W_OK | X_OK) == 0;
}

bool Usable(const std::string& dir) {
  return !dir.empty() && MakeDirs(dir, 0700) && Writable(dir);
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

// OneLine keeps a token field on its line in the marker file.
std::string OneLine(absl::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

}  // namespace

absl::StatusOr<std::string> ResolveStateDir(const std::string& configured) {
  if (!configured.empty()) {
    if (Usable(configured)) return configured;
    return absl::UnavailableError(absl::StrFormat(
        "pin_state_dir %s is not a writable directory", configured));
  }
  const std::string env = Env("ACCELCRYPT_STATE_DIR");
  if (!env.empty()) {
    if (Usable(env)) return env;
    return absl::UnavailableError(absl::StrFormat(
        "ACCELCRYPT_STATE_DIR %s is not a writable directory", env));
  }
  constexpr char kSystem[] = "/var/lib/accelcrypt";
  if (geteuid() != 0) {
    std::string dir;
    if (std::string xdg = Env("XDG_STATE_HOME"); !xdg.empty()) {
      dir = xdg + "/accelcrypt";
    } else if (std::string home = Env("HOME"); !home.empty()) {
      dir = home + "/.local/state/accelcrypt";
    }
    if (Usable(dir)) return dir;
  }
  if (Usable(kSystem)) return std::string(kSystem);
  return absl::UnavailableError(
      "no writable state directory (pin_state_dir, $ACCELCRYPT_STATE_DIR, "
      "$XDG_STATE_HOME/accelcrypt, ~/.local/state/accelcrypt, "
      "/var/lib/accelcrypt)");
}

std::string MarkerPath(const std::string& dir, const TokenIdentity& token) {
  std::string in = kNameDomain;
  for (const std::string* part :
       {&token.manufacturer, &token.model, &token.serial}) {
    in.push_back('\0');
    in += *part;
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int md_len = 0;
  EVP_Digest(in.data(), in.size(), md, &md_len, EVP_sha256(), nullptr);
  std::string hex = absl::BytesToHexString(absl::string_view(
      reinterpret_cast<const char*>(md), md_len < 16 ? md_len : 16));
  return absl::StrFormat("%s/pin-refused-%s.marker", dir, hex);
}

absl::StatusOr<PinHash> HashPin(OSSL_LIB_CTX* libctx,
                                const TokenIdentity& token,
                                absl::string_view pin,
                                std::vector<uint8_t> salt) {
  PinHash out;
  if (salt.empty()) {
    salt.resize(kSaltLen);
    if (RAND_bytes_ex(libctx, salt.data(), salt.size(), 0) != 1) {
      return absl::InternalError("pkcs11: no random bytes for the PIN marker");
    }
  }
  out.salt = salt;
  // PBKDF2 salt: random || domain || 0 || serial.
  std::vector<uint8_t> full = salt;
  full.insert(full.end(), kHashDomain, kHashDomain + sizeof(kHashDomain));
  full.insert(full.end(), token.serial.begin(), token.serial.end());
  EVP_KDF* kdf = EVP_KDF_fetch(libctx, "PBKDF2", nullptr);
  EVP_KDF_CTX* ctx = kdf != nullptr ? EVP_KDF_CTX_new(kdf) : nullptr;
  EVP_KDF_free(kdf);
  if (ctx == nullptr) return absl::InternalError("pkcs11: no PBKDF2");
  unsigned iter = kIterations;
  int no_checks = 1;  // PINs may be shorter than SP 800-132's floor
  char digest[] = "SHA2-256";
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_octet_string(
          OSSL_KDF_PARAM_PASSWORD, const_cast<char*>(pin.data()), pin.size()),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, full.data(),
                                        full.size()),
      OSSL_PARAM_construct_uint(OSSL_KDF_PARAM_ITER, &iter),
      OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0),
      OSSL_PARAM_construct_int(OSSL_KDF_PARAM_PKCS5, &no_checks),
      OSSL_PARAM_construct_end()};
  out.hash.resize(32);
  const bool ok =
      EVP_KDF_derive(ctx, out.hash.data(), out.hash.size(), params) == 1;
  EVP_KDF_CTX_free(ctx);
  if (!ok) return absl::InternalError("pkcs11: PBKDF2 failed");
  return out;
}

bool Matches(OSSL_LIB_CTX* libctx, const TokenIdentity& token,
             absl::string_view pin, const PinHash& refused) {
  if (refused.salt.empty() || refused.hash.size() != 32) return false;
  absl::StatusOr<PinHash> mine = HashPin(libctx, token, pin, refused.salt);
  return mine.ok() &&
         CRYPTO_memcmp(mine->hash.data(), refused.hash.data(), 32) == 0;
}

std::optional<PinHash> ReadMarker(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  PinHash out;
  for (std::string line; std::getline(in, line);) {
    absl::string_view l = line;
    if (l.empty() || l[0] == '#') continue;
    size_t eq = l.find('=');
    if (eq == absl::string_view::npos) continue;
    absl::string_view key = absl::StripAsciiWhitespace(l.substr(0, eq));
    absl::string_view value = absl::StripAsciiWhitespace(l.substr(eq + 1));
    if (key == "salt" || key == "pin_hash") {
      std::string bytes = absl::HexStringToBytes(value);
      (key == "salt" ? out.salt : out.hash).assign(bytes.begin(), bytes.end());
    } else if (key == "result") {
      out.result = std::string(value);
    } else if (key == "time") {
      out.time = std::string(value);
    }
  }
  if (out.salt.empty() || out.hash.size() != 32) return std::nullopt;
  return out;
}

absl::Status WriteMarker(const std::string& path, const TokenIdentity& token,
                         const PinHash& refused) {
  std::string text = absl::StrFormat(
      "# accelcrypt PKCS#11 client backend: this token refused a PIN, which\n"
      "# will not be tried again. Fix pin_file/pin_env (a different PIN is\n"
      "# tried once), or run `accelcrypt pin-reset --token SERIAL` to allow\n"
      "# this one again. The PIN itself is not stored, only a salted hash.\n"
      "token_serial = %s\ntoken_label = %s\ntoken_manufacturer = %s\n"
      "token_model = %s\nresult = %s\ntime = %s\npid = %d\n"
      "kdf = pbkdf2-sha256\niterations = %d\nsalt = %s\npin_hash = %s\n",
      OneLine(token.serial), OneLine(token.label), OneLine(token.manufacturer),
      OneLine(token.model), refused.result, refused.time, getpid(), kIterations,
      absl::BytesToHexString(
          absl::string_view(reinterpret_cast<const char*>(refused.salt.data()),
                            refused.salt.size())),
      absl::BytesToHexString(
          absl::string_view(reinterpret_cast<const char*>(refused.hash.data()),
                            refused.hash.size())));
  if (!kit::WriteFileAtomically(path, text, {.mode = 0600, .sync = true})) {
    return absl::UnavailableError(
        absl::StrFormat("cannot write %s: %s", path, std::strerror(errno)));
  }
  return absl::OkStatus();
}

std::string UtcNow() {
  time_t now = time(nullptr);
  struct tm tm;
  gmtime_r(&now, &tm);
  char buf[32];
  strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

MarkerLock::MarkerLock(const std::string& marker_path) {
  const std::string lock = marker_path + ".lock";
  fd_ = open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd_ < 0) return;
  while (flock(fd_, LOCK_EX) != 0) {
    if (errno != EINTR) {
      close(fd_);
      fd_ = -1;
      return;
    }
  }
}

MarkerLock::~MarkerLock() {
  if (fd_ >= 0) close(fd_);  // releases the lock
}

}  // namespace accelcrypt::pkcs11_client
