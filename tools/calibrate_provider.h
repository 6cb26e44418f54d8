// SPDX-License-Identifier: Apache-2.0
// `accelcrypt calibrate`'s check through the provider: a route measured
// faster at the backend can still be slower as the application sees it
// (a route split by size decides per operation and loses the provider's
// direct update path), so every algorithm whose measured route differs
// from the declared one is timed through OpenSSL's EVP API, with the
// declared route, the measured route and the default provider alone, and
// keeps the declared route unless the measured one wins there.
#ifndef ACCELCRYPT_TOOLS_CALIBRATE_PROVIDER_H_
#define ACCELCRYPT_TOOLS_CALIBRATE_PROVIDER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/algorithms.h"
#include "core/calibration.h"
#include "core/config.h"

namespace accelcrypt::tools {

struct ProviderCheck {
  // The configuration calibrate measured with.
  const Config* config = nullptr;
  // The loaded backends that declare a cipher or digest, in priority order,
  // and the directories they were loaded from.
  std::vector<std::string> backends;
  std::vector<std::string> backend_dirs;
  std::string module;  // accelcrypt.so
  double seconds_per_cell = 0.05;
  // The ciphers and digests this run measured.
  std::vector<const AlgorithmInfo*> algorithms;
};

// kLossPct: a measured route slower than the declared one by more than this
// in any cell (direction and size) through the provider keeps the declared
// route. A measured route must also win by route_margin_pct somewhere.
inline constexpr double kLossPct = 1.0;

// CheckThroughProvider sets, for every algorithm of `check.algorithms`,
// cal->declared (keep the declared route) and cal->through_provider (the
// figures), and prints a line per algorithm checked. An algorithm whose
// measured route equals the declared one is not timed. Returns an error
// when the check cannot run (the provider cannot be loaded, ...), after
// marking as declared every algorithm whose route would change (every one
// when that cannot be known): an unverified route is not used.
absl::Status CheckThroughProvider(const ProviderCheck& check, Calibration* cal);

}  // namespace accelcrypt::tools

#endif  // ACCELCRYPT_TOOLS_CALIBRATE_PROVIDER_H_
