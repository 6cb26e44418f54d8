#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `accelcrypt enable` / `disable` on a copy of the system openssl.cnf (never
# the real one: other programs on the machine read it), reached through a
# symlink as Debian's /usr/lib/ssl/openssl.cnf is, with the real openssl
# binary checking that the provider is (not) loaded.
# Usage: enable_checks.sh ACCELCRYPT_EXE PROVIDER_SO
set -euo pipefail
exe=$1 module=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
expect_rc() {  # expect_rc WANT CMD...: runs CMD, output in $tmp/out
  local want=$1 rc=0; shift
  "$@" > "$tmp/out" 2>&1 || rc=$?
  if [ "$rc" != "$want" ]; then fail "exit $rc (want $want): $*"; cat "$tmp/out"; fi
}
providers() { OPENSSL_CONF=$1 openssl list -providers 2>&1; }

mkdir -p "$tmp/etc" "$tmp/lib"
src=/etc/ssl/openssl.cnf
[ -f "$src" ] || { echo "SKIP: no $src"; exit 77; }
cp "$src" "$tmp/etc/openssl.cnf"
chmod 640 "$tmp/etc/openssl.cnf"
cp "$tmp/etc/openssl.cnf" "$tmp/orig.cnf"
ln -s ../etc/openssl.cnf "$tmp/lib/openssl.cnf"
cnf="$tmp/lib/openssl.cnf" real="$tmp/etc/openssl.cnf"
"$exe" config --include-only --module "$module" > "$tmp/accelcrypt.cnf"
snip="$tmp/accelcrypt.cnf"
if providers "$cnf" | grep -q accelcrypt; then fail "provider loaded before enable"; fi

echo "== dry run changes nothing"
expect_rc 0 "$exe" enable --openssl-cnf "$cnf" --snippet "$snip" --dry-run
grep -q "would append" "$tmp/out" || fail "dry run does not say what it would do"
grep -qF ".include $snip" "$tmp/out" || fail "dry run does not show the line"
cmp -s "$real" "$tmp/orig.cnf" || fail "dry run changed the file"
[ ! -e "$real.accelcrypt-bak" ] || fail "dry run wrote a backup"

echo "== enable"
expect_rc 0 "$exe" enable --openssl-cnf "$cnf" --snippet "$snip"
grep -q "^enabled: " "$tmp/out" || fail "no 'enabled' message"
[ -L "$cnf" ] || fail "the symlink was replaced"
[ "$(tail -n 1 "$real")" = ".include $snip" ] || fail "last line is not the .include"
[ "$(grep -cF ".include $snip" "$real")" = 1 ] || fail "not exactly one .include"
cmp -s "$real.accelcrypt-bak" "$tmp/orig.cnf" || fail "backup differs from the original"
[ "$(stat -c %a "$real")" = 640 ] || fail "mode not kept: $(stat -c %a "$real")"
providers "$cnf" | grep -q accelcrypt || { fail "openssl does not load accelcrypt after enable"; providers "$cnf"; }

echo "== enable again: nothing changes"
cp "$real" "$tmp/enabled.cnf"
expect_rc 0 "$exe" enable --openssl-cnf "$cnf" --snippet "$snip"
grep -q "already enabled" "$tmp/out" || fail "second enable does not say 'already enabled'"
cmp -s "$real" "$tmp/enabled.cnf" || fail "second enable changed the file"

echo "== disable"
expect_rc 0 "$exe" disable --openssl-cnf "$cnf" --snippet "$snip" --dry-run
grep -qF ".include $snip" "$tmp/out" || fail "disable dry run does not show the line"
cmp -s "$real" "$tmp/enabled.cnf" || fail "disable dry run changed the file"
expect_rc 0 "$exe" disable --openssl-cnf "$cnf" --snippet "$snip"
grep -q "^disabled: " "$tmp/out" || fail "no 'disabled' message"
cmp -s "$real" "$tmp/orig.cnf" || { fail "disable did not restore the original bytes"; diff "$tmp/orig.cnf" "$real" || true; }
cmp -s "$real.accelcrypt-bak" "$tmp/enabled.cnf" || fail "disable's backup is not the enabled file"
if providers "$cnf" | grep -q accelcrypt; then fail "provider still loaded after disable"; fi
expect_rc 0 "$exe" disable --openssl-cnf "$cnf" --snippet "$snip"
grep -q "not enabled" "$tmp/out" || fail "second disable does not say 'not enabled'"
cmp -s "$real" "$tmp/orig.cnf" || fail "second disable changed the file"

echo "== a file without a final newline round-trips"
printf 'openssl_conf = openssl_init\n[openssl_init]\n# no newline' > "$tmp/nonl.cnf"
cp "$tmp/nonl.cnf" "$tmp/nonl.orig"
expect_rc 0 "$exe" enable --openssl-cnf "$tmp/nonl.cnf" --snippet "$snip"
[ "$(tail -n 1 "$tmp/nonl.cnf")" = ".include $snip" ] || fail "include not on a line of its own"
expect_rc 0 "$exe" disable --openssl-cnf "$tmp/nonl.cnf" --snippet "$snip"
grep -q "# no newline" "$tmp/nonl.cnf" || fail "last line lost"
[ "$(grep -c '' "$tmp/nonl.cnf")" = 3 ] || fail "line count changed"

echo "== a file without openssl_conf: enabled, with a warning"
printf '[foo]\nx = 1\n' > "$tmp/plain.cnf"
expect_rc 0 "$exe" enable --openssl-cnf "$tmp/plain.cnf" --snippet "$snip"
grep -q "warning: .*openssl_conf = openssl_init" "$tmp/out" || fail "no warning about openssl_conf"

echo "== errors leave the file alone"
cp "$tmp/orig.cnf" "$tmp/e.cnf"
expect_rc 3 "$exe" enable --openssl-cnf "$tmp/e.cnf" --snippet "$tmp/missing.cnf"
grep -q "missing.cnf does not exist" "$tmp/out" || fail "no message for a missing snippet"
cmp -s "$tmp/e.cnf" "$tmp/orig.cnf" || fail "failed enable changed the file"
[ ! -e "$tmp/e.cnf.accelcrypt-bak" ] || fail "failed enable wrote a backup"
expect_rc 3 "$exe" enable --openssl-cnf "$tmp/nonexistent.cnf" --snippet "$snip"
grep -q "nonexistent.cnf" "$tmp/out" || fail "no message naming the missing openssl.cnf"
expect_rc 3 "$exe" disable --openssl-cnf "$tmp/etc" --snippet "$snip"
grep -q "not a regular file" "$tmp/out" || fail "no message for a directory"
if ls "$tmp"/*.tmp.* "$tmp"/etc/*.tmp.* >/dev/null 2>&1; then
  fail "temporary files left behind"
fi
expect_rc 2 "$exe" enable --no-such-option

[ "$fails" = 0 ] && echo "enable/disable: all checks passed"
exit $((fails > 0))
