#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Integration checks of the built `accelcrypt` tool against the real openssl
# binary and the built provider. One check per CTest test:
#   cli_checks.sh CHECK ACCELCRYPT_BINARY PROVIDER_MODULE VECTOR_DIR
#   (load_events also takes TEST_BACKEND_DIR, where failing.so is built)
# CHECK: help | list | load_events | broken_backend | first_use_selftest | bad_config | selftest | config | trace | stats
#   (broken_backend also takes TEST_BACKEND_DIR)
# Exit 77 = skipped (CTest SKIP_RETURN_CODE), with the reason printed.
set -euo pipefail

check=$1
cli=$2
module=$3
vectors=$4
tmp=$(mktemp -d "${TMPDIR:-/tmp}/accelcrypt-cli-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# shellcheck source=tests/integration/expect.sh
. "$(dirname "${BASH_SOURCE[0]}")/../expect.sh"

[ -x "$cli" ] || fail "accelcrypt binary $cli missing"
cli=$(cd "$(dirname "$cli")" && pwd)/$(basename "$cli")
if [ -f "$module" ]; then
  module=$(cd "$(dirname "$module")" && pwd)/$(basename "$module")
fi

case "$check" in
help)
  expect_rc 0 "$cli" --help
  for sub in list selftest config trace stats bench pin-status pin-reset; do
    expect_out "^  $sub " "top-level help lists $sub"
  done
  expect_out "Exit codes" "top-level help documents exit codes"
  for sub in list selftest config trace stats bench pin-status pin-reset; do
    expect_rc 0 "$cli" "$sub" --help
    expect_out "Usage: .*$sub" "$sub --help usage line"
  done
  expect_rc 0 "$cli" --version
  expect_out "^accelcrypt [0-9]+\.[0-9]+\.[0-9]+" "--version"
  expect_rc 2 "$cli"
  expect_rc 2 "$cli" list --no-such-option
  expect_rc 2 "$cli" selftest --vectors /nonexistent/dir
  expect_rc 2 "$cli" bench --rounds 0
  expect_rc 0 "$cli" bench --help
  expect_out "^  --rounds " "bench --help lists --rounds"
  pass "help, version and usage errors"
  ;;

list)
  expect_rc 0 "$cli" list
  expect_out "^  software [^ ]+  \[software\]  from built-in" "software backend line"
  expect_out "AES-128-CBC +streaming" "software capability row"
  expect_out "^  AES-128-CBC +([a-z0-9_]+, )*software" "routing row for AES-128-CBC"
  expect_out "^Load events" "load events section"
  expect_out "^  rdseed +(yes|no|present)" "CPUID feature rdseed"
  expect_rc 0 "$cli" list --json
  expect_out '"name": "software"' "JSON backend name"
  expect_out '"AES-128-CBC": \[' "JSON routes"
  expect_out '"rdseed": \{' "JSON cpu features"
  # Restricting to a backend that does not exist leaves nothing loaded.
  expect_rc 1 "$cli" list --backends no-such-backend
  pass "list (text and JSON)"
  ;;

load_events)
  test_backends=${5:-}
  if [ ! -f "$test_backends/failing.so" ]; then
    echo "skip: test backend failing.so not built in '$test_backends'"
    exit 77
  fi
  # failing.so loads (it claims hardware) and is routed first...
  expect_rc 0 "$cli" list --backend-dir "$test_backends"
  expect_out "^  failing [^ ]+  \[hardware\]  from .*failing.so" "failing backend listed as hardware"
  expect_out "^  AES-128-CBC +failing, software" "hardware routed before software"
  # ...and when its init declines, list reports the event with the reason.
  ACCELCRYPT_FAILING_FAIL_INIT=1 expect_rc 0 "$cli" list --backend-dir "$test_backends"
  expect_out "^  declined +.*failing.so +- +.*" "declined backend in load events"
  # A backend the configuration keeps out is "excluded", not a failure.
  expect_rc 0 "$cli" list --backends software --backend-dir "$test_backends"
  expect_out "^  excluded +failing +- +not loaded: excluded by configuration" "excluded backend labelled as such"
  reject_out "^  FAILED " "nothing FAILED when a backend is only excluded"
  expect_rc 0 "$cli" list --json --backends software --backend-dir "$test_backends"
  expect_out '"result": "excluded"' "JSON load event result"
  ACCELCRYPT_FAILING_FAIL_INIT=1 expect_rc 0 "$cli" list --backend-dir "$test_backends"
  grep -q "^  failing " "$tmp/out" && fail "a declined backend must not be listed as loaded"
  expect_out "^  AES-128-CBC +software$" "only software routed after the decline"
  ACCELCRYPT_FAILING_FAIL_INIT=1 expect_rc 0 "$cli" list --json --backend-dir "$test_backends"
  expect_out '"ok": false' "JSON load event"
  pass "load events (failing.so loaded, then declined)"
  ;;

