# SPDX-License-Identifier: Apache-2.0
# CMake toolchain file for the big-endian test build (scripts/cross_s390x.sh):
# Debian 12's s390x cross compiler and an s390x sysroot, both unpacked from
# the archive's packages into one private root (never installed on the
# host), with test binaries run under qemu-user.
#
#   ACCELCRYPT_CROSS_ROOT  the unpacked root (required): the cross compiler
#                          under usr/bin, the :s390x libraries and headers
#   ACCELCRYPT_CROSS_BIN   directory of the compiler wrappers that
#                          scripts/cross_s390x.sh writes (they add --sysroot
#                          and find the cross binutils' private libraries)
# The root doubles as the sysroot: the cross compiler's own prefix-relative
# paths (usr/lib/gcc-cross, usr/s390x-linux-gnu) and the sysroot-relative
# multiarch ones (usr/include/s390x-linux-gnu) both land inside it.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR s390x)
set(CMAKE_LIBRARY_ARCHITECTURE s390x-linux-gnu)

if(NOT ACCELCRYPT_CROSS_ROOT OR NOT ACCELCRYPT_CROSS_BIN)
  message(FATAL_ERROR "s390x-linux-gnu.cmake: set ACCELCRYPT_CROSS_ROOT and "
                      "ACCELCRYPT_CROSS_BIN (scripts/cross_s390x.sh does)")
endif()
# try_compile projects see these too.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES ACCELCRYPT_CROSS_ROOT
     ACCELCRYPT_CROSS_BIN)

set(CMAKE_SYSROOT "${ACCELCRYPT_CROSS_ROOT}")
set(CMAKE_C_COMPILER "${ACCELCRYPT_CROSS_BIN}/s390x-linux-gnu-gcc")
set(CMAKE_CXX_COMPILER "${ACCELCRYPT_CROSS_BIN}/s390x-linux-gnu-g++")
set(CMAKE_ASM_COMPILER "${ACCELCRYPT_CROSS_BIN}/s390x-linux-gnu-gcc")
set(CMAKE_AR "${ACCELCRYPT_CROSS_BIN}/s390x-linux-gnu-ar")
set(CMAKE_RANLIB "${ACCELCRYPT_CROSS_BIN}/s390x-linux-gnu-ranlib")
set(CMAKE_STRIP "${ACCELCRYPT_CROSS_BIN}/s390x-linux-gnu-strip")

# Libraries, headers and CMake packages from the sysroot only; programs
# (openssl, pkg-config) from the host.
set(CMAKE_FIND_ROOT_PATH "${ACCELCRYPT_CROSS_ROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# Test binaries (and gtest_discover_tests' listing) run under qemu-user,
# with the root as the target's file system prefix (its ld64.so.1 and libs).
find_program(ACCELCRYPT_QEMU_S390X qemu-s390x REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR "${ACCELCRYPT_QEMU_S390X};-L;${ACCELCRYPT_CROSS_ROOT}")
