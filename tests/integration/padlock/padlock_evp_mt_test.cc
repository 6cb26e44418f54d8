// SPDX-License-Identifier: Apache-2.0
// The PadLock backend under the provider, seen exactly as an application
// sees it: this binary links libcrypto only and gets accelcrypt from the
// OpenSSL config file (OPENSSL_CONF), PadLock from the LD_PRELOADed trap
// emulator (ACCELCRYPT_PADLOCK_EMULATOR=1) and the routing from
// ACCELCRYPT_CONF (backends = padlock, software). Every accelcrypt result is
// compared with OpenSSL's default provider (propquery provider=default).
//
// Threads: 8 threads run AES (all modes, 128/192/256, and GCM) and
// SHA-1/256 at once,
// each with its own keys, two contexts with different keys interleaved on
// each thread (the emulator keeps its key cache per thread, as the hardware
// does per core: a missing reload gives wrong output). Half the threads give
// the emulator's handler an alternate signal stack of their own
// (accelcrypt_padlock_emu_thread_init), half leave it on the thread stack.
// Fork: a child forked after the parent has used PadLock (and while other
// threads of the parent are gone) keeps working, and its DRBG output differs
// from the parent's.
#include <dlfcn.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/provider.h>
#include <openssl/rand.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace {

using Bytes = std::vector<uint8_t>;

// The emulator's statistics (tests/backends/padlock/emulator/padlock_emu.h),
// looked up at run time: this binary must not link the emulator, the preload
// brings it.
struct EmuStats {
  uint64_t xcrypt_traps;
  uint64_t xsha_traps;
  uint64_t xstore_traps;
  uint64_t key_loads;
  uint64_t reload_notes;
  uint64_t chained;
};
using GetStatsFn = void (*)(EmuStats*);
using ThreadInitFn = int (*)();

GetStatsFn EmuGetStats() {
  return reinterpret_cast<GetStatsFn>(
      dlsym(RTLD_DEFAULT, "accelcrypt_padlock_emu_get_stats"));
}
ThreadInitFn EmuThreadInit() {
  return reinterpret_cast<ThreadInitFn>(
      dlsym(RTLD_DEFAULT, "accelcrypt_padlock_emu_thread_init"));
}

EmuStats Stats() {
  EmuStats s{};
  EmuGetStats()(&s);
  return s;
}

const char* const kCiphers[] = {
    "AES-128-ECB", "AES-192-ECB", "AES-256-ECB", "AES-128-CBC", "AES-192-CBC",
    "AES-256-CBC", "AES-128-CFB", "AES-192-CFB", "AES-256-CFB", "AES-128-OFB",
    "AES-192-OFB", "AES-256-OFB", "AES-128-CTR", "AES-192-CTR", "AES-256-CTR"};
const size_t kSizes[] = {0,   1,   15,  16,   17,   63,   64,  65,
                         511, 512, 513, 4095, 4096, 4097, 9000};

// Crypt runs `name` through EVP with `propq`, in `chunk`-byte updates.
// Returns false on any EVP failure.
bool Crypt(const char* name, const char* propq, bool enc, const Bytes& key,
           const Bytes& iv, const Bytes& in, size_t chunk, Bytes* out) {
  EVP_CIPHER* cipher = EVP_CIPHER_fetch(nullptr, name, propq);
  if (cipher == nullptr) return false;
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  bool ok =
      ctx != nullptr && EVP_CipherInit_ex2(ctx, cipher, key.data(),
                                           iv.empty() ? nullptr : iv.data(),
                                           enc ? 1 : 0, nullptr) == 1;
  out->assign(in.size() + 32, 0);
  size_t done = 0;
  int n = 0;
  for (size_t off = 0; ok && off < in.size(); off += chunk) {
    const size_t len = std::min(chunk, in.size() - off);
    ok = EVP_CipherUpdate(ctx, out->data() + done, &n, in.data() + off,
                          static_cast<int>(len)) == 1;
    done += static_cast<size_t>(n);
  }
  ok = ok && EVP_CipherFinal_ex(ctx, out->data() + done, &n) == 1;
  if (ok) out->resize(done + static_cast<size_t>(n));
  EVP_CIPHER_CTX_free(ctx);
  EVP_CIPHER_free(cipher);
  return ok;
}

