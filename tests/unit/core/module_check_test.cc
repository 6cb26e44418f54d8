// SPDX-License-Identifier: Apache-2.0
// Broken files in a backend directory are refused before dlopen, with a
// reason, and never crash the process: a truncated module (dlopen of it
// dies with SIGBUS), a file that is not ELF, a library of another machine,
// a directory named like a module, and a real library without the entry
// symbol. Built from copies of the build tree's own backend modules.
#include "core/module_check.h"

#include <elf.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "accelcrypt/kit/cpuid.h"
#include "core/registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_env.h"

namespace accelcrypt {
namespace {

namespace fs = std::filesystem;
using ::accelcrypt::testing::BackendDir;
using ::accelcrypt::testing::BuildTreeConfig;
using ::accelcrypt::testing::TestBackendDir;
using ::testing::HasSubstr;

std::vector<char> ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void WriteFile(const fs::path& p, const std::vector<char>& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << p;
}

// A backend module of the build tree that is known to load.
fs::path GoodModule() { return fs::path(TestBackendDir()) / "failing.so"; }

class ModuleCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/accelcrypt-modcheck-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ASSERT_TRUE(fs::exists(GoodModule())) << GoodModule();
    good_ = ReadFile(GoodModule());
    ASSERT_GT(good_.size(), 8192u);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path Write(const std::string& name, const std::vector<char>& bytes) {
    fs::path p = dir_ / name;
    WriteFile(p, bytes);
    return p;
  }
  // WrongMachine is the good module with e_machine set to another
  // architecture's (AArch64, or x86-64 when this is AArch64).
  std::vector<char> WrongMachine() const {
    std::vector<char> bytes = good_;
    uint16_t machine;
    std::memcpy(&machine, bytes.data() + offsetof(Elf64_Ehdr, e_machine),
                sizeof(machine));
    const uint16_t other = machine == EM_AARCH64 ? EM_X86_64 : EM_AARCH64;
    std::memcpy(bytes.data() + offsetof(Elf64_Ehdr, e_machine), &other,
                sizeof(other));
    return bytes;
  }
  // The load events of a registry over dir_ (selftest off, `extra` added to
  // the configuration) for the module at `copy` or the backend `name`: one
  // line each, " [declined]" marking a decline; empty when the registry
  // could not be made (a test failure).
  std::string LoadMessages(
      const fs::path& copy, const std::string& name,
      const std::map<std::string, std::string>& extra = {}) {
    std::map<std::string, std::string> all = {{"backend_dir", dir_.string()},
                                              {"selftest", "0"}};
    for (const auto& [k, v] : extra) all[k] = v;
    auto registry = Registry::Create(BuildTreeConfig(all));
    EXPECT_TRUE(registry.ok()) << registry.status();
    std::string out;
    if (!registry.ok()) return out;
    for (const LoadEvent& ev : (*registry)->events()) {
      if (ev.backend == copy.string() || ev.backend == name) {
        out += ev.message + (ev.declined ? " [declined]" : "") + "\n";
      }
    }
    return out;
  }

  fs::path dir_;
  std::vector<char> good_;
};

TEST_F(ModuleCheckTest, RealModulePasses) {
  EXPECT_TRUE(CheckLoadableModule(GoodModule().string()).ok());
  for (const auto& e : fs::directory_iterator(BackendDir())) {
    if (e.path().extension() != ".so") continue;
    EXPECT_TRUE(CheckLoadableModule(e.path().string()).ok()) << e.path();
  }
}

TEST_F(ModuleCheckTest, TruncatedIsRefused) {
  // The reproduction: the first 4 KiB of a real module.
  std::vector<char> head(good_.begin(), good_.begin() + 4096);
  absl::Status st = CheckLoadableModule(Write("truncated.so", head).string());
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("truncated"));
  // Cut inside the header and inside the program headers, and one byte short.
  for (size_t n : {size_t{10}, sizeof(Elf64_Ehdr) + 8, good_.size() - 1}) {
    std::vector<char> cut(good_.begin(), good_.begin() + n);
    absl::Status s = CheckLoadableModule(Write("cut.so", cut).string());
    // One byte short may still leave every segment inside the file (the
    // section header table sits at the end); what matters is no crash and
    // an answer consistent with dlopen's needs.
    if (n < 4096) {
      EXPECT_FALSE(s.ok()) << n;
    }
  }
}

TEST_F(ModuleCheckTest, NotElfIsRefused) {
  std::string text = "#!/bin/sh\necho not a library\n";
  absl::Status st = CheckLoadableModule(
      Write("script.so", std::vector<char>(text.begin(), text.end())).string());
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("not an ELF file"));
  st = CheckLoadableModule(Write("empty.so", {}).string());
  EXPECT_THAT(st.message(), HasSubstr("not an ELF file"));
}

