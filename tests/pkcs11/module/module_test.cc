// SPDX-License-Identifier: Apache-2.0
// The PKCS#11 module through its only door, dlopen + C_GetFunctionList:
// what the spec-conformance suite cannot see (initialisation arguments and
// application mutexes, fork, process exit, configuration, recursion,
// handle and cache invalidation across logins and processes) and one
// end-to-end run per mechanism family.
#include <dlfcn.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rand.h>
#include <p11-kit-1/p11-kit/pkcs11.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace {

namespace fs = std::filesystem;

constexpr char kSoPin[] = "so-secret-1";
constexpr char kUserPin[] = "user-1234";

CK_UTF8CHAR_PTR Pin(const char* pin) {
  return reinterpret_cast<CK_UTF8CHAR_PTR>(const_cast<char*>(pin));
}

CK_FUNCTION_LIST* LoadModule() {
  static CK_FUNCTION_LIST* list = [] {
    void* dl = dlopen(ACCELCRYPT_P11_MODULE_PATH, RTLD_NOW | RTLD_LOCAL);
    if (dl == nullptr) return static_cast<CK_FUNCTION_LIST*>(nullptr);
    auto get =
        reinterpret_cast<CK_C_GetFunctionList>(dlsym(dl, "C_GetFunctionList"));
    CK_FUNCTION_LIST* l = nullptr;
    if (get == nullptr || get(&l) != CKR_OK) return l;
    return l;
  }();
  return list;
}

