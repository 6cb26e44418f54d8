// SPDX-License-Identifier: Apache-2.0
// The software backend's RSA and DSA must not be taken over by an ENGINE the
// application loaded. libp11's pkcs11 engine (Debian libengine-pkcs11-openssl)
// set as default for ALL methods registers itself as the RSA pkey method;
// OpenSSL 3.0's EVP_PKEY_CTX_new_from_name/_from_pkey then go "legacy" even
// in a private OSSL_LIB_CTX. The backend calls the default provider's
// functions directly, so with the engine loaded its registration self-tests
// pass and its results match libcrypto's (computed before the engine is
// loaded, or checked after it is unregistered).
//
// Each test loads the engine into its own process state (gtest_discover_tests
// runs every test in a process of its own).
#define OPENSSL_SUPPRESS_DEPRECATED 1

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/dsa.h>
#include <openssl/engine.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/params.h>
#include <openssl/rsa.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/backend.h"
#include "core/core.h"
#include "core/pkey.h"
#include "core/registry.h"
#include "core/status.h"
#include "core/vector_file.h"
#include "gtest/gtest.h"
#include "tests/support/test_env.h"
#ifdef ACCELCRYPT_TEST_P11_MECH
#include "pkcs11/mech/mechanisms.h"
#endif

namespace accelcrypt {
namespace {

using ::accelcrypt::testing::FromHex;
using ::accelcrypt::testing::MakeCore;
using ::accelcrypt::testing::ToHex;
using ::accelcrypt::testing::VectorDir;
using Bytes = std::vector<uint8_t>;

constexpr char kEngineSo[] = "/usr/lib/x86_64-linux-gnu/engines-3/pkcs11.so";
constexpr char kSoftHsm[] = "/usr/lib/softhsm/libsofthsm2.so";

struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;
struct CtxFree {
  void operator()(EVP_PKEY_CTX* c) const { EVP_PKEY_CTX_free(c); }
};
using CtxPtr = std::unique_ptr<EVP_PKEY_CTX, CtxFree>;

std::string LibcryptoErrors() {
  std::string out;
  unsigned long e;
  while ((e = ERR_get_error()) != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    out += buf;
    out += "; ";
  }
  return out;
}

// Libp11Engine loads libp11's engine through the dynamic engine (as an
// openssl.cnf [engine_section] with dynamic_path would), points it at
// SoftHSMv2 (with a throw-away token directory) and makes it the default for
// every method. Unregister() takes it out of the method tables again.
class Libp11Engine {
 public:
  // Missing returns why the engine cannot be loaded here, or "".
  static std::string Missing() {
    if (access(kEngineSo, R_OK) != 0) {
      return std::string(kEngineSo) +
             " is absent (Debian package libengine-pkcs11-openssl)";
    }
    if (access(kSoftHsm, R_OK) != 0) {
      return std::string(kSoftHsm) + " is absent (Debian package softhsm2)";
    }
    return "";
  }

  ~Libp11Engine() {
    if (e_ == nullptr) return;
    Unregister();
    if (initialized_) ENGINE_finish(e_);
    ENGINE_free(e_);
  }

  // Load returns "" on success, else what failed.
  std::string Load() {
    char dir_template[] = "/tmp/accelcrypt-engine-test-XXXXXX";
    if (mkdtemp(dir_template) == nullptr) return "mkdtemp failed";
    dir_ = dir_template;
    const std::string conf = dir_ + "/softhsm2.conf";
    std::ofstream(conf) << "directories.tokendir = " << dir_ << "\n"
                        << "objectstore.backend = file\n"
                        << "log.level = ERROR\n";
    setenv("SOFTHSM2_CONF", conf.c_str(), 1);

    // A test run earlier in this process (gtest without ctest) may have
    // added it to the engine list already.
    for (ENGINE* it = ENGINE_get_first(); it != nullptr;
         it = ENGINE_get_next(it)) {
      if (std::string(ENGINE_get_id(it)) == "pkcs11") {
        e_ = it;
        break;
      }
    }
    if (e_ == nullptr) {
      ENGINE_load_dynamic();
      e_ = ENGINE_by_id("dynamic");
      if (e_ == nullptr) return "no dynamic engine: " + LibcryptoErrors();
      if (ENGINE_ctrl_cmd_string(e_, "SO_PATH", kEngineSo, 0) != 1 ||
          ENGINE_ctrl_cmd_string(e_, "ID", "pkcs11", 0) != 1 ||
          ENGINE_ctrl_cmd_string(e_, "LIST_ADD", "1", 0) != 1 ||
          ENGINE_ctrl_cmd_string(e_, "LOAD", nullptr, 0) != 1) {
        return "loading " + std::string(kEngineSo) + ": " + LibcryptoErrors();
      }
    }
    if (ENGINE_ctrl_cmd_string(e_, "MODULE_PATH", kSoftHsm, 0) != 1) {
      return "MODULE_PATH: " + LibcryptoErrors();
    }
    if (ENGINE_init(e_) != 1) return "ENGINE_init: " + LibcryptoErrors();
    initialized_ = true;
    if (ENGINE_set_default(e_, ENGINE_METHOD_ALL) != 1) {
      return "ENGINE_set_default: " + LibcryptoErrors();
    }
    return "";
  }

