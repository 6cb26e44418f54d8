#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Real servers with and without accelcrypt, in one run, alternating (a
# benchmark: it prints figures and asserts nothing):
#   - nginx handshakes: `wrk -H 'Connection: close'` (a new connection, so
#     a full TLS handshake, for every request; a small file) for SECONDS per
#     shape: TLS 1.3 and TLS 1.2 (ECDHE-RSA-AES128-GCM-SHA256) with an
#     RSA-2048 certificate, TLS 1.3 with an ECDSA P-256 certificate; X25519
#     and OpenSSL's default TLS 1.3 suites. Connections per wall second and
#     the worker's CPU per connection.
#   - nginx download: DOWNLOADS sequential `curl` downloads of a MIB MiB file
#     over TLS 1.3 (RSA-2048); MiB per wall second and the worker's CPU per
#     MiB.
#   - sshd (unless --no-sshd): SSH_COUNT sequential `ssh -o BatchMode=yes
#     HOST true` per round (RSA-2048 host key, aes128-ctr); wall time and the
#     server's CPU (listener and reaped per-connection processes) per
#     connection.
#   - with --stime, also `openssl s_time -new` (full handshakes, no
#     request) per TLS 1.3 / 1.2 shape, as this script measured before.
# "with accelcrypt": servers started with OPENSSL_CONF naming the output of
# `accelcrypt config --module MODULE` (statistics kept in a temporary 1733
# directory, as /run/accelcrypt/stats would); "without":
# OPENSSL_CONF=/dev/null (the default provider only). Both servers run for
# the whole benchmark on random 127.0.0.1 ports, one nginx worker each,
# from configurations in a temporary directory (the system's nginx/sshd
# configurations are not touched); every measurement runs on one side then
# the other, the order swapped every round. Clients (wrk, curl, s_time,
# ssh) always run with OPENSSL_CONF=/dev/null. Server CPU: user+system
# time of the nginx worker from /proc/PID/stat (clock ticks; the
# nanoseconds of /proc/PID/schedstat where the kernel has it), of sshd and
# its reaped children from /proc/PID/stat; the clients sharing the CPUs do
# not skew it. The summary shows medians over the rounds and
#   ratio: with / without for rates, without / with for CPU costs,
#          so that > 1.0 always means accelcrypt is better; per round
#          (both sides of a round run next to each other), then the
#          median over rounds.
#
# Usage: bench_servers.sh [--rounds N] [--seconds S] [--connections N]
#                         [--mib M] [--downloads K] [--ssh-count N]
#                         [--no-sshd] [--stime] [--markdown FILE]
#                         [ACCELCRYPT_BINARY [PROVIDER_MODULE]]
#   --rounds       rounds (default 5)
#   --seconds      seconds per wrk / s_time run (default $SECONDS_PER_RUN or 5)
#   --connections  wrk's concurrent connections (default 16, one thread)
#   --mib          size of the downloaded file in MiB (default 100)
#   --downloads    downloads per round and side (default 3)
#   --ssh-count    ssh connections per round and side (default $SSH_COUNT or 10)
#   --no-sshd      nginx only
#   --stime        also openssl s_time -new
#   --markdown     also write the summary as Markdown to FILE
#   ACCELCRYPT_BINARY default build/bin/accelcrypt, PROVIDER_MODULE
#   build/lib/accelcrypt.so.
# Needs root (sshd's privilege separation; nginx workers as www-data). wrk
# (Debian package `wrk`) is installed with apt-get when missing; it is not
# in scripts/deps.sh's list, as no test uses it.
# Exit codes: 0 ran, 1 a server or client failed, 2 usage or setup.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=5
secs=${SECONDS_PER_RUN:-5}
conns=16
mib=100
downloads=3
count=${SSH_COUNT:-10}
sshd_on=1
stime=0
markdown=
usage() { awk 'NR > 3 && !/^#/ { exit } NR > 3 { sub(/^# ?/, ""); print }' "$0"; }
need() { [ $# -ge 2 ] || { echo "bench_servers: $1 needs a value (see --help)" >&2; exit 2; }; }
posint() {
  case "$2" in ''|*[!0-9]*|0) echo "bench_servers: $1 takes a positive number" >&2; exit 2 ;; esac
}
positional=()
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) need "$@"; posint "$1" "$2"; rounds=$2; shift 2 ;;
    --seconds) need "$@"; posint "$1" "$2"; secs=$2; shift 2 ;;
    --connections) need "$@"; posint "$1" "$2"; conns=$2; shift 2 ;;
    --mib) need "$@"; posint "$1" "$2"; mib=$2; shift 2 ;;
    --downloads) need "$@"; posint "$1" "$2"; downloads=$2; shift 2 ;;
    --ssh-count) need "$@"; posint "$1" "$2"; count=$2; shift 2 ;;
    --no-sshd) sshd_on=0; shift ;;
    --stime) stime=1; shift ;;
    --markdown) need "$@"; markdown=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "bench_servers: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) positional+=("$1"); shift ;;
  esac
