#!/usr/bin/env python3
"""Write an OCI image layout (or a docker save tarball) with hand-made
layers, for image.sh and image_export.sh.

    oci_layout.py [--docker | --docker-oci] DEST CASE [ARG [NAME]]

CASE is the layer: "probe-etc" (the probe with a full etc/: etc_tree),
"probe" (ARG: a static program, at usr/bin/wd-probe,
or at usr/bin/NAME with a fourth argument NAME; with bin -> usr/bin, an
etc/, and directories and a file of mode 0777 and 0666 that only a
read-only mount protects), "probe-config" (the same, its config setting
Env, User 1001:1001 and WorkingDir), "probe-alias" (the same, with
usr/bin/cat a link to /workspace/cat), "probe-user" (the same with the
host's cat and its libraries, its config's User "node"; "probe-root":
User "root", a WorkingDir with an escape byte), or a hostile one:
"device" (a character device node),
"escape" (ARG: a host path; the entries ../../..ARG, /ARG-abs and a link
to ARG's directory then a file through it), "hardlink" (a hard link to
/etc/shadow), "sparse" (a 10 GB GNU sparse file holding 4 KiB of data),
"badenv" (a config Env entry with an escape byte), and across layers:
"link-layers" (ARG: a host path; layer 1 links out to ARG's directory,
layer 2 writes a file through the link), "whiteout" (ARG: a host file;
whiteouts ../..ARG's .wh. and .wh..wh..opq of its directory, by relative
and absolute names), "hardlink-layers" (layer 1 links etc -> /etc, layer
2 hard-links shadow-copy to etc/shadow), "many" (ARG: a count of empty
files in one layer), "toomany" (the same, gzip'd, headers made here).
Layers are uncompressed tars; the tag is "t".

DEST is an OCI image layout directory, or with --docker a docker save
tarball in Docker's legacy form (manifest.json, ID/layer.tar, the config
as HEX.json, the probe's layer listed twice, the second a symlink to the
first as docker save writes a repeated layer), or with --docker-oci the
form Docker 25 writes (an OCI layout with manifest.json beside it).
"""
import hashlib
import io
import json
import os
import sys
import subprocess
import tarfile
import time


def add_dir(tf, name, mode=0o755):
    ti = tarfile.TarInfo(name)
    ti.type = tarfile.DIRTYPE
    ti.mode = mode
    tf.addfile(ti)


def add_file(tf, name, data, mode=0o644):
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    ti.mode = mode
    tf.addfile(ti, io.BytesIO(data))


def add_link(tf, name, target, kind=tarfile.SYMTYPE):
    ti = tarfile.TarInfo(name)
    ti.type = kind
    ti.linkname = target
    tf.addfile(ti)


def host_libs(prog):
    """The shared objects prog loads on this host (ldd), by absolute path."""
    out = subprocess.run(["ldd", prog], capture_output=True, text=True,
                         check=True).stdout
    libs = []
    for line in out.splitlines():
        for word in line.split():
            if word.startswith("/"):
                libs.append(word)
    return libs


def gzip_many(n):
    """A gzip'd tar of n empty files, its ustar headers made here (tarfile
    takes a minute for a million): one template, the name and checksum
    changed in each."""
    import gzip
    tmpl = bytearray(512)
    tmpl[100:108] = b"0000644\0"
    tmpl[108:116] = b"0000000\0"
    tmpl[116:124] = b"0000000\0"
    tmpl[124:136] = b"00000000000\0"
    tmpl[136:148] = b"00000000000\0"
    tmpl[148:156] = b"        "
    tmpl[156] = ord("0")
    tmpl[257:265] = b"ustar\x0000"
    base = sum(tmpl)
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=1, mtime=0) as gz:
        chunk = []
        for i in range(n):
            h = bytearray(tmpl)
            name = b"many/f%07d" % i
            h[0:len(name)] = name
            h[148:156] = b"%06o\0 " % (base + sum(name))
            chunk.append(bytes(h))
            if len(chunk) == 8192:
                gz.write(b"".join(chunk))
                chunk = []
        gz.write(b"".join(chunk) + b"\0" * 1024)
    return out.getvalue()


def tar_of(fill):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        fill(tf)
    return buf.getvalue()


def base(tf):
    add_dir(tf, "etc")
    add_dir(tf, "usr")
    add_dir(tf, "usr/bin")
    add_link(tf, "bin", "usr/bin")


