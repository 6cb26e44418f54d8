// SPDX-License-Identifier: Apache-2.0
// The PKCS#11 client backend's refused-PIN marker reader
// (backends/pkcs11/pin_marker.cc ReadMarker): a file in a state directory
// that decides whether a PIN is tried. A marker it accepts must be usable
// by Matches (a 32-byte hash and a salt). Matches itself is not called: its
// PBKDF2 (20000 iterations) would hold the fuzzer to a few runs a second,
// and it reads nothing of the marker but those two sizes.
#include <cstddef>
#include <cstdint>
#include <optional>

#include "backends/pkcs11/pin_marker.h"
#include "tests/fuzz/temp_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace p = accelcrypt::pkcs11_client;
  static accelcrypt::fuzz::TempFile file("accelcrypt-fuzz-pin.marker");
  if (!file.Write(data, size)) return 0;
  std::optional<p::PinHash> marker = p::ReadMarker(file.path());
  if (!marker.has_value()) return 0;
  if (marker->hash.size() != 32 || marker->salt.empty()) __builtin_trap();
  return 0;
}
