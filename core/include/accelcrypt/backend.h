/* SPDX-License-Identifier: Apache-2.0 */
/*
 * accelcrypt/backend.h: the versioned C plugin ABI between the accelcrypt core
 * and its backends (software, padlock, x86, PKCS#11 client, third-party).
 *
 * A backend is a shared object exporting one function,
 * `accelcrypt_backend_entry` (see ACCELCRYPT_BACKEND_ENTRY_SYMBOL), that
 * returns a descriptor. The descriptor starts with the ABI version and its own
 * size; it names the backend, sets it up and tears it down, lists its
 * capabilities, and hands out one function table per algorithm family through
 * `query_family`. Tables start with their own size too. New functions are
 * appended to the end of a table (a loader checks `struct_size` before it reads
 * a field); new families get new ids. A loader ignores what it does not know.
 *
 * Nothing C++ crosses this boundary: no exceptions, no std types. Every
 * function that can fail returns an `accelcrypt_status` and, when `err` is not
 * NULL, writes a NUL-terminated message into it. Messages name the algorithm
 * and the backend and never contain key bytes, PINs or plaintext.
 *
 * Threading: a backend's `init`, `teardown`, `get_capabilities` and
 * `query_family` are called by the loader under its own lock. Context objects
 * (`accelcrypt_cipher_ctx` and friends) are used by one thread at a time;
 * different contexts may be used concurrently from different threads. The
 * `newctx` functions and the RNG table must be thread-safe.
 */
#ifndef ACCELCRYPT_BACKEND_H_
#define ACCELCRYPT_BACKEND_H_

/* The ABI header keeps its hand-aligned layout (constants and their
 * comments in columns); clang-format leaves it alone. */
/* clang-format off */

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ABI version. Bumped only on an incompatible change; additions are signalled
 * by larger `struct_size` values instead. */
#define ACCELCRYPT_ABI_VERSION 1u

/* The exported entry point's name, for dlsym(). */
#define ACCELCRYPT_BACKEND_ENTRY_SYMBOL "accelcrypt_backend_entry"

#if defined(__GNUC__)
#define ACCELCRYPT_BACKEND_EXPORT __attribute__((visibility("default")))
#else
#define ACCELCRYPT_BACKEND_EXPORT
#endif

/* ---------------------------------------------------------------------------
 * Status codes. The router's fallback depends on the class of the code:
 * caller errors never fall back, device errors do.
 * ------------------------------------------------------------------------- */
typedef int32_t accelcrypt_status;

#define ACCELCRYPT_OK 0
/* Caller errors: no fallback. */
#define ACCELCRYPT_ERR_INVALID_ARGUMENT 1   /* bad key size, NULL, bad padding */
#define ACCELCRYPT_ERR_FAILED_PRECONDITION 2 /* call out of order */
#define ACCELCRYPT_ERR_OUT_OF_RANGE 3       /* output buffer too small */
#define ACCELCRYPT_ERR_AUTH_FAILED 4        /* AEAD tag mismatch */
/* Not offered here: the router tries the next backend. */
#define ACCELCRYPT_ERR_UNIMPLEMENTED 5
/* Device errors: the router falls back and counts toward the breaker. */
#define ACCELCRYPT_ERR_UNAVAILABLE 6        /* device/token error, busy, gone */
#define ACCELCRYPT_ERR_RESOURCE_EXHAUSTED 7 /* out of sessions, queue full */
/* Broken invariant inside the backend: reported, no retry. */
#define ACCELCRYPT_ERR_INTERNAL 8

/* Size of the message buffer in accelcrypt_error. */
#define ACCELCRYPT_ERROR_MESSAGE_SIZE 256

/* accelcrypt_error carries a failed call's message. Owned by the caller; a
 * backend writes at most ACCELCRYPT_ERROR_MESSAGE_SIZE bytes including the
 * terminating NUL, and writes nothing on success. */
typedef struct accelcrypt_error {
  accelcrypt_status code;
  char message[ACCELCRYPT_ERROR_MESSAGE_SIZE];
} accelcrypt_error;

/* ---------------------------------------------------------------------------
 * Algorithm ids. One flat namespace across families; values never change.
 * High byte = family, low bytes = algorithm. The core's identity table maps
 * each id to its OpenSSL names, PKCS#11 mechanism and sizes.
 * ------------------------------------------------------------------------- */
typedef uint32_t accelcrypt_alg;

#define ACCELCRYPT_FAMILY_CIPHER 1u
#define ACCELCRYPT_FAMILY_DIGEST 2u
#define ACCELCRYPT_FAMILY_RNG 3u
#define ACCELCRYPT_FAMILY_RSA 4u /* accelcrypt_pkey_table */
#define ACCELCRYPT_FAMILY_DSA 5u /* accelcrypt_pkey_table */

#define ACCELCRYPT_ALG_FAMILY(alg) ((uint32_t)(alg) >> 24)

