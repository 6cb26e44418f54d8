// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_TOOLS_ROUTING_TABLE_H_
#define ACCELCRYPT_TOOLS_ROUTING_TABLE_H_

#include <ostream>

#include "core/router.h"
#include "nlohmann/json.hpp"

namespace accelcrypt::tools {

// PrintRoutingPolicy writes, for `accelcrypt list`, the routing policy, the
// router's notes (calibration used or refused, and why), the backend
// chosen per algorithm, direction and size bucket and why, the RSA/DSA
// backend per operation and key size and why, and the measured RSA/DSA
// rankings when a calibration is in use.
void PrintRoutingPolicy(std::ostream& out, const Router& router);

// RoutingPolicyJson is the same as JSON: {"policy", "calibrated", "notes",
// "fastest": {entry: {bucket: [backends, fastest first]}} (as measured;
// entry "aes-128-cbc/encrypt", "sha256"), "fastest_pkey": {"rsa" (signing),
// "rsa/verify", "dsa", "dsa/verify": {bits: [...]}}, "routes": {ALG:
// {"encrypt"|"decrypt"|"digest": {bucket: {"backend", "why"}}}},
// "pkey_routes": {"RSA sign"...: {bits: {"backend", "why"}}}}.
nlohmann::json RoutingPolicyJson(const Router& router);

// PrintInterposition writes, for `accelcrypt list`, per algorithm whether
// the provider offers it to OpenSSL and why (Router::Interposes): "offered:
// x86 (hardware)", or "left to OpenSSL's default provider: only
// pass-through backends serve it (software: no faster than OpenSSL's own
// code)".
void PrintInterposition(std::ostream& out, const Router& router);

// InterpositionJson is the same as JSON: {"mode": "wins"|"all",
// "algorithms": {ALG: {"offered", "wins", "backend", "why"}}}.
nlohmann::json InterpositionJson(const Router& router);

}  // namespace accelcrypt::tools

#endif  // ACCELCRYPT_TOOLS_ROUTING_TABLE_H_
