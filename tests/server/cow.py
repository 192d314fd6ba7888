#!/usr/bin/env python3
"""`warden serve` with copy-on-write sandboxes:
sandbox.create with workspace_mode "cow", what the sandbox writes seen by
sandbox.diff (every format) and not on the host, sandbox.discard dropping
it, sandbox.apply writing it, conflicts and protected paths refused whole
with -32009 and the paths; the file methods working on the sandbox's own
view; the protected paths of the file tools the same as the jail's
(warden's, the policy's workspace.protect, --protect, the sandbox's own).

Cow workspaces need root (an overlay mounted by root, a loop-mounted
disk): without root the test skips (77), and fails under WD_MUST_WORK=1.
With root, anything that does not work is a failure."""
import json
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from srvlib import Env, LineClient, Server, done, ok, skip  # noqa: E402

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


def code(r):
    return r.get("error", {}).get("code")


def state_sandboxes():
    d = os.path.join(env.state, "sandboxes")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def state_gone(timeout=10):
    """The state directory holds no sandbox (a sandbox whose connection
    went away is ended on a thread of its own: its layers go last)."""
    end = time.time() + timeout
    while state_sandboxes() and time.time() < end:
        time.sleep(0.05)
    return state_sandboxes() == []


os.mkdir(os.path.join(ws, "secrets"))
with open(os.path.join(ws, "secrets", "key"), "w") as f:
    f.write("k\n")
with open(os.path.join(ws, "deploy.sh"), "w") as f:
    f.write("#!/bin/sh\n")
policy = os.path.join(env.top, "policy.json")
with open(policy, "w") as f:
    json.dump({"version": 1, "programs": {"cat": {}, "ls": {}},
               "workspace": {"protect": ["secrets"]}}, f)
sock = os.path.join(env.top, "s.sock")
srv = Server(env, "--socket", sock, "--policy", policy, "--protect", "deploy.sh",
             "--disk", "256M", stdio=True)

# ---- the file tools refuse what every jail makes read-only ----
mcp = LineClient(srv)
mcp.initialize()


def tool(name, args):
    r = mcp.call("tools/call", {"name": name, "arguments": args})
    return r.get("result") or {"error": r.get("error")}


def text(r):
    return "".join(c.get("text", "") for c in r.get("content", []))


for path, why in ((".git/hooks/pre-commit", "warden's own list"),
                  ("secrets/new", "the policy's workspace.protect"),
                  ("deploy.sh", "--protect")):
    r = tool("write_file", {"path": path, "content": "x"})
    ok(r.get("isError") and "protected" in text(r) and host(path) in (None, "#!/bin/sh\n"),
       "MCP write_file %s: refused (%s)" % (path, why))
ok(not os.path.exists(os.path.join(ws, ".git")),
   "... and a refused .git/hooks/x leaves no .git behind")
r = tool("edit_file", {"path": "secrets/key", "old_string": "k", "new_string": "stolen"})
ok(r.get("isError") and "protected" in text(r) and host("secrets/key") == "k\n",
   "MCP edit_file secrets/key: refused (the policy's workspace.protect)")
r = tool("run_command", {"command": "cat secrets/key"})
ok(r.get("structuredContent", {}).get("stdout") == "k\n", "protected paths stay readable")
mcp.close()

h = LineClient(path=sock)
# a direct sandbox: its jail and the file methods refuse the same paths
d = h.call("sandbox.create", {"protect": ["notes"]})
did = d.get("result", {}).get("sandbox")
ok(d.get("result", {}).get("workspace_mode") == "direct", "a direct sandbox by default")
os.mkdir(os.path.join(ws, "notes"))
for path in ("secrets/key", "deploy.sh"):
    r = h.call("sandbox.exec", {"sandbox": did, "argv": ["/bin/sh", "-c",
                                                        "echo x >> %s" % path]})
    ok(r["result"]["status"] != 0 and "Read-only" in r["result"]["stderr"]["data"],
       "direct sandbox: pid 1 made %s read-only" % path)
    r = h.call("sandbox.write_file", {"sandbox": did, "path": path, "content": "x"})
    ok(code(r) == -32007 and r["error"]["data"]["errno"] == "EACCES",
       "direct sandbox: sandbox.write_file %s refused (EACCES)" % path)
r = h.call("sandbox.write_file", {"sandbox": did, "path": "notes/a", "content": "x"})
ok(code(r) == -32007 and "protected" in r["error"]["message"],
   "direct sandbox: its own protect list refuses notes/a")
