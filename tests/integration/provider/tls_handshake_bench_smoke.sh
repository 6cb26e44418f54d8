#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Smoke run of scripts/bench_handshake.sh and tls_handshake_bench (one round
# of 3 handshakes per side and case, about a second): every case completes
# on both sides and prints its row (server CPU per handshake for both sides
# and a ratio), and accelcrypt served operations in the "with" context (the
# script fails when its statistics count none). Times are not checked (that
# is the benchmark's job, on a quiet machine). Usage errors exit 2.
#   tls_handshake_bench_smoke.sh BENCH_HANDSHAKE_SH BUILD_DIR
set -euo pipefail
script=$1 build=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/accelcrypt-handshake-smoke.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

args=(--build "$build" --rounds 1 --handshakes 3 --markdown "$tmp/table.md")
echo "\$ $script ${args[*]}"
rc=0
"$script" "${args[@]}" > "$tmp/out" 2>&1 || rc=$?
cat "$tmp/out"
[ "$rc" -eq 0 ] || fail "bench_handshake.sh exited $rc"
num='[0-9]+\.[0-9]+'
for c in tls13-rsa tls12-rsa tls13-ecdsa; do
  grep -Eq "^$c +$num +$num +$num +$num-$num +$num +$num +$num +[0-9]+ +[0-9]+$" "$tmp/out" ||
    fail "no table row for $c with both sides' figures and the ratios"
  grep -Eq "^\| $c \| $num \| $num \| $num \($num-$num\) \|" "$tmp/table.md" ||
    fail "no Markdown row for $c"
done
grep -q '^tls13-rsa: .*TLSv1.3' "$tmp/out" || fail "tls13-rsa did not negotiate TLS 1.3"
grep -q '^tls12-rsa: .*TLSv1.2' "$tmp/out" || fail "tls12-rsa did not negotiate TLS 1.2"
grep -q '^tls13-ecdsa: .*TLSv1.3.*server signature ECDSA' "$tmp/out" ||
  fail "tls13-ecdsa did not negotiate TLS 1.3 with an ECDSA signature"
grep -q "^accelcrypt's statistics of the 'with' context" "$tmp/out" ||
  fail "no statistics of the 'with' context"
grep -Eq '^  [a-z0-9_]+ +[A-Za-z0-9_-]+ +[1-9][0-9]* ' "$tmp/out" ||
  fail "the 'with' context's statistics count no operation"

# The control run (both sides without accelcrypt) completes too.
"$script" --build "$build" --rounds 1 --handshakes 2 --case tls13-ecdsa --control \
  > "$tmp/control" 2>&1 || { cat "$tmp/control"; fail "--control run failed"; }
grep -q 'CONTROL' "$tmp/control" || fail "--control run does not say so"

# Usage errors exit 2, from the script and from the driver.
for bad in "--rounds 0" "--case tls11-rsa" "--seconds x" "--no-such-option"; do
  rc=0
  # shellcheck disable=SC2086  # the words of $bad are separate arguments
  "$script" --build "$build" $bad > /dev/null 2>&1 || rc=$?
  [ "$rc" -eq 2 ] || fail "bench_handshake.sh $bad exited $rc, expected 2"
done
rc=0
"$build/bin/tls_handshake_bench" /dev/null /dev/null --handshakes 0 > /dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "tls_handshake_bench --handshakes 0 exited $rc, expected 2"
echo "PASS: tls_handshake_bench smoke"
