#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Abseil as position-independent static libraries, built from Debian's own
# source package (the version of the installed libabsl-dev), for the
# provider's load cost: linked against Debian's shared Abseil, every dlopen
# of accelcrypt.so (each process that reads an openssl.cnf enabling it)
# loads and relocates 26 libabsl_*.so.20220623 libraries, about 7.5 M
# instructions per process. Linked from these archives, each of our shared
# objects carries the few Abseil functions it uses inside it, hidden
# (--exclude-libs,ALL), and loads none. Debian's libabsl-dev ships static
# archives too, but as PIE code whose thread-local variables use the
# local-exec model (R_X86_64_TPOFF32), which no shared object may contain.
#
# The copy gets its own inline namespace (absl::accelcrypt_pic instead of
# absl::debian3), so a header or a symbol of the system's Abseil mixed into
# a build against it fails to link instead of mixing silently.
#
# Sourced by scripts/common.sh (accelcrypt_abseil_pic) or run directly:
#   scripts/abseil_pic.sh [BUILD_DIR]   prints the install prefix
# Cached under BUILD_DIR/third_party; a second run is a no-op. Needs
# `apt-get source` (deb-src entries are derived from the machine's own apt
# sources when there are none; that step needs root or sudo).
# Exit/return codes: 0 built or cached, 1 no source or the build failed
# (callers then build against the shared system Abseil).

# accelcrypt_abseil_pic: builds (once) and prints the prefix; messages on
# stderr.
accelcrypt_abseil_pic() {
  local build_dir=${1:-$ACCELCRYPT_BUILD_DIR}
  local version upstream top prefix srcdir jobs
  version=$(dpkg-query -W -f='${source:Version}' libabsl-dev 2>/dev/null) || {
    echo "abseil_pic: libabsl-dev is not installed" >&2
    return 1
  }
  upstream=${version#*:}
  upstream=${upstream%-*}
  top="$build_dir/third_party"
  prefix="$top/abseil-pic-$upstream"
  if [ -f "$prefix/.accelcrypt-built" ] &&
     [ "$(cat "$prefix/.accelcrypt-built")" = "$version" ]; then
    echo "$prefix"
    return 0
  fi
  mkdir -p "$top/abseil-src"
  srcdir="$top/abseil-src/abseil-$upstream"
  if [ ! -f "$srcdir/CMakeLists.txt" ]; then
    if ! apt-cache showsrc abseil 2>/dev/null | grep -q '^Version:'; then
      accelcrypt_add_deb_src >&2 || return 1
    fi
    echo "== abseil: apt-get source abseil=$version (once, into $top/abseil-src)" >&2
    if ! (cd "$top/abseil-src" &&
          { apt-get source -q "abseil=$version" >&2 2>&1 ||
            apt-get source -q abseil >&2 2>&1; }); then
      echo "abseil_pic: apt-get source abseil failed" >&2
      return 1
    fi
    # The archive may serve a newer source than the installed binaries.
    srcdir=$(find "$top/abseil-src" -maxdepth 1 -type d -name 'abseil-*' | sort | tail -n 1)
    [ -f "$srcdir/CMakeLists.txt" ] || {
      echo "abseil_pic: no source tree under $top/abseil-src" >&2
      return 1
    }
  fi
  sed -i 's/^#define ABSL_OPTION_INLINE_NAMESPACE_NAME .*/#define ABSL_OPTION_INLINE_NAMESPACE_NAME accelcrypt_pic/' \
    "$srcdir/absl/base/options.h"
  jobs=$(nproc 2>/dev/null || echo 2)
  echo "== abseil: building PIC static libraries (once; a few minutes)" >&2
  if ! { cmake -S "$srcdir" -B "$top/abseil-build" -G Ninja \
           -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_STANDARD=17 \
           -DABSL_PROPAGATE_CXX_STD=ON -DBUILD_SHARED_LIBS=OFF \
           -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DBUILD_TESTING=OFF \
           -DABSL_BUILD_TESTING=OFF -DCMAKE_INSTALL_PREFIX="$prefix" >&2 &&
         cmake --build "$top/abseil-build" -j "${ACCELCRYPT_JOBS:-$jobs}" >&2 &&
         cmake --install "$top/abseil-build" >/dev/null; }; then
    echo "abseil_pic: building Abseil failed" >&2
    return 1
  fi
  echo "$version" > "$prefix/.accelcrypt-built"
  echo "$prefix"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  # shellcheck source=scripts/deps.sh
  . "$root/scripts/deps.sh"
  accelcrypt_abseil_pic "${1:-${ACCELCRYPT_BUILD_DIR:-$root/build}}"
fi
