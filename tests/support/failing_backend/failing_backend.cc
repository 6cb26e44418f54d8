// SPDX-License-Identifier: Apache-2.0
// failing.so: a test-only backend over the real plugin ABI. It wraps the
// software backend's tables, declares the same algorithms plus
// ACCELCRYPT_CAP_HARDWARE (so the router prefers it) and without
// ACCELCRYPT_CAP_CPU (it is a device: replay and fallback), and injects device
// errors (ACCELCRYPT_ERR_UNAVAILABLE, "device error injected") on cue. No real
// device fails on demand; router tests need one that does.
//
// Configuration (through the host's config_get, i.e. `failing.<key>` or a
// global `<key>`; the environment variable in brackets wins when set):
//   mode       none | always | after | every | random | midstream
//              [ACCELCRYPT_FAILING_MODE], default none
//   after      mode=after: calls 1..N succeed, every later call fails
//              [ACCELCRYPT_FAILING_AFTER]
//   every      mode=every: every Nth call fails (N >= 1)
//              [ACCELCRYPT_FAILING_EVERY]
//   rate       mode=random: failure probability in percent, 0..100
//              [ACCELCRYPT_FAILING_RATE]
//   seed       mode=random: seed of the deterministic per-call draw
//              [ACCELCRYPT_FAILING_SEED], default 1
//   fail_init  1: init declines with ACCELCRYPT_ERR_UNAVAILABLE, as a
//              backend whose device is absent does
//              [ACCELCRYPT_FAILING_FAIL_INIT]
//   fail_init_unless  PATH: init declines the same way unless the file
//              PATH exists (a device plugged in later: the test creates
//              the file) [ACCELCRYPT_FAILING_FAIL_INIT_UNLESS]
// Built with ACCELCRYPT_FAILING_DEFERRED (failing.so in the deferred-test
// directory), the module's load hints defer its start to the first cipher
// or digest operation (accelcrypt/backend.h, `defer=`), as the PKCS#11
// client backend defers its own to the first RSA/DSA operation.
//   direct     none | correct | wrong: the digest table's get_direct offers
//              nothing (default), the wrapped software backend's direct
//              digests, or those with the digest's first byte flipped (a
//              broken implementation self-tests and vector runs must catch)
//              [ACCELCRYPT_FAILING_DIRECT]. Direct digests cannot fail by
//              the ABI, so no mode touches them.
// mode=midstream fails the second and every later cipher update of each
// context (re-init starts the count again), and nothing else.
//
// Calls that count and may fail: cipher newctx/init/update/aad, GCM final,
// digest newctx/init/update/final/oneshot, random_bytes. Never failed (they
// read or restore state the router needs for fallback, release resources, or
// are a no-op no device takes part in): cipher get_state/set_state/get_tag/
// set_tag/dupctx, final of a non-AEAD mode (a no-op by the ABI), digest
// dupctx, freectx.
// A failure is decided before the wrapped backend is touched, so the context
// is exactly as before the call (the ABI's atomicity contract).
//
// Note: the registry's self-tests go through these calls too; tests that want
// exact counts set `selftest = 0`.
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "accelcrypt/backend.h"
#include "backends/software/software_backend.h"

namespace accelcrypt::failing {
namespace {

enum class Mode { kNone, kAlways, kAfter, kEvery, kRandom, kMidstream };

const char* ModeName(Mode mode) {
  switch (mode) {
    case Mode::kNone:
      return "none";
    case Mode::kAlways:
      return "always";
    case Mode::kAfter:
      return "after";
    case Mode::kEvery:
      return "every";
    case Mode::kRandom:
      return "random";
    case Mode::kMidstream:
      return "midstream";
  }
  return "?";
}

// SplitMix64 finaliser: a well-mixed 64-bit value per (seed, call number), so
// the random mode is reproducible and needs no shared generator state.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

accelcrypt_status SetError(accelcrypt_error* err, accelcrypt_status code,
                           const char* message) {
  if (err != nullptr) {
    err->code = code;
    std::snprintf(err->message, sizeof(err->message), "%s", message);
  }
  return code;
}

struct Instance {
  const accelcrypt_backend_desc* inner_desc = nullptr;
  void* inner = nullptr;
  const accelcrypt_cipher_table* cipher = nullptr;
  const accelcrypt_digest_table* digest = nullptr;
  const accelcrypt_rng_table* rng = nullptr;
  std::vector<accelcrypt_capability> caps;

