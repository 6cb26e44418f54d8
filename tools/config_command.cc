// SPDX-License-Identifier: Apache-2.0
#include <filesystem>
#include <iostream>
#include <string>
#include <system_error>

#include "tools/commands.h"
#include "tools/openssl_cnf_check.h"

namespace accelcrypt::tools {

// The stanza follows DESIGN.md's provider-activation hazards: activating any
// provider turns off OpenSSL's implicit default one, so `default` is
// activated explicitly; accelcrypt is soft-loaded so a missing module never
// breaks every OpenSSL program on the machine; the preference is a `?`
// (optional) property so algorithms accelcrypt lacks still resolve.
namespace {

int RunCheck(const ConfigOptions& options) {
  const std::string path =
      options.check_file.empty() ? OpensslCnfInUse() : options.check_file;
  absl::StatusOr<OpensslCnfReport> report = CheckOpensslCnf(path);
  if (!report.ok()) {
    std::cerr << "accelcrypt config --check: " << report.status().message()
              << "\n";
    return kExitSetup;
  }
  if (report->sections.empty()) {
    std::cout << path
              << ": no provider section loads accelcrypt (nothing to check)\n";
    return kExitOk;
  }
  for (const std::string& s : report->sections) {
    std::cout << path << ": accelcrypt section " << s << "\n";
  }
  for (const std::string& m : report->mistakes) std::cout << "  " << m << "\n";
  std::cout << "config check: " << report->mistakes.size()
            << (report->mistakes.size() == 1 ? " mistake" : " mistakes")
            << "\n";
  return report->mistakes.empty() ? kExitOk : kExitFailure;
}

}  // namespace

int RunConfig(const ConfigOptions& options) {
  if (!options.check_file.empty() && !options.check) {
    std::cerr << "accelcrypt config: FILE is read only with --check\n";
    return kExitUsage;
  }
  if (options.check) return RunCheck(options);
  std::string module =
      options.module_path.empty() ? DefaultModulePath() : options.module_path;
  if (module.find_first_of("\n\r") != std::string::npos) {
    std::cerr << "accelcrypt config: module path contains a newline\n";
    return kExitUsage;
  }
  std::error_code ec;
  // OpenSSL resolves a relative `module` against its modules directory, not
  // the current one: write what the user meant.
  if (!options.module_path.empty() &&
      std::filesystem::path(module).is_relative()) {
    module = std::filesystem::absolute(module, ec).lexically_normal().string();
  }
  if (!std::filesystem::is_regular_file(module, ec)) {
    // Still print: the stanza may be prepared before installation. soft_load
    // keeps OpenSSL working if it stays missing.
    std::cerr << "accelcrypt config: warning: " << module
              << " does not exist (yet)\n";
  }

  if (options.include_only) {
    std::cout
        << "# accelcrypt provider, for `.include` at the END of an "
           "openssl.cnf\n"
           "# whose `openssl_conf` section is [openssl_init] (Debian's). The\n"
           "# sections named here are merged into existing ones of the same\n"
           "# name; `providers` and `alg_section` replace any earlier values.\n"
           "[openssl_init]\n"
           "providers = provider_sect\n"
           "alg_section = algorithm_sect\n"
           "\n"
           "[provider_sect]\n"
           "default = default_sect\n"
           "accelcrypt = accelcrypt_sect\n"
           "\n"
           "[default_sect]\n"
           "activate = 1\n"
           "\n"
           "[accelcrypt_sect]\n"
           "module = "
        << module
        << "\n"
           "activate = 1\n"
           "soft_load = 1\n"
           "\n"
           "[algorithm_sect]\n"
           "default_properties = ?provider=accelcrypt\n";
    return kExitOk;
  }

  std::cout << "# accelcrypt: OpenSSL 3 configuration loading the default "
               "provider and\n"
               "# accelcrypt, preferring accelcrypt where it has the "
               "algorithm.\n"
               "openssl_conf = openssl_init\n"
               "\n"
               "[openssl_init]\n"
               "providers = provider_sect\n"
               "alg_section = algorithm_sect\n"
               "\n"
               "[provider_sect]\n"
               "default = default_sect\n"
               "accelcrypt = accelcrypt_sect\n"
               "\n"
               "[default_sect]\n"
               "activate = 1\n"
               "\n"
               "[accelcrypt_sect]\n"
               "module = "
            << module
            << "\n"
               "activate = 1\n"
               "soft_load = 1\n"
               "\n"
               "[algorithm_sect]\n"
               "default_properties = ?provider=accelcrypt\n";
  return kExitOk;
}

}  // namespace accelcrypt::tools
