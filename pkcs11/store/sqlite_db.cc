// SPDX-License-Identifier: Apache-2.0
// The token store's SQLite wrapper (internal/sqlite_db.h): statement
// stepping, SQLite result codes as CK_RVs, transactions, and opening a
// database in WAL mode, with the busy handling that needs.
#include "pkcs11/store/internal/sqlite_db.h"

#include <chrono>
#include <thread>

#include "absl/strings/str_format.h"
#include "pkcs11/common/ck_error.h"

namespace accelcrypt::p11::internal {
namespace {

CK_RV RvForSqlite(int rc) {
  switch (rc & 0xff) {
    case SQLITE_NOMEM:
      return CKR_HOST_MEMORY;
    case SQLITE_FULL:
      return CKR_DEVICE_MEMORY;
    default:
      return CKR_DEVICE_ERROR;
  }
}

}  // namespace

absl::Status SqliteError(sqlite3* db, int rc, std::string_view path,
                         std::string_view what) {
  const char* msg = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  return CkError(RvForSqlite(rc),
                 absl::StrFormat("token store %s: %s: %s (SQLite code %d)",
                                 AsAbsl(path), AsAbsl(what), msg, rc));
}

absl::StatusOr<bool> Stmt::Step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  const char* file = sqlite3_db_filename(db_, "main");
  const char* sql = sqlite3_sql(stmt_);
  return SqliteError(db_, rc, file != nullptr ? file : "?",
                     sql != nullptr ? sql : "statement");
}

absl::Status SqliteExec(sqlite3* db, std::string_view path, const char* sql) {
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return SqliteError(db, rc, path, sql);
  return absl::OkStatus();
}

absl::StatusOr<Stmt> SqlitePrepare(sqlite3* db, std::string_view path,
                                   const char* sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return SqliteError(db, rc, path, "preparing a statement");
  }
  return Stmt(db, stmt);
}

absl::Status CheckJournalMode(sqlite3* db, std::string_view path,
                              const char* sql) {
  ACCELCRYPT_ASSIGN_OR_RETURN(Stmt s, SqlitePrepare(db, path, sql));
  ACCELCRYPT_ASSIGN_OR_RETURN(bool row, s.Step());
  std::string mode = row ? s.Text(0) : "";
  if (mode != "wal") {
    return CkError(CKR_DEVICE_ERROR,
                   absl::StrFormat("token store %s: cannot use the WAL "
                                   "journal (mode is '%s')",
                                   AsAbsl(path), mode));
  }
  return absl::OkStatus();
}

absl::Status OpenWal(const std::string& path, int busy_timeout_ms,
                     sqlite3** db) {
  int rc = sqlite3_open_v2(path.c_str(), db,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX |
                               SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_EXRESCODE,
                           nullptr);
  if (rc != SQLITE_OK) {
    absl::Status st = SqliteError(*db, rc, path, "opening the database");
    sqlite3_close_v2(*db);
    *db = nullptr;
    return st;
  }
  // SQLite silently falls back to read-only for a file it cannot write.
  if (sqlite3_db_readonly(*db, "main") == 1) {
    return CkError(
        CKR_DEVICE_ERROR,
        absl::StrFormat("token store %s: the file is not writable", path));
  }
  sqlite3_busy_timeout(*db, busy_timeout_ms);
  // WAL: readers never block the writer, a killed writer leaves the last
  // commit. Switching a fresh file to WAL needs a moment of exclusive
  // access, which a concurrent opener may hold: the busy handler waits.
  // The statement is finalised before anything else runs: while it is
  // active its read transaction would keep the connection on the rollback
  // journal. Switching a new file to WAL upgrades a read lock to a write
  // lock, for which SQLite returns SQLITE_BUSY at once (no busy handler:
  // waiting could deadlock) when another process is creating the store at
  // the same moment; retry until the busy timeout.
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(busy_timeout_ms);
  while (true) {
    absl::Status st = CheckJournalMode(*db, path, "PRAGMA journal_mode = WAL");
    if (st.ok()) break;
    if ((sqlite3_extended_errcode(*db) & 0xff) != SQLITE_BUSY ||
        std::chrono::steady_clock::now() >= deadline) {
      return st;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return absl::OkStatus();
}

SqliteTransaction::~SqliteTransaction() {
  if (active_ && !sqlite3_get_autocommit(db_)) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
}

absl::Status SqliteTransaction::Begin(sqlite3* db, std::string_view path,
                                      const char* begin) {
  db_ = db;
  path_ = path;
  ACCELCRYPT_RETURN_IF_ERROR(SqliteExec(db_, path_, begin));
  active_ = true;
  return absl::OkStatus();
}

absl::Status SqliteTransaction::Commit() {
  // Statements still positioned on a row would make COMMIT fail; every
  // statement of this connection is ours and done by now.
  for (sqlite3_stmt* s = sqlite3_next_stmt(db_, nullptr); s != nullptr;
       s = sqlite3_next_stmt(db_, s)) {
    sqlite3_reset(s);
  }
  ACCELCRYPT_RETURN_IF_ERROR(SqliteExec(db_, path_, "COMMIT"));
  active_ = false;
  return absl::OkStatus();
}

}  // namespace accelcrypt::p11::internal
