// SPDX-License-Identifier: Apache-2.0
#include "pkcs11/store/token_store.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/provider.h>
#include <openssl/rand.h>
#include <sqlite3.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstring>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "accelcrypt/kit/openssl_errors.h"
#include "core/status.h"
#include "pkcs11/common/ck_error.h"

namespace accelcrypt::p11 {
namespace {

constexpr int64_t kSchemaVersion = 1;
// PRAGMA application_id marks the file as ours ("acP1"), so a foreign
// SQLite database is refused rather than written into.
constexpr int64_t kApplicationId = 0x61635031;
constexpr uint32_t kObjectFormat = 1;
constexpr size_t kDekLen = 32;
constexpr size_t kSaltLen = 16;
constexpr size_t kIvLen = 12;
constexpr size_t kTagLen = 16;
constexpr size_t kMaxLabelLen = 32;
// A stored iteration count above this is treated as corruption rather than
// spending minutes in PBKDF2.
constexpr uint64_t kMaxIterations = 100000000;
// Verification re-reads the PIN record inside the write transaction; if
// another process changed it in between, start over (bounded).
constexpr int kVerifyAttempts = 5;
constexpr char kDekCheckLabel[] = "accelcrypt-p11 dek check v1";
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

int UserIndex(TokenStore::User user) {
  return user == TokenStore::User::kSo ? 0 : 1;
}
const char* UserName(TokenStore::User user) {
  return user == TokenStore::User::kSo ? "SO" : "user";
}

// DrainLibcryptoErrors empties the thread's libcrypto error queue and
// returns its first entry's text.
std::string DrainLibcryptoErrors() {
  std::string text = kit::DrainOpenSslErrors(/*first_only=*/true);
  return text.empty() ? "no libcrypto detail" : text;
}

absl::Status CryptoError(std::string_view what) {
  return CkError(CKR_DEVICE_ERROR,
                 absl::StrFormat("token store: %s failed (%s)", AsAbsl(what),
                                 DrainLibcryptoErrors()));
}

void PutLe(uint64_t v, int n, std::vector<uint8_t>* out) {
  for (int i = 0; i < n; ++i)
    out->push_back(static_cast<uint8_t>(v >> (8 * i)));
}

std::vector<uint8_t> ObjectAad(uint64_t id, uint32_t format) {
  std::vector<uint8_t> aad;
  PutLe(id, 8, &aad);
  PutLe(format, 4, &aad);
  return aad;
}

std::vector<uint8_t> DekAad(TokenStore::User user) {
  std::string s = absl::StrFormat("accelcrypt-p11 dek %s v1", UserName(user));
  return std::vector<uint8_t>(s.begin(), s.end());
}

// Crypto holds the library context and the algorithms fetched from it once.
class Crypto {
 public:
  static absl::StatusOr<std::unique_ptr<Crypto>> Create(OSSL_LIB_CTX* shared) {
    std::unique_ptr<Crypto> c(new Crypto());
    if (shared != nullptr) {
      c->libctx_ = shared;
    } else {
      // A fresh context reads no configuration: only OpenSSL's default
      // provider, never accelcrypt's own provider (no recursion).
      c->owned_libctx_ = OSSL_LIB_CTX_new();
      if (c->owned_libctx_ == nullptr) return CryptoError("OSSL_LIB_CTX_new");
      c->provider_ = OSSL_PROVIDER_load(c->owned_libctx_, "default");
      if (c->provider_ == nullptr) {
        return CryptoError("loading OpenSSL's default provider");
      }
      c->libctx_ = c->owned_libctx_;
    }
    c->gcm_ = EVP_CIPHER_fetch(c->libctx_, "AES-256-GCM", nullptr);
    if (c->gcm_ == nullptr) return CryptoError("fetching AES-256-GCM");
    c->kdf_ = EVP_KDF_fetch(c->libctx_, "PBKDF2", nullptr);
    if (c->kdf_ == nullptr) return CryptoError("fetching PBKDF2");
    c->sha256_ = EVP_MD_fetch(c->libctx_, "SHA256", nullptr);
    if (c->sha256_ == nullptr) return CryptoError("fetching SHA-256");
    return c;
  }

  ~Crypto() {
    EVP_CIPHER_free(gcm_);
    EVP_KDF_free(kdf_);
    EVP_MD_free(sha256_);
    if (provider_ != nullptr) OSSL_PROVIDER_unload(provider_);
    OSSL_LIB_CTX_free(owned_libctx_);
  }

  absl::Status Random(absl::Span<uint8_t> out) const {
    if (RAND_bytes_ex(libctx_, out.data(), out.size(), 256) != 1) {
      return CryptoError("RAND_bytes_ex");
    }
    return absl::OkStatus();
  }

