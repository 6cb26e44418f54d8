// SPDX-License-Identifier: Apache-2.0
// accelcrypt/kit/abi_error.h: the backend kit's ABI side without Abseil
// (PadLock and other backends that link nothing but libc use this part).
// Header-only and compiled into each backend: nothing here crosses the
// shared-object boundary. See accelcrypt/kit/status.h for backends written
// with absl::Status.
#ifndef ACCELCRYPT_KIT_ABI_ERROR_H_
#define ACCELCRYPT_KIT_ABI_ERROR_H_

#include <stdarg.h>
#include <stdio.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string_view>

#include "accelcrypt/backend.h"

namespace accelcrypt::kit {

// WriteAbiError fills `err` (may be null) with `code` and `message`, cut to
// the ABI's message buffer and NUL-terminated; returns `code`.
inline accelcrypt_status WriteAbiError(accelcrypt_status code,
                                       std::string_view message,
                                       accelcrypt_error* err) {
  if (err != nullptr) {
    err->code = code;
    const size_t n = message.size() < sizeof(err->message) - 1
                         ? message.size()
                         : sizeof(err->message) - 1;
    if (n > 0) std::memcpy(err->message, message.data(), n);
    err->message[n] = '\0';
  }
  return code;
}

// WriteAbiErrorf is WriteAbiError with a printf format.
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
inline accelcrypt_status
WriteAbiErrorf(accelcrypt_error* err, accelcrypt_status code, const char* fmt,
               ...) {
  if (err != nullptr) {
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof(err->message), fmt, ap);
    va_end(ap);
  }
  return code;
}

// GuardAbi runs `f` (returning accelcrypt_status) and turns any exception
// into an ABI code, so that none escapes into the loader (a C caller).
// `backend` names the backend in the message.
template <typename F>
accelcrypt_status GuardAbi(const char* backend, accelcrypt_error* err,
                           F&& f) noexcept {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return WriteAbiErrorf(err, ACCELCRYPT_ERR_RESOURCE_EXHAUSTED,
                          "%s: out of memory", backend);
  } catch (...) {
    return WriteAbiErrorf(err, ACCELCRYPT_ERR_INTERNAL,
                          "%s: unexpected exception", backend);
  }
}

// ModeName is the name of an ACCELCRYPT_MODE_* for messages ("CBC").
inline const char* ModeName(uint32_t mode) {
  switch (mode) {
    case ACCELCRYPT_MODE_ECB:
      return "ECB";
    case ACCELCRYPT_MODE_CBC:
      return "CBC";
    case ACCELCRYPT_MODE_CFB128:
      return "CFB128";
    case ACCELCRYPT_MODE_OFB:
      return "OFB";
    case ACCELCRYPT_MODE_CTR:
      return "CTR";
    case ACCELCRYPT_MODE_GCM:
      return "GCM";
  }
  return "?";
}

}  // namespace accelcrypt::kit

#endif  // ACCELCRYPT_KIT_ABI_ERROR_H_
