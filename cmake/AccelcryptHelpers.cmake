# SPDX-License-Identifier: Apache-2.0
# The linker's symbol-scope controls, probed once: GNU ld / gold / lld take a
# version script and --exclude-libs; Solaris ld takes a mapfile (-M) whose
# `local: *` scope covers the archives' symbols too, so it needs no
# --exclude-libs. Anything else links without scope control, with a warning.
# (Not in script mode: tests include this file to check the mapfile writer.)
if(NOT CMAKE_SCRIPT_MODE_FILE)
  include(CheckLinkerFlag)
  set(_accelcrypt_probe_map "${CMAKE_BINARY_DIR}/CMakeFiles/accelcrypt_probe.map")
  file(WRITE "${_accelcrypt_probe_map}" "{ local: *; };\n")
  set(_accelcrypt_probe_mapfile "${CMAKE_BINARY_DIR}/CMakeFiles/accelcrypt_probe.mapfile")
  file(WRITE "${_accelcrypt_probe_mapfile}"
       "$mapfile_version 2\nSYMBOL_SCOPE {\n  local: *;\n};\n")
  check_linker_flag(CXX "LINKER:--version-script=${_accelcrypt_probe_map}"
                    ACCELCRYPT_LD_VERSION_SCRIPT)
  check_linker_flag(CXX "LINKER:--exclude-libs,ALL" ACCELCRYPT_LD_EXCLUDE_LIBS)
  check_linker_flag(CXX "LINKER:-z,defs" ACCELCRYPT_LD_Z_DEFS)
  if(NOT ACCELCRYPT_LD_VERSION_SCRIPT)
    check_linker_flag(CXX "LINKER:-M,${_accelcrypt_probe_mapfile}"
                      ACCELCRYPT_LD_MAPFILE)
  endif()
  if(NOT ACCELCRYPT_LD_VERSION_SCRIPT AND NOT ACCELCRYPT_LD_MAPFILE)
    message(WARNING "accelcrypt: the linker takes neither a version script "
                    "nor a Solaris mapfile; shared objects export every symbol")
  endif()
endif()

# The PKCS#11 v2.40 function names, for Solaris mapfiles, which take no
# wildcard in a global scope (pkcs11.map says `C_*`).
set(ACCELCRYPT_PKCS11_FUNCTIONS
  C_Initialize C_Finalize C_GetInfo C_GetFunctionList C_GetSlotList
  C_GetSlotInfo C_GetTokenInfo C_GetMechanismList C_GetMechanismInfo
  C_InitToken C_InitPIN C_SetPIN C_OpenSession C_CloseSession
  C_CloseAllSessions C_GetSessionInfo C_GetOperationState
  C_SetOperationState C_Login C_Logout C_CreateObject C_CopyObject
  C_DestroyObject C_GetObjectSize C_GetAttributeValue C_SetAttributeValue
  C_FindObjectsInit C_FindObjects C_FindObjectsFinal C_EncryptInit
  C_Encrypt C_EncryptUpdate C_EncryptFinal C_DecryptInit C_Decrypt
  C_DecryptUpdate C_DecryptFinal C_DigestInit C_Digest C_DigestUpdate
  C_DigestKey C_DigestFinal C_SignInit C_Sign C_SignUpdate C_SignFinal
  C_SignRecoverInit C_SignRecover C_VerifyInit C_Verify C_VerifyUpdate
  C_VerifyFinal C_VerifyRecoverInit C_VerifyRecover C_DigestEncryptUpdate
  C_DecryptDigestUpdate C_SignEncryptUpdate C_DecryptVerifyUpdate
  C_GenerateKey C_GenerateKeyPair C_WrapKey C_UnwrapKey C_DeriveKey
  C_SeedRandom C_GenerateRandom C_GetFunctionStatus C_CancelFunction
  C_WaitForSlotEvent)

# accelcrypt_solaris_mapfile(VERSION_SCRIPT OUT): writes the Solaris ld
# (mapfile version 2) equivalent of a GNU version script of the form
# `{ global: a; b; local: *; };`, expanding `C_*` to the PKCS#11 functions.
function(accelcrypt_solaris_mapfile script out)
  file(READ "${script}" _text)
  string(REGEX REPLACE "/\\*([^*]|\\*+[^*/])*\\*+/" "" _text "${_text}")
  string(REGEX MATCH "global:([^:]*)local:" _m "${_text}")
  if(NOT _m)
    message(FATAL_ERROR "${script}: no `global: ... local:` block")
  endif()
  string(REGEX REPLACE "global:|local:|[ \t\r\n]" "" _globals "${_m}")
  string(REPLACE ";" " " _globals "${_globals}")
  separate_arguments(_globals UNIX_COMMAND "${_globals}")
  set(_lines "")
  foreach(_sym IN LISTS _globals)
    if(_sym STREQUAL "C_*")
      foreach(_f IN LISTS ACCELCRYPT_PKCS11_FUNCTIONS)
        string(APPEND _lines "    ${_f};\n")
      endforeach()
    elseif(_sym MATCHES "[*?]")
      message(FATAL_ERROR "${script}: Solaris mapfiles take no wildcard: ${_sym}")
    else()
      string(APPEND _lines "    ${_sym};\n")
    endif()
  endforeach()
  file(WRITE "${out}" "# Generated from ${script}\n$mapfile_version 2\n"
       "SYMBOL_SCOPE {\n  global:\n${_lines}  local:\n    *;\n};\n")
endfunction()

# accelcrypt_shared_object(TARGET VERSION_SCRIPT): the link rules every shared
# object we ship follows (STYLE.md §7): no undefined symbols, nothing from the
# static libraries we link leaks out, only the version script's symbols are
# exported. Solaris ld gets the mapfile made from the version script.
function(accelcrypt_shared_object target version_script)
  if(ACCELCRYPT_LD_Z_DEFS)
    target_link_options(${target} PRIVATE "LINKER:-z,defs")
  endif()
  if(ACCELCRYPT_LD_VERSION_SCRIPT)
    if(ACCELCRYPT_LD_EXCLUDE_LIBS)
      target_link_options(${target} PRIVATE "LINKER:--exclude-libs,ALL")
    endif()
    target_link_options(${target} PRIVATE "LINKER:--version-script=${version_script}")
    set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${version_script})
  elseif(ACCELCRYPT_LD_MAPFILE)
    get_filename_component(_name "${version_script}" NAME_WE)
    set(_mapfile "${CMAKE_CURRENT_BINARY_DIR}/${_name}.mapfile")
    accelcrypt_solaris_mapfile("${version_script}" "${_mapfile}")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${version_script}")
    target_link_options(${target} PRIVATE "LINKER:-M,${_mapfile}")
    set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${_mapfile})
  endif()
  if(ACCELCRYPT_STATIC_CXX_RUNTIME)
    target_link_options(${target} PRIVATE -static-libstdc++ -static-libgcc)
  endif()
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
