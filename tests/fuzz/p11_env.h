// SPDX-License-Identifier: Apache-2.0
// P11Env: the PKCS#11 module as the fuzz targets use it, through its only
// door (dlopen + C_GetFunctionList), with a token in a private directory
// (under /dev/shm when it exists, so SQLite's syncs cost nothing) and a
// cheap PIN hash. Reset() re-initialises the token with C_InitToken so each
// input starts from the same empty token with a user PIN set.
#ifndef ACCELCRYPT_TESTS_FUZZ_P11_ENV_H_
#define ACCELCRYPT_TESTS_FUZZ_P11_ENV_H_

#include <p11-kit-1/p11-kit/pkcs11.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace accelcrypt::fuzz {

inline constexpr char kSoPin[] = "so-secret-1";
inline constexpr char kUserPin[] = "user-1234";

// An RSA-1024 and a DSA-1024 key pair (components big-endian), generated
// once per process with OpenSSL, for objects created from templates.
struct KeyComponents {
  std::vector<uint8_t> n, e, d, p, q, dp, dq, qinv;  // RSA
  std::vector<uint8_t> dsa_p, dsa_q, dsa_g, dsa_y, dsa_x;
};

class P11Env {
 public:
  // Get loads the module and initialises the token once per process;
  // aborts (a harness failure, not a finding) when it cannot.
  static P11Env& Get();

  CK_FUNCTION_LIST* f() const { return f_; }
  const KeyComponents& keys() const { return keys_; }

  // Reset makes sure the library is initialised, closes every session,
  // re-initialises token 0 (all objects gone) and sets the user PIN.
  void Reset();
  // Session opens an R/W session on slot 0, logged in as the user when
  // `login`; CK_INVALID_HANDLE when that fails.
  CK_SESSION_HANDLE Session(bool login);

  // CreateRsa/CreateDsa/CreateAes make session key objects usable for
  // every operation of their kind; CK_INVALID_HANDLE on failure.
  CK_OBJECT_HANDLE CreateRsaPrivate(CK_SESSION_HANDLE s);
  CK_OBJECT_HANDLE CreateRsaPublic(CK_SESSION_HANDLE s);
  CK_OBJECT_HANDLE CreateDsaPrivate(CK_SESSION_HANDLE s);
  CK_OBJECT_HANDLE CreateDsaPublic(CK_SESSION_HANDLE s);
  CK_OBJECT_HANDLE CreateSecret(CK_SESSION_HANDLE s, CK_KEY_TYPE type,
                                size_t len);

 private:
  P11Env() = default;
  void Load();

  CK_FUNCTION_LIST* f_ = nullptr;
  std::string dir_;
  KeyComponents keys_;
};

// Check traps (a finding) when `cond` is false, naming nothing: the input
// that got here is the reproducer.
inline void Check(bool cond) {
  if (!cond) __builtin_trap();
}

}  // namespace accelcrypt::fuzz

#endif  // ACCELCRYPT_TESTS_FUZZ_P11_ENV_H_
