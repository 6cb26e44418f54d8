// SPDX-License-Identifier: Apache-2.0
// The exported C_* functions of accelcrypt-pkcs11.so (PKCS#11 v2.40): the
// instance's life cycle (C_Initialize, C_Finalize, fork, process exit) and
// one Guard-wrapped forwarder per function.
#include <openssl/crypto.h>
#include <p11-kit-1/p11-kit/pkcs11.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/const_init.h"
#include "absl/synchronization/mutex.h"
#include "core/status.h"
#include "pkcs11/common/ck_error.h"
#include "pkcs11/module/guard.h"
#include "pkcs11/module/module.h"

#define ACCELCRYPT_P11_EXPORT extern "C" __attribute__((visibility("default")))

namespace accelcrypt::p11 {
namespace {

// C_Initialize / C_Finalize serialise on this (never on the per-call
// path). Constant-initialised: no static constructor runs.
ABSL_CONST_INIT absl::Mutex g_init_mu(absl::kConstInit);
// The live instance, or null before C_Initialize / after C_Finalize / in
// a forked child until it calls C_Initialize.
std::atomic<Module*> g_module{nullptr};
// The instance a forked child inherited: abandoned, never used or
// destroyed there (only its token stores are released at the child's
// C_Initialize).
std::atomic<Module*> g_forked_from{nullptr};
// Set by our atexit handler: libcrypto may be torn down from here on.
std::atomic<bool> g_exiting{false};
pid_t g_pid ABSL_GUARDED_BY(g_init_mu) = 0;
bool g_hooks_installed ABSL_GUARDED_BY(g_init_mu) = false;

void OnForkChild() {
  // Only async-signal-safe work here: the child forgets the instance.
  Module* m = g_module.exchange(nullptr);
  if (m != nullptr) g_forked_from.store(m);
}

void OnExit() {
  // Registered after libcrypto's own atexit handler (OPENSSL_cleanup), so
  // this runs before it: write the stats now, and from here on C_Finalize
  // abandons the instance instead of freeing libcrypto objects that
  // OPENSSL_cleanup may already have freed (an application calling
  // C_Finalize from its own atexit handler or a destructor).
  g_exiting.store(true);
  if (Module* m = g_module.load()) m->FlushStats();
}

absl::Status ParseInitArgs(void* p, std::optional<AppLocking>* app) {
  app->reset();
  if (p == nullptr) return absl::OkStatus();
  const auto* args = static_cast<const CK_C_INITIALIZE_ARGS*>(p);
  if (args->pReserved != nullptr) {
    return CkError(CKR_ARGUMENTS_BAD, "pReserved must be NULL");
  }
  const int given =
      (args->CreateMutex != nullptr) + (args->DestroyMutex != nullptr) +
      (args->LockMutex != nullptr) + (args->UnlockMutex != nullptr);
  if (given != 0 && given != 4) {
    return CkError(CKR_ARGUMENTS_BAD,
                   "some but not all mutex functions supplied");
  }
  // v2.40 section 5.4: with CKF_OS_LOCKING_OK the library may use the OS
  // primitives (we do); without it and with the four functions it must
  // use the application's; with neither the application is single-
  // threaded and OS locking is harmless.
  if (given == 4 && (args->flags & CKF_OS_LOCKING_OK) == 0) {
    *app = AppLocking{args->CreateMutex, args->DestroyMutex, args->LockMutex,
                      args->UnlockMutex};
  }
  return absl::OkStatus();
}

// Set while this thread runs C_Initialize, which may load OpenSSL's
// configuration (OPENSSL_init_crypto) and so accelcrypt's provider, whose
// PKCS#11 client backend may be configured on this very module: a call
// back into C_Initialize from there fails at once instead of waiting on
// g_init_mu, which this thread holds. (The provider and the engine start
// that backend at its first operation, not while they load.)
thread_local bool t_initialising = false;

absl::Status Initialize(void* init_args) {
  std::optional<AppLocking> app;
  ACCELCRYPT_RETURN_IF_ERROR(ParseInitArgs(init_args, &app));
  if (t_initialising) {
    return CkError(CKR_FUNCTION_FAILED,
                   "C_Initialize called again from inside C_Initialize on "
                   "this thread (OpenSSL's configuration loaded accelcrypt "
                   "with a PKCS#11 client backend on this module)");
  }
  t_initialising = true;
  struct Reset {
    ~Reset() { t_initialising = false; }
  } reset;
  absl::MutexLock l(&g_init_mu);
  const pid_t pid = getpid();
  if (Module* m = g_module.load(); m != nullptr) {
    if (g_pid == pid) {
      return CkError(CKR_CRYPTOKI_ALREADY_INITIALIZED, "already initialised");
    }
    // A child made without fork handlers (a raw clone): same as below.
    g_forked_from.store(g_module.exchange(nullptr));
  }
  Module::InheritedTokens inherited;
  if (Module* parent = g_forked_from.exchange(nullptr); parent != nullptr) {
    inherited = parent->ReleaseStoresAfterFork();
  }
  if (!g_hooks_installed) {
    // libcrypto registers OPENSSL_cleanup with atexit at its first
    // initialisation; make sure that happened before OnExit is registered
    // so OnExit runs first. OPENSSL_INIT_NO_ATEXIT is not used: libcrypto
    // belongs to the application, whose cleanup we must not suppress.
    OPENSSL_init_crypto(0, nullptr);
    if (std::atexit(OnExit) != 0 ||
        pthread_atfork(nullptr, nullptr, OnForkChild) != 0) {
      return CkError(CKR_FUNCTION_FAILED, "cannot install exit/fork hooks");
    }
    g_hooks_installed = true;
  }
  absl::StatusOr<std::unique_ptr<Module>> module = Module::Create(app);
  if (!module.ok()) {
    // No instance to log through: say why when logging is asked for.
    if (const char* level = std::getenv("ACCELCRYPT_LOG_LEVEL");
        level != nullptr && *level != '\0') {
      std::string message(module.status().message());
      std::fprintf(stderr, "accelcrypt-pkcs11: C_Initialize: %s\n",
                   message.c_str());
    }
    return module.status();
  }
  // A forked child (a daemon's worker, after setuid) that cannot use the
  // tokens its parent used: said now, where the operator sees it (stderr,
  // syslog), and those tokens fail every call that needs them.
  (*module)->CheckInherited(inherited);
  g_pid = pid;
  g_module.store(module->release(), std::memory_order_release);
  return absl::OkStatus();
}

absl::Status Finalize(void* reserved_arg) {
  if (reserved_arg != nullptr) {
    return CkError(CKR_ARGUMENTS_BAD, "pReserved must be NULL");
  }
  absl::MutexLock l(&g_init_mu);
  Module* m = g_module.exchange(nullptr);
  if (m == nullptr) {
    return CkError(CKR_CRYPTOKI_NOT_INITIALIZED, "not initialised");
  }
  if (g_exiting.load()) {
    // Past our atexit handler: libcrypto may be gone, so nothing that
    // frees libcrypto objects may run. The process is ending; the
    // instance is left to it (stats were written by OnExit).
    m->Log("C_Finalize during process exit: instance left to the process");
    return absl::OkStatus();
  }
  delete m;
  return absl::OkStatus();
}

// Call runs `body` on the live instance inside Guard; a failure is logged
// (with `function`) when the log level asks for it.
template <typename Body>
CK_RV Call(const char* function, Body&& body) {
  return Guard([&]() -> absl::Status {
    Module* m = g_module.load(std::memory_order_acquire);
    if (m == nullptr) {
      return CkError(CKR_CRYPTOKI_NOT_INITIALIZED, "C_Initialize first");
    }
    absl::Status st = body(*m);
    if (!st.ok()) m->LogFailure(function, st);
    return st;
  });
}

absl::Status NotSupported() {
  return CkError(CKR_FUNCTION_NOT_SUPPORTED, "not supported by this token");
}

}  // namespace
}  // namespace accelcrypt::p11

