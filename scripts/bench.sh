#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Side-by-side throughput, two tables:
#   overhead      `openssl speed -elapsed -bytes SIZE -evp ALG` through
#                 accelcrypt with its software backend only (OpenSSL's own
#                 code behind accelcrypt's layers) vs OpenSSL's default
#                 provider alone: the cost of the layers, ideal 1.0;
#   acceleration  the same through accelcrypt as installed (every backend,
#                 the default routing: policy auto with this machine's
#                 calibration if there is one) vs the default provider,
#                 with the backend that served each size and, where a
#                 ceiling tool exists, the CPU's instruction ceiling.
# The sides run back to back for each block size (16 B .. 16 KiB), best of
# the rounds. Prints MB/s and ratios (accelcrypt/default). The machine is
# shared and noisy: read ratios, not absolute numbers (and see
# scripts/pairbench.sh for a steadier in-process measurement).
#
# Usage: bench.sh [--module PATH] [--seconds N] [--rounds N] [--quick]
#                 [--alg NAME]... [--overhead-only] [--ceiling PROG]
#                 [--markdown FILE] [--svg FILE]
#   --module    accelcrypt.so (default: $ACCELCRYPT_MODULE, build/lib, then
#               OpenSSL's modules directory)
#   --seconds   seconds per block size per run (default 2)
#   --rounds    rounds per algorithm and block size (default 2)
#   --quick     --seconds 1 --rounds 1
#   --alg       aes-128-cbc, aes-128-cbc-decrypt, aes-128-ctr, aes-128-gcm,
#               aes-256-gcm, sha256, ... (default: aes-128-cbc aes-128-ctr
#               aes-256-gcm sha256)
#   --overhead-only  only the overhead table (half the time)
#   --ceiling   a program printing the instruction ceiling of this CPU in
#               MB/s for `PROG ALG SIZE` (nothing, or a non-zero exit, where
#               it has no figure); default $ACCELCRYPT_CEILING, else
#               accelcrypt_ceiling next to the build's bin/ when present.
#               Without one the ceiling column shows "-".
#   --markdown  also write the tables as Markdown to FILE
#   --svg       also draw the overhead ratios as an SVG bar chart into FILE
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
overhead_only=0
ceiling=${ACCELCRYPT_CEILING:-}
while [ $# -gt 0 ]; do
  case "$1" in
    --module) module=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --quick) seconds=1; rounds=1; shift ;;
    --alg) algs+=("$2"); shift 2 ;;
    --markdown) markdown=$2; shift 2 ;;
    --svg) svg=$2; shift 2 ;;
    --overhead-only) overhead_only=1; shift ;;
    --ceiling) ceiling=$2; shift 2 ;;
    -h|--help) sed -n '3,39p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
# A build tree's module finds the build tree's backends.
if [ -z "${ACCELCRYPT_BACKEND_DIR:-}" ] && [ -d "$(dirname "$module")/accelcrypt/backends" ]; then
  export ACCELCRYPT_BACKEND_DIR="$(dirname "$module")/accelcrypt/backends"
fi
if [ -z "$ceiling" ] && [ -x "$(dirname "$module")/../bin/accelcrypt_ceiling" ]; then
  ceiling="$(dirname "$module")/../bin/accelcrypt_ceiling"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/accelcrypt-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# From the script's own directory: bench.sh is also installed, next to it.
# shellcheck source=scripts/speed_cnf.sh
. "$(dirname "${BASH_SOURCE[0]}")/speed_cnf.sh"
accelcrypt_write_speed_cnfs "$tmp" "$module"
# Software backend only, whatever else is installed (overhead: `interpose =
# all`, or the provider would leave every algorithm to the default
# provider); nothing set (acceleration: the default routing).
printf '[accelcrypt]\nbackends = software\ninterpose = all\n' > "$tmp/accelcrypt-settings.cnf"
printf '[accelcrypt]\n' > "$tmp/routed-settings.cnf"

sizes="16 64 256 1024 8192 16384"

