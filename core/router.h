// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_CORE_ROUTER_H_
#define ACCELCRYPT_CORE_ROUTER_H_

#include <sys/types.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "core/backend.h"
#include "core/cipher.h"
#include "core/config.h"
#include "core/digest.h"
#include "core/internal/os_mutex.h"
#include "core/pkey.h"
#include "core/registry.h"
#include "core/stats.h"

namespace accelcrypt {

// Router chooses the backend for each operation and hides device failures:
//  - candidates per algorithm: `route.<alg>` from the config, else the
//    registry's priority order, restricted to backends that declare `alg`;
//  - a device error (kUnavailable, kResourceExhausted) re-runs the operation
//    on the next candidate: one-shot ops always, ciphers when the state is
//    portable (or nothing was processed yet), GCM and digests while the
//    message so far fits `replay_max` bytes (replayed on the next backend),
//    except on a backend declaring ACCELCRYPT_CAP_CPU for the algorithm (no
//    device errors: no copy is kept, GCM updates take the fast path);
//    caller errors are returned as they are;
//  - after `breaker_threshold` consecutive device errors a backend is out of
//    rotation for `breaker_cooldown_ms`, then one probe decides;
//  - a call made from inside a backend (thread-local guard) is never routed
//    back into that same backend.
// Objects it returns count ops/bytes in Stats and report backend(). The
// router is thread-safe and outlives every object it returns.
struct Calibration;
struct RouterOptions;
namespace routing {
struct Access;
}  // namespace routing

class Router {
 public:
  // Create parses the routing settings of `config` (RouterOptions::
  // FromConfig, core/routing/options.h) and builds the router over the
  // registry's backends.
  static absl::StatusOr<std::unique_ptr<Router>> Create(
      const Registry* registry, const Config& config, Stats* stats);
  static absl::StatusOr<std::unique_ptr<Router>> Create(
      const Registry* registry, const RouterOptions& options, Stats* stats);
  ~Router();

  // Supports is true when some backend declares `alg`.
  bool Supports(accelcrypt_alg alg) const;

  // What front ends ask before they offer or start an operation, so that
  // none of them reads backend capability flags.
  // kAnyPadding: no padding requirement (DSA, or "any RSA padding").
  static constexpr uint32_t kAnyPadding = 0xffffffffu;
  // KeyOffer is what the routed backends taking key material (KEY_IMPORT)
  // offer for an RSA/DSA algorithm with a padding (ACCELCRYPT_PAD_*):
  // `offered` when at least one does, and the union of their key sizes.
  struct KeyOffer {
    bool offered = false;
    size_t min_bits = 0;
    size_t max_bits = 0;
  };
  KeyOffer OfferedKeys(accelcrypt_alg alg,
                       uint32_t padding = kAnyPadding) const;
  // TakesKey is true when one routed backend taking key material offers
  // `alg` with `padding` for keys of `bits` (0: any size).
  bool TakesKey(accelcrypt_alg alg, uint32_t padding, size_t bits) const;
  // FirstIsHardware is true when the backend routed first for `alg`
  // declares hardware (PKCS#11's CKF_HW, the provider's property).
  bool FirstIsHardware(accelcrypt_alg alg) const;
  // Interposition is whether a front end that sits beside OpenSSL's own
  // providers (the provider) offers `alg` to OpenSSL, and why. The rule
  // (`interpose = wins`, the default): accelcrypt offers an algorithm only
  // where a backend that wins serves it, one not declaring
  // ACCELCRYPT_CAP_PASS_THROUGH (hardware, a token, CPU code faster than
  // libcrypto's). For ciphers, digests and the entropy source that is the
  // backend routed first (per size bucket and direction where a
  // calibration routes by size); for RSA/DSA any routed backend (a token
  // holds keys by URI, and the provider's key objects must reach it).
  // Everything else OpenSSL's default provider serves directly, at its own
  // speed. `interpose = all` offers every algorithm a backend serves (the
  // tests of the provider over the software backend), except the entropy
  // source, offered only when it wins; RNG_RANDOM is never offered
  // (OpenSSL's DRBGs run over the seed source). The router itself routes
  // as before: the PKCS#11 module, the CLI and fallback use every backend.
  struct Interposition {
    // offered: the provider offers the algorithm to OpenSSL.
    bool offered = false;
    // wins: a backend that wins serves it (offered under `interpose =
    // wins`); `backend` names it.
    bool wins = false;
    std::string backend;
    // why, for `accelcrypt list`: "x86 (hardware)", "interpose = all",
    // "only pass-through backends serve it (software)", ...
    std::string why;
  };
  Interposition Interposes(accelcrypt_alg alg) const;
  // interpose_all is true under `interpose = all`.
  bool interpose_all() const { return interpose_all_; }
  // SelfTestCounts counts the (backend, algorithm) pairs by SelfTestState
  // (indexed by its value), for `accelcrypt list`.
  std::array<size_t, 4> SelfTestCounts() const;
  // Candidates lists backend names for `alg` in routing order.
  std::vector<std::string> Candidates(accelcrypt_alg alg) const;

