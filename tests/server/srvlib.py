"""Shared helpers for the tests of `warden serve` (standard library only).

Environment (tests/server/meson.build):
  WARDEN        the built warden
  WD_MUST_WORK  1: a test the host cannot run fails instead of skipping (77)

Each test prints "ok - ..." / "not ok - ..." lines and exits 0, 1 on a
failure, or 77 when the host cannot run sandboxes.
"""
import http.client
import json
import os
import re
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time

WARDEN = os.path.realpath(os.environ.get("WARDEN", "build/warden"))
MUST_WORK = os.environ.get("WD_MUST_WORK") == "1"

failures = 0


def _slowdown():
    """How much slower than a quiet host this one is, as tests/integration's
    lib.sh reckons it: 1 + the 1-minute load per CPU when the test starts
    (at most 20), and 3x for a sanitizer build of warden."""
    try:
        with open("/proc/loadavg") as f:
            load = float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        load = 0.0
    f = min(1 + load / (os.cpu_count() or 1), 20)
    try:
        with open(WARDEN, "rb") as w:
            data = w.read()
        if b"__asan_init" in data or b"__tsan_init" in data:
            f *= 3
    except OSError:
        pass
    return f


SLOWDOWN = _slowdown()


def scaled(seconds):
    """A window or deadline of SECONDS on a quiet host, stretched for this
    one (SLOWDOWN): for a test that must give the server a fixed time, an
    idle window say, which a loaded host can overrun before the test looks."""
    return int(seconds * SLOWDOWN + 0.999)


def ok(cond, what):
    global failures
    print(("ok - " if cond else "not ok - ") + what, flush=True)
    if not cond:
        failures += 1
    return cond


def done():
    sys.exit(1 if failures else 0)


def skip(why):
    print("# skip: " + why, flush=True)
    sys.exit(1 if MUST_WORK else 77)


