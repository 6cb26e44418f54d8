#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The one list of Debian 12 packages accelcrypt needs to build, test, demo
# and package, and the function that installs the missing ones. Sourced by
# scripts/demo.sh and scripts/test.sh; run directly to install only.

ACCELCRYPT_DEBIAN_PACKAGES=(
  build-essential    # gcc/g++ 12, make, libc headers
  cmake              # >= 3.25
  ninja-build
  pkg-config
  libssl-dev         # OpenSSL 3.0 headers and libcrypto
  openssl            # the openssl binary the integration tests drive
  libabsl-dev        # absl::Status and friends
  libgtest-dev
  libgmock-dev
  nlohmann-json3-dev # stats JSON, `accelcrypt trace`
  libcli11-dev       # the accelcrypt command line
  dpkg-dev           # dpkg-source for `apt-get source openssl` (evp_test), cpack DEB
  valgrind
  g++-multilib       # i386 builds of the PadLock code
  qemu-user          # bigendian_s390x: runs the s390x (big-endian) test build; no binfmt needed
  softhsm2           # real PKCS#11 token for the client backend tests
  opensc             # pkcs11-tool
  p11-kit
  libp11-kit-dev
  libsqlite3-dev     # PKCS#11 module token object store
  gnutls-bin         # p11tool: lists the module's tokens and objects
  libengine-pkcs11-openssl # libp11's engine: OpenSSL signing with a key on the module's token
  debhelper          # scripts/package_deb.sh: dpkg-buildpackage of debian/ (dh, compat 13)
  lintian            # scripts/package_deb.sh: 0 errors, 0 warnings on the .debs
  cpio               # packaging_svr4 test: an independent reader of the SVR4 datastream's archives
  openssh-server     # servers test: sshd serving scp through the provider
  nginx              # servers_nginx: nginx's workers serving HTTPS through the provider (own config, random port)
  apache2            # servers_apache: Apache httpd + mod_ssl serving HTTPS through the provider
  curl               # servers_nginx/servers_apache: the TLS client (built against OpenSSL)
  iproute2           # ss: the web server tests find a free port and the listening pid
  clang              # scripts/fuzz.sh, CI's fuzz stage: libFuzzer targets (clang 14)
  libclang-rt-14-dev # libFuzzer and the clang sanitizer runtimes
  llvm               # llvm-symbolizer: sanitizer reports with file:line
  clang-tidy         # scripts/ci_lint.sh, CI's lint stage (clang-tidy 14)
  clang-format       # scripts/ci_lint.sh: the tree is as .clang-format leaves it (clang-format 14)
)

# accelcrypt_as_root CMD...: runs CMD as root (directly when already root,
# else through sudo).
accelcrypt_as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    echo "accelcrypt: need root to run: $* (and sudo is not installed)" >&2
    return 1
  fi
}

# accelcrypt_missing_packages: prints the packages of the list that are not
# installed, one per line.
accelcrypt_missing_packages() {
  local pkg status
  for pkg in "${ACCELCRYPT_DEBIAN_PACKAGES[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    case "$status" in
      *"install ok installed"*) ;;
      *) echo "$pkg" ;;
    esac
  done
}

# accelcrypt_install_deps: installs whatever is missing with apt-get (one
# `apt-get update` first, only when something is missing). Idempotent.
accelcrypt_install_deps() {
  if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "accelcrypt: this script expects Debian 12 (dpkg-query not found)" >&2
    return 1
  fi
  local missing
  missing=$(accelcrypt_missing_packages | tr '\n' ' ')
  if [ -z "${missing// /}" ]; then
    echo "== dependencies: all ${#ACCELCRYPT_DEBIAN_PACKAGES[@]} Debian packages present"
    return 0
  fi
  echo "== dependencies: installing ${missing}"
  accelcrypt_as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
  # shellcheck disable=SC2086  # word splitting of the package list is wanted
  accelcrypt_as_root env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends ${missing}
  accelcrypt_quiet_services ${missing}
}

# accelcrypt_quiet_services PKG...: the web servers are here only for the
# tests, which start their own instances from their own configuration: a
# daemon that Debian's postinst just started (nginx, apache2 on port 80) is
# stopped and disabled. Only the packages named (the ones this script has
# just installed) are touched, never a web server that was there before.
accelcrypt_quiet_services() {
  local pkg svc
  local -a services
  for pkg in "$@"; do
    case "$pkg" in
      nginx) services=(nginx) ;;
      apache2) services=(apache2 apache-htcacheclean) ;;
      *) continue ;;
    esac
    for svc in "${services[@]}"; do
      if [ -d /run/systemd/system ]; then
        accelcrypt_as_root systemctl disable --now "$svc" >/dev/null 2>&1 || true
      else
        accelcrypt_as_root service "$svc" stop >/dev/null 2>&1 || true
        accelcrypt_as_root update-rc.d "$svc" disable >/dev/null 2>&1 || true
      fi
    done
    echo "== dependencies: $pkg is installed for the tests only; its system service is stopped and disabled"
  done
}

