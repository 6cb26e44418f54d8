// SPDX-License-Identifier: Apache-2.0
// RoutedPublicKeyOps: RSA/DSA operations over the router's candidates
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
#include "accelcrypt/kit/dsa_sig.h"
#include "core/routing/internal.h"
#include "core/status.h"

namespace accelcrypt::routing {
namespace {

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
        [&](Slot* served) {
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
        [&](Slot* served) -> absl::Status {
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
  // Not analysed for thread safety: it only passes keys_ by reference to
  // PrepareOn, which touches it under mu_.
  absl::StatusOr<const BackendKey*> Prepared(
      Slot* slot, const AlgorithmInfo& info) ABSL_NO_THREAD_SAFETY_ANALYSIS {
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
  absl::Status CheckOnCpu(Slot* served, const AlgorithmInfo& info,
                          Check&& check) {
    const bool has_public = key_.type == KeyMaterial::Type::kRsa
                                ? !key_.n.empty() && !key_.e.empty()
                                : !key_.dsa_y.empty() && !key_.dsa_p.empty();
    // A token key whose public half the token does not show: nothing to
    // check with (DescribeTokenKey reads it whenever the token has it).
    if (!has_public) return absl::OkStatus();
    SlotList order;
    Access::PkeyOrder(router_, info, key_.bits(), /*from_uri=*/false, &order);
    std::vector<const Backend*> checkers;
    for (Slot* slot : order) {
      if (slot == served) continue;
      const accelcrypt_capability* cap = slot->backend->Capability(info.id);
      if (cap != nullptr && !Offloaded(*cap)) checkers.push_back(slot->backend);
    }
    // The software backend checks even when it is kept from serving.
    const Backend* fallback = Access::registry(router_)->checker();
    if (fallback != nullptr && std::find(checkers.begin(), checkers.end(),
                                         fallback) == checkers.end()) {
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
      if (NextMayServe(st)) {
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
  // Not analysed for thread safety: as Prepared, with public_keys_.
  absl::StatusOr<const BackendKey*> PreparedPublic(const Backend* backend,
                                                   const AlgorithmInfo& info)
      ABSL_NO_THREAD_SAFETY_ANALYSIS {
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
    absl::Status operator()(Slot*) const { return absl::OkStatus(); }
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
    SlotList order;
    Access::PkeyOrder(router_, info, key_.bits(), !key_.uri.empty(), &order,
                      /*public_op=*/!private_op);
    const uint32_t flag =
        info.family == Family::kRsa ? PaddingFlag(params.padding) : 0;
    if (info.family == Family::kRsa && flag == 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: unknown padding %d", info.name, params.padding));
    }
    absl::Status last;
    bool tried = false;
    for (size_t i = 0; i < order.size(); ++i) {
      Slot* slot = order[i];
      const accelcrypt_capability* cap = slot->backend->Capability(info.id);
      if (cap == nullptr || (cap->flags & flag) != flag) continue;
      tried = true;
      Counter& counter = Access::stats(router_)->Cell(slot->stats_slot, info);
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
        // A public-key operation is slow enough to note the user it was
        // done as (a worker that dropped privileges after its file was made).
        Access::stats(router_)->NoteUid();
        Access::RecordSuccess(router_, slot);
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
        Access::RecordDeviceError(router_, slot, info);
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

std::unique_ptr<PublicKeyOps> NewRoutedPublicKeyOps(Router* router,
                                                    KeyMaterial key) {
  return std::make_unique<RoutedPublicKeyOps>(router, std::move(key));
}

}  // namespace accelcrypt::routing
