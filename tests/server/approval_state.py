#!/usr/bin/env python3
"""An approval covers the state the command reads, over MCP
(docs/threat-model.md, boundary 6): the model's run_command of
`python3 build.py` pauses; the human reads build.py and approves the id;
the model then rewrites build.py with its own write_file tool (same
size).  Before, the retry consumed the approval and ran the model's code;
now the id has a state field, the retry pauses again and the approval is
still there.  Unchanged, the retry runs once.  approval.list and
`warden approve --json` say what the approval covers (its "state").
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from srvlib import WARDEN, Env, LineClient, Server, done, ok  # noqa: E402

env = Env()
env.require_sandboxes()
ws = env.ws
policy = os.path.join(env.top, "policy.json")
with open(policy, "w") as f:
    json.dump({"version": 1, "programs": {"python3": {"approve": [["build.py"]]}}}, f)
with open(os.path.join(ws, "build.py"), "w") as f:
    f.write('print("reviewed build")\n')


def tool(c, name, args):
    return c.call("tools/call", {"name": name, "arguments": args}).get("result", {})


def run(c):
    r = tool(c, "run_command", {"command": "python3 build.py"})
    s = r.get("structuredContent", {})
    out = "".join(x.get("text", "") for x in r.get("content", []))
    return s.get("outcome"), s.get("approval_id"), out


def approve(aid):
    return subprocess.run([WARDEN, "approve", "--json", aid], capture_output=True, text=True,
                          env=env.env, timeout=60)


usock = os.path.join(env.top, "owner.sock")
srv = Server(env, "--policy", policy, "--socket", usock, stdio=True)
mcp = LineClient(srv)
mcp.initialize()

outcome, aid, _ = run(mcp)
ok(outcome == "paused" and aid, "run_command python3 build.py pauses (%s)" % outcome)
owner = LineClient(path=usock)
lst = owner.call("approval.list", {}).get("result", {}).get("pending", [])
mine = [p for p in lst if p.get("id") == aid]
ok(mine and mine[0].get("state", {}).get("complete") is True
   and mine[0]["state"].get("entries", 0) >= 2,
   "approval.list says what the approval covers (%s)" % (mine[0].get("state") if mine else lst))
owner.close()
r = approve(aid)
grant = json.loads(r.stdout) if r.returncode == 0 else {}
ok(grant.get("state", {}).get("entries", 0) >= 2,
   "warden approve --json: the state it covers (%s)" % grant.get("state"))
outcome, _, out = run(mcp)
ok(outcome == "ran" and "reviewed build" in out, "unchanged: the retry runs (%s)" % outcome)

outcome, aid, _ = run(mcp)
ok(outcome == "paused", "and pauses again after (%s)" % outcome)
approve(aid)
# the model's own tool rewrites the file the human read (same size)
w = tool(mcp, "write_file", {"path": "build.py", "content": 'print("models build!!")\n'})
ok(not w.get("isError"), "write_file build.py (%s)" % w)
outcome, aid2, out = run(mcp)
ok(outcome == "paused" and "models build" not in out,
   "rewritten by write_file after the approval: the retry pauses again (%s)" % outcome)
ok(aid2 != aid, "  ... under another id")
left = os.listdir(os.path.join(env.state, "approvals"))
ok(any(n.startswith(aid) for n in left), "  ... and the approval is not consumed (%s)" % left)

mcp.close()
srv.p.stdin.close()
srv.p.wait(timeout=120)
env.close()
done()
