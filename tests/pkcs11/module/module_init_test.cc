// SPDX-License-Identifier: Apache-2.0
// The PKCS#11 module through dlopen + C_GetFunctionList, its life cycle:
// the function list before C_Initialize, initialisation arguments and
// application mutexes, configuration errors, fork, C_Finalize at process
// exit, and the no-recursion rule (the client backend never points here).
// Fixture: module_fixture.h.
#include <p11-kit-1/p11-kit/pkcs11.h>
#include <sys/wait.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "tests/pkcs11/module/module_fixture.h"

namespace accelcrypt::p11_module_test {
namespace {

TEST_F(ModuleTest, FunctionListBeforeInitialize) {
  EXPECT_EQ(f_->version.major, 2);
  EXPECT_EQ(f_->version.minor, 40);
  // Every entry of the v2.40 table is filled.
  auto** fns = reinterpret_cast<void**>(&f_->C_Initialize);
  auto** end = reinterpret_cast<void**>(&f_->C_WaitForSlotEvent) + 1;
  for (auto** p = fns; p != end; ++p) EXPECT_NE(*p, nullptr);
  CK_INFO info;
  EXPECT_EQ(f_->C_GetInfo(&info), CKR_CRYPTOKI_NOT_INITIALIZED);
  CK_ULONG n = 0;
  EXPECT_EQ(f_->C_GetSlotList(CK_FALSE, nullptr, &n),
            CKR_CRYPTOKI_NOT_INITIALIZED);
  EXPECT_EQ(f_->C_Finalize(nullptr), CKR_CRYPTOKI_NOT_INITIALIZED);
  EXPECT_EQ(f_->C_GetFunctionStatus(1), CKR_CRYPTOKI_NOT_INITIALIZED);
}

TEST_F(ModuleTest, InitializeArguments) {
  CK_C_INITIALIZE_ARGS args{};
  args.pReserved = &args;
  EXPECT_EQ(f_->C_Initialize(&args), CKR_ARGUMENTS_BAD);
  args = CK_C_INITIALIZE_ARGS{};
  args.CreateMutex = [](CK_VOID_PTR_PTR) -> CK_RV { return CKR_OK; };
  EXPECT_EQ(f_->C_Initialize(&args), CKR_ARGUMENTS_BAD);
  args.flags = CKF_OS_LOCKING_OK;
  EXPECT_EQ(f_->C_Initialize(&args), CKR_ARGUMENTS_BAD);
  // Nothing of the failed calls stuck.
  CK_ULONG n = 0;
  EXPECT_EQ(f_->C_GetSlotList(CK_FALSE, nullptr, &n),
            CKR_CRYPTOKI_NOT_INITIALIZED);

  args = CK_C_INITIALIZE_ARGS{};
  args.flags = CKF_OS_LOCKING_OK;
  ASSERT_EQ(f_->C_Initialize(&args), CKR_OK);
  EXPECT_EQ(f_->C_Initialize(nullptr), CKR_CRYPTOKI_ALREADY_INITIALIZED);
  CK_INFO info;
  ASSERT_EQ(f_->C_GetInfo(&info), CKR_OK);
  EXPECT_EQ(info.cryptokiVersion.major, 2);
  EXPECT_EQ(info.cryptokiVersion.minor, 40);
  EXPECT_EQ(f_->C_Finalize(&args), CKR_ARGUMENTS_BAD);
  EXPECT_EQ(f_->C_Finalize(nullptr), CKR_OK);
  EXPECT_EQ(f_->C_GetSlotList(CK_FALSE, nullptr, &n),
            CKR_CRYPTOKI_NOT_INITIALIZED);
  // And again, with no arguments at all.
  ASSERT_EQ(f_->C_Initialize(nullptr), CKR_OK);
  EXPECT_EQ(f_->C_GetSlotList(CK_FALSE, nullptr, &n), CKR_OK);
  EXPECT_EQ(n, 2u);
}

// Application mutexes (v2.40 section 5.4 case 3): counted, so the test
// sees the module use them and give every one back.
std::atomic<int> g_created{0}, g_destroyed{0}, g_locked{0};

CK_RV TestCreateMutex(CK_VOID_PTR_PTR out) {
  *out = new std::mutex;
  ++g_created;
  return CKR_OK;
}
CK_RV TestDestroyMutex(CK_VOID_PTR m) {
  delete static_cast<std::mutex*>(m);
  ++g_destroyed;
  return CKR_OK;
}
CK_RV TestLockMutex(CK_VOID_PTR m) {
  static_cast<std::mutex*>(m)->lock();
  ++g_locked;
  return CKR_OK;
}
CK_RV TestUnlockMutex(CK_VOID_PTR m) {
  static_cast<std::mutex*>(m)->unlock();
  return CKR_OK;
}

TEST_F(ModuleTest, ApplicationMutexesAreUsedAndReleased) {
  CK_C_INITIALIZE_ARGS args{};
  args.CreateMutex = TestCreateMutex;
  args.DestroyMutex = TestDestroyMutex;
  args.LockMutex = TestLockMutex;
  args.UnlockMutex = TestUnlockMutex;
  g_created = g_destroyed = g_locked = 0;
  ASSERT_EQ(f_->C_Initialize(&args), CKR_OK);
  InitToken();
  CK_SESSION_HANDLE s = Open(true);
  ASSERT_EQ(LoginUser(s), CKR_OK);
  CreateData(s, "app-locked", false, true);
  EXPECT_EQ(FindByLabel(s, "app-locked").size(), 1u);
  EXPECT_GT(g_created.load(), 0);
  EXPECT_GT(g_locked.load(), 0);
  ASSERT_EQ(f_->C_Finalize(nullptr), CKR_OK);
  EXPECT_EQ(g_created.load(), g_destroyed.load());

  // With CKF_OS_LOCKING_OK the module may use its own: it does.
  g_created = 0;
  args.flags = CKF_OS_LOCKING_OK;
  ASSERT_EQ(f_->C_Initialize(&args), CKR_OK);
  Open(false);
  EXPECT_EQ(g_created.load(), 0);
}

TEST_F(ModuleTest, ConfigurationErrorsFailInitialize) {
  setenv("ACCELCRYPT_PKCS11_CONF", (dir_ + "/absent.cnf").c_str(), 1);
  EXPECT_EQ(f_->C_Initialize(nullptr), CKR_FUNCTION_FAILED);
  // With logging asked for, the reason goes to stderr (and only then).
  const std::string log = dir_ + "/stderr.txt";
  CK_FUNCTION_LIST* f = f_;
  int rc = InChild([f, &log]() -> int {
    if (!freopen(log.c_str(), "w", stderr)) return 2;
    setenv("ACCELCRYPT_LOG_LEVEL", "1", 1);
    CK_RV rv = f->C_Initialize(nullptr);
    fflush(stderr);
    return rv == CKR_FUNCTION_FAILED ? 0 : 3;
  });
  EXPECT_EQ(rc, 0);
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("absent.cnf"), std::string::npos) << text.str();
  WriteConfig("", "slots = 0\n");
  EXPECT_EQ(f_->C_Initialize(nullptr), CKR_FUNCTION_FAILED);
  WriteConfig("", "no_such_key = 1\n");
  EXPECT_EQ(f_->C_Initialize(nullptr), CKR_FUNCTION_FAILED);
  WriteConfig("");
  EXPECT_EQ(f_->C_Initialize(nullptr), CKR_OK);
}

TEST_F(ModuleTest, ForkedChildMustReinitialize) {
  ASSERT_EQ(f_->C_Initialize(nullptr), CKR_OK);
  InitToken();
  CK_SESSION_HANDLE s = Open(true);
  ASSERT_EQ(LoginUser(s), CKR_OK);
  CreateData(s, "from-parent", true, true);
  CK_FUNCTION_LIST* f = f_;
  int rc = InChild([f, s, this]() -> int {
    CK_ULONG n = 0;
    CHILD_CHECK(f->C_GetSlotList(CK_FALSE, nullptr, &n) ==
                CKR_CRYPTOKI_NOT_INITIALIZED);
    CK_SESSION_INFO info;
    CHILD_CHECK(f->C_GetSessionInfo(s, &info) == CKR_CRYPTOKI_NOT_INITIALIZED);
    CHILD_CHECK(f->C_Finalize(nullptr) == CKR_CRYPTOKI_NOT_INITIALIZED);
    CHILD_CHECK(f->C_Initialize(nullptr) == CKR_OK);
    // A fresh instance: the parent's session is unknown here, and the
    // login does not carry over.
    CHILD_CHECK(f->C_GetSessionInfo(s, &info) == CKR_SESSION_HANDLE_INVALID);
    CK_SESSION_HANDLE cs;
    CHILD_CHECK(f->C_OpenSession(0, CKF_SERIAL_SESSION | CKF_RW_SESSION,
                                 nullptr, nullptr, &cs) == CKR_OK);
    CHILD_CHECK(f->C_GetSessionInfo(cs, &info) == CKR_OK &&
                info.state == CKS_RW_PUBLIC_SESSION);
    CHILD_CHECK(LoginUser(cs) == CKR_OK);
    CHILD_CHECK(FindByLabel(cs, "from-parent").size() == 1);
    CreateData(cs, "from-child", true, false);
    CHILD_CHECK(f->C_Finalize(nullptr) == CKR_OK);
    return 0;
  });
  EXPECT_EQ(rc, 0);
  // The parent carries on with its session and sees the child's object
  // (the store's data version changed).
  CK_SESSION_INFO info;
  ASSERT_EQ(f_->C_GetSessionInfo(s, &info), CKR_OK);
  EXPECT_EQ(info.state, CKS_RW_USER_FUNCTIONS);
  EXPECT_EQ(FindByLabel(s, "from-child").size(), 1u);
}

// C_Finalize from an atexit handler registered before C_Initialize runs
// after libcrypto's own cleanup: it must answer CKR_OK without touching
// libcrypto (the module says it left the instance to the exiting process).
// A fresh process is needed (p11_module_exit_helper): here libcrypto and
// the module's exit hook are initialised already.
TEST_F(ModuleTest, FinalizeAtProcessExitAfterOpenSslCleanup) {
  const std::string log = dir_ + "/stderr.txt";
  const std::string cmd = std::string("ACCELCRYPT_LOG_LEVEL=1 ") +
                          ACCELCRYPT_P11_EXIT_HELPER + " " +
                          ACCELCRYPT_P11_MODULE_PATH + " 2>" + log;
  int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("C_Finalize during process exit"),
            std::string::npos)
      << text.str();
}

