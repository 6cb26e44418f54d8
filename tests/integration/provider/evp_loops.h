// SPDX-License-Identifier: Apache-2.0
//
// The EVP call loops the benchmark drivers evp_callcount (instructions, under
// callgrind) and evp_pairbench (time, two providers in one process) run: the
// calls `openssl speed -evp` makes (apps/speed.c). The loops are separate
// non-inlined functions so that callgrind's --toggle-collect='*Loop(*' can
// select them.
#ifndef ACCELCRYPT_TESTS_INTEGRATION_PROVIDER_EVP_LOOPS_H_
#define ACCELCRYPT_TESTS_INTEGRATION_PROVIDER_EVP_LOOPS_H_

#include <openssl/evp.h>

#include <cstddef>
#include <string>

namespace accelcrypt::evp_loops {

// CipherLoop: n EVP_CipherUpdate calls of len bytes on one context, in
// place (EVP_Update_loop; the context's direction, as `openssl speed
// [-decrypt]` sets it up).
[[gnu::noinline]] inline bool CipherLoop(EVP_CIPHER_CTX* ctx,
                                         unsigned char* buf, int len, long n) {
  int outl = 0;
  for (long i = 0; i < n; ++i) {
    if (!EVP_CipherUpdate(ctx, buf, &outl, buf, len)) return false;
  }
  return true;
}

// GcmLoop seals one message per iteration as EVP_Update_loop_aead_enc
// does: IV length, key and IV, 13 bytes of AAD, the data, final. rekey: a
// different key (32 bytes at `key`) every message, so the key schedule
// cannot be kept, as for a server sealing for many peers.
[[gnu::noinline]] inline bool GcmLoop(EVP_CIPHER_CTX* ctx, unsigned char* key,
                                      const unsigned char* iv,
                                      unsigned char* buf, int len, long n,
                                      bool rekey) {
  int outl = 0;
  unsigned char aad[13] = {0xcc};
  for (long i = 0; i < n; ++i) {
    if (rekey) key[i % 32] ^= static_cast<unsigned char>(i + 1);
    if (!EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN, 12, nullptr) ||
        !EVP_CipherInit_ex(ctx, nullptr, nullptr, key, iv, -1) ||
        !EVP_EncryptUpdate(ctx, nullptr, &outl, aad, sizeof(aad)) ||
        !EVP_EncryptUpdate(ctx, buf, &outl, buf, len) ||
        !EVP_EncryptFinal_ex(ctx, buf, &outl)) {
      return false;
    }
  }
  return true;
}

// DigestLoop: n EVP_Digest calls of len bytes (EVP_Digest_loop).
[[gnu::noinline]] inline bool DigestLoop(const EVP_MD* md,
                                         const unsigned char* buf, size_t len,
                                         long n) {
  unsigned char out[EVP_MAX_MD_SIZE];
  for (long i = 0; i < n; ++i) {
    if (!EVP_Digest(buf, len, out, nullptr, md, nullptr)) return false;
  }
  return true;
}

// Case is a driver's CASE argument: the EVP name to fetch, whether GCM
// gets a new key every message ("aes-256-gcm-rekey"), and whether a
// non-AEAD cipher decrypts ("aes-128-cbc-decrypt": padding off, as
// `openssl speed -decrypt` runs it).
struct Case {
  std::string evp_name;
  bool rekey = false;
  bool decrypt = false;
};
inline Case ParseCase(const std::string& arg) {
  if (arg == "aes-256-gcm-rekey") return {"aes-256-gcm", true, false};
  const std::string suffix = "-decrypt";
  if (arg.size() > suffix.size() &&
      arg.compare(arg.size() - suffix.size(), suffix.size(), suffix) == 0) {
    return {arg.substr(0, arg.size() - suffix.size()), false, true};
  }
  return {arg, false, false};
}

}  // namespace accelcrypt::evp_loops

#endif  // ACCELCRYPT_TESTS_INTEGRATION_PROVIDER_EVP_LOOPS_H_