// Each test gets its own token directory and configuration file.
class ModuleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    f_ = LoadModule();
    ASSERT_NE(f_, nullptr) << dlerror();
    char tmpl[] = "/tmp/p11module-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    WriteConfig("");
  }
  void TearDown() override {
    f_->C_Finalize(nullptr);
    unsetenv("ACCELCRYPT_PKCS11_CONF");
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // WriteConfig writes the module's configuration with `core_extra` added
  // to the [accelcrypt] section and points ACCELCRYPT_PKCS11_CONF at it.
  void WriteConfig(const std::string& core_extra,
                   const std::string& module_extra = "") {
    conf_ = dir_ + "/module.cnf";
    std::ofstream out(conf_);
    out << "[accelcrypt]\nbackend_dir = " << ACCELCRYPT_P11_BACKEND_DIR << "\n"
        << core_extra << "\n[accelcrypt_pkcs11]\ntoken_dir = " << dir_
        << "/tokens\nslots = 2\npbkdf2_iterations = 1000\n"
        << "max_pin_failures = 3\n"
        << module_extra;
    out.close();
    setenv("ACCELCRYPT_PKCS11_CONF", conf_.c_str(), 1);
  }

  // InitToken initialises slot 0 with kSoPin and sets the user PIN.
  void InitToken() {
    CK_UTF8CHAR label[32];
    std::memset(label, ' ', sizeof(label));
    // PKCS#11 labels are blank-padded, not NUL-terminated.
    // NOLINTNEXTLINE(bugprone-not-null-terminated-result)
    std::memcpy(label, "module test", 11);
    ASSERT_EQ(f_->C_InitToken(0, Pin(kSoPin), strlen(kSoPin), label), CKR_OK);
    CK_SESSION_HANDLE s = Open(true);
    ASSERT_EQ(f_->C_Login(s, CKU_SO, Pin(kSoPin), strlen(kSoPin)), CKR_OK);
    ASSERT_EQ(f_->C_InitPIN(s, Pin(kUserPin), strlen(kUserPin)), CKR_OK);
    ASSERT_EQ(f_->C_CloseSession(s), CKR_OK);
  }

  CK_SESSION_HANDLE Open(bool rw, CK_SLOT_ID slot = 0) {
    CK_SESSION_HANDLE s = CK_INVALID_HANDLE;
    CK_FLAGS flags = CKF_SERIAL_SESSION | (rw ? CKF_RW_SESSION : 0);
    EXPECT_EQ(f_->C_OpenSession(slot, flags, nullptr, nullptr, &s), CKR_OK);
    return s;
  }

  CK_RV LoginUser(CK_SESSION_HANDLE s) {
    return f_->C_Login(s, CKU_USER, Pin(kUserPin), strlen(kUserPin));
  }

  // CreateData makes a data object with `label`.
  CK_OBJECT_HANDLE CreateData(CK_SESSION_HANDLE s, const std::string& label,
                              bool token, bool is_private,
                              CK_RV want = CKR_OK) {
    CK_OBJECT_CLASS cls = CKO_DATA;
    CK_BBOOL tok = token ? CK_TRUE : CK_FALSE;
    CK_BBOOL priv = is_private ? CK_TRUE : CK_FALSE;
    CK_ATTRIBUTE t[] = {
        {CKA_CLASS, &cls, sizeof(cls)},
        {CKA_TOKEN, &tok, sizeof(tok)},
        {CKA_PRIVATE, &priv, sizeof(priv)},
        {CKA_LABEL, const_cast<char*>(label.data()), label.size()},
        {CKA_VALUE, const_cast<char*>("payload"), 7},
    };
    CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
    EXPECT_EQ(f_->C_CreateObject(s, t, 5, &h), want) << label;
    return h;
  }

  std::vector<CK_OBJECT_HANDLE> FindByLabel(CK_SESSION_HANDLE s,
                                            const std::string& label) {
    CK_ATTRIBUTE t[] = {
        {CKA_LABEL, const_cast<char*>(label.data()), label.size()}};
    EXPECT_EQ(f_->C_FindObjectsInit(s, t, 1), CKR_OK);
    std::vector<CK_OBJECT_HANDLE> found(16);
    CK_ULONG n = 0;
    EXPECT_EQ(f_->C_FindObjects(s, found.data(), found.size(), &n), CKR_OK);
    EXPECT_EQ(f_->C_FindObjectsFinal(s), CKR_OK);
    found.resize(n);
    return found;
  }

  std::string Label(CK_SESSION_HANDLE s, CK_OBJECT_HANDLE h) {
    char buf[64];
    CK_ATTRIBUTE t = {CKA_LABEL, buf, sizeof(buf)};
    if (f_->C_GetAttributeValue(s, h, &t, 1) != CKR_OK) return "<error>";
    return std::string(buf, t.ulValueLen);
  }

  // InChild runs `body` in a forked child and returns its exit status
  // (the child's line of failure, 0 on success, -1 on a crash/timeout).
  template <typename Body>
  int InChild(Body body, int timeout_s = 30) {
    fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
      alarm(timeout_s);
      _exit(body());
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  CK_FUNCTION_LIST* f_ = nullptr;
  std::string dir_;
  std::string conf_;
};

// A child's check: exits with the failing line.
#define CHILD_CHECK(cond)                   \
  do {                                      \
    if (!(cond)) return __LINE__ % 250 + 1; \
  } while (false)

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

TEST_F(ModuleTest, SlotsAndTokenInfo) {
  ASSERT_EQ(f_->C_Initialize(nullptr), CKR_OK);
  CK_SLOT_ID slots[4];
  CK_ULONG n = 1;
  EXPECT_EQ(f_->C_GetSlotList(CK_TRUE, slots, &n), CKR_BUFFER_TOO_SMALL);
  EXPECT_EQ(n, 2u);
  ASSERT_EQ(f_->C_GetSlotList(CK_TRUE, slots, &n), CKR_OK);
  EXPECT_EQ(slots[0], 0u);
  EXPECT_EQ(slots[1], 1u);
  CK_SLOT_INFO si;
  ASSERT_EQ(f_->C_GetSlotInfo(1, &si), CKR_OK);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(si.slotDescription), 18),
            "accelcrypt slot 1 ");
  EXPECT_TRUE(si.flags & CKF_TOKEN_PRESENT);
  EXPECT_EQ(f_->C_GetSlotInfo(2, &si), CKR_SLOT_ID_INVALID);

  CK_TOKEN_INFO ti;
  ASSERT_EQ(f_->C_GetTokenInfo(0, &ti), CKR_OK);
  EXPECT_FALSE(ti.flags & CKF_TOKEN_INITIALIZED);
  InitToken();
  ASSERT_EQ(f_->C_GetTokenInfo(0, &ti), CKR_OK);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(ti.label), 32),
            "module test                     ");
  EXPECT_TRUE(ti.flags & CKF_TOKEN_INITIALIZED);
  EXPECT_TRUE(ti.flags & CKF_USER_PIN_INITIALIZED);
  EXPECT_TRUE(ti.flags & CKF_LOGIN_REQUIRED);
  EXPECT_TRUE(ti.flags & CKF_RNG);
  EXPECT_EQ(ti.ulMaxSessionCount, CK_EFFECTIVELY_INFINITE);
  EXPECT_EQ(ti.ulMinPinLen, 4u);
  EXPECT_EQ(ti.ulMaxPinLen, 255u);
  // Slot 1 is a separate token: still uninitialised, sessions refused,
  // and neither refusing one nor reading its info creates its store.
  ASSERT_EQ(f_->C_GetTokenInfo(1, &ti), CKR_OK);
  EXPECT_FALSE(ti.flags & CKF_TOKEN_INITIALIZED);
  CK_SESSION_HANDLE s;
  EXPECT_EQ(f_->C_OpenSession(1, CKF_SERIAL_SESSION, nullptr, nullptr, &s),
            CKR_TOKEN_NOT_RECOGNIZED);
  EXPECT_EQ(f_->C_OpenSession(1, CKF_SERIAL_SESSION | CKF_RW_SESSION, nullptr,
                              nullptr, &s),
            CKR_TOKEN_NOT_RECOGNIZED);
  EXPECT_FALSE(fs::exists(dir_ + "/tokens/slot1"))
      << "C_OpenSession on an uninitialised token created its store";
  EXPECT_TRUE(fs::exists(dir_ + "/tokens/slot0/token.sqlite"));
  EXPECT_EQ(f_->C_OpenSession(0, 0, nullptr, nullptr, &s),
            CKR_SESSION_PARALLEL_NOT_SUPPORTED);
}

