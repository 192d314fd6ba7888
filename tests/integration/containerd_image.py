#!/usr/bin/env python3
"""warden's image for containerd.sh: a base layout and warden's files.

    containerd_image.py LAYOUT TREE WARDEN MONITOR PROBE PROGRAM...

LAYOUT is an OCI image layout (a directory, tag "base", one uncompressed
layer) standing in for the Debian root file system `make image` starts
from: each PROGRAM (a name found on PATH: the commands the test runs in
warden's jail) and the shared objects they and warden need (ldd), with
libssl (the egress proxy's TLS) and libgit2 (diffs), both dlopen'ed, and
theirs; the host's own files, the closure of what warden runs.  TREE is
what `make install` puts in an image: warden at /usr/local/bin/warden, its
session monitor at /usr/local/libexec/warden/warden-monitor, and the
static wd-probe at /usr/local/bin/wd-probe.  The test imports LAYOUT into
warden's store and writes the pod's image with `warden image export
--add TREE`.  Entries are sorted, owned by 0:0, mtime 0.
"""
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile

DLOPENED = ["libssl.so.3", "libgit2.so.1.5"]


def ldd(path):
    """The shared objects PATH loads, as (soname, resolved path)."""
    out = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
    libs = []
    for line in out.splitlines():
        parts = line.split()
        if "=>" in parts and len(parts) >= 3 and parts[2].startswith("/"):
            libs.append(parts[2])
        elif parts and parts[0].startswith("/"):
            libs.append(parts[0])
    return libs


def find_lib(name):
    for d in ["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64",
              "/lib", "/usr/lib"]:
        p = os.path.join(d, name)
        if os.path.exists(p):
            return p
    return None


def main():
    layout, tree, warden, monitor, probe = sys.argv[1:6]
    programs = sys.argv[6:]
    own = {
        "usr/local/bin/warden": warden,
        "usr/local/libexec/warden/warden-monitor": monitor,
        "usr/local/bin/wd-probe": probe,
    }
    files = {}
    for p in programs:
        path = shutil.which(p)
        if not path:
            sys.exit("containerd_image.py: %s is not on PATH" % p)
        files["usr/bin/" + p] = os.path.realpath(path)
    for name in DLOPENED:
        p = find_lib(name)
        if not p:
            sys.exit("containerd_image.py: %s not found" % name)
        files["usr/lib/x86_64-linux-gnu/" + name] = os.path.realpath(p)
    # the closure of shared objects, by the name the loader looks for
    todo = list(files.values()) + list(own.values())
    seen = set()
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.add(f)
        for lib in ldd(f):
            real = os.path.realpath(lib)
            if lib.startswith("/lib64/"):
                files["usr/lib64/" + os.path.basename(lib)] = real
            else:
                files["usr/lib/x86_64-linux-gnu/" + os.path.basename(lib)] = real
            todo.append(real)

    dirs = set()
    for name in files:
        d = os.path.dirname(name)
        while d:
            dirs.add(d)
            d = os.path.dirname(d)
    # the usrmerge links, and the directories warden and the jail expect
    links = {"bin": "usr/bin", "lib": "usr/lib", "lib64": "usr/lib64", "sbin": "usr/bin"}
    for d in ["etc", "tmp", "proc", "sys", "dev", "run", "var", "var/lib", "var/lib/warden",
              "root", "usr/sbin", "work"]:
        dirs.add(d)
    etc = {
        "etc/passwd": b"root:x:0:0:root:/root:/usr/bin/false\n"
                      b"nobody:x:65534:65534:nobody:/nonexistent:/usr/bin/false\n",
        "etc/group": b"root:x:0:\nnogroup:x:65534:\n",
        "etc/hosts": b"127.0.0.1 localhost\n",
        "etc/nsswitch.conf": b"passwd: files\ngroup: files\nhosts: files\n",
    }

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        entries = [(d, "dir", None) for d in dirs]
        entries += [(n, "link", t) for n, t in links.items()]
        entries += [(n, "file", s) for n, s in files.items()]
        entries += [(n, "data", b) for n, b in etc.items()]
        for name, kind, src in sorted(entries):
            ti = tarfile.TarInfo(name)
            ti.mtime = 0
            ti.uid = ti.gid = 0
            if kind == "dir":
                ti.type = tarfile.DIRTYPE
                # runc gives a tmpfs the mode of the directory it covers
                ti.mode = {"tmp": 0o1777, "var/lib/warden": 0o700}.get(name, 0o755)
                tf.addfile(ti)
            elif kind == "link":
                ti.type = tarfile.SYMTYPE
                ti.linkname = src
                tf.addfile(ti)
            else:
                data = src if kind == "data" else open(src, "rb").read()
                ti.size = len(data)
                ti.mode = 0o644 if kind == "data" else (os.stat(src).st_mode & 0o755)
                tf.addfile(ti, io.BytesIO(data))
    layer = buf.getvalue()

    blobs = {}

    def blob(data):
        d = hashlib.sha256(data).hexdigest()
        blobs[d] = data
        return {"digest": "sha256:" + d, "size": len(data)}

    ldesc = blob(layer)
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {"Env": ["PATH=/usr/local/bin:/usr/bin"]},
        "rootfs": {"type": "layers", "diff_ids": [ldesc["digest"]]},
    }
    cdesc = blob(json.dumps(config, sort_keys=True).encode())
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": dict(cdesc, mediaType="application/vnd.oci.image.config.v1+json"),
        "layers": [dict(ldesc, mediaType="application/vnd.oci.image.layer.v1.tar")],
    }
    mdesc = blob(json.dumps(manifest, sort_keys=True).encode())
    index = {
        "schemaVersion": 2,
        "manifests": [dict(mdesc, mediaType="application/vnd.oci.image.manifest.v1+json",
                           annotations={"org.opencontainers.image.ref.name": "base"})],
    }
    os.makedirs(os.path.join(layout, "blobs", "sha256"))
    with open(os.path.join(layout, "oci-layout"), "w") as f:
        f.write('{"imageLayoutVersion":"1.0.0"}')
    with open(os.path.join(layout, "index.json"), "w") as f:
        json.dump(index, f, sort_keys=True)
    for d in sorted(blobs):
        with open(os.path.join(layout, "blobs", "sha256", d), "wb") as f:
            f.write(blobs[d])
    for name, src in own.items():
        dst = os.path.join(tree, name)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copyfile(src, dst)
        os.chmod(dst, 0o755)
    print("%d files, layer %d bytes" % (len(files), len(layer)))

if __name__ == "__main__":
    main()
