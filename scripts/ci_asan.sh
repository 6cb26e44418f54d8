#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# CI stage: an AddressSanitizer + UndefinedBehaviorSanitizer build (GCC,
# warnings as errors) in build-asan/, running the unit, integration and
# fuzz-corpus suites with leak checking on. docs/testing.md.
#
# The shipped programs the integration tests drive (openssl, pkcs11-tool,
# p11tool, sshd, nginx...) are not sanitized but load our sanitized
# provider, module and engine; the ASan runtime must then be the first
# library of the process, so it is preloaded (LD_PRELOAD) for the whole
# test run. LeakSanitizer then watches those programs too: third-party
# leaks are suppressed in tests/sanitizers/lsan.supp, each with its reason.
#   ACCELCRYPT_ASAN_BUILD_DIR  build directory (default: build-asan/)
#   CTEST_ARGS                 extra ctest arguments (e.g. -R cli)
set -euo pipefail
# shellcheck source=scripts/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# shellcheck source=scripts/ci_sanitizer_env.sh
. "$ACCELCRYPT_ROOT/scripts/ci_sanitizer_env.sh"

build=${ACCELCRYPT_ASAN_BUILD_DIR:-$ACCELCRYPT_ROOT/build-asan}
accelcrypt_install_deps
accelcrypt_timed "asan build" accelcrypt_sanitizer_build "$build" address,undefined

# OpenSSL's evp_test (an unsanitized OpenSSL test program, built from the
# OpenSSL source) is shared with the regular build when it has one.
if [ ! -e "$build/third_party" ] && [ -d "$ACCELCRYPT_BUILD_DIR/third_party" ]; then
  ln -s "$ACCELCRYPT_BUILD_DIR/third_party" "$build/third_party"
fi

supp=$ACCELCRYPT_ROOT/tests/sanitizers
asan_rt=$(gcc -print-file-name=libasan.so)
if [ ! -e "$asan_rt" ]; then
  echo "ci_asan.sh: GCC's libasan.so not found" >&2
  exit 1
fi
export LD_PRELOAD=$asan_rt
# Tests that set their own LD_PRELOAD (the PadLock emulator) put this first.
export ACCELCRYPT_SANITIZER_PRELOAD=$asan_rt
# detect_leaks: on. abort_on_error=0: a report exits with ASan's exit code
# (a test failure, not a core dump). handle_segv=0 / allow_user_segv_handler:
# the PadLock emulator and the SIGBUS tests install their own handlers.
export ASAN_OPTIONS=suppressions=$supp/asan.supp:detect_leaks=1:halt_on_error=1:abort_on_error=0:detect_odr_violation=0:allow_user_segv_handler=1:handle_sigill=0:handle_sigbus=0:handle_segv=0:verify_asan_link_order=0
export LSAN_OPTIONS=suppressions=$supp/lsan.supp:print_suppressions=0:use_tls=0
export UBSAN_OPTIONS=suppressions=$supp/ubsan.supp:print_stacktrace=1:halt_on_error=1
export ACCELCRYPT_STATS_DIR=${ACCELCRYPT_STATS_DIR:-none}
# Every process of the integration tests pays the ASan runtime's start and
# LeakSanitizer's scan at its exit (about half a second here): the tests
# that start hundreds of openssl processes over a grid of sizes run fewer
# sizes (each mode's empty, partial-block and multi-block paths still run;
# the test stage runs every size).
export ACCELCRYPT_TEST_QUICK=1
# Tests that start a program in a cleared environment (env -i: the
# configuration-only cases of cli_checks.sh and the server tests) pass
# these words on (no spaces in the paths, as in the rest of the script).
export ACCELCRYPT_SANITIZER_ENV="LD_PRELOAD=$LD_PRELOAD ASAN_OPTIONS=$ASAN_OPTIONS LSAN_OPTIONS=$LSAN_OPTIONS UBSAN_OPTIONS=$UBSAN_OPTIONS"

# OpenSC 0.23's pkcs11-tool leaks in its own code: the PIN copy of every
# --login run (a calloc in pkcs11-tool, whatever the module: SoftHSMv2 alone
# shows it) and the BIGNUMs of --read-object --type pubkey. A suppression by
# module name would also hide leaks of our module under pkcs11-tool's
# frames, so a PATH wrapper runs pkcs11-tool with leak detection off and
# every other ASan/UBSan check on. Our module's leaks are checked by its own
# tests, the fuzzers and the other clients (p11tool, libp11, openssl).
wrap=$build/sanitizer-bin
mkdir -p "$wrap"
cat > "$wrap/pkcs11-tool" <<'WRAP'
#!/bin/sh
ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" exec /usr/bin/pkcs11-tool "$@"
WRAP
chmod +x "$wrap/pkcs11-tool"
export PATH=$wrap:$PATH

log="$build/Testing/ci_asan.log"
mkdir -p "$(dirname "$log")"
# One test hits a leak in third-party code that no suppression can name
# without also hiding ours (docs/testing.md, "Findings"): libcrypto 3.0
# keeps the provider object when a provider's activation from openssl.cnf
# fails (cli_bad_config). It runs in a second pass with leak detection off;
# every other ASan and UBSan check stays on there.
# use_tls=0 (LSAN_OPTIONS above): GCC 12's LeakSanitizer crashes at the exit
# of some processes while it scans their dynamic-TLS blocks ("Tracer caught
# signal 11", "DTLS ... at 0x78"); which processes depends on the memory
# layout (it hit cli_trace, then ten openssl tests once the PKCS#11 client
# backend stopped being loaded and unloaded in every process).
# intercept_tls_get_addr=0 avoids it too but deadlocks setlocale() in curl
# and p11-kit. Not scanning TLS can only add leak reports (an object
# referenced from TLS alone looks leaked), never hide one; the one it adds,
# glibc's loader's object names, is suppressed in lsan.supp.
third_party_leaks='^(cli_bad_config)$'
# bigendian_s390x is left to the test stage: it cross-builds with the
# (unsanitized) s390x compiler, and apt-get's http method, run by it for
# its private sysroot, hangs with the ASan runtime preloaded.
# packaging_svr4 runs no code of ours (cmake --install and the SVR4
# recipe's scripts over the staged files): under the preloaded runtime
# only its shell tools slowed down (82 s against 26 s).
not_here='^(bigendian_s390x|packaging_svr4)$'
set +e
start=$(date +%s)
# shellcheck disable=SC2086  # CTEST_ARGS is a word list
ctest --test-dir "$build" --output-on-failure -j "$(accelcrypt_jobs)" \
  -L 'unit|integration|fuzz' -E "$third_party_leaks|$not_here" --timeout 1800 \
  ${CTEST_ARGS:-} 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0 \
  ACCELCRYPT_SANITIZER_ENV=${ACCELCRYPT_SANITIZER_ENV/detect_leaks=1/detect_leaks=0} \
  ctest --test-dir "$build" --output-on-failure -j "$(accelcrypt_jobs)" \
  -R "$third_party_leaks" --timeout 1800 2>&1 | tee -a "$log"
rc2=${PIPESTATUS[0]}
[ "$rc" -ne 0 ] || rc=$rc2
set -e
echo "== asan tests: $(( $(date +%s) - start )) s (exit $rc)"
exit "$rc"
