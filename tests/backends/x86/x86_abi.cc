// SPDX-License-Identifier: Apache-2.0
#include "tests/backends/x86/x86_abi.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

namespace accelcrypt::x86::test {

namespace {
accelcrypt_backend_entry_fn g_entry = nullptr;
}  // namespace

accelcrypt_backend_entry_fn EntryForTest() {
  Desc();
  return g_entry;
}

const accelcrypt_backend_desc* Desc() {
  static const accelcrypt_backend_desc* desc = []() {
    const std::string path = std::string(ACCELCRYPT_X86_MODULE_DIR) + "/x86.so";
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      ADD_FAILURE() << "dlopen " << path << ": " << dlerror();
      return static_cast<const accelcrypt_backend_desc*>(nullptr);
    }
    auto entry = reinterpret_cast<accelcrypt_backend_entry_fn>(
        dlsym(h, ACCELCRYPT_BACKEND_ENTRY_SYMBOL));
    if (entry == nullptr) {
      ADD_FAILURE() << "no " << ACCELCRYPT_BACKEND_ENTRY_SYMBOL;
      return static_cast<const accelcrypt_backend_desc*>(nullptr);
    }
    g_entry = entry;
    return entry(ACCELCRYPT_ABI_VERSION);
  }();
  return desc;
}

std::unique_ptr<Instance> Instance::Create(const std::string& mask,
                                           accelcrypt_status* status,
                                           std::string* message) {
  const accelcrypt_backend_desc* d = Desc();
  if (d == nullptr) return nullptr;
  const char* old = getenv("ACCELCRYPT_X86_DISABLE");
  std::string saved = old ? old : "";
  if (mask.empty()) {
    unsetenv("ACCELCRYPT_X86_DISABLE");
  } else {
    setenv("ACCELCRYPT_X86_DISABLE", mask.c_str(), 1);
  }
  void* handle = nullptr;
  accelcrypt_error err = {};
  accelcrypt_status s = d->init(nullptr, &handle, &err);
  if (old) {
    setenv("ACCELCRYPT_X86_DISABLE", saved.c_str(), 1);
  } else {
    unsetenv("ACCELCRYPT_X86_DISABLE");
  }
  if (status) *status = s;
  if (message) *message = s == ACCELCRYPT_OK ? "" : err.message;
  if (s != ACCELCRYPT_OK) return nullptr;
  return std::unique_ptr<Instance>(new Instance(handle));
}

Instance::~Instance() { Desc()->teardown(handle_); }

std::string Instance::Describe() const {
  char buf[1024];
  Desc()->describe(handle_, buf, sizeof(buf));
  return buf;
}

bool Instance::Claims(accelcrypt_alg alg, uint32_t* flags) const {
  const accelcrypt_capability* caps = nullptr;
  size_t n = 0;
  if (Desc()->get_capabilities(handle_, &caps, &n, nullptr) != ACCELCRYPT_OK) {
    return false;
  }
  for (size_t i = 0; i < n; ++i) {
    if (caps[i].alg == alg) {
      if (flags) *flags = caps[i].flags;
      return true;
    }
  }
  return false;
}

const accelcrypt_cipher_table* Instance::ciphers() const {
  return static_cast<const accelcrypt_cipher_table*>(
      Desc()->query_family(handle_, ACCELCRYPT_FAMILY_CIPHER));
}
const accelcrypt_digest_table* Instance::digests() const {
  return static_cast<const accelcrypt_digest_table*>(
      Desc()->query_family(handle_, ACCELCRYPT_FAMILY_DIGEST));
}
const accelcrypt_rng_table* Instance::rng() const {
  return static_cast<const accelcrypt_rng_table*>(
      Desc()->query_family(handle_, ACCELCRYPT_FAMILY_RNG));
}

Cipher::Cipher(const Instance& inst, accelcrypt_alg alg) : t_(inst.ciphers()) {
  if (t_ == nullptr) return;
  accelcrypt_error e = {};
  if (t_->newctx(inst.handle(), alg, &ctx_, &e) != ACCELCRYPT_OK) {
    last_error_ = e.message;
    ctx_ = nullptr;
  }
}

Cipher::~Cipher() {
  if (t_ && ctx_) t_->freectx(ctx_);
}

accelcrypt_status Cipher::Check(accelcrypt_status s,
                                const accelcrypt_error& e) {
  last_error_ = s == ACCELCRYPT_OK ? "" : e.message;
  return s;
}

accelcrypt_status Cipher::Init(bool enc, const std::vector<uint8_t>& key,
                               const std::vector<uint8_t>& iv) {
  accelcrypt_error e = {};
  return Check(
      t_->init(ctx_, enc ? 1 : 0, key.empty() ? nullptr : key.data(),
               key.size(), iv.empty() ? nullptr : iv.data(), iv.size(), &e),
      e);
}
accelcrypt_status Cipher::Update(const uint8_t* in, size_t len, uint8_t* out) {
  accelcrypt_error e = {};
  return Check(t_->update(ctx_, in, len, out, &e), e);
}
accelcrypt_status Cipher::Aad(const uint8_t* aad, size_t len) {
  accelcrypt_error e = {};
  return Check(t_->aad(ctx_, aad, len, &e), e);
}
accelcrypt_status Cipher::Final() {
  accelcrypt_error e = {};
  return Check(t_->final(ctx_, &e), e);
}
accelcrypt_status Cipher::GetTag(uint8_t* tag, size_t len) {
  accelcrypt_error e = {};
  return Check(t_->get_tag(ctx_, tag, len, &e), e);
}
accelcrypt_status Cipher::SetTag(const uint8_t* tag, size_t len) {
  accelcrypt_error e = {};
  return Check(t_->set_tag(ctx_, tag, len, &e), e);
}
accelcrypt_status Cipher::GetState(accelcrypt_cipher_state* st) {
  accelcrypt_error e = {};
  return Check(t_->get_state(ctx_, st, &e), e);
}
accelcrypt_status Cipher::SetState(const accelcrypt_cipher_state& st) {
  accelcrypt_error e = {};
  return Check(t_->set_state(ctx_, &st, &e), e);
}
std::unique_ptr<Cipher> Cipher::Dup() {
  accelcrypt_cipher_ctx* c = nullptr;
  accelcrypt_error e = {};
  if (Check(t_->dupctx(ctx_, &c, &e), e) != ACCELCRYPT_OK) return nullptr;
  return std::make_unique<Cipher>(t_, c);
}

std::string AlgName(accelcrypt_alg alg) {
  static const char* kModes[] = {"?",   "ECB", "CBC", "CFB128",
                                 "OFB", "CTR", "GCM"};
  const uint32_t mode = ACCELCRYPT_CIPHER_MODE(alg);
  return "AES-" + std::to_string(ACCELCRYPT_CIPHER_KEY_BYTES(alg) * 8) + "-" +
         (mode <= 6 ? kModes[mode] : "?");
}

const std::vector<MaskCase>& AllMasks() {
  static const std::vector<MaskCase> masks = {
      {"vaes512", "", "vaes512", "vaes512-vpclmulqdq"},
      {"vaes256", "vaes512", "vaes256", "vaes256-vpclmulqdq"},
      {"aesni", "vaes", "aesni", "aesni-pclmul"},
      {"aesni_novpclmul", "vpclmulqdq", "vaes512", "aesni-pclmul"},
  };
  return masks;
}

void PrintTo(const MaskCase& m, std::ostream* os) {
  *os << m.name << " (ACCELCRYPT_X86_DISABLE=\"" << m.mask << "\")";
}

}  // namespace accelcrypt::x86::test