broken_backend)
  # Broken files in the backend directory are refused before dlopen (a
  # truncated module used to kill every OpenSSL program with SIGBUS), listed
  # with the reason, and the good backends still serve.
  test_backends=${5:-}
  [ -f "$test_backends/failing.so" ] || { echo "skip: failing.so not built in '$test_backends'"; exit 77; }
  [ -f "$module" ] || fail "provider $module not built"
  mkdir -p "$tmp/be"
  cp "$test_backends/failing.so" "$tmp/be/failing.so"
  head -c 4096 "$test_backends/failing.so" > "$tmp/be/truncated.so"
  printf 'not a library\n' > "$tmp/be/text.so"
  expect_rc 0 "$cli" list --backend-dir "$tmp/be"
  expect_out "truncated.so.*not loaded: truncated" "truncated module refused with the reason"
  expect_out "text.so.*not loaded: not an ELF file" "non-ELF file refused with the reason"
  expect_out "^  failing [^ ]+  \[hardware\]" "the good module still loads"
  expect_rc 0 "$cli" config --module "$module"
  cp "$tmp/out" "$tmp/accelcrypt.cnf"
  printf 'abc' > "$tmp/msg"
  rc=0
  ACCELCRYPT_BACKEND_DIR="$tmp/be" OPENSSL_CONF="$tmp/accelcrypt.cnf" \
    openssl dgst -sha256 -r "$tmp/msg" > "$tmp/out" 2>&1 || rc=$?
  [ "$rc" -eq 0 ] || { cat "$tmp/out" >&2; fail "openssl dgst exited $rc with a truncated module in the backend directory"; }
  expect_out "^ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad " "SHA-256 of abc"
  pass "broken backend files refused, no crash"
  ;;

first_use_selftest)
  # Known-answer tests run at each algorithm's first use (selftest's
  # default): loading runs none, and a backend computing wrong answers is
  # still refused before it serves. failing.so's direct SHA digests are
  # wrong here; openssl dgst through the provider must print software's
  # correct answer and say once on stderr that failing was refused.
  test_backends=${5:-}
  [ -f "$test_backends/failing.so" ] || { echo "skip: failing.so not built in '$test_backends'"; exit 77; }
  [ -f "$module" ] || fail "provider $module not built"
  printf '[accelcrypt]\nbackends = failing, software\n' > "$tmp/ac.cnf"
  export ACCELCRYPT_CONF="$tmp/ac.cnf" ACCELCRYPT_BACKEND_DIR="$test_backends"
  export ACCELCRYPT_FAILING_DIRECT=wrong
  expect_rc 0 "$cli" list
  expect_out "^Known-answer self-tests \(selftest = first-use\): 0 passed, 0 failed, [1-9][0-9]* not run yet" "nothing tested at load"
  grep -q "FAILED +failing" "$tmp/out" && fail "a self-test failed although none ran"
  expect_out "^  SHA2-256 +failing, software" "failing routed first before its test"
  expect_rc 0 "$cli" list --selftest
  expect_out "^  FAILED +failing +SHA2-256 +disabled at first use: .*direct" "list --selftest runs and reports the test"
  expect_out "^  SHA2-256 +software$" "failing out of the SHA2-256 route after its failed test"
  expect_out "^Known-answer self-tests \(selftest = first-use\): [1-9][0-9]* passed, [1-9][0-9]* failed$" "every test ran"
  expect_rc 0 "$cli" config --module "$module"
  cp "$tmp/out" "$tmp/accelcrypt.cnf"
  printf 'abc' > "$tmp/msg"
  OPENSSL_CONF="$tmp/accelcrypt.cnf" openssl dgst -sha256 -r "$tmp/msg" > "$tmp/out" 2> "$tmp/err" ||
    { cat "$tmp/out" "$tmp/err" >&2; fail "openssl dgst failed"; }
  expect_out "^ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad " "software's SHA-256 of abc, not failing's"
  [ "$(grep -c '^accelcrypt: failing: SHA2-256 failed its known-answer test' "$tmp/err")" -eq 1 ] ||
    { cat "$tmp/err" >&2; fail "no single stderr line about the refused backend"; }
  # The same process, with selftest = load, drops it at load instead.
  printf '[accelcrypt]\nbackends = failing, software\nselftest = load\n' > "$tmp/ac.cnf"
  expect_rc 0 "$cli" list
  expect_out "^  FAILED +failing +SHA2-256 +disabled: .*direct" "selftest = load reports at load"
  unset ACCELCRYPT_CONF ACCELCRYPT_BACKEND_DIR ACCELCRYPT_FAILING_DIRECT
  pass "self-tests at first use: none at load, a wrong backend refused before it serves"
  ;;

