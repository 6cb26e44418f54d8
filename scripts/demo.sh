#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The accelcrypt tour on a fresh Debian 12 machine: installs missing
# packages, builds into build/ (Ninja), then shows
#   1. accelcrypt list       backends, algorithms, routing, CPU features
#   2. accelcrypt selftest   every vector file on every backend
#   3. accelcrypt calibrate  this machine's backends measured, as the package
#                            does at install; the router's default policy
#                            (auto) then routes by it
#   4. openssl speed         two tables next to OpenSSL's default provider:
#                            overhead (software backend) and acceleration
#                            (the default routing), AES-128-CBC, AES-256-GCM
#                            and SHA-256
#   5. accelcrypt trace      which backend served `openssl enc`
#   6. the PKCS#11 module    a token initialised with pkcs11-tool, an RSA
#                            key generated and used on it, the signature
#                            checked by openssl, and which backend hashed
# Re-running is incremental. ACCELCRYPT_BUILD_DIR overrides build/.
set -euo pipefail
# shellcheck source=scripts/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

accelcrypt_install_deps
accelcrypt_build

bin="$ACCELCRYPT_BUILD_DIR/bin/accelcrypt"
module="$ACCELCRYPT_BUILD_DIR/lib/accelcrypt.so"
[ -x "$bin" ] || { echo "demo: $bin was not built" >&2; exit 1; }
[ -f "$module" ] || { echo "demo: $module was not built" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/accelcrypt-demo.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

step() { printf '\n\033[1m== %s\033[0m\n$ %s\n' "$1" "$2"; }

step "1. What is loaded" "accelcrypt list --selftest"
"$bin" list --selftest

step "2. Known-answer vectors on every backend" "accelcrypt selftest"
"$bin" selftest

step "3. The provider's openssl.cnf stanza (build-tree module)" \
  "accelcrypt config --module $module"
"$bin" config --module "$module" | tee "$tmp/accelcrypt.cnf"

step "4. Measure this machine's backends (the package runs this at install)" \
  "accelcrypt calibrate --seconds-per-cell 0.02 -o calibration.json"
# The demo's own file: the router reads it through ACCELCRYPT_CALIBRATION
# for the rest of the tour (installed, it is /var/lib/accelcrypt/).
export ACCELCRYPT_CALIBRATION="$tmp/calibration.json"
"$bin" calibrate --seconds-per-cell 0.02 -o "$ACCELCRYPT_CALIBRATION" \
  > "$tmp/calibrate.out" 2> "$tmp/calibrate.err" ||
  echo "(calibrate reported a problem: $(tail -n 1 "$tmp/calibrate.err"))"
grep -E '^(algorithm|AES-128-CBC|AES-256-GCM|SHA2-256) ' "$tmp/calibrate.out" |
  grep -E '^algorithm|  (16|16384) ' || true
"$bin" list | sed -n '/^Routing policy/,/^  RSA\/DSA/p' |
  grep -E 'Routing policy|calibration|AES-128-CBC|AES-256-GCM|SHA2-256 ' || true

step "5. openssl speed: overhead and acceleration next to the default provider" \
  "scripts/bench.sh --seconds 1 --rounds 1 --alg aes-128-cbc --alg aes-256-gcm --alg sha256"
bash "$ACCELCRYPT_ROOT/scripts/bench.sh" --module "$module" --seconds 1 --rounds 1 \
  --alg aes-128-cbc --alg aes-256-gcm --alg sha256

step "6. Which backend served a real command" \
  "accelcrypt trace --conf accelcrypt.cnf -- openssl enc -aes-128-cbc -pbkdf2 -in 1MiB -out 1MiB.enc"
head -c 1048576 /dev/urandom > "$tmp/plain"
"$bin" trace --conf "$tmp/accelcrypt.cnf" -- \
  openssl enc -aes-128-cbc -pbkdf2 -pass pass:accelcrypt-demo \
  -in "$tmp/plain" -out "$tmp/plain.enc"
OPENSSL_CONF="$tmp/accelcrypt.cnf" openssl enc -d -aes-128-cbc -pbkdf2 \
  -pass pass:accelcrypt-demo -in "$tmp/plain.enc" -out "$tmp/plain.dec"
cmp -s "$tmp/plain" "$tmp/plain.dec" && echo "(decrypted again: round trip ok)"

p11="$ACCELCRYPT_BUILD_DIR/lib/accelcrypt-pkcs11.so"
if [ -f "$p11" ] && command -v pkcs11-tool >/dev/null 2>&1; then
  # A throw-away token in the demo's temporary directory.
  printf '[accelcrypt_pkcs11]\ntoken_dir = %s/tokens\n' "$tmp" > "$tmp/pkcs11.cnf"
  export ACCELCRYPT_PKCS11_CONF="$tmp/pkcs11.cnf"
  p11() { pkcs11-tool --module "$p11" "$@"; }

  step "7. The PKCS#11 module: the same backends as a token" \
    "pkcs11-tool --module accelcrypt-pkcs11.so --init-token, --init-pin, -M"
  p11 --init-token --label accelcrypt-demo --so-pin 87654321
  p11 --login --so-pin 87654321 --init-pin --pin 1234
  p11 -M | head -12
  echo "  ... (hw: a hardware backend serves it on this machine)"

  step "8. An RSA key made on the token, its signature checked by openssl" \
    "pkcs11-tool --keypairgen --key-type rsa:2048, --sign -m SHA256-RSA-PKCS"
  p11 --login --pin 1234 --keypairgen --key-type rsa:2048 \
    --label demo-rsa --id 01
  p11 --read-object --type pubkey --id 01 -o "$tmp/rsa.der"
  echo "accelcrypt demo message" > "$tmp/msg"
  p11 --login --pin 1234 --sign -m SHA256-RSA-PKCS --id 01 \
    -i "$tmp/msg" -o "$tmp/msg.sig"
  openssl dgst -sha256 -keyform DER -verify "$tmp/rsa.der" \
    -signature "$tmp/msg.sig" "$tmp/msg"

  step "9. Which backend served a PKCS#11 application" \
    "accelcrypt trace -- pkcs11-tool --hash -m SHA256 -i 1MiB"
  "$bin" trace -- pkcs11-tool --module "$p11" --hash -m SHA256 \
    -i "$tmp/plain" -o "$tmp/plain.sha256"
  openssl dgst -sha256 -binary "$tmp/plain" | cmp -s - "$tmp/plain.sha256" &&
    echo "(same digest as openssl dgst -sha256)"
else
  echo "demo: $p11 or pkcs11-tool missing: skipping the PKCS#11 module steps" >&2
fi

printf '\nDone. Binaries are in %s/bin and %s/lib; see README.md to install.\n' \
  "$ACCELCRYPT_BUILD_DIR" "$ACCELCRYPT_BUILD_DIR"
