// SPDX-License-Identifier: Apache-2.0
//
// PadLock backend behaviour under the trap emulator: detection and clean
// decline, key reload (and a negative test proving the emulator's key cache
// bites), CTR across the 16-bit hardware counter wrap, misaligned and
// in-place buffers, page-end prefetch guards on Nano stepping 2, RNG health
// tests with injected faults, portable state, threads and argument errors.
// The backend module is loaded with dlopen and driven through its ABI entry
// point; reference outputs come from the emulator's own AES, which the
// vectors test validates against NIST files.
#include <cpuid.h>
#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <random>
#include <string>
#include <thread>
#include <vector>

#include "accelcrypt/backend.h"
#include "backends/padlock/padlock_asm.h"
#include "backends/padlock/portable_crypto.h"
#include "gtest/gtest.h"
#include "tests/backends/padlock/emulator/padlock_emu.h"

namespace {

using Bytes = std::vector<uint8_t>;

const char* const kProfiles[] = {"c3", "c7", "nano", "nano_s2", "zhaoxin"};

Bytes RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  Bytes b(n);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

// EcbRef encrypts with the emulator's (NIST-validated) AES.
Bytes EcbRef(const Bytes& key, const Bytes& in) {
  Bytes out(in.size());
  for (size_t i = 0; i < in.size(); i += 16) {
    accelcrypt_padlock_emu_aes_block(key.data(), key.size(), 0, &in[i],
                                     &out[i]);
  }
  return out;
}

// CtrRef is SP 800-38A CTR with a 128-bit big-endian counter.
Bytes CtrRef(const Bytes& key, Bytes ctr, const Bytes& in, Bytes* next) {
  Bytes out(in.size());
  for (size_t i = 0; i < in.size(); i += 16) {
    uint8_t ks[16];
    accelcrypt_padlock_emu_aes_block(key.data(), key.size(), 0, ctr.data(), ks);
    for (size_t j = 0; j < 16 && i + j < in.size(); ++j) {
      out[i + j] = in[i + j] ^ ks[j];
    }
    for (int k = 15; k >= 0 && ++ctr[k] == 0; --k) {
    }
  }
  if (next != nullptr) *next = ctr;
  return out;
}

class Module {
 public:
  Module() {
    handle_ = dlopen(ACCELCRYPT_PADLOCK_MODULE, RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) return;
    auto entry = reinterpret_cast<accelcrypt_backend_entry_fn>(
        dlsym(handle_, ACCELCRYPT_BACKEND_ENTRY_SYMBOL));
    desc_ = entry != nullptr ? entry(ACCELCRYPT_ABI_VERSION) : nullptr;
  }
  ~Module() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  const accelcrypt_backend_desc* desc() const { return desc_; }

 private:
  void* handle_ = nullptr;
  const accelcrypt_backend_desc* desc_ = nullptr;
};

Module& TheModule() {
  static Module* m = new Module();
  return *m;
}

// Backend is one backend instance created under an emulator profile.
class Backend {
 public:
  explicit Backend(const char* profile) {
    accelcrypt_padlock_emu_set_profile(profile);
    desc_ = TheModule().desc();
    status_ = desc_->init(nullptr, &be_, &err_);
  }
  ~Backend() {
    if (be_ != nullptr) desc_->teardown(be_);
  }
  accelcrypt_status status() const { return status_; }
  const char* message() const { return err_.message; }
  void* be() const { return be_; }
  const accelcrypt_backend_desc* desc() const { return desc_; }
  const accelcrypt_cipher_table* cipher() const {
    return static_cast<const accelcrypt_cipher_table*>(
        desc_->query_family(be_, ACCELCRYPT_FAMILY_CIPHER));
  }
  const accelcrypt_rng_table* rng() const {
    return static_cast<const accelcrypt_rng_table*>(
        desc_->query_family(be_, ACCELCRYPT_FAMILY_RNG));
  }