TEST_F(ModuleTest, LoginStateMachine) {
  ASSERT_EQ(f_->C_Initialize(nullptr), CKR_OK);
  CK_UTF8CHAR label[32];
  std::memset(label, ' ', sizeof(label));
  ASSERT_EQ(f_->C_InitToken(0, Pin(kSoPin), strlen(kSoPin), label), CKR_OK);
  CK_SESSION_HANDLE ro = Open(false);
  CK_SESSION_HANDLE rw = Open(true);
  // No user PIN yet.
  EXPECT_EQ(LoginUser(rw), CKR_USER_PIN_NOT_INITIALIZED);
  EXPECT_EQ(f_->C_InitToken(0, Pin(kSoPin), strlen(kSoPin), label),
            CKR_SESSION_EXISTS);
  // The SO cannot log in while a R/O session exists.
  EXPECT_EQ(f_->C_Login(rw, CKU_SO, Pin(kSoPin), strlen(kSoPin)),
            CKR_SESSION_READ_ONLY_EXISTS);
  ASSERT_EQ(f_->C_CloseSession(ro), CKR_OK);
  EXPECT_EQ(f_->C_Login(rw, CKU_SO, Pin("wrong-pin"), 9), CKR_PIN_INCORRECT);
  ASSERT_EQ(f_->C_Login(rw, CKU_SO, Pin(kSoPin), strlen(kSoPin)), CKR_OK);
  CK_SESSION_INFO info;
  ASSERT_EQ(f_->C_GetSessionInfo(rw, &info), CKR_OK);
  EXPECT_EQ(info.state, CKS_RW_SO_FUNCTIONS);
  EXPECT_EQ(f_->C_Login(rw, CKU_SO, Pin(kSoPin), strlen(kSoPin)),
            CKR_USER_ALREADY_LOGGED_IN);
  EXPECT_EQ(LoginUser(rw), CKR_USER_ANOTHER_ALREADY_LOGGED_IN);
  CK_SESSION_HANDLE s;
  EXPECT_EQ(f_->C_OpenSession(0, CKF_SERIAL_SESSION, nullptr, nullptr, &s),
            CKR_SESSION_READ_WRITE_SO_EXISTS);
  EXPECT_EQ(f_->C_InitPIN(rw, Pin("abc"), 3), CKR_PIN_LEN_RANGE);
  ASSERT_EQ(f_->C_InitPIN(rw, Pin(kUserPin), strlen(kUserPin)), CKR_OK);
  ASSERT_EQ(f_->C_Logout(rw), CKR_OK);
  EXPECT_EQ(f_->C_Logout(rw), CKR_USER_NOT_LOGGED_IN);
  EXPECT_EQ(f_->C_InitPIN(rw, Pin(kUserPin), strlen(kUserPin)),
            CKR_USER_NOT_LOGGED_IN);

  // The login belongs to the token: every session sees it.
  ro = Open(false);
  ASSERT_EQ(LoginUser(ro), CKR_OK);
  ASSERT_EQ(f_->C_GetSessionInfo(rw, &info), CKR_OK);
  EXPECT_EQ(info.state, CKS_RW_USER_FUNCTIONS);
  ASSERT_EQ(f_->C_GetSessionInfo(ro, &info), CKR_OK);
  EXPECT_EQ(info.state, CKS_RO_USER_FUNCTIONS);
  EXPECT_EQ(
      f_->C_Login(ro, CKU_CONTEXT_SPECIFIC, Pin(kUserPin), strlen(kUserPin)),
      CKR_OPERATION_NOT_INITIALIZED);
  EXPECT_EQ(
      f_->C_SetPIN(ro, Pin(kUserPin), strlen(kUserPin), Pin("new-pin"), 7),
      CKR_SESSION_READ_ONLY);
  ASSERT_EQ(
      f_->C_SetPIN(rw, Pin(kUserPin), strlen(kUserPin), Pin("new-pin"), 7),
      CKR_OK);
  // Closing the last session logs out.
  ASSERT_EQ(f_->C_CloseAllSessions(0), CKR_OK);
  s = Open(true);
  ASSERT_EQ(f_->C_GetSessionInfo(s, &info), CKR_OK);
  EXPECT_EQ(info.state, CKS_RW_PUBLIC_SESSION);
  EXPECT_EQ(LoginUser(s), CKR_PIN_INCORRECT);
  EXPECT_EQ(LoginUser(s), CKR_PIN_INCORRECT);
  CK_TOKEN_INFO ti;
  ASSERT_EQ(f_->C_GetTokenInfo(0, &ti), CKR_OK);
  EXPECT_TRUE(ti.flags & CKF_USER_PIN_COUNT_LOW);
  EXPECT_TRUE(ti.flags & CKF_USER_PIN_FINAL_TRY);
  ASSERT_EQ(f_->C_Login(s, CKU_USER, Pin("new-pin"), 7), CKR_OK);
}

