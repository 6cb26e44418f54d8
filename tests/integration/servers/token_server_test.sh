#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# A web server whose RSA-2048 key stays on a token, served through
# accelcrypt: the key pair is generated on the token (SoftHSMv2, or
# accelcrypt's own PKCS#11 module), a test CA certifies its public key, and
#   nginx:  ssl_certificate_key "engine:accelcrypt:pkcs11:...";
#   Apache: SSLCertificateKeyFile "pkcs11:..." (mod_ssl loads a pkcs11: key
#           through the ENGINE named `pkcs11`: the accelcrypt engine section
#           registers itself under that id too, `ALIAS = pkcs11`; the
#           accelcrypt-module variant also sets `SSLCryptoDevice accelcrypt`)
# load it through the engine's key loader, with the token settings (module,
# token label, PIN file) in an accelcrypt config file named by the engine
# section of the openssl.cnf the server's master reads, beside the
# provider. As root the workers drop to www-data (the token directory and
# the PIN file are theirs, as docs/sysadmin.md says). curl (TLS 1.3 and
# 1.2, RSA-PSS signatures) and `openssl s_client -sigalgs RSA+SHA256` (a
# PKCS#1 v1.5 signature) each make one full handshake, checked against the
# test CA; accelcrypt's statistics must show the workers' PKCS#11 client
# backend making exactly one RSA signature per handshake and none made in
# software. Then a graceful stop, the workers' final statistics recorded as
# the user they ran as.
#   token_server_test.sh ACCELCRYPT_BINARY PROVIDER ENGINE P11_MODULE SERVER TOKEN
# SERVER: nginx or apache; TOKEN: softhsm or module. Exit 77 = skipped,
# with the reason.
set -euo pipefail
# shellcheck disable=SC2034  # cli and module: used by web_common.sh
cli=$1
module=$2
engine=$3
p11module=$4
server=$5
token=$6
skip() { echo "SKIP: $*"; exit 77; }
command -v curl >/dev/null || skip "curl not installed (scripts/deps.sh)"
command -v pkcs11-tool >/dev/null || skip "pkcs11-tool not installed (opensc, scripts/deps.sh)"
if [ -n "${ACCELCRYPT_SANITIZER_ENV:-}" ]; then
  skip "curl deadlocks in setlocale() with the ASan runtime preloaded (see nginx_test.sh); run in the regular build"
fi
[ -f "$module" ] || { echo "FAIL: provider $module not built"; exit 1; }
[ -f "$engine" ] || { echo "FAIL: engine $engine not built"; exit 1; }
backend_so=$(dirname "$module")/accelcrypt/backends/pkcs11.so
[ -f "$backend_so" ] || skip "PKCS#11 client backend not built ($backend_so)"
case "$server" in
  nginx)
    nginx=$(command -v nginx || echo /usr/sbin/nginx)
    [ -x "$nginx" ] || skip "nginx not installed (nginx, scripts/deps.sh)"
    server_name=nginx
    ;;
  apache)
    apache=$(command -v apache2 || echo /usr/sbin/apache2)
    [ -x "$apache" ] || skip "apache2 not installed (apache2, scripts/deps.sh)"
    for m in mpm_event authz_core mime socache_shmcb ssl; do
      [ -f "/usr/lib/apache2/modules/mod_$m.so" ] || skip "mod_$m.so missing (apache2)"
    done
    server_name=apache2
    ;;
  *) echo "usage: token_server_test.sh CLI PROVIDER ENGINE P11_MODULE nginx|apache softhsm|module" >&2; exit 2 ;;
esac
case "$token" in
  softhsm)
    tokmod=/usr/lib/softhsm/libsofthsm2.so
    [ -r "$tokmod" ] || skip "SoftHSMv2 ($tokmod) not installed"
    command -v softhsm2-util >/dev/null || skip "softhsm2-util not installed"
    ;;
  module)
    tokmod=$p11module
    [ -f "$tokmod" ] || { echo "FAIL: accelcrypt's PKCS#11 module $tokmod not built"; exit 1; }
    ;;
  *) echo "TOKEN: softhsm or module" >&2; exit 2 ;;
esac
tmp=$(mktemp -d "${TMPDIR:-/tmp}/accelcrypt-token-$server.XXXXXX")
chmod 755 "$tmp"
pidfile=$tmp/server.pid
# shellcheck source=web_common.sh
. "$(dirname "$0")/web_common.sh"

