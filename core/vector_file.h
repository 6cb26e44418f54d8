// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_CORE_VECTOR_FILE_H_
#define ACCELCRYPT_CORE_VECTOR_FILE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace accelcrypt {

// VectorRecord is one test case of a NIST CAVP-style response file: the
// `Key = value` lines of one block, plus the bracketed section headers in
// force (`[ENCRYPT]`, `[L = 32]`, `[Keylen = 128]`...). Keys keep the file's
// spelling; lookups are case-insensitive. A bare line such as `FAIL` is
// stored as a key with an empty value. A block whose fields do not recur in
// the next block holds values for the rest of its section (the SHA Monte
// `Seed`, RSA `n`/`e`): it is not a record, its fields join `section`.
struct VectorRecord {
  std::map<std::string, std::string> fields;
  std::map<std::string, std::string> section;  // "ENCRYPT" -> "", "L" -> "32"
  int line = 0;                                // first line, for messages

  bool Has(std::string_view key) const;
  // Get returns the value or an empty string.
  std::string Get(std::string_view key) const;
  // Bytes decodes a hex field; kInvalidArgument on bad hex, kNotFound when
  // absent. An empty value (or "00" with Len = 0 in SHA files: callers
  // handle that) decodes to no bytes.
  absl::StatusOr<std::vector<uint8_t>> Bytes(std::string_view key) const;
  std::optional<std::string> SectionValue(std::string_view key) const;
  bool InSection(std::string_view key) const;
};

// VectorFile is a parsed response file.
struct VectorFile {
  std::string path;
  std::vector<VectorRecord> records;
};

// ParseVectorFile reads a CAVP .rsp file (CRLF or LF, `#` comments).
// kNotFound when missing, kInvalidArgument with a line number when malformed.
absl::StatusOr<VectorFile> ParseVectorFile(const std::string& path);

}  // namespace accelcrypt

#endif  // ACCELCRYPT_CORE_VECTOR_FILE_H_