// Gcm seals (enc) or opens `in` with AES-GCM through EVP with `propq`;
// `tag` is written when sealing and checked when opening.
bool Gcm(const char* name, const char* propq, bool enc, const Bytes& key,
         const Bytes& iv, const Bytes& aad, const Bytes& in, Bytes* tag,
         Bytes* out) {
  EVP_CIPHER* cipher = EVP_CIPHER_fetch(nullptr, name, propq);
  if (cipher == nullptr) return false;
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  int n = 0, m = 0;
  out->assign(in.size() + 16, 0);
  bool ok = ctx != nullptr &&
            EVP_CipherInit_ex2(ctx, cipher, key.data(), iv.data(), enc ? 1 : 0,
                               nullptr) == 1 &&
            EVP_CipherUpdate(ctx, nullptr, &n, aad.data(),
                             static_cast<int>(aad.size())) == 1 &&
            EVP_CipherUpdate(ctx, out->data(), &n, in.data(),
                             static_cast<int>(in.size())) == 1;
  if (ok && !enc) {
    ok = EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG,
                             static_cast<int>(tag->size()), tag->data()) == 1;
  }
  ok = ok && EVP_CipherFinal_ex(ctx, out->data() + n, &m) == 1;
  if (ok && enc) {
    tag->assign(16, 0);
    ok = EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16, tag->data()) == 1;
  }
  if (ok) out->resize(static_cast<size_t>(n) + static_cast<size_t>(m));
  EVP_CIPHER_CTX_free(ctx);
  EVP_CIPHER_free(cipher);
  return ok;
}

bool Digest(const char* name, const char* propq, const Bytes& in, Bytes* out) {
  EVP_MD* md = EVP_MD_fetch(nullptr, name, propq);
  if (md == nullptr) return false;
  unsigned int len = 0;
  out->assign(EVP_MAX_MD_SIZE, 0);
  const bool ok =
      EVP_Digest(in.data(), in.size(), out->data(), &len, md, nullptr) == 1;
  out->resize(len);
  EVP_MD_free(md);
  return ok;
}

