// SPDX-License-Identifier: Apache-2.0
//
// tls_handshake_bench: the server's CPU per full TLS handshake with and
// without accelcrypt, in one process (issue 29 item 5; a benchmark driver,
// not a test: scripts/bench_handshake.sh runs it).
//
// Two library contexts, each loaded from an openssl.cnf
// (OSSL_LIB_CTX_load_config): "without" (OpenSSL's default provider only)
// and "with" (the default provider and accelcrypt preferred by
// default_properties, as docs/configuration.md enables it). The server's
// SSL_CTX is made in one or the other (SSL_CTX_new_ex; its certificate and
// key are decoded in that context, as a server configured by OPENSSL_CONF
// decodes them); the client's SSL_CTX is made in a third context loaded
// from CONF_WITHOUT, so that the client costs the same against both sides
// and neither server shares its library context (method caches, provider
// objects, warm in the CPU's caches after the client's turn) with the
// client: sharing it made the "without" server 3-4 % cheaper per ECDSA
// handshake than an identical second context (the --control run of
// scripts/bench_handshake.sh shows the method's own bias). Client and
// server talk over a BIO pair in this one thread, and only the server's
// calls are timed, on the thread's CPU clock
// (clock_gettime(CLOCK_THREAD_CPUTIME_ID)):
//   handshake   the server's SSL_do_handshake calls of one connection;
//   connection  the same plus the server's SSL_new and SSL_free.
// Every handshake is a full one (no session resumption; the server's
// session cache is off; TLS 1.3 tickets are sent as OpenSSL does by
// default, and never used). Key exchange and cipher suite are OpenSSL's
// defaults (printed).
//
// Rounds alternate "with" and "without" (the order swapped every round),
// N handshakes each, after one discarded warm-up round per side. Per round
// and side the mean CPU per handshake; the table shows per side the median
// over rounds, the server's connections per CPU-second (1 / median), the
// wall-clock rate of the whole loop (client and server), and
//   ratio = without / with (server CPU per handshake), the median of the
//   rounds' own ratios (with their quartiles):
//   > 1.0: accelcrypt costs the server less; < 1.0: it costs more.
//
//   tls_handshake_bench CONF_WITHOUT CONF_WITH [--case NAME]...
//       [--rounds R] [--handshakes N | --seconds S]
//   NAME: tls13-rsa (TLS 1.3, RSA-2048 certificate), tls12-rsa (TLS 1.2,
//   RSA-2048), tls13-ecdsa (TLS 1.3, ECDSA P-256); default all three.
//   --rounds R      rounds per side (default 50)
//   --handshakes N  handshakes per round and side (default: from --seconds)
//   --seconds S     about S seconds per case in all (default 10)
//   --expect-provider NAME  fail unless CONF_WITH made provider NAME
//                   available (a module path that does not load is not an
//                   error for OSSL_LIB_CTX_load_config)
// Exit codes: 0 ran, 1 a config, key, or handshake failed, 2 usage.
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/provider.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

