#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# `accelcrypt calibrate` and `accelcrypt list` under policy = fastest (and
# policy = priority pinned where the check is about the configured order),
# with the build tree's backends (software, and x86 where this CPU has
# AES-NI).
#   routing_checks.sh CHECK ACCELCRYPT_BIN BACKEND_DIR
# CHECK:
#   calibrate  writes a valid calibration file (format 2, this CPU, every
#              loaded backend's version, every bucket of both cipher
#              directions measured for every backend declaring the
#              algorithm), keeps other algorithms' entries on a filtered
#              re-run, and rejects bad options with exit 2
#   list       `list` shows policy = fastest, the note that the calibration
#              was used, per-bucket rankings equal to the file's and routes
#              within route_margin_pct of the fastest, marked calibrated; a
#              file from another CPU is refused with a note
#   provider   through the real openssl binary and the provider (PROVIDER
#              argument): with a calibration saying software is fastest for
#              AES-128-CTR, `openssl enc` is served by software although x86
#              comes first in priority order; saying x86, by x86
#   routing_checks.sh provider ACCELCRYPT_BIN BACKEND_DIR PROVIDER_MODULE
# Exit 77 = skipped, with the reason printed.
set -euo pipefail

check=$1
cli=$2
backend_dir=$3
module=${4:-}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/accelcrypt-routing-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }

[ -x "$cli" ] || fail "accelcrypt binary $cli missing"
unset ACCELCRYPT_X86_DISABLE ACCELCRYPT_BACKENDS ACCELCRYPT_BACKEND_DIR \
      ACCELCRYPT_CALIBRATION ACCELCRYPT_STATS_DIR
printf '[accelcrypt]\nbackend_dir = %s\npolicy = priority\n' "$backend_dir" > "$tmp/priority.cnf"
printf '[accelcrypt]\nbackend_dir = %s\npolicy = fastest\ncalibration_file = %s\n' \
  "$backend_dir" "$tmp/cal.json" > "$tmp/fastest.cnf"
export ACCELCRYPT_CONF=$tmp/priority.cnf
# Short cells: this checks the file, not the speeds.
algs=aes-128-ctr,aes-128-cbc,sha256

case "$check" in
calibrate)
  rc=0
  "$cli" calibrate --seconds-per-cell 0.003 --alg "$algs" -o "$tmp/cal.json" \
    > "$tmp/out" 2> "$tmp/err" || rc=$?
  [ "$rc" -eq 0 ] || { cat "$tmp/out" "$tmp/err" >&2; fail "calibrate exited $rc"; }
  grep -q '^\[100%\] SHA2-256:' "$tmp/err" || { cat "$tmp/err" >&2; fail "no progress line reaching 100%"; }
  grep -Eq '^AES-128-CTR +encrypt +16384 ' "$tmp/out" || { cat "$tmp/out" >&2; fail "no AES-128-CTR encrypt 16384 row in the table"; }
  grep -Eq '^AES-128-CBC +decrypt +16384 ' "$tmp/out" || { cat "$tmp/out" >&2; fail "no AES-128-CBC decrypt 16384 row in the table"; }
  "$cli" list --json > "$tmp/list.json" || fail "list --json failed"
  python3 - "$tmp/cal.json" "$tmp/list.json" <<'PY' || fail "calibration file is not valid"
import json, sys
cal = json.load(open(sys.argv[1]))
lst = json.load(open(sys.argv[2]))
assert cal["format"] == 2, cal.get("format")
model = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
             if l.startswith("model name"))
assert model in cal["cpu"], (model, cal["cpu"])
loaded = {b["name"]: b for b in lst["backends"]}
assert cal["backends"] == {n: b["version"] for n, b in loaded.items()}, cal["backends"]
want = {"aes-128-ctr/encrypt": "AES-128-CTR", "aes-128-ctr/decrypt": "AES-128-CTR",
        "aes-128-cbc/encrypt": "AES-128-CBC", "aes-128-cbc/decrypt": "AES-128-CBC",
        "sha256": "SHA2-256"}