  absl::StatusOr<SecretBytes> DeriveKey(std::string_view pin,
                                        absl::Span<const uint8_t> salt,
                                        uint64_t iterations) const {
    SecretBytes key(kDekLen);
    EVP_KDF_CTX* kctx = EVP_KDF_CTX_new(kdf_);
    if (kctx == nullptr) return CryptoError("EVP_KDF_CTX_new");
    int pkcs5 = 1;  // PKCS#5 semantics: no SP 800-132 lower-bound checks
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_octet_string(
            OSSL_KDF_PARAM_PASSWORD, const_cast<char*>(pin.data()), pin.size()),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT,
                                          const_cast<uint8_t*>(salt.data()),
                                          salt.size()),
        OSSL_PARAM_construct_uint64(OSSL_KDF_PARAM_ITER, &iterations),
        OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0),
        OSSL_PARAM_construct_int(OSSL_KDF_PARAM_PKCS5, &pkcs5),
        OSSL_PARAM_construct_end()};
    int ok = EVP_KDF_derive(kctx, key.data(), key.size(), params);
    EVP_KDF_CTX_free(kctx);
    if (ok != 1) return CryptoError("PBKDF2-HMAC-SHA256");
    return key;
  }

  // GcmSeal returns ciphertext || 16-byte tag.
  absl::StatusOr<std::vector<uint8_t>> GcmSeal(
      absl::Span<const uint8_t> key, absl::Span<const uint8_t> iv,
      absl::Span<const uint8_t> aad,
      absl::Span<const uint8_t> plaintext) const {
    if (plaintext.size() > INT_MAX - kTagLen || aad.size() > INT_MAX) {
      return CkError(CKR_DEVICE_MEMORY, "token store: object too large");
    }
    std::vector<uint8_t> out(plaintext.size() + kTagLen);
    EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
    if (ctx == nullptr) return CryptoError("EVP_CIPHER_CTX_new");
    int len = 0;
    bool ok =
        EVP_EncryptInit_ex2(ctx, gcm_, key.data(), iv.data(), nullptr) == 1 &&
        EVP_EncryptUpdate(ctx, nullptr, &len, aad.data(),
                          static_cast<int>(aad.size())) == 1 &&
        EVP_EncryptUpdate(ctx, out.data(), &len, plaintext.data(),
                          static_cast<int>(plaintext.size())) == 1 &&
        EVP_EncryptFinal_ex(ctx, out.data() + len, &len) == 1 &&
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, kTagLen,
                            out.data() + plaintext.size()) == 1;
    EVP_CIPHER_CTX_free(ctx);
    if (!ok) return CryptoError("AES-256-GCM encryption");
    return out;
  }

  // GcmOpen returns the plaintext; a tag mismatch (wrong key, tampered
  // data) is an AuthFailedError (core/status.h).
  absl::StatusOr<SecretBytes> GcmOpen(absl::Span<const uint8_t> key,
                                      absl::Span<const uint8_t> iv,
                                      absl::Span<const uint8_t> aad,
                                      absl::Span<const uint8_t> sealed) const {
    if (iv.size() != kIvLen || sealed.size() < kTagLen ||
        sealed.size() > INT_MAX || aad.size() > INT_MAX) {
      return AuthFailedError("malformed ciphertext");
    }
    size_t ct_len = sealed.size() - kTagLen;
    SecretBytes out(ct_len);
    uint8_t tag[kTagLen];
    std::memcpy(tag, sealed.data() + ct_len, kTagLen);
    EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
    if (ctx == nullptr) return CryptoError("EVP_CIPHER_CTX_new");
    int len = 0;
    bool ok =
        EVP_DecryptInit_ex2(ctx, gcm_, key.data(), iv.data(), nullptr) == 1 &&
        EVP_DecryptUpdate(ctx, nullptr, &len, aad.data(),
                          static_cast<int>(aad.size())) == 1 &&
        EVP_DecryptUpdate(ctx, out.data(), &len, sealed.data(),
                          static_cast<int>(ct_len)) == 1 &&
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, kTagLen, tag) == 1;
    if (!ok) {
      EVP_CIPHER_CTX_free(ctx);
      return CryptoError("AES-256-GCM decryption");
    }
    uint8_t final_block[16];
    int final_ok = EVP_DecryptFinal_ex(ctx, final_block, &len);
    EVP_CIPHER_CTX_free(ctx);
    if (final_ok != 1) {
      ERR_clear_error();
      return AuthFailedError("AES-256-GCM tag mismatch");
    }
    return out;
  }

  // DekCheck is SHA-256(label || dek): identifies the current DEK without
  // revealing it (the DEK is 256 random bits).
  absl::StatusOr<std::vector<uint8_t>> DekCheck(const SecretBytes& dek) const {
    std::vector<uint8_t> out(32);
    unsigned int len = 0;
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    if (ctx == nullptr) return CryptoError("EVP_MD_CTX_new");
    bool ok =
        EVP_DigestInit_ex2(ctx, sha256_, nullptr) == 1 &&
        EVP_DigestUpdate(ctx, kDekCheckLabel, sizeof(kDekCheckLabel)) == 1 &&
        EVP_DigestUpdate(ctx, dek.data(), dek.size()) == 1 &&
        EVP_DigestFinal_ex(ctx, out.data(), &len) == 1;
    EVP_MD_CTX_free(ctx);
    if (!ok) return CryptoError("SHA-256");
    return out;
  }

 private:
  Crypto() = default;
  OSSL_LIB_CTX* libctx_ = nullptr;
  OSSL_LIB_CTX* owned_libctx_ = nullptr;
  OSSL_PROVIDER* provider_ = nullptr;
  EVP_CIPHER* gcm_ = nullptr;
  EVP_KDF* kdf_ = nullptr;
  EVP_MD* sha256_ = nullptr;
};

// Stmt owns one prepared statement.
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

struct PinRecord {
  bool present = false;
  std::vector<uint8_t> salt;
  uint64_t iterations = 0;
  std::vector<uint8_t> iv;
  std::vector<uint8_t> wrapped;

  bool operator==(const PinRecord& o) const {
    return present == o.present && salt == o.salt &&
           iterations == o.iterations && iv == o.iv && wrapped == o.wrapped;
  }
  bool operator!=(const PinRecord& o) const { return !(*this == o); }
};

struct AuthState {
  bool initialized = false;
  uint32_t failures = 0;
  bool locked = false;
  PinRecord pin;
};

struct Verified {
  SecretBytes dek;
  PinRecord pin;
};

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

struct TokenStore::Impl {
  std::string dir;
  std::string path;
  Options options;
  pid_t pid = 0;
  std::unique_ptr<Crypto> crypto;

