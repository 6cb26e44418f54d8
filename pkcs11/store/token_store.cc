// SPDX-License-Identifier: Apache-2.0
// TokenStore (token_store.h): opening a store (directory, files, the SQLite
// connection, the schema), the change stamps shared between processes, the
// token record, and fork and teardown. PINs are in token_pins.cc, objects
// in token_objects.cc, the crypto in sealing.cc, the SQLite wrapper in
// sqlite_db.cc.
#include "pkcs11/store/token_store.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"
#include "core/status.h"
#include "pkcs11/common/ck_error.h"
#include "pkcs11/store/internal/sealing.h"
#include "pkcs11/store/internal/sqlite_db.h"
#include "pkcs11/store/internal/store_impl.h"

namespace accelcrypt::p11 {
namespace {

using internal::kMaxIterations;
using internal::Stmt;

constexpr int64_t kSchemaVersion = 1;
// PRAGMA application_id marks the file as ours ("acP1"), so a foreign
// SQLite database is refused rather than written into.
constexpr int64_t kApplicationId = 0x61635031;
// <dir>/token.changes: the shared change counter at offset 0.
constexpr off_t kStampFileLen = 4096;

constexpr char kSchemaSql[] = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY NOT NULL, value);
CREATE TABLE token(
  id INTEGER PRIMARY KEY CHECK (id = 1),
  initialized INTEGER NOT NULL DEFAULT 0,
  label TEXT NOT NULL DEFAULT '',
  serial TEXT NOT NULL,
  so_failures INTEGER NOT NULL DEFAULT 0,
  user_failures INTEGER NOT NULL DEFAULT 0,
  so_locked INTEGER NOT NULL DEFAULT 0,
  user_locked INTEGER NOT NULL DEFAULT 0,
  dek_check BLOB);
CREATE TABLE pins(
  user INTEGER PRIMARY KEY,
  salt BLOB NOT NULL,
  iterations INTEGER NOT NULL,
  iv BLOB NOT NULL,
  wrapped BLOB NOT NULL);
CREATE TABLE objects(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  is_private INTEGER NOT NULL,
  format INTEGER NOT NULL,
  iv BLOB,
  data BLOB NOT NULL);
)sql";

// StorePath is the database file of the store in `dir`.
std::string StorePath(const std::string& dir) { return dir + "/token.sqlite"; }

absl::Status MakeDirs(const std::string& dir) {
  if (dir.empty()) {
    return CkError(CKR_ARGUMENTS_BAD, "token store: empty directory name");
  }
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    std::string prefix = dir.substr(0, pos);
    if (prefix.empty() || prefix.back() == '/') continue;
    if (mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
      return CkError(CKR_DEVICE_ERROR,
                     absl::StrFormat("token store: cannot create directory "
                                     "%s: %s",
                                     prefix, std::strerror(errno)));
    }
  }
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return CkError(CKR_DEVICE_ERROR,
                   absl::StrFormat("token store: %s is not a directory", dir));
  }
  return absl::OkStatus();
}

