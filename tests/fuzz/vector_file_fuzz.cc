// SPDX-License-Identifier: Apache-2.0
// The CAVP vector-file parser (core/vector_file*): every record of a parsed
// file read back through its accessors, hex fields decoded.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/vector_file.h"
#include "tests/fuzz/temp_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static accelcrypt::fuzz::TempFile file("accelcrypt-fuzz-vectors.rsp");
  if (!file.Write(data, size)) return 0;
  absl::StatusOr<accelcrypt::VectorFile> parsed =
      accelcrypt::ParseVectorFile(file.path());
  if (!parsed.ok()) return 0;
  for (const accelcrypt::VectorRecord& r : parsed->records) {
    for (const auto& [key, value] : r.fields) {
      if (!r.Has(key)) __builtin_trap();
      if (r.Get(key) != value) __builtin_trap();
      absl::StatusOr<std::vector<uint8_t>> bytes = r.Bytes(key);
      if (bytes.ok() && bytes->size() * 2 > value.size()) __builtin_trap();
    }
    for (const auto& [key, value] : r.section) {
      (void)r.SectionValue(key);
      if (!r.InSection(key)) __builtin_trap();
    }
  }
  return 0;
}