r = h.call("sandbox.write_file", {"sandbox": did, "path": "plain.txt", "content": "direct\n"})
ok(r.get("result", {}).get("bytes") == 7 and host("plain.txt") == "direct\n",
   "direct sandbox: a write lands in the directory")
os.unlink(os.path.join(ws, "plain.txt"))
os.rmdir(os.path.join(ws, "notes"))
h.call("sandbox.destroy", {"sandbox": did})

# ---- a cow sandbox: diff, discard ----
c = h.call("sandbox.create", {"workspace_mode": "cow", "disk": "64M", "protect": ["conf"]})
res = c.get("result", {})
ok(res.get("workspace_mode") == "cow" and res.get("disk") == 64 << 20,
   "sandbox.create workspace_mode cow, disk 64M: %s" % (res or c.get("error")))
sid = res.get("sandbox")
if not sid:
    srv.stop()
    print("# server: " + srv.stderr())
    done()
ok(sid in state_sandboxes(), "its layers live in the state directory while it does")
r = h.call("sandbox.exec", {"sandbox": sid, "argv": ["/bin/sh", "-c",
                                                    "echo more >> hello.txt; echo new > new.txt"]})
ok(r["result"]["status"] == 0, "the sandbox writes the workspace")
ok(host("hello.txt") == "hello from the workspace\n" and host("new.txt") is None,
   "... and the host directory is untouched")
r = h.call("sandbox.diff", {"sandbox": sid})["result"]
files = {f["path"]: f["status"] for f in r["files"]}
ok(r["mode"] == "cow" and r["source"] == "overlay" and
   files == {"hello.txt": "modified", "new.txt": "added"}, "sandbox.diff lists the changes: %s"
   % files)
ok("+more" in r["diff"] and "+new" in r["diff"] and "--- a/hello.txt" in r["diff"],
   "sandbox.diff: the unified diff holds the new lines")
r = h.call("sandbox.diff", {"sandbox": sid, "format": "stat"})["result"]
ok("2 files changed" in r["diff"] and "hello.txt" in r["diff"], "format stat: git's diffstat")
r = h.call("sandbox.diff", {"sandbox": sid, "format": "names"})["result"]
ok(r["diff"].split() == ["modified", "hello.txt", "added", "new.txt", "(new", "file", "0644)"],
   "format names: the lines only, a new file's mode in octal (%r)" % r["diff"])
r = h.call("sandbox.diff", {"sandbox": sid, "format": "json", "path": "new.txt"})["result"]
ok("diff" not in r and [f["path"] for f in r["files"]] == ["new.txt"] and
   len(r["files"][0]["new_sha256"]) == 64, "format json, one path: the file list with hashes")
r = h.call("sandbox.diff", {"sandbox": sid, "paths": ["nothing-here"]})
ok(code(r) == -32602 and "nothing-here" in r["error"]["message"],
   "a path with no change: -32602 naming it")
r = h.call("sandbox.discard", {"sandbox": sid})
ok(r.get("result", {}).get("discarded") == 2, "sandbox.discard drops both changes")
r = h.call("sandbox.diff", {"sandbox": sid})["result"]
ok(r["files"] == [] and r["changes"] == 0, "... the change set is empty")
r = h.call("sandbox.exec", {"sandbox": sid, "argv": ["/bin/sh", "-c",
                                                    "cat hello.txt; ls new.txt"]})["result"]
ok(r["stdout"]["data"] == "hello from the workspace\n" and "new.txt" in r["stderr"]["data"],
   "... and the sandbox sees the host's files again, new.txt gone")
ok(host("hello.txt") == "hello from the workspace\n" and host("new.txt") is None,
   "... the host never saw any of it")

# ---- the file methods work on the sandbox's view ----
r = h.call("sandbox.write_file", {"sandbox": sid, "path": "tool/made.txt", "content": "tool\n"})
ok(r.get("result", {}).get("bytes") == 5 and host("tool/made.txt") is None,
   "sandbox.write_file on a cow sandbox: not on the host")
r = h.call("sandbox.exec", {"sandbox": sid, "argv": ["/bin/cat", "tool/made.txt"]})["result"]
ok(r["stdout"]["data"] == "tool\n", "... but in the sandbox")
r = h.call("sandbox.read_file", {"sandbox": sid, "path": "tool/made.txt"})["result"]
ok(r["content"] == "tool\n", "sandbox.read_file reads the sandbox's view")
r = h.call("sandbox.edit_file", {"sandbox": sid, "path": "hello.txt", "old_string": "hello",
                                 "new_string": "howdy"})
