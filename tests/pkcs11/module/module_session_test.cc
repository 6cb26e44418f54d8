// SPDX-License-Identifier: Apache-2.0
// The PKCS#11 module through dlopen + C_GetFunctionList, slots, logins and
// objects: token info, the login state machine, private and session objects
// across logins and sessions, token objects across C_Finalize, changes made
// by another process.
// Fixture: module_fixture.h.
#include <p11-kit-1/p11-kit/pkcs11.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/pkcs11/module/module_fixture.h"

namespace accelcrypt::p11_module_test {
namespace {

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

}  // namespace
}  // namespace accelcrypt::p11_module_test
