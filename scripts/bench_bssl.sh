#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# AES-128-GCM per message against BoringSSL, in one run (a benchmark: it
# prints figures and asserts nothing). BoringSSL is not part of this tree:
# the user builds it beside the project and passes its benchmark binary,
# either
#   bssl_bench  (BoringSSL from 2025 on, Google Benchmark; CMake target
#               bssl_bench: `cmake -GNinja -B build -DCMAKE_BUILD_TYPE=Release
#               && ninja -C build bssl_bench`), run as
#               `bssl_bench --benchmark_filter=BM_SpeedAEAD/seal_aes_128_gcm/`
#   bssl        (older BoringSSL), run as `bssl speed -filter AES-128-GCM
#               -chunks SIZES`
# Both seal with a key set once and a new nonce per message, 13 bytes of
# AAD (TLS's shape). Beside it, per round and size:
#   - build/bin/evp_pairbench (scripts/pairbench.sh): OpenSSL's default
#     provider and accelcrypt (every backend, default routing, preferred by
#     default_properties) in one process, alternating ~20 ms rounds; the
#     `openssl speed -evp` shape (key and IV given every message) and, where
#     the build's evp_pairbench has it, the IV-only shape
#     (aes-128-gcm-ivonly: keyed once, a new IV per message, as libssl does
#     per TLS 1.3 record, and as BoringSSL's figure);
#   - `openssl speed -seconds S -bytes SIZE -evp aes-128-gcm` through the
#     default provider and through accelcrypt (its CPU-time figure, not
#     -elapsed: on a shared machine the wall clock counts other processes).
# The rounds alternate BoringSSL and OpenSSL/accelcrypt runs; each figure
# is the fastest of the rounds, in ns per message: bssl_bench's CPU time
# per iteration (its wall-clock figure, printed below the tables, counts
# the other processes of a shared machine; `bssl speed` has only the wall
# clock), evp_pairbench's fastest ~20 ms round (wall clock), and openssl
# speed's CPU time. On a quiet machine the clocks agree; and
#   ratio = BoringSSL ns / other ns: accelcrypt's (or the default
#           provider's) speed relative to BoringSSL's, 1.0 = as fast,
#           < 1.0 slower.
#
# Usage: bench_bssl.sh [--build DIR] [--rounds N] [--sizes LIST]
#                      [--speed-seconds S] [--no-speed] [--markdown FILE]
#                      BSSL_BINARY
#   --build          build tree (default: $ACCELCRYPT_BUILD_DIR or build)
#   --rounds         rounds (default 3)
#   --sizes          bytes per message (default "16 256 1350 8192 16384",
#                    BoringSSL's own sizes)
#   --speed-seconds  seconds per openssl speed run (default 1)
#   --no-speed       no openssl speed columns (pairbench only)
#   --markdown       also write the table as Markdown to FILE
# Exit codes: 0 ran, 1 a run failed or did not go through accelcrypt, 2
# usage.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${ACCELCRYPT_BUILD_DIR:-$root/build}
rounds=3
sizes="16 256 1350 8192 16384"
speed_seconds=1
speed=1
markdown=
bssl=
usage() { awk 'NR > 3 && !/^#/ { exit } NR > 3 { sub(/^# ?/, ""); print }' "${BASH_SOURCE[0]}"; }
need() { [ $# -ge 2 ] || { echo "bench_bssl.sh: $1 needs a value (see --help)" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
  case "$1" in
    --build) need "$@"; build=$2; shift 2 ;;
    --rounds) need "$@"; rounds=$2; shift 2 ;;
    --sizes) need "$@"; sizes=$2; shift 2 ;;
    --speed-seconds) need "$@"; speed_seconds=$2; shift 2 ;;
    --no-speed) speed=0; shift ;;
    --markdown) need "$@"; markdown=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "bench_bssl.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) [ -z "$bssl" ] || { echo "bench_bssl.sh: one BSSL_BINARY only" >&2; exit 2; }
       bssl=$1; shift ;;
  esac
