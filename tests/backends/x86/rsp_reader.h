// SPDX-License-Identifier: Apache-2.0
// NIST CAVP .rsp files (tests/vectors/README.md) for the x86 backend tests:
// an adapter over the shared reader (core/vector_file.h).
#ifndef ACCELCRYPT_TESTS_X86_RSP_READER_H_
#define ACCELCRYPT_TESTS_X86_RSP_READER_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace accelcrypt::x86::test {

// RspRecord is one test case (core/vector_file.h's VectorRecord) with every
// name upper-cased. A bare line (`FAIL`) is a name with an empty value; a
// block that does not recur (the SHA Monte `Seed`) is a section value.
struct RspRecord {
  std::map<std::string, std::string> fields;
  std::map<std::string, std::string> section;
  int line = 0;

  bool Has(const std::string& name) const { return fields.count(name) > 0; }
  const std::string& Get(const std::string& name) const;
  std::vector<uint8_t> Bytes(const std::string& name) const;
};

// ReadRsp parses `path`; it fails the calling test (ADD_FAILURE) and returns
// no records when the file is missing or malformed.
std::vector<RspRecord> ReadRsp(const std::string& path);

std::vector<uint8_t> FromHex(const std::string& hex);
std::string ToHex(const uint8_t* data, size_t len);

}  // namespace accelcrypt::x86::test

#endif  // ACCELCRYPT_TESTS_X86_RSP_READER_H_
