// SPDX-License-Identifier: Apache-2.0
//
// The emulator's own AES and SHA, written for use inside a signal handler:
// no allocation, no locks, static tables filled once by EmuCryptoInit()
// before the handler is installed.
#ifndef ACCELCRYPT_TESTS_PADLOCK_EMULATOR_EMU_CRYPTO_H_
#define ACCELCRYPT_TESTS_PADLOCK_EMULATOR_EMU_CRYPTO_H_

#include <stddef.h>
#include <stdint.h>

namespace padlock_emu {

void EmuCryptoInit();

// ExpandKey writes the FIPS-197 forward schedule (4*(Nr+1) words, byte
// order) of a 16/24/32-byte key into rk; returns Nr.
int ExpandKey(const uint8_t* key, size_t key_len, uint8_t* rk);
// ToDecryptSchedule turns a forward schedule into PadLock's decryption
// layout: reversed, InvMixColumns on rounds 1..Nr-1.
void ToDecryptSchedule(const uint8_t* enc, int rounds, uint8_t* dec);
// Encrypt/Decrypt one block with a schedule in PadLock layout.
void Encrypt(const uint8_t* rk, int rounds, const uint8_t in[16],
             uint8_t out[16]);
void Decrypt(const uint8_t* dk, int rounds, const uint8_t in[16],
             uint8_t out[16]);

void Sha1Blocks(uint32_t h[5], const uint8_t* p, size_t n);
void Sha256Blocks(uint32_t h[8], const uint8_t* p, size_t n);
void Sha512Blocks(uint64_t h[8], const uint8_t* p, size_t n);

}  // namespace padlock_emu

#endif  // ACCELCRYPT_TESTS_PADLOCK_EMULATOR_EMU_CRYPTO_H_