# --- The token, its key pair and the certificate --------------------------
mkdir "$tmp/tokens" "$tmp/www"
if [ "$token" = softhsm ]; then
  printf 'directories.tokendir = %s\nobjectstore.backend = file\nlog.level = ERROR\nlibrary.reset_on_fork = true\n' \
    "$tmp/tokens" > "$tmp/softhsm2.conf"
  export SOFTHSM2_CONF=$tmp/softhsm2.conf
  token_env=SOFTHSM2_CONF
  softhsm2-util --init-token --free --label web --so-pin 0000 --pin 1234 \
    > "$tmp/init.log" 2>&1 || { cat "$tmp/init.log" >&2; fail "softhsm2-util --init-token"; }
else
  # The module's own core counts nothing here (stats_dir = none): the
  # statistics checked are the server's.
  printf '[accelcrypt_pkcs11]\ntoken_dir = %s\n\n[accelcrypt]\nstats_dir = none\n' \
    "$tmp/tokens" > "$tmp/p11.conf"
  export ACCELCRYPT_PKCS11_CONF=$tmp/p11.conf
  token_env=ACCELCRYPT_PKCS11_CONF
  { pkcs11-tool --module "$tokmod" --slot-index 0 --init-token --label web --so-pin 87654321 &&
    pkcs11-tool --module "$tokmod" --token-label web --login --login-type so \
      --so-pin 87654321 --init-pin --pin 1234; } > "$tmp/init.log" 2>&1 ||
    { cat "$tmp/init.log" >&2; fail "pkcs11-tool --init-token/--init-pin"; }
fi
p11=(pkcs11-tool --module "$tokmod" --token-label web --login --pin 1234)
"${p11[@]}" --keypairgen -m RSA-PKCS-KEY-PAIR-GEN --key-type rsa:2048 --label srv \
  --id 01 --usage-sign > "$tmp/gen.log" 2>&1 || { cat "$tmp/gen.log" >&2; fail "pkcs11-tool --keypairgen"; }
"${p11[@]}" --read-object --type pubkey --id 01 -o "$tmp/pub.der" > /dev/null 2>&1 ||
  fail "pkcs11-tool --read-object (the public key)"
uri='pkcs11:token=web;object=srv;type=private'
(
  export OPENSSL_CONF=/dev/null
  openssl pkey -pubin -inform DER -in "$tmp/pub.der" -out "$tmp/pub.pem" &&
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/ca.key" -out "$tmp/ca.pem" \
    -days 2 -subj /CN=accelcrypt-test-ca 2>/dev/null &&
  openssl req -new -newkey rsa:2048 -nodes -keyout "$tmp/csr.key" -subj /CN=127.0.0.1 \
    -out "$tmp/csr.pem" 2>/dev/null &&
  printf 'subjectAltName=IP:127.0.0.1\n' > "$tmp/ext" &&
  openssl x509 -req -in "$tmp/csr.pem" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" \
    -CAcreateserial -force_pubkey "$tmp/pub.pem" -extfile "$tmp/ext" -days 2 \
    -out "$tmp/cert.pem" 2>/dev/null
) || fail "making the certificate of the token's key"
printf '1234\n' > "$tmp/pin"
chmod 600 "$tmp/pin"
user=$(worker_user)
if [ -n "$user" ]; then
  # The workers re-open the token after fork, as $user: its directory and
  # the PIN file are theirs.
  chown -R "$user:" "$tmp/tokens" "$tmp/pin"
  chmod 400 "$tmp/pin"
fi
head -c 4096 /dev/urandom > "$tmp/www/small"
chmod 644 "$tmp/www/small"

# --- accelcrypt: the provider, and the engine with the token settings -----
mkdir "$tmp/stats"
chmod 1733 "$tmp/stats"
printf '[accelcrypt]\npkcs11.module = %s\npkcs11.token_label = web\npkcs11.pin_file = %s\n' \
  "$tokmod" "$tmp/pin" > "$tmp/token.conf"
alias_line=
[ "$server" = apache ] && alias_line="ALIAS = pkcs11"
"$cli" config --module "$module" |
  sed -e "/^soft_load = 1/a stats_dir = $tmp/stats" \
      -e 's/^alg_section = algorithm_sect$/&\nengines = engine_section/' > "$tmp/openssl.cnf"
cat >> "$tmp/openssl.cnf" <<CNF

[engine_section]
accelcrypt = accelcrypt_engine

[accelcrypt_engine]
engine_id = accelcrypt
dynamic_path = $engine
CONF = $tmp/token.conf
STATS_DIR = $tmp/stats
$alias_line
init = 1
CNF
grep -q '^engines = engine_section$' "$tmp/openssl.cnf" ||
  fail "accelcrypt config printed no alg_section line to add the engines after"
# shellcheck disable=SC2034  # read by start_nginx/start_apache
server_env="$token_env=${!token_env}"

