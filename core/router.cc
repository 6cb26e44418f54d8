// SPDX-License-Identifier: Apache-2.0
#include "core/router.h"

#include <time.h>

#include <algorithm>
#include <cstring>

#include <openssl/crypto.h>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "core/status.h"

namespace accelcrypt {
namespace {

// Initial-exec: this object is dlopen'ed into other processes, and the
// default model calls __tls_get_addr on every access (measured on the
// cipher update path).
thread_local const Backend* t_inside __attribute__((tls_model("initial-exec"))) =
    nullptr;

uint64_t NowNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull +
         static_cast<uint64_t>(ts.tv_nsec);
}

absl::Status NoBackend(const AlgorithmInfo& info, const absl::Status& last) {
  if (last.ok()) {
    return absl::UnimplementedError(
        absl::StrFormat("no backend offers %s", info.name));
  }
  return last;
}

// Runs `fn` with the thread marked as inside `backend`.
template <typename Fn>
auto Inside(const Backend* backend, Fn&& fn) {
  BackendGuard guard(backend);
  return fn();
}

// RoutedCipher runs on one backend and moves to the next candidate on a
// device error: before any data always; mid-stream when the state is
// portable (CBC/CFB/OFB/CTR), or for GCM while AAD and data so far fit the
// replay buffer (`replay_max` bytes): they are replayed into the next
// backend, whose output for them is discarded (it is the same bytes the
// caller already has). Keeps a copy of key and IV for that (wiped on
// destruction).
class RoutedCipher final : public Cipher {
 public:
  RoutedCipher(Router* router, const AlgorithmInfo& info,
               Router::SlotList candidates, size_t replay_max)
      : router_(router),
        info_(info),
        candidates_(std::move(candidates)),
        replay_max_(replay_max) {}
  ~RoutedCipher() override {
    FlushBytes();
    OPENSSL_cleanse(key_, sizeof(key_));
    OPENSSL_cleanse(tag_, sizeof(tag_));
    ClearReplay();
  }

  // Open creates the backend object on the first candidate that works.
  absl::Status Open(size_t from) {
    absl::Status last;
    for (size_t i = from; i < candidates_.size(); ++i) {
      Router::Slot* slot = candidates_[i];
      auto created =
          Inside(slot->backend, [&] { return slot->backend->NewCipher(info_.id); });
      if (created.ok()) {
        impl_ = *std::move(created);
        raw_ = RawView(*impl_);
        current_ = i;
        current_backend_ = slot->backend;
        counter_ = &router_->stats()->Cell(slot->stats_slot, info_);
        return absl::OkStatus();
      }
      last = created.status();
      if (IsDeviceError(last)) router_->RecordDeviceError(slot, info_);
      if (!IsDeviceError(last) &&
          last.code() != absl::StatusCode::kUnimplemented) {
        return last;
      }
    }
    return NoBackend(info_, last);
  }

