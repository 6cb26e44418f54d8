// SPDX-License-Identifier: Apache-2.0
// The helpers of mech_fixture.h.
#include "tests/pkcs11/conformance/mech_fixture.h"

#include <p11-kit-1/p11-kit/pkcs11.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/vector_file.h"
#include "tests/support/test_env.h"

namespace accelcrypt::p11test::mech {

std::string Vec(const std::string& rel) {
  return accelcrypt::testing::VectorDir() + "/" + rel;
}

CK_RV Crypt(CK_FUNCTION_LIST* f, CK_SESSION_HANDLE h, CK_MECHANISM* mech,
            CK_OBJECT_HANDLE key, bool encrypt, const Bytes& in, size_t chunk,
            Bytes* out) {
  out->clear();
  CK_RV rv =
      encrypt ? f->C_EncryptInit(h, mech, key) : f->C_DecryptInit(h, mech, key);
  if (rv != CKR_OK) return rv;
  auto one = [&](CK_BYTE* p, CK_ULONG n, CK_BYTE* o, CK_ULONG* ol) {
    return encrypt ? f->C_Encrypt(h, p, n, o, ol)
                   : f->C_Decrypt(h, p, n, o, ol);
  };
  auto upd = [&](CK_BYTE* p, CK_ULONG n, CK_BYTE* o, CK_ULONG* ol) {
    return encrypt ? f->C_EncryptUpdate(h, p, n, o, ol)
                   : f->C_DecryptUpdate(h, p, n, o, ol);
  };
  auto fin = [&](CK_BYTE* o, CK_ULONG* ol) {
    return encrypt ? f->C_EncryptFinal(h, o, ol) : f->C_DecryptFinal(h, o, ol);
  };
  // A valid pointer even for empty input (whether NULL with length 0 is
  // accepted is not what these tests check).
  Bytes input = in;
  input.reserve(input.size() + 1);
  CK_BYTE* ip = input.data();
  if (chunk == 0) {
    CK_ULONG len = 0;
    rv = one(ip, input.size(), nullptr, &len);
    if (rv != CKR_OK) return rv;
    out->assign(len + 1, 0);
    rv = one(ip, input.size(), out->data(), &len);
    if (rv != CKR_OK) return rv;
    out->resize(len);
    return CKR_OK;
  }
  // Multi-part calls size their output with the two-call convention too
  // (AEAD modes may hold all output back until the final call).
  for (size_t off = 0; off < input.size(); off += chunk) {
    CK_ULONG n = std::min(chunk, input.size() - off);
    CK_ULONG len = 0;
    rv = upd(ip + off, n, nullptr, &len);
    if (rv != CKR_OK) return rv;
    Bytes part(len + 1, 0);
    rv = upd(ip + off, n, part.data(), &len);
    if (rv != CKR_OK) return rv;
    out->insert(out->end(), part.begin(), part.begin() + len);
  }
  CK_ULONG len = 0;
  rv = fin(nullptr, &len);
  if (rv != CKR_OK) return rv;
  Bytes last(len + 1, 0);
  rv = fin(last.data(), &len);
  if (rv != CKR_OK) return rv;
  out->insert(out->end(), last.begin(), last.begin() + len);
  return CKR_OK;
}

CK_RV Digest(CK_FUNCTION_LIST* f, CK_SESSION_HANDLE h, CK_MECHANISM_TYPE m,
             const Bytes& in, size_t chunk, Bytes* out) {
  CK_MECHANISM mech = {m, nullptr, 0};
  CK_RV rv = f->C_DigestInit(h, &mech);
  if (rv != CKR_OK) return rv;
  Bytes input = in;
  input.reserve(input.size() + 1);
  CK_BYTE* ip = input.data();
  out->assign(64, 0);
  CK_ULONG len = out->size();
  if (chunk == 0) {
    rv = f->C_Digest(h, ip, input.size(), out->data(), &len);
  } else {
    for (size_t off = 0; off < input.size() && rv == CKR_OK; off += chunk) {
      rv = f->C_DigestUpdate(h, ip + off, std::min(chunk, input.size() - off));
    }
    if (rv == CKR_OK) rv = f->C_DigestFinal(h, out->data(), &len);
  }
  if (rv == CKR_OK) out->resize(len);
  return rv;
}

void MechTest::RunAesFile(const std::string& file, CK_MECHANISM_TYPE m) {
  auto vf = ParseVectorFile(Vec(file));
  ASSERT_TRUE(vf.ok()) << vf.status();
  ASSERT_FALSE(vf->records.empty());
  int checked = 0;
  for (const VectorRecord& r : vf->records) {
    SCOPED_TRACE(file + ":" + std::to_string(r.line));
    auto key = r.Bytes("KEY");
    auto pt = r.Bytes("PLAINTEXT");
    auto ct = r.Bytes("CIPHERTEXT");
    ASSERT_TRUE(key.ok() && pt.ok() && ct.ok());
    Bytes iv;
    CK_AES_CTR_PARAMS ctr;
    CK_MECHANISM mech = {m, nullptr, 0};
    if (m != CKM_AES_ECB) {
      auto ivr = r.Bytes("IV");
      ASSERT_TRUE(ivr.ok());
      iv = *ivr;
      if (m == CKM_AES_CTR) {
        ctr.ulCounterBits = 128;
        std::memcpy(ctr.cb, iv.data(), 16);
        mech.pParameter = &ctr;
        mech.ulParameterLen = sizeof(ctr);
      } else {
        mech.pParameter = iv.data();
        mech.ulParameterLen = iv.size();
      }
    }
    CK_OBJECT_HANDLE k;
    ASSERT_CKR(CKR_OK, AesKey(*key, &k));
    for (size_t chunk : {size_t{0}, size_t{7}, size_t{16}}) {
      Bytes out;
      ASSERT_CKR(CKR_OK, Crypt(f(), h_, &mech, k, true, *pt, chunk, &out));
      EXPECT_EQ(*ct, out) << "encrypt chunk " << chunk;
      ASSERT_CKR(CKR_OK, Crypt(f(), h_, &mech, k, false, *ct, chunk, &out));
      EXPECT_EQ(*pt, out) << "decrypt chunk " << chunk;
    }
    ++checked;
    EXPECT_CKR(CKR_OK, f()->C_DestroyObject(h_, k));
  }
  EXPECT_GT(checked, 0);
}

}  // namespace accelcrypt::p11test::mech
