// SPDX-License-Identifier: Apache-2.0
// The software backend's plugin-ABI shim: the only place its statuses become
// ABI codes and where no exception may pass.
#include "backends/software/software_backend.h"

#include <openssl/crypto.h>
// getrandom(2): Linux (glibc 2.25+) and Solaris 11.3+. Elsewhere (Solaris
// 10, macOS, ...) the entropy comes from /dev/urandom (docs/packaging.md).
#if defined(__linux__) || (defined(__sun) && __has_include(<sys/random.h>))
#include <sys/random.h>
#define ACCELCRYPT_HAVE_GETRANDOM 1
#else
#include <fcntl.h>
#include <unistd.h>
#endif

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <new>
#include <utility>

#include "absl/base/optimization.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "accelcrypt/backend.h"
#include "accelcrypt/kit/status.h"
#include "backends/software/aes_software.h"
#include "backends/software/lib_context.h"
#include "backends/software/openssl_error.h"
#include "backends/software/rsa_software.h"
#include "backends/software/sha_software.h"

#ifndef ACCELCRYPT_SOFTWARE_VERSION
#define ACCELCRYPT_SOFTWARE_VERSION "0.0.0"
#endif

namespace accelcrypt::software {
namespace {

// Guard: the kit's (accelcrypt/kit/status.h), named for this backend.
template <typename F>
inline accelcrypt_status Guard(accelcrypt_error* err, F&& f) {
  return kit::Guard("software", err, std::forward<F>(f));
}

using kit::WriteAbiError;

accelcrypt_status NullArgument(const char* what, accelcrypt_error* err) {
  char message[96];
  std::snprintf(message, sizeof(message), "software: %s is NULL", what);
  return WriteAbiError(ACCELCRYPT_ERR_INVALID_ARGUMENT, message, err);
}

LibContext* AsLib(void* backend) { return static_cast<LibContext*>(backend); }
AesSoftware* AsAes(accelcrypt_cipher_ctx* ctx) {
  return reinterpret_cast<AesSoftware*>(ctx);
}
const AesSoftware* AsAes(const accelcrypt_cipher_ctx* ctx) {
  return reinterpret_cast<const AesSoftware*>(ctx);
}
ShaSoftware* AsSha(accelcrypt_digest_ctx* ctx) {
  return reinterpret_cast<ShaSoftware*>(ctx);
}
const ShaSoftware* AsSha(const accelcrypt_digest_ctx* ctx) {
  return reinterpret_cast<const ShaSoftware*>(ctx);
}

absl::Status NotDeclared(accelcrypt_alg alg) {
  char message[96];
  std::snprintf(message, sizeof(message),
                "software: algorithm 0x%08x is not offered", alg);
  return absl::UnimplementedError(message);
}

// Cipher family.

accelcrypt_status CipherNewCtx(void* backend, accelcrypt_alg alg,
                               accelcrypt_cipher_ctx** out,
                               accelcrypt_error* err) {
  if (backend == nullptr || out == nullptr) {
    return NullArgument("argument", err);
  }
  return Guard(err, [&]() -> absl::Status {
    const CipherDispatch* d = AsLib(backend)->Cipher(alg);
    if (d == nullptr) return NotDeclared(alg);
    absl::StatusOr<std::unique_ptr<AesSoftware>> ctx = AesSoftware::Create(*d);
    if (!ctx.ok()) return ctx.status();
    *out = reinterpret_cast<accelcrypt_cipher_ctx*>(ctx->release());
    return absl::OkStatus();
  });
}

accelcrypt_status CipherInit(accelcrypt_cipher_ctx* ctx, int encrypt,
                             const uint8_t* key, size_t key_len,
                             const uint8_t* iv, size_t iv_len,
                             accelcrypt_error* err) {
  if (ctx == nullptr) return NullArgument("context", err);
  return Guard(err, [&] {
    return AsAes(ctx)->Init(encrypt != 0, absl::MakeConstSpan(key, key_len),
                            absl::MakeConstSpan(iv, iv_len));
  });
}

accelcrypt_status CipherUpdate(accelcrypt_cipher_ctx* ctx, const uint8_t* in,
                               size_t in_len, uint8_t* out,
                               accelcrypt_error* err) {
  if (ABSL_PREDICT_FALSE(ctx == nullptr)) return NullArgument("context", err);
  return Guard(err, [&] { return AsAes(ctx)->Update(in, in_len, out); });
}

accelcrypt_status CipherAad(accelcrypt_cipher_ctx* ctx, const uint8_t* aad,
                            size_t aad_len, accelcrypt_error* err) {
  if (ctx == nullptr) return NullArgument("context", err);
  return Guard(err, [&] { return AsAes(ctx)->Aad(aad, aad_len); });
}

accelcrypt_status CipherFinal(accelcrypt_cipher_ctx* ctx,
                              accelcrypt_error* err) {
  if (ctx == nullptr) return NullArgument("context", err);
  return Guard(err, [&] { return AsAes(ctx)->Final(); });
}

accelcrypt_status CipherGetTag(accelcrypt_cipher_ctx* ctx, uint8_t* tag,
                               size_t tag_len, accelcrypt_error* err) {
  if (ctx == nullptr) return NullArgument("context", err);
  return Guard(err, [&] { return AsAes(ctx)->GetTag(tag, tag_len); });
}

accelcrypt_status CipherSetTag(accelcrypt_cipher_ctx* ctx, const uint8_t* tag,
                               size_t tag_len, accelcrypt_error* err) {
  if (ctx == nullptr) return NullArgument("context", err);
  return Guard(err, [&] { return AsAes(ctx)->SetTag(tag, tag_len); });
}

accelcrypt_status CipherGetState(const accelcrypt_cipher_ctx* ctx,
                                 accelcrypt_cipher_state* out,
                                 accelcrypt_error* err) {
  if (ctx == nullptr || out == nullptr) return NullArgument("argument", err);
  return Guard(err, [&] { return AsAes(ctx)->GetState(out); });
}

accelcrypt_status CipherSetState(accelcrypt_cipher_ctx* ctx,
                                 const accelcrypt_cipher_state* state,
                                 accelcrypt_error* err) {
  if (ctx == nullptr || state == nullptr) return NullArgument("argument", err);
  return Guard(err, [&] { return AsAes(ctx)->SetState(*state); });
}

accelcrypt_status CipherDupCtx(const accelcrypt_cipher_ctx* ctx,
                               accelcrypt_cipher_ctx** out,
                               accelcrypt_error* err) {
  if (ctx == nullptr || out == nullptr) return NullArgument("argument", err);
  return Guard(err, [&]() -> absl::Status {
    absl::StatusOr<std::unique_ptr<AesSoftware>> copy = AsAes(ctx)->Clone();
    if (!copy.ok()) return copy.status();
    *out = reinterpret_cast<accelcrypt_cipher_ctx*>(copy->release());
    return absl::OkStatus();
  });
}

void CipherFreeCtx(accelcrypt_cipher_ctx* ctx) { delete AsAes(ctx); }

accelcrypt_status CipherGetDirect(accelcrypt_cipher_ctx* ctx,
                                  accelcrypt_cipher_direct_fn* fn,
                                  void** direct_ctx, accelcrypt_error* err) {
  if (ctx == nullptr || fn == nullptr || direct_ctx == nullptr) {
    return NullArgument("argument", err);
  }
  return Guard(err, [&] { return AsAes(ctx)->Direct(fn, direct_ctx); });
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
    CipherGetDirect,
};

// Digest family.

accelcrypt_status DigestNewCtx(void* backend, accelcrypt_alg alg,
                               accelcrypt_digest_ctx** out,
                               accelcrypt_error* err) {
  if (backend == nullptr || out == nullptr) {
    return NullArgument("argument", err);
  }
  return Guard(err, [&]() -> absl::Status {
    const DigestDispatch* d = AsLib(backend)->Digest(alg);
    if (d == nullptr) return NotDeclared(alg);
    absl::StatusOr<std::unique_ptr<ShaSoftware>> ctx = ShaSoftware::Create(*d);
    if (!ctx.ok()) return ctx.status();
    *out = reinterpret_cast<accelcrypt_digest_ctx*>(ctx->release());
    return absl::OkStatus();
  });
}

accelcrypt_status DigestInit(accelcrypt_digest_ctx* ctx,
                             accelcrypt_error* err) {
  if (ctx == nullptr) return NullArgument("context", err);
  return Guard(err, [&] { return AsSha(ctx)->Init(); });
}

accelcrypt_status DigestUpdate(accelcrypt_digest_ctx* ctx, const uint8_t* data,
                               size_t len, accelcrypt_error* err) {
  if (ABSL_PREDICT_FALSE(ctx == nullptr)) return NullArgument("context", err);
  return Guard(err, [&] { return AsSha(ctx)->Update(data, len); });
}

accelcrypt_status DigestFinal(accelcrypt_digest_ctx* ctx, uint8_t* out,
                              size_t out_len, accelcrypt_error* err) {
  if (ctx == nullptr) return NullArgument("context", err);
  return Guard(err, [&] { return AsSha(ctx)->Final(out, out_len); });
}

accelcrypt_status DigestOneShot(void* backend, accelcrypt_alg alg,
                                const uint8_t* data, size_t len, uint8_t* out,
                                size_t out_len, accelcrypt_error* err) {
  if (backend == nullptr) return NullArgument("backend", err);
  return Guard(err, [&]() -> absl::Status {
    const DigestDispatch* d = AsLib(backend)->Digest(alg);
    if (d == nullptr) return NotDeclared(alg);
    return ShaSoftware::OneShot(*d, data, len, out, out_len);
  });
}

accelcrypt_status DigestDupCtx(const accelcrypt_digest_ctx* ctx,
                               accelcrypt_digest_ctx** out,
                               accelcrypt_error* err) {
  if (ctx == nullptr || out == nullptr) return NullArgument("argument", err);
  return Guard(err, [&]() -> absl::Status {
    absl::StatusOr<std::unique_ptr<ShaSoftware>> copy = AsSha(ctx)->Clone();
    if (!copy.ok()) return copy.status();
    *out = reinterpret_cast<accelcrypt_digest_ctx*>(copy->release());
    return absl::OkStatus();
  });
}

void DigestFreeCtx(accelcrypt_digest_ctx* ctx) { delete AsSha(ctx); }

const accelcrypt_digest_direct* DigestGetDirect(void* backend,
                                                accelcrypt_alg alg) {
  if (backend == nullptr || AsLib(backend)->Digest(alg) == nullptr) {
    return nullptr;
  }
  return ShaSoftware::Direct(alg);
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
  if (backend == nullptr || (out == nullptr && len != 0)) {
    return NullArgument("argument", err);
  }
  return Guard(err, [&] {
    return AsLib(backend)->RandomBytes(absl::MakeSpan(out, len));
  });
}

// Entropy: the kernel's getrandom(2), the same source OpenSSL's own seed
// source uses. The software backend comes last in priority, so this only
// serves when every hardware noise source has failed (e.g. a PadLock xstore
// taken out of service by its health tests mid-process): seeding then
// continues instead of failing closed.
accelcrypt_status Entropy(void* backend, uint8_t* out, size_t len,
                          size_t* entropy_bits, accelcrypt_error* err) {
  if (backend == nullptr || entropy_bits == nullptr ||
      (out == nullptr && len != 0)) {
    return NullArgument("argument", err);
  }
  size_t done = 0;
#if !defined(ACCELCRYPT_HAVE_GETRANDOM)
  const int fd = len == 0 ? -1 : open("/dev/urandom", O_RDONLY);
  if (len != 0 && fd < 0) {
    return WriteAbiError(ACCELCRYPT_ERR_UNAVAILABLE,
                         "software: cannot open /dev/urandom", err);
  }
#endif
  while (done < len) {
#if defined(ACCELCRYPT_HAVE_GETRANDOM)
    ssize_t n = getrandom(out + done, len - done, 0);
#else
    ssize_t n = read(fd, out + done, len - done);
    if (n == 0) {  // end of file: not a random device
      errno = EIO;
      n = -1;
    }
#endif
    if (n < 0) {
      if (errno == EINTR) continue;
      OPENSSL_cleanse(out, len);
#if !defined(ACCELCRYPT_HAVE_GETRANDOM)
      close(fd);
#endif
      return WriteAbiError(ACCELCRYPT_ERR_UNAVAILABLE,
                           "software: getrandom failed", err);
    }
    done += static_cast<size_t>(n);
  }
#if !defined(ACCELCRYPT_HAVE_GETRANDOM)
  if (fd >= 0) close(fd);
#endif
  *entropy_bits = 8 * len;
  return ACCELCRYPT_OK;
}

constexpr accelcrypt_rng_table kRngTable = {
    sizeof(accelcrypt_rng_table),
    RandomBytes,
    Entropy,
};

// RSA and DSA families (one table shape; DSA has no encrypt/decrypt).

PkeySoftware* AsPkey(accelcrypt_pkey* key) {
  return reinterpret_cast<PkeySoftware*>(key);
}

accelcrypt_status PkeyLoad(void* backend, const accelcrypt_key_desc* desc,
                           accelcrypt_pkey** out, accelcrypt_error* err) {
  if (backend == nullptr || desc == nullptr || out == nullptr) {
    return NullArgument("argument", err);
  }
  if (desc->struct_size < sizeof(accelcrypt_key_desc)) {
    return WriteAbiError(ACCELCRYPT_ERR_INVALID_ARGUMENT,
                         "software: key descriptor too small", err);
  }
  return Guard(err, [&]() -> absl::Status {
    absl::StatusOr<std::unique_ptr<PkeySoftware>> key =
        PkeySoftware::Load(*AsLib(backend), *desc);
    if (!key.ok()) return key.status();
    *out = reinterpret_cast<accelcrypt_pkey*>(key->release());
    return absl::OkStatus();
  });
}

void PkeyFree(accelcrypt_pkey* key) { delete AsPkey(key); }

// CheckOp validates what every operation needs; returns OK or writes err.
accelcrypt_status CheckOp(accelcrypt_pkey* key,
                          const accelcrypt_pkey_params* params, size_t* out_len,
                          accelcrypt_error* err) {
  if (key == nullptr || params == nullptr) {
    return NullArgument("argument", err);
  }
  if (params->struct_size < sizeof(accelcrypt_pkey_params)) {
    return WriteAbiError(ACCELCRYPT_ERR_INVALID_ARGUMENT,
                         "software: parameter block too small", err);
  }
  (void)out_len;
  return ACCELCRYPT_OK;
}

accelcrypt_status PkeySign(accelcrypt_pkey* key,
                           const accelcrypt_pkey_params* params,
                           const uint8_t* tbs, size_t tbs_len, uint8_t* sig,
                           size_t* sig_len, accelcrypt_error* err) {
  if (sig_len == nullptr) return NullArgument("sig_len", err);
  if (accelcrypt_status rc = CheckOp(key, params, sig_len, err); rc != 0) {
    return rc;
  }
  return Guard(err, [&] {
    return AsPkey(key)->Sign(*params, tbs, tbs_len, sig, sig_len);
  });
}

accelcrypt_status PkeyVerify(accelcrypt_pkey* key,
                             const accelcrypt_pkey_params* params,
                             const uint8_t* tbs, size_t tbs_len,
                             const uint8_t* sig, size_t sig_len,
                             accelcrypt_error* err) {
  if (accelcrypt_status rc = CheckOp(key, params, nullptr, err); rc != 0) {
    return rc;
  }
  return Guard(err, [&] {
    return AsPkey(key)->Verify(*params, tbs, tbs_len, sig, sig_len);
  });
}

accelcrypt_status PkeyEncrypt(accelcrypt_pkey* key,
                              const accelcrypt_pkey_params* params,
                              const uint8_t* in, size_t in_len, uint8_t* out,
                              size_t* out_len, accelcrypt_error* err) {
  if (out_len == nullptr) return NullArgument("out_len", err);
  if (accelcrypt_status rc = CheckOp(key, params, out_len, err); rc != 0) {
    return rc;
  }
  return Guard(err, [&] {
    return AsPkey(key)->Encrypt(*params, in, in_len, out, out_len);
  });
}

accelcrypt_status PkeyDecrypt(accelcrypt_pkey* key,
                              const accelcrypt_pkey_params* params,
                              const uint8_t* in, size_t in_len, uint8_t* out,
                              size_t* out_len, accelcrypt_error* err) {
  if (out_len == nullptr) return NullArgument("out_len", err);
  if (accelcrypt_status rc = CheckOp(key, params, out_len, err); rc != 0) {
    return rc;
  }
  return Guard(err, [&] {
    return AsPkey(key)->Decrypt(*params, in, in_len, out, out_len);
  });
}

constexpr accelcrypt_pkey_table kRsaTable = {
    sizeof(accelcrypt_pkey_table),
    PkeyLoad,
    PkeyFree,
    PkeySign,
    PkeyVerify,
    PkeyEncrypt,
    PkeyDecrypt,
};

constexpr accelcrypt_pkey_table kDsaTable = {
    sizeof(accelcrypt_pkey_table),
    PkeyLoad,
    PkeyFree,
    PkeySign,
    PkeyVerify,
    nullptr,
    nullptr,
};

// Backend descriptor.

accelcrypt_status BackendInit(const accelcrypt_host* host, void** backend_out,
                              accelcrypt_error* err) {
  if (backend_out == nullptr) return NullArgument("backend_out", err);
  return Guard(err, [&]() -> absl::Status {
    absl::StatusOr<std::unique_ptr<LibContext>> lib = LibContext::Create();
    if (!lib.ok()) return lib.status();
    *backend_out = lib->release();
    return absl::OkStatus();
  });
}

void BackendTeardown(void* backend) { delete AsLib(backend); }

accelcrypt_status BackendCapabilities(void* backend,
                                      const accelcrypt_capability** out,
                                      size_t* num_out, accelcrypt_error* err) {
  if (backend == nullptr || out == nullptr || num_out == nullptr) {
    return NullArgument("argument", err);
  }
  absl::Span<const accelcrypt_capability> caps = AsLib(backend)->capabilities();
  *out = caps.data();
  *num_out = caps.size();
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
    case ACCELCRYPT_FAMILY_RSA:
      return &kRsaTable;
    case ACCELCRYPT_FAMILY_DSA:
      return &kDsaTable;
    default:
      return nullptr;
  }
}

void BackendDescribe(void* backend, char* out, size_t out_len) {
  if (backend == nullptr || out == nullptr || out_len == 0) return;
  std::snprintf(out, out_len, "%s", AsLib(backend)->description().c_str());
}

constexpr accelcrypt_backend_desc kDescriptor = {
    ACCELCRYPT_ABI_VERSION,
    sizeof(accelcrypt_backend_desc),
    "software",
    ACCELCRYPT_SOFTWARE_VERSION,
    BackendInit,
    BackendTeardown,
    BackendCapabilities,
    BackendQueryFamily,
    BackendDescribe,
};

}  // namespace
}  // namespace accelcrypt::software

extern "C" const accelcrypt_backend_desc* accelcrypt_software_backend_entry(
    uint32_t host_abi_version) {
  if (host_abi_version != ACCELCRYPT_ABI_VERSION) return nullptr;
  return &accelcrypt::software::kDescriptor;
}
