// SPDX-License-Identifier: Apache-2.0
#include "core/config.h"

#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <string>

#include "core/config_keys.h"
#include "core/core.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_env.h"

namespace accelcrypt {
namespace {

using ::accelcrypt::testing::BuildTreeConfig;
using ::accelcrypt::testing::StatusIs;
using ::accelcrypt::testing::VectorDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Optional;

class TempConf {
 public:
  explicit TempConf(const std::string& content) {
    char name[] = "/tmp/accelcrypt_conf_XXXXXX";
    int fd = mkstemp(name);
    EXPECT_GE(fd, 0);
    close(fd);
    path_ = name;
    std::ofstream(path_) << content;
  }
  ~TempConf() { unlink(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// ScopedEnv sets an environment variable for one test and restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

TEST(ConfigTest, LoadsTheAccelcryptSectionWithOpenSslSyntax) {
  TempConf conf(
      "# openssl.cnf style\n"
      "openssl_conf = openssl_init\n"
      "[openssl_init]\n"
      "providers = provider_sect\n"
      "[accelcrypt]\n"
      "Backends = x86, software\n"
      "breaker_threshold = 7   \n"
      "route.aes-128-cbc = only:software\n"
      "[backend_failing]\n"
      "mode = always\n"
      "rate = 20\n");
  ASSERT_OK_AND_ASSIGN(Config config, Config::LoadFile(conf.path()));
  EXPECT_THAT(config.GetList("backends"), ElementsAre("x86", "software"));
  EXPECT_THAT(config.Get("BACKENDS"), Optional(std::string("x86, software")));
  ASSERT_OK_AND_ASSIGN(long long threshold,
                       config.GetInt("breaker_threshold", 5));
  EXPECT_EQ(threshold, 7);
  EXPECT_THAT(config.Get("route.aes-128-cbc"),
              Optional(std::string("only:software")));
  EXPECT_THAT(config.Get("failing.mode"), Optional(std::string("always")));
  EXPECT_THAT(config.Get("failing.rate"), Optional(std::string("20")));
  // Keys from unrelated sections stay out.
  EXPECT_FALSE(config.Get("providers").has_value());
}

// A third party's backend gets its section by its name alone: sections are
// found by their `backend_` prefix, not from a list of known backends.
TEST(ConfigTest, AnyBackendSectionIsRead) {
  TempConf conf(
      "[accelcrypt]\n"
      "policy = priority\n"
      "[backend_acme_hsm]\n"
      "device = /dev/acme0\n"
      "[backend_]\n"
      "orphan = 1\n"
      "[not_a_backend]\n"
      "device = /dev/other\n");
  ASSERT_OK_AND_ASSIGN(Config config, Config::LoadFile(conf.path()));
  EXPECT_THAT(config.Get("acme_hsm.device"),
              Optional(std::string("/dev/acme0")));
  EXPECT_FALSE(config.Get("device").has_value());
  EXPECT_FALSE(config.Get("orphan").has_value());
  EXPECT_FALSE(config.Get(".orphan").has_value());
  EXPECT_TRUE(config.Validate().ok()) << config.Validate();
}

TEST(ConfigTest, SectionNamedByAccelcryptConf) {
  TempConf conf(
      "accelcrypt_conf = my_accel\n"
      "[accelcrypt]\n"
      "policy = wrong\n"
      "[my_accel]\n"
      "stats_dir = /tmp/somewhere\n");
  ASSERT_OK_AND_ASSIGN(Config config, Config::LoadFile(conf.path()));
  EXPECT_THAT(config.Get("stats_dir"), Optional(std::string("/tmp/somewhere")));
  EXPECT_FALSE(config.Get("policy").has_value());
}

TEST(ConfigTest, MalformedFileNamesTheLine) {
  TempConf conf("[accelcrypt]\nselftest = 1\n[broken\nx = 1\n");
  EXPECT_THAT(
      Config::LoadFile(conf.path()),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 3")));
}

TEST(ConfigTest, MissingFileIsNotFound) {
  EXPECT_THAT(Config::LoadFile("/nonexistent/accelcrypt.cnf"),
              StatusIs(absl::StatusCode::kNotFound));
}

TEST(ConfigTest, EnvironmentOverridesTheFile) {
  TempConf conf(
      "[accelcrypt]\n"
      "backend_dir = /from/file\n"
      "stats_dir = /stats/from/file\n"
      "log_level = 1\n"
      "selftest = 0\n");
  ScopedEnv c("ACCELCRYPT_CONF", conf.path().c_str());
  ScopedEnv b("ACCELCRYPT_BACKEND_DIR", "/from/env");
  ScopedEnv s("ACCELCRYPT_STATS_DIR", nullptr);
  ScopedEnv l("ACCELCRYPT_LOG_LEVEL", "3");
  ASSERT_OK_AND_ASSIGN(Config config, Config::FromEnvironment());
  EXPECT_THAT(config.Get("backend_dir"), Optional(std::string("/from/env")));
  EXPECT_THAT(config.Get("stats_dir"),
              Optional(std::string("/stats/from/file")));
  EXPECT_THAT(config.Get("log_level"), Optional(std::string("3")));
  EXPECT_THAT(config.Get("selftest"), Optional(std::string("0")));
}

TEST(ConfigTest, EnvironmentWithoutFile) {
  ScopedEnv c("ACCELCRYPT_CONF", nullptr);
  ScopedEnv b("ACCELCRYPT_BACKEND_DIR", nullptr);
  ScopedEnv s("ACCELCRYPT_STATS_DIR", "/env/stats");
  ScopedEnv l("ACCELCRYPT_LOG_LEVEL", nullptr);
  ASSERT_OK_AND_ASSIGN(Config config, Config::FromEnvironment());
  EXPECT_THAT(config.Get("stats_dir"), Optional(std::string("/env/stats")));
  EXPECT_FALSE(config.Get("backend_dir").has_value());
}

TEST(ConfigTest, BrokenConfFromEnvironmentIsAnError) {
  ScopedEnv c("ACCELCRYPT_CONF", "/nonexistent/accelcrypt.cnf");
  EXPECT_THAT(Config::FromEnvironment(), StatusIs(absl::StatusCode::kNotFound));
}

TEST(ConfigTest, UnknownKeysAreRecognisedAsSuch) {
  EXPECT_FALSE(Config::Known("frobnicate"));
  EXPECT_FALSE(Config::Known(""));
  EXPECT_FALSE(Config::Known(".mode"));
  EXPECT_TRUE(Config::Known("route.aes-128-gcm"));
  EXPECT_TRUE(Config::Known("failing.mode"));
  EXPECT_TRUE(Config::Known("BACKEND_DIR"));
  // Every key the core itself reads must be known, or the provider would
  // reject it as an unknown parameter.
  for (const char* key : {"backend_dir", "backends", "disable", "policy",
                          "breaker_threshold", "breaker_cooldown_ms",
                          "replay_max", "selftest", "stats_dir", "log_level"}) {
    EXPECT_TRUE(Config::Known(key)) << key;
  }
}

TEST(ConfigTest, TypedAccessors) {
  Config config;
  config.Set("Breaker_Threshold", "  12 ");
  config.Set("disable", "padlock,x86  pkcs11");
  config.Set("bad", "twelve");
  ASSERT_OK_AND_ASSIGN(long long v, config.GetInt("breaker_threshold", 5));
  EXPECT_EQ(v, 12);
  ASSERT_OK_AND_ASSIGN(long long d, config.GetInt("absent", 5));
  EXPECT_EQ(d, 5);
  EXPECT_THAT(config.GetInt("bad", 5),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(config.GetList("disable"),
              ElementsAre("padlock", "x86", "pkcs11"));
  EXPECT_EQ(config.GetOr("absent", "dflt"), "dflt");
  Config other;
  other.Set("disable", "none");
  other.Set("extra", "1");
  config.Merge(other);
  EXPECT_THAT(config.Get("disable"), Optional(std::string("none")));
  EXPECT_THAT(config.Get("extra"), Optional(std::string("1")));
  EXPECT_THAT(config.Get("breaker_threshold"), Optional(std::string("12")));
}

TEST(ConfigTest, BadValuesFailCoreCreation) {
  EXPECT_THAT(Core::Create(BuildTreeConfig({{"breaker_threshold", "many"}})),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Core::Create(BuildTreeConfig({{"policy", "quickest"}})),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Core::Create(BuildTreeConfig({{"breaker_threshold", "0"}})),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(ConfigTest, BackendsAndDisableSelectWhatLoads) {
  ASSERT_OK_AND_ASSIGN(
      auto only, Core::Create(BuildTreeConfig({{"backends", "software"}})));
  ASSERT_EQ(only->registry().backends().size(), 1u);
  EXPECT_EQ(only->registry().backends()[0]->name(), "software");
  ASSERT_OK_AND_ASSIGN(
      auto none, Core::Create(BuildTreeConfig({{"disable", "software"}})));
  EXPECT_EQ(none->registry().Find("software"), nullptr);
}

}  // namespace
}  // namespace accelcrypt

namespace accelcrypt {
namespace {

// Validate: every mistake names the key, the value and where it was written.
TEST(ConfigValidateTest, UnknownKeyNamesFileAndLine) {
  TempConf conf("[accelcrypt]\nbackends = software\n\nno_such_key = 1\n");
  ASSERT_OK_AND_ASSIGN(Config c, Config::LoadFile(conf.path()));
  absl::Status st = c.Validate();
  EXPECT_THAT(st, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(st.message(), HasSubstr("unknown key 'no_such_key'"));
  EXPECT_THAT(st.message(), HasSubstr(conf.path() + " line 4"));
}

TEST(ConfigValidateTest, BadTypeAndRangeAreErrors) {
  struct Case {
    const char* line;
    const char* want;
  } cases[] = {
      {"digest_replay_max = abc", "replay_max = 'abc' is not a number"},
      {"replay_max = -1", "replay_max = -1 is out of range"},
      {"breaker_threshold = 0", "breaker_threshold = 0 is out of range"},
      {"log_level = 9", "log_level = 9 is out of range"},
      {"selftest = yes",
       "selftest = 'yes' is not supported (want one of: first-use, load, 1, "
       "0)"},
      {"policy = bogus", "policy = 'bogus' is not supported"},
      {"backends = soft/ware", "is not a backend name"},
      {"route.aes-999-xyz = software",
       "unknown algorithm in route.aes-999-xyz"},
  };
  for (const Case& c : cases) {
    TempConf conf(std::string("[accelcrypt]\n") + c.line + "\n");
    ASSERT_OK_AND_ASSIGN(Config config, Config::LoadFile(conf.path()));
    absl::Status st = config.Validate();
    EXPECT_THAT(st.message(), HasSubstr(c.want)) << c.line;
    EXPECT_THAT(st.message(), HasSubstr(conf.path() + " line 2")) << c.line;
    // Core creation refuses the same configuration.
    EXPECT_THAT(Core::Create(std::move(config)),
                StatusIs(absl::StatusCode::kInvalidArgument))
        << c.line;
  }
}

TEST(ConfigValidateTest, GoodValuesAndAliasPass) {
  TempConf conf(
      "[accelcrypt]\nbackends = software, x86\npolicy = fastest\n"
      "digest_replay_max = 4096\nselftest = 0\nlog_level = 0\n"
      "route.aes-128-gcm = x86, software\nroute.rsa-2048 = software\n"
      "[backend_software]\nanything = goes\n");
  ASSERT_OK_AND_ASSIGN(Config c, Config::LoadFile(conf.path()));
  EXPECT_TRUE(c.Validate().ok()) << c.Validate();
  // The documented spelling and the router's are one key.
  EXPECT_THAT(c.Get("replay_max"), Optional(std::string("4096")));
}

TEST(ConfigValidateTest, DirectoryIsNotAConfig) {
  EXPECT_THAT(Config::LoadFile("/tmp"),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Config::LoadFile("/tmp").status().message(),
              HasSubstr("is a directory"));
  EXPECT_THAT(Config::LoadFile("/nonexistent/x.cnf"),
              StatusIs(absl::StatusCode::kNotFound));
}

TEST(ConfigValidateTest, EnvironmentOriginIsNamed) {
  ScopedEnv conf("ACCELCRYPT_CONF", nullptr);
  ScopedEnv level("ACCELCRYPT_LOG_LEVEL", "loud");
  ASSERT_OK_AND_ASSIGN(Config c, Config::FromEnvironment());
  EXPECT_THAT(c.Validate().message(), HasSubstr("ACCELCRYPT_LOG_LEVEL"));
}

// One table drives the parser and docs/configuration.md: every fixed key is
// a row of the doc's key table, and every row is a key (or `route.<alg>` /
// `<backend>.<key>`).
TEST(ConfigValidateTest, DocumentedKeysMatchTheTable) {
  const std::string doc_path = VectorDir() + "/../../docs/configuration.md";
  std::ifstream in(doc_path);
  ASSERT_TRUE(in.good()) << doc_path;
  std::string text((std::istreambuf_iterator<char>(in)), {});
  std::set<std::string> documented;
  std::regex row(R"(^\| `([a-z_.<>]+)`(?:, `([a-z_]+)`)? \|)");
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, row)) {
      documented.insert(m[1]);
      if (m[2].matched) documented.insert(m[2]);
    }
  }
  std::set<std::string> table;
  for (const ConfigKey& k : ConfigKeys()) table.insert(k.name);
  std::set<std::string> doc_fixed;
  for (const std::string& d : documented) {
    if (d == "route.<alg>" || d == "<backend>.<key>") continue;
    doc_fixed.insert(d);
  }
  EXPECT_EQ(doc_fixed, table);
}

}  // namespace
}  // namespace accelcrypt
