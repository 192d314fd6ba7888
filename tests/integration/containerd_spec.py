#!/usr/bin/env python3
"""The OCI spec a Kubernetes pod's security context makes, for containerd.sh.

    containerd_spec.py BASE.json CASE ROOTFS [ARG...] > config.json

BASE.json is `ctr containers info` of a container containerd made with
`--uidmap --gidmap --seccomp --cap-add CAP_SYS_ADMIN`: containerd's own
default spec, its default seccomp profile as generated for a container
holding CAP_SYS_ADMIN, and the user namespace.  CASE "pod" is what warden
needs, the spec of

    hostUsers: false                  user namespace, uid/gid maps
    capabilities: drop ALL, add SYS_ADMIN
    procMount: Unmasked               no maskedPaths, no readonlyPaths
    seccompProfile: Localhost         containerd's default profile (which,
                                      for a container holding CAP_SYS_ADMIN,
                                      allows clone, clone3 and unshare with
                                      namespace flags, mount, setns) plus
                                      pivot_root

(containerd's default capabilities stay, as in a pod that adds SYS_ADMIN
without dropping ALL), and each other CASE removes one requirement:
"nouserns" (no user namespace, no maps: the capability is the host's;
/proc masked, as Kubernetes allows procMount: Unmasked only with
hostUsers: false),
"nocap" (containerd's default capabilities without CAP_SYS_ADMIN),
"adminonly" (drop ALL, add SYS_ADMIN), "masked" (containerd's maskedPaths
and readonlyPaths), "noperm" (namespace creation refused as containerd
writes it for a container without CAP_SYS_ADMIN: clone with namespace
flags refused, clone3 ENOSYS, unshare absent), "nopivot" (containerd's
default profile as it is: no pivot_root).
ARG... is the process's argv.  The root is ROOTFS (containerd's remapped
snapshot of the image, mounted), writable as a pod's is; /tmp,
/var/lib/warden (warden's state) and /work (the workspace, the
process's cwd) are tmpfs, as emptyDir volumes.
"""
import json
import os
import sys

NS_FLAGS = 2114060288  # containerd's mask: CLONE_NEWNS|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET|NEWCGROUP


def main():
    base, case, rootfs = sys.argv[1:4]
    argv = sys.argv[4:]
    with open(base) as f:
        spec = json.load(f)["Spec"]
    if case not in ("pod", "nouserns", "nocap", "adminonly", "masked", "noperm", "nopivot"):
        sys.exit("containerd_spec.py: unknown case %s" % case)
    lin = spec["linux"]
    spec["root"] = {"path": rootfs, "readonly": False}
    proc = spec["process"]
    proc["args"] = argv
    proc["terminal"] = False
    proc["cwd"] = "/work"
    proc["env"] = ["PATH=/usr/local/bin:/usr/bin", "HOME=/root"]
    # a sanitizer build's settings reach warden in the pod (halt_on_error)
    proc["env"] += ["%s=%s" % (k, os.environ[k]) for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS")
                    if k in os.environ]
    # Kubernetes' allowPrivilegeEscalation: false is no_new_privs
    proc["noNewPrivileges"] = True
    caps = proc["capabilities"]["bounding"]
    if case == "nocap":
        caps = [c for c in caps if c != "CAP_SYS_ADMIN"]
    elif case == "adminonly":
        caps = ["CAP_SYS_ADMIN"]
    proc["capabilities"] = {k: list(caps) for k in ("bounding", "effective", "permitted")}
    if case == "nouserns":
        lin["namespaces"] = [n for n in lin["namespaces"] if n["type"] != "user"]
        lin.pop("uidMappings", None)
        lin.pop("gidMappings", None)
    # Kubernetes refuses procMount: Unmasked without hostUsers: false
    if case not in ("masked", "nouserns"):
        lin.pop("maskedPaths", None)
        lin.pop("readonlyPaths", None)
    sc = lin["seccomp"]["syscalls"]
    if case != "nopivot":
        # the permission: containerd's default profile, even for a
        # container holding CAP_SYS_ADMIN, has no pivot_root
        sc.append({"names": ["pivot_root"], "action": "SCMP_ACT_ALLOW"})
    if case == "noperm":
        rules = []
        for r in sc:
            names = [n for n in r["names"] if n not in ("clone", "clone3", "unshare")]
            if names:
                rules.append(dict(r, names=names))
        rules.append({"names": ["clone"], "action": "SCMP_ACT_ALLOW",
                      "args": [{"index": 0, "value": NS_FLAGS, "op": "SCMP_CMP_MASKED_EQ"}]})
        rules.append({"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38})
        lin["seccomp"]["syscalls"] = rules
    # the cgroup file system read-only, as containerd's CRI mounts it for a
    # pod that is not privileged
    spec["mounts"].append({"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup",
                           "options": ["nosuid", "noexec", "nodev", "relatime", "ro"]})
    for d, mode in (("/tmp", "1777"), ("/var/lib/warden", "700"), ("/work", "755")):
        spec["mounts"].append({"destination": d, "type": "tmpfs", "source": "tmpfs",
                               "options": ["nosuid", "nodev", "mode=" + mode, "size=262144k"]})
    json.dump(spec, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
