#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# x86 backend throughput (issue 6): `openssl speed -elapsed -evp ALG` through
# accelcrypt with `backends = x86, software` (policy = priority: x86 serves
# everything it declares) against OpenSSL's default provider alone, run
# alternately in one run, best of the rounds per block size; optionally also
# with `policy = fastest` after an `accelcrypt calibrate` of x86 and software.
# Prints MB/s per block size and the ratios to default. Every accelcrypt run
# is checked (stats) to have gone through the backend it claims.
#
# Usage: bench_x86.sh [--module PATH] [--cli PATH] [--backend-dir DIR]
#                     [--seconds N] [--rounds N] [--alg CASE]... [--fastest]
#                     [--cpu-time] [--markdown FILE]
#   --module       accelcrypt.so (default: $ACCELCRYPT_MODULE, else build/lib)
#   --cli          accelcrypt binary for --fastest (default: next to the
#                  module's ../bin, else `accelcrypt` on PATH)
#   --backend-dir  backend modules (default: <module dir>/accelcrypt/backends)
#   --seconds      seconds per block size per openssl speed run (default 2)
#   --rounds       alternating rounds per case (default 2)
#   --alg          aes-128-ctr, aes-128-gcm, aes-128-cbc, aes-128-cbc-dec,
#                  sha256 (default: all five; -dec runs `openssl speed -decrypt`)
#   --fastest      also run with policy = fastest (calibrates first, ~20 s)
#   --cpu-time     drop -elapsed: openssl speed divides by its CPU time, which
#                  on a shared, busy machine is steadier than wall-clock time
#   --markdown     also write the table as Markdown to FILE
# Exit codes: 0 ran (ratios are reported, not judged), 1 a run failed or did
# not go through the expected backend, 2 usage.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
module=${ACCELCRYPT_MODULE:-}
cli=""
backend_dir=""
seconds=2
rounds=2
cases=()
fastest=0
markdown=""
timing=-elapsed
while [ $# -gt 0 ]; do
  case "$1" in
    --module) module=$2; shift 2 ;;
    --cli) cli=$2; shift 2 ;;
    --backend-dir) backend_dir=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --alg) cases+=("$2"); shift 2 ;;
    --fastest) fastest=1; shift ;;
    --cpu-time) timing=""; shift ;;
    --markdown) markdown=$2; shift 2 ;;
    -h|--help) sed -n '3,29p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench_x86.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$seconds" in ''|*[!0-9]*|0) echo "bench_x86.sh: --seconds takes a positive whole number" >&2; exit 2 ;; esac
case "$rounds" in ''|*[!0-9]*|0) echo "bench_x86.sh: --rounds takes a positive number" >&2; exit 2 ;; esac
[ ${#cases[@]} -gt 0 ] || cases=(aes-128-ctr aes-128-gcm aes-128-cbc aes-128-cbc-dec sha256)
for c in "${cases[@]}"; do
  case "$c" in
    aes-128-ctr|aes-128-gcm|aes-128-cbc|aes-128-cbc-dec|sha256) ;;
    *) echo "bench_x86.sh: unknown case '$c' (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$module" ] || module=$root/build/lib/accelcrypt.so
[ -f "$module" ] || { echo "bench_x86.sh: provider $module not found (build it or pass --module)" >&2; exit 1; }
module=$(cd "$(dirname "$module")" && pwd)/$(basename "$module")
[ -n "$backend_dir" ] || backend_dir=$(dirname "$module")/accelcrypt/backends
[ -f "$backend_dir/x86.so" ] || { echo "bench_x86.sh: no x86.so in $backend_dir (pass --backend-dir)" >&2; exit 1; }
if [ "$fastest" = 1 ]; then
  if [ -z "$cli" ]; then
    cli=$(dirname "$(dirname "$module")")/bin/accelcrypt
    [ -x "$cli" ] || cli=$(command -v accelcrypt || true)
  fi
  [ -n "$cli" ] && [ -x "$cli" ] || { echo "bench_x86.sh: accelcrypt binary not found (pass --cli)" >&2; exit 1; }
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/accelcrypt-bench-x86.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# shellcheck source=scripts/speed_cnf.sh
. "$(dirname "${BASH_SOURCE[0]}")/speed_cnf.sh"
accelcrypt_write_speed_cnfs "$tmp" "$module"
printf '[accelcrypt]\nbackend_dir = %s\nbackends = x86, software\npolicy = priority\n' \
  "$backend_dir" > "$tmp/priority.settings"