done
[ ${#positional[@]} -le 2 ] || { echo "bench_servers: too many arguments (see --help)" >&2; exit 2; }
cli=${positional[0]:-$root/build/bin/accelcrypt}
module=${positional[1]:-$root/build/lib/accelcrypt.so}
[ -x "$cli" ] || { echo "bench_servers: $cli not built" >&2; exit 2; }
[ -f "$module" ] || { echo "bench_servers: $module not built" >&2; exit 2; }
module=$(cd "$(dirname "$module")" && pwd)/$(basename "$module")
[ "$(id -u)" -eq 0 ] || { echo "bench_servers: needs root (sshd, nginx's worker user)" >&2; exit 2; }
tools=(nginx openssl ss curl)
[ "$sshd_on" -eq 1 ] && tools+=(sshd ssh)
for tool in "${tools[@]}"; do
  command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] ||
    { echo "bench_servers: $tool not installed (scripts/deps.sh)" >&2; exit 2; }
done
if ! command -v wrk >/dev/null; then
  # shellcheck source=scripts/deps.sh
  . "$root/scripts/deps.sh"
  echo "bench_servers: installing wrk (Debian package; only this benchmark uses it)"
  if ! accelcrypt_as_root env DEBIAN_FRONTEND=noninteractive \
         apt-get install -y -q --no-install-recommends wrk >/dev/null; then
    accelcrypt_as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
    accelcrypt_as_root env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -q --no-install-recommends wrk >/dev/null
  fi
  command -v wrk >/dev/null || { echo "bench_servers: wrk could not be installed" >&2; exit 2; }
fi
nginx=$(command -v nginx || echo /usr/sbin/nginx)
sshd=$(command -v sshd || echo /usr/sbin/sshd)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/accelcrypt-bench-servers.XXXXXX")
chmod 755 "$tmp"
declare -A master=() worker=() port=()
cleanup() {
  local pid
  for pid in "${master[@]}"; do
    if [ -n "$pid" ] && [ -e "/proc/$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; fi
  done
  sleep 0.5
  rm -rf "$tmp"
}
trap cleanup EXIT

free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 40000))
    ss -Hltn "sport = :$p" | grep -q . || { echo "$p"; return; }
  done
}
now() { date +%s.%N; }
hz=$(getconf CLK_TCK)
# cpu_ns PID: user+system CPU of PID in nanoseconds (/proc/PID/schedstat's
# on-CPU time where present, else /proc/PID/stat fields 14-15 in ticks).
cpu_ns() {
  if [ -r "/proc/$1/schedstat" ]; then
    awk '{ print $1 }' "/proc/$1/schedstat"
  else
    sed 's/^.*) //' "/proc/$1/stat" | awk -v hz="$hz" '{ printf "%.0f\n", ($12 + $13) * 1e9 / hz }'
  fi
}
# cpu_ns_children PID: the same from /proc/PID/stat fields 14-17 (PID and
# its reaped children).
cpu_ns_children() {
  sed 's/^.*) //' "/proc/$1/stat" | awk -v hz="$hz" '{ printf "%.0f\n", ($12 + $13 + $14 + $15) * 1e9 / hz }'
}
# record METRIC SIDE VALUE: one measurement of the current round ($r),
# summarised at the end.
record() { echo "$1 $2 $3 ${r:-0}" >> "$tmp/results"; }
: > "$tmp/results"

# Credentials: RSA-2048 and ECDSA P-256 certificates for 127.0.0.1.
for kind in rsa ec; do
  if [ "$kind" = rsa ]; then newkey=(-newkey rsa:2048); else newkey=(-newkey ec -pkeyopt ec_paramgen_curve:P-256); fi
  env OPENSSL_CONF=/dev/null openssl req -x509 "${newkey[@]}" -nodes \
    -keyout "$tmp/$kind.key" -out "$tmp/$kind.pem" -days 2 -subj /CN=127.0.0.1 \
    -addext subjectAltName=IP:127.0.0.1 2>/dev/null
