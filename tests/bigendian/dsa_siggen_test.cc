// SPDX-License-Identifier: Apache-2.0
// dsa/SigGen.rsp on every backend that claims DSA: each record's (R, S) is
// a signature by the record's key (DSA signing is randomised, so the file
// can only be checked by verifying), and must verify; the same signature
// over a changed message must not. Built natively and for s390x
// (scripts/cross_s390x.sh), so that every file in tests/vectors runs
// big-endian.
#include <openssl/evp.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/pkey.h"
#include "core/vector_file.h"
#include "gtest/gtest.h"
#include "tests/support/test_env.h"
#include "tests/support/vector_digest.h"

namespace accelcrypt::testing {
namespace {

std::string Field(const VectorRecord& r, const char* key) {
  std::string v = r.Get(key);
  if (v.empty()) v = r.SectionValue(key).value_or("");
  return v;
}

// DerInteger encodes a big-endian unsigned value as a minimal DER INTEGER.
std::vector<uint8_t> DerInteger(const std::vector<uint8_t>& v) {
  size_t start = 0;
  while (start + 1 < v.size() && v[start] == 0) ++start;
  const bool pad = start == v.size() || (v[start] & 0x80) != 0;
  std::vector<uint8_t> out{
      0x02, static_cast<uint8_t>(v.size() - start + (pad ? 1 : 0))};
  if (pad) out.push_back(0);
  out.insert(out.end(), v.begin() + start, v.end());
  return out;
}

// DssSigValue is the DER SEQUENCE { r INTEGER, s INTEGER } the core takes.
std::vector<uint8_t> DssSigValue(const std::vector<uint8_t>& r,
                                 const std::vector<uint8_t>& s) {
  std::vector<uint8_t> body = DerInteger(r);
  std::vector<uint8_t> s_der = DerInteger(s);
  body.insert(body.end(), s_der.begin(), s_der.end());
  std::vector<uint8_t> out{0x30};
  if (body.size() >= 128) out.push_back(0x81);
  out.push_back(static_cast<uint8_t>(body.size()));
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

TEST(DsaSigGenVectorsTest, EverySignatureVerifiesOnEveryBackend) {
  const std::string kFile = "dsa/SigGen.rsp";
  auto file = ParseVectorFile(VectorDir() + "/" + kFile);
  ASSERT_TRUE(file.ok()) << file.status();
  size_t backends = 0;
  for (const auto& backend : SharedRegistry().backends()) {
    const accelcrypt_capability* cap =
        backend->Capability(ACCELCRYPT_ALG_DSA_SIGN);
    if (cap == nullptr || (cap->flags & ACCELCRYPT_CAP_KEY_IMPORT) == 0) {
      continue;
    }
    ++backends;
    size_t verified = 0;
    for (const VectorRecord& r : file->records) {
      if (!r.Has("Msg") || !r.Has("R")) continue;
      SCOPED_TRACE(std::string(backend->name()) + " SigGen.rsp line " +
                   std::to_string(r.line));
      KeyMaterial key;
      key.type = KeyMaterial::Type::kDsa;
      key.dsa_p = FromHex(Field(r, "P"));
      key.dsa_q = FromHex(Field(r, "Q"));
      key.dsa_g = FromHex(Field(r, "G"));
      key.dsa_y = FromHex(r.Get("Y"));
      ASSERT_FALSE(key.dsa_p.empty() || key.dsa_q.empty() || key.dsa_g.empty());
      if (key.bits() < cap->min_key_bits || key.bits() > cap->max_key_bits) {
        continue;
      }
      auto loaded = backend->LoadKey(ACCELCRYPT_ALG_DSA_SIGN, key);
      ASSERT_TRUE(loaded.ok()) << loaded.status();
      const std::string mod = r.SectionValue("mod").value_or("");
      std::vector<uint8_t> msg = FromHex(r.Get("Msg"));
      PkeyParams params;
      std::vector<uint8_t> digest =
          VectorDigest(mod.substr(mod.rfind(' ') + 1), msg, &params.md);
      ASSERT_NE(params.md, 0u) << "no digest in [mod = " << mod << "]";
      const std::vector<uint8_t> sig =
          DssSigValue(FromHex(r.Get("R")), FromHex(r.Get("S")));
      absl::Status ok = (*loaded)->Verify(params, digest, sig);
      EXPECT_TRUE(ok.ok()) << ok;
      msg[0] ^= 0x01;
      digest = VectorDigest(mod.substr(mod.rfind(' ') + 1), msg, &params.md);
      EXPECT_FALSE((*loaded)->Verify(params, digest, sig).ok())
          << "verified over a changed message";
      ++verified;
    }
    // 150 records: 10 sections of 15, L = 2048 with N = 224 and 256.
    EXPECT_EQ(verified, 150u) << backend->name();
  }
  EXPECT_GT(backends, 0u) << "no backend claims DSA with key import";
}

}  // namespace
}  // namespace accelcrypt::testing
