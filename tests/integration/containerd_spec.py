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
process's cwd) are tmpfs, as emptyDir volumes; so are /agent and
/agent-work, owned by uid 1000, for warden run as that user (fsGroup).
CASE "user" is the pod with runAsUser: 1000 and no capability at all.
Cases combine with "+" ("user+masked").
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
    cases = set(case.split("+"))
    if not cases <= {"pod", "nouserns", "nocap", "adminonly", "masked", "noperm", "nopivot",
                     "user"}:
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
    if "nocap" in cases:
        caps = [c for c in caps if c != "CAP_SYS_ADMIN"]
    elif "adminonly" in cases:
        caps = ["CAP_SYS_ADMIN"]
    proc["capabilities"] = {k: list(caps) for k in ("bounding", "effective", "permitted")}
    if "user" in cases:
        # runAsUser: 1000 with capabilities drop ALL
        proc["user"] = {"uid": 1000, "gid": 1000}
        proc["capabilities"] = {k: [] for k in ("bounding", "effective", "permitted")}
    if "nouserns" in cases:
        lin["namespaces"] = [n for n in lin["namespaces"] if n["type"] != "user"]
        lin.pop("uidMappings", None)
        lin.pop("gidMappings", None)
    # Kubernetes refuses procMount: Unmasked without hostUsers: false
    if not cases & {"masked", "nouserns"}:
        lin.pop("maskedPaths", None)
        lin.pop("readonlyPaths", None)
    sc = lin["seccomp"]["syscalls"]
    if "nopivot" not in cases:
        # the permission: containerd's default profile, even for a
        # container holding CAP_SYS_ADMIN, has no pivot_root
        sc.append({"names": ["pivot_root"], "action": "SCMP_ACT_ALLOW"})
    if "noperm" in cases:
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
    for d, mode, owner in (("/tmp", "1777", 0), ("/var/lib/warden", "700", 0), ("/work", "755", 0),
                           ("/agent", "700", 1000), ("/agent-work", "755", 1000)):
        opts = ["nosuid", "nodev", "mode=" + mode, "size=262144k"]
        if owner:
            opts += ["uid=%d" % owner, "gid=%d" % owner]
        spec["mounts"].append({"destination": d, "type": "tmpfs", "source": "tmpfs",
                               "options": opts})
    json.dump(spec, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