bad_config)
  # Every configuration mistake stops the provider with one clear line on
  # stderr (soft_load keeps openssl running), and without soft_load openssl
  # names the reason instead of "reason(14)".
  [ -f "$module" ] || fail "provider $module not built"
  expect_rc 0 "$cli" config --module "$module"
  cp "$tmp/out" "$tmp/base.cnf"
  printf '[accelcrypt]\nbackends = software\n\nno_such_key = 1\n' > "$tmp/unknown.cnf"
  printf '[accelcrypt]\ndigest_replay_max = abc\n' > "$tmp/type.cnf"
  try_conf() {  # try_conf EXTRA_SECTION_LINE WANT_REGEX WHAT
    { sed '/^activate = 1$/a '"$1" "$tmp/base.cnf"; } > "$tmp/bad.cnf"
    grep -qxF -- "$1" "$tmp/bad.cnf" || fail "could not add '$1' to the config"
    OPENSSL_CONF="$tmp/bad.cnf" openssl list -providers > "$tmp/out" 2>&1 ||
      { cat "$tmp/out" >&2; fail "$3: openssl failed although soft_load = 1"; }
    grep -q '^  accelcrypt$' "$tmp/out" && { cat "$tmp/out" >&2; fail "$3: provider loaded"; }
    [ "$(grep -c '^accelcrypt: provider not loaded: ' "$tmp/out")" -eq 1 ] ||
      { cat "$tmp/out" >&2; fail "$3: no single 'provider not loaded' line on stderr"; }
    expect_out "$2" "$3"
  }
  try_conf "policy = bogus" "policy = 'bogus' is not supported" "bad policy"
  try_conf "breaker_threshold = 0" "breaker_threshold = 0 is out of range" "out-of-range value"
  try_conf "conf = $tmp/unknown.cnf" "unknown.cnf line 4: unknown key 'no_such_key'" "unknown key in conf file"
  try_conf "conf = $tmp/type.cnf" "type.cnf line 2: replay_max = 'abc' is not a number" "bad type in conf file"
  try_conf "conf = $tmp/missing.cnf" "cannot read accelcrypt config .*missing.cnf" "missing conf file"
  try_conf "conf = $tmp" "is a directory" "directory as conf"
  # Loaded by name (`-provider accelcrypt`), a failing init is an error
  # whose reason openssl can name (the strings are registered on failure).
  printf '[accelcrypt]\npolicy = bogus\n' > "$tmp/bogus.cnf"
  rc=0
  ACCELCRYPT_CONF="$tmp/bogus.cnf" OPENSSL_CONF=/dev/null openssl list -providers \
    -provider-path "$(dirname "$module")" -provider accelcrypt > "$tmp/out" 2>&1 || rc=$?
  [ "$rc" -ne 0 ] || { cat "$tmp/out" >&2; fail "loading a misconfigured provider by name succeeded"; }
  expect_out ":accelcrypt:.*:provider initialisation failed:.*bogus.cnf line 2: policy" "reason string registered"
  grep -q 'reason(14)' "$tmp/out" && { cat "$tmp/out" >&2; fail "reason printed as a number"; }
  # In the openssl.cnf section itself OpenSSL hands the provider only the
  # keys it asks for: `config --check` and `list` read the file and say what
  # the provider would never see, with the file and line.
  expect_rc 0 "$cli" config --check "$tmp/base.cnf"
  expect_out "accelcrypt section \\[accelcrypt_sect\\]" "section found"
  expect_out "^config check: 0 mistakes" "generated stanza is clean"
  { sed '/^activate = 1$/a no_such_key = 1\nPolicy = fastest\nroute.aes-128-gcm = software\nbreaker_threshold = 0' \
      "$tmp/base.cnf"; } > "$tmp/cnfbad.cnf"
  expect_rc 1 "$cli" config --check "$tmp/cnfbad.cnf"
  for want in "\\[accelcrypt_sect\\]: unknown key 'no_such_key'" \
              "key 'Policy' is not read: the provider's key is 'policy'" \
              "key 'route.aes-128-gcm' is read only from the file named by .conf =." \
              "breaker_threshold = 0 is out of range"; do
    expect_out "cnfbad.cnf line [0-9]+: .*$want" "config --check: $want"
  done
  expect_out "^config check: 4 mistakes" "four mistakes counted"
  line=$(grep -n '^no_such_key = 1$' "$tmp/cnfbad.cnf" | cut -d: -f1)
  expect_out "cnfbad.cnf line $line: " "the line of the unknown key"
  OPENSSL_CONF="$tmp/cnfbad.cnf" expect_rc 0 "$cli" list
  expect_out "^  MISTAKE .*unknown key 'no_such_key'" "list shows the openssl.cnf mistake"
  expect_rc 3 "$cli" config --check "$tmp"
  expect_out "is a directory" "config --check on a directory"
  expect_rc 2 "$cli" config "$tmp/base.cnf"
  pass "configuration mistakes reported"
  ;;

