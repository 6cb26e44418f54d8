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
#include "core/calibration.h"
#include "core/config_keys.h"
#include "core/routing/internal.h"
#include "core/routing/options.h"
#include "core/status.h"

namespace accelcrypt {
namespace {

using routing::NoBackend;
using routing::NowNs;

}  // namespace

namespace routing {
__thread const Backend* t_inside __attribute__((tls_model("initial-exec"))) =
    nullptr;
}  // namespace routing
using routing::t_inside;

BackendGuard::BackendGuard(const Backend* backend) : previous_(t_inside) {
  t_inside = backend;
}
BackendGuard::~BackendGuard() { t_inside = previous_; }
bool BackendGuard::Inside(const Backend* backend) {
  return t_inside == backend;
}

absl::StatusOr<std::unique_ptr<Router>> Router::Create(const Registry* registry,
                                                       const Config& config,
                                                       Stats* stats) {
  ACCELCRYPT_ASSIGN_OR_RETURN(RouterOptions options,
                              RouterOptions::FromConfig(config));
  return Create(registry, options, stats);
}

absl::StatusOr<std::unique_ptr<Router>> Router::Create(
    const Registry* registry, const RouterOptions& options, Stats* stats) {
  std::unique_ptr<Router> router(new Router());
  router->registry_ = registry;
  router->stats_ = stats;
  router->policy_ = options.policy;
  router->interpose_all_ = options.interpose_all;
  router->margin_pct_ = options.margin_pct;
  router->breaker_threshold_ = options.breaker_threshold;
  router->breaker_cooldown_ns_ = options.breaker_cooldown_ms * 1000000ull;
  router->replay_max_ = options.replay_max;
  router->pkey_routes_ = options.pkey_routes;
  router->rsa_offload_min_bits_ = options.rsa_offload_min_bits;
  router->dsa_offload_min_bits_ = options.dsa_offload_min_bits;
  std::vector<const Backend*> backends;
  router->slots_.Reserve(registry->backends().size() +
                         registry->pending().size());
  for (const auto& backend : registry->backends()) {
    backends.push_back(backend.get());
    auto slot = std::make_unique<Slot>();
    slot->backend = backend.get();
    slot->stats_slot = stats->RegisterBackend(backend->name());
    const size_t n_algs = AllAlgorithms().size();
    slot->selftest = std::make_unique<std::atomic<uint8_t>[]>(n_algs);
    const bool first_use = registry->selftest_mode() == SelfTestMode::kFirstUse;
    for (const AlgorithmInfo& alg : AllAlgorithms()) {
      const bool pending = first_use && backend->Capability(alg.id) != nullptr;
      slot->selftest[alg.index].store(
          static_cast<uint8_t>(pending ? SelfTestState::kPending
                                       : SelfTestState::kPassed),
          std::memory_order_relaxed);
    }
    router->slots_.Append(std::move(slot));
  }
  router->routes_.Publish(BuildRoutes(backends, options));
  router->route_names_.resize(AllAlgorithms().size());
  router->route_exclusive_.assign(AllAlgorithms().size(), false);
  for (const AlgorithmInfo& alg : AllAlgorithms()) {
    if (const auto& route = options.RouteFor(alg); route.has_value()) {
      router->route_names_[alg.index] = route->backends;
      router->route_exclusive_[alg.index] = route->exclusive;
    }
  }
  router->SetUpPending();
  router->configured_.assign(AllAlgorithms().size(), false);
  for (const AlgorithmInfo& alg : AllAlgorithms()) {
    router->configured_[alg.index] = options.RouteFor(alg).has_value();
  }
  router->LoadCalibration(options.calibration_file);
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
    // The cell's address only: the stats table is armed when a front end
    // takes the direct digest (Direct), not at load.
    router->direct_digests_[alg.index] = {
        fn, slot, stats->CellAddress(slot->stats_slot, alg)};
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

Router::KeyOffer Router::OfferedKeys(accelcrypt_alg alg,
                                     uint32_t padding) const {
  KeyOffer offer;
  const AlgorithmInfo* info = FindAlgorithm(alg);
  if (info == nullptr) return offer;
  const uint32_t need =
      ACCELCRYPT_CAP_KEY_IMPORT | routing::PaddingFlag(padding);
  for (size_t i : routes_[info->index]) {
    const accelcrypt_capability* cap = slots_[i]->backend->Capability(alg);
    if (cap == nullptr || (cap->flags & need) != need) continue;
    if (!offer.offered) {
      offer = {true, cap->min_key_bits, cap->max_key_bits};
      continue;
    }
    offer.min_bits = std::min<size_t>(offer.min_bits, cap->min_key_bits);
    offer.max_bits = std::max<size_t>(offer.max_bits, cap->max_key_bits);
  }
  return offer;
}

bool Router::TakesKey(accelcrypt_alg alg, uint32_t padding, size_t bits) const {
  const AlgorithmInfo* info = FindAlgorithm(alg);
  if (info == nullptr) return false;
  const uint32_t need =
      ACCELCRYPT_CAP_KEY_IMPORT | routing::PaddingFlag(padding);
  for (size_t i : routes_[info->index]) {
    const accelcrypt_capability* cap = slots_[i]->backend->Capability(alg);
    if (cap == nullptr || (cap->flags & need) != need) continue;
    if (bits == 0 || (bits >= cap->min_key_bits && bits <= cap->max_key_bits)) {
      return true;
    }
  }
  return false;
}

bool Router::FirstIsHardware(accelcrypt_alg alg) const {
  const AlgorithmInfo* info = FindAlgorithm(alg);
  if (info == nullptr) return false;
  for (size_t i : routes_[info->index]) {
    if (SelfTestStateOf(i, *info) == SelfTestState::kFailed) continue;
    return slots_[i]->backend->hardware();
  }
  return false;
}

const Backend* Router::backend_at(size_t slot) const {
  return slot < slots_.size() ? slots_[slot]->backend : nullptr;
}

std::string Router::PreferredBackend(const AlgorithmInfo& alg, uint64_t size,
                                     bool decrypt) const {
  const Slot* slot = Preferred(alg, size, decrypt);
  return slot != nullptr ? std::string(slot->backend->name()) : "";
}

std::array<size_t, 4> Router::SelfTestCounts() const {
  std::array<size_t, 4> counts = {0, 0, 0, 0};
  for (size_t i = 0; i < slots_.size(); ++i) {
    for (const AlgorithmInfo& alg : AllAlgorithms()) {
      if (slots_[i]->backend->Capability(alg.id) == nullptr) continue;
      ++counts[static_cast<size_t>(SelfTestStateOf(i, alg))];
    }
  }
  return counts;
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
  if (st.code() == absl::StatusCode::kResourceExhausted) {
    // Busy (a token asked from inside a call into its own module on this
    // thread, out of sessions): not a wrong answer. Not used for this
    // operation; tested again at the next.
    state.store(static_cast<uint8_t>(SelfTestState::kPending),
                std::memory_order_release);
    return false;
  }
  state.store(static_cast<uint8_t>(SelfTestState::kFailed),
              std::memory_order_release);
  std::string message =
      absl::StrFormat("disabled at first use: %s", st.message());
  // Once per pair and process, whatever the log level: a backend that
  // computes wrong answers, or a token that cannot be used, is news for
  // the administrator (stderr and syslog: a daemon's log), and an error in
  // its statistics.
  stats_->Cell(slot->stats_slot, alg)
      .errors.fetch_add(1, std::memory_order_relaxed);
  ReportToOperator(absl::StrFormat(
      "accelcrypt: %s: %s failed its known-answer test and is not used in "
      "this process (%s)",
      slot->backend->name(), alg.name, st.message()));
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
  uint64_t n =
      slot->consecutive_errors.fetch_add(1, std::memory_order_relaxed) + 1;
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
  StartDue(Family::kCipher);
  SlotList order;
  Order(*info, &order);
  return routing::OpenRoutedCipher(this, *info, std::move(order), replay_max_);
}

absl::StatusOr<std::unique_ptr<Digest>> Router::NewDigest(accelcrypt_alg alg) {
  const AlgorithmInfo* info = FindAlgorithm(alg);
  if (info == nullptr || info->family != Family::kDigest) {
    return absl::InvalidArgumentError("not a digest algorithm");
  }
  StartDue(Family::kDigest);
  SlotList order;
  Order(*info, &order);
  return routing::OpenRoutedDigest(this, *info, std::move(order), replay_max_);
}

template <typename Fn>
absl::Status Router::RunOneShot(const AlgorithmInfo& info, uint64_t n_bytes,
                                Fn&& fn) {
  return RunOneShotFrom(info, n_bytes, nullptr, absl::Status(),
                        std::forward<Fn>(fn));
}

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
    if (st.ok() || !routing::NextMayServe(st)) return st;
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
        slot->Tested(info) && !BackendGuard::Inside(slot->backend)) [[likely]] {
      absl::Status st =
          TryOneShot(slot, info, data.size(), route.size() > 1, run);
      if (st.ok() || !routing::NextMayServe(st)) [[likely]] {
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
  // The declared order, then the calibration's choice first, unless a
  // configured route for this size already decided. Public operations on
  // key material stay on the CPU unless a calibration measured a token
  // faster: nothing secret is involved, and a token is slower at them
  // (SoftHSMv2 verifies RSA-2048 about 8x slower than libcrypto on the
  // same CPU).
  if (route != pkey_routes_.end()) return;
  if (public_op && !from_uri && policy_ != "priority" &&
      !configured_[alg.index]) {
    std::stable_partition(out->begin(), out->end(),
                          [&](const Slot* slot) { return !offload(slot); });
  }
  const std::string op =
      Calibration::OpKey(alg.family == Family::kDsa ? "dsa" : "rsa",
                         public_op ? "verify" : "sign");
  const std::string fastest = PkeyFastest(alg, op, key_bits, *out);
  for (auto it = out->begin(); !fastest.empty() && it != out->end(); ++it) {
    if ((*it)->backend->name() == fastest) {
      std::rotate(out->begin(), it, it + 1);
      break;
    }
  }
}

absl::StatusOr<std::unique_ptr<PublicKeyOps>> Router::NewPublicKeyOps(
    KeyMaterial key) {
  const bool rsa = key.type == KeyMaterial::Type::kRsa;
  const bool has_material = rsa ? !key.n.empty() && !key.e.empty()
                                : !key.dsa_p.empty() && !key.dsa_q.empty() &&
                                      !key.dsa_g.empty() && !key.dsa_y.empty();
  if (!has_material && key.uri.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s key has neither its public parameters nor a token URI",
        rsa ? "RSA" : "DSA"));
  }
  StartDue(rsa ? Family::kRsa : Family::kDsa);
  return routing::NewRoutedPublicKeyOps(this, std::move(key));
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
  StartDue(Family::kRsa);
  StartDue(Family::kDsa);
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
  std::vector<std::string> unloaded = PendingReasons();
  if (registry_ != nullptr) {
    for (const LoadEvent& event : registry_->events()) {
      // A deferred or failed start of a pending backend: PendingReasons
      // has its current state.
      if (event.ok || event.excluded || !event.algorithm.empty() ||
          IsPending(event.backend)) {
        continue;
      }
      const std::string& origin = event.backend;
      unloaded.push_back(absl::StrFormat(
          "%s (%s)", origin.substr(origin.find_last_of('/') + 1),
          event.message));
    }
  }
  return absl::NotFoundError(
      absl::StrFormat("no backend holds the key %s%s%s%s%s", shown,
                      why.empty() ? "" : ": ", absl::StrJoin(why, "; "),
                      unloaded.empty() ? "" : "; backends not loaded: ",
                      absl::StrJoin(unloaded, ", ")));
}

}  // namespace accelcrypt
