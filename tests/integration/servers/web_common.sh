# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2154  # cli, module, tmp, server_name: set by the sourcing test
#
# Shared by nginx_test.sh and apache_test.sh (sourced, not run): a web
# server started by the test with the provider enabled only through the
# openssl.cnf it reads, curl (which does not load accelcrypt) downloading a
# 32 MiB file from it over TLS 1.2 and TLS 1.3, and the checks on
# accelcrypt's live statistics of the server's worker processes.
#
# The sourcing script sets: cli, module, tmp (a 0755 directory, removed at
# exit with the server stopped), pidfile (where the server writes its
# master's pid), server_name (the process name the statistics show), and
# `master` once the server runs. The server logs to $tmp/error.log.

# Per worker pid, from check_workers for check_final: the uid it runs as.
declare -A worker_euid=()

# server_pid prints the master's pid, or nothing; server_log the log to
# show on failure.
server_pid() { [ -s "$pidfile" ] && cat "$pidfile" || true; }
server_log() { echo "$tmp/error.log"; }

master=
# cleanup stops the master and its children, whatever state the test left,
# and removes $tmp.
cleanup() {
  local pids=()
  [ -n "$master" ] && mapfile -t pids < <(echo "$master"; children_of "$master")
  [ "${#pids[@]}" -gt 0 ] && stop_pids "${pids[@]}"
  rm -rf "$tmp"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  local log
  log=$(server_log)
  [ -f "$log" ] && tail -20 "$log" >&2
  exit 1
}

# alive PID: true while PID runs (a zombie does not count: this container's
# init reaps late, and kill -0 succeeds on zombies).
# /proc/PID/stat is "PID (COMM) STATE PPID ..." and COMM may hold spaces
# and parentheses: the fields are counted after the last ") ".
alive() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [ -n "$stat" ] && [ "${stat%% *}" != Z ]
}

# children_of PID: the running pids whose parent is PID, one per line.
children_of() {
  # cat, not awk FILES: mawk stops at a file that vanished meanwhile.
  cat /proc/[0-9]*/stat 2>/dev/null |
    awk -v p="$1" '{ pid = $1; sub(/^.*\) /, ""); if ($2 == p && $1 != "Z") print pid }'
  return 0
}

# free_port: a random high port nothing listens on at 127.0.0.1 right now
# (a system nginx or Apache on 80/443 is never in the range).
free_port() {
  local port
  while :; do
    port=$((20000 + RANDOM % 40000))
    if ! ss -Hltn "sport = :$port" 2>/dev/null | grep -q .; then
      echo "$port"
      return
    fi
  done
}

# web_setup: the RSA-2048 certificate (made without the provider), the file
# to serve, and the openssl.cnf loading accelcrypt with its statistics in
# $tmp/stats. Sets size.
web_setup() {
  mkdir "$tmp/www"
  env OPENSSL_CONF=/dev/null openssl req -x509 -newkey rsa:2048 -nodes \
    -keyout "$tmp/key.pem" -out "$tmp/cert.pem" -days 2 -subj /CN=127.0.0.1 \
    -addext subjectAltName=IP:127.0.0.1 2>/dev/null ||
    fail "openssl req could not make the test certificate"
  head -c $((32 << 20)) /dev/urandom > "$tmp/www/big"
  chmod 644 "$tmp/www/big"
  size=$(stat -c %s "$tmp/www/big")
  # Sticky and writable by all, like the package's /run/accelcrypt/stats:
  # processes that run as another user (the workers) get a directory of
  # their own below it, which `accelcrypt stats` reads as root.
  mkdir "$tmp/stats"
  chmod 1733 "$tmp/stats"
  "$cli" config --module "$module" |
    sed "/^soft_load = 1/a stats_dir = $tmp/stats" > "$tmp/openssl.cnf"
  grep -q "^stats_dir = $tmp/stats\$" "$tmp/openssl.cnf" ||
    fail "accelcrypt config printed no soft_load line to add stats_dir after"
}

