// SPDX-License-Identifier: Apache-2.0
// TokenStore's PINs (token_store.h): the data key wrapped under a key
// derived from each PIN, PIN verification with its failure counter and
// lock, the check that a data key is the token's current one, and
// C_InitToken, C_Login, C_InitPIN and C_SetPIN.
#include <openssl/crypto.h>

#include <cstdint>
#include <string>
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

using internal::AuthState;
using internal::kDekLen;
using internal::kIvLen;
using internal::kMaxIterations;
using internal::kSaltLen;
using internal::PinRecord;
using internal::Stmt;
using internal::Verified;

constexpr size_t kMaxLabelLen = 32;
// Verification re-reads the PIN record inside the write transaction; if
// another process changed it in between, start over (bounded).
constexpr int kVerifyAttempts = 5;

int UserIndex(TokenStore::User user) {
  return user == TokenStore::User::kSo ? 0 : 1;
}
const char* UserName(TokenStore::User user) {
  return user == TokenStore::User::kSo ? "SO" : "user";
}

std::vector<uint8_t> DekAad(TokenStore::User user) {
  std::string s = absl::StrFormat("accelcrypt-p11 dek %s v1", UserName(user));
  return std::vector<uint8_t>(s.begin(), s.end());
}

}  // namespace

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
    Txn txn;
    ACCELCRYPT_RETURN_IF_ERROR(Begin(txn, true));
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
    ACCELCRYPT_RETURN_IF_ERROR(Commit(txn));
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
    Impl::Txn txn;
    ACCELCRYPT_RETURN_IF_ERROR(impl_->Begin(txn, true));
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
    return impl_->Commit(txn);
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
  Impl::Txn txn;
  ACCELCRYPT_RETURN_IF_ERROR(impl_->Begin(txn, true));
  ACCELCRYPT_RETURN_IF_ERROR(impl_->CheckDek(&dek));
  ACCELCRYPT_RETURN_IF_ERROR(impl_->WritePin(User::kUser, rec));
  ACCELCRYPT_RETURN_IF_ERROR(impl_->Exec(
      "UPDATE token SET user_failures = 0, user_locked = 0 WHERE id = 1"));
  return impl_->Commit(txn);
}

absl::Status TokenStore::SetPin(User user, std::string_view old_pin,
                                std::string_view new_pin) {
  ACCELCRYPT_RETURN_IF_ERROR(impl_->CheckPid());
  for (int attempt = 0; attempt < kVerifyAttempts; ++attempt) {
    ACCELCRYPT_ASSIGN_OR_RETURN(Verified v, impl_->Verify(user, old_pin));
    ACCELCRYPT_ASSIGN_OR_RETURN(PinRecord rec,
                                impl_->Wrap(new_pin, v.dek, user));
    Impl::Locked lock(impl_.get());
    Impl::Txn txn;
    ACCELCRYPT_RETURN_IF_ERROR(impl_->Begin(txn, true));
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
    return impl_->Commit(txn);
  }
  return CkError(CKR_DEVICE_ERROR,
                 absl::StrFormat("token store %s: the %s PIN record kept "
                                 "changing during C_SetPIN",
                                 impl_->path, UserName(user)));
}

}  // namespace accelcrypt::p11
