// SPDX-License-Identifier: Apache-2.0
#include "core/backend.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "core/algorithms.h"
#include "core/config.h"
#include "core/status.h"

namespace accelcrypt {
namespace {

// Reads a table field only when the backend's table is large enough to hold
// it (tables grow at the end; STYLE.md §2).
template <typename Table, typename Field>
bool HasField(const Table* table, Field Table::*field) {
  if (table == nullptr) return false;
  const Table probe{};
  size_t end = reinterpret_cast<const char*>(&(probe.*field)) -
               reinterpret_cast<const char*>(&probe) + sizeof(Field);
  return table->struct_size >= end && table->*field != nullptr;
}

absl::Status Check(accelcrypt_status code, const accelcrypt_error& err,
                   std::string_view backend, std::string_view what) {
  if (code == ACCELCRYPT_OK) return absl::OkStatus();
  std::string_view msg(err.message, strnlen(err.message, sizeof(err.message)));
  if (msg.empty()) {
    return FromAbi(code, absl::StrFormat("%s: %s failed", backend, what));
  }
  return FromAbi(code, msg);
}

// CallTable runs one table function `fn(&err)` on the per-call path: the
// error record gets an empty message instead of a 260-byte zero fill (the
// backend writes a terminated message on error), and success returns
// without Check. `backend` is taken by reference and `what` as a literal so
// that nothing for the error path is held in registers across the call.
template <typename Fn>
[[gnu::always_inline]] inline absl::Status CallTable(
    const std::string_view& backend, const char* what, Fn&& fn) {
  accelcrypt_error err;
  err.message[0] = '\0';
  accelcrypt_status rc = fn(&err);
  if (rc == ACCELCRYPT_OK) [[likely]]
    return absl::OkStatus();
  return Check(rc, err, backend, what);
}

class BackendCipher final : public Cipher {
 public:
  BackendCipher(const accelcrypt_cipher_table* table,
                accelcrypt_cipher_ctx* ctx, const AlgorithmInfo& info,
                std::string_view backend)
      : table_(table), ctx_(ctx), info_(info), backend_(backend) {}
  ~BackendCipher() override { table_->freectx(ctx_); }

