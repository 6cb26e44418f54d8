// SPDX-License-Identifier: Apache-2.0
#include "core/router.h"

#include <openssl/crypto.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "accelcrypt/kit/dsa_sig.h"
#include "core/calibration.h"
#include "core/config_keys.h"
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

// RunsOnCpu is true when `slot` declares ACCELCRYPT_CAP_CPU for `info`: its
// updates have no device errors, so nothing is kept to replay them.
bool RunsOnCpu(const Router::Slot* slot, const AlgorithmInfo& info) {
  const accelcrypt_capability* cap = slot->backend->Capability(info.id);
  return cap != nullptr && (cap->flags & ACCELCRYPT_CAP_CPU) != 0;
}

// RoutedCipher runs on one backend and moves to the next candidate on a
// device error: before any data always; mid-stream when the state is
// portable (CBC/CFB/OFB/CTR), or for GCM while AAD and data so far fit the
// replay buffer (`replay_max` bytes): they are replayed into the next
// backend, whose output for them is discarded (it is the same bytes the
// caller already has). Keeps a copy of key and IV for that (wiped on
// destruction). A backend declaring ACCELCRYPT_CAP_CPU for the algorithm
// has no device errors mid-stream: GCM on it keeps no replay copy and its
// updates take the same fast path as CBC/CTR (the one rule: NeedsLog).
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
        cpu_ = RunsOnCpu(slot, info_);
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
    check_route_ = router_->SizeRouted(info_);
    replay_ok_ = NeedsLog();
    tag_len_ = 0;
    encrypt_ = encrypt;
    // ECB's IV is an empty span whose data() may be null: memcpy from a
    // null pointer is undefined even for 0 bytes (UBSan, fuzz_p11_mech).
    if (!key.empty()) std::memcpy(key_, key.data(), key.size());
    if (!iv.empty()) std::memcpy(iv_, iv.data(), iv.size());
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
    if (raw_.table != nullptr && out.size() >= in.size() && !replay_ok_ &&
        !check_route_) [[likely]] {
      accelcrypt_error err;
      err.message[0] = '\0';
      const Backend* previous = t_inside;
      t_inside = current_backend_;
      accelcrypt_status rc = raw_.table->update(raw_.ctx, in.data(), in.size(),
                                                out.data(), &err);
      t_inside = previous;
      if (rc == ACCELCRYPT_OK) [[likely]] {
        started_ = true;
        CountBytes(in.size());
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
    if (check_route_) {
      check_route_ = false;
      MaybeSwitch(in.size());
    }
    absl::Status st = Call([&] { return impl_->Update(in, out); });
    if (st.ok()) {
      started_ = true;
      CountBytes(in.size());
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
      CountBytes(in.size());
      if (replay_ok_) Remember(&replay_data_, in);
    }
    return st;
  }

  absl::Status Aad(absl::Span<const uint8_t> aad) override {
    absl::Status st = Call([&] { return impl_->Aad(aad); });
    if (st.ok()) {
      if (!aad.empty()) started_ = true;
      CountBytes(aad.size());
      if (replay_ok_) Remember(&replay_aad_, aad);
      return st;
    }
    if (!IsDeviceError(st) || !initialized_) return st;
    ACCELCRYPT_RETURN_IF_ERROR(MoveOnMidStream(st));
    st = Call([&] { return impl_->Aad(aad); });
    if (st.ok()) {
      if (!aad.empty()) started_ = true;
      CountBytes(aad.size());
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
    copy->cpu_ = cpu_;
    copy->check_route_ = check_route_;
    std::memcpy(copy->key_, key_, sizeof(key_));
    std::memcpy(copy->iv_, iv_, sizeof(iv_));
    copy->iv_len_ = iv_len_;
    copy->encrypt_ = encrypt_;
    copy->started_ = started_;
    copy->initialized_ = initialized_;
    return std::unique_ptr<Cipher>(std::move(copy));
  }
  // Direct hands out the current backend's raw transform once the router
  // has nothing left to decide for this operation: the backend is chosen
  // (no size routing pending), data has gone through it since Init (so a
  // later fallback transfers the running state instead of restarting), and
  // no GCM replay log must see the data. Backends offer a transform only
  // for plain CPU work, which has no device errors to fall back from.
  DirectUpdate Direct() override {
    if (!started_ || !initialized_ || replay_ok_ || check_route_) return {};
    DirectUpdate d = impl_->Direct();
    if (d.fn == nullptr) return {};
    d.pending_bytes = &pending_bytes_;
    d.counter = counter_;
    return d;
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

  // Bytes are added to the shared counter once per operation and every
  // kStatsFlushBytes, not per update: an atomic add per 16-byte update is
  // measurable.
  void CountBytes(uint64_t n) {
    pending_bytes_ += n;
    if (pending_bytes_ >= kStatsFlushBytes) [[unlikely]] FlushBytes();
  }
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

  // MaybeSwitch moves a fresh operation to the backend the calibration
  // measured fastest for its first input size (policy = fastest). GCM AAD
  // already fed is replayed; if the switch fails the operation stays where
  // it was.
  void MaybeSwitch(uint64_t size) {
    Router::Slot* want = router_->Preferred(info_, size, !encrypt_);
    if (want == nullptr || want == candidates_[current_]) return;
    if (started_ && (info_.mode != CipherMode::kGcm || !replay_ok_)) return;
    size_t target = candidates_.size();
    for (size_t i = 0; i < candidates_.size(); ++i) {
      if (candidates_[i] == want) target = i;
    }
    if (target == candidates_.size()) return;
    std::unique_ptr<Cipher> old_impl = std::move(impl_);
    const RawCipherView old_raw = raw_;
    const size_t old_current = current_;
    const Backend* old_backend = current_backend_;
    Counter* old_counter = counter_;
    absl::Status st = Open(target);
    if (st.ok()) {
      st = Call([&] {
        return impl_->Init(encrypt_, absl::MakeConstSpan(key_, info_.key_len),
                           absl::MakeConstSpan(iv_, iv_len_));
      });
    }
    if (st.ok() && info_.mode == CipherMode::kGcm) st = ReplayGcm();
    if (!st.ok() || current_ != target) {
      impl_ = std::move(old_impl);
      raw_ = old_raw;
      current_ = old_current;
      current_backend_ = old_backend;
      counter_ = old_counter;
      return;
    }
    // The operation was counted where it started; it is served here.
    old_counter->ops.fetch_sub(1, std::memory_order_relaxed);
    counter_->Add(0);
  }

  // NeedsLog is the replay rule for GCM: AAD and data are copied aside
  // only while another backend may have to redo them: a device backend
  // (no ACCELCRYPT_CAP_CPU) with a candidate after it, or a size route
  // still to choose at the first update (check_route_).
  bool NeedsLog() const {
    return info_.mode == CipherMode::kGcm &&
           (check_route_ || (!cpu_ && current_ + 1 < candidates_.size()));
  }

  void Remember(std::vector<uint8_t>* log, absl::Span<const uint8_t> data) {
    if (!NeedsLog() ||
        replay_aad_.size() + replay_data_.size() + data.size() > replay_max_) {
      ClearReplay();
      replay_ok_ = false;
      return;
    }
    log->insert(log->end(), data.begin(), data.end());
    router_->CountReplay(data.size());
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
  bool check_route_ = false;  // choose the backend at the first update
  bool cpu_ = false;          // the current backend declares CAP_CPU
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
        cpu_ = RunsOnCpu(slot, info_);
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
    WipeReplay();
    replay_ok_ = true;
    check_route_ = router_->SizeRouted(info_);
    absl::Status st = Call([&] { return impl_->Init(); });
    if (st.ok()) [[likely]] {
      // One op, no bytes yet (Add(0) would be a second atomic add).
      counter_->ops.fetch_add(1, std::memory_order_relaxed);
      router_->RecordSuccess(candidates_[current_]);
      return st;
    }
    if (!IsDeviceError(st)) return st;
    return MoveOn(st);
  }

  absl::Status Update(absl::Span<const uint8_t> data) override {
    if (check_route_) {
      check_route_ = false;
      MaybeSwitch(data.size());
    }
    absl::Status st = Call([&] { return impl_->Update(data); });
    if (st.ok()) [[likely]] {
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
    // Success skips IsDeviceError (an out-of-line call plus Status::code).
    if (st.ok()) [[likely]] {
      WipeReplay();
      return st;
    }
    if (!IsDeviceError(st)) return st;
    ACCELCRYPT_RETURN_IF_ERROR(MoveOn(st));
    st = Call([&] { return impl_->Final(out); });
    if (st.ok()) WipeReplay();
    return st;
  }

  // WipeReplay forgets the message kept for a replay: it may hold secrets
  // (HMAC's key-derived ipad/opad blocks pass through digests), so it is
  // wiped when the digest finishes or restarts, not only when destroyed.
  void WipeReplay() {
    if (!replay_.empty()) {
      OPENSSL_cleanse(replay_.data(), replay_.size());
      replay_.clear();
    }
  }

  absl::StatusOr<std::unique_ptr<Digest>> Clone() const override {
    ACCELCRYPT_ASSIGN_OR_RETURN(std::unique_ptr<Digest> impl, impl_->Clone());
    auto copy =
        std::make_unique<RoutedDigest>(router_, info_, candidates_, replay_max_);
    copy->impl_ = std::move(impl);
    copy->current_ = current_;
    copy->counter_ = counter_;
    copy->cpu_ = cpu_;
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

  // MaybeSwitch: see RoutedCipher::MaybeSwitch (nothing hashed yet here).
  void MaybeSwitch(uint64_t size) {
    Router::Slot* want = router_->Preferred(info_, size);
    if (want == nullptr || want == candidates_[current_] || !replay_.empty()) {
      return;
    }
    for (size_t i = 0; i < candidates_.size(); ++i) {
      if (candidates_[i] != want) continue;
      std::unique_ptr<Digest> old_impl = std::move(impl_);
      const size_t old_current = current_;
      Counter* old_counter = counter_;
      if (Open(i).ok() && current_ == i) {
        old_counter->ops.fetch_sub(1, std::memory_order_relaxed);
      } else {
        impl_ = std::move(old_impl);
        current_ = old_current;
        counter_ = old_counter;
      }
      return;
    }
  }

  // Remember keeps the message for a replay while a device backend (no
  // ACCELCRYPT_CAP_CPU) with a candidate after it serves it. A CPU
  // backend keeps no copy: once data went in, a device error (which it
  // does not have) would be returned as it is.
  void Remember(absl::Span<const uint8_t> data) {
    if (!replay_ok_ || current_ + 1 >= candidates_.size()) return;
    if (cpu_) {
      if (!data.empty()) replay_ok_ = false;
      return;
    }
    if (replay_.size() + data.size() > replay_max_) {
      replay_ok_ = false;
      OPENSSL_cleanse(replay_.data(), replay_.size());
      replay_.clear();
      return;
    }
    replay_.insert(replay_.end(), data.begin(), data.end());
    router_->CountReplay(data.size());
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
  bool check_route_ = false;  // choose the backend at the first update
  bool replay_ok_ = true;
  bool cpu_ = false;  // the current backend declares CAP_CPU
};

// Public-key families (RSA, DSA).

// PkeyRoutes collects `route.rsa-<bits>` and `route.dsa-<bits>` overrides,
// keyed "rsa-2048".
std::map<std::string, std::string, std::less<>> PkeyRoutes(
    const Config& config) {
  std::map<std::string, std::string, std::less<>> out;
  for (const auto& [raw_key, value] : config.values()) {
    std::string key = absl::AsciiStrToLower(raw_key);
    absl::string_view rest = key;
    if (!absl::ConsumePrefix(&rest, "route.")) continue;
    if (!IsSizedPkeyRouteName(std::string_view(rest.data(), rest.size()))) {
      continue;
    }
    out.emplace(std::string(rest), value);
  }
  return out;
}

uint32_t PaddingFlag(uint32_t padding) {
  switch (padding) {
    case ACCELCRYPT_PAD_NONE:
      return ACCELCRYPT_CAP_RSA_RAW;
    case ACCELCRYPT_PAD_PKCS1:
      return ACCELCRYPT_CAP_RSA_PKCS1;
    case ACCELCRYPT_PAD_PSS:
      return ACCELCRYPT_CAP_RSA_PSS;
    case ACCELCRYPT_PAD_OAEP:
      return ACCELCRYPT_CAP_RSA_OAEP;
    default:
      return 0;
  }
}

// RoutedPublicKeyOps runs each operation on the first candidate backend that
// serves it (Router::PkeyOrder, filtered by the padding the backend
// declares). Prepared keys are loaded once per (backend, algorithm) under
// `mu_` and freed with this object; a backend that declined the key is
// remembered and not asked again.
class RoutedPublicKeyOps final : public PublicKeyOps {
 public:
  RoutedPublicKeyOps(Router* router, KeyMaterial key)
      : router_(router), key_(std::move(key)) {}

  absl::StatusOr<size_t> Sign(const PkeyParams& params,
                              absl::Span<const uint8_t> tbs,
                              absl::Span<uint8_t> out) override {
    size_t len = 0;
    ACCELCRYPT_RETURN_IF_ERROR(Run(
        SignAlg(), params, tbs.size(),
        /*private_op=*/true,
        [&](const BackendKey& k) {
          auto got = k.Sign(params, tbs, out);
          if (got.ok()) len = *got;
          return got.status();
        },
        [&](Router::Slot* served) {
          return CheckOnCpu(served, SignAlg(), [&](const BackendKey& cpu) {
            return cpu.Verify(params, tbs, out.first(len));
          });
        },
        out));
    return len;
  }
  absl::Status Verify(const PkeyParams& params, absl::Span<const uint8_t> tbs,
                      absl::Span<const uint8_t> sig) override {
    return Run(SignAlg(), params, tbs.size(), /*private_op=*/false,
               [&](const BackendKey& k) { return k.Verify(params, tbs, sig); });
  }
  absl::StatusOr<size_t> Encrypt(const PkeyParams& params,
                                 absl::Span<const uint8_t> in,
                                 absl::Span<uint8_t> out) override {
    ACCELCRYPT_RETURN_IF_ERROR(CheckCrypt());
    size_t len = 0;
    ACCELCRYPT_RETURN_IF_ERROR(
        Run(*FindAlgorithm(ACCELCRYPT_ALG_RSA_CRYPT), params, in.size(),
            /*private_op=*/false, [&](const BackendKey& k) {
              auto got = k.Encrypt(params, in, out);
              if (got.ok()) len = *got;
              return got.status();
            }));
    return len;
  }
  absl::StatusOr<size_t> Decrypt(const PkeyParams& params,
                                 absl::Span<const uint8_t> in,
                                 absl::Span<uint8_t> out) override {
    ACCELCRYPT_RETURN_IF_ERROR(CheckCrypt());
    size_t len = 0;
    const AlgorithmInfo& crypt = *FindAlgorithm(ACCELCRYPT_ALG_RSA_CRYPT);
    ACCELCRYPT_RETURN_IF_ERROR(Run(
        crypt, params, in.size(),
        /*private_op=*/true,
        [&](const BackendKey& k) {
          auto got = k.Decrypt(params, in, out);
          if (got.ok()) len = *got;
          return got.status();
        },
        [&](Router::Slot* served) -> absl::Status {
          // Raw RSA can be checked: the public operation on the result
          // must give back the input. Padded decryption cannot (the
          // padding is random and removed).
          if (params.padding != ACCELCRYPT_PAD_NONE) return absl::OkStatus();
          return CheckOnCpu(served, crypt, [&](const BackendKey& cpu) {
            std::vector<uint8_t> back(in.size() + 1);
            PkeyParams raw;
            raw.padding = ACCELCRYPT_PAD_NONE;
            absl::StatusOr<size_t> n =
                cpu.Encrypt(raw, out.first(len), absl::MakeSpan(back));
            if (!n.ok()) return n.status();
            // Leading zero bytes may differ in length; compare as numbers.
            absl::Span<const uint8_t> a = absl::MakeConstSpan(back).first(*n);
            absl::Span<const uint8_t> b = in;
            while (!a.empty() && a.front() == 0) a.remove_prefix(1);
            while (!b.empty() && b.front() == 0) b.remove_prefix(1);
            if (a.size() != b.size() ||
                CRYPTO_memcmp(a.data(), b.data(), a.size()) != 0) {
              return AuthFailedError("raw decryption check");
            }
            return absl::OkStatus();
          });
        },
        out));
    return len;
  }

  size_t SignatureSize() const override {
    if (key_.type == KeyMaterial::Type::kRsa) return (key_.bits() + 7) / 8;
    // DER Dss-Sig-Value (the ABI's form).
    size_t q = key_.dsa_q.size();
    while (q > 0 && key_.dsa_q[key_.dsa_q.size() - q] == 0) --q;
    return kit::DsaDerMaxSize(q);
  }
  const KeyMaterial& key() const override { return key_; }
  std::string last_backend() const override {
    absl::MutexLock lock(&mu_);
    return last_backend_;
  }

 private:
  const AlgorithmInfo& SignAlg() const {
    return *FindAlgorithm(key_.type == KeyMaterial::Type::kRsa
                              ? ACCELCRYPT_ALG_RSA_SIGN
                              : ACCELCRYPT_ALG_DSA_SIGN);
  }

  absl::Status CheckCrypt() const {
    if (key_.type != KeyMaterial::Type::kRsa) {
      return absl::InvalidArgumentError("DSA keys cannot encrypt or decrypt");
    }
    return absl::OkStatus();
  }

  // Keys prepared per backend and algorithm; null for a backend that
  // declined the key.
  using PreparedKeys = std::map<std::pair<const Backend*, accelcrypt_alg>,
                                std::unique_ptr<BackendKey>>;

  // Prepared returns this object's prepared key on `slot` for `info`,
  // loading it on first use; null when the backend declined the key.
  absl::StatusOr<const BackendKey*> Prepared(Router::Slot* slot,
                                             const AlgorithmInfo& info) {
    return PrepareOn(slot->backend, info, key_, keys_);
  }

  // PrepareOn loads `material` on `backend` once, caching it in `cache`.
  absl::StatusOr<const BackendKey*> PrepareOn(const Backend* backend,
                                              const AlgorithmInfo& info,
                                              const KeyMaterial& material,
                                              PreparedKeys& cache) {
    absl::MutexLock lock(&mu_);
    auto index = std::make_pair(backend, info.id);
    if (auto it = cache.find(index); it != cache.end()) return it->second.get();
    absl::StatusOr<std::unique_ptr<BackendKey>> loaded;
    {
      BackendGuard guard(backend);
      loaded = backend->LoadKey(info.id, material);
    }
    if (!loaded.ok()) {
      if (loaded.status().code() == absl::StatusCode::kUnimplemented) {
        cache.emplace(index, nullptr);
        return static_cast<const BackendKey*>(nullptr);
      }
      return loaded.status();
    }
    const BackendKey* raw = loaded->get();
    cache.emplace(index, *std::move(loaded));
    return raw;
  }

  // Offloaded is true for a backend whose RSA/DSA results come from a
  // device (a token, an accelerator): they are checked on the CPU before
  // the caller sees them.
  static bool Offloaded(const accelcrypt_capability& cap) {
    return (cap.flags & (ACCELCRYPT_CAP_OFFLOAD | ACCELCRYPT_CAP_HARDWARE)) !=
           0;
  }

  // CheckOnCpu runs `check` with this key prepared on the first CPU
  // backend (not offloaded, not `served`) that takes it. A check that
  // fails (the device's result is wrong) is a device error; no CPU backend
  // to check with is one too: an unchecked result is never returned. A
  // fault in an RSA-CRT signature reveals the private key to whoever sees
  // the signature (Boneh, DeMillo, Lipton), so there is no switch.
  template <typename Check>
  absl::Status CheckOnCpu(Router::Slot* served, const AlgorithmInfo& info,
                          Check&& check) {
    const bool has_public = key_.type == KeyMaterial::Type::kRsa
                                ? !key_.n.empty() && !key_.e.empty()
                                : !key_.dsa_y.empty() && !key_.dsa_p.empty();
    // A token key whose public half the token does not show: nothing to
    // check with (DescribeTokenKey reads it whenever the token has it).
    if (!has_public) return absl::OkStatus();
    Router::SlotList order;
    router_->PkeyOrder(info, key_.bits(), /*from_uri=*/false, &order);
    std::vector<const Backend*> checkers;
    for (Router::Slot* slot : order) {
      if (slot == served) continue;
      const accelcrypt_capability* cap = slot->backend->Capability(info.id);
      if (cap != nullptr && !Offloaded(*cap)) checkers.push_back(slot->backend);
    }
    // The software backend checks even when it is kept from serving.
    const Backend* fallback = router_->registry()->checker();
    if (fallback != nullptr &&
        std::find(checkers.begin(), checkers.end(), fallback) == checkers.end()) {
      checkers.push_back(fallback);
    }
    absl::Status last;
    for (const Backend* backend : checkers) {
      auto prepared = PreparedPublic(backend, info);
      if (!prepared.ok()) {
        last = prepared.status();
        continue;
      }
      if (*prepared == nullptr) continue;
      absl::Status st;
      {
        BackendGuard guard(backend);
        st = check(**prepared);
      }
      if (st.ok()) return st;
      if (IsDeviceError(st) ||
          st.code() == absl::StatusCode::kUnimplemented) {
        last = st;
        continue;  // the checker itself failed: try another
      }
      return absl::UnavailableError(absl::StrFormat(
          "%s: %s returned a result that does not check on the CPU (%s): a "
          "device fault, not returned",
          info.name, served->backend->name(), st.message()));
    }
    return absl::UnavailableError(absl::StrFormat(
        "%s: no CPU backend can check %s's result%s%s", info.name,
        served->backend->name(), last.ok() ? "" : ": ", last.message()));
  }

  // PreparedPublic is Prepared with the key's public parts only (a CPU
  // checker never needs the private key).
  absl::StatusOr<const BackendKey*> PreparedPublic(const Backend* backend,
                                                   const AlgorithmInfo& info) {
    KeyMaterial pub;
    pub.type = key_.type;
    pub.n = key_.n;
    pub.e = key_.e;
    pub.dsa_p = key_.dsa_p;
    pub.dsa_q = key_.dsa_q;
    pub.dsa_g = key_.dsa_g;
    pub.dsa_y = key_.dsa_y;
    return PrepareOn(backend, info, pub, public_keys_);
  }

  struct NoCheck {
    absl::Status operator()(Router::Slot*) const { return absl::OkStatus(); }
  };

  // Run tries `fn` on each candidate. On an offloaded backend a result
  // `fn` produced is then put to `check` (a device error when it fails:
  // counted, the breaker, the next backend); `out`, the caller's buffer, is
  // wiped when a result is refused. `private_op` (sign, decrypt) with a
  // key whose private half exists only on a token: a backend holding just
  // the public parts cannot serve it (its "needs a private key" is skipped),
  // and when the token fails the caller gets the token's error.
  template <typename Fn, typename Check = NoCheck>
  absl::Status Run(const AlgorithmInfo& info, const PkeyParams& params,
                   uint64_t n_bytes, bool private_op, Fn&& fn,
                   Check&& check = Check(), absl::Span<uint8_t> out = {}) {
    const bool token_private =
        private_op && !key_.uri.empty() && !key_.has_private_material();
    Router::SlotList order;
    router_->PkeyOrder(info, key_.bits(), !key_.uri.empty(), &order,
                       /*public_op=*/!private_op);
    const uint32_t flag =
        info.family == Family::kRsa ? PaddingFlag(params.padding) : 0;
    if (info.family == Family::kRsa && flag == 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: unknown padding %d", info.name, params.padding));
    }
    absl::Status last;
    bool tried = false;
    for (size_t i = 0; i < order.size(); ++i) {
      Router::Slot* slot = order[i];
      const accelcrypt_capability* cap = slot->backend->Capability(info.id);
      if (cap == nullptr || (cap->flags & flag) != flag) continue;
      tried = true;
      Counter& counter = router_->stats()->Cell(slot->stats_slot, info);
      absl::Status st;
      auto prepared = Prepared(slot, info);
      if (!prepared.ok()) {
        st = prepared.status();
      } else if (*prepared == nullptr) {
        continue;  // this backend does not take this key
      } else {
        {
          BackendGuard guard(slot->backend);
          st = fn(**prepared);
        }
        if (st.ok() && Offloaded(*cap)) {
          st = check(slot);
          if (!st.ok()) {
            OPENSSL_cleanse(out.data(), out.size());
            if (!IsDeviceError(st)) st = absl::UnavailableError(st.message());
          }
        }
      }
      if (st.ok()) {
        counter.Add(n_bytes);
        router_->RecordSuccess(slot);
        absl::MutexLock lock(&mu_);
        if (last_backend_ != slot->backend->name()) {
          last_backend_ = std::string(slot->backend->name());
        }
        return st;
      }
      const absl::Status previous = last;
      last = st;
      if (IsDeviceError(st)) {
        counter.errors.fetch_add(1, std::memory_order_relaxed);
        router_->RecordDeviceError(slot, info);
        if (i + 1 < order.size()) {
          counter.fallbacks.fetch_add(1, std::memory_order_relaxed);
        }
        continue;
      }
      if (st.code() == absl::StatusCode::kUnimplemented) continue;
      if (token_private && st.code() == absl::StatusCode::kFailedPrecondition) {
        // A backend with the public parts only; the token's outcome stands.
        last = previous;
        continue;
      }
      return st;  // caller error: never retried
    }
    if (token_private) {
      const std::string shown = key_.uri.substr(0, key_.uri.find('?'));
      if (last.ok() || last.code() == absl::StatusCode::kUnimplemented ||
          last.code() == absl::StatusCode::kFailedPrecondition) {
        return absl::UnimplementedError(absl::StrFormat(
            "%s: the private key %s stays on its token and no backend holding "
            "it can use it%s%s",
            info.name, shown, last.ok() ? "" : ": ", last.message()));
      }
      return absl::Status(
          last.code(),
          absl::StrFormat("%s: the private key %s stays on its token, which "
                          "failed: %s",
                          info.name, shown, last.message()));
    }
    if (!tried) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "no backend offers %s%s for a %d-bit key", info.name,
          info.family == Family::kRsa
              ? absl::StrFormat(" with padding %d", params.padding)
              : std::string(),
          key_.bits()));
    }
    return NoBackend(info, last);
  }

  Router* router_;
  const KeyMaterial key_;
  mutable absl::Mutex mu_;
  PreparedKeys keys_ ABSL_GUARDED_BY(mu_);
  PreparedKeys public_keys_ ABSL_GUARDED_BY(mu_);
  std::string last_backend_ ABSL_GUARDED_BY(mu_);
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
  std::string policy = config.GetOr("policy", "auto");
  if (policy != "auto" && policy != "priority" && policy != "fastest") {
    return absl::InvalidArgumentError(absl::StrFormat(
        "accelcrypt config: policy = %s is not supported (use auto, priority "
        "or fastest)",
        policy));
  }
  router->policy_ = policy;
  ACCELCRYPT_ASSIGN_OR_RETURN(long long margin,
                              config.GetInt("route_margin_pct", 3));
  if (margin < 0 || margin > 100) {
    return absl::InvalidArgumentError(
        "accelcrypt config: route_margin_pct must be 0..100");
  }
  router->margin_pct_ = static_cast<uint64_t>(margin);
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
  router->pkey_routes_ = PkeyRoutes(config);
  ACCELCRYPT_ASSIGN_OR_RETURN(long long offload_min,
                              config.GetInt("offload_min_bits", 0));
  ACCELCRYPT_ASSIGN_OR_RETURN(
      long long rsa_offload_min,
      config.GetInt("rsa_offload_min_bits", offload_min));
  ACCELCRYPT_ASSIGN_OR_RETURN(
      long long dsa_offload_min,
      config.GetInt("dsa_offload_min_bits", offload_min));
  if (offload_min < 0 || rsa_offload_min < 0 || dsa_offload_min < 0) {
    return absl::InvalidArgumentError(
        "accelcrypt config: offload_min_bits, rsa_offload_min_bits and "
        "dsa_offload_min_bits must be >= 0");
  }
  router->rsa_offload_min_bits_ = static_cast<size_t>(rsa_offload_min);
  router->dsa_offload_min_bits_ = static_cast<size_t>(dsa_offload_min);
  for (const auto& backend : registry->backends()) {
    auto slot = std::make_unique<Slot>();
    slot->backend = backend.get();
    slot->stats_slot = stats->RegisterBackend(backend->name());
    const size_t n_algs = AllAlgorithms().size();
    slot->selftest = std::make_unique<std::atomic<uint8_t>[]>(n_algs);
    const bool first_use =
        registry->selftest_mode() == SelfTestMode::kFirstUse;
    for (const AlgorithmInfo& alg : AllAlgorithms()) {
      const bool pending =
          first_use && backend->Capability(alg.id) != nullptr;
      slot->selftest[alg.index].store(
          static_cast<uint8_t>(pending ? SelfTestState::kPending
                                       : SelfTestState::kPassed),
          std::memory_order_relaxed);
    }
    router->slots_.push_back(std::move(slot));
  }
  router->configured_.assign(AllAlgorithms().size(), false);
  for (const AlgorithmInfo& alg : AllAlgorithms()) {
    std::vector<size_t> order;
    std::string key = absl::StrFormat("route.%s", alg.key);
    std::optional<std::string> route = config.Get(key);
    bool exclusive = false;
    if (route.has_value()) {
      router->configured_[alg.index] = true;
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
  router->LoadCalibration(config);
  // The route's first backend's direct digest, per algorithm, read once:
  // registration (which alone disables algorithms) is over, and the
  // calibration that size-routes an algorithm is loaded.
  router->direct_digests_.resize(router->routes_.size());
  for (const AlgorithmInfo& alg : AllAlgorithms()) {
    const std::vector<size_t>& route = router->routes_[alg.index];
    if (alg.family != Family::kDigest || route.empty() ||
        router->SizeRouted(alg)) {
      continue;
    }
    Slot* slot = router->slots_[route[0]].get();
    const accelcrypt_digest_direct* fn = slot->backend->DigestDirect(alg.id);
    if (fn == nullptr) continue;
    router->direct_digests_[alg.index] = {
        fn, slot, &stats->Cell(slot->stats_slot, alg)};
  }
  for (const auto& [family, bits] :
       {std::pair<const char*, size_t>{"RSA", router->rsa_offload_min_bits_},
        std::pair<const char*, size_t>{"DSA", router->dsa_offload_min_bits_}}) {
    if (bits == 0) continue;
    router->notes_.push_back(absl::StrFormat(
        "offload_min_bits: %s keys below %d bits stay on CPU backends (not "
        "on offload backends unless a per-size route names them)",
        family, bits));
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
    if (SelfTestStateOf(i, *info) == SelfTestState::kFailed) continue;
    out.emplace_back(slots_[i]->backend->name());
  }
  return out;
}

void Router::Order(const AlgorithmInfo& alg, SlotList* out) const {
  OrderUngated(alg, out);
  GateSelfTested(alg, out);
}

void Router::GateSelfTested(const AlgorithmInfo& alg, SlotList* out) const {
  out->erase(std::remove_if(out->begin(), out->end(),
                            [&](Slot* slot) { return !SelfTested(slot, alg); }),
             out->end());
}

bool Router::RunSelfTest(Slot* slot, const AlgorithmInfo& alg) const {
  std::lock_guard<std::recursive_mutex> lock(selftest_mu_);
  std::atomic<uint8_t>& state = slot->selftest[alg.index];
  switch (static_cast<SelfTestState>(state.load(std::memory_order_acquire))) {
    case SelfTestState::kPassed:
      return true;
    case SelfTestState::kRunning:  // this thread, from inside the test
    case SelfTestState::kFailed:
      return false;
    case SelfTestState::kPending:
      break;
  }
  state.store(static_cast<uint8_t>(SelfTestState::kRunning),
              std::memory_order_relaxed);
  absl::Status st;
  {
    BackendGuard guard(slot->backend);
    st = Registry::SelfTest(*slot->backend, alg.id);
  }
  if (st.ok()) {
    state.store(static_cast<uint8_t>(SelfTestState::kPassed),
                std::memory_order_release);
    return true;
  }
  state.store(static_cast<uint8_t>(SelfTestState::kFailed),
              std::memory_order_release);
  std::string message =
      absl::StrFormat("disabled at first use: %s", st.message());
  // Once per pair and process, whatever the log level: a backend that
  // computes wrong answers is news for the administrator.
  fprintf(stderr, "accelcrypt: %s: %s failed its known-answer test and is "
          "not used in this process (%s)\n",
          std::string(slot->backend->name()).c_str(),
          std::string(alg.name).c_str(),
          std::string(st.message()).c_str());
  selftest_events_.push_back({std::string(slot->backend->name()),
                              std::string(alg.name), std::move(message),
                              false});
  return false;
}

void Router::SelfTestAll() {
  for (const AlgorithmInfo& alg : AllAlgorithms()) {
    for (size_t i : routes_[alg.index]) SelfTested(slots_[i].get(), alg);
  }
}

Router::SelfTestState Router::SelfTestStateOf(size_t slot,
                                              const AlgorithmInfo& alg) const {
  return static_cast<SelfTestState>(
      slots_[slot]->selftest[alg.index].load(std::memory_order_acquire));
}

std::vector<LoadEvent> Router::SelfTestEvents() const {
  std::lock_guard<std::recursive_mutex> lock(selftest_mu_);
  return selftest_events_;
}

void Router::OrderUngated(const AlgorithmInfo& alg, SlotList* out) const {
  out->clear();
  const std::vector<size_t>& route = routes_[alg.index];
  uint64_t now = 0;
  SlotList open;
  for (size_t i : route) {
    Slot* slot = slots_[i].get();
    if (BackendGuard::Inside(slot->backend)) continue;  // no re-entry
    if (BreakerOpen(*slot, &now)) {
      open.push_back(slot);
      continue;
    }
    out->push_back(slot);
  }
  // Every candidate out of rotation: try them anyway rather than fail.
  if (out->empty()) *out = std::move(open);
}

bool Router::BreakerOpen(const Slot& slot, uint64_t* now) const {
  uint64_t until = slot.open_until_ns.load(std::memory_order_relaxed);
  if (until == 0) return false;
  if (*now == 0) *now = NowNs();
  // Past the cool-down the breaker is half-open: this operation probes it.
  return *now < until;
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
  return RunOneShotFrom(info, n_bytes, nullptr, absl::Status(),
                        std::forward<Fn>(fn));
}

namespace {

// NextOneShotMayServe is true for a one-shot failure the next candidate may
// recover from (a device error, or not offered there); caller errors are
// never retried.
bool NextOneShotMayServe(const absl::Status& st) {
  return IsDeviceError(st) || st.code() == absl::StatusCode::kUnimplemented;
}

}  // namespace

// Inlined: it is the whole of the digest one-shot fast path.
template <typename Fn>
[[gnu::always_inline]] inline absl::Status Router::TryOneShot(
    Slot* slot, const AlgorithmInfo& info, uint64_t n_bytes, bool more,
    Fn&& fn) {
  Counter& counter = stats_->Cell(slot->stats_slot, info);
  absl::Status st;
  {
    BackendGuard guard(slot->backend);
    st = fn(*slot->backend);
  }
  if (st.ok()) [[likely]] {
    counter.Add(n_bytes);
    RecordSuccess(slot);
  } else if (IsDeviceError(st)) {
    counter.errors.fetch_add(1, std::memory_order_relaxed);
    RecordDeviceError(slot, info);
    if (more) counter.fallbacks.fetch_add(1, std::memory_order_relaxed);
  }
  return st;
}

template <typename Fn>
absl::Status Router::RunOneShotFrom(const AlgorithmInfo& info, uint64_t n_bytes,
                                    const Slot* skip, absl::Status last,
                                    Fn&& fn) {
  SlotList order;
  OrderFor(info, n_bytes, &order);
  for (size_t i = 0; i < order.size(); ++i) {
    Slot* slot = order[i];
    if (slot == skip) continue;
    absl::Status st = TryOneShot(slot, info, n_bytes, i + 1 < order.size(), fn);
    if (st.ok() || !NextOneShotMayServe(st)) return st;
    last = st;
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
  return DigestOneShot(*info, data, out);
}

absl::Status Router::DigestOneShot(const AlgorithmInfo& info,
                                   absl::Span<const uint8_t> data,
                                   absl::Span<uint8_t> out) {
  if (info.family != Family::kDigest) [[unlikely]] {
    return absl::InvalidArgumentError("not a digest algorithm");
  }
  if (out.size() < info.digest_len) [[unlikely]] {
    return absl::OutOfRangeError(absl::StrFormat(
        "%s: output buffer of %d bytes is too small for the %d-byte digest",
        info.name, out.size(), info.digest_len));
  }
  auto run = [&](const Backend& b) {
    return b.RoutedDigestOneShot(info, data, out);
  };
  // Fast path: what Order would put first (the route's first backend,
  // breaker closed, not the backend this thread is inside) without
  // building the list; a half-open breaker (open_until_ns set) takes the
  // full path, which probes it.
  const std::vector<size_t>& route = routes_[info.index];
  if (!route.empty() && !SizeRouted(info)) [[likely]] {
    Slot* slot = slots_[route[0]].get();
    if (slot->open_until_ns.load(std::memory_order_relaxed) == 0 &&
        slot->Tested(info) && !BackendGuard::Inside(slot->backend))
        [[likely]] {
      absl::Status st =
          TryOneShot(slot, info, data.size(), route.size() > 1, run);
      if (st.ok() || !NextOneShotMayServe(st)) [[likely]] {
        return st;
      }
      return RunOneShotFrom(info, data.size(), slot, st, run);
    }
  }
  return RunOneShot(info, data.size(), run);
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

void Router::PkeyOrder(const AlgorithmInfo& alg, size_t key_bits, bool from_uri,
                       SlotList* out, bool public_op) const {
  PkeyOrderUngated(alg, key_bits, from_uri, out, public_op);
  GateSelfTested(alg, out);
}

void Router::PkeyOrderUngated(const AlgorithmInfo& alg, size_t key_bits,
                              bool from_uri, SlotList* out,
                              bool public_op) const {
  SlotList base;
  OrderUngated(alg, &base);
  out->clear();
  auto usable = [&](const Slot* slot) {
    const accelcrypt_capability* cap = slot->backend->Capability(alg.id);
    if (cap == nullptr) return false;
    if (key_bits != 0 &&
        (key_bits < cap->min_key_bits || key_bits > cap->max_key_bits)) {
      return false;
    }
    return from_uri || (cap->flags & ACCELCRYPT_CAP_KEY_IMPORT) != 0;
  };
  auto route = pkey_routes_.find(absl::StrFormat(
      "%s-%d", alg.family == Family::kDsa ? "dsa" : "rsa", key_bits));
  bool exclusive = false;
  if (route != pkey_routes_.end()) {
    absl::string_view value = route->second;
    exclusive = absl::ConsumePrefix(&value, "only:");
    Config tmp;
    tmp.Set("v", AsStd(value));
    for (const std::string& name : tmp.GetList("v")) {
      for (Slot* slot : base) {
        if (slot->backend->name() == name && usable(slot) &&
            std::find(out->begin(), out->end(), slot) == out->end()) {
          out->push_back(slot);
        }
      }
    }
  }
  if (exclusive) return;
  // Below the family's offload threshold, offload backends are skipped
  // (unless the per-size route above named them, the key lives on a token,
  // or nothing else would serve it).
  const size_t min_offload = alg.family == Family::kDsa ? dsa_offload_min_bits_
                                                        : rsa_offload_min_bits_;
  const bool small = !from_uri && key_bits != 0 && key_bits < min_offload;
  auto offload = [&](const Slot* slot) {
    const accelcrypt_capability* cap = slot->backend->Capability(alg.id);
    return cap != nullptr && (cap->flags & (ACCELCRYPT_CAP_OFFLOAD |
                                            ACCELCRYPT_CAP_HARDWARE)) != 0;
  };
  const size_t named = out->size();
  for (Slot* slot : base) {
    if (usable(slot) && !(small && offload(slot)) &&
        std::find(out->begin(), out->end(), slot) == out->end()) {
      out->push_back(slot);
    }
  }
  if (small && out->size() == named) {
    for (Slot* slot : base) {
      if (usable(slot) &&
          std::find(out->begin(), out->end(), slot) == out->end()) {
        out->push_back(slot);
      }
    }
  }
  // The measured fastest first, unless a configured route for this size
  // already decided.
  if (route != pkey_routes_.end()) return;
  const std::string op =
      Calibration::OpKey(alg.family == Family::kDsa ? "dsa" : "rsa",
                         public_op ? "verify" : "sign");
  const std::string fastest = PkeyFastest(op, key_bits, *out);
  if (!fastest.empty()) {
    for (auto it = out->begin(); it != out->end(); ++it) {
      if ((*it)->backend->name() == fastest) {
        std::rotate(out->begin(), it, it + 1);
        break;
      }
    }
    return;
  }
  // Uncalibrated public operations on key material stay on the CPU:
  // nothing secret is involved, and a token is slower at them (SoftHSMv2
  // verifies RSA-2048 about 8x slower than libcrypto on the same CPU).
  if (public_op && !from_uri && policy_ != "priority" &&
      !configured_[alg.index]) {
    std::stable_partition(out->begin(), out->end(),
                          [&](const Slot* slot) { return !offload(slot); });
  }
}

absl::StatusOr<std::unique_ptr<PublicKeyOps>> Router::NewPublicKeyOps(
    KeyMaterial key) {
  const bool rsa = key.type == KeyMaterial::Type::kRsa;
  const bool has_material =
      rsa ? !key.n.empty() && !key.e.empty()
          : !key.dsa_p.empty() && !key.dsa_q.empty() && !key.dsa_g.empty() &&
                !key.dsa_y.empty();
  if (!has_material && key.uri.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s key has neither its public parameters nor a token URI",
        rsa ? "RSA" : "DSA"));
  }
  return std::unique_ptr<PublicKeyOps>(
      new RoutedPublicKeyOps(this, std::move(key)));
}

namespace {

// PublicParts collects what a backend reports through
// accelcrypt_key_public_sink while it loads a URI key.
struct PublicParts {
  std::vector<uint8_t> n, e, p, q, g, y;
  bool any = false;
};

void PutPublicPart(void* arg, uint32_t part, const uint8_t* data, size_t len) {
  auto* parts = static_cast<PublicParts*>(arg);
  std::vector<uint8_t>* dst = nullptr;
  switch (part) {
    case ACCELCRYPT_KEY_PART_RSA_N:
      dst = &parts->n;
      break;
    case ACCELCRYPT_KEY_PART_RSA_E:
      dst = &parts->e;
      break;
    case ACCELCRYPT_KEY_PART_DSA_P:
      dst = &parts->p;
      break;
    case ACCELCRYPT_KEY_PART_DSA_Q:
      dst = &parts->q;
      break;
    case ACCELCRYPT_KEY_PART_DSA_G:
      dst = &parts->g;
      break;
    case ACCELCRYPT_KEY_PART_DSA_Y:
      dst = &parts->y;
      break;
    default:
      return;  // a part this core does not know
  }
  if (data == nullptr || len == 0) return;
  dst->assign(data, data + len);
  parts->any = true;
}

}  // namespace

absl::StatusOr<KeyMaterial> Router::DescribeTokenKey(std::string_view uri) {
  // Only the path part goes into messages: the query may hold a PIN.
  const std::string shown(uri.substr(0, uri.find('?')));
  if (!absl::StartsWith(AsAbsl(uri), "pkcs11:")) {
    return absl::InvalidArgumentError(
        absl::StrFormat("'%s' is not a pkcs11: URI", shown));
  }
  std::vector<std::string> why;
  absl::Status device, invalid;
  for (const auto& slot : slots_) {
    const Backend* backend = slot->backend;
    if (BackendGuard::Inside(backend)) continue;
    for (accelcrypt_alg alg :
         {ACCELCRYPT_ALG_RSA_SIGN, ACCELCRYPT_ALG_DSA_SIGN}) {
      if (backend->Capability(alg) == nullptr) continue;
      PublicParts parts;
      const accelcrypt_key_public_sink sink{sizeof(sink), &parts,
                                            &PutPublicPart};
      KeyMaterial probe;
      probe.type = alg == ACCELCRYPT_ALG_DSA_SIGN ? KeyMaterial::Type::kDsa
                                                  : KeyMaterial::Type::kRsa;
      probe.uri = std::string(uri);
      probe.public_out = &sink;
      absl::StatusOr<std::unique_ptr<BackendKey>> loaded;
      {
        BackendGuard guard(backend);
        loaded = backend->LoadKey(alg, probe);
      }
      if (parts.any) {
        KeyMaterial out;
        out.uri = std::string(uri);
        if (!parts.n.empty() && !parts.e.empty() && parts.p.empty()) {
          out.type = KeyMaterial::Type::kRsa;
          out.n = std::move(parts.n);
          out.e = std::move(parts.e);
        } else if (!parts.p.empty() && !parts.q.empty() && !parts.g.empty() &&
                   parts.n.empty()) {
          out.type = KeyMaterial::Type::kDsa;
          out.dsa_p = std::move(parts.p);
          out.dsa_q = std::move(parts.q);
          out.dsa_g = std::move(parts.g);
          out.dsa_y = std::move(parts.y);
        } else {
          return absl::InternalError(absl::StrFormat(
              "%s described %s with an incomplete or mixed public key",
              backend->name(), shown));
        }
        return out;
      }
      if (loaded.ok()) {
        why.push_back(
            absl::StrFormat("%s serves the URI but cannot describe token keys",
                            backend->name()));
      } else if (IsDeviceError(loaded.status())) {
        device = loaded.status();
      } else {
        if (loaded.status().code() == absl::StatusCode::kInvalidArgument) {
          invalid = loaded.status();
        }
        why.emplace_back(loaded.status().message());
      }
      break;  // a backend reports any type from one load
    }
  }
  if (!device.ok()) return device;
  if (!invalid.ok()) return invalid;
  // A backend that did not load may be the one the user meant (a token
  // label mistyped, a token missing for a moment): its reason belongs in
  // this message, not only in `accelcrypt list`.
  std::vector<std::string> unloaded;
  if (registry_ != nullptr) {
    for (const LoadEvent& event : registry_->events()) {
      if (event.ok || !event.algorithm.empty() ||
          absl::StrContains(event.message, "excluded by configuration")) {
        continue;
      }
      const std::string& origin = event.backend;
      unloaded.push_back(absl::StrFormat(
          "%s (%s)", origin.substr(origin.find_last_of('/') + 1),
          event.message));
    }
  }
  return absl::NotFoundError(absl::StrFormat(
      "no backend holds the key %s%s%s%s%s", shown, why.empty() ? "" : ": ",
      absl::StrJoin(why, "; "),
      unloaded.empty() ? "" : "; backends not loaded: ",
      absl::StrJoin(unloaded, ", ")));
}

}  // namespace accelcrypt
