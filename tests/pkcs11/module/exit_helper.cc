// SPDX-License-Identifier: Apache-2.0
// p11_module_exit_helper MODULE: a fresh process (no libcrypto of its own)
// that registers a C_Finalize atexit handler before C_Initialize, the way
// an application tearing down from its own exit handler does. libcrypto is
// first initialised inside C_Initialize, so its OPENSSL_cleanup runs before
// this handler. Exit status: 0 when every call answered CKR_OK.
#include <dlfcn.h>
#include <p11-kit-1/p11-kit/pkcs11.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace {

CK_FUNCTION_LIST* g_list = nullptr;

void FinalizeAtExit() {
  CK_RV rv = g_list->C_Finalize(nullptr);
  std::fflush(stderr);
  if (rv != CKR_OK) _exit(3);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  std::atexit(FinalizeAtExit);
  void* dl = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (dl == nullptr) return 4;
  auto get =
      reinterpret_cast<CK_C_GetFunctionList>(dlsym(dl, "C_GetFunctionList"));
  if (get == nullptr || get(&g_list) != CKR_OK) return 5;
  if (g_list->C_Initialize(nullptr) != CKR_OK) return 6;
  CK_TOKEN_INFO info;
  if (g_list->C_GetTokenInfo(0, &info) != CKR_OK) return 7;
  return 0;
}
