#!/usr/bin/env python3
"""The MCP tools on live sandboxes: sandbox_create (cow by
default), run_command in the sandbox with files, /tmp and a pip-installed
package persisting across calls, the file tools and workspace_diff on the
sandbox's view with the host directory untouched, workspace_discard, a
protected path refused, an unknown id a tool error, other connections (a
socket MCP session, an HTTP session) unable to reach it, the human's socket
reviewing and applying it, sandbox_list, sandbox_destroy, --max-sandboxes,
and a peer's sandboxes ending with it.

Cow workspaces need root: without root the test skips (77), and fails
under WD_MUST_WORK=1."""
import json
import os
import socket
import sys
import time
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from srvlib import Env, LineClient, Server, done, http_post, ok, skip  # noqa: E402

if os.geteuid() != 0:
    skip("copy-on-write workspaces need root (an overlay and a loop-mounted disk)")
env = Env()
env.require_sandboxes()
ws = env.ws


def host(path):
    p = os.path.join(ws, path)
    if not os.path.lexists(p):
        return None
    with open(p) as f:
        return f.read()


def text(r):
    return "".join(c.get("text", "") for c in r.get("content", []))


def code(r):
    return r.get("error", {}).get("code")


def state_sandboxes():
    d = os.path.join(env.state, "sandboxes")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


# a wheel, for a real `pip install` into the sandbox's /tmp
wheel = os.path.join(ws, "wdpkg-1.0-py3-none-any.whl")
with zipfile.ZipFile(wheel, "w") as z:
    z.writestr("wdpkg.py", "MAGIC = 'installed in the sandbox'\n")
    z.writestr("wdpkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: wdpkg\nVersion: 1.0\n")
    z.writestr("wdpkg-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: test\n"
               "Root-Is-Purelib: true\nTag: py3-none-any\n")
    z.writestr("wdpkg-1.0.dist-info/RECORD", "")
os.chmod(wheel, 0o644)

sock = os.path.join(env.top, "s.sock")
srv = Server(env, "--socket", sock, "--listen", "127.0.0.1:0", "--token-file", env.token,
             "--max-sandboxes", "3", "--disk", "256M", stdio=True)
mcp = LineClient(srv)
mcp.initialize()


def tool(client, name, args):
    r = client.call("tools/call", {"name": name, "arguments": args}, timeout=120)
    return r.get("result") or {"error": r.get("error")}


def call(name, args):
    return tool(mcp, name, args)


# ---- tools/list ----
tl = {t["name"]: t for t in mcp.call("tools/list")["result"]["tools"]}
ok({"sandbox_create", "sandbox_list", "sandbox_destroy", "workspace_discard"} <= set(tl) and
   "workspace_apply" not in tl and not any("apply" in n for n in tl),
   "tools/list: sandbox_create, sandbox_list, sandbox_destroy, workspace_discard; no apply tool")
ok(all("sandbox" in tl[n]["inputSchema"]["properties"] for n in
       ("run_command", "read_file", "write_file", "edit_file", "list_dir", "search_files",
        "workspace_diff")), "the seven tools take an optional sandbox")
ok(tl["workspace_discard"]["annotations"]["destructiveHint"] is True and
   tl["sandbox_list"]["annotations"]["readOnlyHint"] is True and
   tl["sandbox_destroy"]["annotations"]["destructiveHint"] is True,
   "annotations: workspace_discard and sandbox_destroy destructive, sandbox_list read-only")
ok("human" in tl["sandbox_create"]["description"] and
   "human applies" in tl["write_file"]["description"],
   "the descriptions tell the model a cow sandbox's changes reach the project by a human")

# ---- sandbox_create: cow by default ----
r = call("sandbox_create", {})
sc = r.get("structuredContent", {})
sid = sc.get("sandbox")
ok(not r.get("isError") and sc.get("workspace_mode") == "cow" and sid and sid in text(r),
   "sandbox_create: cow by default, the id in text and structuredContent (%s)" % text(r))
if not sid:
    print("# server: " + srv.stderr())
    srv.stop()
    done()