# workers_report MASTER ALG: from `accelcrypt stats --json`, one line
# "BYTES SIGNS MASTER_BYTES PIDS": the bytes of ALG (all backends) and the
# RSA-SIGN operations counted by processes named $server_name whose parent
# is MASTER (its workers), the bytes of ALG the master itself counted, and
# the workers' pids (comma-separated, "-" when none).
workers_report() {
  "$cli" stats --json "$tmp/stats" | python3 -c '
import json, sys
master, alg, name = int(sys.argv[1]), sys.argv[2], sys.argv[3]
doc = json.load(sys.stdin)
served = signs = master_bytes = 0
pids = []
for p in doc["per_process"]:
    cells = p.get("cells", [])
    if p["pid"] == master:
        master_bytes += sum(c["bytes"] for c in cells if c["algorithm"] == alg)
    if p["ppid"] != master or p["process"] != name:
        continue
    pids.append(str(p["pid"]))
    served += sum(c["bytes"] for c in cells if c["algorithm"] == alg)
    signs += sum(c["ops"] for c in cells if c["algorithm"] == "RSA-SIGN")
print(served, signs, master_bytes, ",".join(pids) or "-")
' "$1" "$2" "$server_name"
}

# fetch PORT PROTO CIPHER ALG: downloads /big over TLS PROTO (1.2 or 1.3)
# with CIPHER, checks the bytes, the negotiated protocol and cipher, and
# that the master's workers served at least the file size and at most 5%
# more of ALG through accelcrypt and made no RSA signature through it: the
# x86 backend's AES wins, but without a token only the pass-through
# software backend serves RSA, which the provider leaves to OpenSSL's
# default provider (`interpose = wins`, docs/configuration.md).
fetch() {
  local port=$1 proto=$2 cipher=$3 alg=$4 master out
  master=$(server_pid)
  [ -n "$master" ] || fail "no master pid"
  local -a tls
  if [ "$proto" = 1.3 ]; then
    tls=(--tlsv1.3 --tls13-ciphers "$cipher")
  else
    tls=(--tlsv1.2 --tls-max 1.2 --ciphers "$cipher")
  fi
  local report b_bytes b_signs
  report=$(workers_report "$master" "$alg") || fail "accelcrypt stats --json failed"
  read -r b_bytes b_signs _ _ <<< "$report"
  out=$tmp/recv.$proto.$cipher
  # The client loads no provider (an empty openssl.cnf): only the server's
  # bytes reach accelcrypt. -q first: no ~/.curlrc; no proxy either.
  env OPENSSL_CONF=/dev/null curl -q -sS -v --fail --http1.1 --noproxy '*' \
    --cacert "$tmp/cert.pem" "${tls[@]}" -o "$out" \
    "https://127.0.0.1:$port/big" 2> "$tmp/curl.log" ||
    { cat "$tmp/curl.log" >&2; fail "curl TLS $proto $cipher failed"; }
  grep -q "SSL connection using TLSv$proto / $cipher" "$tmp/curl.log" ||
    { grep "SSL connection" "$tmp/curl.log" >&2; fail "TLS $proto $cipher was not negotiated"; }
  cmp -s "$tmp/www/big" "$out" || fail "TLS $proto $cipher: downloaded file differs"
  rm -f "$out"
  local a_bytes a_signs m_bytes pids served
  for _ in $(seq 1 50); do
    report=$(workers_report "$master" "$alg") || fail "accelcrypt stats --json failed"
    read -r a_bytes a_signs m_bytes pids <<< "$report"
    [ "$((a_bytes - b_bytes))" -ge "$size" ] && break
    sleep 0.1
  done
  served=$((a_bytes - b_bytes))
  if [ "$served" -lt "$size" ] || [ "$served" -gt $((size + size / 20)) ]; then
    "$cli" stats "$tmp/stats" >&2
    fail "TLS $proto $cipher: the workers of $server_name (master $master) served $served bytes of $alg through accelcrypt, expected $size..$((size + size / 20))"
  fi
  [ "$m_bytes" -eq 0 ] ||
    fail "the master ($master) itself counted $m_bytes bytes of $alg; the workers should serve"
  if [ "$a_signs" -ne "$b_signs" ]; then
    "$cli" stats "$tmp/stats" >&2
    fail "TLS $proto $cipher: the workers of $server_name made $((a_signs - b_signs)) RSA signatures through accelcrypt (its software backend); without a token the default provider should make them"
  fi
  echo "ok: TLS $proto $cipher: $server_name workers (pids $pids, parent $master) served $served bytes of $alg through accelcrypt for a $size-byte file, and the handshake's RSA signature was left to the default provider"
}

