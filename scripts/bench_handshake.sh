#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Server CPU per full TLS handshake with and without accelcrypt, measured in
# one process (build/bin/tls_handshake_bench, source
# tests/integration/provider/tls_handshake_bench.cc): two library contexts,
# "without" (OpenSSL's default provider only) and "with" (default provider
# activated, accelcrypt loaded and preferred by `default_properties =
# ?provider=accelcrypt`, the documented way; scripts/speed_cnf.sh), each
# loaded from its openssl.cnf; the server's SSL_CTX in one or the other, the
# client's always in "without"; client and server over a BIO pair in one
# thread; only the server's calls timed on the thread CPU clock. Rounds
# alternate with/without (N handshakes each, order swapped every round); the
# table gives per side the median of the per-round means, and the median of
# the rounds' own ratios with their quartiles (a round's two batches ran
# next to each other: a drift of the machine's speed cancels). Cases: TLS 1.3 and TLS 1.2 with an RSA-2048 certificate,
# TLS 1.3 with an ECDSA P-256 certificate (OpenSSL's default groups and
# suites: X25519, TLS_AES_256_GCM_SHA384 / ECDHE-*-AES256-GCM-SHA384).
# A benchmark: it asserts no time.
#
#   ratio = without / with (server CPU per handshake):
#           > 1.0 accelcrypt costs the server less, < 1.0 it costs more.
#
# Usage: bench_handshake.sh [--build DIR] [--rounds N] [--seconds S]
#                           [--handshakes N] [--case NAME]...
#                           [--backends LIST|all] [--calibration FILE]
#                           [--control] [--markdown FILE]
#   --build        build tree (default: $ACCELCRYPT_BUILD_DIR or build)
#   --rounds       rounds per side and case (default 50)
#   --seconds      about S seconds per case in all (default 10); sets the
#                  handshakes per round from a warm-up
#   --handshakes   handshakes per round and side (overrides --seconds)
#   --case         tls13-rsa, tls12-rsa, tls13-ecdsa (default: all three)
#   --backends     accelcrypt's `backends` setting (default all: none set,
#                  every backend loads, the default routing, as installed)
#   --calibration  the calibration accelcrypt reads (ACCELCRYPT_CALIBRATION);
#                  default none, as a first install without one
#   --control      both sides without accelcrypt: shows the method's own
#                  bias (ratios should be 1.00 +- noise)
#   --markdown     also write the table as Markdown to FILE
# The "with" side's statistics are kept in a temporary directory and
# summarised; the run fails (exit 1) if accelcrypt served nothing there.
# Exit codes: 0 ran (ratios below 1.0 are reported, not fatal), 1 a run
# failed or did not go through accelcrypt, 2 usage.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${ACCELCRYPT_BUILD_DIR:-$root/build}
rounds=50
seconds=10
handshakes=
cases=()
backends=all
control=0
markdown=
usage() { awk 'NR > 3 && !/^#/ { exit } NR > 3 { sub(/^# ?/, ""); print }' "${BASH_SOURCE[0]}"; }
need() { [ $# -ge 2 ] || { echo "bench_handshake.sh: $1 needs a value (see --help)" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
  case "$1" in
    --build) need "$@"; build=$2; shift 2 ;;
    --rounds) need "$@"; rounds=$2; shift 2 ;;
    --seconds) need "$@"; seconds=$2; shift 2 ;;
    --handshakes) need "$@"; handshakes=$2; shift 2 ;;
    --case) need "$@"; cases+=("$2"); shift 2 ;;
    --backends) need "$@"; backends=$2; shift 2 ;;
    --calibration) need "$@"; export ACCELCRYPT_CALIBRATION=$2; shift 2 ;;
    --control) control=1; shift ;;
    --markdown) need "$@"; markdown=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench_handshake.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$rounds" in ''|*[!0-9]*|0) echo "bench_handshake.sh: --rounds takes a positive number" >&2; exit 2 ;; esac
case "$seconds" in ''|*[!0-9.]*|.|*.*.*) echo "bench_handshake.sh: --seconds takes a positive number" >&2; exit 2 ;; esac
awk -v s="$seconds" 'BEGIN { exit !(s > 0) }' ||
  { echo "bench_handshake.sh: --seconds takes a positive number" >&2; exit 2; }
if [ -n "$handshakes" ]; then
  case "$handshakes" in *[!0-9]*|0) echo "bench_handshake.sh: --handshakes takes a positive number" >&2; exit 2 ;; esac
fi
for c in ${cases[@]+"${cases[@]}"}; do
  case "$c" in tls13-rsa|tls12-rsa|tls13-ecdsa) ;;
    *) echo "bench_handshake.sh: unknown case '$c' (tls13-rsa, tls12-rsa, tls13-ecdsa)" >&2; exit 2 ;;
  esac
