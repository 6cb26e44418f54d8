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
#   narrow     issue 30: `calibrate --config` with `backends = pkcs11,
#              software` (a SoftHSMv2 token) while the system configuration
#              also loads x86: calibrate warns naming x86, and in another
#              process (`openssl speed -evp aes-128-gcm` through the
#              provider, the system configuration reading that file) AES-GCM
#              is still served by x86; `list` calls the file partial
#   checked    issue 29: a calibration that changes a route (failing.so,
#              declared first, against software, route_margin_pct = 0) is
#              timed through the provider: the file holds the figures
#              (declared, calibrated, default) of every cell, and the
#              algorithm keeps the declared route exactly when the measured
#              one lost somewhere or won nowhere; `list` agrees
#   routing_checks.sh narrow|checked ACCELCRYPT_BIN BACKEND_DIR
#              PROVIDER_MODULE TEST_BACKEND_DIR
# Exit 77 = skipped, with the reason printed.
set -euo pipefail

check=$1
cli=$2
backend_dir=$3
module=${4:-}
test_backend_dir=${5:-}
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
  # Algorithms the provider check kept on the declared route are not
  # covered.
  covers=$(python3 -c 'import json,sys; print(3 - len(json.load(open(sys.argv[1])).get("declared", [])))' "$tmp/cal.json")
  grep -q "calibration $tmp/cal.json covers $covers algorithms" "$tmp/list.txt" ||
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
        # than the margin (3 %); or declared, where the provider check
        # found the measured route slower as applications call it.
        route = routing["routes"][name][op][bucket]
        if key.split("/")[0] in cal.get("declared", []):
            assert route["why"] in ("declared", "priority"), (key, bucket, route)
            continue
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
  # interpose = wins (the default) does not offer AES-128-CTR when the
  # calibration puts the pass-through software backend first: OpenSSL's
  # default provider serves it and accelcrypt counts nothing; interpose =
  # all routes it through the provider to the software backend.
  printf '[accelcrypt]\nbackend_dir = %s\nbackends = x86, software\npolicy = fastest\ncalibration_file = %s\ninterpose = all\n' \
    "$backend_dir" "$tmp/cal.json" > "$tmp/fastest-all.cnf"
  for run in software x86 software-all; do
    fastest=${run%-all} want=$fastest conf=$tmp/fastest.cnf
    case $run in
      software) want= ;;
      software-all) conf=$tmp/fastest-all.cnf ;;
    esac
    python3 - "$tmp/cal.json" "$fastest" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c.pop("declared", None)  # the provider check's verdict: the cells decide here
for op in ("encrypt", "decrypt"):
    for bucket, cells in c["algorithms"]["aes-128-ctr/" + op].items():
        for backend in cells:
            cells[backend] = 1.0 if backend == sys.argv[2] else 1000.0
json.dump(c, open(sys.argv[1], "w"))
PY
    rm -rf "$tmp/stats"; mkdir -p "$tmp/stats"
    ACCELCRYPT_CONF=$conf OPENSSL_CONF=$tmp/accelcrypt.cnf ACCELCRYPT_STATS_DIR=$tmp/stats openssl enc -aes-128-ctr \
      -K 000102030405060708090a0b0c0d0e0f -iv 0f0e0d0c0b0a09080706050403020100 \
      -in "$tmp/plain" -out "$tmp/out" || fail "openssl enc through accelcrypt failed"
    cmp -s "$tmp/ref" "$tmp/out" || fail "output differs from the default provider's ($run)"
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
    [ "$got" = "$want" ] || fail "$run: calibration says $fastest is fastest, but AES-128-CTR was served by '${got:-nothing}' (want '${want:-nothing}')"
  done
  pass "openssl enc through the provider follows the calibration (software: left to the default provider, or served with interpose = all; x86)"
  ;;
