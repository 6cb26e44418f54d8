// SPDX-License-Identifier: Apache-2.0
// Token's key objects (token.h): the LRU cache of imported session objects
// (import on a miss, eviction, stale entries forgotten), lookup of token
// objects named by an RFC 7512 `pkcs11:` URI with the login its query may
// carry, and attribute reads. Module, slot, sessions, fork and login are in
// token.cc.
#include <openssl/crypto.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "backends/pkcs11/ck_status.h"
#include "backends/pkcs11/token.h"

namespace accelcrypt::pkcs11_client {
namespace {

// PercentDecode decodes RFC 3986 %XX escapes (RFC 7512 section 2.3).
absl::StatusOr<std::string> PercentDecode(absl::string_view in) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out.push_back(in[i]);
      continue;
    }
    int v = 0;
    if (i + 2 >= in.size()) {
      return absl::InvalidArgumentError("pkcs11: bad %-escape in URI");
    }
    for (int k = 1; k <= 2; ++k) {
      char c = absl::ascii_tolower(in[i + k]);
      int d = (c >= '0' && c <= '9')   ? c - '0'
              : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                                       : -1;
      if (d < 0)
        return absl::InvalidArgumentError("pkcs11: bad %-escape in URI");
      v = v * 16 + d;
    }
    out.push_back(static_cast<char>(v));
    i += 2;
  }
  return out;
}

}  // namespace

void Token::Touch(const std::string& key) {
  auto it = cache_.find(key);
  if (it == cache_.end()) return;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
}

void Token::Insert(const std::string& key, KeyObjects objects) {
  while (cache_.size() >= config_.key_cache_size && !lru_.empty()) {
    const std::string& victim = lru_.back();
    auto it = cache_.find(victim);
    if (it != cache_.end()) {
      // Imported session objects are destroyed on eviction; objects found
      // by URI are token objects and stay.
      if (victim.rfind("uri:", 0) != 0) {
        if (it->second.objects.priv != CK_INVALID_HANDLE) {
          fl_->C_DestroyObject(anchor_, it->second.objects.priv);
        }
        if (it->second.objects.pub != CK_INVALID_HANDLE) {
          fl_->C_DestroyObject(anchor_, it->second.objects.pub);
        }
      }
      cache_.erase(it);
    }
    lru_.pop_back();
  }
  lru_.push_front(key);
  cache_[key] = Entry{objects, lru_.begin()};
}

void Token::Forget(const std::string& fingerprint) {
  absl::MutexLock lock(&mu_);
  auto it = cache_.find(fingerprint);
  if (it == cache_.end()) return;
  lru_.erase(it->second.lru);
  cache_.erase(it);
}

absl::StatusOr<KeyObjects> Token::Objects(const std::string& fingerprint,
                                          const Attrs& priv_template,
                                          const Attrs& pub_template) {
  absl::Status st = CheckFork();
  if (!st.ok()) return st;
  absl::MutexLock lock(&mu_);
  uint64_t gen = generation_.load(std::memory_order_relaxed);
  if (auto it = cache_.find(fingerprint); it != cache_.end()) {
    Touch(fingerprint);
    return it->second.objects;
  }
  // Imports run on the anchor session, so the objects live as long as the
  // login; mu_ serialises use of that one session.
  KeyObjects objects;
  objects.generation = gen;
  if (!priv_template.empty()) {
    // CKA_PRIVATE follows the login state at import time: a public session
    // may create public objects only (PKCS#11 v2.40 section 4.4). Imports
    // do not log in by themselves (the key material is in this process
    // already, and the registration self-test imports keys): only a token
    // that refuses the import without a login gets one.
    Attrs attrs = priv_template;
    CK_BBOOL is_private = CK_FALSE;
    // Called under this function's lock; the analysis does not carry a
    // caller's lock into a lambda, so the lambda states it.
    auto create = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      is_private = logged_in() ? CK_TRUE : CK_FALSE;
      for (CK_ATTRIBUTE& a : attrs) {
        if (a.type == CKA_PRIVATE) {
          a.pValue = &is_private;
          a.ulValueLen = sizeof(is_private);
        }
      }
      return fl_->C_CreateObject(anchor_, attrs.data(), attrs.size(),
                                 &objects.priv);
    };
    CK_RV rv = create();
    if (rv == CKR_USER_NOT_LOGGED_IN && !logged_in() && !config_.pin.empty()) {
      absl::Status login = EnsureLogin(config_.pin, pin_from_uri_);
      if (!login.ok()) return login;
      rv = create();
    }
    if (rv != CKR_OK) {
      absl::Status s = FromCkRv(rv, "C_CreateObject (private key)");
      // A template the token refuses means it cannot take this key here.
      return s.code() == absl::StatusCode::kInvalidArgument
                 ? absl::UnimplementedError(s.message())
                 : s;
    }
    objects_created_.fetch_add(1, std::memory_order_relaxed);
  }
  if (!pub_template.empty()) {
    Attrs attrs = pub_template;
    CK_RV rv =
        fl_->C_CreateObject(anchor_, attrs.data(), attrs.size(), &objects.pub);
    if (rv != CKR_OK) {
      if (objects.priv != CK_INVALID_HANDLE) {
        fl_->C_DestroyObject(anchor_, objects.priv);
      }
      absl::Status s = FromCkRv(rv, "C_CreateObject (public key)");
      return s.code() == absl::StatusCode::kInvalidArgument
                 ? absl::UnimplementedError(s.message())
                 : s;
    }
    objects_created_.fetch_add(1, std::memory_order_relaxed);
  }
  Insert(fingerprint, objects);
  return objects;
}