ok(r.get("result", {}).get("replacements") == 1 and
   host("hello.txt") == "hello from the workspace\n", "sandbox.edit_file: the sandbox's copy only")
names = {e["path"] for e in h.call("sandbox.list_dir", {"sandbox": sid, "depth": 2})
         ["result"]["entries"]}
ok("tool/made.txt" in names, "sandbox.list_dir shows the sandbox's files")
r = h.call("sandbox.exec", {"sandbox": sid, "argv": ["/bin/sh", "-c", "echo new > new.txt"]})
for path, why in ((".git/hooks/x", "warden's"), ("secrets/x", "the policy's"),
                  ("deploy.sh", "--protect"), ("conf/x", "the sandbox's own")):
    r = h.call("sandbox.write_file", {"sandbox": sid, "path": path, "content": "x"})
    ok(code(r) == -32007 and r["error"]["data"]["errno"] == "EACCES",
       "cow sandbox: sandbox.write_file %s refused (%s list)" % (path, why))
r = h.call("sandbox.diff", {"sandbox": sid, "format": "names"})["result"]
ok(r["diff"].split() == ["modified", "hello.txt", "added", "new.txt", "(new", "file", "0644)",
                         "added", "tool/", "(new", "directory", "0755)",
                         "added", "tool/made.txt", "(new", "file", "0644)"],
   "the tools' writes join the change set, the refused ones leave nothing (%r)" % r["diff"])

# ---- apply ----
# expect (docs/threat-model.md): the digest of the set reviewed; a set changed since
# (a command rewrote a file after the diff) applies nothing
d = h.call("sandbox.diff", {"sandbox": sid, "format": "json"})["result"]
ok(len(d.get("digest", "")) == 64, "sandbox.diff returns the set's digest")
h.call("sandbox.exec", {"sandbox": sid, "argv": ["/bin/sh", "-c", "echo newer > new.txt"]})
r = h.call("sandbox.apply", {"sandbox": sid, "expect": d["digest"]})
ok(code(r) == -32602 and "not the one reviewed" in r["error"]["message"] and
   host("new.txt") is None, "sandbox.apply expect of a set changed since: -32602, nothing (%s)" %
   r.get("error"))
r = h.call("sandbox.apply", {"sandbox": sid, "expect": 7})
ok(code(r) == -32602 and "expect" in r["error"]["message"], "expect not a string: -32602")
h.call("sandbox.exec", {"sandbox": sid, "argv": ["/bin/sh", "-c", "echo new > new.txt"]})
d = h.call("sandbox.diff", {"sandbox": sid, "paths": ["new.txt"]})["result"]
r = h.call("sandbox.apply", {"sandbox": sid, "paths": ["new.txt"], "expect": d["digest"]})
ok(r.get("result", {}).get("applied") == 1 and host("new.txt") == "new\n" and
   host("tool/made.txt") is None, "sandbox.apply of one path writes only it")
r = h.call("sandbox.apply", {"sandbox": sid})
ok(r.get("result", {}).get("ok") is True, "sandbox.apply of the rest: %s" % r)
ok(host("hello.txt") == "howdy from the workspace\n" and host("tool/made.txt") == "tool\n",
   "... the host has the sandbox's files now")
st = os.stat(os.path.join(ws, "tool", "made.txt"))
wst = os.stat(ws)
ok((st.st_uid, st.st_gid) == (wst.st_uid, wst.st_gid),
   "... new files belong to the workspace's owner")
r = h.call("sandbox.diff", {"sandbox": sid})["result"]
ok(r["files"] == [], "after apply the change set is empty")

# ---- protected paths and conflicts: refused whole, with the paths ----
r = h.call("sandbox.exec", {"sandbox": sid, "argv": ["/bin/sh", "-c",
                                                    "mkdir -p .git/hooks conf && "
                                                    "echo evil > .git/hooks/post-checkout && "
                                                    "echo c > conf/x && echo ok > ok.txt"]})
ok(r["result"]["status"] == 0, "the sandbox writes .git/hooks (absent on the host) and conf/")
r = h.call("sandbox.apply", {"sandbox": sid})
err = r.get("error", {})
prot = err.get("data", {}).get("protected", [])
ok(err.get("code") == -32009 and ".git/hooks/post-checkout" in prot and "conf/x" in prot,
   "sandbox.apply with protected paths: -32009 naming them (%s)" % prot)
ok(".git/hooks/post-checkout" in err.get("message", ""), "... in the message too")
ok(host("ok.txt") is None and not os.path.exists(os.path.join(ws, ".git")),
   "... and nothing at all was applied")