  Mode mode = Mode::kNone;
  enum class Direct { kNone, kCorrect, kWrong } direct = Direct::kNone;
  uint64_t after = 0;
  uint64_t every = 0;
  uint64_t rate = 0;
  uint64_t seed = 1;

  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> failures{0};

  // Count registers one call and returns its 1-based number.
  uint64_t Count() { return calls.fetch_add(1, std::memory_order_relaxed) + 1; }

  // Inject fills `err` for an injected failure and returns UNAVAILABLE.
  accelcrypt_status Inject(uint64_t n, const char* what,
                           accelcrypt_error* err) {
    failures.fetch_add(1, std::memory_order_relaxed);
    char message[160];
    std::snprintf(message, sizeof(message),
                  "failing: %s: device error injected (call %llu, mode %s)",
                  what, static_cast<unsigned long long>(n), ModeName(mode));
    return SetError(err, ACCELCRYPT_ERR_UNAVAILABLE, message);
  }

  // Check counts a call and decides by the mode whether it fails. Returns
  // ACCELCRYPT_OK to proceed.
  accelcrypt_status Check(const char* what, accelcrypt_error* err) {
    uint64_t n = Count();
    bool fail = false;
    switch (mode) {
      case Mode::kNone:
      case Mode::kMidstream:
        break;
      case Mode::kAlways:
        fail = true;
        break;
      case Mode::kAfter:
        fail = n > after;
        break;
      case Mode::kEvery:
        fail = n % every == 0;
        break;
      case Mode::kRandom:
        fail = Mix(seed ^ Mix(n)) % 100 < rate;
        break;
    }
    return fail ? Inject(n, what, err) : ACCELCRYPT_OK;
  }
};

struct CipherCtx {
  Instance* inst;
  accelcrypt_cipher_ctx* inner;
  uint64_t updates;  // update calls since init, for mode=midstream
  bool aead;         // GCM: final does device work
};

struct DigestCtx {
  Instance* inst;
  accelcrypt_digest_ctx* inner;
};

CipherCtx* AsCipher(accelcrypt_cipher_ctx* ctx) {
  return reinterpret_cast<CipherCtx*>(ctx);
}
const CipherCtx* AsCipher(const accelcrypt_cipher_ctx* ctx) {
  return reinterpret_cast<const CipherCtx*>(ctx);
}
DigestCtx* AsDigest(accelcrypt_digest_ctx* ctx) {
  return reinterpret_cast<DigestCtx*>(ctx);
}
const DigestCtx* AsDigest(const accelcrypt_digest_ctx* ctx) {
  return reinterpret_cast<const DigestCtx*>(ctx);
}

accelcrypt_status NullArgument(accelcrypt_error* err) {
  return SetError(err, ACCELCRYPT_ERR_INVALID_ARGUMENT,
                  "failing: NULL argument");
}

// Cipher family.

accelcrypt_status CipherNewCtx(void* backend, accelcrypt_alg alg,
                               accelcrypt_cipher_ctx** out,
                               accelcrypt_error* err) {
  if (backend == nullptr || out == nullptr) return NullArgument(err);
  Instance* inst = static_cast<Instance*>(backend);
  accelcrypt_status rc = inst->Check("cipher newctx", err);
  if (rc != ACCELCRYPT_OK) return rc;
  CipherCtx* ctx = new (std::nothrow) CipherCtx{
      inst, nullptr, 0, ACCELCRYPT_CIPHER_MODE(alg) == ACCELCRYPT_MODE_GCM};
  if (ctx == nullptr) {
    return SetError(err, ACCELCRYPT_ERR_RESOURCE_EXHAUSTED,
                    "failing: out of memory");
  }
  rc = inst->cipher->newctx(inst->inner, alg, &ctx->inner, err);
  if (rc != ACCELCRYPT_OK) {
    delete ctx;
    return rc;
  }
  *out = reinterpret_cast<accelcrypt_cipher_ctx*>(ctx);
  return ACCELCRYPT_OK;
}

accelcrypt_status CipherInit(accelcrypt_cipher_ctx* vctx, int encrypt,
                             const uint8_t* key, size_t key_len,
                             const uint8_t* iv, size_t iv_len,
                             accelcrypt_error* err) {
  if (vctx == nullptr) return NullArgument(err);
  CipherCtx* ctx = AsCipher(vctx);
  accelcrypt_status rc = ctx->inst->Check("cipher init", err);
  if (rc != ACCELCRYPT_OK) return rc;
  rc = ctx->inst->cipher->init(ctx->inner, encrypt, key, key_len, iv, iv_len,
                               err);
  if (rc == ACCELCRYPT_OK) ctx->updates = 0;
  return rc;
}

accelcrypt_status CipherUpdate(accelcrypt_cipher_ctx* vctx, const uint8_t* in,
                               size_t in_len, uint8_t* out,
                               accelcrypt_error* err) {
  if (vctx == nullptr) return NullArgument(err);
  CipherCtx* ctx = AsCipher(vctx);
  Instance* inst = ctx->inst;
  if (inst->mode == Mode::kMidstream) {
    uint64_t n = inst->Count();
    if (ctx->updates++ >= 1) return inst->Inject(n, "cipher update", err);
  } else {
    accelcrypt_status rc = inst->Check("cipher update", err);
    if (rc != ACCELCRYPT_OK) return rc;
  }
  return inst->cipher->update(ctx->inner, in, in_len, out, err);
}

accelcrypt_status CipherAad(accelcrypt_cipher_ctx* vctx, const uint8_t* aad,
                            size_t aad_len, accelcrypt_error* err) {
  if (vctx == nullptr) return NullArgument(err);
  CipherCtx* ctx = AsCipher(vctx);
  accelcrypt_status rc = ctx->inst->Check("cipher aad", err);
  if (rc != ACCELCRYPT_OK) return rc;
  return ctx->inst->cipher->aad(ctx->inner, aad, aad_len, err);
}

accelcrypt_status CipherFinal(accelcrypt_cipher_ctx* vctx,
                              accelcrypt_error* err) {
  if (vctx == nullptr) return NullArgument(err);
  CipherCtx* ctx = AsCipher(vctx);
  if (ctx->aead) {
    accelcrypt_status rc = ctx->inst->Check("cipher final", err);
    if (rc != ACCELCRYPT_OK) return rc;
  }
  return ctx->inst->cipher->final(ctx->inner, err);
}

accelcrypt_status CipherGetTag(accelcrypt_cipher_ctx* vctx, uint8_t* tag,
                               size_t tag_len, accelcrypt_error* err) {
  if (vctx == nullptr) return NullArgument(err);
  CipherCtx* ctx = AsCipher(vctx);
  return ctx->inst->cipher->get_tag(ctx->inner, tag, tag_len, err);
}

accelcrypt_status CipherSetTag(accelcrypt_cipher_ctx* vctx, const uint8_t* tag,
                               size_t tag_len, accelcrypt_error* err) {
  if (vctx == nullptr) return NullArgument(err);
  CipherCtx* ctx = AsCipher(vctx);
  return ctx->inst->cipher->set_tag(ctx->inner, tag, tag_len, err);
}

accelcrypt_status CipherGetState(const accelcrypt_cipher_ctx* vctx,
                                 accelcrypt_cipher_state* out,
                                 accelcrypt_error* err) {
  if (vctx == nullptr) return NullArgument(err);
  const CipherCtx* ctx = AsCipher(vctx);
  return ctx->inst->cipher->get_state(ctx->inner, out, err);
}

accelcrypt_status CipherSetState(accelcrypt_cipher_ctx* vctx,
                                 const accelcrypt_cipher_state* state,
                                 accelcrypt_error* err) {
  if (vctx == nullptr) return NullArgument(err);
  CipherCtx* ctx = AsCipher(vctx);
  return ctx->inst->cipher->set_state(ctx->inner, state, err);
}

accelcrypt_status CipherDupCtx(const accelcrypt_cipher_ctx* vctx,
                               accelcrypt_cipher_ctx** out,
                               accelcrypt_error* err) {
  if (vctx == nullptr || out == nullptr) return NullArgument(err);
  const CipherCtx* ctx = AsCipher(vctx);
  CipherCtx* copy =
      new (std::nothrow) CipherCtx{ctx->inst, nullptr, ctx->updates, ctx->aead};
  if (copy == nullptr) {
    return SetError(err, ACCELCRYPT_ERR_RESOURCE_EXHAUSTED,
                    "failing: out of memory");
  }
  accelcrypt_status rc =
      ctx->inst->cipher->dupctx(ctx->inner, &copy->inner, err);
  if (rc != ACCELCRYPT_OK) {
    delete copy;
    return rc;
  }
  *out = reinterpret_cast<accelcrypt_cipher_ctx*>(copy);
  return ACCELCRYPT_OK;
}

void CipherFreeCtx(accelcrypt_cipher_ctx* vctx) {
  if (vctx == nullptr) return;
  CipherCtx* ctx = AsCipher(vctx);
  ctx->inst->cipher->freectx(ctx->inner);
  delete ctx;
}

constexpr accelcrypt_cipher_table kCipherTable = {
    sizeof(accelcrypt_cipher_table),
    CipherNewCtx,
    CipherInit,
    CipherUpdate,
    CipherAad,
    CipherFinal,
    CipherGetTag,
    CipherSetTag,
    CipherGetState,
    CipherSetState,
    CipherDupCtx,
    CipherFreeCtx,
};

// Digest family.

accelcrypt_status DigestNewCtx(void* backend, accelcrypt_alg alg,
                               accelcrypt_digest_ctx** out,
                               accelcrypt_error* err) {
  if (backend == nullptr || out == nullptr) return NullArgument(err);
  Instance* inst = static_cast<Instance*>(backend);
  accelcrypt_status rc = inst->Check("digest newctx", err);
  if (rc != ACCELCRYPT_OK) return rc;
  DigestCtx* ctx = new (std::nothrow) DigestCtx{inst, nullptr};
  if (ctx == nullptr) {
    return SetError(err, ACCELCRYPT_ERR_RESOURCE_EXHAUSTED,
                    "failing: out of memory");
  }
  rc = inst->digest->newctx(inst->inner, alg, &ctx->inner, err);
  if (rc != ACCELCRYPT_OK) {
    delete ctx;
    return rc;
  }
  *out = reinterpret_cast<accelcrypt_digest_ctx*>(ctx);
  return ACCELCRYPT_OK;
}

accelcrypt_status DigestInit(accelcrypt_digest_ctx* vctx,
                             accelcrypt_error* err) {
  if (vctx == nullptr) return NullArgument(err);
  DigestCtx* ctx = AsDigest(vctx);
  accelcrypt_status rc = ctx->inst->Check("digest init", err);
  if (rc != ACCELCRYPT_OK) return rc;
  return ctx->inst->digest->init(ctx->inner, err);
}

accelcrypt_status DigestUpdate(accelcrypt_digest_ctx* vctx, const uint8_t* data,
                               size_t len, accelcrypt_error* err) {
  if (vctx == nullptr) return NullArgument(err);
  DigestCtx* ctx = AsDigest(vctx);
  accelcrypt_status rc = ctx->inst->Check("digest update", err);
  if (rc != ACCELCRYPT_OK) return rc;
  return ctx->inst->digest->update(ctx->inner, data, len, err);
}

accelcrypt_status DigestFinal(accelcrypt_digest_ctx* vctx, uint8_t* out,
                              size_t out_len, accelcrypt_error* err) {
  if (vctx == nullptr) return NullArgument(err);
  DigestCtx* ctx = AsDigest(vctx);
  accelcrypt_status rc = ctx->inst->Check("digest final", err);
  if (rc != ACCELCRYPT_OK) return rc;
  return ctx->inst->digest->final(ctx->inner, out, out_len, err);
}

accelcrypt_status DigestOneShot(void* backend, accelcrypt_alg alg,
                                const uint8_t* data, size_t len, uint8_t* out,
                                size_t out_len, accelcrypt_error* err) {
  if (backend == nullptr) return NullArgument(err);
  Instance* inst = static_cast<Instance*>(backend);
  accelcrypt_status rc = inst->Check("digest oneshot", err);
  if (rc != ACCELCRYPT_OK) return rc;
  return inst->digest->oneshot(inst->inner, alg, data, len, out, out_len, err);
}

accelcrypt_status DigestDupCtx(const accelcrypt_digest_ctx* vctx,
                               accelcrypt_digest_ctx** out,
                               accelcrypt_error* err) {
  if (vctx == nullptr || out == nullptr) return NullArgument(err);
  const DigestCtx* ctx = AsDigest(vctx);
  DigestCtx* copy = new (std::nothrow) DigestCtx{ctx->inst, nullptr};
  if (copy == nullptr) {
    return SetError(err, ACCELCRYPT_ERR_RESOURCE_EXHAUSTED,
                    "failing: out of memory");
  }
  accelcrypt_status rc =
      ctx->inst->digest->dupctx(ctx->inner, &copy->inner, err);
  if (rc != ACCELCRYPT_OK) {
    delete copy;
    return rc;
  }
  *out = reinterpret_cast<accelcrypt_digest_ctx*>(copy);
  return ACCELCRYPT_OK;
}

void DigestFreeCtx(accelcrypt_digest_ctx* vctx) {
  if (vctx == nullptr) return;
  DigestCtx* ctx = AsDigest(vctx);
  ctx->inst->digest->freectx(ctx->inner);
  delete ctx;
}

// The wrapped backend's direct digests by the digest id's low byte (SHA-1 1
// .. SHA-512 5), for the wrong ones' final; static tables of the software
// backend, the same for every instance.
constexpr size_t kMaxDigestIds = 8;
const accelcrypt_digest_direct* g_inner_direct[kMaxDigestIds];

template <size_t Id>
struct WrongDirect {
  static void Init(void* state) { g_inner_direct[Id]->init(state); }
  static void Update(void* state, const uint8_t* data, size_t len) {
    g_inner_direct[Id]->update(state, data, len);
  }
  static void Final(void* state, uint8_t* out) {
    g_inner_direct[Id]->final(state, out);
    out[0] ^= 1;
  }
  static inline accelcrypt_digest_direct table = {
      sizeof(accelcrypt_digest_direct), 0, Init, Update, Final};
};

accelcrypt_digest_direct* WrongTable(size_t id) {
  switch (id) {
    case 1:
      return &WrongDirect<1>::table;
    case 2:
      return &WrongDirect<2>::table;
    case 3:
      return &WrongDirect<3>::table;
    case 4:
      return &WrongDirect<4>::table;
    case 5:
      return &WrongDirect<5>::table;
  }
  return nullptr;
}

const accelcrypt_digest_direct* DigestGetDirect(void* backend,
                                                accelcrypt_alg alg) {
  if (backend == nullptr) return nullptr;
  Instance* inst = static_cast<Instance*>(backend);
  if (inst->direct == Instance::Direct::kNone ||
      inst->digest->struct_size <
          offsetof(accelcrypt_digest_table, get_direct) + sizeof(void*) ||
      inst->digest->get_direct == nullptr) {
    return nullptr;
  }
  const accelcrypt_digest_direct* inner =
      inst->digest->get_direct(inst->inner, alg);
  if (inner == nullptr || inst->direct == Instance::Direct::kCorrect) {
    return inner;
  }
  const size_t id = alg & 0xffu;
  accelcrypt_digest_direct* wrong = WrongTable(id);
  if (wrong == nullptr) return nullptr;
  g_inner_direct[id] = inner;
  wrong->state_size = inner->state_size;
  return wrong;
}

constexpr accelcrypt_digest_table kDigestTable = {
    sizeof(accelcrypt_digest_table),
    DigestNewCtx,
    DigestInit,
    DigestUpdate,
    DigestFinal,
    DigestOneShot,
    DigestDupCtx,
    DigestFreeCtx,
    DigestGetDirect,
};

// RNG family.

accelcrypt_status RandomBytes(void* backend, uint8_t* out, size_t len,
                              accelcrypt_error* err) {
  if (backend == nullptr) return NullArgument(err);
  Instance* inst = static_cast<Instance*>(backend);
  accelcrypt_status rc = inst->Check("random_bytes", err);
  if (rc != ACCELCRYPT_OK) return rc;
  return inst->rng->random_bytes(inst->inner, out, len, err);
}

constexpr accelcrypt_rng_table kRngTable = {
    sizeof(accelcrypt_rng_table),
    RandomBytes,
    nullptr,
};

// Configuration.

// Setting returns the environment variable `env` when set and non-empty,
// else the host's config value for `key`, else null.
const char* Setting(const accelcrypt_host* host, const char* key,
                    const char* env) {
  const char* value = std::getenv(env);
  if (value != nullptr && *value != '\0') return value;
  if (host != nullptr && host->config_get != nullptr) {
    return host->config_get(host->host_ctx, key);
  }
  return nullptr;
}

// ParseNumber reads a decimal unsigned integer; false on anything else.
bool ParseNumber(const char* text, uint64_t* out) {
  if (text == nullptr || *text < '0' || *text > '9') return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0') return false;
  *out = v;
  return true;
}

accelcrypt_status BadSetting(const char* key, const char* value,
                             const char* want, accelcrypt_error* err) {
  char message[200];
  std::snprintf(message, sizeof(message), "failing: bad %s '%s' (want %s)", key,
                value != nullptr ? value : "(unset)", want);
  return SetError(err, ACCELCRYPT_ERR_INVALID_ARGUMENT, message);
}

accelcrypt_status ReadConfig(const accelcrypt_host* host, Instance* inst,
                             accelcrypt_error* err) {
  const char* mode = Setting(host, "mode", "ACCELCRYPT_FAILING_MODE");
  if (mode == nullptr || std::strcmp(mode, "none") == 0) {
    inst->mode = Mode::kNone;
  } else if (std::strcmp(mode, "always") == 0) {
    inst->mode = Mode::kAlways;
  } else if (std::strcmp(mode, "after") == 0) {
    inst->mode = Mode::kAfter;
    const char* v = Setting(host, "after", "ACCELCRYPT_FAILING_AFTER");
    if (!ParseNumber(v, &inst->after)) {
      return BadSetting("after", v, "a call count >= 0", err);
    }
  } else if (std::strcmp(mode, "every") == 0) {
    inst->mode = Mode::kEvery;
    const char* v = Setting(host, "every", "ACCELCRYPT_FAILING_EVERY");
    if (!ParseNumber(v, &inst->every) || inst->every == 0) {
      return BadSetting("every", v, "a period >= 1", err);
    }
  } else if (std::strcmp(mode, "random") == 0) {
    inst->mode = Mode::kRandom;
    const char* v = Setting(host, "rate", "ACCELCRYPT_FAILING_RATE");
    if (!ParseNumber(v, &inst->rate) || inst->rate > 100) {
      return BadSetting("rate", v, "a percentage 0..100", err);
    }
    v = Setting(host, "seed", "ACCELCRYPT_FAILING_SEED");
    if (v != nullptr && !ParseNumber(v, &inst->seed)) {
      return BadSetting("seed", v, "an unsigned integer", err);
    }
  } else if (std::strcmp(mode, "midstream") == 0) {
    inst->mode = Mode::kMidstream;
  } else {
    return BadSetting("mode", mode, "none|always|after|every|random|midstream",
                      err);
  }
  const char* direct = Setting(host, "direct", "ACCELCRYPT_FAILING_DIRECT");
  if (direct == nullptr || std::strcmp(direct, "none") == 0) {
    inst->direct = Instance::Direct::kNone;
  } else if (std::strcmp(direct, "correct") == 0) {
    inst->direct = Instance::Direct::kCorrect;
  } else if (std::strcmp(direct, "wrong") == 0) {
    inst->direct = Instance::Direct::kWrong;
  } else {
    return BadSetting("direct", direct, "none|correct|wrong", err);
  }
  return ACCELCRYPT_OK;
}

bool FailInit(const accelcrypt_host* host) {
  const char* v = Setting(host, "fail_init", "ACCELCRYPT_FAILING_FAIL_INIT");
  if (v != nullptr &&
      (std::strcmp(v, "1") == 0 || std::strcmp(v, "true") == 0 ||
       std::strcmp(v, "yes") == 0)) {
    return true;
  }
  const char* unless =
      Setting(host, "fail_init_unless", "ACCELCRYPT_FAILING_FAIL_INIT_UNLESS");
  return unless != nullptr && access(unless, F_OK) != 0;
}

// Backend descriptor.

accelcrypt_status BackendInit(const accelcrypt_host* host, void** backend_out,
                              accelcrypt_error* err) {
  if (backend_out == nullptr) return NullArgument(err);
  if (FailInit(host)) {
    return SetError(err, ACCELCRYPT_ERR_UNAVAILABLE,
                    "failing: device error injected: no device (fail_init)");
  }
  Instance* inst = new (std::nothrow) Instance();
  if (inst == nullptr) {
    return SetError(err, ACCELCRYPT_ERR_RESOURCE_EXHAUSTED,
                    "failing: out of memory");
  }
  accelcrypt_status rc = ReadConfig(host, inst, err);
  if (rc != ACCELCRYPT_OK) {
    delete inst;
    return rc;
  }
  inst->inner_desc = accelcrypt_software_backend_entry(ACCELCRYPT_ABI_VERSION);
  if (inst->inner_desc == nullptr) {
    delete inst;
    return SetError(err, ACCELCRYPT_ERR_INTERNAL,
                    "failing: the wrapped software backend refused the ABI");
  }
  rc = inst->inner_desc->init(host, &inst->inner, err);
  if (rc != ACCELCRYPT_OK) {
    delete inst;
    return rc;
  }
  inst->cipher = static_cast<const accelcrypt_cipher_table*>(
      inst->inner_desc->query_family(inst->inner, ACCELCRYPT_FAMILY_CIPHER));
  inst->digest = static_cast<const accelcrypt_digest_table*>(
      inst->inner_desc->query_family(inst->inner, ACCELCRYPT_FAMILY_DIGEST));
  inst->rng = static_cast<const accelcrypt_rng_table*>(
      inst->inner_desc->query_family(inst->inner, ACCELCRYPT_FAMILY_RNG));
  const accelcrypt_capability* caps = nullptr;
  size_t num_caps = 0;
  rc = inst->inner_desc->get_capabilities(inst->inner, &caps, &num_caps, err);
  if (rc != ACCELCRYPT_OK || inst->cipher == nullptr ||
      inst->digest == nullptr || inst->rng == nullptr) {
    inst->inner_desc->teardown(inst->inner);
    delete inst;
    return rc != ACCELCRYPT_OK
               ? rc
               : SetError(err, ACCELCRYPT_ERR_INTERNAL,
                          "failing: the wrapped backend lacks a family");
  }
  try {
    inst->caps.assign(caps, caps + num_caps);
  } catch (...) {
    inst->inner_desc->teardown(inst->inner);
    delete inst;
    return SetError(err, ACCELCRYPT_ERR_RESOURCE_EXHAUSTED,
                    "failing: out of memory");
  }
  // A device: it fails mid-stream, so it never claims the wrapped CPU
  // code's ACCELCRYPT_CAP_CPU (the router keeps replay and fallback), and
  // the provider offers what it serves (no ACCELCRYPT_CAP_PASS_THROUGH).
  for (accelcrypt_capability& cap : inst->caps) {
    cap.flags |= ACCELCRYPT_CAP_HARDWARE;
    cap.flags &= ~(ACCELCRYPT_CAP_CPU | ACCELCRYPT_CAP_PASS_THROUGH);
  }
  *backend_out = inst;
  return ACCELCRYPT_OK;
}

void BackendTeardown(void* backend) {
  Instance* inst = static_cast<Instance*>(backend);
  if (inst == nullptr) return;
  inst->inner_desc->teardown(inst->inner);
  delete inst;
}

accelcrypt_status BackendCapabilities(void* backend,
                                      const accelcrypt_capability** out,
                                      size_t* num_out, accelcrypt_error* err) {
  if (backend == nullptr || out == nullptr || num_out == nullptr) {
    return NullArgument(err);
  }
  Instance* inst = static_cast<Instance*>(backend);
  *out = inst->caps.data();
  *num_out = inst->caps.size();
  return ACCELCRYPT_OK;
}

const void* BackendQueryFamily(void* backend, uint32_t family) {
  switch (family) {
    case ACCELCRYPT_FAMILY_CIPHER:
      return &kCipherTable;
    case ACCELCRYPT_FAMILY_DIGEST:
      return &kDigestTable;
    case ACCELCRYPT_FAMILY_RNG:
      return &kRngTable;
    default:
      return nullptr;
  }
}

// BackendDescribe reports the mode and the counters, e.g.
// "failing: mode=after after=3 calls=10 failures=7".
void BackendDescribe(void* backend, char* out, size_t out_len) {
  if (backend == nullptr || out == nullptr || out_len == 0) return;
  Instance* inst = static_cast<Instance*>(backend);
  char param[64] = "";
  switch (inst->mode) {
    case Mode::kAfter:
      std::snprintf(param, sizeof(param), " after=%llu",
                    static_cast<unsigned long long>(inst->after));
      break;
    case Mode::kEvery:
      std::snprintf(param, sizeof(param), " every=%llu",
                    static_cast<unsigned long long>(inst->every));
      break;
    case Mode::kRandom:
      std::snprintf(param, sizeof(param), " rate=%llu seed=%llu",
                    static_cast<unsigned long long>(inst->rate),
                    static_cast<unsigned long long>(inst->seed));
      break;
    default:
      break;
  }
  std::snprintf(
      out, out_len,
      "failing: test-only fault injector over the software backend, mode=%s%s "
      "calls=%llu failures=%llu",
      ModeName(inst->mode), param,
      static_cast<unsigned long long>(
          inst->calls.load(std::memory_order_relaxed)),
      static_cast<unsigned long long>(
          inst->failures.load(std::memory_order_relaxed)));
}

constexpr accelcrypt_backend_desc kDescriptor = {
    ACCELCRYPT_ABI_VERSION,
    sizeof(accelcrypt_backend_desc),
    "failing",
    "0.1.0",
    BackendInit,
    BackendTeardown,
    BackendCapabilities,
    BackendQueryFamily,
    BackendDescribe,
};

}  // namespace
}  // namespace accelcrypt::failing

extern "C" ACCELCRYPT_BACKEND_EXPORT const accelcrypt_backend_desc*
accelcrypt_backend_entry(uint32_t host_abi_version) {
  if (host_abi_version != ACCELCRYPT_ABI_VERSION) return nullptr;
  return &accelcrypt::failing::kDescriptor;
}

#ifdef ACCELCRYPT_FAILING_DEFERRED
ACCELCRYPT_BACKEND_LOAD_HINTS(ACCELCRYPT_LOAD_HINT("name=failing")
                                  ACCELCRYPT_LOAD_HINT("defer=cipher,digest"));
#endif
