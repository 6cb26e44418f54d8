#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The PadLock backend end to end through the real `openssl` binary: the
# provider is loaded by a config file, the test-only SIGILL trap emulator is
# LD_PRELOADed with ACCELCRYPT_PADLOCK_EMULATOR=1, and every result is
# compared byte for byte with OpenSSL's default provider (-propquery
# provider=default, emulator not loaded). Who served the bytes is read from
# `accelcrypt trace --json` (through trace_cells), never assumed.
# Cipher directions: padlock's ciphertext must equal the default provider's
# byte for byte, and `refs` has the default provider decrypt exactly those
# bytes (so padlock->default is checked without a second identical run);
# padlock decrypts the default provider's ciphertext (default->padlock).
#
#   padlock_openssl_test.sh refs                 inputs, keys, default-provider
#                                                ciphertexts and digests
#   padlock_openssl_test.sh enc PROFILE MODE     openssl enc, one mode, 3 key sizes
#   padlock_openssl_test.sh dgst PROFILE         openssl dgst
#   padlock_openssl_test.sh route PROFILE        route.* keys, trace table
#   padlock_openssl_test.sh noemu                no emulator: padlock declines
#   padlock_openssl_test.sh rng                  stuck RNG taken out of service
#   padlock_openssl_test.sh evp PROFILE          padlock_evp_mt_test, traced
#
# Environment (set by CMake): OPENSSL_BIN, ACCELCRYPT_CLI, TRACE_CELLS,
# PADLOCK_EMU, ACCELCRYPT_TEST_CNF, ACCELCRYPT_TEST_BACKENDS, WORK_DIR,
# EVP_TEST (case evp).
# Exit 0 pass, 1 fail.
set -u

CASE="${1:?usage: padlock_openssl_test.sh CASE [PROFILE [MODE]]}"
PROFILE="${2:-}"
MODE="${3:-}"
OPENSSL="${OPENSSL_BIN:-openssl}"
CLI="${ACCELCRYPT_CLI:?}"
CELLS="${TRACE_CELLS:?}"
EMU="${PADLOCK_EMU:?}"
# A sanitizer build's runtime (scripts/ci_asan.sh sets it) stays first in
# every preload list: our sanitized objects need it in unsanitized hosts.
SAN="${ACCELCRYPT_SANITIZER_PRELOAD:-}"
EMU_PRELOAD="${SAN:+$SAN }$EMU"
CNF="${ACCELCRYPT_TEST_CNF:?}"
BACKENDS="${ACCELCRYPT_TEST_BACKENDS:?}"
REFS="${WORK_DIR:?}/refs"
# `X-run` is the inner loop of case X (run under `accelcrypt trace`).
WORK="${WORK_DIR}/${CASE%-run}${PROFILE:+-$PROFILE}${MODE:+-$MODE}"

# Never inherit a developer's settings (inner loops keep what the outer
# case and `accelcrypt trace` set up).
if [ -n "$SAN" ]; then export LD_PRELOAD="$SAN"; else unset LD_PRELOAD; fi
unset ACCELCRYPT_LOG_LEVEL ACCELCRYPT_PADLOCK_EMULATOR \
  ACCELCRYPT_PADLOCK_PROFILE ACCELCRYPT_PADLOCK_RNG_FAULT \
  ACCELCRYPT_PADLOCK_RNG_FAULT_AFTER
case "$CASE" in
  *-run) ;;
  *) unset ACCELCRYPT_CONF ACCELCRYPT_STATS_DIR ;;
esac
export ACCELCRYPT_BACKEND_DIR="$BACKENDS"
export OPENSSL_CONF="$CNF"

passed=0
failed=0
comparisons=0
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
  case "$CASE" in *-run) echo "$comparisons" >"$WORK/comparisons" ;; esac
  echo "${CASE}${PROFILE:+ $PROFILE}${MODE:+ $MODE}: ${passed} checks passed," \
    "${failed} failed; ${comparisons} openssl comparisons with the default" \
    "provider"
  [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
  exit $?
}