// CreateFile makes `path` with mode 0600 when missing, so SQLite (which
// gives its -wal and -shm files the database file's mode) never creates a
// world-readable file under a permissive umask.
absl::Status CreateFile(const std::string& path) {
  int fd = open(path.c_str(),
                O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd >= 0) {
    fchmod(fd, 0600);
    close(fd);
    return absl::OkStatus();
  }
  if (errno != EEXIST) {
    return CkError(CKR_DEVICE_ERROR,
                   absl::StrFormat("token store: cannot create %s: %s", path,
                                   std::strerror(errno)));
  }
  struct stat st;
  if (lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return CkError(
        CKR_DEVICE_ERROR,
        absl::StrFormat("token store: %s is not a regular file", path));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status TokenStore::Impl::CheckPid() const {
  pid_t now = getpid();
  if (now == pid) return absl::OkStatus();
  return CkError(CKR_CRYPTOKI_NOT_INITIALIZED,
                 absl::StrFormat("token store %s was opened by process %d "
                                 "and cannot be used after fork() in "
                                 "process %d; open it again",
                                 path, pid, now));
}

absl::StatusOr<uint64_t> TokenStore::Impl::StoredStamp() {
  ACCELCRYPT_ASSIGN_OR_RETURN(
      Stmt s, Prepare("SELECT value FROM meta WHERE key = 'change_counter'"));
  ACCELCRYPT_ASSIGN_OR_RETURN(bool row, s.Step());
  const int64_t v = row ? s.Int(0) : 0;
  return v > 0 ? static_cast<uint64_t>(v) : 0;
}

absl::StatusOr<uint64_t> TokenStore::Impl::BumpStamp() {
  ACCELCRYPT_ASSIGN_OR_RETURN(uint64_t stored, StoredStamp());
  std::atomic_ref<uint64_t> shared(*shared_stamp);
  // Writers are serialised by SQLite's write lock (held here), so a plain
  // store suffices; the shared value may be ahead of the stored one after
  // a writer died between the two.
  const uint64_t next =
      std::max(stored, shared.load(std::memory_order_acquire)) + 1;
  if (next > static_cast<uint64_t>(INT64_MAX)) {
    return CkError(CKR_DEVICE_ERROR,
                   absl::StrFormat("token store %s: change counter "
                                   "exhausted",
                                   path));
  }
  ACCELCRYPT_ASSIGN_OR_RETURN(
      Stmt s, Prepare("INSERT OR REPLACE INTO meta(key, value) VALUES "
                      "('change_counter', ?1)"));
  ACCELCRYPT_RETURN_IF_ERROR(s.Bind(1, static_cast<int64_t>(next)).Run());
  shared.store(next, std::memory_order_seq_cst);
  return next;
}

absl::Status TokenStore::Impl::MapSharedStamp() {
  const std::string file = dir + "/token.changes";
  int fd = open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    return CkError(CKR_DEVICE_ERROR,
                   absl::StrFormat("token store: cannot open %s: %s", file,
                                   std::strerror(errno)));
  }
  struct stat st;
  // A fresh file is extended to one zeroed page; concurrent openers doing
  // the same leave the same contents.
  bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
            (st.st_size >= kStampFileLen || ftruncate(fd, kStampFileLen) == 0);
  void* map = ok ? mmap(nullptr, kStampFileLen, PROT_READ | PROT_WRITE,
                        MAP_SHARED, fd, 0)
                 : MAP_FAILED;
  const int err = errno;
  close(fd);
  if (map == MAP_FAILED) {
    return CkError(CKR_DEVICE_ERROR,
                   absl::StrFormat("token store: cannot map %s: %s", file,
                                   std::strerror(err)));
  }
  shared_stamp = static_cast<uint64_t*>(map);
  return absl::OkStatus();
}

absl::Status TokenStore::Impl::CheckSchemaVersion() {
  ACCELCRYPT_ASSIGN_OR_RETURN(
      Stmt s, Prepare("SELECT value FROM meta WHERE key = 'schema_version'"));
  ACCELCRYPT_ASSIGN_OR_RETURN(bool row, s.Step());
  int64_t version = row ? s.Int(0) : 0;
  if (version > kSchemaVersion) {
    return CkError(
        CKR_TOKEN_NOT_RECOGNIZED,
        absl::StrFormat("token store %s has schema version %d; this module "
                        "reads versions up to %d (written by a newer "
                        "accelcrypt?)",
                        path, version, kSchemaVersion));
  }
  if (version < 1) {
    return CkError(
        CKR_DEVICE_ERROR,
        absl::StrFormat("token store %s: no valid schema version", path));
  }
  return absl::OkStatus();
}

absl::Status TokenStore::Impl::EnsureSchema() {
  for (bool write : {false, true}) {
    Txn txn;
    ACCELCRYPT_RETURN_IF_ERROR(Begin(txn, write));
    ACCELCRYPT_ASSIGN_OR_RETURN(
        Stmt s, Prepare("SELECT (SELECT count(*) FROM sqlite_master), "
                        "(SELECT count(*) FROM sqlite_master WHERE "
                        "type = 'table' AND name = 'meta')"));
    ACCELCRYPT_ASSIGN_OR_RETURN(bool row, s.Step());
    int64_t total = row ? s.Int(0) : 0;
    bool has_meta = row && s.Int(1) == 1;
    ACCELCRYPT_ASSIGN_OR_RETURN(Stmt a, Prepare("PRAGMA application_id"));
    ACCELCRYPT_ASSIGN_OR_RETURN(row, a.Step());
    int64_t app_id = row ? a.Int(0) : 0;
    if ((app_id != 0 && app_id != kApplicationId) || (total > 0 && !has_meta)) {
      return CkError(CKR_DEVICE_ERROR,
                     absl::StrFormat("token store %s: an SQLite database but "
                                     "not an accelcrypt token store",
                                     path));
    }
    if (has_meta) {
      ACCELCRYPT_RETURN_IF_ERROR(CheckSchemaVersion());
      return Commit(txn);
    }
    if (!write) continue;  // create it under the write lock
    ACCELCRYPT_RETURN_IF_ERROR(Exec(kSchemaSql));
    ACCELCRYPT_RETURN_IF_ERROR(Exec(
        absl::StrFormat("PRAGMA application_id = %d", kApplicationId).c_str()));
    ACCELCRYPT_ASSIGN_OR_RETURN(Stmt m,
                                Prepare("INSERT INTO meta(key, value) VALUES "
                                        "('schema_version', ?1)"));
    ACCELCRYPT_RETURN_IF_ERROR(m.Bind(1, kSchemaVersion).Run());
    uint8_t serial_bytes[8];
    ACCELCRYPT_RETURN_IF_ERROR(crypto->Random(absl::MakeSpan(serial_bytes)));
    std::string serial;
    for (uint8_t b : serial_bytes) serial += absl::StrFormat("%02X", b);
    ACCELCRYPT_ASSIGN_OR_RETURN(
        Stmt t, Prepare("INSERT INTO token(id, serial) VALUES (1, ?1)"));
    ACCELCRYPT_RETURN_IF_ERROR(t.Bind(1, serial).Run());
    return Commit(txn);
  }
  return CkError(CKR_GENERAL_ERROR, "unreachable");
}

absl::Status TokenStore::Impl::RequireInitialized() {
  ACCELCRYPT_ASSIGN_OR_RETURN(
      Stmt s, Prepare("SELECT initialized FROM token WHERE id = 1"));
  ACCELCRYPT_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row || s.Int(0) == 0) {
    return CkError(CKR_TOKEN_NOT_RECOGNIZED, "token not initialised");
  }
  return absl::OkStatus();
}

