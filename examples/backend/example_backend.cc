// SPDX-License-Identifier: Apache-2.0
// example.so: a complete accelcrypt backend module in one file, built
// against the installed plugin ABI (<accelcrypt/backend.h>, from the
// accelcrypt-dev package) and the header-only backend kit, and nothing else
// of accelcrypt's. Copy this directory to start a backend of your own.
//
// It offers SHA2-256 and AES-128-ECB and computes them with libcrypto's EVP
// interface. A real backend drives its device or library where this one
// calls EVP; libcrypto keeps the example small and correct, so it passes
// the NIST vectors `accelcrypt selftest` runs.
//
// Configuration, read once at init through the host's config_get: the key
// `algorithms` in a `[backend_example]` section of the accelcrypt settings
// file, or `example.algorithms` in its `[accelcrypt]` section.
//   algorithms   comma list of what to offer: sha256, aes-128-ecb (the
//                default is both); `none` makes the backend decline, as a
//                backend whose device is absent does.
//
// The rules every backend follows, and where this file follows them:
// - One exported symbol, accelcrypt_backend_entry (bottom of the file);
//   everything else is hidden (CMakeLists.txt builds with hidden
//   visibility).
// - No C++ exception crosses the ABI: every function that can fail runs
//   its body inside Guard (the kit's GuardAbi), which turns an exception
//   into an ACCELCRYPT_ERR_* code and a message.
// - Every failure returns an ACCELCRYPT_ERR_* code chosen by what the
//   caller should do (backend.h explains each) and a message naming the
//   backend and the algorithm, never key bytes or data.
// - libcrypto's per-thread error queue is drained into that message on
//   every failed libcrypto call, so the application that loaded us never
//   finds our errors on its queue.
// - No key byte is copied here: libcrypto's cipher context holds the key
//   schedule and EVP_CIPHER_CTX_free wipes it. A backend that keeps key
//   bytes itself (for a device, say) wipes them with OPENSSL_cleanse before
//   it frees them, in freectx and on every error path.
#include <accelcrypt/backend.h>
#include <accelcrypt/kit/abi_error.h>
#include <accelcrypt/kit/openssl_errors.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/provider.h>

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

// The load hints note (backend.h, "Load hints"): the loader reads the name
// from the file before it loads it, so `disable = example` or a `backends`
// list without it keeps the module out of every process without mapping
// it. A backend that cannot work without a setting adds
// ACCELCRYPT_LOAD_HINT("needs-config=KEY") here; this one needs none.
ACCELCRYPT_BACKEND_LOAD_HINTS(ACCELCRYPT_LOAD_HINT("name=example"));

namespace example_backend {
namespace {

constexpr char kName[] = "example";
constexpr char kVersion[] = "1.0.0";
constexpr size_t kSha256Len = 32;
constexpr size_t kAesBlock = 16;
constexpr size_t kAes128KeyLen = 16;
// EVP_CipherUpdate takes an int length: larger calls go in slices of this
// many bytes (a whole number of AES blocks).
constexpr size_t kMaxSlice = size_t{1} << 30;

// Backend is the instance init creates and teardown frees. After init it is
// only read, so the newctx functions may run on many threads at once.
struct Backend {
  // A private library context holding only OpenSSL's default provider.
  // Fetching from the process's default context would be wrong: inside an
  // application whose openssl.cnf prefers accelcrypt, "SHA2-256" would come
  // back to accelcrypt itself, and from there to this backend.
  OSSL_LIB_CTX* libctx = nullptr;
  OSSL_PROVIDER* provider = nullptr;
  EVP_MD* sha256 = nullptr;           // null when not offered
  EVP_CIPHER* aes_128_ecb = nullptr;  // null when not offered
  std::vector<accelcrypt_capability> caps;
  std::string description;

  Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;
  ~Backend() {
    EVP_MD_free(sha256);
    EVP_CIPHER_free(aes_128_ecb);
    if (provider != nullptr) OSSL_PROVIDER_unload(provider);
    OSSL_LIB_CTX_free(libctx);
  }
};

// The contexts behind the ABI's opaque handles. The core only ever passes
// back what newctx and dupctx handed out, so the casts below are safe.
struct DigestCtx {
  const EVP_MD* md = nullptr;
  EVP_MD_CTX* evp = nullptr;