done
mkdir "$tmp/www" "$tmp/stats"
chmod 1733 "$tmp/stats"
echo ok > "$tmp/www/index.html"
head -c "$((mib * 1048576))" /dev/urandom > "$tmp/www/big.bin"
chmod -R a+rX "$tmp/www"
"$cli" config --module "$module" |
  sed "/^soft_load = 1/a stats_dir = $tmp/stats" > "$tmp/accelcrypt.cnf"
grep -q "^stats_dir = $tmp/stats" "$tmp/accelcrypt.cnf" ||
  { echo "bench_servers: 'accelcrypt config' output has no soft_load line to put stats_dir after" >&2; exit 2; }
user=nobody
id www-data >/dev/null 2>&1 && user=www-data

conf_of() { if [ "$1" = with ]; then echo "$tmp/accelcrypt.cnf"; else echo /dev/null; fi; }

# nginx_start SIDE: one master and one worker serving three listeners
# (tls13-rsa, tls12-rsa, tls13-ecdsa) from $tmp/www.
nginx_start() {
  local side=$1 dir=$tmp/nginx.$1 shape p13 p12 p13e
  mkdir "$dir"
  p13=$(free_port); p12=$(free_port); p13e=$(free_port)
  port[$side.tls13-rsa]=$p13; port[$side.tls12-rsa]=$p12; port[$side.tls13-ecdsa]=$p13e
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
  ssl_session_cache off;
  ssl_session_tickets off;
  root $tmp/www;
  server {
    listen 127.0.0.1:$p13 ssl;
    ssl_certificate $tmp/rsa.pem;
    ssl_certificate_key $tmp/rsa.key;
    ssl_protocols TLSv1.3;
  }
  server {
    listen 127.0.0.1:$p12 ssl;
    ssl_certificate $tmp/rsa.pem;
    ssl_certificate_key $tmp/rsa.key;
    ssl_protocols TLSv1.2;
    ssl_ciphers ECDHE-RSA-AES128-GCM-SHA256;
  }
  server {
    listen 127.0.0.1:$p13e ssl;
    ssl_certificate $tmp/ec.pem;
    ssl_certificate_key $tmp/ec.key;
    ssl_protocols TLSv1.3;
  }
}
CFG
  env -i PATH="$PATH" OPENSSL_CONF="$(conf_of "$side")" \
    "$nginx" -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log"
  for _ in $(seq 1 50); do [ -s "$dir/nginx.pid" ] && break; sleep 0.1; done
  [ -s "$dir/nginx.pid" ] || { cat "$dir/error.log" >&2; echo "bench_servers: nginx ($side) did not start" >&2; exit 1; }
  master[$side]=$(cat "$dir/nginx.pid")
  local w=
  for _ in $(seq 1 50); do
    w=$(cat /proc/[0-9]*/stat 2>/dev/null |
      awk -v p="${master[$side]}" '{ pid = $1; sub(/^.*\) /, ""); if ($2 == p) { print pid; exit } }' || true)
    [ -n "$w" ] && break
    sleep 0.1
  done
  [ -n "$w" ] || { echo "bench_servers: no nginx worker ($side)" >&2; exit 1; }
  worker[$side]=$w
  for shape in tls13-rsa tls12-rsa tls13-ecdsa; do
    env OPENSSL_CONF=/dev/null curl -ksf -o /dev/null "https://127.0.0.1:${port[$side.$shape]}/" ||
      { echo "bench_servers: nginx ($side) does not answer on $shape" >&2; exit 1; }
  done
}