done
case "$rounds" in ''|*[!0-9]*|0) echo "bench_bssl.sh: --rounds takes a positive number" >&2; exit 2 ;; esac
case "$speed_seconds" in ''|*[!0-9]*|0) echo "bench_bssl.sh: --speed-seconds takes a positive whole number" >&2; exit 2 ;; esac
for s in $sizes; do
  case "$s" in *[!0-9]*|0) echo "bench_bssl.sh: --sizes takes positive numbers" >&2; exit 2 ;; esac
done
[ -n "$sizes" ] || { echo "bench_bssl.sh: --sizes is empty" >&2; exit 2; }
[ -n "$bssl" ] || { echo "bench_bssl.sh: give the path of a BoringSSL bssl_bench or bssl binary (see --help)" >&2; exit 2; }
[ -x "$bssl" ] || { echo "bench_bssl.sh: $bssl is not an executable" >&2; exit 2; }
[ -d "$build" ] || { echo "bench_bssl.sh: build tree $build not found (build first)" >&2; exit 1; }
build=$(cd "$build" && pwd)
pairbench=$build/bin/evp_pairbench
module=$build/lib/accelcrypt.so
for f in "$pairbench" "$module"; do
  [ -e "$f" ] || { echo "bench_bssl.sh: $f not found (build first)" >&2; exit 1; }
done
export ACCELCRYPT_BACKEND_DIR="$build/lib/accelcrypt/backends"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/accelcrypt-bssl.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=scripts/speed_cnf.sh
. "$root/scripts/speed_cnf.sh"
accelcrypt_write_speed_cnfs "$tmp" "$module"
printf '[accelcrypt]\n' > "$tmp/settings.cnf"
export ACCELCRYPT_CONF="$tmp/settings.cnf"
mkdir "$tmp/stats"
# record KIND SIZE NS: one figure (ns per message); the table keeps the
# smallest per kind and size.
: > "$tmp/results"
record() { echo "$1 $2 $3" >> "$tmp/results"; }

# Which BoringSSL tool this is.
if "$bssl" --help 2>&1 | grep -q 'benchmark_filter'; then
  mode=bench
elif "$bssl" speed -filter NO-SUCH-ALGORITHM -timeout 0.01 > /dev/null 2>&1; then
  mode=speed
else
  echo "bench_bssl.sh: $bssl is neither bssl_bench nor a bssl with 'speed'" >&2
  exit 2
fi

# bssl_round: BoringSSL's AES-128-GCM seal at every size.
bssl_round() {
  local out=$tmp/bssl.out s alt
  if [ "$mode" = bench ]; then
    alt=$(echo "$sizes" | tr -s ' ' '|')
    local -a sizeargs=()
    for s in $sizes; do sizeargs+=(--input-size "$s"); done
    "$bssl" "${sizeargs[@]}" --benchmark_filter="^BM_SpeedAEAD/seal_aes_128_gcm/(InputSize:)?($alt)\$" \
      --benchmark_min_time=0.02s --benchmark_repetitions=20 --benchmark_format=csv \
      > "$out" 2> "$tmp/bssl.err" ||
      { cat "$tmp/bssl.err" >&2; echo "bench_bssl.sh: $bssl failed" >&2; exit 1; }
    # name,iterations,real_time,cpu_time,time_unit,...
    awk -F, '$1 ~ /^"?BM_SpeedAEAD\/seal_aes_128_gcm\/(InputSize:)?[0-9]+"?$/ {
               n = $1; gsub(/"/, "", n); sub(/.*[/:]/, "", n)
               t = $3; u = $5
               if (u == "us") t *= 1e3; else if (u == "ms") t *= 1e6; else if (u == "s") t *= 1e9
               c = $4
               if (u == "us") c *= 1e3; else if (u == "ms") c *= 1e6; else if (u == "s") c *= 1e9
               print "bssl-wall", n, t; print "bssl", n, c }' "$out" >> "$tmp/results"
  else
    "$bssl" speed -filter AES-128-GCM -timeout 1 -chunks "$(echo "$sizes" | tr -s ' ' ',')" > "$out" 2>&1 ||
      { cat "$out" >&2; echo "bench_bssl.sh: $bssl speed failed" >&2; exit 1; }
    # "Did 123 AES-128-GCM (16 bytes) seal operations in 1000000us (...)"
    sed -nE 's/^Did ([0-9]+) AES-128-GCM \(([0-9]+) bytes?\) seal operations in ([0-9]+)us.*/\1 \2 \3/p' "$out" |
      awk '{ print "bssl", $2, $3 * 1000 / $1 }' >> "$tmp/results"
  fi
  for s in $sizes; do
    grep -q "^bssl $s " "$tmp/results" ||
      { cat "$out" >&2; echo "bench_bssl.sh: no BoringSSL figure for $s bytes" >&2; exit 1; }
  done
}

