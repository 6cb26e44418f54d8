// SPDX-License-Identifier: Apache-2.0
// The x86 tests' view of a CAVP .rsp file: the shared reader
// (core/vector_file.h) with names upper-cased, failing the calling test
// instead of returning a status.
#include "tests/backends/x86/rsp_reader.h"

#include <gtest/gtest.h>

#include <cctype>

#include "core/vector_file.h"

namespace accelcrypt::x86::test {
namespace {

std::string Upper(std::string s) {
  for (char& c : s) {
    c = static_cast<char>(toupper(static_cast<unsigned char>(c)));
  }
  return s;
}

}  // namespace

const std::string& RspRecord::Get(const std::string& name) const {
  static const std::string kEmpty;
  auto it = fields.find(name);
  return it == fields.end() ? kEmpty : it->second;
}

std::vector<uint8_t> RspRecord::Bytes(const std::string& name) const {
  return FromHex(Get(name));
}

std::vector<uint8_t> FromHex(const std::string& hex) {
  std::vector<uint8_t> out;
  if (hex.size() % 2 != 0) {
    ADD_FAILURE() << "odd-length hex: " << hex;
    return out;
  }
  for (size_t i = 0; i < hex.size(); i += 2) {
    out.push_back(
        static_cast<uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

std::string ToHex(const uint8_t* data, size_t len) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s;
  s.reserve(2 * len);
  for (size_t i = 0; i < len; ++i) {
    s.push_back(kDigits[data[i] >> 4]);
    s.push_back(kDigits[data[i] & 15]);
  }
  return s;
}

std::vector<RspRecord> ReadRsp(const std::string& path) {
  absl::StatusOr<VectorFile> file = ParseVectorFile(path);
  if (!file.ok()) {
    ADD_FAILURE() << file.status();
    return {};
  }
  std::vector<RspRecord> out;
  out.reserve(file->records.size());
  for (const VectorRecord& v : file->records) {
    RspRecord r;
    r.line = v.line;
    for (const auto& [name, value] : v.fields) r.fields[Upper(name)] = value;
    for (const auto& [name, value] : v.section) {
      r.section[Upper(name)] = value;
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace accelcrypt::x86::test
