// SPDX-License-Identifier: Apache-2.0
// A process that changes user after loading accelcrypt, as a daemon's
// worker does: it loads OpenSSL's configuration (the engine, from the
// openssl.cnf that OPENSSL_CONF names, as the default RSA method), signs
// once with RSA_sign as the user it started as, becomes UID (setgid/setuid),
// optionally signs again, says "ready" on standard output and waits for
// its standard input to close, then exits normally. engine_test.sh's `uid`
// case reads the `uid` accelcrypt's statistics give it at each step.
//   uid_change UID sign|quiet
// Exit 0 done, 1 failure, 77 not root (setuid needs it).
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/objects.h>
#include <openssl/rsa.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

bool Sign(RSA* rsa) {
  unsigned char digest[32] = {1, 2, 3};
  std::vector<unsigned char> sig(RSA_size(rsa));
  unsigned int len = 0;
  if (RSA_sign(NID_sha256, digest, sizeof(digest), sig.data(), &len, rsa) !=
      1) {
    ERR_print_errors_fp(stderr);
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: uid_change UID sign|quiet\n");
    return 2;
  }
  if (geteuid() != 0) {
    std::printf("SKIP: changing user needs root\n");
    return 77;
  }
  const auto uid = static_cast<uid_t>(std::strtoul(argv[1], nullptr, 10));
  const bool sign_after = std::strcmp(argv[2], "sign") == 0;
  if (OPENSSL_init_crypto(OPENSSL_INIT_LOAD_CONFIG, nullptr) != 1) {
    ERR_print_errors_fp(stderr);
    return 1;
  }
  RSA* rsa = RSA_new();
  BIGNUM* e = BN_new();
  if (rsa == nullptr || e == nullptr || BN_set_word(e, RSA_F4) != 1 ||
      RSA_generate_key_ex(rsa, 2048, e, nullptr) != 1 || !Sign(rsa)) {
    std::fprintf(stderr, "uid_change: key or first signature failed\n");
    return 1;
  }
  BN_free(e);
  if (setgid(uid) != 0 || setuid(uid) != 0) {
    std::perror("uid_change: setuid");
    return 1;
  }
  if (sign_after && !Sign(rsa)) return 1;
  std::printf("ready %d\n", static_cast<int>(getpid()));
  std::fflush(stdout);
  char buf[64];
  while (read(STDIN_FILENO, buf, sizeof(buf)) > 0) {
  }
  RSA_free(rsa);
  return 0;
}
