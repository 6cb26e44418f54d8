#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The accelcrypt ENGINE (engines-3/accelcrypt.so) with the real `openssl`
# binary and a legacy-API program. One case per invocation:
#   engine_test.sh CASE
# Environment (set by CMake): OPENSSL_BIN, ACCELCRYPT_ENGINE (the .so),
# ACCELCRYPT_TEST_BACKENDS, ACCELCRYPT_CLI, ENGINE_LEGACY_TEST (the test
# program), UID_CHANGE (uid_change.cc), ACCELCRYPT_PROVIDER (the provider
# .so), WORK_DIR.
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

SOFTHSM_MODULE=/usr/lib/softhsm/libsofthsm2.so
# softhsm_token LABEL: a SoftHSMv2 token LABEL (user PIN 1234) in
# $WORK/tokens, SOFTHSM2_CONF exported, the PIN in $WORK/pin and an
# accelcrypt config for the PKCS#11 client backend in $WORK/accelcrypt.conf
# (extra lines from the remaining arguments). Skips without SoftHSMv2.
softhsm_token() {
  local label=$1
  shift
  [ -r "$SOFTHSM_MODULE" ] || skip "SoftHSMv2 module $SOFTHSM_MODULE not installed"
  command -v softhsm2-util >/dev/null || skip "softhsm2-util not installed"
  [ -f "$BACKENDS/pkcs11.so" ] ||
    skip "PKCS#11 client backend not built ($BACKENDS/pkcs11.so)"
  mkdir -p "$WORK/tokens" "$WORK/stats"
  printf 'directories.tokendir = %s\nobjectstore.backend = file\nlog.level = ERROR\nlibrary.reset_on_fork = true\n' \
    "$WORK/tokens" >"$WORK/softhsm2.conf"
  export SOFTHSM2_CONF="$WORK/softhsm2.conf"
  softhsm2-util --init-token --free --label "$label" --so-pin 0000 \
    --pin 1234 >"$WORK/init.log" 2>&1 || { fail "token init"; finish; }
  printf '1234\n' >"$WORK/pin"
  chmod 600 "$WORK/pin"
  {
    printf '[accelcrypt]\npkcs11.module = %s\npkcs11.token_label = %s\n' \
      "$SOFTHSM_MODULE" "$label"
    local l
    for l in "$@"; do printf '%s\n' "$l"; done
  } >"$WORK/accelcrypt.conf"
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
    # The token settings in an accelcrypt config file named by the engine's
    # CONF command; the backends order by the BACKENDS command.
    softhsm_token accelcrypt-eng "pkcs11.pin_file = $WORK/pin" \
      "pkcs11.dsa_max_key_bits = 3072"
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

  pkcs11_key)
    # The key loader: a key generated on a SoftHSMv2 token, named by its
    # RFC 7512 URI, signs through the engine (`-keyform engine`, as nginx's
    # `ssl_certificate_key engine:accelcrypt:...` loads it) on the token.
    softhsm_token accelcrypt-key "pkcs11.pin_file = $WORK/pin"
    p11="pkcs11-tool --module $SOFTHSM_MODULE --token-label accelcrypt-key --login --pin 1234"
    $p11 --keypairgen --key-type rsa:2048 --label srv --id 51 >"$WORK/gen.log" 2>&1 ||
      { cat "$WORK/gen.log" >&2; fail "pkcs11-tool --keypairgen"; finish; }
    if ! $p11 --read-object --type pubkey --id 51 -o "$WORK/pub.der" >/dev/null 2>&1 ||
       ! OPENSSL_CONF=/dev/null "$OPENSSL" pkey -pubin -inform DER -in "$WORK/pub.der" \
         -out "$WORK/pub.pem"; then
      fail "reading the public key"
      finish
    fi
    uri='pkcs11:token=accelcrypt-key;object=srv;type=private'
    printf 'signed on the token\n' >"$WORK/msg"
    # Settings from the environment (ACCELCRYPT_CONF), the engine from the
    # command line; stdin closed: a prompt would fail, not wait.
    eng() {
      env OPENSSL_CONF=/dev/null ACCELCRYPT_CONF="${conf:-$WORK/accelcrypt.conf}" \
        ACCELCRYPT_STATS_DIR="$WORK/stats" timeout 60 "$OPENSSL" "$@" </dev/null
    }
    check "dgst -sign with the token key through the engine" \
      eng dgst -sha256 -engine accelcrypt -keyform engine -sign "$uri" \
      -out "$WORK/sig" "$WORK/msg"
    check "the signature verifies with the token's public key" \
      env OPENSSL_CONF=/dev/null "$OPENSSL" dgst -sha256 -verify "$WORK/pub.pem" \
      -signature "$WORK/sig" "$WORK/msg"
    "$CLI" stats "$WORK/stats"
    # One probe signature at load and the one asked for: each counted once.
    n=$(stats_ops "$WORK/stats" RSA-SIGN pkcs11)
    check "the token signed twice (probe at load, then dgst): pkcs11 RSA-SIGN $n" [ "$n" -eq 2 ]
    check "no signature in software" [ "$(stats_ops "$WORK/stats" RSA-SIGN software)" -eq 0 ]
    # ENGINE_load_public_key, and what the loaded private key holds.
    eng pkey -engine accelcrypt -inform engine -pubin -in "$uri" -pubout \
      -out "$WORK/pub.engine.pem" 2>"$WORK/pub.err"
    check "load_pubkey gives the token's public key" cmp -s "$WORK/pub.pem" "$WORK/pub.engine.pem"
    eng pkey -engine accelcrypt -inform engine -in "$uri" -text -noout \
      >"$WORK/text" 2>&1
    check "the loaded key has the token's modulus" grep -q '^Modulus:' "$WORK/text"
    if grep -qiE 'privateExponent|prime1' "$WORK/text"; then
      fail "the loaded key holds private parts: $(cat "$WORK/text")"
    else
      pass
    fi
    # Errors, said at load.
    expect_load_error() {  # WHAT PATTERN URI
      local out rc=0
      out=$(eng dgst -sha256 -engine accelcrypt -keyform engine -sign "$3" \
        -out "$WORK/bad.sig" "$WORK/msg" 2>&1) || rc=$?
      if [ "$rc" -ne 0 ] && grep -q -- "$2" <<<"$out"; then
        echo "ok: $1: $(grep -m1 -o -- "$2.*" <<<"$out" | cut -c1-160)"
        pass
      else
        fail "$1: no '$2' in: $out"
      fi
    }
    expect_load_error "not a pkcs11: URI" "is not an RFC 7512 pkcs11: URI" "$WORK/pub.pem"
    expect_load_error "no such object" "no backend holds the key" \
      'pkcs11:token=accelcrypt-key;object=nosuch;type=private'
    grep -v pin_file "$WORK/accelcrypt.conf" >"$WORK/nopin.conf"
    conf=$WORK/nopin.conf expect_load_error "no PIN source: never a prompt" \
      "no PIN source is configured: the accelcrypt engine never prompts" "$uri"
    printf '9999\n' >"$WORK/badpin"
    sed "s#$WORK/pin#$WORK/badpin#" "$WORK/accelcrypt.conf" >"$WORK/badpin.conf"
    conf=$WORK/badpin.conf expect_load_error "a wrong PIN, said at load" "CKR_PIN_INCORRECT" "$uri"
    # ALIAS = pkcs11 in the openssl.cnf engine section: the engine answers
    # to `pkcs11` too (as mod_ssl looks a pkcs11: key's engine up), before
    # libp11's pkcs11.so on disk.
    rm -rf "$WORK/stats" && mkdir "$WORK/stats"
    engine_cnf "$WORK/alias.cnf" "CONF = $WORK/accelcrypt.conf" \
      "STATS_DIR = $WORK/stats" "ALIAS = pkcs11"
    out=$(OPENSSL_CONF="$WORK/alias.cnf" "$OPENSSL" engine -t pkcs11 2>&1)
    check "the alias is listed as accelcrypt's" grep -q \
      '^(pkcs11) accelcrypt: .*an alias of the accelcrypt engine' <<<"$out"
    check "dgst -engine pkcs11 signs through accelcrypt" \
      env OPENSSL_CONF="$WORK/alias.cnf" timeout 60 "$OPENSSL" dgst -sha256 \
      -engine pkcs11 -keyform engine -sign "$uri" -out "$WORK/sig.alias" "$WORK/msg"
    check "and the signature verifies" \
      env OPENSSL_CONF=/dev/null "$OPENSSL" dgst -sha256 -verify "$WORK/pub.pem" \
      -signature "$WORK/sig.alias" "$WORK/msg"
    n=$(stats_ops "$WORK/stats" RSA-SIGN pkcs11)
    check "the alias's signatures are the token's (pkcs11 RSA-SIGN $n)" [ "$n" -eq 2 ]
    ;;

  both)
    # The provider and the engine in one process (openssl.cnf loads both,
    # the engine as the default RSA method; a token gives the provider RSA
    # keys of its own): every signature and verification `openssl speed`
    # reports is counted once, by the core that served it. The provider's
    # software backend used the default RSA engine for its keys, so the
    # engine's core routed and counted each of its operations again.
    [ -f "${ACCELCRYPT_PROVIDER:-}" ] || { fail "provider not built"; finish; }
    softhsm_token accelcrypt-both "pkcs11.pin_file = $WORK/pin" \
      "backends = pkcs11, software"
    {
      printf 'openssl_conf = openssl_init\n\n[openssl_init]\nproviders = provider_sect\n'
      printf 'alg_section = algorithm_sect\nengines = engine_section\n\n'
      printf '[provider_sect]\ndefault = default_sect\naccelcrypt = accelcrypt_sect\n\n'
      printf '[default_sect]\nactivate = 1\n\n'
      printf '[accelcrypt_sect]\nmodule = %s\nactivate = 1\nconf = %s\n\n' \
        "$ACCELCRYPT_PROVIDER" "$WORK/accelcrypt.conf"
      printf '[algorithm_sect]\ndefault_properties = ?provider=accelcrypt\n\n'
      printf '[engine_section]\naccelcrypt = accelcrypt_esect\n\n'
      printf '[accelcrypt_esect]\nengine_id = accelcrypt\ndynamic_path = %s\n' "$ENGINE_SO"
      printf 'CONF = %s\ndefault_algorithms = RSA,DSA\ninit = 1\n' "$WORK/accelcrypt.conf"
    } >"$WORK/openssl.cnf"
    OPENSSL_CONF="$WORK/openssl.cnf" "$CLI" trace --json -o "$WORK/trace.json" -- \
      "$OPENSSL" speed -seconds 1 rsa2048 >"$WORK/speed.out" 2>&1
    rc=$?
    # The text form, of a process that signs through both cores (one that
    # does no crypto through accelcrypt, as `openssl version`, records none).
    OPENSSL_CONF="$WORK/openssl.cnf" "$CLI" trace -- \
      "$OPENSSL" speed -seconds 1 rsa2048 >"$WORK/trace.txt" 2>&1
    grep -E "private|public" "$WORK/speed.out"
    check "openssl speed rsa2048 with provider and engine exits 0" [ "$rc" -eq 0 ]
    signs=$(sed -n "s/.*: \([0-9]*\) 2048 bits private RSA's.*/\1/p" "$WORK/speed.out")
    verifies=$(sed -n "s/.*: \([0-9]*\) 2048 bits public RSA's.*/\1/p" "$WORK/speed.out")
    check "speed reported its signatures and verifications" test -n "$signs" -a -n "$verifies"
    read -r cores sign_ops crypt_ops token_ops <<<"$(python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
