// SPDX-License-Identifier: Apache-2.0
//
// The PadLock backend's ABI shim: descriptor, init (detection), capability
// list, family tables and description.
#include <stdio.h>
#include <string.h>

#include <new>

#include "accelcrypt/backend.h"
#include "backends/padlock/cpuid.h"
#include "backends/padlock/padlock_asm.h"
#include "backends/padlock/padlock_internal.h"
#include "backends/padlock/test_hooks.h"

namespace accelcrypt::padlock {

namespace {

void AddCap(Backend* be, accelcrypt_alg alg, uint32_t flags,
            uint32_t alignment) {
  accelcrypt_capability& c = be->caps[be->num_caps++];
  c.alg = alg;
  c.flags = flags;
  c.alignment = alignment;
  c.max_chunk = 0;
}

accelcrypt_status Init(const accelcrypt_host* host, void** backend_out,
                       accelcrypt_error* err) {
  if (backend_out == nullptr) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_INVALID_ARGUMENT,
                               "padlock: init: NULL output");
  }
  const TestHooks hooks = LookupTestHooks();
  const Features f =
      DetectFeatures(hooks.cpuid != nullptr ? hooks.cpuid : RealCpuid);
  if (!f.centaur_vendor) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_UNAVAILABLE,
                               "no PadLock unit: CPU vendor %s", f.vendor);
  }
  if (!f.ace && !f.phe && !f.rng) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_UNAVAILABLE,
                               "no PadLock unit enabled: CPU vendor %s, CPUID "
                               "0xC0000001 EDX 0x%08x",
                               f.vendor, f.centaur_edx);
  }
  auto* be = new (std::nothrow) Backend();
  if (be == nullptr) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_RESOURCE_EXHAUSTED,
                               "padlock: out of memory");
  }
  be->features = f;
  be->host = host;
  SetNoteReloadHook(hooks.note_reload);
  const uint32_t hw = ACCELCRYPT_CAP_HARDWARE;
  const uint32_t stream = hw | ACCELCRYPT_CAP_STREAMING;
  if (f.ace) {
    static constexpr uint32_t kModes[] = {
        ACCELCRYPT_MODE_ECB, ACCELCRYPT_MODE_CBC, ACCELCRYPT_MODE_CFB128,
        ACCELCRYPT_MODE_OFB, ACCELCRYPT_MODE_CTR, ACCELCRYPT_MODE_GCM};
    for (uint32_t mode : kModes) {
      for (uint32_t key_bytes : {16u, 24u, 32u}) {
        const uint32_t flags = mode == ACCELCRYPT_MODE_GCM
                                   ? stream
                                   : stream | ACCELCRYPT_CAP_PORTABLE_STATE;
        AddCap(be, ACCELCRYPT_CIPHER_ALG(mode, key_bytes), flags, 16);
      }
    }
  }
  if (f.phe) {
    AddCap(be, ACCELCRYPT_ALG_SHA1, stream, 1);
    AddCap(be, ACCELCRYPT_ALG_SHA224, stream, 1);
    AddCap(be, ACCELCRYPT_ALG_SHA256, stream, 1);
  }
  if (f.phe2 && f.phe_block_mode) {
    AddCap(be, ACCELCRYPT_ALG_SHA384, stream, 1);
    AddCap(be, ACCELCRYPT_ALG_SHA512, stream, 1);
  }
  if (f.rng) AddCap(be, ACCELCRYPT_ALG_RNG_ENTROPY, hw, 1);
  *backend_out = be;
  return ACCELCRYPT_OK;
}

void Teardown(void* backend) { delete static_cast<Backend*>(backend); }

accelcrypt_status GetCapabilities(void* backend,
                                  const accelcrypt_capability** out,
                                  size_t* num_out, accelcrypt_error* err) {
  if (backend == nullptr || out == nullptr || num_out == nullptr) {
    return kit::WriteAbiErrorf(err, ACCELCRYPT_ERR_INVALID_ARGUMENT,
                               "padlock: get_capabilities: NULL argument");
  }
  const auto* be = static_cast<const Backend*>(backend);
  *out = be->caps;
  *num_out = be->num_caps;
  return ACCELCRYPT_OK;
}

const void* QueryFamily(void* backend, uint32_t family) {
  const auto* be = static_cast<const Backend*>(backend);
  switch (family) {
    case ACCELCRYPT_FAMILY_CIPHER:
      return be->features.ace ? &kCipherTable : nullptr;
    case ACCELCRYPT_FAMILY_DIGEST:
      return be->features.phe ? &kDigestTable : nullptr;
    case ACCELCRYPT_FAMILY_RNG:
      return be->features.rng ? &kRngTable : nullptr;
  }
  return nullptr;
}

void Describe(void* backend, char* out, size_t out_len) {
  if (out == nullptr || out_len == 0) return;
  const Features& f = static_cast<const Backend*>(backend)->features;
  snprintf(out, out_len,
           "PadLock on %s family %u model %u stepping %u:%s%s%s%s%s%s",
           f.vendor, f.family, f.model, f.stepping, f.ace ? " ACE" : "",
           f.ace2 ? " ACE2" : "", f.phe ? " PHE" : "",
           f.phe_block_mode ? "(block)"
           : f.phe          ? "(finalize-only)"
                            : "",
           f.phe2 ? " PHE2" : "", f.rng ? " RNG" : "");
}

const accelcrypt_backend_desc kDesc = {
    ACCELCRYPT_ABI_VERSION,
    sizeof(accelcrypt_backend_desc),
    "padlock",
    "0.1.0",
    Init,
    Teardown,
    GetCapabilities,
    QueryFamily,
    Describe,
};

}  // namespace
}  // namespace accelcrypt::padlock

extern "C" ACCELCRYPT_BACKEND_EXPORT const accelcrypt_backend_desc*
accelcrypt_backend_entry(uint32_t host_abi_version) {
  if (host_abi_version != ACCELCRYPT_ABI_VERSION) return nullptr;
  return &accelcrypt::padlock::kDesc;
}

// Init declines on any CPU whose CPUID vendor is not VIA's or Zhaoxin's
// (DetectFeatures): the loader reads that here and does not load the module
// there at all. The PadLock emulator tests (ACCELCRYPT_PADLOCK_EMULATOR=1,
// test_hooks.h) answer CPUID themselves, so the module is loaded for them.
ACCELCRYPT_BACKEND_LOAD_HINTS(
    ACCELCRYPT_LOAD_HINT("name=padlock")
        ACCELCRYPT_LOAD_HINT("needs-cpu-vendor=CentaurHauls|  Shanghai  ")
            ACCELCRYPT_LOAD_HINT("load-if-env=ACCELCRYPT_PADLOCK_EMULATOR=1"));