narrow)
  [ -f "$module" ] || fail "provider module $module missing"
  [ -f "$backend_dir/x86.so" ] || { echo "SKIP: no x86 backend built"; exit 77; }
  [ -f "$backend_dir/pkcs11.so" ] || { echo "SKIP: no PKCS#11 client backend built"; exit 77; }
  hsm=/usr/lib/softhsm/libsofthsm2.so
  [ -r "$hsm" ] || { echo "SKIP: SoftHSMv2 ($hsm) not installed"; exit 77; }
  command -v softhsm2-util > /dev/null || { echo "SKIP: softhsm2-util not installed"; exit 77; }
  mkdir -p "$tmp/tokens" "$tmp/state" "$tmp/stats"
  printf 'directories.tokendir = %s\nobjectstore.backend = file\nlog.level = ERROR\n' \
    "$tmp/tokens" > "$tmp/softhsm2.conf"
  export SOFTHSM2_CONF=$tmp/softhsm2.conf
  softhsm2-util --init-token --free --label calib --so-pin 0000 --pin 1234 > /dev/null ||
    fail "SoftHSMv2 token init"
  printf '1234\n' > "$tmp/pin"; chmod 600 "$tmp/pin"
  # The token setup as docs/sysadmin.md gave it (pkcs11, software), and the
  # system configuration every process reads: every backend found, the
  # calibration file the narrow run writes.
  printf '[accelcrypt]\nbackend_dir = %s\nbackends = pkcs11, software\npkcs11.module = %s\npkcs11.token_label = calib\npkcs11.pin_file = %s\npkcs11.pin_state_dir = %s\n' \
    "$backend_dir" "$hsm" "$tmp/pin" "$tmp/state" > "$tmp/token.cnf"
  printf '[accelcrypt]\nbackend_dir = %s\ncalibration_file = %s\n' \
    "$backend_dir" "$tmp/cal.json" > "$tmp/system.cnf"
  export ACCELCRYPT_CONF=$tmp/system.cnf
  "$cli" list --json > "$tmp/list.json" || fail "list failed"
  python3 - "$tmp/list.json" <<'PY' || { echo "SKIP: the x86 backend does not serve AES-128-GCM here"; exit 77; }
import json, sys
assert json.load(open(sys.argv[1]))["routes"]["AES-128-GCM"][0] == "x86"
PY
  rc=0
  "$cli" calibrate --config "$tmp/token.cnf" --alg aes-128-gcm,rsa --pkey-sizes 2048 \
    --seconds-per-cell 0.002 -o "$tmp/cal.json" > "$tmp/out" 2> "$tmp/err" || rc=$?
  [ "$rc" -eq 0 ] || { cat "$tmp/out" "$tmp/err" >&2; fail "calibrate --config exited $rc"; }
  grep -q 'WARNING: this configuration loads pkcs11, software; the system configuration also loads x86' "$tmp/err" ||
    { cat "$tmp/err" >&2; fail "calibrate did not warn that the system configuration also loads x86"; }
  python3 - "$tmp/cal.json" <<'PY' || fail "the narrow calibration is not what this check is about"
import json, sys
cal = json.load(open(sys.argv[1]))
assert set(cal["backends"]) == {"pkcs11", "software"}, cal["backends"]
assert set(cal["algorithms"]["aes-128-gcm/encrypt"]["16384"]) == {"software"}, cal["algorithms"]
assert "pkcs11" in cal["algorithms"]["rsa/sign"]["2048"], cal["algorithms"]["rsa/sign"]
PY
  # Another process, as applications run: AES-128-GCM 16 KiB through the
  # provider, the system configuration reading the narrow calibration.
  # shellcheck source=scripts/speed_cnf.sh
  . "$(dirname "${BASH_SOURCE[0]}")/../../../scripts/speed_cnf.sh"
  accelcrypt_write_speed_cnfs "$tmp" "$module"
  OPENSSL_CONF=$tmp/accelcrypt.cnf ACCELCRYPT_STATS_DIR=$tmp/stats \
    openssl speed -evp aes-128-gcm -bytes 16384 -seconds 1 -mr > "$tmp/speed" 2>&1 ||
    { cat "$tmp/speed" >&2; fail "openssl speed through the provider failed"; }
  served=$(python3 - "$tmp/stats" <<'PY'
import glob, json, sys
seen = {}
for f in glob.glob(sys.argv[1] + "/*.json"):
    for backend, algs in json.load(open(f)).get("backends", {}).items():
        b = algs.get("AES-128-GCM", {}).get("bytes", 0)
        if b > 0:
            seen[backend] = seen.get(backend, 0) + b
print(",".join(sorted(seen)))
PY
)
  rate=$(awk -F: '/^\+F:/ {printf "%.2f GB/s", $4 / 1e9}' "$tmp/speed")
  echo "AES-128-GCM 16 KiB in another process after the narrow calibration: $rate, served by ${served:-nothing}"
  [ "$served" = x86 ] || fail "after calibrate --config with backends = pkcs11, software, AES-128-GCM was served by '${served:-nothing}', not x86"
  "$cli" list > "$tmp/list.txt" || fail "list failed"
  grep -q "^Calibration: partial ($tmp/cal.json): it did not measure x86" "$tmp/list.txt" ||
    { grep -A3 '^Calibration' "$tmp/list.txt" >&2; fail "list does not call the calibration partial, naming x86"; }
  grep -Eq '^  AES-128-GCM +encrypt +x86 +x86 +x86 +x86 +x86 +x86 +declared' "$tmp/list.txt" ||
    { grep 'AES-128-GCM' "$tmp/list.txt" >&2; fail "list does not route AES-128-GCM to x86 as declared"; }
  pass "a calibration made without x86 leaves AES-GCM on x86 in other processes ($rate), warns and is partial"
  ;;