/* Cipher ids: family 1, then (mode << 8) | key bytes. */
#define ACCELCRYPT_MODE_ECB 1u
#define ACCELCRYPT_MODE_CBC 2u
#define ACCELCRYPT_MODE_CFB128 3u
#define ACCELCRYPT_MODE_OFB 4u
#define ACCELCRYPT_MODE_CTR 5u
#define ACCELCRYPT_MODE_GCM 6u
#define ACCELCRYPT_CIPHER_ALG(mode, key_bytes) \
  ((ACCELCRYPT_FAMILY_CIPHER << 24) | ((uint32_t)(mode) << 8) | (key_bytes))
#define ACCELCRYPT_CIPHER_MODE(alg) (((uint32_t)(alg) >> 8) & 0xffu)
#define ACCELCRYPT_CIPHER_KEY_BYTES(alg) ((uint32_t)(alg) & 0xffu)

#define ACCELCRYPT_ALG_AES_128_ECB ACCELCRYPT_CIPHER_ALG(ACCELCRYPT_MODE_ECB, 16)
#define ACCELCRYPT_ALG_AES_192_ECB ACCELCRYPT_CIPHER_ALG(ACCELCRYPT_MODE_ECB, 24)
#define ACCELCRYPT_ALG_AES_256_ECB ACCELCRYPT_CIPHER_ALG(ACCELCRYPT_MODE_ECB, 32)
#define ACCELCRYPT_ALG_AES_128_CBC ACCELCRYPT_CIPHER_ALG(ACCELCRYPT_MODE_CBC, 16)
#define ACCELCRYPT_ALG_AES_192_CBC ACCELCRYPT_CIPHER_ALG(ACCELCRYPT_MODE_CBC, 24)
#define ACCELCRYPT_ALG_AES_256_CBC ACCELCRYPT_CIPHER_ALG(ACCELCRYPT_MODE_CBC, 32)
#define ACCELCRYPT_ALG_AES_128_CFB128 ACCELCRYPT_CIPHER_ALG(ACCELCRYPT_MODE_CFB128, 16)
#define ACCELCRYPT_ALG_AES_192_CFB128 ACCELCRYPT_CIPHER_ALG(ACCELCRYPT_MODE_CFB128, 24)
#define ACCELCRYPT_ALG_AES_256_CFB128 ACCELCRYPT_CIPHER_ALG(ACCELCRYPT_MODE_CFB128, 32)
#define ACCELCRYPT_ALG_AES_128_OFB ACCELCRYPT_CIPHER_ALG(ACCELCRYPT_MODE_OFB, 16)
#define ACCELCRYPT_ALG_AES_192_OFB ACCELCRYPT_CIPHER_ALG(ACCELCRYPT_MODE_OFB, 24)
#define ACCELCRYPT_ALG_AES_256_OFB ACCELCRYPT_CIPHER_ALG(ACCELCRYPT_MODE_OFB, 32)
#define ACCELCRYPT_ALG_AES_128_CTR ACCELCRYPT_CIPHER_ALG(ACCELCRYPT_MODE_CTR, 16)
#define ACCELCRYPT_ALG_AES_192_CTR ACCELCRYPT_CIPHER_ALG(ACCELCRYPT_MODE_CTR, 24)
#define ACCELCRYPT_ALG_AES_256_CTR ACCELCRYPT_CIPHER_ALG(ACCELCRYPT_MODE_CTR, 32)
#define ACCELCRYPT_ALG_AES_128_GCM ACCELCRYPT_CIPHER_ALG(ACCELCRYPT_MODE_GCM, 16)
#define ACCELCRYPT_ALG_AES_192_GCM ACCELCRYPT_CIPHER_ALG(ACCELCRYPT_MODE_GCM, 24)
#define ACCELCRYPT_ALG_AES_256_GCM ACCELCRYPT_CIPHER_ALG(ACCELCRYPT_MODE_GCM, 32)

/* Digest ids: family 2. */
#define ACCELCRYPT_ALG_SHA1 ((ACCELCRYPT_FAMILY_DIGEST << 24) | 1u)
#define ACCELCRYPT_ALG_SHA224 ((ACCELCRYPT_FAMILY_DIGEST << 24) | 2u)
#define ACCELCRYPT_ALG_SHA256 ((ACCELCRYPT_FAMILY_DIGEST << 24) | 3u)
#define ACCELCRYPT_ALG_SHA384 ((ACCELCRYPT_FAMILY_DIGEST << 24) | 4u)
#define ACCELCRYPT_ALG_SHA512 ((ACCELCRYPT_FAMILY_DIGEST << 24) | 5u)

/* RSA ids: family 4. */
/* Signatures: sign/verify over a digest (PKCS#1 v1.5 with DigestInfo, PSS)
 * or over raw input (RSA_RAW). */
#define ACCELCRYPT_ALG_RSA_SIGN ((ACCELCRYPT_FAMILY_RSA << 24) | 1u)
/* Encryption: encrypt/decrypt with PKCS#1 v1.5, OAEP or raw. */
#define ACCELCRYPT_ALG_RSA_CRYPT ((ACCELCRYPT_FAMILY_RSA << 24) | 2u)
/* DSA ids: family 5. Sign/verify over a digest (FIPS 186-4). */
#define ACCELCRYPT_ALG_DSA_SIGN ((ACCELCRYPT_FAMILY_DSA << 24) | 1u)

