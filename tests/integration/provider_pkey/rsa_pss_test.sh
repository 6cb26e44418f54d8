#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# RSA-PSS keys (id-RSASSA-PSS with RSASSA-PSS-params restrictions) through
# accelcrypt alone (accelcrypt + base: nothing can fall back) with the real
# `openssl` binary: genpkey with restrictions, the keys read back by both
# providers, signatures accelcrypt makes verified by the default provider
# and the other way round, and every restriction violation refused by
# accelcrypt with OpenSSL's reason, as the default provider refuses it.
# Environment (set by CMake): OPENSSL_BIN, ACCELCRYPT_TEST_CNF_ONLY,
# ACCELCRYPT_TEST_CNF (default + accelcrypt preferred),
# ACCELCRYPT_TEST_BACKENDS, WORK_DIR. Exit 0 pass, 1 fail.
set -u

OPENSSL="${OPENSSL_BIN:-openssl}"
CNF_ONLY="${ACCELCRYPT_TEST_CNF_ONLY:?}"
WORK="${WORK_DIR:?}/rsa_pss"
rm -rf "$WORK"
mkdir -p "$WORK"
unset ACCELCRYPT_CONF ACCELCRYPT_STATS_DIR ACCELCRYPT_LOG_LEVEL
export ACCELCRYPT_STATE_DIR="$WORK/state"
export ACCELCRYPT_BACKEND_DIR="${ACCELCRYPT_TEST_BACKENDS:?}"
# RSA-PSS through the provider over the software backend: `interpose = all`.
printf '[accelcrypt]\ninterpose = all\n' >"$WORK/interpose-all.cnf"
export ACCELCRYPT_CONF="$WORK/interpose-all.cnf"

passed=0
failed=0
fail() {
  failed=$((failed + 1))
  echo "FAIL: $*" >&2
}
check() {  # check DESCRIPTION COMMAND...
  local what="$1"
  shift
  if "$@"; then passed=$((passed + 1)); else fail "$what"; fi
}
check_not() {  # check_not DESCRIPTION COMMAND...: COMMAND must fail
  local what="$1"
  shift
  if "$@"; then fail "$what"; else passed=$((passed + 1)); fi
}

