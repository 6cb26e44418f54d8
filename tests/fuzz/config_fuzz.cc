// SPDX-License-Identifier: Apache-2.0
// The configuration parser (core/config*): an openssl.cnf-syntax file read
// with NCONF, then every key checked by Validate and read back through the
// typed getters. Nothing may crash, and a file that loads must validate to
// a status (either way) without touching anything outside the Config.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/config.h"
#include "tests/fuzz/temp_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static accelcrypt::fuzz::TempFile file("accelcrypt-fuzz-config");
  if (!file.Write(data, size)) return 0;
  absl::StatusOr<accelcrypt::Config> config =
      accelcrypt::Config::LoadFile(file.path());
  if (!config.ok()) return 0;
  (void)config->Validate();
  for (const auto& [key, value] : config->values()) {
    (void)accelcrypt::Config::Known(key);
    (void)config->GetInt(key, 0);
    (void)config->GetList(key);
    if (config->Get(key) != value) __builtin_trap();
  }
  accelcrypt::Config copy;
  copy.Merge(*config);
  if (copy.values() != config->values()) __builtin_trap();
  return 0;
}
