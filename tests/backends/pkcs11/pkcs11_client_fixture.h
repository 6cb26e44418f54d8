// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_TESTS_BACKENDS_PKCS11_PKCS11_CLIENT_FIXTURE_H_
#define ACCELCRYPT_TESTS_BACKENDS_PKCS11_PKCS11_CLIENT_FIXTURE_H_

// The fixture and helpers shared by the PKCS#11 client backend's test
// scenarios (pkcs11_client_{load,keys,fault,token_key}_test.cc): the client
// backend against a real token, through the core's router
// (Router::NewPublicKeyOps) and cross-checked with the software backend. The
// token is the binary's TokenFixture (token_fixture.h): SoftHSMv2 in
// pkcs11_client_test, accelcrypt's own module in tests/pkcs11/client_backend's
// p11_client_backend_test, which builds these same files.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend.h"
#include "core/core.h"
#include "core/pkey.h"
#include "gtest/gtest.h"
#include "tests/backends/pkcs11/softhsm_fixture.h"
#include "tests/backends/pkcs11/token_fixture.h"
#include "tests/support/test_env.h"

namespace accelcrypt::testing {

// The binary's token, made once per test suite (SetUpTestSuite).
extern TokenFixture* g_hsm;

class Pkcs11ClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto hsm = CreateTokenFixture();
    if (hsm.ok()) {
      g_hsm = hsm->release();
    } else {
      create_error_ = std::string(hsm.status().message());
    }
  }
  static void TearDownTestSuite() {
    delete g_hsm;
    g_hsm = nullptr;
  }
  void SetUp() override {
    if (g_hsm == nullptr) {
      if (TokenFixtureRequired()) FAIL() << "no token: " << create_error_;
      GTEST_SKIP() << create_error_;
    }
    auto core = MakeCore(g_hsm->Overrides());
    ASSERT_TRUE(core.ok()) << core.status();
    core_ = *std::move(core);
    pkcs11_ = core_->registry().Find("pkcs11");
    software_ = core_->registry().Find("software");
    if (pkcs11_ == nullptr) {
      std::string why;
      for (const LoadEvent& e : core_->registry().events()) {
        why += e.backend + ": " + e.message + "\n";
      }
      FAIL() << "pkcs11 backend not registered:\n" << why;
    }
    ASSERT_NE(software_, nullptr);
    // The tests count the objects made on the token: the self-tests'
    // session keys (made at first use otherwise) come first.
    core_->router().SelfTestAll();
  }

  Counter& Cell(std::string_view backend, accelcrypt_alg alg) {
    return core_->stats().Cell(core_->stats().RegisterBackend(backend),
                               *FindAlgorithm(alg));
  }
  // Created reads objects_created from the backend's Describe() (~0 when
  // absent).
  static uint64_t Created(const Backend& b);

  static std::string create_error_;
  std::unique_ptr<Core> core_;
  Backend* pkcs11_ = nullptr;
  Backend* software_ = nullptr;
};

PkeyParams Pkcs1();

PkeyParams Pss();

std::vector<uint8_t> Digest(const std::string& s);

// LoadMessage joins the core's load events, one "backend: message" a line.
std::string LoadMessage(const Core& core);

// The latency shim's entry points (latency_shim.cc): `control` takes a
// command ("fail=...", "uninit=N", ...), `flipped` counts the signatures
// it corrupted. Both are null when the shim at `path` cannot be opened or
// lacks them. By default the shim must already be loaded (the core's client
// backend opened it); with `load` it is loaded here, so that a control can
// be set before the core opens the same handle. `handle` is the dlopen
// handle (one reference, for dlclose).
struct LatencyShim {
  void* handle = nullptr;
  long (*control)(const char*) = nullptr;
  long (*flipped)() = nullptr;
};
LatencyShim OpenLatencyShim(const char* path, bool load = false);

}  // namespace accelcrypt::testing

#endif  // ACCELCRYPT_TESTS_BACKENDS_PKCS11_PKCS11_CLIENT_FIXTURE_H_