r = h.call("sandbox.apply", {"sandbox": sid, "paths": ["ok.txt"]})
ok(r.get("result", {}).get("applied") == 1 and host("ok.txt") == "ok\n",
   "naming the other paths applies them")
h.call("sandbox.discard", {"sandbox": sid, "paths": [".git", "conf"]})
r = h.call("sandbox.exec", {"sandbox": sid, "argv": ["/bin/sh", "-c", "echo sandbox > hello.txt"]})
with open(os.path.join(ws, "hello.txt"), "w") as f:
    f.write("host edit\n")
r = h.call("sandbox.apply", {"sandbox": sid})
err = r.get("error", {})
ok(err.get("code") == -32009 and err.get("data", {}).get("conflicts") == ["hello.txt"] and
   "conflict" in err.get("message", ""), "a file the host changed too: -32009, a conflict")
ok(host("hello.txt") == "host edit\n", "... the host's edit is kept")
r = h.call("sandbox.discard", {"sandbox": sid, "path": "hello.txt"})
ok(r.get("result", {}).get("discarded") == 1, "discard of the conflicting path")
r = h.call("sandbox.exec", {"sandbox": sid, "argv": ["/bin/cat", "hello.txt"]})["result"]
ok(r["stdout"]["data"] == "host edit\n", "... the sandbox sees the host's edit")

# ---- a name that is not UTF-8: the report read through wd_report ----
r = h.call("sandbox.exec", {"sandbox": sid, "argv": ["/bin/sh", "-c",
                                                    "mkdir -p conf && printf b > \"$(printf "
                                                    "'conf/b\\377')\" && printf n > "
                                                    "\"$(printf 'n\\377.txt')\""]})
ok(r["result"]["status"] == 0, "the sandbox writes conf/b\\377 and n\\377.txt")
d = h.call("sandbox.diff", {"sandbox": sid, "format": "json"})["result"]
names = sorted(f["path"] for f in d.get("files", []))
ok("conf/b\\xff" in names and "n\\xff.txt" in names,
   "sandbox.diff: a byte that is not UTF-8 is the text \\xff (%s)" % names)
r = h.call("sandbox.apply", {"sandbox": sid})
err = r.get("error", {})
ok(err.get("code") == -32009 and "conf/b\\xff" in err.get("data", {}).get("protected", []) and
   "conf/b" in err.get("message", "") and
   err.get("data", {}).get("report", {}).get("sandbox") == sid,
   "sandbox.apply: the protected name that is not UTF-8 listed (%s)" % err)
ok(not os.path.exists(os.path.join(ws.encode(), b"n\xff.txt")), "... and nothing applied")
h.call("sandbox.discard", {"sandbox": sid})
r = h.call("sandbox.diff", {"sandbox": sid, "format": "json"})["result"]
ok(r.get("files") == [], "... discarded (%s)" % r.get("files"))

# ---- ownership, the end of a sandbox, a connection that goes away ----
other = LineClient(path=sock)
ok(code(other.call("sandbox.exec", {"sandbox": sid, "argv": ["/bin/true"]})) == -32001,
   "another connection cannot exec in it: -32001")
other.initialize()
ok(code(other.call("sandbox.apply", {"sandbox": sid})) == -32003,
   "an MCP session cannot apply it: -32003 (the human's socket can: mcp_sessions.py)")
other.close()
r = h.call("sandbox.destroy", {"sandbox": sid})
ok(r.get("result", {}).get("destroyed") is True and sid not in state_sandboxes(),
   "sandbox.destroy removes its layers from the state directory")
g = LineClient(path=sock)
gid = g.call("sandbox.create", {"workspace_mode": "cow"}).get("result", {}).get("sandbox")
g.call("sandbox.exec", {"sandbox": gid, "argv": ["/bin/sh", "-c", "echo lost > lost.txt"]})
g.s.shutdown(socket.SHUT_RDWR)
g.close()
ok(srv.no_sandbox_left() and host("lost.txt") is None,
   "a connection that goes away: its cow sandbox ends, its changes are dropped")
ok(state_gone(), "no sandbox state is left (%s)" % state_sandboxes())
r = h.call("sandbox.create", {"workspace_mode": "cow", "disk": "1G"})
ok(code(r) == -32602 and "--disk" in r["error"]["message"],
   "a disk over the server's --disk: -32602")
h.close()
srv.p.stdin.close()
ok(srv.stop() == 0, "the server stops cleanly")
env.close()
done()
