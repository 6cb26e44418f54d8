#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Solaris/OpenCSW SVR4 recipe (packaging/solaris/svr4.py) against a real
# staging install of this build, checked by an independent validator
# (svr4_validate.py), then packed into a package datastream and listed back
# (and, where GNU cpio exists, unpacked by it and compared byte for byte).
# Usage: svr4_checks.sh BUILD_DIR SOURCE_DIR
#
# This build was configured for Linux (prefix /usr/local, the provider in
# OpenSSL's modules dir, the PKCS#11 module under p11-kit's). The recipe's
# Solaris configure (packaging/solaris/build.sh) puts all of them under
# /opt/csw; the same move is made here on the staged files:
#   usr/local/*                         -> opt/csw/*
#   <OpenSSL modules dir>               -> opt/csw/lib/ossl-modules
#   <p11-kit module dir, config dir>    -> opt/csw/lib/pkcs11, opt/csw/share/p11-kit/modules
set -euo pipefail
build=$1 src=$2
svr4="$src/packaging/solaris/svr4.py"
validate="$(dirname "$0")/svr4_validate.py"
command -v python3 >/dev/null || { echo "SKIP: python3 not found"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

echo "== staging install"
DESTDIR="$tmp/linux" cmake --install "$build" > "$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log"; exit 1; }
mkdir -p "$tmp/stage/opt/csw"
# Everything under a */ossl-modules, */pkcs11 or */p11-kit/modules directory
# goes to its /opt/csw place, the rest of usr/local to /opt/csw.
(cd "$tmp/linux" && find . -type f -o -type l) | while read -r f; do
  f=${f#./}
  case "$f" in
    */ossl-modules/*) d="opt/csw/lib/ossl-modules/${f##*/ossl-modules/}" ;;
    */p11-kit/modules/*) d="opt/csw/share/p11-kit/modules/${f##*/p11-kit/modules/}" ;;
    usr/local/*) d="opt/csw/${f#usr/local/}" ;;
    */pkcs11/*) d="opt/csw/lib/pkcs11/${f##*/pkcs11/}" ;;
    *) echo "unexpected install path $f" >&2; exit 1 ;;
  esac
  mkdir -p "$tmp/stage/$(dirname "$d")"
  cp -a "$tmp/linux/$f" "$tmp/stage/$d"
done
nfiles=$(find "$tmp/stage" -type f | wc -l)
echo "   $nfiles files staged"
[ "$nfiles" -gt 10 ] || fail "only $nfiles files staged"

echo "== generate"
python3 "$svr4" generate --root "$tmp/stage" --out "$tmp/proto" --version 0.1.0 \
  --rev 2026.01.01 --pstamp test-build || fail "generate failed"
for p in CSWaccelcrypt CSWaccelcrypt-dev; do
  [ -f "$tmp/proto/$p/prototype" ] || fail "$p not generated"
done
grep -q "^f none /opt/csw/bin/accelcrypt 0755 root bin$" "$tmp/proto/CSWaccelcrypt/prototype" ||
  fail "the tool is not an executable f entry"
grep -q "^f none /opt/csw/include/accelcrypt/backend.h 0644 root bin$" "$tmp/proto/CSWaccelcrypt-dev/prototype" ||
  fail "backend.h is not in the -dev package"
grep -q "^P CSWlibssl3 " "$tmp/proto/CSWaccelcrypt/depend" || fail "no dependency on OpenCSW's OpenSSL"

echo "== validate against the SVR4 formats and the staging tree"
python3 "$validate" "$tmp/stage" "$tmp/proto" || fail "validation"

echo "== the validator catches what it should"
touch "$tmp/stage/opt/csw/share/extra-file"
if python3 "$validate" "$tmp/stage" "$tmp/proto" > "$tmp/v.out"; then fail "an unlisted file passed"; fi
grep -q "extra-file is in the staging tree, in no prototype" "$tmp/v.out" || fail "no message for the unlisted file"
rm "$tmp/stage/opt/csw/share/extra-file"
cp -a "$tmp/proto" "$tmp/proto2"
echo "f none /opt/csw/bin/ghost 0755 root bin" >> "$tmp/proto2/CSWaccelcrypt/prototype"
sed -i '/^EMAIL=/d' "$tmp/proto2/CSWaccelcrypt/pkginfo"
if python3 "$validate" "$tmp/stage" "$tmp/proto2" > "$tmp/v.out"; then fail "a ghost entry passed"; fi
grep -q "ghost is in CSWaccelcrypt's prototype, not in the staging tree" "$tmp/v.out" || fail "no message for the ghost"
grep -q "EMAIL missing" "$tmp/v.out" || fail "no message for the missing EMAIL"