  absl::Status Init(bool encrypt, absl::Span<const uint8_t> key,
                    absl::Span<const uint8_t> iv) override {
    if (key.size() != info_.key_len) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: key is %d bytes, expected %d", info_.name, key.size(),
          info_.key_len));
    }
    if (info_.mode == CipherMode::kGcm) {
      if (iv.empty() || iv.size() > kMaxIv) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: IV is %d bytes, expected 1..%d", info_.name, iv.size(),
            kMaxIv));
      }
    } else if (iv.size() != info_.iv_len) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: IV is %d bytes, expected %d", info_.name, iv.size(),
          info_.iv_len));
    }
    FlushBytes();
    ClearReplay();
    replay_ok_ = info_.mode == CipherMode::kGcm &&
                 current_ + 1 < candidates_.size();
    tag_len_ = 0;
    encrypt_ = encrypt;
    std::memcpy(key_, key.data(), key.size());
    std::memcpy(iv_, iv.data(), iv.size());
    iv_len_ = iv.size();
    started_ = false;
    initialized_ = false;
    absl::Status st = Call([&] { return impl_->Init(encrypt, key, iv); });
    if (st.ok()) {
      counter_->Add(0);
      router_->RecordSuccess(candidates_[current_]);
    } else {
      if (!IsDeviceError(st)) return st;
      // MoveOn re-runs Init on the next backend (and counts the op there).
      ACCELCRYPT_RETURN_IF_ERROR(MoveOn(st, nullptr));
    }
    initialized_ = true;
    return absl::OkStatus();
  }

  absl::Status Update(absl::Span<const uint8_t> in,
                      absl::Span<uint8_t> out) override {
    // Fast path: straight into the backend's C table; everything else
    // (errors, fallback, replay) lives out of line so this stays small.
    if (raw_.table != nullptr && out.size() >= in.size() && !replay_ok_)
        [[likely]] {
      accelcrypt_error err;
      err.message[0] = '\0';
      const Backend* previous = t_inside;
      t_inside = current_backend_;
      accelcrypt_status rc = raw_.table->update(raw_.ctx, in.data(), in.size(),
                                                out.data(), &err);
      t_inside = previous;
      if (rc == ACCELCRYPT_OK) [[likely]] {
        started_ = true;
        pending_bytes_ += in.size();
        return absl::OkStatus();
      }
      return UpdateFailed(in, out,
                          FromAbi(rc, std::string_view(
                                          err.message,
                                          strnlen(err.message,
                                                  sizeof(err.message)))));
    }
    return UpdateSlow(in, out);
  }

  [[gnu::noinline]] absl::Status UpdateSlow(absl::Span<const uint8_t> in,
                                            absl::Span<uint8_t> out) {
    absl::Status st = Call([&] { return impl_->Update(in, out); });
    if (st.ok()) {
      started_ = true;
      pending_bytes_ += in.size();
      if (replay_ok_) Remember(&replay_data_, in);
      return st;
    }
    return UpdateFailed(in, out, st);
  }

  [[gnu::noinline]] absl::Status UpdateFailed(absl::Span<const uint8_t> in,
                                              absl::Span<uint8_t> out,
                                              absl::Status st) {
    if (!IsDeviceError(st) || !initialized_) return st;
    ACCELCRYPT_RETURN_IF_ERROR(MoveOnMidStream(st));
    st = Call([&] { return impl_->Update(in, out); });
    if (st.ok()) {
      started_ = true;
      pending_bytes_ += in.size();
      if (replay_ok_) Remember(&replay_data_, in);
    }
    return st;
  }

  absl::Status Aad(absl::Span<const uint8_t> aad) override {
    absl::Status st = Call([&] { return impl_->Aad(aad); });
    if (st.ok()) {
      if (!aad.empty()) started_ = true;
      pending_bytes_ += aad.size();
      if (replay_ok_) Remember(&replay_aad_, aad);
      return st;
    }
    if (!IsDeviceError(st) || !initialized_) return st;
    ACCELCRYPT_RETURN_IF_ERROR(MoveOnMidStream(st));
    st = Call([&] { return impl_->Aad(aad); });
    if (st.ok()) {
      if (!aad.empty()) started_ = true;
      pending_bytes_ += aad.size();
      if (replay_ok_) Remember(&replay_aad_, aad);
    }
    return st;
  }

  absl::Status Final() override {
    FlushBytes();
    // The ABI's final is a no-op outside AEAD modes: no call, no failure.
    if (info_.mode != CipherMode::kGcm) return absl::OkStatus();
    absl::Status st = Call([&] { return impl_->Final(); });
    if (!IsDeviceError(st)) return st;
    ACCELCRYPT_RETURN_IF_ERROR(MoveOnMidStream(st));
    return Call([&] { return impl_->Final(); });
  }
  absl::Status GetTag(absl::Span<uint8_t> out) override {
    return Call([&] { return impl_->GetTag(out); });
  }
  absl::Status SetTag(absl::Span<const uint8_t> tag) override {
    absl::Status st = Call([&] { return impl_->SetTag(tag); });
    if (st.ok() && tag.size() <= sizeof(tag_)) {
      std::memcpy(tag_, tag.data(), tag.size());
      tag_len_ = tag.size();
    }
    return st;
  }
  absl::StatusOr<accelcrypt_cipher_state> GetState() const override {
    return impl_->GetState();
  }
  absl::Status SetState(const accelcrypt_cipher_state& state) override {
    return Call([&] { return impl_->SetState(state); });
  }
  absl::StatusOr<std::unique_ptr<Cipher>> Clone() const override {
    ACCELCRYPT_ASSIGN_OR_RETURN(std::unique_ptr<Cipher> impl, impl_->Clone());
    auto copy = std::make_unique<RoutedCipher>(router_, info_, candidates_,
                                               replay_max_);
    copy->replay_aad_ = replay_aad_;
    copy->replay_data_ = replay_data_;
    copy->replay_ok_ = replay_ok_;
    std::memcpy(copy->tag_, tag_, sizeof(tag_));
    copy->tag_len_ = tag_len_;
    copy->impl_ = std::move(impl);
    copy->raw_ = RawView(*copy->impl_);
    copy->current_ = current_;
    copy->current_backend_ = current_backend_;
    copy->counter_ = counter_;
    std::memcpy(copy->key_, key_, sizeof(key_));
    std::memcpy(copy->iv_, iv_, sizeof(iv_));
    copy->iv_len_ = iv_len_;
    copy->encrypt_ = encrypt_;
    copy->started_ = started_;
    copy->initialized_ = initialized_;
    return std::unique_ptr<Cipher>(std::move(copy));
  }
  const AlgorithmInfo& info() const override { return info_; }
  std::string_view backend() const override { return impl_->backend(); }

 private:
  static constexpr size_t kMaxIv = 1024;

  template <typename Fn>
  absl::Status Call(Fn&& fn) const {
    BackendGuard guard(candidates_[current_]->backend);
    return fn();
  }

  // Bytes are added to the shared counter once per operation, not per
  // update: an atomic add per 16-byte update is measurable.
  void FlushBytes() {
    if (pending_bytes_ != 0 && counter_ != nullptr) {
      counter_->AddBytes(pending_bytes_);
      pending_bytes_ = 0;
    }
  }

  void Error(const absl::Status& st) {
    FlushBytes();
    counter_->errors.fetch_add(1, std::memory_order_relaxed);
    router_->RecordDeviceError(candidates_[current_], info_);
  }

  // MoveOn opens the next candidate after a device error and re-initialises
  // it with the saved key and IV; `state`, when given, is restored too.
  absl::Status MoveOn(const absl::Status& cause,
                      const accelcrypt_cipher_state* state) {
    Error(cause);
    absl::Status last = cause;
    size_t next = current_ + 1;
    while (next < candidates_.size()) {
      counter_->fallbacks.fetch_add(1, std::memory_order_relaxed);
      absl::Status st = Open(next);
      if (!st.ok()) return IsDeviceError(st) ? cause : st;
      st = Call([&] {
        absl::Status s = impl_->Init(encrypt_, absl::MakeConstSpan(key_, info_.key_len),
                                     absl::MakeConstSpan(iv_, iv_len_));
        if (s.ok() && state != nullptr) s = impl_->SetState(*state);
        return s;
      });
      if (st.ok()) {
        counter_->Add(0);
        return st;
      }
      if (!IsDeviceError(st)) {
        // The next backend cannot take this state (e.g. not portable).
        return cause;
      }
      Error(st);
      last = st;
      next = current_ + 1;
    }
    return last;
  }

  void Remember(std::vector<uint8_t>* log, absl::Span<const uint8_t> data) {
    if (replay_aad_.size() + replay_data_.size() + data.size() > replay_max_) {
      ClearReplay();
      replay_ok_ = false;
      return;
    }
    log->insert(log->end(), data.begin(), data.end());
  }

  void ClearReplay() {
    if (!replay_aad_.empty()) {
      OPENSSL_cleanse(replay_aad_.data(), replay_aad_.size());
    }
    if (!replay_data_.empty()) {
      OPENSSL_cleanse(replay_data_.data(), replay_data_.size());
    }
    replay_aad_.clear();
    replay_data_.clear();
  }

  // ReplayGcm re-runs AAD and data so far on the freshly initialised
  // backend, discarding its output, and restores the expected tag.
  absl::Status ReplayGcm() {
    return Call([&] {
      if (!replay_aad_.empty()) {
        ACCELCRYPT_RETURN_IF_ERROR(impl_->Aad(replay_aad_));
      }
      if (!replay_data_.empty()) {
        std::vector<uint8_t> scratch(replay_data_.size());
        absl::Status st = impl_->Update(replay_data_, absl::MakeSpan(scratch));
        OPENSSL_cleanse(scratch.data(), scratch.size());
        ACCELCRYPT_RETURN_IF_ERROR(st);
      }
      if (tag_len_ > 0) {
        ACCELCRYPT_RETURN_IF_ERROR(
            impl_->SetTag(absl::MakeConstSpan(tag_, tag_len_)));
      }
      return absl::OkStatus();
    });
  }

  absl::Status MoveOnMidStream(const absl::Status& cause) {
    if (info_.mode == CipherMode::kGcm) {
      // GHASH state is not portable: replay what the old backend saw.
      if (!replay_ok_) {
        Error(cause);
        return cause;
      }
      for (;;) {
        ACCELCRYPT_RETURN_IF_ERROR(MoveOn(cause, nullptr));
        absl::Status st = ReplayGcm();
        if (st.ok()) return st;
        if (!IsDeviceError(st) || current_ + 1 >= candidates_.size()) {
          return st;
        }
      }
    }
    if (!started_) return MoveOn(cause, nullptr);
    const accelcrypt_capability* cap =
        candidates_[current_]->backend->Capability(info_.id);
    if (cap == nullptr || !(cap->flags & ACCELCRYPT_CAP_PORTABLE_STATE)) {
      Error(cause);
      return cause;
    }
    auto state = impl_->GetState();
    if (!state.ok()) {
      Error(cause);
      return cause;
    }
    accelcrypt_cipher_state saved = *state;
    absl::Status st = MoveOn(cause, &saved);
    OPENSSL_cleanse(&saved, sizeof(saved));
    return st;
  }

  Router* router_;
  const AlgorithmInfo& info_;
  Router::SlotList candidates_;
  size_t current_ = 0;
  std::unique_ptr<Cipher> impl_;
  RawCipherView raw_;
  const Backend* current_backend_ = nullptr;
  Counter* counter_ = nullptr;
  uint64_t pending_bytes_ = 0;
  size_t replay_max_;
  std::vector<uint8_t> replay_aad_, replay_data_;
  bool replay_ok_ = false;
  uint8_t tag_[16] = {};
  size_t tag_len_ = 0;
  uint8_t key_[32] = {};
  uint8_t iv_[kMaxIv] = {};
  size_t iv_len_ = 0;
  bool encrypt_ = true;
  bool started_ = false;
  bool initialized_ = false;
};

