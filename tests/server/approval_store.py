#!/usr/bin/env python3
"""The approval store is the human's channel too: a file a sandbox can write
is not one (docs/threat-model.md, boundary 6).

`warden approve` records an approval as a file, approvals/<id>.json in the
state directory ($WARDEN_STATE_DIR, $XDG_STATE_HOME/warden, ...), and a
paused command runs once such a file with a future "expires" exists.  When
that directory lies inside the workspace (a project that keeps its tools'
state in ./.state) or inside a writable --bind (`--bind ~/.local`), the
model writes the file itself: before the fix, MCP `write_file` of
`.state/approvals/<id>.json` = {"expires": ...} made the paused
`git push` run, with no human.  Now such a workspace or bind is refused
before anything runs (exit 125 naming the state directory)."""
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from srvlib import WARDEN, Env, LineClient, Server, done, ok  # noqa: E402

env = Env()
env.require_sandboxes()
ws = env.ws


def text(r):
    return "".join(c.get("text", "") for c in r.get("content", []))


def tool(c, name, args):
    return c.call("tools/call", {"name": name, "arguments": args}).get("result", {})


# ---- 1. the state directory inside the workspace: the model approves itself ----
inside = os.path.join(ws, ".state")
os.mkdir(inside)
env.env["WARDEN_STATE_DIR"] = inside
srv = Server(env, stdio=True)
mcp = LineClient(srv)
try:
    started = "result" in mcp.initialize()
except (EOFError, OSError):
    started = False  # refused at start (the fix)
outcome = None
if started:
    r = tool(mcp, "run_command", {"command": "git push origin main"})
    aid = r.get("structuredContent", {}).get("approval_id")
    if aid:
        # the model's own tool writes the approval the human never gave
        tool(mcp, "write_file", {"path": ".state/approvals/%s.json" % aid,
                                 "content": json.dumps({"expires": 4102444800})})
        r = tool(mcp, "run_command", {"command": "git push origin main"})
        outcome = r.get("structuredContent", {}).get("outcome")
    mcp.close()
try:
    srv.p.stdin.close()  # the end of stdio: the server stops
except OSError:
    pass  # it is gone already (refused at start)
rc = srv.p.wait(timeout=120)
err = srv.stderr()
ok(outcome != "ran", "a paused git push never runs on an approval the model wrote (%s)" % outcome)
ok(not started and rc == 125 and "state directory" in err and inside in err,
   "serve -w WS with WARDEN_STATE_DIR inside WS: exit 125 naming it (%d: %s)"
   % (rc, err.strip()[-300:]))


def run(*args, extra_env=None):
    e = dict(env.env, **(extra_env or {}))
    return subprocess.run([WARDEN, "run", *args, "--", "/bin/true"], capture_output=True,
                          text=True, env=e, timeout=120)


# ---- 2. the same through `warden run`, XDG_STATE_HOME, and a writable bind ----
r = run("-w", ws)
ok(r.returncode == 125 and "state directory" in r.stderr,
   "warden run -w WS with the store inside WS: 125 (%d: %s)" % (r.returncode, r.stderr.strip()))
xdg = os.path.join(ws, "xdg")
os.mkdir(xdg)
r = run("-w", ws, extra_env={"WARDEN_STATE_DIR": "", "XDG_STATE_HOME": xdg})
ok(r.returncode == 125 and os.path.join(xdg, "warden") in r.stderr,
   "XDG_STATE_HOME inside the workspace, store not made yet: 125 (%d: %s)"
   % (r.returncode, r.stderr.strip()))
outside = os.path.join(env.top, "dotlocal")
os.makedirs(os.path.join(outside, "state", "warden"))
store = {"WARDEN_STATE_DIR": os.path.join(outside, "state", "warden")}
r = run("-w", ws, "--bind", outside + ":/home/sandbox/.local", extra_env=store)
ok(r.returncode == 125 and "--bind" in r.stderr and "state directory" in r.stderr,
   "--bind of a directory holding the store: 125 (%d: %s)" % (r.returncode, r.stderr.strip()))
r = run("-w", ws, "--ro-bind", outside + ":/home/sandbox/.local", extra_env=store)
ok(r.returncode == 0, "... read-only it is fine (%d: %s)" % (r.returncode, r.stderr.strip()))
r = run("-w", ws, extra_env={"WARDEN_STATE_DIR": env.state})
ok(r.returncode == 0, "a store outside the workspace: runs (%d: %s)"
   % (r.returncode, r.stderr.strip()))