/* RNG ids: family 3. */
/* Random bytes fit for direct use (a DRBG or a conditioned source). */
#define ACCELCRYPT_ALG_RNG_RANDOM ((ACCELCRYPT_FAMILY_RNG << 24) | 1u)
/* Raw entropy with a quality estimate, for seeding a DRBG. */
#define ACCELCRYPT_ALG_RNG_ENTROPY ((ACCELCRYPT_FAMILY_RNG << 24) | 2u)

/* ---------------------------------------------------------------------------
 * Capabilities: data, one entry per algorithm the backend can serve here and
 * now (after probing its hardware or token).
 * ------------------------------------------------------------------------- */

/* The backend runs on dedicated hardware (sets CKF_HW in the PKCS#11 module). */
#define ACCELCRYPT_CAP_HARDWARE (1u << 0)
/* Multi-part operation supported. Without it, the core buffers a whole
 * message and calls the backend once (bounded by max_chunk). */
#define ACCELCRYPT_CAP_STREAMING (1u << 1)
/* The cipher's running state can be read with get_state and restored with
 * set_state, so the router can move a stream to another backend mid-way. */
#define ACCELCRYPT_CAP_PORTABLE_STATE (1u << 2)

/* RSA/DSA: which paddings/operations an ACCELCRYPT_ALG_RSA_* entry covers. */
#define ACCELCRYPT_CAP_RSA_PKCS1 (1u << 8) /* PKCS#1 v1.5 (sign or encrypt) */
#define ACCELCRYPT_CAP_RSA_PSS (1u << 9)   /* RSASSA-PSS */
#define ACCELCRYPT_CAP_RSA_OAEP (1u << 10) /* RSAES-OAEP */
#define ACCELCRYPT_CAP_RSA_RAW (1u << 11)  /* RSASP1/RSADP, no padding */
/* The backend can use a key given as key material (imports it); without
 * this flag it serves only keys referenced by URI (token objects). */
#define ACCELCRYPT_CAP_KEY_IMPORT (1u << 12)
/* RSA/DSA: the operation leaves the CPU (a token, an HSM, a card behind a
 * driver), so it has a per-call cost the CPU does not. The router keeps
 * keys smaller than `offload_min_bits` away from such backends. (Added
 * after the first layout; a backend that does not set it is taken as
 * running on the CPU unless it sets ACCELCRYPT_CAP_HARDWARE.) */
#define ACCELCRYPT_CAP_OFFLOAD (1u << 13)
/* Cipher/digest: the algorithm runs as instructions on the CPU the caller
 * runs on (AES-NI, SHA-NI, libcrypto's code), so its update and final
 * calls have no device errors: they fail only for a caller error or a
 * broken invariant, never with ACCELCRYPT_ERR_UNAVAILABLE or
 * _RESOURCE_EXHAUSTED once init succeeded. The router then gives the
 * algorithm its copy-free update path: no copy of GCM AAD/data or of
 * digest input is kept to replay on another backend (a device error after
 * data went in is returned as it is). Without the flag (a device, a token,
 * anything that can fail mid-stream) the router keeps that copy, bounded
 * by `replay_max`, and falls back. (Added after the first layout: a
 * loader that does not know it ignores it; a backend that does not set it
 * keeps replay and fallback.) */
#define ACCELCRYPT_CAP_CPU (1u << 14)
/* The backend serves the algorithm with the code OpenSSL's own default
 * provider runs (the software backend calls libcrypto's implementations),
 * or with code no faster than it on this CPU: put between an application
 * and OpenSSL, it would only add the provider's crossing. The provider then
 * leaves the algorithm to OpenSSL's default provider, unless a backend
 * without the flag is routed first or `interpose = all` is configured
 * (Router::Interposes). Routing is not affected: such a backend stays the
 * reference, the fallback behind a device that fails and the engine of the
 * PKCS#11 module. (Added after the first layout, ABI version 1 unchanged:
 * a loader that does not know it ignores it; a backend that does not set
 * it is taken as a win, so older modules are offered as before.) */
#define ACCELCRYPT_CAP_PASS_THROUGH (1u << 15)

typedef struct accelcrypt_capability {
  accelcrypt_alg alg;
  uint32_t flags;      /* ACCELCRYPT_CAP_* */
  uint32_t alignment;  /* buffer alignment the backend needs; 1 = any. The
                          core never relies on it: a backend must accept any
                          alignment and bounce internally. It is advisory for
                          callers who can choose their buffers. */
  uint32_t min_key_bits; /* RSA/DSA: smallest modulus (p for DSA) in bits;
                            0 for other families */
  uint64_t max_chunk;  /* largest single update in bytes; 0 = unlimited. The
                          core splits larger updates. */
  uint32_t max_key_bits; /* RSA/DSA: largest modulus in bits; 0 otherwise */
  uint32_t reserved;     /* 0 */
} accelcrypt_capability;

/* ---------------------------------------------------------------------------
 * Host services offered by the core to a backend at init. Owned by the core;
 * valid until the backend's teardown returns.
 * ------------------------------------------------------------------------- */
