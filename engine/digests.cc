// SPDX-License-Identifier: Apache-2.0
// The engine's SHA digests (EVP_MD_meth_new over Router::NewDigest): what
// EVP_DigestInit_ex(EVP_sha256(), NULL) reaches once the engine is the
// default for digests. A context whose routed digest cannot be made (no
// backend, or a backend hashing on this thread through libcrypto) runs the
// low-level SHA functions of libcrypto instead: with an engine the default
// for a digest, libcrypto 3.0-3.5 sends every EVP digest of that type to
// the engine (fetched ones too, in every library context), so an EVP
// fallback would come straight back here.
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/sha.h>

#include <array>
#include <cstring>
#include <memory>
#include <mutex>

#include "absl/types/span.h"
#include "core/digest.h"
#include "core/router.h"
#include "engine/engine_state.h"

namespace accelcrypt::engine {
namespace {

struct DigestDef {
  int nid;
  int pkey_nid;
  accelcrypt_alg alg;
  int size;
  int block;
};

constexpr std::array<DigestDef, 5> kDigests = {{
    {NID_sha1, NID_sha1WithRSAEncryption, ACCELCRYPT_ALG_SHA1, 20, 64},
    {NID_sha224, NID_sha224WithRSAEncryption, ACCELCRYPT_ALG_SHA224, 28, 64},
    {NID_sha256, NID_sha256WithRSAEncryption, ACCELCRYPT_ALG_SHA256, 32, 64},
    {NID_sha384, NID_sha384WithRSAEncryption, ACCELCRYPT_ALG_SHA384, 48, 128},
    {NID_sha512, NID_sha512WithRSAEncryption, ACCELCRYPT_ALG_SHA512, 64, 128},
}};

const int kDigestNids[] = {NID_sha1,   NID_sha224, NID_sha256,
                           NID_sha384, NID_sha512, 0};

// DigestCtx lives in the EVP_MD_CTX's md_data (zeroed by libcrypto, copied
// byte-wise on EVP_MD_CTX_copy before our copy function runs).
struct DigestCtx {
  Digest* routed;
  bool fallback;  // `low` is in use
  union {
    SHA_CTX sha1;
    SHA256_CTX sha256;  // also SHA-224
    SHA512_CTX sha512;  // also SHA-384
  } low;
};

std::once_flag g_digests_once;
std::array<EVP_MD*, kDigests.size()> g_digests{};

const DigestDef* DefOf(const EVP_MD_CTX* ctx, size_t* index) {
  const int nid = EVP_MD_get_type(EVP_MD_CTX_get0_md(ctx));
  for (size_t i = 0; i < kDigests.size(); ++i) {
    if (kDigests[i].nid == nid) {
      *index = i;
      return &kDigests[i];
    }
  }
  return nullptr;
}

DigestCtx* CtxOf(EVP_MD_CTX* ctx) {
  return static_cast<DigestCtx*>(EVP_MD_CTX_get0_md_data(ctx));
}

void Reset(DigestCtx* c) {
  delete c->routed;
  c->routed = nullptr;
  c->fallback = false;
  OPENSSL_cleanse(&c->low, sizeof(c->low));
}

int LowInit(DigestCtx* c, int nid) {
  switch (nid) {
    case NID_sha1:
      return SHA1_Init(&c->low.sha1);
    case NID_sha224:
      return SHA224_Init(&c->low.sha256);
    case NID_sha256:
      return SHA256_Init(&c->low.sha256);
    case NID_sha384:
      return SHA384_Init(&c->low.sha512);
    case NID_sha512:
      return SHA512_Init(&c->low.sha512);
  }
  return 0;
}

int LowUpdate(DigestCtx* c, int nid, const void* data, size_t n) {
  switch (nid) {
    case NID_sha1:
      return SHA1_Update(&c->low.sha1, data, n);
    case NID_sha224:
      return SHA224_Update(&c->low.sha256, data, n);
    case NID_sha256:
      return SHA256_Update(&c->low.sha256, data, n);
    case NID_sha384:
      return SHA384_Update(&c->low.sha512, data, n);
    case NID_sha512:
      return SHA512_Update(&c->low.sha512, data, n);
  }
  return 0;
}

int LowFinal(DigestCtx* c, int nid, unsigned char* md) {
  switch (nid) {
    case NID_sha1:
      return SHA1_Final(md, &c->low.sha1);
    case NID_sha224:
      return SHA224_Final(md, &c->low.sha256);
    case NID_sha256:
      return SHA256_Final(md, &c->low.sha256);
    case NID_sha384:
      return SHA384_Final(md, &c->low.sha512);
    case NID_sha512:
      return SHA512_Final(md, &c->low.sha512);
  }
  return 0;
}

int NidOf(const EVP_MD_CTX* ctx) {
  return EVP_MD_get_type(EVP_MD_CTX_get0_md(ctx));
}

int Init(EVP_MD_CTX* ctx) {
  DigestCtx* c = CtxOf(ctx);
  size_t i = 0;
  const DigestDef* def = DefOf(ctx, &i);
  if (c == nullptr || def == nullptr) return 0;
  if (c->routed != nullptr) return c->routed->Init().ok() ? 1 : 0;
  Reset(c);
  Core* core = ActiveCore();
  if (core != nullptr && !InsideEngine()) {
    EngineCallGuard guard;
    absl::StatusOr<std::unique_ptr<Digest>> d =
        core->router().NewDigest(def->alg);
    if (d.ok()) {
      c->routed = d->release();
      return 1;
    }
  }
  c->fallback = true;
  return LowInit(c, def->nid);
}

int Update(EVP_MD_CTX* ctx, const void* data, size_t count) {
  DigestCtx* c = CtxOf(ctx);
  if (c->routed != nullptr) {
    EngineCallGuard guard;
    return c->routed
                   ->Update(absl::MakeConstSpan(
                       static_cast<const uint8_t*>(data), count))
                   .ok()
               ? 1
               : 0;
  }
  return c->fallback ? LowUpdate(c, NidOf(ctx), data, count) : 0;
}

int Final(EVP_MD_CTX* ctx, unsigned char* md) {
  DigestCtx* c = CtxOf(ctx);
  const int size = EVP_MD_get_size(EVP_MD_CTX_get0_md(ctx));
  if (c->routed != nullptr) {
    EngineCallGuard guard;
    return c->routed->Final(absl::MakeSpan(md, static_cast<size_t>(size))).ok()
               ? 1
               : 0;
  }
  return c->fallback ? LowFinal(c, NidOf(ctx), md) : 0;
}

int Copy(EVP_MD_CTX* to, const EVP_MD_CTX* from) {
  DigestCtx* t = CtxOf(to);
  const auto* f = static_cast<const DigestCtx*>(EVP_MD_CTX_get0_md_data(from));
  // `to` holds a byte copy of `from` (the low-level state is complete as
  // it is); only the routed digest needs its own object.
  t->routed = nullptr;
  if (f->routed != nullptr) {
    absl::StatusOr<std::unique_ptr<Digest>> d = f->routed->Clone();
    if (!d.ok()) return 0;
    t->routed = d->release();
  }
  return 1;
}

int Cleanup(EVP_MD_CTX* ctx) {
  DigestCtx* c = CtxOf(ctx);
  if (c != nullptr) Reset(c);
  return 1;
}

void BuildDigests() {
  for (size_t i = 0; i < kDigests.size(); ++i) {
    const DigestDef& d = kDigests[i];
    EVP_MD* md = EVP_MD_meth_new(d.nid, d.pkey_nid);
    if (md == nullptr) continue;
    if (EVP_MD_meth_set_result_size(md, d.size) != 1 ||
        EVP_MD_meth_set_input_blocksize(md, d.block) != 1 ||
        EVP_MD_meth_set_app_datasize(md, sizeof(DigestCtx)) != 1 ||
        EVP_MD_meth_set_flags(md, EVP_MD_FLAG_DIGALGID_ABSENT) != 1 ||
        EVP_MD_meth_set_init(md, Init) != 1 ||
        EVP_MD_meth_set_update(md, Update) != 1 ||
        EVP_MD_meth_set_final(md, Final) != 1 ||
        EVP_MD_meth_set_copy(md, Copy) != 1 ||
        EVP_MD_meth_set_cleanup(md, Cleanup) != 1) {
      EVP_MD_meth_free(md);
      continue;
    }
    g_digests[i] = md;
  }
}

}  // namespace

int DigestSelector(ENGINE* e, const EVP_MD** md, const int** nids, int nid) {
  std::call_once(g_digests_once, BuildDigests);
  if (md == nullptr) {
    *nids = kDigestNids;
    return static_cast<int>(kDigests.size());
  }
  for (size_t i = 0; i < kDigests.size(); ++i) {
    if (kDigests[i].nid == nid && g_digests[i] != nullptr) {
      *md = g_digests[i];
      return 1;
    }
  }
  *md = nullptr;
  return 0;
}

}  // namespace accelcrypt::engine
