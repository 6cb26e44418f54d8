#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The big-endian test (issue 15 item 4): builds the core, the software
# backend, the PKCS#11 module's store, object and mechanism libraries and
# their unit tests for s390x (big-endian Linux) with Debian 12's cross
# compiler, runs them under qemu-user, and moves a token directory between
# the native build and the s390x one both ways (tests/bigendian/).
#
#   scripts/cross_s390x.sh [NATIVE_STORE_INTEROP]
#
# NATIVE_STORE_INTEROP is the native build's p11_store_interop binary (CTest
# passes it); without it the cross-endian store exchange is not run.
#
# Nothing is installed on the host for s390x and dpkg's architecture list
# is left alone: a private apt configuration (its own package lists, cache
# and archive directory, the machine's own sources from /etc/apt) downloads
# the cross compiler and the :s390x libraries, and `dpkg -x` unpacks them
# into one private root under the build directory, which doubles as the
# sysroot and as qemu's -L prefix. Everything is cached there: a re-run
# downloads nothing and rebuilds only what changed.
#
#   ACCELCRYPT_BUILD_DIR   the native build directory (default: build/)
#   ACCELCRYPT_CROSS_DIR   where the root, apt state and the s390x build go
#                          (default: $ACCELCRYPT_BUILD_DIR/cross-s390x)
#   ACCELCRYPT_JOBS        parallel build/test jobs (default: nproc)
#
# Exit codes: 0 passed; 77 skipped (qemu-s390x missing, or the archive
# offers no s390x cross toolchain or libraries: the reason is printed);
# anything else failed.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${ACCELCRYPT_BUILD_DIR:-$ROOT/build}
CROSS_DIR=${ACCELCRYPT_CROSS_DIR:-$BUILD_DIR/cross-s390x}
JOBS=${ACCELCRYPT_JOBS:-$(nproc 2>/dev/null || echo 2)}
NATIVE_INTEROP=${1:-}

SYSROOT=$CROSS_DIR/root
WRAPPERS=$CROSS_DIR/bin
APT_DIR=$CROSS_DIR/apt
XBUILD=$CROSS_DIR/build

# The cross compiler (amd64 packages; its own -cross libc and libstdc++
# come with it) and the target's libraries the tested code links (:s390x,
# the same Debian 12 packages as natively; header-only ones are arch all).
TOOLCHAIN_PACKAGES=(g++-12-s390x-linux-gnu)
SYSROOT_PACKAGES=(libssl-dev:s390x libabsl-dev:s390x libsqlite3-dev:s390x
                  libgtest-dev:s390x libgmock-dev:s390x libp11-kit-dev:s390x
                  nlohmann-json3-dev libcli11-dev)
# The test binaries built for s390x and run under qemu.
TARGETS=(core_vector_suite_test core_vector_file_test core_cipher_property_test
         core_digest_property_test core_cipher_stream_test core_router_test
         core_config_test core_stats_test core_algorithms_test
         dsa_siggen_vectors_test p11_store_test p11_object_rules_test
         p11_mech_test pkey_vectors_test p11_attribute_format_test
         p11_store_interop)

skip() {
  {
    echo "======================================================================"
    echo "bigendian: SKIPPED: $*"
    echo "bigendian: nothing was built or run big-endian"
    echo "======================================================================"
  } >&2
  exit 77
}

step() { echo "== bigendian: $*"; }

now() { date +%s; }

command -v qemu-s390x >/dev/null 2>&1 ||
  skip "qemu-s390x not found (Debian package qemu-user; scripts/deps.sh installs it)"
if ! command -v dpkg >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
  skip "not a Debian system (no dpkg/apt-get): no cross toolchain to unpack"
fi

# apt_private ARGS...: apt-get/apt-cache with the private state; never the
# host's dpkg database for the target (an empty status file: the root is a
# world of its own), never a lock on the host's dpkg.
apt_private() {
  local tool=$1
  shift
  APT_CONFIG=$APT_DIR/apt.conf "$tool" -q -o Debug::NoLocking=1 "$@"
}