def etc_tree(tf):
    """An /etc with what the jail must show (nested directories and their
    modes, links relative, absolute and pointing out, ssl) and what it
    must not (the image's identity files, shadow, machine-id)."""
    add_file(tf, "etc/passwd", b"mallory:x:0:0::/:/bin/sh\n")
    add_file(tf, "etc/group", b"mallory:x:0:\n")
    add_file(tf, "etc/hosts", b"203.0.113.9 localhost\n")
    add_file(tf, "etc/shadow", b"root:image-shadow:1::::::\n", 0o600)
    add_file(tf, "etc/gshadow", b"root:image-gshadow::\n", 0o600)
    add_file(tf, "etc/machine-id", b"0123456789abcdef0123456789abcdef\n")
    add_file(tf, "etc/script.sh", b"#!/bin/sh\n", 0o755)
    add_dir(tf, "etc/deep")
    add_dir(tf, "etc/deep/a", 0o750)
    add_file(tf, "etc/deep/a/secret", b"mode 0600\n", 0o600)
    add_file(tf, "etc/deep/a/exec", b"#!/bin/sh\n", 0o755)
    add_link(tf, "etc/deep/rel", "../imported")
    add_link(tf, "etc/abs", "/etc/shadow")
    add_link(tf, "etc/out", "../../../../../root")
    add_dir(tf, "etc/ssl")
    add_file(tf, "etc/ssl/openssl.cnf", b"# the image's\n")
    add_dir(tf, "etc/ssl/certs")
    add_file(tf, "etc/ssl/certs/ca-certificates.crt", b"# no certificates\n")
    add_dir(tf, "etc/ssl/private", 0o700)
    add_dir(tf, "etc/alternatives")
    add_link(tf, "etc/alternatives/pager", "/bin/wd-probe")


def layers(case, arg, name="wd-probe"):
    """The layers (tar bytes each) and the config's "config" object."""
    config = {}

    def one(tf):
        base(tf)
        if case in ("probe", "probe-config", "probe-user", "probe-root", "probe-etc",
                    "probe-alias"):
            with open(arg, "rb") as f:
                add_file(tf, "usr/bin/" + name, f.read(), 0o755)
            add_file(tf, "etc/imported", b"from an OCI layout\n")
            # open to everyone: only a read-only mount keeps a sandbox
            # from writing these (gvisor_image.sh)
            add_dir(tf, "usr/share")
            add_dir(tf, "usr/share/wd-open", 0o777)
            add_file(tf, "usr/share/wd-open/file", b"the image's\n", 0o666)
            add_dir(tf, "etc/wd-open", 0o777)
            if case in ("probe-user", "probe-root"):
                # the host's cat and the libraries it loads, to read the
                # jail's /etc/passwd
                add_link(tf, "lib", "usr/lib")
                add_link(tf, "lib64", "usr/lib64")
                done = set()
                for path in ["/usr/bin/cat"] + host_libs("/usr/bin/cat"):
                    real = os.path.realpath(path)
                    rel = path.lstrip("/")
                    if rel.startswith("lib"):
                        rel = "usr/" + rel
                    parts = rel.split("/")
                    for i in range(1, len(parts)):
                        d = "/".join(parts[:i])
                        if d not in done and d not in ("usr", "usr/bin"):
                            add_dir(tf, d)
                            done.add(d)
                    with open(real, "rb") as f:
                        add_file(tf, rel, f.read(), 0o755)
            if case == "probe-etc":
                etc_tree(tf)
            if case == "probe-alias":
                # the host's cat is a system program; this image's runs
                # whatever the sandbox wrote at /workspace/cat
                add_link(tf, "usr/bin/cat", "/workspace/cat")
        elif case == "device":
            ti = tarfile.TarInfo("etc/null2")
            ti.type = tarfile.CHRTYPE
            ti.devmajor, ti.devminor = 1, 3
            tf.addfile(ti)
        elif case == "escape":
            add_file(tf, "../../../../../../.." + arg + "-dotdot", b"escaped\n")
            add_file(tf, arg + "-abs", b"escaped\n")
            add_link(tf, "out", os.path.dirname(arg))
            add_file(tf, "out/" + os.path.basename(arg) + "-through-link", b"escaped\n")
        elif case == "hardlink":
            add_link(tf, "shadow-copy", "/etc/shadow", tarfile.LNKTYPE)
        elif case == "sparse":
            real = 10 << 30
            data = b"x" * 4096
            smap = ("1\n%d\n%d\n" % (real - 4096, 4096)).encode()
            smap += b"\0" * (512 - len(smap))
            ti = tarfile.TarInfo("GNUSparseFile.0/big")
            ti.size = len(smap) + len(data)
            ti.pax_headers = {
                "GNU.sparse.major": "1",
                "GNU.sparse.minor": "0",
                "GNU.sparse.name": "big",
                "GNU.sparse.realsize": str(real),
            }
            tf.addfile(ti, io.BytesIO(smap + data))
        elif case == "link-layers":
            add_link(tf, "out", os.path.dirname(arg))
        elif case == "hardlink-layers":
            add_link(tf, "hostetc", "/etc")
        elif case == "many":
            add_dir(tf, "many")
            for i in range(int(arg)):
                ti = tarfile.TarInfo("many/f%06d" % i)
                tf.addfile(ti)
        elif case == "badenv":
            pass
        elif case == "whiteout":
            d, b = os.path.dirname(arg), os.path.basename(arg)
            add_file(tf, "../../../../../.." + d + "/.wh." + b, b"")
            add_file(tf, d + "/.wh." + b, b"")
            add_file(tf, "../../../../../.." + d + "/.wh..wh..opq", b"")
            add_file(tf, "usr/../../../../.wh.etc", b"")
        else:
            sys.exit("unknown case " + case)

    if case == "toomany":
        # never unpacked: refused from its headers (the diff_id is the
        # compressed digest, which only an unpacker would check)
        return [gzip_many(int(arg))], config
    out = [tar_of(one)]
    if case == "probe-user":
        config = {"User": "node"}
    elif case == "probe-root":
        config = {"User": "root", "WorkingDir": "/srv/\x1b[31mred"}
    elif case == "probe-config":
        config = {"Env": ["WD_OCI_ENV=from-the-config", "PATH=/usr/bin:/bin"],
                  "User": "1001:1001", "WorkingDir": "/srv/app"}
    elif case == "badenv":
        config = {"Env": ["GOOD=1", "BAD=\x1b[31mred"]}
    elif case == "link-layers":
        name = os.path.basename(arg) + "-through-link-layer"
        out.append(tar_of(lambda tf: add_file(tf, "out/" + name, b"escaped\n")))
    elif case == "hardlink-layers":
        out.append(tar_of(lambda tf: add_link(tf, "shadow-copy", "hostetc/shadow",
                                              tarfile.LNKTYPE)))
    return out, config