// RoutedDigest falls back before any data, and mid-stream while the message
// so far fits the replay buffer (`replay_max` bytes): the buffer is
// replayed into the next backend. Past that, a device error is returned.
class RoutedDigest final : public Digest {
 public:
  RoutedDigest(Router* router, const AlgorithmInfo& info,
               Router::SlotList candidates, size_t replay_max)
      : router_(router),
        info_(info),
        candidates_(std::move(candidates)),
        replay_max_(replay_max) {}
  ~RoutedDigest() override {
    if (!replay_.empty()) OPENSSL_cleanse(replay_.data(), replay_.size());
  }

  absl::Status Open(size_t from) {
    absl::Status last;
    for (size_t i = from; i < candidates_.size(); ++i) {
      Router::Slot* slot = candidates_[i];
      BackendGuard guard(slot->backend);
      auto created = slot->backend->NewDigest(info_.id);
      if (created.ok()) {
        impl_ = *std::move(created);
        current_ = i;
        counter_ = &router_->stats()->Cell(slot->stats_slot, info_);
        counter_->Add(0);
        router_->RecordSuccess(slot);
        return absl::OkStatus();
      }
      last = created.status();
      if (IsDeviceError(last)) router_->RecordDeviceError(slot, info_);
      if (!IsDeviceError(last) &&
          last.code() != absl::StatusCode::kUnimplemented) {
        return last;
      }
    }
    return NoBackend(info_, last);
  }

