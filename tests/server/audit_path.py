#!/usr/bin/env python3
"""The human's records are out of the sandbox's reach (docs/threat-model.md,
boundary 6).

The audit chain has no key: a sandbox that can write the log (`--audit` or a
policy's audit.path inside the workspace or a writable --bind, or, at the
process level, in the host's /tmp where the command's uid writes) rewrites
it consistently and `warden audit verify` still passes.  The policy file is
loaded again for the re-decision after an approval: one inside the
workspace would be what the model wrote.  Before the fix each case below
ran (an allowed python3 rewrote the log); now each is refused before anything runs, exit 125
naming the option."""
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from srvlib import WARDEN, Env, LineClient, Server, done, ok  # noqa: E402

env = Env()
env.require_sandboxes()
ws = env.ws


def run(*args, extra_env=None, argv=("/bin/true",), prefix=()):
    e = dict(env.env, **(extra_env or {}))
    return subprocess.run([*prefix, WARDEN, "run", *args, "--", *argv], capture_output=True,
                          text=True, env=e, timeout=120)


def refused(r, *words):
    return r.returncode == 125 and all(w in r.stderr for w in words)


# ---- 1. --audit inside the workspace: the command could rewrite the chain ----
log = os.path.join(ws, "audit.log")
r = run("-w", ws, "--audit", log, argv=("python3", "-c", "open('audit.log', 'w').write('forged\\n'); print('ran')"))
ok(refused(r, "--audit", log, "workspace") and "ran" not in r.stdout,
   "--audit inside the workspace: 125 naming --audit (%d: %s)" % (r.returncode, r.stderr.strip()))
ok(not os.path.exists(log) or open(log).read() != "forged\n", "... and the log was not rewritten")

# ---- 2. --audit in a writable --bind; read-only is fine; outside is fine ----
outside = os.path.join(env.top, "logs")
os.mkdir(outside)
blog = os.path.join(outside, "a.log")
r = run("-w", ws, "--bind", outside + ":/mnt/logs", "--audit", blog, argv=("ls",))
ok(refused(r, "--audit", "--bind"), "--audit in a writable --bind: 125 (%d: %s)"
   % (r.returncode, r.stderr.strip()))
r = run("-w", ws, "--ro-bind", outside + ":/mnt/logs", "--audit", blog, argv=("ls",))
ok(r.returncode == 0, "... read-only bind: runs (%d: %s)" % (r.returncode, r.stderr.strip()))
r = run("-w", ws, "--audit", blog, argv=("ls",))
ok(r.returncode == 0 and os.path.getsize(blog) > 0,
   "--audit outside the workspace: runs and logs (%d: %s)" % (r.returncode, r.stderr.strip()))

# ---- 3. a policy's audit.path inside the workspace ----
pol = os.path.join(env.top, "p.json")
with open(pol, "w") as f:
    json.dump({"version": 1, "programs": {"true": {}},
               "audit": {"path": os.path.join(ws, "policy-audit.log")}}, f)
r = run("-w", ws, "--policy", pol, argv=("true",))
ok(refused(r, "audit.path", "workspace"), "policy audit.path inside the workspace: 125 (%d: %s)"
   % (r.returncode, r.stderr.strip()))

# ---- 4. --policy inside the workspace: reloaded after an approval ----
wpol = os.path.join(ws, "policy.json")
with open(wpol, "w") as f:
    json.dump({"version": 1, "programs": {"true": {}, "ls": {}}}, f)
r = run("-w", ws, "--policy", wpol, argv=("true",))
ok(refused(r, "--policy", wpol), "--policy inside the workspace: 125 (%d: %s)"
   % (r.returncode, r.stderr.strip()))
opol = os.path.join(env.top, "ok.json")
shutil.copy(wpol, opol)
r = run("-w", ws, "--policy", opol, argv=("true",))
ok(r.returncode == 0, "--policy outside the workspace: runs (%d: %s)"
   % (r.returncode, r.stderr.strip()))

# ---- 5. serve --audit / --policy inside the workspace: refused at start ----
def serve(*args):
    srv = Server(env, *args, stdio=True)
    mcp = LineClient(srv)
    body = ""
    try:
        mcp.initialize()
        body = json.dumps(mcp.call("tools/call", {"name": "run_command",
                                                  "arguments": {"command": "ls"}}))
    except (EOFError, OSError):
        pass  # refused at start (the fix)
    try:
        srv.p.stdin.close()
    except OSError:
        pass
    return srv.p.wait(timeout=120), srv.stderr(), body


rc, err, body = serve("--audit", os.path.join(ws, "serve-audit.log"))
ok(rc == 125 and "--audit" in err and "workspace" in err and "hello.txt" not in body,
   "serve --audit inside the workspace: exit 125 at start (%d: %s | %s)"
   % (rc, err.strip()[-300:], body[:200]))
rc, err, body = serve("--policy", wpol)
ok(rc == 125 and "--policy" in err and "hello.txt" not in body,
   "serve --policy inside the workspace: exit 125 at start (%d: %s | %s)"
   % (rc, err.strip()[-300:], body[:200]))
rc, err, body = serve("--audit", os.path.join(outside, "serve.log"), "--policy", opol)
ok(rc == 0 and "hello.txt" in body, "serve with both outside: serves (%d: %s)"
   % (rc, err.strip()[-300:]))

# ---- 6. process level: --audit in the host's /tmp, written by the command's uid ----
if os.geteuid() == 0 and shutil.which("setpriv"):
    nobody = pwd.getpwnam("nobody")
    ptop = tempfile.mkdtemp(prefix="wd-ap.")
    pws = os.path.join(ptop, "ws")
    os.mkdir(pws)
    subprocess.run(["chown", "-R", "%d:%d" % (nobody.pw_uid, nobody.pw_gid), ptop], check=True)
    AS = ["setpriv", "--reuid=%d" % nobody.pw_uid, "--regid=%d" % nobody.pw_gid,
          "--clear-groups"]
    penv = {"HOME": ptop, "WARDEN_STATE_DIR": os.path.join(ptop, "..", "wd-ap-none")}
    # the store is checked too; put it somewhere nobody owns outside /tmp
    vtop = tempfile.mkdtemp(prefix="wd-ap.", dir="/var/tmp")
    subprocess.run(["chown", "%d:%d" % (nobody.pw_uid, nobody.pw_gid), vtop], check=True)
    penv["WARDEN_STATE_DIR"] = os.path.join(vtop, "state")
    plog = os.path.join(ptop, "audit.log")
    r = run("-w", pws, "--isolation", "process", "--best-effort", "--audit", plog,
            extra_env=penv, prefix=AS, argv=("ls",))
    ok(refused(r, "--audit", "/tmp"), "process level, --audit in /tmp owned by the command's "
       "uid: 125 (%d: %s)" % (r.returncode, r.stderr.strip()))
    vlog = os.path.join(vtop, "audit.log")
    r = run("-w", pws, "--isolation", "process", "--best-effort", "--audit", vlog,
            extra_env=penv, prefix=AS, argv=("ls",))
    ok(r.returncode == 0, "... in /var/tmp (not writable by the jail): runs (%d: %s)"
       % (r.returncode, r.stderr.strip()))
    shutil.rmtree(ptop, ignore_errors=True)
    shutil.rmtree(vtop, ignore_errors=True)
else:
    print("# skip: the process-level check needs root and setpriv")
env.close()
done()