def proc_children(ppid, comm=None):
    """The pids whose parent is ppid (and whose name is comm, if given).

    A process can end between the listing of /proc and the reading of
    its stat file; such a process is no longer anyone's child: skipped."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
        except OSError:
            continue
        name = st[st.index("(") + 1:st.rindex(")")]
        rest = st[st.rindex(")") + 2:].split()
        if int(rest[1]) == ppid and (comm is None or name == comm):
            out.append(int(d))
    return out


class Env:
    """A scratch directory: a workspace (a git repository with a file and
    a test), a state directory for approvals, a token for HTTP."""

    def __init__(self):
        self.top = tempfile.mkdtemp(prefix="wd-srv.")
        os.chmod(self.top, 0o755)
        self.ws = os.path.join(self.top, "ws")
        self.state = os.path.join(self.top, "state")
        os.mkdir(self.ws)
        os.chmod(self.ws, 0o755)
        with open(os.path.join(self.ws, "hello.txt"), "w") as f:
            f.write("hello from the workspace\n")
        self.token = os.path.join(self.top, "token")
        fd = os.open(self.token, os.O_WRONLY | os.O_CREAT, 0o600)
        os.write(fd, os.urandom(24).hex().encode() + b"\n")
        os.close(fd)
        self.env = dict(os.environ, WARDEN_STATE_DIR=self.state)

    def token_value(self):
        with open(self.token) as f:
            return f.read().strip()

    def close(self):
        shutil.rmtree(self.top, ignore_errors=True)

    def require_sandboxes(self):
        r = subprocess.run([WARDEN, "run", "-w", self.ws, "--", "/bin/true"],
                           capture_output=True, text=True, env=self.env, timeout=60)
        if r.returncode != 0:
            skip("this host cannot run a sandbox: " + r.stderr.strip())


class Server:
    """warden serve with the given transport options."""

    def __init__(self, env, *args, stdio=False, workspace=True, prefix=()):
        self.env = env
        self.sock = None
        # workspace=False: none at start (serve --await-activation);
        # prefix: e.g. setpriv, to run it as another user
        cmd = [*prefix, WARDEN, "serve", *(["-w", env.ws] if workspace else []), *args]
        if stdio:
            cmd.append("--stdio")
        self.errf = open(os.path.join(env.top, "server.%d.err" % time.monotonic_ns()), "w+")
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE if stdio else subprocess.DEVNULL,
                                  stdout=subprocess.PIPE if stdio else subprocess.DEVNULL,
                                  stderr=self.errf, env=env.env)
        self.port = None
        if "--listen" in args:
            self.port = self._wait_port()
        if "--socket" in args:
            path = args[list(args).index("--socket") + 1]
            self._wait_path(path)

    def _wait_port(self):
        for _ in range(500):
            self.errf.seek(0)
            for line in self.errf.read().splitlines():
                m = re.search(r"listening on http://\S+?:(\d+)/mcp", line)
                if m:
                    return int(m.group(1))
            if self.p.poll() is not None:
                break
            time.sleep(0.01)
        raise RuntimeError("no port: " + self.stderr())

    def _wait_path(self, path):
        for _ in range(500):
            if os.path.exists(path):
                return
            if self.p.poll() is not None:
                break
            time.sleep(0.01)
        raise RuntimeError("no socket: " + self.stderr())

    def stderr(self):
        self.errf.seek(0)
        return self.errf.read()

    def children(self):
        """warden-init processes (sandboxes) of this server."""
        r = subprocess.run(["ps", "-o", "comm=", "--ppid", str(self.p.pid)],
                           capture_output=True, text=True)
        return [c for c in r.stdout.split() if c == "warden-init"]

    def no_sandbox_left(self, timeout=10):
        end = time.time() + timeout
        while time.time() < end:
            if not self.children():
                return True
            time.sleep(0.05)
        return False

    def stop(self, sig=15):
        if self.p.poll() is None:
            self.p.send_signal(sig)
        try:
            return self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            return self.p.wait()


class LineClient:
    """JSON-RPC over a line transport: the server's stdio, or its socket."""

    def __init__(self, server=None, path=None):
        if path:
            self.s = socket.socket(socket.AF_UNIX)
            self.s.connect(path)
            self.rfd = self.wfd = self.s.fileno()
        else:
            self.s = None
            self.rfd = server.p.stdout.fileno()
            self.wfd = server.p.stdin.fileno()
        self.buf = b""
        self.notes = []
        self.next_id = 1

    def send_raw(self, data):
        view = memoryview(data)
        while view:
            n = os.write(self.wfd, view[:1 << 20])
            view = view[n:]

    def send(self, obj):
        self.send_raw(json.dumps(obj).encode() + b"\n")

    def recv(self, timeout=30):
        end = time.time() + timeout
        while b"\n" not in self.buf:
            left = end - time.time()
            if left <= 0:
                raise TimeoutError("no message within %s s" % timeout)
            r, _, _ = select.select([self.rfd], [], [], left)
            if r:
                chunk = os.read(self.rfd, 1 << 16)
                if not chunk:
                    raise EOFError("the server closed the connection")
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def answer(self, rid, timeout=60):
        """The response to id rid; notifications on the way are kept."""
        while True:
            m = self.recv(timeout)
            if "method" in m:
                self.notes.append(m)
            elif m.get("id") == rid:
                return m

    def call(self, method, params=None, timeout=60):
        rid = self.next_id
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.answer(rid, timeout)

    def close(self):
        if self.s:
            self.s.close()

    def initialize(self):
        r = self.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                     "clientInfo": {"name": "test", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return r


def http_post(port, token, body, session=None, headers=None, raw=None, method="POST"):
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token:
        h["Authorization"] = "Bearer " + token
    if session:
        h["Mcp-Session-Id"] = session
    h.update(headers or {})
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    c.request(method, "/mcp", body=data, headers=h)
    r = c.getresponse()
    out = r.read()
    c.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, out


def sse_messages(body):
    """The JSON-RPC messages of an SSE body."""
    out = []
    for block in body.decode().split("\n\n"):
        data = [line[5:].lstrip() for line in block.split("\n") if line.startswith("data:")]
        if data:
            out.append(json.loads("\n".join(data)))
    return out
