// SPDX-License-Identifier: Apache-2.0
// The cryptographic functions of the PKCS#11 module (v2.40 sections
// 5.8-5.15): session operation state and the output-buffer convention
// here, the computation in the mechanisms library.
#include <openssl/crypto.h>

#include <cstring>

#include "absl/strings/str_format.h"
#include "core/status.h"
#include "pkcs11/common/ck_error.h"
#include "pkcs11/module/module.h"
#include "pkcs11/object/object_rules.h"

namespace accelcrypt::p11 {
namespace {

struct SlotInfo {
  OpKind kind;
  CK_ATTRIBUTE_TYPE usage;  // 0: no key
};

SlotInfo InfoFor(OpSlot slot) {
  switch (slot) {
    case kEncryptSlot:
      return {OpKind::kEncrypt, CKA_ENCRYPT};
    case kDecryptSlot:
      return {OpKind::kDecrypt, CKA_DECRYPT};
    case kDigestSlot:
      return {OpKind::kDigest, 0};
    case kSignSlot:
      return {OpKind::kSign, CKA_SIGN};
    case kVerifySlot:
      return {OpKind::kVerify, CKA_VERIFY};
    case kVerifyRecoverSlot:
    default:
      return {OpKind::kVerifyRecover, CKA_VERIFY_RECOVER};
  }
}

constexpr CK_ATTRIBUTE_TYPE kUsages[] = {CKA_ENCRYPT, CKA_DECRYPT, CKA_SIGN,
                                         CKA_VERIFY, CKA_VERIFY_RECOVER};

// UseBit is `usage`'s bit in Object::prepared_uses (0: not one of them).
uint32_t UseBit(CK_ATTRIBUTE_TYPE usage) {
  for (size_t i = 0; i < sizeof(kUsages) / sizeof(kUsages[0]); ++i) {
    if (kUsages[i] == usage) return uint32_t{1} << i;
  }
  return 0;
}

uint32_t UsesOf(const AttributeMap& attrs) {
  uint32_t bits = 0;
  for (CK_ATTRIBUTE_TYPE usage : kUsages) {
    if (attrs.BoolOr(usage, false)) bits |= UseBit(usage);
  }
  return bits;
}

absl::Status NotInitialized() {
  return CkError(CKR_OPERATION_NOT_INITIALIZED, "no active operation");
}

absl::Status NoMechanisms() {
  return CkError(CKR_FUNCTION_NOT_SUPPORTED,
                 "the mechanisms library is not built in this module");
}

bool IsBufferTooSmall(const absl::Status& st) {
  return ToCkRv(st) == CKR_BUFFER_TOO_SMALL;
}

absl::Span<const uint8_t> In(CK_BYTE_PTR p, CK_ULONG len) {
  return absl::Span<const uint8_t>(p, p == nullptr ? 0 : len);
}

// Produce applies the two-call convention of v2.40 section 5.2 to an
// operation's output: `out` NULL asks for the size (`bound`, CKR_OK); a
// short buffer is CKR_BUFFER_TOO_SMALL with the size needed. Either way
// the operation stays active (*keep = true); any other result ends it.
template <typename Fn>
absl::Status Produce(size_t bound, CK_BYTE_PTR out, CK_ULONG_PTR out_len,
                     bool* keep, Fn&& fn) {
  if (out == nullptr) {
    *out_len = bound;
    *keep = true;
    return absl::OkStatus();
  }
  absl::StatusOr<size_t> n = fn(absl::Span<uint8_t>(out, *out_len));
  if (!n.ok()) {
    if (IsBufferTooSmall(n.status())) {
      *out_len = bound;
      *keep = true;
    }
    return n.status();
  }
  *out_len = *n;
  return absl::OkStatus();
}

// Install starts the slot's operation (the session's lock held): the
// slot's finished operation restarted when it can serve the request
// (Operation::Restart, no allocation), else a new one.
absl::Status Install(Mechanisms& mechanisms, ActiveOp& a, OpKind kind,
                     const CK_MECHANISM& mechanism,
                     std::shared_ptr<PreparedKey> key) {
  if (a.op != nullptr) {
    return CkError(CKR_OPERATION_ACTIVE, "an operation is active");
  }
  if (a.spare != nullptr && a.spare->Restart(kind, mechanism, key.get())) {
    a.op = std::move(a.spare);
  } else {
    a.spare.reset();
    absl::StatusOr<std::unique_ptr<Operation>> op =
        mechanisms.NewOperation(kind, mechanism, std::move(key));
    if (!op.ok()) return op.status();
    a.op = *std::move(op);
  }
  a.multipart = false;
  return absl::OkStatus();
}

}  // namespace

absl::Status Module::CachedKey(const Session& session, CK_OBJECT_HANDLE handle,
                               CK_ATTRIBUTE_TYPE usage,
                               std::shared_ptr<PreparedKey>* out) {
  // One reader lock: a visible object whose prepared key is cached
  // (`prepared` is reset whenever `attrs` is replaced, both under the
  // exclusive lock). Anything else is a miss for PreparedKeyFor's full
  // path, which gives the precise error.
  std::shared_ptr<PreparedKey> prepared;
  bool is_token = false;
  {
    ReaderMutexLock l(&objects_mu_);
    ACCELCRYPT_RETURN_IF_ERROR(l.status());
    auto it = objects_.find(handle);
    if (it == objects_.end()) return absl::OkStatus();
    const Object& o = *it->second;
    const bool visible =
        o.token == session.token &&
        (!o.is_private || session.token->login.load() == LoginState::kUser);
    if (!visible || o.prepared == nullptr) return absl::OkStatus();
    is_token = o.is_token;
    // A prepared object is a key whose attributes did not change since
    // (replacing `attrs` resets `prepared`), so its usage bits answer.
    const uint32_t bit = UseBit(usage);
    if (bit == 0 || (o.prepared_uses & bit) == 0) {
      // A token key's attributes may be stale (another process may have
      // allowed the use since): the full path decides, after re-reading.
      if (is_token) return absl::OkStatus();
      ACCELCRYPT_RETURN_IF_ERROR(CheckKeyUse(*o.attrs, usage));
    }
    prepared = o.prepared;
  }
  if (is_token) {
    // Another process may have destroyed the key or changed its
    // attributes since the handle table was read: any change to the store
    // sends the call down the full path, which re-reads it.
    if (!TokenFresh(session.token)) return absl::OkStatus();
  }
  *out = std::move(prepared);
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<PreparedKey>> Module::PreparedKeyFor(
    const Session& session, CK_OBJECT_HANDLE handle, CK_ATTRIBUTE_TYPE usage) {
  {
    std::shared_ptr<PreparedKey> cached;
    ACCELCRYPT_RETURN_IF_ERROR(CachedKey(session, handle, usage, &cached));
    if (cached != nullptr) return cached;
  }
  ACCELCRYPT_ASSIGN_OR_RETURN(
      ObjectRef ref, LookupObject(session, handle, CKR_KEY_HANDLE_INVALID));
  ACCELCRYPT_RETURN_IF_ERROR(CheckKeyUse(*ref.attrs, usage));
  {
    ReaderMutexLock l(&objects_mu_);
    ACCELCRYPT_RETURN_IF_ERROR(l.status());
    if (ref.object->prepared != nullptr && ref.object->attrs == ref.attrs) {
      return ref.object->prepared;
    }
  }
  ACCELCRYPT_ASSIGN_OR_RETURN(std::shared_ptr<PreparedKey> key,
                              mechanisms_->PrepareKey(*ref.attrs));
  MutexLock l(&objects_mu_);
  ACCELCRYPT_RETURN_IF_ERROR(l.status());
  // Cache it unless the object changed meanwhile.
  if (ref.object->attrs == ref.attrs) {
    ref.object->prepared = key;
    ref.object->prepared_uses = UsesOf(*ref.attrs);
  }
  return key;
}

absl::Status Module::OpInit(OpSlot slot, CK_SESSION_HANDLE h,
                            CK_MECHANISM_PTR mechanism, CK_OBJECT_HANDLE key) {
  const SlotInfo info = InfoFor(slot);
  if (info.usage == 0) {
    // Digests: one session lock for the whole call.
    LockedSession s;
    ACCELCRYPT_RETURN_IF_ERROR(LockSession(h, &s));
    s->mu.AssertHeld();
    s->mu.AssertHeld();
    if (mechanisms_ == nullptr) return NoMechanisms();
    if (mechanism == nullptr) {
      return CkError(CKR_ARGUMENTS_BAD, "pMechanism is NULL");
    }
    return Install(*mechanisms_, s->ops[slot], info.kind, *mechanism, nullptr);
  }
  {
    // Keyed operations, cached prepared key: one session lock (then the
    // handle table's reader lock, a leaf) for the whole call.
    LockedSession s;
    ACCELCRYPT_RETURN_IF_ERROR(LockSession(h, &s));
    s->mu.AssertHeld();
    s->mu.AssertHeld();
    if (mechanisms_ == nullptr) return NoMechanisms();
    // v2.40 has no "NULL mechanism cancels" rule (that is v3.0): NULL is
    // a bad argument and the active operation, if any, is left alone.
    if (mechanism == nullptr) {
      return CkError(CKR_ARGUMENTS_BAD, "pMechanism is NULL");
    }
    // An active operation is reported before a bad key.
    if (s->ops[slot].op != nullptr) {
      return CkError(CKR_OPERATION_ACTIVE, "an operation is active");
    }
    std::shared_ptr<PreparedKey> cached;
    ACCELCRYPT_RETURN_IF_ERROR(CachedKey(*s, key, info.usage, &cached));
    if (cached != nullptr) {
      return Install(*mechanisms_, s->ops[slot], info.kind, *mechanism,
                     std::move(cached));
    }
  }
  // A miss: the key is prepared (maybe after re-reading the store under
  // Token::mu) without the session lock held.
  ACCELCRYPT_ASSIGN_OR_RETURN(std::shared_ptr<Session> s, FindSession(h));
  ACCELCRYPT_ASSIGN_OR_RETURN(std::shared_ptr<PreparedKey> prepared,
                              PreparedKeyFor(*s, key, info.usage));
  MutexLock l(&s->mu);
  ACCELCRYPT_RETURN_IF_ERROR(l.status());
  return Install(*mechanisms_, s->ops[slot], info.kind, *mechanism,
                 std::move(prepared));
}

absl::Status Module::OneShot(OpSlot slot, CK_SESSION_HANDLE h, CK_BYTE_PTR in,
                             CK_ULONG in_len, CK_BYTE_PTR out,
                             CK_ULONG_PTR out_len) {
  LockedSession s;
  ACCELCRYPT_RETURN_IF_ERROR(LockSession(h, &s));
  s->mu.AssertHeld();
  ActiveOp& a = s->ops[slot];
  if (a.op == nullptr) return NotInitialized();
  // v2.40 section 5.8 (C_Encrypt; likewise C_Decrypt, C_Digest, C_Sign,
  // C_VerifyRecover): the call ends the operation unless it returns
  // CKR_BUFFER_TOO_SMALL or answers a size query.
  bool keep = false;
  absl::Status st;
  if ((in == nullptr && in_len != 0) || out_len == nullptr) {
    st = CkError(CKR_ARGUMENTS_BAD, "NULL data or length pointer");
  } else if (a.multipart) {
    // "must be called after C_EncryptInit without intervening
    // C_EncryptUpdate calls".
    st = CkError(CKR_OPERATION_ACTIVE,
                 "single-part call after a multi-part update");
  } else {
    st = Produce(a.op->OutputBound(Operation::Call::kOneShot, in_len), out,
                 out_len, &keep, [&](absl::Span<uint8_t> o) {
                   return a.op->OneShot(In(in, in_len), o);
                 });
  }
  if (keep) {
    a.single_part = true;
  } else {
    a.End(st.ok());
  }
  return st;
}

namespace {

// Once C_Encrypt (C_Decrypt, C_Digest, C_Sign) answered a size query or
// CKR_BUFFER_TOO_SMALL, the single-part call is what the operation waits
// for (v2.40 5.8.2, 5.9.2, 5.10.2, 5.11.2: the single-part call "MUST be
// called after C_*Init without intervening C_*Update calls"): a multi-part
// call is refused with CKR_OPERATION_ACTIVE, and being a failed C_*Update
// or C_*Final it ends the operation (5.8.3/5.8.4, 5.9.3/5.9.4,
// 5.10.3/5.10.5, 5.11.3/5.11.4: every error of an update, and of a final
// other than CKR_BUFFER_TOO_SMALL, terminates it). C_DigestKey (5.10.4)
// is treated as C_DigestUpdate.
absl::Status EndSinglePart(ActiveOp& a) {
  a.Reset();
  return CkError(CKR_OPERATION_ACTIVE,
                 "multi-part call after a single-part size query");
}

}  // namespace

absl::Status Module::UpdateWithOutput(OpSlot slot, CK_SESSION_HANDLE h,
                                      CK_BYTE_PTR in, CK_ULONG in_len,
                                      CK_BYTE_PTR out, CK_ULONG_PTR out_len) {
  LockedSession s;
  ACCELCRYPT_RETURN_IF_ERROR(LockSession(h, &s));
  s->mu.AssertHeld();
  ActiveOp& a = s->ops[slot];
  if (a.op == nullptr) return NotInitialized();
  if (a.single_part) return EndSinglePart(a);
  bool keep = false;
  absl::Status st;
  if ((in == nullptr && in_len != 0) || out_len == nullptr) {
    st = CkError(CKR_ARGUMENTS_BAD, "NULL data or length pointer");
  } else {
    st = Produce(a.op->OutputBound(Operation::Call::kUpdate, in_len), out,
                 out_len, &keep, [&](absl::Span<uint8_t> o) {
                   return a.op->Update(In(in, in_len), o);
                 });
  }
  if (st.ok() && out != nullptr) {
    a.multipart = true;
    return st;
  }
  // v2.40 section 5.8: an error (other than a short buffer) ends it.
  if (!keep) a.Reset();
  return st;
}

absl::Status Module::Update(OpSlot slot, CK_SESSION_HANDLE h, CK_BYTE_PTR in,
                            CK_ULONG in_len) {
  LockedSession s;
  ACCELCRYPT_RETURN_IF_ERROR(LockSession(h, &s));
  s->mu.AssertHeld();
  ActiveOp& a = s->ops[slot];
  if (a.op == nullptr) return NotInitialized();
  if (a.single_part) return EndSinglePart(a);
  absl::Status st;
  if (in == nullptr && in_len != 0) {
    st = CkError(CKR_ARGUMENTS_BAD, "pPart is NULL");
  } else {
    st = a.op->Update(In(in, in_len), absl::Span<uint8_t>()).status();
  }
  if (!st.ok()) {
    a.Reset();
    return st;
  }
  a.multipart = true;
  return st;
}

absl::Status Module::Final(OpSlot slot, CK_SESSION_HANDLE h, CK_BYTE_PTR out,
                           CK_ULONG_PTR out_len) {
  LockedSession s;
  ACCELCRYPT_RETURN_IF_ERROR(LockSession(h, &s));
  s->mu.AssertHeld();
  ActiveOp& a = s->ops[slot];
  if (a.op == nullptr) return NotInitialized();
  if (a.single_part) return EndSinglePart(a);
  bool keep = false;
  absl::Status st;
  if (out_len == nullptr) {
    st = CkError(CKR_ARGUMENTS_BAD, "length pointer is NULL");
  } else {
    st = Produce(a.op->OutputBound(Operation::Call::kFinal, 0), out, out_len,
                 &keep, [&](absl::Span<uint8_t> o) { return a.op->Final(o); });
  }
  if (!keep) a.End(st.ok());
  return st;
}

absl::Status Module::Verify(CK_SESSION_HANDLE h, CK_BYTE_PTR data,
                            CK_ULONG data_len, CK_BYTE_PTR sig,
                            CK_ULONG sig_len) {
  LockedSession s;
  ACCELCRYPT_RETURN_IF_ERROR(LockSession(h, &s));
  s->mu.AssertHeld();
  ActiveOp& a = s->ops[kVerifySlot];
  if (a.op == nullptr) return NotInitialized();
  absl::Status st;
  if ((data == nullptr && data_len != 0) || sig == nullptr) {
    st = CkError(CKR_ARGUMENTS_BAD, "NULL data or signature");
  } else if (a.multipart) {
    st = CkError(CKR_OPERATION_ACTIVE,
                 "single-part call after a multi-part update");
  } else {
    st = a.op->Verify(In(data, data_len), In(sig, sig_len));
  }
  // C_Verify always ends the operation (v2.40 section 5.12.2).
  a.Reset();
  return st;
}

absl::Status Module::VerifyFinal(CK_SESSION_HANDLE h, CK_BYTE_PTR sig,
                                 CK_ULONG sig_len) {
  LockedSession s;
  ACCELCRYPT_RETURN_IF_ERROR(LockSession(h, &s));
  s->mu.AssertHeld();
  ActiveOp& a = s->ops[kVerifySlot];
  if (a.op == nullptr) return NotInitialized();
  absl::Status st = sig == nullptr
                        ? CkError(CKR_ARGUMENTS_BAD, "pSignature is NULL")
                        : a.op->VerifyFinal(In(sig, sig_len));
  // "A call to C_VerifyFinal always terminates the active verification
  // operation" (v2.40 section 5.12.4).
  a.Reset();
  return st;
}

absl::Status Module::DigestKey(CK_SESSION_HANDLE h, CK_OBJECT_HANDLE key) {
  ACCELCRYPT_ASSIGN_OR_RETURN(std::shared_ptr<Session> s, FindSession(h));
  {
    MutexLock l(&s->mu);
    ACCELCRYPT_RETURN_IF_ERROR(l.status());
    if (s->ops[kDigestSlot].op == nullptr) return NotInitialized();
  }
  absl::StatusOr<ObjectRef> ref = LookupObject(*s, key, CKR_KEY_HANDLE_INVALID);
  MutexLock l(&s->mu);
  ACCELCRYPT_RETURN_IF_ERROR(l.status());
  ActiveOp& a = s->ops[kDigestSlot];
  if (a.op == nullptr) return NotInitialized();
  if (a.single_part) return EndSinglePart(a);
  absl::Status st = ref.ok() ? a.op->DigestKey(*ref->attrs) : ref.status();
  if (!st.ok()) {
    a.Reset();
    return st;
  }
  a.multipart = true;
  return st;
}

absl::Status Module::GetOperationState(CK_SESSION_HANDLE h, CK_BYTE_PTR out,
                                       CK_ULONG_PTR out_len) {
  ACCELCRYPT_ASSIGN_OR_RETURN(std::shared_ptr<Session> s, FindSession(h));
  if (out_len == nullptr) {
    return CkError(CKR_ARGUMENTS_BAD, "pulOperationStateLen is NULL");
  }
  MutexLock l(&s->mu);
  ACCELCRYPT_RETURN_IF_ERROR(l.status());
  bool any = false;
  for (int i = 0; i < kNumOpSlots; ++i) {
    if (s->ops[i].op == nullptr) continue;
    any = true;
    if (i != kDigestSlot) {
      return CkError(CKR_STATE_UNSAVEABLE, "only digests can be saved");
    }
  }
  if (!any) return NotInitialized();
  ACCELCRYPT_ASSIGN_OR_RETURN(std::vector<uint8_t> state,
                              s->ops[kDigestSlot].op->GetState());
  absl::Status st;
  if (out == nullptr) {
    *out_len = state.size();
  } else if (*out_len < state.size()) {
    *out_len = state.size();
    st = CkError(CKR_BUFFER_TOO_SMALL, "operation state");
  } else {
    std::memcpy(out, state.data(), state.size());
    *out_len = state.size();
  }
  OPENSSL_cleanse(state.data(), state.size());
  return st;
}

absl::Status Module::SetOperationState(CK_SESSION_HANDLE h, CK_BYTE_PTR state,
                                       CK_ULONG len, CK_OBJECT_HANDLE enc_key,
                                       CK_OBJECT_HANDLE auth_key) {
  ACCELCRYPT_ASSIGN_OR_RETURN(std::shared_ptr<Session> s, FindSession(h));
  if (mechanisms_ == nullptr) return NoMechanisms();
  if (state == nullptr) {
    return CkError(CKR_ARGUMENTS_BAD, "pOperationState is NULL");
  }
  // Only digest states are saved, and they need no key (v2.40 5.6).
  if (enc_key != CK_INVALID_HANDLE || auth_key != CK_INVALID_HANDLE) {
    return CkError(CKR_KEY_NOT_NEEDED, "digest states need no key");
  }
  ACCELCRYPT_ASSIGN_OR_RETURN(std::unique_ptr<Operation> op,
                              mechanisms_->RestoreDigest(In(state, len)));
  MutexLock l(&s->mu);
  ACCELCRYPT_RETURN_IF_ERROR(l.status());
  for (ActiveOp& a : s->ops) a.Reset();
  s->ops[kDigestSlot].op = std::move(op);
  // The saved digest may be mid-stream: continue with C_DigestUpdate /
  // C_DigestFinal.
  s->ops[kDigestSlot].multipart = true;
  return absl::OkStatus();
}

absl::Status Module::GenerateKey(CK_SESSION_HANDLE h,
                                 CK_MECHANISM_PTR mechanism,
                                 CK_ATTRIBUTE_PTR tmpl, CK_ULONG count,
                                 CK_OBJECT_HANDLE_PTR out) {
  ACCELCRYPT_ASSIGN_OR_RETURN(std::shared_ptr<Session> s, FindSession(h));
  if (mechanisms_ == nullptr) return NoMechanisms();
  if (mechanism == nullptr || out == nullptr ||
      (tmpl == nullptr && count != 0)) {
    return CkError(CKR_ARGUMENTS_BAD, "NULL argument");
  }
  ACCELCRYPT_ASSIGN_OR_RETURN(AttributeMap given, ParseTemplate(tmpl, count));
  // Refuse what could not be stored before the generation runs.
  ACCELCRYPT_RETURN_IF_ERROR(CheckWritable(*s, given.BoolOr(CKA_TOKEN, false),
                                           given.BoolOr(CKA_PRIVATE, true)));
  ACCELCRYPT_ASSIGN_OR_RETURN(AttributeMap generated,
                              mechanisms_->GenerateKey(*mechanism, given));
  ACCELCRYPT_ASSIGN_OR_RETURN(
      AttributeMap attrs,
      BuildObject(Origin::kGenerate, given, generated, mechanism->mechanism));
  ACCELCRYPT_ASSIGN_OR_RETURN(*out, AddObject(*s, std::move(attrs)));
  return absl::OkStatus();
}

absl::Status Module::GenerateKeyPair(
    CK_SESSION_HANDLE h, CK_MECHANISM_PTR mechanism, CK_ATTRIBUTE_PTR pub_tmpl,
    CK_ULONG pub_count, CK_ATTRIBUTE_PTR priv_tmpl, CK_ULONG priv_count,
    CK_OBJECT_HANDLE_PTR pub, CK_OBJECT_HANDLE_PTR priv) {
  ACCELCRYPT_ASSIGN_OR_RETURN(std::shared_ptr<Session> s, FindSession(h));
  if (mechanisms_ == nullptr) return NoMechanisms();
  if (mechanism == nullptr || pub == nullptr || priv == nullptr ||
      (pub_tmpl == nullptr && pub_count != 0) ||
      (priv_tmpl == nullptr && priv_count != 0)) {
    return CkError(CKR_ARGUMENTS_BAD, "NULL argument");
  }
  ACCELCRYPT_ASSIGN_OR_RETURN(AttributeMap pub_given,
                              ParseTemplate(pub_tmpl, pub_count));
  ACCELCRYPT_ASSIGN_OR_RETURN(AttributeMap priv_given,
                              ParseTemplate(priv_tmpl, priv_count));
  ACCELCRYPT_RETURN_IF_ERROR(
      CheckWritable(*s, pub_given.BoolOr(CKA_TOKEN, false),
                    pub_given.BoolOr(CKA_PRIVATE, false)));
  ACCELCRYPT_RETURN_IF_ERROR(
      CheckWritable(*s, priv_given.BoolOr(CKA_TOKEN, false),
                    priv_given.BoolOr(CKA_PRIVATE, true)));
  ACCELCRYPT_ASSIGN_OR_RETURN(
      auto generated,
      mechanisms_->GenerateKeyPair(*mechanism, pub_given, priv_given));
  ACCELCRYPT_ASSIGN_OR_RETURN(
      AttributeMap pub_attrs,
      BuildObject(Origin::kGenerate, pub_given, generated.first,
                  mechanism->mechanism));
  ACCELCRYPT_ASSIGN_OR_RETURN(
      AttributeMap priv_attrs,
      BuildObject(Origin::kGenerate, priv_given, generated.second,
                  mechanism->mechanism));
  ACCELCRYPT_ASSIGN_OR_RETURN(CK_OBJECT_HANDLE pub_handle,
                              AddObject(*s, std::move(pub_attrs)));
  absl::StatusOr<CK_OBJECT_HANDLE> priv_handle =
      AddObject(*s, std::move(priv_attrs));
  if (!priv_handle.ok()) {
    // No half pair left behind.
    absl::StatusOr<ObjectRef> ref =
        LookupObject(*s, pub_handle, CKR_OBJECT_HANDLE_INVALID);
    if (ref.ok()) DestroyHandle(*ref).IgnoreError();
    return priv_handle.status();
  }
  *pub = pub_handle;
  *priv = *priv_handle;
  return absl::OkStatus();
}

absl::Status Module::GenerateRandom(CK_SESSION_HANDLE h, CK_BYTE_PTR out,
                                    CK_ULONG len) {
  ACCELCRYPT_ASSIGN_OR_RETURN(std::shared_ptr<Session> s, FindSession(h));
  if (mechanisms_ == nullptr) return NoMechanisms();
  if (out == nullptr && len != 0) {
    return CkError(CKR_ARGUMENTS_BAD, "pRandomData is NULL");
  }
  return mechanisms_->GenerateRandom(absl::Span<uint8_t>(out, len));
}

absl::Status Module::SeedRandom(CK_SESSION_HANDLE h, CK_BYTE_PTR seed,
                                CK_ULONG len) {
  ACCELCRYPT_ASSIGN_OR_RETURN(std::shared_ptr<Session> s, FindSession(h));
  if (mechanisms_ == nullptr) return NoMechanisms();
  if (seed == nullptr && len != 0) {
    return CkError(CKR_ARGUMENTS_BAD, "pSeed is NULL");
  }
  return mechanisms_->SeedRandom(In(seed, len));
}

}  // namespace accelcrypt::p11
