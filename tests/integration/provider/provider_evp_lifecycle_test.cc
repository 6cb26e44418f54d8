// SPDX-License-Identifier: Apache-2.0
// The provider's life cycle: a second library context, eight threads mixing
// operations, a forked child (its DRBG differs from the parent's).
// Fixture and helpers: provider_evp_fixture.h.
#include <openssl/evp.h>
#include <openssl/provider.h>
#include <openssl/rand.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/integration/provider/provider_evp_fixture.h"

namespace accelcrypt::provider_evp_test {
namespace {

// A second library context loading its own accelcrypt instance (its own
// Core), used and torn down while the default context's instance lives on.
TEST_F(ProviderEvpTest, SecondLibraryContextLoadsAndUnloads) {
  const char* module = getenv("ACCELCRYPT_PROVIDER_MODULE");
  ASSERT_NE(module, nullptr) << "ACCELCRYPT_PROVIDER_MODULE not set";
  const Bytes key = Random(16, 120), iv = Random(16, 121),
              pt = Random(100, 122);
  Bytes want;
  ASSERT_TRUE(
      Crypt(Fetch("AES-128-CBC", kDefault).get(), true, key, iv, pt, 0, &want));
  for (int round = 0; round < 3; ++round) {
    OSSL_LIB_CTX* lib = OSSL_LIB_CTX_new();
    ASSERT_NE(lib, nullptr);
    OSSL_PROVIDER* prov = OSSL_PROVIDER_load(lib, module);
    ASSERT_NE(prov, nullptr) << LastReason();
    EVP_CIPHER* c = EVP_CIPHER_fetch(lib, "AES-128-CBC", nullptr);
    ASSERT_NE(c, nullptr);
    Bytes got;
    EXPECT_TRUE(Crypt(c, true, key, iv, pt, 7, &got));
    EXPECT_EQ(got, want);
    EVP_CIPHER_free(c);
    EXPECT_TRUE(OSSL_PROVIDER_unload(prov));
    OSSL_LIB_CTX_free(lib);
  }
  // The default context's instance is unaffected.
  Bytes again;
  ASSERT_TRUE(
      Crypt(Fetch("AES-128-CBC", kAccel).get(), true, key, iv, pt, 0, &again));
  EXPECT_EQ(again, want);
}

// Mixed AES/GCM/SHA through the provider from 8 threads; every result is
// checked against the default provider computed up front.
TEST_F(ProviderEvpTest, EightThreadsMixedOps) {
  CipherPtr cbc = Fetch("AES-128-CBC", kAccel),
            gcm = Fetch("AES-256-GCM", kAccel);
  MdPtr sha(EVP_MD_fetch(nullptr, "SHA256", kAccel));
  CipherPtr cbc_def = Fetch("AES-128-CBC", kDefault);
  const Bytes key16 = Random(16, 70), key32 = Random(32, 71),
              iv = Random(16, 72), msg = Random(1000, 73);
  Bytes want_cbc;
  ASSERT_TRUE(Crypt(cbc_def.get(), true, key16, iv, msg, 0, &want_cbc));
  uint8_t want_sha[32];
  unsigned int l = 0;
  MdPtr sha_def(EVP_MD_fetch(nullptr, "SHA256", kDefault));
  ASSERT_TRUE(
      EVP_Digest(msg.data(), msg.size(), want_sha, &l, sha_def.get(), nullptr));
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  threads.reserve(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 150; ++i) {
        Bytes out;
        if (!Crypt(cbc.get(), true, key16, iv, msg, 1 + (i + t) % 40, &out) ||
            out != want_cbc) {
          ++failures;
        }
        uint8_t md[32];
        unsigned int ml = 0;
        if (!EVP_Digest(msg.data(), msg.size(), md, &ml, sha.get(), nullptr) ||
            memcmp(md, want_sha, 32) != 0) {
          ++failures;
        }
        Bytes ct, back;
        Bytes giv(iv.begin(), iv.begin() + 12);
        if (!Crypt(gcm.get(), true, key32, giv, msg, 0, &ct)) ++failures;
        (void)back;
        uint8_t r[16];
        if (RAND_bytes(r, sizeof(r)) != 1) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

// Across fork(): the child computes through the provider and checks against
// the default provider, and its DRBG output differs from the parent's (the
// DRBG, whose AES-256-CTR is ours, reseeds in the child).
TEST_F(ProviderEvpTest, ForkChildWorksAndDrbgDiffers) {
  CipherPtr cbc = Fetch("AES-256-CBC", kAccel);
  CipherPtr cbc_def = Fetch("AES-256-CBC", kDefault);
  ASSERT_EQ(ProviderOf(cbc.get()), "accelcrypt");
  const Bytes key = Random(32, 80), iv = Random(16, 81), msg = Random(777, 82);
  Bytes want;
  ASSERT_TRUE(Crypt(cbc_def.get(), true, key, iv, msg, 0, &want));
  uint8_t warm[32];
  ASSERT_EQ(RAND_bytes(warm, sizeof(warm)), 1);  // instantiate the DRBGs

  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(pipefd[0]);
    uint8_t child[32];
    int ok = RAND_bytes(child, sizeof(child)) == 1;
    Bytes out;
    ok = ok && Crypt(cbc.get(), true, key, iv, msg, 13, &out) && out == want;
    // One thread in the child too.
    std::thread th([&] {
      Bytes o;
      ok = ok && Crypt(cbc.get(), true, key, iv, msg, 0, &o) && o == want;
    });
    th.join();
    ssize_t w = write(pipefd[1], child, sizeof(child));
    (void)w;
    close(pipefd[1]);
    _exit(ok ? 0 : 3);
  }
  close(pipefd[1]);
  uint8_t parent[32], child[32];
  ASSERT_EQ(RAND_bytes(parent, sizeof(parent)), 1);
  ASSERT_EQ(read(pipefd[0], child, sizeof(child)),
            static_cast<ssize_t>(sizeof(child)));
  close(pipefd[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "child computed wrong results";
  EXPECT_NE(0, memcmp(parent, child, sizeof(child)))
      << "parent and child DRBG produced the same bytes";
  Bytes out;
  ASSERT_TRUE(Crypt(cbc.get(), true, key, iv, msg, 0, &out));
  EXPECT_EQ(out, want);
}

}  // namespace
}  // namespace accelcrypt::provider_evp_test
