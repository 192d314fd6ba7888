#!/usr/bin/env python3
"""warden serve as an ordinary user: copy-on-write sandboxes without root.

A uid with no account runs `warden serve --stdio --socket S --best-effort`
(setpriv; cgroup v1 here: no cgroup for it, so --best-effort).  Each cow
sandbox is an anonymous library session: its monitor mounts the overlay in
a user namespace of the user's, its layers are a directory in the state
directory.  Proves, over MCP on stdio: sandbox_create cow (disk 0: none),
write_file and run_command in it, the project untouched; workspace_diff
lists the change and summarises the .gitignore'd node_modules/; the human's
sandbox.apply on the owner's socket writes the reviewed file; a "disk"
asked under --best-effort is said to be none; sandbox_destroy and the
server's exit (stdin closed with a sandbox still live) leave no process of
the uid, no mount and no entry in the state directory; a session left by a
SIGKILLed server is removed by the next server on the directory, and
one of a live server in another pid namespace is not (each server holds a
lock file for its life, which the sweep asks); --pool
and --disk are refused at start (125, naming the option and root).
(root, to switch to the uid; skips without it)."""
import atexit
import json
import os
import pwd
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from srvlib import WARDEN, Env, LineClient, Server, done, ok, proc_children, skip  # noqa: E402

if os.geteuid() != 0:
    skip("needs root to run the server as another uid")
if not shutil.which("setpriv"):
    skip("setpriv (util-linux) is missing")


def uid_free(u):
    try:
        pwd.getpwuid(u)
        return False
    except KeyError:
        pass
    return subprocess.run(["pgrep", "-u", str(u)], capture_output=True).returncode != 0


U = 24680
while not uid_free(U):
    U += 1

env = Env()
top = env.top


def cleanup():
    # the uid has no account and had no process before this test: what it
    # runs now is this test's (a failed check may leave a server or monitor)
    subprocess.run(["pkill", "-KILL", "-u", str(U)], capture_output=True)
    env.close()


atexit.register(cleanup)
home = os.path.join(top, "home")
os.mkdir(home, 0o700)
with open(os.path.join(env.ws, ".gitignore"), "w") as f:
    f.write("node_modules/\n")
# the built tree must be executable by the uid; else a copy of it
bindir = os.path.dirname(WARDEN)
probe = subprocess.run(["setpriv", "--reuid", str(U), "--regid", str(U), "--clear-groups",
                        "test", "-x", WARDEN])
if probe.returncode != 0:
    bindir = os.path.join(top, "bin")
    os.mkdir(bindir, 0o755)
    for b in ("warden", "warden-monitor"):
        shutil.copy2(os.path.join(os.path.dirname(WARDEN), b), bindir)
warden = os.path.join(bindir, "warden")
for root, dirs, files in os.walk(top):
    for n in dirs + files:
        os.lchown(os.path.join(root, n), U, U)
os.lchown(top, U, U)
env.env = {"PATH": "/usr/bin:/bin", "HOME": home, "WARDEN_STATE_DIR": env.state,
           "WARDEN_MONITOR": os.path.join(bindir, "warden-monitor"),
           "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", ""),
           "UBSAN_OPTIONS": os.environ.get("UBSAN_OPTIONS", "")}
as_user = ("setpriv", "--reuid", str(U), "--regid", str(U), "--clear-groups")


def run_user(*args, timeout=60):
    return subprocess.run([*as_user, warden, *args], capture_output=True, text=True,
                          env=env.env, cwd=env.ws, timeout=timeout)


def user_procs():
    r = subprocess.run(["pgrep", "-a", "-u", str(U)], capture_output=True, text=True)
    return r.stdout.strip()


