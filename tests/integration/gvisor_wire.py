#!/usr/bin/env python3
"""The resident executor's side of its protocol (src/supervise/gvisor_wire.h),
run on the host: `warden-init serve` with its stdin and stdout as pipes,
as runsc create gives them to it inside gVisor.

  gvisor_wire.py WARDEN-INIT

A well-formed exchange: HELLO, a command's stdout and stderr apart, its
exit status from wait4, DONE last; the command runs as uid 1000 with no
capability; KILL ends its process group.  Then each malformed request,
on a fresh executor: the executor exits 3 naming the fault, and the
command the frame carries (a touch of a canary file) never runs.  The
same for `serve vacant` (a warm pool's executor): a RUN before ATTACH,
an ATTACH to a sandbox that is not vacant, an ATTACH with a payload, and
an ATTACH that fails (no staging mount on the host) with a RUN behind it.
And the filter `serve vacant` puts on mount and umount2 at ATTACH: a
mount the kernel would answer EFAULT (the control, plain `serve`) is
EPERM after an ATTACH in a mount namespace of the test's own.

As root (the executor drops to uid 1000); 77 otherwise.  Well under 2 s.
"""
import os
import select
import struct
import subprocess
import sys
import tempfile
import time

HDR = struct.Struct("=IHHI")
RUN, KILL, CLOSE, ATTACH = 1, 2, 3, 4
HELLO, OUT, EXIT, DONE, FAIL = 10, 11, 12, 13, 14
MAGIC = b"warden-init serve 1"
MAX_REQUEST = 512 << 10

failures = 0


def check(ok, what):
    global failures
    print(("ok - " if ok else "not ok - ") + what)
    if not ok:
        failures += 1


def run_payload(argv, env=(), cwd="/", argc=None, envc=None, tail=b""):
    words = [cwd] + list(argv) + list(env)
    body = b"".join(w.encode() + b"\0" for w in words)
    return struct.pack("=II", len(argv) if argc is None else argc,
                       len(env) if envc is None else envc) + body + tail


def frame(ftype, fid, payload=b"", length=None):
    return HDR.pack(len(payload) if length is None else length, ftype, 0, fid) + payload


