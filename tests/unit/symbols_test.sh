#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# symbols_test.sh LIB_DIR: every shared object we ship exports only its entry
# points (STYLE.md section 7). Lists each object's defined dynamic symbols
# with `nm -D --defined-only` and compares them with an allowlist:
#   LIB_DIR/accelcrypt.so                      OSSL_provider_init
#   LIB_DIR/accelcrypt/backends/*.so           accelcrypt_backend_entry
#   LIB_DIR/accelcrypt/test-backends/*.so      accelcrypt_backend_entry
#   LIB_DIR/*pkcs11*.so (when built)           C_GetFunctionList, C_*
#   LIB_DIR/engines-3/*.so (when built)        bind_engine, v_check
#   any other LIB_DIR/*.so                     fails: give it an allowlist
# and, whatever the object, nothing from Abseil or the C++ standard library.
set -u
lib_dir=${1:?usage: symbols_test.sh LIB_DIR}
status=0
checked=0

# check FILE ALLOW_REGEX
check() {
  file=$1
  allow=$2
  if ! syms=$(nm -D --defined-only "$file" 2>&1); then
    echo "FAIL $file: nm failed: $syms"
    status=1
    return
  fi
  # Symbol names only; version nodes (e.g. "ACCELCRYPT_1") are absolute
  # symbols of type A and are not code.
  names=$(printf '%s\n' "$syms" | awk 'NF >= 3 && $2 != "A" { print $3 } NF == 2 && $1 != "A" { print $2 }' | sed 's/@.*//' | sort -u)
  bad=$(printf '%s\n' "$names" | grep -v -E "^($allow)\$" | grep -v '^$')
  leaks=$(printf '%s\n' "$names" | grep -E '(^_Z|absl)' )
  if [ -n "$bad" ] || [ -n "$leaks" ]; then
    echo "FAIL $file exports symbols outside its allowlist ($allow):"
    printf '%s\n' "$bad" "$leaks" | sort -u | sed '/^$/d; s/^/    /'
    status=1
  else
    echo "ok   $file: $(printf '%s\n' "$names" | tr '\n' ' ')"
  fi
  if [ -z "$names" ]; then
    echo "FAIL $file exports nothing (its entry point is missing)"
    status=1
  fi
  checked=$((checked + 1))
}

provider="$lib_dir/accelcrypt.so"
if [ -f "$provider" ]; then
  check "$provider" 'OSSL_provider_init'
else
  echo "FAIL $provider not built: the provider is a shipped object"
  status=1
fi
for f in "$lib_dir"/accelcrypt/backends/*.so "$lib_dir"/accelcrypt/test-backends/*.so; do
  [ -f "$f" ] || continue
  check "$f" 'accelcrypt_backend_entry'
done
for f in "$lib_dir"/engines-3/*.so; do
  [ -f "$f" ] || continue
  check "$f" '(bind_engine|v_check)'
done
# Any other shared object at the top of LIB_DIR is shipped too: the PKCS#11
# module exports the C_* functions; anything unknown must be added above.
for f in "$lib_dir"/*.so; do
  [ -f "$f" ] || continue
  case $(basename "$f") in
    accelcrypt.so) ;;
    *pkcs11*.so) check "$f" 'C_[A-Za-z]+' ;;
    *)
      echo "FAIL $f: shipped shared object with no allowlist in $0"
      status=1
      ;;
  esac
done
echo "$checked shared objects checked"
exit $status
