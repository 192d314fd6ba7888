#!/usr/bin/env python3
"""The model's channel is always judged, and never the human's (docs/threat-model.md,
6): real runs of `warden serve`.

  - sandbox.run with an argv (`rm -rf`) on an MCP session, over stdio and
    over HTTP: refused (-32003), nothing removed; sandbox.exec with an argv
    on an MCP session: refused; the same on the owner's socket (a harness,
    not an MCP session): still runs;
  - `--socket` inside the workspace: exit 125 naming --socket;
  - a sandboxed command that reaches the server's socket and asks for the
    human's methods (approval.list, approval.grant) as the owner: refused,
    at the process level (any --socket) and at the container level (the
    socket reachable through the workspace), with an unprivileged server,
    whose sandboxes run as its own uid;
  - MCP sandbox_create under a policy with network.allow, then run_command
    `curl` to a loopback server the policy allows: it works;
  - `warden create --policy P` with P's network.allow, then `warden exec`
    of `curl` under P: it works;
  - `warden exec --detach` under a policy: the audit trail has the decision
    and a result event for it.

Root is needed to run the unprivileged server as another user (nobody) and
for cow sandboxes; without it the test skips (77)."""
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "integration"))
from srvlib import WARDEN, Env, LineClient, Server, done, http_post, ok, skip  # noqa: E402

if os.geteuid() != 0:
    skip("needs root: the unprivileged server runs as nobody")
for prog in ("curl", "python3", "setpriv"):
    if not shutil.which(prog):
        skip(prog + " missing")
env = Env()
env.require_sandboxes()
ws = env.ws


def code(m):
    return m.get("error", {}).get("code")


def text(r):
    return "".join(c.get("text", "") for c in r.get("content", []))


def victim():
    p = os.path.join(ws, "victim")
    with open(p, "w") as f:
        f.write("keep me\n")
    return p


# ---- 1. sandbox.run / sandbox.exec with an argv on an MCP session ----
sock = os.path.join(env.top, "h.sock")
srv = Server(env, "--socket", sock, "--listen", "127.0.0.1:0", "--token-file", env.token,
             stdio=True)
v = victim()
mcp = LineClient(srv)
mcp.initialize()
r = mcp.call("sandbox.run", {"argv": ["rm", "-rf", v]})
ok(code(r) == -32003 and "MCP session" in r["error"]["message"] and os.path.exists(v),
   "sandbox.run argv rm -rf over MCP stdio: refused, nothing removed (%s)" % r.get("error"))
r = mcp.call("sandbox.run", {"argv": ["/bin/rm", "-rf", v], "policy": True})
ok(code(r) == -32003 and os.path.exists(v), "... also with \"policy\": true")
sid = mcp.call("sandbox.create", {}).get("result", {}).get("sandbox")
r = mcp.call("sandbox.exec", {"sandbox": sid, "argv": ["rm", "-rf", v]})
ok(sid and code(r) == -32003 and "'argv'" in r["error"]["message"] and os.path.exists(v),
   "sandbox.exec with an argv over MCP stdio: refused (%s)" % r.get("error"))
r = mcp.call("sandbox.exec", {"sandbox": sid, "command": "rm -rf victim"})
ok(os.path.exists(v) and r.get("result", {}).get("outcome") != "ran",
   "sandbox.exec with a command over MCP: judged by the policy (%s)"
   % r.get("result", {}).get("outcome", r.get("error")))
mcp.call("sandbox.destroy", {"sandbox": sid})

tok = env.token_value()
st, h, body = http_post(srv.port, tok, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                        "params": {"protocolVersion": "2025-06-18",
                                                   "capabilities": {},
                                                   "clientInfo": {"name": "t", "version": "1"}}})
sess = h.get("mcp-session-id")
st, _, body = http_post(srv.port, tok, {"jsonrpc": "2.0", "id": 2, "method": "sandbox.run",
                                        "params": {"argv": ["rm", "-rf", v]}}, session=sess)
ok(st == 200 and code(json.loads(body)) == -32003 and os.path.exists(v),
   "sandbox.run argv rm -rf over HTTP: refused, nothing removed (%s)" % body[:200])

human = LineClient(path=sock)
r = human.call("sandbox.run", {"argv": ["/bin/sh", "-c", "echo harness"]}).get("result", {})
ok(r.get("status") == 0 and "harness" in r.get("stdout", {}).get("data", ""),
   "sandbox.run with an argv on the owner's socket (a harness): still runs")