 private:
  const accelcrypt_backend_desc* desc_ = nullptr;
  void* be_ = nullptr;
  accelcrypt_status status_ = ACCELCRYPT_ERR_INTERNAL;
  accelcrypt_error err_{};
};

// Cipher wraps one context.
class Cipher {
 public:
  Cipher(const Backend& b, accelcrypt_alg alg, bool enc, const Bytes& key,
         const Bytes& iv)
      : t_(b.cipher()) {
    accelcrypt_error err{};
    EXPECT_EQ(t_->newctx(b.be(), alg, &c_, &err), ACCELCRYPT_OK) << err.message;
    EXPECT_EQ(t_->init(c_, enc, key.data(), key.size(),
                       iv.empty() ? nullptr : iv.data(), iv.size(), &err),
              ACCELCRYPT_OK)
        << err.message;
  }
  ~Cipher() { t_->freectx(c_); }
  accelcrypt_status Update(const uint8_t* in, size_t len, uint8_t* out) {
    accelcrypt_error err{};
    return t_->update(c_, in, len, out, &err);
  }
  Bytes Run(const Bytes& in) {
    Bytes out(in.size());
    EXPECT_EQ(Update(in.data(), in.size(), out.data()), ACCELCRYPT_OK);
    return out;
  }
  accelcrypt_cipher_ctx* ctx() { return c_; }
  const accelcrypt_cipher_table* table() { return t_; }

 private:
  const accelcrypt_cipher_table* t_;
  accelcrypt_cipher_ctx* c_ = nullptr;
};

class PadlockBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(TheModule().desc(), nullptr)
        << "cannot load " << ACCELCRYPT_PADLOCK_MODULE;
    accelcrypt_padlock_emu_set_option("ignore_reload", 0);
    accelcrypt_padlock_emu_set_rng_fault(PADLOCK_EMU_RNG_NONE, 0);
    accelcrypt_padlock_emu_set_rng_zero_streak(0);
  }
  void TearDown() override {
    accelcrypt_padlock_emu_set_profile("nano");
    accelcrypt_padlock_emu_set_option("ignore_reload", 0);
    accelcrypt_padlock_emu_set_rng_fault(PADLOCK_EMU_RNG_NONE, 0);
    accelcrypt_padlock_emu_set_rng_zero_streak(0);
  }
};

TEST_F(PadlockBackendTest, DeclinesCleanlyWithoutEmulator) {
  unsigned a, b, c, d;
  __cpuid(0, a, b, c, d);
  char vendor[13] = {};
  memcpy(vendor, &b, 4);
  memcpy(vendor + 4, &d, 4);
  memcpy(vendor + 8, &c, 4);
  if (strcmp(vendor, "CentaurHauls") == 0 ||
      strcmp(vendor, "  Shanghai  ") == 0) {
    GTEST_SKIP() << "this CPU may really have PadLock (" << vendor << ")";
  }
  unsetenv("ACCELCRYPT_PADLOCK_EMULATOR");
  void* be = nullptr;
  accelcrypt_error err{};
  const accelcrypt_status st = TheModule().desc()->init(nullptr, &be, &err);
  setenv("ACCELCRYPT_PADLOCK_EMULATOR", "1", 1);
  EXPECT_EQ(st, ACCELCRYPT_ERR_UNAVAILABLE);
  EXPECT_EQ(be, nullptr);
  EXPECT_EQ(std::string(err.message),
            std::string("no PadLock unit: CPU vendor ") + vendor);
}

TEST_F(PadlockBackendTest, CapabilitiesFollowTheProfile) {
  struct Want {
    const char* profile;
    bool sha256, sha512, rng;
  };
  for (const Want& w :
       {Want{"c3", false, false, true}, Want{"c7", true, false, true},
        Want{"nano", true, false, true}, Want{"zhaoxin", true, true, true}}) {
    Backend b(w.profile);
    ASSERT_EQ(b.status(), ACCELCRYPT_OK) << b.message();
    const accelcrypt_capability* caps = nullptr;
    size_t n = 0;
    ASSERT_EQ(b.desc()->get_capabilities(b.be(), &caps, &n, nullptr),
              ACCELCRYPT_OK);
    bool aes = false, s256 = false, s512 = false, rng = false;
    for (size_t i = 0; i < n; ++i) {
      EXPECT_NE(caps[i].flags & ACCELCRYPT_CAP_HARDWARE, 0u);
      aes |= caps[i].alg == ACCELCRYPT_ALG_AES_256_GCM;
      s256 |= caps[i].alg == ACCELCRYPT_ALG_SHA256;
      s512 |= caps[i].alg == ACCELCRYPT_ALG_SHA512;
      rng |= caps[i].alg == ACCELCRYPT_ALG_RNG_ENTROPY;
    }
    EXPECT_TRUE(aes) << w.profile;
    EXPECT_EQ(s256, w.sha256) << w.profile;
    EXPECT_EQ(s512, w.sha512) << w.profile;
    EXPECT_EQ(rng, w.rng) << w.profile;
  }
}

