// SPDX-License-Identifier: Apache-2.0
#include "pkcs11/store/token_store.h"

#include <fcntl.h>
#include <openssl/rand.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pkcs11/common/ck_error.h"
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

  EXPECT_THAT(store->Login(User::kSo, kSoPin), HasCkRv(CKR_TOKEN_NOT_RECOGNIZED));
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
  EXPECT_EQ(std::vector<uint8_t>(user_dek.span().begin(), user_dek.span().end()),
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
  ASSERT_OK_AND_ASSIGN(TokenStore::StoredObject obj, store->LoadObject(id, &dek2));
  EXPECT_EQ(obj.attributes.GetBytes(CKA_VALUE), value);

  ASSERT_OK(store->SetPin(User::kSo, kSoPin, "new-so"));
  EXPECT_THAT(store->Login(User::kSo, kSoPin), HasCkRv(CKR_PIN_INCORRECT));
  EXPECT_OK(store->Login(User::kSo, "new-so"));
  EXPECT_THAT(store->SetPin(User::kUser, "x", "y"), HasCkRv(CKR_PIN_INCORRECT));
}

TEST_F(TokenStoreTest, ReinitialisingNeedsTheSoPinAndWipesEverything) {
  auto store = InitializedStore();
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(SecretBytes old_dek, store->Login(User::kUser, kUserPin));
  ASSERT_OK_AND_ASSIGN(uint64_t pub_id,
                       store->CreateObject(PublicAttrs("pub"), false, nullptr));
  ASSERT_OK_AND_ASSIGN(
      uint64_t priv_id,
      store->CreateObject(PrivateAttrs(RandomBytes(16)), true, &old_dek));

  EXPECT_THAT(store->InitToken("wrong", "new label"), HasCkRv(CKR_PIN_INCORRECT));
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
  EXPECT_THAT(store->CreateObject(PrivateAttrs(RandomBytes(16)), true, &old_dek),
              HasCkRv(CKR_USER_NOT_LOGGED_IN));
  EXPECT_THAT(store->LoadObjects(&old_dek), HasCkRv(CKR_USER_NOT_LOGGED_IN));
  EXPECT_THAT(store->InitPin(old_dek, kUserPin), HasCkRv(CKR_USER_NOT_LOGGED_IN));
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
  ASSERT_OK_AND_ASSIGN(uint64_t pub,
                       store->CreateObject(PublicAttrs("cert"), false, nullptr));
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
    ASSERT_OK_AND_ASSIGN(pub,
                         store->CreateObject(PublicAttrs("kept"), false, nullptr));
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
  ASSERT_OK_AND_ASSIGN(uint64_t v0, store->DataVersion());
  ASSERT_OK_AND_ASSIGN(uint64_t o0, other->DataVersion());
  struct stat before_db, before_wal, after_db, after_wal;
  ASSERT_EQ(stat(store->path().c_str(), &before_db), 0);
  ASSERT_EQ(stat((store->path() + "-wal").c_str(), &before_wal), 0);

  ASSERT_OK(store->Login(User::kUser, kUserPin));
  ASSERT_OK(store->Login(User::kSo, kSoPin));
  ASSERT_OK(other->Login(User::kUser, kUserPin));

  ASSERT_OK_AND_ASSIGN(uint64_t v1, store->DataVersion());
  ASSERT_OK_AND_ASSIGN(uint64_t o1, other->DataVersion());
  EXPECT_EQ(v0, v1);
  EXPECT_EQ(o0, o1);
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
  ASSERT_OK_AND_ASSIGN(uint64_t v2, store->DataVersion());
  ASSERT_OK_AND_ASSIGN(uint64_t o2, other->DataVersion());
  EXPECT_NE(v1, v2);
  EXPECT_NE(o1, o2);
  ASSERT_OK_AND_ASSIGN(TokenStore::TokenInfo info, other->Info());
  EXPECT_EQ(info.user_failures, 1u);
}

TEST_F(TokenStoreTest, DataVersionSeesEveryCommit) {
  auto a = InitializedStore();
  ASSERT_NE(a, nullptr);
  auto b = OpenStore();
  ASSERT_NE(b, nullptr);
  ASSERT_OK_AND_ASSIGN(uint64_t a0, a->DataVersion());
  ASSERT_OK_AND_ASSIGN(uint64_t b0, b->DataVersion());
  // Reads change nothing.
  ASSERT_OK(b->LoadObjects(nullptr).status());
  ASSERT_OK_AND_ASSIGN(uint64_t a_same, a->DataVersion());
  EXPECT_EQ(a0, a_same);

  ASSERT_OK_AND_ASSIGN(uint64_t id,
                       b->CreateObject(PublicAttrs("from b"), false, nullptr));
  ASSERT_OK_AND_ASSIGN(uint64_t a1, a->DataVersion());
  ASSERT_OK_AND_ASSIGN(uint64_t b1, b->DataVersion());
  EXPECT_NE(a0, a1) << "another connection's commit";
  EXPECT_NE(b0, b1) << "our own commit";
  ASSERT_OK_AND_ASSIGN(TokenStore::StoredObject obj, a->LoadObject(id, nullptr));
  EXPECT_EQ(obj.attributes.GetString(CKA_LABEL), "from b");

  ASSERT_OK(a->DestroyObject(id));
  ASSERT_OK_AND_ASSIGN(uint64_t b2, b->DataVersion());
  EXPECT_NE(b1, b2);
  EXPECT_THAT(b->LoadObject(id, nullptr), HasCkRv(CKR_OBJECT_HANDLE_INVALID));
}

}  // namespace
}  // namespace accelcrypt::p11