selftest)
  expect_rc 0 "$cli" selftest --vectors "$vectors"
  expect_out "^software +AES-128-CBC +[1-9][0-9]* +0 +0 +ok" "software AES-128-CBC passed"
  expect_out "^software +SHA2-256 +[1-9][0-9]* +0 +0 +ok" "software SHA2-256 passed"
  expect_out "^selftest: [1-9][0-9]* passed, 0 failed" "summary line"
  expect_rc 0 "$cli" selftest --vectors "$vectors" --json
  expect_out '"ok": true' "JSON verdict"
  # A corrupted vector must make selftest fail (exit 1) and name the file.
  mkdir -p "$tmp/vec/aes"
  src="$vectors/aes/CBCGFSbox128.rsp"
  [ -f "$src" ] || fail "$src missing"
  awk '!done && toupper($0) ~ /^CIPHERTEXT = / {
         n = index($0, "= ") + 2; c = substr($0, n, 1);
         $0 = substr($0, 1, n - 1) (c == "0" ? "1" : "0") substr($0, n + 1); done = 1 }
       { print }' "$src" > "$tmp/vec/aes/CBCGFSbox128.rsp"
  cmp -s "$src" "$tmp/vec/aes/CBCGFSbox128.rsp" && fail "could not corrupt the vector copy"
  expect_rc 1 "$cli" selftest --vectors "$tmp/vec"
  expect_out "^software +AES-128-CBC +[0-9]+ +[1-9][0-9]* +[0-9]+ +FAIL" "corrupted vector detected"
  expect_out "CBCGFSbox128" "failure names the file"
  mkdir -p "$tmp/empty"
  expect_rc 2 "$cli" selftest --vectors "$tmp/empty"
  pass "selftest (passes on the tree vectors, fails on a corrupted one)"
  ;;

