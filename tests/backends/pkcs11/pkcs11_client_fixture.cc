// SPDX-License-Identifier: Apache-2.0
// The helpers of pkcs11_client_fixture.h.
#include "tests/backends/pkcs11/pkcs11_client_fixture.h"

#include <dlfcn.h>

#include <regex>
#include <string>
#include <vector>

namespace accelcrypt::testing {

TokenFixture* g_hsm = nullptr;
std::string Pkcs11ClientTest::create_error_;

uint64_t Pkcs11ClientTest::Created(const Backend& b) {
  std::smatch m;
  std::string d = b.Describe();
  if (!std::regex_search(d, m, std::regex("objects_created=([0-9]+)"))) {
    return ~0ull;
  }
  return std::stoull(m[1]);
}

PkeyParams Pkcs1() {
  PkeyParams p;
  p.padding = ACCELCRYPT_PAD_PKCS1;
  p.md = ACCELCRYPT_ALG_SHA256;
  return p;
}

PkeyParams Pss() {
  PkeyParams p;
  p.padding = ACCELCRYPT_PAD_PSS;
  p.md = ACCELCRYPT_ALG_SHA256;
  p.salt_len = ACCELCRYPT_PSS_SALT_DIGEST;
  return p;
}

std::vector<uint8_t> Digest(const std::string& s) {
  return Sha256(std::vector<uint8_t>(s.begin(), s.end()));
}

std::string LoadMessage(const Core& core) {
  std::string out;
  for (const LoadEvent& e : const_cast<Core&>(core).registry().events()) {
    out += e.backend + ": " + e.message + "\n";
  }
  return out;
}

LatencyShim OpenLatencyShim(const char* path, bool load) {
  LatencyShim shim;
  shim.handle = dlopen(path, RTLD_NOW | (load ? 0 : RTLD_NOLOAD));
  if (shim.handle == nullptr) return shim;
  shim.control = reinterpret_cast<long (*)(const char*)>(
      dlsym(shim.handle, "accelcrypt_shim_control"));
  shim.flipped = reinterpret_cast<long (*)()>(
      dlsym(shim.handle, "accelcrypt_shim_flipped"));
  return shim;
}

}  // namespace accelcrypt::testing