namespace {

struct LibCtxFree {
  void operator()(OSSL_LIB_CTX* p) const { OSSL_LIB_CTX_free(p); }
};
struct SslCtxFree {
  void operator()(SSL_CTX* p) const { SSL_CTX_free(p); }
};
struct SslFree {
  void operator()(SSL* p) const { SSL_free(p); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct X509Free {
  void operator()(X509* p) const { X509_free(p); }
};
struct BioFree {
  void operator()(BIO* p) const { BIO_free(p); }
};
using LibCtxPtr = std::unique_ptr<OSSL_LIB_CTX, LibCtxFree>;
using SslCtxPtr = std::unique_ptr<SSL_CTX, SslCtxFree>;
using SslPtr = std::unique_ptr<SSL, SslFree>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using BioPtr = std::unique_ptr<BIO, BioFree>;

bool Fail(const std::string& what) {
  std::fprintf(stderr, "tls_handshake_bench: %s failed\n", what.c_str());
  ERR_print_errors_fp(stderr);
  return false;
}

SslCtxPtr FailCtx(const std::string& what) {
  Fail(what);
  return nullptr;
}

int64_t ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Quantile q (0..1) of v, interpolated between neighbours.
double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}
double Median(const std::vector<double>& v) { return Quantile(v, 0.5); }

// PairedRatios: a[r] / b[r] for every round r (the two sides' batches of
// one round ran next to each other, so a slow drift of the machine's speed
// cancels out in each ratio).
std::vector<double> PairedRatios(const std::vector<double>& a,
                                 const std::vector<double>& b) {
  std::vector<double> out;
  for (size_t r = 0; r < a.size() && r < b.size(); ++r) {
    out.push_back(a[r] / b[r]);
  }
  return out;
}

// Case is one server shape.
struct Case {
  const char* name;
  int version;           // TLS1_3_VERSION or TLS1_2_VERSION
  const char* key_type;  // EVP_PKEY_Q_keygen's type
  const char* label;
};
const Case kCases[] = {
    {"tls13-rsa", TLS1_3_VERSION, "RSA", "TLS 1.3, RSA-2048 certificate"},
    {"tls12-rsa", TLS1_2_VERSION, "RSA", "TLS 1.2, RSA-2048 certificate"},
    {"tls13-ecdsa", TLS1_3_VERSION, "EC", "TLS 1.3, ECDSA P-256 certificate"},
};

// Credentials: a fresh key and a self-signed certificate for it, as PEM
// text, so that each server context decodes its own copy.
struct Credentials {
  std::string key_pem;
  std::string cert_pem;
};

std::string BioText(BIO* bio) {
  char* data = nullptr;
  long len = BIO_get_mem_data(bio, &data);
  return len > 0 ? std::string(data, static_cast<size_t>(len)) : std::string();
}

bool MakeCredentials(OSSL_LIB_CTX* libctx, const char* key_type,
                     Credentials* out) {
  PkeyPtr key(std::strcmp(key_type, "RSA") == 0
                  ? EVP_PKEY_Q_keygen(libctx, nullptr, "RSA", size_t{2048})
                  : EVP_PKEY_Q_keygen(libctx, nullptr, "EC", "P-256"));
  if (!key) return Fail(std::string(key_type) + " key generation");
  X509Ptr cert(X509_new_ex(libctx, nullptr));
  if (!cert || !X509_set_version(cert.get(), X509_VERSION_3) ||
      !ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), 1) ||
      !X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600) ||
      !X509_gmtime_adj(X509_getm_notAfter(cert.get()), 86400) ||
      !X509_set_pubkey(cert.get(), key.get())) {
    return Fail("certificate set-up");
  }
  X509_NAME* name = X509_get_subject_name(cert.get());
  if (!X509_NAME_add_entry_by_txt(
          name, "CN", MBSTRING_ASC,
          reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0) ||
      !X509_set_issuer_name(cert.get(), name) ||
      X509_sign(cert.get(), key.get(), EVP_sha256()) <= 0) {
    return Fail("certificate signature");
  }
  BioPtr kb(BIO_new(BIO_s_mem())), cb(BIO_new(BIO_s_mem()));
  if (!kb || !cb ||
      !PEM_write_bio_PrivateKey(kb.get(), key.get(), nullptr, nullptr, 0,
                                nullptr, nullptr) ||
      !PEM_write_bio_X509(cb.get(), cert.get())) {
    return Fail("PEM encoding");
  }
  out->key_pem = BioText(kb.get());
  out->cert_pem = BioText(cb.get());
  return true;
}

