"""Many pods behind one door, on this machine: three `warden serve`
instances, each in a network namespace of its own (a veth to a front
namespace, addresses only inside the namespaces this test creates), each
a tenant's with its own token and state directory, behind the test
router of router.py (agent-sandbox's shape: X-Sandbox-ID picks the pod).

Proves: every request of a tenant reaches its pod and its sessions stay
there; the router's picks never cross tenants, and a request sent to the
wrong pod on purpose is refused there (another tenant's token: 401;
another pod's Mcp-Session-Id: 404); a pod killed with SIGKILL (its
server and the monitor of its cow sandbox, as a pod's death kills every
process of it) leaves no sandbox process behind, the others keep
serving, and a new instance on its state directory is ready again with
its audit chain continued intact and the session back: the same
Mcp-Session-Id finds its cow sandbox, the file it wrote and the same
diff, and a command runs in it (started again over its stored files); a
server activated for another tenant on that directory does not serve
the session (404); destroyed, the sandbox leaves no process, mount,
loop device, cgroup, session or record.  (Its direct sandbox does not
come back: its changes are in the project already; docs/server.md,
"Running in a pod".)

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

    def start(self, *extra):
        self.err = open(os.path.join(env.top, "pod-%d.%d.err" % (self.i, time.monotonic_ns())),
                        "w+")
        self.out = open(os.path.join(env.top, "pod-%d.%d.out" % (self.i, time.monotonic_ns())),
                        "w+")
        self.p = subprocess.Popen(
            ["nsenter", "--net=/run/netns/%sp%d" % (TAG, self.i), WARDEN, "serve",
             "--listen", "%s:8080" % addr(self.i), "--behind-tls-proxy",
             "--state-dir", self.state, "--log-format", "json",
             *(extra or ("-w", env.ws, "--token-file", self.token))],
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

# pod 1's tenant also works in a cow sandbox: a library session under the
# state directory, which a restarted pod takes back
killed = pods[1]
ks = sess[killed.name]
st, r = tool(router, killed, ks, "sandbox_create", {})
cow = r.get("structuredContent", {}).get("sandbox")
ok(r.get("structuredContent", {}).get("workspace_mode") == "cow", "pod 1: a cow sandbox %s"
   % cow)
st, r = tool(router, killed, ks, "write_file",
             {"sandbox": cow, "path": "restored.txt", "content": "kept across the restart\n"})
ok(r.get("isError") is False, "... a file written in it: %s" % json.dumps(r)[:200])
st, r = tool(router, killed, ks, "run_command", {"sandbox": cow, "command": "cat restored.txt"})
ok(r.get("structuredContent", {}).get("stdout") == "kept across the restart\n",
   "... its command reads it: %s" % json.dumps(r)[:200])
st, r = tool(router, killed, ks, "workspace_diff", {"sandbox": cow})
diff_before = r.get("structuredContent")
ok(diff_before and diff_before.get("changes") == 1, "... its change set: %s" %
   json.dumps(diff_before)[:200])
record = os.path.join(killed.state, "serve", ks + ".json")
ok(os.path.isfile(record) and os.stat(record).st_mode & 0o777 == 0o600,
   "... the session written down under --state-dir/serve, 0600")
senv = dict(env.env, WARDEN_STATE_DIR=killed.state)


def session_info(sid):
    r = subprocess.run([WARDEN, "ls", "--json"], capture_output=True, text=True, env=senv)
    return {e["id"]: e for e in json.loads(r.stdout or "[]")}.get(sid)


def descendants(pid):
    r = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True)
    kids = {}
    for l in r.stdout.splitlines():
        a, b = l.split()
        kids.setdefault(int(b), []).append(int(a))
    out, todo = [], [pid]
    while todo:
        q = todo.pop()
        out += kids.get(q, [])
        todo += kids.get(q, [])
    return out


info = session_info(cow)
monitor = (info or {}).get("pid")
ok(info and info.get("state") == "running" and monitor, "... a running session: %s" % info)
# a pod killed: its server and every process of it (the cow sandbox's
# monitor too, as a pod's end takes them all): no sandbox left, the others
# serve, a new instance on its state directory
orphans = killed.sandboxes() + [monitor] + descendants(monitor)
groups = [d for q in orphans for d in cgroups_of(q)]
killed.p.kill()
killed.p.wait()
os.kill(monitor, 9)
gone = until(lambda: not [q for q in orphans if os.path.exists("/proc/%d" % q)], timeout=60)
ok(gone, "pod 1 killed with SIGKILL: its sandbox's processes are gone too")
if not gone:
    for q in orphans:
        if os.path.exists("/proc/%d" % q):
            print("# left: %d %s" % (q, open("/proc/%d/status" % q).read()[:400].replace("\n", " | ")))
            print("# cgroup: %s" % open("/proc/%d/cgroup" % q).read().replace("\n", " | "))
            print("# stack: %s" % subprocess.run(["cat", "/proc/%d/stack" % q], capture_output=True, text=True).stdout.replace("\n", " | "))
ok(groups and until(lambda: not [d for d in groups if os.path.exists(d)], timeout=60),
   "... and its cgroups (%d directories)" % len(groups))
st, _, _ = through(router, killed.name, killed.tok, INIT)
ok(st == 502, "... the router answers 502 for it (%d)" % st)
st, r = tool(router, pods[0], sess["pod-0"], "run_command",
             {"sandbox": box["pod-0"], "command": "ls"})
ok(r.get("structuredContent", {}).get("sandbox_id") == box["pod-0"],
   "... and pod 0's session still runs in its sandbox")
ok(until(lambda: (session_info(cow) or {}).get("state") == "stopped", timeout=60),
   "... the cow session is stopped, its files kept")
# the same state directory, activated for another tenant: not its session
sock = os.path.join(env.top, "warm.sock")
killed.start("--await-activation", "--socket", sock)
ok(until(lambda: ready(killed)), "a warm instance on pod 1's state directory is ready")
a = subprocess.run([WARDEN, "activate", "--socket", sock, "-w", env.ws, "--token-file",
                    killed.token, "--tenant", "intruder"], capture_output=True, text=True,
                   env=env.env)
ok(a.returncode == 0, "... activated for tenant 'intruder': %s" % (a.stdout + a.stderr)[:200])
st, r = tool(router, killed, ks, "sandbox_list", {})
ok(st == 404, "... the session of the tenant before it is not served (404, %d)" % st)
killed.p.terminate()
ok(killed.p.wait(timeout=120) == 0 and os.path.isfile(record) and
   (session_info(cow) or {}).get("state") == "stopped",
   "... stopped again: the session, its record and its files untouched")
killed.start()
ok(until(lambda: ready(killed)), "a new instance on pod 1's state directory is ready")
st, r = tool(router, killed, ks, "sandbox_list", {})
listed = [x.get("sandbox") for x in r.get("structuredContent", {}).get("sandboxes", [])]
ok(st == 200 and listed == [cow],
   "... the killed instance's session is back with its cow sandbox (%d, %s)" % (st, listed))
st, r = tool(router, killed, ks, "workspace_diff", {"sandbox": cow})
ok(r.get("structuredContent") == diff_before, "... the same change set: %s"
   % json.dumps(r.get("structuredContent"))[:200])
st, r = tool(router, killed, ks, "read_file", {"sandbox": cow, "path": "restored.txt"})
ok(r.get("isError") is False and "kept across the restart" in json.dumps(r),
   "... its file read back: %s" % json.dumps(r)[:200])
st, r = tool(router, killed, ks, "run_command", {"sandbox": cow, "command": "cat restored.txt"})
ok(r.get("structuredContent", {}).get("stdout") == "kept across the restart\n",
   "... a command runs in it, its monitor started again: %s" % json.dumps(r)[:200])
st, r = tool(router, killed, ks, "run_command", {"sandbox": box[killed.name], "command": "ls"})
ok(r.get("isError") is True, "... its direct sandbox did not come back (a tool error)")
ok(not os.path.exists(os.path.join(env.ws, "restored.txt")),
   "... and the project is untouched")
monitor = (session_info(cow) or {}).get("pid")
left = [monitor] + descendants(monitor) if monitor else []
groups2 = [d for q in left for d in cgroups_of(q)]
st, r = tool(router, killed, ks, "sandbox_destroy", {"sandbox": cow})
ok(r.get("isError") is False, "... destroyed")


def mounts_of(path):
    with open("/proc/self/mountinfo") as f:
        return [l for l in f if path in l]


def loops_of(path):
    r = subprocess.run(["losetup", "-a"], capture_output=True, text=True)
    return [l for l in r.stdout.splitlines() if path in l]


ok(until(lambda: not [q for q in left if os.path.exists("/proc/%d" % q)], timeout=60) and
   groups2 and until(lambda: not [d for d in groups2 if os.path.exists(d)], timeout=60),
   "... nothing of it runs: %d processes, %d cgroup directories gone" % (len(left),
                                                                          len(groups2)))
leaks = [session_info(cow), os.path.exists(record), mounts_of(killed.state),
         loops_of(killed.state)]
ok(leaks == [None, False, [], []],
   "... no session, record, mount or loop device left under the state directory (%s)" % leaks)
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
