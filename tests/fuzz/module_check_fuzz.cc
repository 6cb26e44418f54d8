// SPDX-License-Identifier: Apache-2.0
// The backend file check (core/module_check.cc, CheckLoadableModule): the
// registry runs it over every *.so in backend_dir before dlopen, so a file
// any local user can place there (a shared backend_dir, a damaged package) is
// read by every process that loads the provider. It parses the ELF header,
// the program header table and the load-hints notes.
//
// The first input byte picks the shape:
//  - low bit clear: the remaining bytes are the whole file;
//  - low bit set: a valid ELF header of this process's class, byte order and
//    machine, with a program header table of one PT_NOTE segment (and, when
//    bit 1 is set, a PT_LOAD segment of the fuzzer's choosing) covering the
//    remaining bytes, so the note reader sees arbitrary note tables.
// Nothing may crash. A refused file yields no hints; every hint has a
// non-empty key without '=' and the key and value hold no NUL.
#include <elf.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/module_check.h"
#include "tests/fuzz/temp_file.h"

namespace {

#if defined(__LP64__)
using Ehdr = Elf64_Ehdr;
using Phdr = Elf64_Phdr;
constexpr unsigned char kClass = ELFCLASS64;
#else
using Ehdr = Elf32_Ehdr;
using Phdr = Elf32_Phdr;
constexpr unsigned char kClass = ELFCLASS32;
#endif

// This process's own ELF machine: what the check compares a module with.
uint16_t SelfMachine() {
  static const uint16_t machine = [] {
    Ehdr self{};
    FILE* f = std::fopen("/proc/self/exe", "rb");
    if (f == nullptr) return uint16_t{0};
    const bool ok = std::fread(&self, sizeof(self), 1, f) == 1;
    std::fclose(f);
    return ok ? self.e_machine : uint16_t{0};
  }();
  return machine;
}

// Wrapped builds a shared object's headers around `body` (the note segment).
std::string Wrapped(const uint8_t* body, size_t size, bool with_load,
                    uint64_t load_offset, uint64_t load_size) {
  Ehdr e{};
  std::memcpy(e.e_ident, ELFMAG, SELFMAG);
  e.e_ident[EI_CLASS] = kClass;
  const uint16_t one = 1;
  unsigned char first;
  std::memcpy(&first, &one, 1);
  e.e_ident[EI_DATA] = first == 1 ? ELFDATA2LSB : ELFDATA2MSB;
  e.e_ident[EI_VERSION] = EV_CURRENT;
  e.e_type = ET_DYN;
  e.e_machine = SelfMachine();
  e.e_version = EV_CURRENT;
  e.e_phoff = sizeof(Ehdr);
  e.e_ehsize = sizeof(Ehdr);
  e.e_phentsize = sizeof(Phdr);
  e.e_phnum = with_load ? 2 : 1;
  const uint64_t body_at = sizeof(Ehdr) + e.e_phnum * sizeof(Phdr);
  Phdr note{};
  note.p_type = PT_NOTE;
  note.p_offset = body_at;
  note.p_filesz = size;
  Phdr load{};
  load.p_type = PT_LOAD;
  load.p_offset = static_cast<decltype(load.p_offset)>(load_offset);
  load.p_filesz = static_cast<decltype(load.p_filesz)>(load_size);
  std::string file(reinterpret_cast<const char*>(&e), sizeof(e));
  file.append(reinterpret_cast<const char*>(&note), sizeof(note));
  if (with_load)
    file.append(reinterpret_cast<const char*>(&load), sizeof(load));
  file.append(reinterpret_cast<const char*>(body), size);
  return file;
}

uint64_t ReadU64(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n && i < 8; ++i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static accelcrypt::fuzz::TempFile file("accelcrypt-fuzz-module.so");
  if (size == 0) return 0;
  const uint8_t shape = data[0];
  ++data;
  --size;
  std::string bytes;
  if ((shape & 1) == 0) {
    bytes.assign(reinterpret_cast<const char*>(data), size);
  } else {
    const bool with_load = (shape & 2) != 0;
    uint64_t load_offset = 0;
    uint64_t load_size = 0;
    if (with_load && size >= 4) {
      // Small offsets and sizes, which land inside or just past the file.
      load_offset = ReadU64(data, 2);
      load_size = ReadU64(data + 2, 2);
      data += 4;
      size -= 4;
    }
    bytes = Wrapped(data, size, with_load, load_offset, load_size);
  }
  if (!file.Write(reinterpret_cast<const uint8_t*>(bytes.data()),
                  bytes.size())) {
    return 0;
  }
  accelcrypt::LoadHints hints;
  const bool ok = accelcrypt::CheckLoadableModule(file.path(), &hints).ok();
  if (!ok && !hints.empty()) __builtin_trap();  // refused yet hinted
  for (const auto& [key, value] : hints) {
    if (key.empty() || key.find('=') != std::string::npos ||
        key.find('\0') != std::string::npos ||
        value.find('\0') != std::string::npos) {
      __builtin_trap();
    }
  }
  return 0;
}
