// SPDX-License-Identifier: Apache-2.0
// The object functions of the PKCS#11 module (v2.40 section 5.7) and the
// handle table that mirrors the token stores.
#include <algorithm>
#include <optional>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status.h"
#include "pkcs11/common/ck_error.h"
#include "pkcs11/module/module.h"
#include "pkcs11/object/object_rules.h"

namespace accelcrypt::p11 {
namespace {

bool SameAttributes(const AttributeMap& a, const AttributeMap& b) {
  if (a.size() != b.size()) return false;
  auto ia = a.values().begin();
  auto ib = b.values().begin();
  for (; ia != a.values().end(); ++ia, ++ib) {
    if (ia->first != ib->first || ia->second.size() != ib->second.size() ||
        !std::equal(ia->second.data(), ia->second.data() + ia->second.size(),
                    ib->second.data())) {
      return false;
    }
  }
  return true;
}

bool Visible(const Object& o, const Session& s) {
  return o.token == s.token &&
         (!o.is_private || s.token->login.load() == LoginState::kUser);
}

absl::Status CheckTemplateArg(CK_ATTRIBUTE_PTR tmpl, CK_ULONG count) {
  if (tmpl == nullptr && count != 0) {
    return CkError(CKR_ARGUMENTS_BAD, "pTemplate is NULL");
  }
  return absl::OkStatus();
}

}  // namespace

// `object` is moved into objects_; clang-tidy 14 does not see the move
// through flat_hash_map::emplace.
absl::StatusOr<CK_OBJECT_HANDLE> Module::InsertObject(
    // NOLINTNEXTLINE(performance-unnecessary-value-param)
    std::shared_ptr<Object> object) {
  MutexLock l(&objects_mu_);
  ACCELCRYPT_RETURN_IF_ERROR(l.status());
  CK_OBJECT_HANDLE handle = next_object_.fetch_add(1);
  object->handle = handle;
  objects_.emplace(handle, std::move(object));
  return handle;
}

absl::Status Module::EraseObject(CK_OBJECT_HANDLE handle) {
  MutexLock l(&objects_mu_);
  ACCELCRYPT_RETURN_IF_ERROR(l.status());
  objects_.erase(handle);
  return absl::OkStatus();
}

absl::Status Module::SyncTokenObjects(Token* token) {
  ACCELCRYPT_ASSIGN_OR_RETURN(TokenStore * store, OpenStore(token));
  const bool want_private = token->login.load() == LoginState::kUser;
  if (token->objects_loaded && store->ChangeStamp() == token->data_version &&
      token->private_loaded == want_private) {
    return absl::OkStatus();
  }
  uint64_t version = 0;
  ACCELCRYPT_ASSIGN_OR_RETURN(
      std::vector<TokenStore::StoredObject> stored,
      store->LoadObjects(want_private ? &token->dek : nullptr, &version));
  absl::flat_hash_set<uint64_t> seen;
  MutexLock l(&objects_mu_);
  ACCELCRYPT_RETURN_IF_ERROR(l.status());
  for (TokenStore::StoredObject& so : stored) {
    if (so.locked) continue;
    seen.insert(so.id);
    if (auto it = token->handles.find(so.id); it != token->handles.end()) {
      if (auto oit = objects_.find(it->second); oit != objects_.end()) {
        Object& o = *oit->second;
        if (!SameAttributes(*o.attrs, so.attributes)) {
          o.attrs =
              std::make_shared<const AttributeMap>(std::move(so.attributes));
          o.prepared.reset();
        }
        continue;
      }
    }
    auto o = std::make_shared<Object>();
    o->token = token;
    o->store_id = so.id;
    o->is_token = true;
    o->is_private = so.is_private;
    o->attrs = std::make_shared<const AttributeMap>(std::move(so.attributes));
    CK_OBJECT_HANDLE handle = next_object_.fetch_add(1);
    o->handle = handle;
    objects_.emplace(handle, std::move(o));
    token->handles[so.id] = handle;
  }
  // Objects another process destroyed (or private ones no longer
  // readable) lose their handles.
  for (auto it = token->handles.begin(); it != token->handles.end();) {
    if (seen.contains(it->first)) {
      ++it;
      continue;
    }
    objects_.erase(it->second);
    token->handles.erase(it++);
  }
  token->objects_loaded = true;
  token->private_loaded = want_private;
  token->data_version = version;
  token->synced_version.store(version, std::memory_order_release);
  return absl::OkStatus();
}

bool Module::TokenFresh(Token* token) {
  TokenStore* store = token->open_store.load(std::memory_order_acquire);
  if (store == nullptr) return true;
  return store->ChangeStamp() ==
         token->synced_version.load(std::memory_order_acquire);
}

void Module::NoteOwnWrite(Token* token, TokenStore* store) {
  // Our commit set the stamp to one more than the largest it found; any
  // other process's commit (or a writer that died) since the table was
  // read makes it larger.
  const uint64_t written = store->LastWriteStamp();
  if (!token->objects_loaded || written != token->data_version + 1) return;
  token->data_version = written;
  token->synced_version.store(written, std::memory_order_release);
}

absl::Status Module::ForgetTokenObjects(Token* token, bool private_only) {
  MutexLock l(&objects_mu_);
  ACCELCRYPT_RETURN_IF_ERROR(l.status());
  // Token objects lose their handles; session objects (private ones at a
  // logout, v2.40 section 5.6) are destroyed.
  absl::erase_if(objects_, [&](const auto& entry) {
    const Object& o = *entry.second;
    return o.token == token && (o.is_private || !private_only);
  });
  if (private_only) {
    for (auto it = token->handles.begin(); it != token->handles.end();) {
      if (objects_.contains(it->second)) {
        ++it;
      } else {
        token->handles.erase(it++);
      }
    }
  } else {
    token->handles.clear();
    token->objects_loaded = false;
    token->synced_version.store(Token::kNotSynced, std::memory_order_release);
  }
  token->private_loaded = false;
  token->private_purge_pending = false;
  return absl::OkStatus();
}

absl::StatusOr<Module::ObjectRef> Module::LookupObject(const Session& session,
                                                       CK_OBJECT_HANDLE handle,
                                                       CK_RV invalid_rv) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::optional<ObjectRef> token_object;
    {
      ReaderMutexLock l(&objects_mu_);
      ACCELCRYPT_RETURN_IF_ERROR(l.status());
      auto it = objects_.find(handle);
      if (it != objects_.end()) {
        if (!Visible(*it->second, session)) break;
        ObjectRef ref{it->second, it->second->attrs};
        // A session object, or a token object just re-read: current.
        if (!it->second->is_token || attempt > 0) return ref;
        token_object = std::move(ref);
      }
    }
    if (token_object.has_value()) {
      // Another process may have destroyed or changed it: the store's
      // version tells (cheap); re-read only when it moved.
      if (TokenFresh(session.token)) return *std::move(token_object);
    }
    if (attempt == 0) {
      // A miss may be an object another process made or the first use of
      // the store; a stale token object may be gone or changed: bring the
      // handle table up to date once.
      Token* token = session.token;
      MutexLock tl(&token->mu);
      ACCELCRYPT_RETURN_IF_ERROR(tl.status());
      ACCELCRYPT_RETURN_IF_ERROR(SyncTokenObjects(token));
    }
  }
  return CkError(invalid_rv, absl::StrFormat("no object %d", handle));
}

