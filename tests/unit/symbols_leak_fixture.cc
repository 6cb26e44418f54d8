// SPDX-License-Identifier: Apache-2.0
// A deliberately leaky shared object for symbols_test_catches_leaks: it
// exports its entry point plus a C helper and a C++ symbol, which the
// allowlist check must reject.
#include <string>

#define FIXTURE_EXPORT __attribute__((visibility("default")))

extern "C" FIXTURE_EXPORT int OSSL_provider_init() { return 1; }
extern "C" FIXTURE_EXPORT int accelcrypt_leaked_helper() { return 2; }
FIXTURE_EXPORT std::string LeakedCxxFunction() { return "leak"; }
