// SPDX-License-Identifier: Apache-2.0
// Registration-time known-answer tests: one published vector per algorithm,
// run on every backend before its algorithm is offered (DESIGN.md, Core).
#include <cstring>
#include <iterator>
#include <memory>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/algorithms.h"
#include "core/registry.h"
#include "core/status.h"

namespace accelcrypt {
namespace {

struct Kat {
  accelcrypt_alg alg;
  const char* key;
  size_t key_len;
  const char* iv;
  size_t iv_len;
  const char* in;
  size_t in_len;
  const char* out;
  size_t out_len;
  const char* aad;
  size_t aad_len;
  const char* tag;
  size_t tag_len;
};

constexpr Kat kKats[] = {
#include "core/selftest_kat_data.inc"
};

absl::Span<const uint8_t> Bytes(const char* p, size_t n) {
  return {reinterpret_cast<const uint8_t*>(p), n};
}

// Public-key known answers (core/selftest_pkey_kat_data.inc).
struct KatBytes {
  const char* data;
  size_t len;
  std::vector<uint8_t> vec() const {
    return std::vector<uint8_t>(data, data + len);
  }
  absl::Span<const uint8_t> span() const { return Bytes(data, len); }
};

struct PkeyKat {
  accelcrypt_alg alg;
  accelcrypt_alg md;
  KatBytes n, e, d, p, q, dmp1, dmq1, iqmp;
  KatBytes raw_in, raw_out;            // RSASP1: raw_out = raw_in^d mod n
  KatBytes pub_n, pub_e, digest, sig;  // a signature over `digest` to verify
  KatBytes dsa_p, dsa_q, dsa_g, dsa_y, dsa_x;
};

constexpr PkeyKat kPkeyKats[] = {
#include "core/selftest_pkey_kat_data.inc"
};

absl::Status Mismatch(const Backend& backend, const AlgorithmInfo& info,
                      const char* what) {
  return absl::InternalError(absl::StrFormat(
      "%s: %s known-answer test failed (%s)", backend.name(), info.name, what));
}

absl::Status CipherKat(const Backend& backend, const AlgorithmInfo& info,
                       const Kat& kat) {
  for (bool encrypt : {true, false}) {
    ACCELCRYPT_ASSIGN_OR_RETURN(std::unique_ptr<Cipher> cipher,
                                backend.NewCipher(info.id));
    ACCELCRYPT_RETURN_IF_ERROR(cipher->Init(
        encrypt, Bytes(kat.key, kat.key_len), Bytes(kat.iv, kat.iv_len)));
    if (kat.aad_len > 0) {
      ACCELCRYPT_RETURN_IF_ERROR(cipher->Aad(Bytes(kat.aad, kat.aad_len)));
    }
    const char* in = encrypt ? kat.in : kat.out;
    const char* want = encrypt ? kat.out : kat.in;
    std::vector<uint8_t> out(kat.in_len);
    ACCELCRYPT_RETURN_IF_ERROR(
        cipher->Update(Bytes(in, kat.in_len), absl::MakeSpan(out)));
    if (info.mode == CipherMode::kGcm && !encrypt) {
      ACCELCRYPT_RETURN_IF_ERROR(cipher->SetTag(Bytes(kat.tag, kat.tag_len)));
    }
    ACCELCRYPT_RETURN_IF_ERROR(cipher->Final());
    if (std::memcmp(out.data(), want, kat.in_len) != 0) {
      return Mismatch(backend, info, encrypt ? "encrypt" : "decrypt");
    }
    if (info.mode == CipherMode::kGcm && encrypt) {
      std::vector<uint8_t> tag(kat.tag_len);
      ACCELCRYPT_RETURN_IF_ERROR(cipher->GetTag(absl::MakeSpan(tag)));
      if (std::memcmp(tag.data(), kat.tag, kat.tag_len) != 0) {
        return Mismatch(backend, info, "tag");
      }
    }
  }
  if (info.mode == CipherMode::kGcm) {
    // A wrong tag must be refused.
    ACCELCRYPT_ASSIGN_OR_RETURN(std::unique_ptr<Cipher> cipher,
                                backend.NewCipher(info.id));
    ACCELCRYPT_RETURN_IF_ERROR(cipher->Init(false, Bytes(kat.key, kat.key_len),
                                            Bytes(kat.iv, kat.iv_len)));
    ACCELCRYPT_RETURN_IF_ERROR(cipher->Aad(Bytes(kat.aad, kat.aad_len)));
    std::vector<uint8_t> out(kat.in_len);
    ACCELCRYPT_RETURN_IF_ERROR(
        cipher->Update(Bytes(kat.out, kat.out_len), absl::MakeSpan(out)));
    std::vector<uint8_t> bad_tag(kat.tag, kat.tag + kat.tag_len);
    bad_tag[0] ^= 1;
    ACCELCRYPT_RETURN_IF_ERROR(cipher->SetTag(bad_tag));
    if (GetStatusDetail(cipher->Final()) != StatusDetail::kAuthFailed) {
      return Mismatch(backend, info, "a forged tag was accepted");
    }
  }
  return absl::OkStatus();
}

absl::Status DigestKat(const Backend& backend, const AlgorithmInfo& info,
                       const Kat& kat) {
  std::vector<uint8_t> out(info.digest_len);
  ACCELCRYPT_RETURN_IF_ERROR(backend.DigestOneShot(
      info.id, Bytes(kat.in, kat.in_len), absl::MakeSpan(out)));
  if (kat.out_len != out.size() ||
      std::memcmp(out.data(), kat.out, out.size()) != 0) {
    return Mismatch(backend, info, "one-shot");
  }
  // Streaming in two parts must agree.
  ACCELCRYPT_ASSIGN_OR_RETURN(std::unique_ptr<Digest> digest,
                              backend.NewDigest(info.id));
  size_t half = kat.in_len / 2;
  ACCELCRYPT_RETURN_IF_ERROR(digest->Update(Bytes(kat.in, half)));
  ACCELCRYPT_RETURN_IF_ERROR(
      digest->Update(Bytes(kat.in + half, kat.in_len - half)));
  std::fill(out.begin(), out.end(), 0);
  ACCELCRYPT_RETURN_IF_ERROR(digest->Final(absl::MakeSpan(out)));
  if (std::memcmp(out.data(), kat.out, out.size()) != 0) {
    return Mismatch(backend, info, "streaming");
  }
  // The direct digest (front ends hash with it without the backend's
  // contexts) must agree too.
  if (const accelcrypt_digest_direct* d = backend.DigestDirect(info.id)) {
    std::fill(out.begin(), out.end(), 0);
    DirectDigestMessage(*d, Bytes(kat.in, kat.in_len), half, out.data());
    if (std::memcmp(out.data(), kat.out, out.size()) != 0) {
      return Mismatch(backend, info, "direct");
    }
  }
  return absl::OkStatus();
}

absl::Status RngKat(const Backend& backend, const AlgorithmInfo& info) {
  // No known answer exists for a random source; check that it produces
  // output and that two draws differ (a stuck source fails).
  uint8_t a[32] = {}, b[32] = {};
  if (info.id == ACCELCRYPT_ALG_RNG_RANDOM) {
    ACCELCRYPT_RETURN_IF_ERROR(backend.RandomBytes(a));
    ACCELCRYPT_RETURN_IF_ERROR(backend.RandomBytes(b));
  } else {
    ACCELCRYPT_RETURN_IF_ERROR(backend.Entropy(a).status());
    ACCELCRYPT_RETURN_IF_ERROR(backend.Entropy(b).status());
  }
  if (std::memcmp(a, b, sizeof(a)) == 0) {
    return Mismatch(backend, info, "two draws were equal");
  }
  return absl::OkStatus();
}

absl::Status ExpectAuthFailed(const Backend& backend, const AlgorithmInfo& info,
                              const absl::Status& st) {
  if (GetStatusDetail(st) == StatusDetail::kAuthFailed) return absl::OkStatus();
  if (st.ok()) return Mismatch(backend, info, "a forged signature verified");
  return st;
}

bool FitsKey(const accelcrypt_capability& cap, size_t bits) {
  return bits >= cap.min_key_bits && bits <= cap.max_key_bits;
}

// RsaPrivateKey is the known-answer RSA key with all its private parts.
KeyMaterial RsaPrivateKey(const PkeyKat& kat) {
  KeyMaterial priv;
  priv.n = kat.n.vec();
  priv.e = kat.e.vec();
  priv.d = kat.d.vec();
  priv.p = kat.p.vec();
  priv.q = kat.q.vec();
  priv.dmp1 = kat.dmp1.vec();
  priv.dmq1 = kat.dmq1.vec();
  priv.iqmp = kat.iqmp.vec();
  return priv;
}

// RsaSignKat: the published PKCS#1 v1.5 signature verifies and a forged one
// does not; the private key reproduces RSASP1's answer (raw) or, without
// raw RSA, signs with PKCS#1 v1.5 what then verifies with the same key.
absl::Status RsaSignKat(const Backend& backend, const AlgorithmInfo& info,
                        const accelcrypt_capability& cap, const PkeyKat& kat) {
  if (!(cap.flags & ACCELCRYPT_CAP_KEY_IMPORT)) {
    return absl::OkStatus();  // token keys only: nothing can be imported
  }
  if (!(cap.flags & (ACCELCRYPT_CAP_RSA_PKCS1 | ACCELCRYPT_CAP_RSA_RAW))) {
    return Mismatch(backend, info, "neither PKCS#1 v1.5 nor raw is offered");
  }
  KeyMaterial priv = RsaPrivateKey(kat);
  if (!FitsKey(cap, priv.bits())) {
    return Mismatch(backend, info, "no known answer fits its key sizes");
  }
  ACCELCRYPT_ASSIGN_OR_RETURN(std::unique_ptr<BackendKey> key,
                              backend.LoadKey(info.id, priv));
  std::vector<uint8_t> sig(kat.n.len);
  if (cap.flags & ACCELCRYPT_CAP_RSA_RAW) {
    PkeyParams raw;
    raw.padding = ACCELCRYPT_PAD_NONE;
    ACCELCRYPT_ASSIGN_OR_RETURN(
        size_t len, key->Sign(raw, kat.raw_in.span(), absl::MakeSpan(sig)));
    if (len != kat.raw_out.len ||
        std::memcmp(sig.data(), kat.raw_out.data, len) != 0) {
      return Mismatch(backend, info, "raw private-key operation");
    }
  }
  if (!(cap.flags & ACCELCRYPT_CAP_RSA_PKCS1)) return absl::OkStatus();
  PkeyParams pkcs1;
  pkcs1.padding = ACCELCRYPT_PAD_PKCS1;
  pkcs1.md = kat.md;
  ACCELCRYPT_ASSIGN_OR_RETURN(
      size_t len, key->Sign(pkcs1, kat.digest.span(), absl::MakeSpan(sig)));
  ACCELCRYPT_RETURN_IF_ERROR(key->Verify(pkcs1, kat.digest.span(),
                                         absl::MakeConstSpan(sig.data(), len)));
  KeyMaterial pub;
  pub.n = kat.pub_n.vec();
  pub.e = kat.pub_e.vec();
  if (!FitsKey(cap, pub.bits())) return absl::OkStatus();
  ACCELCRYPT_ASSIGN_OR_RETURN(std::unique_ptr<BackendKey> pub_key,
                              backend.LoadKey(info.id, pub));
  ACCELCRYPT_RETURN_IF_ERROR(
      pub_key->Verify(pkcs1, kat.digest.span(), kat.sig.span()));
  std::vector<uint8_t> forged = kat.sig.vec();
  forged[forged.size() / 2] ^= 1;
  return ExpectAuthFailed(backend, info,
                          pub_key->Verify(pkcs1, kat.digest.span(), forged));
}

// RsaCryptKat: raw encryption of RSASP1's answer gives back its input and
// raw decryption of the input gives the answer; with padding only, an
// OAEP or PKCS#1 v1.5 round trip.
absl::Status RsaCryptKat(const Backend& backend, const AlgorithmInfo& info,
                         const accelcrypt_capability& cap, const PkeyKat& kat) {
  if (!(cap.flags & ACCELCRYPT_CAP_KEY_IMPORT)) return absl::OkStatus();
  KeyMaterial priv = RsaPrivateKey(kat);
  if (!FitsKey(cap, priv.bits())) {
    return Mismatch(backend, info, "no known answer fits its key sizes");
  }
  ACCELCRYPT_ASSIGN_OR_RETURN(std::unique_ptr<BackendKey> key,
                              backend.LoadKey(info.id, priv));
  std::vector<uint8_t> out(kat.n.len);
  if (cap.flags & ACCELCRYPT_CAP_RSA_RAW) {
    PkeyParams raw;
    raw.padding = ACCELCRYPT_PAD_NONE;
    ACCELCRYPT_ASSIGN_OR_RETURN(
        size_t len, key->Encrypt(raw, kat.raw_out.span(), absl::MakeSpan(out)));
    if (len != kat.raw_in.len ||
        std::memcmp(out.data(), kat.raw_in.data, len) != 0) {
      return Mismatch(backend, info, "raw public-key operation");
    }
    ACCELCRYPT_ASSIGN_OR_RETURN(
        len, key->Decrypt(raw, kat.raw_in.span(), absl::MakeSpan(out)));
    if (len != kat.raw_out.len ||
        std::memcmp(out.data(), kat.raw_out.data, len) != 0) {
      return Mismatch(backend, info, "raw private-key operation");
    }
  }
  for (uint32_t padding : {ACCELCRYPT_PAD_OAEP, ACCELCRYPT_PAD_PKCS1}) {
    uint32_t flag = padding == ACCELCRYPT_PAD_OAEP ? ACCELCRYPT_CAP_RSA_OAEP
                                                   : ACCELCRYPT_CAP_RSA_PKCS1;
    if (!(cap.flags & flag)) continue;
    PkeyParams params;
    params.padding = padding;
    params.md = kat.md;
    absl::StatusOr<size_t> encrypted =
        key->Encrypt(params, kat.raw_in.span().first(32), absl::MakeSpan(out));
    // A token may support the padding only with other digests (SoftHSMv2:
    // OAEP with SHA-1 only); the router then uses another backend.
    if (encrypted.status().code() == absl::StatusCode::kUnimplemented) continue;
    ACCELCRYPT_ASSIGN_OR_RETURN(size_t len, std::move(encrypted));
    std::vector<uint8_t> back(kat.n.len);
    ACCELCRYPT_ASSIGN_OR_RETURN(
        size_t back_len,
        key->Decrypt(params, absl::MakeConstSpan(out.data(), len),
                     absl::MakeSpan(back)));
    absl::Span<const uint8_t> want = kat.raw_in.span().first(32);
    if (back_len != want.size() ||
        std::memcmp(back.data(), want.data(), want.size()) != 0) {
      return Mismatch(backend, info, "encryption round trip");
    }
  }
  return absl::OkStatus();
}

// DsaKat: the published signature verifies, a forged one does not, and a
// signature made with the private key verifies (DSA signing is randomised,
// so it has no fixed answer).
absl::Status DsaKat(const Backend& backend, const AlgorithmInfo& info,
                    const accelcrypt_capability& cap, const PkeyKat& kat) {
  if (!(cap.flags & ACCELCRYPT_CAP_KEY_IMPORT)) return absl::OkStatus();
  KeyMaterial priv;
  priv.type = KeyMaterial::Type::kDsa;
  priv.dsa_p = kat.dsa_p.vec();
  priv.dsa_q = kat.dsa_q.vec();
  priv.dsa_g = kat.dsa_g.vec();
  priv.dsa_y = kat.dsa_y.vec();
  priv.dsa_x = kat.dsa_x.vec();
  if (!FitsKey(cap, priv.bits())) {
    return Mismatch(backend, info, "no known answer fits its key sizes");
  }
  ACCELCRYPT_ASSIGN_OR_RETURN(std::unique_ptr<BackendKey> key,
                              backend.LoadKey(info.id, priv));
  PkeyParams params;
  params.md = kat.md;
  ACCELCRYPT_RETURN_IF_ERROR(
      key->Verify(params, kat.digest.span(), kat.sig.span()));
  std::vector<uint8_t> forged = kat.sig.vec();
  forged[forged.size() - 1] ^= 1;
  ACCELCRYPT_RETURN_IF_ERROR(ExpectAuthFailed(
      backend, info, key->Verify(params, kat.digest.span(), forged)));
  std::vector<uint8_t> sig(2 * kat.dsa_q.len + 16);
  ACCELCRYPT_ASSIGN_OR_RETURN(
      size_t len, key->Sign(params, kat.digest.span(), absl::MakeSpan(sig)));
  return key->Verify(params, kat.digest.span(),
                     absl::MakeConstSpan(sig.data(), len));
}

size_t KatBits(const KatBytes& b) {
  size_t i = 0;
  while (i < b.len && b.data[i] == 0) ++i;
  if (i == b.len) return 0;
  size_t bits = (b.len - i - 1) * 8;
  for (uint8_t top = static_cast<uint8_t>(b.data[i]); top != 0; top >>= 1) {
    ++bits;
  }
  return bits;
}

// HasLaterDsaKat is true when a DSA answer after `kat` fits `cap`.
bool HasLaterDsaKat(const PkeyKat* kat, const accelcrypt_capability& cap) {
  for (const PkeyKat* k = kat + 1; k != std::end(kPkeyKats); ++k) {
    if (k->alg == ACCELCRYPT_ALG_DSA_SIGN && FitsKey(cap, KatBits(k->dsa_p))) {
      return true;
    }
  }
  return false;
}

absl::Status PkeyKatFor(const Backend& backend, const AlgorithmInfo& info) {
  const accelcrypt_capability* cap = backend.Capability(info.id);
  if (cap == nullptr) {
    return absl::UnimplementedError(
        absl::StrFormat("%s: %s is not offered", backend.name(), info.name));
  }
  for (const PkeyKat& kat : kPkeyKats) {
    if (kat.alg != info.id) continue;
    // DSA has one answer per domain size: take the first the backend's
    // key sizes admit.
    if (info.id == ACCELCRYPT_ALG_DSA_SIGN &&
        !FitsKey(*cap, KatBits(kat.dsa_p)) && HasLaterDsaKat(&kat, *cap)) {
      continue;
    }
    switch (info.id) {
      case ACCELCRYPT_ALG_RSA_SIGN:
        return RsaSignKat(backend, info, *cap, kat);
      case ACCELCRYPT_ALG_RSA_CRYPT:
        return RsaCryptKat(backend, info, *cap, kat);
      default:
        return DsaKat(backend, info, *cap, kat);
    }
  }
  return absl::InternalError(
      absl::StrFormat("no known-answer test for %s", info.name));
}

}  // namespace

absl::Status Registry::SelfTest(const Backend& backend, accelcrypt_alg alg) {
  const AlgorithmInfo* info = FindAlgorithm(alg);
  if (info == nullptr) {
    return absl::InvalidArgumentError("self-test of an unknown algorithm");
  }
  if (info->family == Family::kRng) return RngKat(backend, *info);
  if (info->family == Family::kRsa || info->family == Family::kDsa) {
    return PkeyKatFor(backend, *info);
  }
  for (const Kat& kat : kKats) {
    if (kat.alg != alg) continue;
    return info->family == Family::kCipher ? CipherKat(backend, *info, kat)
                                           : DigestKat(backend, *info, kat);
  }
  return absl::InternalError(
      absl::StrFormat("no known-answer test for %s", info->name));
}

}  // namespace accelcrypt