assert set(cal["algorithms"]) == set(want), sorted(cal["algorithms"])
for key, name in want.items():
    declaring = {n for n, b in loaded.items()
                 if any(a["name"] == name for a in b["algorithms"])}
    assert declaring, name
    buckets = cal["algorithms"][key]
    assert sorted(map(int, buckets)) == [16, 64, 256, 1024, 8192, 16384], buckets.keys()
    for bucket, cells in buckets.items():
        assert set(cells) == declaring, (key, bucket, cells, declaring)
        for backend, ns in cells.items():
            # At least the time of one memory pass, at most a second.
            assert 0.5 < ns < 1e9, (key, bucket, backend, ns)
    # Bigger inputs cost more than small ones for every backend.
    for backend in declaring:
        assert buckets["16384"][backend] > buckets["16"][backend], (key, backend)
print("valid:", {k: sorted(v) for k, v in cal["algorithms"].items()})
PY
  # A filtered re-run replaces only its algorithm.
  before=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["algorithms"]["sha256"])' "$tmp/cal.json")
  "$cli" calibrate --seconds-per-cell 0.003 --alg aes-128-ctr -o "$tmp/cal.json" > /dev/null 2> "$tmp/err" ||
    { cat "$tmp/err" >&2; fail "filtered calibrate failed"; }
  grep -q "keeping the other algorithms" "$tmp/err" || { cat "$tmp/err" >&2; fail "filtered run did not say it keeps entries"; }
  after=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["algorithms"]["sha256"])' "$tmp/cal.json")
  [ "$before" = "$after" ] || fail "a filtered calibrate changed sha256's entries"
  # Usage errors: exit 2, nothing written.
  for bad in "--alg no-such-alg" "--alg rsa-sign" "--pkey-sizes 512" "--seconds-per-cell 0" "--seconds-per-cell x"; do
    rc=0
    # shellcheck disable=SC2086
    "$cli" calibrate $bad -o "$tmp/bad.json" > "$tmp/out" 2>&1 || rc=$?
    [ "$rc" -eq 2 ] || { cat "$tmp/out" >&2; fail "calibrate $bad exited $rc, expected 2"; }
    [ ! -e "$tmp/bad.json" ] || fail "calibrate $bad wrote a file"
  done
  # An output that cannot be written: exit 1 with a message.
  rc=0
  "$cli" calibrate --seconds-per-cell 0.001 --alg sha256 -o /proc/accelcrypt/cal.json \
    > "$tmp/out" 2>&1 || rc=$?
  [ "$rc" -eq 1 ] || { cat "$tmp/out" >&2; fail "unwritable output: exit $rc, expected 1"; }
  grep -q "cannot" "$tmp/out" || { cat "$tmp/out" >&2; fail "unwritable output: no message"; }
  pass "calibrate writes a valid file, keeps other entries, refuses bad options"
  ;;
list)
  "$cli" calibrate --seconds-per-cell 0.003 --alg "$algs" -o "$tmp/cal.json" \
    > /dev/null 2> "$tmp/err" || { cat "$tmp/err" >&2; fail "calibrate failed"; }
  ACCELCRYPT_CONF=$tmp/fastest.cnf "$cli" list > "$tmp/list.txt" || fail "list failed"
  grep -q '^Routing policy: fastest' "$tmp/list.txt" || { cat "$tmp/list.txt" >&2; fail "list does not show policy = fastest"; }
  grep -q "calibration $tmp/cal.json covers 3 algorithms" "$tmp/list.txt" ||
    { cat "$tmp/list.txt" >&2; fail "list does not say the calibration is used"; }
  grep -Eq '^  AES-128-CTR +[a-z0-9]+ +[a-z0-9]+ ' "$tmp/list.txt" ||
    { cat "$tmp/list.txt" >&2; fail "no per-size row for AES-128-CTR"; }
  ACCELCRYPT_CONF=$tmp/fastest.cnf "$cli" list --json > "$tmp/list.json" || fail "list --json failed"
  python3 - "$tmp/cal.json" "$tmp/list.json" <<'PY' || fail "list's winners differ from the file's"