  // Init, Aad, Final and the tag calls run once or twice per AEAD message,
  // so they go through CallTable like Update.
  absl::Status Init(bool encrypt, absl::Span<const uint8_t> key,
                    absl::Span<const uint8_t> iv) override {
    return CallTable(backend_, "cipher init", [&](accelcrypt_error* err) {
      return table_->init(ctx_, encrypt ? 1 : 0, key.data(), key.size(),
                          iv.data(), iv.size(), err);
    });
  }
  absl::Status Update(absl::Span<const uint8_t> in,
                      absl::Span<uint8_t> out) override {
    if (out.size() < in.size()) [[unlikely]] {
      return absl::OutOfRangeError(absl::StrFormat(
          "%s: output buffer of %d bytes is too small for %d bytes", info_.name,
          out.size(), in.size()));
    }
    return CallTable(backend_, "cipher update", [&](accelcrypt_error* err) {
      return table_->update(ctx_, in.data(), in.size(), out.data(), err);
    });
  }
  absl::Status Aad(absl::Span<const uint8_t> aad) override {
    if (!HasField(table_, &accelcrypt_cipher_table::aad)) {
      return absl::UnimplementedError(
          absl::StrFormat("%s: %s has no AAD", backend_, info_.name));
    }
    return CallTable(backend_, "cipher aad", [&](accelcrypt_error* err) {
      return table_->aad(ctx_, aad.data(), aad.size(), err);
    });
  }
  absl::Status Final() override {
    if (!HasField(table_, &accelcrypt_cipher_table::final)) {
      return absl::OkStatus();
    }
    return CallTable(backend_, "cipher final", [&](accelcrypt_error* err) {
      return table_->final(ctx_, err);
    });
  }
  absl::Status GetTag(absl::Span<uint8_t> out) override {
    if (!HasField(table_, &accelcrypt_cipher_table::get_tag)) {
      return absl::UnimplementedError("no tag");
    }
    return CallTable(backend_, "get tag", [&](accelcrypt_error* err) {
      return table_->get_tag(ctx_, out.data(), out.size(), err);
    });
  }
  absl::Status SetTag(absl::Span<const uint8_t> tag) override {
    if (!HasField(table_, &accelcrypt_cipher_table::set_tag)) {
      return absl::UnimplementedError("no tag");
    }
    return CallTable(backend_, "set tag", [&](accelcrypt_error* err) {
      return table_->set_tag(ctx_, tag.data(), tag.size(), err);
    });
  }
  absl::StatusOr<accelcrypt_cipher_state> GetState() const override {
    if (!HasField(table_, &accelcrypt_cipher_table::get_state)) {
      return absl::UnimplementedError(absl::StrFormat(
          "%s: %s state is not portable", backend_, info_.name));
    }
    accelcrypt_cipher_state state{};
    accelcrypt_error err{};
    ACCELCRYPT_RETURN_IF_ERROR(Check(table_->get_state(ctx_, &state, &err), err,
                                     backend_, "get state"));
    return state;
  }
  absl::Status SetState(const accelcrypt_cipher_state& state) override {
    if (!HasField(table_, &accelcrypt_cipher_table::set_state)) {
      return absl::UnimplementedError(absl::StrFormat(
          "%s: %s state is not portable", backend_, info_.name));
    }
    accelcrypt_error err{};
    return Check(table_->set_state(ctx_, &state, &err), err, backend_,
                 "set state");
  }
  absl::StatusOr<std::unique_ptr<Cipher>> Clone() const override {
    accelcrypt_cipher_ctx* copy = nullptr;
    accelcrypt_error err{};
    ACCELCRYPT_RETURN_IF_ERROR(
        Check(table_->dupctx(ctx_, &copy, &err), err, backend_, "dupctx"));
    return std::unique_ptr<Cipher>(
        new BackendCipher(table_, copy, info_, backend_));
  }
  // Direct is the table's get_direct, when the backend has one and offers
  // a transform for the context's state now. pending_bytes stays null: the
  // routed cipher that owns this object supplies its own counter.
  DirectUpdate Direct() override {
    if (!HasField(table_, &accelcrypt_cipher_table::get_direct)) return {};
    DirectUpdate d;
    accelcrypt_error err;
    err.message[0] = '\0';
    if (table_->get_direct(ctx_, &d.fn, &d.ctx, &err) != ACCELCRYPT_OK) {
      return {};
    }
    return d;
  }
  const AlgorithmInfo& info() const override { return info_; }
  std::string_view backend() const override { return backend_; }
  RawCipherView raw() const { return {table_, ctx_}; }

 private:
  const accelcrypt_cipher_table* table_;
  accelcrypt_cipher_ctx* ctx_;
  const AlgorithmInfo& info_;
  std::string_view backend_;
};

class BackendDigest final : public Digest {
 public:
  BackendDigest(const accelcrypt_digest_table* table,
                accelcrypt_digest_ctx* ctx, const AlgorithmInfo& info,
                std::string_view backend)
      : table_(table), ctx_(ctx), info_(info), backend_(backend) {}
  ~BackendDigest() override { table_->freectx(ctx_); }

  // Init/Update/Final are the per-call path (CallTable).
  absl::Status Init() override {
    return CallTable(backend_, "digest init", [&](accelcrypt_error* err) {
      return table_->init(ctx_, err);
    });
  }
  absl::Status Update(absl::Span<const uint8_t> data) override {
    return CallTable(backend_, "digest update", [&](accelcrypt_error* err) {
      return table_->update(ctx_, data.data(), data.size(), err);
    });
  }
  absl::Status Final(absl::Span<uint8_t> out) override {
    if (out.size() < info_.digest_len) {
      return absl::OutOfRangeError(absl::StrFormat(
          "%s: output buffer of %d bytes is too small for the %d-byte digest",
          info_.name, out.size(), info_.digest_len));
    }
    return CallTable(backend_, "digest final", [&](accelcrypt_error* err) {
      return table_->final(ctx_, out.data(), out.size(), err);
    });
  }
  absl::StatusOr<std::unique_ptr<Digest>> Clone() const override {
    accelcrypt_digest_ctx* copy = nullptr;
    accelcrypt_error err{};
    ACCELCRYPT_RETURN_IF_ERROR(
        Check(table_->dupctx(ctx_, &copy, &err), err, backend_, "dupctx"));
    return std::unique_ptr<Digest>(
        new BackendDigest(table_, copy, info_, backend_));
  }
  const AlgorithmInfo& info() const override { return info_; }
  std::string_view backend() const override { return backend_; }

