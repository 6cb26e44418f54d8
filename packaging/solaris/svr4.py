#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""SVR4 package files for OpenCSW from a DESTDIR install of accelcrypt.

  svr4.py generate --root STAGE --out DIR --version V [--arch ARCH]
          [--pstamp STAMP] [--rev YYYY.MM.DD] [--depend PKG=DESC ...]
      Writes DIR/<PKG>/{pkginfo,prototype,depend} for CSWaccelcrypt (the
      runtime: tool, provider, PKCS#11 module, backends, data, docs) and
      CSWaccelcrypt-dev (header, pkg-config file). Every path of STAGE must
      sit under OpenCSW's trees (/opt/csw, /etc/opt/csw, /var/opt/csw). On
      Solaris: pkgmk -o -r STAGE -d SPOOL -f DIR/<PKG>/prototype, then
      pkgtrans -s SPOOL <file>.pkg <PKG>.

  svr4.py pack --root STAGE --proto DIR --out FILE
      Dry run of pkgmk + pkgtrans where neither exists: lays every package of
      DIR out as pkgmk does (pkginfo, pkgmap with sizes and SVR4 sum
      checksums, install/, root/) and writes one datastream: the
      "# PaCkAgE DaTaStReAm" header block, then per package an ASCII (odc)
      cpio archive of pkginfo + pkgmap and one of the whole package.

  svr4.py list FILE
      Reads a datastream back: the packages of its header, and per package
      the pkgmap entries next to the archive members they describe.

Python 3.6+ only (OpenCSW's build hosts have CSWpython3).
"""
import argparse
import os
import stat
import sys
import time

OPENCSW_TREES = ("/opt/csw", "/etc/opt/csw", "/var/opt/csw")
VENDOR = "accelcrypt maintainers"
EMAIL = "maintainers@accelcrypt.invalid"
PACKAGES = {
    "CSWaccelcrypt": {
        "catalogname": "accelcrypt",
        "name": "accelcrypt - crypto accelerators behind one core for "
                "OpenSSL 3 and PKCS#11",
    },
    "CSWaccelcrypt-dev": {
        "catalogname": "accelcrypt_dev",
        "name": "accelcrypt_dev - plugin ABI header for accelcrypt backends",
    },
}
# Runtime dependencies, OpenCSW package names for the shared libraries the
# binaries need (checkpkg on the build host confirms them from NEEDED).
DEFAULT_DEPENDS = [
    ("CSWlibssl3", "libssl3 - OpenSSL 3 libraries (libcrypto.so.3)"),
    ("CSWlibsqlite3-0", "libsqlite3_0 - SQLite 3 library"),
    ("CSWlibstdc++6", "libstdc++6 - GNU C++ runtime"),
    ("CSWlibgcc-s1", "libgcc_s1 - GCC runtime"),
]


class Error(Exception):
    pass


def package_of(path):
    """CSWaccelcrypt-dev gets the header and the pkg-config file."""
    rel = path[len("/opt/csw/"):] if path.startswith("/opt/csw/") else ""
    if rel.startswith("include/") or rel == "include":
        return "CSWaccelcrypt-dev"
    parts = rel.split("/")
    if "pkgconfig" in parts[:-1] or parts[-1] == "pkgconfig":
        return "CSWaccelcrypt-dev"
    return "CSWaccelcrypt"


def walk(root):
    """(path, kind, mode, link target) of every entry below root."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(dirnames) + sorted(filenames):
            full = os.path.join(dirpath, name)
            rel = "/" + os.path.relpath(full, root)
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                out.append((rel, "s", 0, os.readlink(full)))
            elif stat.S_ISDIR(st.st_mode):
                out.append((rel, "d", 0o755, None))
            elif stat.S_ISREG(st.st_mode):
                mode = 0o755 if st.st_mode & stat.S_IXUSR else 0o644
                out.append((rel, "f", mode, None))
            else:
                raise Error("%s: not a file, directory or symlink" % rel)
    return out


def in_opencsw(path):
    for tree in OPENCSW_TREES:
        if path == tree or path.startswith(tree + "/"):
            return True
        if tree.startswith(path + "/"):  # /opt, /etc/opt, /var/opt
            return True
    return False


def owner_group(path):
    # Base directories as Solaris and CSWcommon own them, so pkgadd sees no
    # attribute conflict on shared directories.
    if path in ("/opt", "/etc", "/var", "/etc/opt", "/var/opt"):
        return "root", "sys"
    return "root", "bin"


def cmd_generate(args):
    root = os.path.abspath(args.root)
    entries = walk(root)
    if not entries:
        raise Error("%s is empty: run `make install DESTDIR=%s` first" % (root, root))
    outside = [p for p, _, _, _ in entries if not in_opencsw(p)]
    if outside:
        raise Error("not in OpenCSW's layout (/opt/csw, /etc/opt/csw, "
                    "/var/opt/csw): " + ", ".join(outside[:5]) +
                    (" and %d more" % (len(outside) - 5) if len(outside) > 5 else ""))
    by_pkg = {p: [] for p in PACKAGES}
    files_of = {p: set() for p in PACKAGES}
    for path, kind, mode, target in entries:
        if kind != "d":
            pkg = package_of(path)
            by_pkg[pkg].append((path, kind, mode, target))
            files_of[pkg].add(path)
    # Each package lists the directories above its own entries.
    for pkg in PACKAGES:
        dirs = set()
        for path in files_of[pkg]:
            d = os.path.dirname(path)
            while d != "/":
                dirs.add(d)
                d = os.path.dirname(d)
        by_pkg[pkg] += [(d, "d", 0o755, None) for d in dirs]
    # An empty directory of the tree goes with the runtime package.
    listed = {p for pkg in by_pkg.values() for p, _, _, _ in pkg}
    for path, kind, mode, target in entries:
        if kind == "d" and path not in listed:
            by_pkg["CSWaccelcrypt"].append((path, kind, mode, target))
    rev = args.rev or time.strftime("%Y.%m.%d", time.gmtime())
    pstamp = args.pstamp or "accelcrypt-" + time.strftime("%Y%m%d%H%M%S", time.gmtime())
    depends = DEFAULT_DEPENDS
    if args.depend:
        depends = [tuple(d.split("=", 1)) for d in args.depend]
    for pkg, meta in PACKAGES.items():
        if not by_pkg[pkg]:
            continue
        d = os.path.join(args.out, pkg)
        os.makedirs(d, exist_ok=True)
        info = [
            ("PKG", pkg),
            ("NAME", meta["name"]),
            ("ARCH", args.arch),
            ("VERSION", "%s,REV=%s" % (args.version, rev)),
            ("CATEGORY", "application"),
            ("VENDOR", "accelcrypt packaged for CSW by " + VENDOR),
            ("EMAIL", EMAIL),
            ("BASEDIR", "/"),
            ("CLASSES", "none"),
            ("PSTAMP", pstamp),
            ("OPENCSW_CATALOGNAME", meta["catalogname"]),
            ("OPENCSW_MODE64", "64"),
        ]
        with open(os.path.join(d, "pkginfo"), "w") as f:
            for k, v in info:
                f.write("%s=%s\n" % (k, v))
        with open(os.path.join(d, "depend"), "w") as f:
            if pkg != "CSWaccelcrypt":
                f.write("P CSWaccelcrypt %s\n" % PACKAGES["CSWaccelcrypt"]["name"])
            else:
                for dep, desc in depends:
                    f.write("P %s %s\n" % (dep, desc))
        with open(os.path.join(d, "prototype"), "w") as f:
            f.write("i pkginfo\ni depend\n")
            for path, kind, mode, target in sorted(by_pkg[pkg]):
                if kind == "s":
                    f.write("s none %s=%s\n" % (path, target))
                else:
                    o, g = owner_group(path)
                    f.write("%s none %s %04o %s %s\n" % (kind, path, mode, o, g))
        print("%s: %d entries -> %s" % (pkg, len(by_pkg[pkg]), d))
    return 0


# --- pack: pkgmk + pkgtrans layout --------------------------------------

def svr4_sum(data):
    """The checksum pkgmk writes into pkgmap (`sum` without -r)."""
    s = sum(data)
    r = (s & 0xFFFF) + ((s >> 16) & 0xFFFF)
    return (r & 0xFFFF) + (r >> 16)


def blocks(n):
    return (n + 511) // 512


def parse_prototype(path):
    entries = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            fields = line.split()
            entries.append(fields)
    return entries


def cpio_odc(members):
    """ASCII cpio ("070707", SVR4 `cpio -oc` / POSIX odc) of (name, mode,
    data) members, padded to whole 512-byte blocks."""
    out = bytearray()
    ino = 1
    for name, mode, data in members + [("TRAILER!!!", 0, b"")]:
        nb = name.encode() + b"\0"
        out += b"070707%06o%06o%06o%06o%06o%06o%06o%011o%06o%011o" % (
            0, ino if name != "TRAILER!!!" else 0, mode, 0, 0,
            1 if name != "TRAILER!!!" else 0, 0, 0, len(nb), len(data))
        out += nb + data
        ino += 1
    out += b"\0" * (blocks(len(out)) * 512 - len(out))
    return bytes(out)


def read_cpio(data, pos):
    """Members of the odc archive at data[pos:] and the offset after it."""
    members = []
    while True:
        hdr = data[pos:pos + 76]
        if hdr[:6] != b"070707":
            raise Error("no cpio header at offset %d" % pos)
        mode = int(hdr[18:24], 8)
        namesize = int(hdr[59:65], 8)
        filesize = int(hdr[65:76], 8)
        name = data[pos + 76:pos + 76 + namesize - 1].decode()
        body = data[pos + 76 + namesize:pos + 76 + namesize + filesize]
        pos += 76 + namesize + filesize
        if name == "TRAILER!!!":
            break
        members.append((name, mode, body))
    return members, blocks(pos) * 512


def cmd_pack(args):
    root = os.path.abspath(args.root)
    pkgs = sorted(p for p in os.listdir(args.proto)
                  if os.path.isfile(os.path.join(args.proto, p, "prototype")))
    if not pkgs:
        raise Error("no <PKG>/prototype in %s" % args.proto)
    streams = []
    for pkg in pkgs:
        pdir = os.path.join(args.proto, pkg)
        members = []      # (name, mode, data) below PKG/
        mapl = []
        total = 0
        for fields in parse_prototype(os.path.join(pdir, "prototype")):
            kind = fields[0]
            if kind == "i":
                name = fields[1].split("=")[0]
                data = open(os.path.join(pdir, name), "rb").read()
                dest = "pkginfo" if name == "pkginfo" else "install/" + name
                if name != "pkginfo":
                    members.append((pkg + "/" + dest, 0o100644, data))
                mapl.append("1 i %s %d %d %d" % (name, len(data), svr4_sum(data),
                                                 int(time.time())))
                total += blocks(len(data))
                if name == "pkginfo":
                    pkginfo = data
            elif kind == "d":
                _, cls, path, mode, owner, group = fields
                mapl.append("1 d %s %s %s %s %s" % (cls, path, mode, owner, group))
                members.append((pkg + "/root" + path, 0o040000 | int(mode, 8), b""))
            elif kind == "f":
                _, cls, path, mode, owner, group = fields
                data = open(root + path, "rb").read()
                mtime = int(os.stat(root + path).st_mtime)
                mapl.append("1 f %s %s %s %s %s %d %d %d" % (
                    cls, path, mode, owner, group, len(data), svr4_sum(data), mtime))
                members.append((pkg + "/root" + path, 0o100000 | int(mode, 8), data))
                total += blocks(len(data))
            elif kind == "s":
                _, cls, spec = fields
                mapl.append("1 s %s %s" % (cls, spec))
            else:
                raise Error("%s: prototype type %s not supported" % (pkg, kind))
        # pkgmap: ": <parts> <max part size in blocks>", entries by path.
        # (paths sorted, the i entries last, as pkgmk writes them)
        mapl.sort(key=lambda l: (l.split()[1] == "i", l.split()[3 if l.split()[1] != "i" else 2]))
        pkgmap = (": 1 %d\n" % (total + 1) + "\n".join(mapl) + "\n").encode()
        head = cpio_odc([(pkg + "/pkginfo", 0o100644, pkginfo),
                         (pkg + "/pkgmap", 0o100644, pkgmap)])
        body = cpio_odc([(pkg + "/pkginfo", 0o100644, pkginfo),
                         (pkg + "/pkgmap", 0o100644, pkgmap)] + members)
        streams.append((pkg, head, body))
    header = "# PaCkAgE DaTaStReAm\n"
    for pkg, head, body in streams:
        header += "%s 1 %d\n" % (pkg, blocks(len(body)))
    header += "# end of header\n"
    hb = header.encode()
    hb += b"\0" * (blocks(len(hb)) * 512 - len(hb))
    with open(args.out, "wb") as f:
        f.write(hb)
        for _, head, body in streams:
            f.write(head)
            f.write(body)
    print("%s: %d package(s), %d bytes" % (args.out, len(streams),
                                          os.path.getsize(args.out)))
    return 0


def cmd_list(args):
    data = open(args.file, "rb").read()
    end = data.find(b"# end of header\n")
    if not data.startswith(b"# PaCkAgE DaTaStReAm\n") or end < 0:
        raise Error("%s: not a package datastream" % args.file)
    pkgs = []
    for line in data[:end].decode().splitlines()[1:]:
        name, parts, nblocks = line.split()
        pkgs.append((name, int(parts), int(nblocks)))
    pos = blocks(end + len(b"# end of header\n")) * 512
    for name, _, nblocks in pkgs:
        head, pos = read_cpio(data, pos)
        body_start = pos
        body, pos = read_cpio(data, pos)
        if blocks(pos - body_start) != nblocks:
            raise Error("%s: header says %d blocks, archive has %d" %
                        (name, nblocks, blocks(pos - body_start)))
        heads = {m[0]: m[2] for m in head}
        if set(heads) != {name + "/pkginfo", name + "/pkgmap"}:
            raise Error("%s: first archive holds %s" % (name, sorted(heads)))
        files = {m[0]: m for m in body}
        print("package %s (%d blocks)" % (name, nblocks))
        for line in heads[name + "/pkgmap"].decode().splitlines()[1:]:
            f = line.split()
            if f[1] == "f":
                member = files.get("%s/root%s" % (name, f[3]))
                if member is None:
                    raise Error("%s: %s in pkgmap, not in the archive" % (name, f[3]))
                size, cksum = int(f[7]), int(f[8])
                if len(member[2]) != size or svr4_sum(member[2]) != cksum:
                    raise Error("%s: %s size/checksum differ from pkgmap" % (name, f[3]))
                if member[1] & 0o7777 != int(f[4], 8):
                    raise Error("%s: %s mode differs from pkgmap" % (name, f[3]))
            print("  " + line)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd")
    g = sub.add_parser("generate")
    g.add_argument("--root", required=True)
    g.add_argument("--out", required=True)
    g.add_argument("--version", required=True)
    machine = os.uname().machine
    g.add_argument("--arch", default={"x86_64": "i386", "i86pc": "i386",
                                      "sun4v": "sparc", "sun4u": "sparc"}
                   .get(machine, machine),
                   help="pkginfo ARCH (default from uname: i386 or sparc)")
    g.add_argument("--pstamp")
    g.add_argument("--rev")
    g.add_argument("--depend", action="append",
                   help="PKG=DESCRIPTION (repeatable; replaces the defaults)")
    p = sub.add_parser("pack")
    p.add_argument("--root", required=True)
    p.add_argument("--proto", required=True)
    p.add_argument("--out", required=True)
    l = sub.add_parser("list")
    l.add_argument("file")
    args = ap.parse_args()
    try:
        if args.cmd == "generate":
            return cmd_generate(args)
        if args.cmd == "pack":
            return cmd_pack(args)
        if args.cmd == "list":
            return cmd_list(args)
        ap.print_help()
        return 2
    except (Error, OSError) as e:
        print("svr4.py: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