TokenStore::TokenStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TokenStore::~TokenStore() {
  if (impl_ == nullptr) return;
  if (getpid() != impl_->pid) {
    // A forked child: SQLite must not be used here, and `mu` or libcrypto
    // state may have been copied mid-use. Closing the connection releases
    // only this process's copy of SQLite's per-file lock bookkeeping (so a
    // store reopened here takes real locks); its close-time checkpoint
    // needs an exclusive lock that any process using the file denies. If a
    // thread was inside SQLite at fork(), even that is unsafe: leak.
    Impl* impl = impl_.release();
    if (!impl->db_active.load()) {
      sqlite3_close_v2(impl->db_for_child());
    }
    return;
  }
  Impl::Locked lock(impl_.get());
  sqlite3_close_v2(impl_->db);
  impl_->db = nullptr;
  if (impl_->shared_stamp != nullptr) {
    munmap(impl_->shared_stamp, kStampFileLen);
    impl_->shared_stamp = nullptr;
  }
}

bool TokenStore::Absent(const std::string& dir) {
  struct stat st;
  return stat(StorePath(dir).c_str(), &st) != 0 && errno == ENOENT;
}

absl::StatusOr<std::unique_ptr<TokenStore>> TokenStore::Open(
    const std::string& dir, const Options& options) {
  if (options.max_pin_failures < 1 || options.pbkdf2_iterations < 1 ||
      options.pbkdf2_iterations > kMaxIterations ||
      options.busy_timeout_ms < 0) {
    return CkError(CKR_ARGUMENTS_BAD,
                   "token store: max_pin_failures and pbkdf2_iterations must "
                   "be at least 1, busy_timeout_ms not negative");
  }
  auto impl = std::make_unique<Impl>();
  impl->dir = dir;
  while (impl->dir.size() > 1 && impl->dir.back() == '/') impl->dir.pop_back();
  impl->path = StorePath(impl->dir);
  impl->options = options;
  impl->pid = getpid();
  ACCELCRYPT_RETURN_IF_ERROR(MakeDirs(impl->dir));
  ACCELCRYPT_RETURN_IF_ERROR(CreateFile(impl->path));
  ACCELCRYPT_RETURN_IF_ERROR(impl->MapSharedStamp());
  ACCELCRYPT_ASSIGN_OR_RETURN(impl->crypto,
                              internal::StoreCrypto::Create(options.libctx));

  std::unique_ptr<TokenStore> store(new TokenStore(std::move(impl)));
  Impl* im = store->impl_.get();
  Impl::Locked lock(im);
  // The store serialises its own use of the connection (NOMUTEX); SQLite
  // itself is still built thread-safe for other connections.
  ACCELCRYPT_RETURN_IF_ERROR(
      internal::OpenWal(im->path, options.busy_timeout_ms, &im->db));
  // synchronous = FULL: a commit survives power loss. secure_delete: freed
  // pages (old wrapped data keys after C_SetPIN, destroyed objects) are
  // zeroed, not left readable in the file.
  ACCELCRYPT_RETURN_IF_ERROR(im->Exec("PRAGMA synchronous = FULL"));
  ACCELCRYPT_RETURN_IF_ERROR(im->Exec("PRAGMA secure_delete = ON"));
  ACCELCRYPT_RETURN_IF_ERROR(im->EnsureSchema());
  ACCELCRYPT_RETURN_IF_ERROR(
      internal::CheckJournalMode(im->db, im->path, "PRAGMA journal_mode"));
  return store;
}

