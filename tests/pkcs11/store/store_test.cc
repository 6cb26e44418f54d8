// SPDX-License-Identifier: Apache-2.0
#include <fcntl.h>
#include <openssl/rand.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pkcs11/common/ck_error.h"
#include "pkcs11/store/token_store.h"
#include "tests/support/status_matchers.h"

namespace accelcrypt::p11 {
namespace {

using ::testing::HasSubstr;
using User = TokenStore::User;

constexpr char kSoPin[] = "so-pin-1234";
constexpr char kUserPin[] = "user-pin-5678";

MATCHER_P(HasCkRv, rv, "has CK_RV " + CkRvName(rv)) {
  absl::Status status = ::accelcrypt::testing::internal::GetStatus(arg);
  *result_listener << "which is " << status.ToString();
  return ToCkRv(status) == rv;
}

TokenStore::Options FastOptions() {
  TokenStore::Options o;
  o.pbkdf2_iterations = 1000;
  o.max_pin_failures = 3;
  o.busy_timeout_ms = 20000;
  return o;
}

std::vector<uint8_t> RandomBytes(size_t n) {
  std::vector<uint8_t> v(n);
  EXPECT_EQ(RAND_bytes(v.data(), static_cast<int>(n)), 1);
  return v;
}

std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

bool Contains(const std::vector<uint8_t>& haystack,
              const std::vector<uint8_t>& needle) {
  return std::search(haystack.begin(), haystack.end(), needle.begin(),
                     needle.end()) != haystack.end();
}

// A secret-key-like private object and a certificate-like public one.
AttributeMap PrivateAttrs(const std::vector<uint8_t>& value) {
  AttributeMap a;
  a.SetUlong(CKA_CLASS, CKO_SECRET_KEY);
  a.SetUlong(CKA_KEY_TYPE, CKK_AES);
  a.SetBool(CKA_TOKEN, true);
  a.SetBool(CKA_PRIVATE, true);
  a.Set(CKA_VALUE, value);
  a.SetString(CKA_LABEL, "secret");
  return a;
}

AttributeMap PublicAttrs(const std::string& label) {
  AttributeMap a;
  a.SetUlong(CKA_CLASS, CKO_DATA);
  a.SetBool(CKA_TOKEN, true);
  a.SetBool(CKA_PRIVATE, false);
  a.SetString(CKA_LABEL, label);
  return a;
}

class TokenStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/p11storeXXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/slot0";
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  std::unique_ptr<TokenStore> OpenStore() {
    auto store = TokenStore::Open(dir_, FastOptions());
    EXPECT_OK(store);
    return store.ok() ? std::move(*store) : nullptr;
  }

  // InitializedStore: SO PIN and user PIN set.
  std::unique_ptr<TokenStore> InitializedStore() {
    auto store = OpenStore();
    if (store == nullptr) return nullptr;
    EXPECT_OK(store->InitToken(kSoPin, "test token"));
    auto so_dek = store->Login(User::kSo, kSoPin);
    EXPECT_OK(so_dek);
    if (!so_dek.ok()) return nullptr;
    EXPECT_OK(store->InitPin(*so_dek, kUserPin));
    return store;
  }