using accelcrypt::p11::Call;
using accelcrypt::p11::CkError;
using accelcrypt::p11::Guard;
using accelcrypt::p11::Module;
using accelcrypt::p11::NotSupported;
namespace p11 = accelcrypt::p11;

ACCELCRYPT_P11_EXPORT CK_RV C_Initialize(CK_VOID_PTR pInitArgs) {
  return Guard([&] { return p11::Initialize(pInitArgs); });
}

ACCELCRYPT_P11_EXPORT CK_RV C_Finalize(CK_VOID_PTR pReserved) {
  return Guard([&] { return p11::Finalize(pReserved); });
}

ACCELCRYPT_P11_EXPORT CK_RV C_GetInfo(CK_INFO_PTR pInfo) {
  return Call(__func__, [&](Module& m) { return m.GetInfo(pInfo); });
}

ACCELCRYPT_P11_EXPORT CK_RV C_GetFunctionList(CK_FUNCTION_LIST_PTR_PTR ppList);

ACCELCRYPT_P11_EXPORT CK_RV C_GetSlotList(CK_BBOOL tokenPresent,
                                          CK_SLOT_ID_PTR pSlotList,
                                          CK_ULONG_PTR pulCount) {
  return Call(__func__, [&](Module& m) {
    return m.GetSlotList(tokenPresent, pSlotList, pulCount);
  });
}