config)
  [ -f "$module" ] || fail "provider $module not built"
  expect_rc 0 "$cli" config --module "$module"
  cp "$tmp/out" "$tmp/accelcrypt.cnf"
  for line in "openssl_conf = openssl_init" "default = default_sect" \
              "accelcrypt = accelcrypt_sect" "module = $module" "activate = 1" \
              "soft_load = 1" "default_properties = ?provider=accelcrypt"; do
    grep -qxF -- "$line" "$tmp/accelcrypt.cnf" || fail "config lacks '$line'"
  done
  OPENSSL_CONF="$tmp/accelcrypt.cnf" openssl list -providers > "$tmp/out" 2>&1 ||
    { cat "$tmp/out" >&2; fail "openssl rejected the generated config"; }
  expect_out "^  accelcrypt$" "accelcrypt provider listed"
  expect_out "^  default$" "default provider listed"
  [ "$(grep -c 'status: active' "$tmp/out")" -eq 2 ] || { cat "$tmp/out" >&2; fail "both providers active"; }
  # The preference works: SHA-256 is fetched from accelcrypt (interpose =
  # all: by default the provider leaves SHA-256 to the default provider,
  # whose code is as fast).
  printf '[accelcrypt]\ninterpose = all\n' > "$tmp/interpose-all.cnf"
  ACCELCRYPT_CONF="$tmp/interpose-all.cnf" OPENSSL_CONF="$tmp/accelcrypt.cnf" \
    openssl list -digest-algorithms > "$tmp/out" 2>&1
  expect_out "SHA2-256.*@ accelcrypt" "accelcrypt offers SHA2-256"
  # A relative --module is written as an absolute path (OpenSSL would look
  # for a relative one in its own modules directory).
  (cd "$(dirname "$module")" && "$cli" config --module "./$(basename "$module")") > "$tmp/out" 2>&1 ||
    fail "config with a relative --module failed"
  expect_out "^module = $module$" "relative --module made absolute"
  # The include-only snippet merges into a Debian-style openssl.cnf.
  expect_rc 0 "$cli" config --include-only --module "$module"
  cp "$tmp/out" "$tmp/snippet.cnf"
  grep -q "^openssl_conf" "$tmp/snippet.cnf" && fail "--include-only must not set openssl_conf"
  base=/etc/ssl/openssl.cnf
  if [ -f "$base" ]; then
    cp "$base" "$tmp/main.cnf"
  else
    printf 'openssl_conf = openssl_init\n[openssl_init]\nproviders = provider_sect\n[provider_sect]\ndefault = default_sect\n[default_sect]\n' > "$tmp/main.cnf"
  fi
  printf '\n.include %s\n' "$tmp/snippet.cnf" >> "$tmp/main.cnf"
  OPENSSL_CONF="$tmp/main.cnf" openssl list -providers > "$tmp/out" 2>&1 ||
    { cat "$tmp/out" >&2; fail "openssl rejected openssl.cnf + snippet"; }
  expect_out "^  accelcrypt$" "accelcrypt via .include"
  expect_out "^  default$" "default via .include"
  # soft_load: a missing module does not break OpenSSL.
  expect_rc 0 "$cli" config --module "$tmp/missing/accelcrypt.so"
  grep -v '^accelcrypt config: warning' "$tmp/out" > "$tmp/missing.cnf"
  OPENSSL_CONF="$tmp/missing.cnf" openssl dgst -sha256 "$tmp/missing.cnf" > "$tmp/out" 2>&1 ||
    { cat "$tmp/out" >&2; fail "soft_load did not keep openssl working"; }
  pass "config (full stanza and include snippet load in openssl)"
  ;;

trace)
  [ -f "$module" ] || fail "provider $module not built"
  "$cli" config --module "$module" > "$tmp/accelcrypt.cnf"
  head -c 100000 /dev/urandom > "$tmp/plain"
  key=000102030405060708090a0b0c0d0e0f
  iv=0f0e0d0c0b0a09080706050403020100
  # Software backend only, so the table must name it whatever hardware the
  # machine has (interpose = all: the provider offers its algorithms).
  printf '[accelcrypt]\nbackends = software\ninterpose = all\n' > "$tmp/software-only.cnf"
  ACCELCRYPT_CONF="$tmp/software-only.cnf" expect_rc 0 "$cli" trace \
    --conf "$tmp/accelcrypt.cnf" -o "$tmp/report" -- \
    openssl enc -aes-128-cbc -K "$key" -iv "$iv" -in "$tmp/plain" -out "$tmp/cipher"
  cp "$tmp/report" "$tmp/out"
  expect_out "^accelcrypt trace: 1 process loaded accelcrypt" "one process traced"
  # bytes >= the 100000 plaintext bytes (plus padding) went through software.
  awk '$1 == "software" && $2 == "AES-128-CBC" && $3 > 0 && $4 >= 100000 { found = 1 }
       END { exit !found }' "$tmp/report" || { cat "$tmp/report" >&2; fail "no software AES-128-CBC bytes in the trace"; }
  # With every backend loaded, the first in AES-128-CBC's routing order
  # serves it.
  "$cli" list --json > "$tmp/list.json"
  first=$(awk '/"routes"/ { r = 1 } r && !done && /"AES-128-CBC": \[/ { getline; gsub(/[ ",]/, ""); print; done = 1 }' "$tmp/list.json")
  [ -n "$first" ] || fail "no route for AES-128-CBC in list --json"
  expect_rc 0 "$cli" trace --conf "$tmp/accelcrypt.cnf" -o "$tmp/report.all" -- \
    openssl enc -aes-128-cbc -K "$key" -iv "$iv" -in "$tmp/plain" -out "$tmp/cipher.all"
  awk -v b="$first" '$1 == b && $2 == "AES-128-CBC" && $4 >= 100000 { found = 1 }
       END { exit !found }' "$tmp/report.all" || { cat "$tmp/report.all" >&2; fail "AES-128-CBC not served by $first, the first in its route"; }
  cmp -s "$tmp/cipher" "$tmp/cipher.all" || fail "$first and software disagree on the ciphertext"
  # Same ciphertext as OpenSSL's default provider alone.
  OPENSSL_CONF=/dev/null openssl enc -aes-128-cbc -K "$key" -iv "$iv" \
    -in "$tmp/plain" -out "$tmp/cipher.default"
  cmp -s "$tmp/cipher" "$tmp/cipher.default" || fail "ciphertext differs from the default provider's"
  # --json has the same cell.
  ACCELCRYPT_CONF="$tmp/software-only.cnf" expect_rc 0 "$cli" trace --json \
    --conf "$tmp/accelcrypt.cnf" -o "$tmp/report.json" -- \
    openssl dgst -sha256 "$tmp/plain"
  cp "$tmp/report.json" "$tmp/out"
  expect_out '"algorithm": "SHA2-256"' "JSON cell algorithm"
  expect_out '"backend": "software"' "JSON cell backend"
  # The command's exit code comes back; a missing command is 127.
  expect_rc 3 "$cli" trace -- sh -c 'exit 3'
  expect_rc 127 "$cli" trace -- "$tmp/no-such-command"
  # Files from several processes add up; a malformed file is reported and
  # skipped, not fatal. (The stats shape is core/stats.h's Stats::ToJson.)
  cat > "$tmp/writer.sh" <<'SH'
