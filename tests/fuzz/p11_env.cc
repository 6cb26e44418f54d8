// SPDX-License-Identifier: Apache-2.0
#include "tests/fuzz/p11_env.h"

#include <dlfcn.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/dsa.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace accelcrypt::fuzz {
namespace {

[[noreturn]] void Die(const char* what, CK_RV rv = 0) {
  std::fprintf(stderr, "p11 fuzz harness: %s (rv 0x%lx)\n", what,
               static_cast<unsigned long>(rv));
  std::abort();
}

CK_UTF8CHAR_PTR Pin(const char* pin) {
  return reinterpret_cast<CK_UTF8CHAR_PTR>(const_cast<char*>(pin));
}

std::vector<uint8_t> Bn(const EVP_PKEY* key, const char* name) {
  BIGNUM* bn = nullptr;
  if (EVP_PKEY_get_bn_param(key, name, &bn) != 1) Die(name);
  std::vector<uint8_t> out(BN_num_bytes(bn));
  BN_bn2bin(bn, out.data());
  BN_clear_free(bn);
  return out;
}

EVP_PKEY* Generate(const char* alg, bool dsa) {
  EVP_PKEY* key = nullptr;
  if (!dsa) {
    EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_name(nullptr, alg, nullptr);
    if (ctx == nullptr || EVP_PKEY_keygen_init(ctx) <= 0 ||
        EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, 1024) <= 0 ||
        EVP_PKEY_generate(ctx, &key) <= 0) {
      Die("RSA key generation");
    }
    EVP_PKEY_CTX_free(ctx);
    return key;
  }
  EVP_PKEY* dom = nullptr;
  EVP_PKEY_CTX* pctx = EVP_PKEY_CTX_new_from_name(nullptr, "DSA", nullptr);
  if (pctx == nullptr || EVP_PKEY_paramgen_init(pctx) <= 0 ||
      EVP_PKEY_CTX_set_dsa_paramgen_bits(pctx, 1024) <= 0 ||
      EVP_PKEY_CTX_set_dsa_paramgen_q_bits(pctx, 160) <= 0 ||
      EVP_PKEY_paramgen(pctx, &dom) <= 0) {
    Die("DSA parameter generation");
  }
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_pkey(nullptr, dom, nullptr);
  if (ctx == nullptr || EVP_PKEY_keygen_init(ctx) <= 0 ||
      EVP_PKEY_generate(ctx, &key) <= 0) {
    Die("DSA key generation");
  }
  EVP_PKEY_CTX_free(ctx);
  EVP_PKEY_CTX_free(pctx);
  EVP_PKEY_free(dom);
  return key;
}

}  // namespace

P11Env& P11Env::Get() {
  static P11Env* env = [] {
    auto* e = new P11Env();
    e->Load();
    return e;
  }();
  return *env;
}

void P11Env::Load() {
  const char* module = std::getenv("ACCELCRYPT_P11_MODULE");
  if (module == nullptr) module = ACCELCRYPT_FUZZ_P11_MODULE;
  void* dl = dlopen(module, RTLD_NOW | RTLD_LOCAL);
  if (dl == nullptr) Die(dlerror());
  auto get =
      reinterpret_cast<CK_C_GetFunctionList>(dlsym(dl, "C_GetFunctionList"));
  if (get == nullptr || get(&f_) != CKR_OK) Die("C_GetFunctionList");

  const char* base =
      std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
  std::string tmpl = std::string(base) + "/accelcrypt-p11fuzz-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) Die("mkdtemp");
  dir_ = tmpl;
  // The directory goes when the process exits normally; a crashed run
  // leaves it for inspection.
  std::atexit([] {
    std::error_code ec;
    std::filesystem::remove_all(P11Env::Get().dir_, ec);
  });
  const std::string conf = dir_ + "/module.cnf";
  std::ofstream out(conf);
  out << "[accelcrypt]\nbackend_dir = " << ACCELCRYPT_FUZZ_BACKEND_DIR
      << "\n[accelcrypt_pkcs11]\ntoken_dir = " << dir_
      << "/tokens\nslots = 1\npbkdf2_iterations = 1000\n"
      << "max_pin_failures = 3\n";
  out.close();
  setenv("ACCELCRYPT_PKCS11_CONF", conf.c_str(), 1);
  // A stats directory, PIN state and logs stay out of the user's home.
  setenv("ACCELCRYPT_STATS_DIR", "none", 1);

  EVP_PKEY* rsa = Generate("RSA", false);
  keys_.n = Bn(rsa, OSSL_PKEY_PARAM_RSA_N);
  keys_.e = Bn(rsa, OSSL_PKEY_PARAM_RSA_E);
  keys_.d = Bn(rsa, OSSL_PKEY_PARAM_RSA_D);
  keys_.p = Bn(rsa, OSSL_PKEY_PARAM_RSA_FACTOR1);
  keys_.q = Bn(rsa, OSSL_PKEY_PARAM_RSA_FACTOR2);
  keys_.dp = Bn(rsa, OSSL_PKEY_PARAM_RSA_EXPONENT1);
  keys_.dq = Bn(rsa, OSSL_PKEY_PARAM_RSA_EXPONENT2);
  keys_.qinv = Bn(rsa, OSSL_PKEY_PARAM_RSA_COEFFICIENT1);
  EVP_PKEY_free(rsa);
  EVP_PKEY* dsa = Generate("DSA", true);
  keys_.dsa_p = Bn(dsa, OSSL_PKEY_PARAM_FFC_P);
  keys_.dsa_q = Bn(dsa, OSSL_PKEY_PARAM_FFC_Q);
  keys_.dsa_g = Bn(dsa, OSSL_PKEY_PARAM_FFC_G);
  keys_.dsa_y = Bn(dsa, OSSL_PKEY_PARAM_PUB_KEY);
  keys_.dsa_x = Bn(dsa, OSSL_PKEY_PARAM_PRIV_KEY);
  EVP_PKEY_free(dsa);
  Reset();
}

