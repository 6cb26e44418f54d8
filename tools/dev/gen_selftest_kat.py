#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Generates core/selftest_kat_data.inc from the NIST vector files.

The registration-time known-answer tests need their answers inside the
library (the vector files are not installed everywhere a provider loads), so
one record per algorithm is copied out of tests/vectors by this script.
Usage: tools/dev/gen_selftest_kat.py > core/selftest_kat_data.inc
       tools/dev/gen_selftest_kat.py --pkey > core/selftest_pkey_kat_data.inc
"""
import hashlib
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
VEC = os.path.join(ROOT, "tests", "vectors")


def records(path):
    section = {}
    rec = {}
    out = []
    for raw in open(path, encoding="ascii"):
        line = raw.strip()
        if not line or line.startswith("#"):
            if rec:
                out.append((dict(section), rec))
                rec = {}
            continue
        m = re.match(r"^\[(.*)\]$", line)
        if m:
            if rec:
                out.append((dict(section), rec))
                rec = {}
            body = m.group(1)
            if "=" in body:
                k, v = [x.strip() for x in body.split("=", 1)]
                section[k] = v
            else:
                section = {body: ""} if body in ("ENCRYPT", "DECRYPT") else section
                section[body] = ""
            continue
        if "=" in line:
            k, v = [x.strip() for x in line.split("=", 1)]
            rec[k.upper()] = v
        else:
            rec[line.upper()] = ""
    if rec:
        out.append((dict(section), rec))
    return out


def c_bytes(hexstr):
    if not hexstr:
        return '""'
    return '"' + "".join("\\x" + hexstr[i:i + 2] for i in range(0, len(hexstr), 2)) + '"'



def hx(v):
    """Strips leading zero bytes of a hex integer (the files pad e)."""
    v = v.strip().lower()
    n = int(v, 16)
    return "%0*x" % (((n.bit_length() + 7) // 8) * 2, n) if n else ""


def der_int(n):
    b = n.to_bytes((n.bit_length() + 8) // 8, "big")  # room for a sign bit
    if len(b) > 1 and b[0] == 0 and b[1] < 0x80:
        b = b[1:]
    return bytes([0x02]) + der_len(len(b)) + b


def der_len(n):
    if n < 128:
        return bytes([n])
    out = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(out)]) + out


def dsa_der(r, s):
    body = der_int(int(r, 16)) + der_int(int(s, 16))
    return (bytes([0x30]) + der_len(len(body)) + body).hex()


def pkey_main():
    fields = ["n", "e", "d", "p", "q", "dmp1", "dmq1", "iqmp", "raw_in",
              "raw_out", "pub_n", "pub_e", "digest", "sig", "dsa_p", "dsa_q",
              "dsa_g", "dsa_y", "dsa_x"]
    rows = []
    # RSA private key and the raw private-key operation: RSASP1 (no
    # padding), the only NIST RSA file with d; CRT values derived here.
    sp1 = None
    for sec, r in records(os.path.join(VEC, "rsa/RSASP1.fax")):
        if "COUNT" in r and not r.get("S", "").startswith("FAIL"):
            sp1 = r
            break
    n, p, q, d = (int(sp1[k], 16) for k in ("N", "P", "Q", "D"))
    e = int(sp1["E"], 16)
    assert p * q == n and pow(int(sp1["EM"], 16), d, n) == int(sp1["S"], 16)
    rsa = {"n": hx(sp1["N"]), "e": hx(sp1["E"]), "d": hx(sp1["D"]),
           "p": hx(sp1["P"]), "q": hx(sp1["Q"]),
           "dmp1": "%x" % (d % (p - 1)), "dmq1": "%x" % (d % (q - 1)),
           "iqmp": "%x" % pow(q, -1, p), "raw_in": sp1["EM"].lower(),
           "raw_out": sp1["S"].lower()}
    for k in ("dmp1", "dmq1", "iqmp"):
        rsa[k] = hx(rsa[k])
    # A PKCS#1 v1.5 signature to verify (public key only): SigGen15,
    # 2048-bit modulus, SHA-256, first record.
    pub = None
    # Section-level n/e lines are parsed as records of their own.
    n2 = e2 = None
    for sec, r in records(os.path.join(VEC, "rsa/SigGen15_186-3.rsp")):
        if sec.get("mod") != "2048":
            continue
        if "N" in r:
            n2 = r["N"]
        if "E" in r:
            e2 = r["E"]
        if r.get("SHAALG") == "SHA256":
            pub = r
            break
    rsa.update({"pub_n": hx(n2), "pub_e": hx(e2),
                "digest": hashlib.sha256(bytes.fromhex(pub["MSG"])).hexdigest(),
                "sig": pub["S"].lower()})
    assert pow(int(rsa["sig"], 16), int(rsa["pub_e"], 16), int(rsa["pub_n"], 16))
    rows.append(("ACCELCRYPT_ALG_RSA_SIGN", "ACCELCRYPT_ALG_SHA256",
                 "rsa/RSASP1.fax COUNT 0, rsa/SigGen15_186-3.rsp 2048/SHA256",
                 rsa))
    rows.append(("ACCELCRYPT_ALG_RSA_CRYPT", "ACCELCRYPT_ALG_SHA256",
                 "rsa/RSASP1.fax COUNT 0 (RSADP is the same primitive)",
                 {k: rsa[k] for k in ("n", "e", "d", "p", "q", "dmp1", "dmq1",
                                      "iqmp", "raw_in", "raw_out")}))
    # DSA: SigVer, first passing record (has X) of L=2048 N=256 SHA-256,
    # and of L=1024 N=160 SHA-1 for tokens that stop at 1024 bits.
    for mod, md, md_alg in (("L=2048, N=256, SHA-256", hashlib.sha256,
                             "ACCELCRYPT_ALG_SHA256"),
                            ("L=1024, N=160, SHA-1", hashlib.sha1,
                             "ACCELCRYPT_ALG_SHA1")):
        dsa = None
        pqg = {}
        for sec, r in records(os.path.join(VEC, "dsa/SigVer.rsp")):
            if sec.get("mod") != mod:
                continue
            for k in ("P", "Q", "G"):
                if k in r:
                    pqg[k] = r[k]
            if r.get("RESULT") == "P":
                dsa = r
                break
        rows.append(("ACCELCRYPT_ALG_DSA_SIGN", md_alg,
                     f"dsa/SigVer.rsp [mod = {mod}], first P",
                     {"dsa_p": hx(pqg["P"]), "dsa_q": hx(pqg["Q"]),
                      "dsa_g": hx(pqg["G"]), "dsa_y": hx(dsa["Y"]),
                      "dsa_x": hx(dsa["X"]),
                      "digest": md(bytes.fromhex(dsa["MSG"])).hexdigest(),
                      "sig": dsa_der(dsa["R"], dsa["S"])}))
    print("// SPDX-License-Identifier: Apache-2.0")
    print("// Generated by tools/dev/gen_selftest_kat.py --pkey from tests/vectors")
    print("// (NIST CAVP RSASP1 component, RSA2VS SigGen15, DSA2VS SigVer); do not")
    print("// edit by hand. Fields: alg, md, then " + ", ".join(fields) + ".")
    for alg, md, src, vals in rows:
        print(f"// {src}")
        parts = [alg, md]
        for f in fields:
            v = vals.get(f, "")
            parts.append(f"{{{c_bytes(v)}, {len(v)//2}}}")
        print("{" + ",\n ".join(parts) + "},")
    print(f"// {len(rows)} entries", file=sys.stderr)


if len(sys.argv) > 1 and sys.argv[1] == "--pkey":
    pkey_main()
    sys.exit(0)

rows = []
for mode, prefix in (("ECB", "ECBMMT"), ("CBC", "CBCMMT"),
                     ("CFB128", "CFB128MMT"), ("OFB", "OFBMMT")):
    for bits in (128, 192, 256):
        path = f"aes/{prefix}{bits}.rsp"
        for sec, r in records(os.path.join(VEC, path)):
            if "ENCRYPT" in sec and r.get("COUNT") == "1":
                rows.append((f"ACCELCRYPT_ALG_AES_{bits}_{mode}", path, r["KEY"],
                             r.get("IV", ""), r["PLAINTEXT"], r["CIPHERTEXT"], "", ""))
                break
for sec, r in records(os.path.join(VEC, "aes/CTR_SP800-38A.rsp")):
    if "ENCRYPT" in sec:
        bits = len(r["KEY"]) * 4
        rows.append((f"ACCELCRYPT_ALG_AES_{bits}_CTR", "aes/CTR_SP800-38A.rsp",
                     r["KEY"], r["IV"], r["PLAINTEXT"], r["CIPHERTEXT"], "", ""))
for bits in (128, 192, 256):
    path = f"aes-gcm/gcmEncryptExtIV{bits}.rsp"
    for sec, r in records(os.path.join(VEC, path)):
        if (sec.get("IVlen") == "96" and sec.get("PTlen") == "128" and
                sec.get("AADlen") == "128" and sec.get("Taglen") == "128" and
                r.get("COUNT") == "0"):
            rows.append((f"ACCELCRYPT_ALG_AES_{bits}_GCM", path, r["KEY"], r["IV"],
                         r["PT"], r["CT"], r["AAD"], r["TAG"]))
            break
for name, alg in (("SHA1", "SHA1"), ("SHA224", "SHA224"), ("SHA256", "SHA256"),
                  ("SHA384", "SHA384"), ("SHA512", "SHA512")):
    path = f"sha/{name}ShortMsg.rsp"
    for sec, r in records(os.path.join(VEC, path)):
        if int(r.get("LEN", "0")) >= 440:
            rows.append((f"ACCELCRYPT_ALG_{alg}", path, "", "", r["MSG"], r["MD"], "", ""))
            break

print("// SPDX-License-Identifier: Apache-2.0")
print("// Generated by tools/dev/gen_selftest_kat.py from tests/vectors (NIST CAVP")
print("// AESVS MMT, SP 800-38A F.5, GCMVS, SHAVS); do not edit by hand.")
for alg, path, key, iv, pt, ct, aad, tag in rows:
    print(f"// {path}")
    print(f"{{{alg}, {c_bytes(key)}, {len(key)//2}, {c_bytes(iv)}, {len(iv)//2},")
    print(f" {c_bytes(pt)}, {len(pt)//2}, {c_bytes(ct)}, {len(ct)//2},")
    print(f" {c_bytes(aad)}, {len(aad)//2}, {c_bytes(tag)}, {len(tag)//2}}},")
print(f"// {len(rows)} entries", file=sys.stderr)
