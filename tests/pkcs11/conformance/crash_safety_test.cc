// SPDX-License-Identifier: Apache-2.0
// Crash safety of accelcrypt's token store (issue 16 item 5), through the
// module only: pairs of writer processes (p11_conformance_helper create)
// creating private token objects at the same time are SIGKILLed at random
// moments, at least 200 kills in all, within a time bound. Afterwards the
// SQLite database passes PRAGMA integrity_check, every object whose
// C_CreateObject had returned CKR_OK (the child printed "created <i>") is
// there exactly once and readable with its value, the two concurrent
// writers lost nothing, and no byte of the store's files (database, -wal,
// -shm, -journal) holds the plaintext of a private object or of a
// sensitive key's CKA_VALUE. accelcrypt only: the database checks are of
// its SQLite store (SoftHSMv2 keeps one file per object).
#include <fcntl.h>
#include <openssl/rand.h>
#include <p11-kit-1/p11-kit/pkcs11.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/pkcs11/conformance/child_process.h"
#include "tests/pkcs11/conformance/conformance_fixture.h"
#include "tests/pkcs11/conformance/p11_harness.h"

namespace accelcrypt::p11test {
namespace {

using Bytes = std::vector<uint8_t>;

constexpr int kMinKills = 200;
// Runs start only while inside this budget (ctest allows 120 s a test).
constexpr auto kBudget = std::chrono::seconds(50);
// The kill comes at a uniformly random moment up to this long after the
// writer is logged in and starts creating (each creation is one commit
// with fsync, about a millisecond or more): before the first object,
// between commits and inside them.
constexpr int kMaxDelayUs = 50000;

Bytes ValueFor(const std::string& label) {
  std::string v = label + "/payload";
  return Bytes(v.begin(), v.end());
}

// Writer is one helper process creating PREFIX-<i> objects.
struct Writer {
  Child child;
  std::string prefix;
  int reported = -1;  // highest i reported created
  std::string pending;
};

// Drain reads what the writer printed; false on EOF.
bool Drain(Writer* w, int timeout_ms) {
  pollfd pfd = {w->child.out_fd, POLLIN, 0};
  if (poll(&pfd, 1, timeout_ms) <= 0) return true;
  char chunk[4096];
  ssize_t n = read(w->child.out_fd, chunk, sizeof(chunk));
  if (n <= 0) return false;
  w->pending.append(chunk, n);
  size_t nl;
  while ((nl = w->pending.find('\n')) != std::string::npos) {
    std::string line = w->pending.substr(0, nl);
    w->pending.erase(0, nl + 1);
    if (line.rfind("created ", 0) == 0) {
      w->reported = std::max(w->reported, std::stoi(line.substr(8)));
    }
  }
  return true;
}

Bytes FileBytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in),
               std::istreambuf_iterator<char>());
}

bool Contains(const Bytes& hay, const Bytes& needle) {
  return std::search(hay.begin(), hay.end(), needle.begin(), needle.end()) !=
         hay.end();
}

class CrashSafetyTest : public P11Test {};