  absl::StatusOr<std::unique_ptr<Cipher>> NewCipher(accelcrypt_alg alg);
  absl::StatusOr<std::unique_ptr<Digest>> NewDigest(accelcrypt_alg alg);
  absl::Status DigestOneShot(accelcrypt_alg alg, absl::Span<const uint8_t> data,
                             absl::Span<uint8_t> out);
  // DigestOneShot hashes `data` into `out` with the digest `info` (from
  // the identity table); kInvalidArgument when `info` is not a digest,
  // kOutOfRange when `out` is shorter than info.digest_len. The per-call
  // path for front ends: when the route's first backend is in rotation
  // and no size routing applies, it is called without building the
  // candidate list (the list is built only to fall back).
  absl::Status DigestOneShot(const AlgorithmInfo& info,
                             absl::Span<const uint8_t> data,
                             absl::Span<uint8_t> out);
  // DirectDigest is a digest's plain-CPU implementation over caller-owned
  // state (accelcrypt_digest_direct) and the stats cell its messages count
  // in: the caller adds one op and the message's bytes per final.
  struct DirectDigest {
    const accelcrypt_digest_direct* fn = nullptr;
    Counter* counter = nullptr;
  };
  // Direct returns, for a front end's per-message path, the direct digest
  // of the route's first backend for `info` (from the identity table) when
  // that backend offers one and nothing is left to decide: no size
  // routing, its breaker closed. Empty otherwise: use NewDigest or
  // DigestOneShot. A direct digest cannot fail, so nothing falls back from
  // it and it does not touch the breaker; it runs on caller-owned state
  // and never calls back into a library context, so, unlike routed
  // operations, it is used even on a thread inside its backend.
  DirectDigest Direct(const AlgorithmInfo& info) const;
  // RandomBytes fills `out` from the first RNG_RANDOM backend that works.
  absl::Status RandomBytes(absl::Span<uint8_t> out);
  // Entropy fills `out` from the first RNG_ENTROPY backend that works and
  // returns the entropy bits it vouches for.
  absl::StatusOr<size_t> Entropy(absl::Span<uint8_t> out);

  // NewPublicKeyOps returns routed RSA or DSA operations over `key`. Per
  // operation the candidates are the backends declaring the family's
  // algorithm (RSA_SIGN for sign/verify, RSA_CRYPT for encrypt/decrypt,
  // DSA_SIGN) whose [min_key_bits, max_key_bits] holds the key's size and
  // whose flags cover the padding, with KEY_IMPORT unless the key is a token
  // reference (the backend's load_key decides whether it owns the URI).
  // Order: `route.rsa-<bits>` / `route.dsa-<bits>` first, then `route.rsa`,
  // `route.rsa-crypt`, `route.dsa` as for every algorithm. Each backend's
  // prepared key is loaded once and kept in the returned object. A device
  // error re-runs the operation on the next candidate; caller errors (bad
  // signature, bad padding, short buffer) are returned as they are.
  // kInvalidArgument when the key is empty or no backend takes its size.
  absl::StatusOr<std::unique_ptr<PublicKeyOps>> NewPublicKeyOps(
      KeyMaterial key);