checked)
  [ -f "$module" ] || fail "provider module $module missing"
  [ -f "$test_backend_dir/failing.so" ] || fail "failing.so missing from $test_backend_dir"
  printf '[accelcrypt]\nbackend_dir = %s:%s\nbackends = failing, software\nroute_margin_pct = 0\ncalibration_file = %s\n' \
    "$test_backend_dir" "$backend_dir" "$tmp/cal.json" > "$tmp/checked.cnf"
  export ACCELCRYPT_CONF=$tmp/checked.cnf
  rc=0
  "$cli" calibrate --alg aes-128-ctr,sha256 --seconds-per-cell 0.005 -o "$tmp/cal.json" \
    > "$tmp/out" 2> "$tmp/err" || rc=$?
  [ "$rc" -eq 0 ] || { cat "$tmp/out" "$tmp/err" >&2; fail "calibrate exited $rc"; }
  grep '^through the provider' "$tmp/err" || true
  "$cli" list --json > "$tmp/list.json" || fail "list --json failed"
  python3 - "$tmp/cal.json" "$tmp/list.json" <<'PY' || { cat "$tmp/err" >&2; fail "the provider check is missing or inconsistent"; }
import json, sys
cal = json.load(open(sys.argv[1]))
lst = json.load(open(sys.argv[2]))
declared = set(cal.get("declared", []))
tp = cal.get("through_provider", {})
checked = 0
for alg, name, keys in (("aes-128-ctr", "AES-128-CTR", ("aes-128-ctr/encrypt", "aes-128-ctr/decrypt")),
                        ("sha256", "SHA2-256", ("sha256",))):
    # Backend figures: failing.so (declared first) or software, margin 0.
    # Did they change the route? Then the provider check must have run.
    changed = any(
        min(cells, key=cells.get) != "failing"
        for k in keys for cells in cal["algorithms"][k].values())
    if not changed:
        assert alg not in declared and not any(k in tp for k in keys), (alg, tp.keys())
        continue
    checked += 1
    ratios = []
    for k in keys:
        assert sorted(map(int, tp[k])) == [16, 64, 256, 1024, 8192, 16384], (k, tp.get(k))
        for bucket, c in tp[k].items():
            assert set(c) == {"declared", "calibrated", "default"}, c
            assert all(v > 0 for v in c.values()), c
            ratios.append(c["calibrated"] / c["declared"])
    keep_measured = max(ratios) <= 1.01 and min(ratios) <= 1.0
    assert (alg in declared) == (not keep_measured), (alg, declared, ratios)
    routes = lst["routing"]["routes"][name]
    whys = {c["why"] for op in routes.values() for c in op.values()}
    if alg in declared:
        assert whys == {"declared"}, (name, routes)
        assert name in lst["calibration"]["declared"], lst["calibration"]
    else:
        assert "calibrated" in whys, (name, routes)
    print(f"{alg}: {'declared' if alg in declared else 'measured'} route kept, "
          f"measured/declared through the provider {min(ratios):.2f}..{max(ratios):.2f}")
assert checked > 0, "no route changed: nothing was checked (failing.so measured fastest everywhere?)"
PY
  pass "routes the measurements change are timed through the provider, and kept only where they win there"
  ;;
*)
  fail "unknown check '$check'"
  ;;
esac