  std::string root_;
  std::string dir_;
};

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

TEST_F(TokenStoreTest, CreateUpdateDestroyLoad) {
  auto store = InitializedStore();
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(SecretBytes dek, store->Login(User::kUser, kUserPin));
  std::vector<uint8_t> value = RandomBytes(32);

  EXPECT_THAT(store->CreateObject(PrivateAttrs(value), true, nullptr),
              HasCkRv(CKR_USER_NOT_LOGGED_IN));
  ASSERT_OK_AND_ASSIGN(
      uint64_t pub, store->CreateObject(PublicAttrs("cert"), false, nullptr));
  ASSERT_OK_AND_ASSIGN(uint64_t priv,
                       store->CreateObject(PrivateAttrs(value), true, &dek));
  EXPECT_NE(pub, priv);

  // Without the key: public readable, private locked and empty.
  ASSERT_OK_AND_ASSIGN(auto objects, store->LoadObjects(nullptr));
  ASSERT_EQ(objects.size(), 2u);
  EXPECT_EQ(objects[0].id, pub);
  EXPECT_FALSE(objects[0].is_private);
  EXPECT_FALSE(objects[0].locked);
  EXPECT_EQ(objects[0].attributes.GetString(CKA_LABEL), "cert");
  EXPECT_EQ(objects[1].id, priv);
  EXPECT_TRUE(objects[1].is_private);
  EXPECT_TRUE(objects[1].locked);
  EXPECT_EQ(objects[1].attributes.size(), 0u);
  ASSERT_OK_AND_ASSIGN(TokenStore::StoredObject one,
                       store->LoadObject(priv, nullptr));
  EXPECT_TRUE(one.locked);

  // With it: decrypted, every attribute back.
  ASSERT_OK_AND_ASSIGN(objects, store->LoadObjects(&dek));
  ASSERT_EQ(objects.size(), 2u);
  EXPECT_FALSE(objects[1].locked);
  EXPECT_EQ(objects[1].attributes.GetBytes(CKA_VALUE), value);
  EXPECT_EQ(objects[1].attributes.GetUlong(CKA_CLASS),
            std::optional<CK_ULONG>(CKO_SECRET_KEY));
  EXPECT_EQ(objects[1].attributes.size(), PrivateAttrs(value).size());

  // Update: new attributes; a public object can become private.
  AttributeMap changed = PrivateAttrs(value);
  changed.SetString(CKA_LABEL, "renamed");
  ASSERT_OK(store->UpdateObject(priv, changed, true, &dek));
  ASSERT_OK_AND_ASSIGN(one, store->LoadObject(priv, &dek));
  EXPECT_EQ(one.attributes.GetString(CKA_LABEL), "renamed");
  EXPECT_THAT(store->UpdateObject(pub, PublicAttrs("c"), true, nullptr),
              HasCkRv(CKR_USER_NOT_LOGGED_IN));
  ASSERT_OK(store->UpdateObject(pub, PublicAttrs("now private"), true, &dek));
  ASSERT_OK_AND_ASSIGN(one, store->LoadObject(pub, nullptr));
  EXPECT_TRUE(one.is_private);
  EXPECT_TRUE(one.locked);
  ASSERT_OK_AND_ASSIGN(one, store->LoadObject(pub, &dek));
  EXPECT_EQ(one.attributes.GetString(CKA_LABEL), "now private");

  // Destroy.
  ASSERT_OK(store->DestroyObject(pub));
  EXPECT_THAT(store->DestroyObject(pub), HasCkRv(CKR_OBJECT_HANDLE_INVALID));
  EXPECT_THAT(store->LoadObject(pub, &dek), HasCkRv(CKR_OBJECT_HANDLE_INVALID));
  EXPECT_THAT(store->UpdateObject(pub, PublicAttrs("x"), false, nullptr),
              HasCkRv(CKR_OBJECT_HANDLE_INVALID));
  ASSERT_OK_AND_ASSIGN(objects, store->LoadObjects(&dek));
  ASSERT_EQ(objects.size(), 1u);
  EXPECT_EQ(objects[0].id, priv);

  // An empty attribute set is a valid object.
  ASSERT_OK_AND_ASSIGN(uint64_t empty,
                       store->CreateObject(AttributeMap(), true, &dek));
  ASSERT_OK_AND_ASSIGN(one, store->LoadObject(empty, &dek));
  EXPECT_EQ(one.attributes.size(), 0u);
}

TEST_F(TokenStoreTest, PersistsAcrossReopen) {
  std::vector<uint8_t> value = RandomBytes(32);
  uint64_t priv = 0, pub = 0;
  {
    auto store = InitializedStore();
    ASSERT_NE(store, nullptr);
    ASSERT_OK_AND_ASSIGN(SecretBytes dek, store->Login(User::kUser, kUserPin));
    ASSERT_OK_AND_ASSIGN(priv,
                         store->CreateObject(PrivateAttrs(value), true, &dek));
    ASSERT_OK_AND_ASSIGN(
        pub, store->CreateObject(PublicAttrs("kept"), false, nullptr));
  }
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(TokenStore::TokenInfo info, store->Info());
  EXPECT_TRUE(info.initialized);
  EXPECT_TRUE(info.user_pin_initialized);
  EXPECT_EQ(info.label, "test token");
  ASSERT_OK_AND_ASSIGN(SecretBytes dek, store->Login(User::kUser, kUserPin));
  ASSERT_OK_AND_ASSIGN(auto objects, store->LoadObjects(&dek));
  ASSERT_EQ(objects.size(), 2u);
  EXPECT_EQ(objects[0].id, priv);
  EXPECT_EQ(objects[0].attributes.GetBytes(CKA_VALUE), value);
  EXPECT_EQ(objects[1].id, pub);
  EXPECT_EQ(objects[1].attributes.GetString(CKA_LABEL), "kept");
}

TEST_F(TokenStoreTest, PrivateValuesAreNotInTheFileInClear) {
  std::vector<uint8_t> secret = RandomBytes(32);
  std::string public_label = "public-" + std::to_string(getpid()) + "-" +
                             std::to_string(RandomBytes(1)[0]) + "-marker";
  std::vector<uint8_t> public_bytes(public_label.begin(), public_label.end());
  std::string path;
  {
    auto store = InitializedStore();
    ASSERT_NE(store, nullptr);
    path = store->path();
    ASSERT_OK_AND_ASSIGN(SecretBytes dek, store->Login(User::kUser, kUserPin));
    ASSERT_OK(store->CreateObject(PrivateAttrs(secret), true, &dek).status());
    ASSERT_OK(store->CreateObject(PublicAttrs(public_label), false, nullptr)
                  .status());
    // While open, the data sits in the WAL.
    std::vector<uint8_t> both = ReadFile(path);
    std::vector<uint8_t> wal = ReadFile(path + "-wal");
    both.insert(both.end(), wal.begin(), wal.end());
    EXPECT_TRUE(Contains(both, public_bytes)) << "the search itself works";
    EXPECT_FALSE(Contains(both, secret));
  }
  // After close everything is checkpointed into the main file.
  std::vector<uint8_t> file = ReadFile(path);
  EXPECT_TRUE(Contains(file, public_bytes));
  EXPECT_FALSE(Contains(file, secret));
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

// UpdateObject with `expected` is a compare-and-set: a change another
// connection made since the caller read the object is not overwritten.
TEST_F(TokenStoreTest, UpdateObjectWithExpectedNeverUndoesAnotherChange) {
  auto a = InitializedStore();
  ASSERT_NE(a, nullptr);
  auto b = OpenStore();
  ASSERT_NE(b, nullptr);
  ASSERT_OK_AND_ASSIGN(SecretBytes dek, a->Login(User::kUser, kUserPin));
  AttributeMap read = PrivateAttrs(RandomBytes(16));
  read.SetBool(CKA_ENCRYPT, true);
  ASSERT_OK_AND_ASSIGN(uint64_t id, a->CreateObject(read, true, &dek));
  // b turns CKA_ENCRYPT off.
  AttributeMap revoked = read;
  revoked.SetBool(CKA_ENCRYPT, false);
  ASSERT_OK(b->UpdateObject(id, revoked, true, &dek, &read));
  // a, still holding what it read, relabels the object: refused.
  AttributeMap relabelled = read;
  relabelled.SetString(CKA_LABEL, "renamed");
  EXPECT_EQ(a->UpdateObject(id, relabelled, true, &dek, &read).code(),
            absl::StatusCode::kAborted);
  ASSERT_OK_AND_ASSIGN(TokenStore::StoredObject now, a->LoadObject(id, &dek));
  EXPECT_FALSE(now.attributes.BoolOr(CKA_ENCRYPT, true));
  EXPECT_EQ(now.attributes.GetString(CKA_LABEL), "secret");
  // Applied to what is there now, it goes through.
  relabelled = now.attributes;
  relabelled.SetString(CKA_LABEL, "renamed");
  ASSERT_OK(a->UpdateObject(id, relabelled, true, &dek, &now.attributes));
  ASSERT_OK_AND_ASSIGN(now, b->LoadObject(id, &dek));
  EXPECT_FALSE(now.attributes.BoolOr(CKA_ENCRYPT, true));
  EXPECT_EQ(now.attributes.GetString(CKA_LABEL), "renamed");
}

// The change stamp (the shared counter every process maps) moves with
// every commit of any connection, before the commit is visible; the stamp
// LoadObjects returns is the stored one of the snapshot it read.
TEST_F(TokenStoreTest, ChangeStampSeesEveryCommit) {
  auto a = InitializedStore();
  ASSERT_NE(a, nullptr);
  auto b = OpenStore();
  ASSERT_NE(b, nullptr);
  const uint64_t a0 = a->ChangeStamp();
  EXPECT_EQ(b->ChangeStamp(), a0);
  uint64_t read = 0;
  // Reads change nothing.
  ASSERT_OK(b->LoadObjects(nullptr, &read).status());
  EXPECT_EQ(read, a0);
  EXPECT_EQ(a->ChangeStamp(), a0);

  ASSERT_OK_AND_ASSIGN(uint64_t id,
                       b->CreateObject(PublicAttrs("from b"), false, nullptr));
  const uint64_t a1 = a->ChangeStamp();
  EXPECT_EQ(a1, a0 + 1) << "another connection's commit";
  EXPECT_EQ(b->LastWriteStamp(), a1);
  ASSERT_OK(a->LoadObjects(nullptr, &read).status());
  EXPECT_EQ(read, a1);
  ASSERT_OK_AND_ASSIGN(TokenStore::StoredObject obj,
                       a->LoadObject(id, nullptr));
  EXPECT_EQ(obj.attributes.GetString(CKA_LABEL), "from b");

  ASSERT_OK(a->DestroyObject(id));
  EXPECT_EQ(b->ChangeStamp(), a1 + 1);
  EXPECT_EQ(a->LastWriteStamp(), a1 + 1);
  EXPECT_THAT(b->LoadObject(id, nullptr), HasCkRv(CKR_OBJECT_HANDLE_INVALID));

  // A writer that moved the shared counter and died before committing:
  // readers see a change (they re-read; nothing is missed), and the
  // re-read, done holding writers off, takes the shared stamp as its own
  // (no writer can be committing then), so later checks are quiet again.
  // The next commit moves past both.
  {
    std::fstream f(dir_ + "/token.changes",
                   std::ios::in | std::ios::out | std::ios::binary);
    uint64_t v = 0;
    f.read(reinterpret_cast<char*>(&v), sizeof(v));
    ASSERT_EQ(v, a1 + 1);
    v += 5;
    f.seekp(0);
    f.write(reinterpret_cast<const char*>(&v), sizeof(v));
  }
  EXPECT_EQ(a->ChangeStamp(), a1 + 6);
  ASSERT_OK(a->LoadObjects(nullptr, &read).status());
  EXPECT_EQ(read, a1 + 6);
  ASSERT_OK(b->CreateObject(PublicAttrs("later"), false, nullptr).status());
  EXPECT_EQ(b->LastWriteStamp(), a1 + 7);
  ASSERT_OK(a->LoadObjects(nullptr, &read).status());
  EXPECT_EQ(read, a->ChangeStamp());
}

// RawDb is a second, plain SQLite connection to a store's file, for
// looking at and damaging what the store wrote.
class RawDb {
 public:
  explicit RawDb(const std::string& path) {
    EXPECT_EQ(
        sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr),
        SQLITE_OK);
    sqlite3_busy_timeout(db_, 20000);
  }
  ~RawDb() { sqlite3_close_v2(db_); }

  void Exec(const std::string& sql) {
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK)
        << sql << ": " << (err ? err : "");
    sqlite3_free(err);
  }
  std::string Text(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    std::string out;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr), SQLITE_OK);
    if (sqlite3_step(s) == SQLITE_ROW) {
      const unsigned char* t = sqlite3_column_text(s, 0);
      if (t != nullptr) out = reinterpret_cast<const char*>(t);
    }
    sqlite3_finalize(s);
    return out;
  }
  std::vector<uint8_t> Blob(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    std::vector<uint8_t> out;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr), SQLITE_OK);
    if (sqlite3_step(s) == SQLITE_ROW) {
      const auto* p = static_cast<const uint8_t*>(sqlite3_column_blob(s, 0));
      out.assign(p, p + sqlite3_column_bytes(s, 0));
    }
    sqlite3_finalize(s);
    return out;
  }
  void SetBlob(const std::string& sql, const std::vector<uint8_t>& value) {
    sqlite3_stmt* s = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr), SQLITE_OK);
    sqlite3_bind_blob(s, 1, value.data(), static_cast<int>(value.size()),
                      SQLITE_TRANSIENT);
    EXPECT_EQ(sqlite3_step(s), SQLITE_DONE);
    sqlite3_finalize(s);
  }

 private:
  sqlite3* db_ = nullptr;
};

