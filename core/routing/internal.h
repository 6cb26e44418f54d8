// SPDX-License-Identifier: Apache-2.0
// core/routing/: what the router hands out. The Router (core/router.h,
// router.cc: policy, order, breaker; router_fastest.cc: the calibrated
// routes) builds the candidate order; these objects run an operation on
// it:
//   routed_cipher.cc  RoutedCipher: one cipher stream, fallback before data
//                     and mid-stream (portable state, or GCM within the
//                     replay buffer); CPU backends take the copy-free path;
//   routed_digest.cc  RoutedDigest: the same for digests;
//   routed_pkey.cc    RoutedPublicKeyOps: RSA/DSA per operation, with the
//                     results of offload backends checked on the CPU.
// The replay/fallback rule in one place: a backend that declares
// ACCELCRYPT_CAP_CPU for an algorithm has no device errors, so nothing is
// copied to replay its input; any other backend's input is kept (up to
// replay_max bytes) so that a device error mid-stream moves the operation
// to the next candidate with no wrong bytes. Internal to the core.
#ifndef ACCELCRYPT_CORE_ROUTING_INTERNAL_H_
#define ACCELCRYPT_CORE_ROUTING_INTERNAL_H_

#include <time.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "core/router.h"
#include "core/status.h"

namespace accelcrypt::routing {

// t_inside is the backend this thread is running in (BackendGuard), read
// and set directly on the cipher update fast path. Initial-exec: this
// object is dlopen'ed into other processes, and the default model calls
// __tls_get_addr on every access (measured on that path); `__thread`, not
// `thread_local`, so that no TLS wrapper call is made across files.
extern __thread const Backend* t_inside
    __attribute__((tls_model("initial-exec")));

inline uint64_t NowNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull +
         static_cast<uint64_t>(ts.tv_nsec);
}

// NoBackend is the status when no candidate served `info`: the last
// candidate's failure, or "no backend offers" when none was tried.
inline absl::Status NoBackend(const AlgorithmInfo& info,
                              const absl::Status& last) {
  if (last.ok()) {
    return absl::UnimplementedError(
        absl::StrFormat("no backend offers %s", info.name));
  }
  return last;
}

// Access is the routed objects' way into the router's internal interface
// (private in core/router.h: candidate orders, slots, the breaker's
// bookkeeping), so that no front end reaches it.
struct Access {
  using Slot = Router::Slot;
  using SlotList = Router::SlotList;
  static Slot* slot(const Router* r, size_t i) { return r->slot(i); }
  static size_t num_slots(const Router* r) { return r->num_slots(); }
  static void Order(const Router* r, const AlgorithmInfo& alg, SlotList* out) {
    r->Order(alg, out);
  }
  static void PkeyOrder(const Router* r, const AlgorithmInfo& alg,
                        size_t key_bits, bool from_uri, SlotList* out,
                        bool public_op = false) {
    r->PkeyOrder(alg, key_bits, from_uri, out, public_op);
  }
  static void OrderFor(const Router* r, const AlgorithmInfo& alg, uint64_t size,
                       SlotList* out, bool decrypt = false) {
    r->OrderFor(alg, size, out, decrypt);
  }
  static Slot* Preferred(const Router* r, const AlgorithmInfo& alg,
                         uint64_t size, bool decrypt = false) {
    return r->Preferred(alg, size, decrypt);
  }
  static void CountReplay(Router* r, uint64_t n) { r->CountReplay(n); }
  static void RecordSuccess(Router* r, Slot* slot) { r->RecordSuccess(slot); }
  static void RecordDeviceError(Router* r, Slot* slot,
                                const AlgorithmInfo& alg) {
    r->RecordDeviceError(slot, alg);
  }
  static Stats* stats(const Router* r) { return r->stats(); }
  static const Registry* registry(const Router* r) { return r->registry(); }
};
using Slot = Access::Slot;
using SlotList = Access::SlotList;

// Inside runs `fn` with the thread marked as inside `backend`.
template <typename Fn>
auto Inside(const Backend* backend, Fn&& fn) {
  BackendGuard guard(backend);
  return fn();
}

// NextMayServe is true for a failure the next candidate may recover from: a
// device error, or "not offered there" (kUnimplemented). Caller errors are
// never retried on another backend.
inline bool NextMayServe(const absl::Status& st) {
  return IsDeviceError(st) || st.code() == absl::StatusCode::kUnimplemented;
}

// OpenOnFirst runs `create(slot)` (returning absl::StatusOr<T>) on
// candidates[from], [from + 1], ... until one succeeds, and returns its
// index and value. A device error is recorded against its slot; a failure
// NextMayServe allows moves on to the next candidate, any other is
// returned at once; NoBackend when all failed.
template <typename Create>
auto OpenOnFirst(Router* router, const AlgorithmInfo& info,
                 const SlotList& candidates, size_t from, Create&& create)
    -> absl::StatusOr<std::pair<
        size_t, typename decltype(create(candidates[0]))::value_type>> {
  absl::Status last;
  for (size_t i = from; i < candidates.size(); ++i) {
    Slot* slot = candidates[i];
    auto created = Inside(slot->backend, [&] { return create(slot); });
    if (created.ok()) return std::make_pair(i, *std::move(created));
    last = created.status();
    if (IsDeviceError(last)) Access::RecordDeviceError(router, slot, info);
    if (!NextMayServe(last)) return last;
  }
  return NoBackend(info, last);
}

// PaddingFlag is the capability flag (ACCELCRYPT_CAP_RSA_*) a backend
// declares for an RSA padding (ACCELCRYPT_PAD_*); 0 for any other value.
inline uint32_t PaddingFlag(uint32_t padding) {
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

// RunsOnCpu is true when `slot` declares ACCELCRYPT_CAP_CPU for `info`: its
// updates have no device errors, so nothing is kept to replay them.
inline bool RunsOnCpu(const Slot* slot, const AlgorithmInfo& info) {
  const accelcrypt_capability* cap = slot->backend->Capability(info.id);
  return cap != nullptr && (cap->flags & ACCELCRYPT_CAP_CPU) != 0;
}

// OpenRoutedCipher / OpenRoutedDigest create the object on the first
// candidate of `order` that works.
absl::StatusOr<std::unique_ptr<Cipher>> OpenRoutedCipher(
    Router* router, const AlgorithmInfo& info, SlotList order,
    size_t replay_max);
absl::StatusOr<std::unique_ptr<Digest>> OpenRoutedDigest(
    Router* router, const AlgorithmInfo& info, SlotList order,
    size_t replay_max);
// NewRoutedPublicKeyOps serves `key` through the router's per-operation
// order (Router::PkeyOrder).
std::unique_ptr<PublicKeyOps> NewRoutedPublicKeyOps(Router* router,
                                                    KeyMaterial key);

}  // namespace accelcrypt::routing

#endif  // ACCELCRYPT_CORE_ROUTING_INTERNAL_H_
