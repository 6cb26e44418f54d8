// SPDX-License-Identifier: Apache-2.0
// TLS-CBC record open (provider/tls_cbc.cc), the constant-time code that
// removes explicit IV, padding and MAC from a decrypted record: checked
// against a plain (branching) reading of RFC 5246 section 6.2.3.2 on the
// same bytes, for every protocol version and MAC size. TlsCbcPad likewise.
#include <openssl/prov_ssl.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "provider/tls_cbc.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

constexpr unsigned kVersions[] = {
    TLS1_VERSION,    TLS1_1_VERSION, TLS1_2_VERSION, DTLS1_VERSION,
    DTLS1_2_VERSION, DTLS1_BAD_VER,  SSL3_VERSION,   TLS1_3_VERSION};

void Check(bool cond) {
  if (!cond) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using accelcrypt::provider::kTlsMaxMacSize;
  accelcrypt::fuzz::FuzzInput in(data, size);
  const unsigned version =
      in.Bool() ? in.U32() & 0xffff
                : kVersions[in.Pick(sizeof(kVersions) / sizeof(kVersions[0]))];
  const size_t mac_size = in.Pick(kTlsMaxMacSize + 8);
  const size_t cap_extra = in.Byte();
  std::vector<uint8_t> rec = in.Rest();

  // TlsCbcPad on the same bytes, in a buffer cap_extra longer.
  {
    std::vector<uint8_t> buf(rec);
    buf.resize(rec.size() + cap_extra);
    absl::StatusOr<size_t> padded =
        accelcrypt::provider::TlsCbcPad(buf.data(), rec.size(), buf.size());
    const size_t pad = 16 - rec.size() % 16;
    Check(padded.ok() == (cap_extra >= pad));
    if (padded.ok()) {
      Check(*padded == rec.size() + pad && *padded % 16 == 0);
      Check(rec.empty() ||
            std::memcmp(buf.data(), rec.data(), rec.size()) == 0);
      for (size_t i = rec.size(); i < *padded; ++i) Check(buf[i] == pad - 1);
    }
  }

  size_t offset = ~size_t{0}, len = ~size_t{0};
  uint8_t mac[kTlsMaxMacSize];
  absl::Status st = accelcrypt::provider::TlsCbcOpen(
      version, rec.data(), rec.size(), mac_size, nullptr, &offset, &len, mac);

  // The reference reading.
  if (!accelcrypt::provider::TlsVersionSupported(version) ||
      mac_size > kTlsMaxMacSize) {
    Check(!st.ok());
    return 0;
  }
  const size_t iv = version == TLS1_VERSION ? 0 : 16;
  if (rec.size() < iv || rec.size() - iv < 1 + mac_size) {
    Check(!st.ok());
    return 0;
  }
  const uint8_t* p = rec.data() + iv;
  const size_t n = rec.size() - iv;
  const size_t pad = p[n - 1];
  bool good = n >= 1 + mac_size + pad;
  for (size_t i = 0; good && i <= pad; ++i) good = p[n - 1 - i] == pad;
  if (mac_size == 0) {
    Check(st.ok() == good);
    if (good) Check(offset == iv && len == n - pad - 1);
    return 0;
  }
  Check(st.ok());  // a bad record is reported through a random MAC
  Check(offset == iv);
  if (good) {
    Check(len == n - pad - 1 - mac_size);
    Check(std::memcmp(mac, p + len, mac_size) == 0);
  } else {
    Check(len == n - mac_size);
  }
  return 0;
}