  DigestCtx() = default;
  DigestCtx(const DigestCtx&) = delete;
  DigestCtx& operator=(const DigestCtx&) = delete;
  ~DigestCtx() { EVP_MD_CTX_free(evp); }
};

struct CipherCtx {
  const EVP_CIPHER* cipher = nullptr;
  EVP_CIPHER_CTX* evp = nullptr;
  bool keyed = false;

  CipherCtx() = default;
  CipherCtx(const CipherCtx&) = delete;
  CipherCtx& operator=(const CipherCtx&) = delete;
  ~CipherCtx() { EVP_CIPHER_CTX_free(evp); }  // wipes the key schedule
};

DigestCtx* AsDigest(accelcrypt_digest_ctx* ctx) {
  return reinterpret_cast<DigestCtx*>(ctx);
}
const DigestCtx* AsDigest(const accelcrypt_digest_ctx* ctx) {
  return reinterpret_cast<const DigestCtx*>(ctx);
}
CipherCtx* AsCipher(accelcrypt_cipher_ctx* ctx) {
  return reinterpret_cast<CipherCtx*>(ctx);
}
const CipherCtx* AsCipher(const accelcrypt_cipher_ctx* ctx) {
  return reinterpret_cast<const CipherCtx*>(ctx);
}

// Guard runs an entry point's body and turns any exception (std::bad_alloc
// from a std::string, say) into an ABI code: the loader is C.
template <typename F>
accelcrypt_status Guard(accelcrypt_error* err, F&& body) {
  return accelcrypt::kit::GuardAbi(kName, err, std::forward<F>(body));
}

accelcrypt_status Error(accelcrypt_error* err, accelcrypt_status code,
                        const char* message) {
  return accelcrypt::kit::WriteAbiErrorf(err, code, "%s: %s", kName, message);
}

// LibcryptoError reports a failed libcrypto call with libcrypto's reasons,
// emptying this thread's error queue.
accelcrypt_status LibcryptoError(accelcrypt_error* err, accelcrypt_status code,
                                 const char* alg, const char* step) {
  const std::string reasons = accelcrypt::kit::DrainOpenSslErrors();
  return accelcrypt::kit::WriteAbiErrorf(
      err, code, "%s: %s %s failed: %s", kName, alg, step,
      reasons.empty() ? "no reason given" : reasons.c_str());
}

// ---- digest table: SHA2-256 ----

accelcrypt_status DigestNew(void* backend, accelcrypt_alg alg,
                            accelcrypt_digest_ctx** out,
                            accelcrypt_error* err) {
  return Guard(err, [&]() -> accelcrypt_status {
    const auto* b = static_cast<const Backend*>(backend);
    if (b == nullptr || out == nullptr) {
      return Error(err, ACCELCRYPT_ERR_INVALID_ARGUMENT,
                   "digest newctx: NULL argument");
    }
    if (alg != ACCELCRYPT_ALG_SHA256 || b->sha256 == nullptr) {
      return accelcrypt::kit::WriteAbiErrorf(
          err, ACCELCRYPT_ERR_UNIMPLEMENTED,
          "%s: digest algorithm 0x%08x is not offered", kName,
          static_cast<unsigned>(alg));
    }
    auto ctx = std::make_unique<DigestCtx>();
    ctx->md = b->sha256;
    ctx->evp = EVP_MD_CTX_new();
    if (ctx->evp == nullptr) {
      return LibcryptoError(err, ACCELCRYPT_ERR_RESOURCE_EXHAUSTED, "SHA2-256",
                            "EVP_MD_CTX_new");
    }
    // The ABI hands out digest contexts already initialised.
    if (EVP_DigestInit_ex2(ctx->evp, ctx->md, nullptr) != 1) {
      return LibcryptoError(err, ACCELCRYPT_ERR_INTERNAL, "SHA2-256", "init");
    }
    *out = reinterpret_cast<accelcrypt_digest_ctx*>(ctx.release());
    return ACCELCRYPT_OK;
  });
}

accelcrypt_status DigestInit(accelcrypt_digest_ctx* ctx,
                             accelcrypt_error* err) {
  return Guard(err, [&]() -> accelcrypt_status {
    DigestCtx* d = AsDigest(ctx);
    if (d == nullptr) {
      return Error(err, ACCELCRYPT_ERR_INVALID_ARGUMENT, "digest init: NULL");
    }
    if (EVP_DigestInit_ex2(d->evp, d->md, nullptr) != 1) {
      return LibcryptoError(err, ACCELCRYPT_ERR_INTERNAL, "SHA2-256", "init");
    }
    return ACCELCRYPT_OK;
  });
}

// Update and final are the per-call path: no allocation and no lock on
// success. Their error paths build a std::string (LibcryptoError), so they
// are guarded too; a try block costs nothing until something throws.
accelcrypt_status DigestUpdate(accelcrypt_digest_ctx* ctx, const uint8_t* data,
                               size_t len, accelcrypt_error* err) {
  return Guard(err, [&]() -> accelcrypt_status {
    DigestCtx* d = AsDigest(ctx);
    if (d == nullptr || (data == nullptr && len > 0)) {
      return Error(err, ACCELCRYPT_ERR_INVALID_ARGUMENT, "digest update: NULL");
    }
    if (EVP_DigestUpdate(d->evp, data, len) != 1) {
      return LibcryptoError(err, ACCELCRYPT_ERR_INTERNAL, "SHA2-256", "update");
    }
    return ACCELCRYPT_OK;
  });
}

accelcrypt_status DigestFinal(accelcrypt_digest_ctx* ctx, uint8_t* out,
                              size_t out_len, accelcrypt_error* err) {
  return Guard(err, [&]() -> accelcrypt_status {
    DigestCtx* d = AsDigest(ctx);
    if (d == nullptr || out == nullptr) {
      return Error(err, ACCELCRYPT_ERR_INVALID_ARGUMENT, "digest final: NULL");
    }
    if (out_len < kSha256Len) {
      return accelcrypt::kit::WriteAbiErrorf(
          err, ACCELCRYPT_ERR_OUT_OF_RANGE,
          "%s: SHA2-256 needs 32 bytes of output, got %zu", kName, out_len);
    }
    if (EVP_DigestFinal_ex(d->evp, out, nullptr) != 1) {
      return LibcryptoError(err, ACCELCRYPT_ERR_INTERNAL, "SHA2-256", "final");
    }
    return ACCELCRYPT_OK;
  });
}

accelcrypt_status DigestDup(const accelcrypt_digest_ctx* ctx,
                            accelcrypt_digest_ctx** out,
                            accelcrypt_error* err) {
  return Guard(err, [&]() -> accelcrypt_status {
    const DigestCtx* src = AsDigest(ctx);
    if (src == nullptr || out == nullptr) {
      return Error(err, ACCELCRYPT_ERR_INVALID_ARGUMENT,
                   "digest dupctx: NULL argument");
    }
    auto copy = std::make_unique<DigestCtx>();
    copy->md = src->md;
    copy->evp = EVP_MD_CTX_new();
    if (copy->evp == nullptr) {
      return LibcryptoError(err, ACCELCRYPT_ERR_RESOURCE_EXHAUSTED, "SHA2-256",
                            "EVP_MD_CTX_new");
    }
    if (EVP_MD_CTX_copy_ex(copy->evp, src->evp) != 1) {
      return LibcryptoError(err, ACCELCRYPT_ERR_INTERNAL, "SHA2-256", "copy");
    }
    *out = reinterpret_cast<accelcrypt_digest_ctx*>(copy.release());
    return ACCELCRYPT_OK;
  });
}

void DigestFree(accelcrypt_digest_ctx* ctx) { delete AsDigest(ctx); }

// Fields left out are null: `oneshot` (the core then uses init, update and
// final) and `get_direct` (a raw per-call path; see backend.h).
constexpr accelcrypt_digest_table kDigestTable = {
    .struct_size = sizeof(accelcrypt_digest_table),
    .newctx = DigestNew,
    .init = DigestInit,
    .update = DigestUpdate,
    .final = DigestFinal,
    .oneshot = nullptr,
    .dupctx = DigestDup,
    .freectx = DigestFree,
    .get_direct = nullptr,
};

// ---- cipher table: AES-128-ECB ----

accelcrypt_status CipherNew(void* backend, accelcrypt_alg alg,
                            accelcrypt_cipher_ctx** out,
                            accelcrypt_error* err) {
  return Guard(err, [&]() -> accelcrypt_status {
    const auto* b = static_cast<const Backend*>(backend);
    if (b == nullptr || out == nullptr) {
      return Error(err, ACCELCRYPT_ERR_INVALID_ARGUMENT,
                   "cipher newctx: NULL argument");
    }
    if (alg != ACCELCRYPT_ALG_AES_128_ECB || b->aes_128_ecb == nullptr) {
      return accelcrypt::kit::WriteAbiErrorf(
          err, ACCELCRYPT_ERR_UNIMPLEMENTED,
          "%s: cipher algorithm 0x%08x is not offered", kName,
          static_cast<unsigned>(alg));
    }
    auto ctx = std::make_unique<CipherCtx>();
    ctx->cipher = b->aes_128_ecb;
    ctx->evp = EVP_CIPHER_CTX_new();
    if (ctx->evp == nullptr) {
      return LibcryptoError(err, ACCELCRYPT_ERR_RESOURCE_EXHAUSTED,
                            "AES-128-ECB", "EVP_CIPHER_CTX_new");
    }
    *out = reinterpret_cast<accelcrypt_cipher_ctx*>(ctx.release());
    return ACCELCRYPT_OK;
  });
}

accelcrypt_status CipherInit(accelcrypt_cipher_ctx* ctx, int encrypt,
                             const uint8_t* key, size_t key_len,
                             const uint8_t* iv, size_t iv_len,
                             accelcrypt_error* err) {
  (void)iv;  // ECB has no IV; iv_len must be 0
  return Guard(err, [&]() -> accelcrypt_status {
    CipherCtx* c = AsCipher(ctx);
    if (c == nullptr || key == nullptr) {
      return Error(err, ACCELCRYPT_ERR_INVALID_ARGUMENT, "cipher init: NULL");
    }
    // Wrong sizes are the caller's error (no fallback to another backend).
    if (key_len != kAes128KeyLen) {
      return accelcrypt::kit::WriteAbiErrorf(
          err, ACCELCRYPT_ERR_INVALID_ARGUMENT,
          "%s: AES-128-ECB takes a 16-byte key, not %zu bytes", kName, key_len);
    }
    if (iv_len != 0) {
      return accelcrypt::kit::WriteAbiErrorf(
          err, ACCELCRYPT_ERR_INVALID_ARGUMENT,
          "%s: AES-128-ECB takes no IV, got %zu bytes", kName, iv_len);
    }
    // Raw ECB: the core buffers partial blocks and pads, so libcrypto's
    // padding is off.
    if (EVP_CipherInit_ex2(c->evp, c->cipher, key, nullptr,
                           encrypt != 0 ? 1 : 0, nullptr) != 1 ||
        EVP_CIPHER_CTX_set_padding(c->evp, 0) != 1) {
      c->keyed = false;
      return LibcryptoError(err, ACCELCRYPT_ERR_INTERNAL, "AES-128-ECB",
                            "init");
    }
    c->keyed = true;
    return ACCELCRYPT_OK;
  });
}

accelcrypt_status CipherUpdate(accelcrypt_cipher_ctx* ctx, const uint8_t* in,
                               size_t in_len, uint8_t* out,
                               accelcrypt_error* err) {
  return Guard(err, [&]() -> accelcrypt_status {
    CipherCtx* c = AsCipher(ctx);
    if (c == nullptr || ((in == nullptr || out == nullptr) && in_len > 0)) {
      return Error(err, ACCELCRYPT_ERR_INVALID_ARGUMENT, "cipher update: NULL");
    }
    if (!c->keyed) {
      return Error(err, ACCELCRYPT_ERR_FAILED_PRECONDITION,
                   "AES-128-ECB update before init");
    }
    if (in_len % kAesBlock != 0) {
      return accelcrypt::kit::WriteAbiErrorf(
          err, ACCELCRYPT_ERR_INVALID_ARGUMENT,
          "%s: AES-128-ECB takes whole 16-byte blocks, got %zu bytes", kName,
          in_len);
    }
    // ECB keeps no running state, so a failed slice leaves the context as
    // it was, as the ABI asks (the output is garbage the caller drops).
    for (size_t done = 0; done < in_len;) {
      const size_t n = in_len - done < kMaxSlice ? in_len - done : kMaxSlice;
      int out_n = 0;
      if (EVP_CipherUpdate(c->evp, out + done, &out_n, in + done,
                           static_cast<int>(n)) != 1 ||
          static_cast<size_t>(out_n) != n) {
        return LibcryptoError(err, ACCELCRYPT_ERR_INTERNAL, "AES-128-ECB",
                              "update");
      }
      done += n;
    }
    return ACCELCRYPT_OK;
  });
}

accelcrypt_status CipherDup(const accelcrypt_cipher_ctx* ctx,
                            accelcrypt_cipher_ctx** out,
                            accelcrypt_error* err) {
  return Guard(err, [&]() -> accelcrypt_status {
    const CipherCtx* src = AsCipher(ctx);
    if (src == nullptr || out == nullptr) {
      return Error(err, ACCELCRYPT_ERR_INVALID_ARGUMENT,
                   "cipher dupctx: NULL argument");
    }
    auto copy = std::make_unique<CipherCtx>();
    copy->cipher = src->cipher;
    copy->keyed = src->keyed;
    copy->evp = EVP_CIPHER_CTX_new();
    if (copy->evp == nullptr) {
      return LibcryptoError(err, ACCELCRYPT_ERR_RESOURCE_EXHAUSTED,
                            "AES-128-ECB", "EVP_CIPHER_CTX_new");
    }
    if (src->keyed && EVP_CIPHER_CTX_copy(copy->evp, src->evp) != 1) {
      return LibcryptoError(err, ACCELCRYPT_ERR_INTERNAL, "AES-128-ECB",
                            "copy");
    }
    *out = reinterpret_cast<accelcrypt_cipher_ctx*>(copy.release());
    return ACCELCRYPT_OK;
  });
}

void CipherFree(accelcrypt_cipher_ctx* ctx) { delete AsCipher(ctx); }

// Null fields: the GCM calls (aad, final, get_tag, set_tag: `final` is a
// no-op for non-AEAD modes anyway), get_state/set_state (only for
// algorithms declared ACCELCRYPT_CAP_PORTABLE_STATE) and get_direct.
constexpr accelcrypt_cipher_table kCipherTable = {
    .struct_size = sizeof(accelcrypt_cipher_table),
    .newctx = CipherNew,
    .init = CipherInit,
    .update = CipherUpdate,
    .aad = nullptr,
    .final = nullptr,
    .get_tag = nullptr,
    .set_tag = nullptr,
    .get_state = nullptr,
    .set_state = nullptr,
    .dupctx = CipherDup,
    .freectx = CipherFree,
    .get_direct = nullptr,
};

// ---- configuration ----

// ConfigGet reads `key` from this backend's configuration section, or
// returns null. A host built from an older header may pass a shorter
// struct: read a field only when struct_size covers it.
const char* ConfigGet(const accelcrypt_host* host, const char* key) {
  if (host == nullptr ||
      host->struct_size <
          offsetof(accelcrypt_host, config_get) + sizeof(host->config_get) ||
      host->config_get == nullptr) {
    return nullptr;
  }
  return host->config_get(host->host_ctx, key);
}

// Log writes through the host's log (silent unless logging is configured).
void Log(const accelcrypt_host* host, int level, const std::string& message) {
  if (host == nullptr ||
      host->struct_size < offsetof(accelcrypt_host, log) + sizeof(host->log) ||
      host->log == nullptr) {
    return;
  }
  host->log(host->host_ctx, level, message.c_str());
}

struct Selection {
  bool sha256 = false;
  bool aes_128_ecb = false;
};

// ParseAlgorithms reads the `algorithms` setting: names separated by
// commas or blanks, in any case. Returns false with `bad` set to the first
// unknown name.
bool ParseAlgorithms(const std::string& value, Selection* out,
                     std::string* bad) {
  Selection s;
  std::string word;
  auto take = [&]() {
    if (word.empty()) return true;
    if (word == "sha256") {
      s.sha256 = true;
    } else if (word == "aes-128-ecb") {
      s.aes_128_ecb = true;
    } else if (word != "none") {
      *bad = word;
      return false;
    }
    word.clear();
    return true;
  };
  for (char ch : value) {
    if (ch == ',' || std::isspace(static_cast<unsigned char>(ch)) != 0) {
      if (!take()) return false;
    } else {
      word += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    }
  }
  if (!take()) return false;
  *out = s;
  return true;
}

accelcrypt_capability Capability(accelcrypt_alg alg) {
  accelcrypt_capability cap{};
  cap.alg = alg;
  // STREAMING: update may be called any number of times. CPU: libcrypto's
  // code runs on this CPU, so update/final have no device errors and the
  // router keeps no replay copy for us. Not HARDWARE: the core ranks
  // hardware backends first by default, and this is software. A device
  // backend sets HARDWARE and leaves CPU out.
  cap.flags = ACCELCRYPT_CAP_STREAMING | ACCELCRYPT_CAP_CPU;
  cap.alignment = 1;  // any buffer alignment
  cap.max_chunk = 0;  // no limit per update (we slice for EVP ourselves)
  return cap;
}

// ---- descriptor ----

accelcrypt_status BackendInit(const accelcrypt_host* host, void** backend_out,
                              accelcrypt_error* err) {
  return Guard(err, [&]() -> accelcrypt_status {
    if (backend_out == nullptr) {
      return Error(err, ACCELCRYPT_ERR_INVALID_ARGUMENT, "init: NULL argument");
    }
    Selection want{true, true};
    const char* setting = ConfigGet(host, "algorithms");
    if (setting != nullptr) {
      std::string bad;
      if (!ParseAlgorithms(setting, &want, &bad)) {
        // A configuration mistake: say which value, and what would do.
        return accelcrypt::kit::WriteAbiErrorf(
            err, ACCELCRYPT_ERR_INVALID_ARGUMENT,
            "%s: example.algorithms: unknown algorithm '%s' (want a comma "
            "list of sha256, aes-128-ecb, or none)",
            kName, bad.c_str());
      }
      if (!want.sha256 && !want.aes_128_ecb) {
        // UNAVAILABLE is how a backend declines: the loader skips it and
        // lists the reason (`accelcrypt list`, "Load events").
        return accelcrypt::kit::WriteAbiErrorf(
            err, ACCELCRYPT_ERR_UNAVAILABLE,
            "%s: declined: example.algorithms = '%s' selects nothing", kName,
            setting);
      }
    }

    auto b = std::make_unique<Backend>();
    // A fresh library context reads no openssl.cnf: it has only what we load.
    b->libctx = OSSL_LIB_CTX_new();
    if (b->libctx == nullptr) {
      return LibcryptoError(err, ACCELCRYPT_ERR_UNAVAILABLE, "libcrypto",
                            "OSSL_LIB_CTX_new");
    }
    b->provider = OSSL_PROVIDER_load(b->libctx, "default");
    if (b->provider == nullptr) {
      return LibcryptoError(err, ACCELCRYPT_ERR_UNAVAILABLE, "libcrypto",
                            "loading the default provider");
    }
    // Fetch once here, not per context: a fetch takes locks and looks up
    // names; newctx then only allocates.
    if (want.sha256) {
      b->sha256 = EVP_MD_fetch(b->libctx, "SHA2-256", nullptr);
      if (b->sha256 == nullptr) {
        return LibcryptoError(err, ACCELCRYPT_ERR_UNAVAILABLE, "SHA2-256",
                              "fetch");
      }
      b->caps.push_back(Capability(ACCELCRYPT_ALG_SHA256));
    }
    if (want.aes_128_ecb) {
      b->aes_128_ecb = EVP_CIPHER_fetch(b->libctx, "AES-128-ECB", nullptr);
      if (b->aes_128_ecb == nullptr) {
        return LibcryptoError(err, ACCELCRYPT_ERR_UNAVAILABLE, "AES-128-ECB",
                              "fetch");
      }
      b->caps.push_back(Capability(ACCELCRYPT_ALG_AES_128_ECB));
    }
    b->description = std::string("libcrypto EVP (") +
                     OpenSSL_version(OPENSSL_VERSION) + "); offers " +
                     (want.sha256 ? "sha256" : "") +
                     (want.sha256 && want.aes_128_ecb ? ", " : "") +
                     (want.aes_128_ecb ? "aes-128-ecb" : "") +
                     (setting != nullptr ? " (example.algorithms)" : "");
    Log(host, 2, std::string(kName) + ": " + b->description);
    *backend_out = b.release();
    return ACCELCRYPT_OK;
  });
}

// Teardown runs once, after every context has been freed.
void BackendTeardown(void* backend) { delete static_cast<Backend*>(backend); }

accelcrypt_status BackendCapabilities(void* backend,
                                      const accelcrypt_capability** out,
                                      size_t* num_out, accelcrypt_error* err) {
  const auto* b = static_cast<const Backend*>(backend);
  if (b == nullptr || out == nullptr || num_out == nullptr) {
    return Error(err, ACCELCRYPT_ERR_INVALID_ARGUMENT,
                 "get_capabilities: NULL argument");
  }
  *out = b->caps.data();  // ours; valid until teardown
  *num_out = b->caps.size();
  return ACCELCRYPT_OK;
}

const void* BackendQueryFamily(void* backend, uint32_t family) {
  const auto* b = static_cast<const Backend*>(backend);
  if (b == nullptr) return nullptr;
  if (family == ACCELCRYPT_FAMILY_DIGEST && b->sha256 != nullptr) {
    return &kDigestTable;
  }
  if (family == ACCELCRYPT_FAMILY_CIPHER && b->aes_128_ecb != nullptr) {
    return &kCipherTable;
  }
  return nullptr;  // RNG, RSA, DSA: not offered
}

void BackendDescribe(void* backend, char* out, size_t out_len) {
  const auto* b = static_cast<const Backend*>(backend);
  if (b == nullptr || out == nullptr || out_len == 0) return;
  std::snprintf(out, out_len, "%s", b->description.c_str());
}

constexpr accelcrypt_backend_desc kDescriptor = {
    .abi_version = ACCELCRYPT_ABI_VERSION,
    .struct_size = sizeof(accelcrypt_backend_desc),
    .name = kName,  // the same name as in the load hints above
    .version = kVersion,
    .init = BackendInit,
    .teardown = BackendTeardown,
    .get_capabilities = BackendCapabilities,
    .query_family = BackendQueryFamily,
    .describe = BackendDescribe,
    .capability_size = sizeof(accelcrypt_capability),
};

}  // namespace
}  // namespace example_backend

// The one exported symbol. The loader passes its own ABI version; a backend
// built for another one returns null and is skipped with a message.
extern "C" ACCELCRYPT_BACKEND_EXPORT const accelcrypt_backend_desc*
accelcrypt_backend_entry(uint32_t host_abi_version) {
  if (host_abi_version != ACCELCRYPT_ABI_VERSION) return nullptr;
  return &example_backend::kDescriptor;
}