printf '[accelcrypt]\nbackend_dir = %s\nbackends = x86, software\npolicy = fastest\ncalibration_file = %s\n' \
  "$backend_dir" "$tmp/calibration.json" > "$tmp/fastest.settings"

# speed_run CONFIG SETTINGS CASE OUT: one `openssl speed -mr` run; writes
# "size bytes_per_second" lines to OUT.
speed_run() {
  local conf=$1 settings=$2 case=$3 out=$4 alg=$3 extra=()
  if [ "$case" = aes-128-cbc-dec ]; then alg=aes-128-cbc; extra=(-decrypt); fi
  if ! OPENSSL_CONF=$conf ACCELCRYPT_CONF=$settings \
       openssl speed -mr $timing -seconds "$seconds" "${extra[@]}" -evp "$alg" \
       > "$out.raw" 2>&1; then
    echo "bench_x86.sh: openssl speed ${extra[*]} -evp $alg failed:" >&2
    tail -n 5 "$out.raw" >&2
    return 1
  fi
  awk -F: '/^\+H:/ { for (i = 2; i <= NF; i++) size[i] = $i }
           /^\+F:/ { for (i = 4; i <= NF; i++) print size[i - 2], $i }' "$out.raw" > "$out"
  [ -s "$out" ] || { echo "bench_x86.sh: no results from openssl speed -evp $alg" >&2; return 1; }
}

# best A B: per size, the larger of two result files.
best() {
  if [ ! -f "$1" ]; then cp "$2" "$1"; return; fi
  paste -d' ' "$1" "$2" | awk '{ print $1, ($2 > $4 ? $2 : $4) }' > "$1.tmp"
  mv "$1.tmp" "$1"
}

# served_by STATS_DIR ALG: the backends the stats files show serving ALG
# with bytes > 0 (one per line).
served_by() {
  python3 - "$1" "$2" <<'PY'
import glob, json, sys
d, alg = sys.argv[1], sys.argv[2].upper().replace("-DEC", "")
names = {alg, alg.replace("SHA256", "SHA2-256"), alg.replace("SHA2-256", "SHA256")}
seen = set()
for f in glob.glob(d + "/*.json"):
    try:
        j = json.load(open(f))
    except Exception:
        continue
    for backend, algs in j.get("backends", {}).items():
        for a, cell in algs.items():
            if a.upper() in names and cell.get("bytes", 0) > 0:
                seen.add(backend)
print("\n".join(sorted(seen)))
PY
}

if [ "$fastest" = 1 ]; then
  echo "calibrating x86 and software (accelcrypt calibrate) ..." >&2
  cal_algs=aes-128-ctr,aes-128-gcm,aes-128-cbc,sha256
  if ! "$cli" calibrate --backend-dir "$backend_dir" --backends x86,software \
       --alg "$cal_algs" -o "$tmp/calibration.json" > "$tmp/calibrate.out" 2> "$tmp/calibrate.err"; then
    cat "$tmp/calibrate.err" >&2
    echo "bench_x86.sh: accelcrypt calibrate failed" >&2
    exit 1
  fi
  sed 's/^/  /' "$tmp/calibrate.out" | sed '/^  $/d' | sed '/^  wrote/,$d'
fi

