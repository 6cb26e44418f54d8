// SPDX-License-Identifier: Apache-2.0
// p11_store_interop: moves a PKCS#11 module token directory between builds
// of different endianness (scripts/cross_s390x.sh runs it natively and
// under qemu-s390x).
//
//   p11_store_interop write DIR    makes a token in DIR (new directory) with
//                                  a fixed set of objects, public and private
//   p11_store_interop check DIR    opens DIR (written by any build), logs in
//                                  and requires every object and the token's
//                                  state to be exactly what `write` stored
//   p11_store_interop compare A B  requires the public objects' stored bytes
//                                  in A and B to be identical (the on-disk
//                                  form does not depend on the writer)
//
// Exit 0 on success; 1 with a message naming the first difference (a
// refused store is reported with the store's own error, which is also 1).
#include <sqlite3.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "pkcs11/common/attributes.h"
#include "pkcs11/store/token_store.h"

namespace accelcrypt::p11 {
namespace {

constexpr std::string_view kSoPin = "interop-so-pin";
constexpr std::string_view kUserPin = "interop-user-pin";
constexpr std::string_view kLabel = "accelcrypt interop";

std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(seed + 7 * i);
  return out;
}

// Mechanisms serialises a CK_MECHANISM_TYPE array the way the PKCS#11 ABI
// holds it in memory on this platform.
std::vector<uint8_t> Mechanisms(std::vector<CK_MECHANISM_TYPE> list) {
  std::vector<uint8_t> out(list.size() * sizeof(CK_MECHANISM_TYPE));
  for (size_t i = 0; i < list.size(); ++i) {
    std::memcpy(out.data() + i * sizeof(CK_MECHANISM_TYPE), &list[i],
                sizeof(CK_MECHANISM_TYPE));
  }
  return out;
}

struct Expected {
  std::string label;
  bool is_private;
  AttributeMap attributes;
};

void SetLabel(AttributeMap* m, std::string_view label) {
  m->SetString(CKA_LABEL, label);
}

// Objects is the fixed set: every kind of value the store persists (CK_ULONG
// attributes with values that differ when byte-swapped, booleans, byte
// strings, big integers, a CK_MECHANISM_TYPE array), in public objects
// (stored in clear) and private ones (encrypted under the DEK).
std::vector<Expected> Objects() {
  std::vector<Expected> out;
  {
    Expected e{"interop data", false, {}};
    AttributeMap& m = e.attributes;
    m.SetUlong(CKA_CLASS, CKO_DATA);
    m.SetBool(CKA_TOKEN, true);
    m.SetBool(CKA_PRIVATE, false);
    SetLabel(&m, e.label);
    m.SetString(CKA_APPLICATION, "accelcrypt big-endian test");
    m.Set(CKA_VALUE, Pattern(37, 1));
    out.push_back(std::move(e));
  }
  {
    Expected e{"interop rsa public", false, {}};
    AttributeMap& m = e.attributes;
    m.SetUlong(CKA_CLASS, CKO_PUBLIC_KEY);
    m.SetUlong(CKA_KEY_TYPE, CKK_RSA);
    m.SetBool(CKA_TOKEN, true);
    m.SetBool(CKA_PRIVATE, false);
    m.SetBool(CKA_VERIFY, true);
    SetLabel(&m, e.label);
    m.Set(CKA_ID, std::vector<uint8_t>{0x01, 0x02, 0x03, 0x04});
    m.SetUlong(CKA_MODULUS_BITS, 2048);
    m.Set(CKA_MODULUS, Pattern(256, 0x80));
    m.Set(CKA_PUBLIC_EXPONENT, std::vector<uint8_t>{0x01, 0x00, 0x01});
    m.SetUlong(CKA_KEY_GEN_MECHANISM, CKM_RSA_PKCS_KEY_PAIR_GEN);
    m.Set(CKA_ALLOWED_MECHANISMS,
          Mechanisms({CKM_RSA_PKCS, CKM_SHA256_RSA_PKCS_PSS, CKM_RSA_X_509}));
    out.push_back(std::move(e));
  }
  {
    Expected e{"interop aes", true, {}};
    AttributeMap& m = e.attributes;
    m.SetUlong(CKA_CLASS, CKO_SECRET_KEY);
    m.SetUlong(CKA_KEY_TYPE, CKK_AES);
    m.SetBool(CKA_TOKEN, true);
    m.SetBool(CKA_PRIVATE, true);
    m.SetBool(CKA_SENSITIVE, true);
    m.SetBool(CKA_ENCRYPT, true);
    SetLabel(&m, e.label);
    m.SetUlong(CKA_VALUE_LEN, 32);
    m.Set(CKA_VALUE, Pattern(32, 0x42));
    m.SetUlong(CKA_KEY_GEN_MECHANISM, CKM_AES_KEY_GEN);
    m.Set(CKA_ALLOWED_MECHANISMS,
          Mechanisms({CKM_AES_CBC_PAD, CKM_AES_GCM, CKM_AES_CTR}));
    out.push_back(std::move(e));
  }
  {
    Expected e{"interop dsa private", true, {}};
    AttributeMap& m = e.attributes;
    m.SetUlong(CKA_CLASS, CKO_PRIVATE_KEY);
    m.SetUlong(CKA_KEY_TYPE, CKK_DSA);
    m.SetBool(CKA_TOKEN, true);
    m.SetBool(CKA_PRIVATE, true);
    m.SetBool(CKA_SIGN, true);
    SetLabel(&m, e.label);
    m.Set(CKA_PRIME, Pattern(256, 0x91));
    m.Set(CKA_SUBPRIME, Pattern(32, 0x13));
    m.Set(CKA_BASE, Pattern(256, 0x27));
    m.Set(CKA_VALUE, Pattern(32, 0x55));
    m.Set(CKA_ALLOWED_MECHANISMS, Mechanisms({CKM_DSA_SHA256}));
    out.push_back(std::move(e));
  }
  return out;
}

TokenStore::Options FastOptions() {
  TokenStore::Options o;
  o.pbkdf2_iterations = 1000;  // under qemu every iteration is emulated
  return o;
}

int Fail(std::string_view what, const absl::Status& status) {
  std::cerr << "p11_store_interop: " << what << ": " << status << "\n";
  return 1;
}

int Fail(std::string_view what) {
  std::cerr << "p11_store_interop: " << what << "\n";
  return 1;
}

std::string Hex(absl::Span<const uint8_t> v) {
  std::string out;
  char buf[3];
  for (uint8_t b : v) {
    std::snprintf(buf, sizeof(buf), "%02x", b);
    out += buf;
  }
  return out;
}

int Write(const std::string& dir) {
  if (!TokenStore::Absent(dir)) return Fail(dir + " already holds a store");
  auto store = TokenStore::Open(dir, FastOptions());
  if (!store.ok()) return Fail("open " + dir, store.status());
  absl::Status s = (*store)->InitToken(kSoPin, kLabel);
  if (!s.ok()) return Fail("InitToken", s);
  auto so_dek = (*store)->Login(TokenStore::User::kSo, kSoPin);
  if (!so_dek.ok()) return Fail("SO login", so_dek.status());
  s = (*store)->InitPin(*so_dek, kUserPin);
  if (!s.ok()) return Fail("InitPin", s);
  auto dek = (*store)->Login(TokenStore::User::kUser, kUserPin);
  if (!dek.ok()) return Fail("user login", dek.status());
  for (const Expected& e : Objects()) {
    auto id = (*store)->CreateObject(e.attributes, e.is_private, &*dek);
    if (!id.ok()) return Fail("CreateObject " + e.label, id.status());
  }
  std::cout << "p11_store_interop: wrote " << Objects().size() << " objects to "
            << dir << "\n";
  return 0;
}

int Check(const std::string& dir) {
  if (TokenStore::Absent(dir)) return Fail("no store in " + dir);
  auto store = TokenStore::Open(dir, FastOptions());
  if (!store.ok()) return Fail("open " + dir, store.status());
  auto info = (*store)->Info();
  if (!info.ok()) return Fail("Info", info.status());
  if (!info->initialized || info->label != kLabel ||
      !info->user_pin_initialized || info->so_failures != 0 ||
      info->user_failures != 0 || info->so_locked || info->user_locked ||
      info->serial.size() != 16) {
    return Fail(absl::StrFormat(
        "token info differs: initialized %d, label '%s', serial '%s', user "
        "PIN set %d, failures %d/%d, locked %d/%d",
        info->initialized, info->label, info->serial,
        info->user_pin_initialized, info->so_failures, info->user_failures,
        info->so_locked, info->user_locked));
  }
  // A wrong PIN is refused and counted (a write, in the reader's byte
  // order); the right one then resets the counter, so a check leaves the
  // token as it found it.
  auto wrong = (*store)->Login(TokenStore::User::kUser, "wrong pin");
  if (wrong.ok()) return Fail("a wrong user PIN was accepted");
  info = (*store)->Info();
  if (!info.ok() || info->user_failures != 1) {
    return Fail("the failed login was not counted");
  }
  auto dek = (*store)->Login(TokenStore::User::kUser, kUserPin);
  if (!dek.ok()) return Fail("user login", dek.status());
  info = (*store)->Info();
  if (!info.ok() || info->user_failures != 0) {
    return Fail("the right PIN did not reset the failure counter");
  }
  auto so_dek = (*store)->Login(TokenStore::User::kSo, kSoPin);
  if (!so_dek.ok()) return Fail("SO login", so_dek.status());
  if (so_dek->span() != dek->span()) {
    return Fail("the SO and user PINs unwrap different data keys");
  }
  auto objects = (*store)->LoadObjects(&*dek);
  if (!objects.ok()) return Fail("LoadObjects", objects.status());
  const std::vector<Expected> expected = Objects();
  if (objects->size() != expected.size()) {
    return Fail("found " + std::to_string(objects->size()) + " objects, not " +
                std::to_string(expected.size()));
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    const Expected& e = expected[i];
    const TokenStore::StoredObject& got = (*objects)[i];
    if (got.locked || got.is_private != e.is_private) {
      return Fail(e.label + ": locked or wrong privacy");
    }
    const auto& want_values = e.attributes.values();
    const auto& got_values = got.attributes.values();
    if (got_values.size() != want_values.size()) {
      return Fail(e.label + ": " + std::to_string(got_values.size()) +
                  " attributes, not " + std::to_string(want_values.size()));
    }
    for (const auto& [type, want] : want_values) {
      const SecretBytes* value = got.attributes.Find(type);
      char name[32];
      std::snprintf(name, sizeof(name), "0x%lx",
                    static_cast<unsigned long>(type));
      if (value == nullptr) {
        return Fail(e.label + ": attribute " + name + " missing");
      }
      if (value->span() != want.span()) {
        return Fail(e.label + ": attribute " + name + " reads " +
                    Hex(value->span()) + ", written as " + Hex(want.span()));
      }
    }
  }
  std::cout << "p11_store_interop: " << dir << ": token, PINs and "
            << expected.size() << " objects read back exactly\n";
  return 0;
}

// PublicBlobs returns the stored bytes of every public object, by id.
absl::StatusOr<std::vector<std::vector<uint8_t>>> PublicBlobs(
    const std::string& dir) {
  sqlite3* db = nullptr;
  const std::string path = dir + "/token.sqlite";
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) !=
      SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return absl::NotFoundError(path + ": " + msg);
  }
  sqlite3_stmt* st = nullptr;
  std::vector<std::vector<uint8_t>> out;
  int rc = sqlite3_prepare_v2(
      db, "SELECT data FROM objects WHERE is_private = 0 ORDER BY id", -1, &st,
      nullptr);
  while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    const auto* p = static_cast<const uint8_t*>(sqlite3_column_blob(st, 0));
    out.emplace_back(p, p + sqlite3_column_bytes(st, 0));
    rc = SQLITE_OK;
  }
  std::string msg = sqlite3_errmsg(db);
  sqlite3_finalize(st);
  sqlite3_close(db);
  if (rc != SQLITE_DONE) return absl::InternalError(path + ": " + msg);
  return out;
}

