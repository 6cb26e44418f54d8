#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Builds accelcrypt for OpenCSW on Solaris 11 (x86 or SPARC) and makes the
# SVR4 packages CSWaccelcrypt and CSWaccelcrypt-dev. Outside GAR (see
# packaging/solaris/README.md for the GAR recipe, which runs the same
# configure). Needs OpenCSW's gcc, cmake, ninja (or gmake), pkgconfig,
# libssl-dev (OpenSSL 3), sqlite3 and python3, plus Abseil, nlohmann-json and
# CLI11 (not in OpenCSW's catalog: build them into /opt/csw first, see the
# README).
#   packaging/solaris/build.sh [WORKDIR]      (default: ./solaris-build)
# Output: WORKDIR/pkgs/CSWaccelcrypt-<version>-SunOS5.11-<arch>-CSW.pkg
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
work=${1:-$PWD/solaris-build}
prefix=/opt/csw
PATH=$prefix/bin:$PATH
export PATH

# 64-bit, OpenCSW's layout: libraries in lib/64 would be the isaexec'd
# variant; accelcrypt ships 64-bit only and keeps lib/.
CC=${CC:-gcc} CXX=${CXX:-g++}
CFLAGS="${CFLAGS:--O2 -m64}" CXXFLAGS="${CXXFLAGS:--O2 -m64}"
LDFLAGS="${LDFLAGS:--m64 -L$prefix/lib -R$prefix/lib}"
export CC CXX CFLAGS CXXFLAGS LDFLAGS

cmake -S "$src" -B "$work/build" \
  -DCMAKE_BUILD_TYPE=None \
  -DCMAKE_INSTALL_PREFIX=$prefix \
  -DCMAKE_INSTALL_LIBDIR=lib \
  -DCMAKE_INSTALL_SYSCONFDIR=/etc$prefix \
  -DCMAKE_INSTALL_LOCALSTATEDIR=/var$prefix \
  -DCMAKE_PREFIX_PATH=$prefix \
  -DOPENSSL_ROOT_DIR=$prefix \
  -DACCELCRYPT_OSSL_MODULES_DIR=$prefix/lib/ossl-modules \
  -DACCELCRYPT_INSTALL_P11_MODULE_DIR=$prefix/lib/pkcs11 \
  -DACCELCRYPT_P11KIT_MODULE_CONFIGS=$prefix/share/p11-kit/modules \
  -DACCELCRYPT_BUILD_TESTS=OFF
cmake --build "$work/build"
rm -rf "$work/stage"
DESTDIR="$work/stage" cmake --install "$work/build"

version=$(sed -n 's/^project(accelcrypt VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
python3 "$here/svr4.py" generate --root "$work/stage" --out "$work/proto" \
  --version "$version" --pstamp "$(id -un)@$(uname -n)-$(date -u +%Y%m%d%H%M%S)"
mkdir -p "$work/spool" "$work/pkgs"
arch=$(uname -p)
for pkg in CSWaccelcrypt CSWaccelcrypt-dev; do
  (cd "$work/proto/$pkg" &&
    pkgmk -o -r "$work/stage" -d "$work/spool" -f prototype)
  pkgtrans -s "$work/spool" \
    "$work/pkgs/$pkg-$version-SunOS$(uname -r)-$arch-CSW.pkg" "$pkg"
done
ls -l "$work/pkgs"
