// SPDX-License-Identifier: Apache-2.0
// The PKCS#11 module with application mutexes (v2.40 section 5.4, case 3)
// whose LockMutex fails: a fault-injection sweep fails exactly the k-th
// lock an operation takes, for k = 0, 1, ... until the operation runs with
// no lock failing, and checks after each run that the module either
// refused the call (CKR_GENERAL_ERROR) with nothing changed or completed
// it; never a half state. C_Logout and closing the last session cannot be
// refused once the token is locked: the login ends whatever else fails,
// and no private object of that login is ever seen again.
// Fixture: module_fixture.h.
#include <p11-kit-1/p11-kit/pkcs11.h>

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/pkcs11/module/module_fixture.h"

namespace accelcrypt::p11_module_test {
namespace {

// The fault: armed per thread, so that other threads' locks neither count
// nor fail. The k-th LockMutex call after Arm(k) (k from 0) returns
// CKR_GENERAL_ERROR without locking; every other call locks.
thread_local bool t_armed = false;
thread_local int t_fail_at = -1;
thread_local int t_seen = 0;
thread_local bool t_fired = false;

CK_RV FaultCreateMutex(CK_VOID_PTR_PTR out) {
  *out = new std::mutex;
  return CKR_OK;
}
CK_RV FaultDestroyMutex(CK_VOID_PTR m) {
  delete static_cast<std::mutex*>(m);
  return CKR_OK;
}
CK_RV FaultLockMutex(CK_VOID_PTR m) {
  if (t_armed && t_seen++ == t_fail_at) {
    t_fired = true;
    return CKR_GENERAL_ERROR;
  }
  static_cast<std::mutex*>(m)->lock();
  return CKR_OK;
}
CK_RV FaultUnlockMutex(CK_VOID_PTR m) {
  static_cast<std::mutex*>(m)->unlock();
  return CKR_OK;
}

// No operation here takes more locks than this: a sweep that gets this far
// never ends.
constexpr int kMaxLocks = 64;

class AppLockFailureTest : public ModuleTest {
 protected:
  void Initialize() {
    CK_C_INITIALIZE_ARGS args{};
    args.CreateMutex = FaultCreateMutex;
    args.DestroyMutex = FaultDestroyMutex;
    args.LockMutex = FaultLockMutex;
    args.UnlockMutex = FaultUnlockMutex;
    ASSERT_EQ(f_->C_Initialize(&args), CKR_OK);
  }
  static void Arm(int k) {
    t_armed = true;
    t_fail_at = k;
    t_seen = 0;
    t_fired = false;
  }
  // Disarm returns whether the armed failure happened.
  static bool Disarm() {
    t_armed = false;
    return t_fired;
  }

  // ExpectInStoreAfterRestart finalizes, starts a fresh instance and logs
  // in: exactly the labels mapped to true are found (nothing orphaned in
  // the store, nothing lost).
  void ExpectInStoreAfterRestart(const std::map<std::string, bool>& present) {
    ASSERT_EQ(f_->C_Finalize(nullptr), CKR_OK);
    Initialize();
    CK_SESSION_HANDLE s = Open(true);
    ASSERT_EQ(LoginUser(s), CKR_OK);
    for (const auto& [label, there] : present) {
      EXPECT_EQ(FindByLabel(s, label).size(), there ? 1u : 0u) << label;
    }
  }