TEST_F(ModuleTest, PrivateAndSessionObjectsFollowLoginAndSessions) {
  ASSERT_EQ(f_->C_Initialize(nullptr), CKR_OK);
  InitToken();
  CK_SESSION_HANDLE ro = Open(false);
  CK_SESSION_HANDLE rw = Open(true);
  CreateData(ro, "priv", false, true, CKR_USER_NOT_LOGGED_IN);
  CreateData(ro, "tok", true, false, CKR_SESSION_READ_ONLY);
  CK_OBJECT_HANDLE pub_session = CreateData(ro, "pub-session", false, false);
  ASSERT_EQ(LoginUser(rw), CKR_OK);
  CK_OBJECT_HANDLE priv_session = CreateData(ro, "priv-session", false, true);
  CK_OBJECT_HANDLE priv_token = CreateData(rw, "priv-token", true, true);
  EXPECT_EQ(FindByLabel(rw, "priv-session").size(), 1u);
  EXPECT_EQ(FindByLabel(ro, "priv-token").size(), 1u);
  EXPECT_EQ(Label(ro, priv_token), "priv-token");

  // Logout: private handles are invalid, private session objects gone.
  ASSERT_EQ(f_->C_Logout(rw), CKR_OK);
  CK_ULONG size = 0;
  EXPECT_EQ(f_->C_GetObjectSize(rw, priv_token, &size),
            CKR_OBJECT_HANDLE_INVALID);
  EXPECT_EQ(f_->C_GetObjectSize(rw, priv_session, &size),
            CKR_OBJECT_HANDLE_INVALID);
  EXPECT_TRUE(FindByLabel(rw, "priv-token").empty());
  EXPECT_TRUE(FindByLabel(rw, "priv-session").empty());
  EXPECT_EQ(f_->C_GetObjectSize(rw, pub_session, &size), CKR_OK);
  // The old handle stays invalid after a new login (v2.40 C_Logout); the
  // object is found again under a new one.
  ASSERT_EQ(LoginUser(rw), CKR_OK);
  EXPECT_EQ(f_->C_GetObjectSize(rw, priv_token, &size),
            CKR_OBJECT_HANDLE_INVALID);
  std::vector<CK_OBJECT_HANDLE> again = FindByLabel(rw, "priv-token");
  ASSERT_EQ(again.size(), 1u);
  EXPECT_NE(again[0], priv_token);
  EXPECT_TRUE(FindByLabel(rw, "priv-session").empty());

  // Session objects die with their session; other sessions' survive.
  ASSERT_EQ(f_->C_CloseSession(ro), CKR_OK);
  EXPECT_EQ(f_->C_GetObjectSize(rw, pub_session, &size),
            CKR_OBJECT_HANDLE_INVALID);
  // Wrong kind of handle: key functions say KEY_HANDLE_INVALID.
  CK_MECHANISM mech = {CKM_AES_CBC, nullptr, 0};
  EXPECT_EQ(f_->C_EncryptInit(rw, &mech, 0xdead), CKR_KEY_HANDLE_INVALID);
  EXPECT_EQ(f_->C_DestroyObject(rw, 0xdead), CKR_OBJECT_HANDLE_INVALID);
}

