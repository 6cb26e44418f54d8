#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Connection-setup cost of real servers with and without accelcrypt (a
# benchmark: it prints figures and asserts nothing):
#   - nginx: full TLS handshakes per second (wall clock), from
#     `openssl s_time -new` (no session reuse, no request) for SECONDS, over
#     TLS 1.3 TLS_AES_128_GCM_SHA256 and TLS 1.2 ECDHE-RSA-AES128-GCM-SHA256
#     (RSA-2048 certificate; X25519 key exchange). One nginx worker.
#   - sshd: mean wall time of one `ssh -o BatchMode=yes HOST true` (connect,
#     key exchange, RSA-2048 host key, public key authentication, a session
#     running `true`), over COUNT sequential connections, cipher
#     aes128-ctr. Also the servers' CPU time (user+system, /proc) per handshake
#     or connection, which the clients sharing the CPUs do not skew.
# "with accelcrypt" is the server started with OPENSSL_CONF naming the
# configuration of `accelcrypt config --module MODULE` (statistics kept in a
# temporary directory, as a deployment with /run/accelcrypt/stats would);
# "without" is OPENSSL_CONF=/dev/null (the default provider only). The
# clients (s_time, ssh) always run with OPENSSL_CONF=/dev/null. Servers
# listen on random 127.0.0.1 ports from configurations in a temporary
# directory; the system's nginx/sshd configurations are not touched.
#   scripts/bench_servers.sh [ACCELCRYPT_BINARY [PROVIDER_MODULE]]
# Env: SECONDS_PER_RUN (default 10), SSH_COUNT (default 50). Needs root
# (sshd's privilege separation; nginx workers as www-data).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cli=${1:-$root/build/bin/accelcrypt}
module=${2:-$root/build/lib/accelcrypt.so}
secs=${SECONDS_PER_RUN:-10}
count=${SSH_COUNT:-50}
[ -x "$cli" ] || { echo "bench_servers: $cli not built" >&2; exit 2; }
[ -f "$module" ] || { echo "bench_servers: $module not built" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "bench_servers: needs root (sshd)" >&2; exit 2; }
for tool in nginx sshd ssh openssl ss; do
  command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] ||
    { echo "bench_servers: $tool not installed (scripts/deps.sh)" >&2; exit 2; }