typedef struct accelcrypt_host {
  uint32_t struct_size;
  void *host_ctx;
  /* config_get returns the value of `key` in the backend's own config section
   * (`[backend_<name>]`, or `<name>.<key>`), else from the global
   * section unless `key` is one of the core's own settings (`disable`,
   * `backends`, `policy`, ...), else NULL. The string stays valid until
   * teardown. Thread-safe. */
  const char *(*config_get)(void *host_ctx, const char *key);
  /* log writes a diagnostic line when logging is configured; a no-op
   * otherwise. level: 0 error, 1 warning, 2 info, 3 debug. Never pass
   * secrets. Thread-safe. */
  void (*log)(void *host_ctx, int level, const char *message);
  /* Added after the first layout (read it only when struct_size covers
   * it): the resolved path of the shared object or program the core runs
   * in (the provider, the PKCS#11 module, a tool), or NULL when unknown. A
   * backend that loads other code (the PKCS#11 client backend) checks it
   * so that it never loads the object hosting it. */
  const char *host_object;
} accelcrypt_host;

/* ---------------------------------------------------------------------------
 * Cipher family (ACCELCRYPT_FAMILY_CIPHER).
 *
 * Contexts run raw modes: ECB and CBC take whole 16-byte blocks only (the core
 * buffers partial blocks and does PKCS#7 padding); CFB128, OFB and CTR take any
 * length and keep their own position within the current block; GCM takes any
 * length of AAD (before any data) and data, then final computes or checks the
 * tag.
 *
 * Atomicity: a call that fails leaves the context as it was before the call,
 * and any output it wrote is garbage the caller must not use. That makes the
 * state readable with get_state after a device error, for fallback.
 * ------------------------------------------------------------------------- */
typedef struct accelcrypt_cipher_ctx accelcrypt_cipher_ctx;

/* Portable running state of a non-AEAD cipher: the chaining value (CBC: last
 * ciphertext block, CFB: feedback register, OFB: last keystream block, CTR:
 * next counter block) and the byte position within the current block
 * (CFB/OFB/CTR, 0..15; always 0 for ECB/CBC). */
typedef struct accelcrypt_cipher_state {
  uint8_t iv[16];
  uint32_t num;
} accelcrypt_cipher_state;

/* accelcrypt_cipher_direct_fn is a raw per-call cipher transform, shaped
 * like OpenSSL's OSSL_FUNC_cipher_cipher so that a backend built over
 * libcrypto can hand out its provider function unchanged. It transforms
 * in_len bytes of `in` into `out` (0 < in_len <= out_size; `in` == `out` or
 * no overlap; ECB/CBC whole blocks), sets *out_len = in_len and returns 1.
 * It returns 0 only for input outside that contract; the caller then
 * reports the failure as its own error (no retry, no fallback), so a
 * backend hands out a direct transform only for work that cannot fail
 * with a device error (plain CPU code, not a device or a token). It must
 * not call into a library context that could route back into accelcrypt
 * (the core's re-entry guard is not around it), must not block and must
 * not allocate. */
typedef int (*accelcrypt_cipher_direct_fn)(void *direct_ctx, unsigned char *out,
                                           size_t *out_len, size_t out_size,
                                           const unsigned char *in,
                                           size_t in_len);