// ServerCtx makes the server's SSL_CTX in libctx: certificate and key
// decoded there, only `version`, no session cache.
SslCtxPtr ServerCtx(OSSL_LIB_CTX* libctx, const Credentials& cred,
                    int version) {
  SslCtxPtr ctx(SSL_CTX_new_ex(libctx, nullptr, TLS_server_method()));
  if (!ctx) return FailCtx("SSL_CTX_new_ex (server)");
  BioPtr kb(BIO_new_mem_buf(cred.key_pem.data(),
                            static_cast<int>(cred.key_pem.size())));
  BioPtr cb(BIO_new_mem_buf(cred.cert_pem.data(),
                            static_cast<int>(cred.cert_pem.size())));
  if (!kb || !cb) return FailCtx("BIO_new_mem_buf");
  PkeyPtr key(PEM_read_bio_PrivateKey_ex(kb.get(), nullptr, nullptr, nullptr,
                                         libctx, nullptr));
  // Decoded into an X509 of libctx (PEM_read_bio_X509 fills *raw; on a
  // failure it has freed and cleared it, or left it to us).
  X509* raw = X509_new_ex(libctx, nullptr);
  if (raw != nullptr &&
      PEM_read_bio_X509(cb.get(), &raw, nullptr, nullptr) == nullptr) {
    X509_free(raw);
    raw = nullptr;
  }
  X509Ptr cert(raw);
  if (!key || !cert) return FailCtx("decoding the server's key");
  if (!SSL_CTX_use_certificate(ctx.get(), cert.get()) ||
      !SSL_CTX_use_PrivateKey(ctx.get(), key.get()) ||
      !SSL_CTX_check_private_key(ctx.get()) ||
      !SSL_CTX_set_min_proto_version(ctx.get(), version) ||
      !SSL_CTX_set_max_proto_version(ctx.get(), version)) {
    return FailCtx("server SSL_CTX set-up");
  }
  SSL_CTX_set_session_cache_mode(ctx.get(), SSL_SESS_CACHE_OFF);
  return ctx;
}

SslCtxPtr ClientCtx(OSSL_LIB_CTX* libctx, int version) {
  SslCtxPtr ctx(SSL_CTX_new_ex(libctx, nullptr, TLS_client_method()));
  if (!ctx || !SSL_CTX_set_min_proto_version(ctx.get(), version) ||
      !SSL_CTX_set_max_proto_version(ctx.get(), version)) {
    return FailCtx("client SSL_CTX set-up");
  }
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_NONE, nullptr);
  SSL_CTX_set_session_cache_mode(ctx.get(), SSL_SESS_CACHE_OFF);
  return ctx;
}

// Cost is what one handshake cost the server, in thread-CPU nanoseconds.
struct Cost {
  int64_t handshake_ns = 0;   // its SSL_do_handshake calls
  int64_t connection_ns = 0;  // and its SSL_new and SSL_free
};

// What a finished handshake negotiated (printed once per case).
struct Negotiated {
  std::string protocol, cipher, group, sigalg;
};

bool WantMore(SSL* ssl, int rc) {
  const int err = SSL_get_error(ssl, rc);
  return err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE;
}

