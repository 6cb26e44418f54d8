#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# CPU cost of loading the accelcrypt provider, per process: the median
# user+sys CPU time of `openssl rand -hex 4` over N runs with accelcrypt
# loaded (scripts/speed_cnf.sh's accelcrypt.cnf) and with OpenSSL's default
# provider only, and the difference. A benchmark, not a test: it asserts
# nothing. CPU time comes from bash's `time` (millisecond resolution), so
# N runs are taken and the median reported.
#
# Usage: bench_load.sh [--build DIR] [--runs N]
#   --build  build tree (default: $ACCELCRYPT_BUILD_DIR or build)
#   --runs   runs per configuration (default 20)
# Exit codes: 0 ran, 1 a run failed, 2 usage.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${ACCELCRYPT_BUILD_DIR:-$root/build}
runs=20
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    *) echo "usage: bench_load.sh [--build DIR] [--runs N]" >&2; exit 2 ;;
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

# median_ms CNF: prints the median user+sys CPU milliseconds of N runs.
median_ms() {
  local cnf=$1 i t out=()
  TIMEFORMAT='%3U %3S'
  for ((i = 0; i < runs; i++)); do
    t=$( { time OPENSSL_CONF=$cnf openssl rand -hex 4 >/dev/null; } 2>&1 ) || return 1
    out+=("$(awk '{printf "%.3f\n", ($1 + $2) * 1000}' <<<"$t")")
  done
  printf '%s\n' "${out[@]}" | sort -n | awk '{a[NR]=$1} END {
    if (NR % 2) print a[(NR + 1) / 2]; else printf "%.3f\n", (a[NR/2] + a[NR/2 + 1]) / 2 }'
}

# The provider must really load, or the figure means nothing.
if ! OPENSSL_CONF=$tmp/accelcrypt.cnf openssl list -providers | grep -q accelcrypt; then
  echo "bench_load.sh: openssl did not load $module" >&2
  exit 1
fi
with=$(median_ms "$tmp/accelcrypt.cnf") || { echo "bench_load.sh: run failed" >&2; exit 1; }
without=$(median_ms "$tmp/default.cnf") || { echo "bench_load.sh: run failed" >&2; exit 1; }
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
echo "openssl rand -hex 4, median user+sys CPU of $runs runs:"
echo "  with accelcrypt: $with ms"
echo "  default only:    $without ms"
awk -v a="$with" -v b="$without" 'BEGIN { printf "  difference:      %.3f ms\n", a - b }'
