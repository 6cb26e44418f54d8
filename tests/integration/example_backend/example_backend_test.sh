#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# A third-party backend built against the installed -dev files alone
# (issue 14): stages this build's `dev` install component (backend.h, the
# backend kit, accelcrypt-backend.pc) into a temporary root, builds a copy
# of examples/backend out of tree against that root only (pkg-config), and
# checks with the built `accelcrypt` tool and the real openssl binary that
# the module loads, gets its configuration section, passes the vector files
# and serves through the provider.
#   example_backend_test.sh SOURCE_DIR BUILD_DIR ACCELCRYPT_BINARY PROVIDER_MODULE VECTOR_DIR
# Exit 77 = skipped (CTest SKIP_RETURN_CODE), with the reason printed.
set -euo pipefail

src=$1
build=$2
cli=$3
module=$4
vectors=$5
tmp=$(mktemp -d "${TMPDIR:-/tmp}/accelcrypt-example-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# shellcheck source=tests/integration/expect.sh
. "$(dirname "${BASH_SOURCE[0]}")/../expect.sh"
# example_block: the example backend's part of `accelcrypt list` output in
# $tmp/out (its heading line to the next blank line), into $tmp/block.
example_block() {
  sed -n '/^  example /,/^$/p' "$tmp/out" > "$tmp/block"
  [ -s "$tmp/block" ] || { cat "$tmp/out" >&2; fail "$1: example is not listed as loaded"; }
}
# toolchain CMD...: the build tools (CMake, the compiler, pkg-config,
# binutils) run without the sanitizer runtime the ASan stage preloads into
# every test (compilers leak on purpose); the programs under test keep it.
toolchain() {
  env -u LD_PRELOAD -u ASAN_OPTIONS -u LSAN_OPTIONS -u UBSAN_OPTIONS "$@"
}
# step CMD...: a build step; its output is shown only when it fails.
step() {
  local what=$1; shift
  toolchain "$@" > "$tmp/step.log" 2>&1 || { cat "$tmp/step.log" >&2; fail "$what failed"; }
}

for tool in cmake pkg-config openssl readelf nm; do
  command -v "$tool" > /dev/null ||
    { echo "skip: $tool not found (the example is built with CMake and pkg-config)"; exit 77; }
done
[ -x "$cli" ] || fail "accelcrypt binary $cli missing"
[ -f "$module" ] || fail "provider $module not built"
[ -f "$build/cmake_install.cmake" ] || fail "$build is not a configured build tree"
# The test chooses every setting itself.
unset ACCELCRYPT_CONF ACCELCRYPT_BACKEND_DIR PKG_CONFIG_PATH

# 1. The dev component, as `cmake --install` stages it for a package, and
#    nothing else.
stage=$tmp/stage
step "cmake --install --component dev" \
  env DESTDIR="$stage" cmake --install "$build" --component dev
(cd "$stage" && find . -type f | sed 's|^\.||' | sort) > "$tmp/staged"
hdr=$(grep '/include/accelcrypt/backend\.h$' "$tmp/staged" || true)
pc=$(grep '/pkgconfig/accelcrypt-backend\.pc$' "$tmp/staged" || true)
[ -n "$hdr" ] || { cat "$tmp/staged" >&2; fail "the dev component installs no accelcrypt/backend.h"; }
[ -n "$pc" ] || { cat "$tmp/staged" >&2; fail "the dev component installs no accelcrypt-backend.pc"; }
for kit in "$src"/core/include/accelcrypt/kit/*.h; do
  grep -qxF "$(dirname "$hdr")/kit/$(basename "$kit")" "$tmp/staged" ||
    fail "kit header $(basename "$kit") is not installed by the dev component"
done
extra=$(grep -v -e '/include/accelcrypt/' -e '/pkgconfig/accelcrypt-backend\.pc$' "$tmp/staged" || true)
[ -z "$extra" ] || fail "the dev component installs more than the ABI: $extra"
pass "dev component: $(wc -l < "$tmp/staged") files ($hdr, kit, $pc)"

# 2. pkg-config sees the staged root only: the .pc file as installed, its
#    absolute paths re-rooted by the sysroot (as for any staged install).
PKG_CONFIG_LIBDIR=$stage$(dirname "$pc")
export PKG_CONFIG_LIBDIR PKG_CONFIG_SYSROOT_DIR=$stage
cflags=$(toolchain pkg-config --cflags accelcrypt-backend) ||
  fail "pkg-config cannot read the staged accelcrypt-backend.pc"
include_dir=$stage$(dirname "$(dirname "$hdr")")
cflags=$(echo "$cflags" | xargs)
[ "$cflags" = "-I$include_dir" ] ||
  fail "pkg-config --cflags accelcrypt-backend gave '$cflags', expected -I$include_dir"
# The include path follows ${prefix} (a relocated or --define-prefix use).
prefix=$(toolchain pkg-config --variable=prefix accelcrypt-backend)
reloc=$(toolchain pkg-config --define-variable=prefix=/opt/reloc \
  --cflags accelcrypt-backend | xargs)
[ "$reloc" = "-I$stage/opt/reloc${include_dir#"$prefix"}" ] ||
  fail "with prefix=/opt/reloc, pkg-config --cflags gave '$reloc' (includedir does not follow \${prefix})"
backend_dir=$(toolchain pkg-config --variable=backenddir accelcrypt-backend)
case "$backend_dir" in
  "$stage"/*) ;;
  *) fail "backenddir '$backend_dir' is not under the staged root" ;;
esac
[ "$(toolchain pkg-config --variable=abi_version accelcrypt-backend)" = \
  "$(sed -n 's/^#define ACCELCRYPT_ABI_VERSION \([0-9]*\)u\{0,1\}$/\1/p' "$stage$hdr")" ] ||
  fail "the .pc file's abi_version differs from the header's ACCELCRYPT_ABI_VERSION"

# 3. A copy of the example, away from this tree, built against the stage
#    with warnings as errors, then installed into the .pc's backenddir.
cp -R "$src/examples/backend" "$tmp/example-src"
gen=()
if command -v ninja > /dev/null; then gen=(-G Ninja); fi
step "configuring the example" \
  cmake -S "$tmp/example-src" -B "$tmp/example-build" "${gen[@]}" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_COMPILE_WARNING_AS_ERROR=ON \
  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
step "building the example" cmake --build "$tmp/example-build"
commands=$tmp/example-build/compile_commands.json
grep -qF -- "$include_dir" "$commands" ||
  { cat "$commands" >&2; fail "the example was not compiled against the staged headers"; }
if grep -qF -e "$src/core" -e "$src/backends" -e "$build/" "$commands"; then
  cat "$commands" >&2
  fail "the example's compile command reaches into the source or build tree"
fi
step "installing the example" cmake --install "$tmp/example-build"
so=$backend_dir/example.so
[ -f "$so" ] || fail "cmake --install did not put example.so into backenddir $backend_dir"
# One exported symbol, and the load hints note naming the backend.
exported=$(toolchain nm -D --defined-only "$so" | awk '{ print $NF }')
[ "$exported" = accelcrypt_backend_entry ] ||
  fail "example.so exports more than accelcrypt_backend_entry: $exported"
toolchain readelf -n "$so" > "$tmp/out"
expect_out "^ +accelcrypt +0x" "load hints note"
grep -qa 'name=example' "$so" || fail "load hints do not name the backend"
# The fallback without pkg-config, and its error for a wrong directory.
step "configuring the example with -DACCELCRYPT_INCLUDE_DIR" \
  env PKG_CONFIG_LIBDIR=/nonexistent cmake -S "$tmp/example-src" \
  -B "$tmp/example-build2" "${gen[@]}" -DCMAKE_COMPILE_WARNING_AS_ERROR=ON \
  -DACCELCRYPT_INCLUDE_DIR="$include_dir" -DACCELCRYPT_BACKEND_DIR="$tmp/be2"
step "building the example with -DACCELCRYPT_INCLUDE_DIR" \
  cmake --build "$tmp/example-build2"
expect_rc 1 toolchain cmake -S "$tmp/example-src" -B "$tmp/example-build3" \
  -DACCELCRYPT_INCLUDE_DIR="$tmp/nothing"
# (CMake wraps the message: compare it as one line.)
tr -s '\n ' '  ' < "$tmp/out" | grep -qF "ACCELCRYPT_INCLUDE_DIR=$tmp/nothing holds no accelcrypt/backend.h" ||
  { cat "$tmp/out" >&2; fail "a wrong ACCELCRYPT_INCLUDE_DIR is not named in CMake's error"; }
pass "example.so built out of tree against the staged -dev files, installed to backenddir"

# 4. It loads, with its algorithms, beside the built-in software backend.
dir=$backend_dir
expect_rc 0 "$cli" list --backend-dir "$dir"
expect_out "^  example [0-9.]+  \[software\]  from $dir/example\.so$" "example backend line"
example_block "list"
grep -Eq '^    SHA2-256 +streaming,cpu ' "$tmp/block" || { cat "$tmp/block" >&2; fail "example lacks SHA2-256"; }
grep -Eq '^    AES-128-ECB +streaming,cpu ' "$tmp/block" || { cat "$tmp/block" >&2; fail "example lacks AES-128-ECB"; }
expect_out "^  SHA2-256 +software, example$" "SHA2-256 route includes example"
expect_out "^  AES-128-ECB +software, example$" "AES-128-ECB route includes example"
# Its known-answer tests pass when run (they otherwise run at first use).
expect_rc 0 "$cli" list --selftest --backend-dir "$dir"
expect_out "^Known-answer self-tests \(selftest = first-use\): [1-9][0-9]* passed, 0 failed$" "known-answer tests"
reject_out "FAILED +example" "example's known-answer tests"
pass "list: example loaded with SHA2-256 and AES-128-ECB, known-answer tests pass"

# 5. The vector files every backend runs (NIST CAVP, FIPS 180).
expect_rc 0 "$cli" selftest --backend-dir "$dir" --backend example --vectors "$vectors"
expect_out "^example +SHA2-256 +[1-9][0-9]* +0 +0 +ok$" "example SHA2-256 vectors"
expect_out "^example +AES-128-ECB +[1-9][0-9]* +0 +0 +ok$" "example AES-128-ECB vectors"
expect_out "^selftest: [1-9][0-9]* passed, 0 failed" "selftest summary"
reject_out "^software " "selftest --backend example tested another backend"
summary=$(grep '^selftest: ' "$tmp/out")
sha_n=$(awk '$1 == "example" && $2 == "SHA2-256" { print $3 }' "$tmp/out")
ecb_n=$(awk '$1 == "example" && $2 == "AES-128-ECB" { print $3 }' "$tmp/out")
# The same run on a copy with one SHA-256 digest changed must fail: the
# example's answers are compared, not just produced.
mkdir -p "$tmp/vec/sha"
sha_file=$vectors/sha/SHA256ShortMsg.rsp
[ -f "$sha_file" ] || fail "$sha_file missing"
awk '!done && toupper($0) ~ /^MD = / {
       n = index($0, "= ") + 2; c = substr($0, n, 1);
       $0 = substr($0, 1, n - 1) (c == "0" ? "1" : "0") substr($0, n + 1); done = 1 }
     { print }' "$sha_file" > "$tmp/vec/sha/SHA256ShortMsg.rsp"
cmp -s "$sha_file" "$tmp/vec/sha/SHA256ShortMsg.rsp" && fail "could not corrupt the vector copy"
expect_rc 1 "$cli" selftest --backend-dir "$dir" --backend example --vectors "$tmp/vec"
expect_out "^example +SHA2-256 +[0-9]+ +1 +[0-9]+ +FAIL" "a wrong digest is caught"
pass "selftest: example passes $sha_n SHA2-256 and $ecb_n AES-128-ECB vectors ($summary); a corrupted vector fails it"

# 5b. The registry-driven GoogleTest vector suites take it in as they take
#     the tree's own backends: every vector file of its algorithms passes.
suite=$build/bin/core_vector_suite_test
[ -x "$suite" ] || fail "$suite not built"
ACCELCRYPT_TEST_EXTRA_BACKEND_DIR=$dir "$suite" --gtest_list_tests > "$tmp/out" 2>&1 ||
  { cat "$tmp/out" >&2; fail "listing the vector suites failed"; }
expect_out "^  AllVectorFilesPass/example_SHA2_256" "digest vector suite has example/SHA2-256"
expect_out "^  AllVectorFilesPass/example_AES_128_ECB" "cipher vector suite has example/AES-128-ECB"
expect_rc 0 env ACCELCRYPT_TEST_EXTRA_BACKEND_DIR="$dir" "$suite" --gtest_filter='*example*'
expect_out "^\[  PASSED  \] 2 tests" "both example suites ran and passed"
pass "GoogleTest vector suites: example/SHA2-256 and example/AES-128-ECB pass"

# 6. Its configuration section reaches it: `algorithms` changes what it
#    offers, in a [backend_example] section and as example.algorithms.
printf '[accelcrypt]\nbackend_dir = %s\n\n[backend_example]\nalgorithms = sha256\n' "$dir" > "$tmp/section.cnf"
expect_rc 0 "$cli" list --config "$tmp/section.cnf"
example_block "[backend_example] algorithms = sha256"
grep -Eq '^    SHA2-256 ' "$tmp/block" || { cat "$tmp/block" >&2; fail "algorithms = sha256 dropped SHA2-256"; }
grep -Eq '^    AES-128-ECB ' "$tmp/block" && { cat "$tmp/block" >&2; fail "algorithms = sha256 still offers AES-128-ECB"; }
grep -q 'offers sha256 (example.algorithms)$' "$tmp/block" || { cat "$tmp/block" >&2; fail "describe line does not show the setting"; }
expect_out "^  AES-128-ECB +software$" "AES-128-ECB route without example"
expect_out "^  SHA2-256 +software, example$" "SHA2-256 route keeps example"
printf '[accelcrypt]\nbackend_dir = %s\nexample.algorithms = AES-128-ECB\n' "$dir" > "$tmp/dotted.cnf"
expect_rc 0 "$cli" list --config "$tmp/dotted.cnf"
example_block "example.algorithms = AES-128-ECB"
grep -Eq '^    SHA2-256 ' "$tmp/block" && { cat "$tmp/block" >&2; fail "example.algorithms = AES-128-ECB still offers SHA2-256"; }
grep -Eq '^    AES-128-ECB ' "$tmp/block" || { cat "$tmp/block" >&2; fail "example.algorithms = AES-128-ECB dropped AES-128-ECB"; }
expect_out "^  SHA2-256 +software$" "SHA2-256 route without example"
# A setting that selects nothing declines (listed with its reason); a
# wrong one is an error naming the value; `disable` keeps it out.
printf '[accelcrypt]\nbackend_dir = %s\n[backend_example]\nalgorithms = none\n' "$dir" > "$tmp/none.cnf"
expect_rc 0 "$cli" list --config "$tmp/none.cnf"
expect_out "^  declined +$dir/example\.so +- +example: declined: example\.algorithms = 'none' selects nothing$" "decline with its reason"
reject_out "^  example " "a declined backend listed as loaded"
printf '[accelcrypt]\nbackend_dir = %s\n[backend_example]\nalgorithms = sha256, md5\n' "$dir" > "$tmp/bad.cnf"
expect_rc 0 "$cli" list --config "$tmp/bad.cnf"
expect_out "^  FAILED +$dir/example\.so +- +example: example\.algorithms: unknown algorithm 'md5'" "unknown algorithm named"
printf '[accelcrypt]\nbackend_dir = %s\ndisable = example\n' "$dir" > "$tmp/disable.cnf"
expect_rc 0 "$cli" list --all-events --config "$tmp/disable.cnf"
expect_out "^  [A-Za-z]+ +example +- +not loaded: excluded by configuration$" "disable = example"
reject_out "^  example " "a disabled backend listed as loaded"
pass "configuration section: algorithms = sha256 / AES-128-ECB / none / md5, disable = example"

# 7. The real openssl binary with the provider from a config file: SHA-256
#    and AES-128-ECB served by example (first in `backends`), with the
#    answers of OpenSSL's default provider.
"$cli" config --module "$module" > "$tmp/openssl.cnf" ||
  fail "accelcrypt config --module $module failed"
printf '[accelcrypt]\nbackend_dir = %s\nbackends = example, software\n' "$dir" > "$tmp/serve.cnf"
export ACCELCRYPT_CONF=$tmp/serve.cnf
printf 'abc' > "$tmp/abc"
expect_rc 0 "$cli" trace --conf "$tmp/openssl.cnf" -o "$tmp/report.abc" -- \
  openssl dgst -sha256 -r -out "$tmp/dgst.abc" "$tmp/abc"
grep -q '^ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad ' "$tmp/dgst.abc" ||
  { cat "$tmp/dgst.abc" "$tmp/report.abc" >&2; fail "SHA-256 of abc through example is wrong"; }
head -c 1000000 /dev/urandom > "$tmp/msg"
expect_rc 0 "$cli" trace --conf "$tmp/openssl.cnf" -o "$tmp/report" -- \
  openssl dgst -sha256 -r -out "$tmp/dgst" "$tmp/msg"
OPENSSL_CONF=/dev/null openssl dgst -sha256 -r -out "$tmp/dgst.default" "$tmp/msg"
cmp -s "$tmp/dgst" "$tmp/dgst.default" ||
  { cat "$tmp/dgst" "$tmp/dgst.default" >&2; fail "SHA-256 through example differs from the default provider's"; }
cp "$tmp/report" "$tmp/out"
expect_out "^accelcrypt trace: 1 process loaded accelcrypt" "openssl loaded the provider"
awk '$1 == "example" && $2 == "SHA2-256" && $3 > 0 && $4 >= 1000000 { found = 1 }
     END { exit !found }' "$tmp/report" || { cat "$tmp/report" >&2; fail "example did not serve openssl dgst -sha256"; }
reject_out "^software +SHA2-256 " "software served SHA2-256 instead of example"
sha_row=$(grep -E '^example +SHA2-256 ' "$tmp/report")
key=000102030405060708090a0b0c0d0e0f
expect_rc 0 "$cli" trace --conf "$tmp/openssl.cnf" -o "$tmp/report.ecb" -- \
  openssl enc -aes-128-ecb -K "$key" -in "$tmp/msg" -out "$tmp/ecb"
OPENSSL_CONF=/dev/null openssl enc -aes-128-ecb -K "$key" -in "$tmp/msg" -out "$tmp/ecb.default"
cmp -s "$tmp/ecb" "$tmp/ecb.default" || fail "AES-128-ECB through example differs from the default provider's"
awk '$1 == "example" && $2 == "AES-128-ECB" && $3 > 0 && $4 >= 1000000 { found = 1 }
     END { exit !found }' "$tmp/report.ecb" || { cat "$tmp/report.ecb" >&2; fail "example did not serve openssl enc -aes-128-ecb"; }
ecb_row=$(grep -E '^example +AES-128-ECB ' "$tmp/report.ecb")
unset ACCELCRYPT_CONF
pass "openssl through the provider: example served SHA2-256 [$(echo "$sha_row" | xargs)] and AES-128-ECB [$(echo "$ecb_row" | xargs)], answers equal the default provider's"