done
nginx=$(command -v nginx || echo /usr/sbin/nginx)
sshd=$(command -v sshd || echo /usr/sbin/sshd)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/accelcrypt-bench-servers.XXXXXX")
chmod 755 "$tmp"
server=
cleanup() {
  if [ -n "$server" ] && [ -e "/proc/$server" ]; then
    kill -TERM "$server" 2>/dev/null || true
    sleep 0.5
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

free_port() {
  local port
  while :; do
    port=$((20000 + RANDOM % 40000))
    ss -Hltn "sport = :$port" | grep -q . || { echo "$port"; return; }
  done
}
now() { date +%s.%N; }
# cpu_ticks PID: user+system CPU of PID and of its waited-for children, in
# clock ticks (/proc/PID/stat fields 14-17).
cpu_ticks() {
  sed 's/^.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 + $14 + $15 }'
}
hz=$(getconf CLK_TCK)
# stop_server: ask the daemon in $server to stop and wait for it.
stop_server() {
  local sig=$1 state
  kill "-$sig" "$server" 2>/dev/null || true
  for _ in $(seq 1 100); do
    state=$(awk '{ print $3 }' "/proc/$server/stat" 2>/dev/null || echo gone)
    [ "$state" = gone ] || [ "$state" = Z ] && break
    sleep 0.1
  done
  server=
}

env OPENSSL_CONF=/dev/null openssl req -x509 -newkey rsa:2048 -nodes \
  -keyout "$tmp/key.pem" -out "$tmp/cert.pem" -days 2 -subj /CN=127.0.0.1 \
  -addext subjectAltName=IP:127.0.0.1 2>/dev/null
mkdir "$tmp/stats"
chmod 1733 "$tmp/stats"
"$cli" config --module "$module" |
  sed "/^soft_load = 1/a stats_dir = $tmp/stats" > "$tmp/accelcrypt.cnf"
user=nobody
id www-data >/dev/null 2>&1 && user=www-data

# nginx_run CONF LABEL: handshakes per second for both protocols.
nginx_run() {
  local conf=$1 label=$2 port dir
  port=$(free_port)
  dir=$tmp/nginx.${label// /_}
  mkdir "$dir"
  cat > "$dir/nginx.conf" <<CFG
user $user;
worker_processes 1;
pid $dir/nginx.pid;
lock_file $dir/nginx.lock;
error_log $dir/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $dir/body;
  proxy_temp_path $dir/proxy;
  fastcgi_temp_path $dir/fastcgi;
  uwsgi_temp_path $dir/uwsgi;
  scgi_temp_path $dir/scgi;
  server {
    listen 127.0.0.1:$port ssl;
    ssl_certificate $tmp/cert.pem;
    ssl_certificate_key $tmp/key.pem;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_ciphers ECDHE-RSA-AES128-GCM-SHA256;
    ssl_session_cache off;
    ssl_session_tickets off;
    root $dir;
  }
}
CFG
  env -i PATH="$PATH" OPENSSL_CONF="$conf" \
    "$nginx" -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log"
  for _ in $(seq 1 50); do [ -s "$dir/nginx.pid" ] && break; sleep 0.1; done
  server=$(cat "$dir/nginx.pid")
  local worker
  for _ in $(seq 1 50); do
    worker=$(cat /proc/[0-9]*/stat 2>/dev/null |
      awk -v p="$server" '{ pid = $1; sub(/^.*\) /, ""); if ($2 == p) { print pid; exit } }' || true)
    [ -n "$worker" ] && break
    sleep 0.1
  done
  local proto t0 t1 n c0 c1
  for proto in 1.3 1.2; do
    local -a opts
    if [ "$proto" = 1.3 ]; then
      opts=(-tls1_3 -ciphersuites TLS_AES_128_GCM_SHA256)
    else
      opts=(-tls1_2 -cipher ECDHE-RSA-AES128-GCM-SHA256)
    fi
    c0=$(cpu_ticks "$worker")
    t0=$(now)
    n=$(env OPENSSL_CONF=/dev/null openssl s_time -connect "127.0.0.1:$port" \
          -new -time "$secs" "${opts[@]}" 2>/dev/null |
        awk '/connections in .* real seconds/ { print $1; exit }')
    t1=$(now)
    c1=$(cpu_ticks "$worker")
    awk -v n="${n:-0}" -v t0="$t0" -v t1="$t1" -v l="$label" -v p="$proto" \
        -v c="$((c1 - c0))" -v hz="$hz" \
      'BEGIN { printf "  nginx TLS %s  %-18s %6d handshakes in %5.2f s = %7.1f handshakes/s; worker CPU %.3f ms per handshake\n", p, l, n, t1 - t0, n / (t1 - t0), n ? 1000 * c / hz / n : 0 }'
  done
  stop_server QUIT
}

# sshd_run CONF LABEL: mean time per ssh connection.
ssh-keygen -q -t rsa -b 2048 -N '' -f "$tmp/host_rsa"
ssh-keygen -q -t ed25519 -N '' -f "$tmp/user_key"
cp "$tmp/user_key.pub" "$tmp/authorized_keys"
mkdir -p /run/sshd
sshd_run() {
  local conf=$1 label=$2 port dir
  port=$(free_port)
  dir=$tmp/sshd.${label// /_}
  mkdir "$dir"
  cat > "$dir/sshd_config" <<CFG
Port $port
ListenAddress 127.0.0.1
HostKey $tmp/host_rsa
PidFile $dir/sshd.pid
AuthorizedKeysFile $tmp/authorized_keys
StrictModes no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
MaxStartups 100
Ciphers aes128-ctr
CFG
  env -i PATH="$PATH" OPENSSL_CONF="$conf" \
    "$sshd" -f "$dir/sshd_config" -E "$dir/sshd.log"
  for _ in $(seq 1 50); do [ -s "$dir/sshd.pid" ] && break; sleep 0.1; done
  server=$(cat "$dir/sshd.pid")
  local t0 t1 c0 c1
  c0=$(cpu_ticks "$server")
  t0=$(now)
  for _ in $(seq 1 "$count"); do
    env OPENSSL_CONF=/dev/null ssh -F /dev/null -o BatchMode=yes \
      -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
      -o LogLevel=ERROR -i "$tmp/user_key" -p "$port" root@127.0.0.1 true
  done
  t1=$(now)
  sleep 0.5  # the last connection's processes are reaped
  c1=$(cpu_ticks "$server")
  awk -v n="$count" -v t0="$t0" -v t1="$t1" -v l="$label" -v c="$((c1 - c0))" -v hz="$hz" \
    'BEGIN { printf "  sshd %-18s %4d connections in %6.2f s = %6.2f ms per connection; server CPU %.2f ms per connection\n", l, n, t1 - t0, 1000 * (t1 - t0) / n, 1000 * c / hz / n }'
  stop_server TERM
}

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //') ($(nproc) online)"
echo "OpenSSL: $(openssl version); $("$nginx" -v 2>&1); $(ssh -V 2>&1)"
echo "accelcrypt: $cli, provider $module"
echo "load average before: $(cut -d" " -f1-3 /proc/loadavg) (other work on the machine skews these figures)"
echo "nginx: openssl s_time -new -time $secs (full handshakes, no request; handshakes per wall-clock second), one worker; its CPU (user+system) per handshake"
nginx_run /dev/null "without accelcrypt"
nginx_run "$tmp/accelcrypt.cnf" "with accelcrypt"
echo "sshd: $count sequential 'ssh -o BatchMode=yes root@127.0.0.1 true' (RSA-2048 host key, aes128-ctr); server CPU = the listener and its reaped per-connection processes"
sshd_run /dev/null "without accelcrypt"
sshd_run "$tmp/accelcrypt.cnf" "with accelcrypt"
echo "accelcrypt's statistics of the 'with' servers (RSA-SIGN: handshakes signed through accelcrypt):"
"$cli" stats "$tmp/stats" | sed -n '/^per backend and algorithm/,$p' | sed 's/^/  /'
