// SPDX-License-Identifier: Apache-2.0
// The DSA signature codec of the backend kit (accelcrypt/kit/dsa_sig.h):
// DER Dss-Sig-Value (RFC 3279 section 2.2.2) <-> r||s as CKM_DSA carries
// it, used by the PKCS#11 client backend (an application's DER signature
// verified on a token), the PKCS#11 module (an application's r||s checked
// by the core) and for the signature size. Checked against OpenSSL's
// d2i_DSA_SIG/i2d_DSA_SIG on the same bytes and round-tripped:
// - whatever the strict decoder accepts, OpenSSL accepts with the same r
//   and s, and re-encoding gives back the same bytes (it was minimal DER);
// - encoding any r||s gives the DER OpenSSL writes for it, within
//   DsaDerMaxSize, and decodes back to it.
#include <openssl/bn.h>
#include <openssl/dsa.h>
#include <openssl/err.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "accelcrypt/kit/dsa_sig.h"
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
    std::vector<uint8_t> mine(2 * q_len), ossl;
    const bool mine_ok = accelcrypt::kit::DsaDerToRs(bytes.data(), bytes.size(),
                                                     q_len, mine.data());
    const bool ossl_ok = OpensslDecode(bytes, q_len, &ossl);
    if (mine_ok) {
      Check(ossl_ok && mine == ossl);
      Check(accelcrypt::kit::DsaRsToDer(mine.data(), q_len) == bytes);
    } else {
      Check(mine == std::vector<uint8_t>(2 * q_len, 0));
    }
    ERR_clear_error();  // d2i failures queue errors; keep memory flat
    return 0;
  }
  // Encode: the first 2*q_len bytes as r||s.
  bytes.resize(2 * q_len);
  const std::vector<uint8_t> want = OpensslEncode(bytes.data(), q_len);
  const std::vector<uint8_t> der =
      accelcrypt::kit::DsaRsToDer(bytes.data(), q_len);
  Check(der == want);
  Check(der.size() <= accelcrypt::kit::DsaDerMaxSize(q_len));
  std::vector<uint8_t> back(2 * q_len);
  Check(
      accelcrypt::kit::DsaDerToRs(der.data(), der.size(), q_len, back.data()) &&
      back == bytes);
  return 0;
}