import json, sys
cal = json.load(open(sys.argv[1]))
routing = json.load(open(sys.argv[2]))["routing"]
assert routing["policy"] == "fastest", routing
entries = {"aes-128-ctr/encrypt": ("AES-128-CTR", "encrypt"),
           "aes-128-ctr/decrypt": ("AES-128-CTR", "decrypt"),
           "aes-128-cbc/encrypt": ("AES-128-CBC", "encrypt"),
           "aes-128-cbc/decrypt": ("AES-128-CBC", "decrypt"),
           "sha256": ("SHA2-256", "digest")}
assert set(routing["fastest"]) == set(entries), routing["fastest"].keys()
for key, (name, op) in entries.items():
    for bucket, cells in cal["algorithms"][key].items():
        want = [b for _, b in sorted((ns, b) for b, ns in cells.items())]
        got = routing["fastest"][key][bucket]
        assert got == want, (key, bucket, got, want)
        # The route: calibrated, and no slower than the fastest by more
        # than the margin (3 %).
        route = routing["routes"][name][op][bucket]
        assert route["why"] == "calibrated", (key, bucket, route)
        assert cells[route["backend"]] <= 1.03 * min(cells.values()) + 1e-9, (key, bucket, route, cells)
print("rankings match:", {k: routing["fastest"][k]["16384"][0] for k in routing["fastest"]})
PY
  # Priority policy: the file is not read; every route is the configured
  # order (declared or priority), none calibrated.
  ACCELCRYPT_CONF=$tmp/priority.cnf "$cli" list > "$tmp/list.txt" || fail "list failed"
  grep -q '^Routing policy: priority' "$tmp/list.txt" || fail "list does not show policy = priority"
  grep -Eq '^  AES-128-CBC +decrypt +[a-z0-9]+ ' "$tmp/list.txt" || { cat "$tmp/list.txt" >&2; fail "no route row for AES-128-CBC decrypt"; }
  ACCELCRYPT_CONF=$tmp/priority.cnf "$cli" list --json > "$tmp/list.json" || fail "list --json failed"
  python3 - "$tmp/list.json" <<'PY' || fail "policy = priority routes by measurement"
import json, sys
lst = json.load(open(sys.argv[1]))
routing = lst["routing"]
assert routing["calibrated"] is False and not routing["fastest"], routing
for name, ops in routing["routes"].items():
    first = lst["routes"][name][0]
    for op, buckets in ops.items():
        for bucket, c in buckets.items():
            assert c["backend"] == first, (name, op, bucket, c, first)
            assert c["why"] in ("declared", "priority"), (name, op, bucket, c)
PY
  # Another CPU's file: refused, with the reason.
  python3 - "$tmp/cal.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c["cpu"] = "SomeOtherVendor 1/2/3 Not This CPU"
json.dump(c, open(sys.argv[1], "w"))
PY
  ACCELCRYPT_CONF=$tmp/fastest.cnf "$cli" list > "$tmp/list.txt" || fail "list failed"
  grep -q 'measured on another CPU' "$tmp/list.txt" || { cat "$tmp/list.txt" >&2; fail "foreign file not refused in list"; }
  ACCELCRYPT_CONF=$tmp/fastest.cnf "$cli" list --json > "$tmp/list.json" || fail "list --json failed"
  python3 - "$tmp/list.json" <<'PY' || fail "foreign file still routes by measurement"