  void Unregister() {
    if (e_ == nullptr || unregistered_) return;
    ENGINE_unregister_pkey_meths(e_);
    ENGINE_unregister_pkey_asn1_meths(e_);
    ENGINE_unregister_RSA(e_);
    ENGINE_unregister_DSA(e_);
    ENGINE_unregister_EC(e_);
    ENGINE_unregister_DH(e_);
    ENGINE_unregister_RAND(e_);
    ENGINE_unregister_ciphers(e_);
    ENGINE_unregister_digests(e_);
    unregistered_ = true;
  }

  ENGINE* get() const { return e_; }

 private:
  ENGINE* e_ = nullptr;
  bool initialized_ = false;
  bool unregistered_ = false;
  std::string dir_;
};

// EvpIsHijacked reports whether EVP in a fresh private library context would
// hand RSA to the engine (the bug condition this test reproduces).
bool EvpIsHijacked() {
  OSSL_LIB_CTX* libctx = OSSL_LIB_CTX_new();
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_name(libctx, "RSA", nullptr);
  const bool hijacked = ctx == nullptr || EVP_PKEY_fromdata_init(ctx) != 1;
  EVP_PKEY_CTX_free(ctx);
  OSSL_LIB_CTX_free(libctx);
  ERR_clear_error();
  return hijacked;
}

Bytes BnParam(const EVP_PKEY* pkey, const char* name) {
  BIGNUM* bn = nullptr;
  if (EVP_PKEY_get_bn_param(pkey, name, &bn) != 1) return {};
  Bytes out(static_cast<size_t>(BN_num_bytes(bn)));
  BN_bn2bin(bn, out.data());
  BN_clear_free(bn);
  return out;
}

KeyMaterial RsaMaterial(const EVP_PKEY* pkey) {
  KeyMaterial km;
  km.type = KeyMaterial::Type::kRsa;
  km.n = BnParam(pkey, OSSL_PKEY_PARAM_RSA_N);
  km.e = BnParam(pkey, OSSL_PKEY_PARAM_RSA_E);
  km.d = BnParam(pkey, OSSL_PKEY_PARAM_RSA_D);
  km.p = BnParam(pkey, OSSL_PKEY_PARAM_RSA_FACTOR1);
  km.q = BnParam(pkey, OSSL_PKEY_PARAM_RSA_FACTOR2);
  km.dmp1 = BnParam(pkey, OSSL_PKEY_PARAM_RSA_EXPONENT1);
  km.dmq1 = BnParam(pkey, OSSL_PKEY_PARAM_RSA_EXPONENT2);
  km.iqmp = BnParam(pkey, OSSL_PKEY_PARAM_RSA_COEFFICIENT1);
  return km;
}

// Libcrypto runs one EVP operation in the default library context.
enum class Op { kSign, kVerify, kEncrypt, kDecrypt };
struct EvpParams {
  int padding = RSA_PKCS1_PADDING;  // ignored for DSA
  const char* md = "SHA256";
  Bytes label;
};

absl::StatusOr<Bytes> Libcrypto(Op op, EVP_PKEY* pkey, const EvpParams& p,
                                const Bytes& in, const Bytes& sig = {}) {
  CtxPtr ctx(EVP_PKEY_CTX_new_from_pkey(nullptr, pkey, nullptr));
  const bool rsa = EVP_PKEY_is_a(pkey, "RSA");
  bool ok = ctx != nullptr;
  switch (op) {
    case Op::kSign:
      ok = ok && EVP_PKEY_sign_init(ctx.get()) == 1;
      break;
    case Op::kVerify:
      ok = ok && EVP_PKEY_verify_init(ctx.get()) == 1;
      break;
    case Op::kEncrypt:
      ok = ok && EVP_PKEY_encrypt_init(ctx.get()) == 1;
      break;
    case Op::kDecrypt:
      ok = ok && EVP_PKEY_decrypt_init(ctx.get()) == 1;
      break;
  }
  const bool cipher = op == Op::kEncrypt || op == Op::kDecrypt;
  if (ok && rsa) ok = EVP_PKEY_CTX_set_rsa_padding(ctx.get(), p.padding) > 0;
  if (ok && !cipher) {
    ok = EVP_PKEY_CTX_set_signature_md(ctx.get(), EVP_get_digestbyname(p.md)) >
         0;
  }
  if (ok && rsa && p.padding == RSA_PKCS1_PSS_PADDING) {
    ok =
        EVP_PKEY_CTX_set_rsa_pss_saltlen(ctx.get(), RSA_PSS_SALTLEN_DIGEST) > 0;
  }
  if (ok && p.padding == RSA_PKCS1_OAEP_PADDING) {
    ok =
        EVP_PKEY_CTX_set_rsa_oaep_md(ctx.get(), EVP_get_digestbyname(p.md)) > 0;
    if (ok && !p.label.empty()) {
      void* label = OPENSSL_memdup(p.label.data(), p.label.size());
      ok = EVP_PKEY_CTX_set0_rsa_oaep_label(
               ctx.get(), label, static_cast<int>(p.label.size())) > 0;
    }
  }
  if (!ok) return absl::InternalError("libcrypto setup: " + LibcryptoErrors());
  Bytes out(static_cast<size_t>(EVP_PKEY_get_size(pkey)));
  size_t len = out.size();
  int rc = 0;
  switch (op) {
    case Op::kSign:
      rc = EVP_PKEY_sign(ctx.get(), out.data(), &len, in.data(), in.size());
      break;
    case Op::kVerify:
      rc = EVP_PKEY_verify(ctx.get(), sig.data(), sig.size(), in.data(),
                           in.size());
      len = 0;
      break;
    case Op::kEncrypt:
      rc = EVP_PKEY_encrypt(ctx.get(), out.data(), &len, in.data(), in.size());
      break;
    case Op::kDecrypt:
      rc = EVP_PKEY_decrypt(ctx.get(), out.data(), &len, in.data(), in.size());
      break;
  }
  if (rc != 1) return absl::InternalError("libcrypto: " + LibcryptoErrors());
  out.resize(len);
  return out;
}

Bytes Sha256(const Bytes& msg) {
  Bytes out(32);
  unsigned int len = 0;
  EVP_Digest(msg.data(), msg.size(), out.data(), &len, EVP_sha256(), nullptr);
  return out;
}

// SoftwareCore builds a Core with only the software backend and fails the
// test when registration disabled any of its algorithms.
std::unique_ptr<Core> SoftwareCore() {
  auto core = MakeCore({{"backends", "software"}, {"selftest", "1"}});
  if (!core.ok()) {
    ADD_FAILURE() << core.status();
    return nullptr;
  }
  for (const LoadEvent& ev : (*core)->registry().events()) {
    if (ev.backend == "software" && !ev.ok) {
      ADD_FAILURE() << "software backend event with the engine loaded: "
                    << ev.algorithm << ": " << ev.message;
    }
  }
  return *std::move(core);
}

Bytes Out(size_t n) { return Bytes(n); }

class SoftwareUnderEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = Libp11Engine::Missing();
    if (!missing.empty())
      GTEST_SKIP() << "libp11 engine not usable: " << missing;
  }