cells = doc["cells"]
ops = lambda alg, b=None: sum(int(c["ops"]) for c in cells
                              if c["algorithm"] == alg and b in (None, c["backend"]))
print(len(doc["per_process"]), ops("RSA-SIGN"), ops("RSA-CRYPT"), ops("RSA-SIGN", "pkcs11"))
' "$WORK/trace.json")"
    echo "signatures ${signs:-?}, verifications ${verifies:-?}; counted: RSA-SIGN $sign_ops (pkcs11 $token_ops), RSA-CRYPT $crypt_ops, in $cores cores"
    check "both cores wrote statistics" [ "$cores" -eq 2 ]
    # speed signs and verifies once more before timing each.
    want=$(( ${signs:-0} + ${verifies:-0} ))
    total=$((sign_ops + crypt_ops))
    check "one RSA count per signature and verification ($total for $want)" \
      test "$total" -ge "$want" -a "$total" -le $((want + 4))
    check "no operation counted again as RSA-CRYPT ($crypt_ops)" [ "$crypt_ops" -eq 0 ]
    check "the token made the signatures ($token_ops for $signs)" \
      test "$token_ops" -ge "${signs:-1}" -a "$token_ops" -le $((${signs:-0} + 4))
    grep "loaded accelcrypt" "$WORK/trace.txt"
    check "trace counts one process with two cores" \
      grep -q "^accelcrypt trace: 1 process loaded accelcrypt (pid [0-9]* openssl with 2 cores)" "$WORK/trace.txt"
    ;;

  uid)
    # A process that changes user after loading accelcrypt (as a daemon's
    # worker, forked as root, drops privileges) is shown as that user: the
    # uid its statistics record is refreshed at each public-key operation
    # and at its end, and a running process's is read from /proc.
    [ -x "${UID_CHANGE:-}" ] || { fail "uid_change not built"; finish; }
    [ "$(id -u)" -eq 0 ] || skip "changing user needs root"
    nobody=$(id -u nobody 2>/dev/null || echo 65534)
    mkdir "$WORK/stats"
    chmod 755 "$WORK/stats"
    engine_cnf "$WORK/openssl.cnf" "STATS_DIR = $WORK/stats" "BACKENDS = software"
    # run_uid MODE: starts uid_change MODE with its stdin on a fifo held
    # open on fd 9; sets pid.
    run_uid() {
      rm -f "$WORK/fifo" "$WORK/out"
      mkfifo "$WORK/fifo"
      OPENSSL_CONF="$WORK/openssl.cnf" "$UID_CHANGE" "$nobody" "$1" \
        <"$WORK/fifo" >"$WORK/out" 2>&1 &
      pid=$!
      exec 9>"$WORK/fifo"
      for _ in $(seq 1 100); do grep -q '^ready' "$WORK/out" && break; sleep 0.1; done
      grep -q '^ready' "$WORK/out" || { cat "$WORK/out" >&2; fail "uid_change $1 did not start"; finish; }
    }
    # state_uid PID: "STATE UID" of PID's statistics.
    state_uid() {
      "$CLI" stats --json --all "$WORK/stats" | python3 -c '
import json, sys
for p in json.load(sys.stdin)["per_process"]:
    if p["pid"] == int(sys.argv[1]):
        print(p["state"], p["uid"])
' "$1"
    }
    # Signed after the change, then killed (no teardown): the file itself
    # says the new user.
    run_uid sign
    got=$(state_uid "$pid")
    check "signed as uid $nobody while running: stats say '$got'" [ "$got" = "live $nobody" ]
    kill -KILL "$pid"
    wait "$pid" 2>/dev/null
    exec 9>&-
    got=$(state_uid "$pid")
    check "killed after signing as uid $nobody: the file says '$got'" [ "$got" = "gone $nobody" ]
    # No operation after the change: shown as the user it runs as while it
    # runs, and recorded as that user when it ends.
    run_uid quiet
    got=$(state_uid "$pid")
    check "running as uid $nobody (nothing counted since): stats say '$got'" [ "$got" = "live $nobody" ]
    exec 9>&-
    wait "$pid"
    check "uid_change exits 0" [ $? -eq 0 ]
    got=$(state_uid "$pid")
    check "ended as uid $nobody: stats say '$got'" [ "$got" = "ended $nobody" ]
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
    expect_error "ALIAS with a bad id" 0 "ALIAS 'Bad.Id': want an engine id" \
      "$OPENSSL" engine -pre ALIAS:Bad.Id accelcrypt
    expect_error "ALIAS naming a loaded engine" 0 \
      "ALIAS dynamic: an engine with this id is already loaded" \
      "$OPENSSL" engine -pre ALIAS:dynamic accelcrypt
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