ACCELCRYPT_P11_EXPORT CK_RV C_GetSlotInfo(CK_SLOT_ID slotID,
                                          CK_SLOT_INFO_PTR pInfo) {
  return Call(__func__,
              [&](Module& m) { return m.GetSlotInfo(slotID, pInfo); });
}

ACCELCRYPT_P11_EXPORT CK_RV C_GetTokenInfo(CK_SLOT_ID slotID,
                                           CK_TOKEN_INFO_PTR pInfo) {
  return Call(__func__,
              [&](Module& m) { return m.GetTokenInfo(slotID, pInfo); });
}

ACCELCRYPT_P11_EXPORT CK_RV
C_GetMechanismList(CK_SLOT_ID slotID, CK_MECHANISM_TYPE_PTR pMechanismList,
                   CK_ULONG_PTR pulCount) {
  return Call(__func__, [&](Module& m) {
    return m.GetMechanismList(slotID, pMechanismList, pulCount);
  });
}

ACCELCRYPT_P11_EXPORT CK_RV C_GetMechanismInfo(CK_SLOT_ID slotID,
                                               CK_MECHANISM_TYPE type,
                                               CK_MECHANISM_INFO_PTR pInfo) {
  return Call(__func__, [&](Module& m) {
    return m.GetMechanismInfo(slotID, type, pInfo);
  });
}

ACCELCRYPT_P11_EXPORT CK_RV C_InitToken(CK_SLOT_ID slotID, CK_UTF8CHAR_PTR pPin,
                                        CK_ULONG ulPinLen,
                                        CK_UTF8CHAR_PTR pLabel) {
  return Call(__func__, [&](Module& m) {
    return m.InitToken(slotID, pPin, ulPinLen, pLabel);
  });
}

ACCELCRYPT_P11_EXPORT CK_RV C_InitPIN(CK_SESSION_HANDLE hSession,
                                      CK_UTF8CHAR_PTR pPin, CK_ULONG ulPinLen) {
  return Call(__func__,
              [&](Module& m) { return m.InitPIN(hSession, pPin, ulPinLen); });
}

ACCELCRYPT_P11_EXPORT CK_RV C_SetPIN(CK_SESSION_HANDLE hSession,
                                     CK_UTF8CHAR_PTR pOldPin, CK_ULONG ulOldLen,
                                     CK_UTF8CHAR_PTR pNewPin,
                                     CK_ULONG ulNewLen) {
  return Call(__func__, [&](Module& m) {
    return m.SetPIN(hSession, pOldPin, ulOldLen, pNewPin, ulNewLen);
  });
}

ACCELCRYPT_P11_EXPORT CK_RV C_OpenSession(CK_SLOT_ID slotID, CK_FLAGS flags,
                                          CK_VOID_PTR pApplication,
                                          CK_NOTIFY Notify,
                                          CK_SESSION_HANDLE_PTR phSession) {
  // Notify callbacks are never made (no event of this token needs one).
  return Call(__func__, [&](Module& m) {
    return m.OpenSession(slotID, flags, phSession);
  });
}

ACCELCRYPT_P11_EXPORT CK_RV C_CloseSession(CK_SESSION_HANDLE hSession) {
  return Call(__func__, [&](Module& m) { return m.CloseSession(hSession); });
}

ACCELCRYPT_P11_EXPORT CK_RV C_CloseAllSessions(CK_SLOT_ID slotID) {
  return Call(__func__, [&](Module& m) { return m.CloseAllSessions(slotID); });
}

ACCELCRYPT_P11_EXPORT CK_RV C_GetSessionInfo(CK_SESSION_HANDLE hSession,
                                             CK_SESSION_INFO_PTR pInfo) {
  return Call(__func__,
              [&](Module& m) { return m.GetSessionInfo(hSession, pInfo); });
}