Bytes RandomBytes(std::mt19937_64& rng, size_t n) {
  Bytes b(n);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

size_t KeyLen(const char* name) {
  return std::strncmp(name, "AES-128", 7) == 0   ? 16
         : std::strncmp(name, "AES-192", 7) == 0 ? 24
                                                 : 32;
}

// One thread's work; returns a description of the first failure, or "".
std::string Work(unsigned seed, int rounds) {
  std::mt19937_64 rng(seed);
  for (int r = 0; r < rounds; ++r) {
    const char* name = kCiphers[rng() % std::size(kCiphers)];
    const bool ecb = std::strstr(name, "ECB") != nullptr;
    const size_t n = kSizes[rng() % std::size(kSizes)];
    const size_t chunk = 1 + rng() % 700;
    const Bytes in = RandomBytes(rng, n);
    const Bytes key = RandomBytes(rng, KeyLen(name));
    const Bytes iv = ecb ? Bytes() : RandomBytes(rng, 16);
    Bytes acc, ref, back;
    const std::string what = std::string(name) + "/" + std::to_string(n) +
                             " chunk " + std::to_string(chunk);
    if (!Crypt(name, "provider=accelcrypt", true, key, iv, in, chunk, &acc)) {
      return what + ": accelcrypt encrypt failed";
    }
    if (!Crypt(name, "provider=default", true, key, iv, in, n + 1, &ref)) {
      return what + ": default encrypt failed";
    }
    if (acc != ref) return what + ": ciphertext differs from default";
    if (!Crypt(name, "provider=accelcrypt", false, key, iv, ref, chunk,
               &back) ||
        back != in) {
      return what + ": accelcrypt decrypt wrong";
    }
    // AES-GCM (PadLock CTR + software GHASH): same bytes and tag as the
    // default provider; a flipped tag bit is refused.
    const char* gcm = r % 3 == 0   ? "AES-128-GCM"
                      : r % 3 == 1 ? "AES-192-GCM"
                                   : "AES-256-GCM";
    const Bytes gkey = RandomBytes(rng, KeyLen(gcm));
    const Bytes giv = RandomBytes(rng, 12);
    const Bytes aad = RandomBytes(rng, rng() % 40);
    Bytes tag_acc, tag_ref, opened;
    if (!Gcm(gcm, "provider=accelcrypt", true, gkey, giv, aad, in, &tag_acc,
             &acc) ||
        !Gcm(gcm, "provider=default", true, gkey, giv, aad, in, &tag_ref,
             &ref) ||
        acc != ref || tag_acc != tag_ref) {
      return std::string(gcm) + "/" + std::to_string(n) + ": seal differs";
    }
    if (!Gcm(gcm, "provider=accelcrypt", false, gkey, giv, aad, ref, &tag_ref,
             &opened) ||
        opened != in) {
      return std::string(gcm) + "/" + std::to_string(n) + ": open failed";
    }
    tag_ref[0] ^= 1;
    if (Gcm(gcm, "provider=accelcrypt", false, gkey, giv, aad, ref, &tag_ref,
            &opened)) {
      return std::string(gcm) + "/" + std::to_string(n) + ": bad tag accepted";
    }
    const char* md = rng() % 2 ? "SHA1" : "SHA256";
    if (!Digest(md, "provider=accelcrypt", in, &acc) ||
        !Digest(md, "provider=default", in, &ref) || acc != ref) {
      return std::string(md) + "/" + std::to_string(n) + ": digest differs";
    }
  }
  // Two live contexts with different keys, updates interleaved block-group
  // by block-group on this thread: each update must reload its own key.
  const Bytes k1 = RandomBytes(rng, 32), k2 = RandomBytes(rng, 32);
  const Bytes iv1 = RandomBytes(rng, 16), iv2 = RandomBytes(rng, 16);
  const Bytes in = RandomBytes(rng, 4096);
  EVP_CIPHER* c =
      EVP_CIPHER_fetch(nullptr, "AES-256-CBC", "provider=accelcrypt");
  EVP_CIPHER_CTX* a = EVP_CIPHER_CTX_new();
  EVP_CIPHER_CTX* b = EVP_CIPHER_CTX_new();
  Bytes oa(4096 + 16), ob(4096 + 16);
  bool ok = c != nullptr && a != nullptr && b != nullptr &&
            EVP_EncryptInit_ex2(a, c, k1.data(), iv1.data(), nullptr) == 1 &&
            EVP_EncryptInit_ex2(b, c, k2.data(), iv2.data(), nullptr) == 1;
  int n = 0, da = 0, db = 0;
  for (size_t off = 0; ok && off < in.size(); off += 256) {
    ok = EVP_EncryptUpdate(a, oa.data() + da, &n, in.data() + off, 256) == 1;
    da += n;
    ok = ok &&
         EVP_EncryptUpdate(b, ob.data() + db, &n, in.data() + off, 256) == 1;
    db += n;
  }
  ok = ok && EVP_EncryptFinal_ex(a, oa.data() + da, &n) == 1;
  da += n;
  ok = ok && EVP_EncryptFinal_ex(b, ob.data() + db, &n) == 1;
  db += n;
  EVP_CIPHER_CTX_free(a);
  EVP_CIPHER_CTX_free(b);
  EVP_CIPHER_free(c);
  if (!ok) return "interleaved contexts: EVP failure";
  oa.resize(static_cast<size_t>(da));
  ob.resize(static_cast<size_t>(db));
  Bytes ra, rb;
  if (!Crypt("AES-256-CBC", "provider=default", true, k1, iv1, in, 4096, &ra) ||
      !Crypt("AES-256-CBC", "provider=default", true, k2, iv2, in, 4096, &rb) ||
      oa != ra || ob != rb) {
    return "interleaved contexts on one thread: wrong output";
  }
  return "";
}

class PadlockEvpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(EmuGetStats(), nullptr)
        << "libpadlock_emu.so is not preloaded (CTest sets LD_PRELOAD)";
    ASSERT_NE(EmuThreadInit(), nullptr);
    ASSERT_EQ(OPENSSL_init_crypto(OPENSSL_INIT_LOAD_CONFIG, nullptr), 1);
    ASSERT_EQ(OSSL_PROVIDER_available(nullptr, "accelcrypt"), 1)
        << "accelcrypt not loaded: OPENSSL_CONF must load it";
  }
};

