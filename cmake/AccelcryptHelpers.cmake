# SPDX-License-Identifier: Apache-2.0
# accelcrypt_shared_object(TARGET VERSION_SCRIPT): the link rules every shared
# object we ship follows (STYLE.md §7): no undefined symbols, nothing from the
# static libraries we link leaks out, only the version script's symbols are
# exported.
function(accelcrypt_shared_object target version_script)
  target_link_options(${target} PRIVATE
    -Wl,-z,defs
    -Wl,--exclude-libs,ALL
    -Wl,--version-script=${version_script})
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${version_script})
endfunction()

# accelcrypt_backend_module(TARGET NAME [TEST_ONLY]): a backend shared object
# named NAME.so in the build tree's backend directory, exporting only
# accelcrypt_backend_entry.
function(accelcrypt_backend_module target name)
  cmake_parse_arguments(ARG "TEST_ONLY" "" "" ${ARGN})
  if(ARG_TEST_ONLY)
    set(_out "${ACCELCRYPT_TEST_BACKEND_OUT}")
  else()
    set(_out "${ACCELCRYPT_BACKEND_OUT}")
    install(TARGETS ${target} LIBRARY DESTINATION "${ACCELCRYPT_INSTALL_BACKEND_DIR}")
  endif()
  set_target_properties(${target} PROPERTIES
    PREFIX "" OUTPUT_NAME "${name}" LIBRARY_OUTPUT_DIRECTORY "${_out}")
  accelcrypt_shared_object(${target} "${PROJECT_SOURCE_DIR}/core/backend.map")
  target_link_libraries(${target} PRIVATE accelcrypt::abi accelcrypt_warnings)
endfunction()