  // LoadEngine makes libp11 the default ENGINE and checks that it took the
  // RSA pkey method (so EVP would be hijacked).
  void LoadEngine() {
    std::string err = engine_.Load();
    ASSERT_EQ(err, "") << "loading libp11's engine failed";
    ASSERT_NE(ENGINE_get_pkey_meth_engine(EVP_PKEY_RSA), nullptr)
        << "precondition: the engine must be the default RSA pkey method";
    hijacked_ = EvpIsHijacked();
    RecordProperty("evp_rsa_hijacked_in_private_libctx", hijacked_ ? 1 : 0);
  }

  Libp11Engine engine_;
  bool hijacked_ = false;
};

TEST_F(SoftwareUnderEngineTest, RsaMatchesLibcrypto) {
  // Before the engine: the key and libcrypto's reference results.
  PkeyPtr pkey(EVP_RSA_gen(2048));
  ASSERT_NE(pkey, nullptr) << LibcryptoErrors();
  const KeyMaterial km = RsaMaterial(pkey.get());
  const Bytes msg = {'a', 'c', 'c', 'e', 'l', 'c', 'r', 'y', 'p', 't'};
  const Bytes digest = Sha256(msg);
  const Bytes label = {'l', 'a', 'b', 'e', 'l'};
  EvpParams pkcs1, pss, oaep, raw;
  pss.padding = RSA_PKCS1_PSS_PADDING;
  oaep.padding = RSA_PKCS1_OAEP_PADDING;
  oaep.label = label;
  raw.padding = RSA_NO_PADDING;
  auto ref_pkcs1_sig = Libcrypto(Op::kSign, pkey.get(), pkcs1, digest);
  auto ref_pss_sig = Libcrypto(Op::kSign, pkey.get(), pss, digest);
  auto ref_pkcs1_ct = Libcrypto(Op::kEncrypt, pkey.get(), pkcs1, msg);
  auto ref_oaep_ct = Libcrypto(Op::kEncrypt, pkey.get(), oaep, msg);
  Bytes raw_block(256, 0x5a);
  raw_block[0] = 0x01;  // below n (n's top bit is set)
  auto ref_raw_ct = Libcrypto(Op::kEncrypt, pkey.get(), raw, raw_block);
  ASSERT_TRUE(ref_pkcs1_sig.ok() && ref_pss_sig.ok() && ref_pkcs1_ct.ok() &&
              ref_oaep_ct.ok() && ref_raw_ct.ok());

  LoadEngine();
  if (HasFatalFailure()) return;
  std::unique_ptr<Core> core = SoftwareCore();
  ASSERT_NE(core, nullptr);
  const Backend* sw = core->registry().Find("software");
  ASSERT_NE(sw, nullptr);
  auto sign_key = sw->LoadKey(ACCELCRYPT_ALG_RSA_SIGN, km);
  ASSERT_TRUE(sign_key.ok()) << sign_key.status();
  auto crypt_key = sw->LoadKey(ACCELCRYPT_ALG_RSA_CRYPT, km);
  ASSERT_TRUE(crypt_key.ok()) << crypt_key.status();

  PkeyParams p_pkcs1;
  p_pkcs1.padding = ACCELCRYPT_PAD_PKCS1;
  p_pkcs1.md = ACCELCRYPT_ALG_SHA256;
  PkeyParams p_pss = p_pkcs1;
  p_pss.padding = ACCELCRYPT_PAD_PSS;
  PkeyParams p_oaep = p_pkcs1;
  p_oaep.padding = ACCELCRYPT_PAD_OAEP;
  p_oaep.label = label;
  PkeyParams p_raw;
  p_raw.padding = ACCELCRYPT_PAD_NONE;
  PkeyParams p_enc_pkcs1;
  p_enc_pkcs1.padding = ACCELCRYPT_PAD_PKCS1;

  // PKCS#1 v1.5 signatures are deterministic: byte-equal to libcrypto's.
  Bytes sig = Out(256);
  auto n = (*sign_key)->Sign(p_pkcs1, digest, absl::MakeSpan(sig));
  ASSERT_TRUE(n.ok()) << n.status();
  sig.resize(*n);
  EXPECT_EQ(ToHex(sig), ToHex(*ref_pkcs1_sig));
  EXPECT_TRUE((*sign_key)->Verify(p_pkcs1, digest, *ref_pkcs1_sig).ok());
  Bytes bad = *ref_pkcs1_sig;
  bad[bad.size() / 2] ^= 0x01;
  absl::Status st = (*sign_key)->Verify(p_pkcs1, digest, bad);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_EQ(GetStatusDetail(st), StatusDetail::kAuthFailed) << st;

  // PSS: libcrypto's signature verifies here, ours verifies in libcrypto
  // (checked below, once the engine is out of the way).
  EXPECT_TRUE((*sign_key)->Verify(p_pss, digest, *ref_pss_sig).ok());
  Bytes pss_sig = Out(256);
  n = (*sign_key)->Sign(p_pss, digest, absl::MakeSpan(pss_sig));
  ASSERT_TRUE(n.ok()) << n.status();
  pss_sig.resize(*n);
  EXPECT_TRUE((*sign_key)->Verify(p_pss, digest, pss_sig).ok());
  st = (*sign_key)->Verify(p_pss, digest, bad);
  EXPECT_EQ(GetStatusDetail(st), StatusDetail::kAuthFailed) << st;

  // Raw RSA is deterministic too.
  Bytes ct = Out(256);
  n = (*crypt_key)->Encrypt(p_raw, raw_block, absl::MakeSpan(ct));
  ASSERT_TRUE(n.ok()) << n.status();
  ct.resize(*n);
  EXPECT_EQ(ToHex(ct), ToHex(*ref_raw_ct));
  Bytes pt = Out(256);
  n = (*crypt_key)->Decrypt(p_raw, ct, absl::MakeSpan(pt));
  ASSERT_TRUE(n.ok()) << n.status();
  pt.resize(*n);
  EXPECT_EQ(ToHex(pt), ToHex(raw_block));

  // PKCS#1 v1.5 and OAEP (with a label) decrypt libcrypto's ciphertexts.
  pt = Out(256);
  n = (*crypt_key)->Decrypt(p_enc_pkcs1, *ref_pkcs1_ct, absl::MakeSpan(pt));
  ASSERT_TRUE(n.ok()) << n.status();
  pt.resize(*n);
  EXPECT_EQ(pt, msg);
  pt = Out(256);
  n = (*crypt_key)->Decrypt(p_oaep, *ref_oaep_ct, absl::MakeSpan(pt));
  ASSERT_TRUE(n.ok()) << n.status();
  pt.resize(*n);
  EXPECT_EQ(pt, msg);
  PkeyParams p_wrong_label = p_oaep;
  p_wrong_label.label = {'x'};
  pt = Out(256);
  auto wrong =
      (*crypt_key)->Decrypt(p_wrong_label, *ref_oaep_ct, absl::MakeSpan(pt));
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument);

  Bytes our_pkcs1_ct = Out(256), our_oaep_ct = Out(256);
  n = (*crypt_key)->Encrypt(p_enc_pkcs1, msg, absl::MakeSpan(our_pkcs1_ct));
  ASSERT_TRUE(n.ok()) << n.status();
  our_pkcs1_ct.resize(*n);
  n = (*crypt_key)->Encrypt(p_oaep, msg, absl::MakeSpan(our_oaep_ct));
  ASSERT_TRUE(n.ok()) << n.status();
  our_oaep_ct.resize(*n);

  // Without the engine: libcrypto checks what the backend made under it.
  engine_.Unregister();
  EXPECT_TRUE(Libcrypto(Op::kVerify, pkey.get(), pss, digest, pss_sig).ok());
  auto dec = Libcrypto(Op::kDecrypt, pkey.get(), pkcs1, our_pkcs1_ct);
  ASSERT_TRUE(dec.ok()) << dec.status();
  EXPECT_EQ(*dec, msg);
  dec = Libcrypto(Op::kDecrypt, pkey.get(), oaep, our_oaep_ct);
  ASSERT_TRUE(dec.ok()) << dec.status();
  EXPECT_EQ(*dec, msg);
  std::cout << "EVP RSA in a private library context "
            << (hijacked_ ? "was" : "was NOT")
            << " taken over by the engine during this test\n";
}