def sandboxes():
    d = os.path.join(env.state, "sandboxes")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def wait(cond, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def host_mounts():
    with open("/proc/self/mountinfo") as f:
        return sum(1 for line in f if top in line)


def text(r):
    return "".join(c.get("text", "") for c in r.get("content", []))


# the host must let an ordinary user have cow layers (Linux >= 5.11, user
# namespaces): doctor says so in its features
r = run_user("doctor")
if not any(line.split()[:3] == ["cow", "sessions", "yes:"] for line in r.stdout.splitlines()):
    skip("no cow sessions for an ordinary user here: " + r.stdout[-400:])
feat = {}
for line in r.stdout.splitlines():
    for name in ("run --workspace-mode cow", "serve cow sandboxes", "warm pool", "--disk"):
        if line.strip().startswith(name):
            feat[name] = (line.strip()[len(name):].split() or [""])[0].rstrip(":")
ok(feat.get("run --workspace-mode cow") == "yes" and feat.get("serve cow sandboxes") == "yes" and
   feat.get("warm pool") == "no" and feat.get("--disk") == "no",
   "doctor as the uid: one-shot cow runs and the server's cow sandboxes work, "
   "the pool and --disk need root (%s)" % feat)

# ---- refused at start: --pool, --disk (125, naming the option, nothing served)
sock = os.path.join(top, "s.sock")
r = run_user("serve", "-w", env.ws, "--socket", sock, "--pool", "1", "--best-effort")
ok(r.returncode == 125 and "--pool" in r.stderr and "root" in r.stderr and
   not os.path.exists(sock), "serve --pool as an ordinary user: 125 naming --pool and root (%s)"
   % r.stderr.strip()[-300:])
r = run_user("serve", "-w", env.ws, "--socket", sock, "--disk", "64M")
ok(r.returncode == 125 and "--disk" in r.stderr and "--best-effort" in r.stderr and
   not os.path.exists(sock), "serve --disk as an ordinary user: 125 naming --disk and "
   "--best-effort (%s)" % r.stderr.strip()[-300:])

# ---- an MCP session on stdio, the human on the owner's socket
srv = Server(env, "--socket", sock, "--best-effort", stdio=True, prefix=(*as_user,))
mcp = LineClient(srv)
mcp.initialize()


def call(name, args, client=mcp):
    r = client.call("tools/call", {"name": name, "arguments": args}, timeout=120)
    return r.get("result") or {"error": r.get("error"), "isError": True}


r = call("sandbox_create", {"workspace_mode": "cow"})
sc = r.get("structuredContent", {})
sid = sc.get("sandbox")
ok(not r.get("isError") and sc.get("workspace_mode") == "cow" and sc.get("disk") == 0,
   "sandbox_create cow as an ordinary user: a cow sandbox, no disk (%s)" % text(r)[:300])
if not sid:
    print("# server: " + srv.stderr()[-2000:])
    srv.stop()
    env.close()
    done()
ok(os.path.isdir(os.path.join(env.state, "sandboxes", sid, "layers", "upper")) and
   os.stat(os.path.join(env.state, "sandboxes", sid, "layers")).st_uid == U,
   "its layers are a directory of the uid's in the state directory")
r = call("write_file", {"sandbox": sid, "path": "made.txt", "content": "made by the model\n"})
ok(not r.get("isError"), "write_file in the sandbox (%s)" % text(r)[:200])
r = call("run_command", {"sandbox": sid, "command":
                         "python3 -c \"import os; os.makedirs('node_modules/pkg');"
                         "open('node_modules/pkg/index.js','w').write('x=1;\\n');"
                         "print(open('made.txt').read().strip(), os.getuid())\""})
sc = r.get("structuredContent", {})
ok(not r.get("isError") and sc.get("status") == 0 and "made by the model" in sc.get("stdout", ""),
   "run_command in the sandbox sees write_file's file (%s)" % text(r)[:300])
ok(not os.path.exists(os.path.join(env.ws, "made.txt")) and
   not os.path.exists(os.path.join(env.ws, "node_modules")),
   "the project is untouched before apply")
r = call("workspace_diff", {"sandbox": sid})
t = text(r)
ok(not r.get("isError") and "made.txt" in t and "node_modules/  1 file" in t and
   "ignored" in t and "index.js" not in t,
   "workspace_diff: made.txt, node_modules/ summarised as ignored (%r)" % t[:400])


def human(method, params):
    """One call on the owner's socket, as the uid (the server's owner: a
    connection of another uid, root's included, is refused)."""
    code = ("import json, socket, sys\n"
            "s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n"
            "s.sendall(sys.argv[2].encode() + b'\\n')\n"
            "b = b''\n"
            "while not b.endswith(b'\\n'):\n"
            "    c = s.recv(65536)\n"
            "    if not c: break\n"
            "    b += c\n"
            "sys.stdout.write(b.decode())\n")
    msg = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    r = subprocess.run([*as_user, sys.executable, "-c", code, sock, msg], capture_output=True,
                       text=True, env=env.env, timeout=120)
    try:
        return json.loads(r.stdout)
    except ValueError:
        return {"error": {"message": r.stdout + r.stderr}}


# (--best-effort: a bound asked for and not kept is accepted, and said
# to be none; without it the library refuses it, as a session's --disk)
r = human("sandbox.create", {"workspace_mode": "cow", "disk": "64M"})
ok(r.get("result", {}).get("disk") == 0 and r["result"].get("workspace_mode") == "cow",
   "a disk asked for by a caller under --best-effort: a cow sandbox, disk 0 (none) (%s)" % r)
r = human("sandbox.apply", {"sandbox": sid})
res = r.get("result", {})
ok(res.get("applied") == 1, "sandbox.apply on the owner's socket: one file (%s)" % r)
p = os.path.join(env.ws, "made.txt")
ok(os.path.exists(p) and open(p).read() == "made by the model\n" and os.stat(p).st_uid == U and
   not os.path.exists(os.path.join(env.ws, "node_modules")),
   "the project has made.txt, the uid's, and no ignored node_modules/")
r = call("sandbox_destroy", {"sandbox": sid})
ok(not r.get("isError"), "sandbox_destroy")
ok(wait(lambda: sandboxes() == []), "... no state is left (%s)" % sandboxes())
ok(wait(lambda: "warden-monitor" not in user_procs() and "warden-init" not in user_procs()),
   "... no monitor or sandbox process of the uid is left (%s)" % user_procs())

# a sandbox still live when the server ends (its stdin closed): removed
r = call("sandbox_create", {})
sid2 = r.get("structuredContent", {}).get("sandbox")
ok(sid2 and r["structuredContent"].get("workspace_mode") == "cow",
   "sandbox_create without a mode: cow for an ordinary user too")
call("write_file", {"sandbox": sid2, "path": "lost.txt", "content": "x"})
mcp.close()
srv.p.stdin.close()
ok(srv.stop() == 0, "the server stops at the end of its input")
ok(wait(lambda: sandboxes() == []) and not os.path.exists(os.path.join(env.ws, "lost.txt")),
   "a sandbox live at the server's end is removed, its changes dropped (%s %s)"
   % (sandboxes(), srv.stderr()[-1500:]))
ok(wait(lambda: user_procs() == ""), "no process of the uid is left (%s)" % user_procs())
ok(host_mounts() == 0, "no mount of the test's directory on the host")

# a server killed (SIGKILL) leaves its session; the next server removes it
srv2 = Server(env, "--best-effort", stdio=True, prefix=(*as_user,))
mcp2 = LineClient(srv2)
mcp2.initialize()
sid3 = call("sandbox_create", {}, mcp2).get("structuredContent", {}).get("sandbox")
srv2.stop(9)
ok(sid3 and sandboxes() == [sid3], "a SIGKILLed server leaves its sandbox's state (%s)"
   % sandboxes())
# the user's own session in the same state directory, named as a server's
# anonymous sandbox is named but for its last part: not the sweep's
r = run_user("create", "serve.1.1.notes", "--workspace-mode", "cow", "--best-effort",
             "--workspace", env.ws)
mine = r.stdout.strip()
ok(r.returncode == 0 and mine in sandboxes(), "the user's session serve.1.1.notes (%s)"
   % r.stderr.strip())
srv3 = Server(env, "--best-effort", stdio=True, prefix=(*as_user,))
mcp3 = LineClient(srv3)
mcp3.initialize()
ok(wait(lambda: sid3 not in sandboxes()), "the next server on the directory removes it (%s)"
   % srv3.stderr()[-300:])
ok(sandboxes() == [mine], "... and leaves the user's serve.1.1.notes (%s)" % sandboxes())
srv3.p.stdin.close()
srv3.stop()
r = run_user("rm", "serve.1.1.notes")
ok(r.returncode == 0 and sandboxes() == [], "the user's session removed (%s)" % r.stderr.strip())
ok(wait(lambda: user_procs() == ""), "no process of the uid is left (%s)" % user_procs())

# Two servers of the uid, one in a pid namespace of its own (a container
# of the same user on the same state directory): each holds a lock for
# its life, and neither's sweep takes the other's sandboxes.  Judged by
# pid and start time, each took the other's for orphans (the other's pid
# is not there, or is another process, in its namespace).
pidns = ("unshare", "--pid", "--fork", "--mount-proc", "--kill-child")
r = subprocess.run([*pidns, *as_user, "/bin/sh", "-c", "echo $$"], capture_output=True,
                   text=True, timeout=30)
if r.returncode != 0 or r.stdout.strip() != "1":
    ok(True, "# SKIP no pid namespace here for the uid's second server (%s)" % r.stderr.strip())
else:
    srv_a = Server(env, "--best-effort", stdio=True, prefix=(*as_user,))
    mcp_a = LineClient(srv_a)
    mcp_a.initialize()
    sa = call("sandbox_create", {}, mcp_a).get("structuredContent", {}).get("sandbox")
    srv_b = Server(env, "--best-effort", stdio=True, prefix=(*pidns, *as_user))
    mcp_b = LineClient(srv_b)
    mcp_b.initialize()
    sb = call("sandbox_create", {}, mcp_b).get("structuredContent", {}).get("sandbox")
    # (judged by pid, each sweep tried to remove the other's sandbox; here
    # that failed only at the other's monitor, which reset the connection)
    ok(sa and sb and sandboxes() == sorted([sa, sb])
       and "of a server that is gone" not in srv_b.stderr(),
       "a server in another pid namespace started (its sweep ran) and did not touch the "
       "first one's sandbox (%s %s)" % (sandboxes(), srv_b.stderr()[-300:]))
    srv_c = Server(env, "--best-effort", stdio=True, prefix=(*as_user,))
    LineClient(srv_c).initialize()
    srv_c.p.stdin.close()
    srv_c.stop()
    ok(sandboxes() == sorted([sa, sb]) and "of a server that is gone" not in srv_c.stderr(),
       "a third server's sweep (the first one's namespace) leaves both (%s %s)"
       % (sandboxes(), srv_c.stderr()[-300:]))
    rb = call("run_command", {"sandbox": sb, "command": "ls"}, mcp_b)
    ra = call("run_command", {"sandbox": sa, "command": "ls"}, mcp_a)
    ok(not rb.get("isError") and not ra.get("isError"),
       "... and both servers still run commands in their own (%s %s)"
       % (text(rb)[:200], text(ra)[:200]))
    # SIGKILL to the server, the namespace's init (setpriv's change of
    # uid clears --kill-child's parent-death signal): its monitors end too
    kids = proc_children(srv_b.p.pid)
    for k in kids:
        try:
            os.kill(k, 9)
        except ProcessLookupError:  # it ended on its own meanwhile
            pass
    srv_b.stop(9)
    srv_d = Server(env, "--best-effort", stdio=True, prefix=(*as_user,))
    LineClient(srv_d).initialize()
    ok(wait(lambda: sandboxes() == [sa]),
       "the killed one's sandbox is an orphan to the next server: removed (%s)" % sandboxes())
    srv_d.p.stdin.close()
    srv_d.stop()
    mcp_a.close()
    srv_a.p.stdin.close()
    ok(srv_a.stop() == 0 and wait(lambda: sandboxes() == []),
       "the first server ends, its sandbox with it (%s)" % sandboxes())
    anon = os.path.join(env.state, "serve-anon")
    ok(wait(lambda: os.listdir(anon) == []),
       "no lock file is left: the servers' own removed, the killed one's tidied (%s)"
       % os.listdir(anon))
    ok(wait(lambda: user_procs() == ""), "no process of the uid is left (%s)" % user_procs())
env.close()
done()
