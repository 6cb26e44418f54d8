// SPDX-License-Identifier: Apache-2.0
//
// `rep xcrypt-*` and the key reload. Opcodes are emitted as bytes so every
// assembler agrees (facts §6.7). Registers (facts §2.2): RSI source, RDI
// destination, RCX block count (in/out: interruptible, 0 at the end), RAX
// IV pointer (taken in/out, §2.6), RDX control word, RBX key. On i386 EBX is
// the PIC register: the key pointer rides in another register and is
// swapped into EBX around the instruction.
#include "backends/padlock/padlock_asm.h"

namespace accelcrypt::padlock {
namespace {

void (*g_note_reload)() = nullptr;

}  // namespace

#if defined(__x86_64__)
#define ACCELCRYPT_XCRYPT(bytes)                                 \
  asm volatile(".byte " bytes                                    \
               : "+S"(in), "+D"(out), "+c"(num_blocks), "+a"(iv) \
               : "d"(cword), "b"(key)                            \
               : "memory", "cc")
#else
#define ACCELCRYPT_XCRYPT(bytes)                                           \
  asm volatile("xchgl %[k], %%ebx\n\t.byte " bytes "\n\txchgl %[k], %%ebx" \
               : "+S"(in), "+D"(out), "+c"(num_blocks),                    \
                 "+a"(iv), [k] "+r"(key)                                   \
               : "d"(cword)                                                \
               : "memory", "cc")
#endif

uint8_t* XcryptEcb(const uint8_t* in, uint8_t* out, size_t num_blocks,
                   const void* key, const void* cword, uint8_t* iv) {
  ACCELCRYPT_XCRYPT("0xf3,0x0f,0xa7,0xc8");  // rep xcrypt-ecb
  return iv;
}

uint8_t* XcryptCbc(const uint8_t* in, uint8_t* out, size_t num_blocks,
                   const void* key, const void* cword, uint8_t* iv) {
  ACCELCRYPT_XCRYPT("0xf3,0x0f,0xa7,0xd0");  // rep xcrypt-cbc
  return iv;
}

uint8_t* XcryptCtr(const uint8_t* in, uint8_t* out, size_t num_blocks,
                   const void* key, const void* cword, uint8_t* iv) {
  ACCELCRYPT_XCRYPT("0xf3,0x0f,0xa7,0xd8");  // rep xcrypt-ctr (ACE2)
  return iv;
}

uint8_t* XcryptCfb(const uint8_t* in, uint8_t* out, size_t num_blocks,
                   const void* key, const void* cword, uint8_t* iv) {
  ACCELCRYPT_XCRYPT("0xf3,0x0f,0xa7,0xe0");  // rep xcrypt-cfb
  return iv;
}

uint8_t* XcryptOfb(const uint8_t* in, uint8_t* out, size_t num_blocks,
                   const void* key, const void* cword, uint8_t* iv) {
  ACCELCRYPT_XCRYPT("0xf3,0x0f,0xa7,0xe8");  // rep xcrypt-ofb
  return iv;
}

#undef ACCELCRYPT_XCRYPT

void ForceKeyReload() {
#if defined(__x86_64__)
  // Step over the red zone: the compiler does not know this asm pushes.
  asm volatile(
      "lea -128(%%rsp), %%rsp\n\tpushfq\n\tpopfq\n\t"
      "lea 128(%%rsp), %%rsp" ::
          : "memory", "cc");
#else
  asm volatile("pushfl\n\tpopfl" ::: "memory", "cc");
#endif
  if (g_note_reload != nullptr) g_note_reload();
}

void SetNoteReloadHook(void (*hook)()) { g_note_reload = hook; }

}  // namespace accelcrypt::padlock