# speed_run CONFIG ALG SIZE OUT [SETTINGS]: one `openssl speed -mr -bytes
# SIZE` run (ALG-decrypt: with -decrypt); writes "size bytes_per_second" to
# OUT.
speed_run() {
  local conf=$1 alg=$2 size=$3 out=$4 settings=${5:-$tmp/accelcrypt-settings.cnf} raw
  local evp=$alg dir=()
  case "$alg" in *-decrypt) evp=${alg%-decrypt}; dir=(-decrypt) ;; esac
  raw="$out.raw"
  if ! OPENSSL_CONF=$conf ACCELCRYPT_CONF="$settings" \
       openssl speed -mr -elapsed -seconds "$seconds" -bytes "$size" \
       "${dir[@]}" -evp "$evp" > "$raw" 2>&1; then
    echo "bench.sh: openssl speed ${dir[*]} -evp $evp -bytes $size failed:" >&2
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

# served_by DIR ALG: the backends whose statistics in DIR show ALG's bytes.
served_by() {
  local canon
  canon=$(echo "${2%-decrypt}" | tr '[:lower:]' '[:upper:]' | sed 's/^SHA256$/SHA2-256/')
  python3 - "$1" "$canon" <<'PY'
import glob, json, sys
seen = set()
for f in glob.glob(sys.argv[1] + "/*.json"):
    try:
        doc = json.load(open(f))
    except ValueError:
        continue
    for backend, algs in doc.get("backends", {}).items():
        if algs.get(sys.argv[2], {}).get("bytes", 0) > 0:
            seen.add(backend)
print("+".join(sorted(seen)) or "-")
PY
}

sides="default accelcrypt"
[ "$overhead_only" -eq 1 ] || sides="default accelcrypt routed"
echo "accelcrypt bench: openssl speed -elapsed -seconds $seconds -bytes SIZE -evp ALG, $rounds round(s), the sides alternating per size"
echo "  default:    OpenSSL's default provider only"
echo "  accelcrypt: $module (backends = software, default_properties = ?provider=accelcrypt): the overhead"
[ "$overhead_only" -eq 1 ] ||
  echo "  routed:     the same module, every backend, default routing (policy auto): the acceleration"
