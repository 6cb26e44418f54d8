#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Side-by-side throughput: `openssl speed -elapsed -bytes SIZE -evp ALG`
# through accelcrypt (software backend only, preferred by
# default_properties) and through OpenSSL's default provider alone, the two
# back to back for each block size (16 B .. 16 KiB), best of the rounds.
# Prints MB/s per block size and the ratio accelcrypt/default. The machine
# is shared and noisy: read ratios, not absolute numbers (and see
# scripts/pairbench.sh for a steadier in-process measurement).
#
# Usage: bench.sh [--module PATH] [--seconds N] [--rounds N] [--quick]
#                 [--alg NAME]... [--markdown FILE] [--svg FILE]
#   --module    accelcrypt.so (default: $ACCELCRYPT_MODULE, build/lib, then
#               OpenSSL's modules directory)
#   --seconds   seconds per block size per run (default 2)
#   --rounds    rounds per algorithm and block size (default 2)
#   --quick     --seconds 1 --rounds 1 (about a minute)
#   --alg       aes-128-cbc, aes-128-ctr, aes-256-gcm, sha256 (default: all)
#   --markdown  also write the table as Markdown to FILE
#   --svg       also draw the ratios as an SVG bar chart into FILE
# Exit codes: 0 ran (ratios below target are reported, not fatal), 1 a run
# failed or did not go through accelcrypt, 2 usage.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
module=${ACCELCRYPT_MODULE:-}
seconds=2
rounds=2
algs=()
markdown=""
svg=""
while [ $# -gt 0 ]; do
  case "$1" in
    --module) module=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --quick) seconds=1; rounds=1; shift ;;
    --alg) algs+=("$2"); shift 2 ;;
    --markdown) markdown=$2; shift 2 ;;
    --svg) svg=$2; shift 2 ;;
    -h|--help) sed -n '3,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$seconds" in ''|*[!0-9]*) echo "bench.sh: --seconds takes a whole number" >&2; exit 2 ;; esac