import json, sys
routing = json.load(open(sys.argv[1]))["routing"]
assert routing["calibrated"] is False, routing["calibrated"]
assert not routing["fastest"], routing["fastest"]
whys = {c["why"] for ops in routing["routes"].values() for b in ops.values() for c in b.values()}
assert "calibrated" not in whys, whys
PY
  # No file: a note saying so.
  rm -f "$tmp/cal.json"
  ACCELCRYPT_CONF=$tmp/fastest.cnf "$cli" list > "$tmp/list.txt" || fail "list failed"
  grep -q 'no calibration file' "$tmp/list.txt" || { cat "$tmp/list.txt" >&2; fail "missing file has no note"; }
  pass "list shows the policy, the notes and the file's winners per size"
  ;;
provider)
  [ -f "$module" ] || fail "provider module $module missing"
  [ -f "$backend_dir/x86.so" ] || { echo "SKIP: no x86 backend built"; exit 77; }
  printf '[accelcrypt]\nbackend_dir = %s\nbackends = x86, software\npolicy = fastest\ncalibration_file = %s\n' \
    "$backend_dir" "$tmp/cal.json" > "$tmp/fastest.cnf"
  export ACCELCRYPT_CONF=$tmp/fastest.cnf
  "$cli" list > "$tmp/list.txt" 2>&1 || fail "list failed"
  grep -q '^  AES-128-CTR  *x86, software' "$tmp/list.txt" ||
    { echo "SKIP: the x86 backend does not serve AES-128-CTR here (no AES-NI?)"; exit 77; }
  # This machine's CPU signature and backend versions, from a real (short)
  # calibration; then the measurements are replaced by chosen ones.
  "$cli" calibrate --seconds-per-cell 0.001 --alg aes-128-ctr -o "$tmp/cal.json" \
    > /dev/null 2> "$tmp/err" || { cat "$tmp/err" >&2; fail "calibrate failed"; }
  # The benchmark scripts' accelcrypt.cnf: default and accelcrypt active,
  # accelcrypt preferred.
  # shellcheck source=scripts/speed_cnf.sh
  . "$(dirname "${BASH_SOURCE[0]}")/../../../scripts/speed_cnf.sh"
  accelcrypt_write_speed_cnfs "$tmp" "$module"
  head -c 3000 /dev/urandom > "$tmp/plain"
  openssl enc -aes-128-ctr -K 000102030405060708090a0b0c0d0e0f \
    -iv 0f0e0d0c0b0a09080706050403020100 -in "$tmp/plain" -out "$tmp/ref" ||
    fail "default openssl enc failed"
  for want in software x86; do
    python3 - "$tmp/cal.json" "$want" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
for op in ("encrypt", "decrypt"):
    for bucket, cells in c["algorithms"]["aes-128-ctr/" + op].items():
        for backend in cells:
            cells[backend] = 1.0 if backend == sys.argv[2] else 1000.0
json.dump(c, open(sys.argv[1], "w"))
PY
    rm -rf "$tmp/stats"; mkdir -p "$tmp/stats"
    OPENSSL_CONF=$tmp/accelcrypt.cnf ACCELCRYPT_STATS_DIR=$tmp/stats openssl enc -aes-128-ctr \
      -K 000102030405060708090a0b0c0d0e0f -iv 0f0e0d0c0b0a09080706050403020100 \
      -in "$tmp/plain" -out "$tmp/out" || fail "openssl enc through accelcrypt failed"
    cmp -s "$tmp/ref" "$tmp/out" || fail "output differs from the default provider's (want $want)"
    got=$(python3 - "$tmp/stats" <<'PY'
import glob, json, sys
seen = set()
for f in glob.glob(sys.argv[1] + "/*.json"):
    for backend, algs in json.load(open(f)).get("backends", {}).items():
        if algs.get("AES-128-CTR", {}).get("bytes", 0) > 0:
            seen.add(backend)
print(",".join(sorted(seen)))
PY
)
    [ "$got" = "$want" ] || fail "calibration says $want is fastest, but AES-128-CTR was served by '${got:-nothing}'"
  done
  pass "openssl enc through the provider follows the calibration (software, then x86)"
  ;;
*)
  fail "unknown check '$check'"
  ;;
esac
