"""Many pods behind one door, on this machine: three `warden serve`
instances, each in a network namespace of its own (a veth to a front
namespace, addresses only inside the namespaces this test creates), each
a tenant's with its own token and state directory, behind the test
router of router.py (agent-sandbox's shape: X-Sandbox-ID picks the pod).

Proves: every request of a tenant reaches its pod and its sessions stay
there; the router's picks never cross tenants, and a request sent to the
wrong pod on purpose is refused there (another tenant's token: 401;
another pod's Mcp-Session-Id: 404); a pod killed with SIGKILL leaves no
sandbox process behind, the others keep serving, and a new instance on
its state directory is ready again with its audit chain continued
intact.  (What a restarted pod does not get back: the killed instance's
live sandboxes; docs/server.md, "Running in a pod".)

Root (network namespaces); skips (77) without, fails under WD_MUST_WORK=1.
"""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from srvlib import WARDEN, Env, done, ok, skip  # noqa: E402

N = 3
TAG = "wd%d" % (os.getpid() % 100000)
FRONT = TAG + "f"


def sh(*a, check=True):
    return subprocess.run(list(a), capture_output=True, text=True, check=check)


def pod_ns(i):
    return "%sp%d" % (TAG, i)


def addr(i):
    return "10.213.%d.2" % (i + 1)


def setup():
    sh("ip", "netns", "add", FRONT)
    sh("ip", "-n", FRONT, "link", "set", "lo", "up")
    for i in range(N):
        ns = pod_ns(i)
        sh("ip", "netns", "add", ns)
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "-n", FRONT, "link", "add", "%sv%d" % (TAG, i), "type", "veth", "peer", "name",
           "%sq%d" % (TAG, i), "netns", ns)
        sh("ip", "-n", FRONT, "addr", "add", "10.213.%d.1/24" % (i + 1), "dev",
           "%sv%d" % (TAG, i))
        sh("ip", "-n", ns, "addr", "add", addr(i) + "/24", "dev", "%sq%d" % (TAG, i))
        sh("ip", "-n", FRONT, "link", "set", "%sv%d" % (TAG, i), "up")
        sh("ip", "-n", ns, "link", "set", "%sq%d" % (TAG, i), "up")


def teardown():
    for ns in [pod_ns(i) for i in range(N)] + [FRONT]:
        sh("ip", "netns", "del", ns, check=False)


if not os.environ.get("WD_PODS_INSIDE"):
    if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("nsenter"):
        skip("network namespaces need root, ip and nsenter")
    try:
        setup()
    except subprocess.CalledProcessError as e:
        teardown()
        skip("cannot make network namespaces: %s" % (e.stderr or "").strip())
    try:
        # the test itself runs in the front namespace (nsenter switches
        # the network namespace only: /sys and the cgroups stay as they are)
        r = subprocess.run(["nsenter", "--net=/run/netns/" + FRONT, sys.executable,
                            os.path.abspath(__file__)],
                           env=dict(os.environ, WD_PODS_INSIDE=TAG))
        rc = r.returncode
    finally:
        teardown()
    sys.exit(rc)

# ---- inside the front namespace ----
TAG = os.environ["WD_PODS_INSIDE"]
from router import Router  # noqa: E402
import http.client  # noqa: E402

env = Env()
env.require_sandboxes()
V = {"MCP-Protocol-Version": "2025-06-18"}