ACCELCRYPT_P11_EXPORT CK_RV
C_GetOperationState(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pOperationState,
                    CK_ULONG_PTR pulOperationStateLen) {
  return Call(__func__, [&](Module& m) {
    return m.GetOperationState(hSession, pOperationState, pulOperationStateLen);
  });
}

ACCELCRYPT_P11_EXPORT CK_RV C_SetOperationState(
    CK_SESSION_HANDLE hSession, CK_BYTE_PTR pOperationState,
    CK_ULONG ulOperationStateLen, CK_OBJECT_HANDLE hEncryptionKey,
    CK_OBJECT_HANDLE hAuthenticationKey) {
  return Call(__func__, [&](Module& m) {
    return m.SetOperationState(hSession, pOperationState, ulOperationStateLen,
                               hEncryptionKey, hAuthenticationKey);
  });
}

ACCELCRYPT_P11_EXPORT CK_RV C_Login(CK_SESSION_HANDLE hSession,
                                    CK_USER_TYPE userType, CK_UTF8CHAR_PTR pPin,
                                    CK_ULONG ulPinLen) {
  return Call(__func__, [&](Module& m) {
    return m.Login(hSession, userType, pPin, ulPinLen);
  });
}

ACCELCRYPT_P11_EXPORT CK_RV C_Logout(CK_SESSION_HANDLE hSession) {
  return Call(__func__, [&](Module& m) { return m.Logout(hSession); });
}

ACCELCRYPT_P11_EXPORT CK_RV C_CreateObject(CK_SESSION_HANDLE hSession,
                                           CK_ATTRIBUTE_PTR pTemplate,
                                           CK_ULONG ulCount,
                                           CK_OBJECT_HANDLE_PTR phObject) {
  return Call(__func__, [&](Module& m) {
    return m.CreateObject(hSession, pTemplate, ulCount, phObject);
  });
}

ACCELCRYPT_P11_EXPORT CK_RV C_CopyObject(CK_SESSION_HANDLE hSession,
                                         CK_OBJECT_HANDLE hObject,
                                         CK_ATTRIBUTE_PTR pTemplate,
                                         CK_ULONG ulCount,
                                         CK_OBJECT_HANDLE_PTR phNewObject) {
  return Call(__func__, [&](Module& m) {
    return m.CopyObject(hSession, hObject, pTemplate, ulCount, phNewObject);
  });
}

ACCELCRYPT_P11_EXPORT CK_RV C_DestroyObject(CK_SESSION_HANDLE hSession,
                                            CK_OBJECT_HANDLE hObject) {
  return Call(__func__,
              [&](Module& m) { return m.DestroyObject(hSession, hObject); });
}

ACCELCRYPT_P11_EXPORT CK_RV C_GetObjectSize(CK_SESSION_HANDLE hSession,
                                            CK_OBJECT_HANDLE hObject,
                                            CK_ULONG_PTR pulSize) {
  return Call(__func__, [&](Module& m) {
    return m.GetObjectSize(hSession, hObject, pulSize);
  });
}

ACCELCRYPT_P11_EXPORT CK_RV C_GetAttributeValue(CK_SESSION_HANDLE hSession,
                                                CK_OBJECT_HANDLE hObject,
                                                CK_ATTRIBUTE_PTR pTemplate,
                                                CK_ULONG ulCount) {
  return Call(__func__, [&](Module& m) {
    return m.GetAttributeValue(hSession, hObject, pTemplate, ulCount);
  });
}

ACCELCRYPT_P11_EXPORT CK_RV C_SetAttributeValue(CK_SESSION_HANDLE hSession,
                                                CK_OBJECT_HANDLE hObject,
                                                CK_ATTRIBUTE_PTR pTemplate,
                                                CK_ULONG ulCount) {
  return Call(__func__, [&](Module& m) {
    return m.SetAttributeValue(hSession, hObject, pTemplate, ulCount);
  });
}

ACCELCRYPT_P11_EXPORT CK_RV C_FindObjectsInit(CK_SESSION_HANDLE hSession,
                                              CK_ATTRIBUTE_PTR pTemplate,
                                              CK_ULONG ulCount) {
  return Call(__func__, [&](Module& m) {
    return m.FindObjectsInit(hSession, pTemplate, ulCount);
  });
}

ACCELCRYPT_P11_EXPORT CK_RV C_FindObjects(CK_SESSION_HANDLE hSession,
                                          CK_OBJECT_HANDLE_PTR phObject,
                                          CK_ULONG ulMaxObjectCount,
                                          CK_ULONG_PTR pulObjectCount) {
  return Call(__func__, [&](Module& m) {
    return m.FindObjects(hSession, phObject, ulMaxObjectCount, pulObjectCount);
  });
}

