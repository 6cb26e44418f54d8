// SPDX-License-Identifier: Apache-2.0
// pkey_bench: RSA-2048 and DSA-2048 signing rates side by side, in one run
// on one SoftHSMv2 token: the token called directly (C_SignInit + C_Sign on
// an imported session key, no accelcrypt), the token through the core's
// router and the PKCS#11 client backend (1 and 2 threads), and the software
// backend. Not a test (rates depend on the machine); prints a table.
#include <dlfcn.h>
#include <p11-kit-1/p11-kit/pkcs11.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "core/core.h"
#include "core/pkey.h"
#include "tests/backends/pkcs11/softhsm_fixture.h"
#include "tests/support/test_env.h"

namespace accelcrypt::testing {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kSeconds = 1.5;

template <typename Fn>
double Rate(int threads, Fn&& op) {
  std::atomic<uint64_t> total{0};
  std::atomic<bool> failed{false};
  std::vector<std::thread> pool;
  pool.reserve(threads);
  auto end = Clock::now() + std::chrono::duration<double>(kSeconds);
  auto start = Clock::now();
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      uint64_t n = 0;
      while (Clock::now() < end) {
        if (!op()) {
          failed = true;
          break;
        }
        ++n;
      }
      total += n;
    });
  }
  for (auto& th : pool) th.join();
  double secs = std::chrono::duration<double>(Clock::now() - start).count();
  return failed ? -1.0 : total / secs;
}

// DirectCSign imports `key` into the token and signs with C_Sign in a loop,
// the way a small harness would, to give the token's own rate.
double DirectCSign(const KeyMaterial& key, const std::vector<uint8_t>& data) {
  void* dl = dlopen(SoftHsm::kModule, RTLD_NOW | RTLD_LOCAL);
  if (dl == nullptr) return -1;
  auto get = reinterpret_cast<CK_RV (*)(CK_FUNCTION_LIST_PTR_PTR)>(
      dlsym(dl, "C_GetFunctionList"));
  CK_FUNCTION_LIST* f = nullptr;
  get(&f);
  CK_C_INITIALIZE_ARGS args{};
  args.flags = CKF_OS_LOCKING_OK;
  CK_RV init = f->C_Initialize(&args);
  CK_SLOT_ID slots[8];
  CK_ULONG n = 8;
  f->C_GetSlotList(CK_TRUE, slots, &n);
  CK_SESSION_HANDLE s;
  f->C_OpenSession(slots[0], CKF_SERIAL_SESSION | CKF_RW_SESSION, nullptr,
                   nullptr, &s);
  std::string pin = SoftHsm::kPin;
  f->C_Login(s, CKU_USER, reinterpret_cast<CK_UTF8CHAR*>(pin.data()),
             pin.size());
  CK_OBJECT_CLASS cls = CKO_PRIVATE_KEY;
  CK_KEY_TYPE type = CKK_RSA;
  CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
  KeyMaterial k = key;
  std::vector<CK_ATTRIBUTE> t = {
      {CKA_CLASS, &cls, sizeof(cls)},
      {CKA_KEY_TYPE, &type, sizeof(type)},
      {CKA_TOKEN, &no, sizeof(no)},
      {CKA_SIGN, &yes, sizeof(yes)},
      {CKA_MODULUS, k.n.data(), k.n.size()},
      {CKA_PUBLIC_EXPONENT, k.e.data(), k.e.size()},
      {CKA_PRIVATE_EXPONENT, k.d.data(), k.d.size()},
      {CKA_PRIME_1, k.p.data(), k.p.size()},
      {CKA_PRIME_2, k.q.data(), k.q.size()},
      {CKA_EXPONENT_1, k.dmp1.data(), k.dmp1.size()},
      {CKA_EXPONENT_2, k.dmq1.data(), k.dmq1.size()},
      {CKA_COEFFICIENT, k.iqmp.data(), k.iqmp.size()}};
  CK_OBJECT_HANDLE h;
  if (f->C_CreateObject(s, t.data(), t.size(), &h) != CKR_OK) return -1;
  CK_MECHANISM m{CKM_RSA_PKCS, nullptr, 0};
  std::vector<uint8_t> sig(512);
  double rate = Rate(1, [&] {
    CK_ULONG len = sig.size();
    return f->C_SignInit(s, &m, h) == CKR_OK &&
           f->C_Sign(s, const_cast<uint8_t*>(data.data()), data.size(),
                     sig.data(), &len) == CKR_OK;
  });
  f->C_DestroyObject(s, h);
  f->C_CloseSession(s);
  if (init == CKR_OK) f->C_Finalize(nullptr);
  return rate;
}