# accelcrypt_served_version PKG VERSION: true when the archive still serves
# VERSION of binary package PKG (per the current package lists).
accelcrypt_served_version() {
  apt-cache madison "$1" 2>/dev/null |
    awk -F'|' '{ gsub(/[ \t]/, "", $2); print $2 }' | grep -qxF "$2"
}

# accelcrypt_openssl_from_archive: the evp_test suite builds OpenSSL's own
# test driver from the source of the installed OpenSSL (`apt-get source`),
# and the archive keeps sources only for the versions it still serves. A
# machine whose image predates the archive's latest OpenSSL update (seen
# here: libssl3 3.0.19 installed, the archive at 3.0.17/3.0.20/3.0.22) has
# no source to build it from. Then libssl3, libssl-dev and openssl are
# upgraded together to the archive's candidate version, which is what
# `apt-get upgrade` would install (a Debian stable or security update).
# No-op when the installed version is still served. Idempotent.
accelcrypt_openssl_from_archive() {
  local installed candidate
  installed=$(dpkg-query -W -f='${Version}' libssl3 2>/dev/null || true)
  [ -n "$installed" ] || return 0
  accelcrypt_served_version libssl3 "$installed" && return 0
  # The lists may be old: refresh them once before deciding.
  accelcrypt_as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null || true
  accelcrypt_served_version libssl3 "$installed" && return 0
  candidate=$(apt-cache policy libssl3 2>/dev/null | awk '/Candidate:/ { print $2 }')
  if [ -z "$candidate" ] || [ "$candidate" = "(none)" ] ||
     [ "$candidate" = "$installed" ]; then
    echo "== dependencies: libssl3 $installed is not in the archive and no other version is offered; the evp_test suite will fail to fetch its source" >&2
    return 0
  fi
  echo "== dependencies: libssl3 $installed is no longer in the archive (so is its source, which evp_test needs); upgrading libssl3, libssl-dev and openssl to $candidate"
  accelcrypt_as_root env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends \
    "libssl3=$candidate" "libssl-dev=$candidate" "openssl=$candidate"
}

# accelcrypt_add_deb_src derives deb-src entries from the machine's own `deb` entries
# (deb822 *.sources stanzas and one-line *.list / sources.list entries). Only
# Debian-archive entries are copied: deb822 stanzas signed with the Debian
# archive keyring (or unsigned ones), so third-party repositories are left
# alone. Needs root (or sudo).
accelcrypt_add_deb_src() {
  local out822=/etc/apt/sources.list.d/accelcrypt-deb-src.sources
  local outlist=/etc/apt/sources.list.d/accelcrypt-deb-src.list
  local tmp822 tmplist f
  tmp822=$(mktemp); tmplist=$(mktemp)
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    [ "$f" = "$out822" ] && continue
    awk '
      function flush() {
        if (n > 0 && types ~ /(^|[ \t])deb([ \t]|$)/ && !enabled_no && (signed == "" || signed ~ /debian-archive-keyring/)) {
          print "Types: deb-src"
          for (i = 1; i <= n; i++) print body[i]
          print ""
        }
        n = 0; types = ""; signed = ""; enabled_no = 0
      }
      /^[ \t]*$/ { flush(); next }
      /^[ \t]*#/ { next }
      /^Types:/ { types = $0; sub(/^Types:[ \t]*/, "", types); next }
      /^Signed-By:/ { signed = $0 }
      /^Enabled:[ \t]*no/ { enabled_no = 1 }
      { body[++n] = $0 }
      END { flush() }' "$f" >> "$tmp822"
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    [ "$f" = "$outlist" ] && continue
    sed -n 's/^[ \t]*deb[ \t]\+/deb-src /p' "$f" >> "$tmplist"
  done
  if [ ! -s "$tmp822" ] && [ ! -s "$tmplist" ]; then
    rm -f "$tmp822" "$tmplist"
    echo "accelcrypt: no apt 'deb' entries to derive deb-src entries from" >&2
    return 1
  fi
  echo "adding deb-src entries derived from this machine's apt sources"
  [ -s "$tmp822" ] && accelcrypt_as_root install -m 0644 "$tmp822" "$out822"
  [ -s "$tmplist" ] && accelcrypt_as_root install -m 0644 "$tmplist" "$outlist"
  rm -f "$tmp822" "$tmplist"
  accelcrypt_as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q || true
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  accelcrypt_install_deps
  accelcrypt_openssl_from_archive
fi
