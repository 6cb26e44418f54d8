// SPDX-License-Identifier: Apache-2.0
// latency_shim.so: a test-only PKCS#11 module that forwards every call to a
// real module (SoftHSMv2) and, on the signing/decrypting calls, adds a
// configured delay per mechanism and injects configured failures. It
// reproduces an accelerator's shape (RSA fast, DSA slow) and a token that
// fails or disappears mid-run, which SoftHSMv2 never does on its own.
//
// Configuration, read at C_GetFunctionList and changeable at run time
// through accelcrypt_shim_control():
//   ACCELCRYPT_SHIM_MODULE  path of the real module (required)
//   ACCELCRYPT_SHIM_DELAY   "CKM_RSA_PKCS=100,CKM_DSA=2000" (microseconds)
//   control "fail=<CKR name or hex>,count=<n>": the next n C_Sign/C_Decrypt
//   calls fail with that code (before reaching the real module).
//   control "flip=<n>": from now on every n-th C_Sign/C_Decrypt result that
//   the real module returned successfully gets one bit flipped (a faulty
//   accelerator: an RSA-CRT fault leaks the key through one bad signature);
//   "flip=0" stops. accelcrypt_shim_flipped() counts the flipped results.
//   ACCELCRYPT_SHIM_FLIP_EVERY  the same as "flip=<n>" from the start.
//   ACCELCRYPT_SHIM_LOGIN_LOG  file: every C_Login appends "<pid> <rv hex>"
//   (one write(2) with O_APPEND, so concurrent processes do not mix lines).
//   control "uninit=<n>": the next n C_GetTokenInfo answers lack
//   CKF_TOKEN_INITIALIZED (what SoftHSMv2 answers while a refused login
//   rewrites its token file).
//   ACCELCRYPT_SHIM_MANUFACTURER  C_GetTokenInfo reports this manufacturerID
//   (and model "latency shim") instead of the real token's, so a client's
//   per-model quirks for the real token do not apply.
//   Injected failures name any CKR_* below or a number; an injected
//   CKR_BUFFER_TOO_SMALL also reports a needed size one byte larger than
//   the buffer given (a token that miscounts).
#include <dlfcn.h>
#include <fcntl.h>
#include <p11-kit-1/p11-kit/pkcs11.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#define SHIM_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

CK_FUNCTION_LIST g_list;
CK_FUNCTION_LIST* g_real = nullptr;
std::mutex g_mu;
std::map<CK_SESSION_HANDLE, CK_MECHANISM_TYPE> g_session_mech;  // g_mu
std::map<CK_MECHANISM_TYPE, long> g_delay_us;                   // g_mu
std::atomic<CK_RV> g_fail_rv{CKR_OK};
std::atomic<long> g_fail_count{0};
std::atomic<long> g_calls{0};
std::atomic<long> g_flip_every{0};
std::atomic<long> g_flip_seen{0};
std::atomic<long> g_flipped{0};
std::atomic<long> g_uninit_left{0};

// MaybeFlip flips one bit of a successful result, every g_flip_every-th.
void MaybeFlip(CK_RV rv, CK_BYTE_PTR out, CK_ULONG_PTR len) {
  const long every = g_flip_every.load();
  if (rv != CKR_OK || every <= 0 || out == nullptr || len == nullptr ||
      *len == 0) {
    return;
  }
  const long n = g_flip_seen.fetch_add(1) + 1;
  if (n % every != 0) return;
  out[(n * 7) % *len] ^= static_cast<CK_BYTE>(1u << (n % 8));
  g_flipped.fetch_add(1);
}

CK_MECHANISM_TYPE MechByName(const std::string& name) {
  if (name == "CKM_RSA_PKCS") return CKM_RSA_PKCS;
  if (name == "CKM_RSA_PKCS_PSS") return CKM_RSA_PKCS_PSS;
  if (name == "CKM_RSA_PKCS_OAEP") return CKM_RSA_PKCS_OAEP;
  if (name == "CKM_RSA_X_509") return CKM_RSA_X_509;
  if (name == "CKM_DSA") return CKM_DSA;
  return static_cast<CK_MECHANISM_TYPE>(-1);
}