int Compare(const std::string& a, const std::string& b) {
  auto blobs_a = PublicBlobs(a);
  if (!blobs_a.ok()) return Fail("read " + a, blobs_a.status());
  auto blobs_b = PublicBlobs(b);
  if (!blobs_b.ok()) return Fail("read " + b, blobs_b.status());
  if (blobs_a->empty() || blobs_a->size() != blobs_b->size()) {
    return Fail("different numbers of public objects");
  }
  for (size_t i = 0; i < blobs_a->size(); ++i) {
    if ((*blobs_a)[i] != (*blobs_b)[i]) {
      return Fail("public object " + std::to_string(i) +
                  " is stored differently:\n  " + Hex((*blobs_a)[i]) + "\n  " +
                  Hex((*blobs_b)[i]));
    }
  }
  std::cout << "p11_store_interop: " << blobs_a->size()
            << " public objects stored byte for byte alike\n";
  return 0;
}

}  // namespace
}  // namespace accelcrypt::p11

int main(int argc, char** argv) {
  using namespace accelcrypt::p11;  // NOLINT(google-build-using-namespace)
  const std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "write" && argc == 3) return Write(argv[2]);
  if (cmd == "check" && argc == 3) return Check(argv[2]);
  if (cmd == "compare" && argc == 4) return Compare(argv[2], argv[3]);
  std::cerr << "usage: p11_store_interop write DIR | check DIR | compare A B\n";
  return 2;
}
