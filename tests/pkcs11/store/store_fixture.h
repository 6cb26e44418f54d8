// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_TESTS_PKCS11_STORE_STORE_FIXTURE_H_
#define ACCELCRYPT_TESTS_PKCS11_STORE_STORE_FIXTURE_H_

// The fixture and helpers shared by the token store's tests
// (store_{pin,objects,damage,process}_test.cc): each test gets a fresh
// temporary directory holding one slot's store, opened with fast PBKDF2
// options.

#include <openssl/rand.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pkcs11/common/ck_error.h"
#include "pkcs11/store/token_store.h"
#include "tests/support/status_matchers.h"

namespace accelcrypt::p11::store_test {

using ::testing::HasSubstr;
using User = TokenStore::User;

inline constexpr char kSoPin[] = "so-pin-1234";
inline constexpr char kUserPin[] = "user-pin-5678";

MATCHER_P(HasCkRv, rv, "has CK_RV " + CkRvName(rv)) {
  absl::Status status = ::accelcrypt::testing::internal::GetStatus(arg);
  *result_listener << "which is " << status.ToString();
  return ToCkRv(status) == rv;
}

inline TokenStore::Options FastOptions() {
  TokenStore::Options o;
  o.pbkdf2_iterations = 1000;
  o.max_pin_failures = 3;
  o.busy_timeout_ms = 20000;
  return o;
}

inline std::vector<uint8_t> RandomBytes(size_t n) {
  std::vector<uint8_t> v(n);
  EXPECT_EQ(RAND_bytes(v.data(), static_cast<int>(n)), 1);
  return v;
}

inline std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

inline bool Contains(const std::vector<uint8_t>& haystack,
                     const std::vector<uint8_t>& needle) {
  return std::search(haystack.begin(), haystack.end(), needle.begin(),
                     needle.end()) != haystack.end();
}

// A secret-key-like private object and a certificate-like public one.
inline AttributeMap PrivateAttrs(const std::vector<uint8_t>& value) {
  AttributeMap a;
  a.SetUlong(CKA_CLASS, CKO_SECRET_KEY);
  a.SetUlong(CKA_KEY_TYPE, CKK_AES);
  a.SetBool(CKA_TOKEN, true);
  a.SetBool(CKA_PRIVATE, true);
  a.Set(CKA_VALUE, value);
  a.SetString(CKA_LABEL, "secret");
  return a;
}

inline AttributeMap PublicAttrs(const std::string& label) {
  AttributeMap a;
  a.SetUlong(CKA_CLASS, CKO_DATA);
  a.SetBool(CKA_TOKEN, true);
  a.SetBool(CKA_PRIVATE, false);
  a.SetString(CKA_LABEL, label);
  return a;
}

class TokenStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/p11storeXXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/slot0";
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  std::unique_ptr<TokenStore> OpenStore() {
    auto store = TokenStore::Open(dir_, FastOptions());
    EXPECT_OK(store);
    return store.ok() ? std::move(*store) : nullptr;
  }

  // InitializedStore: SO PIN and user PIN set.
  std::unique_ptr<TokenStore> InitializedStore() {
    auto store = OpenStore();
    if (store == nullptr) return nullptr;
    EXPECT_OK(store->InitToken(kSoPin, "test token"));
    auto so_dek = store->Login(User::kSo, kSoPin);
    EXPECT_OK(so_dek);
    if (!so_dek.ok()) return nullptr;
    EXPECT_OK(store->InitPin(*so_dek, kUserPin));
    return store;
  }

  std::string root_;
  std::string dir_;
};

// RawDb is a second, plain SQLite connection to a store's file, for
// looking at and damaging what the store wrote.
class RawDb {
 public:
  explicit RawDb(const std::string& path) {
    EXPECT_EQ(
        sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr),
        SQLITE_OK);
    sqlite3_busy_timeout(db_, 20000);
  }
  ~RawDb() { sqlite3_close_v2(db_); }

  void Exec(const std::string& sql) {
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK)
        << sql << ": " << (err ? err : "");
    sqlite3_free(err);
  }
  std::string Text(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    std::string out;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr), SQLITE_OK);
    if (sqlite3_step(s) == SQLITE_ROW) {
      const unsigned char* t = sqlite3_column_text(s, 0);
      if (t != nullptr) out = reinterpret_cast<const char*>(t);
    }
    sqlite3_finalize(s);
    return out;
  }
  std::vector<uint8_t> Blob(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    std::vector<uint8_t> out;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr), SQLITE_OK);
    if (sqlite3_step(s) == SQLITE_ROW) {
      const auto* p = static_cast<const uint8_t*>(sqlite3_column_blob(s, 0));
      out.assign(p, p + sqlite3_column_bytes(s, 0));
    }
    sqlite3_finalize(s);
    return out;
  }
  void SetBlob(const std::string& sql, const std::vector<uint8_t>& value) {
    sqlite3_stmt* s = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr), SQLITE_OK);
    sqlite3_bind_blob(s, 1, value.data(), static_cast<int>(value.size()),
                      SQLITE_TRANSIENT);
    EXPECT_EQ(sqlite3_step(s), SQLITE_DONE);
    sqlite3_finalize(s);
  }

 private:
  sqlite3* db_ = nullptr;
};

}  // namespace accelcrypt::p11::store_test

#endif  // ACCELCRYPT_TESTS_PKCS11_STORE_STORE_FIXTURE_H_