  // DescribeTokenKey returns the key an RFC 7512 `pkcs11:` URI names, as
  // the backends holding it describe it: `uri` set, the type (RSA or DSA)
  // and the public parts read from the token (RSA n, e; DSA p, q, g and y
  // when the token has the public key), so bits(), size routing and
  // verification work. No private part is ever read. Backends declaring
  // RSA_SIGN or DSA_SIGN are asked in priority order (a backend this
  // thread is inside is skipped); the first that finds the object answers.
  // kNotFound when no backend knows the object (the message says why, from
  // the backends), kInvalidArgument for a malformed URI, device errors as
  // kUnavailable.
  absl::StatusOr<KeyMaterial> DescribeTokenKey(std::string_view uri);

  // Known-answer tests at first use (Registry's SelfTestMode::kFirstUse):
  // a (backend, algorithm) pair serves only once its test passed in this
  // process; the router runs the test the first time the pair would be a
  // candidate, and a failure removes the pair from every route.
  enum class SelfTestState : uint8_t {
    kPassed = 0,   // passed, or tested at load, or self-tests are off
    kPending = 1,  // not run yet
    kRunning = 2,  // being run (by this thread, if it asks again)
    kFailed = 3,
  };
  // SelfTestAll runs every pending test now (`accelcrypt list --selftest`,
  // `accelcrypt calibrate`).
  void SelfTestAll();
  // SelfTestStateOf: `slot` indexes the registry's backends (priority
  // order), as backend_at does.
  SelfTestState SelfTestStateOf(size_t slot, const AlgorithmInfo& alg) const;
  size_t num_backends() const { return slots_.size(); }
  const Backend* backend_at(size_t slot) const;
  // SelfTestEvents lists the tests run at first use that failed, as
  // LoadEvents (backend, algorithm, reason).
  std::vector<LoadEvent> SelfTestEvents() const;

  // Deferred backends (Registry::pending(): the PKCS#11 client backend,
  // whose token module may itself use OpenSSL) start at the first routed
  // operation of a family they serve (NewCipher, NewDigest,
  // NewPublicKeyOps, DescribeTokenKey), never on a thread inside one of
  // this router's backends, and never blocking a call while another thread
  // starts one. A start that fails counts an error in the backend's INIT
  // stats column, writes one line for the operator per process (stderr and
  // syslog) and is tried again at most every `backend_retry_s` seconds at
  // such an operation; once started, the backend joins the routes where the
  // configured order puts it and serves from the next operation on (routed
  // objects already made keep their candidates).
  // StartDeferred starts every pending backend now, whatever the back-off,
  // and returns how many started (tests, tools).
  size_t StartDeferred() { return StartPending(~0u, /*force=*/true); }
  // Deferred is true while a backend that would serve `family` has not
  // started and may still start.
  bool Deferred(Family family) const {
    return (pending_families_.load(std::memory_order_acquire) &
            FamilyBit(family)) != 0;
  }

