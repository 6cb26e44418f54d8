// SPDX-License-Identifier: Apache-2.0
#include "core/vector_runner.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <regex>
#include <string_view>
#include <system_error>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "core/algorithms.h"
#include "core/status.h"

namespace accelcrypt {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxReportedFailures = 10;

enum class SuiteKind {
  kUnknown,
  kAes,         // ECB/CBC/CFB128/OFB KAT and MMT, [ENCRYPT]/[DECRYPT]
  kCtr,         // SP 800-38A F.5 in CAVP layout, three key sizes
  kGcmEncrypt,  // gcmEncryptExtIV*
  kGcmDecrypt,  // gcmDecrypt*, FAIL = tag must be rejected
  kShaMessage,  // SHA*ShortMsg / SHA*LongMsg
  kShaMonte,    // SHA*Monte (SHAVS 6.4)
};

const std::regex& AesRegex() {
  static const std::regex re(
      R"((?:.*/)?aes/(ECB|CBC|CFB128|OFB)(GFSbox|KeySbox|VarKey|VarTxt|MMT)(128|192|256)\.rsp)");
  return re;
}
const std::regex& CtrRegex() {
  static const std::regex re(R"((?:.*/)?aes/CTR_SP800-38A\.rsp)");
  return re;
}
const std::regex& GcmRegex() {
  static const std::regex re(
      R"((?:.*/)?aes-gcm/gcm(EncryptExtIV|Decrypt)(128|192|256)\.rsp)");
  return re;
}
const std::regex& ShaRegex() {
  static const std::regex re(
      R"((?:.*/)?sha/SHA(1|224|256|384|512)(ShortMsg|LongMsg|Monte)\.rsp)");
  return re;
}

// Classify maps a relative path to its kind and algorithms.
SuiteKind Classify(const std::string& relative,
                   std::vector<accelcrypt_alg>* algs) {
  std::smatch m;
  std::vector<accelcrypt_alg> found;
  SuiteKind kind = SuiteKind::kUnknown;
  if (std::regex_match(relative, m, AesRegex())) {
    uint32_t mode = m[1] == "ECB"      ? ACCELCRYPT_MODE_ECB
                    : m[1] == "CBC"    ? ACCELCRYPT_MODE_CBC
                    : m[1] == "CFB128" ? ACCELCRYPT_MODE_CFB128
                                       : ACCELCRYPT_MODE_OFB;
    uint32_t key_bytes = std::stoi(m[3].str()) / 8;
    found.push_back(ACCELCRYPT_CIPHER_ALG(mode, key_bytes));
    kind = SuiteKind::kAes;
  } else if (std::regex_match(relative, m, CtrRegex())) {
    found = {ACCELCRYPT_ALG_AES_128_CTR, ACCELCRYPT_ALG_AES_192_CTR,
             ACCELCRYPT_ALG_AES_256_CTR};
    kind = SuiteKind::kCtr;
  } else if (std::regex_match(relative, m, GcmRegex())) {
    uint32_t key_bytes = std::stoi(m[2].str()) / 8;
    found.push_back(ACCELCRYPT_CIPHER_ALG(ACCELCRYPT_MODE_GCM, key_bytes));
    kind = m[1] == "Decrypt" ? SuiteKind::kGcmDecrypt : SuiteKind::kGcmEncrypt;
  } else if (std::regex_match(relative, m, ShaRegex())) {
    accelcrypt_alg alg = m[1] == "1"     ? ACCELCRYPT_ALG_SHA1
                         : m[1] == "224" ? ACCELCRYPT_ALG_SHA224
                         : m[1] == "256" ? ACCELCRYPT_ALG_SHA256
                         : m[1] == "384" ? ACCELCRYPT_ALG_SHA384
                                         : ACCELCRYPT_ALG_SHA512;
    found.push_back(alg);
    kind = m[2] == "Monte" ? SuiteKind::kShaMonte : SuiteKind::kShaMessage;
  }
  if (algs != nullptr) *algs = std::move(found);
  return kind;
}

SuiteKind KindOf(const VectorSuite& suite) {
  return Classify(suite.relative, nullptr);
}

std::string AlgName(accelcrypt_alg alg) {
  const AlgorithmInfo* info = FindAlgorithm(alg);
  return info != nullptr ? std::string(info->name)
                         : absl::StrFormat("alg 0x%08x", alg);
}

// Mismatch describes the first differing byte without dumping whole
// buffers (vectors are public, but messages stay short).
absl::Status CompareBytes(absl::Span<const uint8_t> got,
                          absl::Span<const uint8_t> want, std::string_view what,
                          std::string_view how) {
  if (got.size() != want.size()) {
    return absl::DataLossError(absl::StrFormat(
        "%s (%s): got %d bytes, want %d", what, how, got.size(), want.size()));
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) {
      return absl::DataLossError(absl::StrFormat(
          "%s (%s): mismatch at byte %d of %d (got %02x, want %02x)", what, how,
          i, got.size(), got[i], want[i]));
    }
  }
  return absl::OkStatus();
}

