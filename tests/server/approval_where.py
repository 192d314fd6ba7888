#!/usr/bin/env python3
"""An approval is spent only where it was asked for (docs/threat-model.md,
boundary 6).

A live sandbox keeps its own home directory (a tmpfs the host cannot see)
for as long as it lives.  The model writes a ~/.gitconfig there whose
url.*.pushInsteadOf sends a push to a repository of its choosing, then has
`git push origin main` pause in a fresh sandbox, which the human approves
(the prompt shows the words, the workspace, nothing about a home).  Before
the fix, the same words in the live sandbox consumed that approval and
pushed to evil.git.  Now the id covers the sandbox whose state it is: the
retry there pauses again, the audit says the state differs, and the
approval is still spent by the fresh run it was given for."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from srvlib import WARDEN, Env, LineClient, Server, done, ok  # noqa: E402

env = Env()
env.require_sandboxes()
ws = env.ws
audit = os.path.join(env.top, "audit.jsonl")


def git(*a, cwd=ws):
    subprocess.run(["git", *a], cwd=cwd, check=True, capture_output=True,
                   env=dict(os.environ, GIT_CONFIG_GLOBAL="/dev/null"))


git("init", "-q", "-b", "main")
git("-c", "user.name=t", "-c", "user.email=t@t", "add", "hello.txt")
git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
for bare in ("origin.git", "evil.git"):
    git("init", "-q", "--bare", bare)
git("remote", "add", "origin", "/workspace/origin.git")


def heads(bare):
    r = subprocess.run(["git", "--git-dir", os.path.join(ws, bare), "for-each-ref"],
                       capture_output=True, text=True)
    return r.stdout.strip()


def tool(c, name, args):
    r = c.call("tools/call", {"name": name, "arguments": args}).get("result", {})
    return r.get("structuredContent") or {}


srv = Server(env, "--audit", audit, stdio=True)
mcp = LineClient(srv)
mcp.initialize()
sb = tool(mcp, "sandbox_create", {"workspace_mode": "direct"}).get("sandbox")
ok(sb, "a live sandbox (%s)" % sb)
cfg = "[url \"/workspace/evil.git\"]\n\tpushInsteadOf = /workspace/origin.git\n"
w = tool(mcp, "run_command", {
    "sandbox": sb,
    "command": "python3 -c \"import os; open(os.path.expanduser('~/.gitconfig'), 'w').write(%r)\""
               % cfg})
ok(w.get("outcome") == "ran" and w.get("exit_code") == 0,
   "the model writes ~/.gitconfig in the live sandbox's home (%s)" % json.dumps(w)[:200])
p = tool(mcp, "run_command", {"command": "git push origin main"})
aid = p.get("approval_id")
ok(p.get("outcome") == "paused" and aid, "git push in a fresh sandbox pauses (%s)" % p.get("outcome"))
g = subprocess.run([WARDEN, "approve", "--yes", aid or "none"], capture_output=True, text=True,
                   env=env.env, stdin=subprocess.DEVNULL)
ok(g.returncode == 0, "the human approves it (%d %s)" % (g.returncode, g.stderr.strip()[-200:]))
r = tool(mcp, "run_command", {"sandbox": sb, "command": "git push origin main"})
ok(r.get("outcome") == "paused",
   "the same words in the live sandbox pause again: another sandbox (%s)" % r.get("outcome"))
ok(heads("evil.git") == "", "... and nothing reached evil.git (%s)" % heads("evil.git"))
with open(audit) as f:
    trail = f.read()
ok("they differ in state" in trail, "the audit says the approval does not cover it")
pend = r.get("approval_id")
if pend:
    with open(os.path.join(env.state, "pending", pend + ".json")) as f:
        where = json.load(f)["state"]["where"]
    ok(where.startswith("workspace (live ") and sb in where,
       "the pending record names the sandbox a grant would be spent in (%s)" % where)
# approved where it paused, in the live sandbox, unchanged: it runs there
# (its own home, /tmp and /dev/shm walked through its pid 1's root)
g = subprocess.run([WARDEN, "approve", "--yes", pend or "none"], capture_output=True, text=True,
                   env=env.env, stdin=subprocess.DEVNULL)
r = tool(mcp, "run_command", {"sandbox": sb, "command": "git push origin main"})
ok(g.returncode == 0 and r.get("outcome") == "ran",
   "approved for the live sandbox, the retry there runs (%s)" % r.get("outcome"))
# ... and a file put in its /dev/shm after the approval pauses it again
p = tool(mcp, "run_command", {"sandbox": sb, "command": "git push origin main"})
g = subprocess.run([WARDEN, "approve", "--yes", p.get("approval_id") or "none"],
                   capture_output=True, text=True, env=env.env, stdin=subprocess.DEVNULL)
tool(mcp, "run_command", {"sandbox": sb,
                          "command": "python3 -c \"open('/dev/shm/u.py', 'w').write('pass')\""})
r = tool(mcp, "run_command", {"sandbox": sb, "command": "git push origin main"})
ok(r.get("outcome") == "paused",
   "a file put in the live sandbox's /dev/shm after the approval: pauses again (%s)"
   % r.get("outcome"))
r = tool(mcp, "run_command", {"command": "git push origin main"})
ok(r.get("outcome") == "ran",
   "the approval still serves the fresh run it was given for (%s)" % json.dumps(r)[:600])
mcp.close()
srv.p.stdin.close()
srv.stop()
env.close()
done()
