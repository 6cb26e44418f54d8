#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Runs OpenSSL's own evp_test, built from the source of the INSTALLED OpenSSL
# and linked against the system libcrypto, on the AES and SHA stanzas of
# test/recipes/30-test_evp_data, with a config that loads only accelcrypt and
# base (no default provider: nothing can fall back). Every kept stanza must
# pass and none may be skipped. With --pkey: the RSA and DSA files
# (evppkey_rsa_common.txt, evppkey_dsa.txt) instead, on the stanzas whose
# digests accelcrypt claims, then the same stanzas through the default
# provider alone, which must pass them as well and run as many tests.
#
# Usage: run_evp_test.sh --module PATH/accelcrypt.so [--pkey] [--cache DIR]
#                        [--work DIR]
#   --cache  where the OpenSSL source and the evp_test build are kept between
#            runs (default: ./third_party); re-runs rebuild only what changed
#   --work   where the config, filtered stanzas and log go (default:
#            CACHE/evp_test-run)
# Needs root (or sudo) only the first time, if deb-src entries must be added.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
module=""
cache="$PWD/third_party"
work=""
pkey=0
while [ $# -gt 0 ]; do
  case "$1" in
    --module) module=$2; shift 2 ;;
    --cache) cache=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --pkey) pkey=1; shift ;;
    -h|--help) sed -n '3,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run_evp_test.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ -z "$module" ] || [ ! -f "$module" ]; then
  echo "run_evp_test.sh: --module must name the built accelcrypt.so (got '$module')" >&2
  exit 2
