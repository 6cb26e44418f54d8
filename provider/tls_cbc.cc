// SPDX-License-Identifier: Apache-2.0
// TLS CBC record padding and MAC extraction. Opening a record must not
// reveal, through timing or memory access patterns, whether its padding was
// valid or how long it was (the Lucky Thirteen attack, AlFardan and
// Paterson 2013): every byte that could be padding is checked, the MAC is
// copied out by scanning every position it could occupy, and a bad record
// yields a random MAC so that libssl's MAC comparison fails the same way a
// forged MAC does. The technique follows OpenSSL's ssl/record/tls_pad.c;
// lengths that are public (the record length) may be branched on.
#include "provider/tls_cbc.h"

#include <openssl/crypto.h>
#include <openssl/prov_ssl.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cstring>

#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"

namespace accelcrypt::provider {
namespace {

constexpr size_t kBlock = 16;
// The longest TLS padding including its length byte.
constexpr size_t kMaxPadding = 256;

// Constant-time helpers: results are all-ones or all-zero masks, computed
// without branches on the (secret) operands.
inline size_t CtMsb(size_t a) { return 0 - (a >> (sizeof(size_t) * 8 - 1)); }
inline size_t CtLt(size_t a, size_t b) {
  return CtMsb(a ^ ((a ^ b) | ((a - b) ^ b)));
}
inline size_t CtGe(size_t a, size_t b) { return ~CtLt(a, b); }
inline size_t CtIsZero(size_t a) { return CtMsb(~a & (a - 1)); }
inline size_t CtEq(size_t a, size_t b) { return CtIsZero(a ^ b); }
inline uint8_t CtSelect8(uint8_t mask, uint8_t a, uint8_t b) {
  return static_cast<uint8_t>((mask & a) | (~mask & b));
}

}  // namespace

bool TlsVersionSupported(unsigned int version) {
  switch (version) {
    case TLS1_VERSION:
    case TLS1_1_VERSION:
    case TLS1_2_VERSION:
    case DTLS1_VERSION:
    case DTLS1_2_VERSION:
    case DTLS1_BAD_VER:
      return true;
    default:
      return false;
  }
}

absl::StatusOr<size_t> TlsCbcPad(uint8_t* buf, size_t len, size_t cap) {
  const size_t pad = kBlock - (len % kBlock);
  if (cap < len || cap - len < pad) {
    return absl::OutOfRangeError(absl::StrFormat(
        "TLS record of %u bytes needs %u bytes of padding, buffer holds %u",
        len, pad, cap));
  }
  std::memset(buf + len, static_cast<int>(pad - 1), pad);
  return len + pad;
}

absl::Status TlsCbcOpen(unsigned int version, const uint8_t* rec,
                        size_t rec_len, size_t mac_size, OSSL_LIB_CTX* libctx,
                        size_t* data_offset, size_t* data_len, uint8_t* mac) {
  if (!TlsVersionSupported(version)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("TLS version 0x%04x not supported", version));
  }
  if (mac_size > kTlsMaxMacSize) {
    return absl::InvalidArgumentError("TLS MAC size too large");
  }
  size_t offset = 0;
  size_t len = rec_len;
  if (version != TLS1_VERSION) {
    // TLS 1.1 and later (and DTLS) start each record with an explicit IV.
    if (len < kBlock) return absl::InvalidArgumentError("TLS record too short");
    offset = kBlock;
    len -= kBlock;
  }
  const uint8_t* p = rec + offset;
  const size_t overhead = 1 + mac_size;
  if (len < overhead) return absl::InvalidArgumentError("TLS record too short");
  const size_t orig_len = len;

  // Padding: the last byte gives its length; that many bytes before it
  // must hold the same value. Check the longest possible padding always.
  const size_t pad = p[len - 1];
  size_t good = CtGe(len, overhead + pad);
  const size_t to_check = std::min(kMaxPadding, len);
  for (size_t i = 0; i < to_check; ++i) {
    const uint8_t mask = static_cast<uint8_t>(CtGe(pad, i));
    const uint8_t b = p[len - 1 - i];
    good &= ~static_cast<size_t>(mask & (pad ^ b));
  }
  good = CtEq(0xff, good & 0xff);
  len -= good & (pad + 1);

  if (mac_size == 0) {
    // Encrypt-then-MAC: libssl checked the MAC before decryption, so the
    // padding result may be reported directly.
    if (good == 0) return absl::InvalidArgumentError("bad TLS record padding");
    *data_offset = offset;
    *data_len = len;
    return absl::OkStatus();
  }

  const size_t mac_end = len;
  const size_t mac_start = mac_end - mac_size;
  len -= mac_size;

  uint8_t random_mac[kTlsMaxMacSize];
  if (RAND_bytes_ex(libctx, random_mac, mac_size, 0) <= 0) {
    return absl::UnavailableError("cannot generate random bytes");
  }
  // The MAC can only start within the last mac_size + 256 bytes. Scan all
  // of them, accumulating the MAC rotated by its (secret) start offset.
  uint8_t rotated[kTlsMaxMacSize] = {};
  const size_t scan_start = orig_len > mac_size + kMaxPadding
                                ? orig_len - (mac_size + kMaxPadding)
                                : 0;
  size_t in_mac = 0;
  size_t rotate_offset = 0;
  size_t j = 0;
  for (size_t i = scan_start; i < orig_len; ++i) {
    const size_t started = CtEq(i, mac_start);
    const size_t ended = CtLt(i, mac_end);
    in_mac |= started;
    in_mac &= ended;
    rotate_offset |= j & started;
    rotated[j] |= static_cast<uint8_t>(p[i] & in_mac);
    ++j;
    j &= CtLt(j, mac_size);
  }
  // Un-rotate reading every byte for every output position.
  for (size_t k = 0; k < mac_size; ++k) {
    uint8_t v = 0;
    for (size_t m = 0; m < mac_size; ++m) {
      v |= static_cast<uint8_t>(rotated[m] & CtEq(m, rotate_offset));
    }
    mac[k] = CtSelect8(static_cast<uint8_t>(good), v, random_mac[k]);
    ++rotate_offset;
    rotate_offset &= CtLt(rotate_offset, mac_size);
  }
  OPENSSL_cleanse(rotated, sizeof(rotated));
  OPENSSL_cleanse(random_mac, sizeof(random_mac));
  *data_offset = offset;
  *data_len = len;
  return absl::OkStatus();
}

}  // namespace accelcrypt::provider
