// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_TESTS_INTEGRATION_PROVIDER_PROVIDER_EVP_FIXTURE_H_
#define ACCELCRYPT_TESTS_INTEGRATION_PROVIDER_PROVIDER_EVP_FIXTURE_H_

// The fixture and helpers shared by the provider_evp_test parts
// (provider_evp_{cipher,gcm,tls,digest,lifecycle}_test.cc): accelcrypt.so
// through libcrypto's EVP API, loaded only by configuration (OPENSSL_CONF
// names the test config, which keeps OpenSSL's default provider active next
// to ours). Every result is compared with OpenSSL's default provider fetched
// explicitly with "provider=default". Links libcrypto only: no accelcrypt
// internals.

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/provider.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace accelcrypt::provider_evp_test {

using Bytes = std::vector<uint8_t>;

inline constexpr const char* kAccel = "provider=accelcrypt";
inline constexpr const char* kDefault = "provider=default";

// CipherNames lists the AES ECB/CBC/CFB/OFB/CTR ciphers of every key size.
const std::vector<std::string>& CipherNames();

struct CipherDeleter {
  void operator()(EVP_CIPHER* c) const { EVP_CIPHER_free(c); }
};
struct CtxDeleter {
  void operator()(EVP_CIPHER_CTX* c) const { EVP_CIPHER_CTX_free(c); }
};
struct MdDeleter {
  void operator()(EVP_MD* m) const { EVP_MD_free(m); }
};
using CipherPtr = std::unique_ptr<EVP_CIPHER, CipherDeleter>;
using CtxPtr = std::unique_ptr<EVP_CIPHER_CTX, CtxDeleter>;
using MdPtr = std::unique_ptr<EVP_MD, MdDeleter>;

CipherPtr Fetch(const std::string& name, const char* props);

std::string ProviderOf(const EVP_CIPHER* c);

Bytes Random(size_t n, uint32_t seed);

// LastReason returns the reason string of the newest queued error, and
// clears the queue.
std::string LastReason();

// Crypt runs a whole encryption or decryption, feeding `in` in pieces of
// `chunk` bytes (0 = one piece). Returns false on any EVP failure.
// A chunk of kMixedChunks feeds the schedule 16, 5, 11, 32, 3, 48, ...:
// whole blocks, then partial ones, then whole blocks again.
inline constexpr size_t kMixedChunks = static_cast<size_t>(-1);

bool Crypt(const EVP_CIPHER* cipher, bool enc, const Bytes& key,
           const Bytes& iv, const Bytes& in, size_t chunk, Bytes* out,
           bool pad = true);

// QueuedReason reports whether any queued error carries `reason`, and
// clears the queue (libcrypto may add its own error after ours).
bool QueuedReason(const std::string& reason);

class ProviderEvpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(getenv("OPENSSL_CONF"), nullptr)
        << "run through CTest: OPENSSL_CONF must name the test config";
    ASSERT_TRUE(OSSL_PROVIDER_available(nullptr, "accelcrypt"))
        << "accelcrypt not loaded from " << getenv("OPENSSL_CONF");
    ERR_clear_error();
  }
};

}  // namespace accelcrypt::provider_evp_test

#endif  // ACCELCRYPT_TESTS_INTEGRATION_PROVIDER_PROVIDER_EVP_FIXTURE_H_