  absl::Mutex mu;
  sqlite3* db ABSL_GUARDED_BY(mu) = nullptr;
  // The shared change counter (<dir>/token.changes, mapped MAP_SHARED);
  // set by Open, unmapped by the destructor.
  uint64_t* shared_stamp = nullptr;
  uint64_t last_write_stamp ABSL_GUARDED_BY(mu) = 0;
  // True while a thread uses the connection; read by the destructor in a
  // forked child, which must not take `mu` (it may have been copied held).
  std::atomic<bool> db_active{false};

  // Locked holds `mu` and marks the connection active.
  class ABSL_SCOPED_LOCKABLE Locked {
   public:
    explicit Locked(Impl* impl) ABSL_EXCLUSIVE_LOCK_FUNCTION(impl->mu)
        : impl_(impl) {
      impl_->mu.Lock();
      impl_->db_active.store(true);
    }
    ~Locked() ABSL_UNLOCK_FUNCTION() {
      impl_->db_active.store(false);
      impl_->mu.Unlock();
    }

   private:
    Impl* impl_;
  };

  // Txn is one transaction, rolled back unless committed.
  class Txn {
   public:
    explicit Txn(Impl* impl) : impl_(impl) {}
    ~Txn() {
      if (active_ && !sqlite3_get_autocommit(impl_->db)) {
        sqlite3_exec(impl_->db, "ROLLBACK", nullptr, nullptr, nullptr);
      }
    }
    absl::Status Begin(bool write) ABSL_EXCLUSIVE_LOCKS_REQUIRED(impl_->mu) {
      write_ = write;
      ACCELCRYPT_RETURN_IF_ERROR(
          impl_->Exec(write ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED"));
      active_ = true;
      return absl::OkStatus();
    }
    // BeginHoldingWriters starts a read transaction that keeps other
    // connections from writing until it ends (BEGIN IMMEDIATE); the
    // caller writes nothing in it.
    absl::Status BeginHoldingWriters()
        ABSL_EXCLUSIVE_LOCKS_REQUIRED(impl_->mu) {
      write_ = false;
      ACCELCRYPT_RETURN_IF_ERROR(impl_->Exec("BEGIN IMMEDIATE"));
      active_ = true;
      return absl::OkStatus();
    }
    absl::Status Commit() ABSL_EXCLUSIVE_LOCKS_REQUIRED(impl_->mu) {
      uint64_t stamp = 0;
      if (write_) {
        // Published before the commit becomes visible (see the class
        // comment): a reader never sees the change with an old stamp.
        ACCELCRYPT_ASSIGN_OR_RETURN(stamp, impl_->BumpStamp());
      }
      // Statements still positioned on a row would make COMMIT fail; every
      // statement of this connection is ours and done by now.
      for (sqlite3_stmt* s = sqlite3_next_stmt(impl_->db, nullptr);
           s != nullptr; s = sqlite3_next_stmt(impl_->db, s)) {
        sqlite3_reset(s);
      }
      ACCELCRYPT_RETURN_IF_ERROR(impl_->Exec("COMMIT"));
      active_ = false;
      if (write_) impl_->last_write_stamp = stamp;
      return absl::OkStatus();
    }

   private:
    Impl* impl_;
    bool active_ = false;
    bool write_ = false;
  };

  sqlite3* db_for_child() ABSL_NO_THREAD_SAFETY_ANALYSIS { return db; }

  absl::Status CheckPid() const {
    pid_t now = getpid();
    if (now == pid) return absl::OkStatus();
    return CkError(CKR_CRYPTOKI_NOT_INITIALIZED,
                   absl::StrFormat("token store %s was opened by process %d "
                                   "and cannot be used after fork() in "
                                   "process %d; open it again",
                                   path, pid, now));
  }

  absl::Status Error(int rc, std::string_view what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return SqliteError(db, rc, path, what);
  }

  absl::Status Exec(const char* sql) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) return Error(rc, sql);
    return absl::OkStatus();
  }

  absl::StatusOr<Stmt> Prepare(const char* sql)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr);
    if (rc != SQLITE_OK) {
      sqlite3_finalize(stmt);
      return Error(rc, "preparing a statement");
    }
    return Stmt(db, stmt);
  }

  // CheckJournalMode runs a journal_mode pragma and requires "wal".
  absl::Status CheckJournalMode(const char* sql)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    ACCELCRYPT_ASSIGN_OR_RETURN(Stmt s, Prepare(sql));
    ACCELCRYPT_ASSIGN_OR_RETURN(bool row, s.Step());
    std::string mode = row ? s.Text(0) : "";
    if (mode != "wal") {
      return CkError(CKR_DEVICE_ERROR,
                     absl::StrFormat("token store %s: cannot use the WAL "
                                     "journal (mode is '%s')",
                                     path, mode));
    }
    return absl::OkStatus();
  }
  absl::Status EnsureSchema() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // StoredStamp reads the change counter of the current transaction's
  // snapshot (0 when never written).
  absl::StatusOr<uint64_t> StoredStamp() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // BumpStamp, inside a write transaction, sets the change counter to one
  // more than the larger of the stored and the shared value, in both, and
  // returns it.
  absl::StatusOr<uint64_t> BumpStamp() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // MapSharedStamp creates (mode 0600) and maps <dir>/token.changes.
  absl::Status MapSharedStamp();
  absl::Status CheckSchemaVersion() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  absl::StatusOr<AuthState> ReadAuthState(User user)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // CheckDek verifies `dek` is the current DEK of an initialised token.
  absl::Status CheckDek(const SecretBytes* dek)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  absl::Status RequireInitialized() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  absl::StatusOr<PinRecord> Wrap(std::string_view pin, const SecretBytes& dek,
                                 User user) const;
  absl::StatusOr<Verified> Verify(User user, std::string_view pin)
      ABSL_LOCKS_EXCLUDED(mu);
  absl::Status WritePin(User user, const PinRecord& rec)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  // Seal encodes an object's stored form: (iv or empty, data).
  absl::StatusOr<std::pair<std::vector<uint8_t>, std::vector<uint8_t>>> Seal(
      uint64_t id, const AttributeMap& attributes, bool is_private,
      const SecretBytes* dek) const;
  absl::StatusOr<StoredObject> Unseal(Stmt& row, const SecretBytes* dek) const;
  absl::Status WriteObject(uint64_t id, const AttributeMap& attributes,
                           bool is_private, const SecretBytes* dek)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
};

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
    Txn txn(this);
    ACCELCRYPT_RETURN_IF_ERROR(txn.Begin(write));
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
      return txn.Commit();
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
    return txn.Commit();
  }
  return CkError(CKR_GENERAL_ERROR, "unreachable");
}