# --- The server ------------------------------------------------------------
if [ "$server" = nginx ]; then
  # shellcheck disable=SC2034
  nginx_main_lines="env $token_env;"
  # shellcheck disable=SC2034
  nginx_server_lines="    ssl_certificate $tmp/cert.pem;
    ssl_certificate_key \"engine:accelcrypt:$uri\";
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_session_cache off;
    ssl_session_tickets off;"
  start_nginx
else
  # shellcheck disable=SC2034
  apache_vhost_lines="  SSLCertificateFile $tmp/cert.pem
  SSLCertificateKeyFile \"$uri\"
  SSLProtocol -all +TLSv1.2 +TLSv1.3
  SSLSessionTickets off"
  # SSLCryptoDevice is not needed for the key (mod_ssl finds the engine by
  # the URI's scheme); with it the engine is also the default for RSA, DSA
  # and digests, which must not change what the token signs.
  # shellcheck disable=SC2034
  [ "$token" = module ] && apache_main_lines="SSLCryptoDevice accelcrypt"
  start_apache
fi
echo "ok: $server_name started (master $master) with the key $uri on the $token token"

# token_signs: "TOKEN OTHER" RSA-SIGN operations the master's workers
# counted on the PKCS#11 client backend, and on any other backend.
token_signs() {
  "$cli" stats --json "$tmp/stats" | python3 -c '
import json, sys
master, name = int(sys.argv[1]), sys.argv[2]
token = other = 0
for p in json.load(sys.stdin)["per_process"]:
    if p["ppid"] != master or p["process"] != name:
        continue
    for c in p.get("cells", []):
        if c["algorithm"] == "RSA-SIGN":
            if c["backend"] == "pkcs11":
                token += c["ops"]
            else:
                other += c["ops"]
print(token, other)
' "$master" "$server_name"
}

read -r token_before other_before <<< "$(token_signs)"
handshakes=0
for proto in 1.3 1.2; do
  if [ "$proto" = 1.3 ]; then tls=(--tlsv1.3); else tls=(--tlsv1.2 --tls-max 1.2); fi
  env OPENSSL_CONF=/dev/null curl -q -sS -v --fail --http1.1 --noproxy '*' \
    --cacert "$tmp/ca.pem" "${tls[@]}" -o "$tmp/got" "https://127.0.0.1:$port/small" \
    2> "$tmp/curl.log" || { cat "$tmp/curl.log" >&2; fail "curl TLS $proto failed"; }
  grep -q "SSL connection using TLSv$proto" "$tmp/curl.log" || fail "TLS $proto not negotiated"
  cmp -s "$tmp/www/small" "$tmp/got" || fail "TLS $proto: the file differs"
  handshakes=$((handshakes + 1))
  echo "ok: curl over TLS $proto, the server's signature checked against the test CA"
done
echo | env OPENSSL_CONF=/dev/null timeout 20 openssl s_client -connect "127.0.0.1:$port" \
  -tls1_2 -sigalgs RSA+SHA256 -CAfile "$tmp/ca.pem" -verify_return_error \
  > "$tmp/s_client.log" 2>&1 || { cat "$tmp/s_client.log" >&2; fail "openssl s_client -sigalgs RSA+SHA256"; }
grep -q "Peer signature type: RSA$" "$tmp/s_client.log" || fail "no PKCS#1 v1.5 server signature"
grep -q "Verification: OK" "$tmp/s_client.log" || fail "s_client did not verify the server"
handshakes=$((handshakes + 1))
echo "ok: openssl s_client, TLS 1.2 with a PKCS#1 v1.5 signature"

# One RSA-SIGN per handshake, on the token, counted once: within a few
# seconds the workers' live files show it.
for _ in $(seq 1 50); do
  read -r token_after other_after <<< "$(token_signs)"
  [ $((token_after - token_before)) -ge "$handshakes" ] && break
  sleep 0.1
done
signed=$((token_after - token_before))
if [ "$signed" -ne "$handshakes" ] || [ "$other_after" -ne "$other_before" ]; then
  "$cli" stats "$tmp/stats" >&2
  fail "$handshakes handshakes: the workers counted $signed RSA-SIGN on pkcs11 and $((other_after - other_before)) elsewhere (want $handshakes and 0)"
fi
echo "ok: the workers of $server_name counted $signed RSA-SIGN on the PKCS#11 client backend for $handshakes handshakes, none elsewhere"
check_workers "$master"

if [ "$server" = nginx ]; then stop_server QUIT; else stop_server WINCH; fi
check_final "${stopped_workers[@]}"
echo "ok: $server_name stopped gracefully"