absl::Status Annotate(const absl::Status& status, std::string_view context) {
  if (status.ok()) return status;
  absl::Status out(status.code(),
                   absl::StrFormat("%s: %s", context, status.message()));
  // Keep payloads (the AuthFailed detail) so callers can still inspect them.
  status.ForEachPayload([&out](absl::string_view url, const absl::Cord& p) {
    out.SetPayload(url, p);
  });
  return out;
}

// Chunks splits `len` bytes into updates the capability allows: at most
// max_chunk (rounded down to whole blocks for ECB/CBC), with an extra split
// at `split` when it is inside the message.
std::vector<size_t> Chunks(size_t len, size_t split, uint64_t max_chunk,
                           size_t block) {
  std::vector<size_t> bounds;  // chunk sizes
  uint64_t limit = max_chunk;
  if (limit != 0 && block > 1) limit -= limit % block;
  if (limit == 0) limit = len == 0 ? 1 : len;
  auto emit = [&](size_t n) {
    while (n > 0) {
      size_t take = static_cast<size_t>(std::min<uint64_t>(n, limit));
      bounds.push_back(take);
      n -= take;
    }
  };
  if (split > 0 && split < len) {
    emit(split);
    emit(len - split);
  } else {
    emit(len);
  }
  return bounds;
}

// RunRawCipher runs one non-AEAD message through a fresh context, split into
// `chunks`.
absl::Status RunRawCipher(const Backend& backend, accelcrypt_alg alg,
                          bool encrypt, absl::Span<const uint8_t> key,
                          absl::Span<const uint8_t> iv,
                          absl::Span<const uint8_t> in,
                          const std::vector<size_t>& chunks,
                          std::vector<uint8_t>* out) {
  ACCELCRYPT_ASSIGN_OR_RETURN(std::unique_ptr<Cipher> cipher,
                              backend.NewCipher(alg));
  ACCELCRYPT_RETURN_IF_ERROR(cipher->Init(encrypt, key, iv));
  out->assign(in.size(), 0);
  size_t off = 0;
  for (size_t n : chunks) {
    ACCELCRYPT_RETURN_IF_ERROR(cipher->Update(
        in.subspan(off, n), absl::MakeSpan(*out).subspan(off, n)));
    off += n;
  }
  return cipher->Final();
}

