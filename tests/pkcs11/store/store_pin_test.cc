// SPDX-License-Identifier: Apache-2.0
// The PKCS#11 module's token store (pkcs11/store/), token and PIN life cycle:
// a fresh store, InitToken and logins, wrong PINs counted and locking, SetPin,
// re-initialisation, what a login writes, empty and long PINs.
// Fixture and helpers: store_fixture.h.
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pkcs11/common/ck_error.h"
#include "pkcs11/store/token_store.h"
#include "tests/pkcs11/store/store_fixture.h"
#include "tests/support/status_matchers.h"

namespace accelcrypt::p11::store_test {
namespace {

TEST_F(TokenStoreTest, FreshStoreIsUninitialisedWithSerialAndPrivateFiles) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(TokenStore::TokenInfo info, store->Info());
  EXPECT_FALSE(info.initialized);
  EXPECT_FALSE(info.user_pin_initialized);
  EXPECT_EQ(info.serial.size(), 16u);
  EXPECT_EQ(info.serial.find_first_not_of("0123456789ABCDEF"),
            std::string::npos);
  EXPECT_EQ(store->path(), dir_ + "/token.sqlite");

  struct stat st;
  ASSERT_EQ(stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(stat(store->path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat((dir_ + "/token.changes").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  EXPECT_THAT(store->Login(User::kSo, kSoPin),
              HasCkRv(CKR_TOKEN_NOT_RECOGNIZED));
  EXPECT_THAT(store->Login(User::kUser, kUserPin),
              HasCkRv(CKR_TOKEN_NOT_RECOGNIZED));
  EXPECT_THAT(store->CreateObject(PublicAttrs("x"), false, nullptr),
              HasCkRv(CKR_TOKEN_NOT_RECOGNIZED));

  // The serial stays with the store.
  std::string serial = info.serial;
  store.reset();
  store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(info, store->Info());
  EXPECT_EQ(info.serial, serial);
}

TEST_F(TokenStoreTest, InitTokenThenLoginSoAndUser) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(store->InitToken(kSoPin, std::string(33, 'x')),
              HasCkRv(CKR_ARGUMENTS_BAD));
  ASSERT_OK(store->InitToken(kSoPin, "my label"));
  ASSERT_OK_AND_ASSIGN(TokenStore::TokenInfo info, store->Info());
  EXPECT_TRUE(info.initialized);
  EXPECT_EQ(info.label, "my label");
  EXPECT_FALSE(info.user_pin_initialized);

  EXPECT_THAT(store->Login(User::kUser, kUserPin),
              HasCkRv(CKR_USER_PIN_NOT_INITIALIZED));
  ASSERT_OK_AND_ASSIGN(SecretBytes so_dek, store->Login(User::kSo, kSoPin));
  EXPECT_EQ(so_dek.size(), 32u);
  ASSERT_OK(store->InitPin(so_dek, kUserPin));
  ASSERT_OK_AND_ASSIGN(info, store->Info());
  EXPECT_TRUE(info.user_pin_initialized);

  ASSERT_OK_AND_ASSIGN(SecretBytes user_dek,
                       store->Login(User::kUser, kUserPin));
  EXPECT_EQ(
      std::vector<uint8_t>(user_dek.span().begin(), user_dek.span().end()),
      std::vector<uint8_t>(so_dek.span().begin(), so_dek.span().end()));
  // The PINs are not interchangeable.
  EXPECT_THAT(store->Login(User::kUser, kSoPin), HasCkRv(CKR_PIN_INCORRECT));
  EXPECT_THAT(store->Login(User::kSo, kUserPin), HasCkRv(CKR_PIN_INCORRECT));
}

TEST_F(TokenStoreTest, WrongPinsAreCountedAndLock) {
  auto store = InitializedStore();
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(store->Login(User::kUser, "wrong"), HasCkRv(CKR_PIN_INCORRECT));
  EXPECT_THAT(store->Login(User::kUser, "wrong"), HasCkRv(CKR_PIN_INCORRECT));
  ASSERT_OK_AND_ASSIGN(TokenStore::TokenInfo info, store->Info());
  EXPECT_EQ(info.user_failures, 2u);
  EXPECT_FALSE(info.user_locked);
  // A right PIN resets the counter.
  ASSERT_OK(store->Login(User::kUser, kUserPin));
  ASSERT_OK_AND_ASSIGN(info, store->Info());
  EXPECT_EQ(info.user_failures, 0u);

  for (int i = 0; i < 3; ++i) {
    EXPECT_THAT(store->Login(User::kUser, "wrong"), HasCkRv(CKR_PIN_INCORRECT));
  }
  ASSERT_OK_AND_ASSIGN(info, store->Info());
  EXPECT_EQ(info.user_failures, 3u);
  EXPECT_TRUE(info.user_locked);
  EXPECT_FALSE(info.so_locked);
  EXPECT_THAT(store->Login(User::kUser, kUserPin), HasCkRv(CKR_PIN_LOCKED));
  EXPECT_THAT(store->SetPin(User::kUser, kUserPin, "new"),
              HasCkRv(CKR_PIN_LOCKED));

  // The SO unlocks the user by C_InitPIN.
  ASSERT_OK_AND_ASSIGN(SecretBytes so_dek, store->Login(User::kSo, kSoPin));
  ASSERT_OK(store->InitPin(so_dek, "fresh user pin"));
  ASSERT_OK_AND_ASSIGN(info, store->Info());
  EXPECT_FALSE(info.user_locked);
  EXPECT_EQ(info.user_failures, 0u);
  EXPECT_OK(store->Login(User::kUser, "fresh user pin"));
  EXPECT_THAT(store->Login(User::kUser, kUserPin), HasCkRv(CKR_PIN_INCORRECT));

  // The SO PIN locks too, and then C_InitToken is refused.
  for (int i = 0; i < 3; ++i) {
    EXPECT_THAT(store->Login(User::kSo, "wrong"), HasCkRv(CKR_PIN_INCORRECT));
  }
  ASSERT_OK_AND_ASSIGN(info, store->Info());
  EXPECT_TRUE(info.so_locked);
  EXPECT_THAT(store->Login(User::kSo, kSoPin), HasCkRv(CKR_PIN_LOCKED));
  EXPECT_THAT(store->InitToken(kSoPin, "again"), HasCkRv(CKR_PIN_LOCKED));
}

TEST_F(TokenStoreTest, LockSurvivesReopen) {
  {
    auto store = InitializedStore();
    ASSERT_NE(store, nullptr);
    for (int i = 0; i < 3; ++i) {
      EXPECT_THAT(store->Login(User::kUser, "x"), HasCkRv(CKR_PIN_INCORRECT));
    }
  }
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(store->Login(User::kUser, kUserPin), HasCkRv(CKR_PIN_LOCKED));
}

TEST_F(TokenStoreTest, SetPinRewrapsTheSameKey) {
  auto store = InitializedStore();
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(SecretBytes dek, store->Login(User::kUser, kUserPin));
  std::vector<uint8_t> value = RandomBytes(32);
  ASSERT_OK_AND_ASSIGN(uint64_t id,
                       store->CreateObject(PrivateAttrs(value), true, &dek));

  EXPECT_THAT(store->SetPin(User::kUser, "wrong", "new-user"),
              HasCkRv(CKR_PIN_INCORRECT));
  ASSERT_OK_AND_ASSIGN(TokenStore::TokenInfo info, store->Info());
  EXPECT_EQ(info.user_failures, 1u);
  ASSERT_OK(store->SetPin(User::kUser, kUserPin, "new-user"));
  ASSERT_OK_AND_ASSIGN(info, store->Info());
  EXPECT_EQ(info.user_failures, 0u);
  EXPECT_THAT(store->Login(User::kUser, kUserPin), HasCkRv(CKR_PIN_INCORRECT));
  ASSERT_OK_AND_ASSIGN(SecretBytes dek2, store->Login(User::kUser, "new-user"));
  ASSERT_OK_AND_ASSIGN(TokenStore::StoredObject obj,
                       store->LoadObject(id, &dek2));
  EXPECT_EQ(obj.attributes.GetBytes(CKA_VALUE), value);

  ASSERT_OK(store->SetPin(User::kSo, kSoPin, "new-so"));
  EXPECT_THAT(store->Login(User::kSo, kSoPin), HasCkRv(CKR_PIN_INCORRECT));
  EXPECT_OK(store->Login(User::kSo, "new-so"));
  EXPECT_THAT(store->SetPin(User::kUser, "x", "y"), HasCkRv(CKR_PIN_INCORRECT));
}

TEST_F(TokenStoreTest, ReinitialisingNeedsTheSoPinAndWipesEverything) {
  auto store = InitializedStore();
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(SecretBytes old_dek,
                       store->Login(User::kUser, kUserPin));
  ASSERT_OK_AND_ASSIGN(uint64_t pub_id,
                       store->CreateObject(PublicAttrs("pub"), false, nullptr));
  ASSERT_OK_AND_ASSIGN(
      uint64_t priv_id,
      store->CreateObject(PrivateAttrs(RandomBytes(16)), true, &old_dek));

  EXPECT_THAT(store->InitToken("wrong", "new label"),
              HasCkRv(CKR_PIN_INCORRECT));
  ASSERT_OK_AND_ASSIGN(TokenStore::TokenInfo info, store->Info());
  EXPECT_EQ(info.so_failures, 1u);
  EXPECT_EQ(info.label, "test token");
  ASSERT_OK_AND_ASSIGN(auto objects, store->LoadObjects(nullptr));
  EXPECT_EQ(objects.size(), 2u);

  ASSERT_OK(store->InitToken(kSoPin, "new label"));
  ASSERT_OK_AND_ASSIGN(info, store->Info());
  EXPECT_TRUE(info.initialized);
  EXPECT_EQ(info.label, "new label");
  EXPECT_FALSE(info.user_pin_initialized);
  EXPECT_EQ(info.so_failures, 0u);
  ASSERT_OK_AND_ASSIGN(objects, store->LoadObjects(nullptr));
  EXPECT_TRUE(objects.empty());
  EXPECT_THAT(store->Login(User::kUser, kUserPin),
              HasCkRv(CKR_USER_PIN_NOT_INITIALIZED));

  // A new data key: the old one is refused rather than used to write
  // objects nobody could read.
  ASSERT_OK_AND_ASSIGN(SecretBytes new_dek, store->Login(User::kSo, kSoPin));
  EXPECT_NE(std::vector<uint8_t>(new_dek.span().begin(), new_dek.span().end()),
            std::vector<uint8_t>(old_dek.span().begin(), old_dek.span().end()));
  EXPECT_THAT(
      store->CreateObject(PrivateAttrs(RandomBytes(16)), true, &old_dek),
      HasCkRv(CKR_USER_NOT_LOGGED_IN));
  EXPECT_THAT(store->LoadObjects(&old_dek), HasCkRv(CKR_USER_NOT_LOGGED_IN));
  EXPECT_THAT(store->InitPin(old_dek, kUserPin),
              HasCkRv(CKR_USER_NOT_LOGGED_IN));
  EXPECT_THAT(store->LoadObject(pub_id, nullptr),
              HasCkRv(CKR_OBJECT_HANDLE_INVALID));
  // Ids are never reused.
  ASSERT_OK_AND_ASSIGN(uint64_t id,
                       store->CreateObject(PublicAttrs("p2"), false, nullptr));
  EXPECT_GT(id, std::max(pub_id, priv_id));
}

TEST_F(TokenStoreTest, SuccessfulLoginWritesNothing) {
  auto store = InitializedStore();
  ASSERT_NE(store, nullptr);
  auto other = OpenStore();
  ASSERT_NE(other, nullptr);
  const uint64_t v0 = store->ChangeStamp();
  struct stat before_db, before_wal, after_db, after_wal;
  ASSERT_EQ(stat(store->path().c_str(), &before_db), 0);
  ASSERT_EQ(stat((store->path() + "-wal").c_str(), &before_wal), 0);

  ASSERT_OK(store->Login(User::kUser, kUserPin));
  ASSERT_OK(store->Login(User::kSo, kSoPin));
  ASSERT_OK(other->Login(User::kUser, kUserPin));

  EXPECT_EQ(store->ChangeStamp(), v0);
  EXPECT_EQ(other->ChangeStamp(), v0);
  ASSERT_EQ(stat(store->path().c_str(), &after_db), 0);
  ASSERT_EQ(stat((store->path() + "-wal").c_str(), &after_wal), 0);
  EXPECT_EQ(before_db.st_mtim.tv_sec, after_db.st_mtim.tv_sec);
  EXPECT_EQ(before_db.st_mtim.tv_nsec, after_db.st_mtim.tv_nsec);
  EXPECT_EQ(before_db.st_size, after_db.st_size);
  EXPECT_EQ(before_wal.st_mtim.tv_sec, after_wal.st_mtim.tv_sec);
  EXPECT_EQ(before_wal.st_mtim.tv_nsec, after_wal.st_mtim.tv_nsec);
  EXPECT_EQ(before_wal.st_size, after_wal.st_size);

  // A failed login is a write (the counter) and is seen elsewhere.
  EXPECT_THAT(store->Login(User::kUser, "wrong"), HasCkRv(CKR_PIN_INCORRECT));
  EXPECT_NE(store->ChangeStamp(), v0);
  EXPECT_NE(other->ChangeStamp(), v0);
  ASSERT_OK_AND_ASSIGN(TokenStore::TokenInfo info, other->Info());
  EXPECT_EQ(info.user_failures, 1u);
}

TEST_F(TokenStoreTest, EmptyAndLongPinsWork) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_OK(store->InitToken("", ""));
  ASSERT_OK_AND_ASSIGN(TokenStore::TokenInfo info, store->Info());
  EXPECT_EQ(info.label, "");
  ASSERT_OK_AND_ASSIGN(SecretBytes dek, store->Login(User::kSo, ""));
  std::string long_pin(4096, 'p');
  ASSERT_OK(store->InitPin(dek, long_pin));
  EXPECT_OK(store->Login(User::kUser, long_pin));
  EXPECT_THAT(store->Login(User::kUser, long_pin.substr(1)),
              HasCkRv(CKR_PIN_INCORRECT));
  EXPECT_THAT(store->Login(User::kSo, "x"), HasCkRv(CKR_PIN_INCORRECT));
}

}  // namespace
}  // namespace accelcrypt::p11::store_test
