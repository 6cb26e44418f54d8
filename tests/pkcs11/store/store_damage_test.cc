// SPDX-License-Identifier: Apache-2.0
// The PKCS#11 module's token store (pkcs11/store/) given damaged or foreign
// files and bad options: each is a clear error and leaves the file as it was.
// Fixture and helpers: store_fixture.h.
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
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

}  // namespace
}  // namespace accelcrypt::p11::store_test