typedef struct accelcrypt_cipher_table {
  uint32_t struct_size;
  /* newctx allocates a context for `alg`, which must be in the capability
   * list. The caller owns *out and frees it with freectx. */
  accelcrypt_status (*newctx)(void *backend, accelcrypt_alg alg,
                              accelcrypt_cipher_ctx **out,
                              accelcrypt_error *err);
  /* init sets key, direction (encrypt != 0) and IV. key_len must match the
   * algorithm; iv_len must be 16 for CBC/CFB128/OFB/CTR, 0 for ECB and 1..
   * 1024 bytes for GCM (12 is the fast path). The backend copies both; the
   * caller may wipe them on return. Re-init resets all running state. */
  accelcrypt_status (*init)(accelcrypt_cipher_ctx *ctx, int encrypt,
                            const uint8_t *key, size_t key_len,
                            const uint8_t *iv, size_t iv_len,
                            accelcrypt_error *err);
  /* update transforms in_len bytes from `in` into `out`, which has room for
   * in_len bytes. `in` and `out` may be equal (in place) but must not
   * otherwise overlap. ECB/CBC: in_len is a multiple of 16. */
  accelcrypt_status (*update)(accelcrypt_cipher_ctx *ctx, const uint8_t *in,
                              size_t in_len, uint8_t *out,
                              accelcrypt_error *err);
  /* aad feeds additional authenticated data (GCM only, before update). NULL
   * for backends without GCM. */
  accelcrypt_status (*aad)(accelcrypt_cipher_ctx *ctx, const uint8_t *aad,
                           size_t aad_len, accelcrypt_error *err);
  /* final ends a GCM operation: when encrypting it computes the tag (read it
   * with get_tag); when decrypting it checks the tag given with set_tag and
   * returns ACCELCRYPT_ERR_AUTH_FAILED on mismatch. Non-AEAD modes: no-op. */
  accelcrypt_status (*final)(accelcrypt_cipher_ctx *ctx, accelcrypt_error *err);
  /* get_tag copies the first tag_len (4..16) bytes of the computed tag. */
  accelcrypt_status (*get_tag)(accelcrypt_cipher_ctx *ctx, uint8_t *tag,
                               size_t tag_len, accelcrypt_error *err);
  /* set_tag gives the expected tag (4..16 bytes) before final when
   * decrypting. */
  accelcrypt_status (*set_tag)(accelcrypt_cipher_ctx *ctx, const uint8_t *tag,
                               size_t tag_len, accelcrypt_error *err);
  /* get_state/set_state read and restore the portable running state (only
   * for algorithms declared ACCELCRYPT_CAP_PORTABLE_STATE). set_state is
   * called after init with the same key and direction. */
  accelcrypt_status (*get_state)(const accelcrypt_cipher_ctx *ctx,
                                 accelcrypt_cipher_state *out,
                                 accelcrypt_error *err);
  accelcrypt_status (*set_state)(accelcrypt_cipher_ctx *ctx,
                                 const accelcrypt_cipher_state *state,
                                 accelcrypt_error *err);
  /* dupctx deep-copies a context with its key and running state. */
  accelcrypt_status (*dupctx)(const accelcrypt_cipher_ctx *ctx,
                              accelcrypt_cipher_ctx **out,
                              accelcrypt_error *err);
  /* freectx wipes key material and frees. NULL is a no-op. */
  void (*freectx)(accelcrypt_cipher_ctx *ctx);
  /* get_direct (optional; absent when struct_size does not reach it, or
   * NULL) hands out the context's raw per-call transform for the hot path
   * of a front end: *fn and *direct_ctx such that
   *   fn(direct_ctx, out, &out_len, out_size, in, in_len)
   * does what update(ctx, in, in_len, out) does, for the same running
   * state. See accelcrypt_cipher_direct_fn for its contract. Returns
   * ACCELCRYPT_ERR_UNIMPLEMENTED when the context has no such path now (GCM,
   * not initialised); the caller then keeps using update. The pair stays
   * valid until the next call on `ctx` other than update or fn itself
   * (init, final, set_state, freectx end it). Not for ECB/CBC partial
   * blocks: the caller passes whole blocks only. */
  accelcrypt_status (*get_direct)(accelcrypt_cipher_ctx *ctx,
                                  accelcrypt_cipher_direct_fn *fn,
                                  void **direct_ctx, accelcrypt_error *err);
} accelcrypt_cipher_table;

/* ---------------------------------------------------------------------------
 * Digest family (ACCELCRYPT_FAMILY_DIGEST).
 * ------------------------------------------------------------------------- */
typedef struct accelcrypt_digest_ctx accelcrypt_digest_ctx;

/* accelcrypt_digest_direct is a digest's plain-CPU implementation over
 * state the caller owns, for the per-message path of a front end (one
 * indirect call per init, update and final; no context object). The state
 * is `state_size` bytes of memory aligned to 16 that the caller provides;
 * it is plain data: the caller duplicates a hash in progress by copying the
 * bytes and wipes them when done. The functions cannot fail (the caller
 * passes data != NULL whenever len > 0), must not allocate, block, or call
 * into a library context that could route back into accelcrypt (the core's
 * re-entry guard is not around them). So, as for
 * accelcrypt_cipher_direct_fn, a backend offers one only for work that has
 * no device errors: plain CPU code, not a device or a token. */
typedef struct accelcrypt_digest_direct {
  uint32_t struct_size;
  uint32_t state_size;
  /* init starts a hash in `state`. */
  void (*init)(void *state);
  /* update hashes len bytes of data (len may be 0). */
  void (*update)(void *state, const uint8_t *data, size_t len);
  /* final writes the digest (the algorithm's digest size) to `out`; the
   * state then needs init before reuse. */
  void (*final)(void *state, uint8_t *out);
} accelcrypt_digest_direct;

typedef struct accelcrypt_digest_table {
  uint32_t struct_size;
  /* newctx allocates a context for `alg`, already initialised. */
  accelcrypt_status (*newctx)(void *backend, accelcrypt_alg alg,
                              accelcrypt_digest_ctx **out,
                              accelcrypt_error *err);
  /* init restarts the hash. */
  accelcrypt_status (*init)(accelcrypt_digest_ctx *ctx, accelcrypt_error *err);
  accelcrypt_status (*update)(accelcrypt_digest_ctx *ctx, const uint8_t *data,
                              size_t len, accelcrypt_error *err);
  /* final writes the digest (out_len must be at least the digest size) and
   * leaves the context needing init before reuse. */
  accelcrypt_status (*final)(accelcrypt_digest_ctx *ctx, uint8_t *out,
                             size_t out_len, accelcrypt_error *err);
  /* oneshot hashes a whole message (may be NULL: the core then uses
   * init/update/final). */
  accelcrypt_status (*oneshot)(void *backend, accelcrypt_alg alg,
                               const uint8_t *data, size_t len, uint8_t *out,
                               size_t out_len, accelcrypt_error *err);
  accelcrypt_status (*dupctx)(const accelcrypt_digest_ctx *ctx,
                              accelcrypt_digest_ctx **out,
                              accelcrypt_error *err);
  void (*freectx)(accelcrypt_digest_ctx *ctx);
  /* get_direct (optional; absent when struct_size does not reach it, or
   * NULL) returns the plain-CPU implementation of `alg` over caller-owned
   * state (accelcrypt_digest_direct), or NULL when `alg` has none. The
   * table it returns stays valid while the backend instance lives. */
  const accelcrypt_digest_direct *(*get_direct)(void *backend,
                                                accelcrypt_alg alg);
} accelcrypt_digest_table;

