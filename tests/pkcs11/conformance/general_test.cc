// SPDX-License-Identifier: Apache-2.0
// PKCS#11 v2.40 base spec conformance: general-purpose, slot/token and
// session management functions, the login state machine, argument and
// handle checks. Section numbers are those of "PKCS #11 Cryptographic Token
// Interface Base Specification Version 2.40" (pkcs11-base-v2.40).
#include <openssl/evp.h>
#include <p11-kit-1/p11-kit/pkcs11.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/pkcs11/conformance/conformance_fixture.h"
#include "tests/pkcs11/conformance/p11_harness.h"

namespace accelcrypt::p11test {
namespace {

// ---------------------------------------------------------------------------
// C_Initialize / C_Finalize (5.4.1, 5.4.2), on a library not yet initialised.

class InitTest : public P11Test {
 protected:
  bool AutoInitialize() const override { return false; }
};

CK_RV DummyCreateMutex(void** mutex) {
  *mutex = new int(0);
  return CKR_OK;
}
CK_RV DummyDestroyMutex(void* mutex) {
  delete static_cast<int*>(mutex);
  return CKR_OK;
}
CK_RV DummyLockMutex(void*) { return CKR_OK; }
CK_RV DummyUnlockMutex(void*) { return CKR_OK; }

// 5.4.1: "pReserved ... should be set to NULL_PTR; if it is not, then
// C_Initialize should return with the value CKR_ARGUMENTS_BAD."
TEST_P(InitTest, ReservedNotNullIsArgumentsBad) {
  CK_C_INITIALIZE_ARGS args;
  std::memset(&args, 0, sizeof(args));
  int something = 0;
  args.pReserved = &something;
  EXPECT_CKR(CKR_ARGUMENTS_BAD, f()->C_Initialize(&args));
  // Nothing was initialised.
  CK_INFO info;
  EXPECT_CKR(CKR_CRYPTOKI_NOT_INITIALIZED, f()->C_GetInfo(&info));
}

// 5.4.1: the four mutex function pointers are either all supplied or all
// NULL_PTR; otherwise CKR_ARGUMENTS_BAD.
TEST_P(InitTest, PartialMutexFunctionsAreArgumentsBad) {
  CK_C_INITIALIZE_ARGS args;
  std::memset(&args, 0, sizeof(args));
  args.CreateMutex = DummyCreateMutex;
  args.DestroyMutex = DummyDestroyMutex;
  EXPECT_CKR(CKR_ARGUMENTS_BAD, f()->C_Initialize(&args));
  CK_INFO info;
  EXPECT_CKR(CKR_CRYPTOKI_NOT_INITIALIZED, f()->C_GetInfo(&info));
}

// 5.4.1: all four supplied with CKF_OS_LOCKING_OK: the library may use
// either; initialisation succeeds.
TEST_P(InitTest, AllMutexFunctionsWithOsLockingOk) {
  CK_C_INITIALIZE_ARGS args;
  std::memset(&args, 0, sizeof(args));
  args.CreateMutex = DummyCreateMutex;
  args.DestroyMutex = DummyDestroyMutex;
  args.LockMutex = DummyLockMutex;
  args.UnlockMutex = DummyUnlockMutex;
  args.flags = CKF_OS_LOCKING_OK;
  ASSERT_CKR(CKR_OK, f()->C_Initialize(&args));
  EXPECT_CKR(CKR_OK, f()->C_Finalize(nullptr));
}

// 5.4.1: a second C_Initialize returns CKR_CRYPTOKI_ALREADY_INITIALIZED.
TEST_P(InitTest, DoubleInitializeIsAlreadyInitialized) {
  ASSERT_CKR(CKR_OK, Initialize());
  EXPECT_CKR(CKR_CRYPTOKI_ALREADY_INITIALIZED, f()->C_Initialize(nullptr));
  CK_C_INITIALIZE_ARGS args;
  std::memset(&args, 0, sizeof(args));
  EXPECT_CKR(CKR_CRYPTOKI_ALREADY_INITIALIZED, f()->C_Initialize(&args));
}

// 5.1.1 / 5.4: every function but C_Initialize and C_GetFunctionList
// returns CKR_CRYPTOKI_NOT_INITIALIZED before C_Initialize and after
// C_Finalize.
void ExpectAllNotInitialized(CK_FUNCTION_LIST* f) {
  CK_INFO info;
  EXPECT_CKR(CKR_CRYPTOKI_NOT_INITIALIZED, f->C_GetInfo(&info));
  CK_ULONG count = 0;
  EXPECT_CKR(CKR_CRYPTOKI_NOT_INITIALIZED,
             f->C_GetSlotList(CK_FALSE, nullptr, &count));
  CK_SLOT_INFO slot_info;
  EXPECT_CKR(CKR_CRYPTOKI_NOT_INITIALIZED, f->C_GetSlotInfo(0, &slot_info));
  CK_TOKEN_INFO token_info;
  EXPECT_CKR(CKR_CRYPTOKI_NOT_INITIALIZED, f->C_GetTokenInfo(0, &token_info));
  CK_SESSION_HANDLE h;
  EXPECT_CKR(CKR_CRYPTOKI_NOT_INITIALIZED,
             f->C_OpenSession(0, CKF_SERIAL_SESSION, nullptr, nullptr, &h));
  EXPECT_CKR(CKR_CRYPTOKI_NOT_INITIALIZED, f->C_CloseSession(1));
  EXPECT_CKR(CKR_CRYPTOKI_NOT_INITIALIZED, f->C_Finalize(nullptr));
  CK_BYTE buf[8];
  EXPECT_CKR(CKR_CRYPTOKI_NOT_INITIALIZED,
             f->C_GenerateRandom(1, buf, sizeof(buf)));
  CK_MECHANISM mech = {CKM_SHA256, nullptr, 0};
  EXPECT_CKR(CKR_CRYPTOKI_NOT_INITIALIZED, f->C_DigestInit(1, &mech));
}

TEST_P(InitTest, CallsBeforeInitializeAreNotInitialized) {
  ExpectAllNotInitialized(f());
}

TEST_P(InitTest, CallsAfterFinalizeAreNotInitialized) {
  ASSERT_CKR(CKR_OK, Initialize());
  ASSERT_CKR(CKR_OK, SetUpToken(true));
  CK_SESSION_HANDLE h;
  ASSERT_CKR(CKR_OK, OpenUserRw(&h));
  ASSERT_CKR(CKR_OK, Finalize());
  ExpectAllNotInitialized(f());
  // The session of the finalised library is gone with it.
  CK_SESSION_INFO si;
  EXPECT_CKR(CKR_CRYPTOKI_NOT_INITIALIZED, f()->C_GetSessionInfo(h, &si));
  // And the library can be initialised again.
  ASSERT_CKR(CKR_OK, Initialize());
  CK_SLOT_ID slot;
  EXPECT_CKR(CKR_OK, FindSlotByLabel(f(), kLabel, &slot));
}

// 5.4.2: "pReserved is reserved for future versions. For this version, it
// should be set to NULL_PTR" (CKR_ARGUMENTS_BAD listed).
TEST_P(InitTest, FinalizeWithReservedIsArgumentsBad) {
  ASSERT_CKR(CKR_OK, Initialize());
  int something = 0;
  EXPECT_CKR(CKR_ARGUMENTS_BAD, f()->C_Finalize(&something));
}

// 5.4.4 C_GetFunctionList: NULL ppFunctionList is CKR_ARGUMENTS_BAD; the
// list carries the Cryptoki version (3.1 CK_VERSION, 2.x here) and is the
// same one every time.
TEST_P(InitTest, GetFunctionList) {
  auto module = Module::Load(ModulePath(kind()));
  ASSERT_TRUE(module.ok());
  auto get = reinterpret_cast<CK_C_GetFunctionList>(
      (*module)->Symbol("C_GetFunctionList"));
  ASSERT_NE(nullptr, get);
  EXPECT_CKR(CKR_ARGUMENTS_BAD, get(nullptr));
  CK_FUNCTION_LIST* list = nullptr;
  ASSERT_CKR(CKR_OK, get(&list));
  EXPECT_EQ(f(), list);
  EXPECT_EQ(2, list->version.major);
  EXPECT_NE(nullptr, list->C_Initialize);
  EXPECT_NE(nullptr, list->C_WaitForSlotEvent);
}

// 5.4.1: the library may refuse CKF_LIBRARY_CANT_CREATE_OS_THREADS only
// with CKR_NEED_TO_CREATE_THREADS; mutex functions without
// CKF_OS_LOCKING_OK: use them or CKR_CANT_LOCK.
TEST_P(InitTest, InitializeFlags) {
  CK_C_INITIALIZE_ARGS args;
  std::memset(&args, 0, sizeof(args));
  args.flags = CKF_LIBRARY_CANT_CREATE_OS_THREADS | CKF_OS_LOCKING_OK;
  CK_RV rv = f()->C_Initialize(&args);
  EXPECT_TRUE(rv == CKR_OK || rv == CKR_NEED_TO_CREATE_THREADS) << CkrName(rv);
  if (rv == CKR_OK) {
    ASSERT_CKR(CKR_OK, f()->C_Finalize(nullptr));
  }
  std::memset(&args, 0, sizeof(args));
  args.CreateMutex = DummyCreateMutex;
  args.DestroyMutex = DummyDestroyMutex;
  args.LockMutex = DummyLockMutex;
  args.UnlockMutex = DummyUnlockMutex;
  rv = f()->C_Initialize(&args);
  EXPECT_TRUE(rv == CKR_OK || rv == CKR_CANT_LOCK) << CkrName(rv);
  if (rv == CKR_OK) {
    ASSERT_CKR(CKR_OK, f()->C_Finalize(nullptr));
  }
}

ACCELCRYPT_P11_INSTANTIATE(InitTest);

// ---------------------------------------------------------------------------
// General information and slots (5.4.3, 5.5), two-call convention (5.2).

class InfoTest : public P11Test {};

bool BlankPaddedNoNul(const unsigned char* field, size_t len) {
  for (size_t i = 0; i < len; ++i) {
    if (field[i] == 0) return false;
  }
  return true;
}

// 5.4.3 C_GetInfo; 3.1 CK_INFO: strings blank-padded, not NUL-terminated;
// flags "bit flags reserved for future versions. Must be zero for this
// version".
TEST_P(InfoTest, GetInfo) {
  CK_INFO info;
  std::memset(&info, 0xab, sizeof(info));
  ASSERT_CKR(CKR_OK, f()->C_GetInfo(&info));
  EXPECT_EQ(2, info.cryptokiVersion.major);
  EXPECT_GE(info.cryptokiVersion.minor, 20);
  EXPECT_TRUE(
      BlankPaddedNoNul(info.manufacturerID, sizeof(info.manufacturerID)));
  EXPECT_TRUE(BlankPaddedNoNul(info.libraryDescription,
                               sizeof(info.libraryDescription)));
  EXPECT_EQ(0u, info.flags);
  EXPECT_CKR(CKR_ARGUMENTS_BAD, f()->C_GetInfo(nullptr));
}

// 5.5.1 C_GetSlotList and 5.2: NULL pSlotList returns the count; a buffer
// too small returns CKR_BUFFER_TOO_SMALL with the needed count.
TEST_P(InfoTest, SlotListTwoCallConvention) {
  for (CK_BBOOL present : {CK_FALSE, CK_TRUE}) {
    CK_ULONG count = 0;
    ASSERT_CKR(CKR_OK, f()->C_GetSlotList(present, nullptr, &count));
    ASSERT_GE(count, 1u);
    std::vector<CK_SLOT_ID> slots(count + 1);
    CK_ULONG small = count - 1;
    EXPECT_CKR(CKR_BUFFER_TOO_SMALL,
               f()->C_GetSlotList(present, slots.data(), &small));
    EXPECT_EQ(count, small);
    CK_ULONG big = count + 1;
    ASSERT_CKR(CKR_OK, f()->C_GetSlotList(present, slots.data(), &big));
    EXPECT_EQ(count, big);
    // Every listed slot answers C_GetSlotInfo.
    for (CK_ULONG i = 0; i < big; ++i) {
      CK_SLOT_INFO si;
      ASSERT_CKR(CKR_OK, f()->C_GetSlotInfo(slots[i], &si));
      EXPECT_TRUE(
          BlankPaddedNoNul(si.slotDescription, sizeof(si.slotDescription)));
      if (present) {
        EXPECT_TRUE(si.flags & CKF_TOKEN_PRESENT);
      }
    }
  }
  EXPECT_CKR(CKR_ARGUMENTS_BAD, f()->C_GetSlotList(CK_TRUE, nullptr, nullptr));
}

// 5.5.3 C_GetTokenInfo; 3.2 CK_TOKEN_INFO flags after C_InitToken and
// C_InitPIN.
TEST_P(InfoTest, TokenInfoAfterInit) {
  CK_TOKEN_INFO info;
  ASSERT_CKR(CKR_OK, f()->C_GetTokenInfo(slot(), &info));
  EXPECT_EQ(std::string(kLabel), Trimmed(info.label, sizeof(info.label)));
  EXPECT_TRUE(info.flags & CKF_TOKEN_INITIALIZED);
  EXPECT_TRUE(info.flags & CKF_USER_PIN_INITIALIZED);
  EXPECT_TRUE(info.flags & CKF_LOGIN_REQUIRED);
  EXPECT_FALSE(info.flags & CKF_USER_PIN_LOCKED);
  EXPECT_FALSE(info.flags & CKF_SO_PIN_LOCKED);
  EXPECT_FALSE(info.flags & CKF_WRITE_PROTECTED);
  EXPECT_LE(info.ulMinPinLen, info.ulMaxPinLen);
  EXPECT_LE(info.ulMinPinLen, kUserPin.size());
  EXPECT_TRUE(
      BlankPaddedNoNul(info.manufacturerID, sizeof(info.manufacturerID)));
  EXPECT_TRUE(BlankPaddedNoNul(info.serialNumber, sizeof(info.serialNumber)));
  EXPECT_CKR(CKR_ARGUMENTS_BAD, f()->C_GetTokenInfo(slot(), nullptr));
  CK_SLOT_INFO si;
  EXPECT_CKR(CKR_ARGUMENTS_BAD, f()->C_GetSlotInfo(slot(), nullptr));
  // 5.5.2/5.5.3: an unknown slot id.
  EXPECT_CKR(CKR_SLOT_ID_INVALID, f()->C_GetSlotInfo(0x7fff1234, &si));
  EXPECT_CKR(CKR_SLOT_ID_INVALID, f()->C_GetTokenInfo(0x7fff1234, &info));
}

// 5.5.5 C_GetMechanismList / 5.5.6 C_GetMechanismInfo: two-call
// convention, every listed mechanism has info, an unlisted one is
// CKR_MECHANISM_INVALID.
TEST_P(InfoTest, MechanismListAndInfo) {
  CK_ULONG count = 0;
  ASSERT_CKR(CKR_OK, f()->C_GetMechanismList(slot(), nullptr, &count));
  ASSERT_GE(count, 2u);
  std::vector<CK_MECHANISM_TYPE> mechs(count);
  CK_ULONG small = 1;
  EXPECT_CKR(CKR_BUFFER_TOO_SMALL,
             f()->C_GetMechanismList(slot(), mechs.data(), &small));
  EXPECT_EQ(count, small);
  ASSERT_CKR(CKR_OK, f()->C_GetMechanismList(slot(), mechs.data(), &count));
  for (CK_MECHANISM_TYPE m : mechs) {
    CK_MECHANISM_INFO mi;
    EXPECT_CKR(CKR_OK, f()->C_GetMechanismInfo(slot(), m, &mi))
        << "mechanism 0x" << std::hex << m;
    EXPECT_LE(mi.ulMinKeySize, mi.ulMaxKeySize)
        << "mechanism 0x" << std::hex << m;
  }
  CK_MECHANISM_INFO mi;
  EXPECT_CKR(CKR_MECHANISM_INVALID,
             f()->C_GetMechanismInfo(slot(), CKM_VENDOR_DEFINED | 0x4242, &mi));
  EXPECT_CKR(CKR_ARGUMENTS_BAD,
             f()->C_GetMechanismInfo(slot(), mechs[0], nullptr));
  EXPECT_CKR(CKR_ARGUMENTS_BAD,
             f()->C_GetMechanismList(slot(), nullptr, nullptr));
}

// 3.5 CK_MECHANISM_INFO flags name the functions a mechanism serves; key
// sizes are in bytes for AES (current mechanisms "AES": "the supported range
// of AES key sizes, in bytes") and in bits for RSA ("PKCS #1 RSA key pair
// generation": "in bits"). A mechanism used with a function it does not
// serve is CKR_MECHANISM_INVALID (5.8.1, 5.10.1).
TEST_P(InfoTest, MechanismInfoFlagsAndSizes) {
  struct Want {
    CK_MECHANISM_TYPE m;
    CK_FLAGS flags;
  };
  const Want kWant[] = {
      {CKM_AES_ECB, CKF_ENCRYPT | CKF_DECRYPT},
      {CKM_AES_CBC, CKF_ENCRYPT | CKF_DECRYPT},
      {CKM_AES_CBC_PAD, CKF_ENCRYPT | CKF_DECRYPT},
      {CKM_AES_KEY_GEN, CKF_GENERATE},
      {CKM_SHA256, CKF_DIGEST},
      {CKM_SHA256_HMAC, CKF_SIGN | CKF_VERIFY},
      {CKM_RSA_PKCS_KEY_PAIR_GEN, CKF_GENERATE_KEY_PAIR},
      {CKM_SHA256_RSA_PKCS, CKF_SIGN | CKF_VERIFY},
      {CKM_RSA_PKCS_OAEP, CKF_ENCRYPT | CKF_DECRYPT},
  };
  for (const Want& w : kWant) {
    CK_MECHANISM_INFO mi;
    ASSERT_CKR(CKR_OK, f()->C_GetMechanismInfo(slot(), w.m, &mi))
        << "mechanism 0x" << std::hex << w.m;
    EXPECT_EQ(w.flags, mi.flags & w.flags) << "mechanism 0x" << std::hex << w.m;
  }
  CK_MECHANISM_INFO aes;
  ASSERT_CKR(CKR_OK, f()->C_GetMechanismInfo(slot(), CKM_AES_CBC, &aes));
  EXPECT_EQ(16u, aes.ulMinKeySize);
  EXPECT_EQ(32u, aes.ulMaxKeySize);
  CK_MECHANISM_INFO rsa;
  ASSERT_CKR(CKR_OK,
             f()->C_GetMechanismInfo(slot(), CKM_RSA_PKCS_KEY_PAIR_GEN, &rsa));
  EXPECT_LE(rsa.ulMinKeySize, 2048u);
  EXPECT_GE(rsa.ulMaxKeySize, 2048u);
  EXPECT_GE(rsa.ulMinKeySize, 256u);  // bits, not bytes

  CK_SESSION_HANDLE h;
  ASSERT_CKR(CKR_OK, OpenRo(&h));
  CK_MECHANISM ecb = {CKM_AES_ECB, nullptr, 0};
  EXPECT_CKR(CKR_MECHANISM_INVALID, f()->C_DigestInit(h, &ecb));
  CK_MECHANISM bogus = {CKM_VENDOR_DEFINED | 0x4242, nullptr, 0};
  EXPECT_CKR(CKR_MECHANISM_INVALID, f()->C_DigestInit(h, &bogus));
}

ACCELCRYPT_P11_INSTANTIATE(InfoTest);

// ---------------------------------------------------------------------------
// Token without a user PIN (5.5.7, 5.6.7).

class FreshTokenTest : public P11Test {
 protected:
  bool AutoUserPin() const override { return false; }
};

// 3.2: CKF_USER_PIN_INITIALIZED is clear until C_InitPIN.
TEST_P(FreshTokenTest, UserPinFlagClearBeforeInitPin) {
  CK_TOKEN_INFO info;
  ASSERT_CKR(CKR_OK, f()->C_GetTokenInfo(slot(), &info));
  EXPECT_TRUE(info.flags & CKF_TOKEN_INITIALIZED);
  EXPECT_FALSE(info.flags & CKF_USER_PIN_INITIALIZED);
}

// 5.6.7 C_Login: CKR_USER_PIN_NOT_INITIALIZED before C_InitPIN.
TEST_P(FreshTokenTest, LoginBeforeInitPinIsPinNotInitialized) {
  CK_SESSION_HANDLE h;
  ASSERT_CKR(CKR_OK, OpenRw(&h));
  EXPECT_CKR(CKR_USER_PIN_NOT_INITIALIZED, LoginUser(h));
}

// 5.5.8 C_InitPIN: only from a R/W SO session (CKR_USER_NOT_LOGGED_IN
// otherwise); 5.6.7 the SO may log in.
TEST_P(FreshTokenTest, InitPinNeedsSoSession) {
  CK_SESSION_HANDLE h;
  ASSERT_CKR(CKR_OK, OpenRw(&h));
  auto pin = reinterpret_cast<CK_UTF8CHAR*>(const_cast<char*>(kUserPin.data()));
  EXPECT_CKR(CKR_USER_NOT_LOGGED_IN, f()->C_InitPIN(h, pin, kUserPin.size()));
  ASSERT_CKR(CKR_OK, Login(f(), h, CKU_SO, kSoPin));
  CK_SESSION_INFO si;
  ASSERT_CKR(CKR_OK, f()->C_GetSessionInfo(h, &si));
  EXPECT_EQ(CKS_RW_SO_FUNCTIONS, si.state);
  EXPECT_CKR(CKR_OK, f()->C_InitPIN(h, pin, kUserPin.size()));
  CK_TOKEN_INFO info;
  ASSERT_CKR(CKR_OK, f()->C_GetTokenInfo(slot(), &info));
  EXPECT_TRUE(info.flags & CKF_USER_PIN_INITIALIZED);
}

ACCELCRYPT_P11_INSTANTIATE(FreshTokenTest);

// ---------------------------------------------------------------------------
// Sessions and the login state machine (5.6).

class SessionTest : public P11Test {};

// 5.6.1 C_OpenSession: "For legacy reasons, the CKF_SERIAL_SESSION bit
// must always be set; if a call to C_OpenSession does not have this bit
// set, the call should return unsuccessfully with the error code
// CKR_SESSION_PARALLEL_NOT_SUPPORTED."
TEST_P(SessionTest, OpenWithoutSerialFlag) {
  CK_SESSION_HANDLE h;
  EXPECT_CKR(CKR_SESSION_PARALLEL_NOT_SUPPORTED,
             f()->C_OpenSession(slot(), CKF_RW_SESSION, nullptr, nullptr, &h));
  EXPECT_CKR(CKR_SESSION_PARALLEL_NOT_SUPPORTED,
             f()->C_OpenSession(slot(), 0, nullptr, nullptr, &h));
  EXPECT_CKR(CKR_ARGUMENTS_BAD, f()->C_OpenSession(slot(), CKF_SERIAL_SESSION,
                                                   nullptr, nullptr, nullptr));
  EXPECT_CKR(
      CKR_SLOT_ID_INVALID,
      f()->C_OpenSession(0x7fff1234, CKF_SERIAL_SESSION, nullptr, nullptr, &h));
}

// 5.6.4 C_GetSessionInfo and the session states (3.3 CK_STATE).
TEST_P(SessionTest, SessionStatesFollowLogin) {
  CK_SESSION_HANDLE ro, rw;
  ASSERT_CKR(CKR_OK, OpenRo(&ro));
  ASSERT_CKR(CKR_OK, OpenRw(&rw));
  CK_SESSION_INFO si;
  ASSERT_CKR(CKR_OK, f()->C_GetSessionInfo(ro, &si));
  EXPECT_EQ(CKS_RO_PUBLIC_SESSION, si.state);
  EXPECT_EQ(slot(), si.slotID);
  EXPECT_TRUE(si.flags & CKF_SERIAL_SESSION);
  EXPECT_FALSE(si.flags & CKF_RW_SESSION);
  ASSERT_CKR(CKR_OK, f()->C_GetSessionInfo(rw, &si));
  EXPECT_EQ(CKS_RW_PUBLIC_SESSION, si.state);
  EXPECT_TRUE(si.flags & CKF_RW_SESSION);
  // Login is per token: every session of the application changes state.
  ASSERT_CKR(CKR_OK, LoginUser(rw));
  ASSERT_CKR(CKR_OK, f()->C_GetSessionInfo(ro, &si));
  EXPECT_EQ(CKS_RO_USER_FUNCTIONS, si.state);
  ASSERT_CKR(CKR_OK, f()->C_GetSessionInfo(rw, &si));
  EXPECT_EQ(CKS_RW_USER_FUNCTIONS, si.state);
  ASSERT_CKR(CKR_OK, f()->C_Logout(ro));
  ASSERT_CKR(CKR_OK, f()->C_GetSessionInfo(rw, &si));
  EXPECT_EQ(CKS_RW_PUBLIC_SESSION, si.state);
  EXPECT_CKR(CKR_ARGUMENTS_BAD, f()->C_GetSessionInfo(rw, nullptr));
}

// 5.6.7 C_Login: CKR_USER_ALREADY_LOGGED_IN on a second login, and
// CKR_USER_ANOTHER_ALREADY_LOGGED_IN for the SO while the user is in.
TEST_P(SessionTest, LoginTwiceIsAlreadyLoggedIn) {
  CK_SESSION_HANDLE h;
  ASSERT_CKR(CKR_OK, OpenRw(&h));
  ASSERT_CKR(CKR_OK, LoginUser(h));
  EXPECT_CKR(CKR_USER_ALREADY_LOGGED_IN, LoginUser(h));
  EXPECT_CKR(CKR_USER_ANOTHER_ALREADY_LOGGED_IN, Login(f(), h, CKU_SO, kSoPin));
  ASSERT_CKR(CKR_OK, f()->C_Logout(h));
  EXPECT_CKR(CKR_OK, Login(f(), h, CKU_SO, kSoPin));
}

// 5.6.8 C_Logout: CKR_USER_NOT_LOGGED_IN when nobody is logged in (before
// any login, and on a second logout).
TEST_P(SessionTest, LogoutWhenNotLoggedIn) {
  SKIP_IF_DEVIATES("logout.not_logged_in");
  CK_SESSION_HANDLE h;
  ASSERT_CKR(CKR_OK, OpenRw(&h));
  EXPECT_CKR(CKR_USER_NOT_LOGGED_IN, f()->C_Logout(h));
  ASSERT_CKR(CKR_OK, LoginUser(h));
  ASSERT_CKR(CKR_OK, f()->C_Logout(h));
  EXPECT_CKR(CKR_USER_NOT_LOGGED_IN, f()->C_Logout(h));
}

// 5.6.7: a wrong PIN is CKR_PIN_INCORRECT and leaves the session public.
TEST_P(SessionTest, WrongPinIsPinIncorrect) {
  CK_SESSION_HANDLE h;
  ASSERT_CKR(CKR_OK, OpenRw(&h));
  EXPECT_CKR(CKR_PIN_INCORRECT, Login(f(), h, CKU_USER, "wrong-pin-1111"));
  EXPECT_CKR(CKR_PIN_INCORRECT, Login(f(), h, CKU_SO, "wrong-so-pin"));
  CK_SESSION_INFO si;
  ASSERT_CKR(CKR_OK, f()->C_GetSessionInfo(h, &si));
  EXPECT_EQ(CKS_RW_PUBLIC_SESSION, si.state);
  // After wrong attempts the right PIN still works (below any lock limit).
  EXPECT_CKR(CKR_OK, LoginUser(h));
}

// 5.6.7: an invalid user type.
TEST_P(SessionTest, InvalidUserType) {
  CK_SESSION_HANDLE h;
  ASSERT_CKR(CKR_OK, OpenRw(&h));
  EXPECT_CKR(CKR_USER_TYPE_INVALID, Login(f(), h, 7, kUserPin));
}

// 5.6.7: "If the application calling C_Login has a R/O session open with
// the token, then it will be unable to log the SO into a session ... An
// attempt to do this will result in the error code
// CKR_SESSION_READ_ONLY_EXISTS."
TEST_P(SessionTest, SoLoginWithReadOnlySession) {
  CK_SESSION_HANDLE ro, rw;
  ASSERT_CKR(CKR_OK, OpenRo(&ro));
  ASSERT_CKR(CKR_OK, OpenRw(&rw));
  EXPECT_CKR(CKR_SESSION_READ_ONLY_EXISTS, Login(f(), rw, CKU_SO, kSoPin));
  ASSERT_CKR(CKR_OK, f()->C_CloseSession(ro));
  EXPECT_CKR(CKR_OK, Login(f(), rw, CKU_SO, kSoPin));
  // 5.6.1: with the SO logged in, a R/O session cannot be opened.
  CK_SESSION_HANDLE ro2;
  EXPECT_CKR(CKR_SESSION_READ_WRITE_SO_EXISTS, OpenRo(&ro2));
}

// 5.6.9 C_SetPIN: changes the PIN of the logged-in user; the old PIN is
// CKR_PIN_INCORRECT afterwards; a R/O session gives CKR_SESSION_READ_ONLY.
TEST_P(SessionTest, SetPin) {
  CK_SESSION_HANDLE ro, rw;
  ASSERT_CKR(CKR_OK, OpenRw(&rw));
  ASSERT_CKR(CKR_OK, LoginUser(rw));
  const std::string kNew = "new-user-pin-2222";
  auto c = [](std::string_view s) {
    return reinterpret_cast<CK_UTF8CHAR*>(const_cast<char*>(s.data()));
  };
  ASSERT_CKR(CKR_OK, OpenRo(&ro));
  EXPECT_CKR(
      CKR_SESSION_READ_ONLY,
      f()->C_SetPIN(ro, c(kUserPin), kUserPin.size(), c(kNew), kNew.size()));
  ASSERT_CKR(CKR_OK, f()->C_CloseSession(ro));
  EXPECT_CKR(CKR_PIN_INCORRECT,
             f()->C_SetPIN(rw, c("not-the-pin"), 11, c(kNew), kNew.size()));
  ASSERT_CKR(CKR_OK, f()->C_SetPIN(rw, c(kUserPin), kUserPin.size(), c(kNew),
                                   kNew.size()));
  ASSERT_CKR(CKR_OK, f()->C_Logout(rw));
  EXPECT_CKR(CKR_PIN_INCORRECT, LoginUser(rw));
  EXPECT_CKR(CKR_OK, Login(f(), rw, CKU_USER, kNew));
  // The change persists across C_Finalize / C_Initialize.
  ASSERT_CKR(CKR_OK, Finalize());
  ASSERT_CKR(CKR_OK, Initialize());
  CK_SLOT_ID slot;
  ASSERT_CKR(CKR_OK, FindSlotByLabel(f(), kLabel, &slot));
  ASSERT_CKR(CKR_OK, OpenSession(f(), slot, true, &rw));
  EXPECT_CKR(CKR_PIN_INCORRECT, LoginUser(rw));
  EXPECT_CKR(CKR_OK, Login(f(), rw, CKU_USER, kNew));
}

// 5.6.2 C_CloseSession / 5.6.3 C_CloseAllSessions and 5.1.2: a closed or
// never-issued handle is CKR_SESSION_HANDLE_INVALID.
TEST_P(SessionTest, InvalidSessionHandles) {
  CK_SESSION_HANDLE h;
  ASSERT_CKR(CKR_OK, OpenRw(&h));
  ASSERT_CKR(CKR_OK, f()->C_CloseSession(h));
  CK_SESSION_INFO si;
  EXPECT_CKR(CKR_SESSION_HANDLE_INVALID, f()->C_GetSessionInfo(h, &si));
  EXPECT_CKR(CKR_SESSION_HANDLE_INVALID, f()->C_CloseSession(h));
  EXPECT_CKR(CKR_SESSION_HANDLE_INVALID, f()->C_CloseSession(0x7fff0001));
  EXPECT_CKR(CKR_SESSION_HANDLE_INVALID, LoginUser(0x7fff0001));
  CK_MECHANISM mech = {CKM_SHA256, nullptr, 0};
  EXPECT_CKR(CKR_SESSION_HANDLE_INVALID, f()->C_DigestInit(h, &mech));
  CK_BYTE buf[4];
  EXPECT_CKR(CKR_SESSION_HANDLE_INVALID,
             f()->C_GenerateRandom(0x7fff0001, buf, sizeof(buf)));
  // C_CloseAllSessions closes every session of the slot; the login state
  // goes with the last session.
  CK_SESSION_HANDLE a, b;
  ASSERT_CKR(CKR_OK, OpenRw(&a));
  ASSERT_CKR(CKR_OK, OpenRo(&b));
  ASSERT_CKR(CKR_OK, LoginUser(a));
  ASSERT_CKR(CKR_OK, f()->C_CloseAllSessions(slot()));
  EXPECT_CKR(CKR_SESSION_HANDLE_INVALID, f()->C_GetSessionInfo(a, &si));
  EXPECT_CKR(CKR_SESSION_HANDLE_INVALID, f()->C_GetSessionInfo(b, &si));
  ASSERT_CKR(CKR_OK, OpenRw(&a));
  ASSERT_CKR(CKR_OK, f()->C_GetSessionInfo(a, &si));
  EXPECT_EQ(CKS_RW_PUBLIC_SESSION, si.state);
}

// 5.1.1/5.6.7: NULL pointers with non-zero lengths are CKR_ARGUMENTS_BAD.
TEST_P(SessionTest, NullPinIsArgumentsBad) {
  CK_SESSION_HANDLE h;
  ASSERT_CKR(CKR_OK, OpenRw(&h));
  EXPECT_CKR(CKR_ARGUMENTS_BAD, f()->C_Login(h, CKU_USER, nullptr, 8));
}

// 5.15.2 C_GenerateRandom.
TEST_P(SessionTest, GenerateRandom) {
  CK_SESSION_HANDLE h;
  ASSERT_CKR(CKR_OK, OpenRo(&h));
  std::vector<CK_BYTE> a(64, 0), b(64, 0);
  ASSERT_CKR(CKR_OK, f()->C_GenerateRandom(h, a.data(), a.size()));
  ASSERT_CKR(CKR_OK, f()->C_GenerateRandom(h, b.data(), b.size()));
  // Two 512-bit outputs of a working RNG never collide or stay zero.
  EXPECT_NE(a, b);
  EXPECT_NE(std::vector<CK_BYTE>(64, 0), a);
  std::vector<CK_BYTE> big(4096, 0);
  ASSERT_CKR(CKR_OK, f()->C_GenerateRandom(h, big.data(), big.size()));
  // The last 64 bytes are filled too (no short write).
  EXPECT_NE(std::vector<CK_BYTE>(64, 0),
            std::vector<CK_BYTE>(big.end() - 64, big.end()));
  EXPECT_CKR(CKR_ARGUMENTS_BAD, f()->C_GenerateRandom(h, nullptr, 16));
  CK_TOKEN_INFO info;
  ASSERT_CKR(CKR_OK, f()->C_GetTokenInfo(slot(), &info));
  EXPECT_TRUE(info.flags & CKF_RNG);
}

// 5.5.4 C_WaitForSlotEvent with CKF_DONT_BLOCK: CKR_NO_EVENT when nothing
// happened (or CKR_FUNCTION_NOT_SUPPORTED, 5.1.6).
TEST_P(SessionTest, WaitForSlotEventDontBlock) {
  CK_SLOT_ID s;
  CK_RV rv = f()->C_WaitForSlotEvent(CKF_DONT_BLOCK, &s, nullptr);
  EXPECT_TRUE(rv == CKR_NO_EVENT || rv == CKR_FUNCTION_NOT_SUPPORTED)
      << CkrName(rv);
}

// A library initialised with CKF_OS_LOCKING_OK is used from several
// threads at once (5.4.1; sessions are per thread here): every thread's
// digests and encryptions are right and its objects are all created.
class ThreadTest : public P11Test {
 protected:
  bool AutoInitialize() const override { return false; }
};

TEST_P(ThreadTest, ConcurrentSessionsFromThreads) {
  CK_C_INITIALIZE_ARGS args;
  std::memset(&args, 0, sizeof(args));
  args.flags = CKF_OS_LOCKING_OK;
  ASSERT_CKR(CKR_OK, Initialize(&args));
  ASSERT_CKR(CKR_OK, SetUpToken(true));
  CK_SESSION_HANDLE login;
  ASSERT_CKR(CKR_OK, OpenUserRw(&login));
  std::vector<uint8_t> msg(1000, 0x77), expect(32);
  unsigned int elen = 0;
  EVP_Digest(msg.data(), msg.size(), expect.data(), &elen, EVP_sha256(),
             nullptr);
  constexpr int kThreads = 4, kRounds = 50;
  std::atomic<int> bad{0}, created{0};
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      CK_SESSION_HANDLE h;
      if (OpenSession(f(), slot(), true, &h) != CKR_OK) {
        ++bad;
        return;
      }
      for (int i = 0; i < kRounds; ++i) {
        CK_MECHANISM sha = {CKM_SHA256, nullptr, 0};
        std::vector<uint8_t> out(32);
        CK_ULONG len = out.size();
        std::vector<uint8_t> in = msg;
        if (f()->C_DigestInit(h, &sha) != CKR_OK ||
            f()->C_Digest(h, in.data(), in.size(), out.data(), &len) !=
                CKR_OK ||
            out != expect) {
          ++bad;
        }
        Template d;
        d.Ulong(CKA_CLASS, CKO_DATA)
            .Bool(CKA_TOKEN, (i % 5) == 0)
            .Bool(CKA_PRIVATE, true)
            .Str(CKA_LABEL, "thread-" + std::to_string(t))
            .Str(CKA_APPLICATION, "threads");
        CK_OBJECT_HANDLE obj;
        if (f()->C_CreateObject(h, d.data(), d.size(), &obj) == CKR_OK) {
          ++created;
        } else {
          ++bad;
        }
      }
      f()->C_CloseSession(h);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(0, bad.load());
  EXPECT_EQ(kThreads * kRounds, created.load());
  // The token objects (every fifth) are all there; session objects died
  // with their sessions.
  Template all;
  all.Ulong(CKA_CLASS, CKO_DATA).Str(CKA_APPLICATION, "threads");
  std::vector<CK_OBJECT_HANDLE> found;
  ASSERT_CKR(CKR_OK, FindObjects(f(), login, all, &found));
  EXPECT_EQ(static_cast<size_t>(kThreads * kRounds / 5), found.size());
}

ACCELCRYPT_P11_INSTANTIATE(SessionTest);
ACCELCRYPT_P11_INSTANTIATE(ThreadTest);

}  // namespace
}  // namespace accelcrypt::p11test
