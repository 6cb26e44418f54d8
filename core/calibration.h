// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_CORE_CALIBRATION_H_
#define ACCELCRYPT_CORE_CALIBRATION_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace accelcrypt {

// Calibration holds measured speeds per algorithm, size bucket and backend,
// written by `accelcrypt calibrate` and read by the router under
// `policy = fastest`. It is keyed by the CPU and the backends' versions: a
// file made on another machine or with other backend builds is refused.
//
// File format (JSON):
//   {"format": 1, "cpu": "<CpuSignature()>",
//    "backends": {"software": "0.1.0", "x86": "0.1.0"},
//    "algorithms": {"aes-128-cbc": {"16": {"software": 31.2, "x86": 28.0},
//                                   "16384": {...}}, ...}}
// Values are nanoseconds per operation of that many bytes (ciphers: one
// update of the bucket size on a set-up context; digests: one one-shot
// hash), or per signature for RSA/DSA (bucket = key bits).
struct Calibration {
  // Input-size buckets for ciphers and digests, in bytes. An operation of n
  // bytes uses the smallest bucket >= n (the largest for bigger inputs).
  static absl::Span<const uint64_t> SizeBuckets();
  static uint64_t BucketFor(uint64_t size);

  std::string cpu;
  std::map<std::string, std::string> backend_versions;
  // algorithm key (AlgorithmInfo::key) -> bucket -> backend -> ns per op.
  std::map<std::string, std::map<uint64_t, std::map<std::string, double>>> ns;

  // Load reads and validates a file: kNotFound when absent,
  // kInvalidArgument when malformed.
  static absl::StatusOr<Calibration> Load(const std::string& path);
  // Save writes atomically (temp file + rename), creating the directory.
  absl::Status Save(const std::string& path) const;
  std::string ToJson() const;

  // Fastest returns backend names for `alg_key` at `bucket`, fastest first
  // (empty when not measured).
  std::vector<std::string> Fastest(const std::string& alg_key,
                                   uint64_t bucket) const;
};

// CpuSignature identifies this machine's CPU model for calibration keys:
// vendor, family/model/stepping and model name as the kernel reports them.
std::string CpuSignature();

// DefaultCalibrationPath is where `calibrate` writes and the router reads
// when `calibration_file` is not configured: $ACCELCRYPT_CALIBRATION, else
// /var/lib/accelcrypt/calibration.json when running as root, else
// $XDG_CACHE_HOME (or ~/.cache)/accelcrypt/calibration.json.
std::string DefaultCalibrationPath();

}  // namespace accelcrypt

#endif  // ACCELCRYPT_CORE_CALIBRATION_H_
