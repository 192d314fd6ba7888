#!/usr/bin/env python3
"""The paths a command names are judged in the workspace a live cow
sandbox of `warden serve` sees, not in the host directory: the sandbox
makes build.py a link to /etc/passwd in its overlay; `sandbox.exec` with
`command: "cat build.py"` was allowed (the host's build.py is a plain
file) and printed the jail's /etc/passwd, the decision saying the path
was contained.  Now it is refused (126, the reason naming where the link
leads), and policy.check with `sandbox` decides the same.  The reverse:
the host's link out, replaced in the overlay by the sandbox's own
directory, is not what the command sees (it runs).  A file made only in
the overlay is contained: it runs.

Cow workspaces need root: without root the test skips (77)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from srvlib import Env, LineClient, Server, done, ok, skip  # noqa: E402

if os.geteuid() != 0:
    skip("copy-on-write workspaces need root (an overlay and a loop-mounted disk)")
env = Env()
env.require_sandboxes()
ws = env.ws
outside = os.path.join(env.top, "outside")
os.mkdir(outside)
with open(os.path.join(outside, "secret"), "w") as f:
    f.write("host secret\n")
os.symlink(outside, os.path.join(ws, "link-out"))
with open(os.path.join(ws, "build.py"), "w") as f:
    f.write('print("host copy")\n')
policy = os.path.join(env.top, "policy.json")
with open(policy, "w") as f:
    json.dump({"version": 1, "programs": {"cat": {}, "python3": {}}}, f)
sock = os.path.join(env.top, "s.sock")
srv = Server(env, "--socket", sock, "--policy", policy, "--disk", "64M")
h = LineClient(path=sock)

c = h.call("sandbox.create", {"workspace_mode": "cow"})
sid = c.get("result", {}).get("sandbox")
if not ok(sid and c["result"].get("workspace_mode") == "cow",
          "sandbox.create workspace_mode cow (%s)" % c):
    done()
# the owner's argv is not judged: the sandbox's own doing, in its overlay
r = h.call("sandbox.exec", {"sandbox": sid, "argv": [
    "/bin/sh", "-c",
    "rm build.py && ln -s /etc/passwd build.py && rm link-out && mkdir link-out && "
    "echo mine > link-out/secret && echo made > new.txt"]}).get("result", {})
ok(r.get("exit_code") == 0, "the sandbox makes build.py a link to /etc/passwd (%s)" % r)
ok(not os.path.islink(os.path.join(ws, "build.py")) and os.path.islink(os.path.join(ws, "link-out"))
   and not os.path.exists(os.path.join(ws, "new.txt")), "... in its overlay only")


def exec_(command):
    return h.call("sandbox.exec", {"sandbox": sid, "command": command}).get("result", {})


def check(command):
    return h.call("policy.check", {"sandbox": sid, "command": command}).get("result", {})


r = exec_("cat build.py")
reason = r.get("decision", {}).get("reason", "")
ok(r.get("outcome") == "denied" and r.get("status") == 126,
   "sandbox.exec cat build.py (a link out in the overlay): denied (%s)" % r.get("outcome"))
ok("resolves to /etc/passwd, outside the workspace" in reason, "... saying where (%s)" % reason)
ok("root:" not in json.dumps(r), "... and nothing of /etc/passwd came back")
k = check("cat build.py")
ok(k.get("decision") == "deny" and k.get("reason") == reason,
   "policy.check with sandbox: the same decision and reason (%s)" % k)
r = exec_("python3 /workspace/build.py")
ok(r.get("outcome") == "denied", "python3 /workspace/build.py: denied (%s)" % r.get("outcome"))

r = exec_("cat link-out/secret")
ok(r.get("outcome") == "ran" and r.get("stdout", {}).get("data") == "mine\n",
   "cat link-out/secret (the host's link out, a directory in the overlay): runs (%s)"
   % r.get("outcome"))
k = check("cat link-out/secret")
ok(k.get("decision") == "allow", "policy.check: allowed too (%s)" % k.get("decision"))
r = exec_("cat new.txt")
ok(r.get("outcome") == "ran" and r.get("stdout", {}).get("data") == "made\n",
   "cat new.txt (made only in the overlay): runs (%s)" % r.get("outcome"))

# a fresh sandbox of the same server is made from the host directory
r = h.call("sandbox.run", {"command": "cat build.py"}).get("result", {})
ok(r.get("outcome") == "ran" and "host copy" in r.get("stdout", {}).get("data", ""),
   "sandbox.run cat build.py (the host's plain file): runs (%s)" % r.get("outcome"))

h.close()
srv.stop()
env.close()
done()