r = call("sandbox_create", {"limits": {"memory": 1 << 50}})
ok(r.get("isError") and "limits.memory" in text(r),
   "a limit over the server's: a tool error naming it (%s)" % text(r))
r = call("sandbox_create", {"workspace_mode": "bogus"})
ok(r.get("isError") and "workspace_mode" in text(r), "a bad workspace_mode: the schema's error")

# ---- run_command in the sandbox: files, /tmp, a package persist ----
r = call("run_command", {"sandbox": sid, "command":
                         "python3 -c \"open('made.txt','w').write('made\\n');"
                         "open('/tmp/keep','w').write('kept')\""})
ok(not r.get("isError") and r["structuredContent"]["status"] == 0,
   "run_command in the sandbox writes made.txt and /tmp/keep (%s)" % text(r)[:200])
ok(r["structuredContent"].get("sandbox_id") == sid, "... in that sandbox (sandbox_id)")
ok(r["structuredContent"].get("pooled") is False,
   "... and says it is not the pool's (pooled: %s)" % r["structuredContent"].get("pooled"))
r = call("run_command", {"sandbox": sid, "command": "cat made.txt"})
ok(r.get("structuredContent", {}).get("stdout") == "made\n",
   "a later run_command sees made.txt")
r = call("run_command", {"sandbox": sid, "command":
                         "python3 -c \"print(open('/tmp/keep').read())\""})
ok(r.get("structuredContent", {}).get("stdout") == "kept\n", "... and /tmp/keep")
# the sandbox's home is on its own disk, not in the workspace: pip --user
# (Debian marks its Python externally managed: PEP 668)
r = call("run_command", {"sandbox": sid, "command":
                         "python3 -m pip install --user --break-system-packages --no-index "
                         "--no-cache-dir wdpkg-1.0-py3-none-any.whl", "timeout": 120})
ok(r.get("structuredContent", {}).get("status") == 0,
   "pip installs a package in the sandbox (--user) (%s)" % text(r)[-300:])
r = call("run_command", {"sandbox": sid, "command":
                         "python3 -c \"import wdpkg; print(wdpkg.MAGIC)\""})
ok(r.get("structuredContent", {}).get("stdout") == "installed in the sandbox\n",
   "a later run_command imports the installed package (%s)" % text(r)[-200:])
r = call("run_command", {"command": "python3 -c \"import wdpkg\""})
ok(r.get("structuredContent", {}).get("status") != 0,
   "... which a fresh sandbox does not have")
r = call("run_command", {"command": "python3 -c \"import os; print(os.path.exists('/tmp/keep'))\""})
ok(r.get("structuredContent", {}).get("stdout") == "False\n",
   "a run_command without sandbox is a fresh sandbox: no /tmp/keep")
r = call("run_command", {"sandbox": sid, "command": "rm -rf /"})
ok(r.get("isError") and r.get("structuredContent", {}).get("outcome") == "denied",
   "the policy judges commands in the sandbox too (rm -rf / denied)")
ok(host("made.txt") is None, "the host directory has no made.txt")

# ---- the file tools on the sandbox's view ----
r = call("read_file", {"sandbox": sid, "path": "made.txt"})
ok(not r.get("isError") and text(r) == "made\n", "read_file reads the sandbox's made.txt")
r = call("read_file", {"path": "made.txt"})
ok(r.get("isError"), "read_file without sandbox: the project has no made.txt")
r = call("write_file", {"sandbox": sid, "path": "sub/new.txt", "content": "new\n"})
ok(not r.get("isError") and host("sub/new.txt") is None,
   "write_file in the sandbox: not on the host")
r = call("run_command", {"sandbox": sid, "command": "cat sub/new.txt"})
ok(r.get("structuredContent", {}).get("stdout") == "new\n", "... but the sandbox's commands see it")
r = call("edit_file", {"sandbox": sid, "path": "hello.txt", "old_string": "hello",
                       "new_string": "howdy"})
ok(not r.get("isError") and host("hello.txt") == "hello from the workspace\n",
   "edit_file in the sandbox: the host's hello.txt unchanged")
