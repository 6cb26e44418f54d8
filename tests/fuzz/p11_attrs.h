// SPDX-License-Identifier: Apache-2.0
// Attribute templates from fuzzer bytes for the PKCS#11 targets: types from
// the attributes the module knows (and any CK_ULONG), values of any length
// up to a page. Values sized as the type expects (CK_BBOOL, CK_ULONG) are
// preferred so the fuzzer gets past the first checks; pValue may be NULL
// with any ulValueLen, and for C_GetAttributeValue a buffer of any size.
#ifndef ACCELCRYPT_TESTS_FUZZ_P11_ATTRS_H_
#define ACCELCRYPT_TESTS_FUZZ_P11_ATTRS_H_

#include <p11-kit-1/p11-kit/pkcs11.h>

#include <cstring>
#include <memory>
#include <vector>

#include "tests/fuzz/fuzz_input.h"
#include "tests/fuzz/p11_env.h"

namespace accelcrypt::fuzz {

inline constexpr CK_ATTRIBUTE_TYPE kAttrTypes[] = {CKA_CLASS,
                                                   CKA_TOKEN,
                                                   CKA_PRIVATE,
                                                   CKA_LABEL,
                                                   CKA_APPLICATION,
                                                   CKA_VALUE,
                                                   CKA_OBJECT_ID,
                                                   CKA_KEY_TYPE,
                                                   CKA_ID,
                                                   CKA_SENSITIVE,
                                                   CKA_ENCRYPT,
                                                   CKA_DECRYPT,
                                                   CKA_WRAP,
                                                   CKA_UNWRAP,
                                                   CKA_SIGN,
                                                   CKA_SIGN_RECOVER,
                                                   CKA_VERIFY,
                                                   CKA_VERIFY_RECOVER,
                                                   CKA_DERIVE,
                                                   CKA_START_DATE,
                                                   CKA_END_DATE,
                                                   CKA_MODULUS,
                                                   CKA_MODULUS_BITS,
                                                   CKA_PUBLIC_EXPONENT,
                                                   CKA_PRIVATE_EXPONENT,
                                                   CKA_PRIME_1,
                                                   CKA_PRIME_2,
                                                   CKA_EXPONENT_1,
                                                   CKA_EXPONENT_2,
                                                   CKA_COEFFICIENT,
                                                   CKA_PRIME,
                                                   CKA_SUBPRIME,
                                                   CKA_BASE,
                                                   CKA_VALUE_LEN,
                                                   CKA_EXTRACTABLE,
                                                   CKA_LOCAL,
                                                   CKA_NEVER_EXTRACTABLE,
                                                   CKA_ALWAYS_SENSITIVE,
                                                   CKA_KEY_GEN_MECHANISM,
                                                   CKA_MODIFIABLE,
                                                   CKA_COPYABLE,
                                                   CKA_DESTROYABLE,
                                                   CKA_ALWAYS_AUTHENTICATE,
                                                   CKA_WRAP_WITH_TRUSTED,
                                                   CKA_TRUSTED,
                                                   CKA_CHECK_VALUE,
                                                   CKA_SUBJECT,
                                                   CKA_CERTIFICATE_TYPE,
                                                   CKA_ALLOWED_MECHANISMS,
                                                   CKA_UNWRAP_TEMPLATE,
                                                   CKA_PUBLIC_KEY_INFO,
                                                   CKA_HW_FEATURE_TYPE,
                                                   CKA_VENDOR_DEFINED};

inline constexpr CK_ULONG kClasses[] = {CKO_DATA,        CKO_SECRET_KEY,
                                        CKO_PUBLIC_KEY,  CKO_PRIVATE_KEY,
                                        CKO_CERTIFICATE, 0x1234};
inline constexpr CK_ULONG kKeyTypes[] = {
    CKK_AES, CKK_GENERIC_SECRET, CKK_RSA, CKK_DSA, CKK_EC, 0x77};

// Template owns the attribute array and its values.
class Template {
 public:
  // Read builds up to 12 attributes. With `for_get`, values are output
  // buffers (contents ignored) of the length given.
  void Read(FuzzInput& in, bool for_get = false) {
    const size_t n = in.Pick(13);
    for (size_t i = 0; i < n && !in.empty(); ++i) {
      CK_ATTRIBUTE a{};
      a.type =
          in.Pick(10) == 0
              ? in.U64()
              : kAttrTypes[in.Pick(sizeof(kAttrTypes) / sizeof(kAttrTypes[0]))];
      auto value = std::make_unique<std::vector<uint8_t>>();
      switch (in.Pick(8)) {
        case 0: {  // CK_BBOOL
          value->push_back(in.Pick(4) == 0 ? in.Byte() : in.Bool());
          break;
        }
        case 1: {  // CK_ULONG: a class, key type or any number
          CK_ULONG v = a.type == CKA_CLASS      ? kClasses[in.Pick(6)]
                       : a.type == CKA_KEY_TYPE ? kKeyTypes[in.Pick(6)]
                                                : in.WildLength(16);
          value->resize(sizeof(v));
          std::memcpy(value->data(), &v, sizeof(v));
          break;
        }
        case 2: {  // NULL with a length
          a.pValue = nullptr;
          a.ulValueLen = in.WildLength(8);
          attrs_.push_back(a);
          continue;
        }
        case 3:  // a long value
          *value = in.Bytes(in.Pick(4097));
          break;
        default:
          *value = in.Blob();
          break;
      }
      if (for_get) value->assign(value->size(), 0xcc);
      a.ulValueLen = value->size();
      value->push_back(0);  // never an empty allocation; not counted
      a.pValue = value->data();
      values_.push_back(std::move(value));
      attrs_.push_back(a);
    }
    if (attrs_.empty()) attrs_.reserve(1);
  }
  CK_ATTRIBUTE* data() { return attrs_.empty() ? nullptr : attrs_.data(); }
  CK_ULONG size() const { return attrs_.size(); }
  // Lengths as given, to check C_GetAttributeValue's answers against.
  std::vector<CK_ULONG> Lengths() const {
    std::vector<CK_ULONG> l;
    for (const CK_ATTRIBUTE& a : attrs_) l.push_back(a.ulValueLen);
    return l;
  }

 private:
  std::vector<std::unique_ptr<std::vector<uint8_t>>> values_;
  std::vector<CK_ATTRIBUTE> attrs_;
};

// CheckGet checks C_GetAttributeValue's answer: every length written is
// either CK_UNAVAILABLE_INFORMATION or, when a buffer was given and rv says
// the values were returned, fits it (v2.40 section 5.7).
inline void CheckGet(CK_RV rv, const Template& t,
                     const std::vector<CK_ULONG>& given,
                     const CK_ATTRIBUTE* attrs) {
  if (rv != CKR_OK && rv != CKR_ATTRIBUTE_SENSITIVE &&
      rv != CKR_ATTRIBUTE_TYPE_INVALID && rv != CKR_BUFFER_TOO_SMALL) {
    return;
  }
  for (size_t i = 0; i < given.size(); ++i) {
    const CK_ULONG got = attrs[i].ulValueLen;
    if (attrs[i].pValue == nullptr || got == CK_UNAVAILABLE_INFORMATION) {
      continue;
    }
    Check(got <= given[i]);
  }
}

}  // namespace accelcrypt::fuzz

#endif  // ACCELCRYPT_TESTS_FUZZ_P11_ATTRS_H_
