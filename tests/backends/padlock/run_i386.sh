#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Configures, builds and runs the i386 PadLock build (tests/backends/padlock/i386)
# under every emulator profile. Usage: run_i386.sh BUILD_DIR
# Exit 77 (CTest skip) only when no -m32 toolchain (g++-multilib) exists.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-"$here/../../../build-padlock32"}
cxx=${CXX:-g++}
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '#include <string>\nint main(){std::string s("x");return (int)s.size()-1;}\n' > "$probe/p.cc"
if ! "$cxx" -m32 "$probe/p.cc" -o "$probe/p" >/dev/null 2>&1; then
  echo "SKIP: $cxx -m32 cannot build a C++ program (install g++-multilib)"
  exit 77
fi
# A build directory configured from another source path (the tests moved,
# or a copied tree) is regenerated rather than refused by CMake.
if [ -f "$build/CMakeCache.txt" ] &&
    ! grep -qxF "CMAKE_HOME_DIRECTORY:INTERNAL=$here/i386" "$build/CMakeCache.txt"; then
  rm -rf "$build"
fi
if ! cmake -S "$here/i386" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" \
    -DACCELCRYPT_WERROR="${ACCELCRYPT_WERROR:-OFF}" > "$probe/cfg.log" 2>&1; then
  cat "$probe/cfg.log"; exit 1
fi
if ! cmake --build "$build" -j2 > "$probe/build.log" 2>&1; then
  cat "$probe/build.log"; exit 1
fi
file "$build/padlock_i386_vectors" | grep -q 'ELF 32-bit' || {
  echo "not a 32-bit binary"; exit 1; }
rc=0
for p in c3 c7 nano nano_s2 zhaoxin; do
  ACCELCRYPT_PADLOCK_EMULATOR=1 ACCELCRYPT_PADLOCK_PROFILE=$p \
    "$build/padlock_i386_vectors" "$here/../../vectors" || rc=1
done
exit $rc