# pairbench_round CASE: default and accelcrypt in one process, every size.
pairbench_round() {
  local c=$1 s line
  for s in $sizes; do
    line=$(ACCELCRYPT_STATS_DIR="$tmp/stats" \
           "$pairbench" "$tmp/default.cnf" "$tmp/accelcrypt.cnf" "$c" "$s" 20 2>&1) ||
      { echo "bench_bssl.sh: evp_pairbench $c $s failed: $line" >&2; exit 1; }
    # "CASE N B: A x ns (median m), B y ns (median n), ratio ..."
    sed -nE 's/.*: A ([0-9.]+) ns \(median [0-9.]+\), B ([0-9.]+) ns.*/\1 \2/p' <<< "$line" |
      awk -v c="$c" -v s="$s" '{ print "pb-default." c, s, $1; print "pb-accel." c, s, $2 }' >> "$tmp/results"
    grep -q "^pb-accel.$c $s " "$tmp/results" ||
      { echo "bench_bssl.sh: cannot read evp_pairbench's line: $line" >&2; exit 1; }
  done
}

# speed_round SIDE: openssl speed -evp aes-128-gcm through SIDE's config.
speed_round() {
  local side=$1 s bps
  for s in $sizes; do
    if ! ACCELCRYPT_STATS_DIR="$tmp/stats" OPENSSL_CONF="$tmp/$side.cnf" \
         openssl speed -mr -seconds "$speed_seconds" -bytes "$s" \
         -evp aes-128-gcm > "$tmp/speed.out" 2>&1; then
      tail -n 5 "$tmp/speed.out" >&2
      echo "bench_bssl.sh: openssl speed ($side, $s B) failed" >&2
      exit 1
    fi
    bps=$(awk -F: '/^\+F:/ { print $NF; exit }' "$tmp/speed.out")
    [ -n "$bps" ] || { echo "bench_bssl.sh: no result from openssl speed ($side, $s B)" >&2; exit 1; }
    awk -v side="$side" -v s="$s" -v b="$bps" 'BEGIN { if (b > 0) print "speed-" side, s, s * 1e9 / b }' >> "$tmp/results"
  done
}

cases=(aes-128-gcm)
if "$pairbench" "$tmp/default.cnf" "$tmp/default.cnf" aes-128-gcm-ivonly 16 1 > /dev/null 2>&1; then
  cases+=(aes-128-gcm-ivonly)
fi
echo "accelcrypt vs BoringSSL, AES-128-GCM seal per message: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')" \
     "(family $(grep -m1 'cpu family' /proc/cpuinfo | sed 's/.*: //'), model $(grep -m1 '^model[[:space:]]*:' /proc/cpuinfo | sed 's/.*: //'), $(nproc) online)"
echo "  BoringSSL: $bssl ($mode)$(git -C "$(dirname "$bssl")/.." log -1 --format=' at %h' 2>/dev/null || true)"
echo "  accelcrypt: $module (every backend, default routing); evp_pairbench cases: ${cases[*]}; $(openssl version)"
echo "  $rounds rounds, alternating; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$rounds"); do
  printf '  round %d/%d:' "$r" "$rounds" >&2
  if [ $((r % 2)) -eq 1 ]; then first=bssl; else first=ours; fi
  for part in $first $([ "$first" = bssl ] && echo ours || echo bssl); do
    if [ "$part" = bssl ]; then
      printf ' BoringSSL' >&2
      bssl_round
    else
      printf ' pairbench' >&2
      for c in "${cases[@]}"; do pairbench_round "$c"; done
      if [ "$speed" -eq 1 ]; then
        printf ' speed' >&2
        speed_round default
        speed_round accelcrypt
      fi
    fi
  done
  printf '\n' >&2
