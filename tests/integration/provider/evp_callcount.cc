// SPDX-License-Identifier: Apache-2.0
//
// evp_callcount: runs N identical small EVP calls through whatever provider
// OPENSSL_CONF selects, for instruction counting under callgrind
// (scripts/callgrind_provider.sh runs it for two N under the default
// provider and under accelcrypt and prints the per-call cost and ratio).
//
//   evp_callcount CASE N [BYTES]
//   CASE: aes-128-cbc, aes-128-ctr, aes-256-gcm (EVP_EncryptUpdate on one
//   context, as `openssl speed -evp` does; GCM: one full message per call),
//   aes-256-gcm-rekey (the same with a new key every message), NAME-decrypt
//   for a non-AEAD cipher's decryption (aes-128-cbc-decrypt, padding off,
//   as `openssl speed -decrypt`), sha256 (EVP_Digest, as `openssl speed
//   -evp sha256` does).
// Exit codes: 0 ran, 1 an EVP call failed, 2 usage.
#include <openssl/err.h>
#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/integration/provider/evp_loops.h"

namespace {

using ::accelcrypt::evp_loops::CipherLoop;
using ::accelcrypt::evp_loops::DigestLoop;
using ::accelcrypt::evp_loops::GcmLoop;

int Fail(const char* what) {
  std::fprintf(stderr, "evp_callcount: %s failed\n", what);
  ERR_print_errors_fp(stderr);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4 || std::strcmp(argv[1], "--help") == 0) {
    std::fprintf(stderr,
                 "usage: evp_callcount CASE N [BYTES]\n"
                 "  CASE: aes-128-cbc | aes-128-ctr | aes-256-gcm |\n"
                 "        aes-256-gcm-rekey | NAME-decrypt | sha256\n");
    return 2;
  }
  const ::accelcrypt::evp_loops::Case c =
      ::accelcrypt::evp_loops::ParseCase(argv[1]);
  const std::string& name = c.evp_name;
  const long n = std::strtol(argv[2], nullptr, 10);
  const int len = argc == 4 ? std::atoi(argv[3]) : 16;
  if (n < 0 || len <= 0 || len > (1 << 20)) return 2;
  std::vector<unsigned char> buf(static_cast<size_t>(len) + 32, 0x5a);
  unsigned char key[32] = {1, 2, 3};
  unsigned char iv[16] = {4, 5, 6};
  if (name == "sha256") {
    EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    if (md == nullptr) return Fail("EVP_MD_fetch");
    int ok = DigestLoop(md, buf.data(), static_cast<size_t>(len), n);
    EVP_MD_free(md);
    return ok ? 0 : Fail("EVP_Digest");
  }
  EVP_CIPHER* cipher = EVP_CIPHER_fetch(nullptr, name.c_str(), nullptr);
  if (cipher == nullptr) return Fail("EVP_CIPHER_fetch");
  if (c.decrypt && EVP_CIPHER_mode(cipher) == EVP_CIPH_GCM_MODE) {
    std::fprintf(stderr, "evp_callcount: -decrypt is for non-AEAD ciphers\n");
    EVP_CIPHER_free(cipher);
    return 2;
  }
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  if (ctx == nullptr ||
      !EVP_CipherInit_ex(ctx, cipher, nullptr, key, iv, c.decrypt ? 0 : 1) ||
      (c.decrypt && !EVP_CIPHER_CTX_set_padding(ctx, 0))) {
    return Fail("EVP_CipherInit_ex");
  }
  int ok = EVP_CIPHER_mode(cipher) == EVP_CIPH_GCM_MODE
               ? GcmLoop(ctx, key, iv, buf.data(), len, n, c.rekey)
               : CipherLoop(ctx, buf.data(), len, n);
  EVP_CIPHER_CTX_free(ctx);
  EVP_CIPHER_free(cipher);
  return ok ? 0 : Fail("EVP_CipherUpdate");
}