// Handshake runs one full handshake between a new client of `client` and a
// new server of `server` over a BIO pair; adds the server's CPU to *cost.
bool Handshake(SSL_CTX* server, SSL_CTX* client, Cost* cost,
               Negotiated* negotiated) {
  BIO *cbio = nullptr, *sbio = nullptr;
  if (!BIO_new_bio_pair(&cbio, 1 << 16, &sbio, 1 << 16)) {
    return Fail("BIO_new_bio_pair");
  }
  SslPtr c(SSL_new(client));
  if (!c) {
    BIO_free(cbio);
    BIO_free(sbio);
    return Fail("SSL_new (client)");
  }
  SSL_set_bio(c.get(), cbio, cbio);
  SSL_set_connect_state(c.get());

  int64_t t0 = ThreadCpuNs();
  SslPtr s(SSL_new(server));
  if (s) {
    SSL_set_bio(s.get(), sbio, sbio);
    SSL_set_accept_state(s.get());
  }
  int64_t t1 = ThreadCpuNs();
  int64_t conn = t1 - t0, hs = 0;
  if (!s) {
    BIO_free(sbio);
    return Fail("SSL_new (server)");
  }
  bool c_done = false, s_done = false;
  for (int step = 0; step < 32 && !(c_done && s_done); ++step) {
    if (!c_done) {
      const int rc = SSL_do_handshake(c.get());
      if (rc == 1) {
        c_done = true;
      } else if (!WantMore(c.get(), rc)) {
        return Fail("the client's SSL_do_handshake");
      }
    }
    if (!s_done) {
      t0 = ThreadCpuNs();
      const int rc = SSL_do_handshake(s.get());
      t1 = ThreadCpuNs();
      hs += t1 - t0;
      if (rc == 1) {
        s_done = true;
      } else if (!WantMore(s.get(), rc)) {
        return Fail("the server's SSL_do_handshake");
      }
    }
  }
  if (!c_done || !s_done) return Fail("handshake (no progress)");
  if (negotiated != nullptr) {
    negotiated->protocol = SSL_get_version(s.get());
    negotiated->cipher = SSL_CIPHER_get_name(SSL_get_current_cipher(s.get()));
    const int group = SSL_get_negotiated_group(s.get());
    const char* gname = group > 0 ? OBJ_nid2sn(group) : nullptr;
    negotiated->group = gname != nullptr ? gname : "?";
    int type = NID_undef, hash = NID_undef;
    if (SSL_get_peer_signature_type_nid(c.get(), &type) == 1 &&
        SSL_get_peer_signature_nid(c.get(), &hash) == 1) {
      const char* t = type == EVP_PKEY_EC ? "ECDSA" : OBJ_nid2sn(type);
      const char* h = OBJ_nid2sn(hash);
      negotiated->sigalg =
          std::string(t != nullptr ? t : "?") + "+" + (h != nullptr ? h : "?");
    } else {
      negotiated->sigalg = "?";
    }
  }
  c.reset();  // the client's cost is not the server's
  t0 = ThreadCpuNs();
  s.reset();
  t1 = ThreadCpuNs();
  conn += hs + (t1 - t0);
  cost->handshake_ns += hs;
  cost->connection_ns += conn;
  return true;
}

// Side is one server configuration: its library context and SSL_CTX, and
// the per-round means.
struct Side {
  const char* label;
  OSSL_LIB_CTX* libctx;
  SslCtxPtr server;
  std::vector<double> hs_us, conn_us;  // mean per handshake, per round
  double wall_s = 0;                   // all kept rounds, client included
  long count = 0;                      // handshakes in the kept rounds
};

bool RunRound(Side* side, SSL_CTX* client, long n, bool keep,
              Negotiated* negotiated) {
  Cost cost;
  auto w0 = std::chrono::steady_clock::now();
  for (long i = 0; i < n; ++i) {
    if (!Handshake(side->server.get(), client, &cost,
                   i == 0 ? negotiated : nullptr)) {
      return false;
    }
  }
  auto w1 = std::chrono::steady_clock::now();
  if (keep) {
    side->hs_us.push_back(static_cast<double>(cost.handshake_ns) / 1e3 /
                          static_cast<double>(n));
    side->conn_us.push_back(static_cast<double>(cost.connection_ns) / 1e3 /
                            static_cast<double>(n));
    side->wall_s += std::chrono::duration<double>(w1 - w0).count();
    side->count += n;
  }
  return true;
}

// ProviderOf names the provider a library context fetches NAME from (an
// EVP_MD when is_md, else an EVP_CIPHER), for the report.
std::string ProviderOf(OSSL_LIB_CTX* libctx, const char* name, bool is_md) {
  const OSSL_PROVIDER* prov = nullptr;
  EVP_MD* md = is_md ? EVP_MD_fetch(libctx, name, nullptr) : nullptr;
  EVP_CIPHER* ci = is_md ? nullptr : EVP_CIPHER_fetch(libctx, name, nullptr);
  if (md != nullptr) prov = EVP_MD_get0_provider(md);
  if (ci != nullptr) prov = EVP_CIPHER_get0_provider(ci);
  std::string out = prov != nullptr ? OSSL_PROVIDER_get0_name(prov) : "-";
  EVP_MD_free(md);
  EVP_CIPHER_free(ci);
  ERR_clear_error();
  return out;
}

struct Options {
  std::vector<const Case*> cases;
  int rounds = 50;
  long handshakes = 0;  // 0: from seconds
  double seconds = 10;
  std::string expect_provider;
};