fi
module=$(cd "$(dirname "$module")" && pwd)/$(basename "$module")
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
work=${work:-$cache/evp_test-run}
mkdir -p "$work"

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# --- 1. Which OpenSSL is installed ------------------------------------------
pkg_version=$(dpkg-query -W -f='${Version}' libssl3)
dev_version=$(dpkg-query -W -f='${Version}' libssl-dev 2>/dev/null || echo none)
upstream=${pkg_version#*:}
upstream=${upstream%-*}
cli_version=$(openssl version | awk '{print $2}')
echo "installed: libssl3 $pkg_version, libssl-dev $dev_version, openssl $cli_version"
if [ "$dev_version" != "$pkg_version" ]; then
  echo "run_evp_test.sh: libssl-dev ($dev_version) does not match libssl3 ($pkg_version)" >&2
  exit 1
fi
if [ "$cli_version" != "$upstream" ]; then
  echo "run_evp_test.sh: openssl reports $cli_version but libssl3 is $upstream" >&2
  exit 1
fi

# --- 2. The matching source (cached) ----------------------------------------
src="$cache/openssl-$upstream"

# add_deb_src: scripts/deps.sh's accelcrypt_add_deb_src (shared with
# scripts/abseil_pic.sh).
# shellcheck source=scripts/deps.sh
. "$here/../../../scripts/deps.sh"
add_deb_src() { accelcrypt_add_deb_src; }

source_available() {
  apt-cache showsrc openssl 2>/dev/null | grep -qx "Version: $pkg_version"
}

fetch_source() {
  if ! source_available; then
    add_deb_src
    if ! source_available; then
      echo "run_evp_test.sh: apt has no source for openssl $pkg_version (the archive no longer serves it: scripts/deps.sh upgrades libssl3, libssl-dev and openssl to the version it serves)" >&2
      return 1
    fi
  fi
  local dl="$cache/openssl-source-download"
  rm -rf "$dl"; mkdir -p "$dl"
  echo "fetching: apt-get source openssl=$pkg_version"
  # The archive may serve the upstream tarball but not the Debian .dsc /
  # patches of a security update: tolerate that and use the tarball.
  (cd "$dl" && apt-get source -q --download-only "openssl=$pkg_version") || true
  local dsc orig
  dsc=$(ls "$dl"/openssl_*.dsc 2>/dev/null | head -n1 || true)
  orig=$(ls "$dl"/openssl_"$upstream".orig.tar.* 2>/dev/null | grep -v '\.asc$' | head -n1 || true)
  rm -rf "$src.tmp"
  if [ -n "$dsc" ] && ls "$dl"/openssl_*.debian.tar.* >/dev/null 2>&1; then
    dpkg-source --no-check -x "$dsc" "$src.tmp" >/dev/null
    echo "unpacked $(basename "$dsc") (Debian patches applied)"
  elif [ -n "$orig" ]; then
    mkdir -p "$src.tmp"
    tar -xf "$orig" -C "$src.tmp" --strip-components=1
    echo "unpacked $(basename "$orig") (upstream $upstream; the Debian .dsc was not available)"
  else
    echo "run_evp_test.sh: apt-get source openssl=$pkg_version fetched nothing usable" >&2
    return 1
  fi
  mv "$src.tmp" "$src"
  rm -rf "$dl"
}

if [ ! -f "$src/test/evp_test.c" ]; then
  fetch_source
fi
src_version=$(sed -n 's/^#[ \t]*define[ \t]\+OPENSSL_VERSION_TEXT[ \t]\+"OpenSSL \([^ ]*\).*/\1/p' \
  "$src/include/openssl/opensslv.h" 2>/dev/null || true)
if [ -z "$src_version" ]; then
  src_version=$(awk -F= '/^MAJOR=/{M=$2} /^MINOR=/{m=$2} /^PATCH=/{p=$2} END{print M"."m"."p}' "$src/VERSION.dat")
fi
if [ "$src_version" != "$upstream" ]; then
  echo "run_evp_test.sh: source in $src is $src_version, installed is $upstream" >&2
  exit 1
fi
echo "source: $src ($src_version)"

# --- 3. Build evp_test against the system libcrypto -------------------------
# Only the test driver is compiled: test/testutil/*.c, apps/lib/opt.c and
# test/evp_test.c. Public headers come from the system (same version); the
# source tree supplies only its internal headers.
bld="$cache/evp_test-build-$upstream"
mkdir -p "$bld/inc" "$bld/obj"
ln -sfn "$src/include/internal" "$bld/inc/internal"
ln -sfn "$src/include/crypto" "$bld/inc/crypto"
cflags=(-O1 -w -I "$bld/inc" -I "$src/apps/include" -I "$src" -I "$src/test")
objs=()
rebuilt=0
for c in "$src"/test/testutil/*.c "$src/apps/lib/opt.c"; do
  o="$bld/obj/$(basename "$c" .c).o"
  if [ ! -f "$o" ] || [ "$c" -nt "$o" ]; then
    gcc "${cflags[@]}" -c "$c" -o "$o"
    rebuilt=1
  fi
  objs+=("$o")
done
if [ "$rebuilt" = 1 ] || [ ! -f "$bld/libtestutil.a" ]; then
  rm -f "$bld/libtestutil.a"
  ar rcs "$bld/libtestutil.a" "${objs[@]}"
fi
evp_o="$bld/obj/evp_test.o"
if [ ! -f "$evp_o" ] || [ "$src/test/evp_test.c" -nt "$evp_o" ]; then
  gcc "${cflags[@]}" -c "$src/test/evp_test.c" -o "$evp_o"
fi
if [ ! -x "$bld/evp_test" ] || [ "$evp_o" -nt "$bld/evp_test" ] || [ "$bld/libtestutil.a" -nt "$bld/evp_test" ]; then
  gcc -o "$bld/evp_test" "$evp_o" "$bld/libtestutil.a" -lssl -lcrypto
  echo "built $bld/evp_test"
fi
if ldd "$bld/evp_test" | grep -q "$cache"; then
  echo "run_evp_test.sh: evp_test is not linked against the system libcrypto" >&2
  exit 1
fi

# --- 4. The stanzas we claim --------------------------------------------------
data="$src/test/recipes/30-test_evp_data"
files=()
if [ "$pkey" = 1 ]; then
  names=(evppkey_rsa_common.txt evppkey_dsa.txt)
  filter_mode=pkey
  stats_algs=(RSA-SIGN RSA-CRYPT DSA)
  what="RSA/DSA"
else
  names=(evpciph_aes_common.txt evpmd_sha.txt)
  filter_mode=""
  stats_algs=(AES-128-CBC AES-256-GCM SHA1 SHA2-512)
  what="AES/SHA"
fi
for name in "${names[@]}"; do
  out="$work/$name"
  echo "filter $name:"
  awk -v out="$out" -v mode="$filter_mode" -f "$here/filter_stanzas.awk" "$data/$name" | sed 's/^/  /'
  files+=("$out")
done

# --- 5. Run with accelcrypt + base only -------------------------------------
conf="$work/accelcrypt-only.cnf"
cat > "$conf" <<CNF
# Generated by run_evp_test.sh: accelcrypt and base only, no default
# provider, so every cipher and digest comes from accelcrypt.
openssl_conf = openssl_init
config_diagnostics = 1

[openssl_init]
providers = provider_sect

[provider_sect]
accelcrypt = accelcrypt_sect
base = base_sect

[accelcrypt_sect]
module = $module
activate = 1

[base_sect]
activate = 1
CNF

# The same stanzas through OpenSSL's default provider alone (--pkey): the
# reference the accelcrypt runs are compared with.
default_conf="$work/default-only.cnf"
cat > "$default_conf" <<CNF
# Generated by run_evp_test.sh: the default provider only.
openssl_conf = openssl_init
config_diagnostics = 1

[openssl_init]
providers = provider_sect

[provider_sect]
default = default_sect

[default_sect]
activate = 1
CNF

# check_log LOG LABEL RC: every file completed, no error, nothing skipped.
# Sets `tests` to the number of tests run.
check_log() {
  local log=$1 label=$2 rc=$3
  grep -E 'Completed [0-9]+ tests' "$log" | sed 's/^[ #]*/  /' || true
  local errors skipped completed
  errors=$(awk '/Completed [0-9]+ tests with/ {for (i=1;i<=NF;i++) if ($i=="with") e+=$(i+1)} END{print e+0}' "$log")
  skipped=$(awk '/Completed [0-9]+ tests with/ {for (i=1;i<=NF;i++) if ($i=="and") s+=$(i+1)} END{print s+0}' "$log")
  completed=$(grep -cE 'Completed [0-9]+ tests' "$log" || true)
  tests=$(awk '/Completed [0-9]+ tests with/ {for (i=1;i<=NF;i++) if ($i=="Completed") t+=$(i+1)} END{print t+0}' "$log")
  if [ "$rc" -ne 0 ] || [ "$errors" -ne 0 ] || [ "$skipped" -ne 0 ] || [ "$completed" -ne "${#files[@]}" ]; then
    echo "evp_test FAILED ($label: exit $rc, $errors errors, $skipped skipped, $completed of ${#files[@]} files completed); failing stanzas:"
    { grep -E 'Source of above error|skipping|not ok|Expected|unknown' "$log" || true; } | sed 's/^[ #]*/  /' | head -n 40 || true
    echo "(full log: $log)"
    return 1
  fi
}

