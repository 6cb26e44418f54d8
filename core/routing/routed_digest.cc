// SPDX-License-Identifier: Apache-2.0
// RoutedDigest: a digest over the router's candidates
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

// RoutedDigest falls back before any data, and mid-stream while the message
// so far fits the replay buffer (`replay_max` bytes): the buffer is
// replayed into the next backend. Past that, a device error is returned.
class RoutedDigest final : public Digest {
 public:
  RoutedDigest(Router* router, const AlgorithmInfo& info, SlotList candidates,
               size_t replay_max)
      : router_(router),
        info_(info),
        candidates_(std::move(candidates)),
        replay_max_(replay_max) {}
  ~RoutedDigest() override {
    if (!replay_.empty()) OPENSSL_cleanse(replay_.data(), replay_.size());
  }

  absl::Status Open(size_t from) {
    auto opened = OpenOnFirst(
        router_, info_, candidates_, from,
        [&](Slot* slot) { return slot->backend->NewDigest(info_.id); });
    if (!opened.ok()) return opened.status();
    current_ = opened->first;
    impl_ = std::move(opened->second);
    Slot* slot = candidates_[current_];
    cpu_ = RunsOnCpu(slot, info_);
    counter_ = &Access::stats(router_)->Cell(slot->stats_slot, info_);
    counter_->Add(0);
    Access::RecordSuccess(router_, slot);
    return absl::OkStatus();
  }

  absl::Status Init() override {
    WipeReplay();
    replay_ok_ = true;
    check_route_ = router_->SizeRouted(info_);
    absl::Status st = Call([&] { return impl_->Init(); });
    if (st.ok()) [[likely]] {
      // One op, no bytes yet (Add(0) would be a second atomic add).
      counter_->ops.fetch_add(1, std::memory_order_relaxed);
      Access::RecordSuccess(router_, candidates_[current_]);
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
    auto copy = std::make_unique<RoutedDigest>(router_, info_, candidates_,
                                               replay_max_);
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
    Slot* want = Access::Preferred(router_, info_, size);
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
    Access::CountReplay(router_, data.size());
  }

  absl::Status MoveOn(const absl::Status& cause) {
    counter_->errors.fetch_add(1, std::memory_order_relaxed);
    Access::RecordDeviceError(router_, candidates_[current_], info_);
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
      Access::RecordDeviceError(router_, candidates_[current_], info_);
      next = current_ + 1;
    }
    if (!replay.empty()) OPENSSL_cleanse(replay.data(), replay.size());
    return result;
  }

  Router* router_;
  const AlgorithmInfo& info_;
  SlotList candidates_;
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

}  // namespace

absl::StatusOr<std::unique_ptr<Digest>> OpenRoutedDigest(
    Router* router, const AlgorithmInfo& info, SlotList order,
    size_t replay_max) {
  auto digest = std::make_unique<RoutedDigest>(router, info, std::move(order),
                                               replay_max);
  ACCELCRYPT_RETURN_IF_ERROR(digest->Open(0));
  return std::unique_ptr<Digest>(std::move(digest));
}

}  // namespace accelcrypt::routing
