// SPDX-License-Identifier: Apache-2.0
// The check of accelcrypt's sections in an openssl.cnf. OpenSSL hands a
// provider only the keys it asks for by name, so a misspelt key in the
// provider's openssl.cnf section never reaches the provider and is dropped
// without a word. This reads the file as OpenSSL does (NCONF, `.include`
// included), finds the provider sections that load accelcrypt and reports
// every key the provider does not read and every value it would refuse, with
// the file and line. `accelcrypt config --check`, `list` and `enable` use it.
#ifndef ACCELCRYPT_TOOLS_OPENSSL_CNF_CHECK_H_
#define ACCELCRYPT_TOOLS_OPENSSL_CNF_CHECK_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace accelcrypt::tools {

struct OpensslCnfReport {
  // The accelcrypt provider sections found: "[section] (provider NAME)".
  std::vector<std::string> sections;
  // One line per mistake: "FILE line N: [section] ...".
  std::vector<std::string> mistakes;
};

// CheckOpensslCnf reads `path` and checks the sections of the providers
// named in its `openssl_conf` → `providers` section whose `module` is an
// accelcrypt.so (or, without `module`, whose name is accelcrypt). An error
// status when the file cannot be read or parsed.
absl::StatusOr<OpensslCnfReport> CheckOpensslCnf(const std::string& path);

// The system-wide file OpenSSL reads: OPENSSLDIR/openssl.cnf (on Debian a
// symlink into /etc/ssl).
std::string SystemOpensslCnf();

// The openssl.cnf OpenSSL programs read here, as libcrypto names it
// (CONF_get1_default_config_file): $OPENSSL_CONF when set, else
// OPENSSLDIR/openssl.cnf.
std::string OpensslCnfInUse();

}  // namespace accelcrypt::tools

#endif  // ACCELCRYPT_TOOLS_OPENSSL_CNF_CHECK_H_