// Dsa2048 reads the first [mod = L=2048, N=256, SHA-256] case of the CAVP
// SigGen file: domain, public key y, message and (r, s). (The file carries
// no private keys.)
struct DsaCase {
  KeyMaterial km;  // public
  Bytes msg, r, s;
};

absl::StatusOr<DsaCase> Dsa2048() {
  ACCELCRYPT_ASSIGN_OR_RETURN(VectorFile file,
                              ParseVectorFile(VectorDir() + "/dsa/SigGen.rsp"));
  for (const VectorRecord& rec : file.records) {
    auto mod = rec.SectionValue("mod");
    if (!mod.has_value() || mod->find("N=256, SHA-256") == std::string::npos ||
        !rec.Has("Msg")) {
      continue;
    }
    DsaCase c;
    c.km.type = KeyMaterial::Type::kDsa;
    c.km.dsa_p = FromHex(rec.SectionValue("P").value_or(""));
    c.km.dsa_q = FromHex(rec.SectionValue("Q").value_or(""));
    c.km.dsa_g = FromHex(rec.SectionValue("G").value_or(""));
    ACCELCRYPT_ASSIGN_OR_RETURN(c.km.dsa_y, rec.Bytes("Y"));
    ACCELCRYPT_ASSIGN_OR_RETURN(c.msg, rec.Bytes("Msg"));
    ACCELCRYPT_ASSIGN_OR_RETURN(c.r, rec.Bytes("R"));
    ACCELCRYPT_ASSIGN_OR_RETURN(c.s, rec.Bytes("S"));
    if (c.km.dsa_p.empty() || c.km.dsa_q.empty() || c.km.dsa_g.empty()) {
      return absl::NotFoundError("SigGen.rsp: P/Q/G missing");
    }
    return c;
  }
  return absl::NotFoundError("SigGen.rsp: no L=2048, N=256, SHA-256 case");
}

