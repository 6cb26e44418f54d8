// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_BACKENDS_SOFTWARE_SOFTWARE_BACKEND_H_
#define ACCELCRYPT_BACKENDS_SOFTWARE_SOFTWARE_BACKEND_H_

#include <stdint.h>

#include "accelcrypt/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* accelcrypt_software_backend_entry returns the software backend's
 * descriptor (name "software"): AES-128/192/256 in ECB, CBC, CFB128, OFB, CTR
 * and GCM, SHA-1/224/256/384/512 and random bytes, all from OpenSSL's default
 * provider in a private OSSL_LIB_CTX. It is linked into the core (listed in
 * core/CMakeLists.txt), so it is not exported from any shared object. Returns
 * NULL when `host_abi_version` is not ACCELCRYPT_ABI_VERSION. The descriptor
 * is static. */
const accelcrypt_backend_desc* accelcrypt_software_backend_entry(
    uint32_t host_abi_version);

#ifdef __cplusplus
}
#endif

#endif /* ACCELCRYPT_BACKENDS_SOFTWARE_SOFTWARE_BACKEND_H_ */