void P11Env::Reset() {
  CK_RV rv = f_->C_Initialize(nullptr);
  if (rv != CKR_OK && rv != CKR_CRYPTOKI_ALREADY_INITIALIZED) {
    Die("C_Initialize", rv);
  }
  f_->C_CloseAllSessions(0);
  CK_UTF8CHAR label[32];
  std::memset(label, ' ', sizeof(label));
  // PKCS#11 labels are blank-padded, not NUL-terminated.
  // NOLINTNEXTLINE(bugprone-not-null-terminated-result)
  std::memcpy(label, "fuzz", 4);
  rv = f_->C_InitToken(0, Pin(kSoPin), std::strlen(kSoPin), label);
  if (rv != CKR_OK) Die("C_InitToken", rv);
  CK_SESSION_HANDLE s = CK_INVALID_HANDLE;
  rv = f_->C_OpenSession(0, CKF_SERIAL_SESSION | CKF_RW_SESSION, nullptr,
                         nullptr, &s);
  if (rv != CKR_OK) Die("C_OpenSession", rv);
  rv = f_->C_Login(s, CKU_SO, Pin(kSoPin), std::strlen(kSoPin));
  if (rv != CKR_OK) Die("C_Login(SO)", rv);
  rv = f_->C_InitPIN(s, Pin(kUserPin), std::strlen(kUserPin));
  if (rv != CKR_OK) Die("C_InitPIN", rv);
  f_->C_CloseSession(s);
}

CK_SESSION_HANDLE P11Env::Session(bool login) {
  CK_SESSION_HANDLE s = CK_INVALID_HANDLE;
  if (f_->C_OpenSession(0, CKF_SERIAL_SESSION | CKF_RW_SESSION, nullptr,
                        nullptr, &s) != CKR_OK) {
    return CK_INVALID_HANDLE;
  }
  if (login) {
    CK_RV rv = f_->C_Login(s, CKU_USER, Pin(kUserPin), std::strlen(kUserPin));
    if (rv != CKR_OK && rv != CKR_USER_ALREADY_LOGGED_IN) {
      return CK_INVALID_HANDLE;
    }
  }
  return s;
}

namespace {

CK_ATTRIBUTE A(CK_ATTRIBUTE_TYPE t, const void* v, size_t n) {
  return CK_ATTRIBUTE{t, const_cast<void*>(v), static_cast<CK_ULONG>(n)};
}
CK_ATTRIBUTE A(CK_ATTRIBUTE_TYPE t, const std::vector<uint8_t>& v) {
  return A(t, v.data(), v.size());
}

CK_OBJECT_HANDLE Create(CK_FUNCTION_LIST* f, CK_SESSION_HANDLE s,
                        std::vector<CK_ATTRIBUTE> t) {
  CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
  if (f->C_CreateObject(s, t.data(), t.size(), &h) != CKR_OK) {
    return CK_INVALID_HANDLE;
  }
  return h;
}

const CK_BBOOL kTrue = CK_TRUE;
const CK_BBOOL kFalse = CK_FALSE;

}  // namespace

