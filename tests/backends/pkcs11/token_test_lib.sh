# SPDX-License-Identifier: Apache-2.0
# Shared by token_recursion_test.sh and token_downgrade_test.sh (sourced):
# a work directory, pass/fail bookkeeping, a time-bounded runner, a token
# (SoftHSMv2 or accelcrypt's own module) and the "system-wide"
# configuration that loads accelcrypt the documented way with the PKCS#11
# client backend on it. Needs CASE, CLI, PROVIDER, BACKENDS, WORK set.

rm -rf "$WORK"
mkdir -p "$WORK/stats" "$WORK/stats-cli" "$WORK/state"
unset ACCELCRYPT_CONF ACCELCRYPT_STATS_DIR ACCELCRYPT_LOG_LEVEL OPENSSL_CONF \
  ACCELCRYPT_PKCS11_CONF ACCELCRYPT_PKCS11_TOKEN_DIR SOFTHSM2_CONF
export ACCELCRYPT_STATE_DIR="$WORK/state"
export ACCELCRYPT_BACKEND_DIR="$BACKENDS"
# Statistics of the `openssl` processes; the `accelcrypt` commands count in
# stats-cli (cli below).
export ACCELCRYPT_STATS_DIR="$WORK/stats"
# Seconds one command may take. Each takes about a second on an idle
# machine; the bound is for a shared, loaded CI host. A deadlock never ends.
LIMIT="${TOKEN_TEST_LIMIT:-60}"
LABEL=accelcrypt-tok
PIN=1234
SO_PIN=0000

