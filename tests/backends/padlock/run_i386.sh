#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Configures, builds and runs the i386 PadLock build (tests/backends/padlock/i386)
# under every emulator profile. Usage: run_i386.sh BUILD_DIR
# The runner executes natively where the kernel runs 32-bit binaries and
# under qemu-i386 (qemu-user) where it does not (kernels built without
# IA32 emulation: "Exec format error"); the first line of output says which.
# ACCELCRYPT_I386_RUN=native|qemu forces one way (a forced way that cannot
# run fails). Exit 77 (CTest skip) only when no -m32 toolchain
# (g++-multilib) exists, or when neither way can run a 32-bit program.
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
# How 32-bit programs run here: probed with the toolchain's own output.
runner=""
how=""
native_ok=false
if "$probe/p" >/dev/null 2>&1; then native_ok=true; fi
qemu=$(command -v qemu-i386 || true)
qemu_ok=false
if [ -n "$qemu" ] && "$qemu" "$probe/p" >/dev/null 2>&1; then qemu_ok=true; fi
case "${ACCELCRYPT_I386_RUN:-auto}" in
  native)
    $native_ok || { echo "ACCELCRYPT_I386_RUN=native: this kernel cannot run a 32-bit binary"; exit 1; }
    how="natively (forced)" ;;
  qemu)
    $qemu_ok || { echo "ACCELCRYPT_I386_RUN=qemu: qemu-i386 missing or cannot run a 32-bit binary"; exit 1; }
    runner=$qemu; how="under $qemu (forced)" ;;
  auto)
    if $native_ok; then
      how="natively (the kernel runs 32-bit binaries)"
    elif $qemu_ok; then
      runner=$qemu
      how="under $qemu (this kernel cannot run 32-bit binaries)"
    else
      echo "SKIP: this kernel cannot run 32-bit binaries and qemu-i386 is missing (install qemu-user)"
      exit 77
    fi ;;
  *) echo "ACCELCRYPT_I386_RUN must be native, qemu or auto"; exit 2 ;;
esac
echo "i386 PadLock runner: running $how"
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
    $runner "$build/padlock_i386_vectors" "$here/../../vectors" || rc=1
done
echo "i386 PadLock runner: ran $how, exit $rc"
exit $rc
