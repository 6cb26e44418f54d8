#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# sshd, with the provider enabled only through the openssl.cnf it reads,
# serves scp of a 64 MiB file on 127.0.0.1 (port chosen at run time) under
# aes128-ctr, aes256-gcm@openssh.com and aes128-cbc. For each cipher: the
# received file is byte-identical, and accelcrypt's live statistics show the
# *server's* processes (sshd's per-connection children, which leave with
# _exit, and its seccomp-sandboxed preauth child) serving the cipher's bytes:
# at least the file size, at most 5% more (packet framing). When the ENGINE
# bridge is built (engines-3/accelcrypt.so next to the provider), the same
# openssl.cnf also makes it the default RSA engine, and the server's RSA
# host-key signatures (OpenSSH's RSA_sign on OpenSSL 3.0-3.5) must show in
# the statistics as RSA-SIGN.
#   sshd_test.sh ACCELCRYPT_BINARY PROVIDER_MODULE
# Exit 77 = skipped, with the reason.
set -euo pipefail
cli=$1
module=$2
sshd=$(command -v sshd || echo /usr/sbin/sshd)
[ -x "$sshd" ] || { echo "SKIP: sshd not installed (openssh-server, scripts/deps.sh)"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: sshd's privilege separation needs root"; exit 77; }
# Under CI's ASan stage the runtime is preloaded into sshd, whose pre-auth
# child runs in OpenSSH's seccomp sandbox: the runtime's own system calls
# kill it with SIGSYS ("preauth child terminated by signal 31"), and
# OpenSSH 9.2 cannot turn the sandbox off. The test stage runs this test
# (nginx and Apache skip under ASan too: no server runs the sanitized
# provider there).
if [ -n "${ACCELCRYPT_SANITIZER_ENV:-}" ]; then
  echo "SKIP: sshd's seccomp sandbox kills a process with the ASan runtime preloaded (SIGSYS); run in the regular build"
  exit 77
fi
[ -f "$module" ] || { echo "FAIL: provider $module not built"; exit 1; }
# sshd runs from /: every path it is given must be absolute.
module=$(cd "$(dirname "$module")" && pwd)/$(basename "$module")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/accelcrypt-sshd.XXXXXX")
chmod 755 "$tmp"
pidfile=$tmp/sshd.pid
cleanup() {
  [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$tmp/sshd.log" ] && tail -20 "$tmp/sshd.log" >&2; exit 1; }

ssh-keygen -q -t rsa -b 2048 -N '' -f "$tmp/host_rsa"
ssh-keygen -q -t ed25519 -N '' -f "$tmp/user_key"
cp "$tmp/user_key.pub" "$tmp/authorized_keys"
mkdir -p /run/sshd
stats=$tmp/stats
mkdir "$stats"
"$cli" config --module "$module" |
  sed "/^soft_load = 1/a stats_dir = $stats" > "$tmp/openssl.cnf"
engine_so=$(dirname "$module")/engines-3/accelcrypt.so
if [ -f "$engine_so" ]; then
  sed -i "/^alg_section = /a engines = engine_sect" "$tmp/openssl.cnf"
  cat >> "$tmp/openssl.cnf" <<CNF

[engine_sect]
accelcrypt = accelcrypt_engine_sect

[accelcrypt_engine_sect]
engine_id = accelcrypt
dynamic_path = $engine_so
# Settings first: default_algorithms initialises the engine, and a setting
# after it is refused (which OpenSSH's config loading does not report).
STATS_DIR = $stats
default_algorithms = RSA
init = 1
CNF
else
  echo "NOTE: $engine_so not built: the engine's RSA host-key check is skipped"
fi
head -c $((64 << 20)) /dev/urandom > "$tmp/big"
size=$(stat -c %s "$tmp/big")

started=0
for _ in 1 2 3 4 5; do
  port=$((20000 + RANDOM % 40000))
  cat > "$tmp/sshd_config" <<CFG
Port $port
ListenAddress 127.0.0.1
HostKey $tmp/host_rsa
PidFile $pidfile
AuthorizedKeysFile $tmp/authorized_keys
StrictModes no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
Subsystem sftp internal-sftp
Ciphers aes128-ctr,aes256-gcm@openssh.com,aes128-cbc
HostKeyAlgorithms rsa-sha2-256
CFG
  rm -f "$pidfile"
  if env -i PATH="$PATH" ${ACCELCRYPT_SANITIZER_ENV:-} OPENSSL_CONF="$tmp/openssl.cnf" \
       "$sshd" -f "$tmp/sshd_config" -E "$tmp/sshd.log"; then
    for _ in $(seq 1 50); do [ -s "$pidfile" ] && break; sleep 0.1; done
    if [ -s "$pidfile" ]; then started=1; break; fi
  fi
done
[ "$started" = 1 ] || fail "sshd did not start"

# ops_of ALG: the operations of ALG the server's processes made through
# accelcrypt (all backends).
ops_of() {
  "$cli" stats "$stats" |
    awk -v a="$1" 'f && $2 == a { s += $3 } /^per backend and algorithm/ { f = 1 } END { print s + 0 }'
}

# bytes_of ALG: the bytes the server's processes served for ALG (all
# backends), from `accelcrypt stats`.
bytes_of() {
  "$cli" stats "$stats" |
    awk -v a="$1" 'f && $2 == a { s += $4 } /^per backend and algorithm/ { f = 1 } END { print s + 0 }'
}

for pair in aes128-ctr:AES-128-CTR aes256-gcm@openssh.com:AES-256-GCM aes128-cbc:AES-128-CBC; do
  cipher=${pair%%:*} alg=${pair#*:}
  before=$(bytes_of "$alg")
  # The client does not load accelcrypt: only the server counts.
  env -u OPENSSL_CONF scp -q -F /dev/null -o StrictHostKeyChecking=no \
    -o UserKnownHostsFile=/dev/null -o BatchMode=yes -i "$tmp/user_key" \
    -c "$cipher" -P "$port" "$tmp/big" "root@127.0.0.1:$tmp/recv.$cipher" ||
    fail "scp -c $cipher failed"
  cmp -s "$tmp/big" "$tmp/recv.$cipher" || fail "$cipher: received file differs"
  # The connection's processes are gone (sshd's child leaves with _exit);
  # their live files keep the counts.
  after=$before
  for _ in $(seq 1 50); do
    after=$(bytes_of "$alg")
    [ "$((after - before))" -ge "$size" ] && break
    sleep 0.1
  done
  served=$((after - before))
  if [ "$served" -lt "$size" ] || [ "$served" -gt $((size + size / 20)) ]; then
    "$cli" stats "$stats" >&2
    fail "$cipher: the server served $served bytes of $alg through accelcrypt, expected $size..$((size + size / 20))"
  fi
  echo "ok: scp -c $cipher: sshd served $served bytes of $alg through accelcrypt for a $size-byte file"
done
"$cli" stats "$stats" > "$tmp/report"
grep -Eq "^ *[0-9]+ +[0-9]+ +0 +sshd +gone " "$tmp/report" ||
  { cat "$tmp/report" >&2; fail "no sshd child that left without teardown is listed"; }
if grep -q "terminated by signal" "$tmp/sshd.log"; then
  fail "an sshd child was killed (seccomp sandbox?)"
fi
echo "ok: sshd children served through accelcrypt and are seen in its statistics"
if [ -f "$engine_so" ]; then
  # One host-key signature per connection (three scp runs), made with
  # OpenSSH's RSA_sign on the engine's RSA_METHOD.
  signs=$(ops_of RSA-SIGN)
  if [ "$signs" -lt 3 ]; then
    cat "$tmp/report" >&2
    fail "sshd made $signs RSA host-key signatures through accelcrypt's engine, expected >= 3"
  fi
  echo "ok: sshd made $signs RSA host-key signatures (rsa-sha2-256) through the accelcrypt engine"
fi
