// SPDX-License-Identifier: Apache-2.0
// accelcrypt/kit/openssl_errors.h: libcrypto's per-thread error queue as
// one line of text, for the parts that call libcrypto (the software and
// PKCS#11 client backends, the core's configuration reader, the provider,
// the PKCS#11 module). Header-only; needs OpenSSL's headers.
#ifndef ACCELCRYPT_KIT_OPENSSL_ERRORS_H_
#define ACCELCRYPT_KIT_OPENSSL_ERRORS_H_

#include <openssl/err.h>

#include <string>

namespace accelcrypt::kit {

// DrainOpenSslErrors pops every entry of this thread's libcrypto error
// queue and returns them as one line, oldest first, "; "-separated, each
// with its data string in parentheses when it has one (libcrypto's errors
// name functions, files and parameters, never key bytes); with
// `first_only`, only the oldest entry. Empty when the queue was empty; the
// queue is empty afterwards.
inline std::string DrainOpenSslErrors(bool first_only = false) {
  std::string out;
  const char* data = nullptr;
  int flags = 0;
  unsigned long e;
  bool first = true;
  while ((e = ERR_get_error_all(nullptr, nullptr, nullptr, &data, &flags)) !=
         0) {
    if (first_only && !first) continue;
    first = false;
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
    if ((flags & ERR_TXT_STRING) != 0 && data != nullptr && *data != '\0') {
      out += " (";
      out += data;
      out += ")";
    }
  }
  return out;
}

}  // namespace accelcrypt::kit

#endif  // ACCELCRYPT_KIT_OPENSSL_ERRORS_H_