  // PreferredBackend names the backend Preferred (below) chooses for
  // `size`-byte inputs when a calibration routes `alg` by size; "" when it
  // does not. For tests and `accelcrypt list`.
  std::string PreferredBackend(const AlgorithmInfo& alg, uint64_t size,
                               bool decrypt = false) const;
  // SizeRouted is true when Preferred can answer for `alg`: the
  // calibration chose different backends for different sizes or
  // directions. (Where it chose one backend throughout, that backend is
  // simply first in the route and nothing is decided per operation.)
  bool SizeRouted(const AlgorithmInfo& alg) const {
    return alg.index < size_routed_.size() && size_routed_[alg.index];
  }
  // policy is "auto", "priority" or "fastest" (the configured one).
  const std::string& policy() const { return policy_; }
  // calibrated is true when a calibration for this CPU and these backend
  // versions is in use (policy auto or fastest).
  bool calibrated() const { return calibrated_; }
  // CalibrationStatus says which calibration is in use and how much of this
  // process's routing it covers, for `accelcrypt list`. state: "none" (no
  // file, or policy = priority), "stale" (made on another CPU or with
  // another version of a loaded backend: not used), "partial" (used, but
  // it did not measure the `unmeasured` backends loaded now: their places
  // in every route stay as declared), "current" (used, every loaded
  // backend measured). `declared` lists the algorithms the file keeps on
  // the declared route (measured slower through the provider).
  struct CalibrationStatus {
    std::string state = "none";
    std::string path;
    std::string why;  // for "none" and "stale"
    std::vector<std::string> unmeasured;
    std::vector<std::string> declared;
  };
  const CalibrationStatus& calibration_status() const {
    return calibration_status_;
  }
  // RouteChoice is the backend that serves `alg` at a size bucket and why:
  // "configured" (route.<alg>), "calibrated" (measured fastest, or within
  // route_margin_pct of it and earlier in priority order), "declared" (no
  // calibration: the backend declares hardware and is first in priority
  // order), "priority" (no calibration, a plain CPU backend first), or for
  // RSA/DSA public operations "cpu" (kept on the CPU, uncalibrated).
  struct RouteChoice {
    std::string backend;  // empty: no backend
    std::string why;
  };
  RouteChoice Chosen(const AlgorithmInfo& alg, uint64_t bucket,
                     bool decrypt = false) const;
  // PkeyChosen is Chosen for RSA/DSA (`alg` RSA_SIGN, RSA_CRYPT or
  // DSA_SIGN) with an imported key of `key_bits`: the private operation
  // (sign, decrypt) or the public one.
  RouteChoice PkeyChosen(const AlgorithmInfo& alg, size_t key_bits,
                         bool public_op) const;
  // notes explain routing decisions made at load (calibration used or
  // refused, and why), for `accelcrypt list`.
  absl::Span<const std::string> notes() const { return notes_; }
  // FastestFor lists backend names for `alg` at a size bucket, the chosen
  // one first, then by measured speed (for `accelcrypt list`); empty when
  // `alg` is not routed by size.
  std::vector<std::string> FastestFor(const AlgorithmInfo& alg, uint64_t bucket,
                                      bool decrypt = false) const;
  // Measured lists, per calibration entry of a cipher or digest in use
  // ("aes-128-cbc/encrypt", "sha256"; Calibration::OpKey) and size
  // bucket, the backends as the calibration ranked them, fastest first
  // (empty when no calibration is in use). For `accelcrypt list`.
  std::map<std::string, std::map<uint64_t, std::vector<std::string>>> Measured()
      const;
  // PkeyBuckets lists the calibrated key sizes of an operation ("rsa" or
  // "rsa/sign", "rsa/verify", "dsa", "dsa/sign", "dsa/verify") with backend
  // names fastest first (empty when not calibrated). For `accelcrypt list`.
  std::map<uint64_t, std::vector<std::string>> PkeyBuckets(
      const std::string& op) const {
    auto it = pkey_fastest_.find(
        op.find('/') == std::string::npos ? op + "/sign" : op);
    return it == pkey_fastest_.end()
               ? std::map<uint64_t, std::vector<std::string>>()
               : it->second;
  }
  // ReplayedBytes counts the bytes routed GCM ciphers and digests copied
  // aside so far to replay them on another backend after a device error
  // (the slow path of a device backend; a backend declaring
  // ACCELCRYPT_CAP_CPU adds nothing). For tests and `accelcrypt list`.
  uint64_t ReplayedBytes() const {
    return replay_bytes_.load(std::memory_order_relaxed);
  }