TEST_F(ModuleTest, TokenObjectsSurviveFinalize) {
  ASSERT_EQ(f_->C_Initialize(nullptr), CKR_OK);
  InitToken();
  CK_SESSION_HANDLE s = Open(true);
  ASSERT_EQ(LoginUser(s), CKR_OK);
  CreateData(s, "kept-public", true, false);
  CreateData(s, "kept-private", true, true);
  CreateData(s, "dropped", false, false);
  ASSERT_EQ(f_->C_Finalize(nullptr), CKR_OK);

  ASSERT_EQ(f_->C_Initialize(nullptr), CKR_OK);
  s = Open(false);
  EXPECT_EQ(FindByLabel(s, "kept-public").size(), 1u);
  EXPECT_TRUE(FindByLabel(s, "kept-private").empty());
  EXPECT_TRUE(FindByLabel(s, "dropped").empty());
  ASSERT_EQ(LoginUser(s), CKR_OK);
  std::vector<CK_OBJECT_HANDLE> priv = FindByLabel(s, "kept-private");
  ASSERT_EQ(priv.size(), 1u);
  char value[16];
  CK_ATTRIBUTE t = {CKA_VALUE, value, sizeof(value)};
  ASSERT_EQ(f_->C_GetAttributeValue(s, priv[0], &t, 1), CKR_OK);
  EXPECT_EQ(std::string(value, t.ulValueLen), "payload");
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

TEST_F(ModuleTest, AnotherProcessChangesAreSeen) {
  ASSERT_EQ(f_->C_Initialize(nullptr), CKR_OK);
  InitToken();
  CK_SESSION_HANDLE s = Open(true);
  CK_OBJECT_HANDLE relabelled = CreateData(s, "old-label", true, false);
  CK_OBJECT_HANDLE doomed = CreateData(s, "doomed", true, false);
  EXPECT_EQ(Label(s, relabelled), "old-label");
  CK_FUNCTION_LIST* f = f_;
  int rc = InChild([f, this]() -> int {
    CHILD_CHECK(f->C_Initialize(nullptr) == CKR_OK);
    CK_SESSION_HANDLE cs;
    CHILD_CHECK(f->C_OpenSession(0, CKF_SERIAL_SESSION | CKF_RW_SESSION,
                                 nullptr, nullptr, &cs) == CKR_OK);
    std::vector<CK_OBJECT_HANDLE> old = FindByLabel(cs, "old-label");
    CHILD_CHECK(old.size() == 1);
    CK_ATTRIBUTE t = {CKA_LABEL, const_cast<char*>("new-label"), 9};
    CHILD_CHECK(f->C_SetAttributeValue(cs, old[0], &t, 1) == CKR_OK);
    std::vector<CK_OBJECT_HANDLE> doomed = FindByLabel(cs, "doomed");
    CHILD_CHECK(doomed.size() == 1);
    CHILD_CHECK(f->C_DestroyObject(cs, doomed[0]) == CKR_OK);
    CHILD_CHECK(f->C_Finalize(nullptr) == CKR_OK);
    return 0;
  });
  ASSERT_EQ(rc, 0);
  // The next search re-reads the store: same handle, new label; the
  // destroyed object's handle is gone.
  std::vector<CK_OBJECT_HANDLE> found = FindByLabel(s, "new-label");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0], relabelled);
  EXPECT_EQ(Label(s, relabelled), "new-label");
  CK_ULONG size = 0;
  EXPECT_EQ(f_->C_GetObjectSize(s, doomed, &size), CKR_OBJECT_HANDLE_INVALID);
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
    WriteConfig("backends = pkcs11, software\npkcs11.module = " + module +
                "\n");
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

TEST_F(ModuleTest, AesCbcRoundTripAndOperationRules) {
  ASSERT_EQ(f_->C_Initialize(nullptr), CKR_OK);
  InitToken();
  CK_SESSION_HANDLE s = Open(true);
  ASSERT_EQ(LoginUser(s), CKR_OK);
  CK_MECHANISM gen = {CKM_AES_KEY_GEN, nullptr, 0};
  CK_ULONG len = 32;
  CK_BBOOL yes = CK_TRUE;
  CK_ATTRIBUTE t[] = {{CKA_VALUE_LEN, &len, sizeof(len)},
                      {CKA_ENCRYPT, &yes, sizeof(yes)},
                      {CKA_DECRYPT, &yes, sizeof(yes)}};
  CK_OBJECT_HANDLE key;
  ASSERT_EQ(f_->C_GenerateKey(s, &gen, t, 3, &key), CKR_OK);
  unsigned char iv[16];
  ASSERT_EQ(f_->C_GenerateRandom(s, iv, sizeof(iv)), CKR_OK);
  CK_MECHANISM cbc = {CKM_AES_CBC, iv, sizeof(iv)};
  std::vector<unsigned char> plain(64);
  ASSERT_EQ(f_->C_GenerateRandom(s, plain.data(), plain.size()), CKR_OK);

  ASSERT_EQ(f_->C_EncryptInit(s, &cbc, key), CKR_OK);
  EXPECT_EQ(f_->C_EncryptInit(s, &cbc, key), CKR_OPERATION_ACTIVE);
  CK_ULONG out_len = 0;
  // Size query, then a short buffer: the operation stays active.
  ASSERT_EQ(f_->C_Encrypt(s, plain.data(), plain.size(), nullptr, &out_len),
            CKR_OK);
  EXPECT_EQ(out_len, plain.size());
  std::vector<unsigned char> cipher(out_len);
  CK_ULONG short_len = 8;
  EXPECT_EQ(
      f_->C_Encrypt(s, plain.data(), plain.size(), cipher.data(), &short_len),
      CKR_BUFFER_TOO_SMALL);
  EXPECT_EQ(short_len, plain.size());
  ASSERT_EQ(
      f_->C_Encrypt(s, plain.data(), plain.size(), cipher.data(), &out_len),
      CKR_OK);
  // C_Encrypt ended it.
  EXPECT_EQ(f_->C_EncryptUpdate(s, plain.data(), 16, cipher.data(), &out_len),
            CKR_OPERATION_NOT_INITIALIZED);

  // Multi-part decryption gives the plaintext back.
  ASSERT_EQ(f_->C_DecryptInit(s, &cbc, key), CKR_OK);
  std::vector<unsigned char> back(plain.size());
  CK_ULONG n1 = back.size();
  ASSERT_EQ(f_->C_DecryptUpdate(s, cipher.data(), 40, back.data(), &n1),
            CKR_OK);
  CK_ULONG n2 = back.size() - n1;
  ASSERT_EQ(
      f_->C_DecryptUpdate(s, cipher.data() + 40, 24, back.data() + n1, &n2),
      CKR_OK);
  CK_ULONG n3 = back.size() - n1 - n2;
  ASSERT_EQ(f_->C_DecryptFinal(s, back.data() + n1 + n2, &n3), CKR_OK);
  EXPECT_EQ(n1 + n2 + n3, plain.size());
  EXPECT_EQ(back, plain);

  // A single-part call after an update is refused and ends the operation.
  ASSERT_EQ(f_->C_EncryptInit(s, &cbc, key), CKR_OK);
  CK_ULONG m = cipher.size();
  ASSERT_EQ(f_->C_EncryptUpdate(s, plain.data(), 16, cipher.data(), &m),
            CKR_OK);
  m = cipher.size();
  EXPECT_EQ(f_->C_Encrypt(s, plain.data(), 16, cipher.data(), &m),
            CKR_OPERATION_ACTIVE);
  EXPECT_EQ(f_->C_EncryptFinal(s, cipher.data(), &m),
            CKR_OPERATION_NOT_INITIALIZED);

  // Usage attributes are checked, and a change is seen at the next init
  // (the cached prepared key does not outlive the attributes).
  CK_BBOOL no = CK_FALSE;
  CK_ATTRIBUTE off = {CKA_ENCRYPT, &no, sizeof(no)};
  ASSERT_EQ(f_->C_SetAttributeValue(s, key, &off, 1), CKR_OK);
  EXPECT_EQ(f_->C_EncryptInit(s, &cbc, key), CKR_KEY_FUNCTION_NOT_PERMITTED);
  ASSERT_EQ(f_->C_DecryptInit(s, &cbc, key), CKR_OK);
  ASSERT_EQ(f_->C_DestroyObject(s, key), CKR_OK);
  EXPECT_EQ(f_->C_EncryptInit(s, &cbc, key), CKR_KEY_HANDLE_INVALID);
}

