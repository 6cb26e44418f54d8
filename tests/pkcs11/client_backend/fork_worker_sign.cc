// SPDX-License-Identifier: Apache-2.0
// What nginx does with `ssl_certificate_key engine:pkcs11:...` and
// `user www-data;`, reduced to one program: the master (this process, as
// root) loads a private key on a token through libp11's engine and signs
// once; it forks; the worker drops to another user (and with --lose-env
// loses ACCELCRYPT_PKCS11_CONF, as nginx's workers lose their environment)
// and signs with the same key (EVP_DigestSign). libp11 re-initialises the
// module in the worker; when the worker cannot use the token, libp11
// 0.4.12 waits forever after a failed C_OpenSession, so the module must
// fail earlier, with a reason.
//   fork_worker_sign ENGINE_SO MODULE URI PIN UID GID SECONDS [--lose-env]
// Prints "worker: signed" or "worker: failed: ...". Exit 0 when the worker
// ended within SECONDS (either way), 2 when it did not (killed: a hang),
// 1 when the master could not set up.
#include <grp.h>
#include <openssl/engine.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

namespace {

std::string Errors() {
  std::string out;
  unsigned long e;
  char buf[256];
  while ((e = ERR_get_error()) != 0) {
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "(no OpenSSL error)" : out;
}

bool Sign(EVP_PKEY* key) {
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  unsigned char sig[1024];
  size_t len = sizeof(sig);
  const unsigned char msg[] = "worker handshake";
  bool ok = md != nullptr &&
            EVP_DigestSignInit(md, nullptr, EVP_sha256(), nullptr, key) == 1 &&
            EVP_DigestSignUpdate(md, msg, sizeof(msg)) == 1 &&
            EVP_DigestSignFinal(md, sig, &len) == 1;
  EVP_MD_CTX_free(md);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 8) {
    std::fprintf(stderr,
                 "usage: %s ENGINE_SO MODULE URI PIN UID GID SECONDS "
                 "[--lose-env]\n",
                 argv[0]);
    return 1;
  }
  const char* engine_so = argv[1];
  const char* module = argv[2];
  const char* uri = argv[3];
  const char* pin = argv[4];
  const uid_t uid = static_cast<uid_t>(std::atol(argv[5]));
  const gid_t gid = static_cast<gid_t>(std::atol(argv[6]));
  const int seconds = std::atoi(argv[7]);
  const bool lose_env = argc > 8 && std::strcmp(argv[8], "--lose-env") == 0;

  ENGINE_load_dynamic();
  ENGINE* e = ENGINE_by_id("dynamic");
  if (e == nullptr || !ENGINE_ctrl_cmd_string(e, "SO_PATH", engine_so, 0) ||
      !ENGINE_ctrl_cmd_string(e, "ID", "pkcs11", 0) ||
      !ENGINE_ctrl_cmd_string(e, "LIST_ADD", "1", 0) ||
      !ENGINE_ctrl_cmd_string(e, "LOAD", nullptr, 0) ||
      !ENGINE_ctrl_cmd_string(e, "MODULE_PATH", module, 0) ||
      !ENGINE_ctrl_cmd_string(e, "PIN", pin, 0) || !ENGINE_init(e)) {
    std::fprintf(stderr, "master: libp11 engine: %s\n", Errors().c_str());
    return 1;
  }
  EVP_PKEY* key = ENGINE_load_private_key(e, uri, nullptr, nullptr);
  if (key == nullptr || !Sign(key)) {
    std::fprintf(stderr, "master: cannot load or sign with %s: %s\n", uri,
                 Errors().c_str());
    return 1;
  }
  std::printf("master: signed\n");
  std::fflush(stdout);

  const pid_t worker = fork();
  if (worker < 0) return 1;
  if (worker == 0) {
    if (setgroups(0, nullptr) != 0 || setgid(gid) != 0 || setuid(uid) != 0) {
      std::printf("worker: cannot drop to uid %d\n", static_cast<int>(uid));
      _exit(1);
    }
    if (lose_env) unsetenv("ACCELCRYPT_PKCS11_CONF");
    if (Sign(key)) {
      std::printf("worker: signed\n");
    } else {
      std::printf("worker: failed: %s\n", Errors().c_str());
    }
    std::fflush(stdout);
    _exit(0);
  }
  const time_t give_up = std::time(nullptr) + seconds;
  int status = 0;
  while (waitpid(worker, &status, WNOHANG) == 0) {
    if (std::time(nullptr) >= give_up) {
      std::printf("worker: still running after %d s: killed (a hang)\n",
                  seconds);
      std::fflush(stdout);
      kill(worker, SIGKILL);
      waitpid(worker, &status, 0);
      return 2;
    }
    usleep(50 * 1000);
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