  CK_STATE State(CK_SESSION_HANDLE s) {
    CK_SESSION_INFO info{};
    EXPECT_EQ(f_->C_GetSessionInfo(s, &info), CKR_OK);
    return info.state;
  }
};

struct Kind {
  const char* name;
  bool token;
  bool is_private;
};
constexpr Kind kKinds[] = {{"session-public", false, false},
                           {"session-private", false, true},
                           {"token-public", true, false},
                           {"token-private", true, true}};

// C_CreateObject: a failed lock makes the call fail and leaves no object,
// neither in the handle table nor (token objects) in the store.
TEST_F(AppLockFailureTest, CreateObjectIsAllOrNothing) {
  Initialize();
  InitToken();
  CK_SESSION_HANDLE s = Open(true);
  ASSERT_EQ(LoginUser(s), CKR_OK);
  std::map<std::string, bool> token_made;
  for (const Kind& kind : kKinds) {
    int failed = 0;
    for (int k = 0;; ++k) {
      ASSERT_LT(k, kMaxLocks) << kind.name;
      const std::string label =
          std::string(kind.name) + "-" + std::to_string(k);
      CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
      Arm(k);
      CK_RV rv = TryCreateData(s, label, kind.token, kind.is_private, &h);
      const bool fired = Disarm();
      ASSERT_TRUE(rv == CKR_OK || rv == CKR_GENERAL_ERROR) << label << rv;
      // A lock failure is always reported, and only a lock failure fails.
      EXPECT_EQ(rv == CKR_GENERAL_ERROR, fired) << label;
      EXPECT_EQ(FindByLabel(s, label).size(), rv == CKR_OK ? 1u : 0u) << label;
      if (rv == CKR_OK) {
        EXPECT_EQ(Label(s, h), label);
      }
      if (kind.token) token_made[label] = rv == CKR_OK;
      if (!fired) break;
      ++failed;
    }
    // The sweep did fail locks on the way: session table, (token lock,)
    // handle table at least.
    EXPECT_GE(failed, kind.token ? 3 : 2) << kind.name;
  }
  // Nothing orphaned in the store: a fresh instance sees exactly the
  // token objects whose creation succeeded.
  ExpectInStoreAfterRestart(token_made);
}

// Key generation into the token (C_GenerateKey, and C_GenerateKeyPair,
// whose public key is made first and must go again when the private one
// fails): a failed lock leaves no key, in the table or in the store.
TEST_F(AppLockFailureTest, TokenKeyGenerationIsAllOrNothing) {
  Initialize();
  InitToken();
  CK_SESSION_HANDLE s = Open(true);
  ASSERT_EQ(LoginUser(s), CKR_OK);
  CK_BBOOL yes = CK_TRUE;
  std::map<std::string, bool> made;
  int failed = 0;
  for (int k = 0;; ++k) {
    ASSERT_LT(k, kMaxLocks);
    const std::string label = "aes-" + std::to_string(k);
    CK_MECHANISM gen = {CKM_AES_KEY_GEN, nullptr, 0};
    CK_ULONG len = 16;
    CK_ATTRIBUTE t[] = {
        {CKA_VALUE_LEN, &len, sizeof(len)},
        {CKA_TOKEN, &yes, sizeof(yes)},
        {CKA_LABEL, const_cast<char*>(label.data()), label.size()}};
    CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
    Arm(k);
    CK_RV rv = f_->C_GenerateKey(s, &gen, t, 3, &h);
    const bool fired = Disarm();
    ASSERT_TRUE(rv == CKR_OK || rv == CKR_GENERAL_ERROR) << label << rv;
    EXPECT_EQ(rv == CKR_GENERAL_ERROR, fired) << label;
    EXPECT_EQ(FindByLabel(s, label).size(), rv == CKR_OK ? 1u : 0u) << label;
    made[label] = rv == CKR_OK;
    if (!fired) break;
    ++failed;
  }
  EXPECT_GE(failed, 3);
  failed = 0;
  for (int k = 0;; ++k) {
    ASSERT_LT(k, kMaxLocks);
    const std::string pub_label = "pair-pub-" + std::to_string(k);
    const std::string priv_label = "pair-priv-" + std::to_string(k);
    CK_MECHANISM gen = {CKM_RSA_PKCS_KEY_PAIR_GEN, nullptr, 0};
    CK_ULONG bits = 2048;
    CK_ATTRIBUTE pub_t[] = {
        {CKA_MODULUS_BITS, &bits, sizeof(bits)},
        {CKA_TOKEN, &yes, sizeof(yes)},
        {CKA_LABEL, const_cast<char*>(pub_label.data()), pub_label.size()}};
    CK_ATTRIBUTE priv_t[] = {
        {CKA_TOKEN, &yes, sizeof(yes)},
        {CKA_LABEL, const_cast<char*>(priv_label.data()), priv_label.size()}};
    CK_OBJECT_HANDLE pub = CK_INVALID_HANDLE, priv = CK_INVALID_HANDLE;
    Arm(k);
    CK_RV rv = f_->C_GenerateKeyPair(s, &gen, pub_t, 3, priv_t, 2, &pub, &priv);
    const bool fired = Disarm();
    ASSERT_TRUE(rv == CKR_OK || rv == CKR_GENERAL_ERROR) << k << " " << rv;
    EXPECT_EQ(rv == CKR_GENERAL_ERROR, fired) << k;
    EXPECT_EQ(FindByLabel(s, pub_label).size(), rv == CKR_OK ? 1u : 0u) << k;
    EXPECT_EQ(FindByLabel(s, priv_label).size(), rv == CKR_OK ? 1u : 0u) << k;
    made[pub_label] = made[priv_label] = rv == CKR_OK;
    if (!fired) break;
    ++failed;
  }
  // Session table, then the token lock and handle table once per key.
  EXPECT_GE(failed, 5);
  ExpectInStoreAfterRestart(made);
}

// C_DestroyObject: a failed lock leaves the object in place and usable.
TEST_F(AppLockFailureTest, DestroyObjectIsAllOrNothing) {
  Initialize();
  InitToken();
  CK_SESSION_HANDLE s = Open(true);
  ASSERT_EQ(LoginUser(s), CKR_OK);
  std::map<std::string, bool> token_kept;
  for (const Kind& kind : kKinds) {
    int failed = 0;
    for (int k = 0;; ++k) {
      ASSERT_LT(k, kMaxLocks) << kind.name;
      const std::string label =
          std::string("destroy-") + kind.name + "-" + std::to_string(k);
      CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
      ASSERT_EQ(TryCreateData(s, label, kind.token, kind.is_private, &h),
                CKR_OK);
      Arm(k);
      CK_RV rv = f_->C_DestroyObject(s, h);
      const bool fired = Disarm();
      ASSERT_TRUE(rv == CKR_OK || rv == CKR_GENERAL_ERROR) << label << rv;
      EXPECT_EQ(rv == CKR_GENERAL_ERROR, fired) << label;
      std::vector<CK_OBJECT_HANDLE> found = FindByLabel(s, label);
      if (rv == CKR_OK) {
        EXPECT_TRUE(found.empty()) << label;
      } else {
        ASSERT_EQ(found.size(), 1u) << label;
        EXPECT_EQ(found[0], h) << label;
        EXPECT_EQ(Label(s, h), label);
      }
      if (kind.token) token_kept[label] = rv != CKR_OK;
      if (!fired) break;
      ++failed;
    }
    EXPECT_GE(failed, kind.token ? 3 : 2) << kind.name;
  }
  ExpectInStoreAfterRestart(token_kept);
}

// C_Logout with a private session object and a private token object: the
// call is refused with nothing changed (a lock failing before the token
// is locked) or the login ends, whatever fails after that. Either way no
// private object is seen while logged out; after the next login the
// private session object is gone (destroyed at logout) and the private
// token object is back.
TEST_F(AppLockFailureTest, LogoutAlwaysEndsTheLogin) {
  Initialize();
  InitToken();
  CK_SESSION_HANDLE s = Open(true);
  ASSERT_EQ(LoginUser(s), CKR_OK);
  CK_OBJECT_HANDLE tok = CK_INVALID_HANDLE;
  ASSERT_EQ(TryCreateData(s, "private-token", true, true, &tok), CKR_OK);
  int failed = 0, refused = 0;
  for (int k = 0;; ++k) {
    ASSERT_LT(k, kMaxLocks);
    const std::string label = "private-session-" + std::to_string(k);
    CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
    ASSERT_EQ(TryCreateData(s, label, false, true, &h), CKR_OK);
    Arm(k);
    CK_RV rv = f_->C_Logout(s);
    const bool fired = Disarm();
    ASSERT_TRUE(rv == CKR_OK || rv == CKR_GENERAL_ERROR) << k << " " << rv;
    if (rv == CKR_GENERAL_ERROR && State(s) == CKS_RW_USER_FUNCTIONS) {
      // Refused: nothing changed.
      ++refused;
      EXPECT_EQ(FindByLabel(s, label).size(), 1u) << k;
      EXPECT_EQ(FindByLabel(s, "private-token").size(), 1u) << k;
      ASSERT_EQ(f_->C_Logout(s), CKR_OK);
    }
    EXPECT_EQ(State(s), CKS_RW_PUBLIC_SESSION) << k;
    EXPECT_TRUE(FindByLabel(s, label).empty()) << k;
    EXPECT_TRUE(FindByLabel(s, "private-token").empty()) << k;
    ASSERT_EQ(LoginUser(s), CKR_OK) << k;
    EXPECT_TRUE(FindByLabel(s, label).empty()) << k;
    EXPECT_EQ(Label(s, h), "<error>") << k;
    EXPECT_EQ(FindByLabel(s, "private-token").size(), 1u) << k;
    if (!fired) break;
    ++failed;
  }
  // Session table, token lock, and at least the handle table in between.
  EXPECT_GE(failed, 3);
  EXPECT_LT(refused, failed);
}

// C_Login after a logout whose purge was deferred: the purge comes first,
// and when it cannot run, nobody is logged in.
TEST_F(AppLockFailureTest, LoginAfterDeferredPurge) {
  Initialize();
  InitToken();
  CK_SESSION_HANDLE s = Open(true);
  // The logout's last lock is the handle table's, for the purge: count the
  // locks a logout takes.
  ASSERT_EQ(LoginUser(s), CKR_OK);
  Arm(kMaxLocks);
  ASSERT_EQ(f_->C_Logout(s), CKR_OK);
  ASSERT_FALSE(Disarm());
  const int logout_locks = t_seen;
  int deferred = 0;
  for (int k = 0;; ++k) {
    ASSERT_LT(k, kMaxLocks);
    ASSERT_EQ(LoginUser(s), CKR_OK);
    const std::string label = "login-" + std::to_string(k);
    CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
    ASSERT_EQ(TryCreateData(s, label, false, true, &h), CKR_OK);
    Arm(logout_locks - 1);
    ASSERT_EQ(f_->C_Logout(s), CKR_OK);
    ASSERT_TRUE(Disarm());
    ++deferred;
    Arm(k);
    CK_RV rv = LoginUser(s);
    const bool fired = Disarm();
    ASSERT_TRUE(rv == CKR_OK || rv == CKR_GENERAL_ERROR) << k << " " << rv;
    EXPECT_EQ(rv == CKR_GENERAL_ERROR, fired) << k;
    if (rv != CKR_OK) {
      EXPECT_EQ(State(s), CKS_RW_PUBLIC_SESSION) << k;
      ASSERT_EQ(LoginUser(s), CKR_OK) << k;
    }
    EXPECT_EQ(State(s), CKS_RW_USER_FUNCTIONS) << k;
    EXPECT_TRUE(FindByLabel(s, label).empty()) << k;
    EXPECT_EQ(Label(s, h), "<error>") << k;
    ASSERT_EQ(f_->C_Logout(s), CKR_OK);
    if (!fired) break;
  }
  EXPECT_GE(deferred, 3);
}

// C_CloseSession, of one of two sessions and then of the last one: a
// refused close changes nothing; a close takes the session's objects with
// it, and closing the last session ends the login.
TEST_F(AppLockFailureTest, CloseSessionIsAllOrNothing) {
  Initialize();
  InitToken();
  {
    CK_SESSION_HANDLE s = Open(true);
    ASSERT_EQ(LoginUser(s), CKR_OK);
    CK_OBJECT_HANDLE tok = CK_INVALID_HANDLE;
    ASSERT_EQ(TryCreateData(s, "private-token", true, true, &tok), CKR_OK);
    ASSERT_EQ(f_->C_CloseSession(s), CKR_OK);
  }
  for (bool last : {false, true}) {
    int failed = 0;
    for (int k = 0;; ++k) {
      ASSERT_LT(k, kMaxLocks);
      CK_SESSION_HANDLE other = CK_INVALID_HANDLE;
      if (!last) other = Open(false);
      CK_SESSION_HANDLE s = Open(true);
      ASSERT_EQ(LoginUser(s), CKR_OK);
      const std::string tag = (last ? "last-" : "one-") + std::to_string(k);
      CK_OBJECT_HANDLE pub = CK_INVALID_HANDLE, priv = CK_INVALID_HANDLE;
      ASSERT_EQ(TryCreateData(s, "pub-" + tag, false, false, &pub), CKR_OK);
      ASSERT_EQ(TryCreateData(s, "priv-" + tag, false, true, &priv), CKR_OK);
      Arm(k);
      CK_RV rv = f_->C_CloseSession(s);
      const bool fired = Disarm();
      ASSERT_TRUE(rv == CKR_OK || rv == CKR_GENERAL_ERROR) << tag << rv;
      if (rv == CKR_GENERAL_ERROR) {
        EXPECT_TRUE(fired) << tag;
        // Refused: the session, its login and its objects are all there.
        EXPECT_EQ(State(s), CKS_RW_USER_FUNCTIONS) << tag;
        EXPECT_EQ(FindByLabel(s, "pub-" + tag).size(), 1u) << tag;
        EXPECT_EQ(FindByLabel(s, "priv-" + tag).size(), 1u) << tag;
        ASSERT_EQ(f_->C_CloseSession(s), CKR_OK) << tag;
      }
      CK_SESSION_INFO info;
      EXPECT_EQ(f_->C_GetSessionInfo(s, &info), CKR_SESSION_HANDLE_INVALID)
          << tag;
      CK_SESSION_HANDLE t = last ? Open(true) : other;
      // The session's objects went with it.
      EXPECT_TRUE(FindByLabel(t, "pub-" + tag).empty()) << tag;
      if (last) {
        // Closing the last session ended the login.
        EXPECT_EQ(State(t), CKS_RW_PUBLIC_SESSION) << tag;
        EXPECT_TRUE(FindByLabel(t, "private-token").empty()) << tag;
        ASSERT_EQ(LoginUser(t), CKR_OK) << tag;
      } else {
        EXPECT_EQ(State(t), CKS_RO_USER_FUNCTIONS) << tag;
      }
      EXPECT_TRUE(FindByLabel(t, "priv-" + tag).empty()) << tag;
      EXPECT_EQ(FindByLabel(t, "private-token").size(), 1u) << tag;
      ASSERT_EQ(f_->C_CloseSession(t), CKR_OK) << tag;
      if (!fired) break;
      ++failed;
    }
    EXPECT_GE(failed, 3) << last;
  }
}

// Threads using the module (unarmed, each with its own session and
// public session objects: made, read, found, destroyed) while this thread
// sweeps one operation with failing locks. For ThreadSanitizer (the names
// put these tests in scripts/ci_tsan.sh's set): a failed lock after which
// the module touched the tables anyway is a data race with these threads.
// Without TSan they check that the other threads never see a failure they
// did not cause.
class AppLockFailureThreadsTest : public AppLockFailureTest {
 protected:
  // RunWithWorkers runs `sweep` (on this thread) with the workers running.
  template <typename Sweep>
  void RunWithWorkers(Sweep sweep) {
    Initialize();
    InitToken();
    std::atomic<bool> stop{false};
    std::atomic<int> failures{0};
    constexpr int kWorkers = 2;
    std::vector<std::thread> threads;
    threads.reserve(kWorkers);
    for (int i = 0; i < kWorkers; ++i) {
      threads.emplace_back([&, i] {
        CK_SESSION_HANDLE mine = CK_INVALID_HANDLE;
        if (f_->C_OpenSession(0, CKF_SERIAL_SESSION, nullptr, nullptr, &mine) !=
            CKR_OK) {
          ++failures;
          return;
        }
        const std::string label = "worker-" + std::to_string(i);
        while (!stop.load()) {
          CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
          if (TryCreateData(mine, label, false, false, &h) != CKR_OK)
            ++failures;
          char buf[32];
          CK_ATTRIBUTE a = {CKA_LABEL, buf, sizeof(buf)};
          if (f_->C_GetAttributeValue(mine, h, &a, 1) != CKR_OK) ++failures;
          CK_ATTRIBUTE t[] = {{CKA_LABEL, nullptr, 0}};
          if (f_->C_FindObjectsInit(mine, t, 0) != CKR_OK) ++failures;
          CK_OBJECT_HANDLE found[32];
          CK_ULONG n = 0;
          if (f_->C_FindObjects(mine, found, 32, &n) != CKR_OK) ++failures;
          if (f_->C_FindObjectsFinal(mine) != CKR_OK) ++failures;
          if (f_->C_DestroyObject(mine, h) != CKR_OK) ++failures;
        }
      });
    }
    sweep();
    stop = true;
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(failures.load(), 0);
  }
};

TEST_F(AppLockFailureThreadsTest, ManyThreadsWhileCreateObjectFails) {
  RunWithWorkers([&] {
    CK_SESSION_HANDLE s = Open(true);
    ASSERT_EQ(LoginUser(s), CKR_OK);
    for (const Kind& kind : kKinds) {
      for (int k = 0;; ++k) {
        ASSERT_LT(k, kMaxLocks);
        const std::string label =
            std::string(kind.name) + "-" + std::to_string(k);
        CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
        Arm(k);
        CK_RV rv = TryCreateData(s, label, kind.token, kind.is_private, &h);
        const bool fired = Disarm();
        EXPECT_EQ(rv == CKR_GENERAL_ERROR, fired) << label;
        EXPECT_EQ(FindByLabel(s, label).size(), rv == CKR_OK ? 1u : 0u)
            << label;
        if (!fired) break;
      }
    }
  });
}

TEST_F(AppLockFailureThreadsTest, ManyThreadsWhileDestroyObjectFails) {
  RunWithWorkers([&] {
    CK_SESSION_HANDLE s = Open(true);
    ASSERT_EQ(LoginUser(s), CKR_OK);
    for (const Kind& kind : kKinds) {
      for (int k = 0;; ++k) {
        ASSERT_LT(k, kMaxLocks);
        const std::string label =
            std::string("destroy-") + kind.name + "-" + std::to_string(k);
        CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
        ASSERT_EQ(TryCreateData(s, label, kind.token, kind.is_private, &h),
                  CKR_OK);
        Arm(k);
        CK_RV rv = f_->C_DestroyObject(s, h);
        const bool fired = Disarm();
        EXPECT_EQ(rv == CKR_GENERAL_ERROR, fired) << label;
        EXPECT_EQ(FindByLabel(s, label).size(), rv == CKR_OK ? 0u : 1u)
            << label;
        if (!fired) break;
      }
    }
  });
}

TEST_F(AppLockFailureThreadsTest, ManyThreadsWhileLogoutFails) {
  RunWithWorkers([&] {
    CK_SESSION_HANDLE s = Open(true);
    ASSERT_EQ(LoginUser(s), CKR_OK);
    CK_OBJECT_HANDLE tok = CK_INVALID_HANDLE;
    ASSERT_EQ(TryCreateData(s, "private-token", true, true, &tok), CKR_OK);
    for (int k = 0;; ++k) {
      ASSERT_LT(k, kMaxLocks);
      const std::string label = "private-session-" + std::to_string(k);
      CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
      ASSERT_EQ(TryCreateData(s, label, false, true, &h), CKR_OK);
      Arm(k);
      CK_RV rv = f_->C_Logout(s);
      const bool fired = Disarm();
      EXPECT_TRUE(rv == CKR_OK || rv == CKR_GENERAL_ERROR) << k;
      if (State(s) != CKS_RW_PUBLIC_SESSION) {
        ASSERT_EQ(f_->C_Logout(s), CKR_OK);
      }
      EXPECT_TRUE(FindByLabel(s, "private-token").empty()) << k;
      ASSERT_EQ(LoginUser(s), CKR_OK) << k;
      EXPECT_TRUE(FindByLabel(s, label).empty()) << k;
      EXPECT_EQ(FindByLabel(s, "private-token").size(), 1u) << k;
      if (!fired) break;
    }
  });
}

TEST_F(AppLockFailureThreadsTest, ManyThreadsWhileCloseSessionFails) {
  RunWithWorkers([&] {
    for (int k = 0;; ++k) {
      ASSERT_LT(k, kMaxLocks);
      CK_SESSION_HANDLE s = Open(true);
      const std::string label = "closing-" + std::to_string(k);
      CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
      ASSERT_EQ(TryCreateData(s, label, false, false, &h), CKR_OK);
      Arm(k);
      CK_RV rv = f_->C_CloseSession(s);
      const bool fired = Disarm();
      EXPECT_TRUE(rv == CKR_OK || rv == CKR_GENERAL_ERROR) << k;
      if (rv != CKR_OK) {
        EXPECT_EQ(FindByLabel(s, label).size(), 1u) << k;
        ASSERT_EQ(f_->C_CloseSession(s), CKR_OK) << k;
      }
      CK_SESSION_HANDLE t = Open(false);
      EXPECT_TRUE(FindByLabel(t, label).empty()) << k;
      ASSERT_EQ(f_->C_CloseSession(t), CKR_OK) << k;
      if (!fired) break;
    }
  });
}

}  // namespace
}  // namespace accelcrypt::p11_module_test