 private:
  friend struct routing::Access;
  // The routed objects' interface (core/routing/, through routing::Access).
  struct Slot;
  // Candidate lists live inline: choosing a route allocates nothing.
  using SlotList = absl::InlinedVector<Slot*, 8>;
  Slot* slot(size_t i) const { return slots_[i].get(); }
  size_t num_slots() const { return slots_.size(); }
  // Order returns the candidate slots for `alg`, skipping backends whose
  // breaker is open (unless every one is) and the backend this thread is
  // currently inside.
  void Order(const AlgorithmInfo& alg, SlotList* out) const;
  // PkeyOrder lists the candidate slots for `alg` with a key of `key_bits`
  // (`from_uri`: the key is a token reference), in routing order, skipping
  // open breakers as Order does. For PublicKeyOps and `accelcrypt list`.
  // `public_op`: the operation uses only the public key (verify, encrypt).
  // The declared order: under policy auto or fastest, a public operation
  // on key material runs on CPU backends first (not offload or hardware
  // ones) unless `route.rsa`/`route.rsa-crypt`/`route.dsa` is configured:
  // a token verifies far slower than the CPU, and nothing secret needs it.
  // A calibration covering the family's operation ("rsa/sign",
  // "rsa/verify", ...) then puts first the backend PkeyFastest chooses for
  // the key's bits (a configured per-size route keeps precedence). A key
  // smaller than the family's `offload_min_bits` skips offload backends
  // (CAP_OFFLOAD or CAP_HARDWARE) unless a per-size route names them, the key
  // is a token reference, or no other backend takes it.
  void PkeyOrder(const AlgorithmInfo& alg, size_t key_bits, bool from_uri,
                 SlotList* out, bool public_op = false) const;
  // OrderFor is Order with, when a calibration routes `alg` by size, the
  // backend chosen for `size`-byte inputs (`decrypt`: the decryption
  // entry) moved to the front.
  void OrderFor(const AlgorithmInfo& alg, uint64_t size, SlotList* out,
                bool decrypt = false) const;
  // Preferred returns, when a calibration routes `alg` by size, the usable
  // slot chosen for inputs of `size` bytes (encryption, or decryption with
  // `decrypt`; digests use the first); nullptr otherwise.
  Slot* Preferred(const AlgorithmInfo& alg, uint64_t size,
                  bool decrypt = false) const;
  void CountReplay(uint64_t n) {
    replay_bytes_.fetch_add(n, std::memory_order_relaxed);
  }
  void RecordSuccess(Slot* slot);
  void RecordDeviceError(Slot* slot, const AlgorithmInfo& alg);
  Stats* stats() const { return stats_; }
  const Registry* registry() const { return registry_; }
  Router() = default;
  // RunOneShot tries `fn` on each candidate (OrderFor n_bytes) until one
  // succeeds or fails with a caller error.
  template <typename Fn>
  absl::Status RunOneShot(const AlgorithmInfo& info, uint64_t n_bytes, Fn&& fn);
  // TryOneShot runs `fn` on `slot` under the re-entry guard and counts the
  // outcome: ops and bytes on success; on a device error the error, the
  // breaker, and a fallback when `more` candidates follow.
  template <typename Fn>
  absl::Status TryOneShot(Slot* slot, const AlgorithmInfo& info,
                          uint64_t n_bytes, bool more, Fn&& fn);
  // RunOneShotFrom is RunOneShot's candidate loop with `skip` (may be
  // null) left out: the slot a fast path already tried.
  template <typename Fn>
  absl::Status RunOneShotFrom(const AlgorithmInfo& info, uint64_t n_bytes,
                              const Slot* skip, absl::Status last, Fn&& fn);
  // LoadCalibration reads the calibration for policy = fastest
  // (core/router_fastest.cc); a missing or foreign file leaves priority
  // routing in place and says so in notes().
  void LoadCalibration(const std::optional<std::string>& calibration_file);
  // OrderUngated/PkeyOrderUngated are Order/PkeyOrder before the
  // self-test gate.
  void OrderUngated(const AlgorithmInfo& alg, SlotList* out) const;
  void PkeyOrderUngated(const AlgorithmInfo& alg, size_t key_bits,
                        bool from_uri, SlotList* out, bool public_op) const;
  // SelfTested is true when `slot` may serve `alg`: its test passed, or it
  // runs now and passes (RunSelfTest, the slow path).
  bool SelfTested(Slot* slot, const AlgorithmInfo& alg) const;
  bool RunSelfTest(Slot* slot, const AlgorithmInfo& alg) const;
  void GateSelfTested(const AlgorithmInfo& alg, SlotList* out) const;
  mutable std::recursive_mutex selftest_mu_;
  mutable std::vector<LoadEvent> selftest_events_;
  // BreakerOpen is true while `slot` is out of rotation; `*now` caches the
  // monotonic clock across calls (0 = not read yet).
  bool BreakerOpen(const Slot& slot, uint64_t* now) const;
  const Registry* registry_ = nullptr;
  size_t replay_max_ = 1024;
  std::atomic<uint64_t> replay_bytes_{0};
  std::string policy_ = "auto";
  bool calibrated_ = false;
  bool interpose_all_ = false;
  uint64_t margin_pct_ = 3;
  // Per algorithm (identity-table index), direction (0 encrypt or digest,
  // 1 decrypt) and size-bucket index: slot indices, the chosen one first
  // (measured backends only; empty: the route's order).
  using BucketRoutes = std::vector<std::vector<size_t>>;
  std::vector<std::array<BucketRoutes, 2>> size_routes_;
  std::vector<bool> size_routed_;
  // Per algorithm: why the route's first backend is first (RouteChoice).
  std::vector<std::string> route_why_;
  // Per algorithm: `route.<alg>` is configured.
  std::vector<bool> configured_;
  // Per public-key operation ("rsa/sign", "rsa/verify", "dsa/sign",
  // "dsa/verify"): key-bits bucket -> backend names, fastest first, from
  // the calibration.
  std::map<std::string, std::map<uint64_t, std::vector<std::string>>>
      pkey_fastest_;
  // The calibration in use (null when none) and its entries for the
  // ciphers and digests in use, for Measured().
  std::shared_ptr<const Calibration> calibration_;
  std::vector<std::string> measured_keys_;
  // PkeyFastest returns the backend the calibration puts first for
  // operation `op` ("rsa/sign", ...) of `alg` with keys of `key_bits` (the
  // nearest measured bucket >= key_bits, else the largest), `candidates`
  // being the declared order; empty when the calibration does not decide:
  // nothing measured, or the declared first backend not measured (it keeps
  // its place). The declared first backend stays when it is within the
  // tie band of the fastest (5 %, or route_margin_pct when larger); else
  // the first CPU backend (no CAP_OFFLOAD or CAP_HARDWARE) within the band
  // in declared order, else the first within the band.
  std::string PkeyFastest(const AlgorithmInfo& alg, const std::string& op,
                          size_t key_bits, const SlotList& candidates) const;
  CalibrationStatus calibration_status_;
  std::vector<std::string> notes_;
  Stats* stats_ = nullptr;
  uint64_t breaker_threshold_ = 5;
  uint64_t breaker_cooldown_ns_ = 1000000000ull;
  // SlotTable holds the slots: the registry's backends', then those of
  // deferred backends as they start (Admit). The storage is allocated once,
  // at Create, for every backend that may come, so a slot never moves; the
  // size is published (release) after the new slot is in place, and a
  // reader (acquire) sees only complete slots. Appends are serialised by
  // start_mu_.
  class SlotTable {
   public:
    void Reserve(size_t n);
    void Append(std::unique_ptr<Slot> slot);
    size_t size() const { return size_.load(std::memory_order_acquire); }
    size_t capacity() const { return capacity_; }
    const std::unique_ptr<Slot>& operator[](size_t i) const {
      return storage_[i];
    }
    const std::unique_ptr<Slot>* begin() const { return storage_.get(); }
    const std::unique_ptr<Slot>* end() const { return storage_.get() + size(); }