int Usage() {
  std::fprintf(stderr,
               "usage: tls_handshake_bench CONF_WITHOUT CONF_WITH [--case "
               "tls13-rsa|tls12-rsa|tls13-ecdsa]...\n"
               "       [--rounds R] [--handshakes N | --seconds S] "
               "[--expect-provider NAME]\n");
  return 2;
}

bool ParseOptions(int argc, char** argv, Options* o) {
  for (int i = 3; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return false;
    const char* val = argv[++i];
    char* end = nullptr;
    if (arg == "--case") {
      const Case* found = nullptr;
      for (const Case& c : kCases) {
        if (std::strcmp(c.name, val) == 0) found = &c;
      }
      if (found == nullptr) return false;
      o->cases.push_back(found);
    } else if (arg == "--rounds") {
      o->rounds = static_cast<int>(std::strtol(val, &end, 10));
      if (*end != '\0' || o->rounds <= 0 || o->rounds > 100000) return false;
    } else if (arg == "--handshakes") {
      o->handshakes = std::strtol(val, &end, 10);
      if (*end != '\0' || o->handshakes <= 0 || o->handshakes > 10000000) {
        return false;
      }
    } else if (arg == "--expect-provider") {
      o->expect_provider = val;
    } else if (arg == "--seconds") {
      o->seconds = std::strtod(val, &end);
      if (*end != '\0' || !(o->seconds > 0) || o->seconds > 86400) {
        return false;
      }
    } else {
      return false;
    }
  }
  if (o->cases.empty()) {
    for (const Case& c : kCases) o->cases.push_back(&c);
  }
  return true;
}

