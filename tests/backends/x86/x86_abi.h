// SPDX-License-Identifier: Apache-2.0
// Test helper: loads the built x86.so through its ABI entry point (dlopen,
// as the core's loader does) and creates backend instances under a feature
// mask (ACCELCRYPT_X86_DISABLE), plus thin cipher/digest wrappers.
#ifndef ACCELCRYPT_TESTS_X86_X86_ABI_H_
#define ACCELCRYPT_TESTS_X86_X86_ABI_H_

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "accelcrypt/backend.h"

namespace accelcrypt::x86::test {

// Desc returns the x86.so descriptor (loaded once), or NULL with a test
// failure when the module cannot be loaded.
const accelcrypt_backend_desc* Desc();
// EntryForTest returns the module's exported entry point (loaded by Desc()).
accelcrypt_backend_entry_fn EntryForTest();

// Instance is one initialised backend under a mask; torn down on
// destruction.
class Instance {
 public:
  // Create sets ACCELCRYPT_X86_DISABLE=mask (unset when empty), runs init
  // and restores the variable. On failure returns NULL and fills *status /
  // *message when given.
  static std::unique_ptr<Instance> Create(const std::string& mask,
                                          accelcrypt_status* status = nullptr,
                                          std::string* message = nullptr);
  ~Instance();

  void* handle() const { return handle_; }
  std::string Describe() const;
  bool Claims(accelcrypt_alg alg, uint32_t* flags = nullptr) const;
  const accelcrypt_cipher_table* ciphers() const;
  const accelcrypt_digest_table* digests() const;
  const accelcrypt_rng_table* rng() const;

 private:
  explicit Instance(void* handle) : handle_(handle) {}
  void* handle_;
};

// Cipher wraps one accelcrypt_cipher_ctx; every method returns the ABI code.
class Cipher {
 public:
  Cipher(const Instance& inst, accelcrypt_alg alg);
  Cipher(const accelcrypt_cipher_table* t, accelcrypt_cipher_ctx* ctx)
      : t_(t), ctx_(ctx) {}
  ~Cipher();
  bool ok() const { return ctx_ != nullptr; }
  // Init passes a NULL key when `key` is empty (keep the previous key).
  accelcrypt_status Init(bool enc, const std::vector<uint8_t>& key,
                         const std::vector<uint8_t>& iv);
  accelcrypt_status Update(const uint8_t* in, size_t len, uint8_t* out);
  accelcrypt_status Aad(const uint8_t* aad, size_t len);
  accelcrypt_status Final();
  accelcrypt_status GetTag(uint8_t* tag, size_t len);
  accelcrypt_status SetTag(const uint8_t* tag, size_t len);
  accelcrypt_status GetState(accelcrypt_cipher_state* st);
  accelcrypt_status SetState(const accelcrypt_cipher_state& st);
  std::unique_ptr<Cipher> Dup();
  const std::string& last_error() const { return last_error_; }
  // The raw table and context, for callers (the benchmark) that want no
  // wrapper cost per call.
  const accelcrypt_cipher_table* table() const { return t_; }
  accelcrypt_cipher_ctx* ctx() const { return ctx_; }

 private:
  accelcrypt_status Check(accelcrypt_status s, const accelcrypt_error& e);
  const accelcrypt_cipher_table* t_ = nullptr;
  accelcrypt_cipher_ctx* ctx_ = nullptr;
  std::string last_error_;
};

// AlgName gives e.g. "AES-128-GCM" for messages.
std::string AlgName(accelcrypt_alg alg);

// The masks that force each implementation on a CPU that has them all.
struct MaskCase {
  const char* name;  // test-name suffix
  const char* mask;  // ACCELCRYPT_X86_DISABLE value
  const char* aes_parallel;
  const char* gcm;
};
const std::vector<MaskCase>& AllMasks();
// PrintTo names a mask case in gtest output.
void PrintTo(const MaskCase& m, std::ostream* os);

}  // namespace accelcrypt::x86::test

#endif  // ACCELCRYPT_TESTS_X86_X86_ABI_H_