TEST_P(CrashSafetyTest, RandomKillsOfConcurrentWritersLoseNothing) {
  // A sensitive private token key whose value must never be in the files.
  Bytes secret(32);
  ASSERT_EQ(1, RAND_bytes(secret.data(), secret.size()));
  {
    CK_SESSION_HANDLE h;
    ASSERT_CKR(CKR_OK, OpenUserRw(&h));
    Template key;
    key.Ulong(CKA_CLASS, CKO_SECRET_KEY)
        .Ulong(CKA_KEY_TYPE, CKK_AES)
        .Bool(CKA_TOKEN, true)
        .Bool(CKA_PRIVATE, true)
        .Bool(CKA_SENSITIVE, true)
        .Bool(CKA_ENCRYPT, true)
        .Str(CKA_LABEL, "sealed-key")
        .Bytes(CKA_VALUE, secret);
    CK_OBJECT_HANDLE obj;
    ASSERT_CKR(CKR_OK, f()->C_CreateObject(h, key.data(), key.size(), &obj));
  }
  ASSERT_CKR(CKR_OK, Finalize());

  // An existing go file: each writer logs in, prints "ready" and starts
  // creating at once.
  const std::string go = env().dir() + "/go";
  ASSERT_EQ(0, close(open(go.c_str(), O_CREAT | O_WRONLY, 0600)));
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> delay_us(0, kMaxDelayUs);
  const auto start = std::chrono::steady_clock::now();
  int kills = 0, runs = 0, mid_run = 0;
  std::map<std::string, int> reported;
  while (kills < kMinKills &&
         std::chrono::steady_clock::now() - start < kBudget) {
    Writer w[2];
    for (int i = 0; i < 2; ++i) {
      w[i].prefix = "r" + std::to_string(runs) + (i == 0 ? "a" : "b");
      w[i].child =
          SpawnHelper({ModulePath(kind()), "create", std::string(kLabel),
                       std::string(kUserPin), w[i].prefix, "1000000", go},
                      true);
      ASSERT_GT(w[i].child.pid, 0);
    }
    for (Writer& wr : w) {
      ASSERT_EQ("ready", ReadLine(wr.child)) << wr.prefix << " did not start";
    }
    // Two independent random moments.
    int at[2] = {delay_us(rng), delay_us(rng)};
    const int first = at[0] < at[1] ? 0 : 1;
    std::this_thread::sleep_for(std::chrono::microseconds(at[first]));
    kill(w[first].child.pid, SIGKILL);
    std::this_thread::sleep_for(
        std::chrono::microseconds(at[1 - first] - at[first]));
    kill(w[1 - first].child.pid, SIGKILL);
    for (Writer& wr : w) {
      // Everything printed before the kill is still in the pipe.
      while (Drain(&wr, 10000)) {
      }
      int status = 0;
      ASSERT_EQ(wr.child.pid, waitpid(wr.child.pid, &status, 0));
      close(wr.child.out_fd);
      ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
          << wr.prefix << " ended on its own: " << wr.pending;
      ++kills;
      if (wr.reported >= 0) ++mid_run;
      reported[wr.prefix] = wr.reported;
    }
    ++runs;
  }
  // No plaintext of a sealed attribute in any file of the store, as the
  // killed writers left it (-wal and -shm present) and at the end.
  const Bytes payload = {'/', 'p', 'a', 'y', 'l', 'o', 'a', 'd'};
  auto scan = [&](const char* when) {
    int files = 0;
    for (const auto& entry :
         std::filesystem::recursive_directory_iterator(env().token_dir())) {
      if (!entry.is_regular_file()) continue;
      ++files;
      Bytes bytes = FileBytes(entry.path());
      EXPECT_FALSE(Contains(bytes, secret))
          << entry.path() << " holds the sensitive key's value " << when;
      EXPECT_FALSE(Contains(bytes, payload))
          << entry.path() << " holds a private object's value " << when;
    }
    return files;
  };
  EXPECT_GE(scan("after the kills"), 2) << "database and -wal expected";
  ASSERT_GE(kills, kMinKills) << "only " << kills << " kills in "
                              << kBudget.count() << " s (machine too slow?)";
  // Most kills must land while objects are being created, not before.
  EXPECT_GT(mid_run, kills / 4) << "kills mostly before the first object";

  // The database is sound.
  const std::filesystem::path db =
      std::filesystem::path(env().token_dir()) / "slot0" / "token.sqlite";
  ASSERT_TRUE(std::filesystem::exists(db)) << db;
  {
    sqlite3* conn = nullptr;
    ASSERT_EQ(SQLITE_OK, sqlite3_open_v2(db.c_str(), &conn,
                                         SQLITE_OPEN_READWRITE, nullptr));
    sqlite3_stmt* s = nullptr;
    ASSERT_EQ(SQLITE_OK, sqlite3_prepare_v2(conn, "PRAGMA integrity_check", -1,
                                            &s, nullptr));
    std::string verdict;
    while (sqlite3_step(s) == SQLITE_ROW) {
      verdict += reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
      verdict += "\n";
    }
    sqlite3_finalize(s);
    sqlite3_close(conn);
    EXPECT_EQ("ok\n", verdict);
  }

  // Every object reported created is there once, readable, right.
  ASSERT_CKR(CKR_OK, Initialize());
  CK_SLOT_ID slot;
  CK_SESSION_HANDLE h;
  ASSERT_CKR(CKR_OK, FindSlotByLabel(f(), kLabel, &slot));
  ASSERT_CKR(CKR_OK, OpenSession(f(), slot, true, &h));
  ASSERT_CKR(CKR_OK, LoginUser(h));
  Template all_data;
  all_data.Ulong(CKA_CLASS, CKO_DATA).Str(CKA_APPLICATION, "p11-conformance");
  std::vector<CK_OBJECT_HANDLE> found;
  ASSERT_CKR(CKR_OK, FindObjects(f(), h, all_data, &found));
  std::map<std::string, int> seen;
  int wrong = 0;
  for (CK_OBJECT_HANDLE obj : found) {
    Bytes label, value;
    ASSERT_CKR(CKR_OK, GetAttribute(f(), h, obj, CKA_LABEL, &label));
    ASSERT_CKR(CKR_OK, GetAttribute(f(), h, obj, CKA_VALUE, &value));
    std::string name(label.begin(), label.end());
    ++seen[name];
    if (value != ValueFor(name)) ++wrong;
  }
  EXPECT_EQ(0, wrong) << "objects with a wrong value";
  int missing = 0, dups = 0, total_reported = 0;
  for (const auto& [prefix, last] : reported) {
    for (int i = 0; i <= last; ++i) {
      ++total_reported;
      auto it = seen.find(prefix + "-" + std::to_string(i));
      if (it == seen.end()) {
        ++missing;
      } else if (it->second != 1) {
        ++dups;
      }
    }
  }
  EXPECT_EQ(0, missing) << "of " << total_reported << " reported created";
  EXPECT_EQ(0, dups);
  EXPECT_GT(total_reported, kills) << "too few objects created to judge";
  // The store still works: a new object, and the sealed key is usable.
  Template more;
  more.Ulong(CKA_CLASS, CKO_DATA)
      .Bool(CKA_TOKEN, true)
      .Bool(CKA_PRIVATE, true)
      .Str(CKA_LABEL, "after-kills")
      .Bytes(CKA_VALUE, ValueFor("after-kills"));
  CK_OBJECT_HANDLE obj;
  EXPECT_CKR(CKR_OK, f()->C_CreateObject(h, more.data(), more.size(), &obj));
  ASSERT_CKR(CKR_OK, Finalize());

  EXPECT_GE(scan("at the end"), 1);
  std::printf(
      "[ info ] %d runs, %d kills (%d after the first object), %d "
      "objects reported created, %zu found, %.1f s\n",
      runs, kills, mid_run, total_reported, found.size(),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count());
}

INSTANTIATE_TEST_SUITE_P(
    Modules, CrashSafetyTest,
    ::testing::Values(::accelcrypt::p11test::ModuleKind::kAccelcrypt),
    ::accelcrypt::p11test::ParamName);

}  // namespace
}  // namespace accelcrypt::p11test