ACCELCRYPT_P11_EXPORT CK_RV C_FindObjectsFinal(CK_SESSION_HANDLE hSession) {
  return Call(__func__,
              [&](Module& m) { return m.FindObjectsFinal(hSession); });
}

// Encrypt, decrypt, digest, sign, verify: Init, single-part, Update, Final.
#define ACCELCRYPT_P11_INIT(name, slot)                         \
  ACCELCRYPT_P11_EXPORT CK_RV name(CK_SESSION_HANDLE hSession,  \
                                   CK_MECHANISM_PTR pMechanism, \
                                   CK_OBJECT_HANDLE hKey) {     \
    return Call(__func__, [&](Module& m) {                      \
      return m.OpInit(p11::slot, hSession, pMechanism, hKey);   \
    });                                                         \
  }
#define ACCELCRYPT_P11_ONESHOT(name, slot)                                     \
  ACCELCRYPT_P11_EXPORT CK_RV name(CK_SESSION_HANDLE hSession,                 \
                                   CK_BYTE_PTR pIn, CK_ULONG ulInLen,          \
                                   CK_BYTE_PTR pOut, CK_ULONG_PTR pulOutLen) { \
    return Call(__func__, [&](Module& m) {                                     \
      return m.OneShot(p11::slot, hSession, pIn, ulInLen, pOut, pulOutLen);    \
    });                                                                        \
  }
#define ACCELCRYPT_P11_UPDATE_OUT(name, slot)                                  \
  ACCELCRYPT_P11_EXPORT CK_RV name(CK_SESSION_HANDLE hSession,                 \
                                   CK_BYTE_PTR pIn, CK_ULONG ulInLen,          \
                                   CK_BYTE_PTR pOut, CK_ULONG_PTR pulOutLen) { \
    return Call(__func__, [&](Module& m) {                                     \
      return m.UpdateWithOutput(p11::slot, hSession, pIn, ulInLen, pOut,       \
                                pulOutLen);                                    \
    });                                                                        \
  }
#define ACCELCRYPT_P11_UPDATE(name, slot)                                   \
  ACCELCRYPT_P11_EXPORT CK_RV name(CK_SESSION_HANDLE hSession,              \
                                   CK_BYTE_PTR pPart, CK_ULONG ulPartLen) { \
    return Call(__func__, [&](Module& m) {                                  \
      return m.Update(p11::slot, hSession, pPart, ulPartLen);               \
    });                                                                     \
  }
#define ACCELCRYPT_P11_FINAL(name, slot)                                       \
  ACCELCRYPT_P11_EXPORT CK_RV name(CK_SESSION_HANDLE hSession,                 \
                                   CK_BYTE_PTR pOut, CK_ULONG_PTR pulOutLen) { \
    return Call(__func__, [&](Module& m) {                                     \
      return m.Final(p11::slot, hSession, pOut, pulOutLen);                    \
    });                                                                        \
  }

ACCELCRYPT_P11_INIT(C_EncryptInit, kEncryptSlot)
ACCELCRYPT_P11_ONESHOT(C_Encrypt, kEncryptSlot)
ACCELCRYPT_P11_UPDATE_OUT(C_EncryptUpdate, kEncryptSlot)
ACCELCRYPT_P11_FINAL(C_EncryptFinal, kEncryptSlot)
ACCELCRYPT_P11_INIT(C_DecryptInit, kDecryptSlot)
ACCELCRYPT_P11_ONESHOT(C_Decrypt, kDecryptSlot)
ACCELCRYPT_P11_UPDATE_OUT(C_DecryptUpdate, kDecryptSlot)
ACCELCRYPT_P11_FINAL(C_DecryptFinal, kDecryptSlot)
ACCELCRYPT_P11_ONESHOT(C_Digest, kDigestSlot)
ACCELCRYPT_P11_UPDATE(C_DigestUpdate, kDigestSlot)
ACCELCRYPT_P11_FINAL(C_DigestFinal, kDigestSlot)
ACCELCRYPT_P11_INIT(C_SignInit, kSignSlot)
ACCELCRYPT_P11_ONESHOT(C_Sign, kSignSlot)
ACCELCRYPT_P11_UPDATE(C_SignUpdate, kSignSlot)
ACCELCRYPT_P11_FINAL(C_SignFinal, kSignSlot)
ACCELCRYPT_P11_INIT(C_VerifyInit, kVerifySlot)
ACCELCRYPT_P11_UPDATE(C_VerifyUpdate, kVerifySlot)
ACCELCRYPT_P11_INIT(C_VerifyRecoverInit, kVerifyRecoverSlot)
ACCELCRYPT_P11_ONESHOT(C_VerifyRecover, kVerifyRecoverSlot)

