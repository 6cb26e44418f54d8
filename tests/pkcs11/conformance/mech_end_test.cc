// SPDX-License-Identifier: Apache-2.0
// What ends an operation, base spec v2.40:
//   5.8.2 C_Encrypt, 5.9.2 C_Decrypt, 5.10.2 C_Digest, 5.11.2 C_Sign: "A
//     call to C_X always terminates the active ... operation unless it
//     returns CKR_BUFFER_TOO_SMALL or is a successful call (i.e., one which
//     returns CKR_OK) to determine the length of the buffer needed";
//   5.8.4 C_EncryptFinal, 5.9.4 C_DecryptFinal, 5.10.5 C_DigestFinal,
//     5.11.4 C_SignFinal: the same sentence;
//   5.8.3 C_EncryptUpdate, 5.9.3 C_DecryptUpdate: "A call to C_XUpdate
//     which results in an error other than CKR_BUFFER_TOO_SMALL terminates
//     the current ... operation";
//   5.10.3 C_DigestUpdate, 5.11.3 C_SignUpdate, 5.12.3 C_VerifyUpdate: "A
//     call to C_XUpdate which results in an error terminates the current
//     ... operation";
//   5.12.2 C_Verify, 5.12.4 C_VerifyFinal: "always terminates the active
//     verification operation".
// "Terminated" is checked the way an application meets it: the next
// C_*Init of that kind succeeds (an active operation would make it
// CKR_OPERATION_ACTIVE, 5.8.1 and the other Init functions).
// Fixture: mech_fixture.h (a read-write user session per test).
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <p11-kit-1/p11-kit/pkcs11.h>

#include <functional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/pkcs11/conformance/conformance_fixture.h"
#include "tests/pkcs11/conformance/mech_fixture.h"
#include "tests/pkcs11/conformance/p11_harness.h"

namespace accelcrypt::p11test::mech {
namespace {

// Op drives one kind of operation with output (digest, encrypt, decrypt,
// sign) through its four functions, so that one check runs for each kind.
struct Op {
  std::string name;
  std::function<CK_RV(CK_SESSION_HANDLE)> init;
  // C_Digest, C_Encrypt, C_Decrypt, C_Sign.
  std::function<CK_RV(CK_SESSION_HANDLE, CK_BYTE_PTR, CK_ULONG, CK_BYTE_PTR,
                      CK_ULONG_PTR)>
      single;
  // C_DigestUpdate, C_SignUpdate (no output: `out`/`out_len` unused),
  // C_EncryptUpdate, C_DecryptUpdate.
  std::function<CK_RV(CK_SESSION_HANDLE, CK_BYTE_PTR, CK_ULONG, CK_BYTE_PTR,
                      CK_ULONG_PTR)>
      update;
  std::function<CK_RV(CK_SESSION_HANDLE, CK_BYTE_PTR, CK_ULONG_PTR)> final;
  Bytes expect;  // the single-part result for kMsg, from libcrypto
  // Encrypt and decrypt (AES-ECB): what C_*Final answers with a partial
  // block left ("AES-ECB": the input is a multiple of the block size).
  // CKR_OK for digest and sign, whose updates have no output.
  CK_RV partial_block_rv = CKR_OK;
  bool cipher() const { return partial_block_rv != CKR_OK; }
};

const Bytes kMsg(32, 0x5a);  // two AES blocks
const Bytes kAesKey(16, 9);
const Bytes kMacKey(32, 3);

Bytes AesEcb(bool encrypt, const Bytes& in) {
  Bytes out(in.size() + 16);
  int n = 0, m = 0;
  EVP_CIPHER_CTX* c = EVP_CIPHER_CTX_new();
  EVP_CipherInit_ex(c, EVP_aes_128_ecb(), nullptr, kAesKey.data(), nullptr,
                    encrypt ? 1 : 0);
  EVP_CIPHER_CTX_set_padding(c, 0);
  EVP_CipherUpdate(c, out.data(), &n, in.data(), static_cast<int>(in.size()));
  EVP_CipherFinal_ex(c, out.data() + n, &m);
  EVP_CIPHER_CTX_free(c);
  out.resize(static_cast<size_t>(n) + static_cast<size_t>(m));
  return out;
}

Bytes HmacSha256(const Bytes& in) {
  Bytes mac(32);
  unsigned int len = 0;
  HMAC(EVP_sha256(), kMacKey.data(), static_cast<int>(kMacKey.size()),
       in.data(), in.size(), mac.data(), &len);
  return mac;
}

class OpEndTest : public MechTest {
 protected:
  void SetUp() override {
    MechTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_CKR(CKR_OK, AesKey(kAesKey, &aes_));
    ASSERT_CKR(CKR_OK, CreateSecretKey(h_, CKK_GENERIC_SECRET, kMacKey, &mac_));
  }