TEST_F(TokenStoreTest, TamperedCiphertextIsAClearError) {
  auto store = InitializedStore();
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(SecretBytes dek, store->Login(User::kUser, kUserPin));
  ASSERT_OK_AND_ASSIGN(
      uint64_t a,
      store->CreateObject(PrivateAttrs(RandomBytes(32)), true, &dek));
  ASSERT_OK_AND_ASSIGN(
      uint64_t b,
      store->CreateObject(PrivateAttrs(RandomBytes(32)), true, &dek));
  ASSERT_OK(store->LoadObjects(&dek).status());
  std::string id_a = std::to_string(a), id_b = std::to_string(b);
  RawDb raw(store->path());
  std::vector<uint8_t> data_a =
      raw.Blob("SELECT data FROM objects WHERE id = " + id_a);
  std::vector<uint8_t> data_b =
      raw.Blob("SELECT data FROM objects WHERE id = " + id_b);
  ASSERT_GT(data_a.size(), 16u);

  // One flipped bit.
  std::vector<uint8_t> flipped = data_a;
  flipped[flipped.size() / 2] ^= 0x01;
  raw.SetBlob("UPDATE objects SET data = ?1 WHERE id = " + id_a, flipped);
  EXPECT_THAT(store->LoadObjects(&dek),
              ::testing::AllOf(HasCkRv(CKR_DEVICE_ERROR),
                               ::accelcrypt::testing::StatusIs(
                                   absl::StatusCode::kUnavailable,
                                   HasSubstr("object " + id_a))));
  EXPECT_THAT(store->LoadObject(a, &dek), HasCkRv(CKR_DEVICE_ERROR));
  EXPECT_OK(store->LoadObject(b, &dek));
  // Without the key nothing is decrypted, so nothing fails.
  EXPECT_OK(store->LoadObjects(nullptr));

  // A ciphertext moved to another object (with its IV) fails too: the id
  // is authenticated.
  std::vector<uint8_t> iv_a =
      raw.Blob("SELECT iv FROM objects WHERE id = " + id_a);
  std::vector<uint8_t> iv_b =
      raw.Blob("SELECT iv FROM objects WHERE id = " + id_b);
  raw.SetBlob("UPDATE objects SET data = ?1 WHERE id = " + id_a, data_b);
  raw.SetBlob("UPDATE objects SET iv = ?1 WHERE id = " + id_a, iv_b);
  EXPECT_THAT(store->LoadObject(a, &dek),
              ::accelcrypt::testing::StatusIs(absl::StatusCode::kUnavailable,
                                              HasSubstr("object " + id_a)));
  // Its own ciphertext under another IV fails; with its own IV it reads.
  raw.SetBlob("UPDATE objects SET data = ?1 WHERE id = " + id_a, data_a);
  EXPECT_THAT(store->LoadObject(a, &dek), HasCkRv(CKR_DEVICE_ERROR));
  raw.SetBlob("UPDATE objects SET iv = ?1 WHERE id = " + id_a,
              std::vector<uint8_t>(5, 0));
  EXPECT_THAT(store->LoadObject(a, &dek), HasCkRv(CKR_DEVICE_ERROR));
  raw.SetBlob("UPDATE objects SET iv = ?1 WHERE id = " + id_a, iv_a);
  EXPECT_OK(store->LoadObject(a, &dek));

  // A wrapped data key that was tampered with looks like a wrong PIN.
  std::vector<uint8_t> wrapped =
      raw.Blob("SELECT wrapped FROM pins WHERE user = 1");
  wrapped[0] ^= 0x80;
  raw.SetBlob("UPDATE pins SET wrapped = ?1 WHERE user = 1", wrapped);
  EXPECT_THAT(store->Login(User::kUser, kUserPin), HasCkRv(CKR_PIN_INCORRECT));
  // A public object's malformed attribute bytes are named too.
  ASSERT_OK_AND_ASSIGN(uint64_t p,
                       store->CreateObject(PublicAttrs("pub"), false, nullptr));
  raw.SetBlob("UPDATE objects SET data = ?1 WHERE id = " + std::to_string(p),
              std::vector<uint8_t>{1, 2, 3});
  EXPECT_THAT(store->LoadObject(p, nullptr),
              ::accelcrypt::testing::StatusIs(
                  absl::StatusCode::kUnavailable,
                  HasSubstr("object " + std::to_string(p))));
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

TEST_F(TokenStoreTest, TruncatedFileIsAClearError) {
  std::string path;
  {
    auto store = InitializedStore();
    ASSERT_NE(store, nullptr);
    path = store->path();
    ASSERT_OK_AND_ASSIGN(SecretBytes dek, store->Login(User::kUser, kUserPin));
    for (int i = 0; i < 40; ++i) {
      ASSERT_OK(
          store->CreateObject(PrivateAttrs(RandomBytes(2000)), i % 2 == 0, &dek)
              .status());
    }
  }
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  ASSERT_GT(st.st_size, 64 * 1024) << "closing checkpointed the WAL";
  ASSERT_EQ(truncate(path.c_str(), 16 * 1024), 0);
  // Opening may still work (the first pages are intact); reading the
  // objects cannot.
  auto store = TokenStore::Open(dir_, FastOptions());
  if (!store.ok()) {
    EXPECT_THAT(store, HasCkRv(CKR_DEVICE_ERROR));
    return;
  }
  absl::StatusOr<SecretBytes> dek = (*store)->Login(User::kUser, kUserPin);
  absl::Status loaded =
      (*store)->LoadObjects(dek.ok() ? &*dek : nullptr).status();
  EXPECT_THAT(loaded, HasCkRv(CKR_DEVICE_ERROR));
  EXPECT_THAT(loaded, ::accelcrypt::testing::StatusIs(
                          absl::StatusCode::kUnavailable, HasSubstr(path)));
}

TEST_F(TokenStoreTest, BadOptionsAreRefused) {
  TokenStore::Options o = FastOptions();
  o.max_pin_failures = 0;
  EXPECT_THAT(TokenStore::Open(dir_, o), HasCkRv(CKR_ARGUMENTS_BAD));
  o = FastOptions();
  o.pbkdf2_iterations = 0;
  EXPECT_THAT(TokenStore::Open(dir_, o), HasCkRv(CKR_ARGUMENTS_BAD));
  EXPECT_THAT(TokenStore::Open("", FastOptions()), HasCkRv(CKR_ARGUMENTS_BAD));
  EXPECT_FALSE(std::filesystem::exists(dir_));
}

TEST_F(TokenStoreTest, UnusableDirectoryIsAClearError) {
  // A path through a regular file can never be a directory, even for root.
  std::string file = root_ + "/plain-file";
  std::ofstream(file) << "x";
  EXPECT_THAT(
      TokenStore::Open(file + "/slot0", FastOptions()),
      ::testing::AllOf(HasCkRv(CKR_DEVICE_ERROR),
                       ::accelcrypt::testing::StatusIs(
                           absl::StatusCode::kUnavailable, HasSubstr(file))));
  EXPECT_THAT(TokenStore::Open(file, FastOptions()), HasCkRv(CKR_DEVICE_ERROR));

  // token.sqlite being a directory.
  std::filesystem::create_directories(dir_ + "/token.sqlite");
  EXPECT_THAT(TokenStore::Open(dir_, FastOptions()), HasCkRv(CKR_DEVICE_ERROR));

  std::string ro = root_ + "/readonly";
  ASSERT_EQ(mkdir(ro.c_str(), 0500), 0);
  if (geteuid() == 0) {
    std::cout << "[   INFO   ] running as root: a mode 0500 directory is "
                 "writable, that case is not checked\n";
  } else {
    EXPECT_THAT(TokenStore::Open(ro + "/slot0", FastOptions()),
                HasCkRv(CKR_DEVICE_ERROR));
    EXPECT_THAT(TokenStore::Open(ro, FastOptions()), HasCkRv(CKR_DEVICE_ERROR));
  }
}

TEST_F(TokenStoreTest, GarbageFileIsAClearErrorAndUntouched) {
  ASSERT_EQ(mkdir(dir_.c_str(), 0700), 0);
  std::string path = dir_ + "/token.sqlite";
  std::vector<uint8_t> garbage = RandomBytes(8192);
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(garbage.data()), garbage.size());
  }
  EXPECT_THAT(TokenStore::Open(dir_, FastOptions()),
              ::testing::AllOf(HasCkRv(CKR_DEVICE_ERROR),
                               ::accelcrypt::testing::StatusIs(
                                   absl::StatusCode::kUnavailable,
                                   HasSubstr("not a database"))));
  EXPECT_EQ(ReadFile(path), garbage);
}

