// SPDX-License-Identifier: Apache-2.0
//
// Drives AES-128-CBC encryption of 8 KiB aligned buffers through the
// PadLock module for the callgrind measurement in callgrind_cbc.sh. Checks
// its output against a second context so the run cannot silently do
// nothing. Usage: padlock_cbc_bench ITERATIONS
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accelcrypt/backend.h"
#include "tests/backends/padlock/emulator/padlock_emu.h"

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? atoi(argv[1]) : 16;
  void* h = dlopen(ACCELCRYPT_PADLOCK_MODULE, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    fprintf(stderr, "%s\n", dlerror());
    return 1;
  }
  auto entry = reinterpret_cast<accelcrypt_backend_entry_fn>(
      dlsym(h, ACCELCRYPT_BACKEND_ENTRY_SYMBOL));
  const accelcrypt_backend_desc* desc = entry(ACCELCRYPT_ABI_VERSION);
  void* be = nullptr;
  accelcrypt_error err{};
  if (desc->init(nullptr, &be, &err) != ACCELCRYPT_OK) {
    fprintf(stderr, "init: %s\n", err.message);
    return 1;
  }
  const auto* t = static_cast<const accelcrypt_cipher_table*>(
      desc->query_family(be, ACCELCRYPT_FAMILY_CIPHER));
  alignas(16) static uint8_t in[8192], out[8192], check[8192];
  for (size_t i = 0; i < sizeof(in); ++i) in[i] = static_cast<uint8_t>(i * 7);
  const uint8_t key[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  const uint8_t iv[16] = {0};
  accelcrypt_cipher_ctx* c = nullptr;
  accelcrypt_cipher_ctx* d = nullptr;
  t->newctx(be, ACCELCRYPT_ALG_AES_128_CBC, &c, &err);
  t->newctx(be, ACCELCRYPT_ALG_AES_128_CBC, &d, &err);
  t->init(c, 1, key, 16, iv, 16, &err);
  t->init(d, 0, key, 16, iv, 16, &err);
  int bad = 0;
  for (int i = 0; i < iterations; ++i) {
    if (t->update(c, in, sizeof(in), out, &err) != ACCELCRYPT_OK) return 1;
  }
  // Decrypting the last buffer needs the IV before it: redo with a fresh
  // pair of contexts on one buffer.
  t->init(c, 1, key, 16, iv, 16, &err);
  t->update(c, in, sizeof(in), out, &err);
  t->update(d, out, sizeof(out), check, &err);
  bad = memcmp(check, in, sizeof(in)) != 0;
  t->freectx(c);
  t->freectx(d);
  desc->teardown(be);
  printf("profile %s, blocks %d\n", accelcrypt_padlock_emu_profile(),
         iterations * 512);
  return bad;
}
