#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# CI stage: every fuzz target (tests/fuzz) under libFuzzer with ASan+UBSan
# for a bounded time, after replaying the committed corpus with the same
# sanitized binaries. docs/testing.md.
#   ACCELCRYPT_CI_FUZZ_SECONDS  time per target (default 20; the targets run
#                               as many at a time as there are cores: 11
#                               targets on 2 cores, about 2 minutes)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/fuzz.sh" --replay
"$root/scripts/fuzz.sh" --seconds "${ACCELCRYPT_CI_FUZZ_SECONDS:-20}" \
  --jobs "${ACCELCRYPT_JOBS:-$(nproc)}"