/* ---------------------------------------------------------------------------
 * RNG family (ACCELCRYPT_FAMILY_RNG). Stateless from the caller's view.
 * ------------------------------------------------------------------------- */
typedef struct accelcrypt_rng_table {
  uint32_t struct_size;
  /* random_bytes fills out[0..len) with output fit for direct use
   * (ACCELCRYPT_ALG_RNG_RANDOM). May be NULL. */
  accelcrypt_status (*random_bytes)(void *backend, uint8_t *out, size_t len,
                                    accelcrypt_error *err);
  /* entropy fills out[0..len) with bytes from a noise source that passed the
   * backend's continuous health tests (ACCELCRYPT_ALG_RNG_ENTROPY), and sets
   * *entropy_bits to the min-entropy the backend vouches for (at most 8*len).
   * A source that failed its health tests returns ACCELCRYPT_ERR_UNAVAILABLE
   * and stays out of service. May be NULL. */
  accelcrypt_status (*entropy)(void *backend, uint8_t *out, size_t len,
                               size_t *entropy_bits, accelcrypt_error *err);
} accelcrypt_rng_table;

/* ---------------------------------------------------------------------------
 * Public-key families (ACCELCRYPT_FAMILY_RSA and ACCELCRYPT_FAMILY_DSA share
 * one table shape; DSA leaves encrypt/decrypt NULL).
 *
 * A key travels as an accelcrypt_key_desc: key material (as OpenSSL holds
 * it: big-endian integers) and/or a reference to an object that lives on a
 * token (an RFC 7512 `pkcs11:` URI). load_key turns it into the backend's
 * prepared key (e.g. a token object handle, imported once and cached by the
 * backend); the core keeps that pkey for as long as its own key lives.
 * ------------------------------------------------------------------------- */

/* A big-endian unsigned integer; len 0 = absent. Owned by the caller. */
typedef struct accelcrypt_bn {
  const uint8_t *data;
  size_t len;
} accelcrypt_bn;

/* Public parts of a key, as accelcrypt_key_public_sink reports them. */
#define ACCELCRYPT_KEY_PART_RSA_N 1u
#define ACCELCRYPT_KEY_PART_RSA_E 2u
#define ACCELCRYPT_KEY_PART_DSA_P 3u
#define ACCELCRYPT_KEY_PART_DSA_Q 4u
#define ACCELCRYPT_KEY_PART_DSA_G 5u
#define ACCELCRYPT_KEY_PART_DSA_Y 6u

/* accelcrypt_key_public_sink receives the public parts of a key that lives
 * on a token (see accelcrypt_key_desc.public_out). Owned by the core. */
typedef struct accelcrypt_key_public_sink {
  uint32_t struct_size;
  void *arg;
  /* put stores one part (ACCELCRYPT_KEY_PART_*), a big-endian integer; the
   * core copies it before put returns. Called from within load_key only. */
  void (*put)(void *arg, uint32_t part, const uint8_t *data, size_t len);
} accelcrypt_key_public_sink;

typedef struct accelcrypt_key_desc {
  uint32_t struct_size;
  accelcrypt_alg alg; /* ACCELCRYPT_ALG_RSA_SIGN/CRYPT or DSA_SIGN */
  /* RSA: modulus, exponents and CRT values (private parts absent for a
   * public key). */
  accelcrypt_bn n, e, d, p, q, dmp1, dmq1, iqmp;
  /* DSA: domain parameters and keys (x absent for a public key). */
  accelcrypt_bn dsa_p, dsa_q, dsa_g, dsa_y, dsa_x;
  /* RFC 7512 URI of a token object holding the (private) key, or NULL. */
  const char *uri;
  /* Added after the first layout (read it only when struct_size covers
   * it). public_out, when not NULL with `uri` set: a backend that finds the
   * object the URI names reports the key's public parts through it before
   * load_key returns (RSA n and e; DSA p, q, g and, when readable, y), read
   * from the token: the public attributes of the private key object or of
   * the public key object with the same CKA_ID or label. It reports them
   * whatever the key's type, also when it then refuses the load (an RSA
   * load_key naming a DSA key returns UNIMPLEMENTED after reporting DSA
   * parts), so the core learns the type and size of a URI it has no other
   * description of. Backends not owning the URI report nothing. */
  const accelcrypt_key_public_sink *public_out;
} accelcrypt_key_desc;

typedef struct accelcrypt_pkey accelcrypt_pkey;