# ours TAG ARGS...: openssl with accelcrypt + base only, stats in
# $WORK/stats.TAG, standard error in $WORK/err.TAG.
ours() {
  local tag="$1"
  shift
  rm -rf "$WORK/stats.$tag"
  mkdir -p "$WORK/stats.$tag"
  ACCELCRYPT_STATS_DIR="$WORK/stats.$tag" OPENSSL_CONF="$CNF_ONLY" \
    "$OPENSSL" "$@" 2>"$WORK/err.$tag"
}
# dflt ARGS...: OpenSSL's default provider only.
# The reference side loads no code of ours: no sanitizer runtime preloaded.
dflt() { OPENSSL_CONF=/dev/null env -u LD_PRELOAD "$OPENSSL" "$@" 2>>"$WORK/err.default"; }
# served TAG ALG: the stats of call TAG show ALG served (ops > 0).
served() {
  grep -q "\"$2\":{[^}]*\"ops\":[1-9]" <(cat "$WORK/stats.$1"/*.json 2>/dev/null)
}
# said TAG TEXT: call TAG's error output contains TEXT.
said() { grep -qF -- "$2" "$WORK/err.$1"; }
# restrictions FILE MD MGF1 SALT [-pubin]: the default provider reads FILE
# as an RSA-PSS key with these restrictions.
restrictions() {
  local text
  text=$(dflt pkey -in "$1" ${5:-} -noout -text) || return 1
  grep -q "Hash Algorithm: $2" <<<"$text" &&
    grep -q "Mask Algorithm: MGF1 with $3" <<<"$text" &&
    grep -q "Minimum Salt Length: $4" <<<"$text"
}

key="$WORK/key.pem"
pub="$WORK/pub.pem"
msg="$WORK/msg"
head -c 1000 /dev/urandom >"$msg"

# 1. Generation through accelcrypt, restrictions kept by the encoders.
check "accelcrypt generates a restricted RSA-PSS key" \
  ours gen genpkey -algorithm RSA-PSS -pkeyopt rsa_keygen_bits:2048 \
  -pkeyopt rsa_pss_keygen_md:sha256 -pkeyopt rsa_pss_keygen_mgf1_md:sha256 \
  -pkeyopt rsa_pss_keygen_saltlen:32 -out "$key"
check "the key is RSA-PSS with SHA-256/MGF1-SHA-256/salt >= 32" \
  restrictions "$key" SHA2-256 SHA2-256 32
check "accelcrypt reads the key back with its restrictions" \
  bash -c "OPENSSL_CONF='$CNF_ONLY' '$OPENSSL' pkey -in '$key' -noout -text |
    grep -q 'Minimum Salt Length: 32'"
check "accelcrypt writes the public key" \
  ours pub pkey -in "$key" -pubout -out "$pub"
check "the public key keeps the restrictions" \
  restrictions "$pub" SHA2-256 SHA2-256 32 -pubin
check "only the digest: MGF1 stays SHA-1, salt 20 (RFC 4055 defaults)" \
  bash -c "OPENSSL_CONF='$CNF_ONLY' '$OPENSSL' genpkey -algorithm RSA-PSS \
    -pkeyopt rsa_keygen_bits:1024 -pkeyopt rsa_pss_keygen_md:sha384 \
    -out '$WORK/k384.pem' 2>/dev/null"
check "  (read by the default provider)" \
  restrictions "$WORK/k384.pem" SHA2-384 "SHA1 (default)" "20 (default)"
# A restriction to a digest accelcrypt lacks (SHA-512/256; OpenSSL 3.0
# cannot encode SHA-3 in RSASSA-PSS-params): with accelcrypt preferred
# (the system-wide setup) such a key still loads into accelcrypt, prints
# and is written back unchanged; only signing with it is refused, saying
# why (as for any signature with a digest accelcrypt lacks).
pref() {  # pref TAG ARGS...: openssl with default + accelcrypt preferred
  local tag="$1"
  shift
  OPENSSL_CONF="${ACCELCRYPT_TEST_CNF:?}" "$OPENSSL" "$@" 2>"$WORK/err.$tag"
}
dflt genpkey -algorithm RSA-PSS -pkeyopt rsa_keygen_bits:1024 \
  -pkeyopt rsa_pss_keygen_md:sha512-256 -out "$WORK/s5.pem"
check "accelcrypt (preferred) reads a key restricted to SHA-512/256" \
  bash -c "OPENSSL_CONF='$ACCELCRYPT_TEST_CNF' '$OPENSSL' pkey \
    -in '$WORK/s5.pem' -noout -text | grep -q 'Hash Algorithm: SHA2-512/256'"
check "  and writes it back unchanged" \
  bash -c "OPENSSL_CONF='$ACCELCRYPT_TEST_CNF' '$OPENSSL' pkey \
    -in '$WORK/s5.pem' -out '$WORK/s5-again.pem' &&
    cmp -s '$WORK/s5.pem' '$WORK/s5-again.pem'"
check_not "  accelcrypt refuses to sign with it" \
  pref s5sign dgst -sha512-256 -sign "$WORK/s5.pem" -out "$WORK/s5sig" "$msg"
check "  and says why" said s5sign "accelcrypt does not offer SHA2-512/256"
check_not "accelcrypt refuses a restriction to an unknown digest" \
  ours nomd genpkey -algorithm RSA-PSS -pkeyopt rsa_keygen_bits:1024 \
  -pkeyopt rsa_pss_keygen_md:nosuchdigest -out "$WORK/nomd.pem"

# 2. Signatures accelcrypt makes, checked by the default provider.
check "accelcrypt signs with the key (SHA-256)" \
  ours sign dgst -sha256 -sign "$key" -out "$WORK/sig" "$msg"
check "  served by accelcrypt's RSA-SIGN" served sign RSA-SIGN
check "the default provider verifies it" \
  dflt dgst -sha256 -verify "$pub" -signature "$WORK/sig" "$msg"
check "  with the key's minimum salt (32), as the default provider signs" \
  dflt dgst -sha256 -sigopt rsa_padding_mode:pss -sigopt rsa_pss_saltlen:32 \
  -verify "$pub" -signature "$WORK/sig" "$msg"
check "accelcrypt signs with no digest named (the key's: SHA-256)" \
  ours nomd dgst -sign "$key" -out "$WORK/sig0" "$msg"
check "  the default provider verifies it as SHA-256" \
  dflt dgst -sha256 -verify "$pub" -signature "$WORK/sig0" "$msg"
check "accelcrypt signs with a larger salt (64)" \
  ours salt64 dgst -sha256 -sigopt rsa_pss_saltlen:64 -sign "$key" \
  -out "$WORK/sig64" "$msg"
check "  the default provider verifies it with salt 64" \
  dflt dgst -sha256 -sigopt rsa_pss_saltlen:64 -verify "$pub" \
  -signature "$WORK/sig64" "$msg"
check_not "  and not with the minimum (the salt is checked exactly)" \
  dflt dgst -sha256 -verify "$pub" -signature "$WORK/sig64" "$msg"

# 3. The default provider's signatures, checked by accelcrypt.
dflt dgst -sha256 -sigopt rsa_pss_saltlen:48 -sign "$key" \
  -out "$WORK/dsig" "$msg"
check "accelcrypt verifies the default provider's signature (salt 48)" \
  ours verify dgst -sha256 -sigopt rsa_pss_saltlen:48 -verify "$pub" \
  -signature "$WORK/dsig" "$msg"
check "  served by accelcrypt's RSA-SIGN" served verify RSA-SIGN
check_not "accelcrypt rejects it over other data" \
  ours other dgst -sha256 -sigopt rsa_pss_saltlen:48 -verify "$pub" \
  -signature "$WORK/dsig" "$WORK/sig"

# 4. Violations: refused by accelcrypt with OpenSSL's reason, and by the
# default provider as well (the same rule on both sides).
violation() {  # violation TAG REASON ARGS...: dgst -sign ARGS is refused
  local tag="$1" reason="$2"
  shift 2
  check_not "accelcrypt refuses: $tag" \
    ours "$tag" dgst "$@" -sign "$key" -out "$WORK/bad.$tag" "$msg"
  check "  with the reason '$reason'" said "$tag" "$reason"
  check_not "  the default provider refuses it too" \
    dflt dgst "$@" -sign "$key" -out "$WORK/dbad.$tag" "$msg"
}
violation sha1 "digest not allowed" -sha1
violation sha512 "digest not allowed" -sha512
violation salt20 "pss saltlen too small" -sha256 -sigopt rsa_pss_saltlen:20
violation pkcs1 "illegal or unsupported padding mode" -sha256 \
  -sigopt rsa_padding_mode:pkcs1
violation mgf1 "digest not allowed" -sha256 -sigopt rsa_mgf1_md:sha1
check_not "accelcrypt refuses an autodetected salt when verifying" \
  ours auto dgst -sha256 -sigopt rsa_pss_saltlen:auto -verify "$pub" \
  -signature "$WORK/sig" "$msg"
check "  with the reason 'invalid salt length'" said auto "invalid salt length"
check_not "  the default provider refuses it too" \
  dflt dgst -sha256 -sigopt rsa_pss_saltlen:auto -verify "$pub" \
  -signature "$WORK/sig" "$msg"
check_not "accelcrypt refuses to encrypt with an RSA-PSS key" \
  ours enc pkeyutl -encrypt -pubin -inkey "$pub" -in "$WORK/sig" \
  -out "$WORK/ct"
check "  with the reason 'operation not supported for this keytype'" \
  said enc "operation not supported for this keytype"

# 5. An unrestricted RSA-PSS key: PSS with any claimed digest.
check "accelcrypt generates an unrestricted RSA-PSS key" \
  ours free genpkey -algorithm RSA-PSS -pkeyopt rsa_keygen_bits:2048 \
  -out "$WORK/free.pem"
check "  the default provider reads it as unrestricted" \
  bash -c "OPENSSL_CONF=/dev/null '$OPENSSL' pkey -in '$WORK/free.pem' \
    -noout -text | grep -q 'No PSS parameter restrictions'"
check "accelcrypt signs SHA-384 with it" \
  ours free384 dgst -sha384 -sign "$WORK/free.pem" -out "$WORK/fsig" "$msg"
check "  the default provider verifies it" \
  dflt dgst -sha384 -prverify "$WORK/free.pem" -signature "$WORK/fsig" "$msg"
check_not "  PKCS#1 v1.5 is refused on an RSA-PSS key" \
  ours freepkcs1 dgst -sha384 -sigopt rsa_padding_mode:pkcs1 \
  -sign "$WORK/free.pem" -out "$WORK/fbad" "$msg"

# 6. A restricted key the default provider made, used by accelcrypt.
dflt genpkey -algorithm RSA-PSS -pkeyopt rsa_keygen_bits:2048 \
  -pkeyopt rsa_pss_keygen_md:sha512 -pkeyopt rsa_pss_keygen_saltlen:40 \
  -out "$WORK/dkey.pem"
check "accelcrypt signs with the default provider's key" \
  ours dsign dgst -sha512 -sign "$WORK/dkey.pem" -out "$WORK/dksig" "$msg"
check "  served by accelcrypt's RSA-SIGN" served dsign RSA-SIGN
check "  the default provider verifies it" \
  dflt dgst -sha512 -prverify "$WORK/dkey.pem" -signature "$WORK/dksig" "$msg"
check_not "  accelcrypt refuses SHA-256 with that key" \
  ours dsign256 dgst -sha256 -sign "$WORK/dkey.pem" -out "$WORK/dkbad" "$msg"

echo "rsa_pss: ${passed} passed, ${failed} failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