r = call("list_dir", {"sandbox": sid, "depth": 2})
ok("made.txt" in text(r) and "sub/new.txt" in text(r), "list_dir shows the sandbox's files")
r = call("search_files", {"sandbox": sid, "pattern": "howdy"})
ok("hello.txt:1: howdy" in text(r), "search_files searches the sandbox's view (%s)" % text(r))
r = call("write_file", {"sandbox": sid, "path": ".git/hooks/pre-commit", "content": "x"})
ok(r.get("isError") and "protected" in text(r), "a protected path is refused in the sandbox")

# ---- workspace_diff: the library's change set ----
r = call("workspace_diff", {"sandbox": sid})
files = {f["path"]: f["status"] for f in r.get("structuredContent", {}).get("files", [])}
ok(not r.get("isError") and files.get("made.txt") == "added" and
   files.get("hello.txt") == "modified" and files.get("sub/new.txt") == "added",
   "workspace_diff: the change set (%s)" % files)
ok("+howdy" in text(r) and "human" in text(r), "... with the unified diff, and who applies it")
ok(not any(p.startswith(".git") for p in files), "... the refused write left nothing")
r = call("workspace_diff", {"sandbox": sid, "path": "made.txt"})
ok(list(f["path"] for f in r["structuredContent"]["files"]) == ["made.txt"],
   "workspace_diff of one path")
ok(host("made.txt") is None and host("hello.txt") == "hello from the workspace\n" and
   host("sub/new.txt") is None, "the host directory is untouched")

# ---- an unknown id, other connections ----
r = call("run_command", {"sandbox": "0123456789abcdef", "command": "ls"})
ok(r.get("isError") and "0123456789abcdef" in text(r) and "no sandbox" in text(r),
   "an unknown sandbox id: a tool error naming it")
r = call("read_file", {"sandbox": "nope", "path": "made.txt"})
ok(r.get("isError") and "'nope'" in text(r), "... for the file tools too")
other = LineClient(path=sock)
other.initialize()
r = tool(other, "run_command", {"sandbox": sid, "command": "cat made.txt"})
ok(r.get("isError") and "no sandbox" in text(r), "another MCP connection cannot run in it")
r = tool(other, "read_file", {"sandbox": sid, "path": "made.txt"})
ok(r.get("isError") and "made" not in text(r).replace("made.txt", ""),
   "... nor read its files")
r = tool(other, "sandbox_destroy", {"sandbox": sid})
ok(r.get("isError"), "... nor destroy it")
r = other.call("sandbox.apply", {"sandbox": sid})
ok(code(r) == -32003, "sandbox.apply on an MCP session: -32003, a human's decision")
other.close()
tok = env.token_value()
st, hd, body = http_post(srv.port, tok, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                          "params": {"protocolVersion": "2025-06-18",
                                                     "capabilities": {},
                                                     "clientInfo": {"name": "h", "version": "1"}}})
hs = hd.get("mcp-session-id")
http_post(srv.port, tok, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session=hs)
st, hd, body = http_post(srv.port, tok, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                          "params": {"name": "list_dir",
                                                     "arguments": {"sandbox": sid}}},
                         session=hs)
hr = json.loads(body).get("result", {})
ok(st == 200 and hr.get("isError") and "no sandbox" in text(hr),
   "an HTTP session cannot reach it either")
http_post(srv.port, tok, None, session=hs, method="DELETE")

# ---- workspace_discard ----
r = call("workspace_discard", {"sandbox": sid, "paths": ["sub"]})
ok(not r.get("isError") and r.get("structuredContent", {}).get("discarded") == 2,
   "workspace_discard of sub/: its changes dropped (%s)" % text(r))
r = call("read_file", {"sandbox": sid, "path": "sub/new.txt"})
ok(r.get("isError"), "... the sandbox no longer has sub/new.txt")
r = call("workspace_discard", {"sandbox": sid, "paths": ["not-changed"]})
ok(r.get("isError") and "not-changed" in text(r), "discarding a path with no change: an error")

# ---- the human reviews and applies on the owner's socket ----
human = LineClient(path=sock)
r = human.call("sandbox.diff", {"sandbox": sid, "format": "names"})
ok(r.get("result", {}).get("diff", "").split() == ["modified", "hello.txt", "added", "made.txt",
                                                   "(new", "file", "0644)"],
   "the human's socket sees the model's sandbox's change set (%s)" % r)
