#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# CI stage: static checks, no tests run. First the formatting: every
# git-tracked *.cc, *.h and *.c file must be as clang-format 14 (the root
# .clang-format) leaves it (seconds, so it runs first). Then clang-tidy
# (the root .clang-tidy) over our own sources with the compile commands of
# a clang 14 configuration in build-lint/ (warnings as errors, clang's
# thread-safety analysis of the ABSL_GUARDED_BY annotations:
# -DACCELCRYPT_THREAD_SAFETY=ON). clang-tidy runs clang's front end on
# every file with exactly those flags, so every clang warning, the
# thread-safety ones included, is an error of this stage as it would be of
# a clang build; the tree is not compiled a second time (code generation
# and linking are the other stages' builds). Every clang-tidy finding is an
# error. A formatting failure does not stop clang-tidy; the stage fails if
# any step did. docs/testing.md, "The lint stage".
#   ACCELCRYPT_LINT_BUILD_DIR  build directory (default: build-lint/)
#   ACCELCRYPT_JOBS            parallel clang-tidy jobs (default: nproc)
#   ACCELCRYPT_LINT_FILES      extended regex: clang-tidy only the source
#                              files whose path matches (e.g. 'core/stats')
#   ACCELCRYPT_LINT_TEST_CHECKS  the clang-tidy checks for files under tests/
#                              (default: the bug-finding set in lint_tidy)
set -euo pipefail
# shellcheck source=scripts/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# shellcheck source=scripts/ci_sanitizer_env.sh
. "$ACCELCRYPT_ROOT/scripts/ci_sanitizer_env.sh"

build=${ACCELCRYPT_LINT_BUILD_DIR:-$ACCELCRYPT_ROOT/build-lint}
# Sources clang-tidy skips (extended regex on the path below the root):
# the build trees (configure-time generated files such as
# core/builtin_backends.cc) and third-party code.
skip='^(build[^/]*|third_party)/'

accelcrypt_install_deps

# lint_sources: the project's C and C++ files, NUL-separated: git's list
# when this is a git checkout git will read (a checkout owned by another
# user is refused without safe.directory), else the files below the root
# outside the build trees.
lint_sources() {
  if git -C "$ACCELCRYPT_ROOT" ls-files -z '*.cc' '*.h' '*.c' 2>/dev/null |
    grep -qz .; then
    git -C "$ACCELCRYPT_ROOT" ls-files -z '*.cc' '*.h' '*.c'
    return
  fi
  (cd "$ACCELCRYPT_ROOT" && find . \( -path './build*' -o -path './.git' \) \
    -prune -o -type f \( -name '*.cc' -o -name '*.h' -o -name '*.c' \) \
    -printf '%P\0')
}

# lint_format: clang-format --dry-run --Werror over the project's C and C++
# files; prints each place that is not formatted. Fix with
# `clang-format -i FILE`.
lint_format() {
  local n
  cd "$ACCELCRYPT_ROOT"
  n=$(lint_sources | tr -cd '\0' | wc -c)
  if [ "$n" -eq 0 ]; then
    echo "ci_lint.sh: no C or C++ sources found below $ACCELCRYPT_ROOT" >&2
    return 1
  fi
  echo "== clang-format: $n files"
  if ! lint_sources | xargs -0 -r clang-format --dry-run --Werror; then
    echo "ci_lint.sh: files not formatted as .clang-format says" \
      "(clang-format -i FILE)" >&2
    return 1
  fi
}

# lint_configure: the clang configuration whose compile_commands.json
# clang-tidy reads. No source file is generated at build time (the
# generated ones, such as core/builtin_backends.cc, are written by the
# configure step), so nothing needs to be built.
lint_configure() {
  echo "== configure: $build (clang, thread-safety analysis, warnings as errors)"
  # Build type None: no -O/-g, the flags every file is checked with are
  # the warnings.
  cmake -S "$ACCELCRYPT_ROOT" -B "$build" -G Ninja \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=None -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
    -DACCELCRYPT_WERROR=ON -DACCELCRYPT_THREAD_SAFETY=ON >/dev/null
  grep -q -e '-Werror=thread-safety' "$build/compile_commands.json" || {
    echo "ci_lint.sh: the compile commands lack -Werror=thread-safety" >&2
    return 1
  }
}

# lint_files: the project's source files from compile_commands.json, once
# each (tests/backends/pkcs11 is compiled in two directories), relative to the root.
lint_files() {
  sed -n 's/^ *"file": "\(.*\)",\{0,1\}$/\1/p' "$build/compile_commands.json" |
    sed "s|^$ACCELCRYPT_ROOT/||" | grep -v '^/' | grep -Ev "$skip" |
    grep -E "${ACCELCRYPT_LINT_FILES:-.}" | sort -u
}

lint_tidy() {
  local files log rc
  files=$(lint_files)
  if [ -z "$files" ]; then
    echo "ci_lint.sh: no source files to check" >&2
    return 1
  fi
  log="$build/clang-tidy.log"
  echo "== clang-tidy: $(wc -l <<<"$files") files (-j$(accelcrypt_jobs), log: $log)"
  cd "$ACCELCRYPT_ROOT"
  set +e
  # clang-tidy exits non-zero on any finding (every check is an error);
  # xargs then exits 123 after the remaining files ran. The product's
  # files get every check of .clang-tidy; the test programs' files (half
  # of them, compiled with -Werror in three builds of CI) the checks that
  # find bugs in test code, which cost about half: clang-tidy 14 runs each
  # check over the whole translation unit, headers included, and the
  # checks took about 60 % of a file's time (docs/testing.md, "Stage
  # times").
  local tests_checks=${ACCELCRYPT_LINT_TEST_CHECKS:-'-*,bugprone-use-after-move,bugprone-dangling-handle,bugprone-undefined-memory-manipulation,bugprone-sizeof-expression,bugprone-suspicious-memset-usage,bugprone-unused-return-value,bugprone-fold-init-type,misc-redundant-expression'}
  local rc1 rc2
  { grep -v '^tests/' <<<"$files" || true; } | tr '\n' '\0' |
    xargs -0 -r -n 1 -P "$(accelcrypt_jobs)" \
      clang-tidy -p "$build" --quiet --warnings-as-errors='*' \
      >"$log" 2>&1
  rc1=$?
  { grep '^tests/' <<<"$files" || true; } | tr '\n' '\0' |
    xargs -0 -r -n 1 -P "$(accelcrypt_jobs)" \
      clang-tidy -p "$build" --quiet --warnings-as-errors='*' \
      --checks="$tests_checks" >>"$log" 2>&1
  rc2=$?
  rc=$rc1
  [ "$rc" -ne 0 ] || rc=$rc2
  set -e
  # The findings, without clang-tidy's per-file "N warnings generated." lines.
  grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$|^Suppressed [0-9]+ warnings|^Use -header-filter|^Use -system-headers' \
    "$log" || true
  if [ "$rc" -ne 0 ]; then
    echo "ci_lint.sh: clang-tidy reported findings (exit $rc)" >&2
  fi
  return "$rc"
}

failed=()
accelcrypt_timed "clang-format" lint_format || failed+=(clang-format)
# clang-tidy needs the configuration's compile_commands.json.
if accelcrypt_timed "lint configure" lint_configure; then
  accelcrypt_timed "clang-tidy" lint_tidy || failed+=(clang-tidy)
else
  failed+=(configure)
fi
if [ ${#failed[@]} -gt 0 ]; then
  echo "ci_lint.sh: failed: ${failed[*]}" >&2
  exit 1
fi