TEST_F(TokenStoreTest, ForeignDatabaseIsRefusedAndUntouched) {
  ASSERT_EQ(mkdir(dir_.c_str(), 0700), 0);
  std::string path = dir_ + "/token.sqlite";
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(
        sqlite3_exec(db, "CREATE TABLE foo(x)", nullptr, nullptr, nullptr),
        SQLITE_OK);
    sqlite3_close(db);
  }
  EXPECT_THAT(TokenStore::Open(dir_, FastOptions()),
              ::accelcrypt::testing::StatusIs(
                  absl::StatusCode::kUnavailable,
                  HasSubstr("not an accelcrypt token store")));
  RawDb raw(path);
  EXPECT_EQ(raw.Text("SELECT group_concat(name) FROM sqlite_master"), "foo");
}

TEST_F(TokenStoreTest, NewerSchemaIsRefusedAndUntouched) {
  std::string path;
  {
    auto store = InitializedStore();
    ASSERT_NE(store, nullptr);
    path = store->path();
  }
  {
    RawDb raw(path);
    raw.Exec("UPDATE meta SET value = 99 WHERE key = 'schema_version'");
  }
  EXPECT_THAT(TokenStore::Open(dir_, FastOptions()),
              ::testing::AllOf(HasCkRv(CKR_TOKEN_NOT_RECOGNIZED),
                               ::accelcrypt::testing::StatusIs(
                                   absl::StatusCode::kFailedPrecondition,
                                   HasSubstr("schema version 99"))));
  RawDb raw(path);
  EXPECT_EQ(raw.Text("SELECT value FROM meta WHERE key = 'schema_version'"),
            "99");
}

