#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The x86 backend through the real openssl binary (issue 6): the provider is
# loaded by an openssl.cnf that prefers it, the core by ACCELCRYPT_CONF with
# `backends = x86, software`. One check per CTest test:
#   x86_openssl_test.sh CHECK ACCELCRYPT_BIN PROVIDER_MODULE BACKEND_DIR [MASK]
# CHECK:
#   enc    `openssl enc` for every AES mode the provider serves (ECB, CBC,
#          CFB, OFB, CTR x 128/192/256), sizes 0..16 KiB+, encrypt and
#          decrypt byte-identical with the default provider; stats prove the
#          x86 backend served every mode and software served nothing.
#   mask   the same for fewer sizes with ACCELCRYPT_X86_DISABLE=MASK; with
#          AES-NI masked x86 declares no AES and software must serve.
#   gcm    AES-GCM (which `openssl enc` refuses: AEAD): `openssl cms` with
#          AuthEnvelopedData, encrypted through accelcrypt and decrypted by
#          the default provider alone, and the reverse; x86 served GCM;
#          a tampered message is refused. Takes an optional MASK too.
#   speed  `openssl speed -elapsed -seconds 1 -evp aes-128-ctr` runs through
#          the provider and `accelcrypt trace --json` shows x86 served the
#          bytes.
# Exit 77 = skipped (CTest SKIP_RETURN_CODE), with the reason printed.
set -euo pipefail

check=$1
cli=$2
module=$3
backend_dir=$4
mask=${5:-}
openssl=${OPENSSL_BIN:-openssl}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/accelcrypt-x86-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }

[ -x "$cli" ] || fail "accelcrypt binary $cli missing"
[ -f "$module" ] || fail "provider $module missing"
[ -f "$backend_dir/x86.so" ] || fail "x86.so missing in $backend_dir"
# The x86 backend declines (init fails) on a CPU without AES-NI: nothing to
# test then.
if ! grep -qw aes /proc/cpuinfo; then
  echo "SKIP: this CPU has no AES-NI; the x86 backend declines AES here"
  exit 77
fi
unset ACCELCRYPT_X86_DISABLE ACCELCRYPT_BACKENDS ACCELCRYPT_BACKEND_DIR \
      ACCELCRYPT_STATS_DIR OPENSSL_MODULES

# shellcheck source=scripts/speed_cnf.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../../scripts/speed_cnf.sh"
accelcrypt_write_speed_cnfs "$tmp" "$module"
# interpose = all: with AES-NI masked the software backend must serve
# through the provider (the default, interpose = wins, would leave AES to
# the default provider then).
printf '[accelcrypt]\nbackend_dir = %s\nbackends = x86, software\ninterpose = all\n' \
  "$backend_dir" > "$tmp/settings.cnf"
export ACCELCRYPT_CONF=$tmp/settings.cnf
mkdir -p "$tmp/stats"

# accel CMD...: runs openssl through accelcrypt, stats into $tmp/stats.
# Under CI's ASan stage the sanitizer runtime is preloaded (LD_PRELOAD)
# into every process; the enc and mask checks start thousands of small
# ones (head, od, cmp...) that load no code of ours, each paying the
# runtime's start and its leak scan at exit. There the preload is kept
# for openssl through accelcrypt only (san_preload, set below).
san_preload=${LD_PRELOAD:-}
accel() {
  LD_PRELOAD=$san_preload OPENSSL_CONF=$tmp/accelcrypt.cnf \
    ACCELCRYPT_STATS_DIR=$tmp/stats "$openssl" "$@"
}
# The reference side loads no code of ours: under CI's ASan stage the
# sanitizer runtime is not preloaded into it (about half a second each).
dflt() { OPENSSL_CONF=$tmp/default.cnf env -u LD_PRELOAD "$openssl" "$@"; }

