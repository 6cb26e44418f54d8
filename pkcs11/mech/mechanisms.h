// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_PKCS11_MECH_MECHANISMS_H_
#define ACCELCRYPT_PKCS11_MECH_MECHANISMS_H_

#include <p11-kit-1/p11-kit/pkcs11.h>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "pkcs11/common/attributes.h"

namespace accelcrypt {
class Core;
}

namespace accelcrypt::p11 {

// The cryptography of the PKCS#11 module, over the core's router (so the
// router's backends, policy, fallback and stats serve every mechanism)
// and, for what the core does not do (RSA/DSA key generation, the DRBG),
// libcrypto in the module's private OSSL_LIB_CTX. Never the default
// library context. All errors carry exact CK_RVs (ck_error.h).
//
// Mechanisms: CKM_AES_ECB, CKM_AES_CBC, CKM_AES_CBC_PAD, CKM_AES_CTR,
// CKM_AES_GCM, CKM_AES_KEY_GEN, CKM_SHA_1, CKM_SHA224/256/384/512,
// CKM_SHA_1_HMAC, CKM_SHA224/256/384/512_HMAC, CKM_GENERIC_SECRET_KEY_GEN,
// CKM_RSA_PKCS_KEY_PAIR_GEN, CKM_RSA_PKCS, CKM_RSA_X_509,
// CKM_RSA_PKCS_PSS, CKM_SHA1/224/256/384/512_RSA_PKCS(_PSS),
// CKM_RSA_PKCS_OAEP, CKM_DSA_KEY_PAIR_GEN, CKM_DSA, CKM_DSA_SHA1/224/256/
// 384/512 (as far as the core routes the family: an RSA mechanism is
// offered only when some backend declares the padding it ends in).
//
// Mechanism rules (PKCS#11 v2.40 current mechanisms):
//  - AES_ECB/AES_CBC: whole blocks in total (CKR_DATA_LEN_RANGE when
//    encrypting, CKR_ENCRYPTED_DATA_LEN_RANGE when decrypting, checked on
//    the one-shot call or at Final); CBC and CBC_PAD take a 16-byte IV as
//    the parameter; CBC_PAD bad padding is CKR_ENCRYPTED_DATA_INVALID.
//  - AES_CTR: CK_AES_CTR_PARAMS, ulCounterBits 1..128. The core increments
//    the whole 128-bit block; for ulCounterBits < 128 a message that would
//    wrap the counter field is refused (CKR_DATA_LEN_RANGE /
//    CKR_ENCRYPTED_DATA_LEN_RANGE) before any of it is processed.
//  - AES_GCM: CK_GCM_PARAMS, ulIvLen 1..256, ulTagBits 32..128 in whole
//    bytes (the core's tag sizes; 0..31 and non-multiples of 8 are
//    CKR_MECHANISM_PARAM_INVALID). Decryption buffers ciphertext||tag and
//    returns all plaintext from Final once the tag matched (Update returns
//    no output); a mismatch is CKR_ENCRYPTED_DATA_INVALID.
//  - HMAC: full-length MACs only; keys CKK_GENERIC_SECRET (or the
//    matching CKK_SHA*_HMAC), 1..4096 bytes.
//  - RSA_PKCS/RSA_X_509/RSA_PKCS_PSS/RSA_PKCS_OAEP and DSA are single-part
//    (Operation::multi_part() false); PSS input is the hashAlg hash;
//    RSA_X_509 input shorter than the modulus is left-padded with zeros,
//    longer or >= n is CKR_DATA_LEN_RANGE; RSA_X_509 decrypt and
//    verify-recover return the whole modulus-length block; DSA signatures
//    are r || s, each as long as q; CKM_DSA input is 20/28/32/48/64 bytes.
//  - Verification failures: CKR_SIGNATURE_LEN_RANGE for a wrong length,
//    CKR_SIGNATURE_INVALID otherwise.

enum class OpKind {
  kEncrypt,
  kDecrypt,
  kDigest,
  kSign,
  kVerify,
  kVerifyRecover,
};

// PreparedKey is a key object's parsed form (AES key bytes, or the core's
// routed PublicKeyOps for RSA/DSA with the token import cache inside),
// built once per object and cached by the module per object handle
// (dropped when the object changes or is destroyed). Thread-safe to share.
class PreparedKey {
 public:
  virtual ~PreparedKey() = default;
  virtual CK_KEY_TYPE key_type() const = 0;
  virtual CK_OBJECT_CLASS object_class() const = 0;
};

// Operation is one active operation of a session (C_*Init .. final). The
// module enforces the PKCS#11 state rules (single-part after update
// refused, termination on error, two-call convention); an Operation only
// computes. Output-size contract: every call that produces output first
// checks `out.size()` against the bound it reports for that call
// (OutputBound); when too small it returns CkError(CKR_BUFFER_TOO_SMALL)
// having changed nothing, so the module can retry after the caller grows
// the buffer. Returns the bytes written.
class Operation {
 public:
  virtual ~Operation() = default;