TEST_F(TokenStoreTest, ThreadsShareOneStore) {
  auto store = InitializedStore();
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(SecretBytes dek, store->Login(User::kUser, kUserPin));
  constexpr int kThreads = 4, kPerThread = 25;
  std::vector<std::vector<uint64_t>> ids(kThreads);
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        auto id =
            (i % 2 == 0)
                ? store->CreateObject(PrivateAttrs(RandomBytes(16)), true, &dek)
                : store->CreateObject(PublicAttrs("t"), false, nullptr);
        if (!id.ok()) {
          ++failures;
          continue;
        }
        ids[t].push_back(*id);
        if (!store->Login(User::kUser, kUserPin).ok()) ++failures;
        if (store->ChangeStamp() == 0) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  std::set<uint64_t> all;
  for (auto& v : ids) all.insert(v.begin(), v.end());
  EXPECT_EQ(all.size(), size_t{kThreads * kPerThread});
  ASSERT_OK_AND_ASSIGN(auto objects, store->LoadObjects(&dek));
  EXPECT_EQ(objects.size(), size_t{kThreads * kPerThread});
}

// Child process helpers: a child never returns into GoogleTest; its exit
// code says what failed.
template <typename Fn>
pid_t Spawn(Fn fn) {
  fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) _exit(fn());
  return pid;
}

