// SPDX-License-Identifier: Apache-2.0
// Persistence of token objects (base spec v2.40 4.4: CKA_TOKEN true objects
// are token objects, "visible by all applications connected to the token
// that have sufficient permission, and remain on the token even after the
// sessions are closed and the token is removed"): across C_Finalize +
// C_Initialize, into a new process, with two processes creating objects
// concurrently, and after a process is SIGKILLed while creating objects.
// Child processes run p11_conformance_helper (conformance_helper.cc) with
// the environment this fixture set.
#include <fcntl.h>
#include <p11-kit-1/p11-kit/pkcs11.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/pkcs11/conformance/child_process.h"
#include "tests/pkcs11/conformance/conformance_fixture.h"
#include "tests/pkcs11/conformance/p11_harness.h"

namespace accelcrypt::p11test {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes ValueFor(const std::string& label) {
  std::string v = label + "/payload";
  return Bytes(v.begin(), v.end());
}

Child Spawn(const std::string& module, const std::string& mode,
            const std::string& prefix, int count, bool capture,
            const std::string& go_file = "") {
  std::vector<std::string> args = {module,
                                   mode,
                                   std::string(P11Test::kLabel),
                                   std::string(P11Test::kUserPin),
                                   prefix,
                                   std::to_string(count)};
  if (!go_file.empty()) args.push_back(go_file);
  return SpawnHelper(args, capture);
}

class PersistenceTest : public P11Test {
 protected:
  // Reopen finalizes, initializes, finds the token again and logs the user
  // in on a new R/W session.
  void Reopen(CK_SESSION_HANDLE* h) {
    ASSERT_CKR(CKR_OK, Finalize());
    ASSERT_CKR(CKR_OK, Initialize());
    CK_SLOT_ID slot;
    ASSERT_CKR(CKR_OK, FindSlotByLabel(f(), kLabel, &slot));
    ASSERT_CKR(CKR_OK, OpenSession(f(), slot, true, h));
    ASSERT_CKR(CKR_OK, LoginUser(*h));
  }

  CK_RV CreateData(CK_SESSION_HANDLE h, const std::string& label, bool token,
                   bool priv) {
    Template t;
    t.Ulong(CKA_CLASS, CKO_DATA)
        .Bool(CKA_TOKEN, token)
        .Bool(CKA_PRIVATE, priv)
        .Str(CKA_LABEL, label)
        .Str(CKA_APPLICATION, "p11-conformance")
        .Bytes(CKA_VALUE, ValueFor(label));
    CK_OBJECT_HANDLE obj;
    return f()->C_CreateObject(h, t.data(), t.size(), &obj);
  }

  // AllData maps label -> value of every CKO_DATA object of this suite's
  // application visible to `h`; a label seen twice counts in `dups`.
  void AllData(CK_SESSION_HANDLE h, std::map<std::string, Bytes>* out,
               int* dups) {
    Template t;
    t.Ulong(CKA_CLASS, CKO_DATA).Str(CKA_APPLICATION, "p11-conformance");
    std::vector<CK_OBJECT_HANDLE> found;
    ASSERT_CKR(CKR_OK, FindObjects(f(), h, t, &found));
    *dups = 0;
    for (CK_OBJECT_HANDLE obj : found) {
      Bytes label, value;
      ASSERT_CKR(CKR_OK, GetAttribute(f(), h, obj, CKA_LABEL, &label));
      ASSERT_CKR(CKR_OK, GetAttribute(f(), h, obj, CKA_VALUE, &value));
      std::string name(label.begin(), label.end());
      if (out->count(name)) ++*dups;
      (*out)[name] = value;
    }
  }

