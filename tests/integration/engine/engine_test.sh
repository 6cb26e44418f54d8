#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The accelcrypt ENGINE (engines-3/accelcrypt.so) with the real `openssl`
# binary and a legacy-API program. One case per invocation:
#   engine_test.sh CASE
# Environment (set by CMake): OPENSSL_BIN, ACCELCRYPT_ENGINE (the .so),
# ACCELCRYPT_TEST_BACKENDS, ACCELCRYPT_CLI, ENGINE_LEGACY_TEST (the test
# program), WORK_DIR.
# Exit 0 pass, 1 fail, 77 skip (with the reason printed).
set -u

CASE="${1:?usage: engine_test.sh CASE}"
OPENSSL="${OPENSSL_BIN:-openssl}"
ENGINE_SO="${ACCELCRYPT_ENGINE:?}"
BACKENDS="${ACCELCRYPT_TEST_BACKENDS:?}"
CLI="${ACCELCRYPT_CLI:?}"
WORK="${WORK_DIR:?}/${CASE}"

rm -rf "$WORK"
mkdir -p "$WORK"
unset ACCELCRYPT_CONF ACCELCRYPT_STATS_DIR ACCELCRYPT_LOG_LEVEL OPENSSL_CONF
export ACCELCRYPT_STATE_DIR="$WORK/state"
export ACCELCRYPT_BACKEND_DIR="$BACKENDS"
# `-engine accelcrypt` and `openssl engine accelcrypt` find it here.
export OPENSSL_ENGINES
OPENSSL_ENGINES=$(dirname "$ENGINE_SO")