# check_workers MASTER: each worker the master has now is a process named
# $server_name with a live statistics file whose ppid is MASTER; prints
# their pids, the uid their file records and the uid they run as.
check_workers() {
  local master=$1 w found=0
  local -a workers
  mapfile -t workers < <(children_of "$master")
  [ "${#workers[@]}" -gt 0 ] || fail "$server_name master $master has no worker processes"
  # One line per statistics file: "PID PPID PROCESS STATE UID".
  local table
  table=$(stats_table)
  for w in "${workers[@]}"; do
    local comm euid line ppid name state uid
    comm=$(cat "/proc/$w/comm" 2>/dev/null || true)
    euid=$(awk '/^Uid:/ { print $3 }' "/proc/$w/status" 2>/dev/null || true)
    line=$(awk -v p="$w" '$1 == p { print; exit }' <<< "$table")
    [ -n "$line" ] || continue
    read -r _ ppid name state uid <<< "$line"
    [ "$ppid" = "$master" ] && [ "$name" = "$server_name" ] ||
      fail "worker $w: statistics say ppid $ppid, process $name"
    # A running worker's file must say live, also when its parent exited
    # right after the fork (Apache's detach) and marked its own header
    # ended first.
    [ "$state" = live ] || fail "worker $w: statistics say state $state while it runs"
    [ "$comm" = "$server_name" ] || fail "worker $w: /proc comm is $comm"
    worker_euid[$w]=$euid
    # The file is made in the fork handler, before the worker drops
    # privileges (it stays in the forking user's directory); the statistics
    # show the user the worker runs as.
    [ "$uid" = "$euid" ] ||
      fail "worker $w runs as uid $euid; its statistics say uid $uid"
    echo "ok: worker $w (comm $comm, parent $master, runs as uid $euid) has a statistics file, shown as uid $uid"
    found=$((found + 1))
  done
  [ "$found" -gt 0 ] || fail "none of the workers ${workers[*]} has a statistics file"
}

# stats_table: "PID PPID PROCESS STATE UID" per statistics file in
# $tmp/stats (every file: --all), from `accelcrypt stats --json`.
stats_table() {
  "$cli" stats --json --all "$tmp/stats" | python3 -c '
import json, sys
for p in json.load(sys.stdin)["per_process"]:
    print(p["pid"], p["ppid"], p["process"], p["state"], p["uid"])
'
}

# check_final PIDS...: after a graceful stop, the statistics of each worker
# in PIDS (seen by check_workers) are final: "ended". A worker whose file was
# made as another user than it ended as cannot write the final JSON into
# that user's 0700 directory; its live file then records the end itself.
check_final() {
  local table w line state uid
  table=$(stats_table)
  for w in "$@"; do
    [ -n "${worker_euid[$w]:-}" ] || continue
    line=$(awk -v p="$w" '$1 == p { print $4, $5; exit }' <<< "$table")
    read -r state uid <<< "$line"
    [ "$uid" = "${worker_euid[$w]}" ] ||
      fail "worker $w ran as uid ${worker_euid[$w]}; its final statistics say uid $uid"
    if [ "$state" = ended ]; then
      echo "ok: worker $w's statistics are final (its teardown recorded them, as uid $uid)"
    else
      "$cli" stats --all "$tmp/stats" >&2
      fail "worker $w after the graceful stop: state '$state', expected ended"
    fi
  done
}

