#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Builds the libFuzzer targets (tests/fuzz, clang, ASan+UBSan) into
# build-fuzz/ and runs each named target (all when none is named) for a
# bounded time, one after the other or --jobs at a time. docs/testing.md
# explains the targets.
#
#   scripts/fuzz.sh [--seconds N] [--jobs N] [--build-only] [--no-build]
#                   [--replay] [TARGET...]
#     --seconds N   time per target (default 60)
#     --jobs N      targets run at once (default 1; each fuzzer is one
#                   process on one core)
#     --build-only  configure and build, run nothing
#     --no-build    run the binaries already built (a long campaign goes on
#                   while the source tree is being edited)
#     --replay      run only the committed corpus (no new inputs)
#   ACCELCRYPT_FUZZ_BUILD_DIR  build directory (default: build-fuzz/)
#   ACCELCRYPT_FUZZ_ARGS       extra libFuzzer flags (e.g. -jobs=2 -workers=2)
#
# Inputs the fuzzer finds go to build-fuzz/fuzz-corpus/TARGET (the committed
# seed corpus in tests/fuzz/corpus/TARGET is read, never written); a crash
# is saved as build-fuzz/fuzz-artifacts/TARGET/crash-* and fails the run.
# A summary line per target gives executions, exec/s, corpus size and the
# result; the exit code is 1 when any target found something.
set -euo pipefail
# shellcheck source=scripts/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

seconds=60
jobs=1
build_only=0
no_build=0
replay=0
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --build-only) build_only=1; shift ;;
    --no-build) no_build=1; shift ;;
    --replay) replay=1; shift ;;
    --jobs) jobs=$2; shift 2 ;;
    -h|--help) sed -n '4,25p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
case "$jobs" in
  ''|*[!0-9]*|0) echo "fuzz.sh: --jobs needs a positive number, not '$jobs'" >&2; exit 2 ;;
esac

build=${ACCELCRYPT_FUZZ_BUILD_DIR:-$ACCELCRYPT_ROOT/build-fuzz}
if ! command -v clang++ >/dev/null 2>&1; then
  accelcrypt_install_deps
fi
if [ "$no_build" = 0 ] || [ ! -e "$build/fuzz_targets.txt" ]; then
  echo "== configure: $build (clang, libFuzzer, ASan+UBSan)"
  CC=clang CXX=clang++ cmake -S "$ACCELCRYPT_ROOT" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DACCELCRYPT_WERROR=OFF \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
    -DACCELCRYPT_FUZZ=ON -DACCELCRYPT_SANITIZE=address,undefined >/dev/null
fi
mapfile -t all < "$build/fuzz_targets.txt"
if [ ${#targets[@]} -eq 0 ]; then targets=("${all[@]}"); fi
for t in "${targets[@]}"; do
  if ! printf '%s\n' "${all[@]}" | grep -qx "$t"; then
    echo "fuzz.sh: no target $t (targets: ${all[*]})" >&2
    exit 2
  fi
done
if [ "$no_build" = 0 ]; then
  echo "== build (-j$(accelcrypt_jobs)): ${targets[*]}"
  build_args=()
  for t in "${targets[@]}"; do build_args+=(--target "fuzz_$t"); done
  cmake --build "$build" -j "$(accelcrypt_jobs)" "${build_args[@]}"
else
  for t in "${targets[@]}"; do
    if [ ! -x "$build/bin/fuzz_$t" ]; then
      echo "fuzz.sh: --no-build: $build/bin/fuzz_$t is not built" >&2
      exit 2
    fi
  done
fi
[ "$build_only" = 1 ] && exit 0

# Leaks are findings; so is any UBSan report. The symbolizer gives file:line.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$ACCELCRYPT_ROOT/tests/sanitizers/lsan.supp:print_suppressions=0}
export ACCELCRYPT_STATS_DIR=none
export ACCELCRYPT_BACKEND_DIR="$build/lib/accelcrypt/backends"

# fuzz_one TARGET: runs one target, prints its summary line and keeps it
# in fuzz-logs/TARGET.summary; exit 1 when the fuzzer found something.
fuzz_one() {
  local t=$1 seed work art log args trc execs speed size result line
  seed="$ACCELCRYPT_ROOT/tests/fuzz/corpus/$t"
  work="$build/fuzz-corpus/$t"
  art="$build/fuzz-artifacts/$t"
  log="$build/fuzz-logs/$t.log"
  mkdir -p "$work" "$art" "$(dirname "$log")"
  if [ "$replay" = 1 ]; then
    args=(-runs=0 "$seed")
  else
    # -timeout: one input may take at most 25 s; -rss_limit_mb: 2 GB.
    # shellcheck disable=SC2206  # ACCELCRYPT_FUZZ_ARGS is a word list
    args=(-max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048
          -print_final_stats=1 -artifact_prefix="$art/"
          ${ACCELCRYPT_FUZZ_ARGS:-} "$work" "$seed")
  fi
  echo "== fuzz $t: ${args[*]}"
  set +e
  "$build/bin/fuzz_$t" "${args[@]}" >"$log" 2>&1
  trc=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  size=$(find "$work" -type f | wc -l)
  if [ "$replay" = 1 ]; then
    execs=$(find "$seed" -type f | wc -l)
    speed=-
    size=$execs
  fi
  if [ "$trc" -eq 0 ]; then
    result=ok
  else
    result="FOUND (exit $trc; log $log; artifacts $art)"
    grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$log" | head -5 || true
  fi
  line=$(printf '%-16s %12s execs %8s exec/s %6s corpus  %s' "$t" \
         "${execs:-?}" "${speed:-?}" "$size" "$result")
  echo "$line"
  echo "$line" > "$build/fuzz-logs/$t.summary"
  [ "$trc" -eq 0 ]
}

rc=0
running=0
mkdir -p "$build/fuzz-logs"
for t in "${targets[@]}"; do
  rm -f "$build/fuzz-logs/$t.summary"
  if [ "$jobs" -eq 1 ]; then
    fuzz_one "$t" || rc=1
    continue
  fi
  if [ "$running" -ge "$jobs" ]; then
    wait -n || rc=1
    running=$((running - 1))
  fi
  fuzz_one "$t" &
  running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
  wait -n || rc=1
  running=$((running - 1))
done
summary=()
for t in "${targets[@]}"; do
  if [ -s "$build/fuzz-logs/$t.summary" ]; then
    summary+=("$(cat "$build/fuzz-logs/$t.summary")")
  else
    summary+=("$t: no result (the run was interrupted)")
    rc=1
  fi
done
if [ "$replay" = 1 ]; then
  echo "== fuzz summary (committed corpus replayed)"
else
  echo "== fuzz summary (${seconds}s per target)"
fi
printf '%s\n' "${summary[@]}"
exit "$rc"