passed=0
failed=0
pass() { passed=$((passed + 1)); }
fail() {
  failed=$((failed + 1))
  echo "FAIL: $*" >&2
}
finish() {
  echo "${CASE}: ${passed} passed, ${failed} failed"
  [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
  exit $?
}
skip() {
  echo "SKIP: $*"
  exit 77
}
check() {  # check DESCRIPTION COMMAND...
  local what="$1"
  shift
  if "$@"; then pass; else fail "$what"; fi
}
# bounded NAME CMD...: runs CMD with the time limit, its output in
# $WORK/NAME.log and its stderr in NAME.err; fails on a timeout (a hang)
# or a non-zero exit.
bounded() {
  local name=$1
  shift
  local start=$SECONDS rc
  timeout --kill-after=5 "$LIMIT" "$@" >"$WORK/$name.log" 2>"$WORK/$name.err"
  rc=$?
  echo "$name: exit $rc after $((SECONDS - start)) s"
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    fail "$name did not finish within $LIMIT s (deadlock?)"
    cat "$WORK/$name.log" "$WORK/$name.err" | sed 's/^/  | /' | tail -20 >&2
    return 1
  fi
  if [ "$rc" -ne 0 ]; then
    fail "$name exited $rc"
    cat "$WORK/$name.log" "$WORK/$name.err" | sed 's/^/  | /' | tail -20 >&2
    return 1
  fi
  pass
}

# softhsm_token: a SoftHSMv2 token labelled $LABEL in $WORK/tokens; sets
# MODULE. Skips without SoftHSMv2.
softhsm_token() {
  MODULE=/usr/lib/softhsm/libsofthsm2.so
  [ -r "$MODULE" ] || skip "SoftHSMv2 module $MODULE not installed"
  command -v softhsm2-util >/dev/null || skip "softhsm2-util not installed"
  mkdir -p "$WORK/tokens"
  printf 'directories.tokendir = %s\nobjectstore.backend = file\nlog.level = ERROR\nlibrary.reset_on_fork = true\n' \
    "$WORK/tokens" >"$WORK/softhsm2.conf"
  export SOFTHSM2_CONF="$WORK/softhsm2.conf"
  softhsm2-util --init-token --free --label "$LABEL" --so-pin "$SO_PIN" \
    --pin "$PIN" >"$WORK/init.log" 2>&1 || {
    fail "softhsm2-util --init-token"
    finish
  }
}

# accelcrypt_token MODULE_SO: a token labelled $LABEL on accelcrypt's own
# module in $WORK/p11tokens (ACCELCRYPT_PKCS11_CONF); sets MODULE.
accelcrypt_token() {
  MODULE=$1
  [ -n "$MODULE" ] && [ -f "$MODULE" ] ||
    skip "accelcrypt-pkcs11.so not built (${MODULE:-none})"
  command -v pkcs11-tool >/dev/null || skip "pkcs11-tool (opensc) not installed"
  mkdir -p "$WORK/p11tokens"
  # Low PBKDF2 cost: a test, not a deployment.
  printf '[accelcrypt]\nbackend_dir = %s\n\n[accelcrypt_pkcs11]\ntoken_dir = %s/p11tokens\nslots = 1\npbkdf2_iterations = 1000\n' \
    "$BACKENDS" "$WORK" >"$WORK/accelcrypt-pkcs11.conf"
  export ACCELCRYPT_PKCS11_CONF="$WORK/accelcrypt-pkcs11.conf"
  { pkcs11-tool --module "$MODULE" --slot-index 0 --init-token \
      --label "$LABEL" --so-pin "$SO_PIN" &&
      pkcs11-tool --module "$MODULE" --token-label "$LABEL" --login \
        --login-type so --so-pin "$SO_PIN" --init-pin --pin "$PIN"; } \
    >"$WORK/init.log" 2>&1 || {
    fail "pkcs11-tool --init-token / --init-pin on $MODULE"
    sed 's/^/  | /' "$WORK/init.log" >&2
    finish
  }
}

# "${ACLI[@]}" ARGS...: the accelcrypt command, its statistics apart (an
# array, not a function: `timeout` runs it).
ACLI=(env ACCELCRYPT_STATS_DIR="$WORK/stats-cli" "$CLI")

# system_config MODULE [engine] [EXTRA_SETTING_LINES]: the accelcrypt
# settings (the token ahead of the CPU backends for RSA, its PIN from a
# file) in $WORK/accelcrypt.conf, read by the
# command line (ACCELCRYPT_CONF), and the "system-wide" openssl.cnf: the
# packaged snippet's sections (default provider activated, accelcrypt
# soft-loaded and preferred) with `conf =` naming those settings; `engine`
# adds the ENGINE section of docs/engine.md (RSA and DSA by default,
# init = 1). Exports OPENSSL_CONF and ACCELCRYPT_CONF.
system_config() {
  local module=$1 engine=${2:-} extra=${3:-}
  printf '%s\n' "$PIN" >"$WORK/pin"
  chmod 600 "$WORK/pin"
  cat >"$WORK/accelcrypt.conf" <<CONF
[accelcrypt]
backends = pkcs11, x86, padlock, software
route.rsa = pkcs11, software
pkcs11.module = $module
pkcs11.token_label = $LABEL
pkcs11.pin_file = $WORK/pin
pkcs11.pin_state_dir = $WORK/state
$extra
CONF
  {
    printf 'openssl_conf = openssl_init\n\n[openssl_init]\nproviders = provider_sect\nalg_section = algorithm_sect\n'
    [ "$engine" = engine ] && printf 'engines = engine_sect\n'
    printf '\n[provider_sect]\ndefault = default_sect\naccelcrypt = accelcrypt_sect\n\n'
    printf '[default_sect]\nactivate = 1\n\n'
    printf '[accelcrypt_sect]\nmodule = %s\nactivate = 1\nsoft_load = 1\nconf = %s\n\n' \
      "$PROVIDER" "$WORK/accelcrypt.conf"
    printf '[algorithm_sect]\ndefault_properties = ?provider=accelcrypt\n'
    if [ "$engine" = engine ]; then
      printf '\n[engine_sect]\naccelcrypt = accelcrypt_engine_sect\n\n'
      printf '[accelcrypt_engine_sect]\nengine_id = accelcrypt\ndynamic_path = %s\nCONF = %s\ndefault_algorithms = RSA,DSA\ninit = 1\n' \
        "$ENGINE_SO" "$WORK/accelcrypt.conf"
    fi
  } >"$WORK/openssl.cnf"
  export OPENSSL_CONF="$WORK/openssl.cnf"
  export ACCELCRYPT_CONF="$WORK/accelcrypt.conf"
}

# rsa_key: $WORK/key.pem (RSA-2048), $WORK/pub.pem and a digest to sign,
# made without accelcrypt.
rsa_key() {
  OPENSSL_CONF=/dev/null "$OPENSSL" genpkey -algorithm RSA \
    -pkeyopt rsa_keygen_bits:2048 -out "$WORK/key.pem" 2>/dev/null &&
    OPENSSL_CONF=/dev/null "$OPENSSL" pkey -in "$WORK/key.pem" -pubout \
      -out "$WORK/pub.pem" 2>/dev/null || {
    fail "genpkey"
    finish
  }
  head -c 32 /dev/urandom >"$WORK/h32"
}

# stats_sum BACKEND ALG FIELD: FIELD (ops, errors, ...) of BACKEND/ALG
# summed over the `openssl` processes ($WORK/stats).
stats_sum() {
  "$CLI" stats --json "$WORK/stats" 2>/dev/null | python3 -c '
import json, sys
backend, alg, field = sys.argv[1:4]
print(sum(int(c[field]) for c in json.load(sys.stdin)["cells"]
          if c["algorithm"] == alg and c["backend"] == backend))
' "$@" 2>/dev/null || echo 0
}