# served ALG: "backend bytes" lines for ALG summed over all stats files.
served() {
  python3 - "$tmp/stats" "$1" <<'PY'
import collections, glob, json, sys
total = collections.Counter()
for f in glob.glob(sys.argv[1] + "/*.json"):
    j = json.load(open(f))
    for backend, algs in j.get("backends", {}).items():
        cell = algs.get(sys.argv[2])
        if cell:
            total[backend] += cell.get("bytes", 0)
for backend, n in sorted(total.items()):
    print(backend, n)
PY
}
bytes_by() {  # bytes_by BACKEND ALG
  served "$2" | awk -v b="$1" '$1 == b { print $2; f = 1 } END { if (!f) print 0 }'
}

# A key and IV per key size (hex for the command line only; the data is
# random per run).
key_for() { head -c "$1" /dev/urandom | od -An -tx1 -v | tr -d ' \n'; }

# enc_check ALG SIZES...: both directions, byte-identical with default.
enc_check() {
  local alg=$1; shift
  local bits=${alg#aes-}; bits=${bits%%-*}
  local key iv mode=${alg##*-}
  key=$(key_for $((bits / 8)))
  iv=$(key_for 16)
  local ivarg=(-iv "$iv")
  [ "$mode" = ecb ] && ivarg=()
  for size in "$@"; do
    head -c "$size" /dev/urandom > "$tmp/plain"
    dflt enc -e "-$alg" -K "$key" "${ivarg[@]}" -in "$tmp/plain" -out "$tmp/ref.enc" ||
      fail "default provider: openssl enc -$alg of $size bytes failed"
    accel enc -e "-$alg" -K "$key" "${ivarg[@]}" -in "$tmp/plain" -out "$tmp/acc.enc" ||
      fail "accelcrypt: openssl enc -e -$alg of $size bytes failed"
    cmp -s "$tmp/ref.enc" "$tmp/acc.enc" ||
      fail "-$alg encrypt of $size bytes differs from the default provider${mask:+ (mask $mask)}"
    accel enc -d "-$alg" -K "$key" "${ivarg[@]}" -in "$tmp/ref.enc" -out "$tmp/acc.dec" ||
      fail "accelcrypt: openssl enc -d -$alg of $size bytes failed"
    cmp -s "$tmp/plain" "$tmp/acc.dec" ||
      fail "-$alg decrypt of $size bytes differs from the plaintext${mask:+ (mask $mask)}"
  done
}

modes="ecb cbc cfb ofb ctr"
canon() {  # canon aes-128-cfb -> AES-128-CFB (the stats key)
  echo "$1" | tr '[:lower:]' '[:upper:]'
}

case "$check" in
enc|mask)
  # Only accel (above) needs the sanitizer runtime: not the shell tools.
  unset LD_PRELOAD
  if [ "$check" = enc ]; then
    sizes="0 1 15 16 17 64 65 255 257 1000 4097 16384 16385 65543"
    quick_sizes="0 17 257 65543"
  else
    [ -n "$mask" ] || fail "mask check needs a MASK argument"
    export ACCELCRYPT_X86_DISABLE=$mask
    sizes="0 17 256 4097 16384 16400"
    quick_sizes="17 16400"
  fi
  # ACCELCRYPT_TEST_QUICK=1 (CI's ASan stage, where every openssl process
  # costs about half a second): fewer sizes, still the empty, partial-block
  # and multi-block paths of every mode.
  # The key length changes the number of rounds, not how a path walks
  # its buffers: the quick run takes the shortest and the longest key
  # schedules (a mask check, the longest only).
  key_bits="128 192 256"
  if [ "${ACCELCRYPT_TEST_QUICK:-0}" = 1 ]; then
    sizes=$quick_sizes
    key_bits="128 256"
    [ "$check" = mask ] && key_bits=256
    echo "ACCELCRYPT_TEST_QUICK=1: sizes $sizes, keys of $key_bits bits"
  fi
  # Under a mask the x86 backend must run the masked implementation (its
  # describe line lists the implementation per mode).
  list=$("$cli" list 2>&1) || fail "accelcrypt list failed: $list"
  grep -q '^  x86 ' <<< "$list" || fail "x86 backend not loaded: $list"
  impl=$(grep -o 'aes-ctr=[a-z0-9-]*' <<< "$list" | head -n1)
  gcm_impl=$(grep -o 'aes-gcm=[a-z0-9-]*' <<< "$list" | head -n1)
  echo "x86 implementations: $impl $gcm_impl (mask: ${mask:-none})"
  case ",$mask," in
    *,aesni,*) [ "$impl" = aes-ctr=none ] || fail "AES-NI masked but $impl" ;;
    *,vaes,*) [ "$impl" = aes-ctr=aesni ] || fail "VAES masked but $impl" ;;
    *,vaes512,*) [ "$impl" != aes-ctr=vaes512 ] || fail "VAES-512 masked but $impl" ;;
  esac
  case ",$mask," in
    *,vpclmulqdq,*|*,vaes,*|*,vaes512,*)
      [ "$gcm_impl" != aes-gcm=vaes512-vpclmulqdq ] || fail "mask $mask but $gcm_impl" ;;
  esac
  n=0
  for bits in $key_bits; do
    for m in $modes; do
      enc_check "aes-$bits-$m" $sizes
      n=$((n + 1))
    done
  done
  # Who served: x86 (unless AES-NI is masked: then software), never both.
  for bits in $key_bits; do
    for m in $modes; do
      alg=$(canon "aes-$bits-$m")
      x=$(bytes_by x86 "$alg")
      s=$(bytes_by software "$alg")
      case ",$mask," in
        *,aesni,*)
          [ "$x" -eq 0 ] && [ "$s" -gt 0 ] ||
            fail "$alg with AES-NI masked: x86 served $x bytes, software $s (want 0 / > 0)" ;;
        *)
          [ "$x" -gt 0 ] && [ "$s" -eq 0 ] ||
            fail "$alg: x86 served $x bytes, software $s (want > 0 / 0)" ;;
      esac
    done
  done
  pass "$n AES modes x $(wc -w <<< "$sizes") sizes, encrypt and decrypt identical to the default provider${mask:+ with ACCELCRYPT_X86_DISABLE=$mask}"
  ;;