CK_RV RvByName(const std::string& name) {
  static const std::map<std::string, CK_RV> kNames = {
      {"CKR_OK", CKR_OK},
      {"CKR_DEVICE_REMOVED", CKR_DEVICE_REMOVED},
      {"CKR_DEVICE_ERROR", CKR_DEVICE_ERROR},
      {"CKR_DEVICE_MEMORY", CKR_DEVICE_MEMORY},
      {"CKR_SESSION_HANDLE_INVALID", CKR_SESSION_HANDLE_INVALID},
      {"CKR_GENERAL_ERROR", CKR_GENERAL_ERROR},
      {"CKR_FUNCTION_FAILED", CKR_FUNCTION_FAILED},
      {"CKR_BUFFER_TOO_SMALL", CKR_BUFFER_TOO_SMALL},
      {"CKR_DATA_LEN_RANGE", CKR_DATA_LEN_RANGE},
      {"CKR_ENCRYPTED_DATA_INVALID", CKR_ENCRYPTED_DATA_INVALID},
      {"CKR_ENCRYPTED_DATA_LEN_RANGE", CKR_ENCRYPTED_DATA_LEN_RANGE},
  };
  auto it = kNames.find(name);
  if (it != kNames.end()) return it->second;
  return std::strtoul(name.c_str(), nullptr, 0);
}

// InjectedResult reports an injected failure `fail` for a call whose
// output length is `*len`.
CK_RV InjectedResult(CK_RV fail, CK_ULONG_PTR len) {
  if (fail == CKR_BUFFER_TOO_SMALL && len != nullptr) *len += 1;
  return fail;
}

void ParseDelays(const char* spec) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_delay_us.clear();
  std::string s = spec != nullptr ? spec : "";
  size_t pos = 0;
  while (pos < s.size()) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    std::string item = s.substr(pos, end - pos);
    size_t eq = item.find('=');
    if (eq != std::string::npos) {
      g_delay_us[MechByName(item.substr(0, eq))] =
          std::strtol(item.c_str() + eq + 1, nullptr, 10);
    }
    pos = end + 1;
  }
}

void Delay(CK_SESSION_HANDLE s) {
  long us = 0;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto m = g_session_mech.find(s);
    if (m != g_session_mech.end()) {
      auto d = g_delay_us.find(m->second);
      if (d != g_delay_us.end()) us = d->second;
    }
  }
  if (us > 0) {
    struct timespec ts {
      us / 1000000, (us % 1000000) * 1000
    };
    nanosleep(&ts, nullptr);
  }
}

// Injected returns the failure to inject for this call, or CKR_OK.
CK_RV Injected() {
  g_calls.fetch_add(1);
  long left = g_fail_count.load();
  while (left > 0) {
    if (g_fail_count.compare_exchange_weak(left, left - 1)) {
      return g_fail_rv.load();
    }
  }
  return CKR_OK;
}

void Remember(CK_SESSION_HANDLE s, CK_MECHANISM_PTR m) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (m != nullptr) g_session_mech[s] = m->mechanism;
}

CK_RV ShimSignInit(CK_SESSION_HANDLE s, CK_MECHANISM_PTR m,
                   CK_OBJECT_HANDLE k) {
  Remember(s, m);
  return g_real->C_SignInit(s, m, k);
}

CK_RV ShimSign(CK_SESSION_HANDLE s, CK_BYTE_PTR d, CK_ULONG dl, CK_BYTE_PTR sig,
               CK_ULONG_PTR sl) {
  if (sig != nullptr) {
    CK_RV fail = Injected();
    if (fail != CKR_OK) {
      // Terminate the real operation as a failing C_Sign would.
      CK_BYTE scratch[1024];
      CK_ULONG len = sizeof(scratch);
      g_real->C_Sign(s, d, dl, scratch, &len);
      return InjectedResult(fail, sl);
    }
    Delay(s);
  }
  CK_RV rv = g_real->C_Sign(s, d, dl, sig, sl);
  if (sig != nullptr) MaybeFlip(rv, sig, sl);
  return rv;
}

CK_RV ShimDecryptInit(CK_SESSION_HANDLE s, CK_MECHANISM_PTR m,
                      CK_OBJECT_HANDLE k) {
  Remember(s, m);
  return g_real->C_DecryptInit(s, m, k);
}

CK_RV ShimDecrypt(CK_SESSION_HANDLE s, CK_BYTE_PTR in, CK_ULONG il,
                  CK_BYTE_PTR out, CK_ULONG_PTR ol) {
  if (out != nullptr) {
    CK_RV fail = Injected();
    if (fail != CKR_OK) {
      CK_BYTE scratch[1024];
      CK_ULONG len = sizeof(scratch);
      g_real->C_Decrypt(s, in, il, scratch, &len);
      return InjectedResult(fail, ol);
    }
    Delay(s);
  }
  CK_RV rv = g_real->C_Decrypt(s, in, il, out, ol);
  if (out != nullptr) MaybeFlip(rv, out, ol);
  return rv;
}

