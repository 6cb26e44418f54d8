// SPDX-License-Identifier: Apache-2.0
// PKCS#11 mechanism parameters: CK_GCM_PARAMS, CK_AES_CTR_PARAMS, CBC IVs,
// CK_RSA_PKCS_OAEP_PARAMS and CK_RSA_PKCS_PSS_PARAMS with wild lengths and
// values, passed with any ulParameterLen (the parameter block is exactly
// that long, on the heap, so a module reading past it is caught), then the
// operation run with the two-call size convention (NULL output, a short
// buffer, then the size asked for). Lengths inside the structures describe
// real buffers (a caller lying there is undetectable by any module); their
// values, bit counts and the NULL pointers are the fuzzer's.
#include <p11-kit-1/p11-kit/pkcs11.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tests/fuzz/fuzz_input.h"
#include "tests/fuzz/p11_env.h"

namespace {

using accelcrypt::fuzz::Check;
using accelcrypt::fuzz::FuzzInput;
using accelcrypt::fuzz::P11Env;

enum class Op { kEncrypt, kDecrypt, kSign, kVerify };

struct Case {
  CK_MECHANISM_TYPE mech;
  int key;  // 0 AES, 1 RSA, 2 DSA, 3 generic secret (HMAC)
  bool asym_public_for_encrypt;
};

constexpr Case kCases[] = {
    {CKM_AES_ECB, 0, false},          {CKM_AES_CBC, 0, false},
    {CKM_AES_CBC_PAD, 0, false},      {CKM_AES_CTR, 0, false},
    {CKM_AES_GCM, 0, false},          {CKM_RSA_PKCS, 1, true},
    {CKM_RSA_X_509, 1, true},         {CKM_RSA_PKCS_OAEP, 1, true},
    {CKM_RSA_PKCS_PSS, 1, true},      {CKM_SHA256_RSA_PKCS_PSS, 1, true},
    {CKM_SHA1_RSA_PKCS_PSS, 1, true}, {CKM_SHA512_RSA_PKCS_PSS, 1, true},
    {CKM_SHA256_RSA_PKCS, 1, true},   {CKM_DSA, 2, true},
    {CKM_DSA_SHA256, 2, true},        {CKM_SHA256_HMAC, 3, false},
    {CKM_SHA_1_HMAC, 3, false}};

constexpr CK_MECHANISM_TYPE kHashes[] = {CKM_SHA_1,  CKM_SHA224, CKM_SHA256,
                                         CKM_SHA384, CKM_SHA512, CKM_MD5,
                                         CKM_AES_CBC};
constexpr CK_RSA_PKCS_MGF_TYPE kMgfs[] = {CKG_MGF1_SHA1,
                                          CKG_MGF1_SHA224,
                                          CKG_MGF1_SHA256,
                                          CKG_MGF1_SHA384,
                                          CKG_MGF1_SHA512,
                                          0,
                                          0x99};

// Params owns the parameter block and the buffers its pointers refer to.
struct Params {
  std::vector<uint8_t> block;  // exactly ulParameterLen bytes
  std::vector<std::vector<uint8_t>> buffers;
  bool null = false;

