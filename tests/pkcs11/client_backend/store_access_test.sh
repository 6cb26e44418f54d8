#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# No hang when the token store cannot be opened (issue 30 item 4): a key
# on accelcrypt's own token, used through libp11's engine by a "master"
# running as root that forks a "worker" which drops to another user, as
# nginx with `ssl_certificate_key engine:pkcs11:...` and `user www-data;`
# does (fork_worker_sign). With a root-only token directory, or a worker
# that lost ACCELCRYPT_PKCS11_CONF, the worker's signature must fail
# within seconds with the reason on stderr (libp11 0.4.12 waits forever
# after a failed C_OpenSession and ignores a failed C_Initialize after
# fork: the module says why at C_Initialize, opens the session, and fails
# every call that needs the store);
# with the directory shared with the worker's group it signs. Without
# root: the same store made unreadable (chmod 000) must give an error
# within seconds to pkcs11-tool.
# Environment (set by CMake): ACCELCRYPT_P11_MODULE, FORK_WORKER_SIGN,
# ACCELCRYPT_TEST_BACKENDS, WORK_DIR.
# Exit 0 pass, 1 fail, 77 skip (with the reason printed).
set -u

MODULE="${ACCELCRYPT_P11_MODULE:?}"
FORK_SIGN="${FORK_WORKER_SIGN:?}"
BACKENDS="${ACCELCRYPT_TEST_BACKENDS:?}"
WORK="${WORK_DIR:?}/store-access"
LIMIT="${TOKEN_TEST_LIMIT:-30}"
CASE=store_access

rm -rf "$WORK"
mkdir -p "$WORK/p11tokens"
chmod 755 "$WORK"
unset ACCELCRYPT_CONF ACCELCRYPT_STATS_DIR ACCELCRYPT_LOG_LEVEL \
  ACCELCRYPT_PKCS11_TOKEN_DIR
# Nothing of accelcrypt's provider in these processes: the module alone.
: >"$WORK/empty.cnf"
export OPENSSL_CONF="$WORK/empty.cnf"

passed=0
failed=0
pass() { passed=$((passed + 1)); }
fail() {
  failed=$((failed + 1))
  echo "FAIL: $*" >&2
}
check() {
  local what="$1"
  shift
  if "$@"; then pass; else fail "$what"; fi
}
skip() {
  echo "SKIP: $*"
  exit 77
}
finish() {
  echo "${CASE}: ${passed} passed, ${failed} failed"
  [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
  exit $?
}

command -v pkcs11-tool >/dev/null || skip "pkcs11-tool (opensc) not installed"
[ -f "$MODULE" ] || skip "accelcrypt-pkcs11.so not built"
LABEL=web
PIN=1234
printf '[accelcrypt]\nbackend_dir = %s\n\n[accelcrypt_pkcs11]\ntoken_dir = %s/p11tokens\nslots = 1\npbkdf2_iterations = 1000\n' \
  "$BACKENDS" "$WORK" >"$WORK/p11.conf"
chmod 644 "$WORK/p11.conf"
export ACCELCRYPT_PKCS11_CONF="$WORK/p11.conf"
p11() { pkcs11-tool --module "$MODULE" "$@"; }
{ p11 --slot-index 0 --init-token --label "$LABEL" --so-pin 0000 &&
    p11 --token-label "$LABEL" --login --login-type so --so-pin 0000 \
      --init-pin --pin "$PIN" &&
    p11 --token-label "$LABEL" --login --pin "$PIN" --keypairgen \
      --key-type rsa:2048 --label srv --id 01; } >"$WORK/init.log" 2>&1 || {
  fail "token set-up"
  sed 's/^/  | /' "$WORK/init.log" >&2
  finish
}
store="$WORK/p11tokens/slot0"
# The store as `accelcrypt-pkcs11` makes it: directories 0700, files 0600.
ls -la "$store" | sed 's/^/  /'

if [ "$(id -u)" != 0 ]; then
  # An unprivileged run: the store made unreadable to its own user.
  chmod 000 "$store"
  start=$SECONDS
  timeout --kill-after=5 "$LIMIT" pkcs11-tool --module "$MODULE" \
    --token-label "$LABEL" --login --pin "$PIN" --list-objects \
    >"$WORK/direct.log" 2>&1
  rc=$?
  chmod 700 "$store"
  echo "pkcs11-tool on an unreadable store: exit $rc after $((SECONDS - start)) s"
  sed 's/^/  | /' "$WORK/direct.log"
  check "no hang on an unreadable store" test "$rc" -ne 124 -a "$rc" -ne 137
  check "an error on an unreadable store" test "$rc" -ne 0
  check "the reason on stderr" grep -q "Permission denied" "$WORK/direct.log"
  finish
fi

engine_dir=$(openssl version -e | sed -n 's/^ENGINESDIR: "\(.*\)"$/\1/p')
ENGINE_SO="$engine_dir/pkcs11.so"
[ -f "$ENGINE_SO" ] ||
  skip "libp11 engine $ENGINE_SO missing (package libengine-pkcs11-openssl)"
uid=$(id -u nobody 2>/dev/null) || skip "no user nobody"
gid=$(getent group nogroup | cut -d: -f3)
[ -n "$gid" ] || gid=$uid
uri="pkcs11:token=$LABEL;object=srv;type=private"

# worker NAME [--lose-env]: the master signs, forks, the worker drops to
# nobody and signs; output in $WORK/NAME.log.
worker() {
  local name=$1
  shift
  local start=$SECONDS rc
  "$FORK_SIGN" "$ENGINE_SO" "$MODULE" "$uri" "$PIN" "$uid" "$gid" "$LIMIT" \
    "$@" >"$WORK/$name.log" 2>&1
  rc=$?
  echo "$name: exit $rc after $((SECONDS - start)) s"
  sed 's/^/  | /' "$WORK/$name.log"
  return $rc
}

# 1. The token directory only root may enter (as the module makes it).
worker root_only
check "root-only store: the worker does not hang" test $? -eq 0
check "root-only store: the worker's signature fails" \
  grep -q "^worker: failed" "$WORK/root_only.log"
check "root-only store: the reason, for the operator" \
  grep -q "accelcrypt-pkcs11: the parent process used .*cannot.*Permission denied" \
  "$WORK/root_only.log"

# 2. Shared with the worker's group: it signs.
chgrp -R "$gid" "$WORK/p11tokens"
chmod -R g+rwX "$WORK/p11tokens"
worker shared
check "shared store: the worker exits" test $? -eq 0
check "shared store: the worker signs" grep -q "^worker: signed" \
  "$WORK/shared.log"

# 3. The worker lost the environment naming the module's configuration
# (nginx without `env ACCELCRYPT_PKCS11_CONF;`).
worker lost_env --lose-env
check "lost environment: the worker does not hang" test $? -eq 0
check "lost environment: the worker's signature fails" \
  grep -q "^worker: failed" "$WORK/lost_env.log"
check "lost environment: the reason names ACCELCRYPT_PKCS11_CONF" \
  grep -q "ACCELCRYPT_PKCS11_CONF is not set" "$WORK/lost_env.log"
finish