TEST_F(PadlockEvpTest, EightThreadsAgreeWithDefault) {
  const EmuStats before = Stats();
  constexpr int kThreads = 8;
  constexpr int kRounds = 24;
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  std::atomic<int> altstack_failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      if (t % 2 == 0 && EmuThreadInit()() != 0) altstack_failures++;
      errors[t] = Work(0x9e3779b9u * static_cast<unsigned>(t + 1), kRounds);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(altstack_failures.load(), 0);
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(errors[t], "") << "thread " << t;
  }
  const EmuStats after = Stats();
  // PadLock really served: every round makes at least one xcrypt trap per
  // non-empty cipher call, and the digests go through xsha.
  EXPECT_GE(after.xcrypt_traps - before.xcrypt_traps,
            static_cast<uint64_t>(kThreads * kRounds));
  EXPECT_GT(after.xsha_traps - before.xsha_traps, 0u);
  EXPECT_GT(after.reload_notes - before.reload_notes, 0u);
}

TEST_F(PadlockEvpTest, ForkedChildKeepsWorking) {
  // The parent uses PadLock (and its DRBG) first, with a thread, so the
  // child inherits a warm provider, warm emulator state and a seeded DRBG.
  std::string parent_error;
  std::thread warm([&] { parent_error = Work(7, 4); });
  warm.join();
  ASSERT_EQ(parent_error, "");
  uint8_t warmup[16];
  ASSERT_EQ(RAND_bytes(warmup, sizeof(warmup)), 1);

  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    const EmuStats before = Stats();
    std::string error = Work(11, 12);
    // Threads inside the child too.
    std::string t_error;
    std::thread t([&] {
      EmuThreadInit()();
      t_error = Work(13, 6);
    });
    t.join();
    if (error.empty()) error = t_error;
    const EmuStats after = Stats();
    if (error.empty() && after.xcrypt_traps == before.xcrypt_traps) {
      error = "child: no xcrypt trap (PadLock did not serve)";
    }
    uint8_t r[32] = {};
    if (error.empty() && RAND_bytes(r, sizeof(r)) != 1) {
      error = "child: RAND_bytes failed";
    }
    // Child's random bytes, then its error text.
    ssize_t w = write(fds[1], r, sizeof(r));
    if (!error.empty()) w = write(fds[1], error.data(), error.size());
    (void)w;
    close(fds[1]);
    _exit(error.empty() ? 0 : 1);
  }
  close(fds[1]);
  std::string got;
  char buf[512];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof(buf))) > 0) got.append(buf, n);
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "child died, status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << (got.size() > 32 ? got.substr(32) : std::string("(no message)"));
  ASSERT_GE(got.size(), 32u);
  uint8_t mine[32];
  ASSERT_EQ(RAND_bytes(mine, sizeof(mine)), 1);
  EXPECT_NE(std::memcmp(mine, got.data(), 32), 0)
      << "parent and child DRBGs gave the same bytes after fork";
  // The parent still works after the fork.
  EXPECT_EQ(Work(17, 4), "");
}

}  // namespace