class Executor:
    def __init__(self, prog, vacant=False, argv=None):
        self.p = subprocess.Popen(argv or [prog, "serve"] + (["vacant"] if vacant else []),
                                  stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.buf = b""

    def send(self, data):
        try:
            self.p.stdin.write(data)
            self.p.stdin.flush()
        except BrokenPipeError:
            pass

    def read_frame(self, timeout=10.0):
        end = time.monotonic() + timeout
        while True:
            if len(self.buf) >= HDR.size:
                n, t, aux, fid = HDR.unpack_from(self.buf)
                if len(self.buf) >= HDR.size + n:
                    payload = self.buf[HDR.size:HDR.size + n]
                    self.buf = self.buf[HDR.size + n:]
                    return t, aux, fid, payload
            left = end - time.monotonic()
            if left <= 0:
                return None
            r, _, _ = select.select([self.p.stdout], [], [], left)
            if not r:
                return None
            chunk = os.read(self.p.stdout.fileno(), 65536)
            if not chunk:
                return None
            self.buf += chunk

    def until_done(self, fid, timeout=10.0):
        """stdout, stderr, wait status (None if no EXIT), DONE seen."""
        out, err, status = b"", b"", None
        while True:
            f = self.read_frame(timeout)
            if f is None:
                return out, err, status, False
            t, aux, i, payload = f
            if i != fid:
                continue
            if t == OUT:
                if aux == 1:
                    out += payload
                else:
                    err += payload
            elif t == EXIT:
                status = struct.unpack("=i", payload)[0]
            elif t == DONE:
                return out, err, status, True

    def close(self):
        try:
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        try:
            return self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            return self.p.wait()


def main():
    if len(sys.argv) != 2:
        print("usage: gvisor_wire.py WARDEN-INIT", file=sys.stderr)
        return 2
    prog = sys.argv[1]
    if os.geteuid() != 0:
        print("SKIP: the executor drops from root to uid 1000: run as root")
        return 1 if os.environ.get("WD_MUST_WORK") == "1" else 77
    tmp = tempfile.mkdtemp(prefix="wd-wire.")
    os.chmod(tmp, 0o777)

    ex = Executor(prog)
    f = ex.read_frame()
    check(f is not None and f[0] == HELLO and f[2] == 0 and f[3] == MAGIC,
          "HELLO with the protocol's magic first")
    ex.send(frame(RUN, 1, run_payload(["/bin/sh", "-c", "echo out; echo err >&2; exit 3"],
                                      ["PATH=/bin"])))
    out, err, status, done = ex.until_done(1)
    check(out == b"out\n" and err == b"err\n", "stdout and stderr come back apart")
    check(status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 3,
          "the exit status is wait4's (3)")
    check(done, "DONE ends the command")
    ex.send(frame(RUN, 2, run_payload(
        ["/bin/sh", "-c", "id -u; id -g; id -G; grep -E '^Cap(Prm|Eff|Bnd|Amb):' /proc/self/status"],
        ["PATH=/usr/bin:/bin"], cwd=tmp)))
    out, err, status, done = ex.until_done(2)
    lines = out.decode(errors="replace").split("\n")
    caps = [ln.split()[1] for ln in lines if ln.startswith("Cap")]
    check(lines[:3] == ["1000", "1000", "1000"] and caps and all(c == "0" * 16 for c in caps),
          "the command runs as uid and gid 1000, no group, no capability (%r)" % out)
    ex.send(frame(RUN, 3, run_payload(["sleep", "30"])))
    time.sleep(0.3)
    t0 = time.monotonic()
    ex.send(frame(KILL, 3, struct.pack("=I", 9)))
    out, err, status, done = ex.until_done(3)
    check(status is not None and os.WIFSIGNALED(status) and os.WTERMSIG(status) == 9 and done and
          time.monotonic() - t0 < 5, "KILL ends the command's group: signal 9, then DONE")
    ex.send(frame(RUN, 4, run_payload(["no-such-program-here"])))
    out, err, status, done = ex.until_done(4)
    check(status is not None and os.WEXITSTATUS(status) == 127 and
          b"cannot execute 'no-such-program-here'" in err, "a missing program: 127, said so")
    # mount(2) with a type string at an unmapped address: the kernel
    # copies the strings in before its privilege check, so a process with
    # no capability and no filter gets EFAULT, and only a seccomp filter
    # answers EPERM.  (Inside gVisor the capability check comes first and
    # hides whether the filter is there: this is where it shows.)
    mount_bad = ["/usr/bin/python3", "-c", "import ctypes; l = ctypes.CDLL(None, use_errno=True); "
                 "r = l.mount(b'none', b'/tmp', ctypes.c_void_p(1), 0, None); "
                 "print(r, ctypes.get_errno())"]
    ex.send(frame(RUN, 5, run_payload(mount_bad, ["PATH=/usr/bin:/bin"])))
    out, err, status, done = ex.until_done(5)
    check(out == b"-1 14\n", "serve (no filter of its own): mount with a bad type pointer is "
          "EFAULT, the control (%r %r)" % (out, err[-200:]))
    check(ex.close() == 0, "EOF on the channel: the executor exits 0")

    # serve vacant, attached: in a mount namespace of its own with a root
    # of binds (the host's /usr, /etc, /dev) and a staging tmpfs at
    # /.warden-stage, as the gofer's side gives it inside gVisor
    root = os.path.join(tmp, "root")
    os.mkdir(root)
    setup = (
        'set -e; R=$1; mount --make-rprivate /; mount -t tmpfs -o mode=0755 none "$R"; '
        'for d in usr etc dev proc tmp workspace .warden-stage; do mkdir -p "$R/$d"; done; '
        'chmod 1777 "$R/tmp"; for l in bin lib lib64 sbin; do ln -s "usr/$l" "$R/$l"; done; '
        'for d in usr etc dev; do mount --rbind "/$d" "$R/$d"; done; '
        'mount -t proc proc "$R/proc"; mount -t tmpfs none "$R/.warden-stage"; '
        'mkdir "$R/.warden-stage/w"; cp "$2" "$R/warden-init"; '
        'exec chroot "$R" /warden-init serve vacant')
    ex = Executor(prog, argv=["unshare", "-m", "sh", "-c", setup, "sh", root, prog])
    f = ex.read_frame(30)
    check(f is not None and f[0] == HELLO, "serve vacant in its own mount namespace says HELLO")
    ex.send(frame(ATTACH, 6))
    out, err, status, done = ex.until_done(6)
    check(status == 0 and done, "ATTACH binds the staging directory onto /workspace")
    ex.send(frame(RUN, 7, run_payload(mount_bad, ["PATH=/usr/bin:/bin"])))
    out, err, status, done = ex.until_done(7)
    check(out == b"-1 1\n", "after ATTACH the executor's filter refuses mount to the command: "
          "EPERM where the control got EFAULT (%r %r)" % (out, err[-200:]))
    ex.close()

    # Each malformed request on a fresh executor: exit 3, named, nothing run.
    canary = os.path.join(tmp, "ran")
    touch = ["/bin/touch", canary]
    bad = [
        ("a length past the bound", frame(RUN, 9, run_payload(touch), length=MAX_REQUEST + 1),
         "bad frame header"),
        ("id 0", frame(RUN, 0, run_payload(touch)), "bad frame header"),
        ("argc 0", frame(RUN, 9, run_payload(touch, argc=0)), "RUN: bad counts"),
        ("argc past the strings", frame(RUN, 9, run_payload(touch, argc=3)), "RUN: bad strings"),
        ("trailing bytes", frame(RUN, 9, run_payload(touch, tail=b"x")), "RUN: trailing bytes"),
        ("a string without its NUL", frame(RUN, 9, run_payload(touch)[:-1]), "RUN: bad strings"),
        ("a relative cwd", frame(RUN, 9, run_payload(touch, cwd="tmp")), "RUN: bad cwd"),
        ("an unknown type", frame(77, 9, b""), "unknown request"),
        ("KILL with signal 0", frame(KILL, 9, struct.pack("=I", 0)), "KILL: bad signal"),
        ("KILL of the wrong length", frame(KILL, 9, b"\x09"), "KILL: bad length"),
        ("a second RUN of a live id",
         frame(RUN, 9, run_payload(["sleep", "1"])) + frame(RUN, 9, run_payload(touch)),
         "a known id"),
    ]
    bad = [(what, False, data, msg) for what, data, msg in bad] + [
        ("serve vacant: a RUN before ATTACH", True, frame(RUN, 9, run_payload(touch)),
         "RUN before ATTACH"),
        ("serve: an ATTACH where nothing is vacant", False, frame(ATTACH, 9),
         "ATTACH: not vacant"),
        ("serve vacant: an ATTACH with a payload", True, frame(ATTACH, 9, b"x"),
         "ATTACH: not vacant"),
        ("serve vacant: an ATTACH that fails (no staging mount here), a RUN behind it", True,
         frame(ATTACH, 9) + frame(RUN, 10, run_payload(touch)), "ATTACH failed"),
    ]
    for what, vacant, data, msg in bad:
        ex = Executor(prog, vacant)
        ex.read_frame()
        ex.send(data)
        try:
            rc = ex.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            ex.p.kill()
            rc = ex.p.wait()
        stderr = ex.p.stderr.read().decode(errors="replace")
        check(rc == 3 and msg in stderr and not os.path.exists(canary),
              "%s: refused, exit 3, nothing run (%d, %s)" % (what, rc, stderr.strip()))
        ex.close()
    subprocess.run(["rm", "-rf", tmp])
    print("# all passed" if not failures else "# failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
