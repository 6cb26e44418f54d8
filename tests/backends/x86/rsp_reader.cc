// SPDX-License-Identifier: Apache-2.0
#include "tests/backends/x86/rsp_reader.h"

#include <gtest/gtest.h>

#include <fstream>

namespace accelcrypt::x86::test {
namespace {

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::string Upper(std::string s) {
  for (char& c : s)
    c = static_cast<char>(toupper(static_cast<unsigned char>(c)));
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
  for (size_t i = 0; i < len; ++i) {
    s.push_back(kDigits[data[i] >> 4]);
    s.push_back(kDigits[data[i] & 15]);
  }
  return s;
}

std::vector<RspRecord> ReadRsp(const std::string& path) {
  std::vector<RspRecord> out;
  std::ifstream f(path);
  if (!f) {
    ADD_FAILURE() << "cannot open " << path;
    return out;
  }
  std::map<std::string, std::string> section;
  bool section_open = false;  // consecutive bracket lines form one section
  RspRecord cur;
  std::string raw;
  int line_no = 0;
  auto flush = [&]() {
    if (!cur.fields.empty()) {
      cur.section = section;
      out.push_back(cur);
    }
    cur = RspRecord();
  };
  while (std::getline(f, raw)) {
    ++line_no;
    std::string line = Trim(raw);
    if (line.empty()) {
      flush();
      section_open = false;
      continue;
    }
    if (line[0] == '#') continue;
    if (line[0] == '[') {
      flush();
      if (!section_open) section.clear();
      section_open = true;
      std::string body = line.substr(1, line.find(']') - 1);
      size_t eq = body.find('=');
      if (eq == std::string::npos) {
        section[Upper(Trim(body))] = "";
      } else {
        section[Upper(Trim(body.substr(0, eq)))] = Trim(body.substr(eq + 1));
      }
      continue;
    }
    section_open = false;
    if (cur.fields.empty()) cur.line = line_no;
    size_t eq = line.find('=');
    if (eq == std::string::npos) {
      cur.fields[Upper(line)] = "";
    } else {
      cur.fields[Upper(Trim(line.substr(0, eq)))] = Trim(line.substr(eq + 1));
    }
  }
  flush();
  return out;
}

}  // namespace accelcrypt::x86::test
