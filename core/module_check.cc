// SPDX-License-Identifier: Apache-2.0
#include "core/module_check.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "accelcrypt/backend.h"

namespace accelcrypt {
namespace {

// The identity of an ELF object: what must match between the loader and a
// module it loads.
struct ElfIdentity {
  unsigned char elf_class = 0;  // ELFCLASS32 / ELFCLASS64
  unsigned char data = 0;       // ELFDATA2LSB / ELFDATA2MSB
  uint16_t machine = 0;         // EM_*
};

bool HostIsLittleEndian() {
  const uint16_t one = 1;
  unsigned char first;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

// ReadAt reads exactly `len` bytes at `offset`; false at end of file or
// on a read error.
bool ReadAt(int fd, uint64_t offset, void* out, size_t len) {
  auto* p = static_cast<unsigned char*>(out);
  size_t done = 0;
  while (done < len) {
    ssize_t n =
        pread(fd, p + done, len - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// File is a module file read through one prefix: the ELF header, the
// program headers and the notes of a shared object lie in its first page,
// so one read serves the whole check (the loader of every process that
// loads the provider pays each system call here). Reads beyond the prefix
// go to the file.
struct File {
  static constexpr size_t kPrefix = 4096;
  int fd = -1;
  unsigned char prefix[kPrefix];
  size_t prefix_len = 0;  // bytes of the file in `prefix`
  // Fill reads the prefix; false on a read error.
  bool Fill() {
    while (prefix_len < kPrefix) {
      ssize_t n = pread(fd, prefix + prefix_len, kPrefix - prefix_len,
                        static_cast<off_t>(prefix_len));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return false;
      if (n == 0) break;
      prefix_len += static_cast<size_t>(n);
    }
    return true;
  }
  bool Read(uint64_t offset, void* out, size_t len) const {
    if (offset <= prefix_len && len <= prefix_len - offset) {
      std::memcpy(out, prefix + offset, len);
      return true;
    }
    // The prefix holds the whole file when it is shorter than kPrefix.
    if (prefix_len < kPrefix) return false;
    return ReadAt(fd, offset, out, len);
  }
};

// The ELF header fields the check reads, in host order, for either class.
struct Header {
  ElfIdentity id;
  uint16_t type = 0;
  uint64_t phoff = 0;
  uint16_t phentsize = 0;
  uint16_t phnum = 0;
};

// Host-order conversion of a field stored in the file's byte order (the
// file's order equals the host's once the identity matched, but the reader
// stays correct for the error messages before that).
template <typename T>
T FromFile(T v, bool file_le) {
  if (file_le == HostIsLittleEndian()) return v;
  T out = 0;
  for (size_t i = 0; i < sizeof(T); ++i) {
    out = static_cast<T>((out << 8) | ((v >> (8 * i)) & 0xff));
  }
  return out;
}

// ReadEhdr fills the class-dependent fields of `h` from an Elf32_Ehdr or
// Elf64_Ehdr.
template <typename Ehdr>
bool ReadEhdr(const File& f, bool le, Header* h) {
  Ehdr e;
  if (!f.Read(0, &e, sizeof(e))) return false;
  h->id.machine = FromFile(e.e_machine, le);
  h->type = FromFile(e.e_type, le);
  h->phoff = FromFile(e.e_phoff, le);
  h->phentsize = FromFile(e.e_phentsize, le);
  h->phnum = FromFile(e.e_phnum, le);
  return true;
}

// Segment is what the check reads of one program header, in host order.
struct Segment {
  uint32_t type;
  uint64_t offset;
  uint64_t filesz;
};

template <typename Phdr>
bool ReadPhdr(const File& f, uint64_t at, bool le, Segment* out) {
  Phdr ph;
  if (!f.Read(at, &ph, sizeof(ph))) return false;
  out->type = FromFile(ph.p_type, le);
  out->offset = FromFile(ph.p_offset, le);
  out->filesz = FromFile(ph.p_filesz, le);
  return true;
}

absl::StatusOr<Header> ReadHeader(const File& f) {
  unsigned char ident[EI_NIDENT];
  if (!f.Read(0, ident, sizeof(ident)) ||
      std::memcmp(ident, ELFMAG, SELFMAG) != 0) {
    return absl::FailedPreconditionError("not an ELF file");
  }
  Header h;
  h.id.elf_class = ident[EI_CLASS];
  h.id.data = ident[EI_DATA];
  const bool le = h.id.data == ELFDATA2LSB;
  if (h.id.elf_class == ELFCLASS64) {
    if (!ReadEhdr<Elf64_Ehdr>(f, le, &h)) {
      return absl::FailedPreconditionError("truncated ELF header");
    }
  } else if (h.id.elf_class == ELFCLASS32) {
    if (!ReadEhdr<Elf32_Ehdr>(f, le, &h)) {
      return absl::FailedPreconditionError("truncated ELF header");
    }
  } else {
    return absl::FailedPreconditionError(
        absl::StrFormat("unknown ELF class %d", ident[EI_CLASS]));
  }
  return h;
}

// SelfIdentity is the identity of the object this function is linked into
// (the provider, the PKCS#11 module or the tool): what the loader of this
// process accepts. Read from that object's ELF header as it is mapped (the
// first loaded segment starts at the header), not from its file: no system
// call. Class and byte order are the compiled ones; the machine is 0 (not
// checked) when the mapped header cannot be read.
ElfIdentity SelfIdentity() {
  static const ElfIdentity id = [] {
    ElfIdentity self;
    self.elf_class = sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32;
    self.data = HostIsLittleEndian() ? ELFDATA2LSB : ELFDATA2MSB;
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(&CheckLoadableModule), &info) == 0 ||
        info.dli_fbase == nullptr) {
      return self;
    }
    const auto* ident = static_cast<const unsigned char*>(info.dli_fbase);
    if (std::memcmp(ident, ELFMAG, SELFMAG) != 0 ||
        ident[EI_CLASS] != self.elf_class || ident[EI_DATA] != self.data) {
      return self;
    }
    using Ehdr = std::conditional_t<sizeof(void*) == 8, Elf64_Ehdr, Elf32_Ehdr>;
    Ehdr e;
    std::memcpy(&e, ident, sizeof(e));
    self.machine = e.e_machine;
    return self;
  }();
  return id;
}

// ReadNotes appends the load hints found in one PT_NOTE segment (already
// checked to lie inside the file). Notes of other owners are skipped; a
// malformed note ends the segment's reading (the hints are advice: a module
// whose note cannot be read is simply loaded).
void ReadNotes(const File& f, const Segment& seg, bool le, LoadHints* hints) {
  if (seg.filesz > (64u << 10)) return;  // no note table is this big
  std::vector<unsigned char> buf(static_cast<size_t>(seg.filesz));
  if (buf.empty() || !f.Read(seg.offset, buf.data(), buf.size())) return;
  auto align4 = [](uint64_t v) { return (v + 3) & ~uint64_t{3}; };
  uint64_t at = 0;
  while (at + 12 <= buf.size()) {
    uint32_t namesz, descsz, type;
    std::memcpy(&namesz, &buf[at], 4);
    std::memcpy(&descsz, &buf[at + 4], 4);
    std::memcpy(&type, &buf[at + 8], 4);
    namesz = FromFile(namesz, le);
    descsz = FromFile(descsz, le);
    type = FromFile(type, le);
    const uint64_t name_at = at + 12;
    const uint64_t desc_at = name_at + align4(namesz);
    const uint64_t next = desc_at + align4(descsz);
    if (desc_at > buf.size() || next > buf.size() ||
        descsz > buf.size() - desc_at) {
      return;
    }
    const char* name = reinterpret_cast<const char*>(&buf[name_at]);
    if (type == ACCELCRYPT_NOTE_LOAD_HINTS &&
        namesz == sizeof(ACCELCRYPT_NOTE_NAME) &&
        std::memcmp(name, ACCELCRYPT_NOTE_NAME, namesz) == 0) {
      const char* p = reinterpret_cast<const char*>(&buf[desc_at]);
      const char* end = p + descsz;
      while (p < end) {
        const char* nul = static_cast<const char*>(std::memchr(p, 0, end - p));
        if (nul == nullptr) break;  // an unterminated last string is dropped
        std::string entry(p, nul);
        const size_t eq = entry.find('=');
        if (eq != std::string::npos && eq > 0) {
          hints->emplace_back(entry.substr(0, eq), entry.substr(eq + 1));
        }
        p = nul + 1;
      }
    }
    at = next;
  }
}

const char* ClassName(unsigned char c) {
  return c == ELFCLASS64 ? "64-bit" : c == ELFCLASS32 ? "32-bit" : "unknown";
}

// CheckFile is CheckLoadableModule without the clearing of hints on refusal.
absl::Status CheckFile(const std::string& path, LoadHints* hints) {
  File f;
  f.fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (f.fd < 0) {
    return absl::FailedPreconditionError(
        absl::StrFormat("cannot open: %s", std::strerror(errno)));
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { close(fd); }
  } closer{f.fd};
  struct stat st;
  if (fstat(f.fd, &st) != 0) {
    return absl::FailedPreconditionError(
        absl::StrFormat("cannot stat: %s", std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError("not a regular file");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (!f.Fill()) {
    return absl::FailedPreconditionError(
        absl::StrFormat("cannot read: %s", std::strerror(errno)));
  }
  absl::StatusOr<Header> h = ReadHeader(f);
  if (!h.ok()) return h.status();

  const ElfIdentity self = SelfIdentity();
  if (h->id.elf_class != self.elf_class) {
    return absl::FailedPreconditionError(
        absl::StrFormat("wrong ELF class: %s, this process is %s",
                        ClassName(h->id.elf_class), ClassName(self.elf_class)));
  }
  if (h->id.data != self.data) {
    return absl::FailedPreconditionError("wrong byte order for this process");
  }
  if (h->id.machine != self.machine && self.machine != 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "built for another machine (ELF machine %d, this process is %d)",
        h->id.machine, self.machine));
  }
  if (h->type != ET_DYN) {
    return absl::FailedPreconditionError("not a shared object");
  }
  const bool is64 = h->id.elf_class == ELFCLASS64;
  const size_t want_entsize = is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
  if (h->phnum == 0 || h->phentsize < want_entsize) {
    return absl::FailedPreconditionError("no usable program headers");
  }
  const uint64_t ph_end =
      h->phoff + static_cast<uint64_t>(h->phnum) * h->phentsize;
  if (h->phoff > size || ph_end > size) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "truncated: program headers end at byte %d, file has %d", ph_end,
        size));
  }
  const bool le = h->id.data == ELFDATA2LSB;
  for (uint16_t i = 0; i < h->phnum; ++i) {
    const uint64_t at = h->phoff + static_cast<uint64_t>(i) * h->phentsize;
    Segment seg;
    if (!(is64 ? ReadPhdr<Elf64_Phdr>(f, at, le, &seg)
               : ReadPhdr<Elf32_Phdr>(f, at, le, &seg))) {
      return absl::FailedPreconditionError("truncated program header");
    }
    if (seg.type == PT_NOTE && hints != nullptr && seg.offset <= size &&
        seg.filesz <= size - seg.offset) {
      ReadNotes(f, seg, le, hints);
    }
    if (seg.type != PT_LOAD && seg.type != PT_DYNAMIC) continue;
    if (seg.offset > size || seg.filesz > size - seg.offset) {
      return absl::FailedPreconditionError(
          absl::StrFormat("truncated: segment %d ends at byte %d, file has %d",
                          i, seg.offset + seg.filesz, size));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckLoadableModule(const std::string& path, LoadHints* hints) {
  if (hints != nullptr) hints->clear();
  absl::Status st = CheckFile(path, hints);
  // A refused file gives no hints, whatever its notes said before the
  // defect was found.
  if (!st.ok() && hints != nullptr) hints->clear();
  return st;
}

}  // namespace accelcrypt
