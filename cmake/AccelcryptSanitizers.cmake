# SPDX-License-Identifier: Apache-2.0
# Sanitizer and fuzzing builds (docs/testing.md).
#
# ACCELCRYPT_SANITIZE: a -fsanitize= list for every target of the tree, e.g.
#   "address,undefined" (CI's build-asan, GCC) or "thread" (build-tsan). The
#   flags go on compile and link lines alike, so shared objects (provider,
#   module, backends) carry the runtime dependency; a host program that is not
#   sanitized (the system's openssl, pkcs11-tool) needs the runtime preloaded
#   (scripts/ci_asan.sh). Errors are fatal (no recovery) so a finding fails
#   its test. ACCELCRYPT_SANITIZE is visible to C++ as
#   ACCELCRYPT_SANITIZE_ADDRESS / ACCELCRYPT_SANITIZE_THREAD definitions for
#   the few places that model hardware behaviour a sanitizer cannot know about
#   (the PadLock emulator's prefetch over-read).
#
# ACCELCRYPT_FUZZ: build the libFuzzer targets in tests/fuzz (needs clang;
#   scripts/fuzz.sh configures build-fuzz with it). Without it the same
#   sources build as plain corpus replayers with any compiler and run from
#   CTest (label fuzz).
set(ACCELCRYPT_SANITIZE "" CACHE STRING
    "Build everything with -fsanitize=LIST (e.g. address,undefined or thread)")
option(ACCELCRYPT_FUZZ "Build the libFuzzer targets in tests/fuzz (clang)" OFF)

if(ACCELCRYPT_SANITIZE)
  set(_accelcrypt_san_flags -fsanitize=${ACCELCRYPT_SANITIZE}
      -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_compile_options(${_accelcrypt_san_flags})
  add_link_options(${_accelcrypt_san_flags})
  if(ACCELCRYPT_SANITIZE MATCHES "address")
    add_compile_definitions(ACCELCRYPT_SANITIZE_ADDRESS=1)
  endif()
  if(ACCELCRYPT_SANITIZE MATCHES "thread")
    add_compile_definitions(ACCELCRYPT_SANITIZE_THREAD=1)
  endif()
  message(STATUS "accelcrypt: sanitizers: ${ACCELCRYPT_SANITIZE}")
endif()

# clang links no sanitizer runtime into shared objects (the executable that
# loads them brings it), so their sanitizer symbols are undefined at link
# time: -z defs (cmake/AccelcryptHelpers.cmake) cannot hold. GCC links the
# runtime into each shared object and keeps it.
if((ACCELCRYPT_SANITIZE OR ACCELCRYPT_FUZZ) AND
   CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  set(ACCELCRYPT_LD_Z_DEFS OFF CACHE INTERNAL "-z defs off: clang sanitizers")
endif()

if(ACCELCRYPT_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "ACCELCRYPT_FUZZ needs clang (libFuzzer); "
                        "configure with -DCMAKE_CXX_COMPILER=clang++")
  endif()
  # Coverage instrumentation for everything the targets link (the core, the
  # provider and module objects); the -fsanitize=fuzzer main only on the
  # fuzz executables (tests/fuzz/CMakeLists.txt).
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

# accelcrypt_sanitizer_source_fixes(): per-file adjustments for sanitizer
# builds, called from the top CMakeLists.txt once every directory is known.
# GCC 12 with -fsanitize=address reports -Wmaybe-uninitialized inside
# libstdc++'s <regex> (std::function moved out of a _State in
# regex_automaton.h's _M_insert_subexpr_begin/end, a false positive of the
# instrumented code: GCC bug 105562's family); -Werror would make it fatal.
# Only that warning, only in the files that instantiate std::regex, only
# in GCC sanitizer builds.
function(accelcrypt_sanitizer_source_fixes)
  if(NOT ACCELCRYPT_SANITIZE OR NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    return()
  endif()
  # Every file that includes <regex> (grep -l '<regex>'): a new one that
  # is missing here fails the ASan build loudly, as config_test.cc did.
  # The property is per directory that builds the file: the client
  # backend's tests are compiled a second time in tests/pkcs11.
  foreach(_entry IN ITEMS "core/vector_runner.cc:core"
                          "tests/unit/core/config_test.cc:tests/unit/core"
                          "tests/backends/pkcs11/pkcs11_client_fixture.cc:tests/backends/pkcs11"
                          "tests/backends/pkcs11/pkcs11_client_fixture.cc:tests/pkcs11/client_backend")
    string(REPLACE ":" ";" _pair "${_entry}")
    list(GET _pair 0 _file)
    list(GET _pair 1 _dir)
    set_source_files_properties("${PROJECT_SOURCE_DIR}/${_file}"
      DIRECTORY "${PROJECT_SOURCE_DIR}/${_dir}"
      PROPERTIES COMPILE_OPTIONS "-Wno-maybe-uninitialized")
  endforeach()
endfunction()
