# SPDX-License-Identifier: Apache-2.0
# Developer convenience until tests/CMakeLists.txt adds tests/padlock:
#   cmake -S . -B build-padlock \
#     -DCMAKE_PROJECT_INCLUDE=$PWD/tests/padlock/dev_hook.cmake
# adds this folder at the end of the top-level CMakeLists.txt.
cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL
  _accelcrypt_padlock_dev_hook)
function(_accelcrypt_padlock_dev_hook)
  if(TARGET accelcrypt_backend_padlock AND NOT TARGET padlock_emu)
    include("${CMAKE_SOURCE_DIR}/tests/padlock/CMakeLists.txt")
  endif()
endfunction()