echo "  ceiling:    ${ceiling:-none (no ceiling tool: the column shows -)}"
echo "  $(openssl version)"
rows="$tmp/rows"
: > "$rows"
: > "$rows.routed"
for alg in "${algs[@]}"; do
  mkdir -p "$tmp/stats"
  for r in $(seq 1 "$rounds"); do
    printf '  %-12s round %d/%d:' "$alg" "$r" "$rounds" >&2
    # Per block size, the two sides back to back (their order swapped every
    # round), so both see the same host load.
    for size in $sizes; do
      printf ' %s' "$size" >&2
      order=$sides
      [ $((r % 2)) -eq 0 ] && order=$(echo "$sides" | tr ' ' '\n' | tac | tr '\n' ' ')
      for side in $order; do
        case "$side" in
          default)
            speed_run "$tmp/default.cnf" "$alg" "$size" "$tmp/run"
            best "$tmp/default.$alg" "$tmp/run" ;;
          accelcrypt)
            ACCELCRYPT_STATS_DIR="$tmp/stats" \
              speed_run "$tmp/accelcrypt.cnf" "$alg" "$size" "$tmp/run"
            best "$tmp/accel.$alg" "$tmp/run" ;;
          routed)
            mkdir -p "$tmp/rstats.$size"
            ACCELCRYPT_STATS_DIR="$tmp/rstats.$size" \
              speed_run "$tmp/accelcrypt.cnf" "$alg" "$size" "$tmp/run" "$tmp/routed-settings.cnf"
            best "$tmp/routed.$alg" "$tmp/run" ;;
        esac
      done
    done
    printf '\n' >&2
  done
  # Prove the accelcrypt runs went through accelcrypt's software backend.
  canon=$(echo "${alg%-decrypt}" | tr '[:lower:]' '[:upper:]' | sed 's/^SHA256$/SHA2-256/')
  stats=$(cat "$tmp"/stats/*.json 2>/dev/null || true)
  if ! grep -q "\"$canon\"" <<< "$stats" || ! grep -q '"software"' <<< "$stats"; then
    echo "bench.sh: the accelcrypt runs of $alg did not go through accelcrypt's software backend (stats: ${stats:-none})" >&2
    exit 1
  fi
  rm -rf "$tmp/stats"
  paste -d' ' "$tmp/default.$alg" "$tmp/accel.$alg" |
    awk -v alg="$alg" '{ printf "%s %s %.1f %.1f %.3f\n", alg, $1, $2 / 1e6, $4 / 1e6, ($2 > 0 ? $4 / $2 : 0) }' >> "$rows"
  [ "$overhead_only" -eq 1 ] && continue
  # Acceleration rows: who served each size (the routed runs' statistics)
  # and the ceiling where a tool gives one.
  while read -r size def_bps routed_bps; do
    by=$(served_by "$tmp/rstats.$size" "$alg")
    [ "$by" != "-" ] || { echo "bench.sh: the routed runs of $alg ($size B) did not go through accelcrypt" >&2; exit 1; }
    ceil=-
    if [ -n "$ceiling" ]; then
      ceil=$("$ceiling" "$alg" "$size" 2>/dev/null | head -n 1) || ceil=-
      case "$ceil" in ''|*[!0-9.]*) ceil=- ;; esac
    fi
    awk -v alg="$alg" -v size="$size" -v d="$def_bps" -v a="$routed_bps" -v by="$by" -v c="$ceil" \
      'BEGIN { printf "%s %s %.1f %.1f %.3f %s %s\n", alg, size, d / 1e6, a / 1e6, (d > 0 ? a / d : 0), by, c }' >> "$rows.routed"
  done < <(paste -d' ' "$tmp/default.$alg" "$tmp/routed.$alg" | awk '{ print $1, $2, $4 }')
  rm -rf "$tmp"/rstats.*
done

echo
echo "Overhead: accelcrypt (software backend only) vs the default provider, ideal 1.0"
awk 'BEGIN { printf "%-19s %7s %14s %14s %7s  %s\n", "algorithm", "bytes", "default MB/s", "accelcrypt MB/s", "ratio", "target" }
     { target = ($2 <= 16) ? 0.95 : ($2 >= 1024 ? 0.99 : 0);
       note = target == 0 ? "" : ($5 >= target ? "ok (>= " target ")" : "BELOW " target);
       printf "%-19s %7d %14.1f %14.1f %7.3f  %s\n", $1, $2, $3, $4, $5, note }' "$rows"
below=$(awk '{ t = ($2 <= 16) ? 0.95 : ($2 >= 1024 ? 0.99 : 0); if (t > 0 && $5 < t) n++ } END { print n + 0 }' "$rows")
echo
echo "ratio = accelcrypt / default (best of $rounds round(s)); $below cell(s) below target"
if [ "$overhead_only" -eq 0 ]; then
  echo
  echo "Acceleration: accelcrypt as routed by default (every backend) vs the default provider"
  awk 'BEGIN { printf "%-19s %7s %12s %12s %7s  %-10s %12s %7s\n", "algorithm", "bytes", "default MB/s", "routed MB/s", "ratio", "served by", "ceiling MB/s", "of ceil" }
       { pct = ($7 == "-" || $7 + 0 == 0) ? "-" : sprintf("%.0f%%", 100 * $4 / $7)
         printf "%-19s %7d %12.1f %12.1f %7.3f  %-10s %12s %7s\n", $1, $2, $3, $4, $5, $6, $7, pct }' "$rows.routed"
  echo
  echo "ratio = routed / default: above 1.0 the routed backend is faster than OpenSSL's own code here"
fi

if [ -n "$markdown" ]; then
  {
    echo "Overhead (software backend only vs default provider, ideal 1.0):"
    echo
    echo "| algorithm | bytes | default MB/s | accelcrypt MB/s | ratio |"
    echo "| --- | ---: | ---: | ---: | ---: |"
    awk '{ printf "| %s | %d | %.1f | %.1f | %.3f |\n", $1, $2, $3, $4, $5 }' "$rows"
    if [ "$overhead_only" -eq 0 ]; then
      echo
      echo "Acceleration (default routing vs default provider):"
      echo
      echo "| algorithm | bytes | default MB/s | routed MB/s | ratio | served by | ceiling MB/s |"
      echo "| --- | ---: | ---: | ---: | ---: | --- | ---: |"
      awk '{ printf "| %s | %d | %.1f | %.1f | %.3f | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7 }' "$rows.routed"
    fi
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