r = human.call("sandbox.apply", {"sandbox": sid, "paths": ["made.txt"]})
ok(r.get("result", {}).get("applied") == 1 and host("made.txt") == "made\n" and
   host("hello.txt") == "hello from the workspace\n",
   "the human applies made.txt: the host has it, and only it")
r = human.call("sandbox.discard", {"sandbox": sid, "paths": ["hello.txt"]})
ok(r.get("result", {}).get("discarded") == 1, "the human discards the rest")
r = call("workspace_diff", {"sandbox": sid})
ok(not r.get("isError") and r["structuredContent"]["files"] == [] and "no changes" in text(r),
   "the model's workspace_diff: no changes left")
r = human.call("sandbox.exec", {"sandbox": sid, "argv": ["/bin/true"]})
ok(code(r) == -32001, "the human's reach is review, apply and discard: not exec (-32001)")

# ---- a direct sandbox, sandbox_list, the cap ----
r = call("sandbox_create", {"workspace_mode": "direct"})
did = r.get("structuredContent", {}).get("sandbox")
ok(r.get("structuredContent", {}).get("workspace_mode") == "direct" and "at once" in text(r),
   "sandbox_create direct: writes are real, the text says so")
r = call("run_command", {"sandbox": did, "command":
                         "python3 -c \"open('direct.txt','w').write('d\\n')\""})
ok(host("direct.txt") == "d\n", "a direct sandbox's write lands in the project")
r = call("workspace_discard", {"sandbox": did})
ok(r.get("isError") and "direct" in text(r), "workspace_discard of a direct sandbox: a tool error")
os.unlink(os.path.join(ws, "direct.txt"))
r = call("sandbox_create", {"workspace_mode": "cow"})
third = r.get("structuredContent", {}).get("sandbox")
ok(third and not r.get("isError"), "a third sandbox (--max-sandboxes 3)")
r = call("sandbox_list", {})
listed = {s["sandbox"]: s["workspace_mode"] for s in r.get("structuredContent", {})
          .get("sandboxes", [])}
ok(listed == {sid: "cow", did: "direct", third: "cow"}, "sandbox_list: the three (%s)" % listed)
r = call("sandbox_create", {})
ok(r.get("isError") and "--max-sandboxes" in text(r),
   "a fourth: refused past --max-sandboxes (%s)" % text(r))
r = human.call("sandbox.create", {})
ok(code(r) == -32005, "... the harness's sandboxes count in the same cap (-32005)")

# ---- sandbox_destroy; a peer's sandboxes end with it ----
for s_ in (sid, did, third):
    r = call("sandbox_destroy", {"sandbox": s_})
    ok(not r.get("isError") and r.get("structuredContent", {}).get("destroyed") is True,
       "sandbox_destroy %s" % s_)
r = call("run_command", {"sandbox": sid, "command": "ls"})
ok(r.get("isError") and sid in text(r), "a destroyed sandbox: a tool error naming it")
r = call("sandbox_list", {})
ok(r["structuredContent"]["sandboxes"] == [], "sandbox_list: none left")
ok(srv.no_sandbox_left(), "no sandbox process is left")
g = LineClient(path=sock)
g.initialize()
gid = tool(g, "sandbox_create", {}).get("structuredContent", {}).get("sandbox")
tool(g, "write_file", {"sandbox": gid, "path": "lost.txt", "content": "x"})
g.s.shutdown(socket.SHUT_RDWR)
g.close()
ok(gid and srv.no_sandbox_left() and host("lost.txt") is None,
   "an MCP connection that goes away: its sandbox ends, its changes dropped")
end = time.time() + 10
while state_sandboxes() and time.time() < end:
    time.sleep(0.05)
ok(state_sandboxes() == [], "no sandbox state is left (%s)" % state_sandboxes())
human.close()
mcp.close()
srv.p.stdin.close()
ok(srv.stop() == 0, "the server stops cleanly")
env.close()
done()