   private:
    std::unique_ptr<std::unique_ptr<Slot>[]> storage_;
    size_t capacity_ = 0;
    std::atomic<size_t> size_{0};
  };
  // RouteTable is, per algorithm (identity-table index), the candidate slot
  // indices in order. A deferred backend's start replaces the whole table
  // (copy, insert, Publish): a reader sees the old table or the new one,
  // and every table published stays until the router goes (a reader may
  // still hold a route of an older one). The non-const operator[] is for
  // Create (LoadCalibration), before any reader.
  class RouteTable {
   public:
    using Table = std::vector<std::vector<size_t>>;
    const std::vector<size_t>& operator[](size_t i) const {
      return (*current_.load(std::memory_order_acquire))[i];
    }
    std::vector<size_t>& operator[](size_t i) {
      return (*current_.load(std::memory_order_acquire))[i];
    }
    size_t size() const {
      return current_.load(std::memory_order_acquire)->size();
    }
    const Table& current() const {
      return *current_.load(std::memory_order_acquire);
    }
    void Publish(Table table);

   private:
    std::atomic<Table*> current_{nullptr};
    std::vector<std::unique_ptr<Table>> tables_;
  };
  SlotTable slots_;
  RouteTable routes_;
  // Per algorithm: the backends `route.<alg>` names, in order, and whether
  // it is exclusive (`only:`), for placing a deferred backend that starts.
  std::vector<std::vector<std::string>> route_names_;
  std::vector<bool> route_exclusive_;

