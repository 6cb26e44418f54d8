// SPDX-License-Identifier: Apache-2.0
// Which implementation serves each algorithm under each feature mask, read
// from describe() and the capability list; and clean refusal when masked.
#include <gtest/gtest.h>

#include <string>

#include "backends/x86/cpu_features.h"
#include "tests/backends/x86/x86_abi.h"

namespace accelcrypt::x86::test {
namespace {

bool CpuHasEverything() {
  const CpuFeatures& f = DetectCpuFeatures();
  return f.aesni && f.pclmulqdq && f.vaes && f.vpclmulqdq && f.avx512 &&
         f.shani && f.rdseed;
}

TEST(X86DispatchTest, EntryPointChecksAbiVersion) {
  ASSERT_NE(Desc(), nullptr);
  EXPECT_EQ(Desc()->abi_version, ACCELCRYPT_ABI_VERSION);
  EXPECT_EQ(Desc()->struct_size, sizeof(accelcrypt_backend_desc));
  EXPECT_STREQ(Desc()->name, "x86");
  // The entry point refuses an ABI it was not built for.
  void* self = nullptr;
  accelcrypt_error e = {};
  ASSERT_EQ(Desc()->init(nullptr, &self, &e), ACCELCRYPT_OK) << e.message;
  Desc()->teardown(self);
}

TEST(X86DispatchTest, EntryPointRefusesOtherAbiVersions) {
  ASSERT_NE(Desc(), nullptr);
  EXPECT_EQ(EntryForTest()(ACCELCRYPT_ABI_VERSION + 1), nullptr);
  EXPECT_EQ(EntryForTest()(0), nullptr);
  EXPECT_EQ(EntryForTest()(ACCELCRYPT_ABI_VERSION), Desc());
}

class X86MaskDispatchTest : public ::testing::TestWithParam<MaskCase> {};

TEST_P(X86MaskDispatchTest, DescribeNamesTheChosenPaths) {
  if (!CpuHasEverything()) GTEST_SKIP() << "CPU lacks some x86 extension";
  const MaskCase& m = GetParam();
  auto inst = Instance::Create(m.mask);
  ASSERT_NE(inst, nullptr);
  const std::string d = inst->Describe();
  const std::string par = m.aes_parallel;
  for (const char* alg : {"aes-ecb=", "aes-ctr=", "aes-cbc-dec="}) {
    EXPECT_NE(d.find(alg + par + " "), std::string::npos) << d;
  }
  for (const char* alg : {"aes-cbc-enc=", "aes-cfb128=", "aes-ofb="}) {
    EXPECT_NE(d.find(std::string(alg) + "aesni "), std::string::npos) << d;
  }
  EXPECT_NE(d.find(std::string("aes-gcm=") + m.gcm + " "), std::string::npos)
      << d;
  EXPECT_NE(d.find("sha256=shani"), std::string::npos) << d;
  EXPECT_NE(d.find("rng-entropy=rdseed"), std::string::npos) << d;
  uint32_t flags = 0;
  ASSERT_TRUE(inst->Claims(ACCELCRYPT_ALG_AES_128_CTR, &flags));
  EXPECT_EQ(flags, ACCELCRYPT_CAP_HARDWARE | ACCELCRYPT_CAP_STREAMING |
                       ACCELCRYPT_CAP_PORTABLE_STATE | ACCELCRYPT_CAP_CPU);
  ASSERT_TRUE(inst->Claims(ACCELCRYPT_ALG_AES_256_GCM, &flags));
  EXPECT_EQ(flags, ACCELCRYPT_CAP_HARDWARE | ACCELCRYPT_CAP_STREAMING |
                       ACCELCRYPT_CAP_CPU);
  EXPECT_FALSE(inst->Claims(ACCELCRYPT_ALG_SHA512));
  EXPECT_FALSE(inst->Claims(ACCELCRYPT_ALG_SHA384));
  EXPECT_FALSE(inst->Claims(ACCELCRYPT_ALG_RNG_RANDOM));
  ASSERT_NE(inst->rng(), nullptr);
  EXPECT_EQ(inst->rng()->random_bytes, nullptr);
}

INSTANTIATE_TEST_SUITE_P(Masks, X86MaskDispatchTest,
                         ::testing::ValuesIn(AllMasks()),
                         [](const ::testing::TestParamInfo<MaskCase>& info) {
                           return std::string(info.param.name);
                         });

TEST(X86DispatchTest, EverythingMaskedDeclinesInit) {
  accelcrypt_status s = ACCELCRYPT_OK;
  std::string msg;
  auto inst = Instance::Create("aesni,shani,rdseed,rdrand", &s, &msg);
  EXPECT_EQ(inst, nullptr);
  EXPECT_EQ(s, ACCELCRYPT_ERR_UNAVAILABLE);
  EXPECT_NE(msg.find("x86: no usable extension"), std::string::npos) << msg;
}

TEST(X86DispatchTest, UnknownMaskNameIsRejected) {
  accelcrypt_status s = ACCELCRYPT_OK;
  std::string msg;
  auto inst = Instance::Create("aesni,warpdrive", &s, &msg);
  EXPECT_EQ(inst, nullptr);
  EXPECT_EQ(s, ACCELCRYPT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(msg.find("warpdrive"), std::string::npos) << msg;
}

TEST(X86DispatchTest, MaskedFamiliesDropTheirCapabilities) {
  if (!CpuHasEverything()) GTEST_SKIP() << "CPU lacks some x86 extension";
  {
    auto inst = Instance::Create("aesni");
    ASSERT_NE(inst, nullptr);
    EXPECT_FALSE(inst->Claims(ACCELCRYPT_ALG_AES_128_CBC));
    EXPECT_FALSE(inst->Claims(ACCELCRYPT_ALG_AES_128_GCM));
    EXPECT_EQ(inst->ciphers(), nullptr);
    EXPECT_TRUE(inst->Claims(ACCELCRYPT_ALG_SHA256));
    // A cipher context cannot be made for what is not claimed.
    auto other = Instance::Create("");
    accelcrypt_cipher_ctx* ctx = nullptr;
    accelcrypt_error e = {};
    EXPECT_EQ(other->ciphers()->newctx(inst->handle(),
                                       ACCELCRYPT_ALG_AES_128_CBC, &ctx, &e),
              ACCELCRYPT_ERR_UNIMPLEMENTED);
  }
  {
    auto inst = Instance::Create("shani,rdseed");
    ASSERT_NE(inst, nullptr);
    EXPECT_FALSE(inst->Claims(ACCELCRYPT_ALG_SHA256));
    EXPECT_FALSE(inst->Claims(ACCELCRYPT_ALG_RNG_ENTROPY));
    EXPECT_EQ(inst->digests(), nullptr);
    EXPECT_EQ(inst->rng(), nullptr);
    EXPECT_TRUE(inst->Claims(ACCELCRYPT_ALG_AES_128_GCM));
  }
  {
    // Without PCLMULQDQ there is no GCM, but the other modes stay.
    auto inst = Instance::Create("pclmulqdq");
    ASSERT_NE(inst, nullptr);
    EXPECT_FALSE(inst->Claims(ACCELCRYPT_ALG_AES_128_GCM));
    EXPECT_TRUE(inst->Claims(ACCELCRYPT_ALG_AES_128_CTR));
  }
}

TEST(X86DispatchTest, MaskParsingIsPure) {
  CpuFeatures all;
  all.aesni = all.pclmulqdq = all.ssse3 = all.sse41 = all.avx = all.avx2 =
      all.avx512 = all.vaes = all.vpclmulqdq = all.shani = all.rdrand =
          all.rdseed = true;
  auto m = MaskCpuFeatures(all, " VAES512 , rdrand,");
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(m->avx512);
  EXPECT_FALSE(m->rdrand);
  EXPECT_TRUE(m->vaes);
  Implementations impl = ChooseImplementations(*m);
  EXPECT_EQ(impl.aes_parallel, AesImpl::kVaes256);
  EXPECT_EQ(impl.gcm, GcmImpl::kVaes256);
  m = MaskCpuFeatures(all, "vpclmulqdq");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(ChooseImplementations(*m).gcm, GcmImpl::kAesniPclmul);
  impl = ChooseImplementations(all);
  EXPECT_EQ(impl.aes_parallel, AesImpl::kVaes512);
  EXPECT_EQ(impl.gcm, GcmImpl::kVaes512);
  m = MaskCpuFeatures(all, "aesni");
  ASSERT_TRUE(m.ok());
  impl = ChooseImplementations(*m);
  EXPECT_EQ(impl.aes_serial, AesImpl::kNone);
  EXPECT_EQ(impl.gcm, GcmImpl::kNone);
  EXPECT_FALSE(MaskCpuFeatures(all, "sse9").ok());
}

}  // namespace
}  // namespace accelcrypt::x86::test
