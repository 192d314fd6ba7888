#!/usr/bin/env python3
"""Run a command in what a Kubernetes pod's security context gives a
container, made here from the kernel's own parts (for doctor_pod.sh):

  podlike.py [--no-userns] [--mask-proc] [--seccomp-no-sysadmin]
             [--drop-sys-admin] -- COMMAND...

  (default)              hostUsers: false: a user namespace whose root is
                         uid 100000 on the host (65536 ids), and a mount
                         namespace of its own
  --no-userns            hostUsers: true: no user namespace (a mount
                         namespace only)
  --mask-proc            procMount: Default: /proc/sys, /proc/bus, /proc/fs,
                         /proc/irq bound read-only over themselves, as
                         runc's readonlyPaths
  --seccomp-no-sysadmin  the namespace rules of containerd's and Docker's
                         default seccomp profile for a container without
                         CAP_SYS_ADMIN: unshare and clone with a namespace
                         flag EPERM, clone3 ENOSYS (its flags are in memory,
                         out of a filter's sight)
  --drop-sys-admin       CAP_SYS_ADMIN out of every set (a bounding-set drop:
                         root's exec does not get it back)
  --seccomp-profile FILE a Localhost seccomp profile of the kind
                         deploy/kubernetes/seccomp/warden.json is (default
                         action SCMP_ACT_ALLOW, SCMP_ACT_ERRNO rules by name,
                         no argument conditions; other ABIs than x86-64
                         refused, as for an architecture it does not list),
                         compiled here as runc would (x86-64 only)
  --deny NAME            with --seccomp-profile: NAME refused (EPERM) too

Root only.  Exit: the command's status, or 125 when the environment cannot
be made.
"""
import ctypes
import json
import os
import struct
import sys

libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
# CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME
NS_FLAGS = (0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 |
            0x20000000 | 0x40000000 | 0x00000080)
MS_BIND, MS_REMOUNT, MS_RDONLY, MS_REC, MS_PRIVATE = 4096, 32, 1, 16384, 1 << 18
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
PR_CAPBSET_DROP = 24
CAP_SYS_ADMIN = 21


def die(msg):
    print(f"podlike: {msg}", file=sys.stderr)
    sys.exit(125)


def check(rc, what):
    if rc != 0:
        e = ctypes.get_errno()
        die(f"{what}: {os.strerror(e)}")


def mount(src, dst, fstype, flags):
    check(libc.mount(src.encode() if src else None, dst.encode(),
                     fstype.encode() if fstype else None, ctypes.c_ulong(flags), None),
          f"mount {dst}")


def seccomp_no_sysadmin():
    # struct sock_filter {u16 code; u8 jt, jf; u32 k}
    LD_W_ABS, JEQ_K, JSET_K, RET_K = 0x20, 0x15, 0x45, 0x06
    ALLOW, ERRNO = 0x7FFF0000, 0x00050000
    EPERM, ENOSYS = 1, 38
    AUDIT_ARCH_X86_64 = 0xC000003E
    NR_UNSHARE, NR_CLONE, NR_CLONE3 = 272, 56, 435
    prog = [
        (LD_W_ABS, 0, 0, 4),                   # 0 arch
        (JEQ_K, 1, 0, AUDIT_ARCH_X86_64),      # 1
        (RET_K, 0, 0, ALLOW),                  # 2 another ABI: this test's filter
        (LD_W_ABS, 0, 0, 0),                   # 3 nr
        (JEQ_K, 4, 0, NR_UNSHARE),             # 4 -> 9
        (JEQ_K, 4, 0, NR_CLONE3),              # 5 -> 10
        (JEQ_K, 0, 4, NR_CLONE),               # 6 -> 7, else 11
        (LD_W_ABS, 0, 0, 16),                  # 7 args[0], low half (little-endian)
        (JSET_K, 0, 2, NS_FLAGS),              # 8 -> 9, else 11
        (RET_K, 0, 0, ERRNO | EPERM),          # 9
        (RET_K, 0, 0, ERRNO | ENOSYS),         # 10
        (RET_K, 0, 0, ALLOW),                  # 11
    ]
    load_bpf(prog)


def syscall_numbers():
    """x86-64 system call numbers by name, from the kernel's uapi header."""
    nrs = {}
    path = "/usr/include/x86_64-linux-gnu/asm/unistd_64.h"
    try:
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) == 3 and p[0] == "#define" and p[1].startswith("__NR_"):
                    nrs[p[1][5:]] = int(p[2])
    except OSError as e:
        die(f"{path}: {e.strerror}")
    return nrs


