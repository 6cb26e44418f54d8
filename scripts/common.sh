#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Shared by scripts/demo.sh and scripts/test.sh: where things are, and the
# configure + build step (incremental: re-running only rebuilds what changed).

ACCELCRYPT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ACCELCRYPT_BUILD_DIR=${ACCELCRYPT_BUILD_DIR:-$ACCELCRYPT_ROOT/build}
# shellcheck source=scripts/deps.sh
. "$ACCELCRYPT_ROOT/scripts/deps.sh"

accelcrypt_jobs() {
  local n
  n=$(nproc 2>/dev/null || echo 2)
  echo "${ACCELCRYPT_JOBS:-$n}"
}

# accelcrypt_build [TARGET...]: configures (once, Ninja, RelWithDebInfo) and
# builds into $ACCELCRYPT_BUILD_DIR. Warnings are errors here (the developer's
# and CI's build; ACCELCRYPT_WERROR=OFF to relax); a packager's plain cmake
# build leaves -DACCELCRYPT_WERROR at its default, OFF.
accelcrypt_build() {
  local cache="$ACCELCRYPT_BUILD_DIR/CMakeCache.txt"
  if [ -f "$cache" ] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$cache"; then
    echo "accelcrypt: $ACCELCRYPT_BUILD_DIR was configured with another generator;" \
         "remove it or set ACCELCRYPT_BUILD_DIR" >&2
    return 1
  fi
  echo "== configure: $ACCELCRYPT_BUILD_DIR"
  cmake -S "$ACCELCRYPT_ROOT" -B "$ACCELCRYPT_BUILD_DIR" -G Ninja \
    -DCMAKE_BUILD_TYPE="${ACCELCRYPT_BUILD_TYPE:-RelWithDebInfo}" \
    -DACCELCRYPT_WERROR="${ACCELCRYPT_WERROR:-ON}" >/dev/null
  echo "== build (-j$(accelcrypt_jobs))"
  local targets=()
  local t
  for t in "$@"; do targets+=(--target "$t"); done
  cmake --build "$ACCELCRYPT_BUILD_DIR" -j "$(accelcrypt_jobs)" "${targets[@]}"
}
