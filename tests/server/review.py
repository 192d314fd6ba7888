#!/usr/bin/env python3
"""The review channel of warden serve cannot be forged (docs/threat-model.md).

The model writes a file whose lines hold CR, ESC[2K, an OSC and U+202E,
and a file named with a newline and an ESC.  The text a client shows a
human must carry none of those raw and must show each visibly: the MCP
workspace_diff tool's text, over a direct workspace (git's account) and
a cow sandbox (warden's change set), and the human's sandbox.diff text on
the owner's socket.  The JSON lists stay JSON: the names as they are.

The cow part needs root (an overlay and a loop-mounted disk)."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from srvlib import Env, LineClient, Server, done, ok, skip  # noqa: E402

if os.geteuid() != 0:
    skip("copy-on-write workspaces need root (an overlay and a loop-mounted disk)")
if subprocess.run(["git", "--version"], capture_output=True).returncode != 0:
    skip("git is missing")
env = Env()
env.require_sandboxes()
ws = env.ws

# a repository: the direct workspace's diff is git's
for args in (["init", "-q"], ["config", "user.email", "t@example.com"],
             ["config", "user.name", "t"], ["add", "-A"], ["commit", "-qm", "init"]):
    subprocess.run(["git", "-C", ws, *args], check=True)

HUNK = "rm -rf ~ \x1b[2K\r# a harmless comment\n\x1b]0;pwned\x07\nif (admin\u202e) {\n"
NAME = "x\nmodified  hello.txt\x1b[31m"
BAD = re.compile("[\x00-\x08\x0b-\x1f\x7f\u0080-\u009f\u061c\u200b-\u200f\u2028-\u202e"
                 "\u2060-\u2069\ufeff]")


def text(r):
    return "".join(c.get("text", "") for c in r.get("content", []))


def visible(t, where):
    bad = BAD.search(t)
    ok(not bad, "%s: no raw control, C1 or bidi character (%r)" %
       (where, t[max(0, bad.start() - 20):bad.start() + 20] if bad else ""))
    ok("\\x1b[2K\\x0d# a harmless comment" in t and "\\x1b]0;pwned\\x07" in t and
       "if (admin<U+202E>) {" in t, "%s: the hunk's ESC[2K, CR, OSC and U+202E shown" % where)


sock = os.path.join(env.top, "s.sock")
srv = Server(env, "--socket", sock, "--disk", "256M", stdio=True)
mcp = LineClient(srv)
mcp.initialize()


def call(name, args):
    r = mcp.call("tools/call", {"name": name, "arguments": args}, timeout=120)
    return r.get("result") or {"error": r.get("error")}


# ---- a direct workspace: git's text, made visible ----
r = call("write_file", {"path": "hello.txt", "content": "hello from the workspace\n" + HUNK})
ok(not r.get("isError"), "write_file writes the model's bytes (%s)" % text(r)[:200])
r = call("workspace_diff", {})
ok(not r.get("isError") and "hello.txt" in text(r), "workspace_diff (git) (%s)" % text(r)[:300])
visible(text(r), "workspace_diff, direct")
subprocess.run(["git", "-C", ws, "checkout", "-q", "--", "hello.txt"], check=True)

# ---- a cow sandbox: warden's change set ----
r = call("sandbox_create", {})
sid = r.get("structuredContent", {}).get("sandbox")
ok(sid, "sandbox_create (%s)" % text(r)[:200])
if not sid:
    print("# server: " + srv.stderr())
    srv.stop()
    done()
r = call("write_file", {"sandbox": sid, "path": "hello.txt",
                        "content": "hello from the workspace\n" + HUNK})
ok(not r.get("isError"), "write_file in the sandbox")
r = call("run_command", {"sandbox": sid, "command":
                         "python3 -c \"open('x\\\\nmodified  hello.txt\\\\x1b[31m','w')"
                         ".write('forged\\\\n')\""})
ok(r.get("structuredContent", {}).get("status") == 0,
   "the sandbox makes a file named with a newline and ESC (%s)" % text(r)[:300])
r = call("workspace_diff", {"sandbox": sid})
t = text(r)
visible(t, "workspace_diff, cow")
ok('"x\\nmodified  hello.txt\\033[31m"' in t,
   "workspace_diff, cow: the forged name C-quoted (%s)" % t[:400])
ok(len(re.findall(r"(?m)^modified +hello\.txt$", t)) == 1,
   "workspace_diff, cow: one 'modified hello.txt' line, none forged")
names = {f["path"] for f in r.get("structuredContent", {}).get("files", [])}
ok(NAME in names, "structuredContent stays JSON: the name as it is (%s)" % names)

human = LineClient(path=sock)
r = human.call("sandbox.diff", {"sandbox": sid})
d = r.get("result", {}).get("diff", "")
visible(d, "sandbox.diff on the owner's socket")
ok('"x\\nmodified  hello.txt\\033[31m"' in d, "sandbox.diff: the forged name C-quoted")
# a conflict on a name with ESC and a newline: the refusal's message,
# which a client prints, quotes it; its data keeps the name as it is
with open(os.path.join(ws, NAME), "w") as f:
    f.write("the host's\n")
r = human.call("sandbox.apply", {"sandbox": sid})
err = r.get("error", {})
ok(err.get("code") == -32009,
   "sandbox.apply refuses the conflict (%s)" % err)
ok(not BAD.search(err.get("message", "")) and
   '"x\\nmodified  hello.txt\\033[31m" (conflict' in err.get("message", ""),
   "sandbox.apply's message quotes the name (%r)" % err.get("message", ""))
ok(NAME in err.get("data", {}).get("conflicts", []), "... its data lists it as it is")
human.close()

call("sandbox_destroy", {"sandbox": sid})
srv.stop()
env.close()
done()