absl::Status RunBlockModeRecord(const Backend& backend, accelcrypt_alg alg,
                                const VectorRecord& record) {
  const AlgorithmInfo* info = FindAlgorithm(alg);
  if (info == nullptr) return absl::InternalError("unknown algorithm");
  bool encrypt = record.InSection("ENCRYPT");
  if (!encrypt && !record.InSection("DECRYPT")) {
    return absl::InvalidArgumentError(
        "record is in neither an [ENCRYPT] nor a [DECRYPT] section");
  }
  ACCELCRYPT_ASSIGN_OR_RETURN(auto key, record.Bytes("KEY"));
  std::vector<uint8_t> iv;
  if (record.Has("IV")) {
    ACCELCRYPT_ASSIGN_OR_RETURN(iv, record.Bytes("IV"));
  }
  ACCELCRYPT_ASSIGN_OR_RETURN(auto pt, record.Bytes("PLAINTEXT"));
  ACCELCRYPT_ASSIGN_OR_RETURN(auto ct, record.Bytes("CIPHERTEXT"));
  if (key.size() != info->key_len) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d-byte key in a %s file", key.size(), info->name));
  }
  if (iv.size() != info->iv_len) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d-byte IV for %s", iv.size(), info->name));
  }
  if (pt.size() != ct.size()) {
    return absl::InvalidArgumentError(
        "PLAINTEXT and CIPHERTEXT differ in length");
  }
  const auto& in = encrypt ? pt : ct;
  const auto& want = encrypt ? ct : pt;
  const accelcrypt_capability* cap = backend.Capability(alg);
  const bool streaming = (cap->flags & ACCELCRYPT_CAP_STREAMING) != 0;
  if (!streaming && cap->max_chunk != 0 && in.size() > cap->max_chunk) {
    return absl::UnimplementedError(absl::StrFormat(
        "%d-byte message exceeds the one-shot limit of %d bytes", in.size(),
        cap->max_chunk));
  }
  const size_t block =
      info->mode == CipherMode::kEcb || info->mode == CipherMode::kCbc ? 16 : 1;
  std::string what =
      absl::StrFormat("%s %s", info->name, encrypt ? "encrypt" : "decrypt");
  std::vector<uint8_t> out;
  ACCELCRYPT_RETURN_IF_ERROR(
      Annotate(RunRawCipher(backend, alg, encrypt, key, iv, in,
                            Chunks(in.size(), 0, cap->max_chunk, block), &out),
               what));
  ACCELCRYPT_RETURN_IF_ERROR(CompareBytes(out, want, what, "one update"));
  if (streaming && in.size() > 1) {
    // Split once more inside the message: after the first half of the
    // blocks for ECB/CBC, at an odd offset for stream modes.
    size_t split = block == 16 ? (in.size() / 32) * 16 : in.size() / 2 + 1;
    if (split > 0 && split < in.size()) {
      ACCELCRYPT_RETURN_IF_ERROR(Annotate(
          RunRawCipher(backend, alg, encrypt, key, iv, in,
                       Chunks(in.size(), split, cap->max_chunk, block), &out),
          what));
      ACCELCRYPT_RETURN_IF_ERROR(
          CompareBytes(out, want, what, absl::StrFormat("split at %d", split)));
    }
  }
  return absl::OkStatus();
}