 private:
  const accelcrypt_digest_table* table_;
  accelcrypt_digest_ctx* ctx_;
  const AlgorithmInfo& info_;
  std::string_view backend_;
};

// UsablePkeyTable is true when `table` has every function `cap` needs and
// the capability names a sane key-size range.
bool UsablePkeyTable(const accelcrypt_pkey_table* table,
                     const accelcrypt_capability& cap) {
  if (!HasField(table, &accelcrypt_pkey_table::load_key) ||
      !HasField(table, &accelcrypt_pkey_table::free_key) ||
      cap.min_key_bits == 0 || cap.max_key_bits < cap.min_key_bits) {
    return false;
  }
  if (cap.alg == ACCELCRYPT_ALG_RSA_CRYPT) {
    return HasField(table, &accelcrypt_pkey_table::encrypt) &&
           HasField(table, &accelcrypt_pkey_table::decrypt);
  }
  return HasField(table, &accelcrypt_pkey_table::sign) &&
         HasField(table, &accelcrypt_pkey_table::verify);
}

accelcrypt_pkey_params AbiParams(const PkeyParams& params) {
  accelcrypt_pkey_params p{};
  p.struct_size = sizeof(p);
  p.padding = params.padding;
  p.md = params.md;
  p.mgf1_md = params.mgf1_md;
  p.salt_len = params.salt_len;
  p.label = params.label.empty() ? nullptr : params.label.data();
  p.label_len = params.label.size();
  return p;
}

}  // namespace

namespace internal {

// HostState is what the host callbacks see: the config (owned by the Core,
// which outlives every backend) and the backend's name for scoping keys.
struct HostState {
  const Config* config;
  std::string name;
  absl::Mutex mu;
  // Keeps returned strings alive until teardown; values never change once
  // returned, so a pointer handed out stays valid.
  std::map<std::string, std::string> cache ABSL_GUARDED_BY(mu);
  int log_level;
};

}  // namespace internal

namespace {

// IsCoreKey is true for the core's own fixed settings (Config::KnownKeys).
bool IsCoreKey(std::string_view key) {
  std::string lower = absl::AsciiStrToLower(AsAbsl(key));
  for (const std::string& k : Config::KnownKeys()) {
    if (k == lower) return true;
  }
  return false;
}

const char* ConfigGet(void* host_ctx, const char* key) {
  auto* state = static_cast<internal::HostState*>(host_ctx);
  if (state->config == nullptr || key == nullptr) return nullptr;
  std::optional<std::string> v =
      BackendConfigValue(*state->config, state->name, key);
  if (!v.has_value()) return nullptr;
  absl::MutexLock lock(&state->mu);
  auto it = state->cache.emplace(absl::StrFormat("%s.%s", state->name, key), *v)
                .first;
  return it->second.c_str();
}

void HostLog(void* host_ctx, int level, const char* message) {
  auto* state = static_cast<internal::HostState*>(host_ctx);
  if (level <= state->log_level && message != nullptr) {
    std::fprintf(stderr, "accelcrypt[%s]: %s\n", state->name.c_str(), message);
  }
}

// HostObject is the resolved path of the object this core is linked into:
// the provider, the PKCS#11 module, or a program. Computed once, into
// static storage (no allocation: a provider unloaded with dlclose would
// leave a heap copy unreachable, which LeakSanitizer reports).
const char* HostObject() {
  static char path[PATH_MAX];
  static const bool known = [] {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&HostLog), &info) == 0 ||
        info.dli_fname == nullptr || info.dli_fname[0] == '\0') {
      return false;
    }
    // The kernel's name for the open file: three system calls, where
    // realpath takes one per path component (every process that loads
    // the provider pays them). realpath where /proc is not mounted.
    const int fd = open(info.dli_fname, O_PATH | O_CLOEXEC);
    if (fd >= 0) {
      char link[64];
      std::snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
      const ssize_t n = readlink(link, path, sizeof(path) - 1);
      close(fd);
      if (n > 0 && path[0] == '/') {
        path[n] = '\0';
        return true;
      }
    }
    if (::realpath(info.dli_fname, path) == nullptr) {
      if (std::strlen(info.dli_fname) >= sizeof(path)) return false;
      std::strcpy(path, info.dli_fname);
    }
    return true;
  }();
  return known ? path : nullptr;
}

}  // namespace

