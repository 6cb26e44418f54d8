// SPDX-License-Identifier: Apache-2.0
// p11_conformance_helper: a separate process for the persistence tests. It
// reaches the module only through dlopen + C_GetFunctionList and reads the
// module's configuration from the inherited environment (SOFTHSM2_CONF or
// ACCELCRYPT_PKCS11_CONF).
//
//   p11_conformance_helper MODULE create LABEL PIN PREFIX COUNT
//     logs the user in on the token labelled LABEL and creates COUNT token
//     data objects labelled PREFIX-<i> (private, value "<label>/payload"),
//     printing "created <i>" (flushed) after each C_CreateObject returned
//     CKR_OK. Exit 0 when all were created, 2 on the first failure (printed
//     as "error <i> <CKR_...>").
//   p11_conformance_helper MODULE create LABEL PIN PREFIX COUNT GO_FILE
//     the same, but after logging in prints "ready" (flushed) and waits
//     (up to 60 s) until GO_FILE exists before creating anything: a start
//     barrier so that two processes create their objects at the same time.
//   p11_conformance_helper MODULE check LABEL PIN PREFIX COUNT
//     finds PREFIX-0 .. PREFIX-<COUNT-1>, each exactly once, with its value;
//     exit 0 when all match, 1 otherwise (each problem printed).
// The cross-process coherence tests change what another process holds
// handles to (exit 0 on success, 2 with "error ..." otherwise):
//   p11_conformance_helper MODULE destroy LABEL PIN OBJECT 1
//     destroys the one object whose CKA_LABEL is OBJECT.
//   p11_conformance_helper MODULE set-false LABEL PIN OBJECT ATTRIBUTE
//     sets the CK_BBOOL attribute ATTRIBUTE (a number, e.g. 0x104 for
//     CKA_ENCRYPT) of the one object labelled OBJECT to CK_FALSE.
//   p11_conformance_helper MODULE set-pin LABEL PIN NEW_PIN 0
//     changes the user PIN from PIN to NEW_PIN (C_SetPIN, user logged in).
#include <p11-kit-1/p11-kit/pkcs11.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/pkcs11/conformance/p11_harness.h"

namespace {

using accelcrypt::p11test::CkrName;
using accelcrypt::p11test::Template;

std::vector<uint8_t> ValueFor(const std::string& label) {
  std::string v = label + "/payload";
  return std::vector<uint8_t>(v.begin(), v.end());
}

int Fail(const char* what, CK_RV rv) {
  std::printf("error %s %s\n", what, CkrName(rv).c_str());
  std::fflush(stdout);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7 && argc != 8) {
    std::fprintf(stderr,
                 "usage: %s MODULE create|check|destroy|set-false|set-pin "
                 "LABEL PIN PREFIX COUNT [GO_FILE]\n",
                 argv[0]);
    return 64;
  }
  const std::string go_file = argc == 8 ? argv[7] : "";
  const std::string mode = argv[2], label = argv[3], pin = argv[4],
                    prefix = argv[5];
  const int count = std::atoi(argv[6]);
  auto module = accelcrypt::p11test::Module::Load(argv[1]);
  if (!module.ok()) {
    std::fprintf(stderr, "%s\n",
                 std::string(module.status().message()).c_str());
    return 3;
  }
  CK_FUNCTION_LIST* f = (*module)->fn();
  CK_RV rv = f->C_Initialize(nullptr);
  if (rv != CKR_OK) return Fail("C_Initialize", rv);
  CK_SLOT_ID slot;
  rv = accelcrypt::p11test::FindSlotByLabel(f, label, &slot);
  if (rv != CKR_OK) return Fail("slot", rv);
  CK_SESSION_HANDLE h;
  rv = accelcrypt::p11test::OpenSession(f, slot, true, &h);
  if (rv != CKR_OK) return Fail("C_OpenSession", rv);
  rv = accelcrypt::p11test::Login(f, h, CKU_USER, pin);
  if (rv != CKR_OK) return Fail("C_Login", rv);

  if (!go_file.empty()) {
    std::printf("ready\n");
    std::fflush(stdout);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (access(go_file.c_str(), F_OK) != 0) {
      if (std::chrono::steady_clock::now() > deadline) return Fail("go", 0);
      usleep(1000);
    }
  }
  if (mode == "destroy" || mode == "set-false" || mode == "set-pin") {
    if (mode == "set-pin") {
      rv = f->C_SetPIN(
          h, reinterpret_cast<CK_UTF8CHAR*>(const_cast<char*>(pin.data())),
          pin.size(),
          reinterpret_cast<CK_UTF8CHAR*>(const_cast<char*>(prefix.data())),
          prefix.size());
      if (rv != CKR_OK) return Fail("C_SetPIN", rv);
    } else {
      Template t;
      t.Str(CKA_LABEL, prefix);
      std::vector<CK_OBJECT_HANDLE> found;
      rv = accelcrypt::p11test::FindObjects(f, h, t, &found);
      if (rv != CKR_OK) return Fail("find", rv);
      if (found.size() != 1) return Fail("not exactly one object", 0);
      if (mode == "destroy") {
        rv = f->C_DestroyObject(h, found[0]);
        if (rv != CKR_OK) return Fail("C_DestroyObject", rv);
      } else {
        CK_BBOOL no = CK_FALSE;
        CK_ATTRIBUTE a = {std::strtoul(argv[6], nullptr, 0), &no, sizeof(no)};
        rv = f->C_SetAttributeValue(h, found[0], &a, 1);
        if (rv != CKR_OK) return Fail("C_SetAttributeValue", rv);
      }
    }
    f->C_Logout(h);
    f->C_CloseSession(h);
    rv = f->C_Finalize(nullptr);
    if (rv != CKR_OK) return Fail("C_Finalize", rv);
    return 0;
  }
  int status = 0;
  for (int i = 0; i < count; ++i) {
    const std::string name = prefix + "-" + std::to_string(i);
    if (mode == "create") {
      Template t;
      t.Ulong(CKA_CLASS, CKO_DATA)
          .Bool(CKA_TOKEN, true)
          .Bool(CKA_PRIVATE, true)
          .Str(CKA_LABEL, name)
          .Str(CKA_APPLICATION, "p11-conformance")
          .Bytes(CKA_VALUE, ValueFor(name));
      CK_OBJECT_HANDLE obj;
      rv = f->C_CreateObject(h, t.data(), t.size(), &obj);
      if (rv != CKR_OK) return Fail(std::to_string(i).c_str(), rv);
      std::printf("created %d\n", i);
      std::fflush(stdout);
    } else {
      Template t;
      t.Ulong(CKA_CLASS, CKO_DATA).Str(CKA_LABEL, name);
      std::vector<CK_OBJECT_HANDLE> found;
      rv = accelcrypt::p11test::FindObjects(f, h, t, &found);
      if (rv != CKR_OK) return Fail("find", rv);
      if (found.size() != 1) {
        std::printf("%s found %zu times\n", name.c_str(), found.size());
        status = 1;
        continue;
      }
      std::vector<uint8_t> value;
      rv = accelcrypt::p11test::GetAttribute(f, h, found[0], CKA_VALUE, &value);
      if (rv != CKR_OK || value != ValueFor(name)) {
        std::printf("%s value unreadable or wrong (%s)\n", name.c_str(),
                    CkrName(rv).c_str());
        status = 1;
      }
    }
  }
  f->C_Logout(h);
  f->C_CloseSession(h);
  rv = f->C_Finalize(nullptr);
  if (rv != CKR_OK) return Fail("C_Finalize", rv);
  return status;
}
