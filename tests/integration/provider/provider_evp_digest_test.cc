// SPDX-License-Identifier: Apache-2.0
// SHA-1/SHA-2 digests through EVP compared with OpenSSL's default provider:
// streaming, misuse, one-shot dispatch and short outputs, reused contexts.
// Fixture and helpers: provider_evp_fixture.h.
#include <openssl/core_dispatch.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/provider.h>

#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/integration/provider/provider_evp_fixture.h"

namespace accelcrypt::provider_evp_test {
namespace {

TEST_F(ProviderEvpTest, DigestsMatchDefault) {
  for (const char* name : {"SHA1", "SHA224", "SHA256", "SHA384", "SHA512",
                           "SHA2-256", "SHA-512"}) {
    MdPtr acc(EVP_MD_fetch(nullptr, name, kAccel));
    MdPtr def(EVP_MD_fetch(nullptr, name, kDefault));
    ASSERT_NE(acc, nullptr) << name;
    EXPECT_EQ(EVP_MD_get_size(acc.get()), EVP_MD_get_size(def.get()));
    EXPECT_EQ(EVP_MD_get_block_size(acc.get()),
              EVP_MD_get_block_size(def.get()));
    for (size_t size : {0, 1, 55, 56, 64, 111, 112, 128, 4097}) {
      const Bytes msg = Random(size, 60);
      uint8_t a[64], b[64];
      unsigned int al = 0, bl = 0;
      ASSERT_TRUE(EVP_Digest(msg.data(), size, a, &al, acc.get(), nullptr));
      ASSERT_TRUE(EVP_Digest(msg.data(), size, b, &bl, def.get(), nullptr));
      ASSERT_EQ(al, bl);
      EXPECT_EQ(0, memcmp(a, b, al)) << name << " size " << size;
      // Split updates and a copied context finishing separately.
      EVP_MD_CTX* ctx = EVP_MD_CTX_new();
      ASSERT_TRUE(EVP_DigestInit_ex2(ctx, acc.get(), nullptr));
      ASSERT_TRUE(EVP_DigestUpdate(ctx, msg.data(), size / 2));
      EVP_MD_CTX* copy = EVP_MD_CTX_new();
      ASSERT_TRUE(EVP_MD_CTX_copy_ex(copy, ctx));
      ASSERT_TRUE(
          EVP_DigestUpdate(ctx, msg.data() + size / 2, size - size / 2));
      ASSERT_TRUE(
          EVP_DigestUpdate(copy, msg.data() + size / 2, size - size / 2));
      uint8_t c[64], d[64];
      ASSERT_TRUE(EVP_DigestFinal_ex(ctx, c, &al));
      ASSERT_TRUE(EVP_DigestFinal_ex(copy, d, &al));
      EXPECT_EQ(0, memcmp(a, c, al));
      EXPECT_EQ(0, memcmp(a, d, al));
      EVP_MD_CTX_free(copy);
      EVP_MD_CTX_free(ctx);
    }
  }
}

// Out-of-order and malformed digest calls fail with an error on the queue
// and leave the context usable after a new init: update and final after
// final, NULL input with a length.
TEST_F(ProviderEvpTest, DigestMisuseIsRefusedAndRecoverable) {
  for (const char* name : {"SHA1", "SHA256", "SHA384"}) {
    MdPtr acc(EVP_MD_fetch(nullptr, name, kAccel));
    MdPtr def(EVP_MD_fetch(nullptr, name, kDefault));
    ASSERT_NE(acc, nullptr) << name;
    const Bytes msg = Random(300, 77);
    uint8_t want[64], got[64];
    unsigned int wl = 0, gl = 0;
    ASSERT_TRUE(
        EVP_Digest(msg.data(), msg.size(), want, &wl, def.get(), nullptr));
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    ASSERT_TRUE(EVP_DigestInit_ex2(ctx, acc.get(), nullptr));
    ERR_clear_error();
    EXPECT_FALSE(EVP_DigestUpdate(ctx, nullptr, 5)) << name;
    EXPECT_NE(ERR_peek_last_error(), 0u) << name << ": no error queued";
    ERR_clear_error();
    // The refused update hashed nothing: the message still comes out right.
    ASSERT_TRUE(EVP_DigestUpdate(ctx, msg.data(), msg.size()));
    ASSERT_TRUE(EVP_DigestFinal_ex(ctx, got, &gl));
    ASSERT_EQ(gl, wl);
    EXPECT_EQ(0, memcmp(got, want, wl)) << name;
    // EVP itself refuses update and final after final (3.0 tracks the
    // finalised state), and our provider would too.
    EXPECT_FALSE(EVP_DigestUpdate(ctx, msg.data(), 1)) << name;
    EXPECT_FALSE(EVP_DigestFinal_ex(ctx, got, &gl)) << name;
    ERR_clear_error();
    ASSERT_TRUE(EVP_DigestInit_ex2(ctx, acc.get(), nullptr));
    ASSERT_TRUE(EVP_DigestUpdate(ctx, msg.data(), msg.size()));
    ASSERT_TRUE(EVP_DigestFinal_ex(ctx, got, &gl));
    EXPECT_EQ(0, memcmp(got, want, wl)) << name << " after re-init";
    EVP_MD_CTX_free(ctx);
  }
}

// The digest dispatch functions EVP does not reach with bad arguments,
// called as OpenSSL's provider interface defines them: the one-shot
// OSSL_FUNC_DIGEST_DIGEST and final with a short output buffer.
TEST_F(ProviderEvpTest, DigestDispatchOneShotAndShortOutput) {
  MdPtr md(EVP_MD_fetch(nullptr, "SHA2-256", kAccel));
  ASSERT_NE(md, nullptr);
  const OSSL_PROVIDER* prov = EVP_MD_get0_provider(md.get());
  void* provctx = OSSL_PROVIDER_get0_provider_ctx(prov);
  int no_cache = 0;
  const OSSL_ALGORITHM* algs =
      OSSL_PROVIDER_query_operation(prov, OSSL_OP_DIGEST, &no_cache);
  ASSERT_NE(algs, nullptr);
  const OSSL_DISPATCH* fns = nullptr;
  for (const OSSL_ALGORITHM* a = algs; a->algorithm_names != nullptr; ++a) {
    if (std::string(a->algorithm_names).find("SHA2-256") == 0) {
      fns = a->implementation;
    }
  }
  ASSERT_NE(fns, nullptr) << "no SHA2-256 in accelcrypt's digest table";
  OSSL_FUNC_digest_digest_fn* oneshot = nullptr;
  OSSL_FUNC_digest_newctx_fn* newctx = nullptr;
  OSSL_FUNC_digest_init_fn* init = nullptr;
  OSSL_FUNC_digest_update_fn* update = nullptr;
  OSSL_FUNC_digest_final_fn* final = nullptr;
  OSSL_FUNC_digest_freectx_fn* freectx = nullptr;
  for (const OSSL_DISPATCH* f = fns; f->function_id != 0; ++f) {
    switch (f->function_id) {
      case OSSL_FUNC_DIGEST_DIGEST:
        oneshot = OSSL_FUNC_digest_digest(f);
        break;
      case OSSL_FUNC_DIGEST_NEWCTX:
        newctx = OSSL_FUNC_digest_newctx(f);
        break;
      case OSSL_FUNC_DIGEST_INIT:
        init = OSSL_FUNC_digest_init(f);
        break;
      case OSSL_FUNC_DIGEST_UPDATE:
        update = OSSL_FUNC_digest_update(f);
        break;
      case OSSL_FUNC_DIGEST_FINAL:
        final = OSSL_FUNC_digest_final(f);
        break;
      case OSSL_FUNC_DIGEST_FREECTX:
        freectx = OSSL_FUNC_digest_freectx(f);
        break;
    }
  }
  ASSERT_TRUE(oneshot && newctx && init && update && final && freectx);
  MdPtr def(EVP_MD_fetch(nullptr, "SHA2-256", kDefault));
  const Bytes msg = Random(100, 55);
  uint8_t want[32];
  ASSERT_TRUE(
      EVP_Digest(msg.data(), msg.size(), want, nullptr, def.get(), nullptr));
  uint8_t out[64] = {0};
  size_t outl = 0;
  ASSERT_EQ(oneshot(provctx, msg.data(), msg.size(), out, &outl, sizeof(out)),
            1);
  EXPECT_EQ(outl, 32u);
  EXPECT_EQ(0, memcmp(out, want, 32));
  ERR_clear_error();
  EXPECT_EQ(oneshot(provctx, msg.data(), msg.size(), out, &outl, 31), 0);
  EXPECT_NE(ERR_peek_last_error(), 0u);
  EXPECT_EQ(oneshot(provctx, nullptr, 5, out, &outl, sizeof(out)), 0);
  ERR_clear_error();
  // final with 31 bytes of room: refused, the hash kept; with room: done.
  void* ctx = newctx(provctx);
  ASSERT_NE(ctx, nullptr);
  ASSERT_EQ(init(ctx, nullptr), 1);
  ASSERT_EQ(update(ctx, msg.data(), msg.size()), 1);
  EXPECT_EQ(final(ctx, out, &outl, 31), 0);
  EXPECT_NE(ERR_peek_last_error(), 0u);
  ERR_clear_error();
  memset(out, 0, sizeof(out));
  ASSERT_EQ(final(ctx, out, &outl, sizeof(out)), 1);
  EXPECT_EQ(0, memcmp(out, want, 32));
  // A second final without init is out of order.
  EXPECT_EQ(final(ctx, out, &outl, sizeof(out)), 0);
  ERR_clear_error();
  freectx(ctx);
}

// Streaming digests are kept for reuse across contexts (ProvCtx's pool):
// messages of every length, contexts freed mid-message, finished, or left
// initialised, and contexts alive at once, always give the default
// provider's digest; nothing of one message reaches the next.
TEST_F(ProviderEvpTest, ReusedStreamingDigestsMatchDefault) {
  for (const char* name : {"SHA1", "SHA256", "SHA512"}) {
    MdPtr acc(EVP_MD_fetch(nullptr, name, kAccel));
    MdPtr def(EVP_MD_fetch(nullptr, name, kDefault));
    ASSERT_NE(acc, nullptr) << name;
    for (uint32_t i = 0; i < 60; ++i) {
      const size_t size = (i * 977) % 3000;
      const Bytes msg = Random(size, 100 + i);
      uint8_t want[64], got[64];
      unsigned int wl = 0, gl = 0;
      ASSERT_TRUE(EVP_Digest(msg.data(), size, want, &wl, def.get(), nullptr));
      // A context freed in the middle of a long message (never pooled),
      // one that finished (pooled) and one left initialised.
      EVP_MD_CTX* abandoned = EVP_MD_CTX_new();
      ASSERT_TRUE(EVP_DigestInit_ex2(abandoned, acc.get(), nullptr));
      const Bytes other = Random(700, 900 + i);
      ASSERT_TRUE(EVP_DigestUpdate(abandoned, other.data(), other.size()));
      EVP_MD_CTX* alive = EVP_MD_CTX_new();
      ASSERT_TRUE(EVP_DigestInit_ex2(alive, acc.get(), nullptr));
      ASSERT_TRUE(EVP_DigestUpdate(alive, other.data(), other.size()));
      EVP_MD_CTX_free(abandoned);
      ASSERT_TRUE(EVP_Digest(msg.data(), size, got, &gl, acc.get(), nullptr));
      ASSERT_EQ(gl, wl);
      EXPECT_EQ(0, memcmp(got, want, wl)) << name << " size " << size;
      // The context alive meanwhile still hashes its own message.
      uint8_t a[64], b[64];
      ASSERT_TRUE(EVP_DigestFinal_ex(alive, a, &gl));
      ASSERT_TRUE(
          EVP_Digest(other.data(), other.size(), b, &wl, def.get(), nullptr));
      EXPECT_EQ(0, memcmp(a, b, wl)) << name << " alive context";
      EVP_MD_CTX_free(alive);
    }
  }
}

}  // namespace
}  // namespace accelcrypt::provider_evp_test