done
echo "  load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
# The accelcrypt runs went through accelcrypt (its statistics count
# AES-128-GCM operations).
"$build/bin/accelcrypt" stats "$tmp/stats" 2>/dev/null | grep -Eq '^[a-z0-9_]+ +AES-128-GCM +[1-9]' || {
  echo "bench_bssl.sh: accelcrypt's statistics show no AES-128-GCM operation: the accelcrypt side did not go through it" >&2
  exit 1
}

# Table: the fastest round per figure.
best() { awk -v k="$1" -v s="$2" '$1 == k && $2 == s { if (m == "" || $3 < m) m = $3 } END { print (m == "" ? "-" : m) }' "$tmp/results"; }
cols=(bssl)
heads=("BoringSSL")
for c in "${cases[@]}"; do
  cols+=("pb-default.$c" "pb-accel.$c")
  suffix=${c#aes-128-gcm}
  heads+=("default${suffix:+ ${suffix#-}}" "accelcrypt${suffix:+ ${suffix#-}}")
done
if [ "$speed" -eq 1 ]; then cols+=(speed-default speed-accelcrypt); heads+=("speed default" "speed accelcrypt"); fi
: > "$tmp/rows"
for s in $sizes; do
  line="$s"
  for k in "${cols[@]}"; do line="$line $(best "$k" "$s")"; done
  echo "$line" >> "$tmp/rows"
done
echo
echo "ns per message (fastest round; BoringSSL$([ "$mode" = bench ] && echo ' CPU time')); pairbench columns: key+IV every message (openssl speed's shape)$([ ${#cases[@]} -gt 1 ] && echo ', -ivonly: keyed once, a new IV per message (TLS 1.3 records, BoringSSL'"'"'s shape)')"
{
  printf '%-7s' bytes
  for h in "${heads[@]}"; do printf ' %18s' "$h"; done
  printf '\n'
  while read -r -a v; do
    printf '%-7s' "${v[0]}"
    for ((i = 1; i < ${#v[@]}; i++)); do printf ' %18.1f' "${v[$i]}"; done
    printf '\n'
  done < "$tmp/rows"
}
echo
echo "ratio = BoringSSL ns / ns (1.0 = as fast as BoringSSL, < 1.0 slower)"
{
  printf '%-7s' bytes
  for ((i = 1; i < ${#heads[@]}; i++)); do printf ' %18s' "${heads[$i]}"; done
  printf '\n'
  while read -r -a v; do
    printf '%-7s' "${v[0]}"
    for ((i = 2; i < ${#v[@]}; i++)); do
      awk -v b="${v[1]}" -v x="${v[$i]}" 'BEGIN { printf " %18.3f", (x > 0 ? b / x : 0) }'
    done
    printf '\n'
  done < "$tmp/rows"
}
if [ "$mode" = bench ]; then
  printf '\nBoringSSL wall time per message (bssl_bench real_time, fastest):'
  for s in $sizes; do printf ' %s B %.1f ns;' "$s" "$(best bssl-wall "$s")"; done
  printf '\n'
fi
if [ -n "$markdown" ]; then
  {
    printf '| bytes | BoringSSL ns'
    for ((i = 1; i < ${#heads[@]}; i++)); do printf ' | %s ns (ratio)' "${heads[$i]}"; done
    printf ' |\n| ---:'
    for ((i = 0; i < ${#heads[@]}; i++)); do printf ' | ---:'; done
    printf ' |\n'
    while read -r -a v; do
      printf '| %s | %.1f' "${v[0]}" "${v[1]}"
      for ((i = 2; i < ${#v[@]}; i++)); do
        awk -v b="${v[1]}" -v x="${v[$i]}" 'BEGIN { printf " | %.1f (%.3f)", x, (x > 0 ? b / x : 0) }'
      done
      printf ' |\n'
    done < "$tmp/rows"
  } > "$markdown"
  echo "(Markdown table written to $markdown)"
fi