human.close()
mcp.close()
srv.stop()

# ---- 2. --socket inside the workspace: 125 ----


def serve_refused(path, cwd=None):
    """warden serve --socket path: (exit status, stderr), or (None, ...)
    once the socket appears (it started: the old code did)."""
    errf = open(os.path.join(env.top, "refused.err"), "w+")
    p = subprocess.Popen([WARDEN, "serve", "-w", ws, "--socket", path], cwd=cwd,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errf,
                         env=env.env)
    full = os.path.join(cwd or "", path)
    end = time.time() + 60
    while p.poll() is None and not os.path.exists(full) and time.time() < end:
        time.sleep(0.02)
    rc = p.poll()
    if rc is None:
        p.kill()
        p.wait()
    errf.seek(0)
    return rc, errf.read()


rc, err = serve_refused(os.path.join(ws, "w.sock"))
ok(rc == 125 and "--socket" in err and "inside the workspace" in err and
   not os.path.exists(os.path.join(ws, "w.sock")),
   "serve --socket inside the workspace: exit 125 naming --socket (%s: %s)"
   % (rc, err.strip()[:200]))
os.mkdir(os.path.join(ws, "sub"))
rc, err = serve_refused("sub/w.sock", cwd=ws)
ok(rc == 125 and "--socket" in err, "... a relative path under it too (%s)" % rc)
for leftover in ("w.sock", "sub/w.sock"):
    if os.path.lexists(os.path.join(ws, leftover)):
        os.unlink(os.path.join(ws, leftover))

# ---- 3. a sandboxed command speaking on the human's channel ----
# An unprivileged server: its sandboxes map to its own uid, so SO_PEERCRED
# alone says "the owner".
nobody = pwd.getpwnam("nobody")
utop = os.path.join(env.top, "u")
uws = os.path.join(utop, "ws")
os.makedirs(uws)
CLIENT = r'''
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
    s.sendall((json.dumps({"jsonrpc": "2.0", "id": 1, "method": sys.argv[2],
                           "params": json.loads(sys.argv[3])}) + "\n").encode())
    s.settimeout(60)
    buf = b""
    while True:
        while b"\n" not in buf:
            c = s.recv(65536)
            if not c:
                print("EOF")
                sys.exit(0)
            buf += c
        line, buf = buf.split(b"\n", 1)
        if b'"method"' not in line:  # not a notification: the answer
            print(line.decode())
            break
except OSError as e:
    print("EOF " + str(e))
'''
for d in (utop, uws):
    with open(os.path.join(d, "client.py"), "w") as f:
        f.write(CLIENT)
subprocess.run(["chown", "-R", "%d:%d" % (nobody.pw_uid, nobody.pw_gid), utop], check=True)
# the unprivileged server's state directory is its own and outside the host's
# /tmp: at the process level its commands write /tmp as the same uid, and a
# state directory there is refused (approval_store.py)
ustate_top = tempfile.mkdtemp(prefix="wd-mc.", dir="/var/tmp")
os.chown(ustate_top, nobody.pw_uid, nobody.pw_gid)
uenv = dict(env.env, HOME=utop, WARDEN_STATE_DIR=os.path.join(ustate_top, "state"))
AS_NOBODY = ["setpriv", "--reuid=%d" % nobody.pw_uid, "--regid=%d" % nobody.pw_gid,
             "--clear-groups"]


def as_owner(sockpath, method, params):
    """A call on the unprivileged server's socket from its owner (nobody)."""
    r = subprocess.run(AS_NOBODY + ["python3", os.path.join(utop, "client.py"), sockpath,
                                    method, json.dumps(params)],
                       capture_output=True, text=True, env=uenv, timeout=120)
    line = r.stdout.strip()
    return json.loads(line) if line.startswith("{") else {"eof": line}


def userver(*args):
    errf = open(os.path.join(utop, "serve.%d.err" % len(args)), "w+")
    p = subprocess.Popen(AS_NOBODY + [WARDEN, "serve", "-w", uws, "--best-effort", *args],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errf,
                         env=uenv)
    return p, errf


def wait_path(path, p):
    end = time.time() + 60
    while time.time() < end and p.poll() is None:
        if os.path.exists(path):
            return True
        time.sleep(0.02)
    return False


