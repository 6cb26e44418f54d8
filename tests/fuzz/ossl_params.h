// SPDX-License-Identifier: Apache-2.0
// FuzzParams: an OSSL_PARAM array built from fuzzer bytes. Names come from
// the parameters OpenSSL defines for the operation (and a few invented
// ones); each gets any of the OSSL_PARAM types, sized from 0 bytes to far
// more than the parameter means (the "wrong-typed, oversized" cases). The
// array owns its buffers; return sizes written by get_params stay inside
// them.
#ifndef ACCELCRYPT_TESTS_FUZZ_OSSL_PARAMS_H_
#define ACCELCRYPT_TESTS_FUZZ_OSSL_PARAMS_H_

#include <openssl/core.h>
#include <openssl/params.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_input.h"

namespace accelcrypt::fuzz {

class FuzzParams {
 public:
  // Read builds up to 6 parameters from `in`, names from `names`.
  void Read(FuzzInput& in, const std::vector<const char*>& names) {
    const size_t n = in.Pick(7);
    for (size_t i = 0; i < n && !in.empty(); ++i) {
      std::string name;
      if (in.Pick(8) == 0) {
        name = in.String();  // unknown (or a known one spelt by the fuzzer)
      } else {
        name = names[in.Pick(names.size())];
      }
      names_.push_back(std::make_unique<std::string>(name));
      const unsigned type = in.Pick(7);
      size_t size;
      switch (in.Pick(4)) {
        case 0:
          size = 4;
          break;
        case 1:
          size = 8;
          break;
        case 2:
          size = in.Pick(17);
          break;
        default:
          size = in.Pick(600);
          break;
      }
      auto buf = std::make_unique<std::vector<uint8_t>>(in.Bytes(size));
      buf->resize(size + 1, 0);  // never a zero-sized allocation
      OSSL_PARAM p{};
      p.key = names_.back()->c_str();
      p.data = buf->data();
      p.data_size = size;
      p.return_size = OSSL_PARAM_UNMODIFIED;
      switch (type) {
        case 0:
          p.data_type = OSSL_PARAM_INTEGER;
          break;
        case 1:
          p.data_type = OSSL_PARAM_UNSIGNED_INTEGER;
          break;
        case 2:
          p.data_type = OSSL_PARAM_REAL;
          break;
        case 3:
          p.data_type = OSSL_PARAM_UTF8_STRING;
          // NUL-terminated past data_size, as OpenSSL's API contract asks
          // of callers (libcrypto itself reads such strings as C strings);
          // the bytes before may hold NULs of their own.
          (*buf)[size] = 0;
          break;
        case 4:
          p.data_type = OSSL_PARAM_OCTET_STRING;
          break;
        case 5:
        case 6: {
          // Pointer types point at a second buffer.
          auto target = std::make_unique<std::vector<uint8_t>>(in.Blob());
          target->push_back(0);
          ptrs_.push_back(std::make_unique<void*>(target->data()));
          p.data_type = type == 5 ? OSSL_PARAM_UTF8_PTR : OSSL_PARAM_OCTET_PTR;
          p.data = ptrs_.back().get();
          p.data_size = target->size() - 1;
          bufs_.push_back(std::move(target));
          break;
        }
      }
      bufs_.push_back(std::move(buf));
      params_.push_back(p);
    }
    params_.push_back(OSSL_PARAM_construct_end());
  }
  OSSL_PARAM* get() { return params_.data(); }
  // OrNull is the array, or nullptr (as callers may pass) for an empty one.
  OSSL_PARAM* OrNull() { return params_.size() > 1 ? params_.data() : nullptr; }

 private:
  std::vector<std::unique_ptr<std::string>> names_;
  std::vector<std::unique_ptr<std::vector<uint8_t>>> bufs_;
  std::vector<std::unique_ptr<void*>> ptrs_;
  std::vector<OSSL_PARAM> params_;
};

}  // namespace accelcrypt::fuzz

#endif  // ACCELCRYPT_TESTS_FUZZ_OSSL_PARAMS_H_