// RunCase measures one case and prints its row; false on a failure.
bool RunCase(const Case& c, const Options& o, OSSL_LIB_CTX* client_libctx,
             OSSL_LIB_CTX* without, OSSL_LIB_CTX* with) {
  Credentials cred;
  if (!MakeCredentials(client_libctx, c.key_type, &cred)) return false;
  SslCtxPtr client = ClientCtx(client_libctx, c.version);
  Side sides[2] = {{"without", without, ServerCtx(without, cred, c.version)},
                   {"with", with, ServerCtx(with, cred, c.version)}};
  if (!client || !sides[0].server || !sides[1].server) return false;

  // Warm-up: one discarded round per side (keys' lazy state, caches, the
  // provider's first fetches); it also sizes the rounds.
  Negotiated neg[2];
  auto w0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 2; ++i) {
    if (!RunRound(&sides[i], client.get(), 2, false, &neg[i])) return false;
  }
  const double per_hs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - w0)
          .count() /
      4;
  long n = o.handshakes;
  if (n == 0) {
    n = std::max(1L, static_cast<long>(o.seconds / (2.0 * o.rounds) /
                                       std::max(per_hs, 1e-6)));
  }
  if (neg[0].cipher != neg[1].cipher || neg[0].protocol != neg[1].protocol) {
    std::fprintf(stderr,
                 "tls_handshake_bench: %s: the sides negotiated differently "
                 "(%s %s vs %s %s)\n",
                 c.name, neg[0].protocol.c_str(), neg[0].cipher.c_str(),
                 neg[1].protocol.c_str(), neg[1].cipher.c_str());
    return false;
  }
  for (int r = 0; r < o.rounds; ++r) {
    for (int k = 0; k < 2; ++k) {
      // with, without, without, with, ...: each side goes first in half
      // the rounds.
      Side* s = &sides[(r % 2 == 0) ? 1 - k : k];
      if (!RunRound(s, client.get(), n, true, nullptr)) return false;
    }
  }
  const double hs[2] = {Median(sides[0].hs_us), Median(sides[1].hs_us)};
  const double conn[2] = {Median(sides[0].conn_us), Median(sides[1].conn_us)};
  const double best[2] = {
      *std::min_element(sides[0].hs_us.begin(), sides[0].hs_us.end()),
      *std::min_element(sides[1].hs_us.begin(), sides[1].hs_us.end())};
  std::printf(
      "%s: %s; %s %s, group %s, server signature %s; %d rounds x %ld "
      "handshakes per side\n",
      c.name, c.label, neg[0].protocol.c_str(), neg[0].cipher.c_str(),
      neg[0].group.c_str(), neg[0].sigalg.c_str(), o.rounds, n);
  for (int i = 0; i < 2; ++i) {
    std::printf(
        "  %-8s handshake %8.1f us (best round %8.1f), connection %8.1f us "
        "= %6.0f connections per server CPU-second; loop %6.1f handshakes/s "
        "wall (client and server)\n",
        sides[i].label, hs[i], best[i], conn[i], 1e6 / conn[i],
        sides[i].count / sides[i].wall_s);
  }
  const std::vector<double> hs_ratio =
      PairedRatios(sides[0].hs_us, sides[1].hs_us);
  const std::vector<double> conn_ratio =
      PairedRatios(sides[0].conn_us, sides[1].conn_us);
  const double hs_r = Median(hs_ratio), conn_r = Median(conn_ratio);
  const double hs_q1 = Quantile(hs_ratio, 0.25);
  const double hs_q3 = Quantile(hs_ratio, 0.75);
  std::printf(
      "  ratio without/with, median of the rounds' ratios: handshake %.3f "
      "(quartiles %.3f-%.3f), connection %.3f; ratio of the medians %.3f, "
      "of the best rounds %.3f\n",
      hs_r, hs_q1, hs_q3, conn_r, hs[0] / hs[1], best[0] / best[1]);
  std::printf("ROW %s %.2f %.2f %.2f %.2f %.4f %.4f %.1f %.1f %.4f %.4f\n",
              c.name, hs[0], hs[1], conn[0], conn[1], hs_r, conn_r,
              sides[0].count / sides[0].wall_s,
              sides[1].count / sides[1].wall_s, hs_q1, hs_q3);
  std::fflush(stdout);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (argc < 3 || std::strcmp(argv[1], "--help") == 0 ||
      !ParseOptions(argc, argv, &o)) {
    return Usage();
  }
  LibCtxPtr without(OSSL_LIB_CTX_new()), with(OSSL_LIB_CTX_new());
  LibCtxPtr client(OSSL_LIB_CTX_new());
  if (!without || !OSSL_LIB_CTX_load_config(without.get(), argv[1]) ||
      !client || !OSSL_LIB_CTX_load_config(client.get(), argv[1])) {
    Fail(std::string("loading ") + argv[1]);
    return 1;
  }
  if (!with || !OSSL_LIB_CTX_load_config(with.get(), argv[2])) {
    Fail(std::string("loading ") + argv[2]);
    return 1;
  }
  if (!o.expect_provider.empty() &&
      !OSSL_PROVIDER_available(with.get(), o.expect_provider.c_str())) {
    std::fprintf(stderr,
                 "tls_handshake_bench: provider %s is not available in the "
                 "context of %s\n",
                 o.expect_provider.c_str(), argv[2]);
    return 1;
  }
  std::printf(
      "tls_handshake_bench: server CPU per full handshake (thread CPU clock), "
      "one process; median of per-round means\n"
      "  without: %s\n  with:    %s\n"
      "  the 'with' context fetches SHA2-256 from %s, SHA2-384 from %s, "
      "AES-128-GCM from %s, AES-256-GCM from %s\n",
      argv[1], argv[2], ProviderOf(with.get(), "SHA2-256", true).c_str(),
      ProviderOf(with.get(), "SHA2-384", true).c_str(),
      ProviderOf(with.get(), "AES-128-GCM", false).c_str(),
      ProviderOf(with.get(), "AES-256-GCM", false).c_str());
  for (const Case* c : o.cases) {
    if (!RunCase(*c, o, client.get(), without.get(), with.get())) return 1;
  }
  std::printf(
      "ratio = without / with, server CPU per handshake: > 1.0 accelcrypt "
      "costs the server less, < 1.0 it costs more\n");
  return 0;
}