echo "accelcrypt x86 bench: openssl speed ${timing:+$timing }-seconds $seconds -evp ALG, $rounds round(s), alternating"
echo "  x86:        $module, backends = x86, software, policy = priority"
[ "$fastest" = 0 ] || echo "  fastest:    the same with policy = fastest (calibration above)"
echo "  default:    OpenSSL's default provider only"
echo "  $(openssl version); $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')"
rows="$tmp/rows"
: > "$rows"
for c in "${cases[@]}"; do
  modes=(default x86)
  [ "$fastest" = 0 ] || modes+=(fastest)
  for r in $(seq 1 "$rounds"); do
    printf '  %-16s round %d/%d:' "$c" "$r" "$rounds" >&2
    for m in "${modes[@]}"; do
      printf ' %s' "$m" >&2
      case "$m" in
        default) speed_run "$tmp/default.cnf" "$tmp/priority.settings" "$c" "$tmp/run" ;;
        x86)
          mkdir -p "$tmp/stats.x86"
          ACCELCRYPT_STATS_DIR="$tmp/stats.x86" speed_run "$tmp/accelcrypt.cnf" "$tmp/priority.settings" "$c" "$tmp/run" ;;
        fastest)
          mkdir -p "$tmp/stats.fastest"
          ACCELCRYPT_STATS_DIR="$tmp/stats.fastest" speed_run "$tmp/accelcrypt.cnf" "$tmp/fastest.settings" "$c" "$tmp/run" ;;
      esac
      best "$tmp/$m.$c" "$tmp/run"
    done
    printf '\n' >&2
  done
  served=$(served_by "$tmp/stats.x86" "$c")
  if ! grep -qx x86 <<< "$served"; then
    echo "bench_x86.sh: the x86 runs of $c were not served by the x86 backend (served by: ${served:-nothing})" >&2
    exit 1
  fi
  fserved=""
  if [ "$fastest" = 1 ]; then
    fserved=$(served_by "$tmp/stats.fastest" "$c" | paste -sd+)
    [ -n "$fserved" ] || { echo "bench_x86.sh: the fastest runs of $c did not go through accelcrypt" >&2; exit 1; }
  fi
  rm -rf "$tmp/stats.x86" "$tmp/stats.fastest"
  if [ "$fastest" = 1 ]; then
    paste -d' ' "$tmp/default.$c" "$tmp/x86.$c" "$tmp/fastest.$c" |
      awk -v c="$c" -v fs="$fserved" '{ printf "%s %s %.1f %.1f %.3f %.1f %.3f %s\n", c, $1, $2 / 1e6, $4 / 1e6, $4 / $2, $6 / 1e6, $6 / $2, fs }' >> "$rows"
  else
    paste -d' ' "$tmp/default.$c" "$tmp/x86.$c" |
      awk -v c="$c" '{ printf "%s %s %.1f %.1f %.3f\n", c, $1, $2 / 1e6, $4 / 1e6, $4 / $2 }' >> "$rows"
  fi
done

echo
if [ "$fastest" = 1 ]; then
  awk 'BEGIN { printf "%-16s %6s %12s %12s %7s %12s %7s  %s\n", "case", "bytes", "default MB/s", "x86 MB/s", "ratio", "fastest MB/s", "ratio", "fastest served by" }
       { printf "%-16s %6d %12.1f %12.1f %7.3f %12.1f %7.3f  %s\n", $1, $2, $3, $4, $5, $6, $7, $8 }' "$rows"
else
  awk 'BEGIN { printf "%-16s %6s %12s %12s %7s\n", "case", "bytes", "default MB/s", "x86 MB/s", "ratio" }
       { printf "%-16s %6d %12.1f %12.1f %7.3f\n", $1, $2, $3, $4, $5 }' "$rows"
fi
echo
echo "ratio = accelcrypt / default provider, best of $rounds round(s) each, alternating"

if [ -n "$markdown" ]; then
  {
    if [ "$fastest" = 1 ]; then
      echo "| case | bytes | default MB/s | x86 MB/s | ratio | fastest MB/s | ratio | fastest served by |"
      echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
      awk '{ printf "| %s | %d | %.1f | %.1f | %.3f | %.1f | %.3f | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8 }' "$rows"
    else
      echo "| case | bytes | default MB/s | x86 MB/s | ratio |"
      echo "| --- | ---: | ---: | ---: | ---: |"
      awk '{ printf "| %s | %d | %.1f | %.1f | %.3f |\n", $1, $2, $3, $4, $5 }' "$rows"
    fi
  } > "$markdown"
  echo "(Markdown table written to $markdown)"
fi