absl::StatusOr<AuthState> TokenStore::Impl::ReadAuthState(User user) {
  // One statement: one consistent snapshot without an explicit transaction.
  const char* sql =
      user == User::kSo
          ? "SELECT t.initialized, t.so_failures, t.so_locked, p.salt, "
            "p.iterations, p.iv, p.wrapped FROM token t LEFT JOIN pins p "
            "ON p.user = 0 WHERE t.id = 1"
          : "SELECT t.initialized, t.user_failures, t.user_locked, p.salt, "
            "p.iterations, p.iv, p.wrapped FROM token t LEFT JOIN pins p "
            "ON p.user = 1 WHERE t.id = 1";
  ACCELCRYPT_ASSIGN_OR_RETURN(Stmt s, Prepare(sql));
  ACCELCRYPT_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) {
    return CkError(
        CKR_DEVICE_ERROR,
        absl::StrFormat("token store %s: token record missing", path));
  }
  AuthState st;
  st.initialized = s.Int(0) != 0;
  st.failures = static_cast<uint32_t>(s.Int(1));
  st.locked = s.Int(2) != 0;
  st.pin.present = !s.IsNull(3);
  if (st.pin.present) {
    st.pin.salt = s.Blob(3);
    int64_t iter = s.Int(4);
    st.pin.iterations = iter > 0 ? static_cast<uint64_t>(iter) : 0;
    st.pin.iv = s.Blob(5);
    st.pin.wrapped = s.Blob(6);
  }
  return st;
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

absl::Status TokenStore::Impl::CheckDek(const SecretBytes* dek) {
  if (dek == nullptr) {
    return CkError(CKR_USER_NOT_LOGGED_IN,
                   "private objects need a login (no data key)");
  }
  ACCELCRYPT_ASSIGN_OR_RETURN(
      Stmt s, Prepare("SELECT initialized, dek_check FROM token WHERE id = 1"));
  ACCELCRYPT_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row || s.Int(0) == 0) {
    return CkError(CKR_TOKEN_NOT_RECOGNIZED, "token not initialised");
  }
  std::vector<uint8_t> stored = s.Blob(1);
  ACCELCRYPT_ASSIGN_OR_RETURN(std::vector<uint8_t> check,
                              crypto->DekCheck(*dek));
  if (dek->size() != kDekLen || stored.size() != check.size() ||
      CRYPTO_memcmp(stored.data(), check.data(), check.size()) != 0) {
    return CkError(CKR_USER_NOT_LOGGED_IN,
                   "the data key is not this token's current one (token "
                   "re-initialised since login?)");
  }
  return absl::OkStatus();
}

absl::StatusOr<PinRecord> TokenStore::Impl::Wrap(std::string_view pin,
                                                 const SecretBytes& dek,
                                                 User user) const {
  PinRecord rec;
  rec.present = true;
  rec.salt.resize(kSaltLen);
  rec.iv.resize(kIvLen);
  rec.iterations = options.pbkdf2_iterations;
  ACCELCRYPT_RETURN_IF_ERROR(crypto->Random(absl::MakeSpan(rec.salt)));
  ACCELCRYPT_RETURN_IF_ERROR(crypto->Random(absl::MakeSpan(rec.iv)));
  ACCELCRYPT_ASSIGN_OR_RETURN(SecretBytes key,
                              crypto->DeriveKey(pin, rec.salt, rec.iterations));
  ACCELCRYPT_ASSIGN_OR_RETURN(
      rec.wrapped,
      crypto->GcmSeal(key.span(), rec.iv, DekAad(user), dek.span()));
  return rec;
}

absl::Status TokenStore::Impl::WritePin(User user, const PinRecord& rec) {
  ACCELCRYPT_ASSIGN_OR_RETURN(
      Stmt s, Prepare("INSERT OR REPLACE INTO pins(user, salt, iterations, iv, "
                      "wrapped) VALUES (?1, ?2, ?3, ?4, ?5)"));
  return s.Bind(1, int64_t{UserIndex(user)})
      .Bind(2, rec.salt)
      .Bind(3, static_cast<int64_t>(rec.iterations))
      .Bind(4, rec.iv)
      .Bind(5, rec.wrapped)
      .Run();
}