d=$ACCELCRYPT_STATS_DIR
echo 'not json' > "$d/accelcrypt-1-0.json"
echo '{"pid":2,"process":"a","backends":{"software":{"SHA1":{"ops":2,"bytes":100,"errors":1,"fallbacks":0}}}}' > "$d/accelcrypt-2-0.json"
echo '{"pid":3,"process":"b","backends":{"software":{"SHA1":{"ops":3,"bytes":50,"errors":0,"fallbacks":4}}}}' > "$d/accelcrypt-3-0.json"
echo '{"pid":4,"process":"c","backends":{"software":{"SHA1":{"ops":-1}}}}' > "$d/accelcrypt-4-0.json"
SH
  expect_rc 0 "$cli" trace -- sh "$tmp/writer.sh"
  expect_out "^accelcrypt trace: 2 processes loaded accelcrypt" "two valid files"
  expect_out "^software +SHA1 +5 +150 +1 +4$" "counters summed over processes"
  expect_out "malformed stats file: .*accelcrypt-1-0.json" "non-JSON file reported"
  expect_out "malformed stats file: .*accelcrypt-4-0.json.*negative" "negative counter reported"
  # Without the provider loaded, trace says so.
  : > "$tmp/empty.cnf"
  expect_rc 0 "$cli" trace --conf "$tmp/empty.cnf" -- openssl dgst -sha256 "$tmp/plain"
  expect_out "saw no accelcrypt statistics in " "no-stats message"
  if grep -q "was not loaded" "$tmp/out"; then
    fail "trace claims more than it saw"
  fi
  pass "trace (enc through software, exit codes, no-provider message)"
  ;;