#define ACCELCRYPT_PAD_NONE 0u  /* raw RSA (RSASP1/RSAEP) */
#define ACCELCRYPT_PAD_PKCS1 1u /* PKCS#1 v1.5 */
#define ACCELCRYPT_PAD_PSS 2u   /* RSASSA-PSS */
#define ACCELCRYPT_PAD_OAEP 3u  /* RSAES-OAEP */

/* PSS salt length special values (as OpenSSL's RSA_PSS_SALTLEN_*). */
#define ACCELCRYPT_PSS_SALT_DIGEST (-1) /* salt = digest length */
#define ACCELCRYPT_PSS_SALT_MAX (-3)    /* largest that fits (sign) */
#define ACCELCRYPT_PSS_SALT_AUTO (-2)   /* recover from the signature (verify) */

typedef struct accelcrypt_pkey_params {
  uint32_t struct_size;
  uint32_t padding;       /* ACCELCRYPT_PAD_* */
  accelcrypt_alg md;      /* digest the input was made with (PKCS#1
                             DigestInfo, PSS, OAEP hash); 0 = none: the
                             input is signed as it is */
  accelcrypt_alg mgf1_md; /* PSS/OAEP MGF1 digest; 0 = same as md */
  int32_t salt_len;       /* PSS: bytes, or ACCELCRYPT_PSS_SALT_* */
  const uint8_t *label;   /* OAEP label, may be NULL */
  size_t label_len;
} accelcrypt_pkey_params;

/* Threading: one accelcrypt_pkey may be used by several threads at once
 * (the core shares a prepared key between them); every function of this
 * table must be thread-safe on the same key. DSA signatures cross this ABI
 * DER-encoded (Dss-Sig-Value, as OpenSSL makes them); a backend whose device
 * works on r||s converts. */
typedef struct accelcrypt_pkey_table {
  uint32_t struct_size;
  /* load_key prepares `key` for this backend. UNIMPLEMENTED when the backend
   * cannot use this key (size, a URI it does not own, key material without
   * ACCELCRYPT_CAP_KEY_IMPORT). The caller owns *out; free with free_key. */
  accelcrypt_status (*load_key)(void *backend, const accelcrypt_key_desc *key,
                                accelcrypt_pkey **out, accelcrypt_error *err);
  void (*free_key)(accelcrypt_pkey *key);
  /* sign writes the signature of tbs (a digest of params->md, or the raw
   * input when md is 0) into sig. *sig_len holds the room on entry and the
   * length on return; with sig NULL or too little room it returns
   * ACCELCRYPT_ERR_OUT_OF_RANGE and sets *sig_len to the size needed (the
   * PKCS#11 two-call convention). */
  accelcrypt_status (*sign)(accelcrypt_pkey *key,
                            const accelcrypt_pkey_params *params,
                            const uint8_t *tbs, size_t tbs_len, uint8_t *sig,
                            size_t *sig_len, accelcrypt_error *err);
  /* verify returns OK for a valid signature and ACCELCRYPT_ERR_AUTH_FAILED
   * for an invalid one. */
  accelcrypt_status (*verify)(accelcrypt_pkey *key,
                              const accelcrypt_pkey_params *params,
                              const uint8_t *tbs, size_t tbs_len,
                              const uint8_t *sig, size_t sig_len,
                              accelcrypt_error *err);
  /* encrypt/decrypt (RSA only; NULL for DSA). Output sizing as sign. A bad
   * padding on decrypt is ACCELCRYPT_ERR_INVALID_ARGUMENT, reported in
   * constant time where the padding allows (PKCS#1 v1.5: implicit
   * rejection is not required of backends). */
  accelcrypt_status (*encrypt)(accelcrypt_pkey *key,
                               const accelcrypt_pkey_params *params,
                               const uint8_t *in, size_t in_len, uint8_t *out,
                               size_t *out_len, accelcrypt_error *err);
  accelcrypt_status (*decrypt)(accelcrypt_pkey *key,
                               const accelcrypt_pkey_params *params,
                               const uint8_t *in, size_t in_len, uint8_t *out,
                               size_t *out_len, accelcrypt_error *err);
} accelcrypt_pkey_table;

/* ---------------------------------------------------------------------------
 * The backend descriptor.
 * ------------------------------------------------------------------------- */
typedef struct accelcrypt_backend_desc {
  uint32_t abi_version; /* ACCELCRYPT_ABI_VERSION the backend was built for */
  uint32_t struct_size; /* sizeof(accelcrypt_backend_desc) at build time */
  const char *name;     /* short, stable: "software", "padlock", "x86" */
  const char *version;  /* backend version string, e.g. "0.1.0" */
  /* init probes hardware/token and creates the backend instance. Returns
   * ACCELCRYPT_ERR_UNAVAILABLE (with a message) when the device is absent:
   * the loader then skips the backend cleanly. */
  accelcrypt_status (*init)(const accelcrypt_host *host, void **backend_out,
                            accelcrypt_error *err);
  /* teardown frees the instance; called once, after every context is freed. */
  void (*teardown)(void *backend);
  /* get_capabilities returns an array owned by the backend, valid until
   * teardown. */
  accelcrypt_status (*get_capabilities)(void *backend,
                                        const accelcrypt_capability **out,
                                        size_t *num_out, accelcrypt_error *err);
  /* query_family returns the function table for an ACCELCRYPT_FAMILY_* id, or
   * NULL when the backend has none. The table lives as long as the backend.
   */
  const void *(*query_family)(void *backend, uint32_t family);
  /* describe writes a one-line description (device model, CPU features seen)
   * into out (NUL-terminated, truncated to out_len). May be NULL. */
  void (*describe)(void *backend, char *out, size_t out_len);
  /* capability_size is sizeof(accelcrypt_capability) as the backend was
   * built, the stride of the array get_capabilities returns; 0 means the
   * size in this header. (Descriptors too short to hold this field come
   * from the first layout, whose capability entries were 24 bytes.) */
  uint32_t capability_size;
} accelcrypt_backend_desc;

