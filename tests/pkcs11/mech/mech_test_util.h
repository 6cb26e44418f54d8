// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_TESTS_P11MODULE_MECH_MECH_TEST_UTIL_H_
#define ACCELCRYPT_TESTS_P11MODULE_MECH_MECH_TEST_UTIL_H_

#include <p11-kit-1/p11-kit/pkcs11.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/core.h"
#include "core/vector_file.h"
#include "gtest/gtest.h"
#include "pkcs11/common/attributes.h"
#include "pkcs11/common/ck_error.h"
#include "pkcs11/mech/mechanisms.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_env.h"

namespace accelcrypt::p11::testing {

using Bytes = std::vector<uint8_t>;

// MechTest builds a Core from the build tree's backends and the module's
// Mechanisms over it.
class MechTest : public ::testing::Test {
 protected:
  void SetUp() override { Build({}); }
  void Build(const std::map<std::string, std::string>& overrides) {
    mech_.reset();
    auto core = accelcrypt::testing::MakeCore(overrides);
    ASSERT_TRUE(core.ok()) << core.status();
    core_ = *std::move(core);
    auto mech = Mechanisms::Create(core_.get());
    ASSERT_TRUE(mech.ok()) << mech.status();
    mech_ = *std::move(mech);
  }

  std::shared_ptr<PreparedKey> SecretKeyOf(CK_KEY_TYPE type,
                                           absl::Span<const uint8_t> value) {
    AttributeMap key;
    key.SetUlong(CKA_CLASS, CKO_SECRET_KEY);
    key.SetUlong(CKA_KEY_TYPE, type);
    key.Set(CKA_VALUE, value);
    auto prepared = mech_->PrepareKey(key);
    EXPECT_TRUE(prepared.ok()) << prepared.status();
    return prepared.ok() ? *prepared : nullptr;
  }

  std::unique_ptr<Operation> Start(OpKind kind, CK_MECHANISM_TYPE type,
                                   const void* param, size_t param_len,
                                   std::shared_ptr<PreparedKey> key) {
    CK_MECHANISM m{type, const_cast<void*>(param),
                   static_cast<CK_ULONG>(param_len)};
    auto op = mech_->NewOperation(kind, m, std::move(key));
    EXPECT_TRUE(op.ok()) << op.status();
    return op.ok() ? *std::move(op) : nullptr;
  }

  CK_RV InitRv(OpKind kind, CK_MECHANISM_TYPE type, const void* param,
               size_t param_len, std::shared_ptr<PreparedKey> key) {
    CK_MECHANISM m{type, const_cast<void*>(param),
                   static_cast<CK_ULONG>(param_len)};
    return ToCkRv(mech_->NewOperation(kind, m, std::move(key)).status());
  }

  std::unique_ptr<Core> core_;
  std::unique_ptr<Mechanisms> mech_;
};

// OneShot runs op->OneShot with a buffer of OutputBound and trims it.
inline absl::StatusOr<Bytes> OneShot(Operation& op,
                                     absl::Span<const uint8_t> in) {
  Bytes out(op.OutputBound(Operation::Call::kOneShot, in.size()));
  auto n = op.OneShot(in, absl::MakeSpan(out));
  if (!n.ok()) return n.status();
  out.resize(*n);
  return out;
}

// Stream feeds `in` through Update in `chunk`-byte pieces, then Final.
inline absl::StatusOr<Bytes> Stream(Operation& op, absl::Span<const uint8_t> in,
                                    size_t chunk) {
  Bytes out;
  for (size_t off = 0; off < in.size() || (in.empty() && off == 0);
       off += chunk) {
    absl::Span<const uint8_t> piece =
        in.subspan(off, std::min(chunk, in.size() - off));
    Bytes buf(op.OutputBound(Operation::Call::kUpdate, piece.size()));
    auto n = op.Update(piece, absl::MakeSpan(buf));
    if (!n.ok()) return n.status();
    out.insert(out.end(), buf.begin(), buf.begin() + *n);
    if (in.empty()) break;
  }
  Bytes buf(op.OutputBound(Operation::Call::kFinal, 0));
  auto n = op.Final(absl::MakeSpan(buf));
  if (!n.ok()) return n.status();
  out.insert(out.end(), buf.begin(), buf.begin() + *n);
  return out;
}

inline CK_RV Rv(const absl::Status& st) { return ToCkRv(st); }

inline std::string Vec(const std::string& rel) {
  return accelcrypt::testing::VectorDir() + "/" + rel;
}

// Field decodes a hex field of a vector record (empty when absent).
inline Bytes Field(const VectorRecord& r, std::string_view key) {
  auto b = r.Bytes(key);
  return b.ok() ? *b : Bytes();
}

}  // namespace accelcrypt::p11::testing

#endif  // ACCELCRYPT_TESTS_P11MODULE_MECH_MECH_TEST_UTIL_H_