absl::Status Module::CheckWritable(const Session& session, bool is_token,
                                   bool is_private) {
  // v2.40 section 5.7: only session objects in a R/O session; only public
  // objects unless the normal user is logged in.
  if (is_token && !session.rw) {
    return CkError(CKR_SESSION_READ_ONLY, "token objects need a R/W session");
  }
  if (is_private && session.token->login.load() != LoginState::kUser) {
    return CkError(CKR_USER_NOT_LOGGED_IN,
                   "private objects need the user logged in");
  }
  return absl::OkStatus();
}

absl::StatusOr<CK_OBJECT_HANDLE> Module::AddObject(const Session& session,
                                                   AttributeMap attrs) {
  const bool is_token = IsTokenObject(attrs);
  const bool is_private = IsPrivateObject(attrs);
  ACCELCRYPT_RETURN_IF_ERROR(CheckWritable(session, is_token, is_private));
  auto o = std::make_shared<Object>();
  o->token = session.token;
  o->is_token = is_token;
  o->is_private = is_private;
  o->attrs = std::make_shared<const AttributeMap>(std::move(attrs));
  if (!is_token) {
    o->owner = session.handle;
    return InsertObject(std::move(o));
  }
  Token* token = session.token;
  MutexLock tl(&token->mu);
  ACCELCRYPT_RETURN_IF_ERROR(tl.status());
  // The login may have ended since the check above.
  ACCELCRYPT_RETURN_IF_ERROR(CheckWritable(session, is_token, is_private));
  ACCELCRYPT_ASSIGN_OR_RETURN(TokenStore * store, OpenStore(token));
  ACCELCRYPT_ASSIGN_OR_RETURN(
      o->store_id, store->CreateObject(*o->attrs, is_private,
                                       is_private ? &token->dek : nullptr));
  uint64_t id = o->store_id;
  absl::StatusOr<CK_OBJECT_HANDLE> handle = InsertObject(std::move(o));
  if (!handle.ok()) {
    // No handle (the application's mutex failed): the object must not
    // stay in the store, unreachable yet found by the next look-up.
    absl::Status undo = store->DestroyObject(id);
    if (!undo.ok()) {
      Log(absl::StrCat(
          "slot ", token->id, ": object ", id,
          " created without a handle and left in the store: ", undo.message()));
    }
    return handle.status();
  }
  token->handles[id] = *handle;
  NoteOwnWrite(token, store);
  return *handle;
}