/* Size of an accelcrypt_capability in the first ABI layout (no key-size
 * fields), for loaders reading old backends. */
#define ACCELCRYPT_CAPABILITY_SIZE_V1 24u

/* ---------------------------------------------------------------------------
 * Load hints: an ELF note a backend module may carry so that the loader can
 * tell, by reading the file and without loading it, that the backend would
 * decline here. Loading a module costs every process that loads the provider
 * (mapping, relocation, the module's static constructors) even when the
 * backend then declines, so a backend whose decline depends only on the
 * configuration says so here. Note name "accelcrypt", type
 * ACCELCRYPT_NOTE_LOAD_HINTS; its descriptor is a series of NUL-terminated
 * "key=value" strings:
 *   name=NAME          the name the backend gives itself (its descriptor's
 *                      `name`), which scopes the keys below;
 *   needs-config=KEY   the backend declines unless its configuration has KEY
 *                      (NAME.KEY, or KEY in the global section, as the
 *                      host's config_get answers it). Without it the loader
 *                      does not load the module and records the backend as
 *                      declined, with the key to set.
 *   defer=FAMILIES     (with name=) the backend is not initialised at load
 *                      but at the first routed operation of one of
 *                      FAMILIES (comma list of cipher, digest, rsa, dsa),
 *                      outside whatever the application or OpenSSL holds
 *                      while it loads the provider or an ENGINE: for a
 *                      backend whose device library may itself use OpenSSL
 *                      (a PKCS#11 token module). An init that then fails
 *                      with ACCELCRYPT_ERR_UNAVAILABLE is an error for the
 *                      operator (logged once per process, counted) and is
 *                      tried again at most every `backend_retry_s`
 *                      seconds; ACCELCRYPT_ERR_RESOURCE_EXHAUSTED means
 *                      busy (not an error): tried again soon.
 *   needs-cpu-vendor=V1|V2...
 *                      the backend declines unless CPUID leaf 0 names one of
 *                      these 12-character vendors (e.g. CentaurHauls). A
 *                      loader that cannot execute CPUID ignores the key.
 *                      (Added after the first layout.)
 *   load-if-env=VAR=VALUE
 *                      the needs-* keys do not apply when the environment has
 *                      VAR set to VALUE (a test harness emulating the
 *                      device). (Added after the first layout.)
 * A loader ignores keys it does not know; a module without the note, or
 * without `name`, is always loaded. Write it with
 *   ACCELCRYPT_BACKEND_LOAD_HINTS(ACCELCRYPT_LOAD_HINT("name=mybackend")
 *                                 ACCELCRYPT_LOAD_HINT("needs-config=device"))
 * at file scope in one source file of the module (GCC or Clang, ELF). The
 * strings must not contain '"' or '\\'.
 * ------------------------------------------------------------------------- */
#define ACCELCRYPT_NOTE_LOAD_HINTS 1u
#define ACCELCRYPT_NOTE_NAME "accelcrypt"
#if defined(__GNUC__) && defined(__ELF__)
#define ACCELCRYPT_LOAD_HINT(key_value) ".asciz \"" key_value "\"\n"
#define ACCELCRYPT_BACKEND_LOAD_HINTS(hints)                          \
  __asm__(".pushsection .note.accelcrypt,\"a\",%note\n"               \
          ".balign 4\n"                                                \
          ".long 11\n"         /* namesz: "accelcrypt" and its NUL */  \
          ".long 2f - 1f\n"    /* descsz */                            \
          ".long 1\n"          /* ACCELCRYPT_NOTE_LOAD_HINTS */        \
          ".asciz \"accelcrypt\"\n"                                    \
          ".balign 4\n"                                                \
          "1:\n" hints "2:\n"                                          \
          ".balign 4\n"                                                \
          ".popsection\n")
#else
#define ACCELCRYPT_LOAD_HINT(key_value)
#define ACCELCRYPT_BACKEND_LOAD_HINTS(hints)
#endif

/* The entry point every backend module exports. host_abi_version is the
 * loader's ACCELCRYPT_ABI_VERSION; a backend returns NULL if it cannot serve
 * that version. The descriptor is static and never freed. */
typedef const accelcrypt_backend_desc *(*accelcrypt_backend_entry_fn)(
    uint32_t host_abi_version);

#ifdef __cplusplus
}
#endif

/* clang-format on */

#endif /* ACCELCRYPT_BACKEND_H_ */