echo "== generate refuses files outside OpenCSW's trees"
mkdir -p "$tmp/bad/usr/lib" "$tmp/bad/opt/csw/bin"
touch "$tmp/bad/usr/lib/x.so" "$tmp/bad/opt/csw/bin/y"
if python3 "$svr4" generate --root "$tmp/bad" --out "$tmp/badproto" --version 0.1.0 2> "$tmp/g.err"; then
  fail "a file under /usr was accepted"
fi
grep -q "not in OpenCSW's layout.*/usr/lib/x.so" "$tmp/g.err" || fail "no message naming /usr/lib/x.so"

echo "== pack into a datastream and list it back"
python3 "$svr4" pack --root "$tmp/stage" --proto "$tmp/proto" --out "$tmp/accelcrypt.pkg" || fail "pack"
python3 "$svr4" list "$tmp/accelcrypt.pkg" > "$tmp/list.out" || { fail "list"; cat "$tmp/list.out"; }
head -c 21 "$tmp/accelcrypt.pkg" | grep -q "# PaCkAgE DaTaStReAm" || fail "no datastream header"
for p in CSWaccelcrypt CSWaccelcrypt-dev; do
  grep -q "^package $p " "$tmp/list.out" || fail "$p not in the datastream"
done
listed=$(grep -c '^  1 f ' "$tmp/list.out" || true)
[ "$listed" = "$nfiles" ] || fail "$listed files listed back, $nfiles staged"
if command -v cpio >/dev/null; then
  echo "== GNU cpio reads the archives"
  # Offsets from the header: one 512-byte header block, then per package
  # the pkginfo+pkgmap archive and the full one.
  mkdir -p "$tmp/x" && cd "$tmp/x"
  python3 - "$tmp/accelcrypt.pkg" <<'PY' > "$tmp/offsets"
import sys
d = open(sys.argv[1], "rb").read()
pos = 512
def skip(pos):
    while True:
        ns, fs = int(d[pos+59:pos+65], 8), int(d[pos+65:pos+76], 8)
        name = d[pos+76:pos+76+ns-1]
        pos += 76 + ns + fs
        if name == b"TRAILER!!!":
            return (pos + 511) // 512 * 512
while pos < len(d):
    pos = skip(pos)
    print(pos // 512)
    pos = skip(pos)
PY
  while read -r blk; do
    # tail, not dd: GNU dd's skip on a file, with the ASan runtime preloaded
    # (CI's ASan stage), stops short of the archive's end. Only cpio's exit
    # status counts: tail may die of SIGPIPE once cpio has read its trailer.
    cpio -idmu --quiet 2>>"$tmp/cpio.err" < <(tail -c +$((blk * 512 + 1)) "$tmp/accelcrypt.pkg") ||
      fail "cpio could not read the archive at block $blk: $(tail -3 "$tmp/cpio.err")"
  done < "$tmp/offsets"
  cd - >/dev/null
  for p in CSWaccelcrypt CSWaccelcrypt-dev; do
    (cd "$tmp/x/$p/root" && find . -type f) | while read -r f; do
      cmp -s "$tmp/x/$p/root/$f" "$tmp/stage/$f" || echo "differs: $f"
    done > "$tmp/cmp.out"
    [ -s "$tmp/cmp.out" ] && fail "$p: $(head -3 "$tmp/cmp.out")"
    [ -f "$tmp/x/$p/pkgmap" ] && [ -f "$tmp/x/$p/install/depend" ] || fail "$p: no pkgmap or install/depend"
  done
  unpacked=$(find "$tmp/x" -path '*/root/*' -type f | wc -l)
  [ "$unpacked" = "$nfiles" ] || fail "cpio unpacked $unpacked files, $nfiles staged"
fi

[ "$fails" = 0 ] && echo "svr4: all checks passed"
exit $((fails > 0))