int ExitCode(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 1000 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

// CreateMany creates `n` objects labelled "<tag>-<i>" (odd ones private)
// through its own store; 0 on success, else the failing step.
int CreateMany(const std::string& dir, const std::string& tag, int n,
               int ready_fd = -1, int ready_after = -1) {
  auto store = TokenStore::Open(dir, FastOptions());
  if (!store.ok()) {
    std::cerr << "child: " << store.status() << "\n";
    return 10;
  }
  auto dek = (*store)->Login(User::kUser, kUserPin);
  if (!dek.ok()) {
    std::cerr << "child: " << dek.status() << "\n";
    return 11;
  }
  for (int i = 0; i < n; ++i) {
    if (i == ready_after && ready_fd >= 0) {
      char c = 'r';
      if (write(ready_fd, &c, 1) != 1) return 13;
    }
    AttributeMap a = PublicAttrs(tag + "-" + std::to_string(i));
    bool priv = i % 2 == 1;
    if (priv)
      a.Set(CKA_VALUE, std::vector<uint8_t>(16, static_cast<uint8_t>(i)));
    if (!(*store)->CreateObject(a, priv, priv ? &*dek : nullptr).ok())
      return 12;
  }
  return 0;
}

void ExpectLabels(TokenStore& store, const SecretBytes& dek,
                  const std::vector<std::string>& tags, int n) {
  ASSERT_OK_AND_ASSIGN(auto objects, store.LoadObjects(&dek));
  std::set<std::string> labels;
  for (auto& o : objects) labels.insert(o.attributes.GetString(CKA_LABEL));
  EXPECT_EQ(objects.size(), tags.size() * n);
  for (const std::string& tag : tags) {
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(labels.count(tag + "-" + std::to_string(i)), 1u)
          << tag << "-" << i;
    }
  }
}