def sandboxed_client(usock, target, argv_prefix=()):
    """The owner's harness runs a command that connects to target and asks
    for approval.list then approval.grant: what did the command get?"""
    outs = []
    for method, params in (("approval.list", {}), ("approval.grant", {"id": "0" * 64})):
        r = as_owner(usock, "sandbox.run", {"argv": [*argv_prefix, "python3", "client.py",
                                                     target, method, json.dumps(params)],
                                            "stream": False})
        out = r.get("result", {}).get("stdout", {}).get("data")
        outs.append(out.strip() if out is not None else json.dumps(r))
    return outs


for level in ("process", "container"):
    usock = os.path.join(utop, "srv-%s.sock" % level)
    p, errf = userver("--isolation", level, "--socket", usock)
    if not wait_path(usock, p):
        errf.seek(0)
        ok(False, "unprivileged server at the %s level started: %s" % (level, errf.read()))
        p.kill()
        continue
    r = as_owner(usock, "approval.list", {})
    ok("result" in r, "%s: the owner's own connection lists approvals (%s)" % (level, r))
    if level == "process":
        # the whole host is visible at the process level: any --socket
        target = usock
    else:
        # the container level sees the workspace only: the socket reached
        # through it (a hard link to the socket file stands for a socket
        # in the workspace or in any bind)
        os.link(usock, os.path.join(uws, "link.sock"))
        target = "link.sock"
    outs = sandboxed_client(usock, target)
    ok(all(o.startswith("EOF") for o in outs),
       "%s level: a sandboxed command connecting as the owner gets no answer to "
       "approval.list / approval.grant (%s)" % (level, [o[:120] for o in outs]))
    errf.seek(0)
    log = errf.read()
    ok("refused" in log and "sandbox" in log,
       "%s level: the server says why it refused (%s)"
       % (level, [ln for ln in log.splitlines() if "refused" in ln][:1]))
    r = as_owner(usock, "approval.list", {})
    ok("result" in r, "%s: the owner's own connection still works after" % level)
    p.terminate()
    p.wait(timeout=60)
    if os.path.lexists(os.path.join(uws, "link.sock")):
        os.unlink(os.path.join(uws, "link.sock"))

# ---- 3b. a session's command speaking to its own monitor ----
# The monitor runs what its socket is sent with no policy stage (the
# caller judged it).  A process-level session's command sees the state
# directory and runs as its owner: it must not reach the monitor.
MON = r'''
import glob, json, socket, sys
for path in sorted(glob.glob(sys.argv[1] + "/sandboxes/*/monitor.sock")):
    for req in ({"op": "info"}, {"op": "exec", "argv": ["/bin/true"], "env": []}):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            s.connect(path)
            s.send(json.dumps(req).encode())
            s.settimeout(60)
            got = s.recv(65536)
            print("ANSWER" if got else "EOF", got[:100])
        except OSError as e:
            print("EOF", e)
'''
with open(os.path.join(uws, "mon.py"), "w") as f:
    f.write(MON)
os.chown(os.path.join(uws, "mon.py"), nobody.pw_uid, nobody.pw_gid)
ustate = uenv["WARDEN_STATE_DIR"]
r = subprocess.run(AS_NOBODY + [WARDEN, "create", "psess", "--isolation", "process",
                                "--best-effort", "-w", uws],
                   capture_output=True, text=True, env=uenv, timeout=120)
ok(r.returncode == 0, "an unprivileged process-level session (%s)" % r.stderr.strip()[:200])
r = subprocess.run(AS_NOBODY + [WARDEN, "exec", "psess", "--", "python3", "mon.py", ustate],
                   capture_output=True, text=True, env=uenv, timeout=120)
lines = r.stdout.strip().splitlines()
ok(r.returncode == 0 and lines and all(ln.startswith("EOF") for ln in lines),
   "a session's command gets no answer from its monitor (info, exec) (%s)"
   % [ln[:80] for ln in lines])
r = subprocess.run(AS_NOBODY + [WARDEN, "exec", "psess", "--", "/bin/echo", "still"],
                   capture_output=True, text=True, env=uenv, timeout=120)
ok(r.returncode == 0 and "still" in r.stdout,
   "... and the owner's warden exec still works (%s)" % r.stderr.strip()[:200])
subprocess.run(AS_NOBODY + [WARDEN, "rm", "psess"], capture_output=True, env=uenv, timeout=120)

# ---- 4. a policy's network.allow for sandboxes made before a command ----
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import net_tool  # noqa: E402