Bytes DerSignature(const Bytes& r, const Bytes& s) {
  DSA_SIG* sig = DSA_SIG_new();
  DSA_SIG_set0(sig, BN_bin2bn(r.data(), static_cast<int>(r.size()), nullptr),
               BN_bin2bn(s.data(), static_cast<int>(s.size()), nullptr));
  unsigned char* der = nullptr;
  int len = i2d_DSA_SIG(sig, &der);
  Bytes out(der, der + (len > 0 ? len : 0));
  OPENSSL_free(der);
  DSA_SIG_free(sig);
  return out;
}

// DsaKeyPair generates a key pair in the domain of `domain` with libcrypto
// (default library context) and returns it with its material.
PkeyPtr DsaKeyPair(const KeyMaterial& domain, KeyMaterial* km) {
  auto bn = [](const Bytes& b) {
    return BN_bin2bn(b.data(), static_cast<int>(b.size()), nullptr);
  };
  BIGNUM *p = bn(domain.dsa_p), *q = bn(domain.dsa_q), *g = bn(domain.dsa_g);
  OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
  OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_FFC_P, p);
  OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_FFC_Q, q);
  OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_FFC_G, g);
  OSSL_PARAM* params = OSSL_PARAM_BLD_to_param(bld);
  CtxPtr ctx(EVP_PKEY_CTX_new_from_name(nullptr, "DSA", nullptr));
  EVP_PKEY* raw_domain = nullptr;
  if (ctx == nullptr || EVP_PKEY_fromdata_init(ctx.get()) != 1 ||
      EVP_PKEY_fromdata(ctx.get(), &raw_domain, EVP_PKEY_KEY_PARAMETERS,
                        params) != 1) {
    raw_domain = nullptr;
  }
  OSSL_PARAM_free(params);
  OSSL_PARAM_BLD_free(bld);
  for (BIGNUM* b : {p, q, g}) BN_free(b);
  PkeyPtr dom(raw_domain);
  if (dom == nullptr) return nullptr;
  CtxPtr gen(EVP_PKEY_CTX_new_from_pkey(nullptr, dom.get(), nullptr));
  EVP_PKEY* raw = nullptr;
  if (gen == nullptr || EVP_PKEY_keygen_init(gen.get()) != 1 ||
      EVP_PKEY_generate(gen.get(), &raw) != 1) {
    return nullptr;
  }
  PkeyPtr pkey(raw);
  *km = domain;
  km->dsa_y = BnParam(pkey.get(), OSSL_PKEY_PARAM_PUB_KEY);
  km->dsa_x = BnParam(pkey.get(), OSSL_PKEY_PARAM_PRIV_KEY);
  return pkey;
}

