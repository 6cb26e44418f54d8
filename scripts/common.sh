#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Shared by scripts/demo.sh and scripts/test.sh: where things are, and the
# configure + build step (incremental: re-running only rebuilds what changed).

ACCELCRYPT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ACCELCRYPT_BUILD_DIR=${ACCELCRYPT_BUILD_DIR:-$ACCELCRYPT_ROOT/build}
# shellcheck source=scripts/deps.sh
. "$ACCELCRYPT_ROOT/scripts/deps.sh"
# shellcheck source=scripts/abseil_pic.sh
. "$ACCELCRYPT_ROOT/scripts/abseil_pic.sh"

accelcrypt_jobs() {
  local n
  n=$(nproc 2>/dev/null || echo 2)
  echo "${ACCELCRYPT_JOBS:-$n}"
}

# accelcrypt_build [TARGET...]: configures (once, Ninja, RelWithDebInfo) and
# builds into $ACCELCRYPT_BUILD_DIR. Warnings are errors here (the developer's
# and CI's build; ACCELCRYPT_WERROR=OFF to relax); a packager's plain cmake
# build leaves -DACCELCRYPT_WERROR at its default, OFF.
# Abseil: the PIC static build of scripts/abseil_pic.sh (built once into
# $ACCELCRYPT_BUILD_DIR/third_party), with the C++ runtime linked statically
# into the shared objects, so that loading the provider loads no library an
# OpenSSL program lacks; ACCELCRYPT_ABSL=system uses Debian's shared Abseil
# and runtime (as a packager's plain cmake build does), and so does a
# machine where the source cannot be fetched, with a note.
accelcrypt_build() {
  local cache="$ACCELCRYPT_BUILD_DIR/CMakeCache.txt"
  if [ -f "$cache" ] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$cache"; then
    echo "accelcrypt: $ACCELCRYPT_BUILD_DIR was configured with another generator;" \
         "remove it or set ACCELCRYPT_BUILD_DIR" >&2
    return 1
  fi
  local absl_dir="" prefix d static_rt=OFF
  # The system's config, so that switching back from the PIC build works.
  for d in /usr/lib/*/cmake/absl /usr/lib/cmake/absl; do
    if [ -f "$d/abslConfig.cmake" ]; then absl_dir=$d; break; fi
  done
  if [ "${ACCELCRYPT_ABSL:-pic}" != system ]; then
    if prefix=$(accelcrypt_abseil_pic "$ACCELCRYPT_BUILD_DIR"); then
      absl_dir="$prefix/lib/cmake/absl"
      static_rt=ON
    else
      echo "accelcrypt: NOTE: building against the shared system Abseil;" \
           "loading the provider then also loads 26 Abseil libraries (docs/performance-history.md, load cost)" >&2
    fi
  fi
  echo "== configure: $ACCELCRYPT_BUILD_DIR"
  cmake -S "$ACCELCRYPT_ROOT" -B "$ACCELCRYPT_BUILD_DIR" -G Ninja \
    -DCMAKE_BUILD_TYPE="${ACCELCRYPT_BUILD_TYPE:-RelWithDebInfo}" \
    ${absl_dir:+-Dabsl_DIR="$absl_dir"} -DACCELCRYPT_STATIC_CXX_RUNTIME="$static_rt" \
    -DACCELCRYPT_WERROR="${ACCELCRYPT_WERROR:-ON}" >/dev/null
  echo "== build (-j$(accelcrypt_jobs))"
  local targets=()
  local t
  for t in "$@"; do targets+=(--target "$t"); done
  cmake --build "$ACCELCRYPT_BUILD_DIR" -j "$(accelcrypt_jobs)" "${targets[@]}"
}
