#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Smoke run of p11_bench (tiny time budget, one round): it completes, prints
# a row per case with a number in both module columns and a ratio, and its
# --json output parses with both modules in every case. Times are not
# checked (that is the benchmark's job, on a quiet machine).
#   p11_bench_smoke.sh P11_BENCH ACCELCRYPT_MODULE SOFTHSM_MODULE
set -euo pipefail
bench=$1 accelcrypt=$2 softhsm=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/accelcrypt-p11-bench-smoke.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

[ -f "$accelcrypt" ] || fail "module $accelcrypt not built"
args=(--accelcrypt "$accelcrypt" --softhsm "$softhsm" --seconds 0.01 --rounds 1)

echo "\$ $bench ${args[*]}"
rc=0
"$bench" "${args[@]}" > "$tmp/table" 2>&1 || rc=$?
cat "$tmp/table"
[ "$rc" -eq 0 ] || fail "p11_bench exited $rc"
grep -Eq '^case \(ops/s\) +accelcrypt +softhsm2 +ratio' "$tmp/table" || fail "no header with both columns"
for row in "C_Encrypt AES-128-CBC 16 B" "C_Encrypt AES-128-CBC 1 KiB" \
           "C_Encrypt AES-128-CBC 8 KiB" "C_Digest SHA-256 16 B" \
           "C_Digest SHA-256 1 KiB" "C_Digest SHA-256 8 KiB" \
           "C_Sign SHA256-RSA-PKCS 2048" "C_GenerateRandom 32 B" \
           "C_Sign RSA-2048, 1 thread" "C_Sign RSA-2048, 2 threads"; do
  grep -Eq "^$row +[1-9][0-9]* +[1-9][0-9]* +[0-9.]+x" "$tmp/table" ||
    fail "row '$row' lacks two non-zero ops/s columns and a ratio"
done
grep -Eq '^RSA-2048 sign 2 threads / 1 +[0-9.]+x +[0-9.]+x' "$tmp/table" ||
  fail "no 2-thread scaling row"

echo "\$ $bench ${args[*]} --only sha-256/16 --json"
"$bench" "${args[@]}" --only sha-256/16 --json > "$tmp/json" || fail "--json run failed"
cat "$tmp/json"
if command -v python3 > /dev/null; then
  python3 - "$tmp/json" <<'PY' || fail "--json output is not what it should be"
import json, sys
d = json.load(open(sys.argv[1]))
assert [c["case"] for c in d["cases"]] == ["sha-256/16"], d["cases"]
for c in d["cases"]:
    for m in ("accelcrypt", "softhsm2"):
        assert c[m]["median"] > 0 and len(c[m]["ops_per_s_rounds"]) == 1, c
    assert c["ratio"] > 0
PY
else
  grep -q '"accelcrypt"' "$tmp/json" && grep -q '"softhsm2"' "$tmp/json" || fail "--json lacks a module"
fi

# Usage errors exit 2.
rc=0
"$bench" --rounds 0 > /dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "--rounds 0 exited $rc, expected 2"
echo "PASS: p11_bench smoke"
