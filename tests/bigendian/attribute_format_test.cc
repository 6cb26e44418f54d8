// SPDX-License-Identifier: Apache-2.0
// The byte form in which the PKCS#11 module's token store persists
// attributes (AttributeMap::Serialize, pkcs11/common/attributes.h) is the
// same on every host: fixed-width little-endian integers, whatever the
// host's byte order and CK_ULONG width. These tests spell the bytes out, so
// on a big-endian build (scripts/cross_s390x.sh runs them under
// qemu-s390x) any host-order integer in the format shows up as a mismatch.
#include <cstdint>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "pkcs11/common/attributes.h"

namespace accelcrypt::p11 {
namespace {

void PutLe64(std::vector<uint8_t>* out, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out->push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// HostMechanisms is a CK_MECHANISM_TYPE array as the PKCS#11 ABI holds it
// in this process's memory (the form C_SetAttributeValue hands the module).
std::vector<uint8_t> HostMechanisms(const std::vector<CK_MECHANISM_TYPE>& l) {
  std::vector<uint8_t> out(l.size() * sizeof(CK_MECHANISM_TYPE));
  if (!l.empty()) std::memcpy(out.data(), l.data(), out.size());
  return out;
}

TEST(AttributeFormatTest, UlongAttributesAreEightByteLittleEndian) {
  AttributeMap m;
  m.SetUlong(CKA_CLASS, CKO_SECRET_KEY);  // 4
  std::vector<uint8_t> want{1};           // serialisation version
  PutLe64(&want, 1);                      // one attribute
  PutLe64(&want, CKA_CLASS);
  PutLe64(&want, 8);
  PutLe64(&want, CKO_SECRET_KEY);
  EXPECT_EQ(m.Serialize(), want);
}

TEST(AttributeFormatTest, AllowedMechanismsAreEightByteLittleEndianEntries) {
  AttributeMap m;
  m.Set(CKA_ALLOWED_MECHANISMS,
        HostMechanisms({CKM_AES_GCM, CKM_RSA_PKCS, CKM_SHA256_RSA_PKCS_PSS}));
  std::vector<uint8_t> want{1};
  PutLe64(&want, 1);
  PutLe64(&want, CKA_ALLOWED_MECHANISMS);
  PutLe64(&want, 24);
  PutLe64(&want, CKM_AES_GCM);              // 0x1087
  PutLe64(&want, CKM_RSA_PKCS);             // 0x1
  PutLe64(&want, CKM_SHA256_RSA_PKCS_PSS);  // 0x43
  EXPECT_EQ(m.Serialize(), want);

  // And back: the stored form becomes this host's in-memory array again.
  auto parsed = AttributeMap::Parse(want);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(
      parsed->GetBytes(CKA_ALLOWED_MECHANISMS),
      HostMechanisms({CKM_AES_GCM, CKM_RSA_PKCS, CKM_SHA256_RSA_PKCS_PSS}));
}

TEST(AttributeFormatTest, EmptyAllowedMechanismsStayEmpty) {
  AttributeMap m;
  m.Set(CKA_ALLOWED_MECHANISMS, {});
  auto parsed = AttributeMap::Parse(m.Serialize());
  ASSERT_TRUE(parsed.has_value());
  ASSERT_TRUE(parsed->Has(CKA_ALLOWED_MECHANISMS));
  EXPECT_TRUE(parsed->GetBytes(CKA_ALLOWED_MECHANISMS).empty());
}

// A stored mechanism list whose length is no whole number of 8-byte entries
// is refused (the object fails to load with an error), never read as some
// other list.
TEST(AttributeFormatTest, TruncatedAllowedMechanismsAreRefused) {
  std::vector<uint8_t> bytes{1};
  PutLe64(&bytes, 1);
  PutLe64(&bytes, CKA_ALLOWED_MECHANISMS);
  PutLe64(&bytes, 12);
  PutLe64(&bytes, CKM_AES_GCM);
  bytes.insert(bytes.end(), {0x01, 0x00, 0x00, 0x00});
  EXPECT_FALSE(AttributeMap::Parse(bytes).has_value());
}

// Byte strings (values, labels, big integers) are stored as given.
TEST(AttributeFormatTest, ByteStringsAreStoredVerbatim) {
  AttributeMap m;
  m.Set(CKA_MODULUS, std::vector<uint8_t>{0x80, 0x00, 0x01});
  std::vector<uint8_t> want{1};
  PutLe64(&want, 1);
  PutLe64(&want, CKA_MODULUS);
  PutLe64(&want, 3);
  want.insert(want.end(), {0x80, 0x00, 0x01});
  EXPECT_EQ(m.Serialize(), want);
}

}  // namespace
}  // namespace accelcrypt::p11