// The core must never load the PKCS#11 client backend pointed at this
// module itself (or at a p11-kit forwarder that may lead back to it).
TEST_F(ModuleTest, ClientBackendPointingHereIsDisabled) {
  for (const std::string& module :
       {std::string(ACCELCRYPT_P11_MODULE_PATH),
        std::string("/usr/lib/x86_64-linux-gnu/p11-kit-proxy.so")}) {
    // Started at load (the default defers it to the first RSA/DSA
    // operation, where the same refusal is reported).
    WriteConfig(
        "backends = pkcs11, software\ndeferred_start = load\n"
        "pkcs11.module = " +
        module + "\n");
    std::string log = dir_ + "/stderr.txt";
    CK_FUNCTION_LIST* f = f_;
    int rc = InChild(
        [f, &log]() -> int {
          if (!freopen(log.c_str(), "w", stderr)) return 2;
          setenv("ACCELCRYPT_LOG_LEVEL", "1", 1);
          if (f->C_Initialize(nullptr) != CKR_OK) return 3;
          CK_ULONG n = 0;
          if (f->C_GetSlotList(CK_FALSE, nullptr, &n) != CKR_OK) return 4;
          if (f->C_Finalize(nullptr) != CKR_OK) return 5;
          fflush(stderr);  // the child leaves with _exit
          return 0;
        },
        20);
    EXPECT_EQ(rc, 0) << module;
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_NE(text.str().find("PKCS#11 client backend disabled"),
              std::string::npos)
        << module << ": " << text.str();
  }
}

}  // namespace
}  // namespace accelcrypt::p11_module_test