TEST_F(TokenStoreTest, TwoProcessesWriteConcurrently) {
  { ASSERT_NE(InitializedStore(), nullptr); }
  constexpr int kEach = 200;
  pid_t a = Spawn([&] { return CreateMany(dir_, "a", kEach); });
  pid_t b = Spawn([&] { return CreateMany(dir_, "b", kEach); });
  EXPECT_EQ(ExitCode(a), 0);
  EXPECT_EQ(ExitCode(b), 0);
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(SecretBytes dek, store->Login(User::kUser, kUserPin));
  ExpectLabels(*store, dek, {"a", "b"}, kEach);
  RawDb raw(store->path());
  EXPECT_EQ(raw.Text("PRAGMA integrity_check"), "ok");
}

TEST_F(TokenStoreTest, ProcessesCreatingTheStoreTogetherAgree) {
  constexpr int kProcs = 6;
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  std::vector<pid_t> children;
  children.reserve(kProcs);
  for (int i = 0; i < kProcs; ++i) {
    children.push_back(Spawn([&]() -> int {
      close(go[1]);
      char c;
      if (read(go[0], &c, 1) != 0) return 40;  // start together at EOF
      auto store = TokenStore::Open(dir_, FastOptions());
      if (!store.ok()) {
        std::cerr << "child: " << store.status() << "\n";
        return 41;
      }
      auto info = (*store)->Info();
      if (!info.ok() || info->serial.size() != 16) return 42;
      return (*store)->CreateObject(PublicAttrs("x"), false, nullptr).ok()
                 ? 43  // nobody initialised the token
                 : 0;
    }));
  }
  close(go[0]);
  close(go[1]);
  for (pid_t pid : children) EXPECT_EQ(ExitCode(pid), 0);
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  RawDb raw(store->path());
  EXPECT_EQ(raw.Text("SELECT count(*) FROM token"), "1");
  EXPECT_EQ(raw.Text("PRAGMA journal_mode"), "wal");
}

TEST_F(TokenStoreTest, WrongPinsFromSeveralProcessesAllCount) {
  { ASSERT_NE(InitializedStore(), nullptr); }
  constexpr int kProcs = 3;  // == max_pin_failures
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  std::vector<pid_t> children;
  children.reserve(kProcs);
  for (int i = 0; i < kProcs; ++i) {
    children.push_back(Spawn([&]() -> int {
      close(go[1]);
      auto store = TokenStore::Open(dir_, FastOptions());
      if (!store.ok()) return 50;
      char c;
      if (read(go[0], &c, 1) != 0) return 51;
      return ToCkRv((*store)->Login(User::kUser, "wrong").status()) ==
                     CKR_PIN_INCORRECT
                 ? 0
                 : 52;
    }));
  }
  close(go[0]);
  close(go[1]);
  for (pid_t pid : children) EXPECT_EQ(ExitCode(pid), 0);
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(TokenStore::TokenInfo info, store->Info());
  EXPECT_EQ(info.user_failures, 3u);
  EXPECT_TRUE(info.user_locked);
  EXPECT_THAT(store->Login(User::kUser, kUserPin), HasCkRv(CKR_PIN_LOCKED));
}

