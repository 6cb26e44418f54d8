// SPDX-License-Identifier: Apache-2.0
// The token store's SQLite wrapper: prepared statements, SQLite result
// codes as CK_RV statuses, transactions rolled back unless committed, and
// opening a database in WAL mode with the busy handling that needs. Knows
// nothing of tokens; every error names the database file.
#ifndef ACCELCRYPT_PKCS11_STORE_INTERNAL_SQLITE_DB_H_
#define ACCELCRYPT_PKCS11_STORE_INTERNAL_SQLITE_DB_H_

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/status.h"

namespace accelcrypt::p11::internal {

// Stmt owns one prepared statement. Not thread-safe: used under the lock
// that serialises its connection.
class Stmt {
 public:
  Stmt(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  Stmt(Stmt&& o) noexcept
      : db_(o.db_), stmt_(std::exchange(o.stmt_, nullptr)) {}
  Stmt& operator=(Stmt&&) = delete;
  ~Stmt() { sqlite3_finalize(stmt_); }

  Stmt& Bind(int i, int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  Stmt& Bind(int i, absl::Span<const uint8_t> v) {
    // A zero-length blob must still be a blob, not NULL.
    static const uint8_t kEmpty = 0;
    sqlite3_bind_blob64(stmt_, i, v.empty() ? &kEmpty : v.data(), v.size(),
                        SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& Bind(int i, std::string_view v) {
    sqlite3_bind_text64(stmt_, i, v.data(), v.size(), SQLITE_TRANSIENT,
                        SQLITE_UTF8);
    return *this;
  }
  Stmt& BindNull(int i) {
    sqlite3_bind_null(stmt_, i);
    return *this;
  }

  // Step returns true for a row, false when done.
  absl::StatusOr<bool> Step();
  // Run steps to completion, ignoring rows.
  absl::Status Run() {
    while (true) {
      ACCELCRYPT_ASSIGN_OR_RETURN(bool row, Step());
      if (!row) return absl::OkStatus();
    }
  }

  int64_t Int(int i) { return sqlite3_column_int64(stmt_, i); }
  bool IsNull(int i) { return sqlite3_column_type(stmt_, i) == SQLITE_NULL; }
  std::vector<uint8_t> Blob(int i) {
    const auto* p = static_cast<const uint8_t*>(sqlite3_column_blob(stmt_, i));
    int n = sqlite3_column_bytes(stmt_, i);
    if (p == nullptr || n <= 0) return {};
    return std::vector<uint8_t>(p, p + n);
  }
  std::string Text(int i) {
    const auto* p =
        reinterpret_cast<const char*>(sqlite3_column_text(stmt_, i));
    int n = sqlite3_column_bytes(stmt_, i);
    if (p == nullptr || n <= 0) return {};
    return std::string(p, n);
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_;
};

// SqliteError is the status for SQLite result code `rc` of `what` on the
// database `path` (`db` may be null): CKR_HOST_MEMORY for SQLITE_NOMEM,
// CKR_DEVICE_MEMORY for SQLITE_FULL, else CKR_DEVICE_ERROR, with SQLite's
// message and code.
absl::Status SqliteError(sqlite3* db, int rc, std::string_view path,
                         std::string_view what);

// SqliteExec runs `sql` (rows ignored) on `db`, the database `path`.
absl::Status SqliteExec(sqlite3* db, std::string_view path, const char* sql);

// SqlitePrepare prepares `sql` on `db`, the database `path`.
absl::StatusOr<Stmt> SqlitePrepare(sqlite3* db, std::string_view path,
                                   const char* sql);

// CheckJournalMode runs a journal_mode pragma and requires "wal"
// (CKR_DEVICE_ERROR naming the mode otherwise).
absl::Status CheckJournalMode(sqlite3* db, std::string_view path,
                              const char* sql);

// OpenWal opens the existing database file `path` read-write (no symbolic
// link, extended result codes, NOMUTEX: the caller serialises its use of
// the connection) into `*db`, sets the busy timeout and switches it to the
// WAL journal, retrying a busy database until `busy_timeout_ms` has
// passed. On failure `*db` is either null or a connection the caller
// closes (sqlite3_close_v2). CKR_DEVICE_ERROR for a file that is not
// writable or cannot use WAL; SqliteError's codes otherwise.
absl::Status OpenWal(const std::string& path, int busy_timeout_ms,
                     sqlite3** db);

// SqliteTransaction is one transaction on a connection, rolled back by the
// destructor unless committed. Not thread-safe.
class SqliteTransaction {
 public:
  SqliteTransaction() = default;
  SqliteTransaction(const SqliteTransaction&) = delete;
  SqliteTransaction& operator=(const SqliteTransaction&) = delete;
  ~SqliteTransaction();

  // Begin runs `begin` ("BEGIN IMMEDIATE", "BEGIN DEFERRED") on `db`, the
  // database `path` (which must outlive the transaction).
  absl::Status Begin(sqlite3* db, std::string_view path, const char* begin);
  // Commit resets the connection's statements (a statement still
  // positioned on a row would make COMMIT fail) and commits.
  absl::Status Commit();

 private:
  sqlite3* db_ = nullptr;
  std::string_view path_;
  bool active_ = false;
};

}  // namespace accelcrypt::p11::internal

#endif  // ACCELCRYPT_PKCS11_STORE_INTERNAL_SQLITE_DB_H_