absl::Status RunGcmRecord(const Backend& backend, accelcrypt_alg alg,
                          bool encrypt, const VectorRecord& record) {
  const AlgorithmInfo* info = FindAlgorithm(alg);
  if (info == nullptr) return absl::InternalError("unknown algorithm");
  ACCELCRYPT_ASSIGN_OR_RETURN(auto key, record.Bytes("Key"));
  ACCELCRYPT_ASSIGN_OR_RETURN(auto iv, record.Bytes("IV"));
  ACCELCRYPT_ASSIGN_OR_RETURN(auto aad, record.Bytes("AAD"));
  ACCELCRYPT_ASSIGN_OR_RETURN(auto ct, record.Bytes("CT"));
  ACCELCRYPT_ASSIGN_OR_RETURN(auto tag, record.Bytes("Tag"));
  const bool expect_fail = record.Has("FAIL");
  std::vector<uint8_t> pt;
  if (encrypt || !expect_fail) {
    ACCELCRYPT_ASSIGN_OR_RETURN(pt, record.Bytes("PT"));
  }
  if (key.size() != info->key_len) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d-byte key in a %s file", key.size(), info->name));
  }
  // Section lengths are in bits (GCMVS); check the record agrees with them.
  auto check_bits = [&](std::string_view name, size_t bytes) -> absl::Status {
    auto value = record.SectionValue(name);
    long long bits = 0;
    if (!value.has_value() || !absl::SimpleAtoi(*value, &bits) ||
        bits != static_cast<long long>(bytes) * 8) {
      return absl::InvalidArgumentError(
          absl::StrFormat("field length %d bytes does not match [%s = %s]",
                          bytes, name, value.value_or("?")));
    }
    return absl::OkStatus();
  };
  ACCELCRYPT_RETURN_IF_ERROR(check_bits("IVlen", iv.size()));
  ACCELCRYPT_RETURN_IF_ERROR(check_bits("AADlen", aad.size()));
  ACCELCRYPT_RETURN_IF_ERROR(check_bits("Taglen", tag.size()));
  ACCELCRYPT_RETURN_IF_ERROR(check_bits("PTlen", ct.size()));
  if (!expect_fail && pt.size() != ct.size()) {
    return absl::InvalidArgumentError("PT and CT differ in length");
  }

  const accelcrypt_capability* cap = backend.Capability(alg);
  const auto& in = encrypt ? pt : ct;
  if ((cap->flags & ACCELCRYPT_CAP_STREAMING) == 0 && cap->max_chunk != 0 &&
      in.size() > cap->max_chunk) {
    return absl::UnimplementedError("message exceeds the one-shot limit");
  }
  std::string what = absl::StrFormat(
      "%s %s (IV %d bytes, AAD %d, tag %d)", info->name,
      encrypt ? "encrypt" : "decrypt", iv.size(), aad.size(), tag.size());

  ACCELCRYPT_ASSIGN_OR_RETURN(std::unique_ptr<Cipher> cipher,
                              backend.NewCipher(alg));
  ACCELCRYPT_RETURN_IF_ERROR(Annotate(cipher->Init(encrypt, key, iv), what));
  if (!aad.empty()) {
    ACCELCRYPT_RETURN_IF_ERROR(Annotate(cipher->Aad(aad), what));
  }
  std::vector<uint8_t> out(in.size());
  size_t off = 0;
  for (size_t n : Chunks(in.size(), 0, cap->max_chunk, 1)) {
    ACCELCRYPT_RETURN_IF_ERROR(
        Annotate(cipher->Update(absl::MakeConstSpan(in).subspan(off, n),
                                absl::MakeSpan(out).subspan(off, n)),
                 what));
    off += n;
  }
  if (encrypt) {
    ACCELCRYPT_RETURN_IF_ERROR(Annotate(cipher->Final(), what));
    std::vector<uint8_t> got_tag(tag.size());
    ACCELCRYPT_RETURN_IF_ERROR(
        Annotate(cipher->GetTag(absl::MakeSpan(got_tag)), what));
    ACCELCRYPT_RETURN_IF_ERROR(CompareBytes(out, ct, what, "ciphertext"));
    return CompareBytes(got_tag, tag, what, "tag");
  }
  ACCELCRYPT_RETURN_IF_ERROR(Annotate(cipher->SetTag(tag), what));
  absl::Status final_status = cipher->Final();
  if (expect_fail) {
    if (final_status.ok()) {
      return absl::DataLossError(
          absl::StrFormat("%s: accepted a tag the file marks FAIL", what));
    }
    if (GetStatusDetail(final_status) != StatusDetail::kAuthFailed) {
      return Annotate(
          final_status,
          absl::StrFormat("%s: FAIL vector rejected without the AuthFailed "
                          "detail",
                          what));
    }
    return absl::OkStatus();
  }
  ACCELCRYPT_RETURN_IF_ERROR(Annotate(final_status, what));
  return CompareBytes(out, pt, what, "plaintext");
}

absl::Status CheckDigestLength(const AlgorithmInfo& info,
                               const VectorRecord& record) {
  auto l = record.SectionValue("L");
  long long bytes = 0;
  if (!l.has_value() || !absl::SimpleAtoi(*l, &bytes) ||
      bytes != static_cast<long long>(info.digest_len)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "[L = %s] does not match %s", l.value_or("?"), info.name));
  }
  return absl::OkStatus();
}