# worker_user: the user packaged servers run their workers as ("www-data",
# else "nobody") when the test runs as root; empty otherwise (the workers
# keep the test's user).
worker_user() {
  [ "$(id -u)" -eq 0 ] || return 0
  if id www-data >/dev/null 2>&1; then echo www-data; else echo nobody; fi
}

# start_nginx: nginx with $tmp/nginx.conf on a free 127.0.0.1 port (sets
# port and master): the main context's $nginx_main_lines, a server block
# with $nginx_server_lines serving $tmp/www, own pid, lock, log and temp
# files. The master's environment is OPENSSL_CONF=$tmp/openssl.cnf and the
# NAME=VALUE words of $server_env (nginx clears its workers' environment
# but for its `env` directives). As root the workers run as worker_user.
start_nginx() {
  local user started=0
  user=$(worker_user)
  for _ in 1 2 3 4 5; do
    port=$(free_port)
    cat > "$tmp/nginx.conf" <<CFG
${user:+user $user;}
worker_processes 2;
pid $pidfile;
lock_file $tmp/nginx.lock;
error_log $tmp/error.log info;
${nginx_main_lines:-}
events { worker_connections 64; }
http {
  access_log $tmp/access.log;
  client_body_temp_path $tmp/body;
  proxy_temp_path $tmp/proxy;
  fastcgi_temp_path $tmp/fastcgi;
  uwsgi_temp_path $tmp/uwsgi;
  scgi_temp_path $tmp/scgi;
  default_type application/octet-stream;
  server {
    listen 127.0.0.1:$port ssl;
${nginx_server_lines:-}
    root $tmp/www;
  }
}
CFG
    rm -f "$pidfile"
    # -e: the startup error log too (the built-in default is stderr).
    # shellcheck disable=SC2086  # word lists on purpose
    if env -i PATH="$PATH" ${ACCELCRYPT_SANITIZER_ENV:-} OPENSSL_CONF="$tmp/openssl.cnf" \
         ${server_env:-} "$nginx" -p "$tmp" -c "$tmp/nginx.conf" -e "$tmp/error.log" \
         2>> "$tmp/error.log"; then
      for _ in $(seq 1 50); do [ -s "$pidfile" ] && break; sleep 0.1; done
      if [ -s "$pidfile" ]; then master=$(cat "$pidfile"); started=1; break; fi
    fi
    # A failure that is not the port's: no second try.
    grep -q "Address already in use" "$tmp/error.log" 2>/dev/null || break
  done
  [ "$started" = 1 ] || fail "nginx did not start"
  for _ in $(seq 1 50); do [ -n "$(children_of "$master")" ] && break; sleep 0.1; done
}

# listener_pid PORT: the pid of the process listening on 127.0.0.1:PORT.
listener_pid() {
  ss -Hltnp "sport = :$1" 2>/dev/null | sed -n 's/.*pid=\([0-9]*\).*/\1/p' | head -1
}