CK_OBJECT_HANDLE P11Env::CreateRsaPrivate(CK_SESSION_HANDLE s) {
  static const CK_OBJECT_CLASS cls = CKO_PRIVATE_KEY;
  static const CK_KEY_TYPE kt = CKK_RSA;
  const KeyComponents& k = keys_;
  return Create(
      f_, s,
      {A(CKA_CLASS, &cls, sizeof(cls)), A(CKA_KEY_TYPE, &kt, sizeof(kt)),
       A(CKA_TOKEN, &kFalse, 1), A(CKA_PRIVATE, &kTrue, 1),
       A(CKA_SIGN, &kTrue, 1), A(CKA_DECRYPT, &kTrue, 1), A(CKA_MODULUS, k.n),
       A(CKA_PUBLIC_EXPONENT, k.e), A(CKA_PRIVATE_EXPONENT, k.d),
       A(CKA_PRIME_1, k.p), A(CKA_PRIME_2, k.q), A(CKA_EXPONENT_1, k.dp),
       A(CKA_EXPONENT_2, k.dq), A(CKA_COEFFICIENT, k.qinv)});
}

CK_OBJECT_HANDLE P11Env::CreateRsaPublic(CK_SESSION_HANDLE s) {
  static const CK_OBJECT_CLASS cls = CKO_PUBLIC_KEY;
  static const CK_KEY_TYPE kt = CKK_RSA;
  return Create(f_, s,
                {A(CKA_CLASS, &cls, sizeof(cls)),
                 A(CKA_KEY_TYPE, &kt, sizeof(kt)), A(CKA_TOKEN, &kFalse, 1),
                 A(CKA_VERIFY, &kTrue, 1), A(CKA_ENCRYPT, &kTrue, 1),
                 A(CKA_MODULUS, keys_.n), A(CKA_PUBLIC_EXPONENT, keys_.e)});
}

CK_OBJECT_HANDLE P11Env::CreateDsaPrivate(CK_SESSION_HANDLE s) {
  static const CK_OBJECT_CLASS cls = CKO_PRIVATE_KEY;
  static const CK_KEY_TYPE kt = CKK_DSA;
  const KeyComponents& k = keys_;
  return Create(
      f_, s,
      {A(CKA_CLASS, &cls, sizeof(cls)), A(CKA_KEY_TYPE, &kt, sizeof(kt)),
       A(CKA_TOKEN, &kFalse, 1), A(CKA_PRIVATE, &kTrue, 1),
       A(CKA_SIGN, &kTrue, 1), A(CKA_PRIME, k.dsa_p), A(CKA_SUBPRIME, k.dsa_q),
       A(CKA_BASE, k.dsa_g), A(CKA_VALUE, k.dsa_x)});
}

CK_OBJECT_HANDLE P11Env::CreateDsaPublic(CK_SESSION_HANDLE s) {
  static const CK_OBJECT_CLASS cls = CKO_PUBLIC_KEY;
  static const CK_KEY_TYPE kt = CKK_DSA;
  const KeyComponents& k = keys_;
  return Create(
      f_, s,
      {A(CKA_CLASS, &cls, sizeof(cls)), A(CKA_KEY_TYPE, &kt, sizeof(kt)),
       A(CKA_TOKEN, &kFalse, 1), A(CKA_VERIFY, &kTrue, 1),
       A(CKA_PRIME, k.dsa_p), A(CKA_SUBPRIME, k.dsa_q), A(CKA_BASE, k.dsa_g),
       A(CKA_VALUE, k.dsa_y)});
}

CK_OBJECT_HANDLE P11Env::CreateSecret(CK_SESSION_HANDLE s, CK_KEY_TYPE type,
                                      size_t len) {
  static const CK_OBJECT_CLASS cls = CKO_SECRET_KEY;
  std::vector<uint8_t> value(len, 0x5a);
  return Create(
      f_, s,
      {A(CKA_CLASS, &cls, sizeof(cls)), A(CKA_KEY_TYPE, &type, sizeof(type)),
       A(CKA_TOKEN, &kFalse, 1), A(CKA_ENCRYPT, &kTrue, 1),
       A(CKA_DECRYPT, &kTrue, 1), A(CKA_SIGN, &kTrue, 1),
       A(CKA_VERIFY, &kTrue, 1), A(CKA_VALUE, value)});
}

}  // namespace accelcrypt::fuzz