gcm)
  [ -z "$mask" ] || export ACCELCRYPT_X86_DISABLE=$mask
  # Only accel needs the sanitizer runtime: not head and cmp.
  unset LD_PRELOAD
  # A recipient key and certificate, made by the default provider.
  dflt req -x509 -newkey rsa:2048 -nodes -subj /CN=accelcrypt-x86-test \
    -keyout "$tmp/key.pem" -out "$tmp/cert.pem" -days 1 2> "$tmp/req.err" ||
    { cat "$tmp/req.err" >&2; fail "cannot make a test certificate"; }
  gcm_bits="128 192 256"
  # Quick (CI's ASan stage): the shortest and the longest key schedules.
  [ "${ACCELCRYPT_TEST_QUICK:-0}" = 1 ] && gcm_bits="128 256"
  for bits in $gcm_bits; do
    gcm_sizes="0 1 16 17 600 16384 16401"
    [ "${ACCELCRYPT_TEST_QUICK:-0}" = 1 ] && gcm_sizes="0 17 16401"
    for size in $gcm_sizes; do
      head -c "$size" /dev/urandom > "$tmp/plain"
      accel cms -encrypt -binary -aes-$bits-gcm -in "$tmp/plain" -out "$tmp/acc.cms" \
        -outform DER "$tmp/cert.pem" 2> "$tmp/err" ||
        { cat "$tmp/err" >&2; fail "accelcrypt: cms -encrypt -aes-$bits-gcm ($size bytes) failed"; }
      dflt cms -decrypt -binary -in "$tmp/acc.cms" -inform DER -inkey "$tmp/key.pem" \
        -recip "$tmp/cert.pem" -out "$tmp/dec" 2> "$tmp/err" ||
        { cat "$tmp/err" >&2; fail "default provider cannot decrypt accelcrypt's aes-$bits-gcm ($size bytes)"; }
      cmp -s "$tmp/plain" "$tmp/dec" || fail "aes-$bits-gcm round trip accelcrypt -> default differs ($size bytes)"
      dflt cms -encrypt -binary -aes-$bits-gcm -in "$tmp/plain" -out "$tmp/ref.cms" \
        -outform DER "$tmp/cert.pem" 2> "$tmp/err" ||
        { cat "$tmp/err" >&2; fail "default: cms -encrypt -aes-$bits-gcm failed"; }
      accel cms -decrypt -binary -in "$tmp/ref.cms" -inform DER -inkey "$tmp/key.pem" \
        -recip "$tmp/cert.pem" -out "$tmp/dec" 2> "$tmp/err" ||
        { cat "$tmp/err" >&2; fail "accelcrypt cannot decrypt the default provider's aes-$bits-gcm ($size bytes)"; }
      cmp -s "$tmp/plain" "$tmp/dec" || fail "aes-$bits-gcm round trip default -> accelcrypt differs ($size bytes)"
    done
    x=$(bytes_by x86 "AES-$bits-GCM")
    [ "$x" -gt 0 ] || fail "AES-$bits-GCM: x86 served no bytes ($(served "AES-$bits-GCM" | tr '\n' ' '))"
  done
  # A tampered message must not decrypt through accelcrypt (tag check).
  head -c 1000 /dev/urandom > "$tmp/plain"
  dflt cms -encrypt -binary -aes-128-gcm -in "$tmp/plain" -out "$tmp/ref.cms" \
    -outform DER "$tmp/cert.pem" 2> /dev/null || fail "default: cms -encrypt failed"
  size=$(stat -c %s "$tmp/ref.cms")
  # The DER ends with the mac OCTET STRING (the 16-byte tag) right after the
  # 1000 bytes of ciphertext: flip a ciphertext bit, then a tag bit.
  for at in -40 -1; do
    python3 - "$tmp/ref.cms" "$tmp/bad.cms" "$at" <<'PY'
