// SPDX-License-Identifier: Apache-2.0
// The DSA signature codecs: DER Dss-Sig-Value (RFC 3279 section 2.2.2) <->
// r||s as CKM_DSA carries it, in the PKCS#11 client backend (verifying an
// application's DER signature on a token) and in the PKCS#11 module (an
// application's r||s checked by the core). Each is checked against
// OpenSSL's d2i_DSA_SIG/i2d_DSA_SIG on the same bytes and round-tripped:
// - whatever the strict client decoder accepts, OpenSSL accepts with the
//   same r and s, and the module's decoder agrees;
// - encoding any r||s (both codecs) gives the DER OpenSSL writes for it.
#include <openssl/bn.h>
#include <openssl/dsa.h>
#include <openssl/err.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tests/fuzz/dsa_der_codecs.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

void Check(bool cond) {
  if (!cond) __builtin_trap();
}

// OpenSSL's reading of `der` as r||s of q_len bytes each; false when it
// does not parse, has trailing bytes, or a value is negative or too long.
bool OpensslDecode(const std::vector<uint8_t>& der, size_t q_len,
                   std::vector<uint8_t>* rs) {
  const unsigned char* p = der.data();
  DSA_SIG* sig = d2i_DSA_SIG(nullptr, &p, static_cast<long>(der.size()));
  if (sig == nullptr) return false;
  const bool whole = p == der.data() + der.size();
  const BIGNUM *r, *s;
  DSA_SIG_get0(sig, &r, &s);
  rs->assign(2 * q_len, 0);
  bool ok = whole && !BN_is_negative(r) && !BN_is_negative(s) &&
            BN_bn2binpad(r, rs->data(), static_cast<int>(q_len)) >= 0 &&
            BN_bn2binpad(s, rs->data() + q_len, static_cast<int>(q_len)) >= 0;
  DSA_SIG_free(sig);
  return ok;
}

std::vector<uint8_t> OpensslEncode(const uint8_t* rs, size_t q_len) {
  DSA_SIG* sig = DSA_SIG_new();
  BIGNUM* r = BN_bin2bn(rs, static_cast<int>(q_len), nullptr);
  BIGNUM* s = BN_bin2bn(rs + q_len, static_cast<int>(q_len), nullptr);
  Check(sig != nullptr && r != nullptr && s != nullptr &&
        DSA_SIG_set0(sig, r, s) == 1);
  unsigned char* der = nullptr;
  int n = i2d_DSA_SIG(sig, &der);
  Check(n > 0);
  std::vector<uint8_t> out(der, der + n);
  OPENSSL_free(der);
  DSA_SIG_free(sig);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  accelcrypt::fuzz::FuzzInput in(data, size);
  // q is 20, 28 or 32 bytes for FIPS 186 DSA; the codecs take any length.
  static constexpr size_t kQ[] = {20, 28, 32, 1, 2, 60};
  const size_t q_len = kQ[in.Pick(sizeof(kQ) / sizeof(kQ[0]))];
  const bool decode = in.Bool();
  std::vector<uint8_t> bytes = in.Rest();

  if (decode) {
    std::vector<uint8_t> client, ossl;
    const bool client_ok =
        accelcrypt::fuzz::ClientDecodeDsa(bytes.data(), bytes.size(), q_len,
                                          &client);
    std::vector<uint8_t> module(2 * q_len);
    const bool module_ok = accelcrypt::fuzz::ModuleDerToRs(
        bytes.data(), bytes.size(), q_len, module.data());
    const bool ossl_ok = OpensslDecode(bytes, q_len, &ossl);
    if (client_ok) {
      Check(ossl_ok && client == ossl);
      Check(module_ok && module == client);
    }
    if (module_ok && ossl_ok) Check(module == ossl);
    ERR_clear_error();  // d2i failures queue errors; keep memory flat
    return 0;
  }
  // Encode: the first 2*q_len bytes as r||s.
  bytes.resize(2 * q_len);
  const std::vector<uint8_t> want = OpensslEncode(bytes.data(), q_len);
  Check(accelcrypt::fuzz::ClientEncodeDsa(bytes.data(), q_len) == want);
  Check(accelcrypt::fuzz::ModuleRsToDer(bytes.data(), q_len) == want);
  std::vector<uint8_t> back;
  Check(accelcrypt::fuzz::ClientDecodeDsa(want.data(), want.size(), q_len,
                                          &back) &&
        back == bytes);
  return 0;
}