  // Phase of a call, for OutputBound.
  enum class Call { kOneShot, kUpdate, kFinal };
  // OutputBound is the output size that suffices for `call` with `in_len`
  // input bytes (exact for signatures and digests; may exceed the exact
  // size for CBC_PAD decryption and RSA decryption, which the spec allows).
  virtual size_t OutputBound(Call call, size_t in_len) const = 0;

  // Encrypt/decrypt/digest/sign/verify-recover data in one call (C_Encrypt,
  // C_Decrypt, C_Digest, C_Sign, C_VerifyRecover).
  virtual absl::StatusOr<size_t> OneShot(absl::Span<const uint8_t> in,
                                         absl::Span<uint8_t> out) = 0;
  // Multi-part: Update (output for encrypt/decrypt; none for digest, sign,
  // verify, where `out` is empty) and Final.
  virtual absl::StatusOr<size_t> Update(absl::Span<const uint8_t> in,
                                        absl::Span<uint8_t> out) = 0;
  virtual absl::StatusOr<size_t> Final(absl::Span<uint8_t> out) = 0;
  // Verify (C_Verify) and VerifyFinal (C_VerifyFinal): OK, or
  // CKR_SIGNATURE_INVALID / CKR_SIGNATURE_LEN_RANGE.
  virtual absl::Status Verify(absl::Span<const uint8_t> data,
                              absl::Span<const uint8_t> signature) = 0;
  virtual absl::Status VerifyFinal(absl::Span<const uint8_t> signature) = 0;
  // DigestKey (C_DigestKey) feeds a secret key's value.
  virtual absl::Status DigestKey(const AttributeMap& key) = 0;
  // GetState/SetState (C_GetOperationState/C_SetOperationState): digests
  // only (CKR_STATE_UNSAVEABLE otherwise). The core's digests export no
  // state, so the blob holds the mechanism and the data fed so far
  // (versioned, SHA-256 integrity check; Mechanisms::RestoreDigest
  // replays it and answers CKR_SAVED_STATE_INVALID for anything else).
  // CKR_STATE_UNSAVEABLE once more than 64 KiB were fed or after
  // DigestKey (key material never leaves through a saved state).
  virtual absl::StatusOr<std::vector<uint8_t>> GetState() const = 0;

  // hardware is true when the backend serving it right now is hardware.
  virtual bool hardware() const = 0;

  // Restart lets the module reuse a finished operation for the next C_*Init
  // of the same session and slot instead of allocating a new one (its
  // routed Digest/Cipher is re-initialised with Digest::Init /
  // Cipher::Init). It returns true only when this operation can serve
  // `kind`, `mechanism` and `key` exactly as the Operation NewOperation
  // would make for them (same mechanism and direction, parameters valid,
  // a key of the same type and size, re-keyed with `key`'s value); the
  // operation is then in its just-initialised state. false: it changed
  // nothing the caller may rely on, and the caller must discard it and call
  // NewOperation (which reports the precise error, if any). Only called on
  // an operation that completed successfully.
  virtual bool Restart(OpKind kind, const CK_MECHANISM& mechanism,
                       const PreparedKey* key) {
    (void)kind;
    (void)mechanism;
    (void)key;
    return false;
  }

  // multi_part is false for the single-part-only mechanisms of PKCS#11
  // v2.40 (CKM_RSA_PKCS, CKM_RSA_X_509, CKM_RSA_PKCS_PSS,
  // CKM_RSA_PKCS_OAEP, CKM_DSA): the module should refuse their
  // C_*Update/C_*Final calls; Update/Final/VerifyFinal on such an
  // operation return CKR_FUNCTION_NOT_SUPPORTED and change nothing.
  virtual bool multi_part() const { return true; }
};

// Mechanisms is the module's crypto engine, one per module instance.
class Mechanisms {
 public:
  // Create binds to `core` (not owned; outlives this) and makes the
  // private OSSL_LIB_CTX and the DRBG: CTR-DRBG (AES-256) with entropy
  // input from the OS, a personalization string (label, pid, instance,
  // monotonic time) and reseeds whose additional input comes from
  // Router::Entropy (the hardware RNG when one is registered); see
  // pkcs11/mech/internal/private_libcrypto.h for the exact schedule.
  // CKR_GENERAL_ERROR for a null core, CKR_FUNCTION_FAILED when libcrypto
  // fails. Every method below is thread-safe; Operations are not (one per
  // session and slot).
  static absl::StatusOr<std::unique_ptr<Mechanisms>> Create(Core* core);
  virtual ~Mechanisms() = default;