TEST_F(SoftwareUnderEngineTest, DsaMatchesLibcrypto) {
  auto dsa = Dsa2048();
  ASSERT_TRUE(dsa.ok()) << dsa.status();
  const Bytes digest = Sha256(dsa->msg);
  const Bytes cavp_sig = DerSignature(dsa->r, dsa->s);
  // Before the engine: a key pair in the CAVP domain and libcrypto's
  // signature with it.
  KeyMaterial pair;
  PkeyPtr pkey = DsaKeyPair(dsa->km, &pair);
  ASSERT_NE(pkey, nullptr) << LibcryptoErrors();
  EvpParams evp;
  auto ref_sig = Libcrypto(Op::kSign, pkey.get(), evp, digest);
  ASSERT_TRUE(ref_sig.ok()) << ref_sig.status();

  LoadEngine();
  if (HasFatalFailure()) return;
  std::unique_ptr<Core> core = SoftwareCore();
  ASSERT_NE(core, nullptr);
  const Backend* sw = core->registry().Find("software");
  ASSERT_NE(sw, nullptr);
  PkeyParams params;
  params.padding = ACCELCRYPT_PAD_NONE;
  params.md = ACCELCRYPT_ALG_SHA256;

  // The CAVP known answer, with the file's public key.
  auto cavp_key = sw->LoadKey(ACCELCRYPT_ALG_DSA_SIGN, dsa->km);
  ASSERT_TRUE(cavp_key.ok()) << cavp_key.status();
  EXPECT_TRUE((*cavp_key)->Verify(params, digest, cavp_sig).ok());
  Bytes bad = cavp_sig;
  bad[bad.size() - 1] ^= 0x01;
  absl::Status st = (*cavp_key)->Verify(params, digest, bad);
  EXPECT_EQ(GetStatusDetail(st), StatusDetail::kAuthFailed) << st;

  auto key = sw->LoadKey(ACCELCRYPT_ALG_DSA_SIGN, pair);
  ASSERT_TRUE(key.ok()) << key.status();
  EXPECT_TRUE((*key)->Verify(params, digest, *ref_sig).ok());

  Bytes sig = Out(128);
  auto n = (*key)->Sign(params, digest, absl::MakeSpan(sig));
  ASSERT_TRUE(n.ok()) << n.status();
  sig.resize(*n);
  EXPECT_TRUE((*key)->Verify(params, digest, sig).ok());

  engine_.Unregister();
  EXPECT_TRUE(Libcrypto(Op::kVerify, pkey.get(), evp, digest, sig).ok())
      << "libcrypto rejects the backend's DSA signature";
}

