// SPDX-License-Identifier: Apache-2.0
// Linked into the libFuzzer builds of the targets that load shared objects
// (the provider, the PKCS#11 module, and the backends they load): dlclose
// does nothing. libFuzzer registers each instrumented object's coverage
// counters when it is loaded and clears them before every input; an object
// unloaded afterwards (a backend that declines on this CPU, the provider
// at OSSL_PROVIDER_unload) would leave libFuzzer writing to unmapped
// memory. The executable's definition takes precedence over libc's for
// every object of the process. Not in the replayer builds.
extern "C" __attribute__((visibility("default"))) int dlclose(void* handle) {
  (void)handle;
  return 0;
}