  std::vector<Op> Ops() {
    CK_FUNCTION_LIST* fl = f();
    const CK_OBJECT_HANDLE aes = aes_, mac = mac_;
    std::vector<Op> ops;
    Bytes sha(32);
    unsigned int n = 0;
    EVP_Digest(kMsg.data(), kMsg.size(), sha.data(), &n, EVP_sha256(), nullptr);
    ops.push_back(
        Op{"digest (CKM_SHA256)",
           [fl](CK_SESSION_HANDLE h) {
             CK_MECHANISM m = {CKM_SHA256, nullptr, 0};
             return fl->C_DigestInit(h, &m);
           },
           fl->C_Digest,
           [fl](CK_SESSION_HANDLE h, CK_BYTE_PTR in, CK_ULONG len, CK_BYTE_PTR,
                CK_ULONG_PTR) { return fl->C_DigestUpdate(h, in, len); },
           fl->C_DigestFinal, sha, CKR_OK});
    ops.push_back(Op{"encrypt (CKM_AES_ECB)",
                     [fl, aes](CK_SESSION_HANDLE h) {
                       CK_MECHANISM m = {CKM_AES_ECB, nullptr, 0};
                       return fl->C_EncryptInit(h, &m, aes);
                     },
                     fl->C_Encrypt, fl->C_EncryptUpdate, fl->C_EncryptFinal,
                     AesEcb(true, kMsg), CKR_DATA_LEN_RANGE});
    ops.push_back(Op{"decrypt (CKM_AES_ECB)",
                     [fl, aes](CK_SESSION_HANDLE h) {
                       CK_MECHANISM m = {CKM_AES_ECB, nullptr, 0};
                       return fl->C_DecryptInit(h, &m, aes);
                     },
                     fl->C_Decrypt, fl->C_DecryptUpdate, fl->C_DecryptFinal,
                     AesEcb(false, kMsg), CKR_ENCRYPTED_DATA_LEN_RANGE});
    ops.push_back(
        Op{"sign (CKM_SHA256_HMAC)",
           [fl, mac](CK_SESSION_HANDLE h) {
             CK_MECHANISM m = {CKM_SHA256_HMAC, nullptr, 0};
             return fl->C_SignInit(h, &m, mac);
           },
           fl->C_Sign,
           [fl](CK_SESSION_HANDLE h, CK_BYTE_PTR in, CK_ULONG len, CK_BYTE_PTR,
                CK_ULONG_PTR) { return fl->C_SignUpdate(h, in, len); },
           fl->C_SignFinal, HmacSha256(kMsg), CKR_OK});
    return ops;
  }

  // Session opens a session of its own for one check, so that an
  // operation a module keeps after a failed call touches no other check.
  CK_SESSION_HANDLE Session() {
    CK_SESSION_HANDLE s = CK_INVALID_HANDLE;
    EXPECT_CKR(CKR_OK, OpenRo(&s));
    return s;
  }

  // ExpectEnded: no operation of `op`'s kind is active on `h`: a new
  // C_*Init succeeds, and that operation then runs to its result.
  void ExpectEnded(const Op& op, CK_SESSION_HANDLE h) {
    const CK_RV rv = op.init(h);
    EXPECT_CKR(CKR_OK, rv) << op.name
                           << ": the operation is still active after the "
                              "failed call";
    if (rv != CKR_OK) return;
    Bytes in = kMsg, out(64);
    CK_ULONG len = out.size();
    EXPECT_CKR(CKR_OK, op.single(h, in.data(), in.size(), out.data(), &len))
        << op.name;
    out.resize(len);
    EXPECT_EQ(op.expect, out) << op.name;
  }

  // The verify operation (CKM_SHA256_HMAC), which has no output.
  CK_RV VerifyInit(CK_SESSION_HANDLE h) {
    CK_MECHANISM m = {CKM_SHA256_HMAC, nullptr, 0};
    return f()->C_VerifyInit(h, &m, mac_);
  }
  void ExpectVerifyEnded(CK_SESSION_HANDLE h) {
    const CK_RV rv = VerifyInit(h);
    EXPECT_CKR(CKR_OK, rv)
        << "verify: the operation is still active after the failed call";
    if (rv != CKR_OK) return;
    Bytes in = kMsg, mac = HmacSha256(kMsg);
    EXPECT_CKR(CKR_OK,
               f()->C_Verify(h, in.data(), in.size(), mac.data(), mac.size()));
  }

