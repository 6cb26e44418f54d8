// SPDX-License-Identifier: Apache-2.0
// Leaf functions of the x86 backend: AES, GHASH, SHA and RDSEED/RDRAND over
// plain bytes. Each is compiled for one ISA (internal/target.h) and must only
// be called when ChooseImplementations() selected it. None allocates, fails
// or keeps state; callers own every buffer. `in` and `out` may be equal (in
// place) but must not otherwise overlap. Buffers need no alignment.
#ifndef ACCELCRYPT_BACKENDS_X86_INTERNAL_AES_LEAF_H_
#define ACCELCRYPT_BACKENDS_X86_INTERNAL_AES_LEAF_H_

#include <stddef.h>
#include <stdint.h>

namespace accelcrypt::x86::internal {

// AesRoundKeys holds an expanded AES key: `enc` for the cipher, `dec` for the
// equivalent inverse cipher (FIPS 197 §5.3.5: InvMixColumns applied to the
// middle round keys, order reversed), as AESDEC expects.
struct AesRoundKeys {
  alignas(64) uint8_t enc[15][16];
  alignas(64) uint8_t dec[15][16];
  uint32_t rounds;  // 10, 12 or 14
};

// GhashTable holds H^32, H^31, ..., H^1 (descending) in the backend's
// internal GHASH representation (byte-reflected, pre-divided by x), and for
// the Karatsuba products of the XMM and YMM paths H^16..H^1 again as
// hi ^ lo (in both halves): karatsuba[i] belongs to
// powers[kGhashPowers - kGhashKaratsubaPowers + i]. Both are in the order
// the loops read them (the oldest block meets the highest power).
constexpr int kGhashPowers = 32;
constexpr int kGhashXmmPowers = 8;
constexpr int kGhashKaratsubaPowers = 16;
struct GhashTable {
  alignas(64) uint8_t powers[kGhashPowers][16];
  alignas(64) uint8_t karatsuba[kGhashKaratsubaPowers][16];
};

// aes_key_aesni.cc. key_len is 16, 24 or 32 (checked by the caller). Without
// `with_dec` only `enc` is written (modes that never run the inverse
// cipher: CTR, CFB, OFB, GCM).
void AesExpandKeyAesni(const uint8_t* key, size_t key_len, AesRoundKeys* out,
                       bool with_dec = true);

// aes_aesni.cc: AES-NI over XMM registers, 8 blocks in flight where the mode
// allows. `iv` is the chaining value, updated on return. Counts are blocks.
void AesEncryptBlockAesni(const AesRoundKeys* k, const uint8_t in[16],
                          uint8_t out[16]);
void AesEcbEncryptAesni(const AesRoundKeys* k, const uint8_t* in, uint8_t* out,
                        size_t num_blocks);
void AesEcbDecryptAesni(const AesRoundKeys* k, const uint8_t* in, uint8_t* out,
                        size_t num_blocks);
void AesCbcEncryptAesni(const AesRoundKeys* k, uint8_t iv[16],
                        const uint8_t* in, uint8_t* out, size_t num_blocks);
void AesCbcDecryptAesni(const AesRoundKeys* k, uint8_t iv[16],
                        const uint8_t* in, uint8_t* out, size_t num_blocks);
void AesCfbEncryptAesni(const AesRoundKeys* k, uint8_t iv[16],
                        const uint8_t* in, uint8_t* out, size_t num_blocks);
void AesCfbDecryptAesni(const AesRoundKeys* k, uint8_t iv[16],
                        const uint8_t* in, uint8_t* out, size_t num_blocks);
void AesOfbAesni(const AesRoundKeys* k, uint8_t iv[16], const uint8_t* in,
                 uint8_t* out, size_t num_blocks);
// Ctr128 XORs the keystream E(ctr), E(ctr+1), ... into `in`. The counter is
// a 128-bit big-endian integer; the caller guarantees that its low 64 bits do
// not wrap before the last block (it splits the call there). `ctr` is
// advanced by num_blocks (modulo 2^128) on return, with one 16-byte store so
// the next call's load is forwarded from it.
void AesCtr128Aesni(const AesRoundKeys* k, uint8_t ctr[16], const uint8_t* in,
                    uint8_t* out, size_t num_blocks);

// aes_ecb_ctr_vaes256.cc / aes_ecb_ctr_vaes512.cc: the parallel modes with
// VAES over YMM (16 blocks in flight) or ZMM (32 blocks in flight).
void AesEcbEncryptVaes256(const AesRoundKeys* k, const uint8_t* in,
                          uint8_t* out, size_t num_blocks);
void AesEcbDecryptVaes256(const AesRoundKeys* k, const uint8_t* in,
                          uint8_t* out, size_t num_blocks);
void AesCbcDecryptVaes256(const AesRoundKeys* k, uint8_t iv[16],
                          const uint8_t* in, uint8_t* out, size_t num_blocks);
void AesCtr128Vaes256(const AesRoundKeys* k, uint8_t ctr[16], const uint8_t* in,
                      uint8_t* out, size_t num_blocks);
void AesEcbEncryptVaes512(const AesRoundKeys* k, const uint8_t* in,
                          uint8_t* out, size_t num_blocks);
void AesEcbDecryptVaes512(const AesRoundKeys* k, const uint8_t* in,
                          uint8_t* out, size_t num_blocks);
void AesCbcDecryptVaes512(const AesRoundKeys* k, uint8_t iv[16],
                          const uint8_t* in, uint8_t* out, size_t num_blocks);
void AesCtr128Vaes512(const AesRoundKeys* k, uint8_t ctr[16], const uint8_t* in,
                      uint8_t* out, size_t num_blocks);

// ghash_pclmul.cc. `h` is E(K, 0^128). `xi` is the running GHASH value in
// GCM byte order, updated on return. GhashInitPclmul fills only the last
// `count` (1..kGhashPowers) entries, H^count..H^1 (and their Karatsuba
// entries up to H^16). GhashExtendPclmul adds H^(have+1)..H^want to a table
// holding H^have..H^1 (1 <= have < want <= kGhashPowers): the key setup
// computes H alone and a message extends the table to what it reads.
// GhashPclmul reads H^min(n, 8)..H^1 for n blocks: 8 blocks per reduction,
// Karatsuba products.
void GhashInitPclmul(const uint8_t h[16], GhashTable* out, int count);
void GhashExtendPclmul(GhashTable* t, int have, int want);
void GhashPclmul(const GhashTable* t, uint8_t xi[16], const uint8_t* data,
                 size_t num_blocks);

// aes_gcm_aesni.cc: GCM bulk data with AES-NI and PCLMULQDQ over XMM, CTR32
// and GHASH interleaved (8 blocks in flight, one GHASH product per AES
// round, one reduction per 8 blocks); reads H^min(n, 8)..H^1 and their
// Karatsuba entries. Same contract as the VAES leaves below.
void AesGcmEncryptAesni(const AesRoundKeys* k, const GhashTable* t,
                        uint8_t ctr[16], uint8_t xi[16], const uint8_t* in,
                        uint8_t* out, size_t num_blocks);
void AesGcmDecryptAesni(const AesRoundKeys* k, const GhashTable* t,
                        uint8_t ctr[16], uint8_t xi[16], const uint8_t* in,
                        uint8_t* out, size_t num_blocks);

// aes_gcm_vaes512.cc: GCM bulk data, CTR32 and GHASH interleaved. `ctr` is
// the next counter block, advanced on return; `xi` as for GhashPclmul.
// Encrypt hashes the output, decrypt the input.
void AesGcmEncryptVaes512(const AesRoundKeys* k, const GhashTable* t,
                          uint8_t ctr[16], uint8_t xi[16], const uint8_t* in,
                          uint8_t* out, size_t num_blocks);
void AesGcmDecryptVaes512(const AesRoundKeys* k, const GhashTable* t,
                          uint8_t ctr[16], uint8_t xi[16], const uint8_t* in,
                          uint8_t* out, size_t num_blocks);
void GhashVaes512(const GhashTable* t, uint8_t xi[16], const uint8_t* data,
                  size_t num_blocks);

// aes_gcm_vaes256.cc: the same over YMM registers with VEX encoding only (no
// AVX-512), 16 blocks per iteration; reads H^16..H^1.
void AesGcmEncryptVaes256(const AesRoundKeys* k, const GhashTable* t,
                          uint8_t ctr[16], uint8_t xi[16], const uint8_t* in,
                          uint8_t* out, size_t num_blocks);
void AesGcmDecryptVaes256(const AesRoundKeys* k, const GhashTable* t,
                          uint8_t ctr[16], uint8_t xi[16], const uint8_t* in,
                          uint8_t* out, size_t num_blocks);
void GhashVaes256(const GhashTable* t, uint8_t xi[16], const uint8_t* data,
                  size_t num_blocks);

// sha_ni.cc: compression functions over whole 64-byte blocks.
void Sha1BlocksShani(uint32_t state[5], const uint8_t* data, size_t num_blocks);
void Sha256BlocksShani(uint32_t state[8], const uint8_t* data,
                       size_t num_blocks);

// rdrand.cc: one 64-bit word from RDSEED / RDRAND, retrying up to
// `max_tries` times while the instruction reports no data (CF = 0). Returns
// false when every try failed.
bool Rdseed64(uint64_t* out, int max_tries);
bool Rdrand64(uint64_t* out, int max_tries);

}  // namespace accelcrypt::x86::internal

#endif  // ACCELCRYPT_BACKENDS_X86_INTERNAL_AES_LEAF_H_
