#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Drives the real `openssl` binary with accelcrypt.so loaded from a config
# file. One case per invocation (CTest runs each as its own test):
#   provider_cli_test.sh CASE
# Environment (set by CMake): OPENSSL_BIN, ACCELCRYPT_TEST_CNF (default +
# accelcrypt preferred), ACCELCRYPT_TEST_CNF_ONLY (accelcrypt + base),
# ACCELCRYPT_TEST_BACKENDS (build-tree backend dir), ACCELCRYPT_TEST_ONLY_BACKENDS
# (test-only backend dir), ACCELCRYPT_PROVIDER_MODULE, WORK_DIR.
# Exit 0 pass, 1 fail, 77 skip (with the reason printed).
set -u

CASE="${1:?usage: provider_cli_test.sh CASE}"
OPENSSL="${OPENSSL_BIN:-openssl}"
CNF="${ACCELCRYPT_TEST_CNF:?}"
CNF_ONLY="${ACCELCRYPT_TEST_CNF_ONLY:?}"
BACKENDS="${ACCELCRYPT_TEST_BACKENDS:?}"
TEST_BACKENDS="${ACCELCRYPT_TEST_ONLY_BACKENDS:-}"
MODULE="${ACCELCRYPT_PROVIDER_MODULE:?}"
WORK="${WORK_DIR:?}/${CASE}"

rm -rf "$WORK"
mkdir -p "$WORK"
# Never inherit a developer's settings.
unset ACCELCRYPT_CONF ACCELCRYPT_STATS_DIR ACCELCRYPT_LOG_LEVEL \
  ACCELCRYPT_FAILING_MODE ACCELCRYPT_FAILING_AFTER ACCELCRYPT_FAILING_EVERY \
  ACCELCRYPT_FAILING_RATE ACCELCRYPT_FAILING_SEED
export ACCELCRYPT_BACKEND_DIR="$BACKENDS"
# The cases test the provider's implementation of every algorithm, also
# over the software backend: `interpose = all`. The default (`wins`) leaves
# the software backend's algorithms to OpenSSL's default provider; the
# `interpose` case tests that.
printf '[accelcrypt]\ninterpose = all\n' >"$WORK/interpose-all.cnf"
[ "$CASE" = interpose ] || export ACCELCRYPT_CONF="$WORK/interpose-all.cnf"

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

# active_in NAME: stdin (`openssl list -providers`) shows NAME active.
active_in() { grep -A3 "^  $1\$" | grep -q "status: active"; }

ossl() { OPENSSL_CONF="$CNF" "$OPENSSL" "$@"; }
# The reference side loads no code of ours: no sanitizer runtime preloaded
# into it under CI's ASan stage (it costs each process about half a second).
ossl_default() { OPENSSL_CONF=/dev/null env -u LD_PRELOAD "$OPENSSL" "$@"; }

CIPHERS="aes-128-ecb aes-192-ecb aes-256-ecb aes-128-cbc aes-192-cbc
aes-256-cbc aes-128-cfb aes-192-cfb aes-256-cfb aes-128-ofb aes-192-ofb
aes-256-ofb aes-128-ctr aes-192-ctr aes-256-ctr"
ALL_CIPHERS="$CIPHERS aes-128-gcm aes-192-gcm aes-256-gcm"
DIGESTS="sha1 sha224 sha256 sha384 sha512"
SIZES="0 1 15 16 17 4097"
# ACCELCRYPT_TEST_QUICK=1 (CI's ASan stage, where every openssl process
# costs about half a second): the empty, one-block, partial-block and
# multi-block paths only (the inputs the other cases read: in.0, in.16,
# in.17, in.4097).
if [ "${ACCELCRYPT_TEST_QUICK:-0}" = 1 ]; then SIZES="0 16 17 4097"; fi

make_inputs() {
  for n in $SIZES; do
    head -c "$n" /dev/urandom >"$WORK/in.$n"
  done
}

key_for() {  # key_for CIPHER -> hex key of the right length
  case "$1" in
    aes-128-*) echo 2b7e151628aed2a6abf7158809cf4f3c ;;
    aes-192-*) echo 8e73b0f7da0e6452c810f32b809079e562f8ead2522c6b7b ;;
    aes-256-*) echo 603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4 ;;
  esac
}
IV=000102030405060708090a0b0c0d0e0f