passed=0
failed=0
pass() { passed=$((passed + 1)); }
fail() {
  failed=$((failed + 1))
  echo "FAIL: $*" >&2
}
check() {  # check DESCRIPTION COMMAND...
  local what="$1"
  shift
  if "$@"; then pass; else fail "$what"; fi
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

# stats_ops DIR ALG [BACKEND]: ops of ALG (served by BACKEND when given) in
# the statistics of DIR, as `accelcrypt stats --json` sums them.
stats_ops() {
  "$CLI" stats --json "$1" | python3 -c '
import json, sys
alg = sys.argv[1]
backend = sys.argv[2] if len(sys.argv) > 2 else None
print(sum(int(c["ops"]) for c in json.load(sys.stdin)["cells"]
          if c["algorithm"] == alg and backend in (None, c["backend"])))
' "${@:2}"
}
# at_least WHAT N MIN: N >= MIN, saying both.
at_least() {
  echo "$1: $2 (want >= $3)"
  [ "$2" -ge "$3" ]
}

# engine_cnf FILE [CTRL LINES...]: an openssl.cnf loading the engine by
# path as the default for RSA and DSA, the ctrl lines before `init`.
engine_cnf() {
  local file=$1
  shift
  {
    printf 'openssl_conf = openssl_init\n\n[openssl_init]\nengines = engine_section\n\n'
    printf '[engine_section]\naccelcrypt = accelcrypt_section\n\n'
    printf '[accelcrypt_section]\nengine_id = accelcrypt\ndynamic_path = %s\n' "$ENGINE_SO"
    local l
    for l in "$@"; do printf '%s\n' "$l"; done
    printf 'default_algorithms = RSA,DSA\ninit = 1\n'
  } >"$file"
}

case "$CASE" in
  list)
    out=$("$OPENSSL" engine -t -c accelcrypt 2>&1)
    echo "$out"
    check "engine id and name" grep -q \
      '^(accelcrypt) accelcrypt: accelerators through the accelcrypt router' \
      <<<"$out"
    check "RSA, DSA and the SHA digests listed" grep -q \
      '\[RSA, DSA, SHA1, SHA224, SHA256, SHA384, SHA512\]' <<<"$out"
    check "available (init works)" grep -q '\[ available \]' <<<"$out"
    check "ctrl commands listed" grep -q 'CONF: Path of an accelcrypt config' \
      <(OPENSSL_ENGINES=/nonexistent "$OPENSSL" engine -vvv -pre SO_PATH:"$ENGINE_SO" \
        -pre ID:accelcrypt -pre LOAD dynamic 2>&1)
    # The full path through the dynamic engine, as `-engine /path.so`.
    head -c 300000 /dev/urandom >"$WORK/data"
    want=$(sha256sum "$WORK/data" | cut -d' ' -f1)
    mkdir "$WORK/stats"
    got=$(OPENSSL_ENGINES=/nonexistent ACCELCRYPT_STATS_DIR="$WORK/stats" \
      "$OPENSSL" dgst -engine "$ENGINE_SO" -sha256 -r "$WORK/data" 2>/dev/null |
      cut -d' ' -f1)
    check "dgst -engine PATH -sha256 matches sha256sum" [ "$got" = "$want" ]
    check "SHA2-256 served through the engine's core" \
      at_least "SHA2-256 ops" "$(stats_ops "$WORK/stats" SHA2-256)" 1
    ;;

  legacy)
    [ -x "${ENGINE_LEGACY_TEST:-}" ] || { fail "engine_legacy_test not built"; finish; }
    mkdir "$WORK/stats"
    # stats_dir comes from the engine section (a ctrl command), not from
    # the environment.
    engine_cnf "$WORK/openssl.cnf" "STATS_DIR = $WORK/stats"
    rounds=8
    check "legacy RSA/DSA calls with the engine set by openssl.cnf" \
      env OPENSSL_CONF="$WORK/openssl.cnf" ENGINE_TEST_ROUNDS=$rounds \
      "$ENGINE_LEGACY_TEST"
    "$CLI" stats "$WORK/stats"
    # RsaSignMatchesOpenSsl signs 2 x rounds, RsaSignFromThreads 4 x rounds.
    check "RSA_sign served by the engine's core" \
      at_least "RSA-SIGN ops" "$(stats_ops "$WORK/stats" RSA-SIGN)" $((6 * rounds))
    check "RSA decrypt/encrypt/verify served by the engine's core" \
      at_least "RSA-CRYPT ops" "$(stats_ops "$WORK/stats" RSA-CRYPT)" $((2 * rounds))
    # Each round signs once and verifies a good signature once through the
    # engine (a refused signature is the caller's error, not counted).
    check "DSA_do_sign served by the engine's core" \
      at_least "DSA ops" "$(stats_ops "$WORK/stats" DSA)" $((2 * rounds))
    ;;

  speed)
    "$CLI" trace --json -o "$WORK/trace.json" -- \
      "$OPENSSL" speed -engine accelcrypt -seconds 1 rsa2048 dsa2048 \
      >"$WORK/speed.out" 2>&1
    rc=$?
    cat "$WORK/speed.out" | grep -E '^(rsa|dsa) 2048|private'
    check "openssl speed -engine accelcrypt exits 0" [ "$rc" -eq 0 ]
    # "Doing 2048 bits private rsa's for 1s: N 2048 bits private RSA's":
    # every one of the N signatures must be in the engine core's counts.
    rsa_n=$(sed -n "s/.*: \([0-9]*\) 2048 bits private RSA's.*/\1/p" "$WORK/speed.out")
    dsa_n=$(sed -n "s/.*: \([0-9]*\) 2048 bits DSA signs.*/\1/p" "$WORK/speed.out")
    check "speed reported its RSA signatures" [ -n "$rsa_n" ]
    check "speed reported its DSA signatures" [ -n "$dsa_n" ]
    ops() {
      python3 -c '
import json, sys
print(sum(int(c["ops"]) for c in json.load(open(sys.argv[1]))["cells"]
          if c["algorithm"] == sys.argv[2]))' "$WORK/trace.json" "$1"
    }
    check "all of speed's RSA signatures went through the engine" \
      at_least "RSA-SIGN ops" "$(ops RSA-SIGN)" "${rsa_n:-1}"
    check "all of speed's DSA signatures went through the engine" \
      at_least "DSA ops" "$(ops DSA)" "${dsa_n:-1}"
    ;;

  pkcs11)
    module=/usr/lib/softhsm/libsofthsm2.so
    [ -r "$module" ] || skip "SoftHSMv2 module $module not installed"
    command -v softhsm2-util >/dev/null || skip "softhsm2-util not installed"
    [ -f "$BACKENDS/pkcs11.so" ] ||
      skip "PKCS#11 client backend not built ($BACKENDS/pkcs11.so)"
    mkdir -p "$WORK/tokens" "$WORK/stats"
    printf 'directories.tokendir = %s\nobjectstore.backend = file\nlog.level = ERROR\nlibrary.reset_on_fork = true\n' \
      "$WORK/tokens" >"$WORK/softhsm2.conf"
    export SOFTHSM2_CONF="$WORK/softhsm2.conf"
    softhsm2-util --init-token --free --label accelcrypt-eng --so-pin 0000 \
      --pin 1234 >"$WORK/init.log" 2>&1 || { fail "token init"; finish; }
    printf '1234\n' >"$WORK/pin"
    chmod 600 "$WORK/pin"
    # The token settings in an accelcrypt config file named by the engine's
    # CONF command; the backends order by the BACKENDS command.
    printf '[accelcrypt]\npkcs11.module = %s\npkcs11.token_label = accelcrypt-eng\npkcs11.pin_file = %s\npkcs11.dsa_max_key_bits = 3072\n' \
      "$module" "$WORK/pin" >"$WORK/accelcrypt.conf"
    engine_cnf "$WORK/openssl.cnf" "CONF = $WORK/accelcrypt.conf" \
      "BACKENDS = pkcs11, software" "STATS_DIR = $WORK/stats"
    OPENSSL_CONF="$WORK/openssl.cnf" "$OPENSSL" speed -seconds 1 rsa2048 \
      >"$WORK/speed.out" 2>&1
    rc=$?
    grep -E '^rsa 2048|private' "$WORK/speed.out"
    check "openssl speed rsa2048 with the engine from openssl.cnf exits 0" [ "$rc" -eq 0 ]
    "$CLI" stats "$WORK/stats"
    check "RSA-SIGN served by the PKCS#11 client backend" \
      at_least "pkcs11 RSA-SIGN ops" "$(stats_ops "$WORK/stats" RSA-SIGN pkcs11)" 10
    if [ -x "${ENGINE_LEGACY_TEST:-}" ]; then
      rm -f "$WORK/stats"/*
      check "legacy RSA/DSA calls through the token" \
        env OPENSSL_CONF="$WORK/openssl.cnf" ENGINE_TEST_ROUNDS=2 \
        "$ENGINE_LEGACY_TEST" --gtest_filter='*Rsa*'
      check "RSA_sign served by the PKCS#11 client backend" \
        at_least "pkcs11 RSA-SIGN ops" "$(stats_ops "$WORK/stats" RSA-SIGN pkcs11)" 12
    fi
    ;;

  bad_config)
    # Each bad setting is refused with a message naming it. `openssl
    # engine -pre` prints the error and still exits 0, so only the message
    # is checked there; the other commands must also fail.
    expect_error() {  # expect_error WHAT MUST_FAIL PATTERN COMMAND...
      local what=$1 must_fail=$2 pattern=$3
      shift 3
      local out rc
      out=$("$@" 2>&1)
      rc=$?
      if { [ "$must_fail" = 0 ] || [ "$rc" -ne 0 ]; } &&
         grep -q -- "$pattern" <<<"$out"; then
        echo "ok: $what: $(grep -m1 -- "$pattern" <<<"$out")"
        pass
      else
        fail "$what: rc=$rc, no '$pattern' in: $out"
      fi
    }
    expect_error "unknown ctrl command" 0 "invalid cmd name" \
      "$OPENSSL" engine -pre NOSUCH:1 accelcrypt
    expect_error "bad LOG_LEVEL value" 0 \
      "accelcrypt engine::bad accelcrypt engine setting.*log_level = 'nine' is not a number" \
      "$OPENSSL" engine -pre LOG_LEVEL:nine accelcrypt
    expect_error "SET with an unknown key" 0 "unknown accelcrypt setting 'colour'" \
      "$OPENSSL" engine -pre SET:colour=blue accelcrypt
    expect_error "CONF naming a missing file" 0 "CONF $WORK/missing.conf: cannot read" \
      "$OPENSSL" engine -pre CONF:"$WORK/missing.conf" accelcrypt
    # An openssl.cnf engine section with a bad value: the application's
    # module configuration fails, naming the setting.
    engine_cnf "$WORK/bad.cnf" "POLICY = quickest"
    "$OPENSSL" genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 \
      -out "$WORK/key.pem" 2>/dev/null
    expect_error "a bad value in the openssl.cnf engine section" 1 \
      "policy = 'quickest' is not supported" \
      env OPENSSL_CONF=/dev/null "$OPENSSL" req -config "$WORK/bad.cnf" -new \
      -key "$WORK/key.pem" -subj /CN=x -out "$WORK/req.pem"
    # A bad accelcrypt config file makes init fail: the engine is not used
    # and the reason is said.
    printf '[accelcrypt]\npolicy = quickest\n' >"$WORK/bad.conf"
    expect_error "init with a bad ACCELCRYPT_CONF" 0 \
      "accelcrypt engine init failed.*policy = 'quickest'" \
      env ACCELCRYPT_CONF="$WORK/bad.conf" "$OPENSSL" speed -engine accelcrypt \
      -seconds 1 rsa2048
    out=$(ACCELCRYPT_CONF="$WORK/bad.conf" "$OPENSSL" engine -t accelcrypt 2>&1)
    check "engine -t says unavailable when init fails" \
      grep -q '\[ unavailable \]' <<<"$out"
    ;;

  *)
    echo "unknown case $CASE" >&2
    exit 2
    ;;
esac
finish
