// SPDX-License-Identifier: Apache-2.0
// PKCS#11 attribute templates: C_CreateObject with a fuzzed template
// (session or token object, logged in or not), then C_GetAttributeValue,
// C_SetAttributeValue, C_CopyObject, C_FindObjectsInit and C_DestroyObject
// with fuzzed templates on it. Each input starts from a freshly initialised
// token. Checked besides the absence of crashes and sanitizer reports:
// C_GetAttributeValue never claims to have written more than the buffer
// held, and an object created is found again by C_FindObjects with an
// empty template.
#include <p11-kit-1/p11-kit/pkcs11.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tests/fuzz/fuzz_input.h"
#include "tests/fuzz/p11_attrs.h"
#include "tests/fuzz/p11_env.h"

namespace {

using accelcrypt::fuzz::Check;
using accelcrypt::fuzz::CheckGet;
using accelcrypt::fuzz::FuzzInput;
using accelcrypt::fuzz::P11Env;
using accelcrypt::fuzz::Template;

std::vector<CK_OBJECT_HANDLE> FindAll(CK_FUNCTION_LIST* f,
                                      CK_SESSION_HANDLE s) {
  std::vector<CK_OBJECT_HANDLE> all;
  if (f->C_FindObjectsInit(s, nullptr, 0) != CKR_OK) return all;
  CK_OBJECT_HANDLE h[16];
  CK_ULONG n = 0;
  while (f->C_FindObjects(s, h, 16, &n) == CKR_OK && n > 0) {
    all.insert(all.end(), h, h + n);
  }
  f->C_FindObjectsFinal(s);
  return all;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  P11Env::Get();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  P11Env& env = P11Env::Get();
  CK_FUNCTION_LIST* f = env.f();
  env.Reset();
  FuzzInput in(data, size);
  CK_SESSION_HANDLE s = env.Session(in.Bool());
  Check(s != CK_INVALID_HANDLE);

  std::vector<CK_OBJECT_HANDLE> objects;
  const int creates = 1 + in.Pick(3);
  for (int i = 0; i < creates && !in.empty(); ++i) {
    Template t;
    t.Read(in);
    CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
    CK_RV rv = f->C_CreateObject(s, t.data(), t.size(), &h);
    if (rv != CKR_OK) continue;
    Check(h != CK_INVALID_HANDLE);
    objects.push_back(h);
    std::vector<CK_OBJECT_HANDLE> all = FindAll(f, s);
    Check(std::find(all.begin(), all.end(), h) != all.end());
  }
  // Operations on the objects (or on a handle the fuzzer makes up).
  while (!in.empty()) {
    CK_OBJECT_HANDLE h = objects.empty() || in.Pick(8) == 0
                             ? in.U64()
                             : objects[in.Pick(objects.size())];
    switch (in.Pick(5)) {
      case 0: {
        Template t;
        t.Read(in, true);
        std::vector<CK_ULONG> given = t.Lengths();
        CK_RV rv = f->C_GetAttributeValue(s, h, t.data(), t.size());
        CheckGet(rv, t, given, t.data());
        break;
      }
      case 1: {
        Template t;
        t.Read(in);
        (void)f->C_SetAttributeValue(s, h, t.data(), t.size());
        break;
      }
      case 2: {
        Template t;
        t.Read(in);
        CK_OBJECT_HANDLE copy = CK_INVALID_HANDLE;
        if (f->C_CopyObject(s, h, t.data(), t.size(), &copy) == CKR_OK) {
          objects.push_back(copy);
        }
        break;
      }
      case 3: {
        Template t;
        t.Read(in);
        if (f->C_FindObjectsInit(s, t.data(), t.size()) == CKR_OK) {
          std::vector<CK_OBJECT_HANDLE> found(in.Pick(5));
          CK_ULONG n = 0;
          CK_RV rv = f->C_FindObjects(s, found.empty() ? nullptr : found.data(),
                                      found.size(), &n);
          if (rv == CKR_OK) Check(n <= found.size());
          f->C_FindObjectsFinal(s);
        }
        break;
      }
      default: {
        CK_ULONG obj_size = 0;
        (void)f->C_GetObjectSize(s, h, &obj_size);
        if (f->C_DestroyObject(s, h) == CKR_OK) {
          objects.erase(std::remove(objects.begin(), objects.end(), h),
                        objects.end());
        }
        break;
      }
    }
  }
  f->C_CloseSession(s);
  return 0;
}
