// SPDX-License-Identifier: Apache-2.0
// RoutedCipher: a cipher stream over the router's candidates
// (core/routing/internal.h).
#include <openssl/crypto.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "core/routing/internal.h"
#include "core/status.h"

namespace accelcrypt::routing {
namespace {

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
  RoutedCipher(Router* router, const AlgorithmInfo& info, SlotList candidates,
               size_t replay_max)
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
    auto opened = OpenOnFirst(
        router_, info_, candidates_, from,
        [&](Slot* slot) { return slot->backend->NewCipher(info_.id); });
    if (!opened.ok()) return opened.status();
    current_ = opened->first;
    impl_ = std::move(opened->second);
    raw_ = RawView(*impl_);
    Slot* slot = candidates_[current_];
    current_backend_ = slot->backend;
    cpu_ = RunsOnCpu(slot, info_);
    counter_ = &Access::stats(router_)->Cell(slot->stats_slot, info_);
    return absl::OkStatus();
  }

  absl::Status Init(bool encrypt, absl::Span<const uint8_t> key,
                    absl::Span<const uint8_t> iv) override {
    if (key.size() != info_.key_len) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: key is %d bytes, expected %d", info_.name,
                          key.size(), info_.key_len));
    }
    if (info_.mode == CipherMode::kGcm) {
      if (iv.empty() || iv.size() > kMaxIv) {
        return absl::InvalidArgumentError(
            absl::StrFormat("%s: IV is %d bytes, expected 1..%d", info_.name,
                            iv.size(), kMaxIv));
      }
    } else if (iv.size() != info_.iv_len) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: IV is %d bytes, expected %d", info_.name,
                          iv.size(), info_.iv_len));
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
      Access::RecordSuccess(router_, candidates_[current_]);
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
      accelcrypt_status rc =
          raw_.table->update(raw_.ctx, in.data(), in.size(), out.data(), &err);
      t_inside = previous;
      if (rc == ACCELCRYPT_OK) [[likely]] {
        started_ = true;
        CountBytes(in.size());
        return absl::OkStatus();
      }
      return UpdateFailed(
          in, out,
          FromAbi(rc,
                  std::string_view(err.message,
                                   strnlen(err.message, sizeof(err.message)))));
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
    if (pending_bytes_ >= kStatsFlushBytes) [[unlikely]]
      FlushBytes();
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
    Access::RecordDeviceError(router_, candidates_[current_], info_);
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
        absl::Status s =
            impl_->Init(encrypt_, absl::MakeConstSpan(key_, info_.key_len),
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
    Slot* want = Access::Preferred(router_, info_, size, !encrypt_);
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
    Access::CountReplay(router_, data.size());
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
  SlotList candidates_;
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

}  // namespace

absl::StatusOr<std::unique_ptr<Cipher>> OpenRoutedCipher(
    Router* router, const AlgorithmInfo& info, SlotList order,
    size_t replay_max) {
  auto cipher = std::make_unique<RoutedCipher>(router, info, std::move(order),
                                               replay_max);
  ACCELCRYPT_RETURN_IF_ERROR(cipher->Open(0));
  return std::unique_ptr<Cipher>(std::move(cipher));
}

}  // namespace accelcrypt::routing