absl::Status Module::DestroyHandle(const ObjectRef& ref) {
  const Object& o = *ref.object;
  if (!o.is_token) return EraseObject(o.handle);
  Token* token = o.token;
  MutexLock tl(&token->mu);
  ACCELCRYPT_RETURN_IF_ERROR(tl.status());
  ACCELCRYPT_ASSIGN_OR_RETURN(TokenStore * store, OpenStore(token));
  // The handle goes first: when the application's mutex fails, the object
  // is left as it was, in the store and in the handle table.
  ACCELCRYPT_RETURN_IF_ERROR(EraseObject(o.handle));
  token->handles.erase(o.store_id);
  absl::Status st = store->DestroyObject(o.store_id);
  // Gone from the store either way (destroyed now or by another process).
  if (st.ok()) NoteOwnWrite(token, store);
  return st;
}

absl::Status Module::CreateObject(CK_SESSION_HANDLE h, CK_ATTRIBUTE_PTR tmpl,
                                  CK_ULONG count, CK_OBJECT_HANDLE_PTR out) {
  ACCELCRYPT_ASSIGN_OR_RETURN(std::shared_ptr<Session> s, FindSession(h));
  ACCELCRYPT_RETURN_IF_ERROR(CheckTemplateArg(tmpl, count));
  if (out == nullptr) return CkError(CKR_ARGUMENTS_BAD, "phObject is NULL");
  ACCELCRYPT_ASSIGN_OR_RETURN(AttributeMap given, ParseTemplate(tmpl, count));
  ACCELCRYPT_ASSIGN_OR_RETURN(
      AttributeMap attrs, BuildObject(Origin::kCreate, given, AttributeMap(),
                                      CK_UNAVAILABLE_INFORMATION));
  ACCELCRYPT_ASSIGN_OR_RETURN(*out, AddObject(*s, std::move(attrs)));
  return absl::OkStatus();
}

absl::Status Module::CopyObject(CK_SESSION_HANDLE h, CK_OBJECT_HANDLE object,
                                CK_ATTRIBUTE_PTR tmpl, CK_ULONG count,
                                CK_OBJECT_HANDLE_PTR out) {
  ACCELCRYPT_ASSIGN_OR_RETURN(std::shared_ptr<Session> s, FindSession(h));
  ACCELCRYPT_RETURN_IF_ERROR(CheckTemplateArg(tmpl, count));
  if (out == nullptr) return CkError(CKR_ARGUMENTS_BAD, "phNewObject is NULL");
  ACCELCRYPT_ASSIGN_OR_RETURN(
      ObjectRef ref, LookupObject(*s, object, CKR_OBJECT_HANDLE_INVALID));
  ACCELCRYPT_ASSIGN_OR_RETURN(AttributeMap given, ParseTemplate(tmpl, count));
  ACCELCRYPT_ASSIGN_OR_RETURN(AttributeMap attrs,
                              p11::CopyObject(*ref.attrs, given));
  ACCELCRYPT_ASSIGN_OR_RETURN(*out, AddObject(*s, std::move(attrs)));
  return absl::OkStatus();
}

absl::Status Module::DestroyObject(CK_SESSION_HANDLE h,
                                   CK_OBJECT_HANDLE object) {
  ACCELCRYPT_ASSIGN_OR_RETURN(std::shared_ptr<Session> s, FindSession(h));
  ACCELCRYPT_ASSIGN_OR_RETURN(
      ObjectRef ref, LookupObject(*s, object, CKR_OBJECT_HANDLE_INVALID));
  ACCELCRYPT_RETURN_IF_ERROR(
      CheckWritable(*s, ref.object->is_token, ref.object->is_private));
  if (!ref.attrs->BoolOr(CKA_DESTROYABLE, true)) {
    return CkError(CKR_ACTION_PROHIBITED, "CKA_DESTROYABLE is false");
  }
  // A finished AES operation kept for reuse still holds the key schedule of
  // the last key it ran with: a destroyed secret key must not outlive its
  // object there.
  if (ref.attrs->GetUlong(CKA_CLASS) == CKO_SECRET_KEY) {
    DropSpares(ref.object->token);
  }
  return DestroyHandle(ref);
}

