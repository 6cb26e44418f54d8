#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Installs the .debs of DEBDIR, runs the README's demo steps against the
# installed paths, enables and disables the provider in the system
# openssl.cnf, purges the packages and checks that nothing is left behind.
#
# All of it runs in a private mount namespace with overlays on /usr, /etc,
# /var and /opt: the machine's own files and every other process (other
# engineers' builds and tests on a shared host) never see the installed
# packages or the edited openssl.cnf, and the overlays' upper directories
# are an exact record of what install + demo + purge changed. Needs root
# and unshare(1) (util-linux).
# Usage: scripts/package_install_test.sh DEBDIR     (as run by package_deb.sh)
set -euo pipefail
debdir=$(cd "${1:?usage: package_install_test.sh DEBDIR}" && pwd)

if [ "${ACCELCRYPT_IN_NAMESPACE:-}" != 1 ]; then
  [ "$(id -u)" = 0 ] || { echo "package_install_test.sh: needs root" >&2; exit 1; }
  ov=$(mktemp -d /tmp/accelcrypt-ov.XXXXXX)
  trap 'rm -rf "$ov"' EXIT
  rc=0
  ACCELCRYPT_IN_NAMESPACE=1 ACCELCRYPT_OV=$ov \
    unshare --mount --propagation private "$0" "$debdir" || rc=$?
  exit "$rc"
fi

ov=$ACCELCRYPT_OV
for d in usr etc var opt; do
  [ -d "/$d" ] || continue
  mkdir -p "$ov/$d/u" "$ov/$d/w" "$ov/orig/$d"
  mount --bind "/$d" "$ov/orig/$d"   # the original, for the final comparison
  mount -t overlay overlay -o "lowerdir=/$d,upperdir=$ov/$d/u,workdir=$ov/$d/w" "/$d"
done
export DEBIAN_FRONTEND=noninteractive
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
step() { echo "-- $*"; }
work=$(mktemp -d /tmp/accelcrypt-it.XXXXXX)
trap 'rm -rf "$work"' EXIT
export HOME=$work/home XDG_DATA_HOME=$work/home/.local/share
mkdir -p "$HOME"
unset OPENSSL_CONF OPENSSL_MODULES ACCELCRYPT_CONF ACCELCRYPT_BACKEND_DIR \
  ACCELCRYPT_PKCS11_CONF ACCELCRYPT_CALIBRATION