// Two contexts with different keys, interleaved on one thread: each
// operation must reload its own key.
TEST_F(PadlockBackendTest, InterleavedKeysReload) {
  Backend b("nano");
  ASSERT_EQ(b.status(), ACCELCRYPT_OK) << b.message();
  const Bytes k1 = RandomBytes(16, 1), k2 = RandomBytes(32, 2);
  const Bytes data = RandomBytes(64, 3);
  Cipher a(b, ACCELCRYPT_ALG_AES_128_ECB, true, k1, {});
  Cipher c(b, ACCELCRYPT_ALG_AES_256_ECB, true, k2, {});
  padlock_emu_stats before{}, after{};
  accelcrypt_padlock_emu_get_stats(&before);
  for (int round = 0; round < 4; ++round) {
    EXPECT_EQ(a.Run(data), EcbRef(k1, data)) << "round " << round;
    EXPECT_EQ(c.Run(data), EcbRef(k2, data)) << "round " << round;
  }
  accelcrypt_padlock_emu_get_stats(&after);
  // One key load per operation: the reload happened, and only once.
  EXPECT_EQ(after.key_loads - before.key_loads, 8u);
}

// Negative: if the reload does not reach the unit (the emulator ignores the
// hook, as hardware would if the backend forgot pushf/popf), the second
// context runs with the first one's cached key and the output is wrong.
TEST_F(PadlockBackendTest, WithoutReloadOutputIsWrong) {
  Backend b("nano");
  ASSERT_EQ(b.status(), ACCELCRYPT_OK) << b.message();
  const Bytes k1 = RandomBytes(16, 11), k2 = RandomBytes(16, 12);
  const Bytes data = RandomBytes(32, 13);
  Cipher a(b, ACCELCRYPT_ALG_AES_128_ECB, true, k1, {});
  Cipher c(b, ACCELCRYPT_ALG_AES_128_ECB, true, k2, {});
  EXPECT_EQ(a.Run(data), EcbRef(k1, data));
  accelcrypt_padlock_emu_set_option("ignore_reload", 1);
  const Bytes wrong = c.Run(data);
  accelcrypt_padlock_emu_set_option("ignore_reload", 0);
  EXPECT_NE(wrong, EcbRef(k2, data));
  EXPECT_EQ(wrong, EcbRef(k1, data));  // it used the cached key
  EXPECT_EQ(c.Run(data), EcbRef(k2, data));
}

TEST_F(PadlockBackendTest, CtrAcrossSixteenBitWrap) {
  for (const char* profile : {"c7", "nano", "zhaoxin"}) {  // ECB path, ACE2
    Backend b(profile);
    ASSERT_EQ(b.status(), ACCELCRYPT_OK) << b.message();
    for (const Bytes& low :
         {Bytes{0x00, 0x01, 0xff, 0xfe}, Bytes{0xff, 0xff, 0xff, 0xfd}}) {
      const Bytes key = RandomBytes(24, 21);
      Bytes iv = RandomBytes(16, 22);
      memcpy(&iv[12], low.data(), 4);
      if (low[0] == 0xff) memset(&iv[4], 0xff, 8);  // carry through 96 bits
      const Bytes data = RandomBytes(16 * 6 + 7, 23);
      Bytes next;
      const Bytes want = CtrRef(key, iv, data, &next);
      Cipher whole(b, ACCELCRYPT_ALG_AES_192_CTR, true, key, iv);
      EXPECT_EQ(whole.Run(data), want) << profile;
      accelcrypt_cipher_state st{};
      ASSERT_EQ(whole.table()->get_state(whole.ctx(), &st, nullptr),
                ACCELCRYPT_OK);
      EXPECT_EQ(Bytes(st.iv, st.iv + 16), next) << profile;
      EXPECT_EQ(st.num, 7u);
      Cipher pieces(b, ACCELCRYPT_ALG_AES_192_CTR, false, key, iv);
      Bytes got(data.size());
      for (size_t pos = 0; pos < data.size(); pos += 5) {
        const size_t n = std::min<size_t>(5, data.size() - pos);
        ASSERT_EQ(pieces.Update(&data[pos], n, &got[pos]), ACCELCRYPT_OK);
      }
      EXPECT_EQ(got, want) << profile;
    }
  }
}