int Main() {
  auto hsm = SoftHsm::Create();
  if (!hsm.ok()) {
    std::fprintf(stderr, "pkey_bench: %s\n",
                 std::string(hsm.status().message()).c_str());
    return 1;
  }
  KeyMaterial rsa = RsaKey(2048);
  std::vector<uint8_t> digest = Sha256({'b', 'e', 'n', 'c', 'h'});
  // DigestInfo(SHA-256) || digest, for the direct CKM_RSA_PKCS harness.
  std::vector<uint8_t> info = {0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60,
                               0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02,
                               0x01, 0x05, 0x00, 0x04, 0x20};
  info.insert(info.end(), digest.begin(), digest.end());
  double direct = DirectCSign(rsa, info);

  auto token_core = MakeCore((*hsm)->Overrides());
  auto soft_core = MakeCore({{"backends", "software"}});
  if (!token_core.ok() || !soft_core.ok()) return 1;
  PkeyParams pkcs1;
  pkcs1.padding = ACCELCRYPT_PAD_PKCS1;
  pkcs1.md = ACCELCRYPT_ALG_SHA256;
  auto tok = (*token_core)->router().NewPublicKeyOps(rsa);
  auto sw = (*soft_core)->router().NewPublicKeyOps(rsa);
  auto sign = [&](PublicKeyOps& ops, const PkeyParams& p) {
    return [&ops, &p, &digest] {
      std::vector<uint8_t> sig(ops.SignatureSize());
      return ops.Sign(p, digest, absl::MakeSpan(sig)).ok();
    };
  };
  double tok1 = Rate(1, sign(**tok, pkcs1));
  double tok2 = Rate(2, sign(**tok, pkcs1));
  double sw1 = Rate(1, sign(**sw, pkcs1));
  std::printf("RSA-2048 PKCS#1 v1.5 sign, ops/s (%.1f s each)\n", kSeconds);
  std::printf("  SoftHSMv2 C_Sign direct (harness)     %8.0f\n", direct);
  std::printf("  router -> pkcs11 client, 1 thread     %8.0f  (%.2fx direct)\n",
              tok1, tok1 / direct);
  std::printf(
      "  router -> pkcs11 client, 2 threads    %8.0f  (%.2fx 1 thread)\n", tok2,
      tok2 / tok1);
  std::printf("  router -> software, 1 thread          %8.0f\n", sw1);
  std::printf("  served by: %s\n", (*tok)->last_backend().c_str());

  KeyMaterial dsa = DsaKeyFromVectors();
  PkeyParams dsa_params;
  dsa_params.md = ACCELCRYPT_ALG_SHA256;
  auto dtok = (*token_core)->router().NewPublicKeyOps(dsa);
  auto dsw = (*soft_core)->router().NewPublicKeyOps(dsa);
  double dt = Rate(1, sign(**dtok, dsa_params));
  double ds = Rate(1, sign(**dsw, dsa_params));
  std::printf("DSA-2048 sign, ops/s\n");
  std::printf("  router -> pkcs11 client (%s)   %8.0f\n",
              (*dtok)->last_backend().c_str(), dt);
  std::printf("  router -> software                    %8.0f\n", ds);
  return 0;
}

}  // namespace
}  // namespace accelcrypt::testing

int main() { return accelcrypt::testing::Main(); }