stats)
  # Live statistics through the real openssl binary, configured from
  # openssl.cnf alone in a cleared environment (as nginx gives its workers),
  # into a shared root (1733) where each user gets a private directory.
  [ -f "$module" ] || fail "provider $module not built"
  root=$tmp/root
  mkdir "$root" && chmod 1733 "$root"
  "$cli" config --module "$module" |
    sed "/^soft_load = 1/a backends = software\ninterpose = all\nstats_dir = $root" > "$tmp/accelcrypt.cnf"
  mine=$root/$(id -u)
  run_ossl() { env -i PATH="$PATH" ${ACCELCRYPT_SANITIZER_ENV:-} OPENSSL_CONF="$tmp/accelcrypt.cnf" openssl "$@"; }
  head -c 300000 /dev/urandom > "$tmp/plain"
  run_ossl dgst -sha256 "$tmp/plain" > /dev/null || fail "openssl dgst through accelcrypt"
  [ -d "$mine" ] || fail "no per-user directory $mine"
  [ "$(stat -c %a "$mine")" = 700 ] || fail "$mine is not 0700"
  ls "$mine"/accelcrypt-*.json > /dev/null 2>&1 || fail "no final JSON file after a clean exit"
  if ls "$mine"/accelcrypt-*.stats > /dev/null 2>&1; then
    fail "a live file stayed after a clean exit"
  fi
  # A process that is still working shows its counts so far; killed with
  # SIGKILL it keeps them.
  mkfifo "$tmp/fifo"
  env -i PATH="$PATH" ${ACCELCRYPT_SANITIZER_ENV:-} OPENSSL_CONF="$tmp/accelcrypt.cnf" \
    openssl enc -aes-128-ctr -K 000102030405060708090a0b0c0d0e0f \
    -iv 0f0e0d0c0b0a09080706050403020100 -in "$tmp/fifo" -out /dev/null &
  enc=$!
  exec 3> "$tmp/fifo"
  head -c 1048576 /dev/zero >&3
  got=0
  for _ in $(seq 1 100); do
    "$cli" stats --json "$root" > "$tmp/live.json" 2>&1 || true
    if grep -Eq "\"pid\": $enc," "$tmp/live.json" &&
       awk -v p="$enc" '/"pid":/ { cur = $2 } /"state": "live"/ && cur == p"," { live = 1 } END { exit !live }' "$tmp/live.json"; then
      got=1; break
    fi
    sleep 0.1
  done
  [ "$got" = 1 ] || { cat "$tmp/live.json" >&2; fail "the working openssl enc (pid $enc) is not listed as running"; }
  # The table says `running` for what the file calls live (docs/sysadmin.md).
  expect_rc 0 "$cli" stats "$root"
  expect_out "^ *$enc +[0-9]+ +$(id -u) +openssl +running " "the working process's state in the table"
  sleep 0.5
  kill -9 "$enc"; wait "$enc" 2>/dev/null || true
  exec 3>&-
  expect_rc 0 "$cli" stats "$root"
  expect_out "^accelcrypt stats: $root: 2 processes \(0 running, 1 ended, 1 left without teardown\)" "summary line"
  expect_out "^ *$enc +[0-9]+ +$(id -u) +openssl +gone " "the killed process is listed as gone"
  awk -v p="$enc" '$1 == p && $8 > 0 && $9 >= 900000 { ok = 1 } END { exit !ok }' "$tmp/out" ||
    { cat "$tmp/out" >&2; fail "the killed process lost its counted bytes"; }
  expect_out "^ *software +AES-128-CTR +[0-9]+ +[0-9]{6,}" "per backend and algorithm"
  expect_out "^ *software +SHA2-256 +1 +300000 " "the clean process's digest"
  # JSON, watch, prune.
  expect_rc 0 "$cli" stats --json "$root"
  expect_out '"gone": 1' "JSON counts by state"
  expect_out '"state": "gone"' "JSON per-process state"
  expect_rc 0 "$cli" stats --watch 0.2 -n 2 "$root"
  [ "$(grep -c '^accelcrypt stats:' "$tmp/out")" = 2 ] || { cat "$tmp/out" >&2; fail "--watch -n 2 did not refresh twice"; }
  expect_out "rate" "--watch shows rates"
  expect_rc 2 "$cli" stats --watch 1 --prune "$root"
  expect_rc 0 "$cli" stats --prune "$root"
  expect_out "^pruned 2 files" "prune removes ended and gone processes' files"
  [ -z "$(ls -A "$mine")" ] || fail "prune left files: $(ls "$mine")"
  expect_rc 3 "$cli" stats "$tmp/no-such-dir"
  expect_out "no-such-dir: not a directory" "missing directory named"
  # A configured stats_dir that does not exist is said once on stderr, and
  # the command still works.
  "$cli" config --module "$module" |
    sed "/^soft_load = 1/a stats_dir = $tmp/missing" > "$tmp/missing.cnf"
  OPENSSL_CONF="$tmp/missing.cnf" openssl dgst -sha256 "$tmp/plain" > /dev/null 2> "$tmp/out" ||
    fail "a missing stats_dir broke openssl"
  expect_out "stats_dir $tmp/missing: No such file" "missing stats_dir reported"
  pass "stats (live file, SIGKILL keeps counts, per-user dir, JSON, watch, prune)"
  ;;

*)
  fail "unknown check '$check'"
  ;;
esac
