// SPDX-License-Identifier: Apache-2.0
#include "core/vector_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace accelcrypt {
namespace {

// Lookup finds `key` case-insensitively: CAVP spells the same field `COUNT`
// in AES files and `Count` in GCM files.
template <typename Map>
typename Map::const_iterator Lookup(const Map& map, std::string_view key) {
  auto it = map.find(std::string(key));
  if (it != map.end()) return it;
  absl::string_view k(key.data(), key.size());
  for (it = map.begin(); it != map.end(); ++it) {
    if (absl::EqualsIgnoreCase(it->first, k)) return it;
  }
  return map.end();
}

int HexNibble(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Block is one blank-line separated group of lines before it becomes a
// record or a set of section parameters.
struct Block {
  std::map<std::string, std::string> fields;
  int line = 0;
};

std::set<std::string> KeySet(const Block& block) {
  std::set<std::string> keys;
  for (const auto& [k, v] : block.fields) keys.insert(absl::AsciiStrToLower(k));
  return keys;
}

bool Disjoint(const std::set<std::string>& a, const std::set<std::string>& b) {
  for (const auto& k : a) {
    if (b.count(k) != 0) return false;
  }
  return true;
}

// Section is one group of consecutive bracket lines and the blocks under it.
struct Section {
  std::map<std::string, std::string> headers;
  std::vector<Block> blocks;
};

}  // namespace

bool VectorRecord::Has(std::string_view key) const {
  return Lookup(fields, key) != fields.end();
}

std::string VectorRecord::Get(std::string_view key) const {
  auto it = Lookup(fields, key);
  return it == fields.end() ? std::string() : it->second;
}

absl::StatusOr<std::vector<uint8_t>> VectorRecord::Bytes(
    std::string_view key) const {
  auto it = Lookup(fields, key);
  if (it == fields.end()) {
    return absl::NotFoundError(
        absl::StrFormat("line %d: no field '%s'", line, key));
  }
  const std::string& hex = it->second;
  if (hex.size() % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "line %d: field '%s' has an odd number of hex digits", line, key));
  }
  std::vector<uint8_t> out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    int hi = HexNibble(hex[2 * i]);
    int lo = HexNibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "line %d: field '%s' is not hex at digit %d", line, key, 2 * i));
    }
    out[i] = static_cast<uint8_t>((hi << 4) | lo);
  }
  return out;
}

std::optional<std::string> VectorRecord::SectionValue(
    std::string_view key) const {
  auto it = Lookup(section, key);
  if (it == section.end()) return std::nullopt;
  return it->second;
}

bool VectorRecord::InSection(std::string_view key) const {
  return Lookup(section, key) != section.end();
}

absl::StatusOr<VectorFile> ParseVectorFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int err = errno;
    if (err == ENOENT) {
      return absl::NotFoundError(
          absl::StrFormat("vector file %s not found", path));
    }
    return absl::UnavailableError(absl::StrFormat(
        "cannot open vector file %s: %s", path, std::strerror(err)));
  }

  std::vector<Section> sections(1);
  Block current;
  bool in_header_run = false;  // the previous non-blank line was [..]

  auto flush_block = [&]() {
    if (!current.fields.empty()) sections.back().blocks.push_back(current);
    current = Block();
  };

  std::string raw;
  int line_no = 0;
  while (std::getline(in, raw)) {
    ++line_no;
    absl::string_view line = raw;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    line = absl::StripAsciiWhitespace(line);

    if (line.empty()) {
      flush_block();
      continue;
    }
    if (line.front() == '#') continue;

    if (line.front() == '[') {
      if (line.back() != ']') {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s:%d: unterminated section header", path, line_no));
      }
      flush_block();
      // GCM files open one section with five consecutive bracket lines; a
      // bracket line after data starts a new section.
      if (!in_header_run) sections.emplace_back();
      in_header_run = true;
      absl::string_view inner = line.substr(1, line.size() - 2);
      std::string name, value;
      size_t eq = inner.find('=');
      if (eq == absl::string_view::npos) {
        name = std::string(absl::StripAsciiWhitespace(inner));
      } else {
        name = std::string(absl::StripAsciiWhitespace(inner.substr(0, eq)));
        value = std::string(absl::StripAsciiWhitespace(inner.substr(eq + 1)));
      }
      if (name.empty()) {
        return absl::InvalidArgumentError(
            absl::StrFormat("%s:%d: empty section header", path, line_no));
      }
      sections.back().headers[name] = value;
      continue;
    }
    in_header_run = false;

    std::string key, value;
    size_t eq = line.find('=');
    if (eq == absl::string_view::npos) {
      // A bare word such as GCM's `FAIL`.
      key = std::string(line);
    } else {
      key = std::string(absl::StripAsciiWhitespace(line.substr(0, eq)));
      value = std::string(absl::StripAsciiWhitespace(line.substr(eq + 1)));
    }
    if (key.empty()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s:%d: line has no field name", path, line_no));
    }
    if (current.fields.empty()) current.line = line_no;
    if (Lookup(current.fields, key) != current.fields.end()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s:%d: field '%s' repeated in one block (missing blank line?)", path,
          line_no, key));
    }
    current.fields[key] = value;
  }
  if (in.bad()) {
    return absl::UnavailableError(
        absl::StrFormat("read error in vector file %s", path));
  }
  flush_block();

  VectorFile file;
  file.path = path;
  for (const Section& section : sections) {
    std::map<std::string, std::string> params = section.headers;
    const auto& blocks = section.blocks;
    for (size_t i = 0; i < blocks.size(); ++i) {
      // A block whose fields never recur in the next block holds values for
      // the whole section (SHA Monte `Seed`, RSA `n`/`e`): it joins the
      // section parameters instead of becoming a record.
      if (i + 1 < blocks.size() &&
          Disjoint(KeySet(blocks[i]), KeySet(blocks[i + 1]))) {
        for (const auto& [k, v] : blocks[i].fields) params[k] = v;
        continue;
      }
      VectorRecord record;
      record.fields = blocks[i].fields;
      record.section = params;
      record.line = blocks[i].line;
      file.records.push_back(std::move(record));
    }
  }
  return file;
}

}  // namespace accelcrypt
