#!/usr/bin/env python3
"""What the project ignores, in `warden serve`: sandbox.diff summarises
the changes the real directory's .gitignore ignores ("ignored": one entry
per top-level name with files and bytes) and lists the rest in full;
"all": true lists them too, under another digest; sandbox.apply writes
only what the default selection showed, "all" everything, and a digest of
one selection applies nothing under the other.  The model's own
.gitignore naming src/new.js does not hide src/new.js.  workspace_diff
(MCP) on a sandbox whose only changes are ignored says so, not "no
changes"; search_files skips ignored files unless the path names them.

Cow workspaces need root: without root the test skips (77), and fails
under WD_MUST_WORK=1."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from srvlib import Env, LineClient, Server, done, ok, skip  # noqa: E402

if os.geteuid() != 0:
    skip("copy-on-write workspaces need root (an overlay and a loop-mounted disk)")
env = Env()
env.require_sandboxes()
ws = env.ws


def put(path, content):
    p = os.path.join(ws, path)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w") as f:
        f.write(content)


def host(path):
    p = os.path.join(ws, path)
    if not os.path.lexists(p):
        return None
    with open(p) as f:
        return f.read()


def code(r):
    return r.get("error", {}).get("code")


def text(r):
    return "".join(c.get("text", "") for c in r.get("content", []))


put(".gitignore", "node_modules/\n*.log\n")
put("src/app.js", "needle in the project\n")
put("node_modules/dep/host.js", "needle in a dependency\n")
sock = os.path.join(env.top, "s.sock")
srv = Server(env, "--socket", sock, "--disk", "256M", stdio=True)
h = LineClient(path=sock)

# ---- the human's socket: sandbox.diff and sandbox.apply ----
c = h.call("sandbox.create", {"workspace_mode": "cow", "disk": "64M"})
sid = c.get("result", {}).get("sandbox")
ok(sid, "sandbox.create workspace_mode cow (%s)" % c)
if not sid:
    print("# server: " + srv.stderr())
    srv.stop()
    done()
r = h.call("sandbox.exec", {"sandbox": sid, "argv": ["/bin/sh", "-c", """
    mkdir -p node_modules/pkg && echo needle > node_modules/pkg/index.js
    echo needle > debug.log
    echo 'int evil;' > src/new.js
    echo src/new.js >> .gitignore"""]})
ok(r["result"]["status"] == 0, "the sandbox writes node_modules/, a log, src/new.js and "
   "a .gitignore naming src/new.js")
d = h.call("sandbox.diff", {"sandbox": sid, "format": "json"})["result"]
ign = {g["path"]: g["files"] for g in d["ignored"]}
ok(ign == {"node_modules/": 1, "debug.log": 1},
   "sandbox.diff: node_modules/ and debug.log summarised (%s)" % d["ignored"])
files = sorted(f["path"] for f in d["files"])
ok(files == [".gitignore", "src/new.js"],
   "... and the rest listed: the model's .gitignore does not hide src/new.js (%s)" % files)
r = h.call("sandbox.diff", {"sandbox": sid, "format": "names"})["result"]
ok("node_modules/  1 file, 7 bytes, ignored" in r["diff"] and "src/new.js" in r["diff"] and
   "pkg/index.js" not in r["diff"], "format names: the summary line (%r)" % r["diff"])
a = h.call("sandbox.diff", {"sandbox": sid, "format": "json", "all": True})["result"]
ok(a["ignored"] == [] and {"node_modules/pkg/index.js": True, "src/new.js": False} ==
   {f["path"]: f["ignored"] for f in a["files"] if f["path"] in
    ("node_modules/pkg/index.js", "src/new.js")},
   "\"all\": true lists node_modules/pkg/index.js, flagged ignored")
ok(a["digest"] != d["digest"], "... under another digest")
r = h.call("sandbox.diff", {"sandbox": sid, "all": "yes"})
ok(code(r) == -32602 and "'all'" in r["error"]["message"], "\"all\" not a boolean: -32602")
r = h.call("sandbox.apply", {"sandbox": sid, "expect": d["digest"], "all": True})
ok(code(r) == -32602 and "not the one reviewed" in r["error"]["message"] and
   host("src/new.js") is None, "apply \"all\" with the default review's digest: nothing applied")
r = h.call("sandbox.apply", {"sandbox": sid, "expect": a["digest"]})
ok(code(r) == -32602 and host("src/new.js") is None,
   "apply (default) with the \"all\" review's digest: nothing applied")
r = h.call("sandbox.apply", {"sandbox": sid, "expect": d["digest"]})
ok(r.get("result", {}).get("ok") is True and host("src/new.js") == "int evil;\n" and
   host("node_modules/pkg/index.js") is None and host("debug.log") is None,
   "apply with the default digest: what was shown, and no ignored file (%s)" % r)
r = h.call("sandbox.apply", {"sandbox": sid, "all": True})
ok(r.get("result", {}).get("ok") is True and host("node_modules/pkg/index.js") == "needle\n",
   "apply \"all\": the ignored files too")
h.call("sandbox.destroy", {"sandbox": sid})
dd = h.call("sandbox.create", {})
did = dd.get("result", {}).get("sandbox")
r = h.call("sandbox.diff", {"sandbox": did, "all": True})
ok(code(r) == -32602 and "direct" in r["error"]["message"],
   "\"all\" on a direct sandbox (git's account): -32602, not ignored")
h.call("sandbox.destroy", {"sandbox": did})
h.close()

# ---- MCP: search_files and workspace_diff ----
mcp = LineClient(srv)
mcp.initialize()


def tool(name, args):
    r = mcp.call("tools/call", {"name": name, "arguments": args}, timeout=120)
    return r.get("result") or {"error": r.get("error")}


r = tool("search_files", {"pattern": "needle"})
ok("src/app.js:1: needle" in text(r) and "node_modules" not in text(r),
   "search_files skips node_modules/ (%r)" % text(r))
r = tool("search_files", {"pattern": "needle", "path": "node_modules/dep"})
ok("node_modules/dep/host.js:1: needle" in text(r),
   "... unless the path names it (%r)" % text(r))
r = tool("sandbox_create", {})
msid = r.get("structuredContent", {}).get("sandbox")
r = tool("write_file", {"sandbox": msid, "path": "node_modules/m/m.js", "content": "needle\n"})
ok(not r.get("isError"), "the model writes node_modules/m/m.js in its sandbox")
r = tool("workspace_diff", {"sandbox": msid})
ok("no changes" not in text(r) and "node_modules/  1 file, 7 bytes, ignored" in text(r) and
   r.get("structuredContent", {}).get("ignored", [{}])[0].get("path") == "node_modules/",
   "workspace_diff: only ignored changes, summarised, not 'no changes' (%r)" % text(r)[:300])
r = tool("search_files", {"sandbox": msid, "pattern": "needle"})
ok("src/app.js" in text(r) and "node_modules" not in text(r),
   "search_files in the sandbox skips its node_modules/ (%r)" % text(r))
mcp.close()
srv.stop()
done()