def seccomp_profile(path, extra):
    """Compile a deny-list profile (default allow) to BPF (read before the
    user namespace is made: its root may not read the file)."""
    if os.uname().machine != "x86_64":
        die("--seccomp-profile: x86-64 only")
    try:
        with open(path) as f:
            prof = json.load(f)
    except (OSError, ValueError) as e:
        die(f"{path}: {e}")
    if prof.get("defaultAction") != "SCMP_ACT_ALLOW":
        die(f"{path}: only a defaultAction SCMP_ACT_ALLOW profile is compiled here")
    nrs = syscall_numbers()
    deny = {}
    for rule in prof.get("syscalls", []):
        if rule.get("action") != "SCMP_ACT_ERRNO" or rule.get("args"):
            die(f"{path}: only SCMP_ACT_ERRNO rules without args are compiled here")
        for name in rule["names"]:
            if name in nrs:  # runc skips a name the kernel does not have
                deny[nrs[name]] = rule.get("errnoRet", 1)
    for name in extra:
        deny[nrs[name]] = 1
    LD_W_ABS, JEQ_K, JGE_K, RET_K = 0x20, 0x15, 0x35, 0x06
    ALLOW, ERRNO = 0x7FFF0000, 0x00050000
    prog = [(LD_W_ABS, 0, 0, 4), (JEQ_K, 1, 0, 0xC000003E), (RET_K, 0, 0, ERRNO | 1),
            (LD_W_ABS, 0, 0, 0), (JGE_K, 0, 1, 0x40000000), (RET_K, 0, 0, ERRNO | 1)]
    for nr, e in sorted(deny.items()):
        prog += [(JEQ_K, 0, 1, nr), (RET_K, 0, 0, ERRNO | e)]
    prog.append((RET_K, 0, 0, ALLOW))
    return prog


def load_bpf(prog):
    raw = b"".join(struct.pack("HBBI", *i) for i in prog)
    buf = ctypes.create_string_buffer(raw)

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fp = SockFprog(len(prog), ctypes.cast(buf, ctypes.c_void_p))
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fp), 0, 0),
          "seccomp")


def main(argv):
    opts = set()
    global profile, deny_extra
    while argv and argv[0] != "--":
        a = argv.pop(0)
        if a in ("--seccomp-profile", "--deny") and argv:
            if a == "--deny":
                deny_extra.append(argv.pop(0))
            else:
                profile = argv.pop(0)
            continue
        if a not in ("--no-userns", "--mask-proc", "--seccomp-no-sysadmin",
                     "--drop-sys-admin"):
            die(f"unknown option '{a}'")
        opts.add(a)
    if not argv or len(argv) < 2:
        die("usage: podlike.py [OPTIONS] -- COMMAND...")
    global profile_prog
    if profile:
        profile_prog = seccomp_profile(profile, deny_extra)
    cmd = argv[1:]
    if "--no-userns" not in opts:
        # The parent writes the maps of the child's new user namespace, as
        # the runtime does for a pod with hostUsers: false.
        r, w = os.pipe()
        r2, w2 = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(w)
            os.close(r2)
            check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS), "unshare")
            os.write(w2, b"u")
            os.close(w2)
            if os.read(r, 1) != b"m":
                os._exit(125)
            os.setresgid(0, 0, 0)
            os.setresuid(0, 0, 0)
            return child(opts, cmd)
        os.close(r)
        os.close(w2)
        if os.read(r2, 1) != b"u":
            os.waitpid(pid, 0)
            sys.exit(125)
        for f in ("uid_map", "gid_map"):
            with open(f"/proc/{pid}/{f}", "w") as fh:
                fh.write("0 100000 65536\n")
        os.write(w, b"m")
        os.close(w)
        _, st = os.waitpid(pid, 0)
        sys.exit(os.waitstatus_to_exitcode(st))
    check(libc.unshare(CLONE_NEWNS), "unshare")
    return child(opts, cmd)


def child(opts, cmd):
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    if "--mask-proc" in opts:
        for p in ("/proc/sys", "/proc/bus", "/proc/fs", "/proc/irq"):
            if os.path.isdir(p):
                mount(p, p, None, MS_BIND | MS_REC)
                mount(None, p, None, MS_BIND | MS_REMOUNT | MS_RDONLY)
    if "--drop-sys-admin" in opts:
        check(libc.prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0), "drop CAP_SYS_ADMIN")
    if "--seccomp-no-sysadmin" in opts:
        seccomp_no_sysadmin()
    if profile_prog:
        load_bpf(profile_prog)
    try:
        os.execvp(cmd[0], cmd)
    except OSError as e:
        die(f"{cmd[0]}: {e.strerror}")


profile = None
profile_prog = None
deny_extra = []

if __name__ == "__main__":
    main(sys.argv[1:])
