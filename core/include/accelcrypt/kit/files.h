// SPDX-License-Identifier: Apache-2.0
// accelcrypt/kit/files.h: the two file operations the core, the tools and
// the backends each need (read a small file whole; replace a file so that a
// reader sees the old or the new contents, never a part), written once.
// Header-only, POSIX, no Abseil. Failures return false with errno set.
#ifndef ACCELCRYPT_KIT_FILES_H_
#define ACCELCRYPT_KIT_FILES_H_

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace accelcrypt::kit {

struct ReadOptions {
  // At most this many bytes are read (the rest of a longer file is ignored).
  size_t max_bytes = SIZE_MAX;
  // Refuse a symbolic link as the last component (ELOOP).
  bool no_follow = false;
  // Only a regular file owned by this user or root that neither group nor
  // others can write (EPERM otherwise): for a file whose contents decide
  // something another user must not be able to decide.
  bool trusted_only = false;
};

// ReadFile reads the file at `path` into `*out` (replaced).
inline bool ReadFile(const std::string& path, std::string* out,
                     const ReadOptions& options = {}) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY |
                                        (options.no_follow ? O_NOFOLLOW : 0));
  if (fd < 0) return false;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int saved = errno;
    close(fd);
    errno = saved;
    return false;
  }
  if (S_ISDIR(st.st_mode) ||
      (options.trusted_only &&
       (!S_ISREG(st.st_mode) || (st.st_uid != 0 && st.st_uid != geteuid()) ||
        (st.st_mode & (S_IWGRP | S_IWOTH)) != 0))) {
    close(fd);
    errno = S_ISDIR(st.st_mode) ? EISDIR : EPERM;
    return false;
  }
  out->clear();
  char buf[16384];
  while (out->size() < options.max_bytes) {
    const size_t want = options.max_bytes - out->size() < sizeof(buf)
                            ? options.max_bytes - out->size()
                            : sizeof(buf);
    const ssize_t n = read(fd, buf, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int saved = errno;
      close(fd);
      errno = saved;
      return false;
    }
    if (n == 0) break;
    out->append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return true;
}

struct WriteOptions {
  // Mode of the new file (set with fchmod: the umask does not apply).
  mode_t mode = 0644;
  // When set, the new file takes this file's mode (and, as root, owner).
  const struct stat* like = nullptr;
  // fsync the data before it takes the name.
  bool sync = false;
  // Never replace an existing `path`: the new file is linked to the name
  // (EEXIST when the name is taken) instead of renamed over it.
  bool no_replace = false;
};

// WriteFileAtomically writes `content` to a new temporary file in the
// directory of `path` (mkstemp), then gives it the name `path`. Nothing is
// left behind on failure.
inline bool WriteFileAtomically(const std::string& path,
                                std::string_view content,
                                const WriteOptions& options = {}) {
  std::string tmp = path + ".tmp.XXXXXX";
  const int fd = mkstemp(tmp.data());
  if (fd < 0) return false;
  (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
  bool ok = true;
  size_t done = 0;
  while (ok && done < content.size()) {
    const ssize_t n = write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = false;
    } else {
      done += static_cast<size_t>(n);
    }
  }
  const mode_t mode =
      options.like != nullptr ? options.like->st_mode & 07777 : options.mode;
  if (ok && fchmod(fd, mode) != 0) ok = false;
  if (ok && options.like != nullptr && geteuid() == 0 &&
      fchown(fd, options.like->st_uid, options.like->st_gid) != 0) {
    ok = false;
  }
  if (ok && options.sync && fsync(fd) != 0) ok = false;
  int saved = errno;
  if (close(fd) != 0 && ok) {
    ok = false;
    saved = errno;
  }
  if (ok) {
    if (options.no_replace) {
      if (link(tmp.c_str(), path.c_str()) != 0) {
        ok = false;
        saved = errno;
      }
    } else if (rename(tmp.c_str(), path.c_str()) != 0) {
      ok = false;
      saved = errno;
    }
  }
  if (!ok || options.no_replace) unlink(tmp.c_str());
  errno = ok ? 0 : saved;
  return ok;
}

}  // namespace accelcrypt::kit

#endif  // ACCELCRYPT_KIT_FILES_H_
