#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# CI stage: a ThreadSanitizer build (GCC, warnings as errors) in build-tsan/
# of the tests that run threads: the router (concurrent routing with device
# errors, re-entrancy), the statistics (concurrent counters), the PKCS#11
# module and store (threads sharing one module instance and one store) and
# the conformance suite's concurrent sessions. Only those test binaries and
# what they load are built. docs/testing.md.
#   ACCELCRYPT_TSAN_BUILD_DIR  build directory (default: build-tsan/)
#   ACCELCRYPT_TSAN_REGEX      the tests to run, a ctest -R regex (default:
#                              the thread tests below; for a subset while
#                              working, e.g. 'AppLockFailureThreads')
set -euo pipefail
# shellcheck source=scripts/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# shellcheck source=scripts/ci_sanitizer_env.sh
. "$ACCELCRYPT_ROOT/scripts/ci_sanitizer_env.sh"

build=${ACCELCRYPT_TSAN_BUILD_DIR:-$ACCELCRYPT_ROOT/build-tsan}
targets=(core_router_test core_stats_test p11_module_test p11_store_test
         p11_conformance_test)
accelcrypt_install_deps
accelcrypt_timed "tsan build" accelcrypt_sanitizer_build "$build" thread "${targets[@]}"

export TSAN_OPTIONS="suppressions=$ACCELCRYPT_ROOT/tests/sanitizers/tsan.supp:halt_on_error=1:second_deadlock_stack=1:report_signal_unsafe=0"
export ACCELCRYPT_STATS_DIR=${ACCELCRYPT_STATS_DIR:-none}
# The whole router and stats suites; of the module, store and conformance
# suites the tests that run threads.
regex=${ACCELCRYPT_TSAN_REGEX:-'^(RouterTest|RouterFastestTest|StatsTest)\.|ManyThreads|ThreadsShareOneStore|ConcurrentSessionsFromThreads|TwoProcessesWriteConcurrently'}
log="$build/Testing/ci_tsan.log"
mkdir -p "$(dirname "$log")"
set +e
start=$(date +%s)
ctest --test-dir "$build" --output-on-failure -j "$(accelcrypt_jobs)" \
  -R "$regex" --timeout 900 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
echo "== tsan tests: $(( $(date +%s) - start )) s (exit $rc)"
if grep -q 'No tests were found' "$log"; then
  echo "ci_tsan.sh: ctest found no tests" >&2
  exit 1
fi
exit "$rc"
