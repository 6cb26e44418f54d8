// SPDX-License-Identifier: Apache-2.0
//
// evp_pairbench: times the same small EVP calls through two providers in one
// process, interleaved, so that host load hits both sides alike. Each side
// is its own OSSL_LIB_CTX loaded from an openssl.cnf
// (OSSL_LIB_CTX_load_config); the rounds alternate A, B, A, B, ... and the
// fastest and the median round of each side give ns per call. Ratio = A / B
// time (B's throughput relative to A's, as scripts/bench.sh reports it: 1.0 =
// no overhead).
//
//   evp_pairbench CONF_A CONF_B CASE [BYTES] [ROUNDS]
//   CASE: aes-128-cbc, aes-128-ctr, aes-256-gcm, aes-256-gcm-rekey, sha256
//   (as evp_callcount), any other EVP cipher name, and NAME-decrypt for a
//   non-AEAD cipher's decryption (padding off, as `openssl speed -decrypt`)
//   BYTES: bytes per call (default 16); ROUNDS: rounds per side (default 40,
//   about 20 ms each)
// Exit codes: 0 ran, 1 a config or EVP call failed, 2 usage.
#include <openssl/err.h>
#include <openssl/evp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/integration/provider/evp_loops.h"

namespace {

namespace evp_loops = ::accelcrypt::evp_loops;

int Fail(const char* what) {
  std::fprintf(stderr, "evp_pairbench: %s failed\n", what);
  ERR_print_errors_fp(stderr);
  return 1;
}

// Side is one provider set: its library context and the objects a case uses.
struct Side {
  OSSL_LIB_CTX* libctx = nullptr;
  bool rekey = false;  // GCM: a new key every message
  unsigned char key[32] = {1, 2, 3};
  EVP_MD* md = nullptr;
  EVP_CIPHER* cipher = nullptr;
  EVP_CIPHER_CTX* ctx = nullptr;
  std::vector<double> ns_per_call;
  ~Side() {
    EVP_CIPHER_CTX_free(ctx);
    EVP_CIPHER_free(cipher);
    EVP_MD_free(md);
    OSSL_LIB_CTX_free(libctx);
  }
};

const unsigned char kKey[32] = {1, 2, 3};
const unsigned char kIv[16] = {4, 5, 6};

bool Setup(Side* s, const char* conf, const std::string& arg) {
  const evp_loops::Case c = evp_loops::ParseCase(arg);
  const std::string& name = c.evp_name;
  s->rekey = c.rekey;
  s->libctx = OSSL_LIB_CTX_new();
  if (s->libctx == nullptr || !OSSL_LIB_CTX_load_config(s->libctx, conf)) {
    return false;
  }
  if (name == "sha256") {
    s->md = EVP_MD_fetch(s->libctx, "SHA256", nullptr);
    return s->md != nullptr;
  }
  s->cipher = EVP_CIPHER_fetch(s->libctx, name.c_str(), nullptr);
  s->ctx = EVP_CIPHER_CTX_new();
  return s->cipher != nullptr && s->ctx != nullptr &&
         EVP_CipherInit_ex(s->ctx, s->cipher, nullptr, kKey, kIv,
                           c.decrypt ? 0 : 1) &&
         (!c.decrypt || EVP_CIPHER_CTX_set_padding(s->ctx, 0));
}

// Run makes n calls as `openssl speed -evp` does (evp_loops.h).
bool Run(Side* s, unsigned char* buf, int len, long n) {
  if (s->md != nullptr) {
    return evp_loops::DigestLoop(s->md, buf, static_cast<size_t>(len), n);
  }
  if (EVP_CIPHER_get_mode(s->cipher) == EVP_CIPH_GCM_MODE) {
    return evp_loops::GcmLoop(s->ctx, s->key, kIv, buf, len, n, s->rekey);
  }
  return evp_loops::CipherLoop(s->ctx, buf, len, n);
}

double Seconds(std::chrono::steady_clock::time_point a,
               std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || argc > 6 || std::strcmp(argv[1], "--help") == 0) {
    std::fprintf(stderr,
                 "usage: evp_pairbench CONF_A CONF_B CASE [BYTES] [ROUNDS]\n"
                 "  CASE: aes-128-cbc | aes-128-ctr | aes-256-gcm |\n"
                 "        aes-256-gcm-rekey | sha256\n");
    return 2;
  }
  const std::string name = argv[3];
  const int len = argc >= 5 ? std::atoi(argv[4]) : 16;
  const int rounds = argc >= 6 ? std::atoi(argv[5]) : 40;
  if (len <= 0 || len > (1 << 20) || rounds <= 0) return 2;
  std::vector<unsigned char> buf(static_cast<size_t>(len) + 32, 0x5a);
  Side sides[2];
  for (int i = 0; i < 2; ++i) {
    if (!Setup(&sides[i], argv[1 + i], name)) return Fail(argv[1 + i]);
  }
  // Calls per round: about 20 ms on side A, measured once.
  long n = 1000;
  for (;;) {
    auto t0 = std::chrono::steady_clock::now();
    if (!Run(&sides[0], buf.data(), len, n)) return Fail("EVP call");
    double sec = Seconds(t0, std::chrono::steady_clock::now());
    if (sec > 0.005 || n > (1L << 30)) {
      n = std::max(1000L, static_cast<long>(n * 0.020 / sec));
      break;
    }
    n *= 4;
  }
  // One discarded round per side: page faults, caches and the CPU's clock
  // settle before anything is kept.
  for (Side& s : sides) {
    if (!Run(&s, buf.data(), len, n)) return Fail("EVP call");
  }
  for (int r = 0; r < rounds; ++r) {
    for (Side& s : sides) {
      auto t0 = std::chrono::steady_clock::now();
      if (!Run(&s, buf.data(), len, n)) return Fail("EVP call");
      s.ns_per_call.push_back(Seconds(t0, std::chrono::steady_clock::now()) *
                              1e9 / n);
    }
  }
  double min_a = *std::min_element(sides[0].ns_per_call.begin(),
                                   sides[0].ns_per_call.end());
  double min_b = *std::min_element(sides[1].ns_per_call.begin(),
                                   sides[1].ns_per_call.end());
  double med_a = Median(sides[0].ns_per_call);
  double med_b = Median(sides[1].ns_per_call);
  std::printf(
      "%s %d B: A %.1f ns (median %.1f), B %.1f ns (median %.1f), "
      "ratio A/B %.3f (median %.3f)\n",
      name.c_str(), len, min_a, med_a, min_b, med_b, min_a / min_b,
      med_a / med_b);
  return 0;
}
