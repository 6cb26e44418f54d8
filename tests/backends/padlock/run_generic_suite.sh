#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs one of the generic parameterised suites (tests/unit) with the PadLock
# trap emulator LD_PRELOADed and ACCELCRYPT_PADLOCK_EMULATOR=1, keeping only
# the padlock instances, and fails unless at least MIN of them ran and none
# failed. Usage: run_generic_suite.sh TEST_BINARY EMU_LIBRARY PROFILE MIN
set -eu
bin="$1"; emu="$2"; profile="$3"; min="$4"
out=$(ACCELCRYPT_PADLOCK_EMULATOR=1 ACCELCRYPT_PADLOCK_PROFILE="$profile" \
      LD_PRELOAD="${ACCELCRYPT_SANITIZER_PRELOAD:+$ACCELCRYPT_SANITIZER_PRELOAD }$emu" "$bin" --gtest_filter='*padlock*' 2>&1) || {
  printf '%s\n' "$out" | tail -40; exit 1; }
ran=$(printf '%s\n' "$out" | sed -n 's/^\[==========\] \([0-9]*\) tests\{0,1\} from.*ran.*/\1/p')
printf '%s\n' "$out" | grep -E '^\[  (PASSED|SKIPPED|FAILED)' || true
echo "padlock instances run under $profile: ${ran:-0}"
[ "${ran:-0}" -ge "$min" ]
