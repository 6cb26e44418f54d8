// SPDX-License-Identifier: Apache-2.0
// CKF_HW (3.5 CK_MECHANISM_INFO: "True if the mechanism is performed by the
// device; false if the mechanism is performed in software"): consistent with
// the backends the module was configured with.
// Fixture and helpers: mech_fixture.h.
#include <p11-kit-1/p11-kit/pkcs11.h>

#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/pkcs11/conformance/conformance_fixture.h"
#include "tests/pkcs11/conformance/mech_fixture.h"
#include "tests/pkcs11/conformance/p11_harness.h"

namespace accelcrypt::p11test::mech {
namespace {

bool CpuHas(const std::string& flag) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0) {
      return (line + " ").find(" " + flag + " ") != std::string::npos;
    }
  }
  return false;
}

class SoftwareOnlyHwFlagTest : public P11Test {
 protected:
  TokenEnvOptions EnvOptions() const override {
    TokenEnvOptions o = P11Test::EnvOptions();
    o.backends = "software";
    return o;
  }
};

// With only the software backend (accelcrypt) or a software token
// (SoftHSMv2), no mechanism claims CKF_HW.
TEST_P(SoftwareOnlyHwFlagTest, NoMechanismClaimsHardware) {
  std::vector<CK_MECHANISM_TYPE> mechs;
  ASSERT_CKR(CKR_OK, MechanismList(f(), slot(), &mechs));
  ASSERT_FALSE(mechs.empty());
  for (CK_MECHANISM_TYPE m : mechs) {
    CK_MECHANISM_INFO mi;
    ASSERT_CKR(CKR_OK, f()->C_GetMechanismInfo(slot(), m, &mi));
    EXPECT_FALSE(mi.flags & CKF_HW) << "mechanism 0x" << std::hex << m;
  }
}

ACCELCRYPT_P11_INSTANTIATE(SoftwareOnlyHwFlagTest);

class HardwareHwFlagTest : public P11Test {};

// With the x86 backend first (the fixture's "x86, software"), AES and
// SHA-256 are served by hardware where the CPU has AES-NI / SHA-NI.
TEST_P(HardwareHwFlagTest, AcceleratedMechanismsClaimHardware) {
  if (is_softhsm()) {
    GTEST_SKIP() << "SoftHSMv2 has no hardware backend to configure";
  }
  int checked = 0;
  if (CpuHas("aes")) {
    for (CK_MECHANISM_TYPE m :
         {CKM_AES_ECB, CKM_AES_CBC, CKM_AES_CTR, CKM_AES_GCM}) {
      CK_MECHANISM_INFO mi;
      ASSERT_CKR(CKR_OK, f()->C_GetMechanismInfo(slot(), m, &mi));
      EXPECT_TRUE(mi.flags & CKF_HW) << "mechanism 0x" << std::hex << m;
      ++checked;
    }
  }
  if (CpuHas("sha_ni")) {
    CK_MECHANISM_INFO mi;
    ASSERT_CKR(CKR_OK, f()->C_GetMechanismInfo(slot(), CKM_SHA256, &mi));
    EXPECT_TRUE(mi.flags & CKF_HW);
    ++checked;
  }
  // RSA is never done by the x86 backend.
  CK_MECHANISM_INFO mi;
  ASSERT_CKR(CKR_OK, f()->C_GetMechanismInfo(slot(), CKM_RSA_PKCS, &mi));
  EXPECT_FALSE(mi.flags & CKF_HW);
  if (checked == 0) GTEST_SKIP() << "CPU has neither AES-NI nor SHA-NI";
}

ACCELCRYPT_P11_INSTANTIATE(HardwareHwFlagTest);

}  // namespace
}  // namespace accelcrypt::p11test::mech
