#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Checks that the PadLock backend module really contains the PadLock
# instructions (real inline asm, not a software stand-in): every xcrypt
# form, xsha1, xsha256, the xsha512 bytes (F3 0F A6 E0, which objdump 2.40
# prints as "(bad)") and xstore.
set -eu
so="$1"
command -v objdump >/dev/null 2>&1 || { echo "SKIP: objdump missing"; exit 77; }
dis=$(objdump -d --no-show-raw-insn "$so")
raw=$(objdump -d "$so")
fail=0
for insn in xcrypt-ecb xcrypt-cbc xcrypt-ctr xcrypt-cfb xcrypt-ofb xsha1 xsha256 xstore-rng; do
  n=$(printf '%s\n' "$dis" | grep -c -- "$insn" || true)
  if [ "$n" -eq 0 ]; then
    echo "MISSING: $insn"; fail=1
  else
    echo "found $insn x$n"
  fi
done
# objdump decodes F3 0F A6 as "(bad)" and starts the next line at E0.
if printf '%s\n' "$raw" | awk -F'\t' '
    prev && $2 ~ /^e0 / { found = 1 }
    { prev = ($2 ~ /^f3 0f a6 *$/) }
    END { exit found ? 0 : 1 }'; then
  echo "found xsha512 bytes f3 0f a6 e0"
else
  echo "MISSING: xsha512 bytes"; fail=1
fi
exit $fail