CK_RV ShimGetTokenInfo(CK_SLOT_ID slot, CK_TOKEN_INFO_PTR info) {
  CK_RV rv = g_real->C_GetTokenInfo(slot, info);
  if (rv == CKR_OK && info != nullptr && g_uninit_left.fetch_sub(1) > 0) {
    info->flags &= ~static_cast<CK_FLAGS>(CKF_TOKEN_INITIALIZED);
  }
  const char* manufacturer = std::getenv("ACCELCRYPT_SHIM_MANUFACTURER");
  if (rv == CKR_OK && info != nullptr && manufacturer != nullptr) {
    std::memset(info->manufacturerID, ' ', sizeof(info->manufacturerID));
    std::memcpy(
        info->manufacturerID, manufacturer,
        std::min(std::strlen(manufacturer), sizeof(info->manufacturerID)));
    std::memset(info->model, ' ', sizeof(info->model));
    std::memcpy(info->model, "latency shim", 12);
  }
  return rv;
}

CK_RV ShimLogin(CK_SESSION_HANDLE s, CK_USER_TYPE user, CK_UTF8CHAR_PTR pin,
                CK_ULONG pin_len) {
  CK_RV rv = g_real->C_Login(s, user, pin, pin_len);
  if (const char* log = std::getenv("ACCELCRYPT_SHIM_LOGIN_LOG")) {
    int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0) {
      char line[64];
      int n = std::snprintf(line, sizeof(line), "%ld 0x%lx\n",
                            static_cast<long>(getpid()),
                            static_cast<unsigned long>(rv));
      ssize_t written = write(fd, line, n);  // best effort
      (void)written;
      close(fd);
    }
  }
  return rv;
}

}  // namespace

SHIM_EXPORT CK_RV C_GetFunctionList(CK_FUNCTION_LIST_PTR_PTR out) {
  if (out == nullptr) return CKR_ARGUMENTS_BAD;
  if (g_real == nullptr) {
    const char* path = std::getenv("ACCELCRYPT_SHIM_MODULE");
    if (path == nullptr) return CKR_GENERAL_ERROR;
    void* dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (dl == nullptr) return CKR_GENERAL_ERROR;
    auto get = reinterpret_cast<CK_RV (*)(CK_FUNCTION_LIST_PTR_PTR)>(
        dlsym(dl, "C_GetFunctionList"));
    if (get == nullptr || get(&g_real) != CKR_OK) return CKR_GENERAL_ERROR;
    ParseDelays(std::getenv("ACCELCRYPT_SHIM_DELAY"));
    if (const char* f = std::getenv("ACCELCRYPT_SHIM_FLIP_EVERY")) {
      g_flip_every = std::strtol(f, nullptr, 10);
    }
    g_list = *g_real;  // everything else goes straight to the real module
    g_list.C_SignInit = ShimSignInit;
    g_list.C_Sign = ShimSign;
    g_list.C_DecryptInit = ShimDecryptInit;
    g_list.C_Decrypt = ShimDecrypt;
    g_list.C_Login = ShimLogin;
    g_list.C_GetTokenInfo = ShimGetTokenInfo;
  }
  *out = &g_list;
  return CKR_OK;
}

// accelcrypt_shim_control changes the shim at run time:
//   "fail=CKR_DEVICE_REMOVED,count=10"  the next 10 C_Sign/C_Decrypt fail
//   "delay=CKM_DSA=2000"                replace the delays
// Returns the number of C_Sign/C_Decrypt calls seen so far.
SHIM_EXPORT long accelcrypt_shim_control(const char* command) {
  if (command != nullptr) {
    std::string c = command;
    if (c.rfind("fail=", 0) == 0) {
      size_t comma = c.find(",count=");
      g_fail_rv = RvByName(c.substr(5, comma - 5));
      g_fail_count = comma == std::string::npos
                         ? 1
                         : std::strtol(c.c_str() + comma + 7, nullptr, 10);
    } else if (c.rfind("delay=", 0) == 0) {
      ParseDelays(c.c_str() + 6);
    } else if (c.rfind("flip=", 0) == 0) {
      g_flip_every = std::strtol(c.c_str() + 5, nullptr, 10);
    } else if (c.rfind("uninit=", 0) == 0) {
      g_uninit_left = std::strtol(c.c_str() + 7, nullptr, 10);
    }
  }
  return g_calls.load();
}

// accelcrypt_shim_flipped returns how many results the shim corrupted.
SHIM_EXPORT long accelcrypt_shim_flipped() { return g_flipped.load(); }