TEST_F(ModuleTest, Sha256DigestMatchesLibcrypto) {
  ASSERT_EQ(f_->C_Initialize(nullptr), CKR_OK);
  InitToken();
  CK_SESSION_HANDLE s = Open(false);
  std::vector<unsigned char> data(1000);
  ASSERT_EQ(RAND_bytes(data.data(), data.size()), 1);
  unsigned char want[32];
  unsigned int want_len = 0;
  ASSERT_EQ(EVP_Digest(data.data(), data.size(), want, &want_len, EVP_sha256(),
                       nullptr),
            1);
  CK_MECHANISM sha = {CKM_SHA256, nullptr, 0};
  // Single part.
  ASSERT_EQ(f_->C_DigestInit(s, &sha), CKR_OK);
  unsigned char got[32];
  CK_ULONG got_len = sizeof(got);
  ASSERT_EQ(f_->C_Digest(s, data.data(), data.size(), got, &got_len), CKR_OK);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(got), got_len),
            std::string(reinterpret_cast<char*>(want), want_len));
  // Multi-part with the state saved and restored half way.
  ASSERT_EQ(f_->C_DigestInit(s, &sha), CKR_OK);
  ASSERT_EQ(f_->C_DigestUpdate(s, data.data(), 300), CKR_OK);
  CK_ULONG state_len = 0;
  ASSERT_EQ(f_->C_GetOperationState(s, nullptr, &state_len), CKR_OK);
  std::vector<unsigned char> state(state_len);
  ASSERT_EQ(f_->C_GetOperationState(s, state.data(), &state_len), CKR_OK);
  ASSERT_EQ(f_->C_DigestUpdate(s, data.data(), 10), CKR_OK);  // thrown away
  ASSERT_EQ(f_->C_SetOperationState(s, state.data(), state_len, 0, 0), CKR_OK);
  ASSERT_EQ(f_->C_DigestUpdate(s, data.data() + 300, 700), CKR_OK);
  got_len = 0;
  ASSERT_EQ(f_->C_DigestFinal(s, nullptr, &got_len), CKR_OK);
  EXPECT_EQ(got_len, 32u);
  ASSERT_EQ(f_->C_DigestFinal(s, got, &got_len), CKR_OK);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(got), got_len),
            std::string(reinterpret_cast<char*>(want), want_len));
}