# start_apache: Apache httpd (mpm_event, mod_ssl) with $tmp/httpd.conf on a
# free 127.0.0.1 port (sets port and master): a minimal configuration of our
# own loading only the modules needed, $apache_main_lines in the server
# context, $apache_vhost_lines in the TLS virtual host serving $tmp/www. Environment as start_nginx's (Apache's
# children inherit it). As root the children run as worker_user.
start_apache() {
  local mods=/usr/lib/apache2/modules user user_lines= started=0
  user=$(worker_user)
  if [ -n "$user" ]; then
    user_lines="User $user"$'\n'"Group $(id -gn "$user")"
  fi
  for _ in 1 2 3 4 5; do
    port=$(free_port)
    cat > "$tmp/httpd.conf" <<CFG
ServerRoot $tmp
ServerName 127.0.0.1
LoadModule mpm_event_module $mods/mod_mpm_event.so
LoadModule authz_core_module $mods/mod_authz_core.so
LoadModule mime_module $mods/mod_mime.so
LoadModule socache_shmcb_module $mods/mod_socache_shmcb.so
LoadModule ssl_module $mods/mod_ssl.so
$user_lines
${apache_main_lines:-}
PidFile $pidfile
DefaultRuntimeDir $tmp
Mutex file:$tmp default
ErrorLog $tmp/error.log
LogLevel info
TypesConfig /dev/null
StartServers 2
ServerLimit 2
ThreadLimit 4
ThreadsPerChild 4
MaxRequestWorkers 8
MinSpareThreads 1
MaxSpareThreads 8
GracefulShutdownTimeout 10
Listen 127.0.0.1:$port https
SSLSessionCache shmcb:$tmp/ssl_scache(512000)
SSLRandomSeed startup builtin
DocumentRoot $tmp/www
<Directory $tmp/www>
  Require all granted
</Directory>
<VirtualHost 127.0.0.1:$port>
  SSLEngine on
${apache_vhost_lines:-}
</VirtualHost>
CFG
    rm -f "$pidfile"
    # -k start detaches; the listening socket is opened by the detached
    # parent, so success is the parent listening on the port.
    # shellcheck disable=SC2086  # word lists on purpose
    if env -i PATH="$PATH" ${ACCELCRYPT_SANITIZER_ENV:-} OPENSSL_CONF="$tmp/openssl.cnf" \
         ${server_env:-} "$apache" -d "$tmp" -f "$tmp/httpd.conf" -k start 2>> "$tmp/error.log"; then
      for _ in $(seq 1 50); do [ -s "$pidfile" ] && break; sleep 0.1; done
      if [ -s "$pidfile" ]; then
        master=$(cat "$pidfile")
        for _ in $(seq 1 50); do
          [ "$(listener_pid "$port")" = "$master" ] && { started=1; break; }
          alive "$master" || break
          sleep 0.1
        done
        [ "$started" = 1 ] && break
        local -a pids
        mapfile -t pids < <(echo "$master"; children_of "$master")
        stop_pids "${pids[@]}"
        master=
      fi
    fi
    grep -q "Address already in use" "$tmp/error.log" 2>/dev/null || break
  done
  [ "$started" = 1 ] || fail "apache2 did not start"
  for _ in $(seq 1 50); do [ -n "$(children_of "$master")" ] && break; sleep 0.1; done
}

# stop_server SIGNAL: graceful stop of the master (nginx: QUIT, Apache:
# WINCH), waits for it and its children; prints the children's pids first.
stop_server() {
  local -a workers
  mapfile -t workers < <(children_of "$master")
  kill "-$1" "$master"
  wait_gone "$master" 30 || fail "$server_name master $master did not stop on SIG$1"
  for w in "${workers[@]}"; do
    wait_gone "$w" 5 || fail "$server_name worker $w still runs after the master stopped"
  done
  master=
  stopped_workers=("${workers[@]}")
}

# wait_gone PID SECONDS: true once PID has ended.
wait_gone() {
  for _ in $(seq 1 $(($2 * 10))); do
    alive "$1" || return 0
    sleep 0.1
  done
  ! alive "$1"
}

# stop_pids PIDS...: TERM, then KILL, whatever of PIDS still runs.
stop_pids() {
  local p
  for p in "$@"; do alive "$p" && kill -TERM "$p" 2>/dev/null || true; done
  for p in "$@"; do wait_gone "$p" 5 || kill -KILL "$p" 2>/dev/null || true; done
}
