// SPDX-License-Identifier: Apache-2.0
// The PKCS#11 module's token store (pkcs11/store/), objects: create, update,
// destroy and load, persistence, private values encrypted at rest,
// compare-and-set updates, the change stamp, threads sharing one store.
// Fixture and helpers: store_fixture.h.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pkcs11/common/ck_error.h"
#include "pkcs11/store/token_store.h"
#include "tests/pkcs11/store/store_fixture.h"
#include "tests/support/status_matchers.h"

namespace accelcrypt::p11::store_test {
namespace {

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

}  // namespace
}  // namespace accelcrypt::p11::store_test
