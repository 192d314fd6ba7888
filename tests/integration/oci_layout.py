#!/usr/bin/env python3
"""Write an OCI image layout with one hand-made layer, for image.sh.

    oci_layout.py DIR CASE [ARG [NAME]]

CASE is the layer: "probe" (ARG: a static program, at usr/bin/wd-probe,
or at usr/bin/NAME with a fourth argument NAME; with bin -> usr/bin, an etc/,
and directories and a file of mode 0777 and 0666 that only a read-only
mount protects), or a hostile one: "device" (a character
device node), "escape" (ARG: a host path; the entries ../../..ARG,
/ARG-abs and a link to ARG's directory then a file through it), "hardlink"
(a hard link to /etc/shadow), "sparse" (a 10 GB GNU sparse file holding
4 KiB of data).  The layer is an uncompressed tar, the tag "t".
"""
import hashlib
import io
import json
import os
import sys
import tarfile


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


def layer(case, arg, name):
    buf = io.BytesIO()
    fmt = tarfile.PAX_FORMAT
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tf:
        add_dir(tf, "etc")
        add_dir(tf, "usr")
        add_dir(tf, "usr/bin")
        add_link(tf, "bin", "usr/bin")
        if case == "probe":
            with open(arg, "rb") as f:
                add_file(tf, "usr/bin/" + name, f.read(), 0o755)
            add_file(tf, "etc/imported", b"from an OCI layout\n")
            # open to everyone: only a read-only mount keeps a sandbox
            # from writing these (gvisor_image.sh)
            add_dir(tf, "usr/share")
            add_dir(tf, "usr/share/wd-open", 0o777)
            add_file(tf, "usr/share/wd-open/file", b"the image's\n", 0o666)
            add_dir(tf, "etc/wd-open", 0o777)
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
        else:
            sys.exit("unknown case " + case)
    return buf.getvalue()


def blob(root, data):
    d = hashlib.sha256(data).hexdigest()
    with open(os.path.join(root, "blobs", "sha256", d), "wb") as f:
        f.write(data)
    return "sha256:" + d, len(data)


def main():
    root, case = sys.argv[1], sys.argv[2]
    arg = sys.argv[3] if len(sys.argv) > 3 else ""
    name = sys.argv[4] if len(sys.argv) > 4 else "wd-probe"
    os.makedirs(os.path.join(root, "blobs", "sha256"))
    with open(os.path.join(root, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)
    tar = layer(case, arg, name)
    ld, ls = blob(root, tar)
    config = json.dumps({
        "architecture": "amd64", "os": "linux",
        "config": {},
        "rootfs": {"type": "layers", "diff_ids": [ld]},
    }).encode()
    cd, cs = blob(root, config)
    manifest = json.dumps({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": cd, "size": cs},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                    "digest": ld, "size": ls}],
    }).encode()
    md, ms = blob(root, manifest)
    with open(os.path.join(root, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": md, "size": ms,
            "annotations": {"org.opencontainers.image.ref.name": "t"}}]}, f)


main()
