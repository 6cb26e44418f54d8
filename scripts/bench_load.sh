#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# CPU cost of loading the accelcrypt provider, per process: the mean
# user+sys CPU time of `openssl rand -hex 4` over N runs with accelcrypt
# loaded (scripts/speed_cnf.sh's accelcrypt.cnf) and with OpenSSL's default
# provider only, and the difference. A benchmark, not a test: it asserts
# nothing. CPU time is the children's total the shell reports (`times`),
# in 5 batches per side, interleaved. With --callgrind it also counts the
# instructions of one run of each (valgrind; independent of the machine's
# load, which on a shared guest moves the milliseconds by 2x).
#
# Usage: bench_load.sh [--build DIR] [--runs N] [--callgrind]
#                      [--calibration FILE]
#   --build        build tree (default: $ACCELCRYPT_BUILD_DIR or build)
#   --runs         runs per configuration (default 20)
#   --callgrind    also count instructions (needs valgrind)
#   --calibration  the calibration accelcrypt reads (ACCELCRYPT_CALIBRATION),
#                  as an installed package's `policy = auto` reads the one
#                  made at install; default: none (ACCELCRYPT_CALIBRATION
#                  from the environment when set)
# The x86 backend's RDSEED start-up test runs once per boot and user
# (/run/accelcrypt/rdseed-startup for root): the first run here may pay it,
# the others do not; ACCELCRYPT_RDSEED_STARTUP=every-process makes every
# process pay it (the behaviour before the record).
# Exit codes: 0 ran, 1 a run failed, 2 usage.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${ACCELCRYPT_BUILD_DIR:-$root/build}
runs=20
callgrind=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --callgrind) callgrind=1; shift ;;
    --calibration) export ACCELCRYPT_CALIBRATION=$2; shift 2 ;;
    *) echo "usage: bench_load.sh [--build DIR] [--runs N] [--callgrind] [--calibration FILE]" >&2; exit 2 ;;
  esac
done
case "$runs" in ''|*[!0-9]*) echo "bench_load.sh: --runs wants a number" >&2; exit 2 ;; esac

# shellcheck source=scripts/speed_cnf.sh
. "$root/scripts/speed_cnf.sh"
module=$build/lib/accelcrypt.so
[ -f "$module" ] || module=
if [ -z "$module" ]; then
  echo "bench_load.sh: no provider module under $build (build accelcrypt_provider)" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
accelcrypt_write_speed_cnfs "$tmp" "$module"

# batch_ms CNF N: total user+sys CPU milliseconds of N runs, from the
# children's times the shell reports (`times`): the kernel's scheduler
# runtime, not tick samples, so small per-process costs add up correctly
# (user+sys of a single 5 ms process is quantised to the 4 ms tick).
batch_ms() {
  local cnf=$1 n=$2 i
  (
    for ((i = 0; i < n; i++)); do
      OPENSSL_CONF=$cnf openssl rand -hex 4 >/dev/null || exit 1
    done
    times
  ) | awk 'NR == 2 {
      split($1, u, "m"); split($2, s, "m")
      printf "%.3f\n", (u[1] * 60 + u[2] + s[1] * 60 + s[2]) * 1000 }'
}

# The provider must really load, or the figure means nothing.
if ! OPENSSL_CONF=$tmp/accelcrypt.cnf openssl list -providers | grep -q accelcrypt; then
  echo "bench_load.sh: openssl did not load $module" >&2
  exit 1
fi
# Interleaved batches, so a change in the machine's load hits both sides.
batches=5
per=$(( (runs + batches - 1) / batches ))
with_total=0 without_total=0
for ((b = 0; b < batches; b++)); do
  t=$(batch_ms "$tmp/accelcrypt.cnf" "$per") || { echo "bench_load.sh: run failed" >&2; exit 1; }
  with_total=$(awk -v a="$with_total" -v b="$t" 'BEGIN { print a + b }')
  t=$(batch_ms "$tmp/default.cnf" "$per") || { echo "bench_load.sh: run failed" >&2; exit 1; }
  without_total=$(awk -v a="$without_total" -v b="$t" 'BEGIN { print a + b }')
done
n=$((per * batches))
with=$(awk -v t="$with_total" -v n="$n" 'BEGIN { printf "%.2f", t / n }')
without=$(awk -v t="$without_total" -v n="$n" 'BEGIN { printf "%.2f", t / n }')
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
echo "calibration: ${ACCELCRYPT_CALIBRATION:-none set (the default search path)}; RDSEED start-up: ${ACCELCRYPT_RDSEED_STARTUP:-once per boot}"
echo "openssl rand -hex 4, mean user+sys CPU per process over $n runs (5 interleaved batches):"
echo "  with accelcrypt: $with ms"
echo "  default only:    $without ms"
awk -v a="$with" -v b="$without" 'BEGIN { printf "  difference:      %.2f ms\n", a - b }'
if [ "$callgrind" = 1 ]; then
  command -v valgrind >/dev/null || { echo "bench_load.sh: --callgrind needs valgrind" >&2; exit 1; }
  ir() {
    OPENSSL_CONF=$1 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
      openssl rand -hex 4 2>&1 >/dev/null | awk '/refs:/ { gsub(",", "", $NF); print $NF }'
  }
  a=$(ir "$tmp/accelcrypt.cnf")
  b=$(ir "$tmp/default.cnf")
  echo "instructions (callgrind, one run each; valgrind hides RDSEED/RDRAND):"
  awk -v a="$a" -v b="$b" 'BEGIN {
    printf "  with accelcrypt: %.1f M\n  default only:    %.1f M\n  difference:      %.1f M\n",
      a / 1e6, b / 1e6, (a - b) / 1e6 }'
fi
