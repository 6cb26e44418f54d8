// SPDX-License-Identifier: Apache-2.0
// Generic RSA/DSA keymgmt functions over a table of key integers. Semantics
// follow OpenSSL 3.0's rsa_kmgmt.c / dsa_kmgmt.c (selection handling, match
// rules) so libcrypto moves keys between providers the same way.
#include "provider/internal/keymgmt_common.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <algorithm>
#include <memory>
#include <new>

#include "absl/strings/str_format.h"
#include "accelcrypt/kit/dsa_sig.h"
#include "core/status.h"
#include "provider/errors.h"

namespace accelcrypt::provider::internal {
namespace {

constexpr int kKeySelections =
    OSSL_KEYMGMT_SELECT_KEYPAIR | OSSL_KEYMGMT_SELECT_DOMAIN_PARAMETERS;

// Minimal returns `v` without leading zero bytes, for comparisons.
absl::Span<const uint8_t> Minimal(const std::vector<uint8_t>& v) {
  size_t i = 0;
  while (i < v.size() && v[i] == 0) ++i;
  return absl::MakeConstSpan(v).subspan(i);
}

// Equal compares two integers; constant time in their contents (private
// parts) once lengths match.
bool Equal(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  absl::Span<const uint8_t> x = Minimal(a), y = Minimal(b);
  if (x.size() != y.size()) return false;
  return CRYPTO_memcmp(x.data(), y.data(), x.size()) == 0;
}

const KeyField* Find(const KeyFormat& f, const char* name) {
  for (const KeyField& field : f.fields) {
    if (std::string_view(field.name) == name) return &field;
  }
  return nullptr;
}

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct PkeyCtxFree {
  void operator()(EVP_PKEY_CTX* p) const { EVP_PKEY_CTX_free(p); }
};

}  // namespace

void* KeymgmtNew(void* provctx, const KeyFormat& format) {
  auto* prov = static_cast<ProvCtx*>(provctx);
  return new (std::nothrow) PkeyKey(prov, format.type);
}

void KeymgmtFree(void* keydata) {
  PkeyKey::Unref(static_cast<PkeyKey*>(keydata));
}

int KeymgmtHas(const void* keydata, int selection) {
  const auto* key = static_cast<const PkeyKey*>(keydata);
  if (key == nullptr) return 0;
  if ((selection & kKeySelections) == 0) return 1;
  bool ok = true;
  if ((selection & OSSL_KEYMGMT_SELECT_PUBLIC_KEY) != 0) {
    ok = ok && key->has_public();
  }
  if ((selection & OSSL_KEYMGMT_SELECT_PRIVATE_KEY) != 0) {
    ok = ok && key->has_private();
  }
  if ((selection & OSSL_KEYMGMT_SELECT_DOMAIN_PARAMETERS) != 0) {
    ok = ok && key->has_domain();
  }
  return ok ? 1 : 0;
}

int KeymgmtMatch(const KeyFormat& format, const void* keydata1,
                 const void* keydata2, int selection) {
  const auto* a = static_cast<const PkeyKey*>(keydata1);
  const auto* b = static_cast<const PkeyKey*>(keydata2);
  if (a == nullptr || b == nullptr) return 0;
  const KeyMaterial& x = a->material();
  const KeyMaterial& y = b->material();
  bool ok = true;
  if ((selection & OSSL_KEYMGMT_SELECT_DOMAIN_PARAMETERS) != 0) {
    for (const KeyField& f : format.fields) {
      if (f.selection == OSSL_KEYMGMT_SELECT_DOMAIN_PARAMETERS) {
        ok = ok && Equal(x.*f.member, y.*f.member);
      }
    }
  }
  if ((selection & OSSL_KEYMGMT_SELECT_KEYPAIR) != 0) {
    // As OpenSSL: compare the public parts when selected and present,
    // otherwise the private parts; something must have been compared.
    bool checked = false;
    for (int part :
         {OSSL_KEYMGMT_SELECT_PUBLIC_KEY, OSSL_KEYMGMT_SELECT_PRIVATE_KEY}) {
      if (checked || (selection & part) == 0) continue;
      bool present = false;
      for (const KeyField& f : format.fields) {
        if (f.selection != part) continue;
        if ((x.*f.member).empty() || (y.*f.member).empty()) continue;
        present = true;
        ok = ok && Equal(x.*f.member, y.*f.member);
        if (part == OSSL_KEYMGMT_SELECT_PRIVATE_KEY) break;  // d or x
      }
      checked = present;
    }
    ok = ok && checked;
  }
  return ok ? 1 : 0;
}

int KeymgmtImport(const KeyFormat& format, void* keydata, int selection,
                  const OSSL_PARAM params[]) {
  auto* key = static_cast<PkeyKey*>(keydata);
  if (key == nullptr) return 0;
  return Guard(key->prov(), [&] {
    if ((selection & kKeySelections) == 0) return 1;
    for (const char* name : format.refused) {
      if (OSSL_PARAM_locate_const(params, name) != nullptr) {
        return RaiseError(
            key->prov(),
            ProviderError(Reason::kNotSupported,
                          absl::StatusCode::kUnimplemented,
                          absl::StrFormat("%s: parameter %s (multi-prime "
                                          "keys) is not supported",
                                          format.name, name)));
      }
    }
    KeyMaterial fresh;
    fresh.type = format.type;
    int include = selection;
    // A key pair always carries its domain (DSA p, q, g).
    if ((selection & OSSL_KEYMGMT_SELECT_KEYPAIR) != 0) {
      include |= OSSL_KEYMGMT_SELECT_DOMAIN_PARAMETERS;
    }
    for (const KeyField& f : format.fields) {
      if ((include & f.selection) == 0) continue;
      absl::StatusOr<bool> got = ParamBytes(params, f.name, &(fresh.*f.member));
      if (!got.ok()) return RaiseError(key->prov(), got.status());
    }
    auto require = [&](absl::Span<const char* const> names) {
      for (const char* name : names) {
        const KeyField* f = Find(format, name);
        if (f != nullptr && (fresh.*f->member).empty()) {
          return ProviderError(
              Reason::kBadParameter, absl::StatusCode::kInvalidArgument,
              absl::StrFormat("%s key import: parameter %s is missing",
                              format.name, name));
        }
      }
      return absl::OkStatus();
    };
    absl::Status st = absl::OkStatus();
    if ((selection & OSSL_KEYMGMT_SELECT_KEYPAIR) != 0) {
      st = require(format.required_public);
    }
    if (st.ok() && (include & OSSL_KEYMGMT_SELECT_DOMAIN_PARAMETERS) != 0) {
      st = require(format.required_domain);
    }
    if (!st.ok()) return RaiseError(key->prov(), st);
    key->mutable_material() = std::move(fresh);
    return 1;
  });
}

absl::StatusOr<OSSL_PARAM*> ToParams(const KeyFormat& format,
                                     const KeyMaterial& key, int selection) {
  ParamBuilder builder;
  int include = selection;
  if ((selection & OSSL_KEYMGMT_SELECT_KEYPAIR) != 0) {
    include |= OSSL_KEYMGMT_SELECT_DOMAIN_PARAMETERS;
  }
  for (const KeyField& f : format.fields) {
    if ((include & f.selection) == 0) continue;
    ACCELCRYPT_RETURN_IF_ERROR(builder.Add(f.name, key.*f.member));
  }
  return builder.Build();
}

int KeymgmtExport(const KeyFormat& format, void* keydata, int selection,
                  OSSL_CALLBACK* param_cb, void* cbarg,
                  absl::Span<const OSSL_PARAM> extra) {
  auto* key = static_cast<PkeyKey*>(keydata);
  if (key == nullptr || param_cb == nullptr) return 0;
  return Guard(key->prov(), [&] {
    if ((selection & OSSL_KEYMGMT_SELECT_PRIVATE_KEY) != 0 &&
        !key->material().uri.empty() &&
        !key->material().has_private_material()) {
      // A token key: only its public half exists outside the token.
      return RaiseError(
          key->prov(),
          absl::FailedPreconditionError(
              "the private key stays on its token (export the public key: "
              "e.g. openssl pkey -pubout)"));
    }
    absl::StatusOr<OSSL_PARAM*> params =
        ToParams(format, key->material(), selection);
    if (!params.ok()) return RaiseError(key->prov(), params.status());
    if (extra.empty()) {
      const int ok = param_cb(*params, cbarg);
      ClearFreeParams(*params);
      return ok;
    }
    // One array: the built integers (still owned by *params), then extra.
    std::vector<OSSL_PARAM> all;
    for (const OSSL_PARAM* p = *params; p->key != nullptr; ++p) {
      all.push_back(*p);
    }
    all.insert(all.end(), extra.begin(), extra.end());
    all.push_back(OSSL_PARAM_construct_end());
    const int ok = param_cb(all.data(), cbarg);
    ClearFreeParams(*params);
    return ok;
  });
}

void* KeymgmtDup(const KeyFormat& format, const void* keydata, int selection) {
  const auto* src = static_cast<const PkeyKey*>(keydata);
  if (src == nullptr) return nullptr;
  auto* dup = new (std::nothrow) PkeyKey(src->prov(), format.type);
  if (dup == nullptr) return nullptr;
  int include = selection;
  if ((selection & OSSL_KEYMGMT_SELECT_KEYPAIR) != 0) {
    include |= OSSL_KEYMGMT_SELECT_DOMAIN_PARAMETERS;
  }
  KeyMaterial& m = dup->mutable_material();
  for (const KeyField& f : format.fields) {
    if ((include & f.selection) != 0) m.*f.member = src->material().*f.member;
  }
  if ((selection & OSSL_KEYMGMT_SELECT_PRIVATE_KEY) != 0) {
    m.uri = src->material().uri;
  }
  return dup;
}

void* KeymgmtLoad(const void* reference, size_t reference_sz) {
  // The size of a pointer, on purpose (the reference is one).
  // NOLINTNEXTLINE(bugprone-sizeof-expression)
  if (reference == nullptr || reference_sz != sizeof(PkeyKey*)) return nullptr;
  // The reference is the address of the STORE's PkeyKey pointer; we take
  // the object and clear the slot so the loader does not free it.
  PkeyKey** slot = static_cast<PkeyKey**>(const_cast<void*>(reference));
  PkeyKey* key = *slot;
  *slot = nullptr;
  return key;
}

int KeymgmtGetParams(const KeyFormat& format, void* keydata,
                     OSSL_PARAM params[]) {
  auto* key = static_cast<PkeyKey*>(keydata);
  if (key == nullptr) return 0;
  return Guard(key->prov(), [&] {
    const KeyMaterial& m = key->material();
    OSSL_PARAM* p = OSSL_PARAM_locate(params, OSSL_PKEY_PARAM_BITS);
    if (p != nullptr && !OSSL_PARAM_set_int(p, static_cast<int>(m.bits()))) {
      return 0;
    }
    p = OSSL_PARAM_locate(params, OSSL_PKEY_PARAM_SECURITY_BITS);
    if (p != nullptr && !OSSL_PARAM_set_int(p, key->SecurityBits())) return 0;
    p = OSSL_PARAM_locate(params, OSSL_PKEY_PARAM_MAX_SIZE);
    if (p != nullptr) {
      size_t size = 0;
      if (key->rsa()) {
        size = (m.bits() + 7) / 8;
      } else {
        // DER Dss-Sig-Value: SEQUENCE { INTEGER r, INTEGER s }.
        size = kit::DsaDerMaxSize(Minimal(m.dsa_q).size());
      }
      if (!OSSL_PARAM_set_int(p, static_cast<int>(size))) return 0;
    }
    p = OSSL_PARAM_locate(params, OSSL_PKEY_PARAM_DEFAULT_DIGEST);
    if (p != nullptr && !OSSL_PARAM_set_utf8_string(p, "SHA256")) return 0;
    for (const KeyField& f : format.fields) {
      absl::Status st = SetParamBytes(params, f.name, m.*f.member);
      if (!st.ok()) return RaiseError(key->prov(), st);
    }
    return 1;
  });
}

int KeymgmtValidate(const KeyFormat& format, const void* keydata, int selection,
                    int checktype) {
  const auto* key = static_cast<const PkeyKey*>(keydata);
  if (key == nullptr) return 0;
  ProvCtx* prov = key->prov();
  return Guard(prov, [&] {
    if (!KeymgmtHas(keydata, selection)) return 0;
    if ((selection & kKeySelections) == 0) return 1;
    OSSL_LIB_CTX* lib = prov->private_libctx();
    if (lib == nullptr) {
      return RaiseError(prov, absl::InternalError("no private libctx"));
    }
    absl::StatusOr<OSSL_PARAM*> params =
        ToParams(format, key->material(), selection);
    if (!params.ok()) return RaiseError(prov, params.status());
    std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree> ctx(
        EVP_PKEY_CTX_new_from_name(lib, format.name, "provider=default"));
    EVP_PKEY* raw = nullptr;
    int kind = EVP_PKEY_KEY_PARAMETERS;
    if ((selection & OSSL_KEYMGMT_SELECT_PUBLIC_KEY) != 0) {
      kind = EVP_PKEY_PUBLIC_KEY;
    }
    if ((selection & OSSL_KEYMGMT_SELECT_PRIVATE_KEY) != 0)
      kind = EVP_PKEY_KEYPAIR;
    const bool made = ctx != nullptr &&
                      EVP_PKEY_fromdata_init(ctx.get()) == 1 &&
                      EVP_PKEY_fromdata(ctx.get(), &raw, kind, *params) == 1;
    ClearFreeParams(*params);
    if (!made) {
      return RaiseError(prov, LibcryptoError(absl::StatusCode::kInvalidArgument,
                                             "key check: cannot load key"));
    }
    std::unique_ptr<EVP_PKEY, PkeyFree> pkey(raw);
    std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree> check(
        EVP_PKEY_CTX_new_from_pkey(lib, pkey.get(), "provider=default"));
    if (check == nullptr) return 0;
    (void)checktype;
    int ok = 1;
    if ((selection & OSSL_KEYMGMT_SELECT_DOMAIN_PARAMETERS) != 0 &&
        !key->rsa()) {
      ok = ok && EVP_PKEY_param_check(check.get()) == 1;
    }
    if ((selection & OSSL_KEYMGMT_SELECT_PUBLIC_KEY) != 0) {
      ok = ok && EVP_PKEY_public_check(check.get()) == 1;
    }
    if ((selection & OSSL_KEYMGMT_SELECT_PRIVATE_KEY) != 0) {
      ok = ok && EVP_PKEY_private_check(check.get()) == 1;
    }
    if ((selection & OSSL_KEYMGMT_SELECT_KEYPAIR) ==
        OSSL_KEYMGMT_SELECT_KEYPAIR) {
      ok = ok && EVP_PKEY_pairwise_check(check.get()) == 1;
    }
    if (!ok) {
      return RaiseError(prov, LibcryptoError(absl::StatusCode::kInvalidArgument,
                                             "key check failed"));
    }
    return 1;
  });
}

absl::Status FromPkey(const KeyFormat& format, const EVP_PKEY* pkey,
                      int selection, KeyMaterial* key) {
  int include = selection;
  if ((selection & OSSL_KEYMGMT_SELECT_KEYPAIR) != 0) {
    include |= OSSL_KEYMGMT_SELECT_DOMAIN_PARAMETERS;
  }
  for (const KeyField& f : format.fields) {
    if ((include & f.selection) == 0) continue;
    ACCELCRYPT_RETURN_IF_ERROR(FromPkeyBn(pkey, f.name, &(key->*f.member)));
  }
  return absl::OkStatus();
}

}  // namespace accelcrypt::provider::internal