TEST_F(ModuleCheckTest, WrongMachineIsRefused) {
  absl::Status st =
      CheckLoadableModule(Write("arm.so", WrongMachine()).string());
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("another machine"));
}

TEST_F(ModuleCheckTest, WrongClassIsRefused) {
  std::vector<char> bytes = good_;
  bytes[EI_CLASS] = sizeof(void*) == 8 ? ELFCLASS32 : ELFCLASS64;
  absl::Status st = CheckLoadableModule(Write("class.so", bytes).string());
  EXPECT_FALSE(st.ok());
}

TEST_F(ModuleCheckTest, DirectoryAndMissingAreRefused) {
  fs::create_directory(dir_ / "dir.so");
  EXPECT_THAT(CheckLoadableModule((dir_ / "dir.so").string()).message(),
              HasSubstr("not a regular file"));
  EXPECT_THAT(CheckLoadableModule((dir_ / "missing.so").string()).message(),
              HasSubstr("cannot open"));
}

// The registry over a directory of broken files and one good module: Create
// succeeds, the good module loads, each broken file is one event with its
// reason, and the process is still here.
TEST_F(ModuleCheckTest, RegistrySkipsBrokenFilesWithEvents) {
  Write("a-truncated.so",
        std::vector<char>(good_.begin(), good_.begin() + 4096));
  Write("b-notelf.so", std::vector<char>(100, 'x'));
  Write("c-arm.so", WrongMachine());
  // A real shared object without accelcrypt_backend_entry: the PKCS#11
  // module of the build tree.
  fs::path module = fs::path(BackendDir()).parent_path().parent_path() /
                    "accelcrypt-pkcs11.so";
  const bool have_module = fs::exists(module);
  if (have_module) Write("d-noentry.so", ReadFile(module));
  Write("e-failing.so", good_);
  unsetenv("ACCELCRYPT_FAILING_FAIL_INIT");
  unsetenv("ACCELCRYPT_FAILING_MODE");
  auto registry = Registry::Create(
      BuildTreeConfig({{"backend_dir", dir_.string()}, {"selftest", "0"}}));
  ASSERT_TRUE(registry.ok()) << registry.status();
  std::map<std::string, std::string> why;
  for (const LoadEvent& ev : (*registry)->events()) {
    why[fs::path(ev.backend).filename().string()] = ev.message;
  }
  EXPECT_THAT(why["a-truncated.so"], HasSubstr("not loaded: truncated"));
  EXPECT_THAT(why["b-notelf.so"], HasSubstr("not loaded: not an ELF file"));
  EXPECT_THAT(why["c-arm.so"],
              HasSubstr("not loaded: built for another machine"));
  if (have_module) {
    EXPECT_THAT(why["d-noentry.so"], HasSubstr("not a backend"));
  } else {
    ADD_FAILURE() << "no PKCS#11 module at " << module
                  << " to stand for a library without the entry symbol";
  }
  EXPECT_NE((*registry)->Find("failing"), nullptr);
}

// Load hints (accelcrypt/backend.h): the PKCS#11 client backend declares
// that it needs pkcs11.module and that its start is deferred to the first
// RSA/DSA operation; a module without the note has none.
TEST_F(ModuleCheckTest, LoadHintsAreReadFromTheModulesNote) {
  const fs::path pkcs11 = fs::path(BackendDir()) / "pkcs11.so";
  if (!fs::exists(pkcs11)) GTEST_SKIP() << "no " << pkcs11 << " in this build";
  LoadHints hints;
  ASSERT_TRUE(CheckLoadableModule(pkcs11.string(), &hints).ok());
  EXPECT_THAT(
      hints,
      ::testing::UnorderedElementsAre(
          std::make_pair(std::string("name"), std::string("pkcs11")),
          std::make_pair(std::string("needs-config"), std::string("module")),
          std::make_pair(std::string("defer"), std::string("rsa,dsa"))));
  ASSERT_TRUE(CheckLoadableModule(GoodModule().string(), &hints).ok());
  EXPECT_TRUE(hints.empty());
}