absl::Status Module::GetObjectSize(CK_SESSION_HANDLE h, CK_OBJECT_HANDLE object,
                                   CK_ULONG_PTR size) {
  ACCELCRYPT_ASSIGN_OR_RETURN(std::shared_ptr<Session> s, FindSession(h));
  if (size == nullptr) return CkError(CKR_ARGUMENTS_BAD, "pulSize is NULL");
  ACCELCRYPT_ASSIGN_OR_RETURN(
      ObjectRef ref, LookupObject(*s, object, CKR_OBJECT_HANDLE_INVALID));
  // The stored form's size: per attribute a type, a length and the value.
  CK_ULONG total = 0;
  for (const auto& [type, value] : ref.attrs->values()) {
    total += 16 + value.size();
  }
  *size = total;
  return absl::OkStatus();
}

absl::Status Module::GetAttributeValue(CK_SESSION_HANDLE h,
                                       CK_OBJECT_HANDLE object,
                                       CK_ATTRIBUTE_PTR tmpl, CK_ULONG count) {
  ACCELCRYPT_ASSIGN_OR_RETURN(std::shared_ptr<Session> s, FindSession(h));
  ACCELCRYPT_RETURN_IF_ERROR(CheckTemplateArg(tmpl, count));
  ACCELCRYPT_ASSIGN_OR_RETURN(
      ObjectRef ref, LookupObject(*s, object, CKR_OBJECT_HANDLE_INVALID));
  CK_RV rv = GetAttributes(*ref.attrs, tmpl, count);
  if (rv != CKR_OK) return CkError(rv, "C_GetAttributeValue");
  return absl::OkStatus();
}

absl::Status Module::SetAttributeValue(CK_SESSION_HANDLE h,
                                       CK_OBJECT_HANDLE object,
                                       CK_ATTRIBUTE_PTR tmpl, CK_ULONG count) {
  ACCELCRYPT_ASSIGN_OR_RETURN(std::shared_ptr<Session> s, FindSession(h));
  ACCELCRYPT_RETURN_IF_ERROR(CheckTemplateArg(tmpl, count));
  ACCELCRYPT_ASSIGN_OR_RETURN(
      ObjectRef ref, LookupObject(*s, object, CKR_OBJECT_HANDLE_INVALID));
  ACCELCRYPT_RETURN_IF_ERROR(
      CheckWritable(*s, ref.object->is_token, ref.object->is_private));
  ACCELCRYPT_ASSIGN_OR_RETURN(AttributeMap given, ParseTemplate(tmpl, count));
  if (!ref.object->is_token) {
    auto updated = std::make_shared<AttributeMap>(*ref.attrs);
    ACCELCRYPT_RETURN_IF_ERROR(SetAttributes(updated.get(), given));
    MutexLock l(&objects_mu_);
    ACCELCRYPT_RETURN_IF_ERROR(l.status());
    ref.object->attrs = std::move(updated);
    ref.object->prepared.reset();
    return absl::OkStatus();
  }
  // A token object: the template is applied to the attributes read and
  // written only if the store still holds those (compare-and-set), so a
  // change another process made meanwhile (CKA_ENCRYPT turned off, say) is
  // never silently undone; on a conflict the object is read again and the
  // template applied to what is there now.
  Token* token = ref.object->token;
  constexpr int kAttempts = 5;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    const Object& o = *ref.object;
    ACCELCRYPT_RETURN_IF_ERROR(CheckWritable(*s, o.is_token, o.is_private));
    auto updated = std::make_shared<AttributeMap>(*ref.attrs);
    ACCELCRYPT_RETURN_IF_ERROR(SetAttributes(updated.get(), given));
    MutexLock tl(&token->mu);
    ACCELCRYPT_RETURN_IF_ERROR(tl.status());
    ACCELCRYPT_RETURN_IF_ERROR(CheckWritable(*s, o.is_token, o.is_private));
    ACCELCRYPT_ASSIGN_OR_RETURN(TokenStore * store, OpenStore(token));
    absl::Status st = store->UpdateObject(o.store_id, *updated, o.is_private,
                                          o.is_private ? &token->dek : nullptr,
                                          ref.attrs.get());
    if (st.code() != absl::StatusCode::kAborted) {
      ACCELCRYPT_RETURN_IF_ERROR(st);
      {
        MutexLock l(&objects_mu_);
        ACCELCRYPT_RETURN_IF_ERROR(l.status());
        ref.object->attrs = std::move(updated);
        ref.object->prepared.reset();
      }
      NoteOwnWrite(token, store);
      return absl::OkStatus();
    }
    ACCELCRYPT_RETURN_IF_ERROR(SyncTokenObjects(token));
    ReaderMutexLock l(&objects_mu_);
    ACCELCRYPT_RETURN_IF_ERROR(l.status());
    auto it = objects_.find(object);
    if (it == objects_.end() || !Visible(*it->second, *s)) {
      return CkError(CKR_OBJECT_HANDLE_INVALID,
                     absl::StrFormat("no object %d", object));
    }
    ref = ObjectRef{it->second, it->second->attrs};
  }
  return CkError(CKR_FUNCTION_FAILED,
                 absl::StrFormat("object %d kept changing in other processes "
                                 "during C_SetAttributeValue",
                                 object));
}