class Pod:
    def __init__(self, i):
        self.i = i
        self.name = "pod-%d" % i
        self.state = os.path.join(env.top, "state-%d" % i)
        if not os.path.isdir(self.state):
            os.mkdir(self.state, 0o700)
        self.token = os.path.join(env.top, "token-%d" % i)
        if not os.path.exists(self.token):
            fd = os.open(self.token, os.O_WRONLY | os.O_CREAT, 0o600)
            os.write(fd, ("tenant-%d-" % i).encode() + os.urandom(16).hex().encode() + b"\n")
            os.close(fd)
        with open(self.token) as f:
            self.tok = f.read().strip()
        self.start()

    def start(self):
        self.err = open(os.path.join(env.top, "pod-%d.%d.err" % (self.i, time.monotonic_ns())),
                        "w+")
        self.out = open(os.path.join(env.top, "pod-%d.%d.out" % (self.i, time.monotonic_ns())),
                        "w+")
        self.p = subprocess.Popen(
            ["nsenter", "--net=/run/netns/%sp%d" % (TAG, self.i), WARDEN, "serve", "-w", env.ws,
             "--listen", "%s:8080" % addr(self.i), "--behind-tls-proxy", "--token-file",
             self.token, "--state-dir", self.state, "--log-format", "json"],
            stdin=subprocess.DEVNULL, stdout=self.out, stderr=self.err,
            env=env.env)

    def sandboxes(self):
        """pids of the sandboxes' pid 1 (warden-init) under this pod's server."""
        r = subprocess.run(["ps", "-e", "-o", "pid=,ppid=,comm="], capture_output=True,
                           text=True)
        return [int(l.split()[0]) for l in r.stdout.splitlines()
                if l.split()[1] == str(self.p.pid) and l.split()[2] == "warden-init"]


def through(router, sid, token, body, session=None, method="POST", path="/mcp"):
    h = {"X-Sandbox-ID": sid, "Content-Type": "application/json",
         "Accept": "application/json, text/event-stream"}
    h.update(V)
    if token:
        h["Authorization"] = "Bearer " + token
    if session:
        h["Mcp-Session-Id"] = session
    c = http.client.HTTPConnection("127.0.0.1", router.port, timeout=120)
    c.request(method, path, body=json.dumps(body).encode() if body is not None else None,
              headers=h)
    r = c.getresponse()
    out = r.read()
    c.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, out


def cgroups_of(pid):
    """The warden cgroup directories of process pid (v1 and v2)."""
    out = []
    with open("/proc/%d/cgroup" % pid) as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            if "/warden/" not in path:
                continue
            tops = ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"] if not ctrls else \
                ["/sys/fs/cgroup/" + c.replace("name=", "") for c in ctrls.split(",")]
            out += [t + path for t in tops if os.path.isdir(t + path)]
    return out


def until(cond, timeout=120):
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.05)
    return False


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "tenant", "version": "1"}}}


def tool(router, pod, sess, name, args, token=None):
    st, _, out = through(router, pod.name, token or pod.tok,
                         {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                          "params": {"name": name, "arguments": args}}, session=sess)
    return st, (json.loads(out).get("result", {}) if st == 200 else {})


pods = [Pod(i) for i in range(N)]
router = Router({p.name: (addr(p.i), 8080) for p in pods})


def ready(p):
    try:
        return through(router, p.name, None, None, method="GET", path="/readyz")[0] == 200
    except OSError:
        return False


ok(all(until(lambda p=p: ready(p)) for p in pods),
   "three pods in their own network namespaces: /readyz 200 through the router")

# each tenant: a session and a sandbox on its pod
sess, box = {}, {}
for p in pods:
    st, h, _ = through(router, p.name, p.tok, INIT)
    sess[p.name] = h.get("mcp-session-id")
    st, r = tool(router, p, sess[p.name], "sandbox_create", {"workspace_mode": "direct"})
    box[p.name] = r.get("structuredContent", {}).get("sandbox")
ok(all(sess.values()) and all(box.values()), "each tenant opened a session and a sandbox")
ok(all(len(p.sandboxes()) == 1 for p in pods),
   "... each sandbox runs under its own pod's server (%s)" % [len(p.sandboxes()) for p in pods])
for _ in range(2):
    for p in pods:
        st, r = tool(router, p, sess[p.name], "run_command",
                     {"sandbox": box[p.name], "command": "ls"})
        ok(r.get("structuredContent", {}).get("sandbox_id") == box[p.name],
           "%s: a later call finds its sandbox on its pod" % p.name)