TEST_F(ModuleCheckTest, ADamagedNoteGivesNoHintsAndNoCrash) {
  const fs::path pkcs11 = fs::path(BackendDir()) / "pkcs11.so";
  if (!fs::exists(pkcs11)) GTEST_SKIP() << "no " << pkcs11 << " in this build";
  std::vector<char> bytes = ReadFile(pkcs11);
  const std::string owner("accelcrypt", sizeof("accelcrypt"));
  auto at = std::search(bytes.begin(), bytes.end(), owner.begin(), owner.end());
  ASSERT_NE(at, bytes.end());
  const size_t name = static_cast<size_t>(at - bytes.begin());
  ASSERT_GE(name, 12u);
  // descsz (the word before the type) claims far more than the segment.
  const uint32_t huge = 0x7fffffff;
  std::memcpy(&bytes[name - 8], &huge, sizeof(huge));
  LoadHints hints = {{"stale", "entry"}};
  EXPECT_TRUE(
      CheckLoadableModule(Write("damaged.so", bytes).string(), &hints).ok());
  EXPECT_TRUE(hints.empty());
}

// The registry does not load a module whose hints say it would decline:
// only the hints path, which never calls dlopen, gives that reason; set
// up, the backend is loaded and declines for its own reason.
TEST_F(ModuleCheckTest, ABackendThatWouldDeclineIsNotLoaded) {
  const fs::path pkcs11 = fs::path(BackendDir()) / "pkcs11.so";
  if (!fs::exists(pkcs11)) GTEST_SKIP() << "no " << pkcs11 << " in this build";
  std::vector<char> bytes = ReadFile(pkcs11);
  const fs::path copy = Write("pkcs11.so", bytes);
  unsetenv("ACCELCRYPT_PKCS11_MODULE");
  auto reason = [&](const std::map<std::string, std::string>& extra) {
    return LoadMessages(copy, "pkcs11", extra);
  };
  EXPECT_EQ(reason({}),
            "pkcs11: no module configured (set pkcs11.module); the module "
            "was not loaded [declined]\n");
  // Configured, its start is deferred to its first operation (load hint
  // `defer=`): not loaded here.
  EXPECT_THAT(reason({{"pkcs11.module", "/nonexistent/module.so"}}),
              HasSubstr("deferred: starts at its first operation"));
  // Started at load, it is loaded, and its own init declines (no such
  // module).
  const std::string configured =
      reason({{"pkcs11.module", "/nonexistent/module.so"},
              {"deferred_start", "load"}});
  EXPECT_THAT(configured, HasSubstr("/nonexistent/module.so"));
  EXPECT_THAT(configured, ::testing::Not(HasSubstr("was not loaded")));
  // Excluded by name, from the hints, also without loading it.
  EXPECT_EQ(reason({{"backends", "software"}}),
            "not loaded: excluded by configuration\n");
}

// `needs-cpu-vendor`: padlock.so on a CPU that is not VIA's or Zhaoxin's is
// never loaded (its init would decline); `load-if-env` (the PadLock
// emulator's ACCELCRYPT_PADLOCK_EMULATOR=1) loads it anyway, and without
// the emulator's CPUID its own init declines, for its own reason.
TEST_F(ModuleCheckTest, ABackendForAnotherCpuVendorIsNotLoaded) {
#ifndef ACCELCRYPT_KIT_HAVE_CPUID
  GTEST_SKIP() << "the loader asks CPUID only on x86";
#else
  const fs::path padlock = fs::path(BackendDir()) / "padlock.so";
  if (!fs::exists(padlock)) GTEST_SKIP() << "no " << padlock << " here";
  char vendor[13];
  kit::Vendor(kit::Cpuid(0), vendor);
  if (kit::IsCentaurVendor(vendor)) {
    GTEST_SKIP() << "this CPU may have PadLock (" << vendor << ")";
  }
  const fs::path copy = Write("padlock.so", ReadFile(padlock));
  auto events = [&] { return LoadMessages(copy, "padlock"); };
  const char* was = getenv("ACCELCRYPT_PADLOCK_EMULATOR");
  const std::string saved = was != nullptr ? was : "";
  unsetenv("ACCELCRYPT_PADLOCK_EMULATOR");
  EXPECT_EQ(events(),
            std::string("padlock: the CPU vendor is ") + vendor +
                ", the backend serves only 'CentaurHauls' or '  "
                "Shanghai  '; the module was not loaded [declined]\n");
  setenv("ACCELCRYPT_PADLOCK_EMULATOR", "1", 1);
  const std::string forced = events();
  EXPECT_THAT(forced,
              HasSubstr(std::string("no PadLock unit: CPU vendor ") + vendor));
  EXPECT_THAT(forced, ::testing::Not(HasSubstr("was not loaded")));
  if (was != nullptr) {
    setenv("ACCELCRYPT_PADLOCK_EMULATOR", saved.c_str(), 1);
  } else {
    unsetenv("ACCELCRYPT_PADLOCK_EMULATOR");
  }
#endif
}

}  // namespace
}  // namespace accelcrypt