# wrk_run SIDE SHAPE ROUND: connections per second with Connection: close.
wrk_run() {
  local side=$1 shape=$2 r=$3 c0 c1 out n dur errs
  c0=$(cpu_ns "${worker[$side]}")
  out=$(env OPENSSL_CONF=/dev/null wrk -t1 -c"$conns" -d"${secs}s" -H 'Connection: close' \
          "https://127.0.0.1:${port[$side.$shape]}/index.html" 2>&1) ||
    { echo "$out" >&2; echo "bench_servers: wrk failed ($side, $shape)" >&2; exit 1; }
  c1=$(cpu_ns "${worker[$side]}")
  # "  12345 requests in 10.00s, 2.51MB read"
  read -r n dur < <(awk '/requests in/ { d = $4; sub(/s,$/, "", d); print $1, d; exit }' <<< "$out")
  errs=$(awk '/Non-2xx|Socket errors/ { sub(/^ +/, ""); printf "%s; ", $0 }' <<< "$out")
  [ "${n:-0}" -gt 0 ] || { echo "$out" >&2; echo "bench_servers: wrk made no request ($side, $shape)" >&2; exit 1; }
  awk -v n="$n" -v d="$dur" -v c="$((c1 - c0))" -v l="$side" -v s="$shape" -v r="$r" -v e="$errs" \
    'BEGIN { printf "  round %d  nginx %-11s %-7s %7d connections in %5.2f s = %7.1f /s; worker CPU %.3f ms per connection%s\n",
             r, s, l, n, d, n / d, c / 1e6 / n, (e == "" ? "" : "  (wrk: " e ")") }'
  record "wrk.$shape.rate" "$side" "$(awk -v n="$n" -v d="$dur" 'BEGIN { print n / d }')"
  record "wrk.$shape.cpu" "$side" "$(awk -v n="$n" -v c="$((c1 - c0))" 'BEGIN { print c / 1e6 / n }')"
}

# stime_run SIDE SHAPE ROUND: openssl s_time -new (no request).
stime_run() {
  local side=$1 shape=$2 r=$3 c0 c1 t0 t1 n
  local -a opts=(-tls1_3)
  [ "$shape" = tls12-rsa ] && opts=(-tls1_2 -cipher ECDHE-RSA-AES128-GCM-SHA256)
  c0=$(cpu_ns "${worker[$side]}")
  t0=$(now)
  n=$(env OPENSSL_CONF=/dev/null openssl s_time -connect "127.0.0.1:${port[$side.$shape]}" \
        -new -time "$secs" "${opts[@]}" 2>/dev/null |
      awk '/connections in .* real seconds/ { print $1; exit }')
  t1=$(now)
  c1=$(cpu_ns "${worker[$side]}")
  [ "${n:-0}" -gt 0 ] || { echo "bench_servers: s_time made no connection ($side, $shape)" >&2; exit 1; }
  awk -v n="$n" -v t0="$t0" -v t1="$t1" -v c="$((c1 - c0))" -v l="$side" -v s="$shape" -v r="$r" \
    'BEGIN { printf "  round %d  s_time %-11s %-7s %7d handshakes in %5.2f s = %7.1f /s; worker CPU %.3f ms per handshake\n",
             r, s, l, n, t1 - t0, n / (t1 - t0), c / 1e6 / n }'
  record "stime.$shape.rate" "$side" "$(awk -v n="$n" -v t0="$t0" -v t1="$t1" 'BEGIN { print n / (t1 - t0) }')"
  record "stime.$shape.cpu" "$side" "$(awk -v n="$n" -v c="$((c1 - c0))" 'BEGIN { print c / 1e6 / n }')"
}

# download_run SIDE ROUND: DOWNLOADS sequential downloads of big.bin.
download_run() {
  local side=$1 r=$2 c0 c1 t0 t1 bytes=0 b i
  c0=$(cpu_ns "${worker[$side]}")
  t0=$(now)
  for i in $(seq 1 "$downloads"); do
    b=$(env OPENSSL_CONF=/dev/null curl -ksf --http1.1 -o /dev/null -w '%{size_download}' \
          "https://127.0.0.1:${port[$side.tls13-rsa]}/big.bin") ||
      { echo "bench_servers: download $i failed ($side)" >&2; exit 1; }
    bytes=$((bytes + b))
  done
  t1=$(now)
  c1=$(cpu_ns "${worker[$side]}")
  [ "$bytes" -eq $((downloads * mib * 1048576)) ] ||
    { echo "bench_servers: downloaded $bytes bytes, expected $((downloads * mib * 1048576)) ($side)" >&2; exit 1; }
  awk -v m="$((bytes / 1048576))" -v t0="$t0" -v t1="$t1" -v c="$((c1 - c0))" -v l="$side" -v r="$r" \
    'BEGIN { printf "  round %d  download tls13-rsa %-7s %5d MiB in %5.2f s = %7.1f MiB/s; worker CPU %.3f ms per MiB\n",
             r, l, m, t1 - t0, m / (t1 - t0), c / 1e6 / m }'
  record download.rate "$side" "$(awk -v m="$((bytes / 1048576))" -v t0="$t0" -v t1="$t1" 'BEGIN { print m / (t1 - t0) }')"
  record download.cpu "$side" "$(awk -v m="$((bytes / 1048576))" -v c="$((c1 - c0))" 'BEGIN { print c / 1e6 / m }')"
}

