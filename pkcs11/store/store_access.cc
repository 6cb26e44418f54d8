// SPDX-License-Identifier: Apache-2.0
// TokenStore::Usable (token_store.h): whether this process may use a token
// store, decided from the file system alone, with a message an operator can
// act on.
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "absl/strings/str_format.h"
#include "pkcs11/common/ck_error.h"
#include "pkcs11/store/token_store.h"

namespace accelcrypt::p11 {
namespace {

// UserName is "uid N (name)", or "uid N".
std::string UserName(uid_t uid) {
  struct passwd pw;
  struct passwd* found = nullptr;
  char buf[1024];
  if (getpwuid_r(uid, &pw, buf, sizeof(buf), &found) == 0 && found != nullptr) {
    return absl::StrFormat("uid %d (%s)", uid, found->pw_name);
  }
  return absl::StrFormat("uid %d", uid);
}

// Owner is ", owned by uid N (name), group G, mode 0700" for `path`, or
// "" when it cannot be read either.
std::string Owner(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return "";
  return absl::StrFormat(", owned by %s, group %d, mode %04o",
                         UserName(st.st_uid), st.st_gid, st.st_mode & 07777);
}

// Parent is the directory part of `path`.
std::string Parent(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

absl::Status Refused(const std::string& path, const char* want, int err) {
  return CkError(
      CKR_DEVICE_ERROR,
      absl::StrFormat("token store %s: this process (%s) cannot %s it: %s%s",
                      path, UserName(geteuid()), want, std::strerror(err),
                      Owner(path)));
}

// Check is faccessat with the effective ids (a daemon's worker after
// setuid), for `path` when it exists.
absl::Status Check(const std::string& path, int mode, const char* want,
                   bool must_exist) {
  if (faccessat(AT_FDCWD, path.c_str(), mode, AT_EACCESS) == 0) {
    return absl::OkStatus();
  }
  if (errno == ENOENT && !must_exist) return absl::OkStatus();
  return Refused(path, want, errno);
}

}  // namespace

absl::Status TokenStore::Usable(const std::string& dir) {
  const std::string db = dir + "/token.sqlite";
  struct stat st;
  if (stat(db.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) {
      return CkError(CKR_TOKEN_NOT_RECOGNIZED,
                     absl::StrFormat("no token store in %s (the token is not "
                                     "initialised; C_InitToken makes one)",
                                     dir));
    }
    // EACCES: a directory on the way may not be searched; name the
    // nearest one this process cannot enter.
    std::string refusing = dir;
    for (std::string d = dir; d != "/" && d != ".";) {
      const std::string up = Parent(d);
      if (faccessat(AT_FDCWD, up.c_str(), X_OK, AT_EACCESS) == 0) {
        refusing = d;
        break;
      }
      d = up;
    }
    return CkError(
        CKR_DEVICE_ERROR,
        absl::StrFormat("token store %s: this process (%s) cannot reach it: "
                        "%s (directory %s%s)",
                        db, UserName(geteuid()), std::strerror(err), refusing,
                        Owner(refusing)));
  }
  // SQLite in WAL mode writes the database, its -wal and -shm files (made
  // next to it when absent) and our change counter on every open.
  absl::Status st_dir = Check(dir, W_OK | X_OK, "add files to", true);
  if (!st_dir.ok()) return st_dir;
  for (const char* name : {"/token.sqlite", "/token.sqlite-wal",
                           "/token.sqlite-shm", "/token.changes"}) {
    absl::Status file = Check(dir + name, R_OK | W_OK, "read and write",
                              std::string(name) == "/token.sqlite");
    if (!file.ok()) return file;
  }
  return absl::OkStatus();
}

}  // namespace accelcrypt::p11