std::optional<std::string> BackendConfigValue(const Config& config,
                                              std::string_view backend,
                                              std::string_view key) {
  std::optional<std::string> v =
      config.Get(absl::StrFormat("%s.%s", AsAbsl(backend), AsAbsl(key)));
  // The global section answers only for keys that are not the core's own:
  // a global `disable = pkcs11` must not reach the x86 backend as its
  // `disable` (a list of CPU features) and make it decline.
  if (!v.has_value() && !IsCoreKey(key)) v = config.Get(key);
  return v;
}

absl::StatusOr<std::unique_ptr<Backend>> Backend::Create(
    const accelcrypt_backend_desc* desc, void* dl_handle, const Config* config,
    std::string origin) {
  auto close_handle = [dl_handle] {
    if (dl_handle != nullptr) dlclose(dl_handle);
  };
  if (desc == nullptr) {
    close_handle();
    return absl::FailedPreconditionError(
        absl::StrFormat("%s: backend entry returned no descriptor", origin));
  }
  if (desc->abi_version != ACCELCRYPT_ABI_VERSION ||
      desc->struct_size < offsetof(accelcrypt_backend_desc, query_family) +
                              sizeof(desc->query_family) ||
      desc->name == nullptr || desc->init == nullptr ||
      desc->get_capabilities == nullptr || desc->query_family == nullptr) {
    close_handle();
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s: backend ABI version %d (size %d) is not supported (want %d)",
        origin, desc->abi_version, desc->struct_size, ACCELCRYPT_ABI_VERSION));
  }
  std::unique_ptr<Backend> backend(new Backend());
  backend->desc_ = desc;
  backend->dl_handle_ = dl_handle;
  backend->name_ = desc->name;
  backend->version_ = desc->version != nullptr ? desc->version : "";
  backend->origin_ = std::move(origin);
  auto state = std::make_unique<internal::HostState>();
  state->config = config;
  state->name = backend->name_;
  state->log_level = -1;
  if (config != nullptr) {
    auto level = config->GetInt("log_level", -1);
    if (level.ok()) state->log_level = static_cast<int>(*level);
  }
  backend->host_state_ = std::move(state);
  backend->host_.struct_size = sizeof(accelcrypt_host);
  backend->host_.host_ctx = backend->host_state_.get();
  backend->host_.config_get = &ConfigGet;
  backend->host_.log = &HostLog;
  backend->host_.host_object = HostObject();

  accelcrypt_error err{};
  accelcrypt_status rc = desc->init(&backend->host_, &backend->instance_, &err);
  if (rc != ACCELCRYPT_OK) {
    backend->desc_ = nullptr;  // nothing to tear down
    return Check(rc, err, backend->name_, "init");
  }
  const accelcrypt_capability* caps = nullptr;
  size_t num_caps = 0;
  rc = desc->get_capabilities(backend->instance_, &caps, &num_caps, &err);
  if (rc != ACCELCRYPT_OK)
    return Check(rc, err, backend->name_, "capabilities");
  // Walk the array with the backend's own element size: a backend built
  // against another header revision must be read, not misread.
  size_t stride = ACCELCRYPT_CAPABILITY_SIZE_V1;
  if (desc->struct_size >= offsetof(accelcrypt_backend_desc, capability_size) +
                               sizeof(desc->capability_size)) {
    stride = desc->capability_size != 0 ? desc->capability_size
                                        : sizeof(accelcrypt_capability);
  }
  if (stride < ACCELCRYPT_CAPABILITY_SIZE_V1 || stride % 8 != 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s: capability entries of %d bytes are not a known layout",
        backend->name_, stride));
  }
  const auto* bytes = reinterpret_cast<const unsigned char*>(caps);
  for (size_t i = 0; i < num_caps; ++i) {
    accelcrypt_capability cap{};
    std::memcpy(&cap, bytes + i * stride,
                std::min(stride, sizeof(accelcrypt_capability)));
    if (FindAlgorithm(cap.alg) != nullptr) {
      backend->caps_.push_back(cap);
    }
  }
  backend->cipher_ = static_cast<const accelcrypt_cipher_table*>(
      desc->query_family(backend->instance_, ACCELCRYPT_FAMILY_CIPHER));
  backend->digest_ = static_cast<const accelcrypt_digest_table*>(
      desc->query_family(backend->instance_, ACCELCRYPT_FAMILY_DIGEST));
  backend->rng_ = static_cast<const accelcrypt_rng_table*>(
      desc->query_family(backend->instance_, ACCELCRYPT_FAMILY_RNG));
  backend->rsa_ = static_cast<const accelcrypt_pkey_table*>(
      desc->query_family(backend->instance_, ACCELCRYPT_FAMILY_RSA));
  backend->dsa_ = static_cast<const accelcrypt_pkey_table*>(
      desc->query_family(backend->instance_, ACCELCRYPT_FAMILY_DSA));
  // A family claimed without a usable table is dropped, not trusted.
  std::erase_if(backend->caps_, [&](const accelcrypt_capability& cap) {
    switch (ACCELCRYPT_ALG_FAMILY(cap.alg)) {
      case ACCELCRYPT_FAMILY_CIPHER:
        return backend->cipher_ == nullptr ||
               !HasField(backend->cipher_, &accelcrypt_cipher_table::freectx);
      case ACCELCRYPT_FAMILY_DIGEST:
        return backend->digest_ == nullptr ||
               !HasField(backend->digest_, &accelcrypt_digest_table::freectx);
      case ACCELCRYPT_FAMILY_RNG:
        if (backend->rng_ == nullptr) return true;
        if (cap.alg == ACCELCRYPT_ALG_RNG_RANDOM) {
          return !HasField(backend->rng_, &accelcrypt_rng_table::random_bytes);
        }
        return !HasField(backend->rng_, &accelcrypt_rng_table::entropy);
      case ACCELCRYPT_FAMILY_RSA:
      case ACCELCRYPT_FAMILY_DSA:
        return !UsablePkeyTable(
            cap.alg == ACCELCRYPT_ALG_DSA_SIGN ? backend->dsa_ : backend->rsa_,
            cap);
      default:
        return true;
    }
  });
  return backend;
}