absl::StatusOr<Verified> TokenStore::Impl::Verify(User user,
                                                  std::string_view pin) {
  for (int attempt = 0; attempt < kVerifyAttempts; ++attempt) {
    AuthState before;
    {
      Locked lock(this);
      ACCELCRYPT_ASSIGN_OR_RETURN(before, ReadAuthState(user));
    }
    if (!before.initialized) {
      return CkError(CKR_TOKEN_NOT_RECOGNIZED, "token not initialised");
    }
    if (before.locked) {
      return CkError(CKR_PIN_LOCKED,
                     absl::StrFormat("the %s PIN is locked", UserName(user)));
    }
    if (!before.pin.present) {
      if (user == User::kUser) {
        return CkError(CKR_USER_PIN_NOT_INITIALIZED,
                       "the user PIN is not initialised");
      }
      return CkError(
          CKR_DEVICE_ERROR,
          absl::StrFormat("token store %s: SO PIN record missing", path));
    }
    if (before.pin.iterations == 0 || before.pin.iterations > kMaxIterations ||
        before.pin.salt.empty()) {
      return CkError(CKR_DEVICE_ERROR,
                     absl::StrFormat("token store %s: malformed %s PIN record",
                                     path, UserName(user)));
    }
    // PBKDF2 runs without the lock: other threads keep using the store.
    ACCELCRYPT_ASSIGN_OR_RETURN(
        SecretBytes key,
        crypto->DeriveKey(pin, before.pin.salt, before.pin.iterations));
    absl::StatusOr<SecretBytes> dek = crypto->GcmOpen(
        key.span(), before.pin.iv, DekAad(user), before.pin.wrapped);
    key.Wipe();
    bool match = dek.ok();
    if (!match && GetStatusDetail(dek.status()) != StatusDetail::kAuthFailed) {
      return dek.status();
    }
    if (match && dek->size() != kDekLen) {
      return CkError(CKR_DEVICE_ERROR,
                     absl::StrFormat("token store %s: wrapped data key has "
                                     "the wrong length",
                                     path));
    }
    // A right PIN with no failures to reset writes nothing.
    if (match && before.failures == 0) {
      return Verified{std::move(*dek), std::move(before.pin)};
    }
    Locked lock(this);
    Txn txn(this);
    ACCELCRYPT_RETURN_IF_ERROR(txn.Begin(true));
    ACCELCRYPT_ASSIGN_OR_RETURN(AuthState now, ReadAuthState(user));
    // The record changed under us (C_SetPIN or C_InitToken elsewhere):
    // verify again against the new one rather than count a stale failure.
    if (!now.initialized || now.pin != before.pin) continue;
    if (now.locked) {
      return CkError(CKR_PIN_LOCKED,
                     absl::StrFormat("the %s PIN is locked", UserName(user)));
    }
    uint32_t failures = match ? 0 : now.failures + 1;
    bool locked = failures >= options.max_pin_failures;
    ACCELCRYPT_ASSIGN_OR_RETURN(
        Stmt s,
        Prepare(user == User::kSo ? "UPDATE token SET so_failures = ?1, "
                                    "so_locked = ?2 WHERE id = 1"
                                  : "UPDATE token SET user_failures = ?1, "
                                    "user_locked = ?2 WHERE id = 1"));
    ACCELCRYPT_RETURN_IF_ERROR(
        s.Bind(1, int64_t{failures}).Bind(2, int64_t{locked}).Run());
    ACCELCRYPT_RETURN_IF_ERROR(txn.Commit());
    if (match) return Verified{std::move(*dek), std::move(before.pin)};
    return CkError(
        CKR_PIN_INCORRECT,
        absl::StrFormat("wrong %s PIN (%d of %d failures)", UserName(user),
                        failures, options.max_pin_failures));
  }
  return CkError(CKR_DEVICE_ERROR,
                 absl::StrFormat("token store %s: the %s PIN record kept "
                                 "changing during verification",
                                 path, UserName(user)));
}

absl::StatusOr<std::pair<std::vector<uint8_t>, std::vector<uint8_t>>>
TokenStore::Impl::Seal(uint64_t id, const AttributeMap& attributes,
                       bool is_private, const SecretBytes* dek) const {
  std::vector<uint8_t> plain = attributes.Serialize();
  if (!is_private)
    return std::make_pair(std::vector<uint8_t>(), std::move(plain));
  std::vector<uint8_t> iv(kIvLen);
  absl::Status st = crypto->Random(absl::MakeSpan(iv));
  absl::StatusOr<std::vector<uint8_t>> sealed;
  if (st.ok()) {
    sealed =
        crypto->GcmSeal(dek->span(), iv, ObjectAad(id, kObjectFormat), plain);
  }
  OPENSSL_cleanse(plain.data(), plain.size());
  if (!st.ok()) return st;
  if (!sealed.ok()) return sealed.status();
  return std::make_pair(std::move(iv), std::move(*sealed));
}

absl::StatusOr<TokenStore::StoredObject> TokenStore::Impl::Unseal(
    Stmt& row, const SecretBytes* dek) const {
  StoredObject obj;
  obj.id = static_cast<uint64_t>(row.Int(0));
  obj.is_private = row.Int(1) != 0;
  int64_t format = row.Int(2);
  if (format != kObjectFormat) {
    return CkError(CKR_DEVICE_ERROR,
                   absl::StrFormat("token store %s: object %d has unknown "
                                   "format %d",
                                   path, obj.id, format));
  }
  std::vector<uint8_t> data = row.Blob(4);
  std::optional<AttributeMap> parsed;
  if (!obj.is_private) {
    parsed = AttributeMap::Parse(data);
  } else if (dek == nullptr) {
    obj.locked = true;
    return obj;
  } else {
    absl::StatusOr<SecretBytes> plain = crypto->GcmOpen(
        dek->span(), row.Blob(3), ObjectAad(obj.id, format), data);
    if (!plain.ok()) {
      return CkError(CKR_DEVICE_ERROR,
                     absl::StrFormat("token store %s: private object %d does "
                                     "not decrypt (%s): the store is damaged "
                                     "or was tampered with",
                                     path, obj.id, plain.status().message()));
    }
    parsed = AttributeMap::Parse(plain->span());
  }
  if (!parsed.has_value()) {
    return CkError(CKR_DEVICE_ERROR,
                   absl::StrFormat("token store %s: object %d has malformed "
                                   "attributes",
                                   path, obj.id));
  }
  obj.attributes = std::move(*parsed);
  return obj;
}

