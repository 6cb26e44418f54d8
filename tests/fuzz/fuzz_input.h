// SPDX-License-Identifier: Apache-2.0
// FuzzInput: reads typed values off the fuzzer's byte string (a shrinking
// cursor, like LLVM's FuzzedDataProvider but with no dependency on clang's
// headers, so the targets also build as corpus replayers with g++).
// Reading past the end yields zeros / empty strings: every input is valid.
#ifndef ACCELCRYPT_TESTS_FUZZ_FUZZ_INPUT_H_
#define ACCELCRYPT_TESTS_FUZZ_FUZZ_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace accelcrypt::fuzz {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : p_(data), n_(size) {}

  bool empty() const { return n_ == 0; }
  size_t remaining() const { return n_; }

  uint8_t Byte() {
    if (n_ == 0) return 0;
    --n_;
    return *p_++;
  }
  bool Bool() { return (Byte() & 1) != 0; }
  uint32_t U32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = (v << 8) | Byte();
    return v;
  }
  uint64_t U64() { return (static_cast<uint64_t>(U32()) << 32) | U32(); }
  // Pick returns a value in [0, n) (n > 0).
  size_t Pick(size_t n) { return n <= 256 ? Byte() % n : U32() % n; }
  // Length returns a "wild" length: mostly small, sometimes 0, huge or
  // just past a boundary, the lengths that break length checks.
  uint64_t WildLength(uint64_t typical) {
    switch (Byte() % 8) {
      case 0:
        return 0;
      case 1:
        return typical;
      case 2:
        return typical + 1;
      case 3:
        return typical > 0 ? typical - 1 : 0;
      case 4:
        return U64();
      case 5:
        return U32();
      default:
        return Byte();
    }
  }
  // Bytes returns up to n bytes (fewer at the end of the input).
  std::vector<uint8_t> Bytes(size_t n) {
    if (n > n_) n = n_;
    std::vector<uint8_t> v(p_, p_ + n);
    p_ += n;
    n_ -= n;
    return v;
  }
  // Blob reads a one-byte length and that many bytes.
  std::vector<uint8_t> Blob() { return Bytes(Byte()); }
  std::string String() {
    std::vector<uint8_t> b = Blob();
    return std::string(b.begin(), b.end());
  }
  std::vector<uint8_t> Rest() { return Bytes(n_); }

 private:
  const uint8_t* p_;
  size_t n_;
};

}  // namespace accelcrypt::fuzz

#endif  // ACCELCRYPT_TESTS_FUZZ_FUZZ_INPUT_H_
