// SPDX-License-Identifier: Apache-2.0
// Registration-time known-answer tests: one published vector per algorithm,
// run on every backend before its algorithm is offered (DESIGN.md, Core).
#include <cstring>
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
    ACCELCRYPT_RETURN_IF_ERROR(cipher->Init(encrypt, Bytes(kat.key, kat.key_len),
                                            Bytes(kat.iv, kat.iv_len)));
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
  ACCELCRYPT_RETURN_IF_ERROR(
      backend.DigestOneShot(info.id, Bytes(kat.in, kat.in_len),
                            absl::MakeSpan(out)));
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

}  // namespace

absl::Status Registry::SelfTest(const Backend& backend, accelcrypt_alg alg) {
  const AlgorithmInfo* info = FindAlgorithm(alg);
  if (info == nullptr) {
    return absl::InvalidArgumentError("self-test of an unknown algorithm");
  }
  if (info->family == Family::kRng) return RngKat(backend, *info);
  for (const Kat& kat : kKats) {
    if (kat.alg != alg) continue;
    return info->family == Family::kCipher ? CipherKat(backend, *info, kat)
                                           : DigestKat(backend, *info, kat);
  }
  return absl::InternalError(
      absl::StrFormat("no known-answer test for %s", info->name));
}

}  // namespace accelcrypt