Backend::~Backend() {
  if (desc_ != nullptr && desc_->teardown != nullptr) {
    desc_->teardown(instance_);
  }
  if (dl_handle_ != nullptr) dlclose(dl_handle_);
}

std::string Backend::Describe() const {
  if (desc_ == nullptr ||
      desc_->struct_size < offsetof(accelcrypt_backend_desc, describe) +
                               sizeof(desc_->describe) ||
      desc_->describe == nullptr) {
    return "";
  }
  char buf[512] = {};
  desc_->describe(instance_, buf, sizeof(buf));
  buf[sizeof(buf) - 1] = '\0';
  return buf;
}

const accelcrypt_capability* Backend::Capability(accelcrypt_alg alg) const {
  for (const accelcrypt_capability& cap : caps_) {
    if (cap.alg == alg) return &cap;
  }
  return nullptr;
}

bool Backend::TakesKeyMaterial(accelcrypt_alg alg, size_t bits) const {
  const accelcrypt_capability* cap = Capability(alg);
  if (cap == nullptr || (cap->flags & ACCELCRYPT_CAP_KEY_IMPORT) == 0) {
    return false;
  }
  return bits == 0 || (bits >= cap->min_key_bits && bits <= cap->max_key_bits);
}

std::vector<std::string> CapabilityNames(const accelcrypt_capability& cap) {
  std::vector<std::string> names;
  if (cap.flags & ACCELCRYPT_CAP_HARDWARE) names.push_back("hardware");
  names.push_back((cap.flags & ACCELCRYPT_CAP_STREAMING) ? "streaming"
                                                         : "one-shot");
  static constexpr struct {
    uint32_t flag;
    const char* name;
  } kNamed[] = {
      {ACCELCRYPT_CAP_PORTABLE_STATE, "portable-state"},
      {ACCELCRYPT_CAP_RSA_PKCS1, "pkcs1"},
      {ACCELCRYPT_CAP_RSA_PSS, "pss"},
      {ACCELCRYPT_CAP_RSA_OAEP, "oaep"},
      {ACCELCRYPT_CAP_RSA_RAW, "raw"},
      {ACCELCRYPT_CAP_KEY_IMPORT, "key-import"},
      {ACCELCRYPT_CAP_OFFLOAD, "offload"},
      {ACCELCRYPT_CAP_CPU, "cpu"},
      {ACCELCRYPT_CAP_PASS_THROUGH, "pass-through"},
  };
  for (const auto& n : kNamed) {
    if (cap.flags & n.flag) names.push_back(n.name);
  }
  return names;
}