absl::Status Module::FindObjectsInit(CK_SESSION_HANDLE h, CK_ATTRIBUTE_PTR tmpl,
                                     CK_ULONG count) {
  ACCELCRYPT_ASSIGN_OR_RETURN(std::shared_ptr<Session> s, FindSession(h));
  ACCELCRYPT_RETURN_IF_ERROR(CheckTemplateArg(tmpl, count));
  {
    MutexLock l(&s->mu);
    ACCELCRYPT_RETURN_IF_ERROR(l.status());
    if (s->find_active) {
      return CkError(CKR_OPERATION_ACTIVE, "a search is active");
    }
  }
  ACCELCRYPT_ASSIGN_OR_RETURN(AttributeMap wanted, ParseTemplate(tmpl, count));
  {
    Token* token = s->token;
    MutexLock tl(&token->mu);
    ACCELCRYPT_RETURN_IF_ERROR(tl.status());
    ACCELCRYPT_RETURN_IF_ERROR(SyncTokenObjects(token));
  }
  std::vector<CK_OBJECT_HANDLE> found;
  {
    ReaderMutexLock l(&objects_mu_);
    ACCELCRYPT_RETURN_IF_ERROR(l.status());
    for (const auto& [handle, object] : objects_) {
      if (Visible(*object, *s) && Matches(*object->attrs, wanted)) {
        found.push_back(handle);
      }
    }
  }
  std::sort(found.begin(), found.end());
  MutexLock l(&s->mu);
  ACCELCRYPT_RETURN_IF_ERROR(l.status());
  if (s->find_active) {
    return CkError(CKR_OPERATION_ACTIVE, "a search is active");
  }
  s->find_active = true;
  s->found = std::move(found);
  s->found_pos = 0;
  return absl::OkStatus();
}

absl::Status Module::FindObjects(CK_SESSION_HANDLE h, CK_OBJECT_HANDLE_PTR out,
                                 CK_ULONG max, CK_ULONG_PTR count) {
  ACCELCRYPT_ASSIGN_OR_RETURN(std::shared_ptr<Session> s, FindSession(h));
  if (count == nullptr || (out == nullptr && max != 0)) {
    return CkError(CKR_ARGUMENTS_BAD, "phObject or pulObjectCount is NULL");
  }
  MutexLock l(&s->mu);
  ACCELCRYPT_RETURN_IF_ERROR(l.status());
  if (!s->find_active) {
    return CkError(CKR_OPERATION_NOT_INITIALIZED, "no active search");
  }
  CK_ULONG n = 0;
  while (n < max && s->found_pos < s->found.size()) {
    out[n++] = s->found[s->found_pos++];
  }
  *count = n;
  return absl::OkStatus();
}

absl::Status Module::FindObjectsFinal(CK_SESSION_HANDLE h) {
  ACCELCRYPT_ASSIGN_OR_RETURN(std::shared_ptr<Session> s, FindSession(h));
  MutexLock l(&s->mu);
  ACCELCRYPT_RETURN_IF_ERROR(l.status());
  if (!s->find_active) {
    return CkError(CKR_OPERATION_NOT_INITIALIZED, "no active search");
  }
  s->find_active = false;
  s->found.clear();
  s->found_pos = 0;
  return absl::OkStatus();
}

}  // namespace accelcrypt::p11