// Every mode, every profile: misaligned input/output and in-place give the
// same bytes as aligned out-of-place.
TEST_F(PadlockBackendTest, MisalignedAndInPlaceBuffers) {
  const uint32_t modes[] = {ACCELCRYPT_MODE_ECB,    ACCELCRYPT_MODE_CBC,
                            ACCELCRYPT_MODE_CFB128, ACCELCRYPT_MODE_OFB,
                            ACCELCRYPT_MODE_CTR,    ACCELCRYPT_MODE_GCM};
  for (const char* profile : kProfiles) {
    Backend b(profile);
    ASSERT_EQ(b.status(), ACCELCRYPT_OK) << b.message();
    for (uint32_t mode : modes) {
      for (bool enc : {true, false}) {
        const accelcrypt_alg alg = ACCELCRYPT_CIPHER_ALG(mode, 32);
        const Bytes key = RandomBytes(32, mode);
        const Bytes iv = mode == ACCELCRYPT_MODE_ECB   ? Bytes()
                         : mode == ACCELCRYPT_MODE_GCM ? RandomBytes(12, 5)
                                                       : RandomBytes(16, 6);
        const size_t len = 4096 + 48;
        const Bytes data = RandomBytes(len, 7);
        std::vector<uint8_t> store(len + 64);
        uint8_t* al = store.data();
        while (reinterpret_cast<uintptr_t>(al) % 16) ++al;
        std::vector<uint8_t> ostore(len + 64);
        uint8_t* oal = ostore.data();
        while (reinterpret_cast<uintptr_t>(oal) % 16) ++oal;
        memcpy(al, data.data(), len);
        Cipher ref(b, alg, enc, key, iv);
        ASSERT_EQ(ref.Update(al, len, oal), ACCELCRYPT_OK);
        const Bytes want(oal, oal + len);
        if (mode == ACCELCRYPT_MODE_ECB && enc) {
          EXPECT_EQ(want, EcbRef(key, data)) << profile;
        }
        // Misaligned in (+1) and out (+5).
        memcpy(al + 1, data.data(), len);
        Cipher mis(b, alg, enc, key, iv);
        ASSERT_EQ(mis.Update(al + 1, len, oal + 5), ACCELCRYPT_OK);
        EXPECT_EQ(Bytes(oal + 5, oal + 5 + len), want)
            << profile << " mode " << mode << " enc " << enc;
        // In place, misaligned by 3, then aligned.
        for (size_t off : {size_t{3}, size_t{0}}) {
          memcpy(al + off, data.data(), len);
          Cipher inp(b, alg, enc, key, iv);
          ASSERT_EQ(inp.Update(al + off, len, al + off), ACCELCRYPT_OK);
          EXPECT_EQ(Bytes(al + off, al + off + len), want)
              << profile << " mode " << mode << " in place +" << off;
        }
      }
    }
  }
}

