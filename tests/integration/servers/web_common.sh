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
  local json
  json=$("$cli" stats --json --all "$tmp/stats")
  for w in "${workers[@]}"; do
    local comm euid line
    comm=$(cat "/proc/$w/comm" 2>/dev/null || true)
    euid=$(awk '/^Uid:/ { print $3 }' "/proc/$w/status" 2>/dev/null || true)
    line=$(python3 -c '
import json, sys
doc = json.loads(sys.argv[1])
for p in doc["per_process"]:
    if p["pid"] == int(sys.argv[2]):
        print(p["ppid"], p["process"], p["state"], p["uid"])
' "$json" "$w")
    [ -n "$line" ] || continue
    read -r ppid name state uid <<< "$line"
    [ "$ppid" = "$master" ] && [ "$name" = "$server_name" ] ||
      fail "worker $w: statistics say ppid $ppid, process $name"
    # A running worker's file must say live, also when its parent exited
    # right after the fork (Apache's detach) and marked its own header
    # ended first.
    [ "$state" = live ] || fail "worker $w: statistics say state $state while it runs"
    [ "$comm" = "$server_name" ] || fail "worker $w: /proc comm is $comm"
    worker_euid[$w]=$euid
    echo "ok: worker $w (comm $comm, parent $master, runs as uid $euid) has a statistics file (file uid $uid)"
    if [ "$uid" != "$euid" ]; then
      # Documented: the file is made in the fork handler, before the worker
      # drops privileges, so it stays in the forking user's directory.
      echo "ok: worker $w's statistics file was made as uid $uid (forked before it became uid $euid)"
    fi
    found=$((found + 1))
  done
  [ "$found" -gt 0 ] || fail "none of the workers ${workers[*]} has a statistics file"
}

# check_final PIDS...: after a graceful stop, the statistics of each worker
# in PIDS (seen by check_workers) are final: "ended". A worker whose file was
# made as another user than it ended as cannot write the final JSON into
# that user's 0700 directory; its live file then records the end itself.
check_final() {
  local json w line
  json=$("$cli" stats --json --all "$tmp/stats")
  for w in "$@"; do
    [ -n "${worker_euid[$w]:-}" ] || continue
    line=$(python3 -c '
import json, sys
doc = json.loads(sys.argv[1])
for p in doc["per_process"]:
    if p["pid"] == int(sys.argv[2]):
        print(p["state"], p["uid"])
' "$json" "$w")
    read -r state uid <<< "$line"
    if [ "$state" = ended ]; then
      echo "ok: worker $w's statistics are final (its teardown recorded them)"
    else
      "$cli" stats --all "$tmp/stats" >&2
      fail "worker $w after the graceful stop: state '$state', expected ended"
    fi
  done
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