absl::Status RunShaMessageRecord(const Backend& backend, accelcrypt_alg alg,
                                 const VectorRecord& record) {
  const AlgorithmInfo* info = FindAlgorithm(alg);
  if (info == nullptr) return absl::InternalError("unknown algorithm");
  ACCELCRYPT_RETURN_IF_ERROR(CheckDigestLength(*info, record));
  long long len_bits = -1;
  if (!absl::SimpleAtoi(record.Get("Len"), &len_bits) || len_bits < 0 ||
      len_bits % 8 != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Len = '%s' is not a whole number of bytes", record.Get("Len")));
  }
  ACCELCRYPT_ASSIGN_OR_RETURN(auto msg, record.Bytes("Msg"));
  ACCELCRYPT_ASSIGN_OR_RETURN(auto md, record.Bytes("MD"));
  // SHAVS writes the empty message as `Len = 0`, `Msg = 00`.
  if (len_bits == 0) msg.clear();
  if (msg.size() != static_cast<size_t>(len_bits / 8)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Msg has %d bytes but Len = %d bits", msg.size(), len_bits));
  }
  const accelcrypt_capability* cap = backend.Capability(alg);
  const bool streaming = (cap->flags & ACCELCRYPT_CAP_STREAMING) != 0;
  if (!streaming && cap->max_chunk != 0 && msg.size() > cap->max_chunk) {
    return absl::UnimplementedError("message exceeds the one-shot limit");
  }
  std::string what = absl::StrFormat("%s of %d bytes", info->name, msg.size());
  std::vector<uint8_t> out(info->digest_len);
  ACCELCRYPT_RETURN_IF_ERROR(
      Annotate(backend.DigestOneShot(alg, msg, absl::MakeSpan(out)), what));
  ACCELCRYPT_RETURN_IF_ERROR(CompareBytes(out, md, what, "one-shot"));
  if (const accelcrypt_digest_direct* d = backend.DigestDirect(alg)) {
    // The direct digest in two updates at an odd split, and a copy of its
    // state taken after the first (a duplicated hash in progress) finished
    // on its own.
    size_t split = msg.size() > 1 ? msg.size() / 2 + 1 : msg.size();
    alignas(16) uint8_t state[Backend::kMaxDigestDirectState];
    alignas(16) uint8_t copy[Backend::kMaxDigestDirectState];
    d->init(state);
    d->update(state, msg.data(), split);
    std::memcpy(copy, state, d->state_size);
    d->update(state, msg.data() + split, msg.size() - split);
    d->final(state, out.data());
    ACCELCRYPT_RETURN_IF_ERROR(CompareBytes(out, md, what, "direct"));
    std::vector<uint8_t> out_copy(out.size());
    d->update(copy, msg.data() + split, msg.size() - split);
    d->final(copy, out_copy.data());
    ACCELCRYPT_RETURN_IF_ERROR(
        CompareBytes(out_copy, md, what, "direct, copied state"));
  }
  if (!streaming) return absl::OkStatus();

  // Streaming: an odd first piece, then the rest within max_chunk.
  ACCELCRYPT_ASSIGN_OR_RETURN(std::unique_ptr<Digest> digest,
                              backend.NewDigest(alg));
  size_t split = msg.size() > 1 ? msg.size() / 2 + 1 : 0;
  size_t off = 0;
  for (size_t n : Chunks(msg.size(), split, cap->max_chunk, 1)) {
    ACCELCRYPT_RETURN_IF_ERROR(Annotate(
        digest->Update(absl::MakeConstSpan(msg).subspan(off, n)), what));
    off += n;
  }
  std::fill(out.begin(), out.end(), 0);
  ACCELCRYPT_RETURN_IF_ERROR(
      Annotate(digest->Final(absl::MakeSpan(out)), what));
  return CompareBytes(out, md, what, "streaming");
}

// MonteCheckpoint runs one outer step of the SHAVS Monte Carlo test
// (SHAVS, section 6.4): MD0 = MD1 = MD2 = Seed; for i = 3..1002,
// MDi = SHA(MDi-3 || MDi-2 || MDi-1); the result MD1002 is the checkpoint
// and the next Seed.
absl::StatusOr<std::vector<uint8_t>> MonteCheckpoint(
    const Backend& backend, const AlgorithmInfo& info,
    const std::vector<uint8_t>& seed) {
  const size_t d = info.digest_len;
  if (seed.size() != d) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Seed has %d bytes, %s needs %d", seed.size(), info.name, d));
  }
  // m holds MDi-3 || MDi-2 || MDi-1; each step shifts it left by one digest.
  std::vector<uint8_t> m(3 * d);
  for (int k = 0; k < 3; ++k) std::copy(seed.begin(), seed.end(), &m[k * d]);
  std::vector<uint8_t> md(d);
  for (int i = 3; i <= 1002; ++i) {
    ACCELCRYPT_RETURN_IF_ERROR(
        backend.DigestOneShot(info.id, m, absl::MakeSpan(md)));
    std::copy(m.begin() + d, m.end(), m.begin());
    std::copy(md.begin(), md.end(), m.begin() + 2 * d);
  }
  return md;
}