done
[ -d "$build" ] || { echo "bench_handshake.sh: build tree $build not found (build first)" >&2; exit 1; }
build=$(cd "$build" && pwd)
bin=$build/bin/tls_handshake_bench
module=$build/lib/accelcrypt.so
for f in "$bin" "$module"; do
  [ -e "$f" ] || { echo "bench_handshake.sh: $f not found (build first)" >&2; exit 1; }
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/accelcrypt-handshake.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=scripts/speed_cnf.sh
. "$root/scripts/speed_cnf.sh"
accelcrypt_write_speed_cnfs "$tmp" "$module"
if [ "$backends" = all ]; then
  printf '[accelcrypt]\n' > "$tmp/settings.cnf"
else
  printf '[accelcrypt]\nbackends = %s\n' "$backends" > "$tmp/settings.cnf"
fi
with_cnf=$tmp/accelcrypt.cnf
[ "$control" -eq 1 ] && with_cnf=$tmp/default.cnf
mkdir "$tmp/stats"

args=("$tmp/default.cnf" "$with_cnf" --rounds "$rounds")
[ "$control" -eq 1 ] || args+=(--expect-provider accelcrypt)
if [ -n "$handshakes" ]; then args+=(--handshakes "$handshakes"); else args+=(--seconds "$seconds"); fi
for c in ${cases[@]+"${cases[@]}"}; do args+=(--case "$c"); done

echo "accelcrypt handshake bench: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')" \
     "(family $(grep -m1 'cpu family' /proc/cpuinfo | sed 's/.*: //')," \
     "model $(grep -m1 '^model[[:space:]]*:' /proc/cpuinfo | sed 's/.*: //'), $(nproc) online);" \
     "$(openssl version 2>/dev/null || echo 'openssl ?')"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); accelcrypt backends = $backends;" \
     "calibration: ${ACCELCRYPT_CALIBRATION:-none}$([ "$control" -eq 1 ] && echo '; CONTROL: both sides without accelcrypt')"
rc=0
ACCELCRYPT_CONF="$tmp/settings.cnf" \
ACCELCRYPT_BACKEND_DIR="$build/lib/accelcrypt/backends" \
ACCELCRYPT_STATS_DIR="$tmp/stats" \
  "$bin" "${args[@]}" > "$tmp/out" || rc=$?
grep -v '^ROW ' "$tmp/out" || true
[ "$rc" -eq 0 ] || { echo "bench_handshake.sh: tls_handshake_bench exited $rc" >&2; exit 1; }
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

echo
awk 'BEGIN { printf "%-12s %11s %11s %7s %13s  %12s %12s %7s  %10s %10s\n", "case", "without us", "with us", "ratio", "quartiles",
             "conn w/o us", "conn with us", "ratio", "w/o conn/s", "with conn/s" }
     /^ROW / { q = sprintf("%.3f-%.3f", $11, $12)
               printf "%-12s %11.1f %11.1f %7.3f %13s  %12.1f %12.1f %7.3f  %10.0f %10.0f\n", $2, $3, $4, $7, q, $5, $6, $8, 1e6 / $5, 1e6 / $6 }' "$tmp/out"
echo "us = server CPU per handshake (its SSL_do_handshake calls; conn: also its SSL_new and SSL_free), median of"
echo "the rounds; ratio = without / with (> 1.0: accelcrypt cheaper), the median of the rounds' ratios, with"
echo "their quartiles; conn/s = connections per server CPU-second"
if [ -n "$markdown" ]; then
  {
    echo "| case | without µs | with µs | ratio (quartiles) | connection without µs | connection with µs | ratio | connections/CPU-s without | with |"
    echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    awk '/^ROW / { printf "| %s | %.1f | %.1f | %.3f (%.3f-%.3f) | %.1f | %.1f | %.3f | %.0f | %.0f |\n", $2, $3, $4, $7, $11, $12, $5, $6, $8, 1e6 / $5, 1e6 / $6 }' "$tmp/out"
  } > "$markdown"
  echo "(Markdown table written to $markdown)"
fi

# What accelcrypt served in the "with" context (its statistics, summarised
# by the build's accelcrypt tool).
[ "$control" -eq 1 ] && exit 0
echo
cli=$build/bin/accelcrypt
[ -x "$cli" ] || { echo "bench_handshake.sh: $cli not built (it reads the statistics)" >&2; exit 1; }
"$cli" stats "$tmp/stats" | sed -n '/^per backend and algorithm/,$p' > "$tmp/served"
if ! awk 'NR > 3 && $3 ~ /^[0-9]+$/ && $3 > 0 { found = 1 } END { exit !found }' "$tmp/served"; then
  cat "$tmp/served" >&2
  echo "bench_handshake.sh: accelcrypt served no operation in the 'with' context" >&2
  exit 1
fi
echo "accelcrypt's statistics of the 'with' context:"
sed 1d "$tmp/served" | sed "s/^/  /"
