// SPDX-License-Identifier: Apache-2.0
#include "core/algorithms.h"

#include <array>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "core/status.h"

namespace accelcrypt {
namespace {

// PKCS#11 v2.40 mechanism numbers (pkcs11t.h). Kept as numbers so core does
// not depend on PKCS#11 headers.
constexpr uint64_t kCkmAesEcb = 0x1081;
constexpr uint64_t kCkmAesCbc = 0x1082;
constexpr uint64_t kCkmAesCtr = 0x1086;
constexpr uint64_t kCkmAesGcm = 0x1087;
constexpr uint64_t kCkmAesOfb = 0x2104;
constexpr uint64_t kCkmAesCfb128 = 0x2107;
constexpr uint64_t kCkmSha1 = 0x0220;
constexpr uint64_t kCkmSha224 = 0x0255;
constexpr uint64_t kCkmSha256 = 0x0250;
constexpr uint64_t kCkmSha384 = 0x0260;
constexpr uint64_t kCkmSha512 = 0x0270;
constexpr uint64_t kCkmRsaPkcs = 0x0001;
constexpr uint64_t kCkmDsa = 0x0011;

constexpr AlgorithmInfo Cipher(accelcrypt_alg id, std::string_view name,
                               std::string_view names, std::string_view key,
                               CipherMode mode, size_t key_len, size_t iv_len,
                               size_t block_len, uint64_t ckm, size_t index) {
  return AlgorithmInfo{id,      Family::kCipher, name,      names, key, mode,
                       key_len, iv_len,          block_len, 0,     ckm, index};
}

constexpr AlgorithmInfo Digest(accelcrypt_alg id, std::string_view name,
                               std::string_view names, std::string_view key,
                               size_t block_len, size_t digest_len,
                               uint64_t ckm, size_t index) {
  return AlgorithmInfo{id,        Family::kDigest,   name, names,
                       key,       CipherMode::kNone, 0,    0,
                       block_len, digest_len,        ckm,  index};
}

// OpenSSL names follow providers/implementations/include/prov/names.h of
// OpenSSL 3.0 (canonical name, aliases, OID).
constexpr std::array<AlgorithmInfo, kNumAlgorithms> kAlgorithms = {{
    Cipher(ACCELCRYPT_ALG_AES_128_ECB, "AES-128-ECB",
           "AES-128-ECB:2.16.840.1.101.3.4.1.1", "aes-128-ecb",
           CipherMode::kEcb, 16, 0, 16, kCkmAesEcb, 0),
    Cipher(ACCELCRYPT_ALG_AES_192_ECB, "AES-192-ECB",
           "AES-192-ECB:2.16.840.1.101.3.4.1.21", "aes-192-ecb",
           CipherMode::kEcb, 24, 0, 16, kCkmAesEcb, 1),
    Cipher(ACCELCRYPT_ALG_AES_256_ECB, "AES-256-ECB",
           "AES-256-ECB:2.16.840.1.101.3.4.1.41", "aes-256-ecb",
           CipherMode::kEcb, 32, 0, 16, kCkmAesEcb, 2),
    Cipher(ACCELCRYPT_ALG_AES_128_CBC, "AES-128-CBC",
           "AES-128-CBC:AES128:2.16.840.1.101.3.4.1.2", "aes-128-cbc",
           CipherMode::kCbc, 16, 16, 16, kCkmAesCbc, 3),
    Cipher(ACCELCRYPT_ALG_AES_192_CBC, "AES-192-CBC",
           "AES-192-CBC:AES192:2.16.840.1.101.3.4.1.22", "aes-192-cbc",
           CipherMode::kCbc, 24, 16, 16, kCkmAesCbc, 4),
    Cipher(ACCELCRYPT_ALG_AES_256_CBC, "AES-256-CBC",
           "AES-256-CBC:AES256:2.16.840.1.101.3.4.1.42", "aes-256-cbc",
           CipherMode::kCbc, 32, 16, 16, kCkmAesCbc, 5),
    Cipher(ACCELCRYPT_ALG_AES_128_CFB128, "AES-128-CFB",
           "AES-128-CFB:2.16.840.1.101.3.4.1.4", "aes-128-cfb",
           CipherMode::kCfb128, 16, 16, 1, kCkmAesCfb128, 6),
    Cipher(ACCELCRYPT_ALG_AES_192_CFB128, "AES-192-CFB",
           "AES-192-CFB:2.16.840.1.101.3.4.1.24", "aes-192-cfb",
           CipherMode::kCfb128, 24, 16, 1, kCkmAesCfb128, 7),
    Cipher(ACCELCRYPT_ALG_AES_256_CFB128, "AES-256-CFB",
           "AES-256-CFB:2.16.840.1.101.3.4.1.44", "aes-256-cfb",
           CipherMode::kCfb128, 32, 16, 1, kCkmAesCfb128, 8),
    Cipher(ACCELCRYPT_ALG_AES_128_OFB, "AES-128-OFB",
           "AES-128-OFB:2.16.840.1.101.3.4.1.3", "aes-128-ofb",
           CipherMode::kOfb, 16, 16, 1, kCkmAesOfb, 9),
    Cipher(ACCELCRYPT_ALG_AES_192_OFB, "AES-192-OFB",
           "AES-192-OFB:2.16.840.1.101.3.4.1.23", "aes-192-ofb",
           CipherMode::kOfb, 24, 16, 1, kCkmAesOfb, 10),
    Cipher(ACCELCRYPT_ALG_AES_256_OFB, "AES-256-OFB",
           "AES-256-OFB:2.16.840.1.101.3.4.1.43", "aes-256-ofb",
           CipherMode::kOfb, 32, 16, 1, kCkmAesOfb, 11),
    Cipher(ACCELCRYPT_ALG_AES_128_CTR, "AES-128-CTR", "AES-128-CTR",
           "aes-128-ctr", CipherMode::kCtr, 16, 16, 1, kCkmAesCtr, 12),
    Cipher(ACCELCRYPT_ALG_AES_192_CTR, "AES-192-CTR", "AES-192-CTR",
           "aes-192-ctr", CipherMode::kCtr, 24, 16, 1, kCkmAesCtr, 13),
    Cipher(ACCELCRYPT_ALG_AES_256_CTR, "AES-256-CTR", "AES-256-CTR",
           "aes-256-ctr", CipherMode::kCtr, 32, 16, 1, kCkmAesCtr, 14),
    Cipher(ACCELCRYPT_ALG_AES_128_GCM, "AES-128-GCM",
           "AES-128-GCM:id-aes128-GCM:2.16.840.1.101.3.4.1.6", "aes-128-gcm",
           CipherMode::kGcm, 16, 12, 1, kCkmAesGcm, 15),
    Cipher(ACCELCRYPT_ALG_AES_192_GCM, "AES-192-GCM",
           "AES-192-GCM:id-aes192-GCM:2.16.840.1.101.3.4.1.26", "aes-192-gcm",
           CipherMode::kGcm, 24, 12, 1, kCkmAesGcm, 16),
    Cipher(ACCELCRYPT_ALG_AES_256_GCM, "AES-256-GCM",
           "AES-256-GCM:id-aes256-GCM:2.16.840.1.101.3.4.1.46", "aes-256-gcm",
           CipherMode::kGcm, 32, 12, 1, kCkmAesGcm, 17),
    Digest(ACCELCRYPT_ALG_SHA1, "SHA1", "SHA1:SHA-1:SSL3-SHA1:1.3.14.3.2.26",
           "sha1", 64, 20, kCkmSha1, 18),
    Digest(ACCELCRYPT_ALG_SHA224, "SHA2-224",
           "SHA2-224:SHA-224:SHA224:2.16.840.1.101.3.4.2.4", "sha224", 64, 28,
           kCkmSha224, 19),
    Digest(ACCELCRYPT_ALG_SHA256, "SHA2-256",
           "SHA2-256:SHA-256:SHA256:2.16.840.1.101.3.4.2.1", "sha256", 64, 32,
           kCkmSha256, 20),
    Digest(ACCELCRYPT_ALG_SHA384, "SHA2-384",
           "SHA2-384:SHA-384:SHA384:2.16.840.1.101.3.4.2.2", "sha384", 128, 48,
           kCkmSha384, 21),
    Digest(ACCELCRYPT_ALG_SHA512, "SHA2-512",
           "SHA2-512:SHA-512:SHA512:2.16.840.1.101.3.4.2.3", "sha512", 128, 64,
           kCkmSha512, 22),
    AlgorithmInfo{ACCELCRYPT_ALG_RNG_RANDOM, Family::kRng, "RANDOM", "",
                  "random", CipherMode::kNone, 0, 0, 0, 0, 0, 23},
    AlgorithmInfo{ACCELCRYPT_ALG_RNG_ENTROPY, Family::kRng, "ENTROPY", "",
                  "entropy", CipherMode::kNone, 0, 0, 0, 0, 0, 24},
    // Public-key rows: RSA signatures carry OpenSSL's RSA key names (the
    // keymgmt/signature names); encryption has no names of its own, since
    // OpenSSL's asym cipher is also "RSA" and one alias belongs to one row.
    // Route keys: route.rsa / route.rsa-crypt / route.dsa, and per modulus
    // size route.rsa-<bits> / route.dsa-<bits> (Router::NewPublicKeyOps).
    AlgorithmInfo{ACCELCRYPT_ALG_RSA_SIGN, Family::kRsa, "RSA-SIGN",
                  "RSA:rsaEncryption:1.2.840.113549.1.1.1", "rsa",
                  CipherMode::kNone, 0, 0, 0, 0, kCkmRsaPkcs, 25},
    AlgorithmInfo{ACCELCRYPT_ALG_RSA_CRYPT, Family::kRsa, "RSA-CRYPT", "",
                  "rsa-crypt", CipherMode::kNone, 0, 0, 0, 0, kCkmRsaPkcs, 26},
    AlgorithmInfo{ACCELCRYPT_ALG_DSA_SIGN, Family::kDsa, "DSA",
                  "DSA:dsaEncryption:1.2.840.10040.4.1", "dsa",
                  CipherMode::kNone, 0, 0, 0, 0, kCkmDsa, 27},
}};

}  // namespace

absl::Span<const AlgorithmInfo> AllAlgorithms() { return kAlgorithms; }

const AlgorithmInfo* FindAlgorithm(accelcrypt_alg id) {
  for (const AlgorithmInfo& info : kAlgorithms) {
    if (info.id == id) return &info;
  }
  return nullptr;
}

const AlgorithmInfo* FindAlgorithmByName(std::string_view name) {
  for (const AlgorithmInfo& info : kAlgorithms) {
    if (absl::EqualsIgnoreCase(AsAbsl(info.name), AsAbsl(name)) ||
        absl::EqualsIgnoreCase(AsAbsl(info.key), AsAbsl(name))) {
      return &info;
    }
    for (absl::string_view alias :
         absl::StrSplit(AsAbsl(info.openssl_names), ':')) {
      if (!alias.empty() && absl::EqualsIgnoreCase(alias, AsAbsl(name)))
        return &info;
    }
  }
  return nullptr;
}

bool IsStreamMode(CipherMode mode) {
  return mode == CipherMode::kCfb128 || mode == CipherMode::kOfb ||
         mode == CipherMode::kCtr;
}

}  // namespace accelcrypt