// Inputs that end exactly at an unmapped page: the backend must bounce the
// tail so Nano stepping 2's 128/64-byte prefetch never touches that page.
TEST_F(PadlockBackendTest, InputEndingAtProtNonePageDoesNotFault) {
  Backend b("nano_s2");
  ASSERT_EQ(b.status(), ACCELCRYPT_OK) << b.message();
  const long page = sysconf(_SC_PAGESIZE);
  auto* map =
      static_cast<uint8_t*>(mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE,
                                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(map, MAP_FAILED);
  ASSERT_EQ(mprotect(map + page, page, PROT_NONE), 0);
  const Bytes key = RandomBytes(16, 31), iv = RandomBytes(16, 32);
  for (uint32_t mode :
       {ACCELCRYPT_MODE_ECB, ACCELCRYPT_MODE_CBC, ACCELCRYPT_MODE_CFB128,
        ACCELCRYPT_MODE_OFB, ACCELCRYPT_MODE_CTR}) {
    for (size_t len : {size_t{16}, size_t{48}, size_t{64}, size_t{128},
                       size_t{256}, size_t{4096}}) {
      const accelcrypt_alg alg = ACCELCRYPT_CIPHER_ALG(mode, 16);
      const Bytes data = RandomBytes(len, 33);
      uint8_t* in = map + page - len;
      memcpy(in, data.data(), len);
      const Bytes use_iv = mode == ACCELCRYPT_MODE_ECB ? Bytes() : iv;
      Cipher edge(b, alg, true, key, use_iv);
      Bytes got(len);
      ASSERT_EQ(edge.Update(in, len, got.data()), ACCELCRYPT_OK);
      Cipher ref(b, alg, true, key, use_iv);
      EXPECT_EQ(got, ref.Run(data)) << "mode " << mode << " len " << len;
    }
  }
  munmap(map, 2 * page);
}

// The same page edge without the backend's guard (the leaf called
// directly) faults on nano_s2: the emulator's over-read model bites.
TEST_F(PadlockBackendTest, UnguardedPageEndFaultsOnNanoStepping2) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  accelcrypt_padlock_emu_set_profile("nano_s2");
  const long page = sysconf(_SC_PAGESIZE);
  auto* map =
      static_cast<uint8_t*>(mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE,
                                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(map, MAP_FAILED);
  ASSERT_EQ(mprotect(map + page, page, PROT_NONE), 0);
  alignas(16) static uint8_t key[256];
  alignas(16) static uint8_t cword[16] = {0x8a};  // AES-128, software key
  alignas(16) static uint8_t iv[16];
  alignas(16) static uint8_t out[16];
  uint8_t* in = map + page - 16;
  EXPECT_EXIT(
      {
        accelcrypt_padlock_emu_set_profile("nano_s2");
        accelcrypt::padlock::XcryptEcb(in, out, 1, key, cword, iv);
      },
      ::testing::KilledBySignal(SIGSEGV), "");
  // Away from the edge the same call is fine.
  accelcrypt::padlock::ForceKeyReload();
  accelcrypt_padlock_emu_reset_key_cache();
  accelcrypt::padlock::XcryptEcb(map + page - 256, out, 1, key, cword, iv);
  munmap(map, 2 * page);
}

bool AllZero(const Bytes& b) {
  for (uint8_t x : b) {
    if (x != 0) return false;
  }
  return true;
}

TEST_F(PadlockBackendTest, RngHealthyDeliversEntropy) {
  Backend b("nano");
  ASSERT_EQ(b.status(), ACCELCRYPT_OK) << b.message();
  ASSERT_NE(b.rng(), nullptr);
  EXPECT_EQ(b.rng()->random_bytes, nullptr);  // entropy input only
  Bytes out(1000);
  size_t bits = 0;
  accelcrypt_error err{};
  ASSERT_EQ(b.rng()->entropy(b.be(), out.data(), out.size(), &bits, &err),
            ACCELCRYPT_OK)
      << err.message;
  EXPECT_EQ(bits, 4000u);
  size_t distinct[256] = {};
  for (uint8_t x : out) ++distinct[x];
  size_t values = 0;
  for (size_t c : distinct) values += c != 0;
  EXPECT_GT(values, 200u);
}

struct RngCase {
  int fault;
  uint64_t after;  // good bytes first
  const char* message_part;
};

TEST_F(PadlockBackendTest, RngFaultsTakeSourceOutOfService) {
  for (const RngCase& rc :
       {RngCase{PADLOCK_EMU_RNG_STUCK, 0, "repetition count"},
        RngCase{PADLOCK_EMU_RNG_BIASED, 0, "test failed"},
        RngCase{PADLOCK_EMU_RNG_REPEAT, 0, "adaptive proportion"},
        RngCase{PADLOCK_EMU_RNG_STATUS, 0, "DC bias"},
        RngCase{PADLOCK_EMU_RNG_DISABLED, 0, "disabled"},
        RngCase{PADLOCK_EMU_RNG_STUCK, 2048, "repetition count"},
        RngCase{PADLOCK_EMU_RNG_BIASED, 2048, "test failed"}}) {
    SCOPED_TRACE(rc.message_part);
    SCOPED_TRACE(rc.fault);
    Backend b("nano");
    ASSERT_EQ(b.status(), ACCELCRYPT_OK) << b.message();
    accelcrypt_padlock_emu_set_rng_fault(rc.fault, rc.after);
    size_t bits = 0;
    accelcrypt_error err{};
    if (rc.after > 0) {
      // Start-up (1024 samples) and a first request pass; the fault then
      // appears mid-stream and the continuous tests catch it.
      Bytes first(64);
      ASSERT_EQ(b.rng()->entropy(b.be(), first.data(), 64, &bits, &err),
                ACCELCRYPT_OK)
          << err.message;
    }
    Bytes out(4096, 0xee);
    EXPECT_EQ(b.rng()->entropy(b.be(), out.data(), out.size(), &bits, &err),
              ACCELCRYPT_ERR_UNAVAILABLE);
    EXPECT_NE(std::string(err.message).find(rc.message_part), std::string::npos)
        << err.message;
    EXPECT_TRUE(AllZero(out)) << "bytes of a failed request reached the caller";
    // Latched: out of service even after the source recovers.
    accelcrypt_padlock_emu_set_rng_fault(PADLOCK_EMU_RNG_NONE, 0);
    Bytes again(16, 0xee);
    EXPECT_EQ(b.rng()->entropy(b.be(), again.data(), 16, &bits, &err),
              ACCELCRYPT_ERR_UNAVAILABLE);
    EXPECT_NE(std::string(err.message).find("out of service"),
              std::string::npos);
  }
}

TEST_F(PadlockBackendTest, RngRetriesEmptyReadsThenGivesUp) {
  Backend b("c7");
  ASSERT_EQ(b.status(), ACCELCRYPT_OK) << b.message();
  size_t bits = 0;
  accelcrypt_error err{};
  Bytes out(32);
  accelcrypt_padlock_emu_set_rng_zero_streak(10);
  EXPECT_EQ(b.rng()->entropy(b.be(), out.data(), 32, &bits, &err),
            ACCELCRYPT_OK)
      << err.message;
  accelcrypt_padlock_emu_set_rng_zero_streak(1u << 30);
  Bytes out2(32, 0xee);
  EXPECT_EQ(b.rng()->entropy(b.be(), out2.data(), 32, &bits, &err),
            ACCELCRYPT_ERR_UNAVAILABLE);
  EXPECT_NE(std::string(err.message).find("no data"), std::string::npos)
      << err.message;
  EXPECT_TRUE(AllZero(out2));
  accelcrypt_padlock_emu_set_rng_zero_streak(0);
}

// get_state/set_state move a running stream to a fresh context mid-block.
TEST_F(PadlockBackendTest, PortableStateMovesAStream) {
  Backend b("nano");
  ASSERT_EQ(b.status(), ACCELCRYPT_OK) << b.message();
  for (uint32_t mode : {ACCELCRYPT_MODE_CBC, ACCELCRYPT_MODE_CFB128,
                        ACCELCRYPT_MODE_OFB, ACCELCRYPT_MODE_CTR}) {
    for (bool enc : {true, false}) {
      const accelcrypt_alg alg = ACCELCRYPT_CIPHER_ALG(mode, 16);
      const Bytes key = RandomBytes(16, 41), iv = RandomBytes(16, 42);
      const Bytes data = RandomBytes(96, 43);
      Cipher whole(b, alg, enc, key, iv);
      const Bytes want = whole.Run(data);
      const size_t cut = mode == ACCELCRYPT_MODE_CBC ? 32 : 21;
      Cipher first(b, alg, enc, key, iv);
      Bytes got(data.size());
      ASSERT_EQ(first.Update(data.data(), cut, got.data()), ACCELCRYPT_OK);
      accelcrypt_cipher_state st{};
      ASSERT_EQ(first.table()->get_state(first.ctx(), &st, nullptr),
                ACCELCRYPT_OK);
      Cipher second(b, alg, enc, key, iv);
      ASSERT_EQ(second.table()->set_state(second.ctx(), &st, nullptr),
                ACCELCRYPT_OK);
      ASSERT_EQ(
          second.Update(data.data() + cut, data.size() - cut, got.data() + cut),
          ACCELCRYPT_OK);
      EXPECT_EQ(got, want) << "mode " << mode << " enc " << enc;
    }
  }
}

TEST_F(PadlockBackendTest, ThreadsWithOwnKeys) {
  Backend b("nano");
  ASSERT_EQ(b.status(), ACCELCRYPT_OK) << b.message();
  std::vector<std::thread> threads;
  threads.reserve(4);
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      accelcrypt_padlock_emu_thread_init();
      const Bytes key = RandomBytes(16, 100 + t);
      const Bytes data = RandomBytes(256, 200 + t);
      const Bytes want = EcbRef(key, data);
      int good = 0;
      for (int i = 0; i < 50; ++i) {
        Cipher c(b, ACCELCRYPT_ALG_AES_128_ECB, true, key, {});
        good += c.Run(data) == want;
      }
      ok[t] = good;
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(ok[t], 50) << "thread " << t;
}

TEST_F(PadlockBackendTest, BadInputIsRejectedAndLeavesStateAlone) {
  Backend b("nano");
  ASSERT_EQ(b.status(), ACCELCRYPT_OK) << b.message();
  const auto* t = b.cipher();
  accelcrypt_cipher_ctx* c = nullptr;
  accelcrypt_error err{};
  ASSERT_EQ(t->newctx(b.be(), ACCELCRYPT_ALG_AES_128_CBC, &c, &err),
            ACCELCRYPT_OK);
  const Bytes key = RandomBytes(16, 51), iv = RandomBytes(16, 52);
  EXPECT_EQ(t->init(c, 1, key.data(), 15, iv.data(), 16, &err),
            ACCELCRYPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(t->update(c, key.data(), 16, nullptr, &err) == ACCELCRYPT_OK,
            false);
  ASSERT_EQ(t->init(c, 1, key.data(), 16, iv.data(), 16, &err), ACCELCRYPT_OK);
  Bytes buf(48), out(48);
  EXPECT_EQ(t->update(c, buf.data(), 17, out.data(), &err),
            ACCELCRYPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(t->update(c, buf.data(), 32, buf.data() + 8, &err),
            ACCELCRYPT_ERR_INVALID_ARGUMENT);  // partial overlap
  accelcrypt_cipher_state st{};
  ASSERT_EQ(t->get_state(c, &st, nullptr), ACCELCRYPT_OK);
  EXPECT_EQ(Bytes(st.iv, st.iv + 16), iv);  // failed calls changed nothing
  t->freectx(c);

  ASSERT_EQ(t->newctx(b.be(), ACCELCRYPT_ALG_AES_128_GCM, &c, &err),
            ACCELCRYPT_OK);
  ASSERT_EQ(t->init(c, 0, key.data(), 16, iv.data(), 12, &err), ACCELCRYPT_OK);
  ASSERT_EQ(t->update(c, buf.data(), 5, out.data(), &err), ACCELCRYPT_OK);
  EXPECT_EQ(t->aad(c, buf.data(), 4, &err), ACCELCRYPT_ERR_FAILED_PRECONDITION);
  EXPECT_EQ(t->final(c, &err), ACCELCRYPT_ERR_FAILED_PRECONDITION);  // no tag
  t->freectx(c);
}

// The backend's GHASH multiply (carry-less multiply from integer multiplies)
// against a bit-serial reference written straight from SP 800-38D
// Algorithm 1.
void GhashReference(uint8_t x[16], const uint8_t h[16]) {
  uint8_t z[16] = {}, v[16];
  memcpy(v, h, 16);
  for (int i = 0; i < 128; ++i) {
    if ((x[i / 8] >> (7 - i % 8)) & 1) {
      for (int j = 0; j < 16; ++j) z[j] ^= v[j];
    }
    const bool lsb = v[15] & 1;
    for (int j = 15; j > 0; --j) {
      v[j] = static_cast<uint8_t>((v[j] >> 1) | (v[j - 1] << 7));
    }
    v[0] >>= 1;
    if (lsb) v[0] ^= 0xe1;
  }
  memcpy(x, z, 16);
}

TEST_F(PadlockBackendTest, GhashMultiplyMatchesBitSerialReference) {
  std::vector<Bytes> values = {Bytes(16, 0), Bytes(16, 0xff)};
  Bytes one(16, 0);
  one[0] = 0x80;  // the field's 1
  values.push_back(one);
  Bytes top(16, 0);
  top[15] = 1;  // z^127
  values.push_back(top);
  for (uint32_t seed = 0; seed < 500; ++seed) {
    values.push_back(RandomBytes(16, 1000 + seed));
  }
  size_t checked = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    for (size_t j : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, i}) {
      uint8_t a[16], b[16];
      memcpy(a, values[i].data(), 16);
      memcpy(b, values[i].data(), 16);
      accelcrypt::padlock::GhashMul(a, values[j].data());
      GhashReference(b, values[j].data());
      ASSERT_EQ(memcmp(a, b, 16), 0) << "value " << i << " times " << j;
      ++checked;
    }
  }
  EXPECT_GT(checked, 2000u);
}

// ---- The emulator's profile gating and quirks, seen through the leaves ----

namespace pl = accelcrypt::padlock;

struct alignas(16) LeafArea {
  uint8_t key[256];
  uint8_t cword[16];
  uint8_t iv[16];
  uint8_t in[64];
  uint8_t out[64];
  uint8_t state[128];
};

TEST_F(PadlockBackendTest, EmulatorRaisesUdForUnitsTheProfileLacks) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  static LeafArea a;
  a.cword[0] = 0x8a;
  EXPECT_EXIT(
      {
        accelcrypt_padlock_emu_set_profile("c3");  // no ACE2
        pl::XcryptCtr(a.in, a.out, 1, a.key, a.cword, a.iv);
      },
      ::testing::KilledBySignal(SIGILL), "");
  EXPECT_EXIT(
      {
        accelcrypt_padlock_emu_set_profile("nano");  // no PHE2
        pl::XshaBlocks512(a.state, a.in, 0);
      },
      ::testing::KilledBySignal(SIGILL), "");
  EXPECT_EXIT(
      {
        accelcrypt_padlock_emu_set_profile("c3");  // no PHE
        pl::XshaFinal1(a.state, a.in, 0, 3);
      },
      ::testing::KilledBySignal(SIGILL), "");
  EXPECT_EXIT(
      {
        accelcrypt_padlock_emu_set_profile("c7");
        accelcrypt_padlock_emu_set_option("c7_block_ud", 1);
        pl::XshaBlocks256(a.state, a.in, 1);
      },
      ::testing::KilledBySignal(SIGILL), "");
}