bool Backend::hardware() const {
  for (const accelcrypt_capability& cap : caps_) {
    if (cap.flags & ACCELCRYPT_CAP_HARDWARE) return true;
  }
  return false;
}

void Backend::Disable(accelcrypt_alg alg) {
  std::erase_if(caps_, [alg](const accelcrypt_capability& cap) {
    return cap.alg == alg;
  });
}

RawCipherView RawView(Cipher& cipher) {
  if (auto* b = dynamic_cast<BackendCipher*>(&cipher)) return b->raw();
  return {};
}

absl::StatusOr<std::unique_ptr<Cipher>> Backend::NewCipher(
    accelcrypt_alg alg) const {
  const AlgorithmInfo* info = FindAlgorithm(alg);
  if (info == nullptr || info->family != Family::kCipher ||
      Capability(alg) == nullptr) {
    return absl::UnimplementedError(absl::StrFormat(
        "%s: %s is not offered", name_, info ? info->name : "algorithm"));
  }
  accelcrypt_cipher_ctx* ctx = nullptr;
  accelcrypt_error err{};
  ACCELCRYPT_RETURN_IF_ERROR(Check(cipher_->newctx(instance_, alg, &ctx, &err),
                                   err, name_, "cipher newctx"));
  return std::unique_ptr<Cipher>(new BackendCipher(cipher_, ctx, *info, name_));
}

absl::StatusOr<std::unique_ptr<Digest>> Backend::NewDigest(
    accelcrypt_alg alg) const {
  const AlgorithmInfo* info = FindAlgorithm(alg);
  if (info == nullptr || info->family != Family::kDigest ||
      Capability(alg) == nullptr) {
    return absl::UnimplementedError(absl::StrFormat(
        "%s: %s is not offered", name_, info ? info->name : "algorithm"));
  }
  accelcrypt_digest_ctx* ctx = nullptr;
  accelcrypt_error err{};
  ACCELCRYPT_RETURN_IF_ERROR(Check(digest_->newctx(instance_, alg, &ctx, &err),
                                   err, name_, "digest newctx"));
  return std::unique_ptr<Digest>(new BackendDigest(digest_, ctx, *info, name_));
}