write_apt_config() {
  mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/cache" "$APT_DIR/state" \
           "$APT_DIR/archives/partial"
  : >"$APT_DIR/empty-status"
  # Sources stay the machine's own (Dir::Etc defaults to /etc/apt).
  cat >"$APT_DIR/apt.conf" <<EOF
Dir::State "$APT_DIR/state";
Dir::State::Lists "$APT_DIR/lists";
Dir::State::status "$APT_DIR/empty-status";
Dir::Cache "$APT_DIR/cache";
Dir::Cache::archives "$APT_DIR/archives";
APT::Architectures { "$(dpkg --print-architecture)"; "s390x"; };
APT::Install-Recommends "false";
EOF
}

# prepare_root: downloads and unpacks the toolchain and sysroot once; the
# stamp names the package set, so changing the lists above redoes it.
prepare_root() {
  local want stamp=$SYSROOT/.accelcrypt-packages
  want="layout 2: ${TOOLCHAIN_PACKAGES[*]} ${SYSROOT_PACKAGES[*]}"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    step "toolchain and sysroot cached in $SYSROOT"
    return 0
  fi
  local t0
  t0=$(now)
  step "downloading the s390x cross toolchain and sysroot packages (private apt state in $APT_DIR)"
  rm -rf "$SYSROOT" "$APT_DIR"
  write_apt_config
  apt_private apt-get update >"$APT_DIR/update.log" 2>&1 ||
    skip "apt-get update with the s390x architecture failed (see $APT_DIR/update.log)"
  # The host's own dpkg status for the compiler's amd64 dependencies (already
  # installed with build-essential), so only the cross packages come down.
  mkdir -p "$APT_DIR/toolchain/partial"
  if ! apt_private apt-get install -y --download-only \
         -o Dir::State::status=/var/lib/dpkg/status \
         -o Dir::Cache::archives="$APT_DIR/toolchain" \
         "${TOOLCHAIN_PACKAGES[@]}" >"$APT_DIR/toolchain.log" 2>&1; then
    skip "the archive offers no s390x cross compiler (${TOOLCHAIN_PACKAGES[*]}; see $APT_DIR/toolchain.log)"
  fi
  if ! apt_private apt-get install -y --download-only \
         "${SYSROOT_PACKAGES[@]}" >"$APT_DIR/sysroot.log" 2>&1; then
    skip "the archive offers no s390x libraries (${SYSROOT_PACKAGES[*]}; see $APT_DIR/sysroot.log)"
  fi
  # All of the toolchain (cross packages); of the sysroot's closure only
  # s390x and arch-independent packages: the host-architecture tools it
  # pulls in through Multi-Arch: foreign dependencies (libc-dev-bin and
  # with it an amd64 libc) have no business in the target's root.
  shopt -s nullglob
  local debs=("$APT_DIR"/toolchain/*.deb "$APT_DIR"/archives/*_s390x.deb
              "$APT_DIR"/archives/*_all.deb)
  step "unpacking ${#debs[@]} packages into $SYSROOT"
  mkdir -p "$SYSROOT"
  local deb
  for deb in "${debs[@]}"; do
    dpkg -x "$deb" "$SYSROOT"
  done
  rm -f "$APT_DIR"/toolchain/*.deb "$APT_DIR"/archives/*.deb
  shopt -u nullglob
  echo "$want" >"$stamp"
  step "toolchain and sysroot ready in $(($(now) - t0)) s"
}

# write_wrappers: the tools as CMake and ccache see them. The cross binutils
# (as, ld, ar, ranlib) load their private libbfd/libopcodes from the root;
# the compilers get the root as their sysroot.
write_wrappers() {
  mkdir -p "$WRAPPERS"
  local tool real extra libdir
  libdir=$SYSROOT/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null ||
                            echo x86_64-linux-gnu)
  for tool in gcc g++ ar ranlib strip; do
    case "$tool" in
      gcc | g++) real=$SYSROOT/usr/bin/s390x-linux-gnu-$tool-12 extra=" --sysroot=\"$SYSROOT\"" ;;
      *) real=$SYSROOT/usr/bin/s390x-linux-gnu-$tool extra= ;;
    esac
    cat >"$WRAPPERS/s390x-linux-gnu-$tool.new" <<EOF
#!/bin/sh
# Generated by scripts/cross_s390x.sh.
LD_LIBRARY_PATH="$libdir\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" \\
  exec "$real"$extra "\$@"
EOF
    chmod +x "$WRAPPERS/s390x-linux-gnu-$tool.new"
    # Unchanged wrappers keep their mtime (ccache and Ninja see no change).
    if cmp -s "$WRAPPERS/s390x-linux-gnu-$tool.new" "$WRAPPERS/s390x-linux-gnu-$tool"; then
      rm "$WRAPPERS/s390x-linux-gnu-$tool.new"
    else
      mv "$WRAPPERS/s390x-linux-gnu-$tool.new" "$WRAPPERS/s390x-linux-gnu-$tool"
    fi
  done
}

build() {
  local t0
  t0=$(now)
  if [ ! -f "$XBUILD/CMakeCache.txt" ]; then
    step "configure: $XBUILD"
    cmake -S "$ROOT" -B "$XBUILD" -G Ninja \
      -DCMAKE_TOOLCHAIN_FILE="$ROOT/cmake/cross/s390x-linux-gnu.cmake" \
      -DACCELCRYPT_CROSS_ROOT="$SYSROOT" -DACCELCRYPT_CROSS_BIN="$WRAPPERS" \
      -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
      -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" \
      -DACCELCRYPT_TEST_OPT_FLAGS=-O1 \
      -DACCELCRYPT_WERROR=ON -DACCELCRYPT_BUILD_ENGINE=OFF \
      -DACCELCRYPT_OSSL_MODULES_DIR=/usr/lib/s390x-linux-gnu/ossl-modules \
      >"$CROSS_DIR/configure.log" 2>&1 || {
        cat "$CROSS_DIR/configure.log" >&2
        return 1
      }
  fi
  step "build (-j$JOBS): ${TARGETS[*]}"
  local args=() t
  for t in "${TARGETS[@]}"; do args+=(--target "$t"); done
  cmake --build "$XBUILD" -j "$JOBS" "${args[@]}"
  step "s390x build: $(($(now) - t0)) s"
}

# run_tests: every test binary runs once under qemu-s390x (one emulator
# start per binary, not per test case), $JOBS at a time; each one's output
# goes to logs/<binary>.log and its gtest summary is printed.
run_tests() {
  local t0 t failed=0 total=0
  t0=$(now)
  mkdir -p "$CROSS_DIR/logs"
  rm -f "$CROSS_DIR"/logs/*.rc "$CROSS_DIR"/logs/*.log
  step "run under qemu-s390x (-j$JOBS; logs in $CROSS_DIR/logs)"
  local running=0
  for t in "${TARGETS[@]}"; do
    [ "$t" = p11_store_interop ] && continue
    if [ "$running" -ge "$JOBS" ]; then
      wait -n || true
      running=$((running - 1))
    fi
    (
      cd "$XBUILD"
      # The host's SoftHSMv2 is visible through qemu's -L fallback but is
      # another architecture: the RSA/DSA vector suite runs on the software
      # backend only (the PKCS#11 client backend is not exercised here).
      rc=0
      ACCELCRYPT_TEST_NO_SOFTHSM=1 timeout 1200 qemu-s390x -L "$SYSROOT" \
        "$XBUILD/bin/$t" --gtest_color=no >"$CROSS_DIR/logs/$t.log" 2>&1 || rc=$?
      echo "$rc" >"$CROSS_DIR/logs/$t.rc"
    ) &
    running=$((running + 1))
  done
  wait
  local rc summary ran
  for t in "${TARGETS[@]}"; do
    [ "$t" = p11_store_interop ] && continue
    rc=$(cat "$CROSS_DIR/logs/$t.rc" 2>/dev/null || echo "none")
    summary=$(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ tests?' "$CROSS_DIR/logs/$t.log" |
              sed 's/, listed below://' | tr -s ' \n' ' ' || true)
    ran=$(sed -n 's/^\[==========\] \([0-9]*\) tests\{0,1\} from .* ran\..*/\1/p' "$CROSS_DIR/logs/$t.log" || true)
    total=$((total + ${ran:-0}))
    if [ "$rc" = 0 ]; then
      echo "   ok    $t: $summary"
    else
      echo "   FAIL  $t (exit $rc): $summary"
      grep -E '^\[  FAILED  \]|Failure|rror' "$CROSS_DIR/logs/$t.log" | head -40 |
        sed 's/^/         /' || true
      failed=$((failed + 1))
    fi
  done
  step "qemu test run: $total test cases in $(($(now) - t0)) s, $failed binaries failed"
  [ "$failed" -eq 0 ]
}

# check_vector_coverage: every vector file is run by a binary built above.
# The core's vector runner (core_vector_suite_test) finds the AES, AES-GCM
# and SHA files itself; the HMAC, RSA and DSA files are named by the
# suites that run them (p11_mech_test, pkey_vectors_test,
# dsa_siggen_vectors_test). A new file nobody runs here fails the test.
check_vector_coverage() {
  local f rel runner=0 named=0 missing=()
  local sources=("$ROOT"/tests/pkcs11/mech/*.cc "$ROOT/tests/backends/pkcs11/pkey_vectors_test.cc"
                 "$ROOT"/tests/bigendian/*.cc)
  while IFS= read -r f; do
    rel=${f#"$ROOT/tests/vectors/"}
    case "$rel" in
      aes/* | aes-gcm/* | sha/*) runner=$((runner + 1)) ;;
      *)
        if grep -qF "\"$rel\"" "${sources[@]}"; then
          named=$((named + 1))
        else
          missing+=("$rel")
        fi
        ;;
    esac
  done < <(find "$ROOT/tests/vectors" -type f \( -name '*.rsp' -o -name '*.fax' \) | sort)
  step "vector files: $((runner + named)) run big-endian ($runner by the core's vector runner, $named by name in the RSA/DSA/HMAC suites)"
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "bigendian: vector files no s390x test runs: ${missing[*]}" >&2
    return 1
  fi
}

# exchange: a token directory written on one endianness is read on the
# other (p11_store_interop write/check), both ways.
exchange() {
  local cross=$XBUILD/bin/p11_store_interop
  local qemu=(qemu-s390x -L "$SYSROOT")
  local dir
  dir=$(mktemp -d "${TMPDIR:-/tmp}/accelcrypt-bigendian.XXXXXX")
  trap 'rm -rf "$dir"' RETURN
  step "token store: written natively ($(uname -m), little-endian), read on s390x"
  "$NATIVE_INTEROP" write "$dir/le"
  "${qemu[@]}" "$cross" check "$dir/le"
  step "token store: written on s390x (big-endian), read natively"
  "${qemu[@]}" "$cross" write "$dir/be"
  "$NATIVE_INTEROP" check "$dir/be"
  step "token store: both directories hold the same bytes for the same objects"
  "$NATIVE_INTEROP" compare "$dir/le" "$dir/be"
}

mkdir -p "$CROSS_DIR"
check_vector_coverage
prepare_root
write_wrappers
build
run_tests
if [ -n "$NATIVE_INTEROP" ]; then
  exchange
fi
step "passed"