ACCELCRYPT_P11_EXPORT CK_RV C_DigestInit(CK_SESSION_HANDLE hSession,
                                         CK_MECHANISM_PTR pMechanism) {
  return Call(__func__, [&](Module& m) {
    return m.OpInit(p11::kDigestSlot, hSession, pMechanism, CK_INVALID_HANDLE);
  });
}

ACCELCRYPT_P11_EXPORT CK_RV C_DigestKey(CK_SESSION_HANDLE hSession,
                                        CK_OBJECT_HANDLE hKey) {
  return Call(__func__, [&](Module& m) { return m.DigestKey(hSession, hKey); });
}

ACCELCRYPT_P11_EXPORT CK_RV C_Verify(CK_SESSION_HANDLE hSession,
                                     CK_BYTE_PTR pData, CK_ULONG ulDataLen,
                                     CK_BYTE_PTR pSignature,
                                     CK_ULONG ulSignatureLen) {
  return Call(__func__, [&](Module& m) {
    return m.Verify(hSession, pData, ulDataLen, pSignature, ulSignatureLen);
  });
}

ACCELCRYPT_P11_EXPORT CK_RV C_VerifyFinal(CK_SESSION_HANDLE hSession,
                                          CK_BYTE_PTR pSignature,
                                          CK_ULONG ulSignatureLen) {
  return Call(__func__, [&](Module& m) {
    return m.VerifyFinal(hSession, pSignature, ulSignatureLen);
  });
}

// Signatures with message recovery: no mechanism of this token offers
// them (CKF_SIGN_RECOVER is never set).
ACCELCRYPT_P11_EXPORT CK_RV C_SignRecoverInit(CK_SESSION_HANDLE hSession,
                                              CK_MECHANISM_PTR pMechanism,
                                              CK_OBJECT_HANDLE hKey) {
  return Call(__func__, [&](Module&) { return NotSupported(); });
}

ACCELCRYPT_P11_EXPORT CK_RV C_SignRecover(CK_SESSION_HANDLE hSession,
                                          CK_BYTE_PTR pData, CK_ULONG ulDataLen,
                                          CK_BYTE_PTR pSignature,
                                          CK_ULONG_PTR pulSignatureLen) {
  return Call(__func__, [&](Module&) { return NotSupported(); });
}

// Dual-function operations (v2.40 section 5.14): not offered.
ACCELCRYPT_P11_EXPORT CK_RV C_DigestEncryptUpdate(
    CK_SESSION_HANDLE hSession, CK_BYTE_PTR pPart, CK_ULONG ulPartLen,
    CK_BYTE_PTR pEncryptedPart, CK_ULONG_PTR pulEncryptedPartLen) {
  return Call(__func__, [&](Module&) { return NotSupported(); });
}

ACCELCRYPT_P11_EXPORT CK_RV C_DecryptDigestUpdate(CK_SESSION_HANDLE hSession,
                                                  CK_BYTE_PTR pEncryptedPart,
                                                  CK_ULONG ulEncryptedPartLen,
                                                  CK_BYTE_PTR pPart,
                                                  CK_ULONG_PTR pulPartLen) {
  return Call(__func__, [&](Module&) { return NotSupported(); });
}

ACCELCRYPT_P11_EXPORT CK_RV C_SignEncryptUpdate(
    CK_SESSION_HANDLE hSession, CK_BYTE_PTR pPart, CK_ULONG ulPartLen,
    CK_BYTE_PTR pEncryptedPart, CK_ULONG_PTR pulEncryptedPartLen) {
  return Call(__func__, [&](Module&) { return NotSupported(); });
}

ACCELCRYPT_P11_EXPORT CK_RV C_DecryptVerifyUpdate(CK_SESSION_HANDLE hSession,
                                                  CK_BYTE_PTR pEncryptedPart,
                                                  CK_ULONG ulEncryptedPartLen,
                                                  CK_BYTE_PTR pPart,
                                                  CK_ULONG_PTR pulPartLen) {
  return Call(__func__, [&](Module&) { return NotSupported(); });
}