  std::string module() const { return ModulePath(kind()); }
};

// Token objects (public, private, a sensitive key) survive C_Finalize +
// C_Initialize with their attributes; session objects do not.
TEST_P(PersistenceTest, SurviveFinalizeAndInitialize) {
  CK_SESSION_HANDLE h;
  ASSERT_CKR(CKR_OK, OpenUserRw(&h));
  ASSERT_CKR(CKR_OK, CreateData(h, "pub-tok", true, false));
  ASSERT_CKR(CKR_OK, CreateData(h, "priv-tok", true, true));
  ASSERT_CKR(CKR_OK, CreateData(h, "session", false, false));
  Template key_t;
  key_t.Ulong(CKA_CLASS, CKO_SECRET_KEY)
      .Ulong(CKA_KEY_TYPE, CKK_AES)
      .Bool(CKA_TOKEN, true)
      .Bool(CKA_PRIVATE, true)
      .Bool(CKA_SENSITIVE, true)
      .Bool(CKA_ENCRYPT, true)
      .Str(CKA_LABEL, "tok-key")
      .Bytes(CKA_VALUE, Bytes(32, 0x7e));
  CK_OBJECT_HANDLE key;
  ASSERT_CKR(CKR_OK, f()->C_CreateObject(h, key_t.data(), key_t.size(), &key));
  CK_MECHANISM ecb = {CKM_AES_ECB, nullptr, 0};
  Bytes block(16, 0x11), ct(16), ct2(16);
  CK_ULONG len = 16;
  ASSERT_CKR(CKR_OK, f()->C_EncryptInit(h, &ecb, key));
  ASSERT_CKR(CKR_OK, f()->C_Encrypt(h, block.data(), 16, ct.data(), &len));

  Reopen(&h);
  if (HasFatalFailure()) return;
  std::map<std::string, Bytes> all;
  int dups = 0;
  AllData(h, &all, &dups);
  EXPECT_EQ(0, dups);
  EXPECT_EQ(2u, all.size());
  EXPECT_EQ(ValueFor("pub-tok"), all["pub-tok"]);
  EXPECT_EQ(ValueFor("priv-tok"), all["priv-tok"]);
  EXPECT_EQ(0u, all.count("session"));
  Template by_label;
  by_label.Str(CKA_LABEL, "tok-key").Ulong(CKA_CLASS, CKO_SECRET_KEY);
  std::vector<CK_OBJECT_HANDLE> found;
  ASSERT_CKR(CKR_OK, FindObjects(f(), h, by_label, &found));
  ASSERT_EQ(1u, found.size());
  bool sensitive = false;
  ASSERT_CKR(CKR_OK, GetBool(f(), h, found[0], CKA_SENSITIVE, &sensitive));
  EXPECT_TRUE(sensitive);
  Bytes v;
  EXPECT_CKR(CKR_ATTRIBUTE_SENSITIVE,
             GetAttribute(f(), h, found[0], CKA_VALUE, &v));
  len = 16;
  ASSERT_CKR(CKR_OK, f()->C_EncryptInit(h, &ecb, found[0]));
  ASSERT_CKR(CKR_OK, f()->C_Encrypt(h, block.data(), 16, ct2.data(), &len));
  EXPECT_EQ(ct, ct2);
}

// 5.5.9 C_SetPIN changes the PIN, nothing else: private token objects and
// a sensitive token key (stored encrypted at rest by tokens that derive a
// key from the PIN) stay readable and usable under the new PIN, also after
// C_Finalize + C_Initialize.
TEST_P(PersistenceTest, SetPinKeepsPrivateObjects) {
  CK_SESSION_HANDLE h;
  ASSERT_CKR(CKR_OK, OpenUserRw(&h));
  ASSERT_CKR(CKR_OK, CreateData(h, "kept", true, true));
  Template key_t;
  key_t.Ulong(CKA_CLASS, CKO_SECRET_KEY)
      .Ulong(CKA_KEY_TYPE, CKK_AES)
      .Bool(CKA_TOKEN, true)
      .Bool(CKA_PRIVATE, true)
      .Bool(CKA_SENSITIVE, true)
      .Bool(CKA_ENCRYPT, true)
      .Str(CKA_LABEL, "kept-key")
      .Bytes(CKA_VALUE, Bytes(16, 0x3c));
  CK_OBJECT_HANDLE key;
  ASSERT_CKR(CKR_OK, f()->C_CreateObject(h, key_t.data(), key_t.size(), &key));
  CK_MECHANISM ecb = {CKM_AES_ECB, nullptr, 0};
  Bytes block(16, 0x42), ct(16), ct2(16);
  CK_ULONG len = 16;
  ASSERT_CKR(CKR_OK, f()->C_EncryptInit(h, &ecb, key));
  ASSERT_CKR(CKR_OK, f()->C_Encrypt(h, block.data(), 16, ct.data(), &len));
  const std::string kNew = "changed-pin-4242";
  auto pin = [](std::string_view s) {
    return reinterpret_cast<CK_UTF8CHAR*>(const_cast<char*>(s.data()));
  };
  ASSERT_CKR(CKR_OK, f()->C_SetPIN(h, pin(kUserPin), kUserPin.size(), pin(kNew),
                                   kNew.size()));
  ASSERT_CKR(CKR_OK, Finalize());
  ASSERT_CKR(CKR_OK, Initialize());
  CK_SLOT_ID slot;
  ASSERT_CKR(CKR_OK, FindSlotByLabel(f(), kLabel, &slot));
  ASSERT_CKR(CKR_OK, OpenSession(f(), slot, true, &h));
  ASSERT_CKR(CKR_OK, Login(f(), h, CKU_USER, kNew));
  std::map<std::string, Bytes> all;
  int dups = 0;
  AllData(h, &all, &dups);
  EXPECT_EQ(ValueFor("kept"), all["kept"]);
  Template by_label;
  by_label.Str(CKA_LABEL, "kept-key");
  std::vector<CK_OBJECT_HANDLE> found;
  ASSERT_CKR(CKR_OK, FindObjects(f(), h, by_label, &found));
  ASSERT_EQ(1u, found.size());
  len = 16;
  ASSERT_CKR(CKR_OK, f()->C_EncryptInit(h, &ecb, found[0]));
  ASSERT_CKR(CKR_OK, f()->C_Encrypt(h, block.data(), 16, ct2.data(), &len));
  EXPECT_EQ(ct, ct2);
}

// Objects made here are seen by a new process, and the other way round.
TEST_P(PersistenceTest, VisibleToNewProcess) {
  CK_SESSION_HANDLE h;
  ASSERT_CKR(CKR_OK, OpenUserRw(&h));
  for (int i = 0; i < 5; ++i) {
    ASSERT_CKR(CKR_OK,
               CreateData(h, "parent-" + std::to_string(i), true, true));
  }
  ASSERT_CKR(CKR_OK, Finalize());
  Child check = Spawn(module(), "check", "parent", 5, false);
  ASSERT_GT(check.pid, 0);
  EXPECT_EQ(0, Wait(check));
  Child create = Spawn(module(), "create", "child", 7, false);
  ASSERT_GT(create.pid, 0);
  EXPECT_EQ(0, Wait(create));
  ASSERT_CKR(CKR_OK, Initialize());
  CK_SLOT_ID slot;
  ASSERT_CKR(CKR_OK, FindSlotByLabel(f(), kLabel, &slot));
  ASSERT_CKR(CKR_OK, OpenSession(f(), slot, true, &h));
  ASSERT_CKR(CKR_OK, LoginUser(h));
  std::map<std::string, Bytes> all;
  int dups = 0;
  AllData(h, &all, &dups);
  EXPECT_EQ(0, dups);
  EXPECT_EQ(12u, all.size());
  for (int i = 0; i < 7; ++i) {
    std::string name = "child-" + std::to_string(i);
    EXPECT_EQ(ValueFor(name), all[name]) << name;
  }
}

// 4.4: token objects are "visible by all applications connected to the
// token that have sufficient permission": objects another process creates
// appear to an application that stays initialised.
TEST_P(PersistenceTest, VisibleToRunningProcess) {
  CK_SESSION_HANDLE h;
  ASSERT_CKR(CKR_OK, OpenUserRw(&h));
  std::map<std::string, Bytes> all;
  int dups = 0;
  AllData(h, &all, &dups);
  ASSERT_TRUE(all.empty());
  Child create = Spawn(module(), "create", "live", 3, false);
  ASSERT_GT(create.pid, 0);
  ASSERT_EQ(0, Wait(create));
  AllData(h, &all, &dups);
  EXPECT_EQ(0, dups);
  EXPECT_EQ(3u, all.size());
  EXPECT_EQ(ValueFor("live-2"), all["live-2"]);
}

// Two processes creating 100 token objects each at the same time lose
// none and duplicate none.
TEST_P(PersistenceTest, ConcurrentProcessesLoseNothing) {
  ASSERT_CKR(CKR_OK, Finalize());
  // Both children initialise and log in first, then create at the same
  // moment (a start barrier: the go file).
  const std::string go = env().dir() + "/go";
  Child a = Spawn(module(), "create", "procA", 100, true, go);
  ASSERT_GT(a.pid, 0);
  EXPECT_EQ("ready", ReadLine(a));
  Child b = Spawn(module(), "create", "procB", 100, true, go);
  ASSERT_GT(b.pid, 0);
  EXPECT_EQ("ready", ReadLine(b));
  ASSERT_EQ(0, close(open(go.c_str(), O_CREAT | O_WRONLY, 0600)));
  // Drain both outputs while they run (a full pipe would block a child).
  int created_a = 0, created_b = 0;
  for (std::string l = ReadLine(a); !l.empty(); l = ReadLine(a)) ++created_a;
  for (std::string l = ReadLine(b); !l.empty(); l = ReadLine(b)) ++created_b;
  EXPECT_EQ(0, Wait(a));
  EXPECT_EQ(0, Wait(b));
  EXPECT_EQ(100, created_a);
  EXPECT_EQ(100, created_b);
  ASSERT_CKR(CKR_OK, Initialize());
  CK_SLOT_ID slot;
  CK_SESSION_HANDLE h;
  ASSERT_CKR(CKR_OK, FindSlotByLabel(f(), kLabel, &slot));
  ASSERT_CKR(CKR_OK, OpenSession(f(), slot, true, &h));
  ASSERT_CKR(CKR_OK, LoginUser(h));
  std::map<std::string, Bytes> all;
  int dups = 0;
  AllData(h, &all, &dups);
  EXPECT_EQ(0, dups);
  EXPECT_EQ(200u, all.size());
  int missing = 0;
  for (const char* p : {"procA", "procB"}) {
    for (int i = 0; i < 100; ++i) {
      std::string name = std::string(p) + "-" + std::to_string(i);
      auto it = all.find(name);
      if (it == all.end() || it->second != ValueFor(name)) ++missing;
    }
  }
  EXPECT_EQ(0, missing);
}

// A child SIGKILLed while creating token objects leaves a store in which
// every object found has readable, correct attributes, and every object
// whose C_CreateObject had returned CKR_OK is there.
TEST_P(PersistenceTest, SigkillDuringCreationLeavesConsistentStore) {
  ASSERT_CKR(CKR_OK, Finalize());
  Child c = Spawn(module(), "create", "killed", 5000, true);
  ASSERT_GT(c.pid, 0);
  int reported = -1;
  std::string buf;
  while (reported < 40) {
    pollfd pfd = {c.out_fd, POLLIN, 0};
    if (poll(&pfd, 1, 60000) <= 0) break;
    char chunk[256];
    ssize_t n = read(c.out_fd, chunk, sizeof(chunk));
    if (n <= 0) break;
    buf.append(chunk, n);
    size_t nl;
    while ((nl = buf.find('\n')) != std::string::npos) {
      std::string line = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      if (line.rfind("created ", 0) == 0) reported = std::stoi(line.substr(8));
    }
  }
  kill(c.pid, SIGKILL);
  int status = 0;
  waitpid(c.pid, &status, 0);
  close(c.out_fd);
  ASSERT_GE(reported, 40) << "the child did not get far enough";
  EXPECT_TRUE(WIFSIGNALED(status));

  ASSERT_CKR(CKR_OK, Initialize());
  CK_SLOT_ID slot;
  CK_SESSION_HANDLE h;
  ASSERT_CKR(CKR_OK, FindSlotByLabel(f(), kLabel, &slot));
  ASSERT_CKR(CKR_OK, OpenSession(f(), slot, true, &h));
  ASSERT_CKR(CKR_OK, LoginUser(h));
  std::map<std::string, Bytes> all;
  int dups = 0;
  AllData(h, &all, &dups);
  EXPECT_EQ(0, dups);
  for (const auto& [name, value] : all) {
    EXPECT_EQ(ValueFor(name), value) << name;
  }
  for (int i = 0; i <= reported; ++i) {
    std::string name = "killed-" + std::to_string(i);
    EXPECT_EQ(1u, all.count(name)) << name << " was reported created";
  }
  // The store still takes new objects.
  EXPECT_CKR(CKR_OK, CreateData(h, "after-kill", true, true));
}

ACCELCRYPT_P11_INSTANTIATE(PersistenceTest);

}  // namespace
}  // namespace accelcrypt::p11test
