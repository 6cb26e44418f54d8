#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks SVR4 package files against the formats of pkginfo(4),
prototype(4) and depend(4) and against the staging tree they describe.
Written apart from packaging/solaris/svr4.py, which it checks.

  svr4_validate.py STAGE PROTODIR    (PROTODIR/<PKG>/{pkginfo,prototype,depend})
Prints every problem; exit 1 if any.
"""
import os
import re
import stat
import sys

REQUIRED = ["PKG", "NAME", "ARCH", "VERSION", "CATEGORY", "VENDOR", "EMAIL",
            "BASEDIR", "CLASSES", "PSTAMP"]
problems = []


def bad(msg):
    problems.append(msg)


def check_pkginfo(pkg, path):
    info = {}
    for n, line in enumerate(open(path), 1):
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r"([A-Z][A-Z0-9_]*)=(.*)", line)
        if not m:
            bad("%s pkginfo:%d: not PARAM=value: %r" % (pkg, n, line))
            continue
        if m.group(1) in info:
            bad("%s pkginfo: %s twice" % (pkg, m.group(1)))
        info[m.group(1)] = m.group(2)
    for k in REQUIRED:
        if not info.get(k):
            bad("%s pkginfo: %s missing or empty" % (pkg, k))
    v = info.get
    if v("PKG") and (v("PKG") != pkg or not re.fullmatch(r"[A-Za-z][A-Za-z0-9+-]{0,31}", v("PKG"))
                     or v("PKG") in ("install", "new", "all")):
        bad("%s pkginfo: PKG=%s invalid or not the directory name" % (pkg, v("PKG")))
    if v("PKG") and not v("PKG").startswith("CSW"):
        bad("%s pkginfo: PKG lacks OpenCSW's CSW prefix" % pkg)
    if v("ARCH") and not set(v("ARCH").split(",")) <= {"sparc", "i386", "all"}:
        bad("%s pkginfo: ARCH=%s is not sparc/i386/all" % (pkg, v("ARCH")))
    if v("VERSION") and (len(v("VERSION")) > 256 or v("VERSION").startswith("(")
                         or not re.fullmatch(r"[0-9][0-9A-Za-z.]*,REV=\d{4}\.\d{2}\.\d{2}", v("VERSION"))):
        bad("%s pkginfo: VERSION=%s not OpenCSW's VERSION,REV=YYYY.MM.DD" % (pkg, v("VERSION")))
    if v("CATEGORY") and not set(v("CATEGORY").split(",")) & {"application", "system"}:
        bad("%s pkginfo: CATEGORY has neither application nor system" % pkg)
    for k in ("NAME", "VENDOR", "PSTAMP"):
        if v(k) and len(v(k)) > 256:
            bad("%s pkginfo: %s longer than 256 characters" % (pkg, k))
    if v("EMAIL") and not re.fullmatch(r"[^@\s]+@[^@\s]+", v("EMAIL")):
        bad("%s pkginfo: EMAIL=%s" % (pkg, v("EMAIL")))
    if v("BASEDIR") and not v("BASEDIR").startswith("/"):
        bad("%s pkginfo: BASEDIR not absolute" % pkg)
    if v("PSTAMP") and re.search(r"\s", v("PSTAMP")):
        bad("%s pkginfo: PSTAMP has blanks" % pkg)
    return info


def check_prototype(pkg, pdir, classes):
    entries = {}
    for n, line in enumerate(open(os.path.join(pdir, "prototype")), 1):
        f = line.split()
        if not f or f[0].startswith("#"):
            continue
        where = "%s prototype:%d" % (pkg, n)
        t = f[0]
        if t == "i":
            if len(f) != 2:
                bad("%s: i takes one name" % where)
            elif not os.path.isfile(os.path.join(pdir, f[1].split("=")[-1])):
                bad("%s: i %s: no such file next to the prototype" % (where, f[1]))
            continue
        if t in "dfevx":
            if len(f) != 6:
                bad("%s: %s needs class path mode owner group" % (where, t))
                continue
            _, cls, path, mode, owner, group = f
            if not re.fullmatch(r"[0-7]{3,4}", mode):
                bad("%s: mode %s not octal" % (where, mode))
            if not re.fullmatch(r"[a-z_][a-z0-9_-]*", owner) or not re.fullmatch(r"[a-z_][a-z0-9_-]*", group):
                bad("%s: owner/group %s %s" % (where, owner, group))
            target = None
        elif t in "sl":
            if len(f) != 3 or "=" not in f[2]:
                bad("%s: %s needs class path=target" % (where, t))
                continue
            _, cls, spec = f
            path, target = spec.split("=", 1)
            mode = None
        else:
            bad("%s: unknown type %s" % (where, t))
            continue
        if cls not in classes:
            bad("%s: class %s not in CLASSES" % (where, cls))
        if not path.startswith("/"):
            bad("%s: %s not absolute (OpenCSW packages are not relocatable)" % (where, path))
        if not re.match(r"/(opt|etc/opt|var/opt)(/csw(/|$)|$)", path):
            bad("%s: %s outside /opt/csw, /etc/opt/csw, /var/opt/csw" % (where, path))
        if path in entries:
            bad("%s: %s listed twice" % (where, path))
        entries[path] = (t, mode, target)
    return entries


def main():
    stage, protodir = sys.argv[1], sys.argv[2]
    pkgs = sorted(d for d in os.listdir(protodir) if os.path.isdir(os.path.join(protodir, d)))
    if not pkgs:
        bad("no package directories in %s" % protodir)
    listed = {}
    for pkg in pkgs:
        pdir = os.path.join(protodir, pkg)
        for need in ("pkginfo", "prototype", "depend"):
            if not os.path.isfile(os.path.join(pdir, need)):
                bad("%s: no %s" % (pkg, need))
        if problems:
            continue
        info = check_pkginfo(pkg, os.path.join(pdir, "pkginfo"))
        classes = info.get("CLASSES", "").split()
        for path, e in check_prototype(pkg, pdir, classes).items():
            if e[0] != "d" and path in listed:
                bad("%s and %s both ship %s" % (listed[path][0], pkg, path))
            if e[0] == "d" and path in listed and listed[path][1][0] != "d":
                bad("%s: %s is a directory here, not in %s" % (pkg, path, listed[path][0]))
            listed.setdefault(path, (pkg, e))
        deps = []
        for n, line in enumerate(open(os.path.join(pdir, "depend")), 1):
            if not line.strip() or line.startswith("#") or line[0].isspace():
                continue
            m = re.fullmatch(r"([PIR])\s+(CSW[A-Za-z0-9+-]+)\s+\S.*\n?", line)
            if not m:
                bad("%s depend:%d: not `P|I|R PKG description`: %r" % (pkg, n, line))
            else:
                deps.append(m.group(2))
        if not any(d in ("CSWlibssl3", "CSWopenssl", "CSWlibssl1-1") or d == "CSWaccelcrypt" for d in deps):
            bad("%s depend: neither OpenCSW's OpenSSL nor CSWaccelcrypt" % pkg)
    # The staging tree, entry by entry, against the union of the prototypes.
    seen = set()
    for dirpath, dirnames, filenames in os.walk(stage):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            path = "/" + os.path.relpath(full, stage)
            seen.add(path)
            st = os.lstat(full)
            if path not in listed:
                bad("%s is in the staging tree, in no prototype" % path)
                continue
            t, mode, target = listed[path][1]
            if stat.S_ISLNK(st.st_mode):
                if t != "s" or target != os.readlink(full):
                    bad("%s: symlink to %s, prototype says %s %s" % (path, os.readlink(full), t, target))
            elif stat.S_ISDIR(st.st_mode):
                if t != "d":
                    bad("%s: a directory, prototype type %s" % (path, t))
            elif stat.S_ISREG(st.st_mode):
                if t not in "fev":
                    bad("%s: a file, prototype type %s" % (path, t))
                elif bool(int(mode, 8) & 0o100) != bool(st.st_mode & stat.S_IXUSR):
                    bad("%s: executable bit differs (%s vs staging %o)" % (path, mode, st.st_mode & 0o777))
    for path in sorted(set(listed) - seen):
        bad("%s is in %s's prototype, not in the staging tree" % (path, listed[path][0]))
    for p in problems:
        print("FAIL: " + p)
    print("svr4_validate: %d package(s), %d entries, %d problem(s)" %
          (len(pkgs), len(listed), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