const std::string& TokenStore::path() const { return impl_->path; }

absl::StatusOr<TokenStore::TokenInfo> TokenStore::Info() {
  ACCELCRYPT_RETURN_IF_ERROR(impl_->CheckPid());
  Impl::Locked lock(impl_.get());
  ACCELCRYPT_ASSIGN_OR_RETURN(
      Stmt s,
      impl_->Prepare("SELECT initialized, label, serial, so_failures, "
                     "user_failures, so_locked, user_locked, EXISTS (SELECT 1 "
                     "FROM pins WHERE user = 1) FROM token WHERE id = 1"));
  ACCELCRYPT_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) {
    return CkError(
        CKR_DEVICE_ERROR,
        absl::StrFormat("token store %s: token record missing", impl_->path));
  }
  TokenInfo info;
  info.initialized = s.Int(0) != 0;
  info.label = s.Text(1);
  info.serial = s.Text(2);
  info.so_failures = static_cast<uint32_t>(s.Int(3));
  info.user_failures = static_cast<uint32_t>(s.Int(4));
  info.so_locked = s.Int(5) != 0;
  info.user_locked = s.Int(6) != 0;
  info.user_pin_initialized = s.Int(7) != 0;
  return info;
}

uint64_t TokenStore::ChangeStamp() const {
  return std::atomic_ref<uint64_t>(*impl_->shared_stamp)
      .load(std::memory_order_seq_cst);
}

uint64_t TokenStore::LastWriteStamp() {
  Impl::Locked lock(impl_.get());
  return impl_->last_write_stamp;
}

}  // namespace accelcrypt::p11
