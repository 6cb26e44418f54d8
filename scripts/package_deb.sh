#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Builds the Debian packages from debian/ the way a packager does and checks
# them:
#   1. copies the source tree (the files git tracks or would track, as they
#      are in the working tree: a clean checkout) into OUT/src/accelcrypt-V,
#   2. runs `dpkg-buildpackage -us -uc -b` there (with DEB_BUILD_OPTIONS
#      nocheck unless --check, which runs the unit suites inside the build),
#   3. runs lintian on the .changes and every .deb: fails on any error or
#      warning (overrides need a written reason in debian/*.lintian-overrides),
#   4. checks the contents: every ELF stripped with a -dbgsym package, man
#      pages compressed, the p11-kit module file, the pkg-config file, nothing
#      under /etc,
#   5. with --install-test: scripts/package_install_test.sh (install, the
#      demo against the installed paths, enable/disable, purge, nothing left),
#      inside a private mount namespace so no other process on the machine
#      sees the installed files.
# Usage: scripts/package_deb.sh [--check] [--install-test] [--no-build] [--out DIR]
# --no-build: check the packages an earlier run left in OUT/src again.
# Default OUT: $ACCELCRYPT_BUILD_DIR/deb (build/deb). Exit 0 when all passed.
set -euo pipefail
# shellcheck source=scripts/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

check=0 install_test=0 build=1 out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --check) check=1 ;;
    --install-test) install_test=1 ;;
    --no-build) build=0 ;;
    --out) out=$2; shift ;;
    -h|--help) sed -n '3,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "package_deb.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
out=${out:-$ACCELCRYPT_BUILD_DIR/deb}

for tool in dpkg-buildpackage dh lintian git; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "package_deb.sh: $tool not found (apt-get install debhelper lintian git dpkg-dev)" >&2
    exit 1
  fi
done

if [ "$build" = 1 ]; then
  version=$(dpkg-parsechangelog -l "$ACCELCRYPT_ROOT/debian/changelog" -S Version)
  src="$out/src/accelcrypt-$version"
  rm -rf "$out"
  mkdir -p "$src"

  echo "== source: $src"
  # Tracked and untracked-but-not-ignored files, as in the working tree; a
  # file deleted from the working tree is left out.
  (cd "$ACCELCRYPT_ROOT" &&
    git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
    tar --null -T - -cf -) | tar -xf - -C "$src"

  opts="parallel=$(accelcrypt_jobs)"
  [ "$check" = 1 ] || opts="nocheck $opts"
  echo "== dpkg-buildpackage -us -uc -b (DEB_BUILD_OPTIONS=\"$opts\"; log: $out/build.log)"
  if ! (cd "$src" && DEB_BUILD_OPTIONS="$opts" dpkg-buildpackage -us -uc -b \
          > "$out/build.log" 2>&1); then
    tail -40 "$out/build.log"
    echo "package_deb.sh: dpkg-buildpackage failed (log: $out/build.log)" >&2
    exit 1
  fi

fi

