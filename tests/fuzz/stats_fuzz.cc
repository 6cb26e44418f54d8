// SPDX-License-Identifier: Apache-2.0
// The live statistics file reader (core/stats.cc LiveStatsToJson): the
// bytes of a file another process wrote (or anyone who can write the stats
// directory). A file it accepts must come out as valid JSON.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/stats.h"
#include "nlohmann/json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<std::string> json = accelcrypt::LiveStatsToJson(
      std::string_view(reinterpret_cast<const char*>(data), size));
  if (!json.ok()) return 0;
  if (!nlohmann::json::accept(*json)) __builtin_trap();
  return 0;
}
