// SPDX-License-Identifier: Apache-2.0
// RSA paddings done by the PKCS#11 client backend over the token's raw RSA
// (rsa_padding.h): EMSA-PKCS1-v1_5, EMSA-PSS, RSAES-PKCS1-v1_5 and
// RSAES-OAEP (RFC 8017), with MGF1 and digests from the backend's private
// library context, and the constant-time checks of decryption padding.
#include "backends/pkcs11/rsa_padding.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <utility>

#include "backends/pkcs11/ck_status.h"

namespace accelcrypt::pkcs11_client {
namespace {

constexpr MdInfo kMds[] = {
    {ACCELCRYPT_ALG_SHA1, CKM_SHA_1, CKG_MGF1_SHA1, 20,
     "\x30\x21\x30\x09\x06\x05\x2b\x0e\x03\x02\x1a\x05\x00\x04\x14", 15,
     "SHA1"},
    {ACCELCRYPT_ALG_SHA224, CKM_SHA224, CKG_MGF1_SHA224, 28,
     "\x30\x2d\x30\x0d\x06\x09\x60\x86\x48\x01\x65\x03\x04\x02\x04\x05\x00\x04"
     "\x1c",
     19, "SHA2-224"},
    {ACCELCRYPT_ALG_SHA256, CKM_SHA256, CKG_MGF1_SHA256, 32,
     "\x30\x31\x30\x0d\x06\x09\x60\x86\x48\x01\x65\x03\x04\x02\x01\x05\x00\x04"
     "\x20",
     19, "SHA2-256"},
    {ACCELCRYPT_ALG_SHA384, CKM_SHA384, CKG_MGF1_SHA384, 48,
     "\x30\x41\x30\x0d\x06\x09\x60\x86\x48\x01\x65\x03\x04\x02\x02\x05\x00\x04"
     "\x30",
     19, "SHA2-384"},
    {ACCELCRYPT_ALG_SHA512, CKM_SHA512, CKG_MGF1_SHA512, 64,
     "\x30\x51\x30\x0d\x06\x09\x60\x86\x48\x01\x65\x03\x04\x02\x03\x05\x00\x04"
     "\x40",
     19, "SHA2-512"},
};

// Hash runs `md` over the concatenation of `parts` in the backend's private
// library context.
bool Hash(OSSL_LIB_CTX* libctx, const MdInfo& md,
          std::initializer_list<std::pair<const uint8_t*, size_t>> parts,
          uint8_t* out) {
  EVP_MD* evp = EVP_MD_fetch(libctx, md.ossl_name, nullptr);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  bool ok = evp != nullptr && ctx != nullptr &&
            EVP_DigestInit_ex(ctx, evp, nullptr) == 1;
  for (const auto& [p, n] : parts) {
    ok = ok && EVP_DigestUpdate(ctx, p, n) == 1;
  }
  ok = ok && EVP_DigestFinal_ex(ctx, out, nullptr) == 1;
  EVP_MD_CTX_free(ctx);
  EVP_MD_free(evp);
  return ok;
}

// Mgf1Xor XORs MGF1(seed) (RFC 8017 appendix B.2.1) into out[0..len).
bool Mgf1Xor(OSSL_LIB_CTX* libctx, const MdInfo& md, const uint8_t* seed,
             size_t seed_len, uint8_t* out, size_t len) {
  uint8_t block[64];
  size_t done = 0;
  for (uint32_t counter = 0; done < len; ++counter) {
    uint8_t c[4] = {static_cast<uint8_t>(counter >> 24),
                    static_cast<uint8_t>(counter >> 16),
                    static_cast<uint8_t>(counter >> 8),
                    static_cast<uint8_t>(counter)};
    if (!Hash(libctx, md, {{seed, seed_len}, {c, 4}}, block)) return false;
    for (size_t i = 0; i < md.len && done < len; ++i) out[done++] ^= block[i];
  }
  OPENSSL_cleanse(block, sizeof(block));
  return true;
}

// Constant-time helpers: masks are all ones (true) or zero (false).
uint32_t CtIsZero(uint32_t x) { return 0u - ((~x & (x - 1)) >> 31); }
uint32_t CtEq(uint32_t a, uint32_t b) { return CtIsZero(a ^ b); }
// CtLt for a, b < 2^62.
uint32_t CtLt(size_t a, size_t b) {
  return 0u - static_cast<uint32_t>((a - b) >> 63);
}
size_t CtSelect(uint32_t mask, size_t a, size_t b) {
  size_t m =
      static_cast<size_t>(static_cast<int64_t>(static_cast<int32_t>(mask)));
  return (a & m) | (b & ~m);
}

}  // namespace

const MdInfo* FindMd(accelcrypt_alg md) {
  for (const MdInfo& m : kMds) {
    if (m.md == md) return &m;
  }
  return nullptr;
}

std::vector<uint8_t> EmsaPkcs1V15Encode(absl::Span<const uint8_t> t, size_t k) {
  std::vector<uint8_t> em(k, 0xff);
  em[0] = 0;
  em[1] = 1;
  em[k - t.size() - 1] = 0;
  std::copy(t.begin(), t.end(), em.end() - t.size());
  return em;
}

// The salt comes from the private library context's DRBG.
absl::Status EmsaPssEncode(OSSL_LIB_CTX* libctx, const MdInfo& md,
                           const MdInfo& mgf, int32_t salt_param,
                           const uint8_t* m_hash, size_t mod_bits,
                           absl::Span<uint8_t> em) {
  const size_t mod_len = em.size();
  const size_t em_bits = mod_bits - 1;
  const size_t em_len = (em_bits + 7) / 8;
  long salt_len = salt_param;
  if (salt_len == ACCELCRYPT_PSS_SALT_DIGEST) {
    salt_len = static_cast<long>(md.len);
  } else if (salt_len == ACCELCRYPT_PSS_SALT_MAX) {
    salt_len = static_cast<long>(em_len) - static_cast<long>(md.len) - 2;
  }
  if (salt_len < 0 || em_len < md.len + static_cast<size_t>(salt_len) + 2) {
    return absl::InvalidArgumentError("pkcs11: PSS salt length does not fit");
  }
  std::vector<uint8_t> salt(static_cast<size_t>(salt_len));
  if (!salt.empty() &&
      RAND_bytes_ex(libctx, salt.data(), salt.size(), 0) != 1) {
    return absl::UnavailableError("pkcs11: no random salt");
  }
  const uint8_t zeros[8] = {};
  uint8_t* out = em.data() + (mod_len - em_len);
  const size_t db_len = em_len - md.len - 1;
  uint8_t* h = out + db_len;
  if (!Hash(libctx, md,
            {{zeros, 8}, {m_hash, md.len}, {salt.data(), salt.size()}}, h)) {
    return absl::InternalError("pkcs11: PSS hash failed");
  }
  out[db_len - salt.size() - 1] = 0x01;
  std::copy(salt.begin(), salt.end(), out + db_len - salt.size());
  if (!Mgf1Xor(libctx, mgf, h, md.len, out, db_len)) {
    return absl::InternalError("pkcs11: MGF1 failed");
  }
  out[0] &= static_cast<uint8_t>(0xff >> (8 * em_len - em_bits));
  out[em_len - 1] = 0xbc;
  return absl::OkStatus();
}

// Everything here is public: no constant time needed.
absl::Status EmsaPssVerify(OSSL_LIB_CTX* libctx, const MdInfo& md,
                           const MdInfo& mgf, int32_t salt_param,
                           const uint8_t* m_hash, size_t mod_bits,
                           absl::Span<uint8_t> em) {
  const size_t mod_len = em.size();
  const size_t em_bits = mod_bits - 1;
  const size_t em_len = (em_bits + 7) / 8;
  for (size_t i = 0; i < mod_len - em_len; ++i) {
    if (em[i] != 0) return AuthFailed("RSA-PSS");
  }
  uint8_t* e = em.data() + (mod_len - em_len);
  if (em_len < md.len + 2 || e[em_len - 1] != 0xbc) {
    return AuthFailed("RSA-PSS");
  }
  const size_t db_len = em_len - md.len - 1;
  const uint8_t* h = e + db_len;
  const size_t spare = 8 * em_len - em_bits;
  if (spare != 0 && (e[0] >> (8 - spare)) != 0) return AuthFailed("RSA-PSS");
  if (!Mgf1Xor(libctx, mgf, h, md.len, e, db_len)) {
    return absl::InternalError("pkcs11: MGF1 failed");
  }
  e[0] &= static_cast<uint8_t>(0xff >> spare);
  size_t one = 0;
  while (one < db_len && e[one] == 0) ++one;
  if (one == db_len || e[one] != 0x01) return AuthFailed("RSA-PSS");
  const size_t salt_len = db_len - one - 1;
  if ((salt_param >= 0 && salt_len != static_cast<size_t>(salt_param)) ||
      (salt_param == ACCELCRYPT_PSS_SALT_DIGEST && salt_len != md.len)) {
    return AuthFailed("RSA-PSS");
  }
  const uint8_t zeros[8] = {};
  uint8_t h2[64];
  if (!Hash(libctx, md, {{zeros, 8}, {m_hash, md.len}, {e + one + 1, salt_len}},
            h2)) {
    return absl::InternalError("pkcs11: PSS hash failed");
  }
  return std::memcmp(h2, h, md.len) == 0 ? absl::OkStatus()
                                         : AuthFailed("RSA-PSS");
}

absl::Status RsaesEncode(OSSL_LIB_CTX* libctx,
                         const accelcrypt_pkey_params& params,
                         const uint8_t* in, size_t in_len,
                         absl::Span<uint8_t> em) {
  const size_t k = em.size();
  if (params.padding == ACCELCRYPT_PAD_PKCS1) {
    if (in_len + 11 > k) {
      return absl::InvalidArgumentError("pkcs11: message too long");
    }
    const size_t ps_len = k - in_len - 3;
    em[1] = 0x02;
    uint8_t* ps = em.data() + 2;
    if (RAND_bytes_ex(libctx, ps, ps_len, 0) != 1) {
      return absl::UnavailableError("pkcs11: no random padding");
    }
    for (size_t i = 0; i < ps_len; ++i) {
      while (ps[i] == 0) {
        if (RAND_bytes_ex(libctx, ps + i, 1, 0) != 1) {
          return absl::UnavailableError("pkcs11: no random padding");
        }
      }
    }
    // An empty message may come as a null pointer: copy nothing then.
    if (in_len > 0) std::memcpy(em.data() + 3 + ps_len, in, in_len);
  } else {
    const MdInfo* md = FindMd(params.md);
    const MdInfo* mgf = params.mgf1_md != 0 ? FindMd(params.mgf1_md) : md;
    if (md == nullptr || mgf == nullptr) {
      return absl::InvalidArgumentError("pkcs11: OAEP needs a SHA digest");
    }
    const size_t h = md->len;
    if (k < 2 * h + 2 || in_len > k - 2 * h - 2) {
      return absl::InvalidArgumentError("pkcs11: message too long for OAEP");
    }
    uint8_t* seed = em.data() + 1;
    uint8_t* db = em.data() + 1 + h;
    const size_t db_len = k - h - 1;
    if (!Hash(libctx, *md, {{params.label, params.label_len}}, db)) {
      return absl::InternalError("pkcs11: OAEP label hash failed");
    }
    db[db_len - in_len - 1] = 0x01;
    if (in_len > 0) std::memcpy(db + db_len - in_len, in, in_len);
    if (RAND_bytes_ex(libctx, seed, h, 0) != 1) {
      return absl::UnavailableError("pkcs11: no random seed");
    }
    if (!Mgf1Xor(libctx, *mgf, seed, h, db, db_len) ||
        !Mgf1Xor(libctx, *mgf, db, db_len, seed, h)) {
      return absl::InternalError("pkcs11: MGF1 failed");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<size_t> RsaesDecode(OSSL_LIB_CTX* libctx,
                                   const accelcrypt_pkey_params& params,
                                   absl::Span<uint8_t> em) {
  const size_t k = em.size();
  uint32_t good = CtEq(em[0], 0);
  size_t msg_start = 0;
  if (params.padding == ACCELCRYPT_PAD_PKCS1) {
    good &= CtEq(em[1], 2);
    uint32_t found = 0;
    for (size_t i = 2; i < k; ++i) {
      uint32_t zero = CtEq(em[i], 0);
      msg_start = CtSelect(~found & zero, i + 1, msg_start);
      found |= zero;
    }
    // At least 8 bytes of PS: the separator at index 10 or later.
    good &= found & ~CtLt(msg_start, 11);
  } else {
    const MdInfo* md = FindMd(params.md);
    const MdInfo* mgf = params.mgf1_md != 0 ? FindMd(params.mgf1_md) : md;
    if (md == nullptr || mgf == nullptr) {
      OPENSSL_cleanse(em.data(), em.size());
      return absl::InvalidArgumentError("pkcs11: OAEP needs a SHA digest");
    }
    const size_t h = md->len;
    if (k < 2 * h + 2) {
      OPENSSL_cleanse(em.data(), em.size());
      return absl::InvalidArgumentError("pkcs11: key too small for OAEP");
    }
    uint8_t* seed = em.data() + 1;
    uint8_t* db = em.data() + 1 + h;
    const size_t db_len = k - h - 1;
    uint8_t lhash[64];
    if (!Hash(libctx, *md, {{params.label, params.label_len}}, lhash) ||
        !Mgf1Xor(libctx, *mgf, db, db_len, seed, h) ||
        !Mgf1Xor(libctx, *mgf, seed, h, db, db_len)) {
      OPENSSL_cleanse(em.data(), em.size());
      return absl::InternalError("pkcs11: OAEP hash failed");
    }
    uint32_t diff = 0;
    for (size_t i = 0; i < h; ++i) diff |= db[i] ^ lhash[i];
    good &= CtIsZero(diff);
    uint32_t found = 0, bad = 0;
    for (size_t i = h; i < db_len; ++i) {
      uint32_t one = CtEq(db[i], 1);
      uint32_t zero = CtEq(db[i], 0);
      msg_start = CtSelect(~found & one, 1 + h + i + 1, msg_start);
      bad |= ~found & ~one & ~zero;
      found |= one;
    }
    good &= found & ~bad;
  }
  if (!good) {
    return absl::InvalidArgumentError(
        "pkcs11: decryption failed (bad ciphertext or padding)");
  }
  return msg_start;
}

}  // namespace accelcrypt::pkcs11_client