absl::StatusOr<long long> MonteCount(const VectorRecord& record) {
  long long count = -1;
  if (!absl::SimpleAtoi(record.Get("COUNT"), &count) || count < 0) {
    return absl::InvalidArgumentError("Monte record without a valid COUNT");
  }
  return count;
}

absl::Status RunShaMonteRecord(const Backend& backend, accelcrypt_alg alg,
                               const VectorRecord& record) {
  const AlgorithmInfo* info = FindAlgorithm(alg);
  if (info == nullptr) return absl::InternalError("unknown algorithm");
  ACCELCRYPT_RETURN_IF_ERROR(CheckDigestLength(*info, record));
  ACCELCRYPT_ASSIGN_OR_RETURN(long long count, MonteCount(record));
  auto seed_hex = record.SectionValue("Seed");
  if (!seed_hex.has_value()) {
    return absl::InvalidArgumentError("Monte record without a section Seed");
  }
  VectorRecord seed_record;
  seed_record.fields["Seed"] = *seed_hex;
  seed_record.line = record.line;
  ACCELCRYPT_ASSIGN_OR_RETURN(auto seed, seed_record.Bytes("Seed"));
  ACCELCRYPT_ASSIGN_OR_RETURN(auto want, record.Bytes("MD"));
  // A lone record replays the chain from the section seed.
  for (long long j = 0; j <= count; ++j) {
    ACCELCRYPT_ASSIGN_OR_RETURN(seed, MonteCheckpoint(backend, *info, seed));
  }
  return CompareBytes(
      seed, want, absl::StrFormat("%s Monte checkpoint %d", info->name, count),
      "chained from Seed");
}

}  // namespace

absl::StatusOr<std::vector<VectorSuite>> DiscoverVectorSuites(
    const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::NotFoundError(
        absl::StrFormat("vector directory %s not found", dir));
  }
  std::vector<VectorSuite> suites;
  fs::recursive_directory_iterator it(
      dir, fs::directory_options::skip_permission_denied, ec);
  if (ec) {
    return absl::UnavailableError(absl::StrFormat(
        "cannot list vector directory %s: %s", dir, ec.message()));
  }
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) {
      return absl::UnavailableError(absl::StrFormat(
          "cannot list vector directory %s: %s", dir, ec.message()));
    }
    if (!it->is_regular_file(ec)) continue;
    VectorSuite suite;
    suite.path = it->path().string();
    suite.relative = it->path().lexically_relative(dir).generic_string();
    if (Classify(suite.relative, &suite.algs) == SuiteKind::kUnknown) continue;
    suites.push_back(std::move(suite));
  }
  if (suites.empty()) {
    return absl::NotFoundError(
        absl::StrFormat("no known vector files under %s", dir));
  }
  std::sort(suites.begin(), suites.end(),
            [](const VectorSuite& a, const VectorSuite& b) {
              return a.relative < b.relative;
            });
  return suites;
}

absl::StatusOr<accelcrypt_alg> VectorRecordAlgorithm(
    const VectorSuite& suite, const VectorRecord& record) {
  SuiteKind kind = KindOf(suite);
  if (kind == SuiteKind::kUnknown || suite.algs.empty()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s is not a known vector file", suite.relative));
  }
  if (suite.algs.size() == 1) return suite.algs[0];
  // Several key sizes in one file (CTR): pick by the key's length.
  auto key = record.Bytes(kind == SuiteKind::kCtr ? "KEY" : "Key");
  if (!key.ok()) return key.status();
  for (accelcrypt_alg alg : suite.algs) {
    if (ACCELCRYPT_CIPHER_KEY_BYTES(alg) == key->size()) return alg;
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "no algorithm of %s takes a %d-byte key", suite.relative, key->size()));
}

