// SPDX-License-Identifier: Apache-2.0
// Random sequences of C_* calls on one module instance: initialise and
// finalise, sessions opened and closed, logins (right PIN, wrong PIN, SO),
// objects created, searched and destroyed, and every operation family
// started, fed, queried for its size (NULL output, short buffers) and
// abandoned in any order; handles are real ones, stale ones or made up.
// Each input starts from a freshly initialised token. Checked besides the
// absence of crashes and sanitizer reports: size queries answer CKR_OK or
// CKR_BUFFER_TOO_SMALL consistently (never more output than room) and
// C_GetSlotList's count matches its two calls.
#include <p11-kit-1/p11-kit/pkcs11.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tests/fuzz/fuzz_input.h"
#include "tests/fuzz/p11_attrs.h"
#include "tests/fuzz/p11_env.h"

namespace {

using accelcrypt::fuzz::Check;
using accelcrypt::fuzz::FuzzInput;
using accelcrypt::fuzz::kSoPin;
using accelcrypt::fuzz::kUserPin;
using accelcrypt::fuzz::P11Env;
using accelcrypt::fuzz::Template;

constexpr CK_MECHANISM_TYPE kMechs[] = {CKM_AES_ECB,
                                        CKM_AES_CBC,
                                        CKM_AES_CBC_PAD,
                                        CKM_AES_CTR,
                                        CKM_AES_GCM,
                                        CKM_RSA_PKCS,
                                        CKM_RSA_X_509,
                                        CKM_SHA256_RSA_PKCS,
                                        CKM_RSA_PKCS_PSS,
                                        CKM_DSA,
                                        CKM_DSA_SHA1,
                                        CKM_SHA_1,
                                        CKM_SHA256,
                                        CKM_SHA512,
                                        CKM_SHA256_HMAC,
                                        CKM_AES_KEY_GEN,
                                        CKM_GENERIC_SECRET_KEY_GEN,
                                        0x8000};

struct State {
  CK_FUNCTION_LIST* f;
  std::vector<CK_SESSION_HANDLE> sessions;
  std::vector<CK_OBJECT_HANDLE> objects;
};

CK_SESSION_HANDLE PickSession(State& st, FuzzInput& in) {
  if (st.sessions.empty() || in.Pick(10) == 0) return in.Pick(8);
  return st.sessions[in.Pick(st.sessions.size())];
}
CK_OBJECT_HANDLE PickObject(State& st, FuzzInput& in) {
  if (st.objects.empty() || in.Pick(10) == 0) return in.U32();
  return st.objects[in.Pick(st.objects.size())];
}

// A mechanism with a plausible parameter: a 16-byte IV, CTR and GCM
// structures, PSS parameters.
struct Mech {
  CK_MECHANISM m{};
  uint8_t iv[16] = {};
  CK_AES_CTR_PARAMS ctr{};
  CK_GCM_PARAMS gcm{};
  CK_RSA_PKCS_PSS_PARAMS pss{};
  void Set(CK_MECHANISM_TYPE t) {
    m.mechanism = t;
    switch (t) {
      case CKM_AES_CBC:
      case CKM_AES_CBC_PAD:
        m.pParameter = iv;
        m.ulParameterLen = 16;
        break;
      case CKM_AES_CTR:
        ctr.ulCounterBits = 32;
        m.pParameter = &ctr;
        m.ulParameterLen = sizeof(ctr);
        break;
      case CKM_AES_GCM:
        gcm.pIv = iv;
        gcm.ulIvLen = 12;
        gcm.ulIvBits = 96;
        gcm.ulTagBits = 128;
        m.pParameter = &gcm;
        m.ulParameterLen = sizeof(gcm);
        break;
      case CKM_RSA_PKCS_PSS:
        pss.hashAlg = CKM_SHA256;
        pss.mgf = CKG_MGF1_SHA256;
        pss.sLen = 32;
        m.pParameter = &pss;
        m.ulParameterLen = sizeof(pss);
        break;
      default:
        break;
    }
  }
};

// Output calls: NULL (size query), a buffer of the fuzzer's size, or a
// generous one. Checks the answer against the room given.
template <typename Call>
void Output(FuzzInput& in, Call call) {
  const size_t choice = in.Pick(3);
  CK_ULONG len = choice == 0 ? 0 : choice == 1 ? in.Pick(300) : 4096;
  std::vector<uint8_t> out(len + 1);
  const CK_ULONG room = len;
  CK_RV rv = call(choice == 0 ? nullptr : out.data(), &len);
  if (choice != 0 && rv == CKR_OK) Check(len <= room);
  if (rv == CKR_BUFFER_TOO_SMALL) Check(choice != 0 && len > room);
}

void Step(State& st, FuzzInput& in) {
  CK_FUNCTION_LIST* f = st.f;
  std::vector<uint8_t> data;
  switch (in.Pick(34)) {
    case 0:
      (void)f->C_Initialize(nullptr);
      break;
    case 1:
      if (f->C_Finalize(nullptr) == CKR_OK) st.sessions.clear();
      break;
    case 2: {
      CK_ULONG n = 0;
      if (f->C_GetSlotList(in.Bool(), nullptr, &n) == CKR_OK) {
        std::vector<CK_SLOT_ID> slots(n + 1);
        CK_ULONG m = in.Bool() ? n : in.Pick(n + 2);
        CK_RV rv = f->C_GetSlotList(CK_FALSE, slots.data(), &m);
        if (rv == CKR_OK) Check(m <= n + 1);
      }
      break;
    }
    case 3: {
      CK_TOKEN_INFO ti;
      CK_SLOT_INFO si;
      CK_SLOT_ID slot = in.Pick(4) == 0 ? in.U64() : in.Pick(2);
      (void)f->C_GetTokenInfo(slot, &ti);
      (void)f->C_GetSlotInfo(slot, &si);
      break;
    }
    case 4: {
      CK_SESSION_HANDLE s = CK_INVALID_HANDLE;
      CK_FLAGS flags = in.Pick(4) == 0 ? in.U64()
                                       : CKF_SERIAL_SESSION |
                                             (in.Bool() ? CKF_RW_SESSION : 0);
      if (f->C_OpenSession(in.Pick(8) == 0 ? 1 : 0, flags, nullptr, nullptr,
                           &s) == CKR_OK) {
        st.sessions.push_back(s);
      }
      break;
    }
    case 5:
      (void)f->C_CloseSession(PickSession(st, in));
      break;
    case 6:
      if (f->C_CloseAllSessions(in.Pick(8) == 0 ? 3 : 0) == CKR_OK) {
        st.sessions.clear();
      }
      break;
    case 7: {
      CK_SESSION_INFO info;
      (void)f->C_GetSessionInfo(PickSession(st, in), &info);
      break;
    }
    case 8: {
      // Right user PIN mostly; the SO PIN; a wrong PIN rarely (three lock
      // the PIN, and the token is reset per input anyway).
      CK_USER_TYPE who = in.Pick(6) == 0 ? CKU_SO : CKU_USER;
      std::string pin = who == CKU_SO ? kSoPin : kUserPin;
      if (in.Pick(8) == 0) pin = in.String();
      (void)f->C_Login(PickSession(st, in), who,
                       reinterpret_cast<CK_UTF8CHAR_PTR>(pin.data()),
                       pin.size());
      break;
    }
    case 9:
      (void)f->C_Logout(PickSession(st, in));
      break;
    case 10: {
      Template t;
      t.Read(in);
      CK_OBJECT_HANDLE h;
      if (f->C_CreateObject(PickSession(st, in), t.data(), t.size(), &h) ==
          CKR_OK) {
        st.objects.push_back(h);
      }
      break;
    }
    case 11: {
      // Usable keys, so operations get past their key checks.
      P11Env& env = P11Env::Get();
      CK_SESSION_HANDLE s = PickSession(st, in);
      CK_OBJECT_HANDLE h;
      switch (in.Pick(6)) {
        case 0:
          h = env.CreateSecret(s, CKK_AES, 16);
          break;
        case 1:
          h = env.CreateSecret(s, CKK_GENERIC_SECRET, 32);
          break;
        case 2:
          h = env.CreateRsaPrivate(s);
          break;
        case 3:
          h = env.CreateRsaPublic(s);
          break;
        case 4:
          h = env.CreateDsaPrivate(s);
          break;
        default:
          h = env.CreateDsaPublic(s);
          break;
      }
      if (h != CK_INVALID_HANDLE) st.objects.push_back(h);
      break;
    }
    case 12:
      (void)f->C_DestroyObject(PickSession(st, in), PickObject(st, in));
      break;
    case 13: {
      Template t;
      t.Read(in);
      (void)f->C_FindObjectsInit(PickSession(st, in), t.data(), t.size());
      break;
    }
    case 14: {
      CK_OBJECT_HANDLE h[8];
      CK_ULONG n = 0;
      CK_ULONG max = in.Pick(9);
      if (f->C_FindObjects(PickSession(st, in), h, max, &n) == CKR_OK) {
        Check(n <= max);
      }
      break;
    }
    case 15:
      (void)f->C_FindObjectsFinal(PickSession(st, in));
      break;
    case 16: {
      Template t;
      t.Read(in, true);
      (void)f->C_GetAttributeValue(PickSession(st, in), PickObject(st, in),
                                   t.data(), t.size());
      break;
    }
    case 17: {
      Mech m;
      m.Set(kMechs[in.Pick(sizeof(kMechs) / sizeof(kMechs[0]))]);
      CK_SESSION_HANDLE s = PickSession(st, in);
      CK_OBJECT_HANDLE k = PickObject(st, in);
      switch (in.Pick(5)) {
        case 0:
          (void)f->C_EncryptInit(s, &m.m, k);
          break;
        case 1:
          (void)f->C_DecryptInit(s, &m.m, k);
          break;
        case 2:
          (void)f->C_SignInit(s, &m.m, k);
          break;
        case 3:
          (void)f->C_VerifyInit(s, &m.m, k);
          break;
        default:
          (void)f->C_DigestInit(s, &m.m);
          break;
      }
      break;
    }
    case 18:
      data = in.Blob();
      Output(in, [&](CK_BYTE_PTR out, CK_ULONG* l) {
        return f->C_Encrypt(PickSession(st, in), data.data(), data.size(), out,
                            l);
      });
      break;
    case 19:
      data = in.Blob();
      Output(in, [&](CK_BYTE_PTR out, CK_ULONG* l) {
        return f->C_EncryptUpdate(PickSession(st, in), data.data(), data.size(),
                                  out, l);
      });
      break;
    case 20:
      Output(in, [&](CK_BYTE_PTR out, CK_ULONG* l) {
        return f->C_EncryptFinal(PickSession(st, in), out, l);
      });
      break;
    case 21:
      data = in.Blob();
      Output(in, [&](CK_BYTE_PTR out, CK_ULONG* l) {
        return f->C_Decrypt(PickSession(st, in), data.data(), data.size(), out,
                            l);
      });
      break;
    case 22:
      data = in.Blob();
      Output(in, [&](CK_BYTE_PTR out, CK_ULONG* l) {
        return f->C_DecryptUpdate(PickSession(st, in), data.data(), data.size(),
                                  out, l);
      });
      break;
    case 23:
      Output(in, [&](CK_BYTE_PTR out, CK_ULONG* l) {
        return f->C_DecryptFinal(PickSession(st, in), out, l);
      });
      break;
    case 24:
      data = in.Blob();
      Output(in, [&](CK_BYTE_PTR out, CK_ULONG* l) {
        return f->C_Digest(PickSession(st, in), data.data(), data.size(), out,
                           l);
      });
      break;
    case 25:
      data = in.Blob();
      (void)f->C_DigestUpdate(PickSession(st, in), data.data(), data.size());
      break;
    case 26:
      Output(in, [&](CK_BYTE_PTR out, CK_ULONG* l) {
        return f->C_DigestFinal(PickSession(st, in), out, l);
      });
      break;
    case 27:
      data = in.Blob();
      Output(in, [&](CK_BYTE_PTR out, CK_ULONG* l) {
        return f->C_Sign(PickSession(st, in), data.data(), data.size(), out, l);
      });
      break;
    case 28:
      data = in.Blob();
      if (in.Bool()) {
        (void)f->C_SignUpdate(PickSession(st, in), data.data(), data.size());
      } else {
        (void)f->C_VerifyUpdate(PickSession(st, in), data.data(), data.size());
      }
      break;
    case 29:
      Output(in, [&](CK_BYTE_PTR out, CK_ULONG* l) {
        return f->C_SignFinal(PickSession(st, in), out, l);
      });
      break;
    case 30: {
      data = in.Blob();
      std::vector<uint8_t> sig = in.Blob();
      if (in.Bool()) {
        (void)f->C_Verify(PickSession(st, in), data.data(), data.size(),
                          sig.data(), sig.size());
      } else {
        (void)f->C_VerifyFinal(PickSession(st, in), sig.data(), sig.size());
      }
      break;
    }
    case 31: {
      std::vector<uint8_t> out(in.Pick(4097) + 1);
      (void)f->C_GenerateRandom(PickSession(st, in), out.data(),
                                out.size() - 1);
      data = in.Blob();
      (void)f->C_SeedRandom(PickSession(st, in), data.data(), data.size());
      break;
    }
    case 32: {
      Mech m;
      m.Set(in.Bool() ? CKM_AES_KEY_GEN : CKM_GENERIC_SECRET_KEY_GEN);
      Template t;
      t.Read(in);
      CK_OBJECT_HANDLE h;
      if (f->C_GenerateKey(PickSession(st, in), &m.m, t.data(), t.size(), &h) ==
          CKR_OK) {
        st.objects.push_back(h);
      }
      break;
    }
    default: {
      CK_ULONG n = 0;
      CK_SLOT_ID slot = in.Pick(2);
      if (f->C_GetMechanismList(slot, nullptr, &n) == CKR_OK) {
        std::vector<CK_MECHANISM_TYPE> list(n + 1);
        CK_ULONG m = in.Pick(n + 2);
        const CK_ULONG room = m;
        CK_RV rv = f->C_GetMechanismList(slot, list.data(), &m);
        if (rv == CKR_OK) Check(room >= n && m == n);
        if (rv == CKR_BUFFER_TOO_SMALL) Check(room < n && m == n);
      }
      CK_MECHANISM_INFO info;
      (void)f->C_GetMechanismInfo(
          slot, kMechs[in.Pick(sizeof(kMechs) / sizeof(kMechs[0]))], &info);
      std::vector<uint8_t> state(in.Pick(64) + 1);
      CK_ULONG len = state.size() - 1;
      (void)f->C_GetOperationState(PickSession(st, in), state.data(), &len);
      break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  P11Env::Get();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  P11Env& env = P11Env::Get();
  env.Reset();
  FuzzInput in(data, size);
  State st{env.f(), {}, {}};
  for (int i = 0; i < 64 && !in.empty(); ++i) Step(st, in);
  // Leave the library initialised for the next input's Reset.
  (void)env.f()->C_Initialize(nullptr);
  return 0;
}