upstream = net_tool.Server(("127.0.0.1", 0), net_tool.Upstream)
upstream.daemon_threads = True
upstream.log = os.path.join(env.top, "upstream.log")
threading.Thread(target=upstream.serve_forever, daemon=True).start()
UP = upstream.server_address[1]
policy = os.path.join(env.top, "net-policy.json")
with open(policy, "w") as f:
    json.dump({"version": 1, "programs": {"curl": {}},
               "network": {"allow": ["web.test:%d" % UP, "127.0.0.1:%d" % UP],
                           "hosts": ["web.test=127.0.0.1"]}}, f)
srv = Server(env, "--policy", policy, stdio=True)
mcp = LineClient(srv)
mcp.initialize()


def tool(name, args):
    return mcp.call("tools/call", {"name": name, "arguments": args}, timeout=120).get("result", {})


r = tool("sandbox_create", {})
sid = r.get("structuredContent", {}).get("sandbox")
ok(sid, "MCP sandbox_create under a network.allow policy (%s)" % text(r)[:200])
r = tool("run_command", {"command": "curl -s -m 20 http://web.test:%d/mcp-live" % UP,
                         "sandbox": sid})
ok("GET /mcp-live host=web.test" in text(r),
   "... run_command curl in it reaches the allowed loopback server (%s)" % text(r)[:300])
r = tool("run_command", {"command": "curl -s -m 20 http://other.test:%d/no" % UP,
                         "sandbox": sid})
ok("GET /no" not in text(r), "... and a host the policy does not allow is still refused")
mcp.close()
srv.stop()

# ---- 5. warden create --policy P: P's network ----
audit = os.path.join(env.top, "audit.log")
r = subprocess.run([WARDEN, "create", "netsess", "-w", ws, "--policy", policy],
                   capture_output=True, text=True, env=env.env, timeout=120)
ok(r.returncode == 0, "warden create --policy P (%s)" % r.stderr.strip()[:200])
r = subprocess.run([WARDEN, "exec", "netsess", "--policy", policy, "--audit", audit, "--command",
                    "curl -s -m 20 http://web.test:%d/session" % UP],
                   capture_output=True, text=True, env=env.env, timeout=120)
ok(r.returncode == 0 and "GET /session host=web.test" in r.stdout,
   "warden exec of curl in a session made with --policy P: P's network.allow applies "
   "(%d: %s %s)" % (r.returncode, r.stdout.strip()[:200], r.stderr.strip()[:200]))

# ---- 6. a detached command's decision is followed by a result event ----
before = open(audit).read().splitlines() if os.path.exists(audit) else []
r = subprocess.run([WARDEN, "exec", "netsess", "--detach", "--policy", policy, "--audit", audit,
                    "--command", "curl -s -m 5 http://web.test:%d/detached" % UP],
                   capture_output=True, text=True, env=env.env, timeout=120)
lines = [json.loads(ln) for ln in open(audit).read().splitlines()[len(before):]]
dec = [e for e in lines if e.get("decision")]
res = [e for e in lines if e.get("event") == "result"]
ok(r.returncode == 0 and dec and res and "detached" in res[-1].get("result", {}),
   "warden exec --detach under a policy: a decision and a result event in the audit "
   "trail (%s)" % [e.get("event", e.get("decision")) for e in lines])

# ---- 7. a failure after an audited decision is audited too ----
# a session made without the policy has no egress: the policy's
# network.allow cannot be given to it now, and the command fails (125)
# after its decision was recorded; the trail must say how it ended
r = subprocess.run([WARDEN, "create", "plainsess", "-w", ws], capture_output=True, text=True,
                   env=env.env, timeout=120)
before = open(audit).read().splitlines()
r = subprocess.run([WARDEN, "exec", "plainsess", "--policy", policy, "--audit", audit,
                    "--command", "curl -s -m 5 http://web.test:%d/x" % UP],
                   capture_output=True, text=True, env=env.env, timeout=120)
lines = [json.loads(ln) for ln in open(audit).read().splitlines()[len(before):]]
res = [e for e in lines if e.get("event") == "result"]
ok(r.returncode == 125 and any(e.get("decision") == "allow" for e in lines) and res and
   "egress" in res[-1].get("result", {}).get("error", ""),
   "a session without egress refuses a network.allow command after its decision, and the "
   "audit trail has the failure (%d: %s; %s)"
   % (r.returncode, r.stderr.strip()[:160], [e.get("event", e.get("decision")) for e in lines]))
for name in ("netsess", "plainsess"):
    subprocess.run([WARDEN, "rm", name], capture_output=True, env=env.env, timeout=120)
upstream.shutdown()
env.close()
shutil.rmtree(ustate_top, ignore_errors=True)
done()