  // List (C_GetMechanismList) and Info (C_GetMechanismInfo:
  // CKR_MECHANISM_INVALID for others; key sizes in bytes for AES and HMAC,
  // bits for RSA/DSA; CKF_HW only when the router's first choice for the
  // mechanism's algorithm is a hardware backend).
  virtual std::vector<CK_MECHANISM_TYPE> List() const = 0;
  virtual absl::StatusOr<CK_MECHANISM_INFO> Info(
      CK_MECHANISM_TYPE type) const = 0;

  // PrepareKey parses a key object: CKR_TEMPLATE_INCOMPLETE when class,
  // type or a needed value is missing (RSA: modulus, public exponent and,
  // private, the private exponent; CRT values are used when all five are
  // present; DSA: prime, subprime, base, value), CKR_KEY_TYPE_INCONSISTENT
  // for other classes/types, CKR_KEY_SIZE_RANGE for sizes no backend
  // takes. A DSA private key object holds x only; y is derived.
  virtual absl::StatusOr<std::shared_ptr<PreparedKey>> PrepareKey(
      const AttributeMap& key) const = 0;

  // NewOperation starts an operation (the C_*Init calls). `key` is null
  // for digests. Checks: mechanism known and allowed for `kind`
  // (CKR_MECHANISM_INVALID), parameters (CKR_MECHANISM_PARAM_INVALID: bad
  // IV length, bad GCM tag bits, bad PSS/OAEP params), key type and size
  // for the mechanism (CKR_KEY_TYPE_INCONSISTENT, CKR_KEY_SIZE_RANGE). Key
  // usage attributes (CKA_ENCRYPT...) are the module's check, not this.
  virtual absl::StatusOr<std::unique_ptr<Operation>> NewOperation(
      OpKind kind, const CK_MECHANISM& mechanism,
      std::shared_ptr<PreparedKey> key) = 0;

  // RestoreDigest rebuilds a digest operation from GetState's bytes.
  virtual absl::StatusOr<std::unique_ptr<Operation>> RestoreDigest(
      absl::Span<const uint8_t> state) = 0;

  // GenerateKey (CKM_AES_KEY_GEN, CKM_GENERIC_SECRET_KEY_GEN) returns the
  // generated attributes (CKA_VALUE, CKA_VALUE_LEN, CKA_CLASS,
  // CKA_KEY_TYPE) for a key of `tmpl`'s CKA_VALUE_LEN
  // (CKR_TEMPLATE_INCOMPLETE when absent, CKR_KEY_SIZE_RANGE /
  // CKR_ATTRIBUTE_VALUE_INVALID when wrong).
  virtual absl::StatusOr<AttributeMap> GenerateKey(
      const CK_MECHANISM& mechanism, const AttributeMap& tmpl) = 0;
  // GenerateKeyPair (CKM_RSA_PKCS_KEY_PAIR_GEN: CKA_MODULUS_BITS and
  // optional CKA_PUBLIC_EXPONENT from `public_tmpl`; CKM_DSA_KEY_PAIR_GEN:
  // CKA_PRIME/SUBPRIME/BASE from `public_tmpl`) returns the generated
  // (public, private) attributes: class, key type, key values.
  virtual absl::StatusOr<std::pair<AttributeMap, AttributeMap>> GenerateKeyPair(
      const CK_MECHANISM& mechanism, const AttributeMap& public_tmpl,
      const AttributeMap& private_tmpl) = 0;

  // GenerateRandom (C_GenerateRandom) and SeedRandom (C_SeedRandom: a
  // DRBG reseed with the seed as additional input, hashed with SHA-512
  // when longer than 4 KiB). Key pairs come from libcrypto's key
  // generation in the private library context (its own DRBG, OS-seeded);
  // secret keys come from this DRBG.
  virtual absl::Status GenerateRandom(absl::Span<uint8_t> out) = 0;
  virtual absl::Status SeedRandom(absl::Span<const uint8_t> seed) = 0;
};

}  // namespace accelcrypt::p11

#endif  // ACCELCRYPT_PKCS11_MECH_MECHANISMS_H_
