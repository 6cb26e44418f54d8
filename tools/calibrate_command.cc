// SPDX-License-Identifier: Apache-2.0
//
// `accelcrypt calibrate`: measures every loaded backend per cipher direction
// and digest and input-size bucket, and per RSA/DSA key size for signing
// and verifying, and writes the calibration file the router reads (policy
// auto, the default, and fastest).
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "core/algorithms.h"
#include "core/backend.h"
#include "core/calibration.h"
#include "core/pkey.h"
#include "core/status.h"
#include "openssl/bn.h"
#include "openssl/core_names.h"
#include "openssl/crypto.h"
#include "openssl/dsa.h"
#include "openssl/evp.h"
#include "openssl/rsa.h"
#include "tools/calibrate_provider.h"
#include "tools/commands.h"

namespace accelcrypt::tools {
namespace {

// CpuNs is this thread's CPU time in nanoseconds: time the thread spends
// descheduled on a shared machine (or stolen from the guest) is not counted.
uint64_t CpuNs() {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull +
         static_cast<uint64_t>(ts.tv_nsec);
}

// kRounds rounds per cell, each giving every backend an equal slice in turn,
// so a burst of machine noise hurts one slice, not one backend; the best
// round counts.
constexpr int kRounds = 5;
constexpr size_t kMaxBuckets = 16;

// Measurement is the state for one (backend, algorithm): the raw backend
// objects are set up once, outside the timed loop. Ciphers are measured
// per direction: CBC encryption is serial where its decryption is not,
// and a backend may win one and lose the other.
struct Measurement {
  const Backend* backend = nullptr;
  std::unique_ptr<Cipher> encrypt;
  std::unique_ptr<Cipher> decrypt;
  double best_ns[2][kMaxBuckets];  // per direction (0 encrypt or digest)
                                   // and bucket index
  DirectUpdate direct[2];          // per direction, when the backend has one
  std::string error;
};

// Buffers are the input and output of the measured operations.
struct Buffers {
  std::vector<uint8_t> in;
  std::vector<uint8_t> out;
  std::vector<uint8_t> key;
  std::vector<uint8_t> iv;
};

// OneOp runs the measured operation once: an update of `size` bytes on the
// set-up context of direction `dir` (0 encrypt, 1 decrypt), or one
// one-shot hash. GCM is used one message at a time (a TLS record, an SSH
// packet), and the router decides per message: its operation is a message
// of `size` bytes on the same key, as a TLS record is sealed: a new IV,
// 13 bytes of AAD, the update (the tag step left out: a decryption of
// these bytes would not verify).
absl::Status OneOp(const AlgorithmInfo& alg, Measurement& m, Buffers& buf,
                   size_t size, int dir) {
  absl::Span<const uint8_t> in(buf.in.data(), size);
  if (alg.family == Family::kDigest) {
    return m.backend->DigestOneShot(
        alg.id, in, absl::MakeSpan(buf.out.data(), alg.digest_len));
  }
  // In place, as TLS and SSH records and `openssl speed` are processed (a
  // backend may pay for in-place work, e.g. CBC decryption keeping the
  // last ciphertext block).
  absl::Span<uint8_t> out(buf.in.data(), size);
  Cipher& cipher = *(dir == 0 ? m.encrypt : m.decrypt);
  if (alg.mode == CipherMode::kGcm) {
    ACCELCRYPT_RETURN_IF_ERROR(cipher.Init(dir == 0, buf.key, buf.iv));
    ACCELCRYPT_RETURN_IF_ERROR(
        cipher.Aad(absl::MakeConstSpan(buf.in.data(), 13)));
    return cipher.Update(in, out);
  }
  // The transform the provider's update path calls when the backend hands
  // one out (Cipher::Direct, taken at Reinit), else the update: what a
  // caller pays.
  const DirectUpdate& d = m.direct[dir];
  if (d.fn == nullptr) return cipher.Update(in, out);
  size_t n = 0;
  if (d.fn(d.ctx, out.data(), &n, size, in.data(), size) != 1) {
    return absl::InternalError(
        absl::StrFormat("%s: %s's direct transform refused %d bytes", alg.name,
                        m.backend->name(), size));
  }
  return absl::OkStatus();
}

// Reinit restarts the contexts: a GCM message is bounded (2^36 - 32 bytes),
// and a context that refused an update is set up again once.
absl::Status Reinit(Measurement& m, Buffers& buf) {
  if (m.encrypt == nullptr) return absl::OkStatus();
  absl::Status st = m.encrypt->Init(true, buf.key, buf.iv);
  if (st.ok() && m.decrypt != nullptr)
    st = m.decrypt->Init(false, buf.key, buf.iv);
  m.direct[0] = st.ok() ? m.encrypt->Direct() : DirectUpdate();
  m.direct[1] =
      st.ok() && m.decrypt != nullptr ? m.decrypt->Direct() : DirectUpdate();
  return st;
}

// TimeSlice runs operations of `size` bytes in direction `dir` for about
// `seconds` of this thread's CPU time and returns nanoseconds per
// operation.
absl::StatusOr<double> TimeSlice(const AlgorithmInfo& alg, Measurement& m,
                                 Buffers& buf, size_t size, double seconds,
                                 int dir) {
  const uint64_t budget = static_cast<uint64_t>(seconds * 1e9);
  // Warm up (caches, lazy tables) and find a batch that takes ~0.2 ms so the
  // clock is read rarely.
  uint64_t batch = 1;
  for (;;) {
    const uint64_t t0 = CpuNs();
    for (uint64_t i = 0; i < batch; ++i) {
      absl::Status st = OneOp(alg, m, buf, size, dir);
      if (!st.ok()) {
        ACCELCRYPT_RETURN_IF_ERROR(Reinit(m, buf));
        ACCELCRYPT_RETURN_IF_ERROR(OneOp(alg, m, buf, size, dir));
      }
    }
    if (CpuNs() - t0 > 200000 || batch >= (1u << 20)) break;
    batch *= 2;
  }
  uint64_t ops = 0;
  const uint64_t start = CpuNs();
  uint64_t now = start;
  // Restart GCM well before its message bound; cheap for everything else.
  uint64_t bytes_since_init = 0;
  while (now - start < budget) {
    for (uint64_t i = 0; i < batch; ++i) {
      absl::Status st = OneOp(alg, m, buf, size, dir);
      if (!st.ok()) {
        ACCELCRYPT_RETURN_IF_ERROR(Reinit(m, buf));
        ACCELCRYPT_RETURN_IF_ERROR(OneOp(alg, m, buf, size, dir));
      }
    }
    ops += batch;
    bytes_since_init += batch * size;
    if (alg.mode == CipherMode::kGcm && bytes_since_init > (1ull << 34)) {
      ACCELCRYPT_RETURN_IF_ERROR(Reinit(m, buf));
      bytes_since_init = 0;
    }
    now = CpuNs();
  }
  return static_cast<double>(now - start) / static_cast<double>(ops);
}

// OpKeyOf is the calibration entry of `alg` in direction `dir` (0 encrypt,
// 1 decrypt; digests have one).
std::string OpKeyOf(const AlgorithmInfo& alg, int dir) {
  if (alg.family != Family::kCipher) return std::string(alg.key);
  return Calibration::OpKey(alg.key, dir == 0 ? "encrypt" : "decrypt");
}

bool Wanted(const AlgorithmInfo& alg,
            const std::vector<const AlgorithmInfo*>& filter) {
  if (filter.empty()) return true;
  return std::find(filter.begin(), filter.end(), &alg) != filter.end();
}

std::string FormatNs(double ns) {
  if (ns >= 100) return absl::StrFormat("%.0f", ns);
  return absl::StrFormat("%.1f", ns);
}

// WallNs is the monotonic clock in nanoseconds. RSA/DSA signing is timed by
// the wall clock, not CPU time: an offloaded signature is mostly spent
// waiting for the device (off this thread's CPU), and that wait is what
// the caller sees.
uint64_t WallNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull +
         static_cast<uint64_t>(ts.tv_nsec);
}

constexpr int kRsaSizes[] = {1024, 2048, 3072, 4096};
constexpr int kDsaSizes[] = {1024, 2048, 3072};

std::vector<uint8_t> BnParam(const EVP_PKEY* pkey, const char* name) {
  BIGNUM* bn = nullptr;
  std::vector<uint8_t> out;
  if (EVP_PKEY_get_bn_param(pkey, name, &bn) != 1) return out;
  out.resize(static_cast<size_t>(BN_num_bytes(bn)));
  BN_bn2bin(bn, out.data());
  BN_clear_free(bn);
  return out;
}

// GenerateKey makes a benchmark key of `bits` with libcrypto in a private
// library context (whatever OPENSSL_CONF says, accelcrypt is not asked to
// make its own benchmark keys).
absl::StatusOr<KeyMaterial> GenerateKey(bool rsa, int bits) {
  OSSL_LIB_CTX* lib = OSSL_LIB_CTX_new();
  if (lib == nullptr) return absl::ResourceExhaustedError("OSSL_LIB_CTX_new");
  EVP_PKEY* pkey = nullptr;
  if (rsa) {
    pkey = EVP_PKEY_Q_keygen(lib, nullptr, "RSA", static_cast<size_t>(bits));
  } else {
    EVP_PKEY* params = nullptr;
    EVP_PKEY_CTX* pctx = EVP_PKEY_CTX_new_from_name(lib, "DSA", nullptr);
    if (pctx != nullptr && EVP_PKEY_paramgen_init(pctx) == 1 &&
        EVP_PKEY_CTX_set_dsa_paramgen_bits(pctx, bits) == 1 &&
        EVP_PKEY_CTX_set_dsa_paramgen_q_bits(pctx, bits == 1024 ? 160 : 256) ==
            1) {
      EVP_PKEY_paramgen(pctx, &params);
    }
    EVP_PKEY_CTX_free(pctx);
    if (params != nullptr) {
      EVP_PKEY_CTX* kctx = EVP_PKEY_CTX_new_from_pkey(lib, params, nullptr);
      if (kctx != nullptr && EVP_PKEY_keygen_init(kctx) == 1) {
        EVP_PKEY_keygen(kctx, &pkey);
      }
      EVP_PKEY_CTX_free(kctx);
      EVP_PKEY_free(params);
    }
  }
  KeyMaterial k;
  if (pkey != nullptr) {
    if (rsa) {
      k.type = KeyMaterial::Type::kRsa;
      k.n = BnParam(pkey, OSSL_PKEY_PARAM_RSA_N);
      k.e = BnParam(pkey, OSSL_PKEY_PARAM_RSA_E);
      k.d = BnParam(pkey, OSSL_PKEY_PARAM_RSA_D);
      k.p = BnParam(pkey, OSSL_PKEY_PARAM_RSA_FACTOR1);
      k.q = BnParam(pkey, OSSL_PKEY_PARAM_RSA_FACTOR2);
      k.dmp1 = BnParam(pkey, OSSL_PKEY_PARAM_RSA_EXPONENT1);
      k.dmq1 = BnParam(pkey, OSSL_PKEY_PARAM_RSA_EXPONENT2);
      k.iqmp = BnParam(pkey, OSSL_PKEY_PARAM_RSA_COEFFICIENT1);
    } else {
      k.type = KeyMaterial::Type::kDsa;
      k.dsa_p = BnParam(pkey, OSSL_PKEY_PARAM_FFC_P);
      k.dsa_q = BnParam(pkey, OSSL_PKEY_PARAM_FFC_Q);
      k.dsa_g = BnParam(pkey, OSSL_PKEY_PARAM_FFC_G);
      k.dsa_y = BnParam(pkey, OSSL_PKEY_PARAM_PUB_KEY);
      k.dsa_x = BnParam(pkey, OSSL_PKEY_PARAM_PRIV_KEY);
    }
    EVP_PKEY_free(pkey);
  }
  OSSL_LIB_CTX_free(lib);
  if (!k.has_private()) {
    return absl::InternalError(
        absl::StrFormat("libcrypto could not generate a %d-bit %s key", bits,
                        rsa ? "RSA" : "DSA"));
  }
  return k;
}

// PkeySlice signs (`verify`: verifies `sig`, `sig_len` bytes) for about
// `seconds` (wall clock, at least two operations) and returns nanoseconds
// per operation.
absl::StatusOr<double> PkeySlice(const BackendKey& key,
                                 const PkeyParams& params,
                                 absl::Span<const uint8_t> tbs,
                                 std::vector<uint8_t>& sig, size_t sig_len,
                                 bool verify, double seconds) {
  const uint64_t budget = static_cast<uint64_t>(seconds * 1e9);
  uint64_t ops = 0;
  const uint64_t start = WallNs();
  uint64_t now = start;
  while (ops < 2 || now - start < budget) {
    if (verify) {
      ACCELCRYPT_RETURN_IF_ERROR(
          key.Verify(params, tbs, absl::MakeConstSpan(sig).first(sig_len)));
    } else {
      ACCELCRYPT_ASSIGN_OR_RETURN(size_t len,
                                  key.Sign(params, tbs, absl::MakeSpan(sig)));
      (void)len;
    }
    ++ops;
    now = WallNs();
  }
  return static_cast<double>(now - start) / static_cast<double>(ops);
}

// CalibratePkey measures RSA-SIGN ("rsa") or DSA-SIGN ("dsa") signing and
// verifying on every backend declaring it with imported keys, for the key
// sizes each declares (restricted to `sizes` when not empty), into
// cal->ns["rsa/sign"][bits] and cal->ns["rsa/verify"][bits] (or dsa).
// Returns the number of backend/size pairs that could not be measured.
int CalibratePkey(bool rsa, const Registry& registry,
                  const std::vector<int>& sizes, double seconds_per_cell,
                  Calibration* cal, std::set<std::string>* columns) {
  const accelcrypt_alg alg =
      rsa ? ACCELCRYPT_ALG_RSA_SIGN : ACCELCRYPT_ALG_DSA_SIGN;
  const std::string family = rsa ? "rsa" : "dsa";
  const absl::Span<const int> all =
      rsa ? absl::Span<const int>(kRsaSizes) : absl::Span<const int>(kDsaSizes);
  PkeyParams params;
  params.padding = ACCELCRYPT_PAD_PKCS1;
  params.md = ACCELCRYPT_ALG_SHA256;
  std::vector<uint8_t> tbs(32);
  for (size_t i = 0; i < tbs.size(); ++i) tbs[i] = static_cast<uint8_t>(i * 7);
  int failures = 0;
  for (int bits : all) {
    if (!sizes.empty() &&
        std::find(sizes.begin(), sizes.end(), bits) == sizes.end()) {
      continue;
    }
    std::vector<const Backend*> backends;
    for (const auto& backend : registry.backends()) {
      if (backend->TakesKeyMaterial(alg, static_cast<size_t>(bits))) {
        backends.push_back(backend.get());
      }
    }
    if (backends.empty()) continue;
    auto key = GenerateKey(rsa, bits);
    if (!key.ok()) {
      std::cerr << "accelcrypt calibrate: " << key.status().message() << "\n";
      ++failures;
      continue;
    }
    struct PkeyMeasurement {
      const Backend* backend;
      std::unique_ptr<BackendKey> key;
      std::vector<uint8_t> sig;  // a signature of tbs, for verifying
      size_t sig_len = 0;
      double best_ns[2] = {std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::infinity()};
      std::string error;
    };
    std::vector<PkeyMeasurement> ms;
    std::vector<uint8_t> sig(static_cast<size_t>(bits) / 8 + 64);
    for (const Backend* backend : backends) {
      PkeyMeasurement m{backend, nullptr};
      auto loaded = backend->LoadKey(alg, *key);
      if (!loaded.ok()) {
        m.error = loaded.status().ToString();
      } else {
        m.key = std::move(*loaded);
        // Warm-up: the first signature may set up sessions or tables.
        m.sig.resize(sig.size());
        auto first = m.key->Sign(params, tbs, absl::MakeSpan(m.sig));
        if (!first.ok()) {
          m.error = first.status().ToString();
        } else {
          m.sig_len = *first;
        }
      }
      ms.push_back(std::move(m));
    }
    for (int round = 0; round < kRounds; ++round) {
      for (int op = 0; op < 2; ++op) {
        for (PkeyMeasurement& m : ms) {
          if (!m.error.empty()) continue;
          auto ns =
              PkeySlice(*m.key, params, tbs, op == 0 ? sig : m.sig, m.sig_len,
                        /*verify=*/op == 1, seconds_per_cell / kRounds / 2);
          if (!ns.ok()) {
            m.error = ns.status().ToString();
            continue;
          }
          m.best_ns[op] = std::min(m.best_ns[op], *ns);
        }
      }
    }
    // The whole key goes: its material here, the backends' copies with
    // their BackendKeys.
    key = absl::InternalError("done");
    for (int op = 0; op < 2; ++op) {
      const std::string entry =
          Calibration::OpKey(family, op == 0 ? "sign" : "verify");
      cal->ns[entry].erase(static_cast<uint64_t>(bits));
      std::string line = absl::StrFormat("%s-%d %s:", rsa ? "RSA" : "DSA", bits,
                                         op == 0 ? "sign" : "verify");
      for (const PkeyMeasurement& m : ms) {
        const std::string name(m.backend->name());
        columns->insert(name);
        line += " " + name;
        if (!m.error.empty() || !std::isfinite(m.best_ns[op])) {
          line += " (failed: " + m.error + ")";
          if (op == 0) ++failures;
          continue;
        }
        cal->ns[entry][static_cast<uint64_t>(bits)][name] = m.best_ns[op];
        line += absl::StrFormat(" %s ns", FormatNs(m.best_ns[op]));
      }
      std::cerr << line << std::endl;
    }
  }
  for (const char* op : {"sign", "verify"}) {
    const std::string entry = Calibration::OpKey(family, op);
    if (cal->ns.count(entry) != 0 && cal->ns[entry].empty()) {
      cal->ns.erase(entry);
    }
  }
  return failures;
}

// SystemBackends names the backends the system configuration (the one
// `accelcrypt list` reads without --config: $ACCELCRYPT_CONF, else the
// defaults) loads, when this run reads another one (else, or when it
// cannot be read, none). Its core is gone before the measured one is made.
std::vector<std::string> SystemBackends(const CoreOptions& options) {
  std::vector<std::string> names;
  if (options.config_file.empty() && options.backends.empty() &&
      options.backend_dir.empty()) {
    return names;  // this run reads the system configuration
  }
  auto system = CreateCore(CoreOptions());
  if (!system.ok()) return names;
  for (const auto& backend : (*system)->registry().backends()) {
    names.emplace_back(backend->name());
  }
  return names;
}

// WarnIfNarrower says which of the system configuration's backends this
// run does not load: the file serves every process, and they will not be
// in it.
void WarnIfNarrower(const std::vector<std::string>& system,
                    const Registry& registry) {
  std::vector<std::string> missing, loaded;
  for (const auto& backend : registry.backends()) {
    loaded.emplace_back(backend->name());
  }
  for (const std::string& name : system) {
    if (registry.Find(name) == nullptr) missing.push_back(name);
  }
  if (missing.empty()) return;
  std::cerr << "accelcrypt calibrate: WARNING: this configuration loads "
            << absl::StrJoin(loaded, ", ")
            << "; the system configuration also loads "
            << absl::StrJoin(missing, ", ")
            << ", which this run does not measure. Processes that load "
               "them keep their places in every route as declared (a "
               "calibration never moves work away from a backend it did not "
               "measure), and `accelcrypt list` calls the calibration "
               "partial; run `accelcrypt calibrate` with them loaded to "
               "measure them.\n";
}

}  // namespace

