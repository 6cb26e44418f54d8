#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# No silent downgrade (issue 30 item 4): a token backend that cannot start,
# or fails its known-answer test, in a real `openssl` process loading the
# provider the documented way, is served around (the signature still
# comes, from the CPU) AND shows: one line on stderr (and syslog) per
# process, and an error in `accelcrypt stats`.
#   token_downgrade_test.sh init_error|kat_error
# init_error: the configured token label does not exist (as a daemon's
#   worker sees it when its environment lost SOFTHSM2_CONF);
# kat_error: the token signs wrongly (latency_shim.so flips a bit of every
#   signature), so the RSA-SIGN known-answer test fails.
# Environment (set by CMake): OPENSSL_BIN, ACCELCRYPT_CLI, ACCELCRYPT_PROVIDER,
# ACCELCRYPT_TEST_BACKENDS, ACCELCRYPT_LATENCY_SHIM, WORK_DIR.
# Exit 0 pass, 1 fail, 77 skip (with the reason printed).
set -u

CASE="${1:?usage: token_downgrade_test.sh init_error|kat_error}"
OPENSSL="${OPENSSL_BIN:-openssl}"
CLI="${ACCELCRYPT_CLI:?}"
PROVIDER="${ACCELCRYPT_PROVIDER:?}"
BACKENDS="${ACCELCRYPT_TEST_BACKENDS:?}"
WORK="${WORK_DIR:?}/downgrade-${CASE}"
# shellcheck source=tests/backends/pkcs11/token_test_lib.sh
. "$(dirname "$0")/token_test_lib.sh"

[ -f "$BACKENDS/pkcs11.so" ] ||
  skip "PKCS#11 client backend not built ($BACKENDS/pkcs11.so)"
softhsm_token
case "$CASE" in
  init_error)
    system_config "$MODULE"
    # The settings name a token this process does not see.
    sed -i "s/^pkcs11.token_label = .*/pkcs11.token_label = absent-token/" \
      "$WORK/accelcrypt.conf"
    want_line='accelcrypt: backend pkcs11 not started: .*absent-token'
    want_cell=INIT
    ;;
  kat_error)
    [ -f "${ACCELCRYPT_LATENCY_SHIM:-}" ] || skip "latency_shim.so not built"
    export ACCELCRYPT_SHIM_MODULE="$MODULE" ACCELCRYPT_SHIM_FLIP_EVERY=1
    # Another token identity, so SoftHSMv2's quirks do not apply.
    export ACCELCRYPT_SHIM_MANUFACTURER="accelcrypt test shim"
    system_config "$ACCELCRYPT_LATENCY_SHIM"
    want_line='accelcrypt: pkcs11: RSA-SIGN failed its known-answer test'
    want_cell=RSA-SIGN
    ;;
  *)
    echo "unknown case $CASE" >&2
    exit 2
    ;;
esac
rsa_key

# Two processes: each says it once (the line is per process), and each
# still signs (served by the CPU).
for i in 1 2; do
  bounded "sign$i" "$OPENSSL" pkeyutl -sign -inkey "$WORK/key.pem" \
    -in "$WORK/h32" -out "$WORK/sig$i" -pkeyopt digest:sha256
  check "signature $i verifies" env OPENSSL_CONF=/dev/null "$OPENSSL" \
    pkeyutl -verify -pubin -inkey "$WORK/pub.pem" -in "$WORK/h32" \
    -sigfile "$WORK/sig$i" -pkeyopt digest:sha256
  n=$(grep -c "$want_line" "$WORK/sign$i.err")
  echo "process $i stderr: $n line(s) matching '$want_line'"
  sed 's/^/  | /' "$WORK/sign$i.err"
  check "process $i: exactly one line for the operator" test "$n" -eq 1
done
errors=$(stats_sum pkcs11 "$want_cell" errors)
served=$(stats_sum software RSA-SIGN ops)
echo "stats: pkcs11 $want_cell errors $errors; software RSA-SIGN ops $served"
check "stats: an error for pkcs11 in $want_cell in each process" \
  test "$errors" -ge 2
check "stats: the signatures were served by the CPU" test "$served" -ge 2
bounded stats "$CLI" stats "$WORK/stats"
check "accelcrypt stats shows the pkcs11 error" \
  grep -Eq "pkcs11 +$want_cell +[0-9]+ +[0-9]+ +[1-9]" "$WORK/stats.log"
finish
