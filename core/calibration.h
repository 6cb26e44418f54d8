// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_CORE_CALIBRATION_H_
#define ACCELCRYPT_CORE_CALIBRATION_H_

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace accelcrypt {

// Calibration holds measured speeds per operation, size bucket and backend,
// written by `accelcrypt calibrate` and read by the router under
// `policy = auto` (the default) and `policy = fastest`. It is keyed by the
// CPU and the backends' versions: a file made on another machine or with
// other backend builds is refused.
//
// File format (JSON):
//   {"format": 2, "cpu": "<CpuSignature()>",
//    "backends": {"software": "0.1.0", "x86": "0.1.0"},
//    "algorithms": {"aes-128-cbc/encrypt": {"16": {"software": 31.2,
//                                                  "x86": 28.0},
//                                           "16384": {...}},
//                   "aes-128-cbc/decrypt": {...}, "sha256": {...},
//                   "rsa/sign": {"2048": {...}}, "rsa/verify": {...}}}
// Operation keys (OpKey): "<cipher>/encrypt" and "<cipher>/decrypt" apart
// (CBC encryption is serial, its decryption is not), "<digest>", and
// "rsa/sign", "rsa/verify", "dsa/sign", "dsa/verify" apart (a token may
// sign faster than the CPU and still verify far slower). Values are
// nanoseconds per operation of that many bytes (ciphers: one update of the
// bucket size on a set-up context; digests: one one-shot hash), or per
// signature or verification for RSA/DSA (bucket = key bits). Files of
// format 1 (one entry per cipher for both directions, "rsa"/"dsa" for
// signing) are read with their entries under the new keys.
//
// Optional (written by `calibrate` since its provider check, ignored by
// older readers):
//   "declared": ["aes-128-ctr", ...]  algorithm keys whose measured route
//       was slower through the provider (as OpenSSL calls it) than the
//       declared one: the router keeps the declared route for them.
//   "through_provider": {"aes-128-ctr/encrypt": {"16": {"declared": 41.0,
//       "calibrated": 44.3, "default": 38.9}}}  ns per operation through
//       OpenSSL's EVP API: accelcrypt with the declared route, with the
//       measured route, and OpenSSL's default provider alone (the evidence
//       for "declared"; not read by the router).
struct Calibration {
  // Input-size buckets for ciphers and digests, in bytes. An operation of n
  // bytes uses the smallest bucket >= n (the largest for bigger inputs).
  static absl::Span<const uint64_t> SizeBuckets();
  static uint64_t BucketFor(uint64_t size);
  // BucketIndex is the position of BucketFor(size) in SizeBuckets().
  static size_t BucketIndex(uint64_t size);
  // OpKey is the entry for `alg_key` ("aes-128-cbc", "sha256", "rsa") and
  // `op` ("encrypt", "decrypt", "sign", "verify"; "" for digests).
  static std::string OpKey(std::string_view alg_key, std::string_view op);

  std::string cpu;
  std::map<std::string, std::string> backend_versions;
  // Backend name -> ns per operation (found by string_view: no allocation
  // in the router's load-time lookups).
  using Cells = std::map<std::string, double, std::less<>>;
  // algorithm key (AlgorithmInfo::key) -> bucket -> backend -> ns per op.
  std::map<std::string, std::map<uint64_t, Cells>> ns;
  // Algorithm keys (AlgorithmInfo::key) that keep the declared route.
  std::set<std::string, std::less<>> declared;
  // Operation key -> bucket -> "declared"/"calibrated"/"default" -> ns per
  // operation through the provider (JSON only: the load cache leaves it
  // out, the router does not need it).
  std::map<std::string, std::map<uint64_t, Cells>> through_provider;
  // from_cache says Load took the load cache (not saved).
  bool from_cache = false;

  // Load reads and validates a file: kNotFound when absent,
  // kInvalidArgument when malformed.
  //
  // Load cache: parsing the JSON costs about 4 M instructions, paid by every
  // process that loads the provider, so Save also writes CachePath(path), a
  // line-per-value text made from the same data and naming the length and
  // FNV-1a hash of the JSON text it stands for. Load reads the JSON's bytes
  // and takes the cache only when both match (a JSON edited or replaced by
  // hand or by another tool is parsed), else it parses the JSON.
  static absl::StatusOr<Calibration> Load(const std::string& path);
  // Save writes atomically (temp file + rename), creating the directory,
  // then the load cache (best effort).
  absl::Status Save(const std::string& path) const;
  // CachePath is the load cache of the calibration file `path`.
  static std::string CachePath(const std::string& path);
  std::string ToJson() const;

  // Fastest returns backend names for `alg_key` at `bucket`, fastest first
  // (empty when not measured).
  std::vector<std::string> Fastest(const std::string& alg_key,
                                   uint64_t bucket) const;
};

// CpuSignature identifies this machine's CPU model for calibration keys:
// vendor, family/model/stepping and model name as the kernel reports them.
std::string CpuSignature();

// DefaultCalibrationPath is where `calibrate` writes when `-o` is not given:
// $ACCELCRYPT_CALIBRATION, else kSystemCalibrationPath when running as
// root, else $XDG_CACHE_HOME (or ~/.cache)/accelcrypt/calibration.json.
std::string DefaultCalibrationPath();

// The file the package's install script writes (`accelcrypt calibrate` as
// root), readable by every user.
inline constexpr char kSystemCalibrationPath[] =
    "/var/lib/accelcrypt/calibration.json";

// CalibrationSearchPath lists the files the router tries, in order, when
// `calibration_file` is not configured: $ACCELCRYPT_CALIBRATION alone when
// set; else this user's DefaultCalibrationPath() and then the system file
// (a daemon's user has no calibration of its own; the one made at install
// serves it).
std::vector<std::string> CalibrationSearchPath();

}  // namespace accelcrypt

#endif  // ACCELCRYPT_CORE_CALIBRATION_H_