  // Pending is one of the registry's pending backends (deferred, or failed
  // to start) as the router starts it: at the first routed operation of
  // one of its families, then, after a failure, at most every
  // `backend_retry_s` seconds.
  struct Pending {
    size_t index = 0;  // in registry_->pending()
    uint32_t families = 0;
    std::string name;
    static constexpr size_t kNoSlot = ~size_t{0};
    // stats_slot and reported_pid are written under start_mu_ (or at
    // Create) and read by threads that may not hold it: atomic (relaxed).
    std::atomic<size_t> stats_slot{kNoSlot};  // see StatsSlot
    std::atomic<bool> done{false};            // started, or no more retries
    std::atomic<uint64_t> next_ns{0};
    // The pid that reported the last failure: one line per process
    // (written under start_mu_, or at Create).
    std::atomic<pid_t> reported_pid{0};
    mutable internal::OsMutex mu;
    std::string last_error ABSL_GUARDED_BY(mu);
  };
  std::vector<std::unique_ptr<Pending>> pending_;
  // The families some pending backend not done yet would serve: one
  // relaxed load on the routed call path while none is pending.
  std::atomic<uint32_t> pending_families_{0};
  internal::OsMutex start_mu_;
  uint64_t retry_ns_ = 0;
  // StartDue starts the pending backends of `family` that are due, unless
  // another thread is starting one (the call goes on without waiting).
  void StartDue(Family family) {
    if ((pending_families_.load(std::memory_order_relaxed) &
         FamilyBit(family)) != 0) [[unlikely]] {
      StartPending(FamilyBit(family), /*force=*/false);
    }
  }
  size_t StartPending(uint32_t families, bool force);
  // StartLocked tries the pending backends of `families` that are due
  // (all of them with `force`).
  size_t StartLocked(uint32_t families, bool force)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(start_mu_);
  static bool Due(const Pending& p, uint32_t families, uint64_t now);
  // Admit puts a started backend into the slots and routes.
  void Admit(Backend* backend, Pending* pending)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(start_mu_);
  // StatsSlot is the pending backend's stats row, registered on first use
  // (under start_mu_, or at Create).
  size_t StatsSlot(Pending* pending);
  // InsertLate puts slot `index` into `route` (for `alg`) where the
  // configured route, else the registry's priority order, places it; after
  // the measured backends of a calibrated route, and never ahead of a
  // direct digest.
  void InsertLate(std::vector<size_t>* route, size_t index,
                  const AlgorithmInfo& alg) const;
  // ReportStartFailure counts a failed start in the backend's INIT stats
  // column and, once per process, tells the operator (ReportToOperator);
  // `retried`: it will be tried again.
  void ReportStartFailure(Pending* pending, const absl::Status& status,
                          bool retried);
  void UpdatePendingFamilies();
  // SetUpPending makes the Pending entries at Create (a start that failed
  // at load is reported and waits for its retry).
  void SetUpPending();
  // PendingReasons names the pending backends not started, with the reason
  // (for "no backend holds the key"); IsPending is true for a pending
  // module's path.
  std::vector<std::string> PendingReasons() const;
  bool IsPending(const std::string& path) const;
  // Per algorithm (identity-table index): the direct digest of the route's
  // first backend (fn null when none), its slot and stats cell.
  struct DirectEntry {
    const accelcrypt_digest_direct* fn = nullptr;
    Slot* slot = nullptr;
    Counter* counter = nullptr;
  };
  std::vector<DirectEntry> direct_digests_;
  // offload_min_bits per family (RSA, DSA): smaller keys skip backends
  // declaring ACCELCRYPT_CAP_OFFLOAD or _HARDWARE (0 = no threshold).
  size_t rsa_offload_min_bits_ = 0;
  size_t dsa_offload_min_bits_ = 0;
  // `route.rsa-<bits>` / `route.dsa-<bits>` values by "rsa-<bits>".
  std::map<std::string, std::string, std::less<>> pkey_routes_;
};

// Router::Slot is a backend as the router sees it: breaker state and stats
// slot. Public so routed objects in core can use it.
struct Router::Slot {
  Backend* backend;
  size_t stats_slot;
  std::atomic<uint64_t> consecutive_errors{0};
  std::atomic<uint64_t> open_until_ns{0};  // 0 = closed
  // Per AlgorithmInfo::index, a SelfTestState.
  std::unique_ptr<std::atomic<uint8_t>[]> selftest;
  bool Tested(const AlgorithmInfo& alg) const {
    return selftest[alg.index].load(std::memory_order_acquire) ==
           static_cast<uint8_t>(SelfTestState::kPassed);
  }
};

inline bool Router::SelfTested(Slot* slot, const AlgorithmInfo& alg) const {
  if (slot->Tested(alg)) [[likely]]
    return true;
  return RunSelfTest(slot, alg);
}

// Inline: it is on every digest init of a front end.
inline Router::DirectDigest Router::Direct(const AlgorithmInfo& info) const {
  const DirectEntry& e = direct_digests_[info.index];
  // A pair whose self-test has not run yet takes the routed path once,
  // which runs it.
  if (e.fn == nullptr ||
      e.slot->open_until_ns.load(std::memory_order_relaxed) != 0 ||
      !e.slot->Tested(info)) {
    return {};
  }
  // The caller counts through the cell: the stats table is armed first
  // (one load once it is).
  stats_->EnsureArmed();
  return {e.fn, e.counter};
}

// BackendGuard marks the current thread as executing inside `backend` for
// its lifetime, so re-entrant calls are not routed back into it.
class BackendGuard {
 public:
  explicit BackendGuard(const Backend* backend);
  ~BackendGuard();
  static bool Inside(const Backend* backend);

 private:
  const Backend* previous_;
};

}  // namespace accelcrypt

#endif  // ACCELCRYPT_CORE_ROUTER_H_
