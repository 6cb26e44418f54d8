// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_PROVIDER_INTERNAL_CIPHER_CTX_H_
#define ACCELCRYPT_PROVIDER_INTERNAL_CIPHER_CTX_H_

#include <openssl/core.h>
#include <openssl/crypto.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "absl/status/status.h"
#include "core/algorithms.h"
#include "core/cipher_stream.h"
#include "provider/provider_ctx.h"
#include "provider/tls_cbc.h"

namespace accelcrypt::provider::internal {

inline constexpr size_t kMaxKeyLen = 32;
// OpenSSL's GCM_IV_MAX_SIZE: the longest GCM IV the default provider takes.
inline constexpr size_t kMaxGcmIvLen = 128;
inline constexpr size_t kGcmTagLen = 16;
inline constexpr size_t kGcmMinGeneratedIvLen = 12;
inline constexpr size_t kTagUnset = static_cast<size_t>(-1);
// TLS 1.2 GCM record layout (RFC 5288): 13-byte AAD, 4-byte fixed IV part
// from the key block, 8-byte explicit IV at the start of each record.
inline constexpr size_t kTlsAadLen = 13;
inline constexpr size_t kTlsFixedIvLen = 4;
inline constexpr size_t kTlsExplicitIvLen = 8;

// GCM IV life cycle, as in OpenSSL's PROV_GCM_CTX: an IV given at init is
// buffered and handed to the cipher at the first update; after final it is
// spent and a new one must be given.
enum class IvState { kUninitialised, kBuffered, kCopied, kFinished };

// CipherCtx is one EVP cipher context on the provider side: the routed
// cipher behind a CipherStream, plus what OpenSSL's semantics need kept
// here (original IV, GCM IV state and tag, TLS record state). Owned by
// OpenSSL through newctx/freectx; used by one thread at a time. Keys, IVs
// and tags are wiped on destruction.
struct CipherCtx {
  CipherCtx(ProvCtx* p, const AlgorithmInfo* i)
      : prov(p),
        info(i),
        is_gcm(i->mode == CipherMode::kGcm),
        is_stream_mode(IsStreamMode(i->mode)),
        block_mask(is_stream_mode ? 0 : 15) {
    ivlen = i->iv_len;
  }
  ~CipherCtx() {
    OPENSSL_cleanse(key, sizeof(key));
    OPENSSL_cleanse(iv, sizeof(iv));
    OPENSSL_cleanse(tag, sizeof(tag));
    OPENSSL_cleanse(tls_aad, sizeof(tls_aad));
    OPENSSL_cleanse(tls_mac, sizeof(tls_mac));
  }
  bool gcm() const { return is_gcm; }

  ProvCtx* prov;
  const AlgorithmInfo* info;
  // Cached from `info` for the update path.
  const bool is_gcm;
  const bool is_stream_mode;
  // block_mask: 15 for ECB/CBC (updates on the fast path are whole
  // blocks), 0 for the stream modes.
  const size_t block_mask;
  std::unique_ptr<CipherStream> stream;
  // stream_ready: stream->Init ran with the current key (and IV).
  bool stream_ready = false;
  // cipher: the stream's routed cipher (owned by `stream`), for the update
  // fast path.
  Cipher* cipher = nullptr;
  // fast_update: updates may go straight to `cipher` (see RefreshFastPath).
  bool fast_update = false;
  // direct: `cipher`'s raw transform (Cipher::Direct), taken after the
  // first fast-path update that went through `cipher`, so set only while
  // fast_update holds; direct_checked: it was asked for since the last
  // state change. Both reset by RefreshFastPath, which every state change
  // calls.
  DirectUpdate direct;
  bool direct_checked = false;
  // block_aligned: ECB/CBC updates since init were whole blocks taken by the
  // fast path, so the stream holds no partial or held-back block.
  bool block_aligned = false;
  bool enc = true;
  bool pad = true;
  bool key_set = false;
  bool iv_set = false;
  unsigned int num = 0;
  uint8_t key[kMaxKeyLen] = {};
  // Non-GCM: the IV as given at init (OpenSSL's oiv). GCM: the IV.
  uint8_t iv[kMaxGcmIvLen] = {};
  size_t ivlen = 0;
  // GCM only.
  IvState iv_state = IvState::kUninitialised;
  size_t taglen = kTagUnset;
  uint8_t tag[kGcmTagLen] = {};
  // Encryption final ran and `tag` is not fetched yet: the cipher holds it
  // until its next message starts (GcmActivate), and a tag request fetches
  // it (openssl speed and one-shot sealers that never ask skip the fetch).
  bool tag_pending = false;
  // GCM TLS 1.2 record mode (libssl): the record's AAD, set per record;
  // iv_gen once a fixed IV part was given; records sealed under this key.
  size_t tls_aad_len = kTagUnset;
  uint8_t tls_aad[kTlsAadLen] = {};
  bool iv_gen = false;
  uint64_t tls_enc_records = 0;
  // CBC in the TLS 1.0-1.2 record layer: libssl's protocol version (0 =
  // off), MAC size, and the MAC found in the last opened record.
  unsigned int tls_version = 0;
  size_t tls_mac_size = 0;
  uint8_t tls_mac[kTlsMaxMacSize] = {};
};

// BadParam is the status for a parameter of the wrong type or value.
absl::Status BadParam(std::string_view name, std::string_view what);
// NoKey is the status for an operation before a key was set.
absl::Status NoKey(const CipherCtx& ctx);
// TlsNotSupported refuses a TLS record-layer parameter clearly.
absl::Status TlsNotSupported(const CipherCtx& ctx, const char* param);
// EnsureStream creates the routed cipher on first use (the router may
// allocate and lock: never on the update path).
absl::Status EnsureStream(CipherCtx& ctx);
// SetOctets answers an octet string or octet pointer request.
absl::Status SetOctets(OSSL_PARAM* p, const void* data, size_t len);
// CheckKeyLen rejects a key length other than the algorithm's.
absl::Status CheckKeyLen(const CipherCtx& ctx, size_t keylen);
// RefreshFastPath recomputes ctx.fast_update after any state change: true
// when a non-GCM context is initialised, not finished, not in TLS record
// mode, and either a stream mode or an ECB/CBC context with nothing
// buffered that neither decrypts with padding (which holds a block back).
// It drops ctx.direct (a state change may end it; Cipher::Direct).
void RefreshFastPath(CipherCtx& ctx);

}  // namespace accelcrypt::provider::internal

#endif  // ACCELCRYPT_PROVIDER_INTERNAL_CIPHER_CTX_H_