  absl::Status Init() override {
    replay_.clear();
    replay_ok_ = true;
    absl::Status st = Call([&] { return impl_->Init(); });
    if (st.ok()) {
      counter_->Add(0);
      router_->RecordSuccess(candidates_[current_]);
      return st;
    }
    if (!IsDeviceError(st)) return st;
    return MoveOn(st);
  }

  absl::Status Update(absl::Span<const uint8_t> data) override {
    absl::Status st = Call([&] { return impl_->Update(data); });
    if (st.ok()) {
      counter_->AddBytes(data.size());
      Remember(data);
      return st;
    }
    if (!IsDeviceError(st)) return st;
    ACCELCRYPT_RETURN_IF_ERROR(MoveOn(st));
    st = Call([&] { return impl_->Update(data); });
    if (st.ok()) {
      counter_->AddBytes(data.size());
      Remember(data);
    }
    return st;
  }

  absl::Status Final(absl::Span<uint8_t> out) override {
    absl::Status st = Call([&] { return impl_->Final(out); });
    if (!IsDeviceError(st)) return st;
    ACCELCRYPT_RETURN_IF_ERROR(MoveOn(st));
    return Call([&] { return impl_->Final(out); });
  }

  absl::StatusOr<std::unique_ptr<Digest>> Clone() const override {
    ACCELCRYPT_ASSIGN_OR_RETURN(std::unique_ptr<Digest> impl, impl_->Clone());
    auto copy =
        std::make_unique<RoutedDigest>(router_, info_, candidates_, replay_max_);
    copy->impl_ = std::move(impl);
    copy->current_ = current_;
    copy->counter_ = counter_;
    copy->replay_ = replay_;
    copy->replay_ok_ = replay_ok_;
    return std::unique_ptr<Digest>(std::move(copy));
  }
  const AlgorithmInfo& info() const override { return info_; }
  std::string_view backend() const override { return impl_->backend(); }