ACCELCRYPT_P11_EXPORT CK_RV C_GenerateKey(CK_SESSION_HANDLE hSession,
                                          CK_MECHANISM_PTR pMechanism,
                                          CK_ATTRIBUTE_PTR pTemplate,
                                          CK_ULONG ulCount,
                                          CK_OBJECT_HANDLE_PTR phKey) {
  return Call(__func__, [&](Module& m) {
    return m.GenerateKey(hSession, pMechanism, pTemplate, ulCount, phKey);
  });
}

ACCELCRYPT_P11_EXPORT CK_RV C_GenerateKeyPair(
    CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism,
    CK_ATTRIBUTE_PTR pPublicKeyTemplate, CK_ULONG ulPublicKeyAttributeCount,
    CK_ATTRIBUTE_PTR pPrivateKeyTemplate, CK_ULONG ulPrivateKeyAttributeCount,
    CK_OBJECT_HANDLE_PTR phPublicKey, CK_OBJECT_HANDLE_PTR phPrivateKey) {
  return Call(__func__, [&](Module& m) {
    return m.GenerateKeyPair(hSession, pMechanism, pPublicKeyTemplate,
                             ulPublicKeyAttributeCount, pPrivateKeyTemplate,
                             ulPrivateKeyAttributeCount, phPublicKey,
                             phPrivateKey);
  });
}

// Key wrapping and derivation: not offered.
ACCELCRYPT_P11_EXPORT CK_RV C_WrapKey(CK_SESSION_HANDLE hSession,
                                      CK_MECHANISM_PTR pMechanism,
                                      CK_OBJECT_HANDLE hWrappingKey,
                                      CK_OBJECT_HANDLE hKey,
                                      CK_BYTE_PTR pWrappedKey,
                                      CK_ULONG_PTR pulWrappedKeyLen) {
  return Call(__func__, [&](Module&) { return NotSupported(); });
}

ACCELCRYPT_P11_EXPORT CK_RV
C_UnwrapKey(CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism,
            CK_OBJECT_HANDLE hUnwrappingKey, CK_BYTE_PTR pWrappedKey,
            CK_ULONG ulWrappedKeyLen, CK_ATTRIBUTE_PTR pTemplate,
            CK_ULONG ulAttributeCount, CK_OBJECT_HANDLE_PTR phKey) {
  return Call(__func__, [&](Module&) { return NotSupported(); });
}

ACCELCRYPT_P11_EXPORT CK_RV C_DeriveKey(CK_SESSION_HANDLE hSession,
                                        CK_MECHANISM_PTR pMechanism,
                                        CK_OBJECT_HANDLE hBaseKey,
                                        CK_ATTRIBUTE_PTR pTemplate,
                                        CK_ULONG ulAttributeCount,
                                        CK_OBJECT_HANDLE_PTR phKey) {
  return Call(__func__, [&](Module&) { return NotSupported(); });
}

ACCELCRYPT_P11_EXPORT CK_RV C_SeedRandom(CK_SESSION_HANDLE hSession,
                                         CK_BYTE_PTR pSeed,
                                         CK_ULONG ulSeedLen) {
  return Call(__func__, [&](Module& m) {
    return m.SeedRandom(hSession, pSeed, ulSeedLen);
  });
}

ACCELCRYPT_P11_EXPORT CK_RV C_GenerateRandom(CK_SESSION_HANDLE hSession,
                                             CK_BYTE_PTR RandomData,
                                             CK_ULONG ulRandomLen) {
  return Call(__func__, [&](Module& m) {
    return m.GenerateRandom(hSession, RandomData, ulRandomLen);
  });
}

// Legacy parallel functions (v2.40 section 5.16): always
// CKR_FUNCTION_NOT_PARALLEL (after the initialisation check).
ACCELCRYPT_P11_EXPORT CK_RV C_GetFunctionStatus(CK_SESSION_HANDLE hSession) {
  return Call(__func__, [&](Module&) {
    return CkError(CKR_FUNCTION_NOT_PARALLEL, "no parallel functions");
  });
}

ACCELCRYPT_P11_EXPORT CK_RV C_CancelFunction(CK_SESSION_HANDLE hSession) {
  return Call(__func__, [&](Module&) {
    return CkError(CKR_FUNCTION_NOT_PARALLEL, "no parallel functions");
  });
}