# enc_one PROVIDER CIPHER IN OUT [-d]
enc_one() {
  local prov="$1" c="$2" in="$3" out="$4"
  shift 4
  local ivopt=(-iv "$IV")
  case "$c" in *-ecb) ivopt=() ;; esac
  if [ "$prov" = default ]; then
    ossl_default enc "-$c" "$@" -K "$(key_for "$c")" "${ivopt[@]}" -in "$in" \
      -out "$out" 2>"$out.err"
    return
  fi
  ossl enc "-$c" "$@" -K "$(key_for "$c")" "${ivopt[@]}" -in "$in" -out "$out" \
    -propquery "provider=$prov" 2>"$out.err"
}
# cmp, without the sanitizer runtime (a shell tool: it loads no code of ours).
same() { env -u LD_PRELOAD cmp -s "$1" "$2"; }

case "$CASE" in
  providers)
    out="$(ossl list -providers 2>&1)"
    check "accelcrypt listed" grep -q "^  accelcrypt" <<<"$out"
    check "accelcrypt active" active_in accelcrypt <<<"$out"
    check "default still active" active_in default <<<"$out"
    out="$(OPENSSL_CONF="$CNF_ONLY" "$OPENSSL" list -providers 2>&1)"
    check "accelcrypt alone with base" grep -q "^  accelcrypt" <<<"$out"
    # Without any config, by name from the modules directory, as
    # `openssl speed -provider accelcrypt -provider default` uses it.
    mods="$(dirname "$MODULE")"
    out="$(OPENSSL_CONF=/dev/null OPENSSL_MODULES="$mods" "$OPENSSL" list \
      -provider accelcrypt -provider default -providers 2>&1)"
    check "-provider accelcrypt from OPENSSL_MODULES" active_in accelcrypt \
      <<<"$out"
    head -c 100 /dev/urandom >"$WORK/in"
    a="$(OPENSSL_CONF=/dev/null OPENSSL_MODULES="$mods" "$OPENSSL" dgst \
      -provider accelcrypt -provider default -propquery provider=accelcrypt \
      -sha512 -r "$WORK/in" 2>&1 | cut -d' ' -f1)"
    b="$(ossl_default dgst -sha512 -r "$WORK/in" | cut -d' ' -f1)"
    check "-provider accelcrypt dgst matches default" test "$a" = "$b"
    ;;

  ciphers)
    out="$(ossl list -cipher-algorithms -provider accelcrypt 2>&1)"
    n="$(grep -c '@ accelcrypt' <<<"$out")"
    check "18 ciphers from accelcrypt (got $n)" test "$n" -eq 18
    for c in $ALL_CIPHERS; do
      check "$c listed" grep -qi "[ ,{]${c}[ ,}].*@ accelcrypt" <<<"$out"
    done
    out="$(ossl list -digest-algorithms 2>&1)"
    n="$(grep -c '@ accelcrypt' <<<"$out")"
    check "5 digests from accelcrypt (got $n)" test "$n" -eq 5
    ;;

  enc)
    make_inputs
    export ACCELCRYPT_STATS_DIR="$WORK/stats"
    mkdir -p "$ACCELCRYPT_STATS_DIR"
    for c in $CIPHERS; do
      for n in $SIZES; do
        in="$WORK/in.$n"
        base="$WORK/$c.$n"
        if ! enc_one accelcrypt "$c" "$in" "$base.acc"; then
          fail "$c/$n encrypt (accelcrypt): $(cat "$base.acc.err")"
          continue
        fi
        if ! enc_one default "$c" "$in" "$base.def"; then
          fail "$c/$n encrypt (default): $(cat "$base.def.err")"
          continue
        fi
        check "$c/$n ciphertext identical" same "$base.acc" "$base.def"
        enc_one default "$c" "$base.acc" "$base.acc.dec" -d \
          && check "$c/$n accelcrypt->default round trip" \
            same "$in" "$base.acc.dec" \
          || fail "$c/$n decrypt (default): $(cat "$base.acc.dec.err")"
        enc_one accelcrypt "$c" "$base.def" "$base.def.dec" -d \
          && check "$c/$n default->accelcrypt round trip" \
            same "$in" "$base.def.dec" \
          || fail "$c/$n decrypt (accelcrypt): $(cat "$base.def.dec.err")"
      done
    done
    # Every byte is counted, also those the provider hands straight to the
    # backend's raw transform (Cipher::Direct: the software backend's) after
    # the first update; once with the default backend order, once with the
    # software backend alone.
    export ACCELCRYPT_STATS_DIR="$WORK/stats-bytes"
    mkdir -p "$ACCELCRYPT_STATS_DIR"
    head -c 1000000 /dev/zero > "$WORK/in.zeros"
    printf '[accelcrypt]\nbackends = software\ninterpose = all\n' \
      > "$WORK/software.cnf"
    for conf in "" "$WORK/software.cnf"; do
      for c in aes-128-ctr aes-256-cbc; do
        rm -f "$ACCELCRYPT_STATS_DIR"/*.json
        ACCELCRYPT_CONF="$conf" enc_one accelcrypt "$c" "$WORK/in.zeros" \
          "$WORK/zeros.$c" -nopad \
          || fail "$c: 1,000,000 bytes (accelcrypt): $(cat "$WORK/zeros.$c.err")"
        name="$(tr a-z A-Z <<<"$c")"
        # 62,500 whole blocks: -nopad adds none.
        got="$(sed -n "s/.*\"$name\":{\"bytes\":\([0-9]*\).*/\1/p" \
          "$ACCELCRYPT_STATS_DIR"/*.json 2>/dev/null | head -n1)"
        check "$name (${conf:-default order}): stats count 1000000 bytes (got ${got:-none})" \
          test "${got:-0}" = 1000000
      done
    done
    export ACCELCRYPT_STATS_DIR="$WORK/stats"
    # The stats prove accelcrypt really served each mode.
    stats="$(cat "$ACCELCRYPT_STATS_DIR"/*.json 2>/dev/null)"
    for c in $CIPHERS; do
      name="$(tr a-z A-Z <<<"$c")"
      check "stats show $name served by accelcrypt" grep -q "\"$name\"" \
        <<<"$stats"
    done
    ;;

  nopad)
    # ECB/CBC without padding on whole blocks, and the error on a partial
    # block (a clear error, no output file garbage accepted).
    make_inputs
    for c in aes-128-ecb aes-256-cbc; do
      enc_one accelcrypt "$c" "$WORK/in.16" "$WORK/$c.acc" -nopad
      enc_one default "$c" "$WORK/in.16" "$WORK/$c.def" -nopad
      check "$c -nopad identical" cmp -s "$WORK/$c.acc" "$WORK/$c.def"
      if enc_one accelcrypt "$c" "$WORK/in.17" "$WORK/$c.bad" -nopad; then
        fail "$c -nopad on 17 bytes succeeded"
      else
        pass
      fi
    done
    # Wrong padding on decrypt: garbage ciphertext is refused.
    head -c 32 /dev/urandom >"$WORK/garbage"
    if enc_one accelcrypt aes-128-cbc "$WORK/garbage" "$WORK/garbage.dec" -d \
      && enc_one default aes-128-cbc "$WORK/garbage" "$WORK/garbage.dec2" -d; then
      # Both accepted (1 in 256 chance of valid padding): outputs must agree.
      check "garbage decrypt agrees" cmp -s "$WORK/garbage.dec" \
        "$WORK/garbage.dec2"
    else
      check "bad padding reported" grep -qi "bad decrypt" \
        "$WORK/garbage.dec.err"
    fi
    ;;

  dgst)
    make_inputs
    export ACCELCRYPT_STATS_DIR="$WORK/stats"
    mkdir -p "$ACCELCRYPT_STATS_DIR"
    for d in $DIGESTS; do
      for n in $SIZES; do
        a="$(ossl dgst "-$d" -propquery provider=accelcrypt -r "$WORK/in.$n" \
          2>&1 | cut -d' ' -f1)"
        b="$(ossl_default dgst "-$d" -r "$WORK/in.$n" 2>&1 | cut -d' ' -f1)"
        check "$d/$n digest identical ($a vs $b)" test -n "$a" -a "$a" = "$b"
      done
    done
    stats="$(cat "$ACCELCRYPT_STATS_DIR"/*.json 2>/dev/null)"
    for name in SHA1 SHA2-224 SHA2-256 SHA2-384 SHA2-512; do
      check "stats show $name served by accelcrypt" grep -q "\"$name\"" \
        <<<"$stats"
    done
    ;;

  rand)
    a="$(ossl rand -hex 32 2>&1)"
    b="$(ossl rand -hex 32 2>&1)"
    check "rand -hex 32 gives 64 hex digits ($a)" grep -Eq '^[0-9a-f]{64}$' \
      <<<"$a"
    check "two runs differ" test "$a" != "$b"
    # With accelcrypt preferred, the DRBG's AES-256-CTR is ours.
    export ACCELCRYPT_STATS_DIR="$WORK/stats"
    mkdir -p "$ACCELCRYPT_STATS_DIR"
    ossl rand -hex 64 >/dev/null 2>&1
    check "DRBG cipher AES-256-CTR served by accelcrypt" \
      grep -q '"AES-256-CTR"' <(cat "$ACCELCRYPT_STATS_DIR"/*.json)
    # The seed source is published only with a hardware noise source.
    mkdir -p "$WORK/empty"
    out="$(ACCELCRYPT_BACKEND_DIR="$WORK/empty" ossl list -random-generators)"
    check "no seed source without an entropy backend" \
      test -z "$(grep 'SEED-SRC @ accelcrypt' <<<"$out")"
    a="$(ACCELCRYPT_BACKEND_DIR="$WORK/empty" ossl rand -hex 16 2>&1)"
    check "rand works without an entropy backend" grep -Eq '^[0-9a-f]{32}$' \
      <<<"$a"
    if [ -f "$BACKENDS/x86.so" ] && grep -q '"ENTROPY"' \
      <(cat "$ACCELCRYPT_STATS_DIR"/*.json); then
      out="$(ossl list -random-generators)"
      check "SEED-SRC published with an entropy backend" \
        grep -q 'SEED-SRC @ accelcrypt' <<<"$out"
    fi
    ;;

  robust)
    # A missing or broken backend directory never breaks OpenSSL.
    make_inputs
    mkdir -p "$WORK/empty" "$WORK/garbage"
    head -c 4096 /dev/urandom >"$WORK/garbage/garbage.so"
    printf 'not an ELF file\n' >"$WORK/garbage/text.so"
    # A real shared object without the backend entry point.
    zlib="$(ldconfig -p | awk '/libz\.so\.1 /{print $NF; exit}')"
    [ -n "$zlib" ] && cp "$zlib" "$WORK/garbage/nozentry.so"
    for dir in "$WORK/empty" "$WORK/garbage" "$WORK/does-not-exist"; do
      out="$(ACCELCRYPT_BACKEND_DIR="$dir" ossl list -providers 2>&1)"
      check "providers listed with backend dir $dir" grep -q "^  default" \
        <<<"$out"
      check "accelcrypt still active with $dir (software built in)" \
        active_in accelcrypt <<<"$out"
      ACCELCRYPT_BACKEND_DIR="$dir" enc_one accelcrypt aes-128-cbc \
        "$WORK/in.4097" "$WORK/out.acc"
      enc_one default aes-128-cbc "$WORK/in.4097" "$WORK/out.def"
      check "enc correct with backend dir $dir" cmp -s "$WORK/out.acc" \
        "$WORK/out.def"
      a="$(ACCELCRYPT_BACKEND_DIR="$dir" ossl dgst -sha256 -r "$WORK/in.17")"
      check "dgst works with backend dir $dir" test -n "$a"
    done
    # A config naming a module that does not exist (soft_load): OpenSSL
    # keeps working with its default provider.
    sed "s#^module = .*#module = $WORK/missing/accelcrypt.so#" "$CNF" \
      >"$WORK/missing.cnf"
    a="$(OPENSSL_CONF="$WORK/missing.cnf" "$OPENSSL" dgst -sha256 -r \
      "$WORK/in.17" 2>&1 | cut -d' ' -f1)"
    b="$(ossl_default dgst -sha256 -r "$WORK/in.17" | cut -d' ' -f1)"
    check "missing module with soft_load: openssl still works" \
      test "$a" = "$b"
    # A malformed accelcrypt config file fails provider init cleanly; with
    # soft_load OpenSSL goes on without it.
    printf '[accelcrypt\nbroken = \n' >"$WORK/broken.conf"
    a="$(ACCELCRYPT_CONF="$WORK/broken.conf" ossl dgst -sha256 -r \
      "$WORK/in.17" 2>"$WORK/broken.err" | cut -d' ' -f1)"
    check "broken ACCELCRYPT_CONF: openssl still works" test "$a" = "$b"
    # ...and says why, once, on stderr.
    check "broken ACCELCRYPT_CONF: one 'provider not loaded' line" \
      test "$(grep -c '^accelcrypt: provider not loaded: .*broken.conf' "$WORK/broken.err")" = 1
    ;;

  failing)
    # Every accelerated op fails on the test-only failing backend: the
    # router falls back to software and `openssl enc` output stays correct.
    fb="$TEST_BACKENDS/failing.so"
    [ -n "$TEST_BACKENDS" ] && [ -f "$fb" ] \
      || skip "test-only failing backend not built ($fb)"
    make_inputs
    export ACCELCRYPT_STATS_DIR="$WORK/stats"
    mkdir -p "$ACCELCRYPT_STATS_DIR"
    for mode in always midstream every; do
      for c in aes-128-cbc aes-256-ctr aes-192-cfb aes-128-ofb aes-256-ecb; do
        for n in 16 4097; do
          ACCELCRYPT_BACKEND_DIR="$BACKENDS:$TEST_BACKENDS" \
            ACCELCRYPT_FAILING_MODE="$mode" ACCELCRYPT_FAILING_EVERY=2 \
            enc_one accelcrypt "$c" "$WORK/in.$n" "$WORK/$c.$n.$mode" \
            || fail "$c/$n mode=$mode: $(cat "$WORK/$c.$n.$mode.err")"
          enc_one default "$c" "$WORK/in.$n" "$WORK/$c.$n.def"
          check "$c/$n with failing backend ($mode) correct" \
            cmp -s "$WORK/$c.$n.$mode" "$WORK/$c.$n.def"
        done
      done
    done
    check "stats mention the failing backend" grep -q '"failing"' \
      <(cat "$ACCELCRYPT_STATS_DIR"/*.json)
    ;;

  config)
    # Keys in the provider's openssl.cnf section and the file named by
    # `conf` reach accelcrypt's configuration.
    make_inputs
    with_keys() {  # with_keys OUT LINES...: the test config plus LINES
      local out="$1"
      shift
      awk -v extra="$(printf '%s\n' "$@")" \
        '{print} /^\[accelcrypt_sect\]/{print extra}' "$CNF" >"$out"
    }
    with_keys "$WORK/s1.cnf" "stats_dir = $WORK/s1"
    mkdir -p "$WORK/s1" "$WORK/s2" "$WORK/s3"
    OPENSSL_CONF="$WORK/s1.cnf" "$OPENSSL" dgst -sha256 \
      -propquery provider=accelcrypt "$WORK/in.17" "$WORK/in.4097" \
      "$WORK/in.0" >/dev/null 2>&1
    # One op per message and every byte, whichever path hashed them (the
    # direct digest counts at final).
    check "stats_dir from the openssl.cnf section, exact counts" \
      grep -q '"SHA2-256":{"bytes":4114,"errors":0,"fallbacks":0,"ops":3}' \
      <(cat "$WORK"/s1/*.json 2>/dev/null)
    printf '[accelcrypt]\nstats_dir = %s\n' "$WORK/s2" >"$WORK/ac.conf"
    with_keys "$WORK/s2.cnf" "conf = $WORK/ac.conf"
    OPENSSL_CONF="$WORK/s2.cnf" "$OPENSSL" dgst -sha256 \
      -propquery provider=accelcrypt "$WORK/in.17" >/dev/null 2>&1
    check "stats_dir from the file named by conf" grep -q '"SHA2-256"' \
      <(cat "$WORK"/s2/*.json 2>/dev/null)
    with_keys "$WORK/bad.cnf" "conf = $WORK/no-such-file.conf"
    out="$(OPENSSL_CONF="$WORK/bad.cnf" "$OPENSSL" list -providers 2>&1)"
    check "missing conf file: default provider still active" \
      active_in default <<<"$out"
    check "missing conf file: accelcrypt not activated" \
      test -z "$(active_in accelcrypt <<<"$out" && echo yes)"
    if [ -f "$BACKENDS/x86.so" ]; then
      with_keys "$WORK/s3.cnf" "stats_dir = $WORK/s3" "disable = x86"
      OPENSSL_CONF="$WORK/s3.cnf" "$OPENSSL" enc -aes-128-cbc \
        -K "$(key_for aes-128-cbc)" -iv "$IV" -in "$WORK/in.4097" \
        -out "$WORK/s3.out" -propquery provider=accelcrypt 2>/dev/null
      stats="$(cat "$WORK"/s3/*.json 2>/dev/null)"
      check "disable = x86 honoured" grep -q '"software":{"AES-128-CBC"' \
        <<<"$stats"
    fi
    ;;

  tls)
    # TLS 1.3, TLS 1.2 AES-GCM and TLS 1.2 AES-CBC (with and without
    # encrypt-then-MAC, so both the padding-only and the constant-time MAC
    # extraction paths run) between s_server and s_client over loopback,
    # the server with accelcrypt, the client with and without it.
    OPENSSL_CONF=/dev/null "$OPENSSL" req -x509 -newkey rsa:2048 -nodes \
      -keyout "$WORK/key.pem" -out "$WORK/cert.pem" -subj /CN=localhost \
      -days 1 >/dev/null 2>&1 || { fail "cannot make a test certificate"; finish; }
    export ACCELCRYPT_STATS_DIR="$WORK/stats"
    mkdir -p "$ACCELCRYPT_STATS_DIR"
    port=""
    for try in 1 2 3 4 5; do
      p=$((20000 + RANDOM % 30000))
      # Not through the ossl function: in the background a function runs in
      # a subshell, $! would be that subshell, and killing it would leave
      # s_server running after the test.
      OPENSSL_CONF="$CNF" "$OPENSSL" s_server -accept "127.0.0.1:$p" \
        -cert "$WORK/cert.pem" -key "$WORK/key.pem" -www -quiet \
        >"$WORK/server.log" 2>&1 &
      server=$!
      sleep 0.5
      if kill -0 "$server" 2>/dev/null; then port=$p; break; fi
    done
    [ -n "$port" ] || { fail "s_server did not start"; finish; }
    trap 'kill "$server" 2>/dev/null' EXIT
    get() {  # get CONF VERSION-FLAG [CIPHER [EXTRA]]
      local conf="$1" ver="$2" cs=()
      [ -n "${3:-}" ] && cs=(-cipher "$3")
      [ -n "${4:-}" ] && cs+=("$4")
      printf 'GET / HTTP/1.0\r\n\r\n' | OPENSSL_CONF="$conf" timeout 10 \
        "$OPENSSL" s_client -connect "127.0.0.1:$port" "$ver" "${cs[@]}" \
        -quiet 2>&1
    }
    for conf in "$CNF" /dev/null; do
      out="$(get "$conf" -tls1_3)"
      check "TLS 1.3 (client conf $conf)" grep -q "^HTTP/1.0 200" <<<"$out"
      for cs in ECDHE-RSA-AES128-GCM-SHA256 ECDHE-RSA-AES256-GCM-SHA384; do
        out="$(get "$conf" -tls1_2 "$cs")"
        check "TLS 1.2 $cs (client conf $conf)" grep -q "Cipher is $cs" \
          <<<"$out"
      done
    done
    for conf in "$CNF" /dev/null; do
      for cs in ECDHE-RSA-AES128-SHA256 ECDHE-RSA-AES256-SHA384 AES128-SHA; do
        for etm in "" -no_etm; do
          out="$(get "$conf" -tls1_2 "$cs" $etm)"
          check "TLS 1.2 $cs $etm (client conf $conf)" \
            grep -q "Cipher is $cs" <<<"$out"
        done
      done
    done
    kill "$server" 2>/dev/null
    wait "$server" 2>/dev/null
    stats="$(cat "$ACCELCRYPT_STATS_DIR"/*.json)"
    check "stats show AES-128-GCM served by accelcrypt" grep -q \
      '"AES-128-GCM"' <<<"$stats"
    check "stats show AES-256-CBC served by accelcrypt" grep -q \
      '"AES-256-CBC"' <<<"$stats"
    ;;

  interpose)
    # The default, `interpose = wins` (issue 29): the provider offers
    # OpenSSL only what a backend that wins serves (hardware, a token).
    # With the software backend alone it offers nothing, so SHA-384 and RSA
    # come from the default provider and accelcrypt counts no operation
    # (and, counting none, writes no statistics file); `interpose = all`
    # offers them again; the x86 backend's AES is offered.
    export ACCELCRYPT_STATS_DIR="$WORK/stats"
    mkdir -p "$ACCELCRYPT_STATS_DIR"
    printf '[accelcrypt]\nbackends = software\n' >"$WORK/sw.cnf"
    printf '[accelcrypt]\nbackends = software\ninterpose = all\n' \
      >"$WORK/sw-all.cnf"
    out="$(ACCELCRYPT_CONF="$WORK/sw.cnf" ossl list -providers 2>&1)"
    check "software only: accelcrypt still active" active_in accelcrypt \
      <<<"$out"
    for what in -digest-algorithms -cipher-algorithms -signature-algorithms \
      -asymcipher-algorithms -key-managers -store-loaders; do
      out="$(ACCELCRYPT_CONF="$WORK/sw.cnf" ossl list "$what" 2>&1)"
      check "software only: nothing of $what offered by accelcrypt" \
        test -z "$(grep '@ accelcrypt' <<<"$out")"
    done
    head -c 1000 /dev/urandom >"$WORK/in"
    OPENSSL_CONF=/dev/null "$OPENSSL" genpkey -algorithm RSA \
      -pkeyopt rsa_keygen_bits:2048 -out "$WORK/key.pem" 2>/dev/null
    ACCELCRYPT_CONF="$WORK/sw.cnf" ossl dgst -sha384 -sign "$WORK/key.pem" \
      -out "$WORK/sig" "$WORK/in" 2>"$WORK/sig.err"
    check "software only: dgst -sha384 -sign works" test -s "$WORK/sig"
    ACCELCRYPT_CONF="$WORK/sw.cnf" ossl dgst -sha384 -prverify "$WORK/key.pem" \
      -signature "$WORK/sig" "$WORK/in" >/dev/null 2>&1
    check "software only: the signature verifies" test $? -eq 0
    check "software only: accelcrypt served nothing (no stats file)" \
      test -z "$(ls -A "$ACCELCRYPT_STATS_DIR")"
    # interpose = all: the same algorithms from accelcrypt.
    out="$(ACCELCRYPT_CONF="$WORK/sw-all.cnf" ossl list -digest-algorithms)"
    check "interpose = all: SHA2-384 offered by accelcrypt" \
      grep -q 'SHA2-384.*@ accelcrypt' <<<"$out"
    out="$(ACCELCRYPT_CONF="$WORK/sw-all.cnf" ossl list -signature-algorithms)"
    check "interpose = all: RSA signatures offered by accelcrypt" \
      grep -q 'RSA.*@ accelcrypt' <<<"$out"
    ACCELCRYPT_CONF="$WORK/sw-all.cnf" ossl dgst -sha384 -sign "$WORK/key.pem" \
      -out "$WORK/sig.all" "$WORK/in" 2>/dev/null
    stats="$(cat "$ACCELCRYPT_STATS_DIR"/*.json 2>/dev/null)"
    check "interpose = all: SHA2-384 served by accelcrypt" \
      grep -q '"SHA2-384"' <<<"$stats"
    check "interpose = all: RSA signature served by accelcrypt" \
      grep -q '"RSA-SIGN"' <<<"$stats"
    # Hardware: the x86 backend's AES is offered, SHA-384 is not.
    if [ -f "$BACKENDS/x86.so" ] && grep -qw aes /proc/cpuinfo; then
      printf '[accelcrypt]\nbackends = x86, software\n' >"$WORK/x86.cnf"
      out="$(ACCELCRYPT_CONF="$WORK/x86.cnf" ossl list -cipher-algorithms)"
      check "x86: AES-128-GCM offered by accelcrypt" \
        grep -qi 'AES-128-GCM.*@ accelcrypt' <<<"$out"
      out="$(ACCELCRYPT_CONF="$WORK/x86.cnf" ossl list -digest-algorithms)"
      check "x86: SHA2-384 left to the default provider" \
        test -z "$(grep -i 'SHA2-384.*@ accelcrypt' <<<"$out")"
      rm -f "$ACCELCRYPT_STATS_DIR"/*
      ACCELCRYPT_CONF="$WORK/x86.cnf" ossl enc -aes-128-ctr \
        -K "$(key_for aes-128-ctr)" -iv "$IV" -in "$WORK/in" \
        -out "$WORK/in.ctr" 2>/dev/null
      check "x86: AES-128-CTR served by accelcrypt's x86 backend" \
        grep -q '"x86":{[^}]*"AES-128-CTR"' \
        <(cat "$ACCELCRYPT_STATS_DIR"/*.json 2>/dev/null)
    else
      echo "NOTE: no x86 backend with AES-NI here: its part is skipped"
    fi
    ;;

  *)
    echo "unknown case $CASE" >&2
    exit 2
    ;;
esac
finish