TEST_F(TokenStoreTest, ForkedChildReopensAndOutlivesTheParentsStore) {
  auto parent = InitializedStore();
  ASSERT_NE(parent, nullptr);
  constexpr int kEach = 200;
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = Spawn([&]() -> int {
    close(ready[0]);
    // The inherited store refuses to work here...
    if (ToCkRv(parent->Info().status()) != CKR_CRYPTOKI_NOT_INITIALIZED) {
      return 20;
    }
    if (ToCkRv(parent->Login(User::kUser, kUserPin).status()) !=
        CKR_CRYPTOKI_NOT_INITIALIZED) {
      return 21;
    }
    // ...and is dropped; the child's own store then writes, and keeps
    // writing after the parent closed its connection.
    parent.reset();
    return CreateMany(dir_, "child", kEach, ready[1], kEach / 2);
  });
  close(ready[1]);
  ASSERT_OK_AND_ASSIGN(SecretBytes dek, parent->Login(User::kUser, kUserPin));
  for (int i = 0; i < kEach; ++i) {
    AttributeMap a = PublicAttrs("parent-" + std::to_string(i));
    ASSERT_OK(parent->CreateObject(a, i % 2 == 1, &dek).status());
  }
  char c;
  EXPECT_EQ(read(ready[0], &c, 1), 1);
  close(ready[0]);
  parent.reset();  // the last connection but the child's
  EXPECT_EQ(ExitCode(child), 0);

  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ExpectLabels(*store, dek, {"parent", "child"}, kEach);
  RawDb raw(store->path());
  EXPECT_EQ(raw.Text("PRAGMA integrity_check"), "ok");
}

TEST_F(TokenStoreTest, WriterKilledMidLoopLeavesAConsistentStore) {
  { ASSERT_NE(InitializedStore(), nullptr); }
  int ids[2];
  ASSERT_EQ(pipe(ids), 0);
  pid_t child = Spawn([&]() -> int {
    close(ids[0]);
    auto store = TokenStore::Open(dir_, FastOptions());
    if (!store.ok()) return 30;
    auto dek = (*store)->Login(User::kUser, kUserPin);
    if (!dek.ok()) return 31;
    for (uint64_t i = 0;; ++i) {
      AttributeMap a =
          PrivateAttrs(std::vector<uint8_t>(32, static_cast<uint8_t>(i)));
      auto id = (*store)->CreateObject(a, i % 3 != 0, &*dek);
      if (!id.ok()) return 32;
      if (i % 5 == 4 && !(*store)->DestroyObject(*id - 1).ok()) return 33;
      uint64_t v = *id;
      if (write(ids[1], &v, sizeof(v)) != sizeof(v)) return 34;
    }
  });
  close(ids[1]);
  // Let it commit a while, then kill it wherever it is.
  std::vector<uint64_t> reported;
  uint64_t v;
  while (reported.size() < 60 && read(ids[0], &v, sizeof(v)) == sizeof(v)) {
    reported.push_back(v);
  }
  ASSERT_EQ(reported.size(), 60u) << "child exit " << ExitCode(child);
  ASSERT_EQ(kill(child, SIGKILL), 0);
  EXPECT_EQ(ExitCode(child), 1000 + SIGKILL);
  while (read(ids[0], &v, sizeof(v)) == sizeof(v)) reported.push_back(v);
  close(ids[0]);

  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  {
    RawDb raw(store->path());
    EXPECT_EQ(raw.Text("PRAGMA integrity_check"), "ok");
  }
  ASSERT_OK_AND_ASSIGN(SecretBytes dek, store->Login(User::kUser, kUserPin));
  ASSERT_OK_AND_ASSIGN(auto objects, store->LoadObjects(&dek));
  std::set<uint64_t> present;
  for (auto& o : objects) {
    present.insert(o.id);
    EXPECT_FALSE(o.locked);
    EXPECT_EQ(o.attributes.GetBytes(CKA_VALUE).size(), 32u) << o.id;
  }
  // Every id the child reported committed is there, unless the child
  // destroyed it later (it destroys id-1 every fifth object).
  std::set<uint64_t> destroyed;
  for (size_t i = 0; i < reported.size(); ++i) {
    if (i % 5 == 4) destroyed.insert(reported[i] - 1);
  }
  // Killed after the next iteration's destroy but before its report.
  if (reported.size() % 5 == 4) destroyed.insert(reported.back());
  for (uint64_t id : reported) {
    if (destroyed.count(id) == 0) {
      EXPECT_EQ(present.count(id), 1u) << id;
    }
  }
  EXPECT_GE(objects.size(), reported.size() - destroyed.size());
  // And it still takes writes.
  EXPECT_OK(store->CreateObject(PublicAttrs("after"), false, nullptr));
}

}  // namespace
}  // namespace accelcrypt::p11