 private:
  template <typename Fn>
  absl::Status Call(Fn&& fn) const {
    BackendGuard guard(candidates_[current_]->backend);
    return fn();
  }

  void Remember(absl::Span<const uint8_t> data) {
    if (!replay_ok_ || current_ + 1 >= candidates_.size()) return;
    if (replay_.size() + data.size() > replay_max_) {
      replay_ok_ = false;
      OPENSSL_cleanse(replay_.data(), replay_.size());
      replay_.clear();
      return;
    }
    replay_.insert(replay_.end(), data.begin(), data.end());
  }

  absl::Status MoveOn(const absl::Status& cause) {
    counter_->errors.fetch_add(1, std::memory_order_relaxed);
    router_->RecordDeviceError(candidates_[current_], info_);
    if (!replay_ok_) return cause;
    // Inline storage: moving would copy; take a heap copy on this (error)
    // path only.
    std::vector<uint8_t> replay(replay_.begin(), replay_.end());
    OPENSSL_cleanse(replay_.data(), replay_.size());
    replay_.clear();
    size_t next = current_ + 1;
    absl::Status result = cause;
    while (next < candidates_.size()) {
      counter_->fallbacks.fetch_add(1, std::memory_order_relaxed);
      absl::Status st = Open(next);
      if (!st.ok()) break;
      st = Call([&] { return impl_->Update(replay); });
      if (st.ok()) {
        replay_.assign(replay.begin(), replay.end());
        result = absl::OkStatus();
        break;
      }
      if (!IsDeviceError(st)) {
        result = st;
        break;
      }
      counter_->errors.fetch_add(1, std::memory_order_relaxed);
      router_->RecordDeviceError(candidates_[current_], info_);
      next = current_ + 1;
    }
    if (!replay.empty()) OPENSSL_cleanse(replay.data(), replay.size());
    return result;
  }

  Router* router_;
  const AlgorithmInfo& info_;
  Router::SlotList candidates_;
  size_t replay_max_;
  size_t current_ = 0;
  std::unique_ptr<Digest> impl_;
  Counter* counter_ = nullptr;
  // Small messages replay from inline storage (no allocation per digest).
  absl::InlinedVector<uint8_t, 256> replay_;
  bool replay_ok_ = true;
};

}  // namespace

BackendGuard::BackendGuard(const Backend* backend) : previous_(t_inside) {
  t_inside = backend;
}
BackendGuard::~BackendGuard() { t_inside = previous_; }
bool BackendGuard::Inside(const Backend* backend) {
  return t_inside == backend;
}