cd "$out/src"
changes=$(ls ./*.changes)
mapfile -t debs < <(ls ./*.deb)
echo "== packages:"
ls -l "${debs[@]}" | awk '{print "   ", $5, $NF}'

rc=0
echo "== lintian (errors and warnings fail; log: $out/lintian.log)"
if ! lintian --fail-on error,warning --display-info --show-overrides \
    "$changes" "${debs[@]}" > "$out/lintian.log" 2>&1; then
  rc=1
fi
cat "$out/lintian.log"
if grep -qE '^(E|W): ' "$out/lintian.log"; then rc=1; fi
echo "   $(grep -cE '^E: ' "$out/lintian.log" || true) errors," \
     "$(grep -cE '^W: ' "$out/lintian.log" || true) warnings"

fail() { echo "FAIL: $*"; rc=1; }
echo "== contents"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for deb in "${debs[@]}"; do
  name=$(dpkg-deb -f "$deb" Package)
  dpkg-deb -x "$deb" "$tmp/$name"
done
have() { [ -d "$tmp/$1" ] || fail "package $1 not built"; }
for p in accelcrypt accelcrypt-backends accelcrypt-provider accelcrypt-pkcs11 accelcrypt-dev; do
  have "$p"
done
while IFS= read -r -d '' f; do
  case "$f" in */usr/lib/debug/*) continue ;; esac  # the detached symbols
  if file -b "$f" | grep -q 'ELF'; then
    if file -b "$f" | grep -q 'not stripped'; then fail "not stripped: ${f#"$tmp"/}"; fi
    pkg=${f#"$tmp"/}; pkg=${pkg%%/*}
    [ -d "$tmp/$pkg-dbgsym" ] || fail "no $pkg-dbgsym for ${f#"$tmp"/}"
    # hardening: full RELRO, bind now, PIE executables
    if ! readelf -lW "$f" | grep -q GNU_RELRO; then fail "no RELRO: ${f#"$tmp"/}"; fi
    if ! readelf -dW "$f" | grep -qE 'BIND_NOW|FLAGS.*NOW'; then fail "no BIND_NOW: ${f#"$tmp"/}"; fi
  fi
done < <(find "$tmp" -type f -print0)
# Exports: the version scripts' symbols only (the linker probe worked).
exports() {  # exports FILE REGEX: every defined dynamic symbol matches REGEX
  local bad
  bad=$(nm -D --defined-only "$1" | awk '{print $NF}' | grep -vE "$2" || true)
  [ -z "$bad" ] || fail "${1#"$tmp"/} exports $(echo "$bad" | head -3 | tr '\n' ' ')"
}
for f in "$tmp"/accelcrypt-backends/usr/lib/*/accelcrypt/backends/*.so; do
  exports "$f" '^accelcrypt_backend_entry$'
done
for f in "$tmp"/accelcrypt-provider/usr/lib/*/ossl-modules/accelcrypt.so; do
  exports "$f" '^OSSL_provider_init$'
done
for f in "$tmp"/accelcrypt-pkcs11/usr/lib/*/pkcs11/accelcrypt-pkcs11.so; do
  exports "$f" '^C_[A-Za-z]+$'
done
man=$(find "$tmp" -path '*/usr/share/man/*' -type f)
[ -n "$man" ] || fail "no man pages"
for m in $man; do case "$m" in *.gz) ;; *) fail "man page not compressed: $m" ;; esac; done
[ -f "$tmp/accelcrypt/usr/share/man/man1/accelcrypt.1.gz" ] || fail "accelcrypt(1) missing"
[ -f "$tmp/accelcrypt-pkcs11/usr/share/man/man5/accelcrypt-pkcs11.5.gz" ] || fail "accelcrypt-pkcs11(5) missing"
modfile="$tmp/accelcrypt-pkcs11/usr/share/p11-kit/modules/accelcrypt.module"
if [ -f "$modfile" ]; then
  modpath=$(sed -n 's/^module: *//p' "$modfile")
  [ -f "$tmp/accelcrypt-pkcs11$modpath" ] || fail "p11-kit module file names $modpath, not in the package"
else
  fail "p11-kit module file missing"
fi
pc=$(find "$tmp/accelcrypt-dev" -name accelcrypt-backend.pc)
[ -n "$pc" ] || fail "accelcrypt-backend.pc missing"
[ -f "$tmp/accelcrypt-dev/usr/include/accelcrypt/backend.h" ] || fail "backend.h missing from -dev"
if [ -n "$pc" ]; then
  bdir=$(PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR= pkg-config --variable=backenddir accelcrypt-backend)
  [ -d "$tmp/accelcrypt-backends$bdir" ] || fail "backenddir $bdir is not where accelcrypt-backends puts them"
  # A third-party backend compiles against the packaged header alone.
  printf '#include <accelcrypt/backend.h>\nint v(void){return (int)ACCELCRYPT_ABI_VERSION;}\n' > "$tmp/b.c"
  cc -fsyntax-only -I"$tmp/accelcrypt-dev/usr/include" "$tmp/b.c" || fail "backend.h does not compile alone"
fi
for p in "$tmp"/*; do
  [ -d "$p/etc" ] && fail "$(basename "$p") installs files under /etc"
done
[ "$rc" = 0 ] && echo "   all contents checks passed"

if [ "$install_test" = 1 ]; then
  echo "== install test (private mount namespace)"
  "$ACCELCRYPT_ROOT/scripts/package_install_test.sh" "$out/src" || rc=1
fi
exit "$rc"
