#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Installs missing Debian packages, builds into build/ and runs every test
# (unit, integration, OpenSSL's evp_test against the provider) with CTest.
# Idempotent and incremental. Exit code: CTest's.
#   ACCELCRYPT_BUILD_DIR  build directory (default: build/)
#   ACCELCRYPT_JOBS       parallel build/test jobs (default: nproc)
#   CTEST_ARGS            extra ctest arguments, e.g. "-L unit" or "-R cli"
set -euo pipefail
# shellcheck source=scripts/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

accelcrypt_install_deps
accelcrypt_openssl_from_archive
accelcrypt_build

# Tests never read a calibration of this machine's (written by the package's
# postinst or a manual `accelcrypt calibrate`): with policy = auto it would
# change which backend serves. Tests that want one name their own.
export ACCELCRYPT_CALIBRATION="$ACCELCRYPT_BUILD_DIR/Testing/no-calibration.json"
rm -f "$ACCELCRYPT_CALIBRATION"

log="$ACCELCRYPT_BUILD_DIR/Testing/test.sh.log"
mkdir -p "$(dirname "$log")"
echo "== test (log: $log)"
set +e
# shellcheck disable=SC2086  # CTEST_ARGS is a word list
ctest --test-dir "$ACCELCRYPT_BUILD_DIR" --output-on-failure \
  -j "$(accelcrypt_jobs)" ${CTEST_ARGS:-} 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
if grep -q 'No tests were found' "$log"; then
  echo "test.sh: ctest found no tests" >&2
  exit 1
fi
exit "$rc"