# Boundaries of blocks, PadLock's 512-byte bounce chunks, 4 KiB pages and the
# 16-bit CTR counter (65536 bytes = 4096 blocks); three random sizes are
# drawn by `refs` and listed in refs/sizes.
BOUNDARY_SIZES="0 1 15 16 17 63 64 65 511 512 513 4095 4096 4097 65535 65536
65537"
MODES="ecb cbc cfb ofb ctr"
KEY_BITS="128 192 256"
# AES-128 runs every size; AES-192/256 (which change only the key schedule
# and round count, not the buffering paths) run this subset plus the first
# random size, to keep the suite's process count down.
WIDE_KEY_SIZES="0 1 15 16 17 64 65 4097 65536 65537"
# ACCELCRYPT_TEST_QUICK=1 (set by CI's ASan stage, where every openssl
# process costs about half a second): the sizes that take each buffering
# path once (empty, partial block, block, block + 1, page + 1, past 64 KiB)
# and the first random size, for every key size, instead of all of them.
QUICK_SIZES="0 1 16 17 4097 65537"
quick() { [ "${ACCELCRYPT_TEST_QUICK:-0}" = 1 ]; }
sizes_for() {  # sizes_for BITS
  if quick; then
    echo $QUICK_SIZES "$(awk '{ print $18 }' "$REFS/sizes")"
  elif [ "$1" = 128 ]; then
    echo $SIZES
  else
    echo $WIDE_KEY_SIZES "$(awk '{ print $18 }' "$REFS/sizes")"
  fi
}

hex() { od -An -v -tx1 "$1" | tr -d ' \n'; }

# In the emulator's environment (PROFILE, extra VAR=VALUE words first).
emu() {
  env LD_PRELOAD="$EMU_PRELOAD" ACCELCRYPT_PADLOCK_EMULATOR=1 \
    ACCELCRYPT_PADLOCK_PROFILE="$PROFILE" "$@"
}
# The reference: OpenSSL's default provider alone (no config: accelcrypt
# and the emulator are not loaded).
# The reference side loads no code of ours: under CI's ASan stage the
# sanitizer runtime is not preloaded into it (it made each of these ~500
# processes cost about half a second there).
ossl_default() {
  OPENSSL_CONF=/dev/null env -u LD_PRELOAD "$OPENSSL" "$@" -propquery provider=default
}

# traced OUT_CELLS COMMAND...: runs COMMAND under `accelcrypt trace --json`
# (which sets ACCELCRYPT_STATS_DIR for it and every child) and writes the
# report's cells, one "backend algorithm ops bytes errors fallbacks" line
# each, to OUT_CELLS. Returns the command's exit code.
traced() {
  local out="$1"
  shift
  "$CLI" trace --json -o "$out.json" -- "$@"
  local rc=$?
  if ! "$CELLS" <"$out.json" >"$out"; then
    fail "trace report unreadable: $(head -c 300 "$out.json")"
    : >"$out"
  fi
  return $rc
}
# cell CELLS BACKEND ALG FIELD: one counter (0 when the cell is absent).
cell() {
  awk -v b="$2" -v a="$3" -v f="$4" '
    BEGIN { col["ops"] = 3; col["bytes"] = 4; col["errors"] = 5
            col["fallbacks"] = 6 }
    $1 == b && $2 == a { v = $(col[f]) }
    END { print v + 0 }' "$1"
}
# other_bytes CELLS ALG: bytes of ALG served by any backend but padlock.
other_bytes() {
  awk -v a="$2" '$2 == a && $1 != "padlock" { s += $4 } END { print s + 0 }' \
    "$1"
}

alg_name() { tr a-z A-Z <<<"$1"; }  # aes-128-cbc -> AES-128-CBC
digest_name() {
  case "$1" in
    sha1) echo SHA1 ;;
    sha*) echo "SHA2-${1#sha}" ;;
  esac
}

require_refs() {
  [ -f "$REFS/done" ] || {
    fail "references missing: the padlock_openssl_refs fixture did not run"
    finish
  }
  SIZES="$(cat "$REFS/sizes")"
  if quick; then
    SIZES="$QUICK_SIZES $(awk '{ print $18 }' "$REFS/sizes")"
    echo "ACCELCRYPT_TEST_QUICK=1: sizes $SIZES"
  fi
}