#ifdef ACCELCRYPT_TEST_P11_MECH
// BnOf reads a big-endian attribute value.
BIGNUM* BnOf(const p11::AttributeMap& m, CK_ATTRIBUTE_TYPE type) {
  Bytes v = m.GetBytes(type);
  return BN_bin2bn(v.data(), static_cast<int>(v.size()), nullptr);
}

// The PKCS#11 module's key pair generation (pkcs11/mech, libcrypto in its
// own library context) under the engine: RSA and DSA pairs come out whole
// and consistent (n = p*q, d*e = 1 mod lcm; y = g^x mod p) and an RSA pair
// signs through the software backend with a signature libcrypto accepts.
TEST_F(SoftwareUnderEngineTest, ModuleKeyGenerationUnderEngine) {
  auto dsa = Dsa2048();
  ASSERT_TRUE(dsa.ok()) << dsa.status();
  LoadEngine();
  if (HasFatalFailure()) return;
  std::unique_ptr<Core> core = SoftwareCore();
  ASSERT_NE(core, nullptr);
  auto mech = p11::Mechanisms::Create(core.get());
  ASSERT_TRUE(mech.ok()) << mech.status();

  CK_MECHANISM rsa_gen{CKM_RSA_PKCS_KEY_PAIR_GEN, nullptr, 0};
  p11::AttributeMap pub_tmpl, none;
  pub_tmpl.SetUlong(CKA_MODULUS_BITS, 2048);
  auto rsa = (*mech)->GenerateKeyPair(rsa_gen, pub_tmpl, none);
  ASSERT_TRUE(rsa.ok()) << rsa.status();
  const p11::AttributeMap& pub = rsa->first;
  const p11::AttributeMap& priv = rsa->second;
  BN_CTX* ctx = BN_CTX_new();
  BIGNUM *n = BnOf(pub, CKA_MODULUS), *e = BnOf(pub, CKA_PUBLIC_EXPONENT),
         *d = BnOf(priv, CKA_PRIVATE_EXPONENT), *p = BnOf(priv, CKA_PRIME_1),
         *q = BnOf(priv, CKA_PRIME_2), *t = BN_new();
  EXPECT_EQ(BN_num_bits(n), 2048);
  EXPECT_TRUE(BN_is_word(e, 65537));
  BN_mul(t, p, q, ctx);
  EXPECT_EQ(BN_cmp(t, n), 0) << "n != p*q";
  // m^(e*d) = m mod n for a test value m.
  BIGNUM *m = BN_new(), *c = BN_new();
  BN_set_word(m, 0x1234567);
  BN_mod_exp(c, m, e, n, ctx);
  BN_mod_exp(t, c, d, n, ctx);
  EXPECT_EQ(BN_cmp(t, m), 0) << "d does not invert e";
  for (BIGNUM* b : {n, e, d, p, q, t, m, c}) BN_clear_free(b);

  KeyMaterial km;
  km.n = pub.GetBytes(CKA_MODULUS);
  km.e = pub.GetBytes(CKA_PUBLIC_EXPONENT);
  km.d = priv.GetBytes(CKA_PRIVATE_EXPONENT);
  km.p = priv.GetBytes(CKA_PRIME_1);
  km.q = priv.GetBytes(CKA_PRIME_2);
  km.dmp1 = priv.GetBytes(CKA_EXPONENT_1);
  km.dmq1 = priv.GetBytes(CKA_EXPONENT_2);
  km.iqmp = priv.GetBytes(CKA_COEFFICIENT);
  const Backend* sw = core->registry().Find("software");
  ASSERT_NE(sw, nullptr);
  auto key = sw->LoadKey(ACCELCRYPT_ALG_RSA_SIGN, km);
  ASSERT_TRUE(key.ok()) << key.status();
  PkeyParams params;
  params.md = ACCELCRYPT_ALG_SHA256;
  const Bytes digest = Sha256({'k', 'e', 'y', 'g', 'e', 'n'});
  Bytes sig(256);
  auto len = (*key)->Sign(params, digest, absl::MakeSpan(sig));
  ASSERT_TRUE(len.ok()) << len.status();
  sig.resize(*len);

  CK_MECHANISM dsa_gen{CKM_DSA_KEY_PAIR_GEN, nullptr, 0};
  p11::AttributeMap dsa_tmpl;
  dsa_tmpl.Set(CKA_PRIME, dsa->km.dsa_p);
  dsa_tmpl.Set(CKA_SUBPRIME, dsa->km.dsa_q);
  dsa_tmpl.Set(CKA_BASE, dsa->km.dsa_g);
  auto dsa_pair = (*mech)->GenerateKeyPair(dsa_gen, dsa_tmpl, none);
  ASSERT_TRUE(dsa_pair.ok()) << dsa_pair.status();
  BIGNUM *dp = BnOf(dsa_pair->first, CKA_PRIME),
         *dg = BnOf(dsa_pair->first, CKA_BASE),
         *y = BnOf(dsa_pair->first, CKA_VALUE),
         *x = BnOf(dsa_pair->second, CKA_VALUE), *gx = BN_new();
  BN_mod_exp(gx, dg, x, dp, ctx);
  EXPECT_EQ(BN_cmp(gx, y), 0) << "y != g^x mod p";
  EXPECT_FALSE(BN_is_zero(x));
  for (BIGNUM* b : {dp, dg, y, x, gx}) BN_clear_free(b);
  BN_CTX_free(ctx);

  // libcrypto, without the engine, accepts the RSA signature.
  engine_.Unregister();
  OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
  BIGNUM* bn_n = BN_bin2bn(km.n.data(), static_cast<int>(km.n.size()), nullptr);
  BIGNUM* bn_e = BN_bin2bn(km.e.data(), static_cast<int>(km.e.size()), nullptr);
  OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn_n);
  OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bn_e);
  OSSL_PARAM* ossl_params = OSSL_PARAM_BLD_to_param(bld);
  CtxPtr from(EVP_PKEY_CTX_new_from_name(nullptr, "RSA", nullptr));
  EVP_PKEY* raw = nullptr;
  ASSERT_TRUE(from != nullptr && EVP_PKEY_fromdata_init(from.get()) == 1 &&
              EVP_PKEY_fromdata(from.get(), &raw, EVP_PKEY_PUBLIC_KEY,
                                ossl_params) == 1)
      << LibcryptoErrors();
  PkeyPtr pub_key(raw);
  OSSL_PARAM_free(ossl_params);
  OSSL_PARAM_BLD_free(bld);
  BN_free(bn_n);
  BN_free(bn_e);
  EvpParams evp;
  EXPECT_TRUE(Libcrypto(Op::kVerify, pub_key.get(), evp, digest, sig).ok());
}
#endif  // ACCELCRYPT_TEST_P11_MECH

}  // namespace
}  // namespace accelcrypt
