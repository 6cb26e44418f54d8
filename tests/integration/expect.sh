# SPDX-License-Identifier: Apache-2.0
# Sourced by the integration check scripts (cli/cli_checks.sh,
# example_backend/example_backend_test.sh): the pass/fail reporting and the
# output checks they share. The caller sets $tmp (a scratch directory);
# each check command's stdout and stderr go to $tmp/out.

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }
# expect_rc WANT CMD...: runs CMD (stdout+stderr to $tmp/out) and checks its
# exit code.
expect_rc() {
  local want=$1; shift
  local rc=0
  "$@" > "$tmp/out" 2>&1 || rc=$?
  if [ "$rc" -ne "$want" ]; then
    cat "$tmp/out" >&2
    fail "'$*' exited $rc, expected $want"
  fi
}
expect_out() {  # expect_out REGEX WHAT
  grep -Eq -- "$1" "$tmp/out" || { cat "$tmp/out" >&2; fail "$2: no line matching /$1/"; }
}
reject_out() {  # reject_out REGEX WHAT
  if grep -Eq -- "$1" "$tmp/out"; then cat "$tmp/out" >&2; fail "$2: a line matches /$1/"; fi
}
