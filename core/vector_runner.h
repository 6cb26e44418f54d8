// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_CORE_VECTOR_RUNNER_H_
#define ACCELCRYPT_CORE_VECTOR_RUNNER_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/backend.h"
#include "core/vector_file.h"

namespace accelcrypt {

// VectorSuite names one vector file and the algorithm family/mode it tests,
// as found under a vectors directory (tests/vectors in the tree,
// share/accelcrypt/vectors when installed).
struct VectorSuite {
  std::string path;                  // full path
  std::string relative;              // "aes/CBCMMT128.rsp"
  std::vector<accelcrypt_alg> algs;  // algorithms the file exercises
};

// DiscoverVectorSuites lists every known vector file under `dir` (AES
// ECB/CBC/CFB128/OFB KAT+MMT, CTR SP 800-38A, GCM, SHA short/long/Monte).
absl::StatusOr<std::vector<VectorSuite>> DiscoverVectorSuites(
    const std::string& dir);

struct VectorResult {
  size_t passed = 0;
  size_t failed = 0;
  size_t skipped = 0;  // algorithm not declared by the backend, or a case
                       // outside the backend's limits
  std::vector<std::string> failures;  // "file:line: message", first few
};

// RunVectorRecord checks one record of `suite` against `backend` (the
// record's algorithm is derived from the file and its section headers).
// Returns OK on a match, kUnimplemented when the backend does not declare the
// algorithm, otherwise an error describing the mismatch.
absl::Status RunVectorRecord(const Backend& backend, const VectorSuite& suite,
                             const VectorRecord& record);

// VectorRecordAlgorithm returns the algorithm a record of `suite` exercises
// (CTR and GCM files pick it by key length). kInvalidArgument when the record
// does not fit the file (wrong key length, unknown file).
absl::StatusOr<accelcrypt_alg> VectorRecordAlgorithm(
    const VectorSuite& suite, const VectorRecord& record);

// RunVectorSuite runs every record of `suite` on `backend`. When `only_alg`
// is not 0, records for other algorithms are ignored (not even counted as
// skipped), so a file covering several key sizes can be checked for one.
// Returns an error only when the file cannot be read or parsed; mismatches
// are counted in the result.
absl::StatusOr<VectorResult> RunVectorSuite(const Backend& backend,
                                            const VectorSuite& suite,
                                            accelcrypt_alg only_alg = 0);

}  // namespace accelcrypt

#endif  // ACCELCRYPT_CORE_VECTOR_RUNNER_H_