  CK_OBJECT_HANDLE aes_ = CK_INVALID_HANDLE;
  CK_OBJECT_HANDLE mac_ = CK_INVALID_HANDLE;
};

bool Refused(CK_RV rv) { return rv != CKR_OK && rv != CKR_BUFFER_TOO_SMALL; }

// A single-part size query (NULL output, CKR_OK) leaves the operation
// active for the single-part call (5.8.2, 5.9.2, 5.10.2, 5.11.2, quoted
// above), which "MUST be called after C_*Init without intervening C_*Update
// calls" and "cannot be used to terminate a multi-part operation": a
// C_*Update or C_*Final then is refused. A refused C_*Update or C_*Final is
// a failed call, which terminates the operation (5.8.3/5.8.4, 5.9.3/5.9.4,
// 5.10.3/5.10.5, 5.11.3/5.11.4): the single-part call that follows is
// CKR_OPERATION_NOT_INITIALIZED. (google/pkcs11test's DigestFinalIntersperse
// checks the C_DigestFinal case, with CKR_OPERATION_ACTIVE.) Without the
// multi-part call, the single-part call after the size query gives the
// result.
TEST_P(OpEndTest, SizeQueryThenMultiPartCallEndsOperation) {
  SKIP_IF_DEVIATES("singlepart.size_query_then_update");
  for (const Op& op : Ops()) {
    for (const std::string call : {"update", "final", "none"}) {
      SCOPED_TRACE(op.name + ", size query, then " + call);
      CK_SESSION_HANDLE s = Session();
      Bytes in = kMsg, out(64);
      ASSERT_CKR(CKR_OK, op.init(s));
      CK_ULONG len = 0;
      ASSERT_CKR(CKR_OK, op.single(s, in.data(), in.size(), nullptr, &len));
      EXPECT_GE(len, op.expect.size());
      if (call == "none") {
        len = out.size();
        EXPECT_CKR(CKR_OK,
                   op.single(s, in.data(), in.size(), out.data(), &len));
        out.resize(len);
        EXPECT_EQ(op.expect, out);
        continue;
      }
      len = out.size();
      const CK_RV rv = call == "update" ? op.update(s, in.data(), in.size(),
                                                    out.data(), &len)
                                        : op.final(s, out.data(), &len);
      EXPECT_TRUE(Refused(rv))
          << "the multi-part call returned " << CkrName(rv);
      len = out.size();
      EXPECT_CKR(CKR_OPERATION_NOT_INITIALIZED,
                 op.single(s, in.data(), in.size(), out.data(), &len));
      ExpectEnded(op, s);
    }
  }
}

// 5.8.3, 5.9.3, 5.10.3, 5.11.3, 5.12.3: a failed C_*Update ends the
// operation. The failure every module gives: a NULL data pointer with a
// length, or a NULL output-length pointer (CKR_ARGUMENTS_BAD, 5.1.6).
TEST_P(OpEndTest, FailedUpdateEndsOperation) {
  SKIP_IF_DEVIATES("arguments_bad.keeps_operation");
  Bytes in = kMsg, out(64);
  for (const Op& op : Ops()) {
    // NULL pPart with ulPartLen 16; for C_EncryptUpdate / C_DecryptUpdate
    // also a NULL pulEncryptedPartLen / pulPartLen.
    for (bool null_len : {false, true}) {
      if (null_len && !op.cipher()) continue;  // no output
      SCOPED_TRACE(op.name + (null_len ? ", NULL length pointer"
                                       : ", NULL data pointer"));
      CK_SESSION_HANDLE s = Session();
      ASSERT_CKR(CKR_OK, op.init(s));
      CK_ULONG len = out.size();
      EXPECT_CKR(CKR_ARGUMENTS_BAD,
                 null_len
                     ? op.update(s, in.data(), in.size(), out.data(), nullptr)
                     : op.update(s, nullptr, 16, out.data(), &len));
      ExpectEnded(op, s);
    }
  }
  SCOPED_TRACE("verify (CKM_SHA256_HMAC), NULL data pointer");
  CK_SESSION_HANDLE s = Session();
  ASSERT_CKR(CKR_OK, VerifyInit(s));
  EXPECT_CKR(CKR_ARGUMENTS_BAD, f()->C_VerifyUpdate(s, nullptr, 16));
  ExpectVerifyEnded(s);
}

// 5.10.5, 5.11.4: a C_DigestFinal / C_SignFinal with a NULL length pointer
// (CKR_ARGUMENTS_BAD) ends the operation.
TEST_P(OpEndTest, FailedFinalEndsOperation) {
  SKIP_IF_DEVIATES("arguments_bad.keeps_operation");
  Bytes in = kMsg, out(64);
  for (const Op& op : Ops()) {
    if (op.cipher()) continue;
    SCOPED_TRACE(op.name);
    CK_SESSION_HANDLE s = Session();
    ASSERT_CKR(CKR_OK, op.init(s));
    CK_ULONG len = out.size();
    ASSERT_CKR(CKR_OK, op.update(s, in.data(), in.size(), out.data(), &len));
    EXPECT_CKR(CKR_ARGUMENTS_BAD, op.final(s, out.data(), nullptr));
    ExpectEnded(op, s);
  }
}

// 5.8.4, 5.9.4: a C_EncryptFinal / C_DecryptFinal that fails ends the
// operation: for the data (AES-ECB with a partial block left, current
// mechanisms "AES-ECB": the input is a multiple of the block size) and for
// a NULL length pointer (CKR_ARGUMENTS_BAD).
TEST_P(OpEndTest, FailedCipherFinalEndsOperation) {
  for (const Op& op : Ops()) {
    if (!op.cipher()) continue;
    for (bool partial : {true, false}) {
      SCOPED_TRACE(op.name + (partial ? ", a partial block left"
                                      : ", NULL length pointer"));
      CK_SESSION_HANDLE s = Session();
      Bytes in(partial ? 15 : 16, 1), out(64);
      ASSERT_CKR(CKR_OK, op.init(s));
      CK_ULONG len = out.size();
      ASSERT_CKR(CKR_OK, op.update(s, in.data(), in.size(), out.data(), &len));
      EXPECT_EQ(partial ? 0u : 16u, len);
      len = out.size();
      if (partial) {
        EXPECT_CKR(op.partial_block_rv, op.final(s, out.data(), &len));
      } else {
        EXPECT_CKR(CKR_ARGUMENTS_BAD, op.final(s, out.data(), nullptr));
      }
      ExpectEnded(op, s);
    }
  }
}

// 5.8.2, 5.9.2, 5.10.2, 5.11.2, 5.12.2 (quoted above): a single-part call
// that fails (a NULL length pointer; for C_Verify a NULL signature:
// CKR_ARGUMENTS_BAD) ends the operation.
TEST_P(OpEndTest, FailedSinglePartEndsOperation) {
  SKIP_IF_DEVIATES("arguments_bad.keeps_operation");
  Bytes in = kMsg, out(64);
  for (const Op& op : Ops()) {
    SCOPED_TRACE(op.name);
    CK_SESSION_HANDLE s = Session();
    ASSERT_CKR(CKR_OK, op.init(s));
    EXPECT_CKR(CKR_ARGUMENTS_BAD,
               op.single(s, in.data(), in.size(), out.data(), nullptr));
    ExpectEnded(op, s);
  }
  SCOPED_TRACE("verify (CKM_SHA256_HMAC), NULL signature");
  CK_SESSION_HANDLE s = Session();
  ASSERT_CKR(CKR_OK, VerifyInit(s));
  EXPECT_CKR(CKR_ARGUMENTS_BAD,
             f()->C_Verify(s, in.data(), in.size(), nullptr, 32));
  ExpectVerifyEnded(s);
}

// 5.12.4: "A call to C_VerifyFinal always terminates the active
// verification operation": after a wrong MAC (CKR_SIGNATURE_INVALID) and
// after one of the wrong length (CKR_SIGNATURE_LEN_RANGE, which 5.12.4 lets
// CKR_SIGNATURE_INVALID answer too). CKM_SHA256_HMAC.
TEST_P(OpEndTest, FailedVerifyFinalEndsOperation) {
  Bytes in = kMsg, bad = HmacSha256(kMsg);
  bad[0] ^= 1;
  for (CK_ULONG sig_len : {CK_ULONG{32}, CK_ULONG{16}}) {
    SCOPED_TRACE(sig_len == 32 ? "wrong MAC" : "short MAC");
    CK_SESSION_HANDLE s = Session();
    ASSERT_CKR(CKR_OK, VerifyInit(s));
    ASSERT_CKR(CKR_OK, f()->C_VerifyUpdate(s, in.data(), in.size()));
    const CK_RV rv = f()->C_VerifyFinal(s, bad.data(), sig_len);
    EXPECT_TRUE(rv == CKR_SIGNATURE_INVALID ||
                (sig_len != 32 && rv == CKR_SIGNATURE_LEN_RANGE))
        << CkrName(rv);
    ExpectVerifyEnded(s);
  }
}

ACCELCRYPT_P11_INSTANTIATE(OpEndTest);

}  // namespace
}  // namespace accelcrypt::p11test::mech