absl::Status TokenStore::Impl::WriteObject(uint64_t id,
                                           const AttributeMap& attributes,
                                           bool is_private,
                                           const SecretBytes* dek) {
  ACCELCRYPT_ASSIGN_OR_RETURN(auto sealed,
                              Seal(id, attributes, is_private, dek));
  ACCELCRYPT_ASSIGN_OR_RETURN(
      Stmt s, Prepare("UPDATE objects SET is_private = ?1, format = ?2, "
                      "iv = ?3, data = ?4 WHERE id = ?5"));
  s.Bind(1, int64_t{is_private}).Bind(2, int64_t{kObjectFormat});
  if (is_private) {
    s.Bind(3, sealed.first);
  } else {
    s.BindNull(3);
  }
  return s.Bind(4, sealed.second).Bind(5, static_cast<int64_t>(id)).Run();
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
  ACCELCRYPT_ASSIGN_OR_RETURN(impl->crypto, Crypto::Create(options.libctx));

  std::unique_ptr<TokenStore> store(new TokenStore(std::move(impl)));
  Impl* im = store->impl_.get();
  Impl::Locked lock(im);
  // The store serialises its own use of the connection (NOMUTEX); SQLite
  // itself is still built thread-safe for other connections.
  int rc = sqlite3_open_v2(im->path.c_str(), &im->db,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX |
                               SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_EXRESCODE,
                           nullptr);
  if (rc != SQLITE_OK) {
    absl::Status st = im->Error(rc, "opening the database");
    sqlite3_close_v2(im->db);
    im->db = nullptr;
    return st;
  }
  // SQLite silently falls back to read-only for a file it cannot write.
  if (sqlite3_db_readonly(im->db, "main") == 1) {
    return CkError(
        CKR_DEVICE_ERROR,
        absl::StrFormat("token store %s: the file is not writable", im->path));
  }
  sqlite3_busy_timeout(im->db, options.busy_timeout_ms);
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
                        std::chrono::milliseconds(options.busy_timeout_ms);
  while (true) {
    absl::Status st = im->CheckJournalMode("PRAGMA journal_mode = WAL");
    if (st.ok()) break;
    if ((sqlite3_extended_errcode(im->db) & 0xff) != SQLITE_BUSY ||
        std::chrono::steady_clock::now() >= deadline) {
      return st;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // synchronous = FULL: a commit survives power loss. secure_delete: freed
  // pages (old wrapped data keys after C_SetPIN, destroyed objects) are
  // zeroed, not left readable in the file.
  ACCELCRYPT_RETURN_IF_ERROR(im->Exec("PRAGMA synchronous = FULL"));
  ACCELCRYPT_RETURN_IF_ERROR(im->Exec("PRAGMA secure_delete = ON"));
  ACCELCRYPT_RETURN_IF_ERROR(im->EnsureSchema());
  ACCELCRYPT_RETURN_IF_ERROR(im->CheckJournalMode("PRAGMA journal_mode"));
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

absl::Status TokenStore::InitToken(std::string_view so_pin,
                                   std::string_view label) {
  ACCELCRYPT_RETURN_IF_ERROR(impl_->CheckPid());
  if (label.size() > kMaxLabelLen) {
    return CkError(CKR_ARGUMENTS_BAD,
                   absl::StrFormat("token label is %d bytes, at most %d",
                                   label.size(), kMaxLabelLen));
  }
  for (int attempt = 0; attempt < kVerifyAttempts; ++attempt) {
    bool initialized;
    {
      Impl::Locked lock(impl_.get());
      ACCELCRYPT_ASSIGN_OR_RETURN(AuthState st,
                                  impl_->ReadAuthState(User::kSo));
      initialized = st.initialized;
    }
    PinRecord verified;
    if (initialized) {
      ACCELCRYPT_ASSIGN_OR_RETURN(Verified v, impl_->Verify(User::kSo, so_pin));
      verified = std::move(v.pin);
    }
    SecretBytes dek(kDekLen);
    ACCELCRYPT_RETURN_IF_ERROR(impl_->crypto->Random(dek.mutable_span()));
    ACCELCRYPT_ASSIGN_OR_RETURN(PinRecord rec,
                                impl_->Wrap(so_pin, dek, User::kSo));
    ACCELCRYPT_ASSIGN_OR_RETURN(std::vector<uint8_t> check,
                                impl_->crypto->DekCheck(dek));

    Impl::Locked lock(impl_.get());
    Impl::Txn txn(impl_.get());
    ACCELCRYPT_RETURN_IF_ERROR(txn.Begin(true));
    ACCELCRYPT_ASSIGN_OR_RETURN(AuthState now, impl_->ReadAuthState(User::kSo));
    // Initialised (or re-initialised) by someone else meanwhile: the SO PIN
    // we checked, if any, no longer decides. Start over.
    if (now.initialized != initialized ||
        (initialized && now.pin != verified)) {
      continue;
    }
    if (now.locked) return CkError(CKR_PIN_LOCKED, "the SO PIN is locked");
    ACCELCRYPT_RETURN_IF_ERROR(impl_->Exec("DELETE FROM objects"));
    ACCELCRYPT_RETURN_IF_ERROR(impl_->Exec("DELETE FROM pins"));
    ACCELCRYPT_RETURN_IF_ERROR(impl_->WritePin(User::kSo, rec));
    ACCELCRYPT_ASSIGN_OR_RETURN(
        Stmt s, impl_->Prepare("UPDATE token SET initialized = 1, label = ?1, "
                               "so_failures = 0, user_failures = 0, "
                               "so_locked = 0, user_locked = 0, "
                               "dek_check = ?2 WHERE id = 1"));
    ACCELCRYPT_RETURN_IF_ERROR(s.Bind(1, label).Bind(2, check).Run());
    return txn.Commit();
  }
  return CkError(CKR_DEVICE_ERROR,
                 absl::StrFormat("token store %s: token state kept changing "
                                 "during C_InitToken",
                                 impl_->path));
}

absl::StatusOr<SecretBytes> TokenStore::Login(User user, std::string_view pin) {
  ACCELCRYPT_RETURN_IF_ERROR(impl_->CheckPid());
  ACCELCRYPT_ASSIGN_OR_RETURN(Verified v, impl_->Verify(user, pin));
  return std::move(v.dek);
}

absl::Status TokenStore::InitPin(const SecretBytes& dek,
                                 std::string_view user_pin) {
  ACCELCRYPT_RETURN_IF_ERROR(impl_->CheckPid());
  if (dek.size() != kDekLen) {
    return CkError(CKR_USER_NOT_LOGGED_IN, "no valid data key (SO login)");
  }
  ACCELCRYPT_ASSIGN_OR_RETURN(PinRecord rec,
                              impl_->Wrap(user_pin, dek, User::kUser));
  Impl::Locked lock(impl_.get());
  Impl::Txn txn(impl_.get());
  ACCELCRYPT_RETURN_IF_ERROR(txn.Begin(true));
  ACCELCRYPT_RETURN_IF_ERROR(impl_->CheckDek(&dek));
  ACCELCRYPT_RETURN_IF_ERROR(impl_->WritePin(User::kUser, rec));
  ACCELCRYPT_RETURN_IF_ERROR(impl_->Exec(
      "UPDATE token SET user_failures = 0, user_locked = 0 WHERE id = 1"));
  return txn.Commit();
}

absl::Status TokenStore::SetPin(User user, std::string_view old_pin,
                                std::string_view new_pin) {
  ACCELCRYPT_RETURN_IF_ERROR(impl_->CheckPid());
  for (int attempt = 0; attempt < kVerifyAttempts; ++attempt) {
    ACCELCRYPT_ASSIGN_OR_RETURN(Verified v, impl_->Verify(user, old_pin));
    ACCELCRYPT_ASSIGN_OR_RETURN(PinRecord rec,
                                impl_->Wrap(new_pin, v.dek, user));
    Impl::Locked lock(impl_.get());
    Impl::Txn txn(impl_.get());
    ACCELCRYPT_RETURN_IF_ERROR(txn.Begin(true));
    ACCELCRYPT_ASSIGN_OR_RETURN(AuthState now, impl_->ReadAuthState(user));
    if (!now.initialized || now.pin != v.pin) continue;
    if (now.locked) {
      return CkError(CKR_PIN_LOCKED,
                     absl::StrFormat("the %s PIN is locked", UserName(user)));
    }
    ACCELCRYPT_RETURN_IF_ERROR(impl_->WritePin(user, rec));
    ACCELCRYPT_RETURN_IF_ERROR(impl_->Exec(
        user == User::kSo ? "UPDATE token SET so_failures = 0 WHERE id = 1"
                          : "UPDATE token SET user_failures = 0 WHERE id = 1"));
    return txn.Commit();
  }
  return CkError(CKR_DEVICE_ERROR,
                 absl::StrFormat("token store %s: the %s PIN record kept "
                                 "changing during C_SetPIN",
                                 impl_->path, UserName(user)));
}

absl::StatusOr<uint64_t> TokenStore::CreateObject(
    const AttributeMap& attributes, bool is_private, const SecretBytes* dek) {
  ACCELCRYPT_RETURN_IF_ERROR(impl_->CheckPid());
  Impl::Locked lock(impl_.get());
  Impl::Txn txn(impl_.get());
  ACCELCRYPT_RETURN_IF_ERROR(txn.Begin(true));
  if (is_private) {
    ACCELCRYPT_RETURN_IF_ERROR(impl_->CheckDek(dek));
  } else {
    ACCELCRYPT_RETURN_IF_ERROR(impl_->RequireInitialized());
  }
  // The id is the AAD, so the row is made first and filled in the same
  // transaction.
  ACCELCRYPT_ASSIGN_OR_RETURN(
      Stmt s, impl_->Prepare("INSERT INTO objects(is_private, format, data) "
                             "VALUES (?1, ?2, x'')"));
  ACCELCRYPT_RETURN_IF_ERROR(
      s.Bind(1, int64_t{is_private}).Bind(2, int64_t{kObjectFormat}).Run());
  uint64_t id = static_cast<uint64_t>(sqlite3_last_insert_rowid(impl_->db));
  ACCELCRYPT_RETURN_IF_ERROR(
      impl_->WriteObject(id, attributes, is_private, dek));
  ACCELCRYPT_RETURN_IF_ERROR(txn.Commit());
  return id;
}

absl::Status TokenStore::UpdateObject(uint64_t id,
                                      const AttributeMap& attributes,
                                      bool is_private, const SecretBytes* dek,
                                      const AttributeMap* expected) {
  ACCELCRYPT_RETURN_IF_ERROR(impl_->CheckPid());
  Impl::Locked lock(impl_.get());
  Impl::Txn txn(impl_.get());
  ACCELCRYPT_RETURN_IF_ERROR(txn.Begin(true));
  if (is_private) {
    ACCELCRYPT_RETURN_IF_ERROR(impl_->CheckDek(dek));
  } else {
    ACCELCRYPT_RETURN_IF_ERROR(impl_->RequireInitialized());
  }
  ACCELCRYPT_ASSIGN_OR_RETURN(
      Stmt s, impl_->Prepare("SELECT id, is_private, format, iv, data FROM "
                             "objects WHERE id = ?1"));
  ACCELCRYPT_ASSIGN_OR_RETURN(bool row,
                              s.Bind(1, static_cast<int64_t>(id)).Step());
  if (!row) {
    return CkError(CKR_OBJECT_HANDLE_INVALID,
                   absl::StrFormat("token object %d does not exist", id));
  }
  if (expected != nullptr) {
    // Compare-and-set under the write lock: another process's change
    // since the caller read the object is never overwritten.
    ACCELCRYPT_ASSIGN_OR_RETURN(StoredObject now, impl_->Unseal(s, dek));
    if (now.locked) {
      return CkError(CKR_USER_NOT_LOGGED_IN,
                     "private objects need a login (no data key)");
    }
    std::vector<uint8_t> a = now.attributes.Serialize();
    std::vector<uint8_t> b = expected->Serialize();
    const bool same = a == b;
    OPENSSL_cleanse(a.data(), a.size());
    OPENSSL_cleanse(b.data(), b.size());
    if (!same) {
      return absl::AbortedError(absl::StrFormat(
          "token object %d was changed by another process", id));
    }
  }
  ACCELCRYPT_RETURN_IF_ERROR(
      impl_->WriteObject(id, attributes, is_private, dek));
  return txn.Commit();
}

absl::Status TokenStore::DestroyObject(uint64_t id) {
  ACCELCRYPT_RETURN_IF_ERROR(impl_->CheckPid());
  Impl::Locked lock(impl_.get());
  Impl::Txn txn(impl_.get());
  ACCELCRYPT_RETURN_IF_ERROR(txn.Begin(true));
  ACCELCRYPT_ASSIGN_OR_RETURN(
      Stmt s, impl_->Prepare("DELETE FROM objects WHERE id = ?1"));
  ACCELCRYPT_RETURN_IF_ERROR(s.Bind(1, static_cast<int64_t>(id)).Run());
  if (sqlite3_changes(impl_->db) == 0) {
    return CkError(CKR_OBJECT_HANDLE_INVALID,
                   absl::StrFormat("token object %d does not exist", id));
  }
  return txn.Commit();
}

absl::StatusOr<std::vector<TokenStore::StoredObject>> TokenStore::LoadObjects(
    const SecretBytes* dek, uint64_t* stamp) {
  ACCELCRYPT_RETURN_IF_ERROR(impl_->CheckPid());
  Impl::Locked lock(impl_.get());
  // A snapshot whose stored stamp is behind the shared one was read while a
  // writer was committing, or after a writer died between moving the
  // shared stamp and committing. Read again holding writers off (BEGIN
  // IMMEDIATE, nothing written): then no writer is between the two, so a
  // shared stamp still ahead belongs to a dead writer and is this
  // snapshot's stamp; without that, readers would re-read on every check
  // until the next write.
  for (bool hold_writers : {false, true}) {
    Impl::Txn txn(impl_.get());
    ACCELCRYPT_RETURN_IF_ERROR(hold_writers ? txn.BeginHoldingWriters()
                                            : txn.Begin(false));
    if (dek != nullptr) ACCELCRYPT_RETURN_IF_ERROR(impl_->CheckDek(dek));
    ACCELCRYPT_ASSIGN_OR_RETURN(uint64_t stored, impl_->StoredStamp());
    const uint64_t shared = ChangeStamp();
    if (stamp != nullptr && stored < shared && !hold_writers) continue;
    if (stamp != nullptr) *stamp = std::max(stored, shared);
    ACCELCRYPT_ASSIGN_OR_RETURN(
        Stmt s, impl_->Prepare("SELECT id, is_private, format, iv, data FROM "
                               "objects ORDER BY id"));
    std::vector<StoredObject> out;
    while (true) {
      ACCELCRYPT_ASSIGN_OR_RETURN(bool row, s.Step());
      if (!row) break;
      ACCELCRYPT_ASSIGN_OR_RETURN(StoredObject obj, impl_->Unseal(s, dek));
      out.push_back(std::move(obj));
    }
    ACCELCRYPT_RETURN_IF_ERROR(txn.Commit());
    return out;
  }
  return CkError(CKR_GENERAL_ERROR, "unreachable");
}

absl::StatusOr<TokenStore::StoredObject> TokenStore::LoadObject(
    uint64_t id, const SecretBytes* dek) {
  ACCELCRYPT_RETURN_IF_ERROR(impl_->CheckPid());
  Impl::Locked lock(impl_.get());
  Impl::Txn txn(impl_.get());
  ACCELCRYPT_RETURN_IF_ERROR(txn.Begin(false));
  if (dek != nullptr) ACCELCRYPT_RETURN_IF_ERROR(impl_->CheckDek(dek));
  ACCELCRYPT_ASSIGN_OR_RETURN(
      Stmt s, impl_->Prepare("SELECT id, is_private, format, iv, data FROM "
                             "objects WHERE id = ?1"));
  ACCELCRYPT_ASSIGN_OR_RETURN(bool row,
                              s.Bind(1, static_cast<int64_t>(id)).Step());
  if (!row) {
    return CkError(CKR_OBJECT_HANDLE_INVALID,
                   absl::StrFormat("token object %d does not exist", id));
  }
  ACCELCRYPT_ASSIGN_OR_RETURN(StoredObject obj, impl_->Unseal(s, dek));
  ACCELCRYPT_RETURN_IF_ERROR(txn.Commit());
  return obj;
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
