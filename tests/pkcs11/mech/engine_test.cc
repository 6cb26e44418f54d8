// SPDX-License-Identifier: Apache-2.0
// The engine itself: mechanism list and info (CKF_HW), key parsing errors,
// secret key generation and the DRBG.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/pkcs11/mech/mech_test_util.h"

namespace accelcrypt::p11::testing {
namespace {

class EngineTest : public MechTest {};

// Byte strings collected for "all of them differ" checks, keyed as
// std::string: a std::set<Bytes> instantiates vector<uint8_t>'s operator<=>,
// in which GCC 12 at -O3 sees a memcmp bound it cannot prove in range and
// warns (-Wstringop-overread, a false positive; the Release build failed).
class DistinctBytes {
 public:
  // Adds `b`; false when an equal string was already there.
  bool Add(const Bytes& b) { return seen_.emplace(b.begin(), b.end()).second; }
  size_t size() const { return seen_.size(); }

 private:
  std::set<std::string> seen_;
};

const CK_MECHANISM_TYPE kAll[] = {CKM_AES_ECB,
                                  CKM_AES_CBC,
                                  CKM_AES_CBC_PAD,
                                  CKM_AES_CTR,
                                  CKM_AES_GCM,
                                  CKM_AES_KEY_GEN,
                                  CKM_SHA_1,
                                  CKM_SHA224,
                                  CKM_SHA256,
                                  CKM_SHA384,
                                  CKM_SHA512,
                                  CKM_SHA_1_HMAC,
                                  CKM_SHA224_HMAC,
                                  CKM_SHA256_HMAC,
                                  CKM_SHA384_HMAC,
                                  CKM_SHA512_HMAC,
                                  CKM_GENERIC_SECRET_KEY_GEN,
                                  CKM_RSA_PKCS_KEY_PAIR_GEN,
                                  CKM_RSA_PKCS,
                                  CKM_RSA_X_509,
                                  CKM_RSA_PKCS_PSS,
                                  CKM_SHA1_RSA_PKCS,
                                  CKM_SHA224_RSA_PKCS,
                                  CKM_SHA256_RSA_PKCS,
                                  CKM_SHA384_RSA_PKCS,
                                  CKM_SHA512_RSA_PKCS,
                                  CKM_SHA1_RSA_PKCS_PSS,
                                  CKM_SHA224_RSA_PKCS_PSS,
                                  CKM_SHA256_RSA_PKCS_PSS,
                                  CKM_SHA384_RSA_PKCS_PSS,
                                  CKM_SHA512_RSA_PKCS_PSS,
                                  CKM_RSA_PKCS_OAEP,
                                  CKM_DSA_KEY_PAIR_GEN,
                                  CKM_DSA,
                                  CKM_DSA_SHA1,
                                  CKM_DSA_SHA224,
                                  CKM_DSA_SHA256,
                                  CKM_DSA_SHA384,
                                  CKM_DSA_SHA512};

TEST_F(EngineTest, ListAndInfo) {
  std::vector<CK_MECHANISM_TYPE> list = mech_->List();
  std::set<CK_MECHANISM_TYPE> listed(list.begin(), list.end());
  EXPECT_EQ(listed.size(), list.size()) << "duplicates";
  for (CK_MECHANISM_TYPE m : kAll) {
    EXPECT_TRUE(listed.count(m)) << std::hex << m;
    ASSERT_OK_AND_ASSIGN(CK_MECHANISM_INFO info, mech_->Info(m));
    EXPECT_NE(info.flags & ~CKF_HW, 0u) << std::hex << m;
  }
  ASSERT_OK_AND_ASSIGN(CK_MECHANISM_INFO aes, mech_->Info(CKM_AES_GCM));
  EXPECT_EQ(aes.ulMinKeySize, 16u);
  EXPECT_EQ(aes.ulMaxKeySize, 32u);
  EXPECT_EQ(aes.flags & ~CKF_HW, CKF_ENCRYPT | CKF_DECRYPT);
  ASSERT_OK_AND_ASSIGN(CK_MECHANISM_INFO rsa, mech_->Info(CKM_RSA_PKCS));
  EXPECT_LE(rsa.ulMinKeySize, 1024u);
  EXPECT_GE(rsa.ulMaxKeySize, 4096u);
  EXPECT_TRUE(rsa.flags & CKF_VERIFY_RECOVER);
  ASSERT_OK_AND_ASSIGN(CK_MECHANISM_INFO gen,
                       mech_->Info(CKM_RSA_PKCS_KEY_PAIR_GEN));
  EXPECT_EQ(gen.flags, CKF_GENERATE_KEY_PAIR);
  ASSERT_OK_AND_ASSIGN(CK_MECHANISM_INFO sha, mech_->Info(CKM_SHA256));
  EXPECT_EQ(sha.flags & ~CKF_HW, CKF_DIGEST);
  ASSERT_OK_AND_ASSIGN(CK_MECHANISM_INFO hmac, mech_->Info(CKM_SHA256_HMAC));
  EXPECT_EQ(hmac.ulMinKeySize, 1u);
  EXPECT_EQ(Rv(mech_->Info(CKM_AES_CTS).status()), CKR_MECHANISM_INVALID);
  EXPECT_EQ(Rv(mech_->Info(CKM_MD5).status()), CKR_MECHANISM_INVALID);
}

TEST_F(EngineTest, HardwareFlagFollowsTheFirstChoice) {
  // Software only: no CKF_HW anywhere, no operation reports hardware.
  Build({{"backends", "software"}});
  for (CK_MECHANISM_TYPE m : mech_->List()) {
    ASSERT_OK_AND_ASSIGN(CK_MECHANISM_INFO info, mech_->Info(m));
    EXPECT_EQ(info.flags & CKF_HW, 0u) << std::hex << m;
  }
  auto k = SecretKeyOf(CKK_AES, Bytes(16, 1));
  auto op = Start(OpKind::kEncrypt, CKM_AES_ECB, nullptr, 0, k);
  EXPECT_FALSE(op->hardware());
  // The operation and key belong to the core Build() is about to replace.
  op.reset();
  k.reset();

  // Whole build tree: when a hardware backend is the first choice for
  // AES-128-CBC, CKM_AES_CBC says CKF_HW and its operation runs there.
  Build({});
  std::vector<std::string> order =
      core_->router().Candidates(ACCELCRYPT_ALG_AES_128_CBC);
  ASSERT_FALSE(order.empty());
  const Backend* first = core_->registry().Find(order.front());
  if (first == nullptr || !first->hardware()) {
    GTEST_SKIP() << "no hardware backend leads AES-128-CBC here ("
                 << order.front() << ")";
  }
  ASSERT_OK_AND_ASSIGN(CK_MECHANISM_INFO info, mech_->Info(CKM_AES_CBC));
  EXPECT_NE(info.flags & CKF_HW, 0u);
  ASSERT_OK_AND_ASSIGN(CK_MECHANISM_INFO gen, mech_->Info(CKM_AES_KEY_GEN));
  EXPECT_EQ(gen.flags & CKF_HW, 0u) << "key generation runs in libcrypto";
  k = SecretKeyOf(CKK_AES, Bytes(16, 1));
  Bytes iv(16);
  op = Start(OpKind::kEncrypt, CKM_AES_CBC, iv.data(), 16, k);
  ASSERT_OK(OneShot(*op, Bytes(32)).status());
  EXPECT_TRUE(op->hardware());
}

TEST_F(EngineTest, MechanismsFollowWhatTheBackendsOffer) {
  // Without a backend doing RSA and DSA, their mechanisms are not offered.
  Build({{"backends", "x86"}});
  if (core_->registry().Find("x86") == nullptr) {
    GTEST_SKIP() << "the x86 backend is not available on this machine";
  }
  if (core_->router().Supports(ACCELCRYPT_ALG_RSA_SIGN)) {
    GTEST_SKIP() << "the x86 backend does RSA here";
  }
  std::vector<CK_MECHANISM_TYPE> list = mech_->List();
  for (CK_MECHANISM_TYPE m : {CKM_RSA_PKCS, CKM_RSA_X_509, CKM_RSA_PKCS_OAEP,
                              CKM_DSA_SHA256, CKM_RSA_PKCS_KEY_PAIR_GEN}) {
    EXPECT_EQ(std::count(list.begin(), list.end(), m), 0) << std::hex << m;
    EXPECT_EQ(Rv(mech_->Info(m).status()), CKR_MECHANISM_INVALID);
  }
  EXPECT_EQ(std::count(list.begin(), list.end(), CKM_AES_GCM), 1);
}

TEST_F(EngineTest, PrepareKeyErrors) {
  AttributeMap a;
  EXPECT_EQ(Rv(mech_->PrepareKey(a).status()), CKR_TEMPLATE_INCOMPLETE);
  a.SetUlong(CKA_CLASS, CKO_DATA);
  a.SetUlong(CKA_KEY_TYPE, CKK_AES);
  EXPECT_EQ(Rv(mech_->PrepareKey(a).status()), CKR_KEY_TYPE_INCONSISTENT);
  a.SetUlong(CKA_CLASS, CKO_PUBLIC_KEY);
  a.SetUlong(CKA_KEY_TYPE, CKK_EC);
  EXPECT_EQ(Rv(mech_->PrepareKey(a).status()), CKR_KEY_TYPE_INCONSISTENT);
  a.SetUlong(CKA_KEY_TYPE, CKK_RSA);
  EXPECT_EQ(Rv(mech_->PrepareKey(a).status()), CKR_TEMPLATE_INCOMPLETE);
  Bytes n(64, 0xC5);  // 512 bits: below every backend's range
  n.back() |= 1;
  a.Set(CKA_MODULUS, n);
  a.Set(CKA_PUBLIC_EXPONENT, Bytes{1, 0, 1});
  EXPECT_EQ(Rv(mech_->PrepareKey(a).status()), CKR_KEY_SIZE_RANGE);
  a.SetUlong(CKA_CLASS, CKO_PRIVATE_KEY);
  EXPECT_EQ(Rv(mech_->PrepareKey(a).status()), CKR_TEMPLATE_INCOMPLETE);
  AttributeMap g;
  g.SetUlong(CKA_CLASS, CKO_SECRET_KEY);
  g.SetUlong(CKA_KEY_TYPE, CKK_GENERIC_SECRET);
  g.Set(CKA_VALUE, Bytes(4097, 1));
  EXPECT_EQ(Rv(mech_->PrepareKey(g).status()), CKR_KEY_SIZE_RANGE);
  g.SetUlong(CKA_KEY_TYPE, CKK_DES3);
  g.Set(CKA_VALUE, Bytes(24, 1));
  EXPECT_EQ(Rv(mech_->PrepareKey(g).status()), CKR_KEY_TYPE_INCONSISTENT);
  EXPECT_EQ(InitRv(OpKind::kEncrypt, CKM_AES_ECB, nullptr, 0, nullptr),
            CKR_KEY_HANDLE_INVALID);
  EXPECT_EQ(InitRv(OpKind::kEncrypt, CKM_AES_CBC, nullptr, 16,
                   SecretKeyOf(CKK_AES, Bytes(16, 1))),
            CKR_MECHANISM_PARAM_INVALID);
  EXPECT_EQ(InitRv(OpKind::kEncrypt, CKM_AES_KEY_GEN, nullptr, 0,
                   SecretKeyOf(CKK_AES, Bytes(16, 1))),
            CKR_MECHANISM_INVALID);
}

TEST_F(EngineTest, SecretKeyGeneration) {
  CK_MECHANISM aes_gen{CKM_AES_KEY_GEN, nullptr, 0};
  AttributeMap tmpl;
  EXPECT_EQ(Rv(mech_->GenerateKey(aes_gen, tmpl).status()),
            CKR_TEMPLATE_INCOMPLETE);
  tmpl.Set(CKA_VALUE_LEN, Bytes{1, 2, 3});
  EXPECT_EQ(Rv(mech_->GenerateKey(aes_gen, tmpl).status()),
            CKR_ATTRIBUTE_VALUE_INVALID);
  tmpl.SetUlong(CKA_VALUE_LEN, 20);
  EXPECT_EQ(Rv(mech_->GenerateKey(aes_gen, tmpl).status()), CKR_KEY_SIZE_RANGE);
  DistinctBytes seen;
  for (CK_ULONG len : {16ul, 24ul, 32ul}) {
    tmpl.SetUlong(CKA_VALUE_LEN, len);
    ASSERT_OK_AND_ASSIGN(AttributeMap key, mech_->GenerateKey(aes_gen, tmpl));
    EXPECT_EQ(key.GetUlong(CKA_CLASS), CKO_SECRET_KEY);
    EXPECT_EQ(key.GetUlong(CKA_KEY_TYPE), CKK_AES);
    EXPECT_EQ(key.GetUlong(CKA_VALUE_LEN), len);
    EXPECT_EQ(key.GetBytes(CKA_VALUE).size(), len);
    EXPECT_TRUE(seen.Add(key.GetBytes(CKA_VALUE)));
    ASSERT_OK(mech_->PrepareKey(key).status());
  }
  tmpl.SetUlong(CKA_KEY_TYPE, CKK_GENERIC_SECRET);
  EXPECT_EQ(Rv(mech_->GenerateKey(aes_gen, tmpl).status()),
            CKR_TEMPLATE_INCONSISTENT);

  CK_MECHANISM gen{CKM_GENERIC_SECRET_KEY_GEN, nullptr, 0};
  for (CK_ULONG len : {0ul, 4097ul}) {
    tmpl.SetUlong(CKA_VALUE_LEN, len);
    EXPECT_EQ(Rv(mech_->GenerateKey(gen, tmpl).status()), CKR_KEY_SIZE_RANGE);
  }
  for (CK_ULONG len : {1ul, 64ul, 4096ul}) {
    tmpl.SetUlong(CKA_VALUE_LEN, len);
    ASSERT_OK_AND_ASSIGN(AttributeMap key, mech_->GenerateKey(gen, tmpl));
    EXPECT_EQ(key.GetUlong(CKA_KEY_TYPE), CKK_GENERIC_SECRET);
    EXPECT_EQ(key.GetBytes(CKA_VALUE).size(), len);
  }
  tmpl.SetUlong(CKA_CLASS, CKO_PRIVATE_KEY);
  EXPECT_EQ(Rv(mech_->GenerateKey(gen, tmpl).status()),
            CKR_TEMPLATE_INCONSISTENT);
  CK_ULONG param = 1;
  CK_MECHANISM with_param{CKM_GENERIC_SECRET_KEY_GEN, &param, sizeof(param)};
  EXPECT_EQ(Rv(mech_->GenerateKey(with_param, {}).status()),
            CKR_MECHANISM_PARAM_INVALID);
  CK_MECHANISM wrong{CKM_RSA_PKCS, nullptr, 0};
  EXPECT_EQ(Rv(mech_->GenerateKey(wrong, tmpl).status()),
            CKR_MECHANISM_INVALID);
}

TEST_F(EngineTest, RandomDiffersAcrossCallsSeedsAndInstances) {
  Bytes a(32), b(32);
  ASSERT_OK(mech_->GenerateRandom(absl::MakeSpan(a)));
  ASSERT_OK(mech_->GenerateRandom(absl::MakeSpan(b)));
  EXPECT_NE(a, b);
  EXPECT_NE(a, Bytes(32, 0));
  ASSERT_OK(mech_->SeedRandom(Bytes(16, 0x5a)));
  Bytes c(32);
  ASSERT_OK(mech_->GenerateRandom(absl::MakeSpan(c)));
  EXPECT_NE(c, a);
  EXPECT_NE(c, b);
  ASSERT_OK(mech_->SeedRandom(Bytes(10000, 0x11)));  // hashed: > 4 KiB
  ASSERT_OK(mech_->SeedRandom({}));
  // More than one DRBG request (64 KiB each): all parts differ.
  Bytes big(200000);
  ASSERT_OK(mech_->GenerateRandom(absl::MakeSpan(big)));
  DistinctBytes blocks;
  for (size_t off = 0; off + 32 <= big.size(); off += 65536) {
    EXPECT_TRUE(blocks.Add(Bytes(big.begin() + off, big.begin() + off + 32)));
  }
  ASSERT_OK(mech_->GenerateRandom({}));
  // A second engine is an independent DRBG.
  auto other = Mechanisms::Create(core_.get());
  ASSERT_OK(other.status());
  Bytes d(32);
  ASSERT_OK((*other)->GenerateRandom(absl::MakeSpan(d)));
  EXPECT_NE(d, a);
}

TEST_F(EngineTest, RandomDiffersBetweenParentAndForkedChild) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    Bytes child(32);
    const bool ok = mech_->GenerateRandom(absl::MakeSpan(child)).ok();
    ssize_t w = ok ? write(fds[1], child.data(), child.size()) : -1;
    _exit(w == 32 ? 0 : 1);
  }
  close(fds[1]);
  Bytes parent(32), child(32);
  ASSERT_OK(mech_->GenerateRandom(absl::MakeSpan(parent)));
  ASSERT_EQ(read(fds[0], child.data(), child.size()), 32);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_NE(parent, child);
}