absl::Status Backend::DigestOneShot(accelcrypt_alg alg,
                                    absl::Span<const uint8_t> data,
                                    absl::Span<uint8_t> out) const {
  const AlgorithmInfo* info = FindAlgorithm(alg);
  if (info == nullptr || info->family != Family::kDigest ||
      Capability(alg) == nullptr) {
    return absl::UnimplementedError(absl::StrFormat(
        "%s: %s is not offered", name_, info ? info->name : "algorithm"));
  }
  if (out.size() < info->digest_len) {
    return absl::OutOfRangeError(absl::StrFormat(
        "%s: output buffer of %d bytes is too small for the %d-byte digest",
        info->name, out.size(), info->digest_len));
  }
  if (HasField(digest_, &accelcrypt_digest_table::oneshot)) {
    accelcrypt_error err{};
    return Check(digest_->oneshot(instance_, alg, data.data(), data.size(),
                                  out.data(), out.size(), &err),
                 err, name_, "digest");
  }
  ACCELCRYPT_ASSIGN_OR_RETURN(std::unique_ptr<Digest> d, NewDigest(alg));
  ACCELCRYPT_RETURN_IF_ERROR(d->Update(data));
  return d->Final(out);
}

absl::Status Backend::RoutedDigestOneShot(const AlgorithmInfo& info,
                                          absl::Span<const uint8_t> data,
                                          absl::Span<uint8_t> out) const {
  if (HasField(digest_, &accelcrypt_digest_table::oneshot)) [[likely]] {
    return CallTable(name_, "digest", [&](accelcrypt_error* err) {
      return digest_->oneshot(instance_, info.id, data.data(), data.size(),
                              out.data(), out.size(), err);
    });
  }
  return DigestOneShot(info.id, data, out);
}

const accelcrypt_digest_direct* Backend::DigestDirect(
    accelcrypt_alg alg) const {
  if (Capability(alg) == nullptr ||
      ACCELCRYPT_ALG_FAMILY(alg) != ACCELCRYPT_FAMILY_DIGEST ||
      !HasField(digest_, &accelcrypt_digest_table::get_direct)) {
    return nullptr;
  }
  const accelcrypt_digest_direct* d = digest_->get_direct(instance_, alg);
  if (d == nullptr || d->struct_size < sizeof(accelcrypt_digest_direct) ||
      d->state_size == 0 || d->state_size > kMaxDigestDirectState ||
      d->init == nullptr || d->update == nullptr || d->final == nullptr) {
    return nullptr;
  }
  return d;
}

void DirectDigestMessage(const accelcrypt_digest_direct& d,
                         absl::Span<const uint8_t> data, size_t split,
                         uint8_t* out) {
  alignas(16) uint8_t state[Backend::kMaxDigestDirectState];
  split = std::min(split, data.size());
  d.init(state);
  d.update(state, data.data(), split);
  d.update(state, data.data() + split, data.size() - split);
  d.final(state, out);
  OPENSSL_cleanse(state, d.state_size);
}

absl::Status Backend::RandomBytes(absl::Span<uint8_t> out) const {
  if (Capability(ACCELCRYPT_ALG_RNG_RANDOM) == nullptr) {
    return absl::UnimplementedError(
        absl::StrFormat("%s: no random generator", name_));
  }
  accelcrypt_error err{};
  return Check(rng_->random_bytes(instance_, out.data(), out.size(), &err), err,
               name_, "random");
}

absl::StatusOr<size_t> Backend::Entropy(absl::Span<uint8_t> out) const {
  if (Capability(ACCELCRYPT_ALG_RNG_ENTROPY) == nullptr) {
    return absl::UnimplementedError(
        absl::StrFormat("%s: no entropy source", name_));
  }
  size_t bits = 0;
  accelcrypt_error err{};
  ACCELCRYPT_RETURN_IF_ERROR(
      Check(rng_->entropy(instance_, out.data(), out.size(), &bits, &err), err,
            name_, "entropy"));
  return std::min(bits, out.size() * 8);
}