TEST_F(PadlockBackendTest, EmulatorC7BlockModeGivesWrongDigest) {
  static const uint32_t kIv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372,
                                  0xa54ff53a, 0x510e527f, 0x9b05688c,
                                  0x1f83d9ab, 0x5be0cd19};
  static LeafArea nano, c7;
  memcpy(nano.state, kIv, 32);
  memcpy(c7.state, kIv, 32);
  accelcrypt_padlock_emu_set_profile("nano");
  pl::XshaBlocks256(nano.state, nano.in, 1);
  accelcrypt_padlock_emu_set_profile("c7");
  pl::XshaBlocks256(c7.state, c7.in, 1);
  EXPECT_NE(memcmp(nano.state, c7.state, 32), 0);
}

TEST_F(PadlockBackendTest, EmulatorZhaoxinFinalizeOfEmptyMessageIsNoOp) {
  static const uint32_t kIv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372,
                                  0xa54ff53a, 0x510e527f, 0x9b05688c,
                                  0x1f83d9ab, 0x5be0cd19};
  uint8_t want[32];
  accelcrypt_padlock_emu_sha(256, nullptr, 0, want);
  for (const char* profile : {"nano", "zhaoxin"}) {
    static LeafArea a;
    memcpy(a.state, kIv, 32);
    accelcrypt_padlock_emu_set_profile(profile);
    pl::XshaFinal256(a.state, a.in, 0, 0);
    uint8_t got[32];
    for (int i = 0; i < 32; ++i) {
      got[i] = static_cast<uint8_t>(
          reinterpret_cast<const uint32_t*>(a.state)[i / 4] >>
          (24 - 8 * (i % 4)));
    }
    if (strcmp(profile, "nano") == 0) {
      EXPECT_EQ(memcmp(got, want, 32), 0);
    } else {
      EXPECT_EQ(memcmp(a.state, kIv, 32), 0) << "quirk: state untouched";
    }
  }
}

