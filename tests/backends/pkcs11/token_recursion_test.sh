#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# No deadlock when the token module uses OpenSSL (issue 30 item 2): the
# system-wide openssl.cnf loads accelcrypt (the provider, and in the engine
# case the ENGINE too) with the PKCS#11 client backend configured on a
# token whose module itself initialises OpenSSL and so loads accelcrypt
# again from its C_Initialize: SoftHSMv2, or accelcrypt's own module. Every
# entry point must finish: `accelcrypt list`, `selftest`, `calibrate`
# (short cells), `stats`, and `openssl` signing through the token. Each
# command runs under `timeout`: a regression fails here instead of hanging
# CI.
#   token_recursion_test.sh softhsm|accelcrypt|engine
# (engine: SoftHSMv2, with the accelcrypt ENGINE also in openssl.cnf.)
# Environment (set by CMake): OPENSSL_BIN, ACCELCRYPT_CLI, ACCELCRYPT_PROVIDER
# (accelcrypt.so), ACCELCRYPT_ENGINE (may be empty), ACCELCRYPT_P11_MODULE
# (accelcrypt-pkcs11.so, may be empty), ACCELCRYPT_TEST_BACKENDS, WORK_DIR.
# Exit 0 pass, 1 fail, 77 skip (with the reason printed).
set -u

CASE="${1:?usage: token_recursion_test.sh softhsm|accelcrypt|engine}"
OPENSSL="${OPENSSL_BIN:-openssl}"
CLI="${ACCELCRYPT_CLI:?}"
PROVIDER="${ACCELCRYPT_PROVIDER:?}"
ENGINE_SO="${ACCELCRYPT_ENGINE:-}"
BACKENDS="${ACCELCRYPT_TEST_BACKENDS:?}"
WORK="${WORK_DIR:?}/recursion-${CASE}"
# shellcheck source=tests/backends/pkcs11/token_test_lib.sh
. "$(dirname "$0")/token_test_lib.sh"

[ -f "$BACKENDS/pkcs11.so" ] ||
  skip "PKCS#11 client backend not built ($BACKENDS/pkcs11.so)"
case "$CASE" in
  softhsm) softhsm_token ;;
  engine)
    [ -n "$ENGINE_SO" ] && [ -f "$ENGINE_SO" ] || skip "accelcrypt ENGINE not built"
    softhsm_token
    ;;
  accelcrypt) accelcrypt_token "${ACCELCRYPT_P11_MODULE:-}" ;;
  *)
    echo "unknown case $CASE" >&2
    exit 2
    ;;
esac
system_config "$MODULE" "$([ "$CASE" = engine ] && echo engine)"
rsa_key

if bounded list "${ACLI[@]}" list; then
  check "list shows the pkcs11 backend on the token" \
    grep -q "PKCS#11 client: token '$LABEL'" "$WORK/list.log"
fi
# The vector suites are AES and SHA: the CPU backend's, in a command whose
# core starts the token (the hang was there).
bounded selftest "${ACLI[@]}" selftest --backend software
bounded calibrate "${ACLI[@]}" calibrate --alg rsa --pkey-sizes 2048 \
  --seconds-per-cell 0.05 -o "$WORK/calibration.json"
bounded sign "$OPENSSL" pkeyutl -sign -inkey "$WORK/key.pem" \
  -in "$WORK/h32" -out "$WORK/sig" -pkeyopt digest:sha256
check "the token's signature verifies (default provider)" \
  env OPENSSL_CONF=/dev/null "$OPENSSL" pkeyutl -verify -pubin \
  -inkey "$WORK/pub.pem" -in "$WORK/h32" -sigfile "$WORK/sig" \
  -pkeyopt digest:sha256
bounded stats-cli "${ACLI[@]}" stats "$WORK/stats-cli"
if bounded stats "${ACLI[@]}" stats "$WORK/stats"; then
  signed=$(stats_sum pkcs11 RSA-SIGN ops)
  echo "RSA-SIGN served by pkcs11 in openssl pkeyutl: $signed"
  check "stats: the token signed for openssl" test "${signed:-0}" -gt 0
fi
finish