# sshd_start SIDE: a listener for the whole run.
sshd_start() {
  local side=$1 dir=$tmp/sshd.$1 p
  p=$(free_port)
  port[$side.ssh]=$p
  mkdir "$dir"
  cat > "$dir/sshd_config" <<CFG
Port $p
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
  env -i PATH="$PATH" OPENSSL_CONF="$(conf_of "$side")" \
    "$sshd" -f "$dir/sshd_config" -E "$dir/sshd.log"
  for _ in $(seq 1 50); do [ -s "$dir/sshd.pid" ] && break; sleep 0.1; done
  [ -s "$dir/sshd.pid" ] || { cat "$dir/sshd.log" >&2; echo "bench_servers: sshd ($side) did not start" >&2; exit 1; }
  master[$side.sshd]=$(cat "$dir/sshd.pid")
}

# sshd_run SIDE ROUND: wall time and server CPU per ssh connection.
sshd_run() {
  local side=$1 r=$2 pid t0 t1 c0 c1
  pid=${master[$side.sshd]}
  c0=$(cpu_ns_children "$pid")
  t0=$(now)
  for _ in $(seq 1 "$count"); do
    env OPENSSL_CONF=/dev/null ssh -F /dev/null -o BatchMode=yes \
      -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
      -o LogLevel=ERROR -i "$tmp/user_key" -p "${port[$side.ssh]}" root@127.0.0.1 true ||
      { echo "bench_servers: ssh failed ($side)" >&2; exit 1; }
  done
  t1=$(now)
  sleep 0.5  # the last connection's processes are reaped
  c1=$(cpu_ns_children "$pid")
  awk -v n="$count" -v t0="$t0" -v t1="$t1" -v l="$side" -v c="$((c1 - c0))" -v r="$r" \
    'BEGIN { printf "  round %d  sshd %-7s %4d connections in %6.2f s = %6.2f ms per connection; server CPU %.2f ms per connection\n",
             r, l, n, t1 - t0, 1000 * (t1 - t0) / n, c / 1e6 / n }'
  record sshd.wall "$side" "$(awk -v n="$count" -v t0="$t0" -v t1="$t1" 'BEGIN { print 1000 * (t1 - t0) / n }')"
  record sshd.cpu "$side" "$(awk -v n="$count" -v c="$((c1 - c0))" 'BEGIN { print c / 1e6 / n }')"
}

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //') (family $(grep -m1 'cpu family' /proc/cpuinfo | sed 's/.*: //')," \
     "model $(grep -m1 '^model[[:space:]]*:' /proc/cpuinfo | sed 's/.*: //'), $(nproc) online)"
echo "OpenSSL: $(openssl version); $("$nginx" -v 2>&1); $(wrk -v 2>&1 | head -n 1)$([ "$sshd_on" -eq 1 ] && echo "; $(ssh -V 2>&1)")"
echo "accelcrypt: $cli, provider $module"
echo "load average before: $(cut -d" " -f1-3 /proc/loadavg) (other work on the machine skews these figures)"
echo "$rounds rounds; wrk -t1 -c$conns -d${secs}s -H 'Connection: close' (one full handshake per request);" \
     "$downloads x $mib MiB downloads (curl, TLS 1.3); $([ "$sshd_on" -eq 1 ] && echo "$count ssh connections per round and side")"
echo "worker CPU from $([ -r "/proc/self/schedstat" ] && echo '/proc/PID/schedstat (ns)' || echo "/proc/PID/stat ($hz ticks/s)")"
nginx_start without
nginx_start with
if [ "$sshd_on" -eq 1 ]; then
  ssh-keygen -q -t rsa -b 2048 -N '' -f "$tmp/host_rsa"
  ssh-keygen -q -t ed25519 -N '' -f "$tmp/user_key"
  cp "$tmp/user_key.pub" "$tmp/authorized_keys"
  mkdir -p /run/sshd
  sshd_start without
  sshd_start with
fi
shapes=(tls13-rsa tls12-rsa tls13-ecdsa)
for r in $(seq 1 "$rounds"); do
  order=(with without)
  [ $((r % 2)) -eq 0 ] && order=(without with)
  for shape in "${shapes[@]}"; do
    for side in "${order[@]}"; do wrk_run "$side" "$shape" "$r"; done
  done
  if [ "$stime" -eq 1 ]; then
    for shape in "${shapes[@]}"; do
      for side in "${order[@]}"; do stime_run "$side" "$shape" "$r"; done
    done
  fi
  for side in "${order[@]}"; do download_run "$side" "$r"; done
  if [ "$sshd_on" -eq 1 ]; then
    for side in "${order[@]}"; do sshd_run "$side" "$r"; done
  fi