TEST_F(EngineTest, SharedKeysAndTheDrbgFromManyThreads) {
  // One prepared key per object is shared by every session's operations,
  // and the DRBG by all of them.
  auto hmac_key = SecretKeyOf(CKK_GENERIC_SECRET, Bytes(32, 0x33));
  auto aes_key = SecretKeyOf(CKK_AES, Bytes(16, 0x44));
  Bytes msg = accelcrypt::testing::Rng(5).Bytes(1000);
  auto ref = Start(OpKind::kSign, CKM_SHA256_HMAC, nullptr, 0, hmac_key);
  ASSERT_OK_AND_ASSIGN(Bytes want_mac, OneShot(*ref, msg));
  ref = Start(OpKind::kEncrypt, CKM_AES_ECB, nullptr, 0, aes_key);
  ASSERT_OK_AND_ASSIGN(Bytes want_ct,
                       OneShot(*ref, Bytes(msg.begin(), msg.begin() + 992)));
  constexpr int kThreads = 6;
  std::vector<Bytes> random(kThreads);
  std::vector<int> good(kThreads, 0);
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        CK_MECHANISM m{CKM_SHA256_HMAC, nullptr, 0};
        auto op = mech_->NewOperation(OpKind::kSign, m, hmac_key);
        auto mac = op.ok() ? OneShot(**op, msg) : op.status();
        CK_MECHANISM e{CKM_AES_ECB, nullptr, 0};
        auto enc = mech_->NewOperation(OpKind::kEncrypt, e, aes_key);
        auto ct = enc.ok() ? OneShot(**enc, absl::MakeConstSpan(msg).first(992))
                           : enc.status();
        Bytes r(16);
        const bool rnd = mech_->GenerateRandom(absl::MakeSpan(r)).ok();
        if (mac.ok() && *mac == want_mac && ct.ok() && *ct == want_ct && rnd) {
          ++good[t];
        }
        random[t] = r;
      }
    });
  }
  for (auto& th : threads) th.join();
  DistinctBytes distinct;
  for (const Bytes& r : random) distinct.Add(r);
  EXPECT_EQ(distinct.size(), static_cast<size_t>(kThreads));
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(good[t], 50) << t;
}

TEST_F(EngineTest, CreateNeedsACore) {
  EXPECT_EQ(Rv(Mechanisms::Create(nullptr).status()), CKR_GENERAL_ERROR);
}

}  // namespace
}  // namespace accelcrypt::p11::testing