absl::Status RunVectorRecord(const Backend& backend, const VectorSuite& suite,
                             const VectorRecord& record) {
  ACCELCRYPT_ASSIGN_OR_RETURN(accelcrypt_alg alg,
                              VectorRecordAlgorithm(suite, record));
  if (backend.Capability(alg) == nullptr) {
    return absl::UnimplementedError(absl::StrFormat(
        "backend %s does not declare %s", backend.name(), AlgName(alg)));
  }
  switch (KindOf(suite)) {
    case SuiteKind::kAes:
    case SuiteKind::kCtr:
      return RunBlockModeRecord(backend, alg, record);
    case SuiteKind::kGcmEncrypt:
      return RunGcmRecord(backend, alg, /*encrypt=*/true, record);
    case SuiteKind::kGcmDecrypt:
      return RunGcmRecord(backend, alg, /*encrypt=*/false, record);
    case SuiteKind::kShaMessage:
      return RunShaMessageRecord(backend, alg, record);
    case SuiteKind::kShaMonte:
      return RunShaMonteRecord(backend, alg, record);
    case SuiteKind::kUnknown:
      break;
  }
  return absl::InvalidArgumentError("unknown vector file");
}

absl::StatusOr<VectorResult> RunVectorSuite(const Backend& backend,
                                            const VectorSuite& suite,
                                            accelcrypt_alg only_alg) {
  ACCELCRYPT_ASSIGN_OR_RETURN(VectorFile file, ParseVectorFile(suite.path));
  VectorResult result;
  const bool monte = KindOf(suite) == SuiteKind::kShaMonte;
  // Monte chain state: the next seed and the COUNT it belongs to, per
  // section seed (a new section restarts the chain).
  std::string chain_section_seed;
  std::vector<uint8_t> chain_seed;
  long long chain_next = -1;

  auto record_failure = [&](const VectorRecord& record,
                            const absl::Status& status) {
    ++result.failed;
    if (result.failures.size() < kMaxReportedFailures) {
      result.failures.push_back(absl::StrFormat(
          "%s:%d: %s", suite.relative, record.line, status.ToString()));
    }
  };

  for (const VectorRecord& record : file.records) {
    auto alg = VectorRecordAlgorithm(suite, record);
    if (!alg.ok()) {
      record_failure(record, alg.status());
      continue;
    }
    if (only_alg != 0 && *alg != only_alg) continue;
    if (backend.Capability(*alg) == nullptr) {
      ++result.skipped;
      continue;
    }
    absl::Status status;
    if (monte) {
      // Follow the SHAVS chain: checkpoint j starts from checkpoint j-1's
      // MD, so the file costs 100 steps rather than 5050. The seed is the
      // file's previous MD, which equals the computed one whenever that
      // checkpoint passed, and keeps one mismatch from failing every later
      // checkpoint.
      auto count = MonteCount(record);
      auto want = record.Bytes("MD");
      std::string section_seed = record.SectionValue("Seed").value_or("");
      if (count.ok() && want.ok() && section_seed == chain_section_seed &&
          *count == chain_next) {
        const AlgorithmInfo* info = FindAlgorithm(*alg);
        auto next = MonteCheckpoint(backend, *info, chain_seed);
        status = next.ok()
                     ? CompareBytes(*next, *want,
                                    absl::StrFormat("%s Monte checkpoint %d",
                                                    info->name, *count),
                                    "chained")
                     : next.status();
      } else {
        status = RunVectorRecord(backend, suite, record);
      }
      chain_next = -1;
      if (count.ok() && want.ok()) {
        chain_section_seed = section_seed;
        chain_seed = *std::move(want);
        chain_next = *count + 1;
      }
    } else {
      status = RunVectorRecord(backend, suite, record);
    }
    if (status.ok()) {
      ++result.passed;
    } else if (status.code() == absl::StatusCode::kUnimplemented) {
      ++result.skipped;
    } else {
      record_failure(record, status);
    }
  }
  return result;
}

}  // namespace accelcrypt