absl::StatusOr<KeyObjects> Token::FindByUri(const std::string& uri) {
  absl::string_view rest = uri;
  if (!absl::ConsumePrefix(&rest, "pkcs11:")) {
    return absl::UnimplementedError("pkcs11: not a pkcs11: URI");
  }
  // Path attributes name the object (RFC 7512 section 2.3); the query may
  // carry a PIN (pin-value, pin-source), nothing else is used.
  absl::string_view query;
  if (size_t q = rest.find('?'); q != absl::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  std::string object, id, token;
  bool has_object = false, has_id = false;
  for (absl::string_view attr : absl::StrSplit(rest, ';', absl::SkipEmpty())) {
    size_t eq = attr.find('=');
    if (eq == absl::string_view::npos) continue;
    absl::string_view name = attr.substr(0, eq);
    absl::StatusOr<std::string> value = PercentDecode(attr.substr(eq + 1));
    if (!value.ok()) return value.status();
    if (name == "object") {
      object = *value;
      has_object = true;
    } else if (name == "id") {
      id = *value;
      has_id = true;
    } else if (name == "token") {
      token = *value;
    }
  }
  if (!token.empty() && token != label_) {
    return absl::UnimplementedError(absl::StrFormat(
        "pkcs11: the URI names token '%s', not '%s'", token, label_));
  }
  if (!has_object && !has_id) {
    return absl::InvalidArgumentError(
        "pkcs11: the URI names no object (object= or id=)");
  }
  absl::Status st = CheckFork();
  if (!st.ok()) return st;
  const std::string key = "uri:" + uri;
  absl::MutexLock lock(&mu_);
  if (auto it = cache_.find(key); it != cache_.end()) {
    Touch(key);
    return it->second.objects;
  }
  st = LoginWithUriPin(query);
  if (!st.ok()) return st;
  KeyObjects objects;
  objects.generation = generation_.load(std::memory_order_relaxed);
  for (CK_OBJECT_CLASS cls : {CKO_PRIVATE_KEY, CKO_PUBLIC_KEY}) {
    Attrs attrs;
    attrs.push_back({CKA_CLASS, &cls, sizeof(cls)});
    if (has_object) attrs.push_back({CKA_LABEL, object.data(), object.size()});
    if (has_id) attrs.push_back({CKA_ID, id.data(), id.size()});
    absl::StatusOr<CK_OBJECT_HANDLE> found = FindOne(attrs);
    if (!found.ok()) return found.status();
    (cls == CKO_PRIVATE_KEY ? objects.priv : objects.pub) = *found;
  }
  if (objects.priv == CK_INVALID_HANDLE && objects.pub == CK_INVALID_HANDLE) {
    return absl::UnimplementedError(absl::StrFormat(
        "pkcs11: no key on token '%s' matches the URI", label_));
  }
  if (objects.pub == CK_INVALID_HANDLE) {
    // The public half of a key pair shares the private key's CKA_ID (PKCS#11
    // section 4.6's convention), else its label.
    for (CK_ATTRIBUTE_TYPE link : {CKA_ID, CKA_LABEL}) {
      CK_ATTRIBUTE attr{link, nullptr, 0};
      CK_RV rv = fl_->C_GetAttributeValue(anchor_, objects.priv, &attr, 1);
      if (rv != CKR_OK || attr.ulValueLen == 0 ||
          attr.ulValueLen == CK_UNAVAILABLE_INFORMATION) {
        continue;
      }
      std::vector<uint8_t> value(attr.ulValueLen);
      attr.pValue = value.data();
      if (fl_->C_GetAttributeValue(anchor_, objects.priv, &attr, 1) != CKR_OK) {
        continue;
      }
      CK_OBJECT_CLASS cls = CKO_PUBLIC_KEY;
      Attrs attrs = {{CKA_CLASS, &cls, sizeof(cls)},
                     {link, value.data(), value.size()}};
      absl::StatusOr<CK_OBJECT_HANDLE> found = FindOne(attrs);
      if (!found.ok()) return found.status();
      if (*found != CK_INVALID_HANDLE) {
        objects.pub = *found;
        break;
      }
    }
  }
  Insert(key, objects);
  return objects;
}

absl::StatusOr<CK_OBJECT_HANDLE> Token::FindOne(const Attrs& attrs) {
  CK_RV rv = fl_->C_FindObjectsInit(
      anchor_, const_cast<CK_ATTRIBUTE*>(attrs.data()), attrs.size());
  if (rv != CKR_OK) return FromCkRv(rv, "C_FindObjectsInit");
  CK_OBJECT_HANDLE found = CK_INVALID_HANDLE;
  CK_ULONG count = 0;
  rv = fl_->C_FindObjects(anchor_, &found, 1, &count);
  fl_->C_FindObjectsFinal(anchor_);
  if (rv != CKR_OK) return FromCkRv(rv, "C_FindObjects");
  return count == 1 ? found : CK_INVALID_HANDLE;
}

absl::Status Token::LoginWithUriPin(absl::string_view query) {
  if (logged_in()) return absl::OkStatus();
  // A configured PIN wins over the URI's.
  if (!config_.pin.empty()) return EnsureLogin(config_.pin, pin_from_uri_);
  std::string pin;
  // Room for any PIN up front: a string that grows leaves the bytes it
  // had in freed memory.
  pin.reserve(256);
  for (absl::string_view attr : absl::StrSplit(query, '&', absl::SkipEmpty())) {
    size_t eq = attr.find('=');
    if (eq == absl::string_view::npos) continue;
    absl::string_view name = attr.substr(0, eq);
    if (name != "pin-value" && name != "pin-source") continue;
    absl::StatusOr<std::string> value = PercentDecode(attr.substr(eq + 1));
    if (!value.ok()) return value.status();
    OPENSSL_cleanse(pin.data(), pin.size());  // a second pin attribute
    if (name == "pin-value") {
      pin = *value;
    } else {
      absl::string_view path = *value;
      absl::ConsumePrefix(&path, "file://");
      absl::ConsumePrefix(&path, "file:");
      std::ifstream in{std::string(path)};
      if (!in) {
        return absl::InvalidArgumentError(
            "pkcs11: cannot read the URI's pin-source file");
      }
      std::getline(in, pin);
      while (!pin.empty() && (pin.back() == '\r' || pin.back() == '\n')) {
        pin.pop_back();
      }
    }
    OPENSSL_cleanse(value->data(), value->size());
  }
  if (pin.empty()) return absl::OkStatus();
  absl::Status st = EnsureLogin(pin, /*from_uri=*/true);
  if (st.ok()) {
    // Kept for the re-login of a forked child; wiped with the config.
    // Copied, not moved: a moved short string leaves its bytes behind in
    // `pin`'s own buffer, which is wiped below.
    config_.pin.assign(pin);
    config_.pin_source = "the URI's PIN";
    pin_from_uri_ = true;
  }
  OPENSSL_cleanse(pin.data(), pin.size());
  return st;
}

absl::StatusOr<std::vector<uint8_t>> Token::GetAttribute(
    CK_OBJECT_HANDLE object, CK_ATTRIBUTE_TYPE type) {
  absl::StatusOr<Session> s = Acquire();
  if (!s.ok()) return s.status();
  CK_ATTRIBUTE attr{type, nullptr, 0};
  CK_RV rv = fl_->C_GetAttributeValue(s->handle, object, &attr, 1);
  std::vector<uint8_t> out;
  if (rv == CKR_OK && attr.ulValueLen != CK_UNAVAILABLE_INFORMATION) {
    out.resize(attr.ulValueLen);
    attr.pValue = out.data();
    rv = fl_->C_GetAttributeValue(s->handle, object, &attr, 1);
  }
  Release(*s, rv != CKR_OK);
  if (rv != CKR_OK) return FromCkRv(rv, "C_GetAttributeValue");
  return out;
}

}  // namespace accelcrypt::pkcs11_client