import sys
d = bytearray(open(sys.argv[1], "rb").read())
assert d[-18:-16] == b"\x04\x10", "mac OCTET STRING not where expected"
d[int(sys.argv[3])] ^= 1
open(sys.argv[2], "wb").write(d)
PY
    if accel cms -decrypt -binary -in "$tmp/bad.cms" -inform DER -inkey "$tmp/key.pem" \
        -recip "$tmp/cert.pem" -out "$tmp/dec" 2> /dev/null; then
      fail "a tampered AES-GCM message (byte $at of $size) decrypted through accelcrypt"
    fi
  done
  pass "AES-128/192/256-GCM via openssl cms, both directions with the default provider, x86 served; tampering detected${mask:+ (ACCELCRYPT_X86_DISABLE=$mask)}"
  ;;
speed)
  "$cli" trace --json -o "$tmp/trace.json" --conf "$tmp/accelcrypt.cnf" -- \
    "$openssl" speed -elapsed -seconds 1 -evp aes-128-ctr > "$tmp/speed.out" 2> "$tmp/speed.err" ||
    { cat "$tmp/speed.out" "$tmp/speed.err" >&2; fail "openssl speed through accelcrypt failed"; }
  grep -q '^AES-128-CTR' "$tmp/speed.out" || { cat "$tmp/speed.out" >&2; fail "no AES-128-CTR line in openssl speed output"; }
  python3 - "$tmp/trace.json" <<'PY' || fail "trace does not show x86 serving AES-128-CTR"
import json, sys
t = json.load(open(sys.argv[1]))
cells = {(c["backend"], c["algorithm"]): c for c in t["cells"]}
x = cells.get(("x86", "AES-128-CTR"))
sw = cells.get(("software", "AES-128-CTR"), {"bytes": 0})
# openssl speed runs 6 block sizes for >= 1 s each: gigabytes, not bytes.
ok = x is not None and x["bytes"] > 100 * 2**20 and sw["bytes"] == 0 and x["errors"] == 0
print("trace:", json.dumps(t["cells"]))
sys.exit(0 if ok else 1)
PY
  pass "openssl speed -evp aes-128-ctr served by x86 (accelcrypt trace --json)"
  ;;
*)
  fail "unknown check '$check'"
  ;;
esac
