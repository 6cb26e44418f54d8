// SPDX-License-Identifier: Apache-2.0
// TempFile: the parsers that read a path (configuration, vector files, PIN
// markers) get the fuzzer's bytes through one file per process, rewritten
// for each input.
#ifndef ACCELCRYPT_TESTS_FUZZ_TEMP_FILE_H_
#define ACCELCRYPT_TESTS_FUZZ_TEMP_FILE_H_

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace accelcrypt::fuzz {

class TempFile {
 public:
  explicit TempFile(const char* stem) {
    const char* tmp = std::getenv("TMPDIR");
    path_ = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/" +
            stem + "-" + std::to_string(getpid());
  }
  ~TempFile() { unlink(path_.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  // Write replaces the file's contents; false when it cannot.
  bool Write(const uint8_t* data, size_t size) {
    FILE* f = std::fopen(path_.c_str(), "wb");
    if (f == nullptr) return false;
    bool ok = std::fwrite(data, 1, size, f) == size;
    return std::fclose(f) == 0 && ok;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace accelcrypt::fuzz

#endif  // ACCELCRYPT_TESTS_FUZZ_TEMP_FILE_H_