def sha(data):
    return hashlib.sha256(data).hexdigest()


def blob(root, data):
    d = sha(data)
    with open(os.path.join(root, "blobs", "sha256", d), "wb") as f:
        f.write(data)
    return "sha256:" + d, len(data)


def config_json(tars, config):
    return json.dumps({
        "architecture": "amd64", "os": "linux",
        "config": config,
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + sha(t) for t in tars]},
    }).encode()


def write_layout(root, tars, config):
    """An OCI layout in root; the config's and layers' digests."""
    os.makedirs(os.path.join(root, "blobs", "sha256"))
    with open(os.path.join(root, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)
    lds = [blob(root, t) for t in tars]
    cd, cs = blob(root, config_json(tars, config))
    manifest = json.dumps({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": cd, "size": cs},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar" +
                    ("+gzip" if t[:2] == b"\x1f\x8b" else ""),
                    "digest": ld, "size": ls} for (ld, ls), t in zip(lds, tars)],
    }).encode()
    md, ms = blob(root, manifest)
    with open(os.path.join(root, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": md, "size": ms,
            "annotations": {"org.opencontainers.image.ref.name": "t"}}]}, f)
    return cd, [ld for ld, _ in lds]


def member(tf, name, data=None, link=None):
    ti = tarfile.TarInfo(name)
    ti.mtime = int(time.time())
    if link is not None:
        ti.type = tarfile.SYMTYPE
        ti.linkname = link
        tf.addfile(ti)
    elif data is None:
        ti.type = tarfile.DIRTYPE
        ti.mode = 0o755
        tf.addfile(ti)
    else:
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))


def write_docker(path, tars, config):
    """docker save's legacy form: manifest.json, HEX.json, ID/layer.tar."""
    # the config's diff_ids: one per layer listed, the repeated one too
    cfg = config_json(tars + tars[:1] if len(tars) == 1 else tars, config)
    ids = [sha(t) for t in tars]
    names = [i + "/layer.tar" for i in ids]
    # a repeated layer, as docker save writes it: a link to the first copy
    if len(tars) == 1:
        names.append("dup/layer.tar")
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tf:
        for i, t in zip(ids, tars):
            member(tf, i)
            member(tf, i + "/VERSION", b"1.0")
            member(tf, i + "/layer.tar", t)
        if len(tars) == 1:
            member(tf, "dup")
            member(tf, "dup/layer.tar", link="../" + ids[0] + "/layer.tar")
        member(tf, sha(cfg) + ".json", cfg)
        member(tf, "manifest.json", json.dumps([{
            "Config": sha(cfg) + ".json", "RepoTags": ["probe:latest"],
            "Layers": names}]).encode())
        member(tf, "repositories", json.dumps(
            {"probe": {"latest": ids[-1]}}).encode())


def write_docker_oci(path, tars, config):
    """Docker 25's docker save: an OCI layout plus manifest.json."""
    root = path + ".d"
    cd, lds = write_layout(root, tars, config)
    with open(os.path.join(root, "manifest.json"), "w") as f:
        json.dump([{"Config": "blobs/sha256/" + cd[7:], "RepoTags": ["probe:latest"],
                    "Layers": ["blobs/sha256/" + d[7:] for d in lds]}], f)
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tf:
        for name in sorted(os.listdir(root)):
            tf.add(os.path.join(root, name), arcname=name)


def main():
    args = sys.argv[1:]
    form = "oci"
    if args and args[0] in ("--docker", "--docker-oci"):
        form = args.pop(0)[2:]
    dest, case = args[0], args[1]
    arg = args[2] if len(args) > 2 else ""
    name = args[3] if len(args) > 3 else "wd-probe"
    tars, config = layers(case, arg, name)
    if form == "docker":
        write_docker(dest, tars, config)
    elif form == "docker-oci":
        write_docker_oci(dest, tars, config)
    else:
        write_layout(dest, tars, config)


main()
