// SPDX-License-Identifier: Apache-2.0
//
// `accelcrypt enable` / `accelcrypt disable`: add or remove the one
// `.include` line that loads the provider snippet from the system
// openssl.cnf. Installing the packages changes no program; this is the
// explicit step. Idempotent, with a backup of the file as it was, atomic
// replacement (same owner and mode), and --dry-run.
#include <fcntl.h>
#include <openssl/crypto.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "accelcrypt/kit/files.h"
#include "tools/commands.h"
#include "tools/openssl_cnf_check.h"

namespace accelcrypt::tools {
namespace {

constexpr std::string_view kMarker =
    "# accelcrypt provider, added by `accelcrypt enable` "
    "(undo: accelcrypt disable)";
constexpr std::string_view kBackupSuffix = ".accelcrypt-bak";

std::string_view Trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

// ConsumeWord strips leading blanks, then `word`; false (and `s` as it was)
// when `s` does not start with it.
bool ConsumeWord(std::string_view* s, std::string_view word) {
  std::string_view t = Trim(*s);
  if (t.substr(0, word.size()) != word) return false;
  *s = t.substr(word.size());
  return true;
}

// IncludeTarget returns the path of a `.include PATH` / `.include = PATH`
// line, or "" for any other line.
std::string IncludeTarget(std::string_view line) {
  std::string_view s = line;
  if (!ConsumeWord(&s, ".include")) return "";
  if (s.empty() || !(s[0] == ' ' || s[0] == '\t' || s[0] == '=')) return "";
  ConsumeWord(&s, "=");
  return std::string(Trim(s));
}

bool SamePath(const std::string& a, const std::string& b) {
  if (a == b) return true;
  std::error_code ec1, ec2;
  auto ca = std::filesystem::weakly_canonical(a, ec1);
  auto cb = std::filesystem::weakly_canonical(b, ec2);
  return !ec1 && !ec2 && ca == cb;
}

bool ReadFile(const std::string& path, std::string* out, std::string* err) {
  if (!kit::ReadFile(path, out)) {
    *err = std::strerror(errno);
    return false;
  }
  return true;
}

// WriteLike writes `content` to `path` through a temporary file in the same
// directory renamed over it, with the owner and mode of `like` (the file as
// it was), synced first. Nothing is left behind on failure.
bool WriteLike(const std::string& path, const struct stat& like,
               const std::string& content, std::string* err) {
  if (!kit::WriteFileAtomically(path, content, {.like = &like, .sync = true})) {
    *err = std::strerror(errno);
    return false;
  }
  *err = "";
  return true;
}

// Lines splits at '\n'; a final line without one counts too.
std::vector<std::string> Lines(const std::string& content) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < content.size()) {
    size_t end = content.find('\n', start);
    if (end == std::string::npos) end = content.size();
    lines.push_back(content.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

}  // namespace

int RunEnable(const EnableOptions& options) {
  const char* cmd =
      options.disable ? "accelcrypt disable" : "accelcrypt enable";
  std::string snippet =
      options.snippet.empty() ? ACCELCRYPT_INSTALLED_SNIPPET : options.snippet;
  if (snippet.find_first_of("\n\r") != std::string::npos) {
    std::cerr << cmd << ": snippet path contains a newline\n";
    return kExitUsage;
  }
  std::error_code ec;
  if (std::filesystem::path(snippet).is_relative()) {
    snippet =
        std::filesystem::absolute(snippet, ec).lexically_normal().string();
  }
  // OPENSSL_CONF is deliberately not followed: this command is about the
  // file every program reads.
  const std::string given =
      options.openssl_cnf.empty() ? SystemOpensslCnf() : options.openssl_cnf;
  // Edit the file a symlink points at (Debian: /usr/lib/ssl/openssl.cnf ->
  // /etc/ssl/openssl.cnf), so the link stays a link.
  std::string cnf = std::filesystem::canonical(given, ec).string();
  if (ec) {
    std::cerr << cmd << ": " << given << ": " << ec.message() << "\n";
    return kExitSetup;
  }
  struct stat st;
  if (stat(cnf.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    std::cerr << cmd << ": " << cnf << ": not a regular file\n";
    return kExitSetup;
  }
  std::string content, err;
  if (!ReadFile(cnf, &content, &err)) {
    std::cerr << cmd << ": cannot read " << cnf << ": " << err << "\n";
    return kExitSetup;
  }
  const std::vector<std::string> lines = Lines(content);
  std::vector<size_t> includes;  // line indexes of our .include
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string target = IncludeTarget(lines[i]);
    if (!target.empty() && SamePath(target, snippet)) includes.push_back(i);
  }
  const std::string where = cnf == given ? cnf : cnf + " (" + given + ")";

  std::string updated;
  if (!options.disable) {
    if (!includes.empty()) {
      std::cout << "accelcrypt is already enabled: " << where << " line "
                << includes[0] + 1 << " includes " << snippet
                << "; nothing changed\n";
      return kExitOk;
    }
    if (!std::filesystem::is_regular_file(snippet, ec)) {
      std::cerr << cmd << ": " << snippet
                << " does not exist: install the provider package, or name "
                   "the snippet with --snippet (accelcrypt config "
                   "--include-only writes one)\n";
      return kExitSetup;
    }
    bool has_init = false;
    for (const std::string& line : lines) {
      std::string_view s = line;
      if (ConsumeWord(&s, "openssl_conf") && ConsumeWord(&s, "=") &&
          Trim(s) == "openssl_init") {
        has_init = true;
      }
    }
    if (!has_init) {
      std::cerr << cmd << ": warning: " << cnf
                << " has no `openssl_conf = openssl_init` line; the snippet "
                   "adds to [openssl_init] and has no effect without it\n";
    }
    updated = content;
    if (!updated.empty() && updated.back() != '\n') updated += '\n';
    const std::string added =
        std::string(kMarker) + "\n.include " + snippet + "\n";
    updated += added;
    if (options.dry_run) {
      std::cout << "dry run: would append to " << where << ":\n"
                << added << "and keep the current file as " << cnf
                << kBackupSuffix << "\n";
      return kExitOk;
    }
  } else {
    if (includes.empty()) {
      std::cout << "accelcrypt is not enabled: " << where
                << " has no `.include " << snippet << "`; nothing changed\n";
      return kExitOk;
    }
    std::vector<bool> drop(lines.size(), false);
    for (size_t i : includes) {
      drop[i] = true;
      if (i > 0 && Trim(lines[i - 1]) == kMarker) {
        drop[i - 1] = true;
      }
    }
    std::string removed;
    for (size_t i = 0; i < lines.size(); ++i) {
      if (drop[i]) {
        removed += lines[i] + "\n";
      } else {
        updated += lines[i];
        updated += '\n';
      }
    }
    // Keep a last line without newline as it was.
    if (!content.empty() && content.back() != '\n' && !drop.back() &&
        !updated.empty()) {
      updated.pop_back();
    }
    if (options.dry_run) {
      std::cout << "dry run: would remove from " << where << ":\n"
                << removed << "and keep the current file as " << cnf
                << kBackupSuffix << "\n";
      return kExitOk;
    }
  }

  const std::string backup = cnf + std::string(kBackupSuffix);
  if (!WriteLike(backup, st, content, &err)) {
    std::cerr << cmd << ": cannot write the backup " << backup << ": " << err
              << (geteuid() != 0 ? " (run as root)" : "")
              << "; nothing changed\n";
    return kExitSetup;
  }
  if (!WriteLike(cnf, st, updated, &err)) {
    std::cerr << cmd << ": cannot write " << cnf << ": " << err
              << "; nothing changed (backup: " << backup << ")\n";
    return kExitSetup;
  }
  if (options.disable) {
    std::cout << "disabled: removed `.include " << snippet << "` from " << where
              << " (previous version: " << backup
              << ")\nPrograms started from now on no longer load accelcrypt, "
                 "sshd's next connections included (it re-executes itself per "
                 "connection); long-running daemons (nginx, Apache) keep it "
                 "until restarted.\n";
  } else {
    std::cout << "enabled: appended `.include " << snippet << "` to " << where
              << " (previous version: " << backup
              << ")\nPrograms started from now on load accelcrypt, sshd's "
                 "next connections included (it re-executes itself per "
                 "connection: no restart); restart long-running daemons "
                 "(nginx, Apache) to pick it up. Check with\n"
                 "  openssl list -providers\n"
                 "  accelcrypt trace -- openssl dgst -sha256 /etc/hostname\n";
    // A key the provider would never see is said now, not never.
    absl::StatusOr<OpensslCnfReport> report = CheckOpensslCnf(cnf);
    if (report.ok()) {
      for (const std::string& m : report->mistakes) {
        std::cerr << cmd << ": warning: " << m << "\n";
      }
    }
  }
  return kExitOk;
}

}  // namespace accelcrypt::tools