done
echo "load average after: $(cut -d" " -f1-3 /proc/loadavg)"

# Summary: medians over the rounds.
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print 0; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
summary_rows() {
  local metric label unit kind w o
  while read -r metric label unit kind; do
    grep -q "^$metric " "$tmp/results" || continue
    o=$(awk -v m="$metric" '$1 == m && $2 == "without" { print $3 }' "$tmp/results" | median)
    w=$(awk -v m="$metric" '$1 == m && $2 == "with" { print $3 }' "$tmp/results" | median)
    # The median of the rounds' own ratios (both sides of a round ran
    # next to each other).
    pr=$(awk -v m="$metric" -v k="$kind" '$1 == m { v[$2 "," $4] = $3; rs[$4] = 1 }
           END { for (x in rs) { o = v["without," x]; w = v["with," x]
                   if (o > 0 && w > 0) print (k == "rate") ? w / o : o / w } }' "$tmp/results" | median)
    awk -v l="${label//\~/ }" -v u="$unit" -v o="$o" -v w="$w" -v pr="$pr" \
      'BEGIN { printf "%s|%s|%.3f|%.3f|%.3f\n", l, u, o, w, pr }'
  done <<'ROWS'
wrk.tls13-rsa.rate nginx~TLS~1.3~RSA-2048,~wrk~Connection:~close connections/s rate
wrk.tls13-rsa.cpu nginx~TLS~1.3~RSA-2048,~worker~CPU~per~connection ms cost
wrk.tls12-rsa.rate nginx~TLS~1.2~RSA-2048,~wrk~Connection:~close connections/s rate
wrk.tls12-rsa.cpu nginx~TLS~1.2~RSA-2048,~worker~CPU~per~connection ms cost
wrk.tls13-ecdsa.rate nginx~TLS~1.3~ECDSA~P-256,~wrk~Connection:~close connections/s rate
wrk.tls13-ecdsa.cpu nginx~TLS~1.3~ECDSA~P-256,~worker~CPU~per~connection ms cost
stime.tls13-rsa.rate nginx~TLS~1.3~RSA-2048,~s_time~-new handshakes/s rate
stime.tls13-rsa.cpu nginx~TLS~1.3~RSA-2048,~s_time~worker~CPU~per~handshake ms cost
stime.tls12-rsa.rate nginx~TLS~1.2~RSA-2048,~s_time~-new handshakes/s rate
stime.tls12-rsa.cpu nginx~TLS~1.2~RSA-2048,~s_time~worker~CPU~per~handshake ms cost
stime.tls13-ecdsa.rate nginx~TLS~1.3~ECDSA~P-256,~s_time~-new handshakes/s rate
stime.tls13-ecdsa.cpu nginx~TLS~1.3~ECDSA~P-256,~s_time~worker~CPU~per~handshake ms cost
download.rate nginx~download~TLS~1.3 MiB/s rate
download.cpu nginx~download,~worker~CPU~per~MiB ms cost
sshd.wall sshd~wall~time~per~connection ms cost
sshd.cpu sshd~server~CPU~per~connection ms cost
ROWS
}
summary_rows > "$tmp/summary"
echo
echo "Summary: medians of $rounds rounds; ratio: the median of the rounds' ratios, > 1.0 = accelcrypt better"
echo "(rates with/without, costs without/with)"
awk -F'|' '{ printf "  %-56s %-14s %10.3f %10.3f %7.3f\n", $1, $2, $3, $4, $5 }
  BEGIN { printf "  %-56s %-14s %10s %10s %7s\n", "measurement", "unit", "without", "with", "ratio" }' "$tmp/summary"
if [ -n "$markdown" ]; then
  {
    echo "| measurement | unit | without (median) | with (median) | ratio (median of the rounds'; > 1: accelcrypt better) |"
    echo "| --- | --- | ---: | ---: | ---: |"
    awk -F'|' '{ printf "| %s | %s | %.3f | %.3f | %.3f |\n", $1, $2, $3, $4, $5 }' "$tmp/summary"
  } > "$markdown"
  echo "(Markdown table written to $markdown)"
fi
echo
echo "accelcrypt's statistics of the 'with' servers:"
"$cli" stats "$tmp/stats" | sed -n '/^per backend and algorithm/,$p' | sed 1d | sed 's/^/  /'
