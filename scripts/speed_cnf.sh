#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Sourced by scripts/bench.sh and scripts/callgrind_provider.sh: the two
# openssl.cnf files a side-by-side run compares.

# accelcrypt_write_speed_cnfs DIR MODULE: writes DIR/accelcrypt.cnf (the
# default provider activated, accelcrypt loaded from MODULE and preferred by
# default_properties) and DIR/default.cnf (OpenSSL's default provider only).
accelcrypt_write_speed_cnfs() {
  local dir=$1 module=$2
  cat > "$dir/accelcrypt.cnf" <<CNF
openssl_conf = openssl_init
[openssl_init]
providers = provider_sect
alg_section = algorithm_sect
[provider_sect]
default = default_sect
accelcrypt = accelcrypt_sect
[default_sect]
activate = 1
[accelcrypt_sect]
module = $module
activate = 1
[algorithm_sect]
default_properties = ?provider=accelcrypt
CNF
  cat > "$dir/default.cnf" <<CNF
openssl_conf = openssl_init
[openssl_init]
providers = provider_sect
[provider_sect]
default = default_sect
[default_sect]
activate = 1
CNF
}