TEST_F(ModuleTest, RsaSignatureVerifiesWithLibcrypto) {
  ASSERT_EQ(f_->C_Initialize(nullptr), CKR_OK);
  InitToken();
  CK_SESSION_HANDLE s = Open(true);
  ASSERT_EQ(LoginUser(s), CKR_OK);
  CK_MECHANISM gen = {CKM_RSA_PKCS_KEY_PAIR_GEN, nullptr, 0};
  CK_ULONG bits = 2048;
  CK_BBOOL yes = CK_TRUE;
  CK_ATTRIBUTE pub_t[] = {{CKA_MODULUS_BITS, &bits, sizeof(bits)},
                          {CKA_VERIFY, &yes, sizeof(yes)}};
  CK_ATTRIBUTE priv_t[] = {{CKA_SIGN, &yes, sizeof(yes)},
                           {CKA_TOKEN, &yes, sizeof(yes)}};
  CK_OBJECT_HANDLE pub, priv;
  ASSERT_EQ(f_->C_GenerateKeyPair(s, &gen, pub_t, 2, priv_t, 2, &pub, &priv),
            CKR_OK);
  const std::string msg = "message signed by the PKCS#11 module";
  CK_MECHANISM sign = {CKM_SHA256_RSA_PKCS, nullptr, 0};
  ASSERT_EQ(f_->C_SignInit(s, &sign, priv), CKR_OK);
  ASSERT_EQ(f_->C_SignUpdate(s, (CK_BYTE_PTR)msg.data(), 10), CKR_OK);
  ASSERT_EQ(f_->C_SignUpdate(s, (CK_BYTE_PTR)msg.data() + 10, msg.size() - 10),
            CKR_OK);
  std::vector<unsigned char> sig(256);
  CK_ULONG sig_len = sig.size();
  ASSERT_EQ(f_->C_SignFinal(s, sig.data(), &sig_len), CKR_OK);
  ASSERT_EQ(sig_len, 256u);
  // The module verifies it, and rejects a changed message.
  ASSERT_EQ(f_->C_VerifyInit(s, &sign, pub), CKR_OK);
  EXPECT_EQ(
      f_->C_Verify(s, (CK_BYTE_PTR)msg.data(), msg.size(), sig.data(), sig_len),
      CKR_OK);
  ASSERT_EQ(f_->C_VerifyInit(s, &sign, pub), CKR_OK);
  EXPECT_EQ(f_->C_Verify(s, (CK_BYTE_PTR)msg.data(), msg.size() - 1, sig.data(),
                         sig_len),
            CKR_SIGNATURE_INVALID);
  // A private key cannot verify, a public one cannot sign.
  EXPECT_EQ(f_->C_SignInit(s, &sign, pub), CKR_KEY_FUNCTION_NOT_PERMITTED);

  // libcrypto verifies it with the public key read back.
  std::vector<unsigned char> n(512), e(16);
  CK_ATTRIBUTE get[] = {{CKA_MODULUS, n.data(), n.size()},
                        {CKA_PUBLIC_EXPONENT, e.data(), e.size()}};
  ASSERT_EQ(f_->C_GetAttributeValue(s, pub, get, 2), CKR_OK);
  BIGNUM* bn_n = BN_bin2bn(n.data(), get[0].ulValueLen, nullptr);
  BIGNUM* bn_e = BN_bin2bn(e.data(), get[1].ulValueLen, nullptr);
  OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
  OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn_n);
  OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bn_e);
  OSSL_PARAM* params = OSSL_PARAM_BLD_to_param(bld);
  EVP_PKEY_CTX* kctx = EVP_PKEY_CTX_new_from_name(nullptr, "RSA", nullptr);
  EVP_PKEY* pkey = nullptr;
  ASSERT_EQ(EVP_PKEY_fromdata_init(kctx), 1);
  ASSERT_EQ(EVP_PKEY_fromdata(kctx, &pkey, EVP_PKEY_PUBLIC_KEY, params), 1);
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  ASSERT_EQ(EVP_DigestVerifyInit(md, nullptr, EVP_sha256(), nullptr, pkey), 1);
  EXPECT_EQ(EVP_DigestVerify(md, sig.data(), sig_len,
                             reinterpret_cast<const unsigned char*>(msg.data()),
                             msg.size()),
            1);
  EVP_MD_CTX_free(md);
  EVP_PKEY_free(pkey);
  EVP_PKEY_CTX_free(kctx);
  OSSL_PARAM_free(params);
  OSSL_PARAM_BLD_free(bld);
  BN_free(bn_n);
  BN_free(bn_e);
}

