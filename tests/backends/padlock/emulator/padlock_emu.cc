// SPDX-License-Identifier: Apache-2.0
//
// The SIGILL handler: decode, profile gating, and the register/memory
// semantics of docs/padlock-facts.md §6.3. Async-signal-safe: no
// malloc, no locks, no stdio; per-thread state in initial-exec TLS; global
// counters are lock-free atomics.
#include "tests/backends/padlock/emulator/padlock_emu.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>

#include "tests/backends/padlock/emulator/emu_crypto.h"

// The emulator turns saved register values (greg_t) into addresses and
// back, with wrapping arithmetic, as the CPU does; its C entry points use
// its namespace whole. Those three checks are off for this file.
// NOLINTBEGIN(performance-no-int-to-ptr, bugprone-misplaced-widening-cast,
// google-build-using-namespace)

namespace padlock_emu {
namespace {

struct Profile {
  const char* name;
  char vendor[13];
  uint32_t leaf1_eax;
  uint32_t centaur_edx;
  bool ace2;
  bool phe;
  bool phe_block;
  bool phe2;
  bool align_ecb;     // ALIGN bit honoured for ECB
  bool align_nonecb;  // ALIGN bit honoured for CBC/CFB/OFB/CTR
  bool keygen_any;    // hardware key expansion beyond AES-128 (unconfirmed)
  uint32_t sha_area;  // bytes of the xsha state area the unit touches
  bool final_rcx0_noop;
  uint32_t over_ecb, over_cbc, over_ctr;  // prefetch over-read in bytes
};

// CPUID EDX of leaf 0xC0000001: pairs RNG 2/3, ACE 6/7, ACE2 8/9, PHE
// 10/11, PMM 12/13, PHE2 25/26 (facts §1.2).
const Profile kProfiles[] = {
    {"c3", "CentaurHauls", 0x698, 0x00CC, false, false, false, false, false,
     false, false, 128, false, 32, 16, 32},
    {"c7", "CentaurHauls", 0x6A9, 0x3CCC, false, true, false, false, false,
     true, false, 128, false, 32, 16, 32},
    {"nano", "CentaurHauls", 0x6F3, 0x3FCC, true, true, true, false, true, true,
     false, 128, false, 32, 16, 32},
    {"nano_s2", "CentaurHauls", 0x6F2, 0x3FCC, true, true, true, false, true,
     true, false, 128, false, 128, 64, 32},
    {"zhaoxin", "  Shanghai  ", 0x107B0, 0x06003FCC, true, true, true, true,
     true, true, false, 32, true, 32, 16, 32},
};

std::atomic<const Profile*> g_profile{&kProfiles[2]};
std::atomic<int> g_strict{1};
std::atomic<long> g_partial{0};
std::atomic<long> g_preempt_every{0};
std::atomic<int> g_rax_moves{0};
std::atomic<int> g_poison{0};
std::atomic<int> g_c7_block_ud{0};
std::atomic<int> g_ignore_reload{0};
std::atomic<int> g_overread{1};
std::atomic<int> g_rng_fault{0};
std::atomic<int64_t> g_rng_good_left{0};
std::atomic<uint32_t> g_rng_zero_streak{0};
uint64_t g_rng_seed = 0x5eed5eed5eed5eedull;

std::atomic<uint64_t> s_xcrypt{0}, s_xsha{0}, s_xstore{0}, s_key_loads{0},
    s_reload_notes{0}, s_chained{0};

struct sigaction g_old_action;

struct KeyCache {
  bool valid;
  uint8_t cword[16];
  uint8_t key[256];
};
__thread KeyCache t_cache __attribute__((tls_model("initial-exec")));
__thread uint64_t t_traps __attribute__((tls_model("initial-exec")));
__thread uint64_t t_prng __attribute__((tls_model("initial-exec")));
__thread bool t_prng_seeded __attribute__((tls_model("initial-exec")));

alignas(16) uint8_t g_main_altstack[64 * 1024];

#if defined(__x86_64__)
enum {
  kIp = REG_RIP,
  kSi = REG_RSI,
  kDi = REG_RDI,
  kCx = REG_RCX,
  kDx = REG_RDX,
  kBx = REG_RBX,
  kAx = REG_RAX
};
constexpr bool k64 = true;
#else
enum {
  kIp = REG_EIP,
  kSi = REG_ESI,
  kDi = REG_EDI,
  kCx = REG_ECX,
  kDx = REG_EDX,
  kBx = REG_EBX,
  kAx = REG_EAX
};
constexpr bool k64 = false;
#endif

struct Regs {
  ucontext_t* uc;
  uintptr_t mask;  // 0xffffffff with an address-size prefix in 64-bit mode
  uintptr_t Get(int r) const {
    return static_cast<uintptr_t>(uc->uc_mcontext.gregs[r]) & mask;
  }
  void Set(int r, uintptr_t v) {
    uc->uc_mcontext.gregs[r] = static_cast<greg_t>(v & mask);
  }
  void Advance(size_t n) {
    uc->uc_mcontext.gregs[kIp] = static_cast<greg_t>(
        static_cast<uintptr_t>(uc->uc_mcontext.gregs[kIp]) + n);
  }
};

void WriteStr(const char* s) {
  ssize_t r = write(2, s, strlen(s));
  (void)r;
}

void WriteHex(uintptr_t v) {
  char b[2 + 2 * sizeof(v) + 1];
  b[0] = '0';
  b[1] = 'x';
  for (size_t i = 0; i < 2 * sizeof(v); ++i) {
    b[2 + i] = "0123456789abcdef"[(v >> (4 * (2 * sizeof(v) - 1 - i))) & 15];
  }
  b[sizeof(b) - 1] = '\0';
  WriteStr(b);
}

// Violation reports a misuse the hardware would fault on (#GP) and aborts,
// so a test sees a message naming the operand (facts §6.4).
[[noreturn]] void Violation(const char* what, uintptr_t value, uintptr_t ip) {
  WriteStr("padlock-emu: ");
  WriteStr(what);
  WriteStr(" ");
  WriteHex(value);
  WriteStr(" at ip ");
  WriteHex(ip);
  WriteStr("\n");
  abort();
}

void Chain(int sig, siginfo_t* si, void* uc) {
  s_chained.fetch_add(1, std::memory_order_relaxed);
  if ((g_old_action.sa_flags & SA_SIGINFO) != 0 &&
      g_old_action.sa_sigaction != nullptr) {
    g_old_action.sa_sigaction(sig, si, uc);
    return;
  }
  if (g_old_action.sa_handler != SIG_DFL &&
      g_old_action.sa_handler != SIG_IGN) {
    g_old_action.sa_handler(sig);
    return;
  }
  // Default action: restore it and return, so the re-executed instruction
  // kills the process like a real #UD.
  struct sigaction dfl;
  memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  sigaction(SIGILL, &dfl, nullptr);
}

uint64_t Prng() {
  if (!t_prng_seeded) {
    t_prng = g_rng_seed;
    t_prng_seeded = true;
  }
  // splitmix64
  uint64_t z = (t_prng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Reads n bytes at p as the hardware's prefetch does: past the caller's
// buffer, so that a buffer ending before an unmapped page faults here as it
// would on the CPU. Under AddressSanitizer those bytes are a neighbour's
// redzone, which ASan would report as an overflow of the emulator's own
// making; the read is exempt from instrumentation (it still happens, so the
// page-fault model holds).
#if defined(__GNUC__) || defined(__clang__)
__attribute__((no_sanitize("address")))
#endif
void Touch(uintptr_t p, size_t n) {
  const volatile uint8_t* q = reinterpret_cast<const volatile uint8_t*>(p);
  uint8_t acc = 0;
  for (size_t i = 0; i < n; ++i) acc ^= q[i];
  (void)acc;
}

// ---- xcrypt ---------------------------------------------------------------

void DoXcrypt(Regs& r, int mode, size_t insn_len, uintptr_t ip) {
  const Profile& prof = *g_profile.load(std::memory_order_relaxed);
  s_xcrypt.fetch_add(1, std::memory_order_relaxed);
  uintptr_t si = r.Get(kSi), di = r.Get(kDi), cx = r.Get(kCx);
  const uintptr_t dx = r.Get(kDx), bx = r.Get(kBx), ax = r.Get(kAx);
  if (cx == 0) {
    r.Advance(insn_len);
    return;
  }
  const bool strict = g_strict.load(std::memory_order_relaxed) != 0;
  const long preempt = g_preempt_every.load(std::memory_order_relaxed);
  if (preempt > 0 && ++t_traps % static_cast<uint64_t>(preempt) == 0) {
    t_cache.valid = false;
  }
  if (dx & 15) Violation("misaligned control word (RDX)", dx, ip);
  if (bx & 15) Violation("misaligned key (RBX)", bx, ip);
  if (mode != 1 && (ax & 15)) Violation("misaligned IV (RAX)", ax, ip);
  if (!t_cache.valid) {
    // The unit reads the control word and the whole 256-byte key area.
    memcpy(t_cache.cword, reinterpret_cast<const void*>(dx), 16);
    memcpy(t_cache.key, reinterpret_cast<const void*>(bx), 256);
    t_cache.valid = true;
    s_key_loads.fetch_add(1, std::memory_order_relaxed);
  }
  uint32_t cw[4];
  memcpy(cw, t_cache.cword, 16);
  const int rounds = cw[0] & 15;
  const bool align = (cw[0] >> 5) & 1;
  const bool keygen_sw = (cw[0] >> 7) & 1;
  const bool encdec = (cw[0] >> 9) & 1;
  const int ksize = (cw[0] >> 10) & 3;
  if (rounds != 10 && rounds != 12 && rounds != 14) {
    Violation("control word: bad round count", cw[0], ip);
  }
  if (strict && ((cw[0] & ~0xEAFu) != 0 || cw[1] || cw[2] || cw[3] ||
                 rounds != 10 + 2 * ksize || ksize == 3)) {
    Violation("control word: reserved bits or size mismatch", cw[0], ip);
  }
  const bool may_misalign =
      align && (mode == 1 ? prof.align_ecb : prof.align_nonecb);
  if (strict && !may_misalign && ((si | di) & 15)) {
    Violation(
        (si & 15) ? "misaligned source (RSI)" : "misaligned destination (RDI)",
        (si & 15) ? si : di, ip);
  }
  alignas(16) uint8_t rk[256];
  if (!keygen_sw) {
    if (ksize != 0 && !prof.keygen_any) {
      Violation("hardware key expansion requested for AES-192/256", cw[0], ip);
    }
    uint8_t enc[240];
    ExpandKey(t_cache.key, 16 + 8 * ksize, enc);
    if ((mode == 1 || mode == 2) && encdec) {
      ToDecryptSchedule(enc, rounds, rk);
    } else {
      memcpy(rk, enc, sizeof(enc));
    }
  } else {
    memcpy(rk, t_cache.key, 16 * (rounds + 1));
  }
  // Prefetch over-read past the input end (facts §2.8).
  size_t over = prof.over_cbc;
  if (mode == 1) over = prof.over_ecb;
  if (mode == 3) over = prof.over_ctr;
  if (g_overread.load(std::memory_order_relaxed)) Touch(si + 16 * cx, over);

  const long partial = g_partial.load(std::memory_order_relaxed);
  const uintptr_t n = (partial > 0 && cx > static_cast<uintptr_t>(partial))
                          ? static_cast<uintptr_t>(partial)
                          : cx;
  uint8_t v[16] = {};
  if (mode != 1) memcpy(v, reinterpret_cast<const void*>(ax), 16);
  const bool decrypt = (mode == 1 || mode == 2) && encdec;
  for (uintptr_t i = 0; i < n; ++i) {
    uint8_t p[16], c[16], k[16];
    memcpy(p, reinterpret_cast<const void*>(si + 16 * i), 16);
    switch (mode) {
      case 1:
        if (decrypt)
          Decrypt(rk, rounds, p, c);
        else
          Encrypt(rk, rounds, p, c);
        break;
      case 2:
        if (decrypt) {
          Decrypt(rk, rounds, p, c);
          for (int j = 0; j < 16; ++j) c[j] ^= v[j];
          memcpy(v, p, 16);
        } else {
          for (int j = 0; j < 16; ++j) v[j] ^= p[j];
          Encrypt(rk, rounds, v, c);
          memcpy(v, c, 16);
        }
        break;
      case 3: {
        Encrypt(rk, rounds, v, k);
        for (int j = 0; j < 16; ++j) c[j] = p[j] ^ k[j];
        // Bytes 14-15 count big-endian and wrap without carry (§2.6).
        const uint16_t lo = static_cast<uint16_t>(((v[14] << 8) | v[15]) + 1);
        v[14] = static_cast<uint8_t>(lo >> 8);
        v[15] = static_cast<uint8_t>(lo);
        break;
      }
      case 4:
        Encrypt(rk, rounds, v, k);
        for (int j = 0; j < 16; ++j) c[j] = p[j] ^ k[j];
        memcpy(v, encdec ? p : c, 16);
        break;
      case 5:
        Encrypt(rk, rounds, v, k);
        memcpy(v, k, 16);
        for (int j = 0; j < 16; ++j) c[j] = p[j] ^ k[j];
        break;
    }
    memcpy(reinterpret_cast<void*>(di + 16 * i), c, 16);
  }
  const bool moves = g_rax_moves.load(std::memory_order_relaxed) != 0 &&
                     (mode == 2 || mode == 4) && !encdec;
  if (moves) {
    r.Set(kAx, di + 16 * (n - 1));
  } else if (mode != 1) {
    memcpy(reinterpret_cast<void*>(ax), v, 16);
  }
  r.Set(kSi, si + 16 * n);
  r.Set(kDi, di + 16 * n);
  r.Set(kCx, cx - n);
  if (cx - n == 0) r.Advance(insn_len);
  memset(rk, 0, sizeof(rk));
}

// ---- xsha ------------------------------------------------------------------

void DoXsha(Regs& r, int reg, size_t insn_len, uintptr_t ip, int sig,
            siginfo_t* si_info, void* uc) {
  const Profile& prof = *g_profile.load(std::memory_order_relaxed);
  const bool is512 = reg == 4;
  if (!prof.phe || (is512 && !prof.phe2)) {
    Chain(sig, si_info, uc);
    return;
  }
  s_xsha.fetch_add(1, std::memory_order_relaxed);
  const uintptr_t si = r.Get(kSi), di = r.Get(kDi), cx = r.Get(kCx),
                  ax = r.Get(kAx);
  if (di & 15) Violation("misaligned xsha state (RDI)", di, ip);
  // The unit uses the whole state area (128 bytes VIA, 32 Zhaoxin).
  Touch(di, prof.sha_area);
  const size_t words = reg == 1 ? 5 : 8;
  const size_t digest_bytes = is512 ? 64 : 4 * words;
  const bool block_mode = is512 || ax == r.mask;
  const bool strict = g_strict.load(std::memory_order_relaxed) != 0;
  if (strict && k64 && r.mask != 0xffffffffu && ax == 0xffffffffu) {
    Violation("xsha RAX = 0xffffffff is ambiguous in 64-bit code", ax, ip);
  }
  uintptr_t consumed = 0;
  if (block_mode) {
    if (!prof.phe_block) {
      if (g_c7_block_ud.load(std::memory_order_relaxed)) {
        Chain(sig, si_info, uc);
        return;
      }
      // C7: no block mode. Model a wrong result (what a runtime probe sees).
      reinterpret_cast<uint8_t*>(di)[0] ^= 0x5a;
      consumed = 64 * cx;
    } else {
      const uint8_t* p = reinterpret_cast<const uint8_t*>(si);
      if (reg == 1) Sha1Blocks(reinterpret_cast<uint32_t*>(di), p, cx);
      if (reg == 2) Sha256Blocks(reinterpret_cast<uint32_t*>(di), p, cx);
      if (is512) Sha512Blocks(reinterpret_cast<uint64_t*>(di), p, cx);
      consumed = (is512 ? 128 : 64) * cx;
    }
  } else {
    const uintptr_t done = ax, total = cx;
    if (strict && (done % 64 != 0 || done > total)) {
      Violation("xsha finalize: bytes done (RAX) not a block multiple <= RCX",
                ax, ip);
    }
    if (!(prof.final_rcx0_noop && total == 0)) {
      const uint8_t* p = reinterpret_cast<const uint8_t*>(si);
      const uintptr_t rest = total - done;
      const size_t whole = rest / 64;
      if (reg == 1)
        Sha1Blocks(reinterpret_cast<uint32_t*>(di), p, whole);
      else
        Sha256Blocks(reinterpret_cast<uint32_t*>(di), p, whole);
      uint8_t tail[128] = {};
      const size_t tl = rest % 64;
      // An empty message may come with a null source (RSI): copy nothing.
      if (tl != 0) memcpy(tail, p + 64 * whole, tl);
      tail[tl] = 0x80;
      const size_t padded = tl + 9 <= 64 ? 64 : 128;
      uint64_t bits = static_cast<uint64_t>(total) * 8;
      for (size_t i = 0; i < 8; ++i, bits >>= 8) {
        tail[padded - 1 - i] = static_cast<uint8_t>(bits);
      }
      if (reg == 1)
        Sha1Blocks(reinterpret_cast<uint32_t*>(di), tail, padded / 64);
      else
        Sha256Blocks(reinterpret_cast<uint32_t*>(di), tail, padded / 64);
      consumed = rest;
    }
  }
  if (strict) {
    // Scribble past the digest words: a backend must not keep data there.
    memset(reinterpret_cast<uint8_t*>(di) + digest_bytes, 0xa5,
           prof.sha_area > digest_bytes ? prof.sha_area - digest_bytes : 0);
  }
  r.Set(kSi, si + consumed);
  r.Set(kCx, 0);
  if (g_poison.load(std::memory_order_relaxed)) {
    r.Set(kAx, static_cast<uintptr_t>(Prng()));
  }
  r.Advance(insn_len);
}

// ---- xstore ----------------------------------------------------------------

uint8_t NextRngByte(int fault) {
  switch (fault) {
    case PADLOCK_EMU_RNG_STUCK:
      return 0x3c;
    case PADLOCK_EMU_RNG_BIASED: {
      const uint64_t x = Prng();
      return (x % 10) < 3 ? 0 : static_cast<uint8_t>(x >> 32);
    }
  }
  return static_cast<uint8_t>(Prng() >> 24);
}

// Store8 produces one store of up to 8 bytes; returns the status word.
uint32_t StoreOnce(uintptr_t di, uint32_t divisor, uint32_t* count_out) {
  static const uint64_t kRepeatWord = 0x0123456789abcdefull;
  uint32_t count = divisor == 0 ? 8 : (divisor == 1 ? 4 : divisor == 2 ? 2 : 1);
  uint32_t status = 0x40 | (1u << 8);  // enabled, noise source A
  uint32_t z = g_rng_zero_streak.load(std::memory_order_relaxed);
  while (z > 0 && !g_rng_zero_streak.compare_exchange_weak(z, z - 1)) {
  }
  if (z > 0) {
    *count_out = 0;
    return status;
  }
  int fault = g_rng_fault.load(std::memory_order_relaxed);
  if (fault != 0 &&
      g_rng_good_left.fetch_sub(count, std::memory_order_relaxed) > 0) {
    fault = 0;
  }
  uint8_t bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = NextRngByte(fault);
  if (fault == PADLOCK_EMU_RNG_REPEAT) memcpy(bytes, &kRepeatWord, 8);
  if (fault == PADLOCK_EMU_RNG_STATUS) status |= 1u << 12;  // DC bias
  if (fault == PADLOCK_EMU_RNG_DISABLED) status &= ~0x40u;
  // A 4-byte divisor store writes a whole word (facts §4.1).
  memcpy(reinterpret_cast<void*>(di), bytes, divisor == 0 ? 8 : 4);
  *count_out = count;
  return status | count;
}

void DoXstore(Regs& r, bool rep, size_t insn_len) {
  s_xstore.fetch_add(1, std::memory_order_relaxed);
  uintptr_t di = r.Get(kDi);
  const uint32_t divisor = static_cast<uint32_t>(r.Get(kDx)) & 3;
  uint32_t status = 0, count = 0;
  if (!rep) {
    status = StoreOnce(di, divisor, &count);
    di += count;
  } else {
    uintptr_t left = r.Get(kCx);
    while (left > 0) {
      uint8_t tmp[8];
      status = StoreOnce(reinterpret_cast<uintptr_t>(tmp), divisor, &count);
      const uintptr_t take = count < left ? count : left;
      memcpy(reinterpret_cast<void*>(di), tmp, take);
      di += take;
      left -= take;
    }
    r.Set(kCx, 0);
  }
  r.Set(kDi, di);
  // EAX = status; the upper half of RAX is cleared.
  r.uc->uc_mcontext.gregs[kAx] = static_cast<greg_t>(status);
  r.Advance(insn_len);
}

// ---- dispatch --------------------------------------------------------------

void Handler(int sig, siginfo_t* info, void* ucv) {
  ucontext_t* uc = static_cast<ucontext_t*>(ucv);
  const uintptr_t ip = static_cast<uintptr_t>(uc->uc_mcontext.gregs[kIp]);
  const uint8_t* p = reinterpret_cast<const uint8_t*>(ip);
  bool rep = false, a32 = false;
  size_t n = 0;
  for (int i = 0; i < 2; ++i) {
    if (p[n] == 0xf3 && !rep) {
      rep = true;
      ++n;
    } else if (p[n] == 0x67 && !a32 && k64) {
      a32 = true;
      ++n;
    }
  }
  if (p[n] != 0x0f || (p[n + 1] != 0xa6 && p[n + 1] != 0xa7) ||
      (p[n + 2] & 0xc7) != 0xc0) {
    Chain(sig, info, ucv);
    return;
  }
  const uint8_t op = p[n + 1];
  const int reg = (p[n + 2] >> 3) & 7;
  const size_t len = n + 3;
  Regs r{uc, a32 ? uintptr_t{0xffffffffu} : ~uintptr_t{0}};
  const Profile& prof = *g_profile.load(std::memory_order_relaxed);
  if (op == 0xa7 && reg == 0) {
    DoXstore(r, rep, len);
  } else if (op == 0xa7 && rep && reg >= 1 && reg <= 5) {
    if (reg == 3 && !prof.ace2) {
      Chain(sig, info, ucv);
      return;
    }
    DoXcrypt(r, reg, len, ip);
  } else if (op == 0xa6 && rep && (reg == 1 || reg == 2 || reg == 4)) {
    DoXsha(r, reg, len, ip, sig, info, ucv);
  } else {
    Chain(sig, info, ucv);
  }
}

const Profile* FindProfile(const char* name) {
  for (const Profile& p : kProfiles) {
    if (strcmp(p.name, name) == 0) return &p;
  }
  return nullptr;
}

long EnvLong(const char* name, long dflt) {
  const char* v = getenv(name);
  return v != nullptr && *v != '\0' ? strtol(v, nullptr, 0) : dflt;
}

int FaultByName(const char* v) {
  if (v == nullptr) return 0;
  static const char* const kNames[] = {"none",   "stuck",  "biased",
                                       "repeat", "status", "disabled"};
  for (int i = 0; i < 6; ++i) {
    if (strcmp(v, kNames[i]) == 0) return i;
  }
  return 0;
}

__attribute__((constructor)) void EmuLoad() {
  EmuCryptoInit();
  if (const char* p = getenv("ACCELCRYPT_PADLOCK_PROFILE")) {
    const Profile* prof = FindProfile(p);
    if (prof == nullptr) {
      WriteStr("padlock-emu: unknown ACCELCRYPT_PADLOCK_PROFILE, using nano\n");
    } else {
      g_profile.store(prof);
    }
  }
  g_strict = static_cast<int>(EnvLong("ACCELCRYPT_PADLOCK_EMU_STRICT", 1));
  g_partial = EnvLong("ACCELCRYPT_PADLOCK_EMU_PARTIAL", 0);
  g_preempt_every = EnvLong("ACCELCRYPT_PADLOCK_EMU_PREEMPT_EVERY", 0);
  g_rax_moves =
      static_cast<int>(EnvLong("ACCELCRYPT_PADLOCK_EMU_RAX_MOVES", 0));
  g_poison = static_cast<int>(EnvLong("ACCELCRYPT_PADLOCK_EMU_POISON", 0));
  g_ignore_reload =
      static_cast<int>(EnvLong("ACCELCRYPT_PADLOCK_EMU_IGNORE_RELOAD", 0));
  g_overread = static_cast<int>(EnvLong("ACCELCRYPT_PADLOCK_EMU_OVERREAD", 1));
  const char* c7 = getenv("ACCELCRYPT_PADLOCK_EMU_C7_BLOCK");
  g_c7_block_ud = c7 != nullptr && strcmp(c7, "ud") == 0;
  g_rng_fault = FaultByName(getenv("ACCELCRYPT_PADLOCK_RNG_FAULT"));
  g_rng_good_left = EnvLong("ACCELCRYPT_PADLOCK_RNG_FAULT_AFTER", 0);
  g_rng_zero_streak =
      static_cast<uint32_t>(EnvLong("ACCELCRYPT_PADLOCK_RNG_ZERO_STREAK", 0));
  if (const char* seed = getenv("ACCELCRYPT_PADLOCK_RNG_SEED")) {
    g_rng_seed = strtoull(seed, nullptr, 0);
  }

  stack_t ss;
  memset(&ss, 0, sizeof(ss));
  ss.ss_sp = g_main_altstack;
  ss.ss_size = sizeof(g_main_altstack);
  sigaltstack(&ss, nullptr);
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = Handler;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGILL, &sa, &g_old_action);
}

}  // namespace
}  // namespace padlock_emu

using namespace padlock_emu;

extern "C" {

void accelcrypt_padlock_test_cpuid(uint32_t leaf, uint32_t subleaf,
                                   uint32_t out[4]) {
  (void)subleaf;
  const Profile& p = *g_profile.load();
  memset(out, 0, 16);
  switch (leaf) {
    case 0:
      out[0] = 1;
      memcpy(&out[1], p.vendor + 0, 4);
      memcpy(&out[3], p.vendor + 4, 4);
      memcpy(&out[2], p.vendor + 8, 4);
      break;
    case 1:
      out[0] = p.leaf1_eax;
      break;
    case 0xC0000000u:
      out[0] = 0xC0000001u;
      break;
    case 0xC0000001u:
      out[0] = p.leaf1_eax;
      out[3] = p.centaur_edx;
      break;
  }
}

void accelcrypt_padlock_test_note_reload(void) {
  s_reload_notes.fetch_add(1, std::memory_order_relaxed);
  if (!g_ignore_reload.load(std::memory_order_relaxed)) t_cache.valid = false;
}

int accelcrypt_padlock_emu_set_profile(const char* name) {
  const Profile* p = FindProfile(name);
  if (p == nullptr) return -1;
  g_profile.store(p);
  return 0;
}

const char* accelcrypt_padlock_emu_profile(void) {
  return g_profile.load()->name;
}

void accelcrypt_padlock_emu_set_rng_fault(int kind, uint64_t after_bytes) {
  g_rng_good_left.store(static_cast<int64_t>(after_bytes));
  g_rng_fault.store(kind);
}

void accelcrypt_padlock_emu_set_rng_zero_streak(uint32_t calls) {
  g_rng_zero_streak.store(calls);
}

int accelcrypt_padlock_emu_set_option(const char* name, long value) {
  const int v = static_cast<int>(value);
  if (strcmp(name, "strict") == 0)
    g_strict = v;
  else if (strcmp(name, "partial") == 0)
    g_partial = value;
  else if (strcmp(name, "preempt_every") == 0)
    g_preempt_every = value;
  else if (strcmp(name, "rax_moves") == 0)
    g_rax_moves = v;
  else if (strcmp(name, "poison") == 0)
    g_poison = v;
  else if (strcmp(name, "c7_block_ud") == 0)
    g_c7_block_ud = v;
  else if (strcmp(name, "ignore_reload") == 0)
    g_ignore_reload = v;
  else if (strcmp(name, "overread") == 0)
    g_overread = v;
  else
    return -1;
  return 0;
}

void accelcrypt_padlock_emu_get_stats(struct padlock_emu_stats* out) {
  out->xcrypt_traps = s_xcrypt.load();
  out->xsha_traps = s_xsha.load();
  out->xstore_traps = s_xstore.load();
  out->key_loads = s_key_loads.load();
  out->reload_notes = s_reload_notes.load();
  out->chained = s_chained.load();
}

void accelcrypt_padlock_emu_reset_key_cache(void) { t_cache.valid = false; }

int accelcrypt_padlock_emu_thread_init(void) {
  const size_t size = 64 * 1024;
  void* mem = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return -1;
  stack_t ss;
  memset(&ss, 0, sizeof(ss));
  ss.ss_sp = mem;
  ss.ss_size = size;
  return sigaltstack(&ss, nullptr);
}

int accelcrypt_padlock_emu_aes_block(const uint8_t* key, size_t key_len,
                                     int decrypt, const uint8_t in[16],
                                     uint8_t out[16]) {
  if (key_len != 16 && key_len != 24 && key_len != 32) return -1;
  uint8_t enc[240], dec[240];
  const int rounds = ExpandKey(key, key_len, enc);
  if (decrypt) {
    ToDecryptSchedule(enc, rounds, dec);
    Decrypt(dec, rounds, in, out);
  } else {
    Encrypt(enc, rounds, in, out);
  }
  return 0;
}

int accelcrypt_padlock_emu_sha(int bits, const uint8_t* msg, size_t len,
                               uint8_t* out) {
  static const uint32_t iv1[5] = {0x67452301, 0xefcdab89, 0x98badcfe,
                                  0x10325476, 0xc3d2e1f0};
  static const uint32_t iv224[8] = {0xc1059ed8, 0x367cd507, 0x3070dd17,
                                    0xf70e5939, 0xffc00b31, 0x68581511,
                                    0x64f98fa7, 0xbefa4fa4};
  static const uint32_t iv256[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372,
                                    0xa54ff53a, 0x510e527f, 0x9b05688c,
                                    0x1f83d9ab, 0x5be0cd19};
  static const uint64_t iv384[8] = {
      0xcbbb9d5dc1059ed8ull, 0x629a292a367cd507ull, 0x9159015a3070dd17ull,
      0x152fecd8f70e5939ull, 0x67332667ffc00b31ull, 0x8eb44a8768581511ull,
      0xdb0c2e0d64f98fa7ull, 0x47b5481dbefa4fa4ull};
  static const uint64_t iv512[8] = {
      0x6a09e667f3bcc908ull, 0xbb67ae8584caa73bull, 0x3c6ef372fe94f82bull,
      0xa54ff53a5f1d36f1ull, 0x510e527fade682d1ull, 0x9b05688c2b3e6c1full,
      0x1f83d9abfb41bd6bull, 0x5be0cd19137e2179ull};
  const bool big = bits == 384 || bits == 512;
  const size_t bl = big ? 128 : 64;
  uint32_t h32[8];
  uint64_t h64[8];
  if (bits == 1)
    memcpy(h32, iv1, sizeof(iv1));
  else if (bits == 224)
    memcpy(h32, iv224, 32);
  else if (bits == 256)
    memcpy(h32, iv256, 32);
  else if (bits == 384)
    memcpy(h64, iv384, 64);
  else if (bits == 512)
    memcpy(h64, iv512, 64);
  else
    return -1;
  const size_t whole = len / bl;
  auto blocks = [&](const uint8_t* p, size_t nb) {
    if (bits == 1)
      Sha1Blocks(h32, p, nb);
    else if (!big)
      Sha256Blocks(h32, p, nb);
    else
      Sha512Blocks(h64, p, nb);
  };
  blocks(msg, whole);
  uint8_t tail[256] = {};
  const size_t tl = len - whole * bl;
  if (tl) memcpy(tail, msg + whole * bl, tl);
  tail[tl] = 0x80;
  const size_t lf = big ? 16 : 8;
  const size_t padded = tl + 1 + lf <= bl ? bl : 2 * bl;
  uint64_t nbits = static_cast<uint64_t>(len) * 8;
  for (size_t i = 0; i < 8; ++i, nbits >>= 8) {
    tail[padded - 1 - i] = static_cast<uint8_t>(nbits);
  }
  blocks(tail, padded / bl);
  const size_t out_len = bits == 1 ? 20 : bits / 8;
  for (size_t i = 0; i < out_len; ++i) {
    out[i] = big ? static_cast<uint8_t>(h64[i / 8] >> (56 - 8 * (i % 8)))
                 : static_cast<uint8_t>(h32[i / 4] >> (24 - 8 * (i % 4)));
  }
  return 0;
}

}  // extern "C"
// NOLINTEND(performance-no-int-to-ptr, bugprone-misplaced-widening-cast,
// google-build-using-namespace)