absl::StatusOr<std::unique_ptr<Router>> Router::Create(
    const Registry* registry, const Config& config, Stats* stats) {
  std::unique_ptr<Router> router(new Router());
  router->registry_ = registry;
  router->stats_ = stats;
  std::string policy = config.GetOr("policy", "priority");
  if (policy != "priority") {
    return absl::InvalidArgumentError(absl::StrFormat(
        "accelcrypt config: policy = %s is not supported (use priority)",
        policy));
  }
  ACCELCRYPT_ASSIGN_OR_RETURN(long long threshold,
                              config.GetInt("breaker_threshold", 5));
  ACCELCRYPT_ASSIGN_OR_RETURN(long long cooldown_ms,
                              config.GetInt("breaker_cooldown_ms", 1000));
  ACCELCRYPT_ASSIGN_OR_RETURN(long long replay,
                              config.GetInt("replay_max", 1024));
  if (threshold < 1 || cooldown_ms < 0 || replay < 0) {
    return absl::InvalidArgumentError(
        "accelcrypt config: breaker_threshold must be >= 1, "
        "breaker_cooldown_ms and replay_max >= 0");
  }
  router->breaker_threshold_ = static_cast<uint64_t>(threshold);
  router->breaker_cooldown_ns_ = static_cast<uint64_t>(cooldown_ms) * 1000000ull;
  router->replay_max_ = static_cast<size_t>(replay);
  for (const auto& backend : registry->backends()) {
    auto slot = std::make_unique<Slot>();
    slot->backend = backend.get();
    slot->stats_slot = stats->RegisterBackend(backend->name());
    router->slots_.push_back(std::move(slot));
  }
  for (const AlgorithmInfo& alg : AllAlgorithms()) {
    std::vector<size_t> order;
    std::string key = absl::StrFormat("route.%s", alg.key);
    std::optional<std::string> route = config.Get(key);
    bool exclusive = false;
    if (route.has_value()) {
      absl::string_view value = *route;
      exclusive = absl::ConsumePrefix(&value, "only:");
      Config tmp;
      tmp.Set("v", AsStd(value));
      for (const std::string& name : tmp.GetList("v")) {
        bool found = false;
        for (size_t i = 0; i < router->slots_.size(); ++i) {
          if (router->slots_[i]->backend->name() == name) {
            found = true;
            if (router->slots_[i]->backend->Capability(alg.id) != nullptr &&
                std::find(order.begin(), order.end(), i) == order.end()) {
              order.push_back(i);
            }
          }
        }
        (void)found;  // A route may name a backend absent on this machine.
      }
    }
    if (!exclusive) {
      for (size_t i = 0; i < router->slots_.size(); ++i) {
        if (router->slots_[i]->backend->Capability(alg.id) != nullptr &&
            std::find(order.begin(), order.end(), i) == order.end()) {
          order.push_back(i);
        }
      }
    }
    router->routes_.push_back(std::move(order));
  }
  return router;
}

Router::~Router() = default;

bool Router::Supports(accelcrypt_alg alg) const {
  const AlgorithmInfo* info = FindAlgorithm(alg);
  return info != nullptr && !routes_[info->index].empty();
}

std::vector<std::string> Router::Candidates(accelcrypt_alg alg) const {
  std::vector<std::string> out;
  const AlgorithmInfo* info = FindAlgorithm(alg);
  if (info == nullptr) return out;
  for (size_t i : routes_[info->index]) {
    out.emplace_back(slots_[i]->backend->name());
  }
  return out;
}

void Router::Order(const AlgorithmInfo& alg, SlotList* out) const {
  out->clear();
  const std::vector<size_t>& route = routes_[alg.index];
  uint64_t now = 0;
  SlotList open;
  for (size_t i : route) {
    Slot* slot = slots_[i].get();
    if (BackendGuard::Inside(slot->backend)) continue;  // no re-entry
    uint64_t until = slot->open_until_ns.load(std::memory_order_relaxed);
    if (until != 0) {
      if (now == 0) now = NowNs();
      if (now < until) {
        open.push_back(slot);
        continue;
      }
      // Cool-down over: let this operation probe it (half-open).
    }
    out->push_back(slot);
  }
  // Every candidate out of rotation: try them anyway rather than fail.
  if (out->empty()) *out = std::move(open);
}

void Router::RecordSuccess(Slot* slot) {
  if (slot->consecutive_errors.load(std::memory_order_relaxed) != 0) {
    slot->consecutive_errors.store(0, std::memory_order_relaxed);
  }
  if (slot->open_until_ns.load(std::memory_order_relaxed) != 0) {
    slot->open_until_ns.store(0, std::memory_order_relaxed);
  }
}