case "$rounds" in ''|*[!0-9]*|0) echo "bench.sh: --rounds takes a positive number" >&2; exit 2 ;; esac
[ ${#algs[@]} -gt 0 ] || algs=(aes-128-cbc aes-128-ctr aes-256-gcm sha256)
if [ -z "$module" ]; then
  if [ -f "$root/build/lib/accelcrypt.so" ]; then
    module=$root/build/lib/accelcrypt.so
  else
    mdir=$(openssl version -m | sed -n 's/^MODULESDIR: "\(.*\)"$/\1/p')
    module=$mdir/accelcrypt.so
  fi
fi
[ -f "$module" ] || { echo "bench.sh: provider $module not found (build it or pass --module)" >&2; exit 1; }
# OpenSSL resolves a relative module path against its own modules directory.
module=$(cd "$(dirname "$module")" && pwd)/$(basename "$module")

tmp=$(mktemp -d "${TMPDIR:-/tmp}/accelcrypt-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# From the script's own directory: bench.sh is also installed, next to it.
# shellcheck source=scripts/speed_cnf.sh
. "$(dirname "${BASH_SOURCE[0]}")/speed_cnf.sh"
accelcrypt_write_speed_cnfs "$tmp" "$module"
# Software backend only, whatever else is installed.
printf '[accelcrypt]\nbackends = software\n' > "$tmp/accelcrypt-settings.cnf"

sizes="16 64 256 1024 8192 16384"

# speed_run CONFIG ALG SIZE OUT: one `openssl speed -mr -bytes SIZE` run;
# writes "size bytes_per_second" to OUT.
speed_run() {
  local conf=$1 alg=$2 size=$3 out=$4 raw
  raw="$out.raw"
  if ! OPENSSL_CONF=$conf ACCELCRYPT_CONF="$tmp/accelcrypt-settings.cnf" \
       openssl speed -mr -elapsed -seconds "$seconds" -bytes "$size" \
       -evp "$alg" > "$raw" 2>&1; then
    echo "bench.sh: openssl speed -evp $alg -bytes $size failed:" >&2
    tail -n 5 "$raw" >&2
    return 1
  fi
  awk -F: '/^\+H:/ { for (i = 2; i <= NF; i++) size[i] = $i; n = NF }
           /^\+F:/ { for (i = 4; i <= NF; i++) print size[i - 2], $i }' "$raw" > "$out"
  [ -s "$out" ] || { echo "bench.sh: no results from openssl speed -evp $alg" >&2; return 1; }
}

# best FILE RESULT: keeps, per size, the larger figure of FILE and RESULT
# (one "size bytes_per_second" line).
best() {
  local file=$1 result=$2
  touch "$file"
  awk 'NR == FNR { size = $1; v = $2; next }
       $1 == size { if (v > $2) $2 = v; found = 1 }
       { print }
       END { if (!found) print size, v }' "$result" "$file" | sort -n > "$file.tmp"
  mv "$file.tmp" "$file"
}

echo "accelcrypt bench: openssl speed -elapsed -seconds $seconds -bytes SIZE -evp ALG, $rounds round(s), the two sides alternating per size"
echo "  accelcrypt: $module (backends = software, default_properties = ?provider=accelcrypt)"
echo "  default:    OpenSSL's default provider only"
echo "  $(openssl version)"
rows="$tmp/rows"
: > "$rows"
for alg in "${algs[@]}"; do
  mkdir -p "$tmp/stats"
  for r in $(seq 1 "$rounds"); do
    printf '  %-12s round %d/%d:' "$alg" "$r" "$rounds" >&2
    # Per block size, the two sides back to back (their order swapped every
    # round), so both see the same host load.
    for size in $sizes; do
      printf ' %s' "$size" >&2
      sides="default accelcrypt"
      [ $((r % 2)) -eq 0 ] && sides="accelcrypt default"
      for side in $sides; do
        if [ "$side" = default ]; then
          speed_run "$tmp/default.cnf" "$alg" "$size" "$tmp/run"
          best "$tmp/default.$alg" "$tmp/run"
        else
          ACCELCRYPT_STATS_DIR="$tmp/stats" \
            speed_run "$tmp/accelcrypt.cnf" "$alg" "$size" "$tmp/run"
          best "$tmp/accel.$alg" "$tmp/run"
        fi
      done
    done
    printf '\n' >&2
  done
  # Prove the accelcrypt runs went through accelcrypt's software backend.
  canon=$(echo "$alg" | tr '[:lower:]' '[:upper:]' | sed 's/^SHA256$/SHA2-256/')
  stats=$(cat "$tmp"/stats/*.json 2>/dev/null || true)
  if ! grep -q "\"$canon\"" <<< "$stats" || ! grep -q '"software"' <<< "$stats"; then
    echo "bench.sh: the accelcrypt runs of $alg did not go through accelcrypt's software backend (stats: ${stats:-none})" >&2
    exit 1
  fi
  rm -rf "$tmp/stats"
  paste -d' ' "$tmp/default.$alg" "$tmp/accel.$alg" |
    awk -v alg="$alg" '{ printf "%s %s %.1f %.1f %.3f\n", alg, $1, $2 / 1e6, $4 / 1e6, ($2 > 0 ? $4 / $2 : 0) }' >> "$rows"
done

echo
awk 'BEGIN { printf "%-12s %7s %14s %14s %7s  %s\n", "algorithm", "bytes", "default MB/s", "accelcrypt MB/s", "ratio", "target" }
     { target = ($2 <= 16) ? 0.95 : ($2 >= 1024 ? 0.99 : 0);
       note = target == 0 ? "" : ($5 >= target ? "ok (>= " target ")" : "BELOW " target);
       printf "%-12s %7d %14.1f %14.1f %7.3f  %s\n", $1, $2, $3, $4, $5, note }' "$rows"
below=$(awk '{ t = ($2 <= 16) ? 0.95 : ($2 >= 1024 ? 0.99 : 0); if (t > 0 && $5 < t) n++ } END { print n + 0 }' "$rows")
echo
echo "ratio = accelcrypt / default (best of $rounds round(s)); $below cell(s) below target"

if [ -n "$markdown" ]; then
  {
    echo "| algorithm | bytes | default MB/s | accelcrypt MB/s | ratio |"
    echo "| --- | ---: | ---: | ---: | ---: |"
    awk '{ printf "| %s | %d | %.1f | %.1f | %.3f |\n", $1, $2, $3, $4, $5 }' "$rows"
  } > "$markdown"
  echo "(Markdown table written to $markdown)"
fi

if [ -n "$svg" ]; then
  # One group of bars per algorithm, one bar per block size, height = ratio;
  # the dashed line is parity (1.0).
  awk -v title="accelcrypt / default provider throughput ratio ($(openssl version | awk '{print $1, $2}'))" '
    { alg[NR] = $1; size[NR] = $2; ratio[NR] = $5; n = NR
      if (!($1 in seen)) { seen[$1] = ++groups; names[groups] = $1 } }
    END {
      bw = 18; gap = 30; top = 40; h = 240; maxr = 1.5
      w = 60 + n * bw + groups * gap + 20; if (w < 520) w = 520
      printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"11\">\n", w, top + h + 60
      printf "<text x=\"10\" y=\"20\" font-size=\"14\">%s</text>\n", title
      for (t = 0; t <= maxr + 0.001; t += 0.25) {
        y = top + h - t / maxr * h
        printf "<line x1=\"50\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>", w - 10, y, y
        printf "<text x=\"45\" y=\"%.1f\" text-anchor=\"end\">%.2f</text>\n", y + 4, t
      }
      y1 = top + h - 1 / maxr * h
      printf "<line x1=\"50\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#000\" stroke-dasharray=\"4,3\"/>\n", w - 10, y1, y1
      x = 60; g = 0
      for (i = 1; i <= n; i++) {
        if (i == 1 || alg[i] != alg[i - 1]) {
          if (i > 1) x += gap
          printf "<text x=\"%d\" y=\"%d\">%s</text>\n", x, top + h + 40, alg[i]
        }
        r = ratio[i] > maxr ? maxr : ratio[i]
        bh = r / maxr * h
        color = ratio[i] >= 0.99 ? "#4a8" : (ratio[i] >= 0.95 ? "#db4" : "#c54")
        printf "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" fill=\"%s\"><title>%s %d B: %.3f</title></rect>\n", x, top + h - bh, bw - 3, bh, color, alg[i], size[i], ratio[i]
        printf "<text x=\"%d\" y=\"%d\" font-size=\"8\" transform=\"rotate(60 %d %d)\">%d</text>\n", x + 2, top + h + 10, x + 2, top + h + 10, size[i]
        x += bw
      }
      print "</svg>"
    }' "$rows" > "$svg"
  echo "(SVG chart written to $svg)"
fi
