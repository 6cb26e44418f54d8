// SPDX-License-Identifier: Apache-2.0
#include "tools/calibrate_provider.h"

#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/core.h"
#include "openssl/crypto.h"
#include "openssl/err.h"
#include "openssl/evp.h"
#include "openssl/provider.h"

namespace accelcrypt::tools {
namespace {

constexpr int kRounds = 5;  // as the backend cells: alternating, best counts
constexpr size_t kAad = 13;

uint64_t CpuNs() {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull +
         static_cast<uint64_t>(ts.tv_nsec);
}

// Quoted is `value` as an openssl.cnf value: in double quotes, where NCONF
// neither expands `$` nor ends the value at `#`.
std::string Quoted(const std::string& value) {
  std::string out = "\"";
  for (char c : value) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

bool WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  return static_cast<bool>(out.flush());
}

// TempDir is a private directory removed with everything in it.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string templ =
        std::string(base != nullptr && *base != '\0' ? base : "/tmp") +
        "/accelcrypt-calibrate-XXXXXX";
    if (mkdtemp(templ.data()) != nullptr) path_ = templ;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// RouteConfig is the configuration calibrate measured with, limited to the
// cipher and digest backends (a token is not opened again), with nothing
// counted in the statistics and the calibration `calibration_file`
// (`policy = auto`, what every process runs by default).
Config RouteConfig(const ProviderCheck& check,
                   const std::string& calibration_file) {
  Config config = *check.config;
  config.Set("backends", absl::StrJoin(check.backends, ","));
  if (!check.backend_dirs.empty()) {
    config.Set("backend_dir", absl::StrJoin(check.backend_dirs, ":"));
  }
  config.Set("policy", "auto");
  config.Set("calibration_file", calibration_file);
  config.Set("stats_dir", "none");
  return config;
}

// OpName is the label of a cell's direction.
const char* DirName(const AlgorithmInfo& alg, int dir) {
  if (alg.family == Family::kDigest) return "digest";
  return dir == 0 ? "encrypt" : "decrypt";
}

// Changed is true when a process with the calibration at `calibrated`
// would route `alg` otherwise than with none.
bool Changed(Router& declared, Router& calibrated, const AlgorithmInfo& alg) {
  if (calibrated.SizeRouted(alg)) return true;
  for (int dir = 0; dir < (alg.family == Family::kCipher ? 2 : 1); ++dir) {
    for (uint64_t bucket : Calibration::SizeBuckets()) {
      if (declared.Chosen(alg, bucket, dir == 1).backend !=
          calibrated.Chosen(alg, bucket, dir == 1).backend) {
        return true;
      }
    }
  }
  return false;
}

// Side is one library context: OpenSSL's default provider alone, or with
// accelcrypt preferred (`?provider=accelcrypt`, as `accelcrypt enable`
// configures every program) routing as declared or as calibrated.
struct Side {
  const char* label;
  OSSL_LIB_CTX* lib = nullptr;
  ~Side() { OSSL_LIB_CTX_free(lib); }
};

// Cell holds one algorithm's objects in one library context.
struct Cell {
  EVP_CIPHER* cipher = nullptr;
  EVP_MD* md = nullptr;
  EVP_CIPHER_CTX* cctx = nullptr;
  EVP_MD_CTX* mctx = nullptr;
  bool failed = false;
  ~Cell() {
    EVP_CIPHER_CTX_free(cctx);
    EVP_MD_CTX_free(mctx);
    EVP_CIPHER_free(cipher);
    EVP_MD_free(md);
  }
};

struct Buffers {
  std::vector<unsigned char> data, key, iv, md;
};

// OneOp is what an application does per operation: a digest of `size`
// bytes; an update of `size` bytes on a set-up cipher context (the route
// decided at the first update after Begin); for GCM one message as TLS
// seals a record: a new IV, 13 bytes of AAD, the data (the tag left out,
// as in the backend cells).
bool OneOp(const AlgorithmInfo& alg, Cell& c, Buffers& buf, size_t size,
           int dir) {
  int outl = 0;
  if (alg.family == Family::kDigest) {
    unsigned int len = 0;
    return EVP_DigestInit_ex2(c.mctx, c.md, nullptr) == 1 &&
           EVP_DigestUpdate(c.mctx, buf.data.data(), size) == 1 &&
           EVP_DigestFinal_ex(c.mctx, buf.md.data(), &len) == 1;
  }
  if (alg.mode == CipherMode::kGcm) {
    ++buf.iv[buf.iv.size() - 1];
    if (EVP_CipherInit_ex2(c.cctx, nullptr, nullptr, buf.iv.data(), dir == 0,
                           nullptr) != 1 ||
        EVP_CipherUpdate(c.cctx, nullptr, &outl, buf.data.data(), kAad) != 1) {
      return false;
    }
  }
  return EVP_CipherUpdate(c.cctx, buf.data.data(), &outl, buf.data.data(),
                          static_cast<int>(size)) == 1;
}

// Begin sets the cipher context up for a run of operations in `dir`.
bool Begin(const AlgorithmInfo& alg, Cell& c, Buffers& buf, int dir) {
  if (alg.family == Family::kDigest) return true;
  if (EVP_CipherInit_ex2(c.cctx, c.cipher, buf.key.data(),
                         buf.iv.empty() ? nullptr : buf.iv.data(), dir == 0,
                         nullptr) != 1) {
    return false;
  }
  return alg.mode == CipherMode::kGcm ||
         EVP_CIPHER_CTX_set_padding(c.cctx, 0) == 1;
}

// Slice runs operations for about `seconds` of this thread's CPU time and
// returns ns per operation (nullopt on an OpenSSL error).
std::optional<double> Slice(const AlgorithmInfo& alg, Cell& c, Buffers& buf,
                            size_t size, int dir, double seconds) {
  if (!Begin(alg, c, buf, dir)) return std::nullopt;
  uint64_t batch = 1;
  for (;;) {  // warm-up, and a batch of ~0.1 ms
    const uint64_t t0 = CpuNs();
    for (uint64_t i = 0; i < batch; ++i) {
      if (!OneOp(alg, c, buf, size, dir)) return std::nullopt;
    }
    if (CpuNs() - t0 > 100000 || batch >= (1u << 20)) break;
    batch *= 2;
  }
  const uint64_t budget = static_cast<uint64_t>(seconds * 1e9);
  uint64_t ops = 0;
  const uint64_t start = CpuNs();
  uint64_t now = start;
  while (ops == 0 || now - start < budget) {
    for (uint64_t i = 0; i < batch; ++i) {
      if (!OneOp(alg, c, buf, size, dir)) return std::nullopt;
    }
    ops += batch;
    now = CpuNs();
  }
  return static_cast<double>(now - start) / static_cast<double>(ops);
}

bool Prepare(const AlgorithmInfo& alg, const Side& side, Cell& c) {
  // The canonical OpenSSL name (the first of the aliases).
  const std::string name(
      alg.openssl_names.substr(0, alg.openssl_names.find(':')));
  if (alg.family == Family::kDigest) {
    c.md = EVP_MD_fetch(side.lib, name.c_str(), nullptr);
    c.mctx = EVP_MD_CTX_new();
    return c.md != nullptr && c.mctx != nullptr;
  }
  c.cipher = EVP_CIPHER_fetch(side.lib, name.c_str(), nullptr);
  c.cctx = EVP_CIPHER_CTX_new();
  return c.cipher != nullptr && c.cctx != nullptr;
}

// LoadSide makes side.lib from an openssl.cnf text written to `cnf`; false
// with the reason in *why when it cannot (or, `want_accelcrypt`, when the
// provider is not loaded in it).
bool LoadSide(Side& side, const std::string& cnf, const std::string& text,
              bool want_accelcrypt, std::string* why) {
  if (!WriteText(cnf, text)) {
    *why = "cannot write " + cnf;
    return false;
  }
  side.lib = OSSL_LIB_CTX_new();
  if (side.lib == nullptr ||
      OSSL_LIB_CTX_load_config(side.lib, cnf.c_str()) != 1) {
    *why = "OpenSSL could not load " + cnf;
    return false;
  }
  if (want_accelcrypt && OSSL_PROVIDER_available(side.lib, "accelcrypt") != 1) {
    *why = "the provider did not load";
    return false;
  }
  return true;
}

}  // namespace

absl::Status CheckThroughProvider(const ProviderCheck& check,
                                  Calibration* cal) {
  for (const AlgorithmInfo* alg : check.algorithms) {
    cal->declared.erase(std::string(alg->key));
    for (int dir = 0; dir < 2; ++dir) {
      cal->through_provider.erase(
          alg->family == Family::kCipher
              ? Calibration::OpKey(alg->key, dir == 0 ? "encrypt" : "decrypt")
              : std::string(alg->key));
    }
  }
  if (check.algorithms.empty() || check.backends.empty()) {
    return absl::OkStatus();
  }
  auto keep_declared = [&](const std::vector<const AlgorithmInfo*>& algs) {
    std::vector<std::string> names;
    for (const AlgorithmInfo* alg : algs) {
      cal->declared.insert(std::string(alg->key));
      names.emplace_back(alg->name);
    }
    return absl::StrJoin(names, ", ");
  };
  TempDir tmp;
  if (tmp.path().empty()) {
    const std::string error = std::strerror(errno);
    return absl::UnavailableError(absl::StrFormat(
        "cannot create a temporary directory (%s); the declared route stays "
        "for %s",
        error, keep_declared(check.algorithms)));
  }
  const std::string cal_path = tmp.path() + "/calibration.json";
  const std::string none_path = tmp.path() + "/absent.json";
  if (absl::Status saved = cal->Save(cal_path); !saved.ok()) {
    return absl::UnavailableError(
        absl::StrFormat("%s; the declared route stays for %s", saved.message(),
                        keep_declared(check.algorithms)));
  }

  // Which algorithms the calibration would route otherwise than declared,
  // in a process with the backends measured here.
  auto declared_core = Core::Create(RouteConfig(check, none_path));
  auto calibrated_core = Core::Create(RouteConfig(check, cal_path));
  if (!declared_core.ok() || !calibrated_core.ok()) {
    return absl::InternalError(absl::StrFormat(
        "cannot build the routes (%s); the declared route stays for %s",
        (declared_core.ok() ? calibrated_core.status() : declared_core.status())
            .message(),
        keep_declared(check.algorithms)));
  }
  std::vector<const AlgorithmInfo*> changed;
  for (const AlgorithmInfo* alg : check.algorithms) {
    if (Changed((*declared_core)->router(), (*calibrated_core)->router(),
                *alg)) {
      changed.push_back(alg);
    }
  }
  if (changed.empty()) return absl::OkStatus();

  // The library contexts. $ACCELCRYPT_CONF would be read by the provider
  // under the file given here: it is set aside while they load.
  const std::string header =
      "openssl_conf = openssl_init\n[openssl_init]\nproviders = "
      "provider_sect\n";
  Side default_side{"default"};
  Side sides[2] = {{"declared"}, {"calibrated"}};
  std::string why;
  bool loaded = LoadSide(default_side, tmp.path() + "/default.cnf",
                         header +
                             "[provider_sect]\ndefault = default_sect\n"
                             "[default_sect]\nactivate = 1\n",
                         false, &why);
  const char* env_conf = std::getenv("ACCELCRYPT_CONF");
  const std::string saved_conf = env_conf != nullptr ? env_conf : "";
  unsetenv("ACCELCRYPT_CONF");
  for (int s = 0; s < 2 && loaded; ++s) {
    const Config config = RouteConfig(check, s == 0 ? none_path : cal_path);
    std::string conf_text = "[accelcrypt]\n";
    for (const auto& [key, value] : config.values()) {
      conf_text += key + " = " + Quoted(value) + "\n";
    }
    const std::string conf = tmp.path() + "/" + sides[s].label + ".conf";
    if (!WriteText(conf, conf_text)) {
      why = "cannot write " + conf;
      loaded = false;
      break;
    }
    loaded = LoadSide(
        sides[s], tmp.path() + "/" + sides[s].label + ".cnf",
        header + "alg_section = algorithm_sect\n" +
            "[provider_sect]\ndefault = default_sect\naccelcrypt = "
            "accelcrypt_sect\n[default_sect]\nactivate = 1\n"
            "[accelcrypt_sect]\nmodule = " +
            Quoted(check.module) + "\nactivate = 1\nconf = " + Quoted(conf) +
            "\n[algorithm_sect]\ndefault_properties = ?provider=accelcrypt\n",
        true, &why);
  }
  if (!saved_conf.empty()) setenv("ACCELCRYPT_CONF", saved_conf.c_str(), 1);
  if (!loaded) {
    return absl::UnavailableError(absl::StrFormat(
        "cannot time the routes through the provider %s (%s); the declared "
        "route stays for %s",
        check.module, why, keep_declared(changed)));
  }

  const double gain =
      1.0 + static_cast<double>(
                check.config->GetInt("route_margin_pct", 3).value_or(3)) /
                100.0;
  const absl::Span<const uint64_t> buckets = Calibration::SizeBuckets();
  Buffers buf;
  buf.data.resize(buckets[buckets.size() - 1] + 64);
  for (size_t i = 0; i < buf.data.size(); ++i) {
    buf.data[i] = static_cast<unsigned char>(i * 131 + 7);
  }
  buf.md.resize(EVP_MAX_MD_SIZE);
  const double slice = check.seconds_per_cell / kRounds;
  for (const AlgorithmInfo* alg : changed) {
    buf.key.assign(alg->key_len, 0x5c);
    buf.iv.assign(alg->iv_len, 0x3a);
    Side* all[3] = {&sides[0], &sides[1], &default_side};
    Cell cells[3];
    bool ok = true;
    for (int s = 0; s < 3; ++s) ok = ok && Prepare(*alg, *all[s], cells[s]);
    const int n_dirs = alg->family == Family::kCipher ? 2 : 1;
    double worst = 0, best_gain = std::numeric_limits<double>::infinity();
    std::string worst_cell;
    double vs_default_decl = 0, vs_default_cal = 0;
    for (int dir = 0; ok && dir < n_dirs; ++dir) {
      const std::string key =
          alg->family == Family::kCipher
              ? Calibration::OpKey(alg->key, DirName(*alg, dir))
              : std::string(alg->key);
      for (uint64_t bucket : buckets) {
        double best[3] = {std::numeric_limits<double>::infinity(),
                          std::numeric_limits<double>::infinity(),
                          std::numeric_limits<double>::infinity()};
        // A cell where the measured route looks slower gets a second set of
        // rounds (the best of all counts): noise should not cost a route
        // its gain, nor keep a slower one.
        for (int round = 0; ok && round < 2 * kRounds; ++round) {
          if (round == kRounds &&
              best[1] <= best[0] * (1.0 + kLossPct / 100.0)) {
            break;
          }
          for (int s = 0; ok && s < 3; ++s) {
            auto ns = Slice(*alg, cells[s], buf, bucket, dir, slice);
            if (!ns.has_value()) {
              ok = false;
              why = absl::StrFormat("%s %s failed through %s", alg->name,
                                    DirName(*alg, dir), all[s]->label);
              break;
            }
            best[s] = std::min(best[s], *ns);
          }
        }
        if (!ok) break;
        Calibration::Cells& out = cal->through_provider[key][bucket];
        out["declared"] = best[0];
        out["calibrated"] = best[1];
        out["default"] = best[2];
        const double ratio = best[1] / best[0];
        if (ratio > worst) {
          worst = ratio;
          worst_cell = absl::StrFormat("%s %d B", DirName(*alg, dir), bucket);
        }
        best_gain = std::min(best_gain, ratio);
        vs_default_decl = std::max(vs_default_decl, best[0] / best[2]);
        vs_default_cal = std::max(vs_default_cal, best[1] / best[2]);
      }
    }
    OPENSSL_cleanse(buf.key.data(), buf.key.size());
    if (!ok) {
      ERR_clear_error();
      std::cerr << "accelcrypt calibrate: " << why << "; the declared route "
                << "stays for " << keep_declared({alg}) << "\n";
      continue;
    }
    // The measured route must lose nowhere (beyond noise) and win somewhere
    // by the margin.
    const bool adopt =
        worst <= 1.0 + kLossPct / 100.0 && best_gain * gain <= 1.0;
    if (!adopt) keep_declared({alg});
    std::cerr << absl::StrFormat(
        "through the provider %s: measured route %.2fx the declared one's "
        "time at worst (%s), %.2fx at best: %s; slowest cell vs the default "
        "provider: declared %.2fx, measured %.2fx the time\n",
        alg->name, worst, worst_cell, best_gain,
        adopt ? "measured route kept" : "declared route kept", vs_default_decl,
        vs_default_cal);
  }
  return absl::OkStatus();
}

}  // namespace accelcrypt::tools