void Router::RecordDeviceError(Slot* slot, const AlgorithmInfo& alg) {
  uint64_t n = slot->consecutive_errors.fetch_add(1, std::memory_order_relaxed) + 1;
  if (n >= breaker_threshold_) {
    slot->open_until_ns.store(NowNs() + breaker_cooldown_ns_,
                              std::memory_order_relaxed);
  }
}

absl::StatusOr<std::unique_ptr<Cipher>> Router::NewCipher(accelcrypt_alg alg) {
  const AlgorithmInfo* info = FindAlgorithm(alg);
  if (info == nullptr || info->family != Family::kCipher) {
    return absl::InvalidArgumentError("not a cipher algorithm");
  }
  SlotList order;
  Order(*info, &order);
  auto cipher = std::make_unique<RoutedCipher>(this, *info, std::move(order),
                                               replay_max_);
  ACCELCRYPT_RETURN_IF_ERROR(cipher->Open(0));
  return std::unique_ptr<Cipher>(std::move(cipher));
}

absl::StatusOr<std::unique_ptr<Digest>> Router::NewDigest(accelcrypt_alg alg) {
  const AlgorithmInfo* info = FindAlgorithm(alg);
  if (info == nullptr || info->family != Family::kDigest) {
    return absl::InvalidArgumentError("not a digest algorithm");
  }
  SlotList order;
  Order(*info, &order);
  auto digest = std::make_unique<RoutedDigest>(this, *info, std::move(order),
                                               replay_max_);
  ACCELCRYPT_RETURN_IF_ERROR(digest->Open(0));
  return std::unique_ptr<Digest>(std::move(digest));
}

template <typename Fn>
absl::Status Router::RunOneShot(const AlgorithmInfo& info, uint64_t n_bytes,
                                Fn&& fn) {
  SlotList order;
  Order(info, &order);
  absl::Status last;
  for (size_t i = 0; i < order.size(); ++i) {
    Slot* slot = order[i];
    Counter& counter = stats_->Cell(slot->stats_slot, info);
    absl::Status st;
    {
      BackendGuard guard(slot->backend);
      st = fn(*slot->backend);
    }
    if (st.ok()) {
      counter.Add(n_bytes);
      RecordSuccess(slot);
      return st;
    }
    last = st;
    if (IsDeviceError(st)) {
      counter.errors.fetch_add(1, std::memory_order_relaxed);
      RecordDeviceError(slot, info);
      if (i + 1 < order.size()) {
        counter.fallbacks.fetch_add(1, std::memory_order_relaxed);
      }
      continue;
    }
    if (st.code() == absl::StatusCode::kUnimplemented) continue;
    return st;  // caller error: never retried
  }
  return NoBackend(info, last);
}

absl::Status Router::DigestOneShot(accelcrypt_alg alg,
                                   absl::Span<const uint8_t> data,
                                   absl::Span<uint8_t> out) {
  const AlgorithmInfo* info = FindAlgorithm(alg);
  if (info == nullptr || info->family != Family::kDigest) {
    return absl::InvalidArgumentError("not a digest algorithm");
  }
  return RunOneShot(*info, data.size(), [&](const Backend& b) {
    return b.DigestOneShot(alg, data, out);
  });
}

absl::Status Router::RandomBytes(absl::Span<uint8_t> out) {
  return RunOneShot(*FindAlgorithm(ACCELCRYPT_ALG_RNG_RANDOM), out.size(),
                    [&](const Backend& b) { return b.RandomBytes(out); });
}

absl::StatusOr<size_t> Router::Entropy(absl::Span<uint8_t> out) {
  size_t bits = 0;
  ACCELCRYPT_RETURN_IF_ERROR(
      RunOneShot(*FindAlgorithm(ACCELCRYPT_ALG_RNG_ENTROPY), out.size(),
                 [&](const Backend& b) -> absl::Status {
                   auto got = b.Entropy(out);
                   if (!got.ok()) return got.status();
                   bits = *got;
                   return absl::OkStatus();
                 }));
  return bits;
}

}  // namespace accelcrypt
