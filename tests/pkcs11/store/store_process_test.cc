// SPDX-License-Identifier: Apache-2.0
// The PKCS#11 module's token store (pkcs11/store/) shared by several
// processes: concurrent writers, creating the store together, wrong PINs from
// several processes, a forked child, a writer killed mid-loop.
// Fixture and helpers: store_fixture.h.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <iostream>
#include <set>
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
}  // namespace accelcrypt::p11::store_test
