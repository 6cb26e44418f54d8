// SPDX-License-Identifier: Apache-2.0
// The deviation table: every place where a module under test provably does
// not do what the PKCS#11 specification says, with the section. A test that
// checks such a rule calls SKIP_IF_DEVIATES(id) first, so it skips for that
// module only (with this text as the reason) and still asserts the rule for
// every other module. Entries are added only after the module's behaviour
// was observed and checked against the spec text; never to hide a failure of
// accelcrypt's own module (those are bugs to fix).
#include <p11-kit-1/p11-kit/pkcs11.h>

#include "tests/pkcs11/conformance/conformance_fixture.h"

namespace accelcrypt::p11test {

namespace {

const Deviation kDeviations[] = {
    // Observed with SoftHSMv2 2.6.1 (Debian 12 softhsm2 2.6.1-2).
    {ModuleKind::kSoftHsm2, "logout.not_logged_in",
     "C_Logout returns CKR_OK when no user is logged in (before a login and "
     "on a second logout); base spec 5.6.8 lists CKR_USER_NOT_LOGGED_IN"},
    {ModuleKind::kSoftHsm2, "setpin.elsewhere_not_seen",
     "after another process changed the user PIN (C_SetPIN), C_Login in a "
     "process initialised before the change still takes the old PIN and "
     "refuses the new one until C_Finalize + C_Initialize (the token's PIN "
     "record is kept from before); base spec 4.4/5.6.9: the PIN belongs to "
     "the token, which every application shares"},
    {ModuleKind::kSoftHsm2, "encryptinit.key_handle_invalid",
     "C_EncryptInit with an invalid key handle returns "
     "CKR_OBJECT_HANDLE_INVALID; base spec 5.8.1 names "
     "CKR_KEY_HANDLE_INVALID (CKR_OBJECT_HANDLE_INVALID is not among its "
     "return values)"},
    {ModuleKind::kSoftHsm2, "create.wrong_lengths",
     "a CKA_CLASS value of the wrong length makes C_CreateObject return "
     "CKR_TEMPLATE_INCOMPLETE; base spec 4.1.1 requires "
     "CKR_ATTRIBUTE_VALUE_INVALID for an invalid value of a valid attribute"},
    {ModuleKind::kSoftHsm2, "singlepart.after_update",
     "C_Digest after C_DigestUpdate (and C_Encrypt after C_EncryptUpdate) "
     "returns CKR_OK; base spec 5.10.2/5.8.2: the single-part call cannot "
     "terminate a multi-part operation"},
    {ModuleKind::kSoftHsm2, "singlepart.size_query_then_update",
     "after a C_Digest size query (NULL pDigest), C_DigestUpdate and "
     "C_DigestFinal return CKR_OK and turn the operation multi-part (and so "
     "for C_Encrypt, C_Decrypt, C_Sign and their updates and finals); base "
     "spec 5.10.2 (likewise 5.8.2, 5.9.2, 5.11.2): the size query leaves the "
     "single-part operation active, C_Digest \"MUST be called after "
     "C_DigestInit without intervening C_DigestUpdate calls\", so the "
     "multi-part call is refused and, as a failed C_DigestUpdate/"
     "C_DigestFinal (5.10.3/5.10.5), ends the operation"},
    {ModuleKind::kSoftHsm2, "arguments_bad.keeps_operation",
     "C_DigestUpdate, C_SignUpdate, C_VerifyUpdate, C_EncryptUpdate and "
     "C_DecryptUpdate with a NULL data or length pointer, C_DigestFinal and "
     "C_SignFinal with a NULL length pointer, C_Digest, C_Sign, C_Encrypt "
     "and C_Decrypt with a NULL length pointer and C_Verify with a NULL "
     "signature return CKR_ARGUMENTS_BAD and leave the "
     "operation active (the next C_*Init is CKR_OPERATION_ACTIVE); base spec "
     "5.10.3/5.11.3/5.12.3 (\"A call to C_DigestUpdate which results in an "
     "error terminates the current digest operation\"), 5.8.3/5.9.3 (an "
     "error other than CKR_BUFFER_TOO_SMALL terminates it), 5.10.5/5.11.4 "
     "and 5.8.2/5.9.2/5.10.2/5.11.2 (\"always terminates ... unless it "
     "returns CKR_BUFFER_TOO_SMALL or is a successful call ... to determine "
     "the length\"), 5.12.2 (C_Verify \"always terminates\"). Its "
     "C_EncryptFinal/C_DecryptFinal with a NULL length pointer do end it"},
    {ModuleKind::kSoftHsm2, "cbc.bad_iv_code",
     "CKM_AES_CBC with an 8-byte IV gives CKR_MECHANISM_INVALID, with no "
     "parameter CKR_ARGUMENTS_BAD; current mechanisms \"AES\" (16-byte IV) and "
     "base spec 5.1.6 call for CKR_MECHANISM_PARAM_INVALID"},
    {ModuleKind::kSoftHsm2, "gcm.bad_tag_bits_code",
     "CKM_AES_GCM with ulTagBits = 136 gives CKR_ARGUMENTS_BAD; current "
     "mechanisms \"GCM and CCM\" (ulTagBits at most 128) and base spec 5.1.6 "
     "call for "
     "CKR_MECHANISM_PARAM_INVALID"},
    {ModuleKind::kSoftHsm2, "gcm.bad_tag_code",
     "CKM_AES_GCM decryption with a wrong tag returns CKR_GENERAL_ERROR "
     "(the test still requires a failure); base spec 5.1.6 calls for "
     "CKR_ENCRYPTED_DATA_INVALID (v3.0: CKR_AEAD_DECRYPT_FAILED)"},
    {ModuleKind::kSoftHsm2, "cbcpad.bad_padding_code",
     "CKM_AES_CBC_PAD decryption of a block with invalid padding returns "
     "CKR_GENERAL_ERROR (the test still requires a failure); base spec "
     "5.1.6/5.9.2 call for CKR_ENCRYPTED_DATA_INVALID"},
    {ModuleKind::kSoftHsm2, "opstate.not_supported",
     "C_GetOperationState returns CKR_FUNCTION_NOT_SUPPORTED (allowed by "
     "base spec 5.1.6 for an unsupported function, but then the digest "
     "state save/restore of 5.6.5/5.6.6 cannot be shown)"},
    {ModuleKind::kSoftHsm2, "pss.hash_mismatch",
     "CKM_SHA256_RSA_PKCS_PSS with hashAlg = CKM_SHA_1 gives "
     "CKR_ARGUMENTS_BAD; current mechanisms 2.1.9 (hashAlg must match the "
     "mechanism's hash) and base spec 5.1.6 call for "
     "CKR_MECHANISM_PARAM_INVALID"},
    {ModuleKind::kSoftHsm2, "oaep.bad_ciphertext_code",
     "CKM_RSA_PKCS_OAEP decryption of a corrupted ciphertext returns "
     "CKR_GENERAL_ERROR; base spec 5.1.6/5.9.2 call for "
     "CKR_ENCRYPTED_DATA_INVALID"},
    {ModuleKind::kSoftHsm2, "oaep.sha256_label",
     "CKM_RSA_PKCS_OAEP accepts only hashAlg CKM_SHA_1 / CKG_MGF1_SHA1 "
     "without a label and refuses SHA-256 with a label with "
     "CKR_ARGUMENTS_BAD; current mechanisms 2.1.7/2.1.8 define any hash and "
     "CKZ_DATA_SPECIFIED labels (an unsupported parameter would be "
     "CKR_MECHANISM_PARAM_INVALID)"},
};

}  // namespace

const char* DeviationPrefix(ModuleKind module) {
  return module == ModuleKind::kSoftHsm2 ? "SoftHSMv2 2.6.1" : "accelcrypt";
}

const Deviation* FindDeviation(ModuleKind module, std::string_view id) {
  for (const Deviation& d : kDeviations) {
    if (d.module == module && id == d.id) return &d;
  }
  return nullptr;
}

}  // namespace accelcrypt::p11test
