# SPDX-License-Identifier: Apache-2.0
#
# Keeps the evp_test stanzas accelcrypt claims: a stanza (a block of
# `Key = value` lines ended by a blank line; `#` lines are comments) is kept
# when its Cipher or Digest is one of ours (case-insensitive), and dropped
# when it tests anything else (other modes, other digests, MACs, KDFs) or is
# marked `Availablein` for another provider. Title-only stanzas are kept.
#
# With -v mode=pkey (the evppkey_*.txt files) a stanza is kept when every
# digest it names is one of ours: key stanzas (PrivateKey, PublicKey,
# PrivPubKeyPair) and Sign/Verify/VerifyRecover/Decrypt/Encrypt/Derive/
# KeyGen/DigestSign/DigestVerify, unless a DigestSign/DigestVerify name or a
# `Ctrl = digest:`, `rsa_mgf1_md:`, `rsa_oaep_md:`, `rsa_pss_keygen_md:` or
# `rsa_pss_keygen_mgf1_md:` value is a digest accelcrypt does not claim
# (the reason printed is that digest), or it is `Availablein` another
# provider (FIPS-only checks).
# Usage: awk -v out=FILTERED [-v mode=pkey] -f filter_stanzas.awk SOURCE.txt
# Prints "kept K dropped D" and one "dropped NAME xN" line per reason.

BEGIN {
  n = split("aes-128-ecb aes-192-ecb aes-256-ecb " \
            "aes-128-cbc aes-192-cbc aes-256-cbc " \
            "aes-128-cfb aes-192-cfb aes-256-cfb " \
            "aes-128-cfb128 aes-192-cfb128 aes-256-cfb128 " \
            "aes-128-ofb aes-192-ofb aes-256-ofb " \
            "aes-128-ctr aes-192-ctr aes-256-ctr " \
            "aes-128-gcm aes-192-gcm aes-256-gcm id-aes128-gcm id-aes192-gcm id-aes256-gcm " \
            "sha1 sha-1 sha224 sha-224 sha2-224 sha256 sha-256 sha2-256 " \
            "sha384 sha-384 sha2-384 sha512 sha-512 sha2-512", names, " ")
  for (i = 1; i <= n; i++) claimed[names[i]] = 1
  if (out == "") { print "filter_stanzas.awk: -v out=FILE is required" > "/dev/stderr"; exit 2 }
  printf "" > out
  kept = 0; dropped = 0; nlines = 0
  pkey = (mode == "pkey")
}

function flush(   i, keep, kind) {
  if (nlines == 0) return
  keep = 1
  if (pkey && test_kind != "") {
    if (test_kind ~ /^(privatekey|publickey|privpubkeypair|sign|verify|verifyrecover|decrypt|encrypt|derive|keygen|digestsign|digestverify)$/ && bad_md == "" && !other_provider) {
      kept++
    } else {
      keep = 0
      dropped++
      if (other_provider) reason = "Availablein another provider (" other_name ")"
      else if (bad_md != "") reason = "digest " toupper(bad_md) " (not claimed by accelcrypt)"
      else reason = "test type " test_kind
      drops[reason]++
    }
  } else if (test_kind != "") {
    if ((test_kind == "cipher" || test_kind == "digest") && (alg in claimed) && !other_provider) {
      kept++
    } else {
      keep = 0
      dropped++
      reason = (test_kind == "cipher" || test_kind == "digest") ? alg : test_kind
      if (other_provider) reason = reason " (Availablein another provider)"
      drops[reason]++
    }
  }
  if (keep) {
    for (i = 1; i <= nlines; i++) print lines[i] > out
    print "" > out
  }
  nlines = 0; test_kind = ""; alg = ""; other_provider = 0; bad_md = ""
}

# md_claimed is true for a digest name accelcrypt's public-key operations
# take (the SHA-1/SHA-2 names in `claimed`).
function md_claimed(name) {
  name = tolower(name)
  return (name in claimed) && name ~ /^sha/
}

/^[ \t]*#/ { next }
/^[ \t]*$/ { flush(); next }
{
  line = $0
  sub(/\r$/, "", line)
  lines[++nlines] = line
  key = line; sub(/[ \t]*=.*/, "", key); key = tolower(key)
  value = line; sub(/^[^=]*=[ \t]*/, "", value); sub(/[ \t]+$/, "", value)
  if (key == "availablein" && tolower(value) !~ /accelcrypt/) { other_provider = 1; other_name = value }
  if (pkey && bad_md == "") {
    if ((key == "digestsign" || key == "digestverify") && !md_claimed(value)) bad_md = value
    if (key == "ctrl" && value ~ /^(digest|rsa_mgf1_md|rsa_oaep_md|rsa_pss_keygen_md|rsa_pss_keygen_mgf1_md):/) {
      md = value; sub(/^[^:]*:/, "", md)
      if (!md_claimed(md)) bad_md = md
    }
  }
  if (test_kind == "" && key ~ /^(cipher|digest|mac|kdf|pkeykdf|pbe|encoding|decrypt|encrypt|derive|sign|verify|verifyrecover|digestsign|digestverify|privpubkeypair|keygen|rand|privatekey|publickey|keypair|paramgen)$/) {
    test_kind = key
    alg = tolower(value)
  }
}
END {
  flush()
  close(out)
  printf "kept %d dropped %d\n", kept, dropped
  for (r in drops) printf "dropped %s x%d\n", r, drops[r]
}
