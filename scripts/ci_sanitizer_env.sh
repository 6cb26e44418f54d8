#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Sourced by scripts/ci_asan.sh and scripts/ci_tsan.sh: configure and build a
# sanitizer tree, and the runtime options both stages share.

# accelcrypt_sanitizer_build DIR LIST [TARGET...]: configures DIR with
# GCC and -DACCELCRYPT_SANITIZE=LIST (warnings as errors, as test.sh) and
# builds the targets (everything when none is named). Line tables only
# (-g1): the sanitizers' reports still name function, file and line, and
# the build is cheaper than with full debug information (types and locals,
# which only a debugger reads). -O1 for ASan (what its documentation
# recommends: the whole tree is built and it is the longest build of CI),
# -O2 for TSan (a few targets). The test programs' own code at -O0
# (ACCELCRYPT_TEST_OPT_FLAGS, tests/CMakeLists.txt): with both sanitizers
# a GoogleTest file compiles about 45 % faster than at -O1, and it is
# still instrumented (its stack buffers keep their redzones, so a
# product write past a test's buffer is still caught); the product code
# the tests drive keeps -O1/-O2.
accelcrypt_sanitizer_build() {
  local dir=$1 list=$2 opt=-O2
  shift 2
  case "$list" in *address*) opt=-O1 ;; esac
  echo "== configure: $dir (-fsanitize=$list, $opt -g1)"
  cmake -S "$ACCELCRYPT_ROOT" -B "$dir" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="$opt -g1 -DNDEBUG" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$opt -g1 -DNDEBUG" \
    -DACCELCRYPT_WERROR="${ACCELCRYPT_WERROR:-ON}" \
    -DACCELCRYPT_TEST_OPT_FLAGS="-O0;-g1" \
    -DACCELCRYPT_SANITIZE="$list" >/dev/null
  local targets=() t
  for t in "$@"; do targets+=(--target "$t"); done
  echo "== build (-j$(accelcrypt_jobs)) ${*:-all}"
  cmake --build "$dir" -j "$(accelcrypt_jobs)" "${targets[@]}"
}

# accelcrypt_timed NAME CMD...: runs CMD and prints how long it took.
accelcrypt_timed() {
  local name=$1 start rc
  shift
  start=$(date +%s)
  set +e
  "$@"
  rc=$?
  set -e
  echo "== $name: $(( $(date +%s) - start )) s (exit $rc)"
  return "$rc"
}