  uint8_t* Buffer(FuzzInput& in, CK_ULONG* len, bool allow_null) {
    if (allow_null && in.Pick(8) == 0) {
      *len = in.Bool() ? 0 : in.Byte();
      return nullptr;
    }
    buffers.push_back(in.Blob());
    buffers.back().push_back(0);  // never an empty allocation
    *len = buffers.back().size() - 1;
    return buffers.back().data();
  }
  template <typename T>
  void Set(FuzzInput& in, const T& s) {
    // ulParameterLen: the structure's size mostly, else anything from 0
    // to a page (longer blocks are zero-filled after the structure).
    size_t len = sizeof(T);
    if (in.Pick(4) == 0) len = in.Pick(4097);
    block.assign(len, 0);
    if (len > 0) std::memcpy(block.data(), &s, std::min(len, sizeof(T)));
  }
};

void BuildParams(FuzzInput& in, CK_MECHANISM_TYPE mech, Params* p) {
  if (in.Pick(16) == 0) {
    p->null = true;  // pParameter NULL, ulParameterLen from the fuzzer
    p->block.resize(in.Bool() ? 0 : in.Pick(64));
    return;
  }
  switch (mech) {
    case CKM_AES_GCM: {
      CK_GCM_PARAMS g{};
      g.pIv = p->Buffer(in, &g.ulIvLen, true);
      g.ulIvBits = in.Bool() ? g.ulIvLen * 8 : in.U64();
      g.pAAD = p->Buffer(in, &g.ulAADLen, true);
      static constexpr CK_ULONG kTags[] = {128, 96, 64, 32, 120, 0, 129, 256};
      g.ulTagBits = in.Pick(4) == 0 ? in.U64() : kTags[in.Pick(8)];
      p->Set(in, g);
      break;
    }
    case CKM_AES_CTR: {
      CK_AES_CTR_PARAMS c{};
      c.ulCounterBits = in.Bool() ? in.Pick(140) : in.U64();
      std::vector<uint8_t> cb = in.Bytes(16);
      if (!cb.empty()) std::memcpy(c.cb, cb.data(), cb.size());
      p->Set(in, c);
      break;
    }
    case CKM_RSA_PKCS_OAEP: {
      CK_RSA_PKCS_OAEP_PARAMS o{};
      o.hashAlg = kHashes[in.Pick(7)];
      o.mgf = kMgfs[in.Pick(7)];
      o.source = in.Bool() ? CKZ_DATA_SPECIFIED : in.U32();
      o.pSourceData = p->Buffer(in, &o.ulSourceDataLen, true);
      p->Set(in, o);
      break;
    }
    case CKM_RSA_PKCS_PSS:
    case CKM_SHA1_RSA_PKCS_PSS:
    case CKM_SHA256_RSA_PKCS_PSS:
    case CKM_SHA512_RSA_PKCS_PSS: {
      CK_RSA_PKCS_PSS_PARAMS s{};
      s.hashAlg = kHashes[in.Pick(7)];
      s.mgf = kMgfs[in.Pick(7)];
      s.sLen = in.Bool() ? in.Pick(130) : in.U64();
      p->Set(in, s);
      break;
    }
    default: {
      // IVs (CBC), or a parameter where none is taken.
      CK_ULONG len = 0;
      uint8_t* b = p->Buffer(in, &len, false);
      p->block.assign(b, b + len);
      break;
    }
  }
}

CK_RV Run(CK_FUNCTION_LIST* f, CK_SESSION_HANDLE s, Op op, FuzzInput& in) {
  std::vector<uint8_t> data = in.Blob();
  std::vector<uint8_t> other = in.Blob();  // a signature to verify
  const bool multi = in.Bool();
  if (op == Op::kVerify) {
    if (multi) {
      CK_RV rv = f->C_VerifyUpdate(s, data.data(), data.size());
      if (rv != CKR_OK) return rv;
      return f->C_VerifyFinal(s, other.data(), other.size());
    }
    return f->C_Verify(s, data.data(), data.size(), other.data(), other.size());
  }
  // Two-call convention: size query, maybe a short buffer, then the size.
  CK_ULONG len = 0;
  CK_RV rv;
  auto call = [&](CK_BYTE_PTR out, CK_ULONG* l) -> CK_RV {
    switch (op) {
      case Op::kEncrypt:
        return f->C_Encrypt(s, data.data(), data.size(), out, l);
      case Op::kDecrypt:
        return f->C_Decrypt(s, data.data(), data.size(), out, l);
      default:
        return f->C_Sign(s, data.data(), data.size(), out, l);
    }
  };
  if (multi) {
    std::vector<uint8_t> out(data.size() + 64);
    CK_ULONG l = out.size();
    switch (op) {
      case Op::kEncrypt:
        rv = f->C_EncryptUpdate(s, data.data(), data.size(), out.data(), &l);
        if (rv == CKR_OK) {
          l = out.size();
          rv = f->C_EncryptFinal(s, out.data(), &l);
        }
        return rv;
      case Op::kDecrypt:
        rv = f->C_DecryptUpdate(s, data.data(), data.size(), out.data(), &l);
        if (rv == CKR_OK) {
          l = out.size();
          rv = f->C_DecryptFinal(s, out.data(), &l);
        }
        return rv;
      default:
        rv = f->C_SignUpdate(s, data.data(), data.size());
        if (rv == CKR_OK) rv = f->C_SignFinal(s, nullptr, &l);
        if (rv == CKR_OK && l <= 4096) {
          std::vector<uint8_t> sig(l);
          rv = f->C_SignFinal(s, sig.data(), &l);
        }
        return rv;
    }
  }
  rv = call(nullptr, &len);
  if (rv != CKR_OK) return rv;
  Check(len <= 1 << 20);
  std::vector<uint8_t> out(len + 1);
  if (len > 0 && in.Bool()) {
    const CK_ULONG offered = in.Pick(len);
    CK_ULONG short_len = offered;
    rv = call(out.data(), &short_len);
    // The size asked for may be an upper bound (padding, RSA decryption):
    // a shorter buffer may do. If not, the answer is the size needed and
    // the operation stays active (PKCS#11 v2.40 section 5.2).
    if (rv != CKR_BUFFER_TOO_SMALL) return rv;
    Check(short_len > offered && short_len <= len);
  }
  CK_ULONG got = len;
  rv = call(out.data(), &got);
  if (rv == CKR_OK) Check(got <= len);
  return rv;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  P11Env::Get();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  P11Env& env = P11Env::Get();
  CK_FUNCTION_LIST* f = env.f();
  FuzzInput in(data, size);
  CK_SESSION_HANDLE s = env.Session(true);
  Check(s != CK_INVALID_HANDLE);
  const Case& c = kCases[in.Pick(sizeof(kCases) / sizeof(kCases[0]))];
  const Op op = static_cast<Op>(in.Pick(4));
  CK_OBJECT_HANDLE key = CK_INVALID_HANDLE;
  switch (c.key) {
    case 0: {
      static constexpr size_t kLens[] = {16, 24, 32};
      key = env.CreateSecret(s, CKK_AES, kLens[in.Pick(3)]);
      break;
    }
    case 1:
      key = (op == Op::kEncrypt || op == Op::kVerify) ? env.CreateRsaPublic(s)
                                                      : env.CreateRsaPrivate(s);
      break;
    case 2:
      key =
          op == Op::kVerify ? env.CreateDsaPublic(s) : env.CreateDsaPrivate(s);
      break;
    default:
      key = env.CreateSecret(s, CKK_GENERIC_SECRET, 32);
      break;
  }
  Check(key != CK_INVALID_HANDLE);
  const int rounds = 1 + in.Pick(3);
  for (int r = 0; r < rounds && !in.empty(); ++r) {
    Params params;
    BuildParams(in, c.mech, &params);
    CK_MECHANISM m{c.mech, params.null ? nullptr : params.block.data(),
                   static_cast<CK_ULONG>(params.block.size())};
    if (!params.null && params.block.empty()) {
      m.pParameter = in.Bool() ? nullptr : params.block.data();
    }
    CK_RV rv;
    switch (op) {
      case Op::kEncrypt:
        rv = f->C_EncryptInit(s, &m, key);
        break;
      case Op::kDecrypt:
        rv = f->C_DecryptInit(s, &m, key);
        break;
      case Op::kSign:
        rv = f->C_SignInit(s, &m, key);
        break;
      default:
        rv = f->C_VerifyInit(s, &m, key);
        break;
    }
    // The module must have copied what it keeps: wipe the caller's block.
    if (!params.block.empty()) {
      std::memset(params.block.data(), 0xa5, params.block.size());
    }
    for (auto& b : params.buffers) std::memset(b.data(), 0xa5, b.size());
    if (rv != CKR_OK) continue;
    rv = Run(f, s, op, in);
    // A finished or failed operation is over; one still active (the
    // fuzzer stopped in the middle) is ended by closing the session.
    (void)rv;
  }
  f->C_CloseSession(s);
  return 0;
}
