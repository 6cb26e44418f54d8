// SPDX-License-Identifier: Apache-2.0
// The helpers of provider_evp_fixture.h.
#include "tests/integration/provider/provider_evp_fixture.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/provider.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace accelcrypt::provider_evp_test {

const std::vector<std::string>& CipherNames() {
  static const std::vector<std::string> names = {
      "AES-128-ECB", "AES-192-ECB", "AES-256-ECB", "AES-128-CBC",
      "AES-192-CBC", "AES-256-CBC", "AES-128-CFB", "AES-192-CFB",
      "AES-256-CFB", "AES-128-OFB", "AES-192-OFB", "AES-256-OFB",
      "AES-128-CTR", "AES-192-CTR", "AES-256-CTR"};
  return names;
}

CipherPtr Fetch(const std::string& name, const char* props) {
  return CipherPtr(EVP_CIPHER_fetch(nullptr, name.c_str(), props));
}

std::string ProviderOf(const EVP_CIPHER* c) {
  return OSSL_PROVIDER_get0_name(EVP_CIPHER_get0_provider(c));
}

Bytes Random(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  Bytes out(n);
  for (auto& b : out) b = static_cast<uint8_t>(gen());
  return out;
}

std::string LastReason() {
  unsigned long e = ERR_peek_last_error();
  const char* r = e != 0 ? ERR_reason_error_string(e) : nullptr;
  std::string out = r != nullptr ? r : "";
  ERR_clear_error();
  return out;
}

bool Crypt(const EVP_CIPHER* cipher, bool enc, const Bytes& key,
           const Bytes& iv, const Bytes& in, size_t chunk, Bytes* out,
           bool pad) {
  static constexpr size_t kSchedule[] = {16, 5, 11, 32, 3, 48};
  size_t step = 0;
  CtxPtr ctx(EVP_CIPHER_CTX_new());
  if (!EVP_CipherInit_ex2(ctx.get(), cipher, key.data(),
                          iv.empty() ? nullptr : iv.data(), enc ? 1 : 0,
                          nullptr)) {
    return false;
  }
  EVP_CIPHER_CTX_set_padding(ctx.get(), pad ? 1 : 0);
  out->assign(in.size() + 32, 0);
  size_t done = 0;
  int total = 0;
  if (chunk == 0) chunk = std::max<size_t>(in.size(), 1);
  while (done < in.size()) {
    const size_t want = chunk == kMixedChunks ? kSchedule[step++ % 6] : chunk;
    size_t n = std::min(want, in.size() - done);
    int outl = 0;
    if (!EVP_CipherUpdate(ctx.get(), out->data() + total, &outl,
                          in.data() + done, static_cast<int>(n))) {
      return false;
    }
    total += outl;
    done += n;
  }
  int outl = 0;
  if (!EVP_CipherFinal_ex(ctx.get(), out->data() + total, &outl)) return false;
  out->resize(total + outl);
  return true;
}

bool QueuedReason(const std::string& reason) {
  bool found = false;
  unsigned long e;
  while ((e = ERR_get_error()) != 0) {
    const char* r = ERR_reason_error_string(e);
    if (r != nullptr && reason == r) found = true;
  }
  return found;
}

}  // namespace accelcrypt::provider_evp_test
