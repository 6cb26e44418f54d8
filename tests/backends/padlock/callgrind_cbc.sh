#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Counts the instructions the PadLock backend itself executes per 16-byte
# block at 8 KiB aligned AES-128-CBC. Method: callgrind collects only inside
# the cipher table's update function (--toggle-collect), and only the self
# cost of functions in padlock.so is summed, so the trap emulator (its own
# .so), the kernel-signal path and libc are excluded; the xcrypt instruction
# itself never executes natively. Fails when the count is 20 or more.
# Usage: callgrind_cbc.sh BENCH_BINARY WORK_DIR
set -eu
bench="$1"
work="$2"
command -v valgrind >/dev/null 2>&1 || { echo "SKIP: valgrind missing"; exit 77; }
# A sanitizer build (CI's ASan and TSan stages) cannot run under valgrind,
# and its instruction counts would not be the product's: the regular build
# runs this test.
if [ -n "${ACCELCRYPT_SANITIZED:-}" ]; then
  echo "SKIP: sanitizer build ($ACCELCRYPT_SANITIZED); counted in the regular build"
  exit 77
fi
mkdir -p "$work"
out="$work/callgrind.padlock_cbc.out"
iters=16
ACCELCRYPT_PADLOCK_EMULATOR=1 ACCELCRYPT_PADLOCK_PROFILE=nano \
  valgrind --tool=callgrind --callgrind-out-file="$out" \
    --toggle-collect='accelcrypt::padlock::(anonymous namespace)::Update*' \
    "$bench" $iters > "$work/callgrind.padlock_cbc.log" 2>&1 || {
  cat "$work/callgrind.padlock_cbc.log"; exit 1; }
# The bench makes iters + 2 update calls of 512 blocks (two check calls).
blocks=$(((iters + 2) * 512))
callgrind_annotate --auto=no --threshold=100 "$out" > "$work/callgrind.padlock_cbc.txt"
ir=$(awk '/\/padlock\.so\]/ {
            gsub(",", "", $1); if ($1 ~ /^[0-9]+$/) s += $1 }
          END { print s + 0 }' "$work/callgrind.padlock_cbc.txt")
[ "$ir" -gt 0 ] || { echo "no backend cost found"; cat "$work/callgrind.padlock_cbc.txt"; exit 1; }
per=$(awk -v a="$ir" -v b="$blocks" 'BEGIN { printf "%.2f", a / b }')
echo "backend instructions: $ir for $blocks blocks = $per per block"
awk -v a="$ir" -v b="$blocks" 'BEGIN { exit (a / b < 20) ? 0 : 1 }'
