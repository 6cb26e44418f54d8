// SPDX-License-Identifier: Apache-2.0
#include "core/pkey.h"

#include <openssl/crypto.h>

namespace accelcrypt {
namespace {

void Wipe(std::vector<uint8_t>* v) {
  if (!v->empty()) OPENSSL_cleanse(v->data(), v->size());
}

accelcrypt_bn Bn(const std::vector<uint8_t>& v) {
  return accelcrypt_bn{v.empty() ? nullptr : v.data(), v.size()};
}

// BitLength counts the bits of a big-endian integer, ignoring leading zero
// bytes (OpenSSL exports may pad).
size_t BitLength(const std::vector<uint8_t>& v) {
  size_t i = 0;
  while (i < v.size() && v[i] == 0) ++i;
  if (i == v.size()) return 0;
  size_t bits = (v.size() - i - 1) * 8;
  for (uint8_t top = v[i]; top != 0; top >>= 1) ++bits;
  return bits;
}

}  // namespace

KeyMaterial::~KeyMaterial() {
  Wipe(&d);
  Wipe(&p);
  Wipe(&q);
  Wipe(&dmp1);
  Wipe(&dmq1);
  Wipe(&iqmp);
  Wipe(&dsa_x);
  // A URI may carry a PIN (pin-value).
  if (!uri.empty()) OPENSSL_cleanse(uri.data(), uri.size());
}

bool KeyMaterial::has_private() const {
  // A token reference stands for a private key that stays on the token.
  if (!uri.empty()) return true;
  return type == Type::kRsa ? !d.empty() : !dsa_x.empty();
}

bool KeyMaterial::has_private_material() const {
  return type == Type::kRsa ? !d.empty() : !dsa_x.empty();
}

bool KeyMaterial::has_public() const {
  return type == Type::kRsa ? !n.empty() && !e.empty()
                            : !dsa_p.empty() && !dsa_q.empty() &&
                                  !dsa_g.empty() && !dsa_y.empty();
}

size_t KeyMaterial::bits() const {
  return BitLength(type == Type::kRsa ? n : dsa_p);
}

accelcrypt_key_desc KeyMaterial::Describe(accelcrypt_alg alg) const {
  accelcrypt_key_desc desc{};
  desc.struct_size = sizeof(desc);
  desc.alg = alg;
  desc.n = Bn(n);
  desc.e = Bn(e);
  desc.d = Bn(d);
  desc.p = Bn(p);
  desc.q = Bn(q);
  desc.dmp1 = Bn(dmp1);
  desc.dmq1 = Bn(dmq1);
  desc.iqmp = Bn(iqmp);
  desc.dsa_p = Bn(dsa_p);
  desc.dsa_q = Bn(dsa_q);
  desc.dsa_g = Bn(dsa_g);
  desc.dsa_y = Bn(dsa_y);
  desc.dsa_x = Bn(dsa_x);
  desc.uri = uri.empty() ? nullptr : uri.c_str();
  desc.public_out = uri.empty() ? nullptr : public_out;
  return desc;
}

}  // namespace accelcrypt
