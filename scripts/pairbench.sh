#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Provider overhead measured in one process: build/bin/evp_pairbench loads
# OpenSSL's default provider alone into one library context and accelcrypt
# (preferred by default_properties, as scripts/bench.sh configures it) into
# another, then times the same EVP calls as `openssl speed -evp` in ~20 ms
# rounds alternating between the two. The fastest round of each side gives
# the ratio. Host noise on a shared machine lasts less than `openssl
# speed`'s one-second windows but more than a round, so this ratio is far
# steadier than bench.sh's; bench.sh stays the end-to-end figure.
#
# Usage: pairbench.sh [--build DIR] [--alg NAME]... [--rounds N]
#                     [--backends LIST|all] [--sizes LIST] [--markdown FILE]
#   --build     build tree (default: $ACCELCRYPT_BUILD_DIR or build)
#   --alg       aes-128-cbc, aes-128-ctr, aes-256-gcm, aes-256-gcm-rekey (a
#               new key every message), sha256, any EVP cipher name
#               (aes-128-gcm), NAME-decrypt for a non-AEAD cipher's
#               decryption (aes-128-cbc-decrypt) (default: aes-128-cbc,
#               aes-128-ctr, aes-256-gcm, sha256)
#   --rounds    rounds per side and size (default 40)
#   --backends  accelcrypt's `backends` setting, with `interpose = all`
#               (default: software, the overhead); `all`: none set, every
#               backend loads and the default routing (policy auto) and
#               offering (interpose = wins) choose, as installed
#   --sizes     bytes per call, a quoted list (default "16 64 256 1024 8192
#               16384")
#   --markdown  also write the table as Markdown to FILE
# Exit codes: 0 ran (ratios below target are reported, not fatal), 1 a run
# failed, 2 usage.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${ACCELCRYPT_BUILD_DIR:-$root/build}
algs=()
rounds=40
backends=software
sizes="16 64 256 1024 8192 16384"
markdown=
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --alg) algs+=("$2"); shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --backends) backends=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --markdown) markdown=$2; shift 2 ;;
    -h|--help) sed -n '3,30p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "pairbench.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$rounds" in ''|*[!0-9]*|0) echo "pairbench.sh: --rounds takes a positive number" >&2; exit 2 ;; esac
[ ${#algs[@]} -gt 0 ] || algs=(aes-128-cbc aes-128-ctr aes-256-gcm sha256)
build=$(cd "$build" && pwd)
bin=$build/bin/evp_pairbench
module=$build/lib/accelcrypt.so
for f in "$bin" "$module"; do
  [ -e "$f" ] || { echo "pairbench.sh: $f not found (build first)" >&2; exit 1; }
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/accelcrypt-pair.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=scripts/speed_cnf.sh
. "$(dirname "${BASH_SOURCE[0]}")/speed_cnf.sh"
accelcrypt_write_speed_cnfs "$tmp" "$module"
if [ "$backends" = all ]; then
  printf '[accelcrypt]\n' > "$tmp/settings.cnf"
else
  # interpose = all: the crossing is measured over the backends named, the
  # pass-through software backend too (it is not offered by default).
  printf '[accelcrypt]\nbackends = %s\ninterpose = all\n' "$backends" > "$tmp/settings.cnf"
fi

echo "accelcrypt pairbench: one process, default and accelcrypt (backends = $backends) in alternating ~20 ms rounds, fastest of $rounds"
rows="$tmp/rows"
: > "$rows"
for alg in "${algs[@]}"; do
  for size in $sizes; do
    if ! line=$(ACCELCRYPT_CONF="$tmp/settings.cnf" \
                ACCELCRYPT_BACKEND_DIR="$build/lib/accelcrypt/backends" \
                "$bin" "$tmp/default.cnf" "$tmp/accelcrypt.cnf" "$alg" "$size" "$rounds" 2>&1); then
      echo "pairbench.sh: $alg $size B failed: $line" >&2
      exit 1
    fi
    # "ALG N B: A x ns (median m), B y ns (median n), ratio A/B r (median s)"
    awk -v alg="$alg" -v size="$size" '{
        a = $5; b = $10; gsub(/[^0-9.]/, "", a); gsub(/[^0-9.]/, "", b)
        printf "%s %s %.1f %.1f %.3f\n", alg, size, a, b, (b > 0 ? a / b : 0) }' <<< "$line" >> "$rows"
  done
done
awk 'BEGIN { printf "%-19s %7s %12s %15s %7s  %s\n", "algorithm", "bytes", "default ns", "accelcrypt ns", "ratio", "target" }
     { target = ($2 <= 16) ? 0.95 : ($2 >= 1024 ? 0.99 : 0);
       note = target == 0 ? "" : ($5 >= target ? "ok (>= " target ")" : "BELOW " target);
       printf "%-19s %7d %12.1f %15.1f %7.3f  %s\n", $1, $2, $3, $4, $5, note }' "$rows"
echo
echo "ratio = default time / accelcrypt time per call (1.0 = no overhead)"
if [ -n "$markdown" ]; then
  {
    echo "| algorithm | bytes | default ns/call | accelcrypt ns/call | ratio |"
    echo "| --- | ---: | ---: | ---: | ---: |"
    awk '{ printf "| %s | %d | %.1f | %.1f | %.3f |\n", $1, $2, $3, $4, $5 }' "$rows"
  } > "$markdown"
  echo "(Markdown table written to $markdown)"
fi
