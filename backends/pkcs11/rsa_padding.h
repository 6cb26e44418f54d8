// SPDX-License-Identifier: Apache-2.0
// The RSA paddings the PKCS#11 client backend does itself for tokens that
// offer raw RSA (CKM_RSA_X_509) but not the padded mechanism: EMSA-PKCS1-
// v1_5 (type 1), EMSA-PSS encoding and verification, RSAES-PKCS1-v1_5
// (type 2) and RSAES-OAEP encoding and decoding (RFC 8017), over bytes;
// the raw RSA runs on the token (pkey_pkcs11_client.cc). Also the digests
// these paddings and the token's mechanisms name (MdInfo).
#ifndef ACCELCRYPT_BACKENDS_PKCS11_RSA_PADDING_H_
#define ACCELCRYPT_BACKENDS_PKCS11_RSA_PADDING_H_

#include <openssl/types.h>
#include <p11-kit-1/p11-kit/pkcs11.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "accelcrypt/backend.h"

namespace accelcrypt::pkcs11_client {

// MdInfo is one digest as the padding code needs it.
struct MdInfo {
  accelcrypt_alg md;
  CK_MECHANISM_TYPE ckm;
  CK_RSA_PKCS_MGF_TYPE mgf;
  size_t len;
  // DER DigestInfo prefix (RFC 8017 section 9.2, note 1).
  const char* prefix;
  size_t prefix_len;
  const char* ossl_name;  // for EVP_MD_fetch
};

// FindMd returns SHA-1 or a SHA-2 digest (static storage), or nullptr.
const MdInfo* FindMd(accelcrypt_alg md);

// EmsaPkcs1V15Encode returns the k-byte EMSA-PKCS1-v1_5 encoding
// 0x00 0x01 PS(0xff...) 0x00 T (RFC 8017 section 9.2, steps 3 to 5) of
// `t` (a DigestInfo, or the raw input). The caller has checked that
// t.size() + 11 <= k.
std::vector<uint8_t> EmsaPkcs1V15Encode(absl::Span<const uint8_t> t, size_t k);

// EmsaPssEncode writes EMSA-PSS-ENCODE (RFC 8017 section 9.1.1) of the
// digest `m_hash` (md.len bytes) for a modulus of `mod_bits` bits into
// `em`, the modulus length, zero-filled by the caller (a leading zero byte
// stays when emLen is shorter).
// `salt_param` is a length in bytes or ACCELCRYPT_PSS_SALT_DIGEST/_MAX;
// the salt comes from `libctx`'s DRBG. kInvalidArgument when the salt does
// not fit, kUnavailable when there is no randomness, kInternal when a
// digest fails.
absl::Status EmsaPssEncode(OSSL_LIB_CTX* libctx, const MdInfo& md,
                           const MdInfo& mgf, int32_t salt_param,
                           const uint8_t* m_hash, size_t mod_bits,
                           absl::Span<uint8_t> em);

// EmsaPssVerify checks `em` (RSAVP1's output, the modulus length, unmasked
// in place) against the digest `m_hash` (EMSA-PSS-VERIFY, RFC 8017 section
// 9.1.2) for a modulus of `mod_bits` bits. `salt_param` is a length in
// bytes (checked), ACCELCRYPT_PSS_SALT_DIGEST (must be md.len) or another
// negative value (any length). The auth-failed status (AuthFailed) for a
// signature that does not verify, kInternal when a digest fails. Not
// constant time: everything here is public.
absl::Status EmsaPssVerify(OSSL_LIB_CTX* libctx, const MdInfo& md,
                           const MdInfo& mgf, int32_t salt_param,
                           const uint8_t* m_hash, size_t mod_bits,
                           absl::Span<uint8_t> em);

// RsaesEncode writes the RSAES-PKCS1-v1_5 (params.padding
// ACCELCRYPT_PAD_PKCS1) or else RSAES-OAEP (params.md, params.mgf1_md,
// params.label) encoding of `in` (RFC 8017 sections 7.2.1, 7.1.1) into
// `em`, the modulus length, zero-filled by the caller. Randomness from
// `libctx`'s DRBG. kInvalidArgument for a message too long or an OAEP
// digest that is not SHA, kUnavailable when there is no randomness,
// kInternal when a digest fails. `em` holds the message afterwards: the
// caller wipes it.
absl::Status RsaesEncode(OSSL_LIB_CTX* libctx,
                         const accelcrypt_pkey_params& params,
                         const uint8_t* in, size_t in_len,
                         absl::Span<uint8_t> em);

// RsaesDecode checks the padding of `em` (RSADP's output, the modulus
// length; OAEP unmasks it in place) in constant time (RFC 8017 section
// 7.1.2 note: no distinguishable failures; the same holds for PKCS#1 v1.5
// type 2; only the final verdict branches) and returns the offset of the
// message in `em` (the message runs to its end). kInvalidArgument
// "decryption failed (bad ciphertext or padding)" for a bad padding; also
// kInvalidArgument for an OAEP digest that is not SHA or a key too small
// for it, kInternal when a digest fails. `em` holds the message
// afterwards: the caller wipes it.
absl::StatusOr<size_t> RsaesDecode(OSSL_LIB_CTX* libctx,
                                   const accelcrypt_pkey_params& params,
                                   absl::Span<uint8_t> em);

}  // namespace accelcrypt::pkcs11_client

#endif  // ACCELCRYPT_BACKENDS_PKCS11_RSA_PADDING_H_