absl::StatusOr<std::unique_ptr<BackendKey>> Backend::LoadKey(
    accelcrypt_alg alg, const KeyMaterial& key) const {
  const AlgorithmInfo* info = FindAlgorithm(alg);
  const accelcrypt_pkey_table* table =
      alg == ACCELCRYPT_ALG_DSA_SIGN ? dsa_ : rsa_;
  if (info == nullptr ||
      (info->family != Family::kRsa && info->family != Family::kDsa) ||
      Capability(alg) == nullptr || table == nullptr) {
    return absl::UnimplementedError(absl::StrFormat(
        "%s: %s is not offered", name_, info ? info->name : "algorithm"));
  }
  if ((info->family == Family::kRsa) != (key.type == KeyMaterial::Type::kRsa)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: the key's type does not match %s", name_, info->name));
  }
  accelcrypt_key_desc desc = key.Describe(alg);
  accelcrypt_pkey* pkey = nullptr;
  accelcrypt_error err{};
  ACCELCRYPT_RETURN_IF_ERROR(Check(
      table->load_key(instance_, &desc, &pkey, &err), err, name_, "load key"));
  if (pkey == nullptr) {
    return absl::InternalError(
        absl::StrFormat("%s: load_key returned no key", name_));
  }
  std::unique_ptr<BackendKey> out(new BackendKey());
  out->table_ = table;
  out->key_ = pkey;
  out->alg_ = alg;
  out->backend_ = name_;
  return out;
}

BackendKey::~BackendKey() {
  if (key_ != nullptr) table_->free_key(key_);
}

absl::StatusOr<size_t> BackendKey::Sign(const PkeyParams& params,
                                        absl::Span<const uint8_t> tbs,
                                        absl::Span<uint8_t> out) const {
  accelcrypt_pkey_params p = AbiParams(params);
  size_t len = out.size();
  accelcrypt_error err{};
  ACCELCRYPT_RETURN_IF_ERROR(
      Check(table_->sign(key_, &p, tbs.data(), tbs.size(),
                         out.empty() ? nullptr : out.data(), &len, &err),
            err, backend_, "sign"));
  return len;
}

absl::Status BackendKey::Verify(const PkeyParams& params,
                                absl::Span<const uint8_t> tbs,
                                absl::Span<const uint8_t> sig) const {
  accelcrypt_pkey_params p = AbiParams(params);
  accelcrypt_error err{};
  return Check(table_->verify(key_, &p, tbs.data(), tbs.size(), sig.data(),
                              sig.size(), &err),
               err, backend_, "verify");
}

absl::StatusOr<size_t> BackendKey::Encrypt(const PkeyParams& params,
                                           absl::Span<const uint8_t> in,
                                           absl::Span<uint8_t> out) const {
  if (!HasField(table_, &accelcrypt_pkey_table::encrypt)) {
    return absl::UnimplementedError(
        absl::StrFormat("%s: no RSA encryption", backend_));
  }
  accelcrypt_pkey_params p = AbiParams(params);
  size_t len = out.size();
  accelcrypt_error err{};
  ACCELCRYPT_RETURN_IF_ERROR(
      Check(table_->encrypt(key_, &p, in.data(), in.size(),
                            out.empty() ? nullptr : out.data(), &len, &err),
            err, backend_, "encrypt"));
  return len;
}

absl::StatusOr<size_t> BackendKey::Decrypt(const PkeyParams& params,
                                           absl::Span<const uint8_t> in,
                                           absl::Span<uint8_t> out) const {
  if (!HasField(table_, &accelcrypt_pkey_table::decrypt)) {
    return absl::UnimplementedError(
        absl::StrFormat("%s: no RSA decryption", backend_));
  }
  accelcrypt_pkey_params p = AbiParams(params);
  size_t len = out.size();
  accelcrypt_error err{};
  ACCELCRYPT_RETURN_IF_ERROR(
      Check(table_->decrypt(key_, &p, in.data(), in.size(),
                            out.empty() ? nullptr : out.data(), &len, &err),
            err, backend_, "decrypt"));
  return len;
}

}  // namespace accelcrypt
