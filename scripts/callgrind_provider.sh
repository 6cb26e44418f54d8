#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Per-call instruction counts of small EVP calls through accelcrypt (its
# software backend only, preferred by default_properties) and through
# OpenSSL's default provider alone, counted with valgrind's callgrind
# (instruction counts do not depend on the machine's load, unlike
# `openssl speed`). Each case runs build/bin/evp_callcount for N1 and N2
# calls; (Ir(N2) - Ir(N1)) / (N2 - N1) is the cost of one call, so set-up
# and provider loading cancel out. Ratio = default / accelcrypt (1.0 = no
# overhead; the throughput ratio scripts/bench.sh reports for the same
# calls).
#
# Usage: callgrind_provider.sh [--build DIR] [--case NAME]... [--bytes N]
#                              [--backends LIST]
#   --build     build tree (default: $ACCELCRYPT_BUILD_DIR or build)
#   --case      aes-128-cbc, aes-128-cbc-decrypt, aes-128-ctr, aes-256-gcm,
#               aes-256-gcm-rekey (a new key every message), sha256
#               (default: aes-128-cbc aes-128-ctr aes-256-gcm sha256)
#   --bytes     bytes per call (default 16)
#   --backends  accelcrypt's `backends` setting, with `interpose = all`
#               (default: software)
# Exit codes: 0 ran, 1 a run failed, 2 usage.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${ACCELCRYPT_BUILD_DIR:-$root/build}
cases=()
bytes=16
backends=software
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --case) cases+=("$2"); shift 2 ;;
    --bytes) bytes=$2; shift 2 ;;
    --backends) backends=$2; shift 2 ;;
    -h|--help) sed -n '3,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "callgrind_provider.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ ${#cases[@]} -gt 0 ] || cases=(aes-128-cbc aes-128-ctr aes-256-gcm sha256)
build=$(cd "$build" && pwd)
bin=$build/bin/evp_callcount
module=$build/lib/accelcrypt.so
for f in "$bin" "$module"; do
  [ -e "$f" ] || { echo "callgrind_provider.sh: $f not found (build first)" >&2; exit 1; }
done
command -v valgrind > /dev/null || { echo "callgrind_provider.sh: valgrind is not installed" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/accelcrypt-cg.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# From the script's own directory: bench.sh is also installed, next to it.
# shellcheck source=scripts/speed_cnf.sh
. "$(dirname "${BASH_SOURCE[0]}")/speed_cnf.sh"
accelcrypt_write_speed_cnfs "$tmp" "$module"
# interpose = all: the provider's crossing is measured over these backends
# even where they are pass-through (the software backend).
printf '[accelcrypt]\nbackends = %s\ninterpose = all\n' "$backends" > "$tmp/settings.cnf"

n1=2000
n2=12000
# instructions CONF CASE N: total Ir of one run.
instructions() {
  local out="$tmp/cg.out"
  if ! OPENSSL_CONF=$1 ACCELCRYPT_CONF="$tmp/settings.cnf" \
       ACCELCRYPT_BACKEND_DIR="$build/lib/accelcrypt/backends" \
       valgrind --tool=callgrind --callgrind-out-file="$out" \
       --toggle-collect='*Loop(*' \
       "$bin" "$2" "$3" "$bytes" > "$tmp/log" 2>&1; then
    echo "callgrind_provider.sh: $2 under $(basename "$1") failed:" >&2
    tail -n 5 "$tmp/log" >&2
    return 1
  fi
  awk '/^summary:/ { print $2 }' "$out"
}

echo "instructions per call, $bytes-byte input (callgrind; accelcrypt backends = $backends)"
printf '%-12s %10s %11s %7s\n' case default accelcrypt ratio
for c in "${cases[@]}"; do
  d1=$(instructions "$tmp/default.cnf" "$c" $n1)
  d2=$(instructions "$tmp/default.cnf" "$c" $n2)
  a1=$(instructions "$tmp/accelcrypt.cnf" "$c" $n1)
  a2=$(instructions "$tmp/accelcrypt.cnf" "$c" $n2)
  awk -v c="$c" -v d1="$d1" -v d2="$d2" -v a1="$a1" -v a2="$a2" -v n=$((n2 - n1)) \
    'BEGIN { d = (d2 - d1) / n; a = (a2 - a1) / n;
             printf "%-12s %10.1f %11.1f %7.3f\n", c, d, a, (a > 0 ? d / a : 0) }'
done
