#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# nginx, with the provider enabled only through the openssl.cnf its master
# reads (OPENSSL_CONF in the master's environment; nginx clears its
# workers' environment and no `env` directive is used: libcrypto reads the
# configuration and loads the provider in the master, before the workers
# are forked), serves a 32 MiB file over HTTPS on 127.0.0.1 (port chosen at
# run time, own configuration, pid, lock, log and temp files in a temporary
# directory: /etc/nginx and a system nginx are never touched). curl, which
# does not load accelcrypt, downloads it under TLS 1.2
# ECDHE-RSA-AES128-GCM-SHA256, TLS 1.3 TLS_AES_128_GCM_SHA256 and TLS 1.3
# TLS_AES_256_GCM_SHA384. For each: the file is byte-identical, and
# accelcrypt's live statistics show nginx's *worker* processes (parent: the
# master; the master itself serves nothing) serving the cipher's bytes, at
# least the file size and at most 5% more, and the handshake's RSA-2048
# signature left to the default provider (no RSA-SIGN: without a token the
# provider does not offer RSA). After a graceful stop (SIGQUIT) the workers' files
# are final (a clean teardown in each worker).
#   nginx_test.sh ACCELCRYPT_BINARY PROVIDER_MODULE
# As root the workers drop to www-data (nobody without it), as packaged
# servers do; as another user they keep that user. Exit 77 = skipped,
# with the reason.
set -euo pipefail
# shellcheck disable=SC2034  # cli and server_name: used by web_common.sh
cli=$1
module=$2
nginx=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$nginx" ] || { echo "SKIP: nginx not installed (nginx, scripts/deps.sh)"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: curl not installed (scripts/deps.sh)"; exit 77; }
# Under CI's ASan stage (the runtime preloaded into every process) curl
# deadlocks at start in setlocale(), like the p11-kit tools (a library's
# constructor calls newlocale() under glibc's setlocale lock), and the test
# times out. Third-party; the test stage runs this test.
if [ -n "${ACCELCRYPT_SANITIZER_ENV:-}" ]; then
  echo "SKIP: curl deadlocks in setlocale() with the ASan runtime preloaded; run in the regular build"
  exit 77
fi
[ -f "$module" ] || { echo "FAIL: provider $module not built"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/accelcrypt-nginx.XXXXXX")
chmod 755 "$tmp"
pidfile=$tmp/nginx.pid
# shellcheck disable=SC2034
server_name=nginx
# shellcheck source=web_common.sh
. "$(dirname "$0")/web_common.sh"

web_setup
nginx_server_lines="    ssl_certificate $tmp/cert.pem;
    ssl_certificate_key $tmp/key.pem;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_ciphers ECDHE-RSA-AES128-GCM-SHA256;
    ssl_conf_command Ciphersuites TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384;
    ssl_session_cache off;
    ssl_session_tickets off;"
start_nginx

fetch "$port" 1.2 ECDHE-RSA-AES128-GCM-SHA256 AES-128-GCM
fetch "$port" 1.3 TLS_AES_128_GCM_SHA256 AES-128-GCM
fetch "$port" 1.3 TLS_AES_256_GCM_SHA384 AES-256-GCM
check_workers "$master"

# Graceful stop: the workers finish and exit, the master follows.
stop_server QUIT
check_final "${stopped_workers[@]}"
echo "ok: nginx stopped gracefully"
