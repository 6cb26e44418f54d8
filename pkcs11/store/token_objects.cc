// SPDX-License-Identifier: Apache-2.0
// TokenStore's objects (token_store.h): attributes serialised, private
// objects sealed at rest under the data key (AES-256-GCM, AAD = object id
// and format), and creating, updating, destroying and loading them.
#include <openssl/crypto.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/status.h"
#include "pkcs11/common/ck_error.h"
#include "pkcs11/store/internal/sealing.h"
#include "pkcs11/store/internal/sqlite_db.h"
#include "pkcs11/store/internal/store_impl.h"
#include "pkcs11/store/token_store.h"

namespace accelcrypt::p11 {
namespace {

using internal::kIvLen;
using internal::Stmt;

constexpr uint32_t kObjectFormat = 1;

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

}  // namespace

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

absl::StatusOr<uint64_t> TokenStore::CreateObject(
    const AttributeMap& attributes, bool is_private, const SecretBytes* dek) {
  ACCELCRYPT_RETURN_IF_ERROR(impl_->CheckPid());
  Impl::Locked lock(impl_.get());
  Impl::Txn txn;
  ACCELCRYPT_RETURN_IF_ERROR(impl_->Begin(txn, true));
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
  ACCELCRYPT_RETURN_IF_ERROR(impl_->Commit(txn));
  return id;
}

absl::Status TokenStore::UpdateObject(uint64_t id,
                                      const AttributeMap& attributes,
                                      bool is_private, const SecretBytes* dek,
                                      const AttributeMap* expected) {
  ACCELCRYPT_RETURN_IF_ERROR(impl_->CheckPid());
  Impl::Locked lock(impl_.get());
  Impl::Txn txn;
  ACCELCRYPT_RETURN_IF_ERROR(impl_->Begin(txn, true));
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
  return impl_->Commit(txn);
}

absl::Status TokenStore::DestroyObject(uint64_t id) {
  ACCELCRYPT_RETURN_IF_ERROR(impl_->CheckPid());
  Impl::Locked lock(impl_.get());
  Impl::Txn txn;
  ACCELCRYPT_RETURN_IF_ERROR(impl_->Begin(txn, true));
  ACCELCRYPT_ASSIGN_OR_RETURN(
      Stmt s, impl_->Prepare("DELETE FROM objects WHERE id = ?1"));
  ACCELCRYPT_RETURN_IF_ERROR(s.Bind(1, static_cast<int64_t>(id)).Run());
  if (sqlite3_changes(impl_->db) == 0) {
    return CkError(CKR_OBJECT_HANDLE_INVALID,
                   absl::StrFormat("token object %d does not exist", id));
  }
  return impl_->Commit(txn);
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
    Impl::Txn txn;
    ACCELCRYPT_RETURN_IF_ERROR(hold_writers ? impl_->BeginHoldingWriters(txn)
                                            : impl_->Begin(txn, false));
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
    ACCELCRYPT_RETURN_IF_ERROR(impl_->Commit(txn));
    return out;
  }
  return CkError(CKR_GENERAL_ERROR, "unreachable");
}

absl::StatusOr<TokenStore::StoredObject> TokenStore::LoadObject(
    uint64_t id, const SecretBytes* dek) {
  ACCELCRYPT_RETURN_IF_ERROR(impl_->CheckPid());
  Impl::Locked lock(impl_.get());
  Impl::Txn txn;
  ACCELCRYPT_RETURN_IF_ERROR(impl_->Begin(txn, false));
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
  ACCELCRYPT_RETURN_IF_ERROR(impl_->Commit(txn));
  return obj;
}

}  // namespace accelcrypt::p11