// Many threads, each with its own session, share one key and the handle
// table: encryption, digests, and session objects made, found and
// destroyed concurrently; every call must succeed.
TEST_F(ModuleTest, ManyThreadsShareTheModule) {
  ASSERT_EQ(f_->C_Initialize(nullptr), CKR_OK);
  InitToken();
  CK_SESSION_HANDLE s = Open(true);
  ASSERT_EQ(LoginUser(s), CKR_OK);
  CK_MECHANISM gen = {CKM_AES_KEY_GEN, nullptr, 0};
  CK_ULONG len = 16;
  CK_ATTRIBUTE t[] = {{CKA_VALUE_LEN, &len, sizeof(len)}};
  CK_OBJECT_HANDLE key;
  ASSERT_EQ(f_->C_GenerateKey(s, &gen, t, 1, &key), CKR_OK);
  constexpr int kThreads = 8;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      CK_SESSION_HANDLE mine;
      if (f_->C_OpenSession(0, CKF_SERIAL_SESSION, nullptr, nullptr, &mine) !=
          CKR_OK) {
        ++failures;
        return;
      }
      unsigned char iv[16] = {};
      CK_MECHANISM cbc = {CKM_AES_CBC, iv, sizeof(iv)};
      CK_MECHANISM sha = {CKM_SHA256, nullptr, 0};
      unsigned char in[64] = {}, out[64];
      const std::string label = "thread-" + std::to_string(i);
      for (int round = 0; round < 50; ++round) {
        CK_ULONG n = sizeof(out);
        if (f_->C_EncryptInit(mine, &cbc, key) != CKR_OK ||
            f_->C_Encrypt(mine, in, sizeof(in), out, &n) != CKR_OK) {
          ++failures;
        }
        n = 32;
        if (f_->C_DigestInit(mine, &sha) != CKR_OK ||
            f_->C_Digest(mine, in, sizeof(in), out, &n) != CKR_OK) {
          ++failures;
        }
        CK_OBJECT_HANDLE obj = CreateData(mine, label, false, false);
        std::vector<CK_OBJECT_HANDLE> found = FindByLabel(mine, label);
        if (found.size() != 1 || found[0] != obj ||
            f_->C_DestroyObject(mine, obj) != CKR_OK) {
          ++failures;
        }
      }
      if (f_->C_CloseSession(mine) != CKR_OK) ++failures;
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  CK_TOKEN_INFO ti;
  ASSERT_EQ(f_->C_GetTokenInfo(0, &ti), CKR_OK);
  EXPECT_EQ(ti.ulSessionCount, 1u);
}

// Login and logout race object and crypto calls on other sessions of the
// token: no deadlock, and every answer is one the state allows.
TEST_F(ModuleTest, LoginRacesObjectAndCryptoCalls) {
  ASSERT_EQ(f_->C_Initialize(nullptr), CKR_OK);
  InitToken();
  CK_SESSION_HANDLE anchor = Open(true);
  std::atomic<bool> stop{false};
  std::atomic<int> unexpected{0};
  std::vector<std::thread> workers;
  workers.reserve(4);
  for (int i = 0; i < 4; ++i) {
    workers.emplace_back([&, i] {
      CK_SESSION_HANDLE mine;
      if (f_->C_OpenSession(0, CKF_SERIAL_SESSION | CKF_RW_SESSION, nullptr,
                            nullptr, &mine) != CKR_OK) {
        ++unexpected;
        return;
      }
      CK_OBJECT_CLASS cls = CKO_DATA;
      CK_BBOOL yes = CK_TRUE;
      const std::string label = "race-" + std::to_string(i);
      CK_ATTRIBUTE t[] = {
          {CKA_CLASS, &cls, sizeof(cls)},
          {CKA_PRIVATE, &yes, sizeof(yes)},
          {CKA_LABEL, const_cast<char*>(label.data()), label.size()}};
      CK_MECHANISM sha = {CKM_SHA256, nullptr, 0};
      unsigned char out[32];
      while (!stop.load()) {
        CK_OBJECT_HANDLE h;
        CK_RV rv = f_->C_CreateObject(mine, t, 3, &h);
        if (rv == CKR_OK) {
          rv = f_->C_DestroyObject(mine, h);
          if (rv != CKR_OK && rv != CKR_OBJECT_HANDLE_INVALID &&
              rv != CKR_USER_NOT_LOGGED_IN) {
            ++unexpected;
          }
        } else if (rv != CKR_USER_NOT_LOGGED_IN) {
          ++unexpected;
        }
        CK_ATTRIBUTE find = t[2];
        if (f_->C_FindObjectsInit(mine, &find, 1) != CKR_OK) ++unexpected;
        CK_OBJECT_HANDLE found[4];
        CK_ULONG n = 0;
        if (f_->C_FindObjects(mine, found, 4, &n) != CKR_OK ||
            f_->C_FindObjectsFinal(mine) != CKR_OK) {
          ++unexpected;
        }
        CK_ULONG len = sizeof(out);
        if (f_->C_DigestInit(mine, &sha) != CKR_OK ||
            f_->C_Digest(mine, out, sizeof(out), out, &len) != CKR_OK) {
          ++unexpected;
        }
      }
    });
  }
  for (int round = 0; round < 30; ++round) {
    if (LoginUser(anchor) != CKR_OK) ++unexpected;
    std::this_thread::yield();
    if (f_->C_Logout(anchor) != CKR_OK) ++unexpected;
  }
  stop.store(true);
  for (std::thread& th : workers) th.join();
  EXPECT_EQ(unexpected.load(), 0);
}

}  // namespace