TEST_F(PadlockBackendTest, EmulatorHardwareKeyExpansionAes128) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  static LeafArea a;
  const Bytes key = RandomBytes(16, 61), data = RandomBytes(64, 62);
  memcpy(a.key, key.data(), 16);
  memcpy(a.in, data.data(), 64);
  accelcrypt_padlock_emu_set_profile("c3");
  a.cword[0] = 0x0a;  // AES-128, KEYGEN = 0: raw key, hardware expands
  a.cword[1] = 0x00;
  accelcrypt_padlock_emu_reset_key_cache();
  pl::XcryptEcb(a.in, a.out, 4, a.key, a.cword, a.iv);
  EXPECT_EQ(Bytes(a.out, a.out + 64), EcbRef(key, data));
  a.cword[1] = 0x02;  // ENCDEC: decrypt, hardware builds the inverse
  accelcrypt_padlock_emu_reset_key_cache();
  pl::XcryptEcb(a.out, a.out, 4, a.key, a.cword, a.iv);
  EXPECT_EQ(Bytes(a.out, a.out + 64), data);
  EXPECT_DEATH(
      {
        a.cword[0] = 0x0e;  // AES-256 without a software schedule
        a.cword[1] = 0x08;
        accelcrypt_padlock_emu_reset_key_cache();
        pl::XcryptEcb(a.in, a.out, 1, a.key, a.cword, a.iv);
      },
      "hardware key expansion");
}

TEST_F(PadlockBackendTest, EmulatorStrictModeRejectsMisalignedData) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  static LeafArea a;
  a.cword[0] = 0x8a;
  EXPECT_DEATH(
      {
        accelcrypt_padlock_emu_set_profile("c3");
        accelcrypt_padlock_emu_reset_key_cache();
        pl::XcryptCbc(a.in + 1, a.out, 1, a.key, a.cword, a.iv);
      },
      "misaligned source");
  EXPECT_DEATH(
      {
        accelcrypt_padlock_emu_reset_key_cache();
        pl::XcryptCbc(a.in, a.out, 1, a.key, a.cword, a.iv + 4);
      },
      "misaligned IV");
}

}  // namespace
