// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_TOOLS_ROUTING_TABLE_H_
#define ACCELCRYPT_TOOLS_ROUTING_TABLE_H_

#include <ostream>

#include "core/router.h"
#include "nlohmann/json.hpp"

namespace accelcrypt::tools {

// PrintRoutingPolicy writes, for `accelcrypt list`, the routing policy, the
// router's notes (calibration used or refused, and why) and, under
// policy = fastest, the backend chosen per algorithm and size bucket.
void PrintRoutingPolicy(std::ostream& out, const Router& router);

// RoutingPolicyJson is the same as JSON: {"policy", "notes", "fastest":
// {alg: {bucket: [backends, fastest first]}}}.
nlohmann::json RoutingPolicyJson(const Router& router);

}  // namespace accelcrypt::tools

#endif  // ACCELCRYPT_TOOLS_ROUTING_TABLE_H_