# Two runs: every backend in its default routing order (hardware first where
# present), then the software backend alone, so both paths meet evp_test.
run_one() {  # run_one LABEL BACKENDS(empty = all)
  local label=$1 backends=$2
  local log="$work/evp_test-$label.log" stats="$work/stats-$label"
  local settings="$work/accelcrypt-settings-$label.cnf"
  rm -rf "$stats"; mkdir -p "$stats"
  # interpose = all: evp_test runs with accelcrypt and the base provider
  # only, and tests every algorithm accelcrypt serves, the software
  # backend's too (the default, interpose = wins, leaves those to the
  # default provider, which is not loaded here).
  if [ -n "$backends" ]; then
    printf '[accelcrypt]\nbackends = %s\ninterpose = all\n' "$backends" > "$settings"
  else
    printf '[accelcrypt]\ninterpose = all\n' > "$settings"
  fi
  echo "running ($label backends): evp_test -config $conf ${files[*]##*/}"
  local rc=0
  # timeout: a hang (evp_test at exit) is a failure, not a stuck CI job.
  ACCELCRYPT_CONF="$settings" ACCELCRYPT_STATS_DIR="$stats" \
    timeout 120 "$bld/evp_test" -config "$conf" "${files[@]}" > "$log" 2>&1 || rc=$?
  check_log "$log" "$label backends" "$rc" || return 1
  accelcrypt_tests=$tests
  # The provider's own counters prove the work went through accelcrypt.
  local all alg
  all=$(cat "$stats"/*.json 2>/dev/null || true)
  for alg in "${stats_algs[@]}"; do
    if ! grep -q "\"$alg\"" <<< "$all"; then
      echo "evp_test FAILED ($label backends): accelcrypt's stats show no $alg operation (was the provider used?)"
      return 1
    fi
  done
  if [ -n "$backends" ] && ! grep -q "\"$backends\"" <<< "$all"; then
    echo "evp_test FAILED: the $label run was not served by $backends"
    return 1
  fi
  echo "  served by: $(grep -o '"backends":{.*' <<< "$all" | grep -oE '"[a-z0-9_]+":\{"[A-Z]' | cut -d'"' -f2 | sort -u | tr '\n' ' ')"
}
run_one all ""
run_one software software
if [ "$pkey" = 1 ]; then
  log="$work/evp_test-default.log"
  echo "running (default provider only): evp_test -config $default_conf ${files[*]##*/}"
  rc=0
  timeout 120 "$bld/evp_test" -config "$default_conf" "${files[@]}" > "$log" 2>&1 || rc=$?
  check_log "$log" "default provider" "$rc" || exit 1
  if [ "$tests" -ne "$accelcrypt_tests" ]; then
    echo "evp_test FAILED: the default provider ran $tests tests, accelcrypt $accelcrypt_tests"
    exit 1
  fi
fi
if [ "$pkey" = 1 ]; then
  echo "evp_test passed: every kept $what stanza, through accelcrypt only and through the default provider alone ($tests tests each)"
else
  echo "evp_test passed: every kept $what stanza, through accelcrypt only"
fi
