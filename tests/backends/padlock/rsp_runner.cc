// SPDX-License-Identifier: Apache-2.0
#include "tests/backends/padlock/rsp_runner.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <fstream>
#include <map>

namespace padlock_test {
namespace {

using Bytes = std::vector<uint8_t>;

struct Record {
  std::map<std::string, std::string> f;  // upper-case keys
  std::map<std::string, std::string> section;
  int line = 0;
  bool Has(const std::string& k) const { return f.count(k) != 0; }
  std::string Get(const std::string& k) const {
    auto it = f.find(k);
    return it == f.end() ? std::string() : it->second;
  }
};

std::string Upper(std::string s) {
  for (char& c : s)
    c = static_cast<char>(toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string Trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return std::string();
  size_t b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

Bytes Hex(const std::string& s) {
  Bytes out;
  for (size_t i = 0; i + 1 < s.size(); i += 2) {
    out.push_back(static_cast<uint8_t>(std::stoi(s.substr(i, 2), nullptr, 16)));
  }
  return out;
}

std::string ToHex(const uint8_t* p, size_t n) {
  std::string s;
  char b[3];
  for (size_t i = 0; i < n; ++i) {
    snprintf(b, sizeof(b), "%02x", p[i]);
    s += b;
  }
  return s;
}

std::vector<Record> Parse(const std::string& path) {
  std::vector<Record> out;
  std::ifstream in(path);
  std::string line;
  std::map<std::string, std::string> section;
  bool section_fresh = false;
  Record cur;
  std::map<std::string, std::string> shared;  // values before first record
  int n = 0;
  auto flush = [&] {
    if (!cur.f.empty()) {
      cur.section = section;
      for (auto& kv : shared) cur.f.insert(kv);
      out.push_back(cur);
    }
    cur = Record();
  };
  while (std::getline(in, line)) {
    ++n;
    line = Trim(line);
    if (line.empty()) {
      flush();
      continue;
    }
    if (line[0] == '#') continue;
    if (line[0] == '[') {
      flush();
      if (!section_fresh) {
        section.clear();
        shared.clear();
      }
      section_fresh = true;
      std::string body = line.substr(1, line.find(']') - 1);
      size_t eq = body.find('=');
      if (eq == std::string::npos) {
        section[Upper(Trim(body))] = "";
      } else {
        section[Upper(Trim(body.substr(0, eq)))] = Trim(body.substr(eq + 1));
      }
      continue;
    }
    section_fresh = false;
    size_t eq = line.find('=');
    std::string key =
        Upper(Trim(eq == std::string::npos ? line : line.substr(0, eq)));
    std::string val = eq == std::string::npos ? "" : Trim(line.substr(eq + 1));
    if (cur.f.empty()) cur.line = n;
    if (key == "SEED") {
      shared[key] = val;
      continue;
    }
    cur.f[key] = val;
  }
  flush();
  return out;
}

std::string Base(const std::string& path) {
  size_t s = path.find_last_of('/');
  return s == std::string::npos ? path : path.substr(s + 1);
}

struct Ctx {
  const accelcrypt_cipher_table* t;
  accelcrypt_cipher_ctx* c = nullptr;
  explicit Ctx(const accelcrypt_cipher_table* table) : t(table) {}
  ~Ctx() {
    if (c != nullptr) t->freectx(c);
  }
};

bool Offered(const accelcrypt_backend_desc* desc, void* be,
             accelcrypt_alg alg) {
  const accelcrypt_capability* caps = nullptr;
  size_t n = 0;
  if (desc->get_capabilities(be, &caps, &n, nullptr) != ACCELCRYPT_OK) {
    return false;
  }
  for (size_t i = 0; i < n; ++i) {
    if (caps[i].alg == alg) return true;
  }
  return false;
}

// RunCipher runs one record's data through a fresh context; `variant` 0 is
// aligned and whole, 1 in place at an odd offset, 2 split in pieces.
std::string RunCipher(const accelcrypt_cipher_table* t, void* be,
                      accelcrypt_alg alg, bool encrypt, const Bytes& key,
                      const Bytes& iv, const Bytes& in, int variant,
                      Bytes* out) {
  Ctx ctx(t);
  accelcrypt_error err{};
  if (t->newctx(be, alg, &ctx.c, &err) != ACCELCRYPT_OK) {
    return std::string("newctx: ") + err.message;
  }
  if (t->init(ctx.c, encrypt, key.data(), key.size(),
              iv.empty() ? nullptr : iv.data(), iv.size(),
              &err) != ACCELCRYPT_OK) {
    return std::string("init: ") + err.message;
  }
  const size_t len = in.size();
  std::vector<uint8_t> store(len + 64);
  uint8_t* base = store.data();
  while (reinterpret_cast<uintptr_t>(base) % 16 != 0) ++base;
  out->assign(len, 0);
  const uint32_t mode = ACCELCRYPT_CIPHER_MODE(alg);
  const bool whole_blocks =
      mode == ACCELCRYPT_MODE_ECB || mode == ACCELCRYPT_MODE_CBC;
  if (variant == 0) {
    std::vector<uint8_t> obuf(len + 64);
    uint8_t* o = obuf.data();
    while (reinterpret_cast<uintptr_t>(o) % 16 != 0) ++o;
    memcpy(base, in.data(), len);
    if (t->update(ctx.c, base, len, o, &err) != ACCELCRYPT_OK) {
      return std::string("update: ") + err.message;
    }
    memcpy(out->data(), o, len);
  } else if (variant == 1) {
    uint8_t* p = base + 3;
    memcpy(p, in.data(), len);
    if (t->update(ctx.c, p, len, p, &err) != ACCELCRYPT_OK) {
      return std::string("update in place: ") + err.message;
    }
    memcpy(out->data(), p, len);
  } else {
    const size_t piece = whole_blocks ? 16 : 7;
    size_t pos = 0;
    while (pos < len) {
      const size_t n = std::min(
          piece + (pos / piece % 3) * (whole_blocks ? 16 : 5), len - pos);
      if (t->update(ctx.c, in.data() + pos, n, out->data() + pos, &err) !=
          ACCELCRYPT_OK) {
        return std::string("update piece: ") + err.message;
      }
      pos += n;
    }
  }
  if (t->final(ctx.c, &err) != ACCELCRYPT_OK) {
    return std::string("final: ") + err.message;
  }
  return std::string();
}

void Fail(RunCounts* rc, const std::string& file, int line,
          const std::string& what) {
  ++rc->failed;
  if (rc->failures.size() < 8) {
    rc->failures.push_back(file + ":" + std::to_string(line) + ": " + what);
  }
}

RunCounts RunAes(const accelcrypt_backend_desc* desc, void* be,
                 const std::string& path) {
  RunCounts rc;
  const std::string name = Base(path);
  uint32_t mode = 0;
  if (name.rfind("ECB", 0) == 0)
    mode = ACCELCRYPT_MODE_ECB;
  else if (name.rfind("CBC", 0) == 0)
    mode = ACCELCRYPT_MODE_CBC;
  else if (name.rfind("CFB128", 0) == 0)
    mode = ACCELCRYPT_MODE_CFB128;
  else if (name.rfind("OFB", 0) == 0)
    mode = ACCELCRYPT_MODE_OFB;
  else if (name.rfind("CTR", 0) == 0)
    mode = ACCELCRYPT_MODE_CTR;
  else
    return rc;
  const auto* t = static_cast<const accelcrypt_cipher_table*>(
      desc->query_family(be, ACCELCRYPT_FAMILY_CIPHER));
  for (const Record& r : Parse(path)) {
    if (!r.Has("KEY")) continue;
    const Bytes key = Hex(r.Get("KEY"));
    const accelcrypt_alg alg =
        ACCELCRYPT_CIPHER_ALG(mode, static_cast<uint32_t>(key.size()));
    if (t == nullptr || !Offered(desc, be, alg)) {
      ++rc.skipped;
      continue;
    }
    const bool enc = r.section.count("ENCRYPT") != 0;
    const Bytes iv = Hex(r.Get("IV"));
    const Bytes pt = Hex(r.Get("PLAINTEXT"));
    const Bytes ct = Hex(r.Get("CIPHERTEXT"));
    const Bytes& in = enc ? pt : ct;
    const Bytes& want = enc ? ct : pt;
    bool ok = true;
    for (int v = 0; v < 3 && ok; ++v) {
      Bytes got;
      std::string e = RunCipher(t, be, alg, enc, key, iv, in, v, &got);
      if (!e.empty()) {
        Fail(&rc, name, r.line, e);
        ok = false;
      } else if (got != want) {
        Fail(&rc, name, r.line,
             "variant " + std::to_string(v) + " got " +
                 ToHex(got.data(), got.size()));
        ok = false;
      }
    }
    if (ok) ++rc.passed;
  }
  return rc;
}

RunCounts RunGcm(const accelcrypt_backend_desc* desc, void* be,
                 const std::string& path) {
  RunCounts rc;
  const std::string name = Base(path);
  const bool enc_file = name.find("Encrypt") != std::string::npos;
  const auto* t = static_cast<const accelcrypt_cipher_table*>(
      desc->query_family(be, ACCELCRYPT_FAMILY_CIPHER));
  for (const Record& r : Parse(path)) {
    if (!r.Has("KEY")) continue;
    const Bytes key = Hex(r.Get("KEY"));
    const accelcrypt_alg alg = ACCELCRYPT_CIPHER_ALG(
        ACCELCRYPT_MODE_GCM, static_cast<uint32_t>(key.size()));
    if (t == nullptr || !Offered(desc, be, alg)) {
      ++rc.skipped;
      continue;
    }
    const Bytes iv = Hex(r.Get("IV")), aad = Hex(r.Get("AAD")),
                tag = Hex(r.Get("TAG"));
    const Bytes in = Hex(r.Get(enc_file ? "PT" : "CT"));
    const bool expect_fail = r.Has("FAIL");
    const Bytes want = Hex(r.Get(enc_file ? "CT" : "PT"));
    Ctx ctx(t);
    accelcrypt_error err{};
    std::string e;
    Bytes out(in.size());
    if (t->newctx(be, alg, &ctx.c, &err) != ACCELCRYPT_OK ||
        t->init(ctx.c, enc_file, key.data(), key.size(), iv.data(), iv.size(),
                &err) != ACCELCRYPT_OK) {
      Fail(&rc, name, r.line, std::string("init: ") + err.message);
      continue;
    }
    // AAD and data in two pieces each, to cross the partial-block paths.
    const size_t ha = aad.size() / 2, hd = in.size() / 2;
    bool ok =
        t->aad(ctx.c, aad.data(), ha, &err) == ACCELCRYPT_OK &&
        t->aad(ctx.c, aad.data() + ha, aad.size() - ha, &err) ==
            ACCELCRYPT_OK &&
        t->update(ctx.c, in.data(), hd, out.data(), &err) == ACCELCRYPT_OK &&
        t->update(ctx.c, in.data() + hd, in.size() - hd, out.data() + hd,
                  &err) == ACCELCRYPT_OK;
    if (!ok) {
      Fail(&rc, name, r.line, std::string("aad/update: ") + err.message);
      continue;
    }
    if (enc_file) {
      uint8_t got_tag[16];
      if (t->final(ctx.c, &err) != ACCELCRYPT_OK ||
          t->get_tag(ctx.c, got_tag, tag.size(), &err) != ACCELCRYPT_OK) {
        Fail(&rc, name, r.line, std::string("final: ") + err.message);
      } else if (out != want || memcmp(got_tag, tag.data(), tag.size()) != 0) {
        Fail(&rc, name, r.line, "ciphertext or tag mismatch");
      } else {
        ++rc.passed;
      }
      continue;
    }
    accelcrypt_status st = t->set_tag(ctx.c, tag.data(), tag.size(), &err);
    if (st == ACCELCRYPT_OK) st = t->final(ctx.c, &err);
    if (expect_fail) {
      if (st == ACCELCRYPT_ERR_AUTH_FAILED)
        ++rc.passed;
      else
        Fail(&rc, name, r.line, "forged tag accepted");
    } else if (st != ACCELCRYPT_OK) {
      Fail(&rc, name, r.line, std::string("final: ") + err.message);
    } else if (out != want) {
      Fail(&rc, name, r.line, "plaintext mismatch");
    } else {
      ++rc.passed;
    }
  }
  return rc;
}

struct Digester {
  const accelcrypt_digest_table* t;
  void* be;
  accelcrypt_alg alg;
  size_t out_len;
  // Oneshot when split == 0, else streamed in pieces of `split` bytes.
  bool Run(const uint8_t* m, size_t len, size_t split, uint8_t* out) const {
    if (split == 0) {
      return t->oneshot(be, alg, m, len, out, out_len, nullptr) ==
             ACCELCRYPT_OK;
    }
    accelcrypt_digest_ctx* c = nullptr;
    if (t->newctx(be, alg, &c, nullptr) != ACCELCRYPT_OK) return false;
    bool ok = true;
    for (size_t pos = 0; pos < len && ok; pos += split) {
      ok = t->update(c, m + pos, std::min(split, len - pos), nullptr) ==
           ACCELCRYPT_OK;
    }
    ok = ok && t->final(c, out, out_len, nullptr) == ACCELCRYPT_OK;
    t->freectx(c);
    return ok;
  }
};

RunCounts RunSha(const accelcrypt_backend_desc* desc, void* be,
                 const std::string& path, size_t monte_limit) {
  RunCounts rc;
  const std::string name = Base(path);
  accelcrypt_alg alg = 0;
  size_t out_len = 0;
  if (name.rfind("SHA1", 0) == 0) {
    alg = ACCELCRYPT_ALG_SHA1;
    out_len = 20;
  } else if (name.rfind("SHA224", 0) == 0) {
    alg = ACCELCRYPT_ALG_SHA224;
    out_len = 28;
  } else if (name.rfind("SHA256", 0) == 0) {
    alg = ACCELCRYPT_ALG_SHA256;
    out_len = 32;
  } else if (name.rfind("SHA384", 0) == 0) {
    alg = ACCELCRYPT_ALG_SHA384;
    out_len = 48;
  } else if (name.rfind("SHA512", 0) == 0) {
    alg = ACCELCRYPT_ALG_SHA512;
    out_len = 64;
  } else
    return rc;
  const auto* t = static_cast<const accelcrypt_digest_table*>(
      desc->query_family(be, ACCELCRYPT_FAMILY_DIGEST));
  const std::vector<Record> recs = Parse(path);
  if (t == nullptr || !Offered(desc, be, alg)) {
    rc.skipped += recs.size();
    return rc;
  }
  Digester d{t, be, alg, out_len};
  if (name.find("Monte") != std::string::npos) {
    if (recs.empty()) return rc;
    Bytes seed = Hex(recs[0].Get("SEED"));
    size_t checked = 0;
    for (const Record& r : recs) {
      if (!r.Has("MD")) continue;
      if (checked++ >= monte_limit) break;
      Bytes md[3] = {seed, seed, seed};
      Bytes m(3 * out_len), next(out_len);
      for (int i = 3; i < 1003; ++i) {
        memcpy(m.data(), md[0].data(), out_len);
        memcpy(m.data() + out_len, md[1].data(), out_len);
        memcpy(m.data() + 2 * out_len, md[2].data(), out_len);
        // Alternate one-shot and streamed to cover both.
        if (!d.Run(m.data(), m.size(), (i & 1) ? 0 : 37, next.data())) {
          Fail(&rc, name, r.line, "digest call failed");
          return rc;
        }
        md[0] = md[1];
        md[1] = md[2];
        md[2] = next;
      }
      seed = md[2];
      if (ToHex(seed.data(), seed.size()) != r.Get("MD")) {
        Fail(&rc, name, r.line, "Monte checkpoint mismatch");
        return rc;
      }
      ++rc.passed;
    }
    return rc;
  }
  for (const Record& r : recs) {
    if (!r.Has("MD")) continue;
    const size_t bits = std::stoul(r.Get("LEN"));
    Bytes msg = Hex(r.Get("MSG"));
    msg.resize(bits / 8);
    bool ok = true;
    for (size_t split :
         {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{1000}}) {
      uint8_t out[64];
      if (!d.Run(msg.data(), msg.size(), split, out)) {
        Fail(&rc, name, r.line, "digest call failed");
        ok = false;
        break;
      }
      if (ToHex(out, out_len) != r.Get("MD")) {
        Fail(&rc, name, r.line,
             "split " + std::to_string(split) + " got " + ToHex(out, out_len));
        ok = false;
        break;
      }
    }
    if (ok) ++rc.passed;
  }
  return rc;
}

}  // namespace

void RunCounts::Add(const RunCounts& o) {
  passed += o.passed;
  failed += o.failed;
  skipped += o.skipped;
  for (const auto& f : o.failures) {
    if (failures.size() < 16) failures.push_back(f);
  }
}

RunCounts RunRspFile(const accelcrypt_backend_desc* desc, void* backend,
                     const std::string& path, size_t monte_limit) {
  if (path.find("/aes-gcm/") != std::string::npos) {
    return RunGcm(desc, backend, path);
  }
  if (path.find("/aes/") != std::string::npos) {
    return RunAes(desc, backend, path);
  }
  if (path.find("/sha/") != std::string::npos) {
    return RunSha(desc, backend, path, monte_limit);
  }
  return RunCounts();
}

std::vector<std::string> ListRspFiles(const std::string& dir) {
  std::vector<std::string> out;
  for (const char* sub : {"aes", "aes-gcm", "sha"}) {
    const std::string d = dir + "/" + sub;
    DIR* h = opendir(d.c_str());
    if (h == nullptr) {
      fprintf(stderr, "rsp_runner: cannot open %s: %s\n", d.c_str(),
              strerror(errno));
      continue;
    }
    // readdir returns NULL both at the end and on an error (EOVERFLOW in a
    // 32-bit process built without _FILE_OFFSET_BITS=64): tell them apart.
    errno = 0;
    while (dirent* e = readdir(h)) {
      const std::string n = e->d_name;
      if (n.size() > 4 && n.compare(n.size() - 4, 4, ".rsp") == 0) {
        out.push_back(d);
        out.back().append("/").append(n);
      }
      errno = 0;
    }
    if (errno != 0) {
      fprintf(stderr, "rsp_runner: reading %s: %s\n", d.c_str(),
              strerror(errno));
    }
    closedir(h);
  }
  std::sort(out.begin(), out.end());
  return out;
}

RunCounts EmuSelfCheck(const std::string& dir, AesBlockFn aes, ShaFn sha) {
  RunCounts rc;
  for (const std::string& path : ListRspFiles(dir)) {
    const std::string name = Base(path);
    if (name.rfind("ECB", 0) == 0) {
      for (const Record& r : Parse(path)) {
        if (!r.Has("KEY")) continue;
        const bool enc = r.section.count("ENCRYPT") != 0;
        const Bytes key = Hex(r.Get("KEY"));
        const Bytes in = Hex(r.Get(enc ? "PLAINTEXT" : "CIPHERTEXT"));
        const Bytes want = Hex(r.Get(enc ? "CIPHERTEXT" : "PLAINTEXT"));
        bool ok = true;
        for (size_t i = 0; i < in.size(); i += 16) {
          uint8_t out[16];
          aes(key.data(), key.size(), !enc, in.data() + i, out);
          ok = ok && memcmp(out, want.data() + i, 16) == 0;
        }
        if (ok)
          ++rc.passed;
        else
          Fail(&rc, name, r.line, "emulator AES");
      }
    } else if (name.find("ShortMsg") != std::string::npos ||
               name.find("LongMsg") != std::string::npos) {
      int bits = 0;
      if (name.rfind("SHA1", 0) == 0)
        bits = 1;
      else
        bits = std::stoi(name.substr(3, 3));
      const size_t out_len = bits == 1 ? 20 : static_cast<size_t>(bits) / 8;
      for (const Record& r : Parse(path)) {
        if (!r.Has("MD")) continue;
        Bytes msg = Hex(r.Get("MSG"));
        msg.resize(std::stoul(r.Get("LEN")) / 8);
        uint8_t out[64];
        sha(bits, msg.data(), msg.size(), out);
        if (ToHex(out, out_len) == r.Get("MD"))
          ++rc.passed;
        else
          Fail(&rc, name, r.line, "emulator SHA");
      }
    }
  }
  return rc;
}

}  // namespace padlock_test
