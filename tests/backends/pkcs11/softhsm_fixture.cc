// SPDX-License-Identifier: Apache-2.0
#include "tests/backends/pkcs11/softhsm_fixture.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "absl/strings/str_format.h"
#include "core/vector_file.h"
#include "tests/support/test_env.h"

namespace accelcrypt::testing {
namespace {

std::vector<uint8_t> Param(EVP_PKEY* pkey, const char* name) {
  BIGNUM* bn = nullptr;
  if (EVP_PKEY_get_bn_param(pkey, name, &bn) != 1) return {};
  std::vector<uint8_t> out(BN_num_bytes(bn));
  BN_bn2bin(bn, out.data());
  BN_clear_free(bn);
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SoftHsm>> SoftHsm::Create() {
  // Set by scripts/cross_s390x.sh: under qemu-user the host's SoftHSMv2
  // (another architecture) is visible at the same paths but not loadable.
  if (const char* off = getenv("ACCELCRYPT_TEST_NO_SOFTHSM");
      off != nullptr && *off != '\0' && std::string_view(off) != "0") {
    return absl::UnavailableError(
        "SoftHSMv2 not used (ACCELCRYPT_TEST_NO_SOFTHSM is set)");
  }
  if (access(kModule, R_OK) != 0 ||
      access("/usr/bin/softhsm2-util", X_OK) != 0) {
    return absl::UnavailableError(
        "SoftHSMv2 is not installed (Debian package softhsm2)");
  }
  std::unique_ptr<SoftHsm> hsm(new SoftHsm());
  char tmpl[] = "/tmp/accelcrypt-softhsm-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return absl::InternalError("mkdtemp failed");
  hsm->dir_ = tmpl;
  std::string tokens = hsm->dir_ + "/tokens";
  mkdir(tokens.c_str(), 0700);
  std::string conf = hsm->dir_ + "/softhsm2.conf";
  {
    std::ofstream out(conf);
    out << "directories.tokendir = " << tokens << "\n"
        << "objectstore.backend = file\n"
        << "log.level = ERROR\n"
        << "slots.removable = false\n"
        << "library.reset_on_fork = true\n";
  }
  setenv("SOFTHSM2_CONF", conf.c_str(), 1);
  std::string cmd = absl::StrFormat(
      "softhsm2-util --init-token --free --label %s --so-pin 0000-so "
      "--pin %s >%s/init.log 2>&1",
      kLabel, kPin, hsm->dir_);
  if (std::system(cmd.c_str()) != 0) {
    return absl::UnavailableError(absl::StrFormat(
        "softhsm2-util --init-token failed (see %s/init.log)", hsm->dir_));
  }
  hsm->pin_file_ = hsm->dir_ + "/pin";
  std::ofstream(hsm->pin_file_) << kPin << "\n";
  chmod(hsm->pin_file_.c_str(), 0600);
  return hsm;
}

SoftHsm::~SoftHsm() {
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

std::map<std::string, std::string> SoftHsm::Overrides() const {
  return {{"backends", "pkcs11, software"},
          // Started at load, as `accelcrypt list` does: the suites look at
          // the backend before its first operation (pkcs11_client_late_test
          // covers the deferred start of the provider and the engine).
          {"deferred_start", "load"},
          // The suites check what the token serves, verification included:
          // the configured order, not policy auto's CPU-side verify.
          {"policy", "priority"},
          {"pkcs11.module", kModule},
          {"pkcs11.token_label", kLabel},
          {"pkcs11.pin_file", pin_file_},
          // Refused-PIN markers stay in the test's directory.
          {"pkcs11.pin_state_dir", dir_ + "/state"},
          // SoftHSMv2 lists CKM_DSA up to 1024 bits but signs larger keys;
          // the registration self-test proves 2048 before it is offered.
          {"pkcs11.dsa_max_key_bits", "3072"}};
}

absl::Status SoftHsm::Import(const KeyMaterial& key, const std::string& label,
                             const std::string& id_hex) const {
  const bool rsa = key.type == KeyMaterial::Type::kRsa;
  OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
  std::vector<BIGNUM*> bns;
  auto add = [&](const char* name, const std::vector<uint8_t>& v) {
    if (v.empty()) return;
    BIGNUM* bn = BN_bin2bn(v.data(), static_cast<int>(v.size()), nullptr);
    bns.push_back(bn);
    OSSL_PARAM_BLD_push_BN(bld, name, bn);
  };
  if (rsa) {
    add(OSSL_PKEY_PARAM_RSA_N, key.n);
    add(OSSL_PKEY_PARAM_RSA_E, key.e);
    add(OSSL_PKEY_PARAM_RSA_D, key.d);
    add(OSSL_PKEY_PARAM_RSA_FACTOR1, key.p);
    add(OSSL_PKEY_PARAM_RSA_FACTOR2, key.q);
    add(OSSL_PKEY_PARAM_RSA_EXPONENT1, key.dmp1);
    add(OSSL_PKEY_PARAM_RSA_EXPONENT2, key.dmq1);
    add(OSSL_PKEY_PARAM_RSA_COEFFICIENT1, key.iqmp);
  } else {
    add(OSSL_PKEY_PARAM_FFC_P, key.dsa_p);
    add(OSSL_PKEY_PARAM_FFC_Q, key.dsa_q);
    add(OSSL_PKEY_PARAM_FFC_G, key.dsa_g);
    add(OSSL_PKEY_PARAM_PUB_KEY, key.dsa_y);
    add(OSSL_PKEY_PARAM_PRIV_KEY, key.dsa_x);
  }
  OSSL_PARAM* params = OSSL_PARAM_BLD_to_param(bld);
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_name(nullptr, rsa ? "RSA" : "DSA",
                                                 "provider=default");
  EVP_PKEY* pkey = nullptr;
  const bool made =
      ctx != nullptr && params != nullptr && EVP_PKEY_fromdata_init(ctx) == 1 &&
      EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_KEYPAIR, params) == 1;
  EVP_PKEY_CTX_free(ctx);
  OSSL_PARAM_free(params);
  OSSL_PARAM_BLD_free(bld);
  for (BIGNUM* bn : bns) BN_clear_free(bn);
  if (!made) return absl::InternalError("Import: libcrypto refused the key");
  const std::string pem = absl::StrFormat("%s/import-%s.pem", dir_, id_hex);
  FILE* f = std::fopen(pem.c_str(), "w");
  const bool written =
      f != nullptr &&
      PEM_write_PrivateKey(f, pkey, nullptr, nullptr, 0, nullptr, nullptr) == 1;
  if (f != nullptr) std::fclose(f);
  EVP_PKEY_free(pkey);
  if (!written) return absl::InternalError("Import: cannot write " + pem);
  const std::string cmd = absl::StrFormat(
      "softhsm2-util --import '%s' --token %s --label '%s' --id %s --pin %s "
      ">>'%s/import.log' 2>&1",
      pem, kLabel, label, id_hex, kPin, dir_);
  const int rc = std::system(cmd.c_str());
  std::remove(pem.c_str());
  if (rc != 0) {
    return absl::InternalError(absl::StrFormat(
        "softhsm2-util --import failed (see %s/import.log)", dir_));
  }
  return absl::OkStatus();
}

KeyMaterial RsaKey(int bits) {
  EVP_PKEY* pkey =
      EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<size_t>(bits));
  KeyMaterial k;
  if (pkey == nullptr) return k;
  k.n = Param(pkey, OSSL_PKEY_PARAM_RSA_N);
  k.e = Param(pkey, OSSL_PKEY_PARAM_RSA_E);
  k.d = Param(pkey, OSSL_PKEY_PARAM_RSA_D);
  k.p = Param(pkey, OSSL_PKEY_PARAM_RSA_FACTOR1);
  k.q = Param(pkey, OSSL_PKEY_PARAM_RSA_FACTOR2);
  k.dmp1 = Param(pkey, OSSL_PKEY_PARAM_RSA_EXPONENT1);
  k.dmq1 = Param(pkey, OSSL_PKEY_PARAM_RSA_EXPONENT2);
  k.iqmp = Param(pkey, OSSL_PKEY_PARAM_RSA_COEFFICIENT1);
  EVP_PKEY_free(pkey);
  return k;
}

KeyMaterial DsaKeyFromVectors() {
  KeyMaterial k;
  k.type = KeyMaterial::Type::kDsa;
  auto file = ParseVectorFile(VectorDir() + "/dsa/SigVer.rsp");
  if (!file.ok()) return k;
  for (const VectorRecord& r : file->records) {
    if (r.SectionValue("mod") != "L=2048, N=256, SHA-256") continue;
    if (r.Get("Result") != "P") continue;
    auto hex = [](const std::string& s) { return FromHex(s); };
    k.dsa_p = hex(r.SectionValue("P").value_or(r.Get("P")));
    k.dsa_q = hex(r.SectionValue("Q").value_or(r.Get("Q")));
    k.dsa_g = hex(r.SectionValue("G").value_or(r.Get("G")));
    k.dsa_x = hex(r.Get("X"));
    k.dsa_y = hex(r.Get("Y"));
    break;
  }
  return k;
}

KeyMaterial PublicOnly(const KeyMaterial& key) {
  KeyMaterial pub;
  pub.type = key.type;
  pub.n = key.n;
  pub.e = key.e;
  pub.dsa_p = key.dsa_p;
  pub.dsa_q = key.dsa_q;
  pub.dsa_g = key.dsa_g;
  pub.dsa_y = key.dsa_y;
  return pub;
}

std::vector<uint8_t> Sha256(const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out(32);
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), out.data(), &len, EVP_sha256(), nullptr);
  return out;
}

}  // namespace accelcrypt::testing
