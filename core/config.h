// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_CORE_CONFIG_H_
#define ACCELCRYPT_CORE_CONFIG_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace accelcrypt {

// Config holds accelcrypt's settings as flat `key = value` strings. Keys:
//   backend_dir          colon-separated directories searched for backend
//                        modules (env ACCELCRYPT_BACKEND_DIR)
//   backends             comma list: load only these, in this priority order
//   disable              comma list of backends never to load
//   policy               "auto" (default): per algorithm, direction and
//                        input size the backend `accelcrypt calibrate`
//                        measured fastest when a calibration for this CPU
//                        exists, else the declared order with RSA/DSA
//                        public operations on the CPU; "priority": the
//                        configured order; "fastest": as auto with a
//                        calibration, else priority
//   calibration_file     where the calibration is read (default: see
//                        CalibrationSearchPath in core/calibration.h)
//   route_margin_pct     a backend earlier in priority order keeps a size
//                        within this many percent of the fastest (3)
//   route.<alg>          per-algorithm order, e.g. route.aes-128-cbc = x86,
//                        software ("only:" prefix forbids other backends)
//   breaker_threshold    consecutive device errors before a backend is
//                        taken out of rotation (default 5)
//   breaker_cooldown_ms  time out of rotation before a probe (default 1000)
//   replay_max           (alias digest_replay_max) bytes of GCM input / digest
//   input kept per operation
//                        so a device error mid-stream can be replayed on the
//                        next backend (default 1024; larger messages fall
//                        back only before their first byte)
//   offload_min_bits     RSA/DSA keys with fewer bits (modulus n, DSA p)
//                        stay on CPU backends: backends declaring
//                        ACCELCRYPT_CAP_OFFLOAD (or _HARDWARE) for the
//                        family are not asked, whatever route.rsa/route.dsa
//                        or a calibration prefers (default 0: no
//                        threshold). A per-size route (route.rsa-1024) and
//                        keys that live on a token (pkcs11: URI) are exempt.
//   rsa_offload_min_bits, dsa_offload_min_bits
//                        the same per family; override offload_min_bits
//   selftest             "1" (default) runs known-answer tests at load
//   stats_dir            write per-process JSON counters here at exit (env
//                        ACCELCRYPT_STATS_DIR)
//   log_level            0..3; logging is off unless set (env
//                        ACCELCRYPT_LOG_LEVEL), goes to stderr
//   <backend>.<key>      passed to that backend through the host config_get
// The file form is openssl.cnf syntax read with OpenSSL's NCONF: keys are
// taken from the section named `accelcrypt` (or the one named by
// `accelcrypt_conf = section` in the default section); a key `backend.x.y`
// may also be written in a section `[backend_x]` as `y`. Not thread-safe to
// modify; const access is.
class Config {
 public:
  Config() = default;

  // LoadFile parses an openssl.cnf-syntax file. kNotFound if absent,
  // kInvalidArgument (with NCONF's line number) if malformed or not a
  // regular file. Values are not checked here (see Validate).
  static absl::StatusOr<Config> LoadFile(const std::string& path);

  // FromEnvironment loads $ACCELCRYPT_CONF when set (errors are returned),
  // then applies environment overrides (ACCELCRYPT_BACKEND_DIR,
  // ACCELCRYPT_STATS_DIR, ACCELCRYPT_LOG_LEVEL).
  static absl::StatusOr<Config> FromEnvironment();

  // Set stores a key (lower-cased, an alias under its canonical name, see
  // core/config_keys.h); later sets win. `origin` says where the value was
  // written ("FILE line N", "openssl.cnf section", "environment") for
  // Validate's messages; empty keeps the previous origin.
  void Set(std::string_view key, std::string_view value,
           std::string_view origin = "");
  std::optional<std::string> Get(std::string_view key) const;
  std::string GetOr(std::string_view key, std::string_view fallback) const;
  // GetInt parses an integer key; kInvalidArgument when not a number.
  absl::StatusOr<long long> GetInt(std::string_view key,
                                   long long fallback) const;
  // GetList splits a comma/space separated value.
  std::vector<std::string> GetList(std::string_view key) const;
  // SplitList splits `value` as GetList splits a key's value.
  static std::vector<std::string> SplitList(std::string_view value);
  // Merge copies every key of `other` over this one.
  void Merge(const Config& other);

  // Validate checks every key: fixed keys against their type and range,
  // route.<alg> against the identity table; <backend>.<key> is left to the
  // backend. Any other key is unknown. The error names the key, the value
  // and where it was written.
  absl::Status Validate() const;

  // Known reports whether `key` is a recognised setting (for "unknown param"
  // errors); backend-scoped keys (<backend>.<x>) and route.* are accepted.
  static bool Known(std::string_view key);
  // KnownKeys lists the fixed keys, for the provider's gettable params.
  static std::vector<std::string> KnownKeys();

  const std::map<std::string, std::string, std::less<>>& values() const {
    return values_;
  }

 private:
  std::map<std::string, std::string, std::less<>> values_;
  std::map<std::string, std::string, std::less<>> origins_;
};

}  // namespace accelcrypt

#endif  // ACCELCRYPT_CORE_CONFIG_H_
