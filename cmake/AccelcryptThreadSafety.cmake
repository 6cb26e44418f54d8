# SPDX-License-Identifier: Apache-2.0
# ACCELCRYPT_THREAD_SAFETY (option in the top CMakeLists.txt): clang's
# static thread-safety analysis of our code (STYLE.md section 7: shared
# state is guarded by absl::Mutex with ABSL_GUARDED_BY), through the
# accelcrypt_warnings target, so third-party code is not analysed. Findings
# are errors whatever ACCELCRYPT_WERROR says: the option exists to check
# the annotations. scripts/ci_lint.sh builds with it (docs/testing.md).
#
# -Wthread-safety-beta is on too (clean). -Wthread-safety-negative is not:
# it wants every function that takes a lock to declare the negative
# capability (ABSL_EXCLUSIVE_LOCKS_REQUIRED(!mu)), which then spreads to
# its callers (9 findings in 3 of the files tried: routed_pkey.cc,
# x86/rng.cc, the module's entry_points.cc), a header change each.
# libstdc++'s std::mutex carries no capability attributes, so state it
# guards cannot be checked: annotated state uses absl::Mutex or the
# PKCS#11 module's p11::Mutex (pkcs11/module/locking.h).
if(ACCELCRYPT_THREAD_SAFETY)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "ACCELCRYPT_THREAD_SAFETY needs clang; configure "
                        "with -DCMAKE_CXX_COMPILER=clang++")
  endif()
  foreach(_flag IN ITEMS -Wthread-safety -Wthread-safety-beta
                         -Werror=thread-safety -Werror=thread-safety-beta)
    target_compile_options(accelcrypt_warnings INTERFACE
                           "$<$<COMPILE_LANGUAGE:CXX>:${_flag}>")
  endforeach()
  message(STATUS "accelcrypt: thread-safety analysis on (-Wthread-safety)")
endif()