case "$CASE" in
  refs)
    # Inputs, keys and IVs are random per run (nothing here is a known
    # answer); the reference side is OpenSSL's default provider. Nothing
    # here loads code of ours: no sanitizer runtime preloaded into the
    # shell tools and openssl under CI's ASan stage (174 s there with it).
    unset LD_PRELOAD
    rm -rf "$REFS"
    mkdir -p "$REFS"
    extra="$(od -An -tu4 -N12 /dev/urandom | awk '{
      for (i = 1; i <= NF; ++i) printf "%d ", 2 + $i % 65000 }')"
    echo $BOUNDARY_SIZES $extra >"$REFS/sizes"
    SIZES="$(cat "$REFS/sizes")"
    echo "sizes: $SIZES"
    for n in $SIZES; do
      head -c "$n" /dev/urandom >"$REFS/in.$n"
    done
    for bits in $KEY_BITS; do
      head -c $((bits / 8)) /dev/urandom >"$REFS/key.$bits"
    done
    head -c 16 /dev/urandom >"$REFS/iv"
    # CTR: the low 32 counter bits start at 00fffff0, so 16 blocks in the
    # 16-bit counter wraps (PadLock's CTR wraps bytes 14-15 with no carry;
    # the backend carries in software) and the carry runs into byte 12.
    { head -c 12 /dev/urandom; printf '\000\377\377\360'; } >"$REFS/iv.ctr"
    for mode in $MODES; do
      for bits in $KEY_BITS; do
        c="aes-$bits-$mode"
        ivopt=(-iv "$(hex "$REFS/iv")")
        [ "$mode" = ctr ] && ivopt=(-iv "$(hex "$REFS/iv.ctr")")
        [ "$mode" = ecb ] && ivopt=()
        : >"$REFS/ivopt.$c"
        for w in "${ivopt[@]}"; do echo "$w" >>"$REFS/ivopt.$c"; done
        for n in $(sizes_for "$bits"); do
          ossl_default enc "-$c" -K "$(hex "$REFS/key.$bits")" "${ivopt[@]}" \
            -in "$REFS/in.$n" -out "$REFS/$c.$n" 2>"$REFS/err" \
            || fail "default enc $c/$n: $(cat "$REFS/err")"
          ossl_default enc -d "-$c" -K "$(hex "$REFS/key.$bits")" \
            "${ivopt[@]}" -in "$REFS/$c.$n" -out "$REFS/$c.$n.dec" \
            2>"$REFS/err" || fail "default dec $c/$n: $(cat "$REFS/err")"
          check "default round trip $c/$n" cmp -s "$REFS/in.$n" \
            "$REFS/$c.$n.dec"
          rm -f "$REFS/$c.$n.dec"
        done
      done
    done
    for d in sha1 sha224 sha256 sha384 sha512; do
      for n in $SIZES; do
        ossl_default dgst "-$d" -r "$REFS/in.$n" 2>"$REFS/err" \
          | cut -d' ' -f1 >"$REFS/$d.$n"
        check "default $d/$n" grep -Eq '^[0-9a-f]{40,128}$' "$REFS/$d.$n"
      done
    done
    [ "$failed" -eq 0 ] && touch "$REFS/done"
    ;;

  enc-run)
    # Inner loop of `enc`, run under `accelcrypt trace`.
    require_refs
    for bits in $KEY_BITS; do
      c="aes-$bits-$MODE"
      mapfile -t ivopt <"$REFS/ivopt.$c"
      key="$(hex "$REFS/key.$bits")"
      for n in $(sizes_for "$bits"); do
        out="$WORK/$c.$n"
        # Encrypt with padlock: identical to the default provider's bytes.
        if ! emu "$OPENSSL" enc "-$c" -K "$key" "${ivopt[@]}" \
          -in "$REFS/in.$n" -out "$out.enc" -propquery provider=accelcrypt \
          2>"$out.err"; then
          fail "$c/$n encrypt (padlock): $(cat "$out.err")"
        else
          comparisons=$((comparisons + 1))
          if cmp -s "$out.enc" "$REFS/$c.$n"; then
            # The default provider decrypted these very bytes in `refs`.
            pass
          else
            fail "$c/$n padlock ciphertext differs from the default provider's"
            ossl_default enc -d "-$c" -K "$key" "${ivopt[@]}" \
              -in "$out.enc" -out "$out.enc.dec" 2>/dev/null
            cmp -s "$out.enc.dec" "$REFS/in.$n" \
              || fail "$c/$n default cannot decrypt padlock's ciphertext"
          fi
        fi
        # Decrypt the default provider's ciphertext with padlock.
        if ! emu "$OPENSSL" enc -d "-$c" -K "$key" "${ivopt[@]}" \
          -in "$REFS/$c.$n" -out "$out.dec" -propquery provider=accelcrypt \
          2>"$out.err"; then
          fail "$c/$n decrypt (padlock): $(cat "$out.err")"
        else
          comparisons=$((comparisons + 1))
          check "$c/$n default->padlock round trip" cmp -s "$out.dec" \
            "$REFS/in.$n"
        fi
        rm -f "$out.enc" "$out.dec" "$out.enc.dec"
      done
    done
    finish
    ;;

  enc)
    [ -n "$PROFILE" ] && [ -n "$MODE" ] || { fail "usage: enc PROFILE MODE"; finish; }
    require_refs
    rm -rf "$WORK" && mkdir -p "$WORK"
    # The load-time self-tests (which run every claimed algorithm once per
    # process) are off for the 80 processes of this loop only; the other
    # cases keep them on.
    printf '[accelcrypt]\nbackends = padlock, software\nselftest = 0\n' \
      >"$WORK/ac.cnf"
    ACCELCRYPT_CONF="$WORK/ac.cnf" traced "$WORK/cells" \
      bash "$0" enc-run "$PROFILE" "$MODE"
    check "openssl enc comparisons ($MODE, $PROFILE)" test $? -eq 0
    comparisons="$(cat "$WORK/comparisons" 2>/dev/null || echo 0)"
    for bits in $KEY_BITS; do
      total=0
      for n in $(sizes_for "$bits"); do total=$((total + n)); done
      a="$(alg_name "aes-$bits-$MODE")"
      got="$(cell "$WORK/cells" padlock "$a" bytes)"
      # Each size is encrypted and decrypted once: at least 2 * total bytes.
      check "$a: padlock served $got bytes (>= $((2 * total)))" \
        test "$got" -ge $((2 * total))
      check "$a: no padlock errors" \
        test "$(cell "$WORK/cells" padlock "$a" errors)" -eq 0
      check "$a: no bytes served by another backend" \
        test "$(other_bytes "$WORK/cells" "$a")" -eq 0
    done
    ;;

  dgst-run)
    require_refs
    for d in $DIGESTS; do
      for n in $SIZES; do
        a="$(emu "$OPENSSL" dgst "-$d" -r -propquery provider=accelcrypt \
          "$REFS/in.$n" 2>"$WORK/err" | cut -d' ' -f1)"
        comparisons=$((comparisons + 1))
        check "$d/$n digest ($PROFILE) identical ($a)" \
          test -n "$a" -a "$a" = "$(cat "$REFS/$d.$n")"
      done
    done
    finish
    ;;

  dgst)
    [ -n "$PROFILE" ] || { fail "usage: dgst PROFILE"; finish; }
    require_refs
    rm -rf "$WORK" && mkdir -p "$WORK"
    digests="sha1 sha224 sha256"
    [ "$PROFILE" = zhaoxin ] && digests="$digests sha384 sha512"
    printf '[accelcrypt]\nbackends = padlock, software\nselftest = 0\n' \
      >"$WORK/ac.cnf"
    DIGESTS="$digests" ACCELCRYPT_CONF="$WORK/ac.cnf" traced "$WORK/cells" \
      bash "$0" dgst-run "$PROFILE"
    check "openssl dgst comparisons ($PROFILE)" test $? -eq 0
    comparisons="$(cat "$WORK/comparisons" 2>/dev/null || echo 0)"
    total=0
    for n in $SIZES; do total=$((total + n)); done
    for d in $digests; do
      a="$(digest_name "$d")"
      got="$(cell "$WORK/cells" padlock "$a" bytes)"
      check "$a: padlock served $got bytes (>= $total)" test "$got" -ge "$total"
      check "$a: no padlock errors" \
        test "$(cell "$WORK/cells" padlock "$a" errors)" -eq 0
      check "$a: no bytes served by another backend" \
        test "$(other_bytes "$WORK/cells" "$a")" -eq 0
    done
    ;;

  route-run)
    require_refs
    n=4097
    set -e
    emu "$OPENSSL" enc -aes-256-cbc -K "$(hex "$REFS/key.256")" \
      -iv "$(hex "$REFS/iv")" -in "$REFS/in.$n" -out "$WORK/out.cbc"
    emu "$OPENSSL" dgst -sha256 -r "$REFS/in.$n" >"$WORK/out.sha256"
    emu "$OPENSSL" enc -aes-128-ctr -K "$(hex "$REFS/key.128")" \
      -iv "$(hex "$REFS/iv.ctr")" -in "$REFS/in.$n" -out "$WORK/out.ctr"
    exit 0
    ;;

  route)
    # The route keys (docs/configuration.md): padlock only for CBC and
    # SHA-256, software first for CTR. The trace must show exactly that.
    [ -n "$PROFILE" ] || { fail "usage: route PROFILE"; finish; }
    require_refs
    rm -rf "$WORK" && mkdir -p "$WORK"
    printf '%s\n' '[accelcrypt]' 'route.aes-256-cbc = only:padlock' \
      'route.sha256 = only:padlock' 'route.aes-128-ctr = software, padlock' \
      >"$WORK/ac.cnf"
    n=4097
    ACCELCRYPT_CONF="$WORK/ac.cnf" traced "$WORK/cells" \
      bash "$0" route-run "$PROFILE"
    check "routed commands succeed" test $? -eq 0
    comparisons=$((comparisons + 3))
    check "routed AES-256-CBC identical" cmp -s "$WORK/out.cbc" \
      "$REFS/aes-256-cbc.$n"
    check "routed AES-128-CTR identical" cmp -s "$WORK/out.ctr" \
      "$REFS/aes-128-ctr.$n"
    check "routed SHA-256 identical" test "$(cut -d' ' -f1 "$WORK/out.sha256")" \
      = "$(cat "$REFS/sha256.$n")"
    check "AES-256-CBC served by padlock" \
      test "$(cell "$WORK/cells" padlock AES-256-CBC bytes)" -ge $n
    check "SHA2-256 served by padlock" \
      test "$(cell "$WORK/cells" padlock SHA2-256 bytes)" -eq $n
    check "AES-128-CTR served by software (route order)" \
      test "$(cell "$WORK/cells" software AES-128-CTR bytes)" -eq $n
    check "AES-128-CTR not served by padlock" \
      test "$(cell "$WORK/cells" padlock AES-128-CTR bytes)" -eq 0
    # The human-readable table names padlock too.
    ACCELCRYPT_CONF="$WORK/ac.cnf" "$CLI" trace -o "$WORK/table" -- \
      env LD_PRELOAD="$EMU_PRELOAD" ACCELCRYPT_PADLOCK_EMULATOR=1 \
      ACCELCRYPT_PADLOCK_PROFILE="$PROFILE" "$OPENSSL" dgst -sha256 \
      "$REFS/in.$n" >/dev/null
    check "trace table: padlock SHA2-256 $n bytes" \
      grep -Eq "^ *padlock +SHA2-256 +[0-9]+ +$n +0 +0 *\$" "$WORK/table"
    ;;

  noemu)
    # Without the emulator this machine has no PadLock: the same config
    # still works, padlock declines cleanly and the others serve.
    require_refs
    rm -rf "$WORK" && mkdir -p "$WORK"
    others=software
    [ -f "$BACKENDS/x86.so" ] && others="x86, software"
    printf '[accelcrypt]\nbackends = padlock, %s\n' "$others" >"$WORK/ac.cnf"
    ACCELCRYPT_CONF="$WORK/ac.cnf" "$CLI" list >"$WORK/list" 2>&1
    check "accelcrypt list runs without the emulator" test $? -eq 0
    check "list: padlock is not among the loaded backends" \
      test -z "$(grep -E '^  padlock .*\[hardware\]' "$WORK/list")"
    # Off VIA/Zhaoxin the module's load hint keeps it from being loaded at
    # all (the CPU vendor is named); on such a CPU without a usable unit it
    # loads and declines itself.
    check "list: padlock.so declined with its reason" \
      grep -Eq 'padlock\.so .*(no PadLock unit|the CPU vendor is [^ ]+, the backend serves only)' \
      "$WORK/list"
    ACCELCRYPT_PADLOCK_EMULATOR=1 ACCELCRYPT_CONF="$WORK/ac.cnf" "$CLI" list \
      >"$WORK/list.env" 2>&1
    check "ACCELCRYPT_PADLOCK_EMULATOR=1 alone (no emulator loaded) is harmless" \
      test $? -eq 0
    check "ACCELCRYPT_PADLOCK_EMULATOR=1: the module is loaded and declines itself" \
      grep -Eq 'padlock\.so .*no PadLock unit' "$WORK/list.env"
    n=65537
    ACCELCRYPT_CONF="$WORK/ac.cnf" traced "$WORK/cells" bash -c '
      set -e
      for m in ecb cbc cfb ofb ctr; do
        ivopt="-iv $4"; [ "$m" = ctr ] && ivopt="-iv $6"; [ "$m" = ecb ] && ivopt=
        "$1" enc -aes-128-$m -K "$3" $ivopt -in "$2" -out "$5.$m"
      done
      "$1" dgst -sha256 -r "$2" >"$5.sha256"
      "$1" dgst -sha1 -r "$2" >"$5.sha1"
    ' _ "$OPENSSL" "$REFS/in.$n" "$(hex "$REFS/key.128")" "$(hex "$REFS/iv")" \
      "$WORK/out" "$(hex "$REFS/iv.ctr")"
    check "openssl works with backends = padlock, $others" test $? -eq 0
    for m in $MODES; do
      comparisons=$((comparisons + 1))
      check "aes-128-$m identical without padlock" cmp -s "$WORK/out.$m" \
        "$REFS/aes-128-$m.$n"
      a="$(alg_name "aes-128-$m")"
      check "$a served by software/x86" \
        test "$(other_bytes "$WORK/cells" "$a")" -ge $n
    done
    for d in sha1 sha256; do
      comparisons=$((comparisons + 1))
      check "$d identical without padlock" \
        test "$(cut -d' ' -f1 "$WORK/out.$d")" = "$(cat "$REFS/$d.$n")"
    done
    check "padlock served nothing" \
      test -z "$(awk '$1 == "padlock"' "$WORK/cells")"
    check "no errors anywhere" \
      test -z "$(awk '$5 != 0' "$WORK/cells" | grep -v '^files\|^exit')"
    ;;

  rng)
    # A stuck xstore (every byte the same) is found by the health tests and
    # taken out of service; not one byte from it is served.
    PROFILE=nano
    rm -rf "$WORK" && mkdir -p "$WORK"
    printf '[accelcrypt]\nbackends = padlock, software\n' >"$WORK/ac.cnf"
    export ACCELCRYPT_CONF="$WORK/ac.cnf"
    rand_under_trace() {  # rand_under_trace TAG [VAR=VALUE...]
      local tag="$1"
      shift
      traced "$WORK/cells.$tag" env LD_PRELOAD="$EMU_PRELOAD" \
        ACCELCRYPT_PADLOCK_EMULATOR=1 ACCELCRYPT_PADLOCK_PROFILE=nano "$@" \
        "$OPENSSL" rand -hex 32 >"$WORK/out.$tag" 2>"$WORK/err.$tag"
    }
    # Healthy source first, as the contrast: SEED-SRC is published and
    # padlock's entropy seeds the DRBG.
    emu "$OPENSSL" list -random-generators >"$WORK/rngs.ok" 2>&1
    check "healthy: SEED-SRC @ accelcrypt published" \
      grep -q 'SEED-SRC @ accelcrypt' "$WORK/rngs.ok"
    rand_under_trace ok
    check "healthy: openssl rand works" grep -Eq '^[0-9a-f]{64}$' "$WORK/out.ok"
    check "healthy: padlock ENTROPY served bytes" \
      test "$(cell "$WORK/cells.ok" padlock ENTROPY bytes)" -gt 0

    # 1. Stuck from the first byte: the self-test (at first use by default,
    # here forced by list --selftest) disables it.
    emu ACCELCRYPT_PADLOCK_RNG_FAULT=stuck "$CLI" list --selftest \
      >"$WORK/list.stuck" 2>&1
    check "stuck at load: accelcrypt list --selftest shows the failed test" \
      grep -Eq 'FAILED +padlock +ENTROPY .*(start-up|repetition)' \
      "$WORK/list.stuck"
    # With selftest = load the failed source is dropped before the provider
    # publishes its algorithms: no seed source at all. (At first use the
    # seed source is published and its first request falls back to the
    # kernel's entropy: checked below, not one byte from padlock.)
    printf '[accelcrypt]\nbackends = padlock, software\nselftest = load\n' \
      >"$WORK/ac_load.cnf"
    ACCELCRYPT_CONF="$WORK/ac_load.cnf" emu ACCELCRYPT_PADLOCK_RNG_FAULT=stuck \
      "$OPENSSL" list -random-generators >"$WORK/rngs.stuck" 2>&1
    check "stuck at load (selftest = load): no SEED-SRC @ accelcrypt" \
      test -z "$(grep 'SEED-SRC @ accelcrypt' "$WORK/rngs.stuck")"
    rand_under_trace stuck ACCELCRYPT_PADLOCK_RNG_FAULT=stuck
    check "stuck at load: openssl rand works ($(head -c 200 "$WORK/err.stuck"))" \
      grep -Eq '^[0-9a-f]{64}$' "$WORK/out.stuck"
    check "stuck at load: provider loaded (AES-256-CTR of the DRBG served)" \
      test "$(awk '$2 == "AES-256-CTR" { s += $4 } END { print s + 0 }' \
        "$WORK/cells.stuck")" -gt 0
    for alg in ENTROPY RANDOM; do
      check "stuck at load: no padlock $alg bytes" \
        test "$(cell "$WORK/cells.stuck" padlock "$alg" bytes)" -eq 0
    done

    # 2. Stuck after the load-time checks passed: the first 1024 start-up
    # samples plus the self-test's 2 x 32 bytes are good, every byte after
    # them is stuck, so the DRBG's first seed request meets the fault. The
    # continuous repetition count test catches it, the source is latched
    # out of service and the error counted. The router falls back to the
    # software backend's kernel entropy (getrandom): openssl rand keeps
    # working and nothing from the stuck source is served.
    rand_under_trace late ACCELCRYPT_PADLOCK_RNG_FAULT=stuck \
      ACCELCRYPT_PADLOCK_RNG_FAULT_AFTER=1088
    rc=$?
    check "stuck later: padlock ENTROPY errors counted" \
      test "$(cell "$WORK/cells.late" padlock ENTROPY errors)" -ge 1
    for alg in ENTROPY RANDOM; do
      check "stuck later: no padlock $alg bytes" \
        test "$(cell "$WORK/cells.late" padlock "$alg" bytes)" -eq 0
    done
    check "stuck later: openssl rand still works (rc $rc)" test "$rc" -eq 0
    check "stuck later: random output" \
      grep -Eq '^[0-9a-f]{64}$' "$WORK/out.late"
    check "stuck later: software ENTROPY served the seed" \
      test "$(cell "$WORK/cells.late" software ENTROPY bytes)" -gt 0
    check "stuck later: the fallback is counted" \
      test "$(cell "$WORK/cells.late" padlock ENTROPY fallbacks)" -ge 1
    ;;

  evp)
    # padlock_evp_mt_test (8 threads, a forked child; libcrypto only) under
    # `accelcrypt trace`: every cipher and digest it uses must have been
    # served by padlock and by nothing else. Emulator quirk variables
    # (ACCELCRYPT_PADLOCK_EMU_*) set by CTest pass through.
    [ -n "$PROFILE" ] || { fail "usage: evp PROFILE"; finish; }
    rm -rf "$WORK" && mkdir -p "$WORK"
    printf '[accelcrypt]\nbackends = padlock, software\n' >"$WORK/ac.cnf"
    ACCELCRYPT_CONF="$WORK/ac.cnf" traced "$WORK/cells" env \
      LD_PRELOAD="$EMU_PRELOAD" ACCELCRYPT_PADLOCK_EMULATOR=1 \
      ACCELCRYPT_PADLOCK_PROFILE="$PROFILE" "${EVP_TEST:?}"
    check "padlock_evp_mt_test passed under $PROFILE" test $? -eq 0
    for mode in ECB CBC CFB OFB CTR GCM; do
      for bits in $KEY_BITS; do
        a="AES-$bits-$mode"
        check "$a served by padlock" \
          test "$(cell "$WORK/cells" padlock "$a" bytes)" -gt 0
        check "$a: nothing from another backend" \
          test "$(other_bytes "$WORK/cells" "$a")" -eq 0
        check "$a: no padlock errors" \
          test "$(cell "$WORK/cells" padlock "$a" errors)" -eq 0
      done
    done
    for a in SHA1 SHA2-256; do
      check "$a served by padlock" \
        test "$(cell "$WORK/cells" padlock "$a" bytes)" -gt 0
      check "$a: nothing from another backend" \
        test "$(other_bytes "$WORK/cells" "$a")" -eq 0
    done
    ;;

  *)
    fail "unknown case $CASE"
    ;;
esac
finish