picks = {}
for sid, a in router.picks:
    picks.setdefault(sid, set()).add(a)
ok(all(picks[p.name] == {(addr(p.i), 8080)} for p in pods),
   "the router sent every request of a tenant to that tenant's pod, and only there")

# a pick across tenants, on purpose: the pod refuses it
a, b = pods[0], pods[1]
st, _, _ = through(router, b.name, a.tok, INIT)
ok(st == 401, "tenant 0's token sent to pod 1: 401 (%d)" % st)
st, r = tool(router, b, sess[a.name], "sandbox_list", {})
ok(st == 404, "tenant 0's Mcp-Session-Id on pod 1 (with pod 1's token): 404 (%d)" % st)
st, r = tool(router, b, sess[b.name], "run_command", {"sandbox": box[a.name], "command": "ls"})
ok(r.get("isError") is True and r.get("structuredContent", {}).get("sandbox_id") != box[a.name],
   "tenant 0's sandbox id on pod 1: a tool error, nothing runs there")

# a pod killed: no sandbox left, the others serve, a new instance on its state
killed = pods[1]
orphans = killed.sandboxes()
groups = [d for q in orphans for d in cgroups_of(q)]
killed.p.kill()
killed.p.wait()
ok(until(lambda: not [q for q in orphans if os.path.exists("/proc/%d" % q)], timeout=60),
   "pod 1 killed with SIGKILL: its sandbox's processes are gone too")
ok(groups and until(lambda: not [d for d in groups if os.path.exists(d)], timeout=60),
   "... and its cgroups (%d directories)" % len(groups))
st, _, _ = through(router, killed.name, killed.tok, INIT)
ok(st == 502, "... the router answers 502 for it (%d)" % st)
st, r = tool(router, pods[0], sess["pod-0"], "run_command",
             {"sandbox": box["pod-0"], "command": "ls"})
ok(r.get("structuredContent", {}).get("sandbox_id") == box["pod-0"],
   "... and pod 0's session still runs in its sandbox")
killed.start()
ok(until(lambda: ready(killed)), "a new instance on pod 1's state directory is ready")
st, r = tool(router, killed, sess[killed.name], "sandbox_list", {})
ok(st == 404, "... the killed instance's session is not there (404): live sandboxes "
   "do not survive their server")
st, h, _ = through(router, killed.name, killed.tok, INIT)
s2 = h.get("mcp-session-id")
st, r = tool(router, killed, s2, "run_command", {"command": "ls"})
ok(r.get("structuredContent", {}).get("outcome") == "ran", "... a new session runs commands")
for p in pods:
    p.p.terminate()
    ok(p.p.wait(timeout=120) == 0, "%s: SIGTERM, drained, exit 0" % p.name)
pods[0].out.seek(0)
events = [json.loads(line) for line in pods[0].out.read().splitlines()]
msgs = [e["msg"] for e in events]
ok(any(m.startswith("listening on http://%s:8080/mcp" % addr(0)) for m in msgs) and
   any(m.startswith("ready: ") for m in msgs) and any("draining" in m for m in msgs),
   "pod 0's log: JSON lines on stdout, listening, ready and draining among them (%d)"
   % len(events))
audit = os.path.join(killed.state, "audit.log")
v = subprocess.run([WARDEN, "audit", "verify", audit], capture_output=True, text=True)
with open(audit) as f:
    boxes = {json.loads(line).get("sandbox") for line in f if line.strip()}
ok(v.returncode == 0, "pod 1's audit chain across the kill and the restart is intact: %s"
   % (v.stdout + v.stderr).strip())
ok(box[killed.name] in boxes and len(boxes - {None}) >= 2,
   "... holding the killed instance's runs and the new one's (%d sandboxes)" % len(boxes))
router.close()
env.close()
done()