mapfile -t debs < <(ls "$debdir"/*.deb)
pkgs=()
for d in "${debs[@]}"; do pkgs+=("$(dpkg-deb -f "$d" Package)"); done
cnf=$(readlink -f /usr/lib/ssl/openssl.cnf)
cp "$cnf" "$work/openssl.cnf.orig"

step "dpkg -i ${pkgs[*]}"
dpkg -i "${debs[@]}" > "$work/install.log" 2>&1 || { cat "$work/install.log"; fail "dpkg -i"; }
cmp -s "$cnf" "$work/openssl.cnf.orig" || fail "installing changed $cnf"
if openssl list -providers | grep -qi accelcrypt; then fail "provider active right after install"; fi

multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
step "accelcrypt list: backends from the installed directory"
accelcrypt --version
accelcrypt list --json > "$work/list.json" || fail "accelcrypt list"
grep -q "\"/usr/lib/$multiarch/accelcrypt/backends\"" "$work/list.json" ||
  fail "list does not search /usr/lib/$multiarch/accelcrypt/backends"
accelcrypt list > "$work/list.txt" || fail "accelcrypt list"
sed -n '1,12p' "$work/list.txt"
step "accelcrypt selftest (installed vectors)"
accelcrypt selftest > "$work/selftest.out" 2>&1 || { tail -20 "$work/selftest.out"; fail "selftest"; }
tail -3 "$work/selftest.out"
step "accelcrypt config names the installed provider"
accelcrypt config --include-only | grep -q "^module = /usr/lib/$multiarch/ossl-modules/accelcrypt.so$" ||
  fail "config does not name the installed module"

step "accelcrypt enable (the system openssl.cnf, inside the overlay)"
accelcrypt enable --dry-run
accelcrypt enable || fail "enable"
openssl list -providers | grep -q accelcrypt || fail "openssl does not load accelcrypt after enable"
step "accelcrypt trace -- openssl enc -aes-128-cbc -pbkdf2 (round trip)"
head -c 100000 /dev/urandom > "$work/plain"
accelcrypt trace -- sh -c "openssl enc -aes-128-cbc -pbkdf2 -pass pass:demo -in '$work/plain' -out '$work/ct' &&
  openssl enc -d -aes-128-cbc -pbkdf2 -pass pass:demo -in '$work/ct' -out '$work/back'" 2> "$work/trace.out" ||
  fail "openssl enc through the provider"
cat "$work/trace.out"
cmp -s "$work/plain" "$work/back" || fail "decrypted text differs"
awk '$2 == "AES-128-CBC" && $4 >= 100000 { found = 1 } END { exit !found }' "$work/trace.out" ||
  fail "trace shows no AES-128-CBC bytes served by an accelcrypt backend"

step "PKCS#11 module: token, RSA key, signature checked by openssl"
mod=/usr/lib/$multiarch/pkcs11/accelcrypt-pkcs11.so
p11-kit list-modules 2>/dev/null | grep -q "accelcrypt" || fail "p11-kit does not list the module"
pkcs11-tool --module "$mod" --init-token --label demo --so-pin 87654321 >/dev/null || fail "init-token"
pkcs11-tool --module "$mod" --login --so-pin 87654321 --init-pin --pin 1234 >/dev/null || fail "init-pin"
pkcs11-tool --module "$mod" --login --pin 1234 --keypairgen --key-type rsa:2048 --id 01 --label k >/dev/null ||
  fail "keypairgen"
echo "signed by the installed module" > "$work/msg"
pkcs11-tool --module "$mod" --login --pin 1234 --sign --id 01 -m SHA256-RSA-PKCS \
  -i "$work/msg" -o "$work/sig" >/dev/null 2>&1 || fail "sign"
pkcs11-tool --module "$mod" --read-object --type pubkey --id 01 -o "$work/pub.der" >/dev/null 2>&1 || fail "read pubkey"
openssl dgst -sha256 -verify <(openssl pkey -pubin -inform DER -in "$work/pub.der") \
  -signature "$work/sig" "$work/msg" || fail "openssl does not verify the token's signature"

step "accelcrypt calibrate as root (writes /var/lib/accelcrypt)"
accelcrypt calibrate --alg aes-128-cbc --seconds-per-cell 0.005 > /dev/null 2>&1 || fail "calibrate"
[ -f /var/lib/accelcrypt/calibration.json ] || fail "no /var/lib/accelcrypt/calibration.json"

step "accelcrypt disable"
accelcrypt disable || fail "disable"
cmp -s "$cnf" "$work/openssl.cnf.orig" || fail "disable did not restore $cnf"
if openssl list -providers | grep -qi accelcrypt; then fail "provider still active after disable"; fi

step "dpkg --purge"
dpkg --purge "${pkgs[@]}" > "$work/purge.log" 2>&1 || { cat "$work/purge.log"; fail "dpkg --purge"; }
for p in "${pkgs[@]}"; do
  if dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -qv "not-installed"; then
    fail "$p still known to dpkg: $(dpkg-query -W -f='${Status}' "$p")"
  fi
done

step "nothing left behind (overlay upper directories vs. the original tree)"
# Every path install + demo + purge touched is in an upper directory: a
# whiteout (an original file removed), a copy-up of an original (fine when
# unchanged) or something new (left behind). The originals are read through
# binds of the original directories made before the overlays. dpkg's own records and
# logs and the caches that triggers rebuild are expected to change.
ignore='^/(var/lib/dpkg|var/log|var/cache/man|var/cache/debconf|var/cache/ldconfig|etc/ld\.so\.cache)(/|$)'
leftovers() {  # prints what install + demo + purge left; sets $left
  left=0
  for d in usr etc var opt; do
    [ -d "$ov/$d/u" ] || continue
    while IFS= read -r -d '' f; do
      rel=/$d/${f#"$ov/$d/u/"}
      [[ "$rel" =~ $ignore ]] && continue
      orig=$ov/orig$rel
      if [ -c "$f" ] && [ "$(stat -c %t:%T "$f")" = "0:0" ]; then
        echo "   removed from the original tree: $rel"; left=$((left + 1))
      elif [ -L "$f" ]; then
        if [ "$(readlink "$f")" != "$(readlink "$orig" 2>/dev/null)" ]; then
          echo "   left behind (symlink): $rel"; left=$((left + 1))
        fi
      elif [ -f "$f" ]; then
        if ! cmp -s "$f" "$orig"; then
          echo "   left behind or changed: $rel"; left=$((left + 1))
        fi
      elif [ -d "$f" ] && [ ! -d "$orig" ]; then
        echo "   left behind (directory): $rel"; left=$((left + 1))
      fi
    done < <(find "$ov/$d/u" -mindepth 1 -print0)
  done
}
# The check itself must see a planted file, then not after its removal.
mkdir -p /usr/share/accelcrypt-selfcheck && touch /usr/share/accelcrypt-selfcheck/x
leftovers > "$work/selfcheck.out"
grep -q "left behind.*/usr/share/accelcrypt-selfcheck/x" "$work/selfcheck.out" ||
  fail "the leftover check does not see a planted file"
rm -rf /usr/share/accelcrypt-selfcheck
leftovers
[ "$left" = 0 ] || fail "$left path(s) left behind or changed after purge"
[ "$left" = 0 ] && echo "   none"

[ "$fails" = 0 ] && echo "install test: all checks passed"
exit $((fails > 0))
