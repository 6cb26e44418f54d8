// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_CORE_MODULE_CHECK_H_
#define ACCELCRYPT_CORE_MODULE_CHECK_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace accelcrypt {

// CheckLoadableModule decides, by reading the file and never mapping it,
// whether `path` is a plausible shared object for this process before the
// registry hands it to dlopen. dlopen maps a file's segments as its program
// headers describe them; a truncated file makes the loader touch pages past
// the end of the file and the process dies with SIGBUS, which `soft_load`
// cannot catch. So the check refuses, with a reason naming the defect:
//  - anything that is not a regular file;
//  - a file without the ELF magic, or of another class (32/64-bit), byte
//    order or machine than the object this code is linked into;
//  - an ELF file that is not a shared object (ET_DYN);
//  - a program header table or any PT_LOAD segment that ends past the end
//    of the file (truncation).
// OK means only "dlopen will not crash on the file's shape"; the entry symbol
// and ABI version are checked after loading, as before.
//
// When `hints` is not null, it receives the module's load hints (the
// "key=value" strings of its ACCELCRYPT_NOTE_LOAD_HINTS note, accelcrypt/
// backend.h), read from its PT_NOTE segments in the same pass; empty when
// it has none.
using LoadHints = std::vector<std::pair<std::string, std::string>>;
absl::Status CheckLoadableModule(const std::string& path,
                                 LoadHints* hints = nullptr);

}  // namespace accelcrypt

#endif  // ACCELCRYPT_CORE_MODULE_CHECK_H_
