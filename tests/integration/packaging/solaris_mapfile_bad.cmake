# SPDX-License-Identifier: Apache-2.0
# Helper of solaris_mapfile_test.cmake: converts OUT/bad.map (must fail).
include("${ROOT}/cmake/AccelcryptHelpers.cmake")
accelcrypt_solaris_mapfile("${OUT}/bad.map" "${OUT}/bad.mapfile")