# ---- 3. the process level: the host's /tmp is writable by the command ----
# An unprivileged caller (nobody here) with WARDEN_STATE_DIR in /tmp: its
# process-level commands run as its own uid.  Before the fix an allowed
# python3 wrote approvals/<id>.json and the paused echo then ran.
if os.geteuid() == 0 and shutil.which("setpriv"):
    nobody = pwd.getpwnam("nobody")
    ptop = tempfile.mkdtemp(prefix="wd-as.")
    pws = os.path.join(ptop, "ws")
    os.mkdir(pws)
    # the policy root's own (nobody may read it, not write it): one the
    # command's uid could rewrite is refused itself (audit_path.py)
    poltop = tempfile.mkdtemp(prefix="wd-asp.")
    os.chmod(poltop, 0o755)
    pol = os.path.join(poltop, "p.json")
    with open(pol, "w") as f:
        json.dump({"version": 1, "programs": {"echo": {"approve": [["publish"]]},
                                                "python3": {}}}, f)
    os.chmod(pol, 0o644)
    subprocess.run(["chown", "-R", "%d:%d" % (nobody.pw_uid, nobody.pw_gid), ptop],
                   check=True)
    pstate = os.path.join(ptop, "state")
    penv = dict(os.environ, HOME=ptop, WARDEN_STATE_DIR=pstate)
    AS = ["setpriv", "--reuid=%d" % nobody.pw_uid, "--regid=%d" % nobody.pw_gid,
          "--clear-groups"]

    def prun(*argv):
        return subprocess.run(AS + [WARDEN, "run", "-w", pws, "--isolation", "process",
                                    "--best-effort", "-p", pol, "--", *argv],
                              capture_output=True, text=True, env=penv, timeout=120)

    r = prun("echo", "publish", "now")
    aid = None
    for ln in r.stderr.splitlines():
        if "warden approve " in ln:
            aid = ln.split("warden approve ")[1].split()[0]
    ok(r.returncode == 123 and aid, "process level: echo publish pauses (%d)" % r.returncode)
    forge = ("import os; d = %r + '/approvals'; os.makedirs(d, exist_ok=True); "
             "open(d + '/%s.json', 'w').write('{\"expires\": 4102444800}')" % (pstate, aid))
    w = prun("python3", "-c", forge)
    r = prun("echo", "publish", "now")
    ok(r.returncode != 0 and "publish now" not in r.stdout,
       "process level: the paused echo does not run on an approval its sandbox wrote "
       "(%d %s)" % (r.returncode, r.stdout.strip()))
    ok(w.returncode == 125 and "state directory" in w.stderr and "/tmp" in w.stderr,
       "process level with the store in /tmp, writable by the command: 125 (%d: %s)"
       % (w.returncode, w.stderr.strip()[-300:]))
    r = subprocess.run([WARDEN, "run", "-w", pws, "--isolation", "process", "--", "/bin/true"],
                       capture_output=True, text=True, env=dict(env.env), timeout=120)
    ok(r.returncode == 0, "process level as root, the store root's own in /tmp: runs (%d: %s)"
       % (r.returncode, r.stderr.strip()))

    # ---- 4. another warden's socket, from a process-level command ----
    # The same unprivileged caller runs `warden serve --socket` (the human's
    # approval channel) and, for the model, process-level `warden run`s
    # with no cgroup (--best-effort, all an ordinary user has on cgroup v1).
    # Such a command shares the server's namespaces, is in no sandbox's
    # cgroup and does not descend from that server: before the fix it
    # connected as the owner and granted its own pause.
    vtop = tempfile.mkdtemp(prefix="wd-as.", dir="/var/tmp")
    vws = os.path.join(vtop, "ws")
    os.mkdir(vws)
    sock = os.path.join(vtop, "h.sock")
    with open(os.path.join(vws, "grant.py"), "w") as f:
        # the path is in the script, not an argument the policy would judge
        f.write("import json, socket, sys\n"
                "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
                "s.connect(%r)\n"
                "s.sendall((json.dumps({'jsonrpc': '2.0', 'id': 1, 'method': sys.argv[1],\n"
                "    'params': json.loads(sys.argv[2])}) + '\\n').encode())\n"
                "print(s.makefile().readline().strip() or 'EOF')\n" % sock)
    subprocess.run(["chown", "-R", "%d:%d" % (nobody.pw_uid, nobody.pw_gid), vtop], check=True)
    os.chmod(vtop, 0o700)
    venv = dict(os.environ, HOME=vtop, WARDEN_STATE_DIR=os.path.join(vtop, "state"))
    errf = open(os.path.join(vtop, "serve.err"), "w+")
    srv2 = subprocess.Popen(AS + [WARDEN, "serve", "-w", vws, "--best-effort", "--socket", sock],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errf,
                            env=venv)
    for _ in range(600):
        if os.path.exists(sock) or srv2.poll() is not None:
            break
        time.sleep(0.1)

    def vrun(*argv):
        return subprocess.run(AS + [WARDEN, "run", "-w", vws, "--isolation", "process",
                                    "--best-effort", "-p", pol, "--", *argv],
                              capture_output=True, text=True, env=venv, timeout=120)

    r = vrun("echo", "publish", "now")
    aid = None
    for ln in r.stderr.splitlines():
        if "warden approve " in ln:
            aid = ln.split("warden approve ")[1].split()[0]
    g = vrun("python3", "grant.py", "approval.grant", json.dumps({"id": aid}))
    r = vrun("echo", "publish", "now")
    ok(os.path.exists(sock) and aid and r.returncode == 123 and "publish now" not in r.stdout,
       "a process-level command of another warden cannot grant its own pause on the owner's "
       "socket (%d %s | %s)" % (r.returncode, r.stdout.strip(), g.stdout.strip()[:200]))
    ok('"granted"' not in g.stdout, "... its approval.grant got no answer (%s)"
       % g.stdout.strip()[:200])
    h = subprocess.run(AS + ["python3", os.path.join(vws, "grant.py"), "approval.list", "{}"],
                       capture_output=True, text=True, env=venv, timeout=120)
    ok(aid and aid in h.stdout, "the owner's own client still lists it (%s)" % h.stdout[:200])
    srv2.terminate()
    srv2.wait(timeout=60)
    errf.seek(0)
    ok("seccomp filters" in errf.read(), "the server says why it refused the connection")
    shutil.rmtree(vtop, ignore_errors=True)
    shutil.rmtree(ptop, ignore_errors=True)
    shutil.rmtree(poltop, ignore_errors=True)
else:
    print("# skip: the process-level checks need root and setpriv")
env.close()
done()
