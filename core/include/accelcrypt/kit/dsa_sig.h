// SPDX-License-Identifier: Apache-2.0
// accelcrypt/kit/dsa_sig.h: DSA signatures in the two forms accelcrypt
// meets them: DER Dss-Sig-Value (RFC 3279 section 2.2.2; the ABI's form,
// as OpenSSL writes it) and r||s with each half |q| bytes (PKCS#11's
// CKM_DSA, v2.40 section 2.2.5). Header-only, no Abseil; used by the
// PKCS#11 client backend, the PKCS#11 module, the router and the provider.
#ifndef ACCELCRYPT_KIT_DSA_SIG_H_
#define ACCELCRYPT_KIT_DSA_SIG_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace accelcrypt::kit {
namespace dsa_sig_internal {

inline size_t LengthBytes(size_t len) {
  return len < 0x80 ? 1 : len < 0x100 ? 2 : 3;
}

inline void AppendLength(std::vector<uint8_t>* out, size_t len) {
  if (len >= 0x100) {
    out->push_back(0x82);
    out->push_back(static_cast<uint8_t>(len >> 8));
  } else if (len >= 0x80) {
    out->push_back(0x81);
  }
  out->push_back(static_cast<uint8_t>(len));
}

// AppendInteger writes the unsigned big-endian `v` as a minimal DER
// INTEGER (a leading zero only where the top bit is set; 0 for no bytes).
inline void AppendInteger(std::vector<uint8_t>* out, const uint8_t* v,
                          size_t len) {
  size_t i = 0;
  while (i < len && v[i] == 0) ++i;
  const size_t digits = len - i;
  const bool pad = digits == 0 || (v[i] & 0x80) != 0;
  out->push_back(0x02);
  AppendLength(out, digits + (pad ? 1 : 0));
  if (pad) out->push_back(0);
  out->insert(out->end(), v + i, v + len);
}

// ReadLength reads a definite length in its minimal form.
inline bool ReadLength(const uint8_t* p, size_t n, size_t* pos, size_t* len) {
  if (*pos >= n) return false;
  const uint8_t b = p[(*pos)++];
  if (b < 0x80) {
    *len = b;
    return true;
  }
  const size_t count = b & 0x7f;
  if (count < 1 || count > 2 || n - *pos < count) return false;
  size_t v = 0;
  for (size_t i = 0; i < count; ++i) v = (v << 8) | p[(*pos)++];
  *len = v;
  return v >= (count == 1 ? 0x80u : 0x100u);  // minimal
}

// ReadInteger reads a non-negative minimal DER INTEGER of at most q_len
// significant bytes into `out` (q_len bytes, big-endian, zero-filled).
inline bool ReadInteger(const uint8_t* p, size_t n, size_t* pos, size_t q_len,
                        uint8_t* out) {
  size_t len;
  if (*pos >= n || p[(*pos)++] != 0x02 || !ReadLength(p, n, pos, &len) ||
      len == 0 || n - *pos < len) {
    return false;
  }
  const uint8_t* v = p + *pos;
  *pos += len;
  if ((v[0] & 0x80) != 0) return false;                          // negative
  if (len > 1 && v[0] == 0 && (v[1] & 0x80) == 0) return false;  // padded
  while (len > 0 && *v == 0) {
    ++v;
    --len;
  }
  if (len > q_len) return false;
  std::memset(out, 0, q_len - len);
  if (len > 0) std::memcpy(out + q_len - len, v, len);
  return true;
}

}  // namespace dsa_sig_internal

// DsaDerMaxSize is the largest DER Dss-Sig-Value for a q of `q_len`
// significant bytes: two INTEGERs of at most q_len + 1 bytes each.
inline size_t DsaDerMaxSize(size_t q_len) {
  using dsa_sig_internal::LengthBytes;
  const size_t integer = 1 + LengthBytes(q_len + 1) + q_len + 1;
  const size_t body = 2 * integer;
  return 1 + LengthBytes(body) + body;
}

// DsaRsToDer encodes r||s (each q_len bytes, big-endian) as DER, exactly
// as OpenSSL's i2d_DSA_SIG does.
inline std::vector<uint8_t> DsaRsToDer(const uint8_t* rs, size_t q_len) {
  std::vector<uint8_t> body;
  dsa_sig_internal::AppendInteger(&body, rs, q_len);
  dsa_sig_internal::AppendInteger(&body, rs + q_len, q_len);
  std::vector<uint8_t> out{0x30};
  dsa_sig_internal::AppendLength(&out, body.size());
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

// DsaDerToRs decodes a strict DER Dss-Sig-Value (minimal lengths and
// integers, non-negative, nothing after it) into r||s, each q_len bytes,
// in `rs` (2 * q_len bytes). False, with `rs` zeroed, for anything else
// or a value longer than q_len bytes.
inline bool DsaDerToRs(const uint8_t* der, size_t n, size_t q_len,
                       uint8_t* rs) {
  using dsa_sig_internal::ReadInteger;
  using dsa_sig_internal::ReadLength;
  std::memset(rs, 0, 2 * q_len);
  size_t pos = 0, len = 0;
  const bool ok = n >= 2 && der[pos++] == 0x30 &&
                  ReadLength(der, n, &pos, &len) && n - pos == len &&
                  ReadInteger(der, n, &pos, q_len, rs) &&
                  ReadInteger(der, n, &pos, q_len, rs + q_len) && pos == n;
  if (!ok) std::memset(rs, 0, 2 * q_len);
  return ok;
}

}  // namespace accelcrypt::kit

#endif  // ACCELCRYPT_KIT_DSA_SIG_H_