int RunCalibrate(const CalibrateOptions& options) {
  if (!(options.seconds_per_cell > 0) || options.seconds_per_cell > 60) {
    std::cerr
        << "accelcrypt calibrate: --seconds-per-cell must be in (0, 60]\n";
    return kExitUsage;
  }
  std::vector<const AlgorithmInfo*> filter;
  // "rsa"/"dsa" in --alg select signing calibration; without --alg both run.
  bool want_rsa = options.algorithms.empty();
  bool want_dsa = options.algorithms.empty();
  bool filtered = !options.algorithms.empty();
  for (const std::string& name : options.algorithms) {
    if (name == "rsa" || name == "dsa") {
      (name == "rsa" ? want_rsa : want_dsa) = true;
      continue;
    }
    const AlgorithmInfo* info = FindAlgorithmByName(name);
    if (info == nullptr ||
        (info->family != Family::kCipher && info->family != Family::kDigest)) {
      std::cerr << "accelcrypt calibrate: '" << name
                << "' is not a cipher or digest accelcrypt knows (see "
                   "`accelcrypt list`), nor rsa or dsa\n";
      return kExitUsage;
    }
    filter.push_back(info);
  }

  const std::vector<std::string> system_backends = SystemBackends(options.core);
  CoreOptions core_options = options.core;
  core_options.selftest_at_load = true;  // measure only what passed
  auto core_or = CreateCore(core_options);
  if (!core_or.ok()) {
    std::cerr << "accelcrypt calibrate: cannot set up the core: "
              << core_or.status().ToString() << "\n";
    return kExitSetup;
  }
  Core& core = **core_or;
  Registry& registry = core.registry();
  if (registry.backends().empty()) {
    std::cerr << "accelcrypt calibrate: no backend loaded\n";
    return kExitFailure;
  }
  const std::string output =
      options.output.empty() ? DefaultCalibrationPath() : options.output;
  WarnIfNarrower(system_backends, registry);

  Calibration cal;
  cal.cpu = CpuSignature();
  for (const auto& backend : registry.backends()) {
    cal.backend_versions[std::string(backend->name())] =
        std::string(backend->version());
  }
  // A filtered run keeps the other algorithms of a file this machine and
  // these backend versions wrote.
  if (filtered || !options.pkey_sizes.empty()) {
    auto old = Calibration::Load(output);
    if (old.ok() && old->cpu == cal.cpu &&
        old->backend_versions == cal.backend_versions) {
      cal.ns = std::move(old->ns);
      cal.declared = std::move(old->declared);
      cal.through_provider = std::move(old->through_provider);
      std::cerr << "accelcrypt calibrate: keeping the other algorithms' "
                   "entries of "
                << output << "\n";
    } else if (old.ok()) {
      std::cerr << "accelcrypt calibrate: " << output
                << " was made on another CPU or with other backend versions; "
                   "its other algorithms' entries are dropped\n";
    }
  }

  const absl::Span<const uint64_t> buckets = Calibration::SizeBuckets();
  const size_t max_bucket = buckets[buckets.size() - 1];
  Buffers buf;
  buf.in.resize(max_bucket);
  buf.out.resize(std::max<size_t>(max_bucket, 64));
  for (size_t i = 0; i < buf.in.size(); ++i) {
    buf.in[i] = static_cast<uint8_t>(i * 131 + 7);
  }

  // The work list: algorithms some backend declares.
  std::vector<const AlgorithmInfo*> work;
  for (const AlgorithmInfo& alg : AllAlgorithms()) {
    if (alg.family != Family::kCipher && alg.family != Family::kDigest) {
      continue;
    }
    if (filtered && !Wanted(alg, filter)) continue;
    if (filtered && filter.empty()) continue;  // only rsa/dsa asked for
    for (const auto& backend : registry.backends()) {
      if (backend->Capability(alg.id) != nullptr) {
        work.push_back(&alg);
        break;
      }
    }
  }
  std::set<std::string> columns;  // every measured backend, for the table
  int failures = 0;
  if (want_rsa) {
    failures += CalibratePkey(true, registry, options.pkey_sizes,
                              options.seconds_per_cell, &cal, &columns);
  }
  if (want_dsa) {
    failures += CalibratePkey(false, registry, options.pkey_sizes,
                              options.seconds_per_cell, &cal, &columns);
  }
  const bool pkey_measured =
      (want_rsa && cal.ns.count(Calibration::OpKey("rsa", "sign")) != 0) ||
      (want_dsa && cal.ns.count(Calibration::OpKey("dsa", "sign")) != 0);
  if (work.empty() && !pkey_measured) {
    std::cerr << "accelcrypt calibrate: no loaded backend declares the "
                 "requested algorithms\n";
    return kExitFailure;
  }

  const double slice = options.seconds_per_cell / kRounds;
  for (size_t w = 0; w < work.size(); ++w) {
    const AlgorithmInfo& alg = *work[w];
    std::vector<Measurement> ms;
    buf.key.assign(alg.key_len, 0);
    buf.iv.assign(alg.iv_len, 0);
    if (alg.family == Family::kCipher &&
        !core.router().RandomBytes(absl::MakeSpan(buf.key)).ok()) {
      // A benchmark key need not be secret; any pattern measures the same.
      for (size_t i = 0; i < buf.key.size(); ++i) {
        buf.key[i] = static_cast<uint8_t>(i * 29 + 1);
      }
    }
    for (const auto& backend : registry.backends()) {
      if (backend->Capability(alg.id) == nullptr) continue;
      Measurement m;
      m.backend = backend.get();
      for (auto& per_dir : m.best_ns) {
        std::fill(std::begin(per_dir), std::end(per_dir),
                  std::numeric_limits<double>::infinity());
      }
      if (alg.family == Family::kCipher) {
        absl::Status st = absl::OkStatus();
        auto enc = backend->NewCipher(alg.id);
        if (enc.ok()) {
          m.encrypt = std::move(*enc);
        } else {
          st = enc.status();
        }
        if (st.ok()) {
          auto dec = backend->NewCipher(alg.id);
          if (dec.ok()) {
            m.decrypt = std::move(*dec);
          } else {
            st = dec.status();
          }
        }
        if (st.ok()) st = Reinit(m, buf);
        if (!st.ok()) m.error = st.ToString();
      }
      ms.push_back(std::move(m));
    }
    const int n_dirs = alg.family == Family::kCipher ? 2 : 1;
    for (size_t b = 0; b < buckets.size() && b < kMaxBuckets; ++b) {
      for (int round = 0; round < kRounds; ++round) {
        for (int dir = 0; dir < n_dirs; ++dir) {
          for (Measurement& m : ms) {
            if (!m.error.empty()) continue;
            auto ns = TimeSlice(alg, m, buf, buckets[b], slice, dir);
            if (!ns.ok()) {
              m.error = ns.status().ToString();
              continue;
            }
            m.best_ns[dir][b] = std::min(m.best_ns[dir][b], *ns);
          }
        }
      }
    }
    OPENSSL_cleanse(buf.key.data(), buf.key.size());

    cal.ns.erase(std::string(alg.key));  // a format-1 entry
    std::string line = absl::StrFormat(
        "[%3d%%] %s:", static_cast<int>(100 * (w + 1) / work.size()), alg.name);
    for (int dir = 0; dir < n_dirs; ++dir) {
      cal.ns.erase(OpKeyOf(alg, dir));
    }
    for (const Measurement& m : ms) {
      const std::string name(m.backend->name());
      columns.insert(name);
      line += " " + name;
      if (!m.error.empty()) {
        // A backend that cannot run the algorithm gets no entry: the router
        // then never prefers it for this algorithm.
        line += " (failed: " + m.error + ")";
        ++failures;
        continue;
      }
      for (int dir = 0; dir < n_dirs; ++dir) {
        for (size_t b = 0; b < buckets.size() && b < kMaxBuckets; ++b) {
          if (std::isfinite(m.best_ns[dir][b])) {
            cal.ns[OpKeyOf(alg, dir)][buckets[b]][name] = m.best_ns[dir][b];
          }
        }
      }
      line += absl::StrFormat(" %s ns/16KiB",
                              FormatNs(m.best_ns[0][buckets.size() - 1]));
    }
    std::cerr << line << std::endl;
  }

  // Each route the measurements change, timed as the application sees it.
  if (!work.empty()) {
    ProviderCheck check;
    check.config = &core.config();
    for (const auto& backend : registry.backends()) {
      for (const AlgorithmInfo* alg : work) {
        if (backend->Capability(alg->id) != nullptr) {
          check.backends.emplace_back(backend->name());
          break;
        }
      }
    }
    check.backend_dirs.assign(registry.backend_dirs().begin(),
                              registry.backend_dirs().end());
    check.module = DefaultModulePath();
    check.seconds_per_cell = options.seconds_per_cell;
    check.algorithms = work;
    absl::Status checked = CheckThroughProvider(check, &cal);
    if (!checked.ok()) {
      std::cerr << "accelcrypt calibrate: WARNING: " << checked.message()
                << "\n";
    }
  }

  // The table: one column per backend (ns per operation), the fastest, and
  // how much faster it is than the runner-up (how much routing matters).
  std::vector<std::string> header = {"algorithm", "op", "bytes"};
  for (const std::string& c : columns) header.push_back(c + " ns/op");
  header.push_back("fastest");
  header.push_back("gain");
  std::vector<std::vector<std::string>> table;
  // append_cells finishes a row: each column's time, the fastest backend
  // and how much faster it is than the next one.
  auto append_cells = [&](const Calibration::Cells& cells,
                          std::vector<std::string> row) {
    std::vector<std::pair<double, std::string>> ranked;
    for (const std::string& c : columns) {
      auto it = cells.find(c);
      if (it == cells.end()) {
        row.push_back("-");
      } else {
        row.push_back(FormatNs(it->second));
        ranked.push_back({it->second, c});
      }
    }
    std::sort(ranked.begin(), ranked.end());
    row.push_back(ranked.empty() ? "-" : ranked[0].second);
    row.push_back(
        ranked.size() < 2
            ? std::string("-")
            : absl::StrFormat("%.2fx", ranked[1].first / ranked[0].first));
    table.push_back(std::move(row));
  };
  for (const AlgorithmInfo* alg : work) {
    for (int dir = 0; dir < (alg->family == Family::kCipher ? 2 : 1); ++dir) {
      auto a = cal.ns.find(OpKeyOf(*alg, dir));
      for (uint64_t bucket : buckets) {
        std::vector<std::string> row = {std::string(alg->name),
                                        alg->family == Family::kDigest ? "-"
                                        : dir == 0 ? "encrypt"
                                                   : "decrypt",
                                        std::to_string(bucket)};
        Calibration::Cells cells;
        if (a != cal.ns.end()) {
          auto b = a->second.find(bucket);
          if (b != a->second.end()) cells = b->second;
        }
        append_cells(cells, std::move(row));
      }
    }
  }
  for (const char* family : {"rsa", "dsa"}) {
    if (!(family[0] == 'r' ? want_rsa : want_dsa)) continue;
    for (const char* op : {"sign", "verify"}) {
      auto a = cal.ns.find(Calibration::OpKey(family, op));
      if (a == cal.ns.end()) continue;
      for (const auto& [bits, cells] : a->second) {
        std::vector<std::string> row = {absl::AsciiStrToUpper(family), op,
                                        std::to_string(bits) + " bits"};
        append_cells(cells, std::move(row));
      }
    }
  }
  PrintTable(std::cout, header, table);

  absl::Status saved = cal.Save(output);
  if (!saved.ok()) {
    std::cerr << "accelcrypt calibrate: " << saved.message() << "\n";
    return kExitFailure;
  }
  std::cout << "\nwrote " << output << " (cpu: " << cal.cpu << ")\n"
            << "the router uses it under `policy = auto` (the default) and "
               "`policy = fastest`"
            << (options.output.empty()
                    ? std::string()
                    : " with `calibration_file = " + output + "`")
            << "\n";
  if (failures > 0) {
    std::cerr << "accelcrypt calibrate: " << failures
              << " backend/algorithm pair(s) could not be measured\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace accelcrypt::tools
