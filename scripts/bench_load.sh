#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Cost of loading the accelcrypt provider, per process: the mean
# user+sys CPU time of `openssl rand -hex 4` over N runs with accelcrypt
# loaded (scripts/speed_cnf.sh's accelcrypt.cnf) and with OpenSSL's default
# provider only, and the difference; beside it the minor page faults
# (`perf stat -e minor-faults`, else GNU time; median of 5 runs) and the
# system calls (`strace -f -c`, one run) of each, which do not depend on
# the machine's load (CPU time does: on a shared guest it moves by 2x, and
# a page fault costs 1 to 14 us depending on the machine). A benchmark, not
# a test: it asserts nothing. CPU time is the children's total the shell
# reports (`times`), in 5 batches per side, interleaved. With --callgrind
# it also counts the instructions of one run of each (valgrind).
# perf (linux-perf) and strace are installed with apt-get when missing and
# this runs as root; otherwise their figures are skipped, with a note.
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
# Page faults and system calls: counts, not times.
if ! command -v perf >/dev/null || ! command -v strace >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q linux-perf strace \
      >/dev/null 2>&1 || true
  fi
fi
# faults CNF: minor page faults of one run.
faults() {
  if perf stat -x, -e minor-faults true >/dev/null 2>&1; then
    OPENSSL_CONF=$1 perf stat -x, -e minor-faults openssl rand -hex 4 \
      2>&1 >/dev/null | awk -F, '/minor-faults/ { print $1 }'
  elif [ -x /usr/bin/time ]; then
    OPENSSL_CONF=$1 /usr/bin/time -f %R openssl rand -hex 4 2>&1 >/dev/null | tail -1
  fi
}
# median5 CNF: the median of 5 runs of faults.
median5() {
  local i
  for i in 1 2 3 4 5; do faults "$1"; done | sort -n | sed -n 3p
}
# syscalls CNF: the system calls of one run, every thread.
syscalls() {
  OPENSSL_CONF=$1 strace -f -c -o "$tmp/strace.out" openssl rand -hex 4 >/dev/null &&
    awk '$NF == "total" { print $4 }' "$tmp/strace.out"
}
fa=$(median5 "$tmp/accelcrypt.cnf"); fb=$(median5 "$tmp/default.cnf")
if [ -n "$fa" ] && [ -n "$fb" ]; then
  echo "minor page faults per process (median of 5 runs):"
  echo "  with accelcrypt: $fa"
  echo "  default only:    $fb"
  echo "  difference:      $((fa - fb))"
else
  echo "minor page faults: not measured (needs perf or GNU time)"
fi
if command -v strace >/dev/null; then
  sa=$(syscalls "$tmp/accelcrypt.cnf"); sb=$(syscalls "$tmp/default.cnf")
  echo "system calls per process (strace -f -c):"
  echo "  with accelcrypt: $sa"
  echo "  default only:    $sb"
  echo "  difference:      $((sa - sb))"
else
  echo "system calls: not measured (needs strace)"
fi
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