// Tokens are never inserted or removed: no slot events to wait for.
ACCELCRYPT_P11_EXPORT CK_RV C_WaitForSlotEvent(CK_FLAGS flags,
                                               CK_SLOT_ID_PTR pSlot,
                                               CK_VOID_PTR pReserved) {
  return Call(__func__, [&](Module&) { return NotSupported(); });
}

namespace {

CK_FUNCTION_LIST kFunctionList = {
    .version = {2, 40},
    .C_Initialize = C_Initialize,
    .C_Finalize = C_Finalize,
    .C_GetInfo = C_GetInfo,
    .C_GetFunctionList = C_GetFunctionList,
    .C_GetSlotList = C_GetSlotList,
    .C_GetSlotInfo = C_GetSlotInfo,
    .C_GetTokenInfo = C_GetTokenInfo,
    .C_GetMechanismList = C_GetMechanismList,
    .C_GetMechanismInfo = C_GetMechanismInfo,
    .C_InitToken = C_InitToken,
    .C_InitPIN = C_InitPIN,
    .C_SetPIN = C_SetPIN,
    .C_OpenSession = C_OpenSession,
    .C_CloseSession = C_CloseSession,
    .C_CloseAllSessions = C_CloseAllSessions,
    .C_GetSessionInfo = C_GetSessionInfo,
    .C_GetOperationState = C_GetOperationState,
    .C_SetOperationState = C_SetOperationState,
    .C_Login = C_Login,
    .C_Logout = C_Logout,
    .C_CreateObject = C_CreateObject,
    .C_CopyObject = C_CopyObject,
    .C_DestroyObject = C_DestroyObject,
    .C_GetObjectSize = C_GetObjectSize,
    .C_GetAttributeValue = C_GetAttributeValue,
    .C_SetAttributeValue = C_SetAttributeValue,
    .C_FindObjectsInit = C_FindObjectsInit,
    .C_FindObjects = C_FindObjects,
    .C_FindObjectsFinal = C_FindObjectsFinal,
    .C_EncryptInit = C_EncryptInit,
    .C_Encrypt = C_Encrypt,
    .C_EncryptUpdate = C_EncryptUpdate,
    .C_EncryptFinal = C_EncryptFinal,
    .C_DecryptInit = C_DecryptInit,
    .C_Decrypt = C_Decrypt,
    .C_DecryptUpdate = C_DecryptUpdate,
    .C_DecryptFinal = C_DecryptFinal,
    .C_DigestInit = C_DigestInit,
    .C_Digest = C_Digest,
    .C_DigestUpdate = C_DigestUpdate,
    .C_DigestKey = C_DigestKey,
    .C_DigestFinal = C_DigestFinal,
    .C_SignInit = C_SignInit,
    .C_Sign = C_Sign,
    .C_SignUpdate = C_SignUpdate,
    .C_SignFinal = C_SignFinal,
    .C_SignRecoverInit = C_SignRecoverInit,
    .C_SignRecover = C_SignRecover,
    .C_VerifyInit = C_VerifyInit,
    .C_Verify = C_Verify,
    .C_VerifyUpdate = C_VerifyUpdate,
    .C_VerifyFinal = C_VerifyFinal,
    .C_VerifyRecoverInit = C_VerifyRecoverInit,
    .C_VerifyRecover = C_VerifyRecover,
    .C_DigestEncryptUpdate = C_DigestEncryptUpdate,
    .C_DecryptDigestUpdate = C_DecryptDigestUpdate,
    .C_SignEncryptUpdate = C_SignEncryptUpdate,
    .C_DecryptVerifyUpdate = C_DecryptVerifyUpdate,
    .C_GenerateKey = C_GenerateKey,
    .C_GenerateKeyPair = C_GenerateKeyPair,
    .C_WrapKey = C_WrapKey,
    .C_UnwrapKey = C_UnwrapKey,
    .C_DeriveKey = C_DeriveKey,
    .C_SeedRandom = C_SeedRandom,
    .C_GenerateRandom = C_GenerateRandom,
    .C_GetFunctionStatus = C_GetFunctionStatus,
    .C_CancelFunction = C_CancelFunction,
    .C_WaitForSlotEvent = C_WaitForSlotEvent,
};

}  // namespace

// Callable before C_Initialize (v2.40 section 5.4).
ACCELCRYPT_P11_EXPORT CK_RV C_GetFunctionList(CK_FUNCTION_LIST_PTR_PTR ppList) {
  if (ppList == nullptr) return CKR_ARGUMENTS_BAD;
  *ppList = &kFunctionList;
  return CKR_OK;
}
